"""Forward simulation of M q̈ + N q̇ = G + τ + Q (Eq. 198) as a diffrax ODE in (q, q̇).

:func:`simulate` builds the first-order system y = (q, q̇), ẏ = (q̇, forward_dynamics(...)),
and hands it to diffrax: any of its solvers (explicit ``Tsit5``/``Dopri5``/``Dopri8`` or an
implicit ``Kvaerno5`` for stiff cases), adaptive steps with a PID controller, dense output and
saving at requested times, and gradients through the solve with diffrax's adjoints.

Failure policy: a non-finite right-hand side makes diffrax reject the step; with ``throw=True``
(default) a solve that then fails (max steps, step size collapse) raises an error naming the
diffrax result.  With ``throw=False`` inspect ``solution.result`` and ``solution.stats``.
"""

from __future__ import annotations

from typing import Callable

import diffrax
import equinox as eqx
import jax.numpy as jnp

from ._dynamics import forward_dynamics
from ._model import Model


def dynamics_vector_field(model: Model, controls: Callable | None = None, forces: Callable | None = None):
    """The diffrax vector field ``(t, (q, q̇), args) -> (q̇, q̈)``.

    ``controls(t, q, q̇)`` and ``forces(t, q, q̇)`` return generalized forces ``(nq,)`` (actuation
    and external Q, e.g. from :func:`mbjax.generalized_forces`); both are added to the right-hand
    side of Eq. 198.  ``args`` may carry a replacement model (for parameter gradients).
    """

    def field(t, y, args):
        mdl = model if args is None else args
        q, qd = y
        tau = jnp.zeros_like(q)
        if controls is not None:
            tau = tau + controls(t, q, qd)
        if forces is not None:
            tau = tau + forces(t, q, qd)
        return qd, forward_dynamics(mdl, q, qd, tau)

    return field


def simulate(
    model: Model,
    q0,
    qd0,
    t0: float,
    t1: float,
    *,
    saveat=None,
    solver=None,
    controls: Callable | None = None,
    forces: Callable | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    dt0: float | None = None,
    max_steps: int | None = 100_000,
    adjoint=None,
    stepsize_controller=None,
    throw: bool = True,
    vector_field: Callable | None = None,
) -> diffrax.Solution:
    """Integrate the equations of motion from ``(q0, qd0)`` at ``t0`` to ``t1``.

    ``saveat``: an array of times, a ``diffrax.SaveAt``, or ``None`` (end point only; pass
    ``diffrax.SaveAt(dense=True)`` for dense output).  ``solver`` defaults to ``diffrax.Tsit5()``.
    Returns the ``diffrax.Solution``; ``sol.ys`` is the tuple ``(q, q̇)`` with a leading time axis.
    ``adjoint`` defaults to ``diffrax.RecursiveCheckpointAdjoint()`` (reverse-mode through the
    solver); ``diffrax.BacksolveAdjoint()`` and ``diffrax.ForwardMode()`` also work.
    ``vector_field`` replaces the default :func:`dynamics_vector_field` (for reduced models).
    The model is passed to the vector field as ``args``, so ``jax.grad`` with respect to model
    parameters flows through the solve.
    """
    q0 = jnp.asarray(q0)
    qd0 = jnp.asarray(qd0, dtype=q0.dtype)
    nq = model.n_coordinates
    if q0.shape != (nq,) or qd0.shape != (nq,):
        raise ValueError(f"q0 and qd0 must have shape ({nq},), got {q0.shape} and {qd0.shape}")
    if solver is None:
        solver = diffrax.Tsit5()
    if saveat is None:
        saveat = diffrax.SaveAt(t1=True)
    elif not isinstance(saveat, diffrax.SaveAt):
        saveat = diffrax.SaveAt(ts=jnp.asarray(saveat))
    if stepsize_controller is None:
        stepsize_controller = diffrax.PIDController(rtol=rtol, atol=atol)
    if adjoint is None:
        adjoint = diffrax.RecursiveCheckpointAdjoint()
    field = vector_field if vector_field is not None else dynamics_vector_field(model, controls, forces)
    y0 = (
        eqx.error_if(q0, ~jnp.all(jnp.isfinite(q0)), "simulate: q0 is not finite"),
        eqx.error_if(qd0, ~jnp.all(jnp.isfinite(qd0)), "simulate: qd0 is not finite"),
    )
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        solver,
        t0=t0,
        t1=t1,
        dt0=dt0,
        y0=y0,
        args=model,
        saveat=saveat,
        stepsize_controller=stepsize_controller,
        adjoint=adjoint,
        max_steps=max_steps,
        throw=throw,
    )
