"""OpenSim 4's coordinate motion types (``Coordinate::getMotionType``) from an ``.osim`` file.

OpenSim 4 writes no ``<motion_type>`` and ignores the 3.x one: a joint sets its coordinates' types.
``CustomJoint::constructCoordinates``: for each of its coordinates, over the ``SpatialTransform`` axes in
order (``rotation1..3`` then ``translation1..3``), an axis using the coordinate through a
``LinearFunction`` of slope exactly ±1 makes it rotational / translational (a later such axis wins);
any other function makes it coupled unless already typed; unused: undefined.  ``PinJoint``,
``UniversalJoint``, ``GimbalJoint``, ``BallJoint``, ``EllipsoidJoint`` and ``ScapulothoracicJoint``
coordinates are rotational, ``SliderJoint`` translational, ``PlanarJoint`` (rz, tx, ty) and
``FreeJoint`` (3 rotations, 3 translations) by position.  ``SimbodyEngine::convertDegreesToRadians``
converts only rotational coordinates, so :func:`mbjax.io.coordinates_from_table` uses these types.
"""

from __future__ import annotations

import functools
import os

from .osim_xml import _Doc, _coordinate_elements, _function_element, _has_function, _text

_FIXED = {"PinJoint": "R", "SliderJoint": "T", "UniversalJoint": "RR", "GimbalJoint": "RRR", "BallJoint": "RRR",
          "EllipsoidJoint": "RRR", "ScapulothoracicJoint": "RRRR", "PlanarJoint": "RTT", "FreeJoint": "RRRTTT"}
_NAMES = {"R": "rotational", "T": "translational"}
_AXES = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")


def _joints(root):
    model = root.find("Model")
    js = model.find("JointSet") if model is not None else None
    if js is not None and js.find("objects") is not None:  # 4.x
        yield from js.find("objects")
    bs = model.find("BodySet") if model is not None else None
    for b in (bs.find("objects") if bs is not None and bs.find("objects") is not None else []):
        holder = b.find("Joint")  # 3.x: joints inside bodies
        if holder is not None:
            yield from holder


def motion_types(path) -> dict[str, str]:
    """Coordinate name -> ``"rotational"``, ``"translational"``, ``"coupled"`` or ``"undefined"``.

    Parsed once per file version (cached on the path and its modification time and size): the
    tools read it for every coordinates table they convert."""
    st = os.stat(path)
    return dict(_motion_types_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=32)
def _motion_types_cached(path, mtime_ns, size) -> dict[str, str]:
    doc = _Doc(path)
    out: dict[str, str] = {}
    for j in _joints(doc.root):
        coords = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag in _FIXED:
            for c, t in zip(coords, _FIXED[j.tag]):
                out[c] = _NAMES[t]
            continue
        st = j.find("SpatialTransform")
        if st is None:
            continue
        axes = {ta.get("name"): ta for ta in st if ta.tag == "TransformAxis"}
        for c in coords:
            mt = "undefined"
            for k, name in enumerate(_AXES):
                ta = axes.get(name)
                if ta is None or c not in (_text(ta, "coordinates", "") or "").split() or not _has_function(ta):
                    continue
                try:
                    f = _function_element(doc, ta)
                except NotImplementedError:
                    f = None
                slope = None
                if f is not None and f.tag == "LinearFunction":
                    coef = (_text(f, "coefficients", "") or "").split()
                    slope = float(coef[0]) if coef else 1.0  # OpenSim's default coefficients: 1 0
                if slope in (1.0, -1.0):
                    mt = "rotational" if k < 3 else "translational"
                elif mt == "undefined":
                    mt = "coupled"
            out[c] = mt
    return out


def coordinate_order(path) -> tuple[str, ...]:
    """Every coordinate in OpenSim 4's ``CoordinateSet`` order (what its IK tool writes): joints in
    file order, a ``CustomJoint``'s coordinates in order of first use by its axes ``rotation1..3``,
    ``translation1..3`` (``CustomJoint::constructCoordinates`` reorders them so), the ones no axis
    uses after those; other joints' coordinates as listed."""
    st = os.stat(path)
    return _coordinate_order_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _coordinate_order_cached(path, mtime_ns, size) -> tuple[str, ...]:
    doc = _Doc(path)
    out: list[str] = []
    for j in _joints(doc.root):
        coords = [c.get("name") for c in _coordinate_elements(j)]
        st = j.find("SpatialTransform") if j.tag not in _FIXED else None
        if st is not None:
            axes = {ta.get("name"): ta for ta in st if ta.tag == "TransformAxis"}
            used = []
            for name in _AXES:
                ta = axes.get(name)
                for c in ((_text(ta, "coordinates", "") or "").split() if ta is not None else ()):
                    if c in coords and c not in used:
                        used.append(c)
            coords = used + [c for c in coords if c not in used]
        out.extend(coords)
    return tuple(out)


def coordinate_joints(path) -> dict[str, str]:
    """Coordinate name -> the name of the joint that holds it (every joint of the file)."""
    st = os.stat(path)
    return dict(_coordinate_joints_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=32)
def _coordinate_joints_cached(path, mtime_ns, size) -> tuple[tuple[str, str], ...]:
    doc = _Doc(path)
    return tuple((c.get("name"), j.get("name")) for j in _joints(doc.root) for c in _coordinate_elements(j))


#: joints whose Simbody mobilizer (OpenSim's ``useEulerAngles``) takes the angular velocity of the child
#: frame in the parent frame, ω_F, as the speeds of its first three coordinates (X-Y-Z body-fixed angles)
ANGULAR_VELOCITY_JOINTS = ("BallJoint", "FreeJoint", "EllipsoidJoint")


def angular_velocity_joints(path) -> tuple[tuple[str, str, tuple[str, str, str]], ...]:
    """``(joint class, joint name, (c0, c1, c2))`` of every joint of :data:`ANGULAR_VELOCITY_JOINTS`:
    its rotation coordinates, whose generalized speeds are u = ω_F = E(c0, c1) ċ, not ċ."""
    st = os.stat(path)
    return _angular_velocity_joints_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _angular_velocity_joints_cached(path, mtime_ns, size):
    doc = _Doc(path)
    out = []
    for j in _joints(doc.root):
        names = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag in ANGULAR_VELOCITY_JOINTS and len(names) >= 3:
            out.append((j.tag, j.get("name"), tuple(names[:3])))
    return tuple(out)
