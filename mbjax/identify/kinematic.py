"""Muscle-geometry data terms: measured moment arms and musculotendon lengths over poses.

r = w ⊙ (R(model; q) − R_meas) with R = ``mbjax.moment_arms`` ``(N, nq, nm)``, or
r = w ⊙ (L(model; q) − L_meas) with L = ``mbjax.muscle_lengths`` ``(N, nm)``; fit path points,
moving-point spline coefficients, wrap-object dimensions, joint-map coefficients.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from ..muscles import moment_arms, muscle_lengths
from .robust import finish, measured, options, residual, same_samples
from .torques import _model_of


class MomentArmResiduals(eqx.Module):
    q: jnp.ndarray
    target: jnp.ndarray
    weights: Any = None
    huber: Any = None

    def __call__(self, tree):
        r = jax.vmap(moment_arms, in_axes=(None, 0))(_model_of(tree), self.q)
        return finish(residual(r, self.target, "moment_arms_measured", "moment arms (N, nq, nm)"), self.weights, self.huber)


class MuscleLengthResiduals(eqx.Module):
    q: jnp.ndarray
    target: jnp.ndarray
    weights: Any = None
    huber: Any = None

    def __call__(self, tree):
        r = jax.vmap(muscle_lengths, in_axes=(None, 0))(_model_of(tree), self.q)
        return finish(residual(r, self.target, "lengths_measured", "lengths (N, nm)"), self.weights, self.huber)


def moment_arm_residuals(q, moment_arms_measured, *, weights=None, huber=None) -> MomentArmResiduals:
    """Residuals of measured moment arms ``(N, nq, nm)`` at poses ``q (N, nq)``."""
    q, target = measured(q, "q", ("N", "nq")), measured(moment_arms_measured, "moment_arms_measured", ("N", "nq", "nm"))
    same_samples(q=q, moment_arms_measured=target)
    if target.shape[1] != q.shape[1]:
        raise ValueError(f"moment_arms_measured has shape {tuple(target.shape)}, q {tuple(q.shape)}: moment arms are "
                         f"(N, nq, nm) with nq = {q.shape[1]} rows, one per coordinate of q")
    w = options(weights, huber, target.shape, "(N, nq, nm)", "moment_arm_residuals")
    return MomentArmResiduals(q, target, w, huber)


def muscle_length_residuals(q, lengths_measured, *, weights=None, huber=None) -> MuscleLengthResiduals:
    """Residuals of measured musculotendon lengths ``(N, nm)`` at poses ``q (N, nq)``."""
    q, target = measured(q, "q", ("N", "nq")), measured(lengths_measured, "lengths_measured", ("N", "nm"))
    same_samples(q=q, lengths_measured=target)
    w = options(weights, huber, target.shape, "(N, nm)", "muscle_length_residuals")
    return MuscleLengthResiduals(q, target, w, huber)
