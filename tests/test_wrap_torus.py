"""The lmdif port behind ``wrap_torus`` against SciPy's MINPACK, and the torus length's derivatives
against central differences.  (OpenSim itself: tests/validation/test_wrap_torus_opensim.py.)

SciPy's ``leastsq`` with a ``Dfun`` runs MINPACK ``lmder``, which is ``lmdif`` with the Jacobian
supplied by the caller (and, as in OpenSim's copy, not counted in ``nfev``).  Given OpenSim's
Jacobian (forward difference, constant step 1e-5, from the residual at the current x) and
OpenSim's settings it must stop at the same x (to the bit), with the same ``info`` and ``nfev``.
The remaining differences between OpenSim's copy and MINPACK (``MACHEP`` 1.2e-16 vs 2.2e-16,
``DWARF``, the first step bound when ``|factor * diag * x0| <= 1e-4``) do not arise on these
problems: x0 = 0 gives the step bound ``factor`` in both.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping._lmdif import div, lmdif1, rounded
from mbjax._spatial import safe_norm
from mbjax.wrapping.torus import _circle_resid, _direction, wrap_torus

scipy_optimize = pytest.importorskip("scipy.optimize")

H = 1e-5  # OpenSim's fdjac2 step


def _resid_c(u, p1, p2, r):
    """``WrapTorus::calcCircleResids`` transcribed in plain Python floats (IEEE doubles, no FMA)."""
    dx, dy, dz = p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]
    mag = math.sqrt(dx * dx + dy * dy + dz * dz)
    nx, ny, nz = dx / mag, dy / mag, dz / mag
    c2 = 2.0 * (p1[0] * nx + p1[1] * ny + p1[2] * nz)
    c3 = p1[0] * nx + p1[1] * ny
    c4 = nx * nx + ny * ny
    c5 = p1[0] * p1[0] + p1[1] * p1[1]
    return c2 + 2.0 * u - 2.0 * r * (2.0 * c4 * u + 2.0 * c3) / math.sqrt(u * u * c4 + 2.0 * c3 * u + c5)


def _minpack(f, x0, ftol, xtol, maxfev, factor):
    """SciPy's lmder with OpenSim's forward-difference Jacobian: (x, info, nfev)."""
    def fun(x):
        return np.array([f(float(x[0]))])

    def jac(x):
        x = float(x[0])
        return np.array([[(f(x + H) - f(x)) / H]])

    x, _, info, _, ier = scipy_optimize.leastsq(fun, np.array([x0]), Dfun=jac, full_output=True, ftol=ftol,
                                                xtol=xtol, gtol=0.0, maxfev=maxfev, factor=factor)
    return x[0], ier, info["nfev"]


def test_lmdif_matches_minpack_on_the_torus_residual():
    rng = np.random.default_rng(4)
    n, r = 300, 0.1
    p1 = rng.uniform(-0.25, 0.25, (n, 3))
    p2 = rng.uniform(-0.25, 0.25, (n, 3))
    p2[: n // 4, :2] = p1[: n // 4, :2] + rng.normal(0, 1e-3, (n // 4, 2))  # steep lines

    @jax.jit
    @jax.vmap
    def ours(a, b):
        nv = _direction(a, b)
        return lmdif1(lambda u: _circle_resid(u, a, nv, r), jnp.zeros(()), 1e-4, 1e-4, 0.0, 500, 0.2)

    x, info, nfev = jax.device_get(ours(p1, p2))
    ref = np.array([_minpack(lambda u, a=tuple(a), b=tuple(b): _resid_c(u, a, b, r), 0.0, 1e-4, 1e-4, 500, 0.2)
                    for a, b in zip(p1, p2)])
    np.testing.assert_array_equal(x, ref[:, 0])
    np.testing.assert_array_equal(info, ref[:, 1])
    np.testing.assert_array_equal(nfev, ref[:, 2])
    assert {1, 2, 3} <= set(info.tolist()) and nfev.max() >= 10


#: residuals taking lmdif's other branches: (JAX residual, the same in Python floats, x0)
OTHER_PROBLEMS = [
    (lambda x: rounded(x * x) * x - 2.0 * x - 5.0, lambda x: x * x * x - 2.0 * x - 5.0, 0.0),
    (lambda x: div(x - 3.0, 1.0 + rounded(x * x)), lambda x: (x - 3.0) / (1.0 + x * x), 0.0),
    (lambda x: div(x - 3.0, 1.0 + rounded(x * x)), lambda x: (x - 3.0) / (1.0 + x * x), 40.0),  # runs off
    (lambda x: rounded(x * x) - 0.01, lambda x: x * x - 0.01, 2.0),
    (lambda x: 0.0 * x + 1.5, lambda x: 1.5, 0.0),  # flat: gtol stop (info 4) at once
]
#: (ftol, xtol, maxfev, factor)
SETTINGS = [(1e-4, 1e-4, 500, 0.2), (1e-12, 1e-12, 500, 0.2), (1e-12, 1e-12, 4, 0.2), (1e-8, 1e-8, 500, 100.0)]


def test_lmdif_matches_minpack_on_other_residuals():
    """Shrinking and growing step bounds, lmpar iterations, a run to infinity, maxfev, gtol."""
    cases = [(k, x0, *st) for k, (_, _, x0) in enumerate(OTHER_PROBLEMS) for st in SETTINGS]
    branches = [p[0] for p in OTHER_PROBLEMS]

    @jax.jit
    @jax.vmap
    def run(k, x0, ftol, xtol, maxfev, factor):  # one compile: the residual is chosen per lane
        return lmdif1(lambda x: jax.lax.switch(k, branches, x), x0, ftol, xtol, 0.0, maxfev, factor)

    x, info, nfev = jax.device_get(run(*(np.array(v) for v in zip(*cases))))
    for c, (k, x0, ftol, xtol, maxfev, factor) in enumerate(cases):
        ref = _minpack(OTHER_PROBLEMS[k][1], x0, ftol, xtol, maxfev, factor)
        assert (float(x[c]), int(info[c]), int(nfev[c])) == ref, cases[c]
    assert {1, 2, 4, 5} <= set(info.tolist())


RI, RO, H_FD = 0.03, 0.1, 1e-6
QUADRANTS = [(0, 0), (0, 1), (2, -1)]
STENCIL = np.concatenate([np.zeros((1, 6)), H_FD * np.eye(6), -H_FD * np.eye(6)])


def _length(x, axis, sign):
    p1, p2 = x[:3], x[3:]
    w = wrap_torus(p1, p2, RI, RO, axis, sign, True)
    # (safe_norm: without a wrap r1 = p1, and reverse mode must not see norm'(0))
    wrapped = safe_norm(p1 - w.r1) + w.length + safe_norm(w.r2 - p2)
    return jnp.where(w.wraps, wrapped, safe_norm(p1 - p2)), w.wraps


@jax.jit
@jax.vmap
def _derivatives_chunk(x, axis, sign):
    length, jvp, wraps = jax.linearize(lambda y: _length(y, axis, sign), x, has_aux=True)
    jac = jax.vmap(jvp)(jnp.eye(6, dtype=x.dtype))
    (grad,) = jax.linear_transpose(jvp, x)(jnp.ones_like(length))
    return length, wraps, jac, grad


def _length_and_derivatives(x, axis, sign, chunk=512):
    """The length, whether it wraps, its Jacobian in the 6 end-point coordinates in forward mode
    (as jax.jacfwd) and its gradient in reverse mode (the transpose of the linearisation, as
    jax.grad), per row of x: one compiled program for the derivative tests here (rows in chunks of
    a fixed size, the last one padded)."""
    n = len(x)
    pad = -n % chunk
    args = [np.concatenate([a, np.repeat(a[:1], pad, 0)]) for a in (np.asarray(x), np.asarray(axis), np.asarray(sign))]
    out = [jax.device_get(_derivatives_chunk(*(a[i:i + chunk] for a in args))) for i in range(0, n + pad, chunk)]
    return tuple(np.concatenate(parts)[:n] for parts in zip(*out))


@jax.jit
@jax.vmap
def _lmdif_probe(x):
    """Both passes' nfev and the larger |u_lmdif - root| (Newton from the stopped iterate)."""
    p1, p2 = x[:3], x[3:]
    nfev, gap = [], []
    for pa, pb in ((p1, p2), (p2, p1)):
        nv = _direction(pa, pb)
        f = lambda v, pa=pa, nv=nv: _circle_resid(v, pa, nv, RO)  # noqa: E731
        u, _, nf = lmdif1(f, jnp.zeros(()), 1e-4, 1e-4, 0.0, 500, 0.2)
        root = u
        for _ in range(6):
            root = root - f(root) / jax.grad(f)(root)
        nfev.append(nf)
        gap.append(jnp.abs(root - u))
    return jnp.stack(nfev), jnp.maximum(*gap)


