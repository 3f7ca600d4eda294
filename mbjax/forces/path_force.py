"""Forces along a path (OpenSim's ``PathSpring`` and ``Ligament``): a tension ``T(L, L̇)`` along a
``GeometryPath`` of the model's bodies.

The stack's paths are a :class:`~mbjax.muscles.MusclePaths` of their own (fixed, conditional and
moving points, wrap objects), evaluated by the muscles' kernels.  OpenSim applies the tension as
point forces at the path points and wrap tangent points (``GeometryPath::addInEquivalentForces``),
so the generalized force is

    Q = R T(L, L̇),   L̇ = -Rᵀ q̇,

with ``R`` OpenSim's unit-tension moment arms (:func:`mbjax.muscles.opensim_moment_arms.opensim_moment_arms_and_lengths`,
the speed OpenSim's ``getLengtheningSpeed`` reports).  ``R = -∂L/∂q`` (virtual work:
``Q = -(∂L/∂q)ᵀ T``) for straight paths and cylinder and sphere wraps; OpenSim's ellipsoid wrap
path is not quite stationary in its tangent points and it skips a segment between a moving point
and a point of its own body, and ``R`` follows OpenSim there.  With ``wrapping="smooth"``
``R = -∂L/∂q``.  A subclass gives the law :meth:`PathForce.tension`, vectorised over the stack.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax.numpy as jnp

from .. import _checks
from .._model import Model
from ..muscles.geometry import muscle_lengths
from ..muscles.opensim_moment_arms import opensim_moment_arms_and_lengths
from ..muscles.path_set import MusclePaths
from .base import ForceElement


class PathForce(ForceElement):
    """A stack of ``n`` path forces: ``paths`` (``n`` paths, in ``element_names`` order) and a law."""

    paths: MusclePaths
    element_names: tuple[str, ...] = eqx.field(static=True)

    def check_paths(self, kind: str):
        """The paths are a :class:`MusclePaths` with one path per element, in name order."""
        if not isinstance(self.paths, MusclePaths):
            raise TypeError(f"{kind}: paths must be a MusclePaths (mbjax.muscles.build_paths), got "
                            f"{type(self.paths).__name__}")
        if tuple(self.paths.names) != tuple(self.element_names):
            raise ValueError(f"{kind}: paths {tuple(self.paths.names)} must be the elements {tuple(self.element_names)}, "
                             "one path per element in the same order")

    def path_model(self, model: Model) -> Model:
        """``model`` with these paths as its muscles (and no path functions): what the path kernels read."""
        for name, row in zip(self.paths.names, self.paths.body):
            if any(b >= model.n_bodies for b in row):
                raise ValueError(f"{type(self).__name__} {name!r}: a path point's body index is out of range for this "
                                 f"model ({model.n_bodies} bodies); build the element with this model")
        return model.replace(muscles=self.paths, path_functions=None)

    def lengths(self, model: Model, q):
        """Path lengths ``L (n,)`` at ``q (nq,)``."""
        return muscle_lengths(self.path_model(model), q)

    def kinematics(self, model: Model, q, qd):
        """``(L, L̇, R)``: lengths and lengthening speeds ``(n,)``, OpenSim's moment arms ``R (nq, n)``."""
        where = f"{type(self).__name__} {tuple(self.element_names)}"
        ctx = f" ({where}){_checks.coordinates_context(model)}"
        q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)
        qd = _checks.as_array(qd, "qd", (model.n_coordinates,), ("nq",), ctx)
        r, length = opensim_moment_arms_and_lengths(self.path_model(model), q[None])
        return length[0], -(jnp.asarray(qd, r.dtype) @ r[0]), r[0]

    @abc.abstractmethod
    def tension(self, length, speed):
        """Tension ``T (n,)`` (positive pulls the path's ends together) at lengths and speeds ``(n,)``."""

    def tensions(self, model: Model, q, qd):
        """Tension ``T (n,)`` of every element at ``(q, q̇)``."""
        length, speed, _ = self.kinematics(model, q, qd)
        return self.tension(length, speed)

    def generalized_force(self, model: Model, q, qd):
        length, speed, r = self.kinematics(model, q, qd)
        return r @ self.tension(length, speed).astype(r.dtype)
