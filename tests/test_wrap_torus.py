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
from mbjax.wrapping._math import safe_norm
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

    # one compile (the jvp program): lanes = the 13 stencil points with zero tangents, then the
    # centre with each unit tangent; the primal outputs give the differences
    nx = len(x)
    pts = np.concatenate([(x[:, None] + STENCIL[None]).reshape(-1, 6), np.repeat(x, 6, 0)])
    tan = np.concatenate([np.zeros((nx * len(STENCIL), 6)), np.tile(np.eye(6), (nx, 1))])
    ax = np.concatenate([np.repeat(axis, len(STENCIL)), np.repeat(axis, 6)])
    sg = np.concatenate([np.repeat(sign, len(STENCIL)), np.repeat(sign, 6)])
    run = jax.jit(jax.vmap(lambda y, t, a, s: jax.jvp(lambda z: _length(z, a, s), (y,), (t,))))
    (vals, wraps), (dvals, _) = jax.device_get(run(pts, tan, ax, sg))
    length = vals[: nx * len(STENCIL)].reshape(nx, len(STENCIL))
    wraps = wraps[: nx * len(STENCIL)].reshape(nx, len(STENCIL))
    jac = dvals[nx * len(STENCIL):].reshape(nx, 6)
    ok = np.all(wraps, 1)  # wrapping all over the stencil
    assert ok.sum() >= 15, ok.sum()
    fd = (length[:, 1:7] - length[:, 7:]) / (2 * H_FD)
    print(f"\n{ok.sum()} segments: max |jvp - FD| {np.abs(jac - fd)[ok].max():.1e}")
    np.testing.assert_allclose(jac[ok], fd[ok], rtol=0, atol=2e-8)


@pytest.mark.extended
def test_length_grad_matches_jacfwd():
    """Reverse mode (the lmdif loop runs on stop-gradient inputs, so grad works) equals forward."""
    x, axis, sign = _smooth_segments(5, 3)
    f = lambda y, a, s: _length(y, a, s)[0]  # noqa: E731
    jac = jax.jit(jax.vmap(jax.jacfwd(f)))(x, axis, sign)
    grad = jax.jit(jax.vmap(jax.grad(f)))(x, axis, sign)
    assert len(x) >= 5
    np.testing.assert_allclose(np.asarray(grad), np.asarray(jac), rtol=0, atol=1e-12)
