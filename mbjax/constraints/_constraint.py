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

from .. import _checks


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
        if not callable(fn):
            raise TypeError(f"LoopConstraint: fn must be a function g(params, f, q), got {type(fn).__name__}")
        self.coordinates = _names(coordinates, "coordinates", allow_empty=True)  # a rigid assembly has none
        self.joints = _names(joints, "joints")
        self.fn = fn
        self.params = jax.tree.map(jnp.asarray, params)
        nq, m = len(self.coordinates), len(self.joints)
        q_ref = _reference(q_ref, "q_ref", nq, self.coordinates)
        f_ref = _reference(f_ref, "f_ref", m, self.joints)
        min_rcond = _number(min_rcond, "min_rcond", "in [0, 1) (smallest accepted reciprocal condition number)",
                            lambda x: 0 <= x < 1)
        tol = _number(tol, "tol", "> 0 (Newton tolerance)", lambda x: x > 0)
        continuation = _count(continuation, "continuation", 0)
        max_steps = _count(max_steps, "max_steps", 1)
        r = jnp.asarray(fn(self.params, f_ref, q_ref))
        if r.shape != (m,):
            raise ValueError(
                f"LoopConstraint: g(f, q) must return {m} equations (one per joint variable "
                f"{self.joints}), got shape {r.shape}"
            )
        self.min_rcond = min_rcond
        self.tol = tol
        self.continuation = continuation
        self.max_steps = max_steps
        self.q_ref = q_ref
        if polish:
            eps = float(jnp.finfo(jnp.result_type(f_ref, float)).eps)  # float32 cannot reach a float64 tolerance
            fr = np.asarray(_polish(fn, self.params, q_ref, f_ref, max(self.tol, 8 * eps), max_steps))
            residual = np.max(np.abs(np.asarray(fn(self.params, fr, q_ref)))) if np.all(np.isfinite(fr)) else np.inf
            if not residual <= max(1e-8, 1e3 * eps):
                raise ValueError(
                    f"LoopConstraint: the reference guess f_ref={np.asarray(f_ref)} at q_ref={np.asarray(q_ref)} "
                    f"does not converge to an assembled configuration (residual {residual:.3g} after Newton): give "
                    "f_ref nearer an assembled pose of the branch you want"
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


def _names(names, what: str, allow_empty: bool = False) -> tuple[str, ...]:
    """``names`` (one string or a sequence of strings) as a tuple without duplicates."""
    names = (names,) if isinstance(names, str) else names
    try:
        names = tuple(names)
    except TypeError:
        raise TypeError(f"LoopConstraint: {what} must be a sequence of names, got {type(names).__name__}") from None
    if (not names and not allow_empty) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"LoopConstraint: {what} must be one or more names (strings), got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"LoopConstraint: duplicate {what} in {names!r}")
    return names


def _reference(x, what: str, n: int, names) -> jnp.ndarray:
    """A concrete finite reference vector of length ``n`` (a column ``(n, 1)`` is read as ``(n,)``)."""
    arr = np.asarray(_checks.real_array(x, f"LoopConstraint: {what} must be a real array",
                                        f"LoopConstraint: {what} must be real"), dtype=float).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"LoopConstraint: {what} must have shape ({n},) for {names}, got {np.shape(x)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"LoopConstraint: {what} must be finite, got {arr}")
    return jnp.asarray(arr)


def _number(x, what: str, rule: str, ok) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"LoopConstraint: {what} must be a number {rule}, got {x!r}")
    if not (np.isfinite(x) and ok(float(x))):
        raise ValueError(f"LoopConstraint: {what} must be finite and {rule}, got {x!r}")
    return float(x)


def _count(x, what: str, low: int) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < low:
        raise ValueError(f"LoopConstraint: {what} must be an integer >= {low}, got {x!r}")
    return int(x)


def checked_constraint(constraint, where: str) -> "LoopConstraint":
    """``constraint`` if it is a :class:`LoopConstraint`, else ``TypeError`` naming ``where``."""
    if not isinstance(constraint, LoopConstraint):
        raise TypeError(f"{where}: constraint must be a mbjax.constraints.LoopConstraint, got {type(constraint).__name__}")
    return constraint


def checked_q(constraint: LoopConstraint, q, where: str):
    """``q`` as a real ``(n_q,)`` array (trace time); ``where`` names the function."""
    return _checks.as_array(q, f"{where}: q", (constraint.n_coordinates,), ("n_q",),
                            f" for coordinates {constraint.coordinates}")


