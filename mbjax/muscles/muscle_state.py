"""The fibre and tendon state of every muscle, as OpenSim reports it."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp


class MuscleState(NamedTuple):
    """Fibre and tendon state of every muscle, ``(nm,)`` each (OpenSim's MuscleLength/FiberVelocity/
    MuscleDynamics info names)."""

    tendon_force: jnp.ndarray
    fiber_length: jnp.ndarray
    fiber_velocity: jnp.ndarray
    normalized_fiber_length: jnp.ndarray
    normalized_fiber_velocity: jnp.ndarray
    pennation_angle: jnp.ndarray
    tendon_length: jnp.ndarray
    active_fiber_force: jnp.ndarray
    passive_fiber_force: jnp.ndarray
    fiber_force: jnp.ndarray
    active_force_length_multiplier: jnp.ndarray
    passive_force_multiplier: jnp.ndarray
    force_velocity_multiplier: jnp.ndarray
    tendon_force_multiplier: jnp.ndarray
