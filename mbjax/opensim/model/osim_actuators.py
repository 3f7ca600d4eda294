"""OpenSim's scalar actuators from a model's ``ForceSet`` or a force-set file, as OpenSim 4.6 reads them.

Three classes: ``CoordinateActuator`` (a generalized force on one coordinate), ``PointActuator``
and ``TorqueActuator`` (:mod:`mbjax.forces.body_actuators`).  OpenSim 4.6's reading rules,
reproduced (checked against the ``opensim`` package on hand-made files):

* Legacy class names are renamed (``Object::renameType``): ``GeneralizedForce`` →
  ``CoordinateActuator``, ``Force`` → ``PointActuator``, ``Torque`` → ``TorqueActuator``.
* A document older than version 10905 (a file without an ``<OpenSimDocument Version=...>`` root
  counts as 10500, e.g. an ``<ActuatorSet>`` of OpenSim 1.x) is converted as
  ``PointActuator::updateFromXMLNode`` / ``TorqueActuator::updateFromXMLNode`` convert it:
  point actuators read ``body_B`` as ``body``, ``point_B`` as ``point`` and ``direction_A`` as
  ``direction``, their direction is negated and ``force_is_global`` is set; torque actuators read
  ``body_A`` as ``bodyB``, ``body_B`` as ``bodyA`` and ``direction_A`` as ``axis``, negated.
* ``<defaults>`` objects apply to elements of their class that leave a property out, only under
  the current class names (a ``<Force name="default">`` changes nothing in OpenSim 4.6).  OpenSim's
  default objects are global to the process: a tool's setup file, then its model, then its
  force-set files each update them, so a force-set file inherits the model's defaults (Rajagopal's
  ``PointActuator`` default has ``force_is_global`` true, which the CMC residuals of its pipeline
  then take).  ``inherited`` carries that chain.
* A disabled actuator (``appliesForce`` false, or the legacy ``isDisabled`` true) is left out, as
  OpenSim's static optimization removes it.
* Properties OpenSim 4.6 does not have (the legacy ``min_force``/``max_force``, ``body_A``,
  ``point_A``, ...) are ignored by OpenSim; here each one is listed by name in one warning.

:func:`read_actuators` returns the records; an element of another actuator class is refused by
name (or returned in ``others`` for a caller that reads it elsewhere, e.g. muscles).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ...forces.body_actuators import CoordinateActuator, PointActuator, TorqueActuator
from .osim_classes import ACTUATOR_TYPES, LEGACY_TYPES
from .osim_older_documents import IS_DISABLED_VERSION

#: documents older than this are converted (``PointActuator::updateFromXMLNode``)
CONVERTED_BEFORE = 10905
#: a document without an ``OpenSimDocument`` root (``XMLDocument``: "pre 1.6")
UNVERSIONED = 10500

_COMMON = ("appliesForce", "isDisabled", "min_control", "max_control", "optimal_force")
_PROPERTIES = {
    "CoordinateActuator": _COMMON + ("coordinate",),
    "PointActuator": _COMMON + ("body", "point", "point_is_global", "direction", "force_is_global"),
    "TorqueActuator": _COMMON + ("bodyA", "bodyB", "axis", "torque_is_global"),
}
_RENAMED = {  # legacy property -> current one, in documents older than CONVERTED_BEFORE
    "PointActuator": {"body_B": "body", "point_B": "point", "direction_A": "direction"},
    "TorqueActuator": {"body_A": "bodyB", "body_B": "bodyA", "direction_A": "axis"},
}


def document_version(root) -> int:
    """The ``Version`` of an ``<OpenSimDocument>`` root, else OpenSim's 10500."""
    if root.tag == "OpenSimDocument":
        try:
            return int(root.get("Version", UNVERSIONED))
        except ValueError:
            return UNVERSIONED
    return UNVERSIONED


def class_of(tag: str) -> str:
    """OpenSim 4.6's class for an element tag (legacy names renamed)."""
    return LEGACY_TYPES.get(tag, tag)


