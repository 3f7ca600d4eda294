"""Isometric torque-angle data term: measured joint torques of activated muscles at rest.

τ(q, a) = R(q) · F(q, q̇ = 0, a) with R = ``mbjax.moment_arms`` ``(nq, nm)`` and F =
``mbjax.muscle_forces`` (tendon forces at the equilibrium fibre state: compliant tendons solved
with implicit-function derivatives), one ``jax.vmap`` over the samples.  Fits the Hill
parameters (optimal fibre length, tendon slack length, maximal force, pennation) and the path
geometry behind R.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._checks import real_array
from ..._model import require_model
from ...muscles import moment_arms, muscle_forces
from .robust import finish, measured, options, residual, same_samples
from .torques import _model_of


def isometric_torques(model, q, activation):
    """τ = R(q) F(q, 0, a) ``(nq,)`` at one pose ``q (nq,)`` and activations ``a (nm,)`` in [0, 1]."""
    require_model(model, "isometric_torques(model, q, activation)")
    q = real_array(q, "isometric_torques: q must be a real array of shape (nq,)",
                   "isometric_torques: q must be real")
    return moment_arms(model, q) @ muscle_forces(model, q, jnp.zeros_like(q), activation)


class IsometricTorqueResiduals(eqx.Module):
    q: jnp.ndarray  # (N, nq)
    activation: jnp.ndarray  # (N, nm)
    tau: jnp.ndarray  # (N, nq)
    weights: Any = None
    huber: Any = None

    def predict(self, tree):
        return jax.vmap(isometric_torques, in_axes=(None, 0, 0))(_model_of(tree), self.q, self.activation)

    def __call__(self, tree):
        return finish(residual(self.predict(tree), self.tau, "tau", "torques (N, nq)"), self.weights, self.huber)


def isometric_torque_residuals(q, activation, tau, *, weights=None, huber=None) -> IsometricTorqueResiduals:
    """Residuals of measured isometric torques ``tau (N, nq)`` at poses ``q (N, nq)`` and activations ``(N, nm)``."""
    q, tau = measured(q, "q", ("N", "nq")), measured(tau, "tau", ("N", "nq"))
    activation = measured(activation, "activation", ("N", "nm"))
    same_samples(q=q, activation=activation, tau=tau)
    if tau.shape != q.shape:
        raise ValueError(f"tau has shape {tuple(tau.shape)}, q {tuple(q.shape)}: both (N, nq), one column per model coordinate")
    w = options(weights, huber, tau.shape, "(N, nq)", "isometric_torque_residuals")
    return IsometricTorqueResiduals(q, activation, tau, w, huber)
