"""Smooth wrapping over an ellipsoid (mbjax.wrapping.smooth_ellipsoid): a geodesic found by shooting,
checked against the sphere's closed form (equal semi-axes), the Runge-Kutta order, Joachimsthal's
geodesic invariant, the envelope theorem and central differences for the implicit derivatives, and
C¹ across the start of contact."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from mbjax.wrapping.smooth import sphere_geodesic
from mbjax.wrapping.smooth_ellipsoid import ellipsoid_geodesic, ellipsoid_geodesic_length, shoot

RADII = np.array([0.035, 0.02, 0.025])


def _wrapping_pairs(rng, n, radii):
    """End points outside the ellipsoid, mostly on opposite sides (the chord usually pierces it)."""
    p1 = rng.normal(size=(n, 3))
    p1 = p1 / np.linalg.norm(p1, axis=1, keepdims=True) * rng.uniform(1.1, 3.5, (n, 1))
    p2 = -p1 * rng.uniform(0.4, 1.4, (n, 1)) + rng.normal(size=(n, 3)) * 0.6
    return p1 * radii, p2 * radii


@pytest.fixture(scope="module")
def triaxial():
    p1, p2 = _wrapping_pairs(np.random.default_rng(3), 60, RADII)
    geo = jax.jit(ellipsoid_geodesic)(p1, p2, RADII)
    return p1, p2, geo


def test_equal_semi_axes_give_the_spheres_great_circle():
    R = 0.03
    p1, p2 = _wrapping_pairs(np.random.default_rng(0), 120, np.full(3, R))
    geo = jax.jit(ellipsoid_geodesic)(p1, p2, np.full(3, R))
    ref = sphere_geodesic(p1, p2, R)
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
    r = jnp.asarray(RADII)
    for i in np.nonzero(np.asarray(geo.wraps))[0][:6]:
        t1, t2 = np.asarray(geo.t1[i]), np.asarray(geo.t2[i])
        n1, n2 = t1 / RADII**2, t2 / RADII**2
        n1, n2 = n1 / np.linalg.norm(n1), n2 / np.linalg.norm(n2)
        d1 = (t1 - p1[i]) / np.linalg.norm(t1 - p1[i])
        d2 = (p2[i] - t2) / np.linalg.norm(p2[i] - t2)
        assert abs(d1 @ n1) < 1e-10 and abs(d2 @ n2) < 1e-10
        ell = float(geo.arc[i])
        ends = [shoot(jnp.asarray(t1), jnp.asarray(d1), ell * k / 8, r) for k in range(9)]
        x = np.stack([np.asarray(e[0]) for e in ends])
        v = np.stack([np.asarray(e[1]) for e in ends])
        np.testing.assert_allclose(x[-1], t2, atol=1e-12)  # the same shot as the solver's
        np.testing.assert_allclose(v[-1], d2, atol=1e-9)
        invariant = 1.0 / np.sqrt(np.sum(x**2 / RADII**4, axis=1)) / np.sqrt(np.sum(v**2 / RADII**2, axis=1))
        np.testing.assert_allclose(invariant, invariant[0], rtol=1e-8)
        np.testing.assert_allclose(np.sum(x**2 / RADII**2, axis=1), 1.0, atol=1e-8)  # on the surface


def test_envelope_gradients_and_central_differences(triaxial):
    """∂L/∂P = unit(P − T1), ∂L/∂S = unit(S − T2) at the solution (envelope theorem), and jax.grad
    through the implicit derivatives equals central differences in the semi-axes."""
    p1, p2, geo = triaxial
    i = int(np.nonzero(np.asarray(geo.wraps))[0][0])
    f = jax.jit(lambda a, b, r: ellipsoid_geodesic_length(a, b, r))
    ga, gb, gr = jax.grad(f, argnums=(0, 1, 2))(jnp.asarray(p1[i]), jnp.asarray(p2[i]), jnp.asarray(RADII))
    t1, t2 = np.asarray(geo.t1[i]), np.asarray(geo.t2[i])
    np.testing.assert_allclose(ga, (p1[i] - t1) / np.linalg.norm(p1[i] - t1), atol=1e-7)
    np.testing.assert_allclose(gb, (p2[i] - t2) / np.linalg.norm(p2[i] - t2), atol=1e-7)
    h = 1e-6
    fd = [(f(p1[i], p2[i], RADII + h * e) - f(p1[i], p2[i], RADII - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(gr, np.asarray(fd), rtol=1e-5, atol=1e-8)


def test_check_grads_forward_and_reverse(triaxial):
    p1, p2, geo = triaxial
    i = int(np.nonzero(np.asarray(geo.wraps))[0][1])
    check_grads(jax.jit(ellipsoid_geodesic_length), (jnp.asarray(p1[i]), jnp.asarray(p2[i]),
                jnp.asarray(RADII)), order=1, modes=("fwd", "rev"), eps=1e-6, atol=1e-5, rtol=1e-5)


def test_clear_and_inside_segments_are_straight_with_finite_gradients():
    a = jnp.asarray([0.1, 0.05, 0.0])
    value_and_grad = jax.jit(jax.value_and_grad(lambda a, b: ellipsoid_geodesic_length(a, b, RADII), argnums=(0, 1)))
    for b in (jnp.asarray([-0.1, 0.06, 0.01]),  # clears the ellipsoid
              jnp.asarray([0.01, 0.0, 0.0])):  # inside it
        L, g = value_and_grad(a, b)
        np.testing.assert_allclose(L, jnp.linalg.norm(a - b), rtol=1e-14)
        np.testing.assert_allclose(g[0], (a - b) / jnp.linalg.norm(a - b), rtol=1e-12)
        assert np.isfinite(np.asarray(g)).all()


def test_length_is_c1_where_contact_starts():
    """A chord moved across the ellipsoid's top (y = r_y at x = 0): the length's one-sided slopes
    agree where the chord starts to touch."""
    @jax.jit
    def L(h):
        return ellipsoid_geodesic_length(jnp.asarray([0.09, RADII[1] + h, 0.004]),
                                         jnp.asarray([-0.08, RADII[1] + h, -0.003]), RADII)

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
