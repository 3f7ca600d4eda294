"""Writing a model's values back into a copy of its ``.osim`` file (identification results).

:func:`write_osim` reads the model's source file (``model.osim.source``), replaces in it
the values an identification may have changed, and writes the copy; everything else (joints,
other forces, comments, and coordinates and wrap objects unless changed) is kept as written.  Written from
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
* per muscle with a path function (``model.path_functions``,
  :mod:`mbjax.muscles.path_functions`): its path element (``<GeometryPath>`` or
  ``<FunctionBasedPath>``) replaced by ``<FunctionBasedPath name="path">`` with its coordinates'
  paths ``/jointset/<joint>/<coordinate>`` and a ``MultivariatePolynomialFunction`` length
  function (:mod:`mbjax.opensim.model.osim_path_functions`), which OpenSim 4.6 evaluates as mbjax does; a
  ``<FunctionBasedPath>`` of the file whose muscle has no function in the model is refused;
* with ``markers`` (:class:`mbjax.Markers`, e.g. fitted offsets): each ``<Marker>``'s ``<location>``;
* after :func:`mbjax.analysis.identify.scale_model` (``OsimInfo.scaling.factors`` not all 1), what OpenSim's
  ``Model::scale`` changes besides the above, as OpenSim writes it: ``PhysicalOffsetFrame``
  translations (3.x: ``location_in_parent``, ``location``) times their body's factor, ``CustomJoint``
  translation functions wrapped in a ``MultiplierFunction`` (a ``Constant`` scaled, an existing
  multiplier's ``scale`` multiplied) by ``|axis|ᵀ s_parent``, ``EllipsoidJoint`` radii,
  ``MovingPathPoint`` functions of a coordinate, wrap-object translations and dimensions, and, without
  ``markers``, the file's marker locations.

Where the model differs from its source as loaded (values changed with ``eqx.tree_at`` or a fit
step), also: the model's ``<gravity>``; each ``<Coordinate>``'s ``<default_value>`` and ``<range>``
(``OsimInfo.default``, ``lower``, ``upper``); each wrap object's dimensions (``radius``, ``length``,
``dimensions``, ``inner_radius``, ``outer_radius``), ``translation`` and ``xyz_body_rotation``; a
muscle property the element leaves out.  Other changed values the file cannot take from this writer
(joint offsets, axes and maps, conditional and moving path points, the massless steps of a joint,
force elements) are named in a ``UserWarning``: the copy keeps the file's values there
(:mod:`mbjax.opensim.model.osim_write_checks`).

Numbers are written with ``repr`` (the shortest text that reads back as the same double), so
:func:`mbjax.io.load_osim` of the copy gives the model's values bit for bit.  What the loader would
refuse in the copy is refused before anything is written, naming the element, muscle or wrap object
and the value: non-finite masses, centres of mass, inertias, lengths and ranges, a negative mass, an
asymmetric inertia, muscle parameters outside :mod:`mbjax.muscles.parameter_rules`, bad wrap
dimensions.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
import xml.etree.ElementTree as ET
from xml.parsers.expat import ParserCreate

import numpy as np

from .osim import _Loader, load_osim
from .osim_couplers import _SQRT_EPS
from .osim_force_set import _MUSCLE_FLAGS, MUSCLE_TYPES
from .osim_path_functions import FUNCTION_BASED_PATH, coordinate_joints, function_elements
from .osim_write_checks import refuse_unloadable, unwritten_changes
from .osim_write_scaling import _factors, _scale_file_markers, _write_scaled_frames
from .osim_write_values import _fmt, _multiply_function, _set
from .osim_xml import _floats
from ...io.arguments import require_folder

_INERTIA_3X = ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz")

#: properties every OpenSim muscle class has: written even where the file leaves them out
_ALWAYS = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal",
           "max_contraction_velocity")


def _comment_keeping_parse(path):
    """The file as an ElementTree with its comments, parsed as :class:`~mbjax.opensim.model.osim_xml._Doc` parses
    it (no namespaces: OpenSim tags such as ``HuntCrossleyForce::ContactParametersSet`` have colons)."""
    builder = ET.TreeBuilder(insert_comments=True)
    parser = ParserCreate()
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.CommentHandler = builder.comment
    with open(path, "rb") as fh:
        parser.ParseFile(fh)
    return ET.ElementTree(builder.close())


def write_osim(model, path, *, source=None, markers=None) -> str:
    """Write a copy of the model's ``.osim`` source (or ``source``) with the model's masses, centres of
    mass, inertias, muscle path points and muscle parameters (and ``markers``' locations) in place
    (module docstring).  Returns ``path``."""
    from ..._model import Model
    from ...markers import Markers

    if not isinstance(model, Model):
        raise TypeError(f"write_osim: model must be an mbjax.Model (e.g. from load_osim), got {type(model).__name__}")
    if markers is not None:
        if not isinstance(markers, Markers):
            raise TypeError(f"write_osim: markers must be mbjax.Markers (e.g. from load_markers) or None, got "
                            f"{type(markers).__name__}")
        if not markers.names:
            warnings.warn("write_osim: markers holds no markers (was its file's MarkerSet empty, or made for another "
                          "model?); the file's markers are written unchanged", stacklevel=2)
        wrong = [(n, b) for n, b in zip(markers.names, markers.body) if not -1 <= b < model.n_bodies]
        if wrong:
            raise ValueError(f"write_osim: markers {wrong} (name, body index) are on no body of the model, which has "
                             f"{model.n_bodies} (-1: ground); were they made for another model?")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"write_osim: path must be a file name (str or os.PathLike), got {type(path).__name__}")
    require_folder(path, "write_osim")
    info = model.osim
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

    paths = model.muscles
    factors = _factors(model)
    reference = _reference(model, source, paths)
    wraps = _wrap_plan(loader, paths, factors)
    refuse_unloadable(paths, [make for _, make in wraps])

    names = set(model.body_names)
    extra = [n for n in model.body_names if "/" not in n and n not in loader.bodies]  # "/": steps of a joint
    missing = [n for n in loader.bodies if n not in names]
    if extra or missing:
        raise ValueError(f"write_osim: the model does not match {source}: bodies {extra} are not in the file, "
                         f"bodies {missing} of the file are not in the model; pass the model's own source "
                         "(source=) or a model loaded from this file")
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
        if np.abs(I - I.T).max() > 100 * np.finfo(float).eps * np.abs(I).max():  # the file holds 6 numbers
            raise ValueError(f"{doc.where(el)}: body {name!r} has an inertia that is not symmetric in the model, "
                             f"{I.tolist()}; not written (make it symmetric, e.g. (I + I.T) / 2)")
        _set(doc, el, out, "mass", [mass[i]])
        _set(doc, el, out, "mass_center", com[i])
        for tag in _INERTIA_3X:  # see the module docstring: <inertia> keeps every digit
            for old in out.findall(tag):
                out.remove(old)
        _set(doc, el, out, "inertia", six)

    gravity = np.asarray(model.gravity, float)
    if np.any(gravity != _floats(doc, loader.model, "gravity", 3, default=[0, -9.80665, 0])):
        _set(doc, loader.model, twin[loader.model], "gravity", gravity)
    if factors:
        _write_scaled_frames(loader, twin, factors)
    for (el, values), _ in wraps:
        for tag, v in values.items():
            _set(doc, el, twin[el], tag, v)
    points, params = set(), set()
    if paths is not None:
        functions = function_elements(model, coordinate_joints(loader.model), lambda m: "path",
                                      f"write_osim {source}")
        ref_params = reference.muscles.parameters if reference is not None and \
            reference.muscles is not None and reference.muscles.names == paths.names else {}
        points, params = _write_muscles(loader, twin, paths, factors, functions, ref_params)
    if markers is not None:
        _write_markers(loader, twin, markers, model)
    elif factors:
        _scale_file_markers(loader, twin, factors)
    missed = _write_coordinates(loader, twin, model, reference)
    if reference is not None:
        missed += unwritten_changes(model, reference, bool(factors), points, params, set(loader.bodies))
        if missed:
            warnings.warn(f"write_osim: the model differs from {source} in values write_osim does not write; the "
                          "file keeps its own values there: " + "; ".join(missed), stacklevel=2)
    tree.write(os.fspath(path), encoding="UTF-8", xml_declaration=True)
    return os.fspath(path)


def _write_coordinates(loader, twin, model, reference) -> list:
    """Each coordinate's ``<default_value>`` and ``<range>`` where the model's differ from
    ``reference``'s; returns what could not be written."""
    info = model.osim
    ref = reference.osim if reference is not None else None
    if info is None or ref is None or reference.coordinate_names != model.coordinate_names:
        return []
    doc = loader.doc
    elements = {c.get("name"): c for c in loader.model.iter("Coordinate")}
    default, lower, upper = (np.asarray(getattr(info, f), float) for f in ("default", "lower", "upper"))
    ref_values = [np.asarray(getattr(ref, f), float) for f in ("default", "lower", "upper")]
    missed = []
    for k, name in enumerate(model.coordinate_names):
        value, lo, hi = float(default[k]), float(lower[k]), float(upper[k])
        if [value, lo, hi] == [float(r[k]) for r in ref_values]:
            continue
        el = elements.get(name)
        if el is None:
            missed.append(f"the default or range of coordinate {name!r} (not a <Coordinate> of the file)")
            continue
        clamped = info.clamped[k]
        if not (np.isfinite([value, lo, hi]).all() and lo <= hi):
            raise ValueError(f"{doc.where(el)}: coordinate {name!r} would have <default_value> {value!r} and <range> "
                             f"[{lo!r}, {hi!r}] (model.osim): both must be finite, the range min <= max; not written")
        if clamped and not lo - _SQRT_EPS < value < hi + _SQRT_EPS:
            raise ValueError(f"{doc.where(el)}: clamped coordinate {name!r} would have <default_value> {value!r} "
                             f"outside its <range> [{lo!r}, {hi!r}] (model.osim), which OpenSim refuses; not written")
        _set(doc, el, twin[el], "default_value", [value])
        _set(doc, el, twin[el], "range", [lo, hi])
    return missed


def _reference(model, source, paths):
    """The source loaded again as the model was (None where it does not load that way)."""
    info = model.osim
    wraps = getattr(paths, "wraps", None)
    ignored = tuple(sorted({t for t, _ in getattr(info, "ignored", ())}))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_osim(source, ignore_wrapping=wraps is None, ignore_forces=ignored,
                             ignore_constraints=ignored, wrapping=getattr(wraps, "wrapping", "opensim"))
    except Exception:  # other load options (couplings, eliminated constraints): not compared
        return None


def _xyz_angles(R) -> list:
    """Body-fixed X-Y-Z angles of the rotation ``R`` (the inverse of ``_xyz_body_fixed``)."""
    return [float(np.arctan2(-R[1, 2], R[2, 2])), float(np.arctan2(R[0, 2], np.hypot(R[0, 0], R[0, 1]))),
            float(np.arctan2(-R[0, 1], R[0, 0]))]


def _wrap_plan(loader, paths, factors):
    """``((element, {tag: values}), make)`` for each wrap object whose dimensions, translation or
    rotation in the model differ from the file's (scaled as written); ``make`` builds its
    :class:`~mbjax.wrapping.WrapObject` with the model's values (refusing bad ones)."""
    wraps = getattr(paths, "wraps", None)
    if wraps is None:
        return []
    loader._wrap_objects()
    dims, rot, trans = (np.asarray(a, float) for a in (wraps.dimensions, wraps.rotation, wraps.translation))
    plan = []
    for w, name in enumerate(wraps.names):
        el = loader.wrap_elements.get(name)
        if el is None:
            continue
        try:
            old = loader._wrap_object(el)
        except ValueError:
            continue  # the file's own values are refused by the loader, which loaded the model
        f = factors.get(old.body, 1.0)
        body, x_bf = loader._resolve(el, el.get("_owner_frame"))
        values = {}
        if np.any(dims[w] != np.asarray(old.dimensions, float) * f):
            d = dims[w]
            values.update({"WrapCylinder": {"radius": d[:1], "length": d[1:2]}, "WrapSphere": {"radius": d[:1]},
                           "WrapEllipsoid": {"dimensions": d},
                           "WrapTorus": {"inner_radius": d[:1], "outer_radius": d[1:2]}}[el.tag])
        if np.any(trans[w] != np.asarray(old.translation, float) * f):
            values["translation"] = x_bf[:3, :3].T @ (trans[w] - x_bf[:3, 3] * f)
        if np.any(rot[w] != np.asarray(old.rotation, float)):
            values["xyz_body_rotation"] = _xyz_angles(x_bf[:3, :3].T @ rot[w])
        if values:
            make = (lambda old=old, w=w: dataclasses.replace(old, dimensions=dims[w], rotation=rot[w],
                                                             translation=trans[w]))
            plan.append(((el, values), make))
    return plan


def _write_muscles(loader, twin, paths, factors=None, functions=None, reference=None):
    """Muscle properties and path points; the path element of a muscle in ``functions``
    (``{muscle: <FunctionBasedPath>}``) replaced by that element.  A property the element leaves out
    is added where the model's value differs from ``reference`` (the parameters as loaded).  Returns
    the ``(muscle, slot)`` points and ``(muscle, key)`` parameters written."""
    reference = {k: np.asarray(v, float) for k, v in (reference or {}).items()}
    points, written = set(), set()
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
                        written.add((m, key))
                elif key in _MUSCLE_FLAGS:
                    el = out.find(key)
                    if el is not None:
                        el.text = "true" if value else "false"
                        written.add((m, key))
                elif key in ("min_control", "max_control") and np.isinf(value):  # OpenSim allows no bound
                    el = out.find(key)
                    if el is None and _changed(reference.get(key), m, value):
                        el = ET.SubElement(out, key)
                    if el is not None:
                        el.text = "Inf" if value > 0 else "-Inf"
                        written.add((m, key))
                elif out.find(key) is not None or (key in _ALWAYS and f.tag.endswith("Muscle")) or \
                        _changed(reference.get(key), m, value):
                    _set(doc, f, out, key, [value])
                    written.add((m, key))
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
            points.add((m, k))
    if functions:
        raise ValueError(f"{doc.path}: the model has path functions for {sorted(functions)}, which are not path "
                         "forces of the file's ForceSet")
    return points, written


def _changed(reference, m, value) -> bool:
    """The model's ``value`` differs from the loaded one, which the muscle's class has (not NaN)."""
    if reference is None or reference.ndim != 1 or m >= reference.shape[0] or np.ndim(value) != 0:
        return False
    r = float(reference[m])
    return not np.isnan(r) and not np.isnan(value) and value != r


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
    own = [el.get("name") for el in (objects if objects is not None else [])]
    if own and not seen:
        added = [markers.names[k] for k in new]
        warnings.warn(f"write_osim: none of the markers {added[:8]}{' ...' if len(added) > 8 else ''} is in the "
                      f"file's MarkerSet {own[:8]}{' ...' if len(own) > 8 else ''}; they are added on this model's "
                      "bodies by their body index: were they made for another model? (load_markers(path, model) "
                      "with this model)", stacklevel=3)
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
            raise ValueError(f"write_osim: marker {markers.names[k]!r} refers to body index {b}, which in this model "
                             f"is {body!r}, a massless step of a joint's chain that the file does not have: were the "
                             "markers made for another model? load them for this one (load_markers(path, model)) or "
                             "put them on the model's bodies")
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
