"""Wrap objects and path wraps as OpenSim files define them (``WrapObjectSet``, ``PathWrapSet``).

A :class:`WrapObject` is a surface fixed in a body: its frame is the body frame moved by
``translation`` and rotated by ``xyz_body_rotation`` (body-fixed X-Y-Z angles, SimTK's
``setRotationToBodyFixedXYZ``).  ``quadrant`` restricts the side of the surface a path may wrap on
(``"all"``, ``"x"``/``"+x"``, ``"-x"``, ...), read into OpenSim's ``(wrap_axis, wrap_sign)``.

Dimensions are stored in one ``(3,)`` vector per object, by kind:

========================  ==========================================
``"WrapCylinder"``        ``(radius, length, 0)``
``"WrapSphere"``          ``(radius, 0, 0)``
``"WrapEllipsoid"``       ``(a, b, c)`` semi-axes (OpenSim ``dimensions``)
``"WrapTorus"``           ``(inner_radius, outer_radius, 0)``
========================  ==========================================

A :class:`PathWrap` attaches one object to one path: the ellipsoid ``method`` (``"hybrid"``,
``"midpoint"``, ``"axial"``) and the 1-based ``range`` of path points it may wrap between
(``-1`` = first / last point), as in OpenSim.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

#: the surfaces mbjax models, in OpenSim's element names
KINDS = ("WrapCylinder", "WrapSphere", "WrapEllipsoid", "WrapTorus")
#: how many of the three ``dimensions`` each kind uses (all of them must be positive)
DIMENSIONS_USED = {"WrapCylinder": 2, "WrapSphere": 1, "WrapEllipsoid": 3, "WrapTorus": 2}
#: PathWrap ``method`` names, in the order of OpenSim's ``PathWrap::WrapMethod``
METHODS = ("hybrid", "midpoint", "axial")

_QUADRANTS = {
    "all": (0, 0), "unassigned": (0, 0),
    "x": (0, 1), "+x": (0, 1), "-x": (0, -1),
    "y": (1, 1), "+y": (1, 1), "-y": (1, -1),
    "z": (2, 1), "+z": (2, 1), "-z": (2, -1),
}


def quadrant_axis_sign(quadrant: str) -> tuple[int, int]:
    """OpenSim's ``(_wrapAxis, _wrapSign)`` of a quadrant name (``WrapObject::extendFinalizeFromProperties``).

    Sign 0 means unconstrained ("all"); names are case-insensitive as OpenSim's accepted spellings.
    """
    key = quadrant.strip().lower()
    if key not in _QUADRANTS:
        raise ValueError(f"quadrant {quadrant!r} is not one of all, x, +x, -x, y, +y, -y, z, +z, -z")
    return _QUADRANTS[key]


def xyz_body_fixed(angles) -> np.ndarray:
    """Rotation matrix of body-fixed X-Y-Z angles: Rx(a0) Ry(a1) Rz(a2)."""
    a, b, c = (float(v) for v in angles)
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    return rx @ ry @ rz


@dataclasses.dataclass(frozen=True)
class WrapObject:
    """A wrap surface ``kind`` (one of :data:`KINDS`) named ``name`` fixed in ``body``.

    ``rotation`` (3x3) and ``translation`` (3,) place the object frame in the body frame;
    ``dimensions`` follow the table of the module docstring.
    """

    name: str
    kind: str
    body: str
    dimensions: Sequence[float]
    rotation: np.ndarray = dataclasses.field(default_factory=lambda: np.eye(3))
    translation: Sequence[float] = (0.0, 0.0, 0.0)
    quadrant: str = "all"
    active: bool = True

    def __post_init__(self):
        for what in ("kind", "body", "quadrant"):
            if not isinstance(getattr(self, what), str):
                raise TypeError(f"wrap object {self.name!r}: {what} must be a string, got "
                                f"{type(getattr(self, what)).__name__} {getattr(self, what)!r}")
        if not isinstance(self.active, (bool, np.bool_)):
            raise TypeError(f"wrap object {self.name!r}: active must be True or False, got {self.active!r}")
        if self.kind not in KINDS:
            raise ValueError(f"wrap object {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        try:
            quadrant_axis_sign(self.quadrant)
        except ValueError as err:
            raise ValueError(f"wrap object {self.name!r}: {err}") from None
        arrays = []
        for what, shape in (("dimensions", "a 3-vector"), ("rotation", "a 3x3 rotation matrix"),
                            ("translation", "a 3-vector")):
            try:
                arrays.append(np.asarray(getattr(self, what), dtype=float))
            except (TypeError, ValueError):
                raise ValueError(f"wrap object {self.name!r}: {what} must be {shape} of numbers, got "
                                 f"{getattr(self, what)!r}"[:300]) from None
        dims, rot, trans = arrays
        if dims.shape != (3,) or not np.all(np.isfinite(dims)):
            raise ValueError(f"wrap object {self.name!r}: dimensions must be a finite 3-vector, got {dims!r}")
        needed = DIMENSIONS_USED[self.kind]
        if np.any(dims[:needed] <= 0):
            raise ValueError(f"wrap object {self.name!r} ({self.kind}): dimensions must be positive, got {dims[:needed]}")
        if self.kind == "WrapTorus" and not dims[0] < dims[1]:
            raise ValueError(f"wrap object {self.name!r}: torus inner radius {dims[0]} must be below outer {dims[1]}")
        if rot.shape != (3, 3) or not np.allclose(rot.T @ rot, np.eye(3), atol=1e-9) or np.linalg.det(rot) < 0:
            raise ValueError(f"wrap object {self.name!r}: rotation must be a 3x3 proper rotation matrix (orthonormal, "
                             f"determinant +1: a reflection would mirror the surface), got {rot.tolist()}")
        if trans.shape != (3,) or not np.all(np.isfinite(trans)):
            raise ValueError(f"wrap object {self.name!r}: translation must be a finite 3-vector")


@dataclasses.dataclass(frozen=True)
class PathWrap:
    """Wrap the path over ``wrap_object`` (a name), between 1-based path points ``range`` (-1: ends)."""

    wrap_object: str
    method: str = "hybrid"
    range: tuple[int, int] = (-1, -1)
    name: str = ""

    def __post_init__(self):
        if self.method.lower() not in METHODS:
            raise ValueError(f"path wrap {self.name or self.wrap_object!r}: method {self.method!r} not in {METHODS}")
