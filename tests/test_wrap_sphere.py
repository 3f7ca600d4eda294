"""``wrap_sphere`` without OpenSim: closed-form geometry, autodiff vs finite differences, batching.

The OpenSim comparison is in ``tests/validation/test_wrap_sphere_opensim.py``; here every check is
against something independent of the port: the closed-form shortest path over a sphere (tangent
lengths plus the great-circle arc, in the plane of p1, p2 and the centre), tangency conditions,
central finite differences, and per-element calls vs the vmapped batch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mbjax.wrapping import INSIDE, MANDATORY, NO_WRAP, WRAPPED
from mbjax._spatial import safe_norm
from mbjax.wrapping.sphere import wrap_sphere


def _total(p1, p2, radius, axis, sign):
    """Path length over one segment: tangent lines + arc, or the straight line."""
    w = wrap_sphere(p1, p2, radius, axis, sign, True)
    wrapped = safe_norm(p1 - w.r1) + w.length + safe_norm(w.r2 - p2)
    return jnp.where(w.wraps, wrapped, safe_norm(p1 - p2)), w


# Two fixed-size kernels shared by all tests (one compile each): values, and derivatives of the
# total length in x = (p1, p2, R) by forward and by reverse mode.
_VALUE_BATCH, _GRAD_BATCH = 1024, 128
_value_kernel = jax.jit(jax.vmap(_total))


def _grads(x, axis, sign):
    f = lambda xi: _total(xi[:3], xi[3:6], xi[6], axis, sign)[0]  # noqa: E731
    return jax.jacfwd(f)(x), jax.grad(f)(x)


_grad_kernel = jax.jit(jax.vmap(_grads))


def _pad(n, size, *arrays):
    assert n <= size
    return [np.concatenate([a, np.repeat(a[:1], size - n, axis=0)]) for a in arrays]


def _batched(p1, p2, radius, axis, sign):
    """(total, WrapLine) for a batch of at most 1024 segments."""
    n = len(radius)
    out = _value_kernel(*_pad(n, _VALUE_BATCH, p1, p2, radius, axis, sign))
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[:n], out)


def _derivatives(p1, p2, radius, axis, sign):
    """(jacfwd, grad) of the total length in (p1, p2, R), each (n, 7)."""
    n = len(radius)
    x = np.concatenate([p1, p2, radius[:, None]], axis=1)
    fwd, rev = _grad_kernel(*_pad(n, _GRAD_BATCH, x, axis, sign))
    return np.asarray(fwd)[:n], np.asarray(rev)[:n]


def _piercing(rng, n, radius, frac=(0.1, 0.9), reach=(1.3, 4.0)):
    """Segments through the sphere: closest approach frac R, ends reach R from that point."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o = rng.normal(size=(n, 3))
    o -= np.sum(o * d, axis=1, keepdims=True) * d
    o /= np.linalg.norm(o, axis=1, keepdims=True)
    f = rng.uniform(*frac, (n, 1)) * radius[:, None]
    s = rng.uniform(*reach, (n, 2)) * radius[:, None]
    return f * o - s[:, :1] * d, f * o + s[:, 1:] * d


