"""``wrap_ellipsoid`` without OpenSim: geometry, codes, derivatives, batching, tracing.

Independent references: the great-circle path over a sphere (the ellipsoid with equal semi-axes),
the surface / tangency conditions the tangent points must satisfy to OpenSim's iteration
tolerance, central finite differences of the total path length, and per-case calls vs vmapped
calls.  (Agreement with OpenSim itself is in ``tests/validation/test_wrap_ellipsoid_opensim.py``.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping import INSIDE, MANDATORY, NO_WRAP
from mbjax._spatial import safe_norm
from mbjax.wrapping.ellipsoid import wrap_ellipsoid

DIMS = np.array([0.04, 0.025, 0.06])
TRACES = {"primal": 0}


def _total(p1, p2, dims, axis, sign, method):
    w = wrap_ellipsoid(p1, p2, dims, axis, sign, method, True)
    wrapped = safe_norm(p1 - w.r1) + w.length + safe_norm(w.r2 - p2)
    return jnp.where(w.wraps, wrapped, safe_norm(p1 - p2)), w


@jax.jit
def _batched(p1, p2, dims, axis, sign, method):
    TRACES["primal"] += 1
    return jax.vmap(_total)(p1, p2, dims, axis, sign, method)


BATCH = 192  # every primal call is padded to this size: one compilation for the whole file


def primal(p1, p2, dims, axis, sign, method):
    n = len(p1)
    assert n <= BATCH
    pad = lambda v: np.concatenate([np.asarray(v), np.repeat(np.asarray(v)[-1:], BATCH - n, axis=0)])
    out = _batched(*(pad(v) for v in (p1, p2, dims, axis, sign, method)))
    return jax.tree_util.tree_map(lambda v: np.asarray(v)[:n], out)


def _x_total(x, axis, sign, method):
    return _total(x[0:3], x[3:6], x[6:9], axis, sign, method)[0]


@jax.jit
def derivatives(x, axis, sign, method):
    """Forward-mode Jacobian and reverse-mode gradient from one linearization."""

    def one(x, axis, sign, method):
        y, lin = jax.linearize(lambda xx: _x_total(xx, axis, sign, method), x)
        fwd = jax.vmap(lin)(jnp.eye(9, dtype=x.dtype))
        (rev,) = jax.linear_transpose(lin, x)(jnp.ones_like(y))
        return fwd, rev

    return jax.vmap(one)(x, axis, sign, method)


def _cases(n, seed, dims=DIMS):
    """Point pairs across the ellipsoid (mostly wrapping), methods and quadrants cycled."""
    rng = np.random.default_rng(seed)
    d1 = rng.normal(size=(n, 3))
    d1 /= np.linalg.norm(d1, axis=1, keepdims=True)
    d2 = -d1 + 0.3 * rng.normal(size=(n, 3))
    d2 /= np.linalg.norm(d2, axis=1, keepdims=True)
    p1 = d1 * rng.uniform(2.0, 4.0, size=(n, 1)) * dims
    p2 = d2 * rng.uniform(2.0, 4.0, size=(n, 1)) * dims
    method = np.arange(n) % 3
    sign = np.array([0, 1, -1, 0, 1])[np.arange(n) % 5]
    axis = (np.arange(n) // 5) % 3
    return p1, p2, method, axis, sign


def test_sphere_is_great_circle():
    """Equal semi-axes: every method's plane contains the centre -> tangent, great arc, tangent."""
    n = 30
    radius = 0.05
    p1, p2, method, _, _ = _cases(n, 1, np.full(3, radius))
    dims = np.full((n, 3), radius)
    zeros = np.zeros(n, int)
    tot, w = primal(p1, p2, dims, zeros, zeros, method)
    wraps = np.asarray(w.code) == MANDATORY
    assert wraps.mean() > 0.8
    p1, p2, tot, length = p1[wraps], p2[wraps], np.asarray(tot)[wraps], np.asarray(w.length)[wraps]
    l1, l2 = np.linalg.norm(p1, axis=1), np.linalg.norm(p2, axis=1)
    angle = np.arccos(np.sum(p1 * p2, axis=1) / (l1 * l2))
    arc = radius * (angle - np.arccos(radius / l1) - np.arccos(radius / l2))
    exact = np.sqrt(l1**2 - radius**2) + np.sqrt(l2**2 - radius**2) + arc
    # the tangent points are only converged to |residual| <= 1e-4 in units of (a+b+c)/3 (OpenSim's
    # ssq <= 1e-8), i.e. ~5e-6 m here; the total is stationary in them (second order), and the 1 mm
    # chords undercut the arc by <= (0.02 rad)^2 / 24 = 1.7e-5 (relative)
    np.testing.assert_allclose(length, arc, atol=5e-6)
    np.testing.assert_allclose(tot, exact, rtol=1e-5)