class _Element:
    """One actuator element with its class's ``<defaults>`` object and the legacy renames."""

    def __init__(self, doc, el, cls, defaults, converting):
        self.doc, self.el, self.cls, self.defaults = doc, el, cls, defaults
        renamed = _RENAMED.get(cls, {}) if converting else {}
        self.children = {}
        self.unknown = []
        for child in el:
            if not isinstance(child.tag, str):
                continue  # a comment
            tag = renamed.get(child.tag, child.tag)
            if tag in _PROPERTIES[cls]:
                self.children.setdefault(tag, child)
            else:
                self.unknown.append(child.tag)

    def _text(self, tag):
        for source in [self.children.get(tag)] + [d.find(tag) for d in self.defaults]:
            if source is not None:
                txt = (source.text or "").strip()
                return (txt or None), source
        return None, None

    def number(self, tag, default):
        txt, where = self._text(tag)
        if txt is None:
            return default
        try:
            v = float(txt)
        except ValueError:
            raise self.doc.error(where, f"<{tag}> of {self.cls} {self.el.get('name')!r} must be a number, "
                                 f"got {txt!r}") from None
        if np.isnan(v):
            raise self.doc.error(where, f"<{tag}> of {self.cls} {self.el.get('name')!r} is NaN")
        return v

    def vector(self, tag, default):
        txt, where = self._text(tag)
        if txt is None:
            return default
        try:
            v = tuple(float(x) for x in txt.split())
        except ValueError:
            v = ()
        if len(v) != 3 or not np.all(np.isfinite(v)):
            raise self.doc.error(where, f"<{tag}> must be three numbers, all finite, got {txt!r} "
                                 f"({self.cls} {self.el.get('name')!r})")
        return v

    def flag(self, tag, default):
        txt, where = self._text(tag)
        if txt is None:
            return default
        if txt.lower() not in ("true", "false"):
            raise self.doc.error(where, f"<{tag}> of {self.cls} {self.el.get('name')!r} must be true or false, "
                                 f"got {txt!r}")
        return txt.lower() == "true"

    def name(self, tag):
        txt, _ = self._text(tag)
        return None if txt is None or txt == "Unassigned" else txt


def _record(e: _Element, converting: bool):
    name = e.el.get("name")
    optimal = e.number("optimal_force", 1.0)
    common = dict(optimal_force=optimal, min_control=e.number("min_control", -np.inf),
                  max_control=e.number("max_control", np.inf))
    if not common["min_control"] <= common["max_control"]:
        raise e.doc.error(e.el, f"{e.cls} {name!r}: min_control {common['min_control']} > max_control "
                          f"{common['max_control']}")
    if e.cls == "CoordinateActuator":
        coordinate = e.name("coordinate")
        if coordinate is None:
            raise e.doc.error(e.el, f"CoordinateActuator {name!r} has no <coordinate>")
        return CoordinateActuator(name, coordinate, **common)
    if e.cls == "PointActuator":
        body = e.name("body")
        if body is None:
            raise e.doc.error(e.el, f"PointActuator {name!r} has no <body>" + (" (legacy <body_B>)" if converting else ""))
        direction = e.vector("direction", (1.0, 0.0, 0.0))
        if converting:
            direction = tuple(-x for x in direction)
        return PointActuator(name, body, e.vector("point", (0.0, 0.0, 0.0)), direction,
                             e.flag("point_is_global", False), True if converting else e.flag("force_is_global", False),
                             **common)
    body_a = e.name("bodyA")
    if body_a is None:
        raise e.doc.error(e.el, f"TorqueActuator {name!r} has no <bodyA>" + (" (legacy <body_B>)" if converting else ""))
    axis = e.vector("axis", (0.0, 0.0, 1.0))
    if converting:
        axis = tuple(-x for x in axis)
    return TorqueActuator(name, body_a, e.name("bodyB"), axis, e.flag("torque_is_global", True), **common)