def test_all_quadrants_is_the_shortest_path_over_the_sphere():
    """Quadrant "all": L = sqrt(|p1|^2-R^2) + sqrt(|p2|^2-R^2) + R (phi - acos(R/|p1|) - acos(R/|p2|)).

    The closed form is evaluated in extended precision (``np.longdouble``), with phi from atan2,
    so that it stays exact for short arcs: half the lines pass within 1e-3..1e-12 R of the surface.
    """
    rng = np.random.default_rng(0)
    n = 400
    radius = rng.uniform(0.02, 0.5, n)
    p1, p2 = _piercing(rng, n, radius, frac=(0.0, 0.999))
    q1, q2 = _piercing(rng, n // 2, radius[: n // 2], frac=(1.0, 1.0))
    shrink = 1.0 - 10.0 ** rng.uniform(-12, -3, (n // 2, 1))  # move the line towards the centre
    mid = 0.5 * (q1 + q2)
    p1[: n // 2], p2[: n // 2] = q1 - (1 - shrink) * mid, q2 - (1 - shrink) * mid
    zeros = np.zeros(n, int)
    total, w = _batched(p1, p2, radius, zeros, zeros)
    assert np.all(w.code == WRAPPED) and np.all(w.has_path)
    ld = np.longdouble
    a, b, r = p1.astype(ld), p2.astype(ld), radius.astype(ld)
    n1, n2 = np.sqrt(np.sum(a * a, axis=1)), np.sqrt(np.sum(b * b, axis=1))
    phi = np.arctan2(np.sqrt(np.sum(np.cross(a, b) ** 2, axis=1)), np.sum(a * b, axis=1))
    arc = r * (phi - np.arccos(r / n1) - np.arccos(r / n2))
    closed = np.sqrt(n1**2 - r**2) + np.sqrt(n2**2 - r**2) + arc
    assert arc[: n // 2].min() < 1e-6 * radius.max()  # short arcs were reached
    np.testing.assert_allclose(w.length, arc.astype(float), rtol=0, atol=1e-15)
    np.testing.assert_allclose(total, closed.astype(float), rtol=0, atol=1e-14)
    n1, n2 = n1.astype(float), n2.astype(float)
    # tangent points: on the sphere, tangent (r - p) . r = 0, in the plane of p1, p2 and 0
    for r, p in ((w.r1, p1), (w.r2, p2)):
        np.testing.assert_allclose(np.linalg.norm(r, axis=1), radius, atol=1e-13)
        np.testing.assert_allclose(np.sum((r - p) * r, axis=1), 0.0, atol=1e-13)
        np.testing.assert_allclose(np.sum(r * np.cross(p1, p2), axis=1) / (n1 * n2), 0.0, atol=1e-13)


def test_codes_of_the_simple_branches():
    """Inside, missing, beyond the ends, degenerate: codes and no path, by construction."""
    r = 1.0
    cases = [  # (p1, p2, code)
        ([0.5, 0, 0], [3, 0, 0], INSIDE),          # p1 inside
        ([3, 0, 0], [0, 0.2, 0.1], INSIDE),        # p2 inside
        ([-3, 1.2, 0], [3, 1.2, 0], NO_WRAP),      # line misses the sphere
        ([2, 0.1, 0], [5, 0.3, 0], NO_WRAP),       # line hits it beyond p1
        ([2, 2, 2], [2, 2, 2], NO_WRAP),           # p1 == p2
        ([-3, 0.5, 0], [3, 0.5, 0], WRAPPED),      # pierces, quadrant all
    ]
    p1 = np.array([c[0] for c in cases], float)
    p2 = np.array([c[1] for c in cases], float)
    n = len(cases)
    total, w = _batched(p1, p2, np.full(n, r), np.zeros(n, int), np.zeros(n, int))
    np.testing.assert_array_equal(w.code, [c[2] for c in cases])
    np.testing.assert_array_equal(w.has_path, [False] * (n - 1) + [True])
    np.testing.assert_allclose(total[:-1], np.linalg.norm(p1 - p2, axis=1)[:-1], atol=1e-15)


def test_constrained_quadrant_codes():
    """OpenSim's quadrant rules on hand-made segments through a sphere, quadrant +y.

    p1 on the +y side and the closest point within 1 m of p1: MANDATORY (R = 0.5); the same more
    than 1 m from p1 with both ends on +y: no wrap.  Then R = 1:  Ends on both sides, closest
    point on the -y side and more than 1 m from p1: WRAPPED.  Same but closest point on the +y side:
    no wrap (OpenSim returns noWrap, no path).  Both ends on -y: WRAPPED over the +y side (the short
    arc there), and a case where the +y constraint forces the long way round (far side).
    """
    cases = [  # (p1, p2, code, has_path)
        ([-0.8, 0.2, 0.0], [2.0, 0.1, 0.0], MANDATORY, True),   # tt ~ 0.8 m
        ([-2.0, 0.5, 0.0], [2.0, 0.1, 0.0], NO_WRAP, False),    # tt ~ 2 m, both ends on +y
        ([-3.0, 0.9, 0.0], [3.0, -1.3, 0.0], WRAPPED, True),     # closest y = -0.2, tt ~ 3.2 m
        ([-3.0, 1.3, 0.0], [3.0, -0.9, 0.0], NO_WRAP, False),    # closest y = +0.2
        ([-3.0, -0.3, 0.0], [3.0, -0.5, 0.0], WRAPPED, True),
        ([-0.3, -2.5, -1.25], [0.13, -0.55, 0.83], WRAPPED, True),
    ]
    p1 = np.array([c[0] for c in cases])
    p2 = np.array([c[1] for c in cases])
    n = len(cases)
    radius = np.array([0.5] + [1.0] * (n - 1))
    _, w = _batched(p1, p2, radius, np.ones(n, int), np.ones(n, int))
    np.testing.assert_array_equal(w.code, [c[2] for c in cases])
    np.testing.assert_array_equal(w.has_path, [c[3] for c in cases])
    # tangent points on the sphere and tangent; case 4 over the +y side
    assert w.r1[4, 1] > 0 and w.r2[4, 1] > 0
    for r, p in ((w.r1, p1), (w.r2, p2)):
        np.testing.assert_allclose(np.linalg.norm(r[[0, 2, 4, 5]], axis=1), radius[[0, 2, 4, 5]],
                                   atol=1e-13)
        np.testing.assert_allclose(np.sum((r - p) * r, axis=1)[[0, 2, 4, 5]], 0, atol=1e-13)
    theta = np.arccos(np.clip(np.sum(w.r1 * w.r2, axis=1) / radius**2, -1, 1))
    # the ends on -y: the short arc over +y
    np.testing.assert_allclose(w.length[4], theta[4], atol=1e-12)
    # short arc through -y (midpoint of r1, r2 on -y), so the path goes the long way round over +y,
    # which OpenSim's far-side rule measures as R (theta - 2 pi) < 0
    assert (w.r1[5] + w.r2[5])[1] < 0
    np.testing.assert_allclose(w.length[5], theta[5] - 2 * np.pi, atol=1e-12)


def _fd_points(rng):
    """Smooth points: quadrant "all" and constrained, ends 1.3-4 R out, lines 0.1-0.9 R off centre."""
    n = 48
    radius = rng.uniform(0.05, 0.5, n)
    p1, p2 = _piercing(rng, n, radius)
    # a few that miss the sphere (straight line)
    p1[-6:] += 3.0 * radius[-6:, None] * np.array([0, 0, 1.0])
    p2[-6:] += 3.0 * radius[-6:, None] * np.array([0, 0, 1.0])
    axis = rng.integers(0, 3, n)
    sign = rng.choice([-1, 0, 1], n)
    return p1, p2, radius, axis, sign


def test_jacobian_matches_central_differences():
    """jacfwd (and grad) of the total length in (p1, p2, R) vs central differences, h = 1e-6.

    Points whose branch changes within the stencil (code changes or tangent points jump by more
    than 1e-4) are dropped; at least 3/4 must remain.
    """
    rng = np.random.default_rng(3)
    p1, p2, radius, axis, sign = _fd_points(rng)
    n, h = len(radius), 1e-6
    x = np.concatenate([p1, p2, radius[:, None]], axis=1)  # (n, 7)
    steps = np.concatenate([np.eye(7), -np.eye(7)]) * h  # (14, 7)
    xs = np.concatenate([x[:, None], x[:, None] + steps], axis=1).reshape(-1, 7)  # (n 15, 7)
    rep = lambda a: np.repeat(a, 15, axis=0)  # noqa: E731
    t, w = _batched(xs[:, :3], xs[:, 3:6], xs[:, 6], rep(axis), rep(sign))
    t = t.reshape(n, 15)
    fd = (t[:, 1:8] - t[:, 8:15]) / (2 * h)
    r1, r2, code = (a.reshape(n, 15, -1) for a in (w.r1, w.r2, w.code))
    jump = np.maximum(np.abs(r1 - r1[:, :1]).max(axis=(1, 2)), np.abs(r2 - r2[:, :1]).max(axis=(1, 2)))
    smooth = (jump < 1e-4) & np.all(code == code[:, :1], axis=(1, 2))
    assert smooth.sum() >= 0.75 * n
    fwd, rev = _derivatives(p1, p2, radius, axis, sign)
    np.testing.assert_allclose(rev, fwd, rtol=0, atol=1e-13)
    err = np.abs(fwd - fd)[smooth]
    print(f"\njacfwd vs central FD: max diff {err.max():.2e} over {int(smooth.sum())} points")
    assert err.max() < 1e-7, err.max()
    # the derivative w.r.t. the radius is not trivially zero on wrapped points
    assert np.abs(fwd[smooth & (code[:, 0, 0] >= WRAPPED), 6]).min() > 1e-3


def test_wrap_onset_is_c1():
    """Quadrant "all": the gradient of the total length is continuous where the wrap switches on.

    Lines at closest approach R (1 -+ delta): the gradient jump shrinks with delta (about linearly).
    """
    rng = np.random.default_rng(4)
    n = 8
    radius = np.ones(n) * 0.2
    p1, p2 = _piercing(rng, n, radius, frac=(1.0, 1.0))
    mid = 0.5 * (p1 + p2)
    out = mid / np.linalg.norm(mid, axis=1, keepdims=True)  # unit offset direction of the line
    deltas = np.array([1e-2, 1e-4, 1e-6, 1e-8])
    offs = np.concatenate([-deltas, deltas])[None, :, None] * 0.2 * out[:, None]  # (n, 8, 3)
    q1 = (p1[:, None] + offs).reshape(-1, 3)
    q2 = (p2[:, None] + offs).reshape(-1, 3)
    m = len(q1)
    zeros, rm = np.zeros(m, int), np.full(m, 0.2)
    fwd, _ = _derivatives(q1, q2, rm, zeros, zeros)
    _, w = _batched(q1, q2, rm, zeros, zeros)
    wraps = w.wraps.reshape(n, 8)
    assert wraps[:, :4].all() and not wraps[:, 4:].any()
    g = fwd.reshape(n, 8, 7)[..., :6]
    jumps = np.abs(g[:, :4] - g[:, 4:]).max(axis=(0, 2))  # per delta
    print(f"\ngradient jump across wrap onset at delta = {deltas}: {jumps}")
    assert jumps[-1] < 1e-3
    assert np.all(np.diff(jumps) < 0)


def test_gradients_finite_on_every_branch():
    """No NaN from jacfwd or grad on degenerate inputs: inside, p1 == p2, through the centre,
    tangent line, ends on the sphere, both at the centre, zero radius, constrained and not."""
    pts = [
        ([0.5, 0, 0], [3, 0, 0]), ([2, 2, 2], [2, 2, 2]), ([-3, 0, 0], [3, 0, 0]),
        ([-3, 1, 0], [3, 1, 0]), ([1, 0, 0], [-1, 0, 0]), ([0, 0, 0], [0, 0, 0]),
        ([-2, 0.3, 0.1], [2, 0.2, -0.1]), ([-3, 0.0, 0], [3, 0.0, 0.0]), ([1, 0, 0], [0, 1, 0]),
    ]
    p1 = np.repeat(np.array([p[0] for p in pts], float), 3, axis=0)
    p2 = np.repeat(np.array([p[1] for p in pts], float), 3, axis=0)
    n = len(p1)
    sign = np.tile([0, 1, -1], len(pts))
    radius = np.where(np.arange(n) % 5 == 4, 0.0, 1.0)
    fwd, rev = _derivatives(p1, p2, radius, np.ones(n, int), sign)
    assert np.all(np.isfinite(fwd)) and np.all(np.isfinite(rev))


def test_vmap_over_points_and_spheres_traces_once():
    """One trace for a (poses x spheres) batch; == the flat batch; float32 runs."""
    traces = []

    def counted(p1, p2, r, ax, sg, sw):
        traces.append(1)
        return wrap_sphere(p1, p2, r, ax, sg, sw)

    over_spheres = jax.vmap(counted, in_axes=(0, 0, 0, 0, 0, 0))
    f = jax.jit(jax.vmap(over_spheres, in_axes=(0, 0, None, None, None, None)))
    rng = np.random.default_rng(6)
    ns, npose = 5, 30
    radius = rng.uniform(0.1, 0.4, ns)
    axis = np.array([0, 1, 2, 1, 0])
    sign = np.array([0, 1, -1, 0, 1])
    single = np.array([True, False, True, False, True])
    pa, pb = _piercing(rng, npose * ns, np.tile(radius, npose), frac=(0.0, 1.2))
    p1, p2 = pa.reshape(npose, ns, 3), pb.reshape(npose, ns, 3)
    w = jax.device_get(f(p1, p2, radius, axis, sign, single))
    w2 = jax.device_get(f(p1[::-1], p2[::-1], radius, axis, sign, single))
    assert len(traces) == 1
    np.testing.assert_array_equal(w2.code, w.code[::-1])
    assert len(set(w.code.ravel().tolist())) >= 3
    # the same segments as one flat batch (single_wrap ignored by the sphere)
    _, flat = _batched(pa, pb, np.tile(radius, npose), np.tile(axis, npose), np.tile(sign, npose))
    np.testing.assert_array_equal(flat.code, w.code.ravel())
    np.testing.assert_array_equal(flat.has_path, w.has_path.ravel())
    np.testing.assert_allclose(flat.length, w.length.ravel(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(flat.r1, w.r1.reshape(-1, 3), rtol=0, atol=1e-14)
    np.testing.assert_allclose(flat.r2, w.r2.reshape(-1, 3), rtol=0, atol=1e-14)
    # float32: same codes away from ties, finite values
    w32 = jax.device_get(f(p1.astype(np.float32), p2.astype(np.float32), radius.astype(np.float32),
                           axis, sign, single))
    assert w32.length.dtype == np.float32 and np.all(np.isfinite(w32.length))
    assert np.mean(w32.code == w.code) > 0.95
