"""Separable power-cost problem with linear equalities and box bounds, solved with optax.

    minimize  f(x) = Σ_i w_i |x_i|^p      subject to   A x = b,   lo ≤ x ≤ hi          (p > 1)

(OpenSim's ``StaticOptimizationTarget::objectiveFunc`` with weights; the constraint matrix is
linear in the parameters as in its ``USE_LINEAR_CONSTRAINT_MATRIX`` branch).  One problem at a
time, every loop a ``lax.while_loop`` with a tolerance and an iteration cap, so it vmaps/scans.

1. **Augmented Lagrangian with optax inner steps.**  L_ρ(x, λ) = f + λᵀc + ρ/2 |c|², c = A x - b,
   on the row-scaled problem (each row of A, b divided by its largest |A_ij|), ρ = 30.  Inner loop (20 steps):
   ``optax.sgd`` (Nesterov momentum 0.9, step 1/Lip with Lip = max f'' + ρ |A|_F²) followed by
   ``optax.projections.projection_box``; outer loop: λ ← λ + ρ c until the projected-gradient
   residual and |c|_∞ are below ``alm_tol`` (1e-2) or after ``first_outer`` passes (2): the hand-off to
   the polish; only when the polish fails does the ALM go on, to ``max_outer`` passes, and polish again.
2. **Polish: damped Newton on the dual**, from the ALM's λ.  The cost is separable and strictly
   convex, so for given λ the minimizer of Σ w|x|^p + λᵀA x over the box is explicit per entry,
   x(λ) = clip(-sign(g) (|g| / (w p))^{1/(p-1)}, lo, hi) with g = Aᵀλ, and the dual function
   φ(λ) = Σ w|x(λ)|^p + λᵀ(A x(λ) - b) is concave and C¹ with ∇φ = A x(λ) - b (primal feasibility;
   stationarity and complementarity hold by construction).  Newton steps Δλ = (A S Aᵀ + δ)⁻¹ ∇φ
   (S = 1/f'' on the free entries, 0 on the clipped ones; solved by Cholesky, the ridge δ keeping
   the matrix positive definite, with LU where rounding breaks it down) with Armijo backtracking on φ converge
   from any start for a feasible problem, and in finitely many steps for p = 2 (φ is piecewise
   quadratic), with no active-set cycling.  (Before: a primal-dual active-set Newton step on the
   KKT system, which cycled on the Gait2354 residual-actuator frames and left them unconverged.)
   Stops when |A x - b|_∞ (scaled units) is below ``tol`` · max(1, |b|_∞) (``tol``: default 0.01 √eps
   of the dtype; relative to the right-hand side, because rounding in A x is: a residual row with
   optimal force 8 N carrying 700 N of ground reaction has |b| ≈ 90 in scaled units).
   The ridge δ = 10 eps (relative to max diag AAᵀ) keeps the step defined when rows lose rank (infeasible frames,
   :mod:`mbjax.analysis.sharing.report`: there φ grows without bound and the polish stops at its cap);
   if the polish does not converge the ALM iterate is returned with ``converged = False``.
3. **Implicit derivatives**: with the final active set held fixed, the solution satisfies
   G(x, λ; A, b, w, lo, hi) = 0 (stationarity on free entries, x = bound on active ones, A x = b);
   the returned point is y* - (J⁻¹G - stop_gradient(J⁻¹G)) with J = ∂G/∂(x, λ) at y* held
   constant, whose value is y* and whose derivative is the implicit-function one -J⁻¹ ∂G/∂θ.
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
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
    m = lam.shape[0]
    g, h = _grad_hess(x, w, p, reg)
    free = (~(low | up)).astype(x.dtype)
    bnd = jnp.where(low, lo, jnp.where(up, hi, 0.0))
    G = jnp.concatenate([free * (g + A.T @ lam) + (1 - free) * (x - bnd), A @ x - b])
    J = jnp.block([[jnp.diag(free * h + (1 - free)), free[:, None] * A.T], [A, -delta * jnp.eye(m, dtype=x.dtype)]])
    return G, J


def _dual_point(lam, A, lo, hi, w, p):
    """x(λ) = argmin over the box of Σ w|x|^p + λᵀA x, entry by entry (module docstring, step 2)."""
    g = A.T @ lam
    x = -jnp.sign(g) * (jnp.abs(g) / (w * p)) ** (1.0 / (p - 1.0))
    return jnp.clip(x, lo, hi)


def _dual_value(lam, A, b, lo, hi, w, p):
    x = _dual_point(lam, A, lo, hi, w, p)
    return objective(x, w, p) + lam @ (A @ x - b), x


#: Armijo constant and the most halvings of one dual Newton step
_ARMIJO, _MAX_HALVINGS = 1e-4, 50


def _polish(x, lam, A, b, lo, hi, w, p, tol, max_polish, reg, delta):
    """Damped Newton ascent on the concave dual φ(λ) (module docstring, step 2); ``x`` only
    seeds the returned point when no step is taken."""
    m = lam.shape[0]
    # the ridge δ (1 + max_i |A_i|²) (max of diag(A Aᵀ), read from the rows: no product per step)
    ridge = delta * (1.0 + jnp.max(jnp.sum(A * A, axis=1), initial=0.0)) * jnp.eye(m, dtype=lam.dtype)

    def step(lam, phi, x):
        r = A @ x - b  # ∇φ
        _, h = _grad_hess(x, w, p, reg)
        free = (x > lo) & (x < hi)
        S = jnp.where(free, 1.0 / h, 0.0)
        H = (A * S[None, :]) @ A.T + ridge
        # H is symmetric positive definite (ridge): Cholesky, LU only where it breaks down in rounding
        chol = jax.scipy.linalg.cho_factor(H)
        d = jax.lax.cond(jnp.all(jnp.isfinite(chol[0])), lambda: jax.scipy.linalg.cho_solve(chol, r),
                         lambda: jnp.linalg.solve(H, r))
        slope = r @ d
        r_inf = jnp.max(jnp.abs(r))

        def ls_cond(s):
            # Armijo on φ, or, where φ's change is below its rounding (near the solution, in float32),
            # a halved residual with φ not lower than rounding allows (φ must not fall: that cycles)
            j, t, phin, _, xn = s
            armijo = phin >= phi + _ARMIJO * t * slope
            shrinks = (jnp.max(jnp.abs(A @ xn - b)) <= (1.0 - 0.5 * t) * r_inf) & (
                phin >= phi - 100 * jnp.finfo(phi.dtype).eps * jnp.abs(phi))
            return (j < _MAX_HALVINGS) & ~(armijo | shrinks)

        def ls_body(s):
            j, t, _, _, _ = s
            t = 0.5 * t
            phin, xn = _dual_value(lam + t * d, A, b, lo, hi, w, p)
            return j + 1, t, phin, lam + t * d, xn

        phi1, x1 = _dual_value(lam + d, A, b, lo, hi, w, p)
        _, _, phin, ln, xn = jax.lax.while_loop(ls_cond, ls_body, (jnp.zeros((), jnp.int32), jnp.ones((), lam.dtype),
                                                                    phi1, lam + d, x1))
        return ln, phin, xn

    def cond(s):
        k, lam, phi, x, err = s
        return (k < max_polish) & (err > tol)

    def body(s):
        k, lam, phi, x, err = s
        ln, phin, xn = step(lam, phi, x)
        ok = jnp.all(jnp.isfinite(xn)) & jnp.all(jnp.isfinite(ln)) & jnp.isfinite(phin)
        ln, phin, xn = jnp.where(ok, ln, lam), jnp.where(ok, phin, phi), jnp.where(ok, xn, x)
        errn = jnp.where(ok, _natural_residual(xn, ln, A, b, lo, hi, w, p), jnp.inf)
        return k + 1, ln, phin, xn, errn

    phi0, x0 = _dual_value(lam, A, b, lo, hi, w, p)
    err0 = _natural_residual(x0, lam, A, b, lo, hi, w, p)
    k, lam, _, x, err = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), lam, phi0, x0, err0))
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
    """0.01 √eps of ``dtype`` (1.5e-10 in float64, 3.5e-6 in float32), in the scaled units, times
    max(1, |b|_∞) in :func:`solve`."""
    return 0.01 * float(jnp.finfo(dtype).eps) ** 0.5


def check_exponent(p) -> None:
    """Refuse an exponent for which Σ w |x|^p has no single minimum (p <= 1, NaN, inf, not a number)."""
    if isinstance(p, jax.core.Tracer):
        return
    if isinstance(p, (str, bool, np.bool_)) or np.ndim(p) != 0 or np.asarray(p).dtype.kind not in "iuf":
        raise TypeError(f"exponent must be a number > 1 (OpenSim's static optimization uses 2), got "
                        f"{type(p).__name__} {p!r}" + (f"; write exponent={p.strip()}" if isinstance(p, str) else ""))
    if not (np.isfinite(p) and float(p) > 1):
        raise ValueError(f"exponent must be a finite number > 1 (the objective sum w |x|^p has one minimum only "
                         f"then; OpenSim's static optimization uses 2), got {p!r}")


def solve(A, b, lo, hi, w, p=2.0, x0=None, lam0=None, *, rho=30.0, inner=20, max_outer=40, alm_tol=1e-2,
          tol=None, max_polish=30, polish=True, first_outer=MIN_OUTER) -> QPSolution:
    """Minimize Σ w |x|^p s.t. A x = b, lo ≤ x ≤ hi (module docstring); differentiable in A, b, lo,
    hi, w through the implicit-function theorem at the solution.  ``x0``/``lam0`` warm-start the
    ALM (λ in the units of the row-scaled problem, as returned in ``QPSolution.lam``).

    With ``polish``, the ALM first runs ``first_outer`` passes and hands over to the dual Newton
    polish; only if that does not converge does the ALM go on (to ``max_outer`` passes) and polish
    again.  The dual Newton converges from any λ of a feasible problem, so the long ALM runs only
    for hard or infeasible frames (where its iterate is the answer returned).

    Compiled once per shape and options (``eqx.filter_jit``): an eager call runs one program (its
    loops dispatched op by op took seconds per frame); under an outer ``jit`` it is inlined."""
    A = jnp.asarray(A)
    dtype = A.dtype
    b, lo, hi, w = (jnp.asarray(v, dtype) for v in (b, lo, hi, w))
    check_exponent(p)
    p = jnp.asarray(p, dtype)  # traced: one compiled program serves every exponent
    if tol is None:
        tol = default_tolerance(dtype)
    return _solve(A, b, lo, hi, w, p, x0, lam0, rho=rho, inner=inner, max_outer=max_outer, alm_tol=alm_tol,
                  tol=tol, max_polish=max_polish, polish=polish, first_outer=first_outer)


@eqx.filter_jit
def _solve(A, b, lo, hi, w, p, x0, lam0, *, rho, inner, max_outer, alm_tol, tol, max_polish, polish,
           first_outer) -> QPSolution:
    """:func:`solve` of checked arrays."""
    dtype = A.dtype
    m, n = A.shape
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
    tol = tol * jnp.maximum(1.0, jnp.max(jnp.abs(c[1]))) if m else tol  # relative to the scaled rhs
    if polish:
        # the dual Newton ridge (relative) is smaller than the KKT one: δ slows it by δ / σ_min(A S Aᵀ)
        def alm_then_polish(x, lam, passes):
            xa, la, ka = _alm(x, lam, *c, p, rho, inner, passes, alm_tol)
            xp, lp, ep, kp = _polish(xa, la, *c, p, tol, max_polish, reg, 10 * eps)
            return xa, la, ka, xp, lp, ep, kp

        first = alm_then_polish(x0, lam0, min(int(first_outer), int(max_outer)))

        def more(prev):  # the polish failed: go on with the ALM from its iterate, then polish again
            xa, la, ka, *_ = prev
            out = alm_then_polish(xa, la, max_outer)
            return out[:2] + (ka + out[2],) + out[3:]

        x_alm, lam_alm, k_alm, x_pol, lam_pol, err_pol, k_pol = jax.lax.cond(
            first[5] <= tol, lambda prev: prev, more, first)
        converged = err_pol <= tol
        x_st = jnp.where(converged, x_pol, x_alm)
        lam_st = jnp.where(converged, lam_pol, lam_alm)
    else:
        x_alm, lam_alm, k_alm = _alm(x0, lam0, *c, p, rho, inner, max_outer, alm_tol)
        k_pol = jnp.zeros((), jnp.int32)
        x_st, lam_st = x_alm, lam_alm
    x_st = jnp.clip(x_st, c[2], c[3])
    err = _natural_residual(x_st, lam_st, *c, p)
    converged = err <= (tol if polish else alm_tol)
    # implicit derivatives with the final active set (computed only when differentiated)
    low, up = _active_sets(x_st, lam_st, c[0], c[2], c[3], c[4], p, reg)
    x, lam = _implicit(x_st, lam_st, low, up, (As, bs, lo, hi, w, p), reg, delta)
    return QPSolution(x, lam, objective(x, w, p), err, converged, k_alm, k_pol)


@jax.custom_jvp
def _implicit(x_st, lam_st, low, up, theta, reg, delta):
    """``(x*, λ*)``: the solution, whose derivative in ``theta = (A, b, lo, hi, w, p)`` is the
    implicit-function one, ``-J⁻¹ ∂G/∂θ θ̇`` with the KKT residual ``G`` and its Jacobian ``J`` at
    the solution for the final active set (module docstring, step 3).  Its value costs nothing:
    the ``(n + m)`` KKT system is factored only under differentiation (JVP, or its transpose for
    reverse mode); a singular ``J`` gives zero derivatives."""
    return x_st, lam_st


@_implicit.defjvp
def _implicit_jvp(primals, tangents):
    x_st, lam_st, low, up, theta, reg, delta = primals
    t_theta = tangents[4]
    n = x_st.shape[0]
    _, J = _kkt(x_st, lam_st, low, up, *jax.lax.stop_gradient(theta), reg, delta)
    _, dG = jax.jvp(lambda th: _kkt(x_st, lam_st, low, up, *th, reg, delta)[0], (theta,), (t_theta,))
    lu = jax.scipy.linalg.lu_factor(J)
    ok = jnp.all(jnp.isfinite(lu[0])) & jnp.all(jnp.abs(jnp.diagonal(lu[0])) > 0)
    d = jnp.where(ok, jax.scipy.linalg.lu_solve(lu, dG), 0.0)
    return (x_st, lam_st), (-d[:n], -d[n:])