def _smooth_segments(n_per_quadrant, seed):
    """Wrapping segments where lmdif stops within 1e-10 m of the residual's root (so its
    derivative is the root's) and takes the same number of steps at x +- h e_k (no switching)."""
    rng = np.random.default_rng(seed)
    n = n_per_quadrant
    x = rng.uniform(-1, 1, (len(QUADRANTS) * n, 6)) * np.array([0.2, 0.2, 0.15] * 2)
    axis, sign = (np.repeat([q[k] for q in QUADRANTS], n) for k in range(2))
    nfev, gap = jax.device_get(_lmdif_probe((x[:, None] + STENCIL[None]).reshape(-1, 6)))
    nfev, gap = nfev.reshape(len(x), len(STENCIL), 2), gap.reshape(len(x), len(STENCIL))
    ok = np.all(nfev == nfev[:, :1], (1, 2)) & (gap[:, 0] < 1e-10)
    return x[ok], axis[ok], sign[ok]


def test_length_jvp_matches_central_differences():
    x, axis, sign = _smooth_segments(30, 2)
    # one call over the 13 stencil points of every segment: the lengths give the differences, the
    # Jacobian (forward mode) is the one at the centre (stencil point 0)
    k = len(STENCIL)
    length, wraps, jac, _ = jax.device_get(_length_and_derivatives(
        (x[:, None] + STENCIL[None]).reshape(-1, 6), np.repeat(axis, k), np.repeat(sign, k)))
    length, wraps, jac = length.reshape(-1, k), wraps.reshape(-1, k), jac.reshape(-1, k, 6)[:, 0]
    ok = np.all(wraps, 1)  # wrapping all over the stencil
    assert ok.sum() >= 15, ok.sum()
    fd = (length[:, 1:7] - length[:, 7:]) / (2 * H_FD)
    print(f"\n{ok.sum()} segments: max |jvp - FD| {np.abs(jac - fd)[ok].max():.1e}")
    np.testing.assert_allclose(jac[ok], fd[ok], rtol=0, atol=2e-8)


