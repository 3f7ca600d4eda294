"""Inertial identification data term: measured joint torques vs ``mbjax.inverse_dynamics``.

r = w ⊙ (τ(model; q, q̇, q̈) − τ_meas) over N samples, ``(N·nq,)``; one ``jax.vmap`` of the
Newton-Euler inverse dynamics.  τ is linear in each body's standard inertial parameters, so with
:class:`~mbjax.analysis.identify.StandardInertial` Gauss-Newton converges in one step.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from ..._dynamics import inverse_dynamics
from .robust import finish, measured, options, residual, same_samples


def _model_of(tree):
    from ..._model import Model

    if isinstance(tree, Model):
        return tree
    for node in jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, Model)):
        if isinstance(node, Model):
            return node
    raise TypeError("no mbjax Model in the fitted tree")


class TorqueResiduals(eqx.Module):
    """Callable ``tree -> r`` (see module); ``tau_extra`` ``(N, nq)`` is subtracted from the
    predicted torques' counterpart (known external or passive torques)."""

    q: jnp.ndarray
    qd: jnp.ndarray
    qdd: jnp.ndarray
    tau: jnp.ndarray
    weights: Any = None
    huber: Any = None

    def predict(self, tree):
        model = _model_of(tree)
        return jax.vmap(inverse_dynamics, in_axes=(None, 0, 0, 0))(model, self.q, self.qd, self.qdd)

    def __call__(self, tree):
        return finish(residual(self.predict(tree), self.tau, "tau", "torques (N, nq)"), self.weights, self.huber)


def torque_residuals(q, qd, qdd, tau, *, weights=None, huber=None) -> TorqueResiduals:
    """Residuals of measured torques ``tau (N, nq)`` at states ``q, qd, qdd (N, nq)``."""
    data = {k: measured(v, k, ("N", "nq")) for k, v in dict(q=q, qd=qd, qdd=qdd, tau=tau).items()}
    same_samples(**data)
    for k in ("qd", "qdd", "tau"):
        if data[k].shape != data["q"].shape:
            raise ValueError(f"{k} has shape {tuple(data[k].shape)}, q {tuple(data['q'].shape)}: "
                             "both (N, nq), one column per model coordinate")
    w = options(weights, huber, data["tau"].shape, "(N, nq)", "torque_residuals")
    return TorqueResiduals(data["q"], data["qd"], data["qdd"], data["tau"], w, huber)
