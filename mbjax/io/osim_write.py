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
* with ``markers`` (:class:`mbjax.Markers`, e.g. fitted offsets): each ``<Marker>``'s ``<location>``.

Numbers are written with ``repr`` (the shortest text that reads back as the same double), so
:func:`mbjax.io.load_osim` of the copy gives the model's values bit for bit.  Masses, inertias and
lengths must be finite: a non-finite value is refused, naming the element.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from .osim import _MUSCLE_FLAGS, MUSCLE_TYPES, _Loader

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
        _set(doc, el, out, "mass", [mass[i]])
        _set(doc, el, out, "mass_center", com[i])
        for tag in _INERTIA_3X:  # see the module docstring: <inertia> keeps every digit
            for old in out.findall(tag):
                out.remove(old)
        _set(doc, el, out, "inertia", six)

    paths = model.extras.get("muscles")
    if paths is not None:
        _write_muscles(loader, twin, paths)
    if markers is not None:
        _write_markers(loader, twin, markers, model)
    tree.write(os.fspath(path), encoding="UTF-8", xml_declaration=True)
    return os.fspath(path)


def _write_muscles(loader, twin, paths):
    doc = loader.doc
    fset = loader.model.find("ForceSet")
    objects = fset.find("objects") if fset is not None else None
    rows = {n: m for m, n in enumerate(paths.names)}
    location = np.asarray(paths.location, float)
    params = {k: np.asarray(v, float) for k, v in paths.parameters.items()}
    for f in (objects if objects is not None else []):
        m = rows.get(f.get("name"))
        if m is None or f.find("GeometryPath") is None:
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
        slots = {n: k for k, n in enumerate(paths.point_names[m]) if n}
        pset = f.find("GeometryPath").find("PathPointSet").find("objects")
        for p in pset:
            if p.tag not in ("PathPoint", "ConditionalPathPoint"):
                continue  # a MovingPathPoint's location is a function of coordinates
            k = slots.get(p.get("name") or "")
            if k is None:
                continue  # never active (left out by the loader) or unnamed
            ref = (p.findtext("socket_parent_frame") or p.findtext("body") or "").strip()
            body, x_bf = loader._resolve(p, ref)
            loc_frame = x_bf[:3, :3].T @ (location[m, k] - x_bf[:3, 3])
            _set(doc, p, twin[p], "location", loc_frame)


def _write_markers(loader, twin, markers, model):
    doc = loader.doc
    mset = loader.model.find("MarkerSet")
    objects = mset.find("objects") if mset is not None else None
    index = {n: k for k, n in enumerate(markers.names)}
    offset = np.asarray(markers.offset, float)
    for el in (objects if objects is not None else []):
        k = index.get(el.get("name"))
        if k is None:
            continue
        ref = (el.findtext("socket_parent_frame") or el.findtext("body") or "").strip()
        body, x_bf = loader._resolve(el, ref)
        want = model.body_names[markers.body[k]] if markers.body[k] >= 0 else "ground"
        if body != want:
            raise ValueError(f"{doc.where(el)}: marker is on {body!r} in the file but on {want!r} in markers")
        _set(doc, el, twin[el], "location", x_bf[:3, :3].T @ (offset[k] - x_bf[:3, 3]))