def checked_f(constraint: LoopConstraint, f, where: str, name: str = "f"):
    """``f`` as a real ``(m,)`` array of joint variables (trace time)."""
    return _checks.as_array(f, f"{where}: {name}", (constraint.n_joints,), ("m",), f" for joints {constraint.joints}")


def _rcond(g_f, g_q=None):
    s = jnp.linalg.svd(g_f, compute_uv=False)
    full = g_f if g_q is None else jnp.concatenate([g_f, g_q], axis=1)
    top = jnp.linalg.svd(full, compute_uv=False)[0]
    return s[-1] / jnp.maximum(top, jnp.finfo(s.dtype).tiny)


def rcond(g_f, g_q=None):
    """Conditioning of ∂g/∂f: σ_min(∂g/∂f) / σ_max([∂g/∂f, ∂g/∂q]) (0 when singular).

    Scaling by the whole constraint Jacobian (not by ∂g/∂f alone) makes the measure meaningful for a
    single equation as well; it tends to 0 at a toggle position, where ∂g/∂f loses rank.
    ``g_f`` ``(m, m)``, ``g_q`` ``(m, n_q)``; NaN or inf in them raises at run time.
    """
    g_f = _checks.real_array(g_f, "rcond: g_f must be a real array", "rcond: g_f must be real")
    if g_f.ndim != 2 or g_f.shape[0] != g_f.shape[1] or g_f.shape[0] == 0:
        raise ValueError(f"rcond: g_f (∂g/∂f) must be a non-empty square matrix (m, m), got shape {g_f.shape}")
    rules = [_checks.not_finite(g_f, "rcond: g_f")]
    if g_q is not None:
        g_q = _checks.real_array(g_q, "rcond: g_q must be a real array", "rcond: g_q must be real")
        if g_q.ndim != 2 or g_q.shape[0] != g_f.shape[0]:
            raise ValueError(f"rcond: g_q (∂g/∂q) must have shape (m, n_q) = ({g_f.shape[0]}, n_q), got {g_q.shape}")
        rules.append(_checks.not_finite(g_q, "rcond: g_q"))
    g_f = _checks.all_of(g_f, rules)
    return _rcond(g_f, g_q)


def check_jacobian(constraint: LoopConstraint, f, q, value=None):
    """Raise (``eqx.error_if``) if ∂g/∂f at ``(f, q)`` is near singular; return ``value`` (default ``f``)."""
    checked_constraint(constraint, "check_jacobian")
    f = checked_f(constraint, f, "check_jacobian")
    q = checked_q(constraint, q, "check_jacobian")
    return _check_jacobian(constraint, f, q, value)


def _check_jacobian(constraint: LoopConstraint, f, q, value=None):
    value = f if value is None else value
    rc = _rcond(constraint.jacobian_f(f, q), constraint.jacobian_q(f, q))
    finite = jnp.all(jnp.isfinite(f)) & jnp.all(jnp.isfinite(q))
    return eqx.branched_error_if(
        value,
        ~finite | ~(rc >= constraint.min_rcond),
        jnp.where(finite, 1, 0),
        ["LoopConstraint: f or q contains NaN or inf",
         "LoopConstraint: ∂g/∂f is (near) singular at this q: a toggle / dead-centre position of the "
         "linkage (reciprocal condition number below min_rcond); ∇f and H do not exist here"],
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
    checked_constraint(constraint, "solve")
    q = checked_q(constraint, q, "solve")
    if guess is not None:
        guess = checked_f(constraint, guess, "solve", "guess")
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
        q_finite = jnp.all(jnp.isfinite(q))
        f = eqx.branched_error_if(
            f, bad | ~q_finite, jnp.where(q_finite, 1, 0),
            [f"solve: q contains NaN or inf for coordinates {constraint.coordinates}",
             "LoopConstraint: Newton solve of g(f, q) = 0 did not converge (q outside the linkage's "
             "range of motion, or the continuation path crosses a singular position)"],
        )
        f = eqx.error_if(
            f, ~same_branch,
            "LoopConstraint: the solution left the assembly branch of the reference (det ∂g/∂f changed "
            "sign: the path from q_ref to q crosses a toggle position, or q is outside the branch's range)",
        )
        f = _check_jacobian(constraint, f, q)
    return f
