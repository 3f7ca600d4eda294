"""Discrete adjoint of :func:`mbjax.simulate`: reverse-mode gradients by a hand-written backward pass.

``simulate(..., adjoint=mbjax.DiscreteAdjoint())`` runs the forward solve with diffrax exactly as
before (same solver, same step-size controller, same accepted steps, bit-identical outputs).  When
differentiated in reverse mode, the same solve also keeps diffrax's dense output of every accepted
step (``SaveAt(dense=True)``: ``t_n``, ``y_n``, ``y_{n+1}`` and the stages ``k_i = f(t_i, z_i)·h_n``
the forward computed) in a buffer of ``max_steps`` steps.  The backward pass is one reverse loop
over the accepted steps, applying the exact VJP of each Runge-Kutta step of the solver's Butcher
tableau, written out by hand: with ``y_{n+1} = y_n + Σ b_i k_i`` and
``z_l = y_n + Σ_{i<l} a_li k_i``, the stage cotangents ``k̄_l = b_l ȳ_{n+1} + k̄_l(dense) +
Σ_{m>l} a_ml z̄_m`` are swept from the last stage to the first, one vector-field VJP
``z̄_l, p̄ += (∂f/∂(z, p))ᵀ h_n k̄_l`` per stage at the forward's own stage values; the saved
outputs add the VJP of ``solver.interpolation_cls(t0=t_n, t1=t_{n+1}, **dense_info).evaluate(t)``
(diffrax's own dense output), all saved times at once before the loop.  FSAL tableaus (``Tsit5``,
``Dopri5``): the last stage of step n is ``f(t_{n+1}, y_{n+1})``, which the forward reuses as the
first stage of step n+1; its two cotangents meet in one VJP, so a step costs s − 1 VJPs, the map
diffrax's forward computes.

Why not the VJP of diffrax's own ``solver.step``: it runs the stages in a checkpointed
``while_loop`` whose reverse pass, measured on the 7-dof chain, costs several times the
vector-field VJPs it contains (``benchmarks/identify.py``, ``benchmarks/RESULTS.md``).  The tableau adjoint is checked
against ``RecursiveCheckpointAdjoint`` to 1e-12 with fixed steps
(``tests/test_discrete_adjoint.py``).

Convention (discretize-then-optimize): the accepted times ``t_n`` and step sizes are constants;
there is no gradient through the adaptive step-size controller.  With
``diffrax.ConstantStepSize()`` the gradient equals ``RecursiveCheckpointAdjoint``'s to rounding.
With a ``PIDController`` it does too in diffrax 0.7, whose controller itself stops gradients
through its step-size factor (measured agreement 1e-15; a controller that passed them would differ
by a term of the size of the solver tolerance).

Scope (anything else raises ``NotImplementedError`` naming it): explicit Runge-Kutta solvers
with one Butcher tableau (``diffrax.AbstractERK``: ``Tsit5``, ``Dopri5``, ``Dopri8``, ``Heun``,
...); step-size controllers
``PIDController``, ``ConstantStepSize``, ``StepTo``; a single ``SaveAt``/``SubSaveAt`` with any of
``t0``, ``ts``, ``t1`` and the default ``fn``; reverse mode only (``jax.grad``/``jax.vjp``; forward
mode raises JAX's custom-VJP error).  Gradients flow to ``q0``, ``q̇0``, the model and the array
leaves of the vector field (``controls``/``forces`` modules); ``t0``, ``t1``, ``dt0``, the
``saveat`` times and the tolerances are not differentiable (differentiating them raises).

Buffer: the differentiated solve runs with ``max_steps`` = ``DiscreteAdjoint.max_steps`` (or
``simulate``'s ``max_steps`` when smaller), counting accepted and rejected steps as diffrax does;
a solve that needs more raises an error naming the buffer (also with ``throw=False``): never a
silently truncated gradient.  The undifferentiated call does not use the buffer.  The backward
loop runs over the accepted steps only, so the buffer size costs mostly memory (``max_steps × (s +
2) × 2 nq`` numbers, ~4 MB for Tsit5 on 7 coordinates at the default 4096, filled once per solve).

Cost (measured in ``benchmarks/RESULTS.md``): the backward pass is s − 1 vector-field VJPs per
accepted step plus a little loop overhead, so the vector-field VJP sets the cost.  Since
:func:`mbjax.forward_dynamics` is differentiated through inverse dynamics (a Cholesky solve and the
VJP of Newton-Euler) and the batch-last kernels push tangents only through the perturbed
parameters, that VJP is ~2.6× a forward evaluation on the 7-dof chain, and the gradient of a 1 s
trajectory loss costs 3.2× one forward solve on the chain and 4.3× on the shoulder (interleaved
timing, quiet 2-core CPU), against 4.8× and 6.3× for ``RecursiveCheckpointAdjoint``, with half
its compile time.
"""

