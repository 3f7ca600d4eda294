"""OpenSim 4.6 ``FunctionBasedPath`` objects: read and written as mbjax path functions.

A ``FunctionBasedPath`` (a muscle's ``<FunctionBasedPath name="path">`` in a ``.osim`` file, or an
entry of a ``Set_FunctionBasedPath_`` file named by its force's path, ``/forceset/<muscle>``) holds
``coordinate_paths`` and a ``length_function``.  mbjax reads the ``MultivariatePolynomialFunction``
length functions of its model's independent coordinates (:mod:`mbjax.muscles.path_functions`), in
OpenSim's coefficient order; the moment arms are then -∂L/∂q, which is what OpenSim computes when
the path has no ``moment_arm_functions``.

Refused by name (file, line, muscle, element): a length function of another type, non-empty
``moment_arm_functions`` or ``lengthening_speed_function`` (their values need not agree with the
length function's derivatives, which mbjax uses), a coordinate path that is not
``/jointset/<joint>/<coordinate>`` (OpenSim's ``computeMomentArm`` matches the absolute path), or
that names a coordinate of another joint, an unknown one, or one that is not an independent
coordinate of the loaded model (locked, coupled, or eliminated by a ``PointOnLineConstraint``), an
unknown muscle, unknown elements.  Visualization-only elements (``Appearance``, a set's ``groups``)
are named in a warning.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ...maps.multivariate import multivariate_exponents
from ..._model import require_model
from ...io.arguments import require_folder
from .osim_xml import _coordinate_elements, _Doc, _floats

FUNCTION_BASED_PATH = "FunctionBasedPath"
SET_TAG = "Set_FunctionBasedPath_"
#: the document version OpenSim 4.6 writes
VERSION = "40600"
#: children of a FunctionBasedPath that change no quantity mbjax computes: warned, not read
_VISUAL = ("Appearance",)
#: a coordinate path as OpenSim writes it (the absolute path its computeMomentArm compares with)
_COORDINATE_PATH = re.compile(r"^/jointset/([^/]+)/([^/]+)$")
_FORCE_PATH = re.compile(r"^/?forceset/([^/]+)$")


@dataclasses.dataclass(frozen=True)
class CoordinateTable:
    """The coordinates a ``FunctionBasedPath`` may name: each one's role in the loaded model
    (``"independent"``, ``"dependent"``, ``"locked"``), its joint (None: not known) and, for some,
    why it is not independent."""

    roles: dict
    joints: dict | None
    why: dict = dataclasses.field(default_factory=dict)

    def independent(self) -> list[str]:
        return [c for c, r in self.roles.items() if r == "independent"]


def coordinate_joints(model_element) -> dict:
    """``{coordinate: joint}`` of an OpenSim ``<Model>`` element (4.x ``JointSet`` or 3.x joints
    inside the bodies), without checking anything else of the file."""
    joints = []
    for jointset in model_element.iter("JointSet"):
        joints += list(jointset.find("objects") if jointset.find("objects") is not None else [])
    for body in model_element.iter("Body"):
        holder = body.find("Joint")
        joints += list(holder if holder is not None else [])
    return {c.get("name"): j.get("name") for j in joints for c in _coordinate_elements(j)}


def table_of_loader(loader) -> CoordinateTable:
    """The coordinates of a ``.osim`` file being loaded (:class:`mbjax.opensim.model.osim._Loader`)."""
    roles = {c: loader.coords.role(c) for c in loader.coords.order}
    why = {c: "eliminated by a PointOnLineConstraint" for c, _ in loader.eliminated}
    return CoordinateTable(roles, coordinate_joints(loader.model), why)


def table_of_model(model) -> CoordinateTable:
    """The coordinates of a model: roles from ``model.osim`` (all of ``q`` independent
    for a model that was not loaded from a file), joints from its source file where it exists."""
    info = model.osim
    if info is None:
        return CoordinateTable({c: "independent" for c in model.coordinate_names}, None)
    why = {c: "eliminated by a PointOnLineConstraint" for c, _ in info.eliminated}
    joints = None
    if info.source and os.path.exists(info.source):
        root = _Doc(info.source).root
        holder = root.find("Model")
        joints = coordinate_joints(holder) if holder is not None else None
    return CoordinateTable(dict(info.roles), joints, why)


def _resolve(doc, el, path: str, table: CoordinateTable, muscle: str) -> str:
    """The model coordinate a coordinate path names (its last element), checked."""
    match = _COORDINATE_PATH.match(path)
    if match is None:
        raise doc.error(el, f"muscle {muscle!r}: coordinate path {path!r} is not of the form "
                        "/jointset/<joint>/<coordinate> (OpenSim's computeMomentArm matches the absolute path)",
                        NotImplementedError)
    joint, name = match.groups()
    if name not in table.roles:
        raise doc.error(el, f"muscle {muscle!r}: coordinate path {path!r} names coordinate {name!r}, which the "
                        f"model does not have; its coordinates are {list(table.roles)}")
    if table.joints is not None and table.joints.get(name) != joint:
        raise doc.error(el, f"muscle {muscle!r}: coordinate path {path!r}: coordinate {name!r} belongs to joint "
                        f"{table.joints.get(name)!r}, not {joint!r}")
    role = table.roles[name]
    if role != "independent":
        why = table.why.get(name) or {"locked": "locked (held at its default)",
                                      "dependent": "coupled by a CoordinateCouplerConstraint"}.get(role, role)
        raise doc.error(el, f"muscle {muscle!r}: coordinate path {path!r} names coordinate {name!r}, which is {why} "
                        f"in the loaded model: a path function of it is not supported (independent coordinates: "
                        f"{table.independent()})", NotImplementedError)
    return name


def _number(doc, el, tag, muscle):
    if el.find(tag) is None:
        raise doc.error(el, f"muscle {muscle!r}: missing <{tag}>")
    value = float(_floats(doc, el, tag, 1)[0])
    if value != int(value):
        raise doc.error(el, f"muscle {muscle!r}: <{tag}> must be an integer, got {value}")
    return int(value)


def _polynomial(doc, holder, muscle: str, n_coordinates: int):
    """``(order, coefficients)`` of the ``MultivariatePolynomialFunction`` in ``<length_function>``."""
    kids = list(holder)
    if len(kids) != 1:
        raise doc.error(holder, f"muscle {muscle!r}: <length_function> must hold one function, found "
                        f"{[k.tag for k in kids]}")
    fel = kids[0]
    if fel.tag != "MultivariatePolynomialFunction":
        raise doc.error(fel, f"muscle {muscle!r}: a <length_function> of type {fel.tag} is not supported (only "
                        "MultivariatePolynomialFunction)", NotImplementedError)
    unknown = [k.tag for k in fel if k.tag not in ("coefficients", "dimension", "order")]
    if unknown:
        raise doc.error(fel, f"muscle {muscle!r}: unknown element(s) {unknown} in MultivariatePolynomialFunction",
                        NotImplementedError)
    dimension = _number(doc, fel, "dimension", muscle)
    order = _number(doc, fel, "order", muscle)
    if dimension != n_coordinates:
        raise doc.error(fel, f"muscle {muscle!r}: <dimension> {dimension} but <coordinate_paths> names "
                        f"{n_coordinates} coordinate(s)")
    if order < 1:
        raise doc.error(fel, f"muscle {muscle!r}: <order> must be at least 1, got {order}")
    coefficients = _floats(doc, fel, "coefficients")
    n_terms = multivariate_exponents(dimension, order).shape[0]
    if coefficients.size != n_terms:
        raise doc.error(fel, f"muscle {muscle!r}: a MultivariatePolynomialFunction of dimension {dimension} and "
                        f"order {order} has {n_terms} coefficients, got {coefficients.size}")
    if not np.all(np.isfinite(coefficients)):
        raise doc.error(fel, f"muscle {muscle!r}: <coefficients> must be finite")
    return order, coefficients


def read_function_based_path(doc, el, muscle: str, table: CoordinateTable):
    """``(coordinates, order, coefficients)`` of one ``<FunctionBasedPath>`` element and the
    descriptions of the elements it holds that mbjax does not use (for a warning)."""
    coords, order, coefficients, unused = None, None, None, []
    for child in el:
        tag = child.tag
        if tag == "coordinate_paths":
            paths = (child.text or "").split()
            if not paths:
                raise doc.error(child, f"muscle {muscle!r}: <coordinate_paths> is empty")
            if len(set(paths)) != len(paths):
                raise doc.error(child, f"muscle {muscle!r}: <coordinate_paths> {paths} repeat a coordinate")
            coords = tuple(_resolve(doc, child, p, table, muscle) for p in paths)
        elif tag in ("moment_arm_functions", "lengthening_speed_function"):
            if len(child):
                raise doc.error(child, f"muscle {muscle!r}: <{tag}> is not supported: mbjax computes moment arms "
                                "and lengthening speed from the length function's derivatives (OpenSim's default "
                                f"without <{tag}>)", NotImplementedError)
        elif tag == "components":
            if len(child):
                raise doc.error(child, f"muscle {muscle!r}: subcomponents of a FunctionBasedPath are not supported",
                                NotImplementedError)
        elif tag in _VISUAL:
            unused.append(f"{muscle}/{tag}")
        elif tag != "length_function":
            raise doc.error(child, f"muscle {muscle!r}: unknown element <{tag}> in FunctionBasedPath",
                            NotImplementedError)
    if coords is None:
        raise doc.error(el, f"muscle {muscle!r}: FunctionBasedPath without <coordinate_paths>")
    holder = el.find("length_function")
    if holder is None:
        raise doc.error(el, f"muscle {muscle!r}: FunctionBasedPath without <length_function>")
    order, coefficients = _polynomial(doc, holder, muscle, len(coords))
    return (coords, order, coefficients), unused


def warn_unused(path: str, unused, stacklevel: int = 3):
    """One warning naming the elements read but not used."""
    if unused:
        warnings.warn(f"{path}: {len(unused)} FunctionBasedPath element(s) not used (visualization only): "
                      + ", ".join(unused), stacklevel=stacklevel)


def read_path_functions(path_set_file, model) -> dict:
    """The path functions of a ``Set_FunctionBasedPath_`` file as ``{muscle: (coordinates, order,
    coefficients)}`` (the form :func:`mbjax.with_path_functions` takes), checked against ``model``:
    its path forces (by ``/forceset/<name>``) and its independent coordinates."""
    from ...muscles.paths import get_paths
    doc = _Doc(os.fspath(path_set_file))
    root = doc.root
    if root.tag != "OpenSimDocument":
        raise ValueError(f"{doc.path}: root element is <{root.tag}>, expected <OpenSimDocument>")
    kids = list(root)
    if len(kids) != 1 or kids[0].tag != SET_TAG:
        raise doc.error(root, f"expected one <{SET_TAG}>, found {[k.tag for k in kids]}")
    pset = kids[0]
    table = table_of_model(model)
    forces = list(get_paths(model).names)
    out, unused = {}, []
    for child in pset:
        if child.tag == "groups":
            if len(child):
                unused.append("groups (named subsets of the set)")
            continue
        if child.tag != "objects":
            raise doc.error(child, f"unknown element <{child.tag}> in {SET_TAG}", NotImplementedError)
        for el in child:
            if el.tag != FUNCTION_BASED_PATH:
                raise doc.error(el, f"<{el.tag}> in a {SET_TAG}: only {FUNCTION_BASED_PATH}", NotImplementedError)
            name = el.get("name") or ""
            match = _FORCE_PATH.match(name)
            if match is None:
                raise doc.error(el, f"FunctionBasedPath name {name!r} is not a force path /forceset/<muscle>")
            muscle = match.group(1)
            if muscle not in forces:
                raise doc.error(el, f"muscle {muscle!r}: the model has no path force of that name; its path "
                                f"forces are {forces}")
            if muscle in out:
                raise doc.error(el, f"muscle {muscle!r}: a second FunctionBasedPath for it")
            out[muscle], more = read_function_based_path(doc, el, muscle, table)
            unused += more
    warn_unused(doc.path, unused)
    return out


# --------------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------------


def function_based_path_element(name: str, coordinate_paths, order: int, coefficients) -> ET.Element:
    """A ``<FunctionBasedPath name=...>`` element with a ``MultivariatePolynomialFunction`` length
    function (coefficients written with ``repr``: read back bit for bit)."""
    c = np.asarray(coefficients, dtype=float).ravel()
    if not np.all(np.isfinite(c)):
        raise ValueError(f"FunctionBasedPath {name!r}: coefficients are not all finite")
    el = ET.Element(FUNCTION_BASED_PATH, {"name": name})
    ET.SubElement(el, "coordinate_paths").text = " ".join(coordinate_paths)
    fn = ET.SubElement(ET.SubElement(el, "length_function"), "MultivariatePolynomialFunction")
    ET.SubElement(fn, "coefficients").text = " ".join(repr(float(v)) for v in c)
    ET.SubElement(fn, "dimension").text = str(len(coordinate_paths))
    ET.SubElement(fn, "order").text = str(int(order))
    return el


def coordinate_path(joints: dict | None, coordinate: str, where: str) -> str:
    """``/jointset/<joint>/<coordinate>``; an error naming ``where`` if the joint is not known."""
    if not joints or coordinate not in joints:
        example = "{" + repr(coordinate) + ": '/jointset/<joint>/" + coordinate + "'}"
        raise ValueError(f"{where}: the joint of coordinate {coordinate!r} is not known (the model's source "
                         f".osim file names it); pass coordinate_paths={example}")
    return f"/jointset/{joints[coordinate]}/{coordinate}"


def function_elements(model, joints, name_of, where: str) -> dict:
    """``{muscle: <FunctionBasedPath>}`` for each path function of ``model``, in muscle order;
    ``name_of(muscle)`` gives the element's name."""
    from ...muscles.path_functions import get_path_functions

    pf = get_path_functions(model)
    if pf is None:
        return {}
    rows = dict(zip(pf.names, pf.rows.tolist()))
    bounded, k = [], 0
    for g in pf.groups:
        if g.lower is not None:
            finite = np.isfinite(np.asarray(g.lower)).any(axis=1) | np.isfinite(np.asarray(g.upper)).any(axis=1)
            bounded += [m for m, b in zip(pf.names[k:k + len(g.rows)], finite) if b]
        k += len(g.rows)
    if bounded:
        warnings.warn(f"{where}: the coordinate ranges the path functions of {len(bounded)} muscles were fitted on "
                      f"({', '.join(bounded[:8])}{', ...' if len(bounded) > 8 else ''}) have no place in OpenSim's "
                      "FunctionBasedPath and are not written: read back, the functions are evaluated at any pose "
                      "without a range check", stacklevel=3)
    out = {}
    for muscle in sorted(pf.names, key=rows.get):
        inputs, order, coefficients = pf.function(muscle)
        paths = [coordinate_path(joints, model.coordinate_names[i], f"{where}: muscle {muscle!r}") for i in inputs]
        out[muscle] = function_based_path_element(name_of(muscle), paths, order, coefficients)
    return out


