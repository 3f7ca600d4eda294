"""wrap_cylinder / wrap_torus without OpenSim: planar belt formula, autodiff vs finite differences,
vmap over poses and over surfaces, a single trace.  (OpenSim itself: tests/validation.)"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED
from mbjax.wrapping.cylinder import wrap_cylinder
from mbjax.wrapping.torus import wrap_torus


def _total(w, p1, p2):
    """|p1 - r1| + surface + |r2 - p2| when wrapping, else |p1 - p2| (GeometryPath's length)."""
    wrapped = jnp.linalg.norm(p1 - w.r1) + w.length + jnp.linalg.norm(w.r2 - p2)
    return jnp.where(w.wraps, wrapped, jnp.linalg.norm(p1 - p2))


def cyl_length(p1, p2, radius, length, axis, sign, single):
    return _total(wrap_cylinder(p1, p2, radius, length, axis, sign, single), p1, p2)


def torus_length(p1, p2, ri, ro, axis, sign, single):
    return _total(wrap_torus(p1, p2, ri, ro, axis, sign, single), p1, p2)


def test_planar_belt_formula():
    """p1, p2 in one plane normal to the axis: the path is two tangents and an arc (belt drive)."""
    r = 0.05
    rng = np.random.default_rng(3)
    d1, d2 = rng.uniform(0.06, 0.3, 20), rng.uniform(0.06, 0.3, 20)
    a1, a2 = rng.uniform(-np.pi, np.pi, 20), rng.uniform(-np.pi, np.pi, 20)
    z = rng.uniform(-0.1, 0.1, 20)
    p1 = np.stack([d1 * np.cos(a1), d1 * np.sin(a1), z], 1)
    p2 = np.stack([d2 * np.cos(a2), d2 * np.sin(a2), z], 1)
    def one(a, b):
        w = wrap_cylinder(a, b, r, 1.0, 0, 0, True)
        return w, _total(w, a, b)

    w, got = jax.jit(jax.vmap(one))(p1, p2)
    got = np.asarray(got)
    # independent: angle between the two tangent points = angle(p1, p2) - acos(r/d1) - acos(r/d2)
    gap = np.abs(np.angle(np.exp(1j * (a2 - a1))))
    arc = gap - np.arccos(r / d1) - np.arccos(r / d2)
    crosses = arc > 0  # the straight segment passes within r of the axis
    belt = np.sqrt(d1**2 - r**2) + np.sqrt(d2**2 - r**2) + r * arc
    straight = np.linalg.norm(p1 - p2, axis=1)
    np.testing.assert_array_equal(np.asarray(w.code), np.where(crosses, MANDATORY, NO_WRAP))
    np.testing.assert_allclose(got, np.where(crosses, belt, straight), rtol=0, atol=1e-13)
    assert crosses.sum() >= 5 and (~crosses).sum() >= 2


_WRAP_CYLINDER = jax.jit(wrap_cylinder)  # one segment, one surface: one compiled program for the cases below


def test_codes_inside_and_beyond_ends():
    r, L = 0.05, 0.2
    wrap = _WRAP_CYLINDER
    inside = wrap(jnp.array([0.01, 0.0, 0.0]), jnp.array([0.2, 0.1, 0.0]), r, L, 0, 0, True)
    assert int(inside.code) == INSIDE and not bool(inside.has_path)
    # crossing the axis line far beyond the cylinder's end: both tangent points |z| > L/2
    beyond = wrap(jnp.array([0.2, 0.0, 0.5]), jnp.array([-0.2, 0.0, 0.5]), r, L, 0, 0, True)
    assert int(beyond.code) == NO_WRAP
    hit = wrap(jnp.array([0.2, 0.0, 0.05]), jnp.array([-0.2, 0.0, 0.05]), r, L, 0, 0, True)
    assert int(hit.code) == MANDATORY and bool(hit.has_path)
    # constrained +y, segment passing on the -y side without touching: OpenSim's 'wrapped'
    side = wrap(jnp.array([0.2, -0.06, 0.0]), jnp.array([-0.2, -0.07, 0.0]), r, L, 1, 1, True)
    assert int(side.code) == WRAPPED and bool(side.has_path)
    assert float(side.r1[1]) > 0 and float(side.r2[1]) > 0  # wraps round the +y side


# smooth points: the segment crosses the cylinder (mandatory) or wraps round the constrained side
CYL_POINTS = np.array([
    [0.15, 0.02, -0.07, -0.12, 0.03, 0.09],
    [0.11, -0.09, 0.02, -0.13, -0.04, -0.05],
    [0.09, 0.14, 0.03, 0.05, -0.16, -0.04],
    [0.16, 0.05, 0.0, -0.12, -0.03, 0.08],
])
CYL_QUAD = (np.array([0, 1, 0, 2]), np.array([0, 1, -1, 1]))


def _central_differences(f, x, h=1e-6):
    """Central differences of a batched scalar f(x[b]) -> (b,) along every coordinate of x."""
    b, d = x.shape
    steps = h * np.eye(d)
    plus = f(np.repeat(x, d, 0) + np.tile(steps, (b, 1))).reshape(b, d)
    minus = f(np.repeat(x, d, 0) - np.tile(steps, (b, 1))).reshape(b, d)
    return (np.asarray(plus) - np.asarray(minus)) / (2 * h)


@jax.jit
@jax.vmap
def _cylinder_derivatives(x, axis, sign):
    """The path length over the cylinder (radius x[6], length 0.3) from x[:3] to x[3:6], whether it
    wraps, and its derivatives in x: the Jacobian in forward mode (as jax.jacfwd) and the gradient
    in reverse mode (the transpose of the linearisation, as jax.grad)."""
    def f(y):
        w = wrap_cylinder(y[:3], y[3:6], y[6], 0.3, axis, sign, True)
        return _total(w, y[:3], y[3:6]), w.wraps

    length, jvp, wraps = jax.linearize(f, x, has_aux=True)
    (rev,) = jax.linear_transpose(jvp, x)(jnp.ones_like(length))
    return length, wraps, jax.vmap(jvp)(jnp.eye(7, dtype=x.dtype)), rev


def test_cylinder_jacobian_matches_central_differences():
    """Forward- and reverse-mode derivatives of the path length (points and radius) vs FD."""
    x = np.concatenate([CYL_POINTS, np.full((4, 1), 0.05)], 1)
    h = 1e-6
    # one call: the 4 points, then each point moved by +h and -h along each coordinate
    pts = np.concatenate([x] + [np.repeat(x, 7, 0) + s * h * np.tile(np.eye(7), (4, 1)) for s in (1, -1)])
    axis, sign = (np.concatenate([q, np.repeat(q, 7), np.repeat(q, 7)]) for q in CYL_QUAD)
    length, wraps, jac, rev = jax.device_get(_cylinder_derivatives(pts, axis, sign))
    assert np.all(wraps[:4])
    fd = (length[4:32] - length[32:]).reshape(4, 7) / (2 * h)
    jac, rev = jac[:4], rev[:4]
    assert np.all(np.isfinite(jac))
    np.testing.assert_allclose(jac, fd, rtol=0, atol=2e-8)
    np.testing.assert_allclose(rev, jac, rtol=0, atol=1e-12)


@pytest.mark.extended
def test_no_nan_gradients_in_unused_branches():
    """Inside, no-wrap, end point on the axis, tangent-adjusting: all derivatives finite."""
    cases = np.array([[0.0, 0.0, 0.0, 0.2, 0.1, 0.0], [0.2, 0.3, 0.0, 0.3, 0.2, 0.1],
                      [0.01, 0.0, 0.0, 0.02, 0.0, 0.0], [0.11, -0.09, 0.02, -0.13, -0.04, -0.05],
                      [0.15, 0.02, -0.07, -0.12, 0.03, 0.09]] * 2)
    single = np.repeat([True, False], 5)
    jac = jax.jit(jax.vmap(jax.jacfwd(lambda x, s: cyl_length(x[:3], x[3:], 0.05, 0.3, 0, 1, s))))(cases, single)
    assert np.all(np.isfinite(np.asarray(jac)))
    tj = jax.jit(jax.vmap(jax.jacfwd(lambda x: torus_length(x[:3], x[3:], 0.03, 0.1, 0, 0, True))))(cases)
    assert np.all(np.isfinite(np.asarray(tj)))


TORUS_POINTS = np.array([[-0.071, -0.057, 0.125, -0.053, -0.004, -0.195], [0.078, 0.093, 0.193, -0.061, 0.064, -0.142]])


@pytest.mark.extended
def test_torus_jacobian_matches_central_differences():
    def f(x, a, s):
        return torus_length(x[:3], x[3:], 0.03, 0.1, a, s, True)

    quad = (np.array([0, 1]), np.array([0, 1]))
    w = jax.vmap(lambda x, a, s: wrap_torus(x[:3], x[3:], 0.03, 0.1, a, s, True))(TORUS_POINTS, *quad)
    assert np.all(np.asarray(w.wraps))
    jac = jax.jit(jax.vmap(jax.jacfwd(f)))(TORUS_POINTS, *quad)
    fd = _central_differences(lambda y: jax.jit(jax.vmap(f))(y, *(np.repeat(q, 6) for q in quad)), TORUS_POINTS)
    np.testing.assert_allclose(np.asarray(jac), fd, rtol=0, atol=2e-8)


def test_vmap_over_poses_and_surfaces_traces_once():
    """One jitted, doubly vmapped call over (surfaces x poses) equals case-by-case calls and is
    traced once for any radius / quadrant / single_wrap values."""
    traces = []

    def one(p1, p2, r, length, axis, sign, single):
        traces.append(1)
        return wrap_cylinder(p1, p2, r, length, axis, sign, single)

    over_poses = jax.vmap(one, (0, 0, None, None, None, None, None))
    over_both = jax.jit(jax.vmap(over_poses, (None, None, 0, 0, 0, 0, 0)))
    rng = np.random.default_rng(7)
    n, k = 40, 4
    p1 = rng.uniform(-0.2, 0.2, (n, 3))
    p2 = rng.uniform(-0.2, 0.2, (n, 3))
    radius = np.array([0.03, 0.05, 0.04, 0.06])
    length = np.array([0.3, 0.2, 1.0, 0.4])
    axis = np.array([0, 1, 2, 0])
    sign = np.array([0, 1, -1, -1])
    single = np.array([True, False, True, False])
    w = over_both(p1, p2, radius, length, axis, sign, single)
    assert w.r1.shape == (k, n, 3) and w.code.shape == (k, n)
    w2 = over_both(p1 + 0.01, p2, radius * 1.1, length, axis[::-1], sign, ~single)
    assert len(traces) == 1 and w2.length.shape == (k, n)
    # the same (surface, pose) pairs one by one
    for i in range(k):
        for j in range(n):
            case = _WRAP_CYLINDER(p1[j], p2[j], float(radius[i]), float(length[i]), int(axis[i]), int(sign[i]),
                                  bool(single[i]))
            for name in ("code", "has_path", "r1", "r2", "length"):
                np.testing.assert_allclose(np.asarray(getattr(w, name))[i, j], np.asarray(getattr(case, name)),
                                           rtol=0, atol=1e-14)
    assert int(jnp.sum(w.wraps)) > 10
    tw = jax.jit(jax.vmap(wrap_torus, (0, 0, None, None, None, None, None)))(p1, p2, 0.03, 0.1, 0, 0, True)
    assert tw.r1.shape == (n, 3) and np.all(np.isfinite(np.asarray(tw.length)))


@pytest.mark.extended
def test_float32_runs():
    p1 = jnp.array([0.15, 0.02, -0.07], jnp.float32)
    p2 = jnp.array([-0.12, 0.03, 0.09], jnp.float32)
    w = wrap_cylinder(p1, p2, jnp.float32(0.05), jnp.float32(0.3), 0, 0, False)
    assert w.r1.dtype == jnp.float32 and bool(w.wraps)
    t = wrap_torus(jnp.array([0.02, 0.01, 0.15], jnp.float32), jnp.array([0.03, -0.02, -0.16], jnp.float32),
                   jnp.float32(0.03), jnp.float32(0.1), 0, 0, True)
    assert np.isfinite(float(t.length))