from __future__ import annotations

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

_SAVE_Y = diffrax.SubSaveAt(t1=True).fn  # diffrax's default save function (the state itself)
_CONTROLLERS = (diffrax.PIDController, diffrax.ConstantStepSize, diffrax.StepTo)


class DiscreteAdjoint(eqx.Module):
    """Reverse-mode gradients of :func:`mbjax.simulate` by a discrete adjoint over the accepted steps.

    ``max_steps``: size of the step buffer kept for the backward pass (steps of the differentiated
    solve, accepted + rejected, as diffrax counts them); a solve that needs more raises an error.
    See the module notes for the convention (no gradient through the step-size controller) and the
    scope.
    """

    max_steps: int = eqx.field(static=True, default=4096)

    def __check_init__(self):
        if not isinstance(self.max_steps, int) or self.max_steps < 1:
            raise ValueError(f"DiscreteAdjoint: max_steps must be a positive int, got {self.max_steps!r}")


def _check_scope(solver, saveat, controller):
    if not isinstance(solver, diffrax.AbstractERK):
        raise NotImplementedError(
            f"DiscreteAdjoint supports explicit Runge-Kutta solvers (diffrax.AbstractERK: Tsit5, Dopri5, "
            f"Dopri8, Heun, ...), got {type(solver).__name__}; use diffrax.RecursiveCheckpointAdjoint()"
        )
    tab = solver.tableau
    if not isinstance(tab, diffrax.ButcherTableau) or tab.implicit or tab.c1 != 0:
        raise NotImplementedError(
            f"DiscreteAdjoint supports solvers with one explicit Butcher tableau, not {type(solver).__name__}"
        )
    if not isinstance(controller, _CONTROLLERS):
        raise NotImplementedError(
            f"DiscreteAdjoint supports the step-size controllers PIDController, ConstantStepSize and StepTo, "
            f"got {type(controller).__name__}"
        )
    if saveat.dense or saveat.solver_state or saveat.controller_state or saveat.made_jump:
        raise NotImplementedError(
            "DiscreteAdjoint supports saving at t0, ts and t1 only, not SaveAt(dense=True, solver_state=True, "
            "controller_state=True or made_jump=True)"
        )
    sub = saveat.subs
    if not isinstance(sub, diffrax.SubSaveAt):
        raise NotImplementedError("DiscreteAdjoint supports a single SaveAt/SubSaveAt, not a tree of SubSaveAt")
    if sub.steps:
        raise NotImplementedError("DiscreteAdjoint does not support SaveAt(steps=...); save at ts instead")
    if sub.fn is not _SAVE_Y:
        raise NotImplementedError("DiscreteAdjoint supports the default SaveAt fn (the state itself) only")


class _Config(eqx.Module):
    """The static part of one discrete-adjoint solve (hashable; travels as a non-array argument)."""

    solver: diffrax.AbstractERK
    max_steps: int | None  # simulate's
    buffer: int  # steps stored for the backward pass
    throw: bool


def _diffeqsolve(field, cfg, t0, t1, dt0, y0, model, saveat, controller, max_steps, throw):
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field), cfg.solver, t0=t0, t1=t1, dt0=dt0, y0=y0, args=model, saveat=saveat,
        stepsize_controller=controller, adjoint=diffrax.RecursiveCheckpointAdjoint(), max_steps=max_steps,
        throw=throw,
    )


@eqx.filter_custom_vjp
def _solution(vjp_arg, cfg, t0, t1, dt0, saveat, controller):
    field, y0, model = vjp_arg
    return _diffeqsolve(field, cfg, t0, t1, dt0, y0, model, saveat, controller, cfg.max_steps, cfg.throw)


