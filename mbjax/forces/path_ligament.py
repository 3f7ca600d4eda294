"""OpenSim's ``Ligament``: a path with a force-length curve (not the discretised ligaments of
:mod:`mbjax.ligaments`).

``Ligament::computeForce``: with ``L₀`` the ``resting_length`` and ``F`` the ``pcsa_force``,

    T = F f(L / L₀)  where L > L₀,   T = 0  where L <= L₀,

``f`` the ``force_length_curve`` (any 1-D OpenSim function the importer reads, evaluated as OpenSim
does; OpenSim's default is a SimmSpline rising from 0 at 1 to 2 at 1.6).  No speed dependence.
Generalized force ``Q = r T`` (:mod:`mbjax.forces.path_force`).
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _params
from ..maps.piecewise import PiecewisePolynomial
from .path_force import PathForce

#: ``Ligament::constructProperties``: the knots of the default force-length SimmSpline
DEFAULT_FORCE_LENGTH_CURVE = (
    [-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0],
    [0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0])


class Ligament(PathForce):
    """A stack of ``n`` OpenSim ligaments: ``resting_length``, ``pcsa_force`` ``(n,)`` and the curves
    ``force_length_curve`` (a stacked :class:`~mbjax.maps.PiecewisePolynomial` of ``n`` functions)."""

    resting_length: jnp.ndarray
    pcsa_force: jnp.ndarray
    force_length_curve: PiecewisePolynomial

    def __check_init__(self):
        kind, names = "Ligament", self.element_names
        _params.check_names(kind, names)
        self.check_paths(kind)
        _params.check_param(kind, names, "resting_length", self.resting_length, (), "pos")
        _params.check_param(kind, names, "pcsa_force", self.pcsa_force, (), "nonneg")
        curve = self.force_length_curve
        if not isinstance(curve, PiecewisePolynomial) or curve.n_maps != len(names):
            raise ValueError(f"Ligament: force_length_curve must be a PiecewisePolynomial stack of {len(names)} "
                             f"functions (one per element {names}), got {type(curve).__name__}"
                             + (f" of {curve.n_maps}" if isinstance(curve, PiecewisePolynomial) else ""))

    def tension(self, length, speed):
        del speed
        rest = self.resting_length.astype(length.dtype)
        f, _, _ = self.force_length_curve.evaluate(length / rest)
        return jnp.where(length > rest, self.pcsa_force.astype(length.dtype) * f.astype(length.dtype), 0.0)
