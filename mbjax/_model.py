"""The ``Model`` (one ``eqx.Module``); :mod:`mbjax._builder` assembles it.

Body ``i`` is attached to its parent by one 1-dof joint in the seed's parametrization
(Ehsani Eq. 38-39), preceded by a constant offset transform ``O_i`` so that URDF and OpenSim
frames map exactly::

    ᵖʳ⁽ⁱ⁾ᵢA₄(f_i) = O_i · J_i(f_i),   J_i = Rot(V_i, f_i)  (revolute)  or  Trans(f_i V_i)  (prismatic)

with the unit axis ``V_i`` expressed in body ``i``'s frame (which, for a pure rotation about or a
translation along ``V_i``, is the same vector in the offset frame).  The seed's revolute joint
(translate ``d V_d``, rotate ``θ`` about ``V_θ``) is ``O = Trans(d V_d)``; its prismatic joint
(translate ``d V_d``, then rotate by a constant ``θ``) is ``O = Rot(V_θ, θ)`` with axis
``Rot(V_θ, θ)ᵀ V_d``.  Every joint variable is an empirical map ``f_i(q)`` of the generalized
coordinates.  Multi-dof joints are chains through zero-inertia bodies (Ehsani §3-1).
"""

from __future__ import annotations

import dataclasses

from typing import Any

import equinox as eqx
import jax.numpy as jnp

from ._topology import Topology
from .maps._base import AbstractJointMap

GROUND = "ground"


def require_model(model, where: str) -> None:
    """Refuse a first argument that is not a :class:`Model` (a path, a name, None), saying how to get one."""
    if not isinstance(model, Model):
        hint = (f" (a file name? load it with mbjax.io.load_osim({model!r}) or mbjax.models.load({model!r}))"
                if isinstance(model, str) else "")
        raise TypeError(f"{where}: model must be an mbjax Model (the first argument; mbjax.models.load, "
                        f"mbjax.io.load_osim, ModelBuilder.build), got {type(model).__name__}{hint}")


class Model(eqx.Module):
    """A body tree with empirical joint maps.

    Static: :attr:`topology` (hashable).  Array leaves (differentiable): joint ``offset``
    ``(nb, 4, 4)``, ``axis`` ``(nb, 3)``, ``mass`` ``(nb,)``, ``com`` ``(nb, 3)`` (body frame),
    ``inertia`` ``(nb, 3, 3)`` about the centre of mass in the body frame, ``gravity`` ``(3,)`` and
    the stacked joint ``maps`` (one module per family).  ``extras`` holds force elements added by
    other layers (muscle paths, ligaments) as a dict of modules.
    """

    offset: jnp.ndarray
    axis: jnp.ndarray
    mass: jnp.ndarray
    com: jnp.ndarray
    inertia: jnp.ndarray
    gravity: jnp.ndarray
    maps: tuple[AbstractJointMap, ...]
    extras: dict[str, Any]
    topology: Topology = eqx.field(static=True)

    def with_extras(self, extras: dict) -> "Model":
        """This model with ``extras`` replaced (the arrays shared): ``eqx.tree_at(lambda m: m.extras,
        model, extras)`` without its tree walk."""
        return dataclasses.replace(self, extras=extras)

    @property
    def body_names(self) -> tuple[str, ...]:
        return self.topology.body_names

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        return self.topology.coordinate_names

    @property
    def muscle_names(self) -> tuple[str, ...]:
        """Names of the musculotendon paths in ``extras["muscles"]`` (empty if none)."""
        muscles = self.extras.get("muscles")
        return tuple(getattr(muscles, "names", ())) if muscles is not None else ()

    @property
    def n_bodies(self) -> int:
        return self.topology.n_bodies

    @property
    def n_coordinates(self) -> int:
        return self.topology.n_coordinates

    def body_index(self, body) -> int:
        return self.topology.body_index(body)

    def coordinate_index(self, coordinate) -> int:
        return self.topology.coordinate_index(coordinate)

    def pseudo_inertia(self):
        """Pseudo-inertia J_i of Eq. 131 about the body-frame origin, ``(nb, 4, 4)``.

        ``J = ∫ [r rᵀ, r; rᵀ, 1] dm`` with ``∫ r rᵀ dm = ½ tr(I_o) 1 - I_o`` where ``I_o`` is the
        inertia tensor about the body origin (parallel-axis theorem from the COM tensor).
        """
        m = self.mass
        c = self.com
        eye = jnp.eye(3, dtype=c.dtype)
        cc = jnp.einsum("bi,bj->bij", c, c)
        # inertia about the origin: I_o = I_c + m (|c|² 1 - c cᵀ)
        i_o = self.inertia + m[:, None, None] * (jnp.einsum("bi,bi->b", c, c)[:, None, None] * eye - cc)
        second = 0.5 * jnp.trace(i_o, axis1=1, axis2=2)[:, None, None] * eye - i_o
        nb = m.shape[0]
        out = jnp.zeros((nb, 4, 4), c.dtype)
        out = out.at[:, :3, :3].set(second)
        out = out.at[:, :3, 3].set(m[:, None] * c)
        out = out.at[:, 3, :3].set(m[:, None] * c)
        return out.at[:, 3, 3].set(m)