def _default_objects(inherited):
    """The actuator ``<defaults>`` objects of earlier documents, in the order they were read:
    elements, or ``(class, ((property, text), ...))`` pairs (:func:`default_records`)."""
    for d in inherited:
        if isinstance(d, tuple):
            el = ET.Element(d[0])
            for tag, text in d[1]:
                ET.SubElement(el, tag).text = text
            yield el
        elif isinstance(d.tag, str) and d.tag == "defaults":
            yield from (el for el in d if isinstance(el.tag, str))
        else:
            yield d


def default_records(defaults) -> tuple:
    """The actuator objects of ``<defaults>`` elements as hashable ``(class, ((property, text), ...))``
    pairs, to be passed on as ``inherited`` defaults (e.g. a model's, to its tools' force-set files)."""
    out = []
    for d in defaults or ():
        for el in d:
            if isinstance(el.tag, str) and el.tag in ACTUATOR_TYPES:
                out.append((el.tag, tuple((c.tag, (c.text or "").strip()) for c in el if isinstance(c.tag, str))))
    return tuple(out)


def read_actuators(doc, container, *, version: int, defaults=None, inherited=(), others=(), where: str = ""):
    """The enabled scalar actuators among the children of ``container`` (a set's ``<objects>``),
    in order, as OpenSim 4.6 reads them (module docstring).

    ``doc``: the parsed file (``where(el)``/``error(el, msg)``, :class:`mbjax.opensim.model.osim_xml._Doc`);
    ``version``: its :func:`document_version`; ``defaults``: the set's ``<defaults>`` element(s)
    (an iterable) or None; ``inherited``: the defaults of documents OpenSim read before this one in
    the same run, oldest first (OpenSim's default objects are global: a tool reads its setup file,
    then the model, then the force-set files, and each ``<defaults>`` changes the properties it
    names for every later element of that class); ``others``: element classes the caller reads itself (skipped here);
    any other element is refused by name.  Returns ``(actuators, disabled)``: the records and the
    names of the actuators left out as disabled."""
    converting = version < CONVERTED_BEFORE
    default_of = {c: [] for c in ACTUATOR_TYPES}  # per class, the most recent first
    legacy_defaults = []
    for el in _default_objects(inherited or ()):
        if el.tag in ACTUATOR_TYPES:
            default_of[el.tag].insert(0, el)
    for d in defaults or ():
        for el in d:
            if not isinstance(el.tag, str):
                continue
            if el.tag in ACTUATOR_TYPES:
                default_of[el.tag].insert(0, el)
            elif el.tag in LEGACY_TYPES:
                legacy_defaults.append(el.tag)
    out, disabled, unknown = [], [], []
    for el in container:
        if not isinstance(el.tag, str) or el.tag in others:
            continue
        cls = class_of(el.tag)
        if cls not in ACTUATOR_TYPES:
            raise doc.error(el, f"<{el.tag} name={el.get('name')!r}> is not a supported actuator "
                            f"(supported: {', '.join(ACTUATOR_TYPES)} and the legacy "
                            f"{', '.join(LEGACY_TYPES)})", NotImplementedError)
        e = _Element(doc, el, cls, default_of[cls], converting)
        if e.unknown:
            unknown.append(f"{el.get('name')!r} (<{'>, <'.join(e.unknown)}>)")
        legacy = version < IS_DISABLED_VERSION  # later documents: OpenSim ignores <isDisabled>
        if not legacy and "isDisabled" in e.children:
            unknown.append(f"{el.get('name')!r} (<isDisabled>: not read in a document of Version {version} >= "
                           f"{IS_DISABLED_VERSION}; use <appliesForce>)")
        applies = e.flag("appliesForce", True) and not (legacy and e.flag("isDisabled", False))
        if not applies:
            disabled.append(el.get("name"))
            continue
        out.append(_record(e, converting))
    if unknown:
        warnings.warn(f"{where or doc.path}: properties that OpenSim 4.6 does not read, ignored as OpenSim ignores "
                      f"them: {'; '.join(unknown)}", stacklevel=3)
    if legacy_defaults:
        warnings.warn(f"{where or doc.path}: <defaults> of the legacy classes {sorted(set(legacy_defaults))} are "
                      "not applied (OpenSim 4.6 applies defaults only under the current class names)", stacklevel=3)
    return tuple(out), tuple(disabled)