@pytest.mark.extended
def test_length_grad_matches_jacfwd():
    """Reverse mode (lmdif's transposable JVP rule, ``iterate_rule``) equals forward mode."""
    x, axis, sign = _smooth_segments(5, 3)
    _, _, jac, grad = _length_and_derivatives(x, axis, sign)
    assert len(x) >= 5
    np.testing.assert_allclose(np.asarray(grad), np.asarray(jac), rtol=0, atol=1e-12)


@jax.jit
@jax.vmap
def _stop_probe(x):
    """Per pass: |F(u*)| where lmdif stopped, its info and nfev, u*, and -dF/F' at u* (the
    derivative a root of F would have) in the 6 end-point coordinates."""
    def one(pa, pb, y, first):
        nv = _direction(pa, pb)
        f = lambda v: _circle_resid(v, pa, nv, RO)  # noqa: E731
        u, info, nfev = lmdif1(f, jnp.zeros(()), 1e-4, 1e-4, 0.0, 500, 0.2)

        def resid_at(z):  # F(u*) with u* held, as a function of the end points
            a, b = (z[:3], z[3:]) if first else (z[3:], z[:3])
            return _circle_resid(u, a, _direction(a, b), RO)

        return jnp.abs(f(u)), info, nfev, u, -jax.grad(resid_at)(y) / jax.grad(f)(u)

    a = one(x[:3], x[3:], x, True)
    b = one(x[3:], x[:3], x, False)
    return tuple(jnp.stack([s, t]) for s, t in zip(a, b))