def write_path_functions(model, filename, coordinate_paths: dict | None = None) -> str:
    """Write the model's path functions as an OpenSim 4.6 ``Set_FunctionBasedPath_`` file (entries
    named ``/forceset/<muscle>``, what ``ModOpReplacePathsWithFunctionBasedPaths`` reads).

    Coordinate paths are ``/jointset/<joint>/<coordinate>`` with the joints of the model's source
    ``.osim``; ``coordinate_paths`` (``{coordinate: path}``) gives them for a model without one.
    Returns ``filename``."""
    require_model(model, "write_path_functions")
    filename = require_folder(filename, "write_path_functions")
    joints = None
    if coordinate_paths is None:
        joints = table_of_model(model).joints
    else:
        joints = {}
        for c, p in coordinate_paths.items():
            match = _COORDINATE_PATH.match(p)
            if match is None or match.group(2) != c:
                raise ValueError(f"write_path_functions: coordinate_paths[{c!r}] = {p!r} is not "
                                 f"/jointset/<joint>/{c}")
            joints[c] = match.group(1)
    elements = function_elements(model, joints, lambda m: f"/forceset/{m}", "write_path_functions")
    if not elements:
        raise ValueError("write_path_functions: the model has no path functions (see mbjax.with_path_functions)")
    root = ET.Element("OpenSimDocument", {"Version": VERSION})
    pset = ET.SubElement(root, SET_TAG)
    objects = ET.SubElement(pset, "objects")
    objects.extend(elements.values())
    ET.SubElement(pset, "groups")
    ET.indent(root, space="\t")
    ET.ElementTree(root).write(filename, encoding="UTF-8", xml_declaration=True)
    return filename
