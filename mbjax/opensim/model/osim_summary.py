"""What an OpenSim ``.osim`` file declares, read from its XML alone (``mbjax info MODEL``).

:func:`summarize_osim` lists the coordinates (joint, motion type, unit, range, default, clamped,
locked, coupled), the bodies (mass), the muscles (class, wrap objects on their path) and the wrap
objects (class, body) without building a :class:`~mbjax.Model`, so it also describes files (or
parts of files) that :func:`mbjax.io.load_osim` refuses or simplifies.

Motion type: OpenSim 4's (``Coordinate::getMotionType``, derived from the joints; a 3.x ``<motion_type>``
element is ignored, as OpenSim 4 ignores it), the one rule the loader and the tools use
(:func:`mbjax.opensim.model.osim_motion.motion_types`): ``"rotational"``, ``"translational"``,
``"coupled"`` (moved through a function other than a unit-slope ``LinearFunction``: OpenSim converts
its values from degrees neither in data files nor in setups) or ``"undefined"``.  Unit: rad where a
``rotation1..3`` axis (or a rotational joint) moves the coordinate, m where only translations do
(OpenSim's internal units), whatever the motion type.  For a file that rule cannot read, the
3.x element when present, else the axes.  A missing ``<range>`` is OpenSim's default ``[-10, 10]``.

:func:`summarize_osim` also makes the cheap checks of :func:`mbjax.io.load_osim` (document version,
duplicate names, a second set of a name, masses, coordinate ranges and flags, joint and force
classes, joints naming no body or frame of the file, spline knots that do not increase) and warns, naming
file, line and element, when ``load_osim`` would refuse the file (``OsimSummary.refusals``).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
import xml.etree.ElementTree as ET
from pyexpat import ExpatError, ParserCreate

from .osim_classes import JOINT_TYPES, LOADER_FORCES
from .osim_older_documents import IS_DISABLED_VERSION, JOINTSET_VERSION, rename_sockets

__all__ = ["CoordinateSummary", "BodySummary", "MuscleSummary", "WrapObjectSummary", "ConstraintSummary",
           "OsimSummary", "summarize_osim"]

_ROTATIONAL_JOINTS = ("PinJoint", "UniversalJoint", "BallJoint", "GimbalJoint", "EllipsoidJoint")
_BY_POSITION = {"PlanarJoint": ("rotational", "translational", "translational"),
                "FreeJoint": ("rotational",) * 3 + ("translational",) * 3,
                "SliderJoint": ("translational",)}
UNITS = {"rotational": "rad", "translational": "m"}
#: the sets whose objects load_osim requires to have distinct names
_NAMED_SETS = ("BodySet", "JointSet", "ForceSet", "MarkerSet", "ConstraintSet", "ContactGeometrySet",
               "ControllerSet", "ProbeSet", "ComponentSet")


@dataclasses.dataclass(frozen=True)
class CoordinateSummary:
    name: str
    joint: str
    motion_type: str  # OpenSim 4's: "rotational", "translational", "coupled", "undefined" (or "unknown")
    range: tuple[float, float]
    default: float
    clamped: bool
    locked: bool
    coupled_to: tuple[str, ...] | None  # independent coordinates of its CoordinateCouplerConstraint
    #: what moves it: "rotational" (a rotation axis or rotational joint), "translational" or "unknown"
    moves: str = "unknown"

    @property
    def unit(self) -> str:
        return UNITS.get(self.moves if self.moves in UNITS else self.motion_type, "?")


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
    #: why :func:`mbjax.io.load_osim` refuses the file ("file:line: <element>: why"), empty if it
    #: passes the cheap checks
    refusals: tuple[str, ...] = ()

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


def _axes_kind(coord, joint) -> str:
    """Rotational where a rotation axis or a rotational joint moves the coordinate, else translational."""
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


def _parse(path, lines=None):
    """The XML tree without namespace processing (as load_osim reads it): OpenSim writes tags such as
    ``<HuntCrossleyForce::ContactParametersSet>``, which a namespace-aware parser refuses.
    ``lines`` (a dict), when given, gets each element's line."""
    builder = ET.TreeBuilder()
    parser = ParserCreate()

    def start(tag, attrs):
        el = builder.start(tag, attrs)
        if lines is not None:
            lines[el] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    with open(path, "rb") as fh:
        parser.ParseFile(fh)
    return builder.close()


#: a joint's sockets naming its parent and child frames (or bodies, in older documents)
_JOINT_SOCKETS = ("socket_parent_frame", "socket_child_frame", "socket_parent_body", "socket_child_body")
#: the knotted functions whose knots must be strictly increasing (``mbjax.maps.piecewise.check_knots``)
_KNOTTED = ("SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction", "GCVSpline")


