"""``ModelBuilder``: assemble a :class:`~mbjax.Model` body by body, checking each body as it comes.

Every check runs at :meth:`ModelBuilder.add_body`, so an error names the body being added;
:meth:`ModelBuilder.build` only stacks the joint maps by family and freezes the topology.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import defaultdict
from typing import Any, Sequence

import jax.numpy as jnp
import numpy as np

from ._inertia import inertia_problems
from ._model import GROUND, Model, element_fields
from ._topology import JOINT_TYPES, REVOLUTE, Topology
from .maps._base import AbstractJointMap, local_index
from .maps.affine import Affine
from .maps.constant import Constant


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
        if isinstance(coordinates, (str, bytes)):
            raise TypeError(f"ModelBuilder: coordinates must be a sequence of names, got the string {coordinates!r} "
                            f"(one coordinate: [{coordinates!r}])")
        coordinates = tuple(coordinates)
        if len(set(coordinates)) != len(coordinates):
            raise ValueError(f"duplicate coordinate names in {coordinates}")
        if not all(isinstance(c, str) and c for c in coordinates):
            raise ValueError(f"coordinate names must be non-empty strings, got {coordinates}")
        self.coordinates = coordinates
        self.gravity = np.asarray(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity must be a finite 3-vector, got {gravity!r}")
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
        ``None`` for a joint locked at zero.  The constant offset is ``offset`` (4x4) or (not both) built from
        ``rotation`` (3x3) and ``translation``.  ``inertia`` is about the centre of mass, in the body
        frame; ``mass = 0`` with no inertia gives a zero-inertia body.
        """
        if not isinstance(name, str) or not name or name == GROUND:
            raise ValueError(f"body name must be a non-empty string other than {GROUND!r}, got {name!r}")
        if name in self.body_names:
            raise ValueError(f"duplicate body name {name!r}")
        if joint not in JOINT_TYPES:
            raise ValueError(f"body {name!r}: joint type {joint!r} is not one of {JOINT_TYPES}")
        parent_index = _parent_index(name, parent, self.body_names)
        axis = _unit_axis(name, axis)
        offset = _offset(name, offset, rotation, translation)
        map = _joint_map(name, map, self.coordinates)
        mass = _mass(name, mass)
        inertia = np.zeros((3, 3)) if inertia is None else _floats(name, "inertia", inertia, "a 3x3 matrix or 3 moments")
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        problems = inertia_problems(name, mass, inertia)
        if problems:
            raise ValueError("\n".join(problems))
        com = _floats(name, "com", com, "a finite 3-vector")
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise ValueError(f"body {name!r}: com must be a finite 3-vector, got {com!r}")
        self._bodies.append(_BodySpec(name, parent_index, joint, axis, offset, map, mass, com, inertia))
        return self

    def build(self, extras: dict[str, Any] | None = None) -> Model:
        """Stack the joint maps by family and return the :class:`Model` (``extras``: its element
        fields as a dict, e.g. ``{"muscles": paths}``; or set them later with ``Model.replace``)."""
        if not self._bodies:
            raise ValueError("a model needs at least one body")
        if not self.coordinates:  # every function takes a pose q (nq,); nothing moves without one
            raise ValueError(f"a model needs at least one coordinate: bodies {self.body_names} have none, so every "
                             "joint is locked and there is no pose q to compute with (name the coordinates in "
                             "ModelBuilder([...]) and map joints to them)")
        groups: dict[Any, list[int]] = defaultdict(list)
        for i, b in enumerate(self._bodies):
            groups[b.map.group_key()].append(i)
        maps, map_bodies, map_inputs = [], [], []
        for bodies in groups.values():
            family = type(self._bodies[bodies[0]].map)
            stacked = family.stack([self._bodies[i].map for i in bodies])
            maps.append(stacked)
            map_bodies.append(tuple(bodies))
            idx = local_index(stacked.coordinates, self.coordinates, stacked.width)
            map_inputs.append(tuple(tuple(int(v) for v in row) for row in idx))
        topology = Topology(
            parents=tuple(b.parent for b in self._bodies),
            joint_types=tuple(b.joint for b in self._bodies),
            body_names=self.body_names,
            coordinate_names=self.coordinates,
            map_bodies=tuple(map_bodies),
            map_inputs=tuple(map_inputs),
        )
        read = {c for stacked in maps for coords in stacked.coordinates for c in coords}
        unread = [c for c in self.coordinates if c not in read]
        if unread:  # q must still carry them: a column of zeros in the mass matrix, a pose entry with no effect
            warnings.warn(f"ModelBuilder.build: no joint map reads the coordinate(s) {unread}: they move no body, "
                          "the mass matrix has a zero row and column for each (forward_dynamics refuses it); map "
                          "a joint to them or leave them out of ModelBuilder([...]) (a muscle path or constraint "
                          "added later may still read them)", UserWarning, stacklevel=2)
        f64 = lambda x: jnp.asarray(np.asarray(x), dtype=float)
        return Model(
            offset=f64([b.offset for b in self._bodies]),
            axis=f64([b.axis for b in self._bodies]),
            mass=f64([b.mass for b in self._bodies]),
            com=f64([b.com for b in self._bodies]),
            inertia=f64([b.inertia for b in self._bodies]),
            gravity=f64(self.gravity),
            maps=tuple(maps),
            topology=topology,
            **element_fields(extras or {}, "ModelBuilder.build"),
        )


