"""Muscle-geometry data terms: measured moment arms and musculotendon lengths over poses.

r = w ⊙ (R(model; q) − R_meas) with R = ``mbjax.moment_arms`` ``(N, nq, nm)``, or
r = w ⊙ (L(model; q) − L_meas) with L = ``mbjax.muscle_lengths`` ``(N, nm)``; fit path points,
moving-point spline coefficients, wrap-object dimensions, joint-map coefficients.
"""

from __future__ import annotations

import warnings
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...muscles import moment_arms, muscle_lengths
from ...muscles.length_warning import LONGEST_MUSCLE_LENGTH
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


#: a moment arm (m, or m/m about a translational coordinate) above this looks like millimetres
LONGEST_MOMENT_ARM = 1.0


def _warn_millimetres(target, name: str, limit: float, what: str) -> None:
    """Warn, naming the muscle column and sample, when concrete data exceed ``limit`` (millimetres?)."""
    if isinstance(target, jax.core.Tracer):
        return
    values = np.abs(np.asarray(target, dtype=float))
    if values.max() > limit:
        at = np.unravel_index(int(np.argmax(values)), values.shape)
        warnings.warn(f"{name}: {int((values > limit).sum())} value(s) above {limit:g} m, the largest "
                      f"{values[at]:.6g} at sample {at[0]}, muscle column {at[-1]}: implausible for a {what} in metres; "
                      "they look like millimetres (mbjax takes metres: divide by 1000)", UserWarning, stacklevel=3)


def moment_arm_residuals(q, moment_arms_measured, *, weights=None, huber=None) -> MomentArmResiduals:
    """Residuals of measured moment arms ``(N, nq, nm)`` at poses ``q (N, nq)``."""
    q, target = measured(q, "q", ("N", "nq")), measured(moment_arms_measured, "moment_arms_measured", ("N", "nq", "nm"))
    same_samples(q=q, moment_arms_measured=target)
    if target.shape[1] != q.shape[1]:
        raise ValueError(f"moment_arms_measured has shape {tuple(target.shape)}, q {tuple(q.shape)}: moment arms are "
                         f"(N, nq, nm) with nq = {q.shape[1]} rows, one per coordinate of q")
    _warn_millimetres(target, "moment_arm_residuals: moment_arms_measured", LONGEST_MOMENT_ARM, "moment arm")
    w = options(weights, huber, target.shape, "(N, nq, nm)", "moment_arm_residuals")
    return MomentArmResiduals(q, target, w, huber)


def muscle_length_residuals(q, lengths_measured, *, weights=None, huber=None) -> MuscleLengthResiduals:
    """Residuals of measured musculotendon lengths ``(N, nm)`` at poses ``q (N, nq)``."""
    q, target = measured(q, "q", ("N", "nq")), measured(lengths_measured, "lengths_measured", ("N", "nm"))
    same_samples(q=q, lengths_measured=target)
    _warn_millimetres(target, "muscle_length_residuals: lengths_measured", LONGEST_MUSCLE_LENGTH, "muscle length")
    w = options(weights, huber, target.shape, "(N, nm)", "muscle_length_residuals")
    return MuscleLengthResiduals(q, target, w, huber)