def test_tangent_points_on_surface_and_tangent():
    p1, p2, method, axis, sign = _cases(60, 2)
    n = len(p1)
    tot, w = primal(p1, p2, np.tile(DIMS, (n, 1)), axis, sign, method)
    wraps = np.asarray(w.wraps)
    assert wraps.mean() > 0.8
    r1, r2 = np.asarray(w.r1)[wraps], np.asarray(w.r2)[wraps]
    for r, p in ((r1, p1[wraps]), (r2, p2[wraps])):
        # OpenSim stops at a residual sum of squares <= 1e-8 (scaled units): |residual| <= 1e-4
        np.testing.assert_allclose(np.sum((r / DIMS) ** 2, axis=1), 1.0, atol=2e-4)
        normal = r / DIMS**2
        normal /= np.linalg.norm(normal, axis=1, keepdims=True)
        u = (p - r) / np.linalg.norm(p - r, axis=1, keepdims=True)
        assert np.abs(np.sum(normal * u, axis=1)).max() < 5e-3
    # the surface path is at least its chord, the wrapped path longer than the straight line
    length = np.asarray(w.length)[wraps]
    assert (length >= np.linalg.norm(r1 - r2, axis=1) - 1e-15).all()
    assert (np.asarray(tot)[wraps] > np.linalg.norm(p1 - p2, axis=1)[wraps]).all()


def test_codes_without_wrap():
    a = DIMS
    p1 = np.array([[0.0, 0.0, 0.0],  # inside
                   [-2 * a[0], 3 * a[1], 0.0],  # line misses
                   [2 * a[0], 0.1 * a[1], 0.0],  # both on the +x side: segment stops short
                   [3 * a[0], 0.0, 0.0]])  # collinear with the centre
    p2 = np.array([[2 * a[0], 0.0, 0.0],
                   [2 * a[0], 3 * a[1], 0.1 * a[2]],
                   [4 * a[0], 0.2 * a[1], 0.1 * a[2]],
                   [1.5 * a[0], 0.0, 0.0]])
    n = len(p1)
    zeros = np.zeros(n, int)
    tot, w = primal(p1, p2, np.tile(DIMS, (n, 1)), zeros, zeros, zeros)
    np.testing.assert_array_equal(np.asarray(w.code), [INSIDE, NO_WRAP, NO_WRAP, NO_WRAP])
    assert not np.asarray(w.has_path).any()
    np.testing.assert_array_equal(np.asarray(w.r1), p1)
    np.testing.assert_array_equal(np.asarray(w.length), 0.0)
    np.testing.assert_allclose(np.asarray(tot), np.linalg.norm(p1 - p2, axis=1))


def test_vmap_over_points_and_ellipsoids_one_trace():
    p1, p2, method, axis, sign = _cases(12, 3)
    rng = np.random.default_rng(4)
    dims = DIMS * rng.uniform(0.8, 1.2, size=(12, 3))  # a different ellipsoid per case
    tot, w = primal(p1, p2, dims, axis, sign, method)
    before = TRACES["primal"]
    tot2, _ = primal(p1 * 1.01, p2, dims, axis, sign, method)
    # each case again, in other lanes, next to other ellipsoids and points (and with shared dims)
    perm = np.roll(np.arange(12), 5)
    tot3, w3 = primal(p1[perm], p2[perm], dims[perm], axis[perm], sign[perm], method[perm])
    assert TRACES["primal"] == before  # new values, same shapes: no re-trace under jit
    assert not np.allclose(tot, tot2)
    np.testing.assert_array_equal(tot3, tot[perm])
    np.testing.assert_array_equal(w3.code, w.code[perm])
    k = 4
    tot4, _ = primal(np.tile(p1[k], (5, 1)), np.tile(p2[k], (5, 1)), np.tile(dims[k], (5, 1)),
                     np.full(5, axis[k]), np.full(5, sign[k]), np.full(5, method[k]))
    np.testing.assert_array_equal(tot4, tot[k])
    # a different ellipsoid gives a different length
    tot5, _ = primal(p1, p2, np.tile(DIMS, (12, 1)), axis, sign, method)
    assert not np.allclose(tot5, tot)