def _parent_index(name: str, parent: str | int, body_names: tuple[str, ...]) -> int:
    """Index of ``parent`` among the bodies added so far; -1 for the ground."""
    if isinstance(parent, str):
        if parent == GROUND:
            return -1
        if parent in body_names:
            return body_names.index(parent)
        raise ValueError(
            f"body {name!r}: parent {parent!r} is not 'ground' or an existing body "
            f"{body_names} (add parents before children)"
        )
    if not isinstance(parent, (int, np.integer)) or isinstance(parent, (bool, np.bool_)):
        raise TypeError(f"body {name!r}: parent must be 'ground', the name of a body added before, or its index, "
                        f"got {parent!r}")
    parent_index = int(parent)
    if not -1 <= parent_index < len(body_names):
        raise ValueError(f"body {name!r}: parent index {parent} does not name an existing body")
    return parent_index


def _tolerance(value) -> float:
    """Rounding tolerance of a user array: 1e-9, or 100 eps of its dtype if that is coarser
    (a float32 rotation is orthonormal only to ~1e-7); values are then kept in float64."""
    dtype = np.asarray(value).dtype
    eps = float(np.finfo(dtype).eps) if np.issubdtype(dtype, np.floating) else 0.0
    return max(1e-9, 100.0 * eps)


def _mass(name: str, mass) -> float:
    """``mass`` as a float: one number (not a list, a string or a bool), else refused naming the body."""
    try:
        if isinstance(mass, (str, bytes, bool, np.bool_)) or np.ndim(mass) != 0:
            raise TypeError
        return float(mass)
    except (TypeError, ValueError):
        raise ValueError(f"body {name!r}: mass must be a number, got {mass!r}") from None


def _floats(name: str, what: str, value, expected: str) -> np.ndarray:
    """``value`` as a float64 array (real numbers only), else refused naming the body and the argument."""
    try:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf":
            raise TypeError
        return arr.astype(float)
    except (TypeError, ValueError):
        raise ValueError(f"body {name!r}: {what} must be {expected} (real numbers), got {value!r}") from None


def _unit_axis(name: str, axis) -> np.ndarray:
    tol = _tolerance(axis)
    axis = _floats(name, "axis", axis, "a finite 3-vector")
    if axis.shape != (3,) or not np.all(np.isfinite(axis)):
        raise ValueError(f"body {name!r}: axis must be a finite 3-vector, got {axis!r}")
    if abs(np.linalg.norm(axis) - 1.0) > tol:
        raise ValueError(f"body {name!r}: joint axis {axis} is not a unit vector (norm {np.linalg.norm(axis)})")
    return axis


def _offset(name: str, offset, rotation, translation) -> np.ndarray:
    """The joint's constant 4x4 offset: ``offset`` itself, or built from ``rotation`` and ``translation``.

    Built in NumPy float64 (never through JAX's default dtype); every entry must be finite and the
    rotation proper to the input dtype's rounding (:func:`_tolerance`).
    """
    if offset is not None:
        given = [n for n, v in (("rotation", rotation), ("translation", translation))
                 if v is not None and (n == "rotation" or np.any(np.asarray(v, dtype=object) != 0))]
        if given:
            raise ValueError(f"body {name!r}: give the offset either as offset (4x4) or as rotation and "
                             f"translation, not both: got offset and {' and '.join(given)}")
        tol = _tolerance(offset)
        offset = np.asarray(offset, dtype=float)
        if offset.shape != (4, 4):
            raise ValueError(f"body {name!r}: offset must be 4x4, got shape {offset.shape}")
    else:
        tol = _tolerance(rotation) if rotation is not None else 1e-9
        rot = np.eye(3) if rotation is None else np.asarray(rotation, dtype=float)
        if rot.shape != (3, 3):
            raise ValueError(f"body {name!r}: rotation must be 3x3, got shape {rot.shape}")
        trans = np.asarray(translation, dtype=float)
        if trans.shape != (3,):
            raise ValueError(f"body {name!r}: translation must be a 3-vector, got shape {trans.shape}")
        offset = np.eye(4)
        offset[:3, :3] = rot
        offset[:3, 3] = trans
    if not np.all(np.isfinite(offset)):
        raise ValueError(f"body {name!r}: offset (rotation and translation) must be finite, got\n{offset}")
    rot = offset[:3, :3]
    if np.max(np.abs(rot.T @ rot - np.eye(3))) > tol or np.linalg.det(rot) < 0:
        raise ValueError(f"body {name!r}: offset rotation is not a proper rotation matrix:\n{rot}")
    if not np.allclose(offset[3], [0, 0, 0, 1]):
        raise ValueError(f"body {name!r}: offset's last row must be [0, 0, 0, 1]")
    return offset


def _joint_map(name: str, map, coordinates: tuple[str, ...]) -> AbstractJointMap:
    """One joint map reading known coordinates: ``map`` itself, the identity of a coordinate name,
    or a joint locked at zero for ``None``."""
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
        if c not in coordinates:
            raise ValueError(f"body {name!r}: joint map reads coordinate {c!r}, not one of {coordinates}")
    return map
