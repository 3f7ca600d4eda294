"""Smooth wrapping over an ellipsoid (mbjax.wrapping.smooth_ellipsoid): a geodesic found by shooting,
checked against the sphere's closed form (equal semi-axes), the Runge-Kutta order, Joachimsthal's
geodesic invariant, the envelope theorem and central differences for the implicit derivatives, and
C¹ across the start of contact."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping.smooth import sphere_geodesic
from mbjax.wrapping.smooth_ellipsoid import ellipsoid_geodesic, ellipsoid_geodesic_length, shoot

RADII = np.array([0.035, 0.02, 0.025])
SPHERE = 0.03  # the radius of the equal-semi-axes cases


def _wrapping_pairs(rng, n, radii):
    """End points outside the ellipsoid, mostly on opposite sides (the chord usually pierces it)."""
    p1 = rng.normal(size=(n, 3))
    p1 = p1 / np.linalg.norm(p1, axis=1, keepdims=True) * rng.uniform(1.1, 3.5, (n, 1))
    p2 = -p1 * rng.uniform(0.4, 1.4, (n, 1)) + rng.normal(size=(n, 3)) * 0.6
    return p1 * radii, p2 * radii


@pytest.fixture(scope="module")
def solved():
    """60 segments over the triaxial ellipsoid and 120 over a sphere (equal semi-axes) in one call."""
    p1, p2 = _wrapping_pairs(np.random.default_rng(3), 60, RADII)
    s1, s2 = _wrapping_pairs(np.random.default_rng(0), 120, np.full(3, SPHERE))
    radii = np.concatenate([np.tile(RADII, (60, 1)), np.full((120, 3), SPHERE)])
    geo = jax.jit(ellipsoid_geodesic)(np.concatenate([p1, s1]), np.concatenate([p2, s2]), radii)
    return (p1, p2, jax.tree.map(lambda x: x[:60], geo)), (s1, s2, jax.tree.map(lambda x: x[60:], geo))


@pytest.fixture(scope="module")
def triaxial(solved):
    return solved[0]


@jax.jit
def _length_and_derivatives(p1, p2, radii):
    """The length and its derivatives in (p1, p2, radii) (9 coordinates): the gradient in reverse
    mode (the transpose of the linearisation, as jax.grad) and the Jacobian in forward mode (as
    jax.jacfwd).  One compiled program for every derivative test here; its length serves the
    central differences."""
    length, jvp = jax.linearize(ellipsoid_geodesic_length, p1, p2, radii)
    grad = jax.linear_transpose(jvp, p1, p2, radii)(jnp.ones_like(length))
    basis = jnp.eye(9, dtype=p1.dtype)
    jac = jax.vmap(jvp)(basis[:, :3], basis[:, 3:6], basis[:, 6:])
    return length, jnp.concatenate(grad), jac


def _central_differences(x, h):
    """Central differences of the length in the 9 coordinates x = (p1, p2, radii)."""
    def length(y):
        return float(_length_and_derivatives(y[:3], y[3:6], y[6:])[0])

    return np.array([(length(x + h * e) - length(x - h * e)) / (2 * h) for e in np.eye(9)])


def test_equal_semi_axes_give_the_spheres_great_circle(solved):
    p1, p2, geo = solved[1]
    ref = jax.jit(sphere_geodesic)(p1, p2, SPHERE)
    w = np.asarray(ref.wraps)
    assert w.sum() > 60 and (~w).sum() > 3
    np.testing.assert_array_equal(np.asarray(geo.wraps), w)
    np.testing.assert_allclose(np.asarray(geo.length), np.asarray(ref.length), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(geo.t1)[w], np.asarray(ref.t1)[w], atol=1e-8)
    np.testing.assert_allclose(np.asarray(geo.t2)[w], np.asarray(ref.t2)[w], atol=1e-8)
    np.testing.assert_allclose(np.asarray(geo.length)[~w], np.linalg.norm(p1 - p2, axis=1)[~w], rtol=1e-14)


@pytest.mark.extended
def test_runge_kutta_converges_at_fourth_order(triaxial):
    p1, p2, geo = triaxial
    w = np.asarray(geo.wraps)
    assert w.sum() > 40 and not np.isnan(np.asarray(geo.length)).any()
    w = np.nonzero(w)[0][:12]
    geodesic = jax.jit(ellipsoid_geodesic, static_argnames="steps")
    ref = np.asarray(geodesic(p1[w], p2[w], RADII, steps=512).length)
    err = [np.max(np.abs(np.asarray(geodesic(p1[w], p2[w], RADII, steps=s).length) - ref)) for s in (32, 64, 128)]
    assert 8 < err[0] / err[1] < 32 and 8 < err[1] / err[2] < 32, err
    assert err[1] < 1e-8, err  # the default (64 steps) on 2-3.5 cm semi-axes


def test_geodesic_keeps_joachimsthals_integral(triaxial):
    """Along a geodesic of an ellipsoid, (distance from the centre to the tangent plane) × (the
    semi-diameter parallel to the direction of travel) is constant (Joachimsthal): an invariant the
    integrator does not impose.  Also: the lines are tangent at T1 and T2, and the geodesic leaves
    T1 along the incoming line and reaches T2 along the outgoing one."""
    p1, p2, geo = triaxial
    idx = np.nonzero(np.asarray(geo.wraps))[0][:6]
    t1, t2 = np.asarray(geo.t1)[idx], np.asarray(geo.t2)[idx]
    d1 = (t1 - p1[idx]) / np.linalg.norm(t1 - p1[idx], axis=1, keepdims=True)
    d2 = (p2[idx] - t2) / np.linalg.norm(p2[idx] - t2, axis=1, keepdims=True)
    # the geodesics shot from T1 along d1 over k/8 of their arcs, k = 0..8: one vmapped call
    fraction = np.arange(9) / 8
    ends = jax.jit(jax.vmap(shoot, in_axes=(0, 0, 0, None)))(
        np.repeat(t1, 9, 0), np.repeat(d1, 9, 0), (np.asarray(geo.arc)[idx][:, None] * fraction).ravel(), RADII)
    xs, vs = (np.asarray(e).reshape(len(idx), 9, 3) for e in ends)
    for i in range(len(idx)):
        x, v = xs[i], vs[i]
        n1, n2 = t1[i] / RADII**2, t2[i] / RADII**2
        n1, n2 = n1 / np.linalg.norm(n1), n2 / np.linalg.norm(n2)
        assert abs(d1[i] @ n1) < 1e-10 and abs(d2[i] @ n2) < 1e-10
        np.testing.assert_allclose(x[-1], t2[i], atol=1e-12)  # the same shot as the solver's
        np.testing.assert_allclose(v[-1], d2[i], atol=1e-9)
        invariant = 1.0 / np.sqrt(np.sum(x**2 / RADII**4, axis=1)) / np.sqrt(np.sum(v**2 / RADII**2, axis=1))
        np.testing.assert_allclose(invariant, invariant[0], rtol=1e-8)
        np.testing.assert_allclose(np.sum(x**2 / RADII**2, axis=1), 1.0, atol=1e-8)  # on the surface


@pytest.mark.extended  # 23 s; moment arms = -dL/dq in both modes over the smooth ellipsoid run in CI (test_wrap_smooth_paths)
def test_envelope_gradients_and_central_differences(triaxial):
    """∂L/∂P = unit(P − T1), ∂L/∂S = unit(S − T2) at the solution (envelope theorem), and reverse mode
    through the implicit derivatives equals central differences in the semi-axes."""
    p1, p2, geo = triaxial
    i = int(np.nonzero(np.asarray(geo.wraps))[0][0])
    _, grad, _ = _length_and_derivatives(p1[i], p2[i], RADII)
    ga, gb, gr = np.split(np.asarray(grad), 3)
    t1, t2 = np.asarray(geo.t1[i]), np.asarray(geo.t2[i])
    np.testing.assert_allclose(ga, (p1[i] - t1) / np.linalg.norm(p1[i] - t1), atol=1e-7)
    np.testing.assert_allclose(gb, (p2[i] - t2) / np.linalg.norm(p2[i] - t2), atol=1e-7)
    fd = _central_differences(np.concatenate([p1[i], p2[i], RADII]), 1e-6)[6:]
    np.testing.assert_allclose(gr, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.extended  # 18 s of compilation; test_envelope_gradients_and_central_differences checks the derivatives in CI
def test_forward_and_reverse_derivatives_equal_central_differences(triaxial):
    """Forward mode (the Jacobian) and reverse mode (the gradient) in all 9 coordinates."""
    p1, p2, geo = triaxial
    i = int(np.nonzero(np.asarray(geo.wraps))[0][1])
    _, grad, jac = _length_and_derivatives(p1[i], p2[i], RADII)
    fd = _central_differences(np.concatenate([p1[i], p2[i], RADII]), 1e-6)
    np.testing.assert_allclose(np.asarray(jac), fd, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), fd, atol=1e-5, rtol=1e-5)


def test_clear_and_inside_segments_are_straight_with_finite_gradients():
    a = np.asarray([0.1, 0.05, 0.0])
    for b in (np.asarray([-0.1, 0.06, 0.01]),  # clears the ellipsoid
              np.asarray([0.01, 0.0, 0.0])):  # inside it
        L, g, jac = (np.asarray(x) for x in _length_and_derivatives(a, b, RADII))
        np.testing.assert_allclose(L, np.linalg.norm(a - b), rtol=1e-14)
        np.testing.assert_allclose(g[:3], (a - b) / np.linalg.norm(a - b), rtol=1e-12)
        assert np.isfinite(g).all() and np.isfinite(jac).all()


def test_length_is_c1_where_contact_starts():
    """A chord moved across the ellipsoid's top (y = r_y at x = 0): the length's one-sided slopes
    agree where the chord starts to touch."""
    def L(h):  # (the derivative tests' compiled program)
        return _length_and_derivatives(np.array([0.09, RADII[1] + h, 0.004]),
                                       np.array([-0.08, RADII[1] + h, -0.003]), RADII)[0]

    # the contact height: the chord touches where the line's scaled distance to the centre is 1
    from scipy.optimize import brentq

    def scaled_miss(h):
        a = np.array([0.09, RADII[1] + h, 0.004]) / RADII
        b = np.array([-0.08, RADII[1] + h, -0.003]) / RADII
        d = b - a
        t = np.clip(-(a @ d) / (d @ d), 0, 1)
        return np.linalg.norm(a + t * d) - 1.0

    hc = brentq(scaled_miss, -0.005, 0.005, xtol=1e-15)
    chord = np.linalg.norm(np.array([0.17, 0.0, 0.007]))
    np.testing.assert_allclose(L(hc + 1e-9), chord, rtol=1e-12)  # clear: the chord, slope 0 in h
    # wrapping side (lower: deeper, longer): the extra length grows like depth², so the one-sided
    # slope goes to 0 with the depth, as the clear side's
    slopes = [float((L(hc) - L(hc - d)) / d) for d in (1e-4, 1e-6)]
    assert all(s < 0 for s in slopes) and abs(slopes[1]) < 0.02 * abs(slopes[0]) and abs(slopes[1]) < 1e-4, slopes
    assert float(L(hc - 1e-6)) > chord


_FLOAT32_SCRIPT = """
import json, sys
import jax, numpy as np
assert not jax.config.jax_enable_x64
from mbjax.wrapping.smooth_ellipsoid import ellipsoid_geodesic
p1, p2, r = (np.asarray(x, np.float32) for x in json.loads(sys.stdin.read()))
g = jax.jit(ellipsoid_geodesic)(p1, p2, r)
assert g.length.dtype == np.float32, g.length.dtype
print(json.dumps([np.asarray(g.length, float).tolist(), np.asarray(g.wraps).tolist()]))
"""


@pytest.mark.extended  # a child process compiling the geodesic again; float32 smooth wrapping runs in CI (test_wrap_smooth.py)
def test_float32_runs_and_agrees(triaxial):
    """float32 (JAX's default, x64 off, in a child process): the tolerances follow the dtype, so the
    solve converges (the float64 tolerance is below float32 rounding) and agrees with float64 to
    float32's precision."""
    import json
    import os
    import pathlib
    import subprocess
    import sys

    p1, p2, geo = triaxial
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = str(pathlib.Path(__file__).parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    data = json.dumps([p1[:20].tolist(), p2[:20].tolist(), RADII.tolist()])
    proc = subprocess.run([sys.executable, "-c", _FLOAT32_SCRIPT], input=data, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    length, wraps = json.loads(proc.stdout.strip().splitlines()[-1])
    assert sum(wraps) > 10
    np.testing.assert_array_equal(wraps, np.asarray(geo.wraps[:20]))
    np.testing.assert_allclose(length, np.asarray(geo.length[:20]), rtol=2e-6)