@pytest.mark.extended
def test_jacobian_matches_finite_differences():
    p1, p2, method, axis, sign = _cases(10, 5)
    n = len(p1)
    x = np.concatenate([p1, p2, np.tile(DIMS, (n, 1))], axis=1)
    fwd, rev = derivatives(x, axis, sign, method)
    fwd, rev = np.asarray(fwd), np.asarray(rev)
    assert np.isfinite(fwd).all()
    np.testing.assert_allclose(rev, fwd, rtol=1e-12, atol=1e-12)
    h = 1e-7
    eye = np.eye(9)
    xp = (x[:, None, :] + h * eye[None]).reshape(-1, 9)
    xm = (x[:, None, :] - h * eye[None]).reshape(-1, 9)
    rep = lambda v: np.repeat(v, 9)
    both = np.concatenate([xp, xm])
    tpm, _ = primal(both[:, :3], both[:, 3:6], both[:, 6:], *(np.tile(rep(v), 2) for v in (axis, sign, method)))
    fd = ((tpm[: n * 9] - tpm[n * 9:]) / (2 * h)).reshape(n, 9)
    err = np.abs(fd - fwd)
    print("max |jacfwd - FD|", err.max(), "median", np.median(err), "max |J|", np.abs(fwd).max())
    # derivatives of the stopped iterations (no segment-count or branch switch within h here)
    assert np.median(err) < 1e-8, np.median(err)
    assert err.max() < 1e-7, err.max()


def _smooth_cases(n, seed, h=1e-6):
    """Wrapping cases (9 inputs: p1, p2, dims) and central differences of the total length with
    step h, kept where the differences with h and h/10 agree to 1e-7 (no segment-count or branch
    switch within the stencil)."""
    p1, p2, method, axis, sign = _cases(n, seed)
    x = np.concatenate([p1, p2, np.tile(DIMS, (n, 1))], axis=1)
    eye = np.eye(9)
    rep = lambda v: np.repeat(v, 9)  # noqa: E731
    fds = []
    for step in (h, h / 10):
        out = []
        for sgn in (1, -1):
            y = (x[:, None, :] + sgn * step * eye[None]).reshape(-1, 9)
            out.append(np.concatenate([primal(y[i:i + BATCH, :3], y[i:i + BATCH, 3:6], y[i:i + BATCH, 6:],
                                              rep(axis)[i:i + BATCH], rep(sign)[i:i + BATCH], rep(method)[i:i + BATCH])[0]
                                       for i in range(0, len(y), BATCH)]))
        fds.append(((out[0] - out[1]) / (2 * step)).reshape(n, 9))
    _, w = primal(x[:, :3], x[:, 3:6], x[:, 6:], axis, sign, method)
    ok = np.asarray(w.wraps) & (np.abs(fds[0] - fds[1]).max(1) < 1e-7)
    return x[ok], axis[ok], sign[ok], method[ok], fds[0][ok]


@pytest.mark.extended  # ~80 s; the always-on check through whole paths is test_wrap_moment_arms.py (arm26)
def test_derivatives_are_those_of_the_stopped_tangent_iteration():
    """The tangent-point iteration stops at ssq <= 1e-8, not at a tangency: forward (jacfwd) and
    reverse (grad) derivatives of the total length are the stopped iterate's, equal to central
    differences of the lengths in the end points and the semi-axes (the implicit-function
    derivative of the tangency conditions misses them by up to ~1e-4)."""
    x, axis, sign, method, fd = _smooth_cases(24, 7)
    assert len(x) >= 12, len(x)
    jac = np.asarray(jax.jit(jax.vmap(jax.jacfwd(_x_total)))(x, axis, sign, method))
    err = np.abs(jac - fd)
    print(f"\n{len(x)} cases: max |jacfwd - FD| {err.max():.1e}, max |J| {np.abs(jac).max():.2f}")
    np.testing.assert_allclose(jac, fd, rtol=0, atol=1e-7)  # (differences: round-off ~1e-8)
    grad = np.asarray(jax.jit(jax.vmap(jax.grad(_x_total)))(x[:4], axis[:4], sign[:4], method[:4]))
    np.testing.assert_allclose(grad, fd[:4], rtol=0, atol=1e-7)


@pytest.mark.extended
def test_float32_runs():
    p1, p2, method, axis, sign = _cases(3, 6)
    f = jax.jit(jax.vmap(lambda a, b, m: wrap_ellipsoid(a, b, jnp.asarray(DIMS, jnp.float32), 0, 0, m).length))
    with jax.enable_x64(False):
        out = f(jnp.asarray(p1, jnp.float32), jnp.asarray(p2, jnp.float32), jnp.asarray(method))
        assert out.dtype == jnp.float32
        assert np.isfinite(np.asarray(out)).all()
