"""The ``Model`` (one ``eqx.Module``) and the builder that assembles it.

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
from collections import defaultdict
from typing import Any, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._spatial import transform
from ._topology import JOINT_TYPES, PRISMATIC, REVOLUTE, Topology
from .maps._base import AbstractJointMap, local_index
from .maps.affine import Affine

GROUND = "ground"


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


@dataclasses.dataclass
class _BodySpec:
    name: str
    parent: int
    joint: str
    axis: np.ndarray
    offset: np.ndarray
    map: AbstractJointMap
    mass: float
    com: np.ndarray
    inertia: np.ndarray


def _check_inertia(name: str, mass: float, inertia: np.ndarray, tol: float = 1e-12) -> None:
    if not np.isfinite(mass) or mass < 0:
        raise ValueError(f"body {name!r}: mass must be finite and >= 0, got {mass}")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ValueError(f"body {name!r}: inertia must be a finite 3x3 matrix, got {inertia!r}")
    scale = max(1.0, float(np.max(np.abs(inertia))))
    if np.max(np.abs(inertia - inertia.T)) > 1e-9 * scale:
        raise ValueError(f"body {name!r}: inertia tensor is not symmetric:\n{inertia}")
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    if eig.min() < -tol * scale:
        raise ValueError(
            f"body {name!r}: inertia tensor is not positive (semi)definite, eigenvalues {eig}"
        )
    # a real mass distribution satisfies the triangle inequality on principal moments
    a, b, c = np.sort(eig)
    if a + b < c - 1e-9 * scale:
        raise ValueError(
            f"body {name!r}: principal moments {eig} violate the triangle inequality "
            "(no physical mass distribution has them)"
        )
    if mass == 0 and np.max(np.abs(inertia)) > 0:
        raise ValueError(f"body {name!r}: zero mass with non-zero inertia")


class ModelBuilder:
    """Assemble a :class:`Model` body by body.

    Example::

        b = ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
        b.add_body("upper_arm", parent="ground", joint="revolute", axis=[0, 0, 1],
                   map="shoulder", mass=2.0, com=[0, -0.15, 0], inertia=np.diag([.01, .002, .01]))
        b.add_body("forearm", parent="upper_arm", joint="revolute", axis=[0, 0, 1],
                   translation=[0, -0.3, 0], map="elbow", mass=1.2, com=[0, -0.12, 0])
        model = b.build()
    """

    def __init__(self, coordinates: Sequence[str], gravity=(0.0, 0.0, -9.81)):
        coordinates = tuple(coordinates)
        if len(set(coordinates)) != len(coordinates):
            raise ValueError(f"duplicate coordinate names in {coordinates}")
        if not all(isinstance(c, str) and c for c in coordinates):
            raise ValueError(f"coordinate names must be non-empty strings, got {coordinates}")
        self.coordinates = coordinates
        self.gravity = np.asarray(gravity, dtype=float)
        if self.gravity.shape != (3,):
            raise ValueError(f"gravity must be a 3-vector, got {gravity!r}")
        self._bodies: list[_BodySpec] = []

    @property
    def body_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self._bodies)

    def add_body(
        self,
        name: str,
        *,
        parent: str | int = GROUND,
        joint: str = REVOLUTE,
        axis=(0.0, 0.0, 1.0),
        map: AbstractJointMap | str | None = None,
        translation=(0.0, 0.0, 0.0),
        rotation=None,
        offset=None,
        mass: float = 0.0,
        com=(0.0, 0.0, 0.0),
        inertia=None,
    ) -> "ModelBuilder":
        """Add body ``name`` attached to ``parent`` by a 1-dof ``joint`` (``"revolute"``/``"prismatic"``).

        ``map`` is the joint map f_i(q): a map instance, a coordinate name (identity map), or
        ``None`` for a joint locked at zero.  The constant offset is ``offset`` (4x4) or built from
        ``rotation`` (3x3) and ``translation``.  ``inertia`` is about the centre of mass, in the body
        frame; ``mass = 0`` with no inertia gives a zero-inertia body.
        """
        from .maps.constant import Constant

        if not isinstance(name, str) or not name or name == GROUND:
            raise ValueError(f"body name must be a non-empty string other than {GROUND!r}, got {name!r}")
        if name in self.body_names:
            raise ValueError(f"duplicate body name {name!r}")
        if joint not in JOINT_TYPES:
            raise ValueError(f"body {name!r}: joint type {joint!r} is not one of {JOINT_TYPES}")
        if isinstance(parent, str):
            if parent == GROUND:
                parent_index = -1
            elif parent in self.body_names:
                parent_index = self.body_names.index(parent)
            else:
                raise ValueError(
                    f"body {name!r}: parent {parent!r} is not 'ground' or an existing body "
                    f"{self.body_names} (add parents before children)"
                )
        else:
            parent_index = int(parent)
            if not -1 <= parent_index < len(self._bodies):
                raise ValueError(f"body {name!r}: parent index {parent} does not name an existing body")
        axis = np.asarray(axis, dtype=float)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)):
            raise ValueError(f"body {name!r}: axis must be a finite 3-vector, got {axis!r}")
        if abs(np.linalg.norm(axis) - 1.0) > 1e-9:
            raise ValueError(f"body {name!r}: joint axis {axis} is not a unit vector (norm {np.linalg.norm(axis)})")
        if offset is not None:
            offset = np.asarray(offset, dtype=float)
            if offset.shape != (4, 4):
                raise ValueError(f"body {name!r}: offset must be 4x4, got shape {offset.shape}")
        else:
            rot = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
            if rot.shape != (3, 3):
                raise ValueError(f"body {name!r}: rotation must be 3x3, got shape {rot.shape}")
            offset = np.asarray(transform(rot, np.asarray(translation, dtype=float)))
        rot = offset[:3, :3]
        if np.max(np.abs(rot.T @ rot - np.eye(3))) > 1e-9 or np.linalg.det(rot) < 0:
            raise ValueError(f"body {name!r}: offset rotation is not a proper rotation matrix:\n{rot}")
        if not np.allclose(offset[3], [0, 0, 0, 1]):
            raise ValueError(f"body {name!r}: offset's last row must be [0, 0, 0, 1]")
        if map is None:
            map = Constant(0.0)
        elif isinstance(map, str):
            map = Affine(map, [1.0])
        if not isinstance(map, AbstractJointMap):
            raise ValueError(f"body {name!r}: map must be a joint map, a coordinate name or None, got {map!r}")
        if map.n_maps != 1:
            raise ValueError(f"body {name!r}: expected a single joint map, got a stack of {map.n_maps}")
        if map.arity is not None and len(map.coordinates[0]) != map.arity:
            raise ValueError(
                f"body {name!r}: {type(map).__name__} reads {map.arity} coordinate(s) but was given "
                f"{map.coordinates[0]}"
            )
        for c in map.coordinates[0]:
            if c not in self.coordinates:
                raise ValueError(
                    f"body {name!r}: joint map reads coordinate {c!r}, not one of {self.coordinates}"
                )
        mass = float(mass)
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        _check_inertia(name, mass, inertia)
        com = np.asarray(com, dtype=float)
        if com.shape != (3,):
            raise ValueError(f"body {name!r}: com must be a 3-vector, got {com!r}")
        self._bodies.append(
            _BodySpec(name, parent_index, joint, axis, offset, map, mass, com, inertia)
        )
        return self

    def build(self, extras: dict[str, Any] | None = None) -> Model:
        """Stack the joint maps by family and return the :class:`Model`."""
        if not self._bodies:
            raise ValueError("a model needs at least one body")
        groups: dict[Any, list[int]] = defaultdict(list)
        for i, b in enumerate(self._bodies):
            groups[b.map.group_key()].append(i)
        maps = []
        map_bodies = []
        map_inputs = []
        for key, bodies in groups.items():
            family = type(self._bodies[bodies[0]].map)
            stacked = family.stack([self._bodies[i].map for i in bodies])
            maps.append(stacked)
            map_bodies.append(tuple(bodies))
            idx = local_index(stacked.coordinates, self.coordinates, stacked.width)
            map_inputs.append(tuple(tuple(int(v) for v in row) for row in idx))
        topology = Topology(
            parents=tuple(b.parent for b in self._bodies),
            joint_types=tuple(b.joint for b in self._bodies),
            body_names=tuple(b.name for b in self._bodies),
            coordinate_names=self.coordinates,
            map_bodies=tuple(map_bodies),
            map_inputs=tuple(map_inputs),
        )
        f64 = lambda x: jnp.asarray(np.asarray(x), dtype=float)
        return Model(
            offset=f64([b.offset for b in self._bodies]),
            axis=f64([b.axis for b in self._bodies]),
            mass=f64([b.mass for b in self._bodies]),
            com=f64([b.com for b in self._bodies]),
            inertia=f64([b.inertia for b in self._bodies]),
            gravity=f64(self.gravity),
            maps=tuple(maps),
            extras=dict(extras or {}),
            topology=topology,
        )