def second_element(el, first, lines) -> str:
    """Why a second ``<Model>`` child of the same name as ``first`` is not read (OpenSim reads the
    first only, ``AbstractProperty::readFromXMLParentElement``), naming the objects it holds."""
    objects = el.find("objects")
    held = [f"{o.tag} {o.get('name')!r}" for o in (objects if objects is not None else []) if isinstance(o.tag, str)]
    return (f"a second <{el.tag}> (the first is at line {lines.get(first, '?')}): OpenSim reads only the first "
            "and ignores this one" + (f" and its {len(held)} object(s) ({', '.join(held)})" if held else "")
            + (f"; move its objects into the first <{el.tag}>" if el.tag.endswith("Set") else ""))


def _frame_refusals(where, root, model, lines, defaults) -> list[str]:
    """Joints naming a parent or child frame (or body) that no body or offset frame of the file has.

    Conservative: only the last name of a socket path is looked up, so a wrong path to an existing
    name is left to :func:`mbjax.io.load_osim`."""
    version = root.get("Version", "").strip()
    version = int(version) if version.isdigit() else 40000
    rename_sockets(_Tree(root, lines), version)
    ground = model.find("Ground")
    names = {"ground", "..", ""} | ({ground.get("name")} if ground is not None else set())
    for tag in ("Body", "PhysicalOffsetFrame"):
        names |= {el.get("name") for el in model.iter(tag) if el not in defaults}
    out = []
    for j in model.iter():
        if j in defaults or j.tag not in JOINT_TYPES:
            continue
        sockets = _JOINT_SOCKETS if version >= JOINTSET_VERSION else ("parent_body",)
        for socket in sockets:
            ref = j.findtext(socket)
            if ref is not None and ref.strip().rstrip("/").split("/")[-1] not in names:
                what = "body" if socket.endswith("body") else "frame"
                out.append(f"{where(j)}: <{socket}> names {ref.strip()!r}, which is no {what} of the file "
                           "(check the spelling, or add the body)")
    return out


def _knot_refusals(where, model, defaults) -> list[str]:
    """Spline knots that are not strictly increasing, or x and y of different lengths, in the
    joints, constraints and muscle paths that :func:`mbjax.io.load_osim` reads."""
    holders = [model.find("JointSet"), model.find("BodySet"), model.find("ConstraintSet")]
    forces = model.find("ForceSet/objects")
    holders += [f.find("GeometryPath") for f in (forces if forces is not None else ())]
    out = []
    for holder in holders:
        for fn in (holder.iter() if holder is not None else ()):
            if fn.tag not in _KNOTTED or fn in defaults:
                continue
            x, y = _floats(fn, "x", None), _floats(fn, "y", None)
            if x is None or y is None:
                continue
            if len(x) != len(y):
                out.append(f"{where(fn)}: <x> has {len(x)} values but <y> has {len(y)}")
            elif any(b <= a for a, b in zip(x, x[1:])):
                k = next(i for i in range(1, len(x)) if x[i] <= x[i - 1])
                out.append(f"{where(fn)}: knots <x> must be strictly increasing, got x[{k - 1}] = {x[k - 1]:g} "
                           f"then x[{k}] = {x[k]:g}")
    return out


@dataclasses.dataclass
class _Tree:
    """The parsed file as :func:`~mbjax.opensim.model.osim_older_documents.rename_sockets` reads it."""
    root: ET.Element
    lines: dict


