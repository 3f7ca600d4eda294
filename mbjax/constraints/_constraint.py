"""Loop (closure) constraints g(f, q) = 0 and their Newton solve (Ehsani Eq. 100).

A :class:`LoopConstraint` ties ``m`` dependent joint variables ``f`` to the ``n_q`` generalized
coordinates ``q`` of a closed kinematic chain through ``m`` smooth equations ``g(f, q) = 0``.
:func:`solve` finds ``f(q)`` with optimistix's Newton root finder, continuing from a reference
configuration ``(q_ref, f_ref)`` along the straight segment to ``q`` so that the solution stays on
the assembly branch of the reference (a linkage has several).  Every solve is checked at run time
with ``eqx.error_if``: a solve that does not converge, or whose ``∂g/∂f`` is near singular
(toggle / dead-centre positions, where ``∇f`` blows up), raises instead of returning garbage.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import lineax as lx
import optimistix as optx


class LoopConstraint(eqx.Module):
    """``g(f, q) = fn(params, f, q)``, ``m`` equations in ``m`` joint variables ``f`` and ``n_q`` coordinates ``q``.

    ``params`` is a pytree of arrays (differentiable: link lengths, ...); ``fn`` is static.
    ``coordinates`` names ``q`` (in the model's names) and ``joints`` names ``f``.  ``q_ref``,
    ``f_ref`` is an assembled configuration (polished with Newton at construction) that picks the
    assembly branch.  ``min_rcond``: smallest accepted reciprocal condition number of ``∂g/∂f``;
    ``tol``: Newton tolerance (relative and absolute, max norm); ``continuation``: number of
    continuation steps from ``q_ref`` (0: one Newton solve from ``f_ref``).
    """

    params: Any
    q_ref: jnp.ndarray
    f_ref: jnp.ndarray
    fn: Callable = eqx.field(static=True)
    coordinates: tuple[str, ...] = eqx.field(static=True)
    joints: tuple[str, ...] = eqx.field(static=True)
    min_rcond: float = eqx.field(static=True)
    tol: float = eqx.field(static=True)
    continuation: int = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)

    def __init__(
        self,
        fn: Callable,
        params,
        coordinates: Sequence[str],
        joints: Sequence[str],
        q_ref,
        f_ref,
        *,
        min_rcond: float = 1e-8,
        tol: float = 1e-13,
        continuation: int = 8,
        max_steps: int = 50,
        polish: bool = True,
    ):
        if isinstance(coordinates, str):
            coordinates = (coordinates,)
        self.coordinates = tuple(coordinates)
        self.joints = tuple(joints)
        self.fn = fn
        self.params = jax.tree.map(jnp.asarray, params)
        q_ref = jnp.asarray(q_ref, dtype=float).reshape(-1)
        f_ref = jnp.asarray(f_ref, dtype=float).reshape(-1)
        nq, m = len(self.coordinates), len(self.joints)
        if q_ref.shape != (nq,):
            raise ValueError(f"LoopConstraint: q_ref must have shape ({nq},) for {self.coordinates}, got {q_ref.shape}")
        if f_ref.shape != (m,):
            raise ValueError(f"LoopConstraint: f_ref must have shape ({m},) for {self.joints}, got {f_ref.shape}")
        r = jnp.asarray(fn(self.params, f_ref, q_ref))
        if r.shape != (m,):
            raise ValueError(
                f"LoopConstraint: g(f, q) must return {m} equations (one per joint variable "
                f"{self.joints}), got shape {r.shape}"
            )
        self.min_rcond = float(min_rcond)
        self.tol = float(tol)
        self.continuation = int(continuation)
        self.max_steps = int(max_steps)
        self.q_ref = q_ref
        if polish:
            fr = np.asarray(_polish(fn, self.params, q_ref, f_ref, self.tol, max_steps))
            if not np.all(np.isfinite(fr)) or np.max(np.abs(np.asarray(fn(self.params, fr, q_ref)))) > 1e-8:
                raise ValueError(
                    f"LoopConstraint: the reference guess f_ref={np.asarray(f_ref)} at q_ref={np.asarray(q_ref)} "
                    "does not converge to an assembled configuration"
                )
            f_ref = jnp.asarray(fr)
        self.f_ref = f_ref

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    @property
    def n_coordinates(self) -> int:
        return len(self.coordinates)

    def residual(self, f, q):
        """G(f, q) of Eq. 103, shape ``(m,)``."""
        return self.fn(self.params, f, q)

    def jacobian_f(self, f, q):
        """∂G/∂f ``(m, m)``: column j is ḡ_j of Eq. 104."""
        return jax.jacfwd(self.residual, argnums=0)(f, q)

    def jacobian_q(self, f, q):
        """∂G/∂q ``(m, n_q)`` (row i is ∂g_i/∂q)."""
        return jax.jacfwd(self.residual, argnums=1)(f, q)


def rcond(g_f, g_q=None):
    """Conditioning of ∂g/∂f: σ_min(∂g/∂f) / σ_max([∂g/∂f, ∂g/∂q]) (0 when singular).

    Scaling by the whole constraint Jacobian (not by ∂g/∂f alone) makes the measure meaningful for a
    single equation as well; it tends to 0 at a toggle position, where ∂g/∂f loses rank.
    """
    s = jnp.linalg.svd(g_f, compute_uv=False)
    full = g_f if g_q is None else jnp.concatenate([g_f, g_q], axis=1)
    top = jnp.linalg.svd(full, compute_uv=False)[0]
    return s[-1] / jnp.maximum(top, jnp.finfo(s.dtype).tiny)


def check_jacobian(constraint: LoopConstraint, f, q, value=None):
    """Raise (``eqx.error_if``) if ∂g/∂f at ``(f, q)`` is near singular; return ``value`` (default ``f``)."""
    value = f if value is None else value
    rc = rcond(constraint.jacobian_f(f, q), constraint.jacobian_q(f, q))
    return eqx.error_if(
        value,
        ~(rc >= constraint.min_rcond),
        "LoopConstraint: ∂g/∂f is (near) singular at this q: a toggle / dead-centre position of the "
        "linkage (reciprocal condition number below min_rcond); ∇f and H do not exist here",
    )


@eqx.filter_jit
def _polish(fn, params, q, f, tol, max_steps):
    sol = optx.root_find(
        lambda ff, _: fn(params, ff, q), optx.Newton(rtol=tol, atol=tol, linear_solver=lx.LU()), f,
        max_steps=max_steps, throw=False,
    )
    return sol.value


def _newton(constraint: LoopConstraint, q, guess, max_steps: int):
    fn = lambda f, qq: constraint.residual(f, qq)
    tol = max(constraint.tol, 8 * float(jnp.finfo(guess.dtype).eps))  # float32 cannot reach 1e-13
    sol = optx.root_find(
        fn, optx.Newton(rtol=tol, atol=tol, linear_solver=lx.LU()), guess, args=q,
        max_steps=max_steps, throw=False,
    )
    return sol


@eqx.filter_jit
def solve(constraint: LoopConstraint, q, guess=None, *, continuation: int | None = None, check: bool = True):
    """Joint variables ``f(q)`` solving ``g(f, q) = 0`` (Eq. 100) with optimistix Newton.

    Without ``guess``, continues from ``(q_ref, f_ref)`` in ``continuation`` equal steps (each a
    Newton solve started from the previous one) so the assembly branch of ``f_ref`` is kept.  With
    ``guess``, one Newton solve from it (e.g. a neighbouring solution, as in the molecule).
    ``check``: raise on non-convergence, non-finite output or a near-singular ``∂g/∂f``.
    """
    q = jnp.asarray(q)
    if q.shape != (constraint.n_coordinates,):
        raise ValueError(
            f"solve: q must have shape ({constraint.n_coordinates},) for coordinates "
            f"{constraint.coordinates}, got {q.shape}"
        )
    dtype = jnp.result_type(q, constraint.f_ref)
    q = q.astype(dtype)
    n = constraint.continuation if continuation is None else int(continuation)
    sign = lambda ff, qq: jnp.sign(jnp.linalg.det(constraint.jacobian_f(ff, qq)))
    if guess is None and n > 0:
        # continuation q_ref -> q in n equal steps: Euler predictor along ∇f, Newton corrector.
        # Passing a fold (toggle position) flips the sign of det(∂g/∂f): that marks a branch jump.
        q0 = constraint.q_ref.astype(dtype)
        f_start = constraint.f_ref.astype(dtype)
        s0 = sign(f_start, q0)

        def step(carry, s):
            fk, qk = carry
            q_next = q0 + s * (q - q0)
            pred = fk - jnp.linalg.solve(constraint.jacobian_f(fk, qk), constraint.jacobian_q(fk, qk) @ (q_next - qk))
            pred = jnp.where(jnp.all(jnp.isfinite(pred)), pred, fk)
            sol = _newton(constraint, q_next, pred, constraint.max_steps)
            return (sol.value, q_next), (sol.result == optx.RESULTS.successful, sign(sol.value, q_next) == s0)

        fracs = jnp.arange(1, n + 1, dtype=dtype) / n
        (f, _), (oks, signs) = jax.lax.scan(step, (f_start, q0), fracs)
        ok, same_branch = oks[-1], jnp.all(signs)
    else:
        f0 = jnp.asarray(constraint.f_ref if guess is None else guess, dtype)
        sol = _newton(constraint, q, f0, constraint.max_steps)
        f, ok = sol.value, sol.result == optx.RESULTS.successful
        same_branch = sign(f, q) == sign(f0, q)
    if check:
        res = constraint.residual(f, q)
        scale = 1.0 + jnp.max(jnp.abs(f))
        # float32 cannot reach the float64 tolerance: accept rounding-level residuals
        tol = jnp.maximum(1e3 * constraint.tol, 1e3 * jnp.finfo(dtype).eps) * scale
        bad = ~ok & ~(jnp.max(jnp.abs(res)) <= tol)
        bad = bad | ~jnp.all(jnp.isfinite(f))
        f = eqx.error_if(
            f, bad,
            "LoopConstraint: Newton solve of g(f, q) = 0 did not converge (q outside the linkage's "
            "range of motion, or the continuation path crosses a singular position)",
        )
        f = eqx.error_if(
            f, ~same_branch,
            "LoopConstraint: the solution left the assembly branch of the reference (det ∂g/∂f changed "
            "sign: the path from q_ref to q crosses a toggle position, or q is outside the branch's range)",
        )
        f = check_jacobian(constraint, f, q)
    return f
