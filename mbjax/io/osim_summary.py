"""What an OpenSim ``.osim`` file declares, read from its XML alone (``mbjax info MODEL``).

:func:`summarize_osim` lists the coordinates (joint, motion type, unit, range, default, clamped,
locked, coupled), the bodies (mass), the muscles (class, wrap objects on their path) and the wrap
objects (class, body) without building a :class:`~mbjax.Model`, so it also describes files (or
parts of files) that :func:`mbjax.io.load_osim` refuses or simplifies.

Motion type (OpenSim 4.x writes no ``<motion_type>``; OpenSim derives it, ``Coordinate::getMotionType``):
the ``<motion_type>`` element when present (3.x); otherwise from the owning joint: a
``CustomJoint`` coordinate is rotational when a ``rotation1..3`` ``TransformAxis`` uses it and
translational when only ``translation1..3`` axes do; ``PinJoint``, ``UniversalJoint``,
``BallJoint``, ``GimbalJoint``, ``EllipsoidJoint`` coordinates are rotational, ``SliderJoint``
translational, ``PlanarJoint`` (rz, tx, ty) and ``FreeJoint`` (3 rotations, 3 translations) by
position.  Units: rad for rotational, m for translational coordinates (OpenSim's internal units).
A missing ``<range>`` is OpenSim's default ``[-10, 10]``.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pyexpat import ExpatError, ParserCreate

__all__ = ["CoordinateSummary", "BodySummary", "MuscleSummary", "WrapObjectSummary", "ConstraintSummary",
           "OsimSummary", "summarize_osim"]

_ROTATIONAL_JOINTS = ("PinJoint", "UniversalJoint", "BallJoint", "GimbalJoint", "EllipsoidJoint")
_BY_POSITION = {"PlanarJoint": ("rotational", "translational", "translational"),
                "FreeJoint": ("rotational",) * 3 + ("translational",) * 3,
                "SliderJoint": ("translational",)}
UNITS = {"rotational": "rad", "translational": "m"}


@dataclasses.dataclass(frozen=True)
class CoordinateSummary:
    name: str
    joint: str
    motion_type: str  # "rotational", "translational" or "unknown"
    range: tuple[float, float]
    default: float
    clamped: bool
    locked: bool
    coupled_to: tuple[str, ...] | None  # independent coordinates of its CoordinateCouplerConstraint

    @property
    def unit(self) -> str:
        return UNITS.get(self.motion_type, "?")


@dataclasses.dataclass(frozen=True)
class BodySummary:
    name: str
    mass: float


@dataclasses.dataclass(frozen=True)
class MuscleSummary:
    name: str
    kind: str  # the element tag, e.g. "Thelen2003Muscle"
    wrap_objects: tuple[str, ...]
    path: str = "GeometryPath"  # or "FunctionBasedPath" (a function of the coordinates, no points)


@dataclasses.dataclass(frozen=True)
class WrapObjectSummary:
    name: str
    kind: str  # "WrapCylinder", "WrapEllipsoid", ...
    body: str


@dataclasses.dataclass(frozen=True)
class ConstraintSummary:
    name: str
    kind: str  # "CoordinateCouplerConstraint", "PointOnLineConstraint", ...
    enforced: bool
    #: how ``load_osim`` handles it, in words
    handling: str


@dataclasses.dataclass(frozen=True)
class OsimSummary:
    path: str
    version: str
    model_name: str
    coordinates: tuple[CoordinateSummary, ...]
    bodies: tuple[BodySummary, ...]
    muscles: tuple[MuscleSummary, ...]
    wrap_objects: tuple[WrapObjectSummary, ...]
    constraints: tuple[ConstraintSummary, ...] = ()

    def coordinate(self, name: str) -> CoordinateSummary:
        for c in self.coordinates:
            if c.name == name:
                return c
        raise KeyError(name)


def _text(el, tag, default=""):
    t = el.findtext(tag)
    return default if t is None else t.strip()


def _floats(el, tag, default):
    t = el.findtext(tag)
    if t is None or not t.split():
        return default
    try:
        return [float(v) for v in t.split()]
    except ValueError:
        return default


def _bool(el, tag):
    return _text(el, tag, "false").lower() in ("true", "1")


def _motion_type(coord, joint) -> str:
    mt = _text(coord, "motion_type")
    if mt:
        return mt.lower()
    if joint is None:
        return "unknown"
    name = coord.get("name")
    if joint.tag == "CustomJoint":
        kinds = set()
        for axis in joint.iter("TransformAxis"):
            if name in _text(axis, "coordinates").split():
                kinds.add("rotational" if (axis.get("name") or "").startswith("rotation") else "translational")
        return "rotational" if "rotational" in kinds else kinds.pop() if kinds else "unknown"
    if joint.tag in _ROTATIONAL_JOINTS:
        return "rotational"
    if joint.tag in _BY_POSITION:
        own = [c.get("name") for c in joint.iter("Coordinate")]
        kinds = _BY_POSITION[joint.tag]
        i = own.index(name)
        return kinds[i] if i < len(kinds) else "unknown"
    return "unknown"


def _parse(path):
    """The XML tree without namespace processing (as load_osim reads it): OpenSim writes tags such as
    ``<HuntCrossleyForce::ContactParametersSet>``, which a namespace-aware parser refuses."""
    builder = ET.TreeBuilder()
    parser = ParserCreate()
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    with open(path, "rb") as fh:
        parser.ParseFile(fh)
    return builder.close()


def summarize_osim(path) -> OsimSummary:
    """The coordinates, bodies, muscles and wrap objects an ``.osim`` file declares (XML only)."""
    path = str(path)
    try:
        root = _parse(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such OpenSim file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a directory, not an OpenSim file") from None
    except ExpatError as e:
        raise ValueError(f"{path}: malformed XML: {e}") from None
    model = root.find("Model")
    if root.tag != "OpenSimDocument" or model is None:
        raise ValueError(f"{path}: not an OpenSim model (no <OpenSimDocument><Model>)")
    parent = {child: el for el in root.iter() for child in el}

    def owner(el, pred):
        el = parent.get(el)
        while el is not None and not pred(el):
            el = parent.get(el)
        return el

    couplers = {}
    for con in model.iter("CoordinateCouplerConstraint"):
        couplers[_text(con, "dependent_coordinate_name")] = tuple(_text(con, "independent_coordinate_names").split())
    coords = []
    for c in model.iter("Coordinate"):
        joint = owner(c, lambda e: e.tag.endswith("Joint") and e.tag != "Joint")
        rng = _floats(c, "range", [-10.0, 10.0])
        coords.append(CoordinateSummary(
            name=c.get("name"),
            joint=joint.get("name") if joint is not None else "?",
            motion_type=_motion_type(c, joint),
            range=(float(rng[0]), float(rng[-1])),
            default=float(_floats(c, "default_value", [0.0])[0]),
            clamped=_bool(c, "clamped"),
            locked=_bool(c, "locked"),
            coupled_to=couplers.get(c.get("name")),
        ))
    bodies = []
    for tag in ("Ground", "Body"):
        for b in model.iter(tag):
            if parent.get(b) is not None and parent[b].tag in ("objects", "Model"):
                bodies.append(BodySummary(b.get("name"), float(_floats(b, "mass", [0.0])[0])))
    muscles = []
    forces = model.find("ForceSet/objects")
    for f in forces if forces is not None else ():
        gp = f.find("GeometryPath")
        if gp is None:
            if f.find("FunctionBasedPath") is not None:
                muscles.append(MuscleSummary(f.get("name"), f.tag, (), "FunctionBasedPath"))
            continue
        wraps = tuple(_text(w, "wrap_object") for w in gp.iter("PathWrap"))
        muscles.append(MuscleSummary(f.get("name"), f.tag, wraps))
    wraps = []
    for ws in model.iter("WrapObjectSet"):
        objs = ws.find("objects")
        body = owner(ws, lambda e: e.tag in ("Body", "Ground", "PhysicalOffsetFrame"))
        for w in objs if objs is not None else ():
            frame = _text(w, "socket_frame") or (body.get("name") if body is not None else "?")
            wraps.append(WrapObjectSummary(w.get("name"), w.tag, frame.split("/")[-1]))
    constraints = []
    cset = model.find("ConstraintSet/objects")
    for con in cset if cset is not None else ():
        enforced = _text(con, "isEnforced", "true").lower() in ("true", "1") and not _bool(con, "isDisabled")
        if not enforced:
            how = "not enforced: changes nothing"
        elif con.tag == "CoordinateCouplerConstraint":
            how = f"eliminated: {_text(con, 'dependent_coordinate_name')} is a function of " + \
                  ", ".join(_text(con, "independent_coordinate_names").split())
        elif con.tag == "PointOnLineConstraint":
            follower = _text(con, "socket_follower_body") or _text(con, "follower_body")
            line = _text(con, "socket_line_body") or _text(con, "line_body")
            how = (f"eliminated: a point of {follower} on a line of {line}, 2 coordinates made dependent "
                   "(chosen at load by pivoted QR: model.extras['osim'].eliminated)")
        else:
            how = "not modelled: refused by load_osim unless in ignore_constraints"
        constraints.append(ConstraintSummary(con.get("name") or "", con.tag, enforced, how))
    return OsimSummary(path=path, version=root.get("Version", "?"), model_name=model.get("name", ""),
                       coordinates=tuple(coords), bodies=tuple(bodies), muscles=tuple(muscles),
                       wrap_objects=tuple(wraps), constraints=tuple(constraints))
