"""Writing a model's values back into a copy of its ``.osim`` file (identification results).

:func:`write_osim` reads the model's source file (``model.extras["osim"].source``), replaces in it
the values an identification may have changed, and writes the copy; everything else (joints,
coordinates, wrap objects, forces other than muscles, comments) is kept as written.  Written from
the model, in OpenSim's own units and frames:

* per ``<Body>``: ``<mass>``, ``<mass_center>`` and the inertia about the centre of mass in the body
  frame as ``<inertia>`` "Ixx Iyy Izz Ixy Ixz Iyz", also in 3.x files, whose ``<inertia_xx>`` ...
  elements it replaces: OpenSim 4.6's format updater rounds those to 6 significant digits (the
  kinetic energy of arm26 then differs by 1e-7 relative), while it reads ``<inertia>`` as written;
* per muscle: the location of every ``PathPoint`` and ``ConditionalPathPoint`` (mbjax keeps points
  in their body's frame; a point on an offset frame is mapped back into that frame), and its
  numeric properties (``max_isometric_force``, ``optimal_fiber_length``, ``tendon_slack_length``,
  ``pennation_angle_at_optimal``, ... and curve properties ``Curve.property``) where the element
  has them; the five properties every muscle class has are added to a muscle that leaves them out.
  A ``MovingPathPoint``'s location is a function of coordinates and is left as written;
* per muscle with a path function (``model.extras["path_functions"]``,
  :mod:`mbjax.muscles.path_functions`): its path element (``<GeometryPath>`` or
  ``<FunctionBasedPath>``) replaced by ``<FunctionBasedPath name="path">`` with its coordinates'
  paths ``/jointset/<joint>/<coordinate>`` and a ``MultivariatePolynomialFunction`` length
  function (:mod:`mbjax.io.osim_path_functions`), which OpenSim 4.6 evaluates as mbjax does; a
  ``<FunctionBasedPath>`` of the file whose muscle has no function in the model is refused;
* with ``markers`` (:class:`mbjax.Markers`, e.g. fitted offsets): each ``<Marker>``'s ``<location>``;
* after :func:`mbjax.identify.scale_model` (``OsimInfo.scaling.factors`` not all 1), what OpenSim's
  ``Model::scale`` changes besides the above, as OpenSim writes it: ``PhysicalOffsetFrame``
  translations (3.x: ``location_in_parent``, ``location``) times their body's factor, ``CustomJoint``
  translation functions wrapped in a ``MultiplierFunction`` (a ``Constant`` scaled, an existing
  multiplier's ``scale`` multiplied) by ``|axis|ᵀ s_parent``, ``EllipsoidJoint`` radii,
  ``MovingPathPoint`` functions of a coordinate, wrap-object translations and dimensions, and, without
  ``markers``, the file's marker locations.

Numbers are written with ``repr`` (the shortest text that reads back as the same double), so
:func:`mbjax.io.load_osim` of the copy gives the model's values bit for bit.  Masses, inertias and
lengths must be finite: a non-finite value is refused, naming the element.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from .osim import _Loader
from .osim_force_set import _MUSCLE_FLAGS, MUSCLE_TYPES
from .osim_path_functions import FUNCTION_BASED_PATH, coordinate_joints, function_elements
from .osim_xml import _function_element, _is_identity_function

_INERTIA_3X = ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz")

#: properties every OpenSim muscle class has: written even where the file leaves them out
_ALWAYS = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal",
           "max_contraction_velocity")


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _set(doc, orig, parent, tag, values, create=True):
    """Set ``parent/<tag>`` (in the tree being written) to ``values``; ``orig`` is the same element in
    the line-numbered parse, for the error message."""
    values = np.asarray(values, float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{doc.where(orig)}: <{tag}> would be {values.tolist()}: not finite")
    el = parent.find(tag)
    if el is None:
        if not create:
            return
        el = ET.SubElement(parent, tag)
    el.text = _fmt(values)


def _comment_keeping_parse(path):
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    return ET.parse(path, parser=parser)


def write_osim(model, path, *, source=None, markers=None) -> str:
    """Write a copy of the model's ``.osim`` source (or ``source``) with the model's masses, centres of
    mass, inertias, muscle path points and muscle parameters (and ``markers``' locations) in place
    (module docstring).  Returns ``path``."""
    info = model.extras.get("osim")
    source = os.fspath(source) if source is not None else (info.source if info is not None else None)
    if source is None:
        raise ValueError("write_osim: the model was not loaded from an .osim file; pass source=")
    loader = _Loader(source, ignore_wrapping=True)
    loader.read_structure()
    doc = loader.doc
    # a second parse keeps the comments; elements are matched by their position in the document
    tree = _comment_keeping_parse(source)
    ours = list(doc.root.iter())
    theirs = [e for e in tree.getroot().iter() if not callable(e.tag)]  # comments have a function as tag
    if [e.tag for e in ours] != [e.tag for e in theirs]:
        raise RuntimeError(f"{source}: the two parses of the file disagree")
    twin = dict(zip(ours, theirs))

    names = set(model.body_names)
    mass, com, inertia = (np.asarray(a, float) for a in (model.mass, model.com, model.inertia))
    for name, el in loader.bodies.items():
        if name not in names:
            continue  # ground in 3.x files
        i = model.body_index(name)
        out = twin[el]
        I = inertia[i]
        six = [I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]]
        if mass[i] < 0:  # load_osim refuses it (OpenSim's Body requires mass >= 0): never write it
            raise ValueError(f"{doc.where(el)}: body {name!r} has mass {mass[i]} < 0 in the model; not written")
        _set(doc, el, out, "mass", [mass[i]])
        _set(doc, el, out, "mass_center", com[i])
        for tag in _INERTIA_3X:  # see the module docstring: <inertia> keeps every digit
            for old in out.findall(tag):
                out.remove(old)
        _set(doc, el, out, "inertia", six)

    factors = _factors(model)
    if factors:
        _write_scaled_frames(loader, twin, factors)
    paths = model.extras.get("muscles")
    if paths is not None:
        functions = function_elements(model, coordinate_joints(loader.model), lambda m: "path",
                                      f"write_osim {source}")
        _write_muscles(loader, twin, paths, factors, functions)
    if markers is not None:
        _write_markers(loader, twin, markers, model)
    elif factors:
        _scale_file_markers(loader, twin, factors)
    tree.write(os.fspath(path), encoding="UTF-8", xml_declaration=True)
    return os.fspath(path)


def _write_muscles(loader, twin, paths, factors=None, functions=None):
    """Muscle properties and path points; the path element of a muscle in ``functions``
    (``{muscle: <FunctionBasedPath>}``) replaced by that element."""
    doc = loader.doc
    fset = loader.model.find("ForceSet")
    objects = fset.find("objects") if fset is not None else None
    rows = {n: m for m, n in enumerate(paths.names)}
    location = np.asarray(paths.location, float)
    params = {k: np.asarray(v, float) for k, v in paths.parameters.items()}
    functions = dict(functions or {})
    depth = _depth(loader.doc.root, objects) + 2 if functions and objects is not None else 0  # of a path element
    for f in (objects if objects is not None else []):
        m = rows.get(f.get("name"))
        path_el = f.find("GeometryPath")
        path_el = path_el if path_el is not None else f.find(FUNCTION_BASED_PATH)
        if m is None or path_el is None:
            continue
        out = twin[f]
        if f.tag in MUSCLE_TYPES:
            for key, values in params.items():
                value = values[m]
                if "." in key:
                    curve, prop = key.split(".", 1)
                    holder = out.find(curve)
                    if holder is not None and holder.find(prop) is not None:
                        _set(doc, f.find(curve), holder, prop, [value], create=False)
                elif key in _MUSCLE_FLAGS:
                    el = out.find(key)
                    if el is not None:
                        el.text = "true" if value else "false"
                elif out.find(key) is not None or (key in _ALWAYS and f.tag.endswith("Muscle")):
                    _set(doc, f, out, key, [value])
        if f.get("name") in functions:
            _replace_path(twin, f, path_el, functions.pop(f.get("name")), depth)
            continue
        if path_el.tag == FUNCTION_BASED_PATH:
            raise ValueError(f"{doc.where(path_el)}: muscle {f.get('name')!r} has a FunctionBasedPath in the file but "
                             "no path function in the model (and no path points): its path cannot be written")
        slots = {n: k for k, n in enumerate(paths.point_names[m]) if n}
        pset = f.find("GeometryPath").find("PathPointSet").find("objects")
        for p in pset:
            if p.tag == "MovingPathPoint":
                if factors:  # MovingPathPoint::extendScale: the functions of a coordinate
                    body = loader._resolve(p, (p.findtext("socket_parent_frame") or p.findtext("body") or "").strip())[0]
                    for c in "xyz":
                        if (p.findtext(f"socket_{c}_coordinate") or p.findtext(f"{c}_coordinate") or "").strip():
                            _multiply_function(doc, twin, p.find(f"{c}_location"), factors.get(body, 1.0))
                continue
            if p.tag not in ("PathPoint", "ConditionalPathPoint"):
                continue
            k = slots.get(p.get("name") or "")
            if k is None:
                continue  # never active (left out by the loader) or unnamed
            ref = (p.findtext("socket_parent_frame") or p.findtext("body") or "").strip()
            body, x_bf = loader._resolve(p, ref)
            loc_frame = x_bf[:3, :3].T @ (location[m, k] - x_bf[:3, 3])
            _set(doc, p, twin[p], "location", loc_frame)
    if functions:
        raise ValueError(f"{doc.path}: the model has path functions for {sorted(functions)}, which are not path "
                         "forces of the file's ForceSet")


def _depth(root, el) -> int:
    """How deep ``el`` lies below ``root`` (0: the root)."""
    parents = {c: p for p in root.iter() for c in p}
    depth = 0
    while el in parents:
        el, depth = parents[el], depth + 1
    return depth


def _replace_path(twin, force, path_el, new, depth):
    """Put ``new`` where the force's path element is (same place, indented for ``depth``)."""
    out, old = twin[force], twin[path_el]
    ET.indent(new, space="\t", level=depth)
    new.tail = old.tail
    k = list(out).index(old)
    out.remove(old)
    out.insert(k, new)


def _write_markers(loader, twin, markers, model):
    """Each marker's location; markers the file lacks are added (on their body, not fixed), as the
    ``ScaleTool`` replaces a model's markers by its ``marker_set_file``."""
    doc = loader.doc
    mset = loader.model.find("MarkerSet")
    objects = mset.find("objects") if mset is not None else None
    index = {n: k for k, n in enumerate(markers.names)}
    offset = np.asarray(markers.offset, float)
    seen = set()
    for el in (objects if objects is not None else []):
        k = index.get(el.get("name"))
        if k is None:
            continue
        seen.add(k)
        ref = (el.findtext("socket_parent_frame") or el.findtext("body") or "").strip()
        body, x_bf = loader._resolve(el, ref)
        want = model.body_names[markers.body[k]] if markers.body[k] >= 0 else "ground"
        if body != want:
            raise ValueError(f"{doc.where(el)}: marker is on {body!r} in the file but on {want!r} in markers")
        _set(doc, el, twin[el], "location", x_bf[:3, :3].T @ (offset[k] - x_bf[:3, 3]))
    new = [k for k in range(len(markers.names)) if k not in seen]
    if not new:
        return
    out_model = twin[loader.model]
    out_set = out_model.find("MarkerSet")
    if out_set is None:
        out_set = ET.SubElement(out_model, "MarkerSet", {"name": "markerset"})
    holder = out_set.find("objects")
    if holder is None:
        holder = ET.SubElement(out_set, "objects")
    for k in new:
        b = markers.body[k]
        body = model.body_names[b] if b >= 0 else "ground"
        if b >= 0 and "/" in body:
            raise ValueError(f"marker {markers.names[k]!r} is on the chain body {body!r}, which the file does not have")
        el = ET.SubElement(holder, "Marker", {"name": markers.names[k]})
        if loader.version >= 30000:
            ET.SubElement(el, "socket_parent_frame").text = "/ground" if b < 0 else f"/bodyset/{body}"
        else:
            ET.SubElement(el, "body").text = body
        loc = offset[k]
        if not np.all(np.isfinite(loc)):
            raise ValueError(f"marker {markers.names[k]!r}: location {loc.tolist()} is not finite")
        ET.SubElement(el, "location").text = _fmt(loc)
        ET.SubElement(el, "fixed").text = "false"

def _factors(model) -> dict:
    """Body name -> the scale factor applied to the model (empty when nothing was scaled)."""
    info = model.extras.get("osim")
    sc = getattr(info, "scaling", None)
    if sc is None:
        return {}
    f = np.asarray(sc.factors, float)
    if np.all(f == 1.0):
        return {}
    if not np.all(np.isfinite(f) & (f > 0)):
        raise ValueError(f"write_osim: scale factors must be positive and finite, got {f.tolist()}")
    return dict(zip(sc.segments, f.tolist()))


def _scale_text(doc, orig, out, tag, factor):
    """``out/<tag>`` (numbers) times ``factor``, if present."""
    if out is None or out.find(tag) is None or factor == 1.0:
        return
    values = np.asarray([float(v) for v in out.find(tag).text.split()], float)
    _set(doc, orig, out, tag, values * factor, create=False)


def _multiply_function(doc, twin, holder, factor):
    """The function inside ``holder`` times ``factor``, as OpenSim's scaling writes it: a ``Constant``'s
    value, a ``MultiplierFunction``'s scale, else the function wrapped in a ``MultiplierFunction``."""
    if holder is None or factor == 1.0:
        return
    fel = _function_element(doc, holder)
    out = twin[fel]
    if fel.tag == "Constant":
        _scale_text(doc, fel, out, "value", factor)
        return
    if fel.tag == "MultiplierFunction":
        if out.find("scale") is None:
            ET.SubElement(out, "scale").text = "1.0"
        _scale_text(doc, fel, out, "scale", factor)
        return
    parent = next(e for e in twin[holder].iter() if out in list(e))
    k = list(parent).index(out)
    parent.remove(out)
    mf = ET.Element("MultiplierFunction", {"name": out.get("name")} if out.get("name") else {})
    mf.text, mf.tail = out.text, out.tail
    inner = ET.SubElement(mf, "function")
    inner.append(out)
    ET.SubElement(mf, "scale").text = repr(float(factor))
    parent.insert(k, mf)


def _write_scaled_frames(loader, twin, factors):
    """Joint frames, translation functions, ellipsoid radii and wrap objects of a scaled model."""
    doc, model = loader.doc, loader.model
    for fr in model.iter("PhysicalOffsetFrame"):  # OffsetFrame::extendScale: the base body's factor
        parent = (fr.findtext("socket_parent") or "").strip()
        owner = next((o for o in model.iter() if fr in list(o.find("frames") if o.find("frames") is not None else [])
                      or fr in list(o.find("components") if o.find("components") is not None else [])), None)
        body = loader._resolve(fr, parent, owner)[0]
        _scale_text(doc, fr, twin[fr], "translation", factors.get(body, 1.0))
    for j, parent, child, _, _ in loader.joints:
        s_parent = factors.get(parent, 1.0)
        if loader.version < 30000:  # 3.x joint frames
            _scale_text(doc, j, twin[j], "location_in_parent", s_parent)
            _scale_text(doc, j, twin[j], "location", factors.get(child, 1.0))
        if j.tag == "EllipsoidJoint":
            _scale_text(doc, j, twin[j], "radii_x_y_z", s_parent)
        st = j.find("SpatialTransform")
        if j.tag != "CustomJoint" or st is None:
            continue
        for ta in st:
            if ta.tag != "TransformAxis" or not (ta.get("name") or "").startswith("translation"):
                continue
            if not any(c.tag not in ("coordinates", "axis") for c in ta) or _is_identity_function(doc, ta):
                continue  # no function (Constant 0) or a degree of freedom: SpatialTransform::scale skips it
            axis = np.asarray([float(v) for v in ta.findtext("axis").split()], float)
            _multiply_function(doc, twin, ta, float(np.abs(axis).sum()) * s_parent)
    for wset in model.iter("WrapObjectSet"):
        holder = wset.find("objects")
        for el in (holder if holder is not None else []):
            owner = next(o for o in model.iter() if wset in list(o))
            if owner.tag == "Ground" or (owner.tag == "Body" and owner.get("name") == "ground"):
                continue
            ref = owner.get("name") if owner.tag == "Body" else owner.get("name")
            body = loader._resolve(el, ref, owner)[0] if owner.tag != "Body" else ref
            f = factors.get(body, 1.0)
            for tag in ("translation", "radius", "length", "dimensions", "inner_radius", "outer_radius"):
                _scale_text(doc, el, twin[el], tag, f)


def _scale_file_markers(loader, twin, factors):
    doc = loader.doc
    mset = loader.model.find("MarkerSet")
    objects = mset.find("objects") if mset is not None else None
    for el in (objects if objects is not None else []):
        ref = (el.findtext("socket_parent_frame") or el.findtext("body") or "").strip()
        body = loader._resolve(el, ref)[0]
        _scale_text(doc, el, twin[el], "location", factors.get(body, 1.0))