@_solution.def_fwd
def _solution_fwd(perturbed, vjp_arg, cfg, t0, t1, dt0, saveat, controller):
    del perturbed
    field, y0, model = vjp_arg
    # the same solve, also keeping each accepted step's dense info (y_n, y_{n+1}, stages k_i)
    dense = diffrax.SaveAt(subs=saveat.subs, dense=True)
    sol = _diffeqsolve(field, cfg, t0, t1, dt0, y0, model, dense, controller, cfg.buffer, False)
    steps_t, infos = sol.interpolation.ts, sol.interpolation.infos
    if cfg.max_steps is None or cfg.buffer < cfg.max_steps:
        # the buffer, not simulate's max_steps, stopped the solve: refuse rather than truncate
        full = sol.result == diffrax.RESULTS.max_steps_reached
        steps_t = eqx.error_if(
            steps_t, full,
            f"DiscreteAdjoint: the differentiated solve needs more than max_steps={cfg.buffer} steps (the "
            "discrete adjoint's step buffer); pass mbjax.DiscreteAdjoint(max_steps=...) larger",
        )
    # the primal's structure: no interpolation, and its max_steps in the (static) stats
    out = eqx.tree_at(lambda s: (s.interpolation, s.stats), sol, (None, {**sol.stats, "max_steps": cfg.max_steps}),
                      is_leaf=lambda x: x is None)
    if cfg.throw:
        out = out.result.error_if(out, out.result != diffrax.RESULTS.successful)
    return out, (steps_t, infos, sol.stats["num_accepted_steps"])


def _zeros_if_none(ct, like):
    return jnp.zeros_like(like) if ct is None else ct


def _tableau_arrays(tableau, dtype):
    """``(A (s, s) lower triangular, b (s,), c (s,))`` of an explicit Butcher tableau."""
    s = tableau.num_stages
    a = np.zeros((s, s))
    for i, row in enumerate(tableau.a_lower):
        a[i + 1, : len(row)] = row
    c = np.concatenate([[0.0], np.asarray(tableau.c, dtype=float)])
    return jnp.asarray(a, dtype), jnp.asarray(tableau.b_sol, dtype), jnp.asarray(c, dtype)