def _refusals(path, root, model, lines, parent) -> list[str]:
    """What :func:`mbjax.io.load_osim` refuses in the file, by its cheap checks (XML only)."""
    out = []

    def where(el):
        name = el.get("name")
        return f"{path}:{lines.get(el, '?')}: <{el.tag}{' name=' + repr(name) if name else ''}>"

    version = root.get("Version")
    if version is None or not version.strip().isdigit():
        out.append(f"{where(root)}: the Version attribute is {'missing' if version is None else repr(version)} "
                   "(OpenSim needs an integer version to read the file)")
    for set_name in _NAMED_SETS:
        for holder in model.findall(set_name):
            seen = {}
            for el in holder.find("objects") if holder.find("objects") is not None else ():
                name = el.get("name")
                if name is not None and name in seen:
                    out.append(f"{where(el)}: duplicate name {name!r} in the {set_name} (also line "
                               f"{lines.get(seen[name], '?')})")
                seen.setdefault(name, el)
    first = {}
    for el in model:
        if isinstance(el.tag, str) and el.tag.endswith("Set") and el.tag in first:
            out.append(f"{where(el)}: {second_element(el, first[el.tag], lines)}")
        first.setdefault(el.tag, el)
    defaults = {el for d in model.iter("defaults") for el in d.iter()}  # class defaults, not components
    out.extend(_frame_refusals(where, root, model, lines, defaults))
    out.extend(_knot_refusals(where, model, defaults))
    seen = {}
    for c in model.iter("Coordinate"):
        if c in defaults:
            continue
        name = c.get("name")
        if name in seen:
            out.append(f"{where(c)}: duplicate coordinate {name!r} (also line {lines.get(seen[name], '?')})")
        seen.setdefault(name, c)
        for flag in ("clamped", "locked", "prescribed"):
            text = c.findtext(flag)
            if text is not None and text.strip() and text.strip().lower() not in ("true", "false", "1", "0"):
                out.append(f"{where(c)}: <{flag}> must be true or false, got {text.strip()!r}")
        rng = _floats(c, "range", [-10.0, 10.0])
        if len(rng) == 2 and not rng[0] <= rng[1]:
            out.append(f"{where(c)}: <range> {rng[0]:g} {rng[1]:g} has max < min")
    for b in model.iter("Body"):
        text = (b.findtext("mass") or "").strip()
        if not text or b in defaults:
            continue
        try:
            mass = float(text)
        except ValueError:
            out.append(f"{where(b)}: <mass> must be a number, got {text!r}")
            continue
        if not (math.isfinite(mass) and mass >= 0):
            out.append(f"{where(b)}: mass must be finite and >= 0, got {text}")
    for j in model.iter():
        if j in defaults:
            continue
        if j.tag.endswith("Joint") and j.tag != "Joint" and j.tag not in JOINT_TYPES \
                and parent.get(j) is not None and parent[j].tag in ("objects", "Joint"):
            out.append(f"{where(j)}: unsupported joint type (load_osim reads {', '.join(JOINT_TYPES)})")
    forces = model.find("ForceSet/objects")
    for f in forces if forces is not None else ():
        if f.tag not in LOADER_FORCES:
            out.append(f"{where(f)}: unsupported force (load_osim refuses it unless given "
                       f"ignore_forces=({f.tag!r},))")
    return out


def summarize_osim(path) -> OsimSummary:
    """The coordinates, bodies, muscles and wrap objects an ``.osim`` file declares (XML only)."""
    path = str(path)
    lines = {}
    try:
        root = _parse(path, lines)
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

    from .osim_motion import motion_types  # here: its XML reader imports JAX, which `mbjax info` must not

    try:
        opensim_types = motion_types(path)
    except Exception:  # a file the loader's reader refuses: the 3.x element, else the axes
        opensim_types = {}
    couplers = {}
    for con in model.iter("CoordinateCouplerConstraint"):
        couplers[_text(con, "dependent_coordinate_name")] = tuple(_text(con, "independent_coordinate_names").split())
    coords = []
    for c in model.iter("Coordinate"):
        joint = owner(c, lambda e: e.tag.endswith("Joint") and e.tag != "Joint")
        moves = _axes_kind(c, joint)
        rng = _floats(c, "range", [-10.0, 10.0])
        coords.append(CoordinateSummary(
            name=c.get("name"),
            joint=joint.get("name") if joint is not None else "?",
            motion_type=opensim_types.get(c.get("name")) or _text(c, "motion_type").lower() or moves,
            moves=moves,
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
        legacy = not root.get("Version", "").strip().isdigit() or int(root.get("Version")) < IS_DISABLED_VERSION
        enforced = (_text(con, "isEnforced", "true").lower() in ("true", "1")
                    and not (legacy and _bool(con, "isDisabled")))
        if not enforced:
            how = "not enforced: changes nothing"
        elif con.tag == "CoordinateCouplerConstraint":
            how = f"eliminated: {_text(con, 'dependent_coordinate_name')} is a function of " + \
                  ", ".join(_text(con, "independent_coordinate_names").split())
        elif con.tag == "PointOnLineConstraint":
            follower = _text(con, "socket_follower_body") or _text(con, "follower_body")
            line = _text(con, "socket_line_body") or _text(con, "line_body")
            how = (f"eliminated: a point of {follower} on a line of {line}, 2 coordinates made dependent "
                   "(chosen at load by pivoted QR: model.osim.eliminated)")
        else:
            how = "not modelled: refused by load_osim unless in ignore_constraints"
        constraints.append(ConstraintSummary(con.get("name") or "", con.tag, enforced, how))
    refusals = _refusals(path, root, model, lines, parent)
    if refusals:
        warnings.warn(f"{path}: load_osim refuses this file ({len(refusals)} problem(s)): " + "; ".join(refusals),
                      stacklevel=2)
    return OsimSummary(path=path, version=root.get("Version", "?"), model_name=model.get("name", ""),
                       coordinates=tuple(coords), bodies=tuple(bodies), muscles=tuple(muscles),
                       wrap_objects=tuple(wraps), constraints=tuple(constraints), refusals=tuple(refusals))
