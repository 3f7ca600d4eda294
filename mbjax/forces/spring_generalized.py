"""OpenSim's ``SpringGeneralizedForce`` (``OpenSim/Actuators``): ``f = -k (q - q_rest) - c q̇`` on one coordinate.

``SpringGeneralizedForce::computeForceMagnitude``: stiffness ``k``, ``rest_length`` ``q_rest``,
``viscosity`` ``c``, in the coordinate's SI units (no degree conversion).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax.numpy as jnp
import numpy as np

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
        out = cls(CoordinateValues.one_each(model, coordinates), a(stiffness, "stiffness"),
                  a(rest_length, "rest_length"), a(viscosity, "viscosity"),
                  _checks.names(names, "names", "SpringGeneralizedForce.create"))
        _warn_degrees(model, out)
        return out

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        return -self.stiffness * (q - self.rest) - self.viscosity * qd


def _warn_degrees(model, springs: SpringGeneralizedForce) -> None:
    """Warn, naming the element, when a concrete rest length of a rotational coordinate (the file's motion
    type) exceeds a full turn: degrees given for radians (OpenSim takes the value as it is)."""
    kinds = tuple(getattr(getattr(model, "osim", None), "motion_types", ()))
    if len(kinds) != model.n_coordinates or not _params.concrete(springs.rest):
        return
    rest = np.asarray(springs.rest, dtype=float)
    mapped = set(springs.coordinates.dependent)
    for k, (name, i) in enumerate(zip(springs.element_names, springs.coordinates.index)):
        if k not in mapped and kinds[i] == "rotational" and abs(rest[k]) > 2 * np.pi:
            warnings.warn(f"SpringGeneralizedForce {name!r}: rest_length {rest[k]:g} of the rotational coordinate "
                          f"{model.coordinate_names[i]!r} is more than a full turn; it looks like degrees: mbjax and "
                          f"OpenSim take radians ({np.deg2rad(rest[k]):g})", UserWarning, stacklevel=3)