@_solution.def_bwd
def _solution_bwd(residuals, grad_obj, perturbed, vjp_arg, cfg, t0, t1, dt0, saveat, controller):
    del t0, t1, dt0, controller
    steps_t, infos, n_acc = residuals
    field, y0, model = vjp_arg
    field_pert, _, model_pert = perturbed
    sub = saveat.subs
    solver = cfg.solver
    tab = solver.tableau
    # only the perturbed leaves of (field, model) get cotangents: the rest are constants here
    p_diff, p_static = eqx.partition((field, model), (field_pert, model_pert))
    dtype = steps_t.dtype
    a_mat, b_sol, c_vec = _tableau_arrays(tab, dtype)
    n_stages = tab.num_stages
    # FSAL (Tsit5, Dopri5): the last stage of step n is f(t_{n+1}, y_{n+1}), the first stage of
    # step n+1; its two cotangents meet in one vector-field VJP, as in diffrax's forward
    fsal = bool(tab.fsal and tab.ssal and float(tab.c[-1]) == 1.0)

    # cotangents of the saved outputs, laid out as diffrax saves them: [t0], ts..., [t1]
    n_ts = 0 if sub.ts is None else sub.ts.shape[0]
    n_out = int(sub.t0) + n_ts + int(sub.t1)
    ys_ct = None if grad_obj is None else grad_obj.ys
    if ys_ct is None:
        ys_ct = jax.tree.map(lambda _: None, y0)
    ys_ct = jax.tree.map(lambda ct, y: _zeros_if_none(ct, jnp.zeros((n_out,) + y.shape, y.dtype)), ys_ct, y0,
                         is_leaf=lambda x: x is None)
    off = int(sub.t0)

    def vf(t, z, p):
        f, m = eqx.combine(p, p_static)
        return f(t, z, m)

    def vf_vjp(t, z, p, ct, g):
        """``(z̄, ḡ + p̄)``: the vector field's VJP at ``(t, z)`` for the cotangent ``ct``."""
        _, pull = jax.vjp(lambda zz, pp: vf(t, zz, pp), z, p)
        z_ct, p_ct = pull(ct)
        return z_ct, jax.tree.map(jnp.add, g, p_ct)

    def bcast(v, like):  # (s,) coefficients against a leaf of shape (...): (s, 1, ...)
        return v.reshape((-1,) + (1,) * like.ndim)

    n_buf = steps_t.shape[0] - 1
    # cotangent of y_N: the t1 output, plus (only when no step was taken, t0 == t1) the ts outputs
    lam = jax.tree.map(lambda c: c[-1] if sub.t1 else jnp.zeros_like(c[0]), ys_ct)
    dense_ct = jax.tree.map(lambda a: jnp.zeros((n_buf,) + a.shape[1:], a.dtype), infos)
    if n_ts:
        ts = sub.ts
        # the step that saved ts[k]: the first accepted step with t_{n+1} >= ts[k] (diffrax's rule)
        which = jnp.searchsorted(steps_t[1:], ts, side="left")
        taken = which < n_acc
        ts_ct = jax.tree.map(lambda c: c[off:off + n_ts], ys_ct)
        lam = jax.tree.map(lambda l, c: l + jnp.sum(jnp.where(bcast(taken, c[0]), 0, c), 0), lam, ts_ct)
        ts_ct = jax.tree.map(lambda c: jnp.where(bcast(taken, c[0]), c, 0), ts_ct)
        idx = jnp.minimum(which, n_buf - 1)

        def evaluate_vjp(info, ta, tb, t, ct):
            _, pull = jax.vjp(lambda d: solver.interpolation_cls(t0=ta, t1=tb, **d).evaluate(t), info)
            return pull(ct)[0]

        # every saved time's cotangent on its step's dense info, summed per step
        per_ts = jax.vmap(evaluate_vjp)(jax.tree.map(lambda a: a[idx], infos), steps_t[idx], steps_t[idx + 1], ts,
                                        ts_ct)
        dense_ct = jax.tree.map(lambda d, c: d.at[idx].add(c), dense_ct, per_ts)
    g0 = jax.tree.map(jnp.zeros_like, p_diff)
    pend0 = jax.tree.map(jnp.zeros_like, y0)  # FSAL: cotangent of f(t_{n+1}, y_{n+1}) from step n+1

    def cond(c):
        return c[0] >= 0

    def body(c):
        n, lam, g, pend = c
        ta, tb = steps_t[n], steps_t[n + 1]
        dt = tb - ta
        info = jax.tree.map(lambda a: a[n], infos)
        d_ct = jax.tree.map(lambda a: a[n], dense_ct)
        # the forward's own stages k_i = f(t_i, z_i)·dt; z_i = y_n + Σ_j a_ij k_j
        zs = jax.tree.map(lambda y, kk: y[None] + jnp.tensordot(a_mat, kk, axes=1), info["y0"], info["k"])
        t_stage = jnp.where(c_vec == 1, tb, ta + c_vec * dt)
        # y_{n+1} = y_n + Σ b_i k_i (for SSAL tableaus the last stage input, the same sum)
        y1_ct = jax.tree.map(jnp.add, lam, d_ct["y1"])
        kbar = jax.tree.map(lambda kc, yc: kc + bcast(b_sol, yc) * yc[None], d_ct["k"], y1_ct)
        y0_ct = jax.tree.map(jnp.add, y1_ct, d_ct["y0"])

        def stage(sc, l):
            kbar, y0_ct, g = sc
            ct = jax.tree.map(lambda kb: kb[l] * dt, kbar)
            if fsal:
                ct = jax.tree.map(lambda a, p: jnp.where(l == n_stages - 1, a + p, a), ct, pend)
            z_ct, g = vf_vjp(t_stage[l], jax.tree.map(lambda z: z[l], zs), p_diff, ct, g)
            kbar = jax.tree.map(lambda kb, zc: kb + bcast(a_mat[l], zc) * zc[None], kbar, z_ct)
            return (kbar, jax.tree.map(jnp.add, y0_ct, z_ct), g), None

        first = 1 if fsal else 0
        # a rolled loop over the stages, one vector-field VJP per iteration: measured (XLA:CPU, 7-dof
        # chain) 1.3-1.4x cheaper than the same stages unrolled into straight-line code
        (kbar, y0_ct, g), _ = lax.scan(stage, (kbar, y0_ct, g), jnp.arange(n_stages - 1, first - 1, -1))
        pend = jax.tree.map(lambda kb: kb[0] * dt, kbar) if fsal else pend
        return n - 1, y0_ct, g, pend

    _, lam, g, pend = lax.while_loop(cond, body, (n_acc - 1, lam, g0, pend0))
    if fsal:  # the first stage of step 0: f(t_0, y_0)
        lam_f, g = vf_vjp(steps_t[0], y0, p_diff, pend, g)
        lam = jax.tree.map(jnp.add, lam, lam_f)
    if sub.t0:
        lam = jax.tree.map(lambda l, c: l + c[0], lam, ys_ct)
    field_ct, model_ct = g
    return field_ct, lam, model_ct


def solve(adjoint: DiscreteAdjoint, field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, max_steps,
          throw) -> diffrax.Solution:
    """``diffrax.diffeqsolve`` of ``ODETerm(field)`` with the discrete adjoint as its reverse-mode rule."""
    _check_scope(solver, saveat, stepsize_controller)
    buffer = adjoint.max_steps if max_steps is None else min(adjoint.max_steps, max_steps)
    cfg = _Config(solver, max_steps, buffer, throw)
    return _solution((field, y0, model), cfg, t0, t1, dt0, saveat, stepsize_controller)
