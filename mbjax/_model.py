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
import warnings

from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._topology import Topology
from .maps._base import AbstractJointMap

GROUND = "ground"

#: the body and joint parameters, arrays
ARRAY_FIELDS = ("offset", "axis", "mass", "com", "inertia", "gravity")

#: what a model carries besides its bodies and joints (each None when absent), by the layer that reads it
ELEMENT_FIELDS = ("muscles", "forces", "path_functions", "osim")


def element_fields(extras, where: str) -> dict[str, Any]:
    """The element fields from a dict keyed like them (absent keys: None); another key is refused."""
    unknown = sorted(set(extras) - set(ELEMENT_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown model element(s) {unknown}; a model carries {list(ELEMENT_FIELDS)}")
    return {k: extras.get(k) for k in ELEMENT_FIELDS}


def angular_speed_joints(joints, coordinate_names) -> tuple:
    """``(joint class, joint name, rotation coordinates, their indices in q or None, those not in q)`` of
    each OpenSim joint in ``joints`` (``OsimInfo.speed_joints``: Ball, Free, Ellipsoid), whose rotation
    speeds are the angular velocity, not the angles' rates; the indices are None when an angle is locked
    or coupled (not in ``coordinate_names``)."""
    names = list(coordinate_names)
    out = []
    for kind, joint, coords in joints or ():
        missing = tuple(c for c in coords if c not in names)
        out.append((kind, joint, tuple(coords), None if missing else tuple(names.index(c) for c in coords), missing))
    return tuple(out)


def require_model(model, where: str) -> None:
    """Refuse a first argument that is not a :class:`Model` (a path, a name, None), saying how to get one."""
    if not isinstance(model, Model):
        hint = (f" (a file name? load it with mbjax.io.load_osim({model!r}) or mbjax.models.load({model!r}))"
                if isinstance(model, str) else "")
        raise TypeError(f"{where}: model must be an mbjax Model (the first argument; mbjax.models.load, "
                        f"mbjax.io.load_osim, ModelBuilder.build), got {type(model).__name__}{hint}")


def _numbers(value) -> bool:
    """Whether ``value`` is a (nested) list or tuple of real numbers."""
    try:
        return isinstance(value, (list, tuple)) and np.asarray(value).dtype.kind in "iuf"
    except ValueError:  # ragged
        return False


class Model(eqx.Module):
    """A body tree with empirical joint maps, and what other layers attach to it.

    Static: :attr:`topology` (hashable).  Array leaves (differentiable): joint ``offset``
    ``(nb, 4, 4)``, ``axis`` ``(nb, 3)``, ``mass`` ``(nb,)``, ``com`` ``(nb, 3)`` (body frame),
    ``inertia`` ``(nb, 3, 3)`` about the centre of mass in the body frame, ``gravity`` ``(3,)`` and
    the stacked joint ``maps`` (one module per family).  Attached, each None when absent:
    ``muscles`` (the musculotendon paths and their parameters, :class:`mbjax.muscles.MusclePaths`),
    ``forces`` (force elements: springs, bushings, contact, ligaments; :class:`mbjax.forces.ForceSet`),
    ``path_functions`` (paths as fitted functions of the coordinates, :mod:`mbjax.muscles.path_functions`)
    and ``osim`` (what the model keeps of its OpenSim file: coordinate defaults, ranges, units and
    provenance, :class:`mbjax.opensim.model.osim_info.OsimInfo`).  Change them with :meth:`replace`.
    """

    offset: jnp.ndarray
    axis: jnp.ndarray
    mass: jnp.ndarray
    com: jnp.ndarray
    inertia: jnp.ndarray
    gravity: jnp.ndarray
    maps: tuple[AbstractJointMap, ...]
    topology: Topology = eqx.field(static=True)
    muscles: Any = None
    forces: Any = None
    path_functions: Any = None
    osim: Any = None

    def replace(self, **fields) -> "Model":
        """This model with the named fields replaced (the other arrays shared), e.g.
        ``model.replace(muscles=None)`` for the skeleton alone."""
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"Model.replace: no field {unknown}; the fields are "
                            f"{[f.name for f in dataclasses.fields(self)]}")
        for key in set(fields) & set(ARRAY_FIELDS):  # a list of numbers (gravity=[0, 0, -9.81]) as an array
            if _numbers(fields[key]):
                fields[key] = jnp.asarray(fields[key], dtype=jnp.result_type(getattr(self, key)))
        return dataclasses.replace(self, **fields)

    @property
    def extras(self) -> dict[str, Any]:
        """Deprecated: the attached elements as a dict (read ``model.muscles``, ``.forces``,
        ``.path_functions``, ``.osim`` instead)."""
        warnings.warn("Model.extras is deprecated: read model.muscles, model.forces, model.path_functions or "
                      "model.osim, and change them with model.replace(...)", DeprecationWarning, stacklevel=2)
        return {k: getattr(self, k) for k in ELEMENT_FIELDS if getattr(self, k) is not None}

    def with_extras(self, extras: dict) -> "Model":
        """Deprecated: ``model.replace(...)`` with the four element fields (absent keys become None)."""
        warnings.warn("Model.with_extras is deprecated: use model.replace(muscles=..., forces=..., "
                      "path_functions=..., osim=...)", DeprecationWarning, stacklevel=2)
        return self.replace(**element_fields(extras, "Model.with_extras"))

    def __setstate__(self, state):
        """Unpickle (:func:`mbjax.io.load_model`), also a model saved when the elements were one ``extras`` dict."""
        state = dict(state)
        if "extras" in state:
            state.update(element_fields(state.pop("extras") or {}, "load_model"))
        for key in ELEMENT_FIELDS:
            state.setdefault(key, None)
        self.__dict__.update(state)

    @property
    def body_names(self) -> tuple[str, ...]:
        return self.topology.body_names

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        return self.topology.coordinate_names

    @property
    def muscle_names(self) -> tuple[str, ...]:
        """Names of the musculotendon paths in :attr:`muscles` (empty if none)."""
        muscles = self.muscles
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
