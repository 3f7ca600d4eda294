"""OpenSim's ``PathSpring``: a linear spring with dissipation along a path.

``PathSpring::getTension``: with stretch ``s = max(L - L₀, 0)`` (``L₀`` the ``resting_length``),

    T = k s (1 + c L̇),

``k`` the ``stiffness``, ``c`` the ``dissipation`` (per m/s), ``L̇`` the lengthening speed.  Not
clamped: a path shortening faster than ``1/c`` pushes (``T < 0``), as in OpenSim.  Generalized
force ``Q = r T`` (:mod:`mbjax.forces.path_force`).
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _params
from .path_force import PathForce


class PathSpring(PathForce):
    """A stack of ``n`` path springs: ``resting_length``, ``stiffness``, ``dissipation`` ``(n,)`` each."""

    resting_length: jnp.ndarray
    stiffness: jnp.ndarray
    dissipation: jnp.ndarray

    def __check_init__(self):
        kind, names = "PathSpring", self.element_names
        _params.check_names(kind, names)
        self.check_paths(kind)
        _params.check_param(kind, names, "resting_length", self.resting_length, (), "pos")
        _params.check_param(kind, names, "stiffness", self.stiffness, (), "nonneg")
        _params.check_param(kind, names, "dissipation", self.dissipation)

    def tension(self, length, speed):
        stretch = jnp.maximum(length - self.resting_length.astype(length.dtype), 0.0)
        return self.stiffness.astype(length.dtype) * stretch * (1.0 + self.dissipation.astype(length.dtype) * speed)