def _off_root_segments(n, seed):
    """Wrapping segments where lmdif stops with |F(u*)| > 1e-3 in a pass (on its ftol/xtol tests,
    not at a root of F) and no decision switches near them: the same info and nfev of both passes
    over the stencils x ± h e_k and x ± h/10 e_k, and central differences with h and h/10 agreeing
    to 1e-7.  Returns the segments, the differences of the length (h: at h/10 lmdif's round-off
    shows) and of u* (h/10, per pass), each pass's -dF/F', and the length's Jacobian (forward
    mode) and gradient (reverse mode) at the segments."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 6)) * np.array([0.2, 0.2, 0.15] * 2)
    k = len(STENCIL)
    pts = np.concatenate([(x[:, None] + STENCIL[None]).reshape(-1, 6), (x[:, None] + 0.1 * STENCIL[None]).reshape(-1, 6)])
    resid, info, nfev, u, root_du = (v.reshape((2, n, k) + v.shape[1:]) for v in jax.device_get(_stop_probe(pts)))
    same = lambda v: np.all(v == v[:, :, :1], axis=(0, 2, 3))  # noqa: E731
    keep = (resid[0, :, 0].max(-1) > 1e-3) & same(info) & same(nfev)
    x, u, root_du = x[keep], u[:, keep], root_du[1, keep, 0]
    length, wraps, jac, grad = jax.device_get(_length_and_derivatives(
        pts.reshape(2, n, k, 6)[:, keep].reshape(-1, 6), np.zeros(2 * len(x) * k, int), np.zeros(2 * len(x) * k, int)))
    length = length.reshape(2, len(x), k)
    fd = (length[:, :, 1:7] - length[:, :, 7:]) / (2 * H_FD * np.array([1.0, 0.1]))[:, None, None]
    fd_u = (u[1, :, 1:7] - u[1, :, 7:]) / (0.2 * H_FD)  # (m, 6, 2 passes)
    ok = wraps.reshape(2, len(x), k).all((0, 2)) & (np.abs(fd[0] - fd[1]).max(1) < 1e-7)
    # the derivatives at the segments themselves (stencil point 0 of the h stencil)
    jac, grad = jac.reshape(2, len(x), k, 6)[0, :, 0], grad.reshape(2, len(x), k, 6)[0, :, 0]
    return x[ok], fd[0][ok], fd_u[ok], root_du[ok], jac[ok], grad[ok]


def test_length_derivatives_where_lmdif_stops_off_root():
    """Where lmdif stops with F(u*) far from 0 (ftol/xtol on relative reductions, F' small), the
    length's forward (jacfwd) and reverse (grad) derivatives are those of the stopped iterate:
    equal to central differences of the lengths.  The root's derivative -dF/F' is not u*'s there
    (checked against differences of u*), so the implicit-function rule fails these cases."""
    x, fd, fd_u, root_du, jac, grad = _off_root_segments(1500, 5)
    assert len(x) >= 20, len(x)
    assert np.mean(np.abs(root_du - np.moveaxis(fd_u, -1, 1)).max((1, 2)) > 1e-3) > 0.2
    print(f"\n{len(x)} off-root segments: max |jacfwd - FD| {np.abs(jac - fd).max():.1e}")
    np.testing.assert_allclose(jac, fd, rtol=0, atol=1e-7)
    np.testing.assert_allclose(grad, fd, rtol=0, atol=1e-7)
