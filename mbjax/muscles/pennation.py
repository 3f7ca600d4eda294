"""Constant-width (fixed parallelogram height) pennation, OpenSim's ``MuscleFixedWidthPennationModel``.

h = ℓ_o sin α_o; α = asin(h/ℓ) (α_max where h/ℓ ≥ sin α_max or ℓ ≤ ℓ_min; 0 when α_o ≤ ε);
ℓ_min = h / sin α_max (0.01 ℓ_o when α_max ≤ SignificantReal); rigid-tendon fibre length
ℓ = √(h² + (L - ℓ_T)²) (ℓ_min when L - ℓ_T < ℓ_min cos α_max); tendon length L - ℓ cos α;
fibre velocity (L̇ - ℓ̇_T) cos α.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

EPS = float(np.finfo(np.float64).eps)
SIGNIFICANT_REAL = EPS ** 0.875


def significant_real(dtype) -> float:
    """SimTK's ``SignificantReal`` (ε^(7/8)) of ``dtype``'s precision (``SIGNIFICANT_REAL`` in float64)."""
    return float(np.finfo(dtype).eps ** 0.875)


def height(optimal_fiber_length, pennation_angle_at_optimal):
    return optimal_fiber_length * jnp.sin(pennation_angle_at_optimal)


def minimum_fiber_length(optimal_fiber_length, pennation_angle_at_optimal, maximum_pennation_angle):
    """``m_minimumFiberLength`` of the pennation model."""
    h = height(optimal_fiber_length, pennation_angle_at_optimal)
    big = maximum_pennation_angle > SIGNIFICANT_REAL
    return jnp.where(big, h / jnp.where(big, jnp.sin(maximum_pennation_angle), 1.0), 0.01 * optimal_fiber_length)


def pennation_angle(fiber_length, optimal_fiber_length, pennation_angle_at_optimal, maximum_pennation_angle):
    """``calcPennationAngle``."""
    h = height(optimal_fiber_length, pennation_angle_at_optimal)
    lmin = minimum_fiber_length(optimal_fiber_length, pennation_angle_at_optimal, maximum_pennation_angle)
    safe_l = jnp.where(fiber_length > lmin, fiber_length, jnp.maximum(lmin, 1e-300))
    sin_phi = h / safe_l
    ok = (fiber_length > lmin) & (sin_phi < jnp.sin(maximum_pennation_angle))
    phi = jnp.where(ok, jnp.arcsin(jnp.where(ok, sin_phi, 0.0)), maximum_pennation_angle)
    return jnp.where(pennation_angle_at_optimal > EPS, phi, 0.0)


def rigid_fiber_length(muscle_length, tendon_length, optimal_fiber_length, pennation_angle_at_optimal,
                       maximum_pennation_angle):
    """``calcFiberLength(muscleLength, tendonLength)``."""
    h = height(optimal_fiber_length, pennation_angle_at_optimal)
    lmin = minimum_fiber_length(optimal_fiber_length, pennation_angle_at_optimal, maximum_pennation_angle)
    at = muscle_length - tendon_length
    ok = at >= lmin * jnp.cos(maximum_pennation_angle)
    return jnp.where(ok, jnp.sqrt(h * h + jnp.where(ok, at, 0.0) ** 2), lmin)
