"""OpenSim's ``SpringGeneralizedForce`` (``OpenSim/Actuators``): ``f = -k (q - q_rest) - c q̇`` on one coordinate.

``SpringGeneralizedForce::computeForceMagnitude``: stiffness ``k``, ``rest_length`` ``q_rest``,
``viscosity`` ``c``, in the coordinate's SI units (no degree conversion).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from . import _params
from .. import _checks
from .base import CoordinateSpring, CoordinateValues


class SpringGeneralizedForce(CoordinateSpring):
    """A stack of ``n`` linear coordinate spring-dampers."""

    coordinates: CoordinateValues
    stiffness: jnp.ndarray
    rest: jnp.ndarray
    viscosity: jnp.ndarray
    element_names: tuple[str, ...] = eqx.field(static=True)

    def __check_init__(self):
        kind, names = "SpringGeneralizedForce", self.element_names
        _params.check_names(kind, names, len(self.coordinates.index))
        _params.check_param(kind, names, "stiffness", self.stiffness, (), "warn")
        _params.check_param(kind, names, "rest_length", self.rest)
        _params.check_param(kind, names, "viscosity", self.viscosity, (), "warn")

    @classmethod
    def create(cls, model, names, coordinates, stiffness, rest_length, viscosity):
        """One element per name: ``coordinates`` (names or joint maps) and the parameters, ``(n,)`` each."""
        a = lambda v, f: _params.floats(v, "SpringGeneralizedForce", f)  # noqa: E731
        return cls(CoordinateValues.one_each(model, coordinates), a(stiffness, "stiffness"),
                   a(rest_length, "rest_length"), a(viscosity, "viscosity"),
                   _checks.names(names, "names", "SpringGeneralizedForce.create"))

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        return -self.stiffness * (q - self.rest) - self.viscosity * qd
