"""Smooth wrapping (mbjax.wrapping.smooth): exact geodesics over a sphere and a cylinder, checked
against OpenSim's sphere (a great-circle geodesic: mbjax's OpenSim-exact port), a numerical
minimisation over the tangent points (cylinder), autodiff vs differences, and C¹ across contact."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from scipy.optimize import minimize

from mbjax.wrapping.smooth import cylinder_geodesic_length, sphere_geodesic_length
from mbjax.wrapping.sphere import wrap_sphere

R = 0.05


def _segments(rng, n, scale=0.2):
    p1 = rng.normal(size=(n, 3)) * scale
    p2 = rng.normal(size=(n, 3)) * scale
    far = (np.linalg.norm(p1, axis=1) > 1.2 * R) & (np.linalg.norm(p2, axis=1) > 1.2 * R)
    return p1[far], p2[far]


def test_sphere_equals_opensims_great_circle_path():
    p1, p2 = _segments(np.random.default_rng(0), 400, scale=0.1)
    length, wraps = jax.jit(jax.vmap(sphere_geodesic_length, in_axes=(0, 0, None)))(p1, p2, R)
    out = jax.vmap(lambda a, b: wrap_sphere(a, b, R, 0, 0, True))(jnp.asarray(p1), jnp.asarray(p2))
    pierced = np.asarray(out.has_path)
    assert pierced.sum() > 20 and (~pierced).sum() > 20
    np.testing.assert_array_equal(np.asarray(wraps), pierced)  # touches the sphere iff the chord pierces it
    opensim = (np.linalg.norm(p1 - np.asarray(out.r1), axis=1) + np.asarray(out.length)
               + np.linalg.norm(np.asarray(out.r2) - p2, axis=1))
    np.testing.assert_allclose(np.asarray(length)[pierced], opensim[pierced], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(length)[~pierced], np.linalg.norm(p1 - p2, axis=1)[~pierced], rtol=1e-14)


def _cylinder_by_minimisation(p1, p2, side):
    """min over the tangent points' heights z1, z2 of |p1 T1| + helix(T1, T2) + |T2 p2|, the
    points at the cross-section's tangency angles (a shortest path leaves p1 along a line tangent
    to the surface): checks the developed-plane closed form √(L₂² + Δz²)."""
    phi1, phi2 = np.arctan2(p1[1], p1[0]), np.arctan2(p2[1], p2[0])
    a1, a2 = np.arccos(R / np.hypot(*p1[:2])), np.arccos(R / np.hypot(*p2[:2]))
    t1 = phi1 + side * a1
    t2 = phi2 - side * a2
    sweep = (side * (t2 - t1)) % (2 * np.pi)  # the arc from T1 to T2 in the direction of travel

    def total(x):
        z1, z2 = x
        a = np.array([R * np.cos(t1), R * np.sin(t1), z1])
        b = np.array([R * np.cos(t2), R * np.sin(t2), z2])
        return np.linalg.norm(p1 - a) + np.hypot(R * sweep, z2 - z1) + np.linalg.norm(b - p2)

    res = minimize(total, [p1[2], p2[2]], method="Nelder-Mead", options=dict(xatol=1e-13, fatol=1e-15, maxiter=20000))
    return res.fun


@pytest.mark.parametrize("side", [1, -1])
def test_cylinder_equals_the_minimised_path(side):
    rng = np.random.default_rng(1 + side)
    got = 0
    for _ in range(40):
        p1, p2 = rng.normal(size=3) * 0.15, rng.normal(size=3) * 0.15
        if min(np.hypot(*p1[:2]), np.hypot(*p2[:2])) < 1.3 * R:
            continue
        length, wraps = cylinder_geodesic_length(p1, p2, R, side)
        if not bool(wraps):
            assert abs(float(length) - np.linalg.norm(p1 - p2)) < 1e-15
            continue
        assert abs(float(length) - _cylinder_by_minimisation(p1, p2, side)) < 1e-8
        got += 1
        if got == 6:
            break
    assert got == 6


def test_gradients_and_reverse_mode():
    p1 = jnp.asarray([0.09, 0.02, -0.03])
    p2 = jnp.asarray([-0.07, 0.05, 0.06])
    for f in (lambda a, b: sphere_geodesic_length(a, b, R)[0], lambda a, b: cylinder_geodesic_length(a, b, R)[0],
              lambda a, b: cylinder_geodesic_length(a, b, R, -1)[0]):
        assert bool(cylinder_geodesic_length(p1, p2, R, -1)[1])
        check_grads(f, (p1, p2), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-5, rtol=1e-5)
    g = jax.grad(lambda r: cylinder_geodesic_length(p1, p2, r)[0] + sphere_geodesic_length(p1, p2, r)[0])(R)
    assert np.isfinite(float(g)) and float(g) > 0  # a thicker surface lengthens a wrapped path


@pytest.mark.parametrize("which", ["sphere", "cylinder"])
def test_c1_across_the_start_of_contact(which):
    """p2 slides so the segment goes from clear to wrapped: the length and its slope are continuous."""
    p1 = jnp.asarray([0.1, -0.06, 0.01])
    base, direction = jnp.asarray([-0.1, -0.06, 0.03]), jnp.asarray([0.0, 1.0, 0.0])
    fn = sphere_geodesic_length if which == "sphere" else cylinder_geodesic_length
    length = lambda t: fn(p1, base + t * direction, R)[0]  # noqa: E731
    wraps = lambda t: bool(fn(p1, base + t * direction, R)[1])  # noqa: E731
    lo, hi = 0.0, 0.2
    assert not wraps(lo) and wraps(hi)
    for _ in range(60):  # bisect the contact
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if not wraps(mid) else (lo, mid)
    h = 1e-7
    slope = jax.grad(length)
    assert abs(float(length(lo - h)) - float(length(hi + h))) < 1e-6
    assert abs(float(slope(lo - h)) - float(slope(hi + h))) < 1e-5  # C¹: one-sided slopes agree


def test_float32_runs():
    p1 = jnp.asarray([0.09, 0.02, -0.03], jnp.float32)
    p2 = jnp.asarray([-0.07, 0.05, 0.06], jnp.float32)
    l32, _ = cylinder_geodesic_length(p1, p2, jnp.float32(R))
    l64, _ = cylinder_geodesic_length(p1.astype(jnp.float64), p2.astype(jnp.float64), R)
    assert l32.dtype == jnp.float32 and abs(float(l32) - float(l64)) < 1e-6
