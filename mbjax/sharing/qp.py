"""Separable power-cost problem with linear equalities and box bounds, solved with optax.

    minimize  f(x) = Σ_i w_i |x_i|^p      subject to   A x = b,   lo ≤ x ≤ hi          (p > 1)

(OpenSim's ``StaticOptimizationTarget::objectiveFunc`` with weights; the constraint matrix is
linear in the parameters as in its ``USE_LINEAR_CONSTRAINT_MATRIX`` branch).  One problem at a
time, every loop a ``lax.while_loop`` with a tolerance and an iteration cap, so it vmaps/scans.

1. **Augmented Lagrangian with optax inner steps.**  L_ρ(x, λ) = f + λᵀc + ρ/2 |c|², c = A x - b,
   on the row-scaled problem (each row of A, b divided by its largest |A_ij|), ρ = 30.  Inner loop (20 steps):
   ``optax.sgd`` (Nesterov momentum 0.9, step 1/Lip with Lip = max f'' + ρ |A|_F²) followed by
   ``optax.projections.projection_box``; outer loop: λ ← λ + ρ c until the projected-gradient
   residual and |c|_∞ are below ``alm_tol`` (1e-2: the hand-off to the polish) or ``max_outer`` passes.
2. **KKT polish** (primal-dual active set = semismooth Newton on the natural residual
   x - Π(x - ∇_x L₀)): bounds predicted from z = x - (∇f + Aᵀλ)/f'' (z ≤ lo: at lo, z ≥ hi: at
   hi), then one Newton step of the KKT system with those bounds fixed; exact in one step for
   p = 2 once the active set is right.  Stops when the natural residual (scaled units) is below
   ``tol`` (default 0.01 √eps of the dtype).  A small ridge δ = 1e3 eps on the λ block keeps
   the system solvable when rows lose rank (infeasible frames, :mod:`mbjax.sharing.report`).
   If the polish does not converge the ALM iterate is returned with ``converged = False``.
3. **Implicit derivatives**: with the final active set held fixed, the solution satisfies
   G(x, λ; A, b, w, lo, hi) = 0 (stationarity on free entries, x = bound on active ones, A x = b);
   the returned point is y* - (J⁻¹G - stop_gradient(J⁻¹G)) with J = ∂G/∂(x, λ) at y* held
   constant, whose value is y* and whose derivative is the implicit-function one -J⁻¹ ∂G/∂θ.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax


class QPSolution(NamedTuple):
    """Solution of one problem: ``x (n,)``, equality multipliers ``lam (m,)`` (scaled rows),
    ``objective``, natural ``kkt_residual`` (scaled units), ``converged``, ALM outer passes and
    polish steps."""

    x: jnp.ndarray
    lam: jnp.ndarray
    objective: jnp.ndarray
    kkt_residual: jnp.ndarray
    converged: jnp.ndarray
    alm_iterations: jnp.ndarray
    polish_iterations: jnp.ndarray


def objective(x, w, p):
    """f(x) = Σ w |x|^p."""
    return jnp.sum(w * jnp.abs(x) ** p)


def _grad_hess(x, w, p, reg):
    """∇f and the diagonal of ∇²f (+ reg, so the Newton system stays regular where f'' = 0)."""
    ax = jnp.abs(x)
    g = w * p * jnp.sign(x) * ax ** (p - 1)
    h = w * p * (p - 1) * jnp.maximum(ax, 1e-8) ** (p - 2)  # exactly 2w at p = 2
    return g, h + reg


def _natural_residual(x, lam, A, b, lo, hi, w, p):
    g, _ = _grad_hess(x, w, p, 0.0)
    r = g + A.T @ lam
    stat = jnp.max(jnp.abs(x - jnp.clip(x - r, lo, hi)))
    prim = jnp.max(jnp.abs(A @ x - b)) if A.shape[0] else jnp.zeros((), x.dtype)
    return jnp.maximum(stat, prim)


#: augmented-Lagrangian passes run before the tolerance may stop them
MIN_OUTER = 2


def _alm(x0, lam0, A, b, lo, hi, w, p, rho, inner, max_outer, alm_tol):
    dtype = x0.dtype
    scale = jnp.maximum(1.0, jnp.max(jnp.abs(jnp.where(jnp.isfinite(hi), hi, 0.0))))
    fpp = jnp.max(w) * p * (p - 1) * scale ** (p - 2)
    lip = fpp + rho * jnp.sum(A * A)
    opt = optax.sgd(1.0 / lip, momentum=0.9, nesterov=True)

    def lag_grad(x, lam):
        c = A @ x - b
        g, _ = _grad_hess(x, w, p, 0.0)
        return g + A.T @ (lam + rho * c)

    def inner_step(_, s):
        x, st, lam = s
        upd, st = opt.update(lag_grad(x, lam), st, x)
        x = optax.projections.projection_box(optax.apply_updates(x, upd), lo, hi)
        return x, st, lam

    def cond(s):
        k, x, lam, err = s
        # at least MIN_OUTER passes: a start that looks converged to alm_tol (a tiny τ, x at its
        # bounds, λ = 0) can still hand the polish an active set it cycles on
        return (k < max_outer) & ((err > alm_tol) | (k < MIN_OUTER))

    def body(s):
        k, x, lam, _ = s
        x, _, _ = jax.lax.fori_loop(0, inner, inner_step, (x, opt.init(x), lam))
        lam = lam + rho * (A @ x - b)
        return k + 1, x, lam, _natural_residual(x, lam, A, b, lo, hi, w, p)

    x0 = jnp.clip(x0, lo, hi)
    err0 = _natural_residual(x0, lam0, A, b, lo, hi, w, p)
    k, x, lam, _ = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), x0, lam0, err0.astype(dtype)))
    return x, lam, k


def _active_sets(x, lam, A, lo, hi, w, p, reg):
    g, h = _grad_hess(x, w, p, reg)
    z = x - (g + A.T @ lam) / h
    low, up = z <= lo, z >= hi
    return low, up


def _kkt(x, lam, low, up, A, b, lo, hi, w, p, reg, delta):
    """KKT residual G and its Jacobian J in (x, λ) for a fixed active set."""
    n, m = x.shape[0], lam.shape[0]
    g, h = _grad_hess(x, w, p, reg)
    free = (~(low | up)).astype(x.dtype)
    bnd = jnp.where(low, lo, jnp.where(up, hi, 0.0))
    G = jnp.concatenate([free * (g + A.T @ lam) + (1 - free) * (x - bnd), A @ x - b])
    J = jnp.block([[jnp.diag(free * h + (1 - free)), free[:, None] * A.T], [A, -delta * jnp.eye(m, dtype=x.dtype)]])
    return G, J


def _polish(x, lam, A, b, lo, hi, w, p, tol, max_polish, reg, delta):
    n = x.shape[0]

    def step(x, lam):
        low, up = _active_sets(x, lam, A, lo, hi, w, p, reg)
        G, J = _kkt(x, lam, low, up, A, b, lo, hi, w, p, reg, delta)
        d = jnp.linalg.solve(J, G)
        return x - d[:n], lam - d[n:]

    def cond(s):
        k, x, lam, err = s
        return (k < max_polish) & (err > tol)

    def body(s):
        k, x, lam, err = s
        xn, ln = step(x, lam)
        ok = jnp.all(jnp.isfinite(xn)) & jnp.all(jnp.isfinite(ln))
        xn, ln = jnp.where(ok, xn, x), jnp.where(ok, ln, lam)
        errn = jnp.where(ok, _natural_residual(xn, ln, A, b, lo, hi, w, p), jnp.inf)
        return k + 1, xn, ln, errn

    err0 = _natural_residual(x, lam, A, b, lo, hi, w, p)
    k, x, lam, err = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), x, lam, err0))
    return x, lam, err, k


def least_norm_start(A, b):
    """Aᵀ(A Aᵀ + ε)⁻¹ b: the least-norm solution of A x = b (before clipping to the box)."""
    m = A.shape[0]
    if m == 0:
        return jnp.zeros((A.shape[1],), A.dtype)
    eps = float(jnp.finfo(A.dtype).eps)
    G = A @ A.T
    return A.T @ jnp.linalg.solve(G + 1e3 * eps * jnp.trace(G) * jnp.eye(m, dtype=A.dtype), b)


def default_tolerance(dtype) -> float:
    """0.01 √eps of ``dtype`` (1.5e-10 in float64, 3.5e-6 in float32), in the scaled units."""
    return 0.01 * float(jnp.finfo(dtype).eps) ** 0.5


def solve(A, b, lo, hi, w, p=2.0, x0=None, lam0=None, *, rho=30.0, inner=20, max_outer=40, alm_tol=1e-2,
          tol=None, max_polish=30, polish=True) -> QPSolution:
    """Minimize Σ w |x|^p s.t. A x = b, lo ≤ x ≤ hi (module docstring); differentiable in A, b, lo,
    hi, w through the implicit-function theorem at the solution.  ``x0``/``lam0`` warm-start the
    ALM (λ in the units of the row-scaled problem, as returned in ``QPSolution.lam``)."""
    A = jnp.asarray(A)
    dtype = A.dtype
    b, lo, hi, w = (jnp.asarray(v, dtype) for v in (b, lo, hi, w))
    m, n = A.shape
    p = jnp.asarray(p, dtype)  # traced: one compiled program serves every exponent
    if tol is None:
        tol = default_tolerance(dtype)
    eps = float(jnp.finfo(dtype).eps)
    reg, delta = 1e3 * eps, 1e3 * eps
    # row scaling (a constant: the solution does not depend on it)
    s = jax.lax.stop_gradient(1.0 / jnp.maximum(jnp.max(jnp.abs(A), axis=1), 1e3 * eps)) if m else jnp.ones((0,), dtype)
    As, bs = A * s[:, None], b * s
    c = jax.lax.stop_gradient((As, bs, lo, hi, w))
    if x0 is None:
        x0 = least_norm_start(c[0], c[1])
    if lam0 is None:
        lam0 = jnp.zeros((m,), dtype)
    x0, lam0 = jax.lax.stop_gradient((jnp.asarray(x0, dtype), jnp.asarray(lam0, dtype)))
    x_alm, lam_alm, k_alm = _alm(x0, lam0, *c, p, rho, inner, max_outer, alm_tol)
    if polish:
        x_pol, lam_pol, err_pol, k_pol = _polish(x_alm, lam_alm, *c, p, tol, max_polish, reg, delta)
        converged = err_pol <= tol
        x_st = jnp.where(converged, x_pol, x_alm)
        lam_st = jnp.where(converged, lam_pol, lam_alm)
    else:
        k_pol = jnp.zeros((), jnp.int32)
        x_st, lam_st = x_alm, lam_alm
    x_st = jnp.clip(x_st, c[2], c[3])
    err = _natural_residual(x_st, lam_st, *c, p)
    converged = err <= (tol if polish else alm_tol)
    # implicit derivatives with the final active set
    low, up = _active_sets(x_st, lam_st, c[0], c[2], c[3], c[4], p, reg)
    _, J = _kkt(x_st, lam_st, low, up, *c, p, reg, delta)
    G, _ = _kkt(x_st, lam_st, low, up, As, bs, lo, hi, w, p, reg, delta)
    d = jnp.linalg.solve(J, G)
    d = jnp.where(jnp.all(jnp.isfinite(d)), d, 0.0)
    d = d - jax.lax.stop_gradient(d)
    x, lam = x_st - d[:n], lam_st - d[n:]
    return QPSolution(x, lam, objective(x, w, p), err, converged, k_alm, k_pol)
