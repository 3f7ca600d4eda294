"""OpenSim's ``PathSpring`` and ``Ligament`` read into force elements of ``model.forces``
(:class:`mbjax.forces.PathSpring`, :class:`mbjax.forces.Ligament`).

Their ``GeometryPath`` is read as a muscle's is (:mod:`mbjax.opensim.model.osim_force_set`: path
points, conditional and moving points, path wraps) into a :class:`~mbjax.muscles.MusclePaths` of
their own.  Properties, as OpenSim 4.6 declares them:

* ``Ligament``: ``resting_length`` (> 0; OpenSim divides by it), ``pcsa_force`` (>= 0; default 0),
  ``force_length_curve`` (any 1-D function the importer reads; 4.x ``<SimmSpline
  name="force_length_curve">``, 3.x ``<force_length_curve><SimmSpline>``; default OpenSim's SimmSpline);
* ``PathSpring``: ``resting_length`` (> 0), ``stiffness`` (>= 0), ``dissipation`` (finite); OpenSim's
  defaults are NaN, so each must be given.

A value that is not a number, NaN or out of its range is refused by file, line, element and property.
An element with ``appliesForce`` false (3.x ``isDisabled`` true) is skipped, as OpenSim applies no
force of it.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from ...forces.base import ForceSet
from ...forces.path_force import PathForce
from ...forces.path_ligament import DEFAULT_FORCE_LENGTH_CURVE, Ligament
from ...forces.path_spring import PathSpring
from ...maps.piecewise import PiecewisePolynomial
from ...maps.simm_spline import pp_simm_spline
from ...muscles.paths import build_paths
from .osim_classes import PATH_FORCE_FUNCTIONS
from .osim_xml import FUNCTION_TYPES, _function_element, _pp

#: per class: (property, default (None: must be given), rule) with rule "pos" (> 0), "nonneg" (>= 0) or "finite"
_PROPERTIES = {
    "Ligament": (("resting_length", 0.0, "pos"), ("pcsa_force", 0.0, "nonneg")),
    "PathSpring": (("resting_length", None, "pos"), ("stiffness", None, "nonneg"), ("dissipation", None, "finite")),
}
_RULES = {"pos": (lambda v: v > 0, "finite and > 0"), "nonneg": (lambda v: v >= 0, "finite and >= 0"),
          "finite": (lambda v: True, "finite")}


def read_path_forces(loader, model, entries):
    """The force-element stacks (at most one ``Ligament`` and one ``PathSpring`` stack) of ``entries``:
    ``(element, points, path wraps or None)`` as :meth:`_ForceSetMixin._forces` read them."""
    doc = loader.doc
    out = []
    for cls in ("Ligament", "PathSpring"):
        rows = [(f, pts, pw) for f, pts, pw in entries if f.tag == cls]
        if not rows:
            continue
        names = [f.get("name") for f, _, _ in rows]
        points = {f.get("name"): pts for f, pts, _ in rows}
        path_wraps = {f.get("name"): pw for f, _, pw in rows if pw}
        used = sorted({w.wrap_object for ws in path_wraps.values() for w in ws})
        objects = [loader._wrap_object(loader.wrap_elements[n]) for n in used]
        paths = build_paths(model.body_names, model.coordinate_names, points, {n: cls for n in names},
                            wrap_objects=objects, path_wraps=path_wraps,
                            sources={f.get("name"): doc.where(f) for f, _, _ in rows})
        props = [_properties(doc, f) for f, _, _ in rows]
        column = lambda key: jnp.asarray(np.array([p[key] for p in props], dtype=float))  # noqa: E731
        if cls == "Ligament":
            curve = PiecewisePolynomial.stack([PiecewisePolynomial(n, _curve(doc, f)) for n, (f, _, _) in zip(names, rows)])
            out.append(Ligament(paths=paths, element_names=tuple(names), resting_length=column("resting_length"),
                                pcsa_force=column("pcsa_force"), force_length_curve=curve))
        else:
            out.append(PathSpring(paths=paths, element_names=tuple(names), resting_length=column("resting_length"),
                                  stiffness=column("stiffness"), dissipation=column("dissipation")))
    return out


def _properties(doc, f) -> dict[str, float]:
    """The scalar properties of path force ``f``, refused by name when not a number or out of range."""
    out = {}
    for key, default, rule in _PROPERTIES[f.tag]:
        el = f.find(key)
        text = el.text.strip() if el is not None and el.text is not None else ""
        if not text:
            if default is None:
                raise doc.error(f, f"{f.tag} {f.get('name')!r}: <{key}> is missing (OpenSim's default is NaN, no "
                                "force); give it")
            out[key] = default
            where = f
        else:
            try:
                out[key] = float(text)
            except ValueError:
                raise doc.error(el, f"{f.tag} {f.get('name')!r}: <{key}> must be a number, got {text!r}") from None
            where = el
        ok, what = _RULES[rule]
        if not (np.isfinite(out[key]) and ok(out[key])):
            raise doc.error(where, f"{f.tag} {f.get('name')!r}: <{key}> must be {what}, got {out[key]!r}"
                            + (" (OpenSim's default; give the ligament's resting length)" if el is None else ""))
    return out


def _curve(doc, f):
    """The ``force_length_curve`` of a ``Ligament`` as piecewise-polynomial data (OpenSim's default if absent)."""
    (name,) = PATH_FORCE_FUNCTIONS["Ligament"]
    for c in f:
        if c.tag == name:  # 3.x: <force_length_curve><SimmSpline>...
            return _pp(doc, _function_element(doc, c))
        if c.get("name") == name and c.tag in FUNCTION_TYPES:  # 4.x: <SimmSpline name="force_length_curve">
            return _pp(doc, c)
    return pp_simm_spline(*DEFAULT_FORCE_LENGTH_CURVE)


def with_path_force_wrapping(model, wrapping: str, source: str = ""):
    """``model`` with the path forces' wraps (in ``model.forces``) using ``wrapping`` as its muscles do."""
    from ...wrapping.smooth_path import check_smooth

    fs = model.forces
    if fs is None or not any(isinstance(e, PathForce) and e.paths.wraps is not None for e in fs.elements):
        return model
    elements = []
    for e in fs.elements:
        wraps = e.paths.wraps if isinstance(e, PathForce) else None
        if wraps is not None and wraps.wrapping != wrapping:
            if wrapping == "smooth":
                check_smooth(wraps, e.paths.names, source)
            paths = dataclasses.replace(e.paths, wraps=dataclasses.replace(wraps, wrapping=wrapping))
            e = dataclasses.replace(e, paths=paths)
        elements.append(e)
    return model.replace(forces=ForceSet(tuple(elements)))
