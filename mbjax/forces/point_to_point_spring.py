"""OpenSim's ``PointToPointSpring`` (Simbody ``Force::TwoPointLinearSpring``).

Tension ``T = k (ℓ - ℓ₀)`` along the line between a point on body 1 and a point on body 2
(``ℓ = |p₂ - p₁|``, no damping), pulling the points together when stretched.  As an element
coordinate spring: ``b = ℓ``, ``f = -k (ℓ - ℓ₀)``, so ``Q = -T ∂ℓ/∂q = -∇V`` with
``V = ½ k (ℓ - ℓ₀)²``.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from . import _params
from .base import CoordinateSpring, frame_poses


class PointToPointSpring(CoordinateSpring):
    """A stack of ``n`` two-point linear springs; points ``(n, 3)`` in their bodies' frames."""

    point1: jnp.ndarray
    point2: jnp.ndarray
    stiffness: jnp.ndarray
    rest_length: jnp.ndarray
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    element_names: tuple[str, ...] = eqx.field(static=True)

    def __check_init__(self):
        kind, names = "PointToPointSpring", self.element_names
        _params.check_names(kind, names)
        _params.check_param(kind, names, "point1", self.point1, (3,))
        _params.check_param(kind, names, "point2", self.point2, (3,))
        _params.check_param(kind, names, "stiffness", self.stiffness, (), "warn")
        _params.check_param(kind, names, "rest_length", self.rest_length, (), "warn")
        _params.check_bodies(kind, names, "body1", self.body1)
        _params.check_bodies(kind, names, "body2", self.body2)

    def element_coordinates(self, model, q):
        _params.check_bodies("PointToPointSpring", self.element_names, "body1", self.body1, model.n_bodies)
        _params.check_bodies("PointToPointSpring", self.element_names, "body2", self.body2, model.n_bodies)
        n = len(self.body1)
        eye = jnp.broadcast_to(jnp.eye(4), (n, 4, 4))
        x1 = frame_poses(model, q, self.body1, eye)
        x2 = frame_poses(model, q, self.body2, eye)
        p1 = jnp.einsum("nij,nj->ni", x1[:, :3, :3], self.point1.astype(q.dtype)) + x1[:, :3, 3]
        p2 = jnp.einsum("nij,nj->ni", x2[:, :3, :3], self.point2.astype(q.dtype)) + x2[:, :3, 3]
        return jnp.linalg.norm(p2 - p1, axis=-1)

    def value_rules(self, model, q):
        """The two points must not coincide: the force's direction is undefined there (NaN in OpenSim)."""
        length = self.element_coordinates(model, q)
        return [(length <= 0, [f"PointToPointSpring {n!r}: its two points coincide (length 0) at this pose, so the "
                               "force's direction is undefined (OpenSim gives NaN); move point1/point2 apart"
                               for n in self.element_names])]

    def law(self, length, rate):
        del rate
        return -self.stiffness * (length - self.rest_length)

    def potential_energy(self, model, q):
        """``Σ ½ k (ℓ - ℓ₀)²`` (Simbody's ``calcPotentialEnergy``)."""
        d = self.element_coordinates(model, q) - self.rest_length
        return 0.5 * jnp.sum(self.stiffness * d * d)
