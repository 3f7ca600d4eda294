"""OpenSim's ``SpringGeneralizedForce`` (``OpenSim/Actuators``): ``f = -k (q - q_rest) - c q̇`` on one coordinate.

``SpringGeneralizedForce::computeForceMagnitude``: stiffness ``k``, ``rest_length`` ``q_rest``,
``viscosity`` ``c``, in the coordinate's SI units (no degree conversion).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from .base import CoordinateSpring, CoordinateValues


class SpringGeneralizedForce(CoordinateSpring):
    """A stack of ``n`` linear coordinate spring-dampers."""

    coordinates: CoordinateValues
    stiffness: jnp.ndarray
    rest: jnp.ndarray
    viscosity: jnp.ndarray
    element_names: tuple[str, ...] = eqx.field(static=True)


    @classmethod
    def create(cls, model, names, coordinates, stiffness, rest_length, viscosity):
        a = lambda v: jnp.asarray(v, dtype=float)  # noqa: E731
        return cls(CoordinateValues.of(model, coordinates), a(stiffness), a(rest_length), a(viscosity), tuple(names))

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        return -self.stiffness * (q - self.rest) - self.viscosity * qd
