"""The ``ForceSet`` of an OpenSim file: path forces read into paths and muscle properties (``PathSpring``
and ``Ligament`` into paths of their own, for :mod:`mbjax.opensim.model.osim_path_forces`); force
elements and actuators passed on to their readers; forces mbjax does not model refused by name."""

from __future__ import annotations

import warnings

import numpy as np

from ..._model import GROUND
from ...muscles.length_warning import LONGEST_MUSCLE_LENGTH
from ...muscles.parameter_rules import NUMERIC_PROPERTIES
from ...muscles.paths import PathPoint
from ...muscles.schutte1993 import CURVES as SCHUTTE_CURVES
from ...muscles.parameters import THELEN
from ...muscles.schutte1993 import SCHUTTE
from .osim_actuators import read_actuators
from .osim_classes import (CURVE_PROPERTIES, MODELLED_FORCES, MUSCLE_TYPES, PATH_FORCE_FUNCTIONS,
                           PATH_FORCE_PROPERTIES, PATH_SPRING_FORCES, RECORDED_FORCES)
from .osim_forces import applies_force
from .osim_path_functions import FUNCTION_BASED_PATH
from .osim_older_documents import MIN_CONTROL_VERSION
from .osim_paths import CONDITIONAL_RANGE_TOLERANCE
from .osim_xml import FUNCTION_TYPES, _function_element, _pp

#: forces refused by name, with what they would change
_REFUSED_FORCES = {
    "ElasticFoundationForce": "ElasticFoundationForce (contact, changes dynamics) is not modelled",
    "Delp1990Muscle_Deprecated": "Delp1990Muscle_Deprecated (spline force-length/velocity curves that the "
                                 "Thelen and Millard models cannot reproduce) is not modelled",
    "Millard2012AccelerationMuscle": "Millard2012AccelerationMuscle (a fibre with mass: second-order fibre "
                                     "dynamics, whose tendon force mbjax does not compute) is not modelled; "
                                     "Millard2012EquilibriumMuscle is",
}
#: the placeholder path of a force with a FunctionBasedPath: two points, both marked invalid (no
#: geometry; its length and moment arms are its path function's, model.path_functions)
_NO_POINTS = [PathPoint(GROUND, (0.0, 0.0, 0.0)), PathPoint(GROUND, (0.0, 0.0, 0.0))]
#: the muscle flags read as 0/1 (and refused for the Schutte muscle)
_MUSCLE_FLAGS = ("ignore_tendon_compliance", "ignore_activation_dynamics")


class _ForceSetMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s reading of the ForceSet."""

    def _forces(self, model):
        doc = self.doc
        fset = self.model.find("ForceSet")
        muscles, kinds, params, path_wraps = {}, {}, {}, {}
        recorded, wrapped, never, locked_off, rigid = [], [], [], [], []
        if fset is None or fset.find("objects") is None:
            return muscles, kinds, params, tuple(recorded), tuple(wrapped), path_wraps
        self._locked_off = []
        actuators, disabled = [], []
        class_defaults = _class_defaults(self.model, self.prior_defaults)
        for f in fset.find("objects"):
            if not (f.get("name") or "").strip():
                raise doc.error(f, f"<{f.tag}> without a name attribute: mbjax names muscles, forces and their "
                                "results by it (OpenSim would make one up from the class); add name=\"...\"")
            if f.tag in PATH_SPRING_FORCES:  # force elements along a path of their own (never muscles)
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                    continue
                self._unknown_properties(f)
                if not applies_force(f, doc):  # OpenSim applies no force: nothing to model
                    continue
                _refuse_unapplied_defaults(doc, f, class_defaults)
                if f.find(FUNCTION_BASED_PATH) is not None:
                    raise doc.error(f, f"{f.tag} with a <FunctionBasedPath> is not modelled (only a <GeometryPath>); "
                                    f"pass ignore_forces=({f.tag!r},) to load the model without it",
                                    NotImplementedError)
                gp = f.find("GeometryPath")
                if gp is None:
                    raise doc.error(f, "path force without <GeometryPath>")
                pts, pw = self._geometry_path(f.get("name"), gp, never, locked_off, wrapped)
                self._path_springs.append((f, pts, pw))
                continue
            if f.tag in RECORDED_FORCES:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                    continue
                recorded.append((f.tag, f.get("name")))
                actuators.append(f)
                continue
            if f.tag in MODELLED_FORCES:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                else:
                    _refuse_unapplied_defaults(doc, f, class_defaults)
                    self._force_elements.append(f)
                continue
            has_path = f.find("GeometryPath") is not None or f.find(FUNCTION_BASED_PATH) is not None
            path_only = f.tag in self.ignore_forces and has_path
            if f.tag not in MUSCLE_TYPES and not path_only:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                    continue
                why = _REFUSED_FORCES.get(f.tag, "unsupported force")
                raise doc.error(f, f"{why}; supported path forces {MUSCLE_TYPES}, force elements "
                                f"{MODELLED_FORCES}, recorded {RECORDED_FORCES}. Pass ignore_forces=({f.tag!r},) to load the model without "
                                "it" + (" (its path is kept)" if has_path else ""),
                                NotImplementedError)
            if not path_only and not applies_force(f, doc):  # OpenSim applies no force of it in any tool
                disabled.append(doc.where(f))
                continue
            if path_only:
                self.ignored.append((f.tag, f.get("name")))
            else:
                self._unknown_properties(f)
            name = f.get("name")
            gp = f.find("GeometryPath")
            if f.find(FUNCTION_BASED_PATH) is not None:
                if gp is not None:
                    raise doc.error(f, "path force with both <GeometryPath> and <FunctionBasedPath>")
                self._function_based_path(f, name)
                muscles[name] = _NO_POINTS
                kinds[name] = f"{f.tag} (ignored)" if path_only else f.tag
                params[name] = _muscle_properties(doc, f, class_defaults.get(f.tag, ()))
                self._muscle_sources[name] = doc.where(f)
                if f.tag == SCHUTTE and not path_only:
                    self._schutte_curves[name] = self._schutte_muscle(f, params[name])
                if f.tag == THELEN and not path_only:
                    rigid += self._thelen_options(f, params[name])
                continue
            if gp is None:
                raise doc.error(f, "path force without <GeometryPath> or <FunctionBasedPath>")
            muscles[name], kept_wraps = self._geometry_path(name, gp, never, locked_off, wrapped)
            if kept_wraps:
                path_wraps[name] = kept_wraps
            kinds[name] = f"{f.tag} (ignored)" if path_only else f.tag
            params[name] = _muscle_properties(doc, f, class_defaults.get(f.tag, ()))
            self._muscle_sources[name] = doc.where(f)
            if f.tag == SCHUTTE and not path_only:
                self._schutte_curves[name] = self._schutte_muscle(f, params[name])
            if f.tag == THELEN and not path_only:
                rigid += self._thelen_options(f, params[name])
        if rigid:
            warnings.warn(f"{doc.path}: {len(rigid)} Thelen2003Muscle(s) with ignore_tendon_compliance=true, which "
                          "OpenSim 4.6 refuses at initSystem (not implemented for the class); mbjax computes them "
                          f"with a rigid tendon: {'; '.join(rigid)}", stacklevel=4)
        _warn_long_muscles(doc, params, self._muscle_sources)
        if disabled:
            warnings.warn(f"{doc.path}: {len(disabled)} path force(s) with appliesForce false left out of the model's "
                          "muscles (OpenSim applies no force of them; listed in model.osim.disabled_forces): "
                          + "; ".join(disabled), stacklevel=4)
        if wrapped and self.ignore_wrapping:
            warnings.warn(
                f"{doc.path}: wrapping ignored (straight lines), as asked by ignore_wrapping=True, for "
                f"{len(wrapped)} path(s): {', '.join(wrapped)}",
                stacklevel=4,
            )
            path_wraps = {}
        if never:
            warnings.warn(
                f"{doc.path}: {len(never)} ConditionalPathPoint(s) left out: their <range> has min > max + "
                f"{2 * CONDITIONAL_RANGE_TOLERANCE:g}, so OpenSim never activates them: {', '.join(never)}",
                stacklevel=4,
            )
        if locked_off:
            warnings.warn(
                f"{doc.path}: {len(locked_off)} ConditionalPathPoint(s) left out: their coordinate is locked at a "
                f"default value outside their <range>, so OpenSim never activates them: {', '.join(locked_off)}",
                stacklevel=4,
            )
        nested = [f"<{el.tag}>" for d in fset.findall("defaults") for el in d if isinstance(el.tag, str)]
        if nested:
            warnings.warn(f"{doc.where(fset.find('defaults'))}: the <defaults> of the model's <ForceSet> ({', '.join(nested)}) "
                          "are ignored, as OpenSim 4.6 ignores them (only the model's own <defaults> and those of a "
                          "force-set file read on its own apply): move them to the <Model>'s <defaults>", stacklevel=4)
        if actuators:  # a second <defaults> is listed among the unused elements (OpenSim reads the first)
            defaults = self.model.findall("defaults")[:1]
            self._actuators, _ = read_actuators(doc, actuators, version=self.version, defaults=defaults,
                                                inherited=self.prior_defaults)
            self._check_actuator_targets(actuators)
        return muscles, kinds, params, tuple(recorded), tuple(wrapped), path_wraps

    def _geometry_path(self, name, gp, never, locked_off, wrapped):
        """The points of the ``<GeometryPath>`` ``gp`` of path force ``name`` (conditional points that are
        never active left out, and named in ``never`` / ``locked_off``) and its path wraps (None
        without any, or with ``ignore_wrapping``); ``name`` is added to ``wrapped`` if it has wraps."""
        pset = gp.find("PathPointSet")
        if pset is None or pset.find("objects") is None:
            raise self.doc.error(gp, "GeometryPath without <PathPointSet><objects>")
        points = [(p, self._point(p)) for p in pset.find("objects")]
        never.extend(f"{name}/{p.get('name')}" for p, pt in points
                     if pt is None and p.get("name") not in self._locked_off)
        locked_off.extend(f"{name}/{p.get('name')}" for p, pt in points
                          if pt is None and p.get("name") in self._locked_off)
        self._locked_off = []
        wset = gp.find("PathWrapSet")
        pws = [w for w in (wset.find("objects") if wset is not None and wset.find("objects") is not None else [])]
        if pws:
            wrapped.append(name)
        kept_wraps = None
        if pws and not self.ignore_wrapping:
            kept = [k for k, (_, pt) in enumerate(points) if pt is not None]
            kept_wraps = [pw for pw in (self._path_wrap(w, kept, len(points)) for w in pws) if pw is not None] or None
        return [pt for _, pt in points if pt is not None], kept_wraps

    def _check_actuator_targets(self, elements):
        """Refuse an actuator on a coordinate or body the file lacks (OpenSim 4.6 fails at initSystem)."""
        by_name = {el.get("name"): el for el in elements}
        coordinates, bodies = tuple(self.coords.order), (GROUND, *self.bodies)
        for a in self._actuators:
            el = by_name.get(a.name, elements[0])
            if hasattr(a, "coordinate"):
                targets, known, what = (a.coordinate,), coordinates, "coordinate"
            else:
                targets = tuple(b for b in (getattr(a, "body", None), getattr(a, "body_a", None),
                                            getattr(a, "body_b", None)) if b is not None)
                known, what = bodies, "body"
            for t in targets:
                if t not in known and t.rsplit("/", 1)[-1] not in known:
                    raise self.doc.error(el, f"{type(a).__name__} {a.name!r} acts on the {what} {t!r}, which the "
                                         f"model does not have (its {what}s: {', '.join(known)}); OpenSim refuses it "
                                         "at initSystem: fix the name or remove the actuator")

    def _unknown_properties(self, f):
        """List in ``self.unused`` the children of path force ``f`` (and of its curve objects) that
        are no property OpenSim 4.6 declares for its class (a misspelt ``<max_isometric_forse>``
        would leave the default in force): OpenSim ignores them too."""
        doc, owner = self.doc, f"<{f.tag} name={f.get('name')!r}>"
        known = PATH_FORCE_PROPERTIES.get(f.tag, ())
        functions = PATH_FORCE_FUNCTIONS.get(f.tag, ())
        for c in f:
            if not isinstance(c.tag, str):
                continue
            if c.tag in FUNCTION_TYPES and c.get("name") in functions:
                continue
            if c.tag not in known:
                self.unused.append(f"line {doc.lines.get(c, '?')} <{c.tag}> in {owner} (not a property of "
                                   f"{f.tag}; check the spelling)")
            elif c.tag in CURVE_PROPERTIES:
                for g in c:
                    if isinstance(g.tag, str) and g.tag not in CURVE_PROPERTIES[c.tag]:
                        self.unused.append(f"line {doc.lines.get(g, '?')} <{g.tag}> in {owner}/<{c.tag}> (not a "
                                           f"property of {c.tag}; check the spelling)")

    def _thelen_options(self, f, props) -> list[str]:
        """Refuse a Thelen2003Muscle whose minimum control is below its minimum activation, as
        ``Thelen2003Muscle::extendFinalizeFromProperties`` does (min_control defaults to 0.01; a
        ``<min_control>0`` of a document older than 30513 is dropped, as ``Muscle::updateFromXMLNode``
        drops it); the muscle's place if it asks for a rigid tendon."""
        given = props.get("min_control")
        if given == 0.0 and self.version < MIN_CONTROL_VERSION:
            given = None
        low, least = (0.01 if given is None else given), props.get("minimum_activation", 0.01)
        if low < least and 0.01 <= least < 1:  # a minimum_activation out of its own range: the muscle rules
            raise self.doc.error(f, f"muscle {f.get('name')!r}: min_control {low:g}"
                                 f"{' (the default)' if given is None else ''} is below minimum_activation "
                                 f"{least:g} (OpenSim 4.6 refuses it too: minimum control cannot be less than "
                                 "minimum activation); give <min_control> at least the minimum activation")
        return [self.doc.where(f)] if props.get("ignore_tendon_compliance", 0.0) > 0.5 else []

    def _schutte_muscle(self, f, props):
        """The curves of a ``Schutte1993Muscle_Deprecated`` (``{curve: PPData}``, absent = default);
        the two ``ignore_*`` flags OpenSim refuses for the class are refused here too."""
        doc = self.doc
        for flag in _MUSCLE_FLAGS:
            if props.get(flag, 0.0) > 0.5:
                raise doc.error(f, f"{SCHUTTE} with {flag}=true: OpenSim refuses the flag for this class "
                                "(ActivationFiberLengthMuscle_Deprecated::extendAddToSystem)", NotImplementedError)
        out = {}
        for c in f:
            if c.tag in SCHUTTE_CURVES:  # 3.x: <tendon_force_length_curve><SimmSpline>...
                out[c.tag] = _pp(doc, _function_element(doc, c))
            elif c.get("name") in SCHUTTE_CURVES and len(c):  # 4.x: <SimmSpline name="tendon_force_length_curve">
                if c.tag not in FUNCTION_TYPES:
                    raise doc.error(c, f"unsupported function type for {c.get('name')}; supported: {FUNCTION_TYPES}",
                                    NotImplementedError)
                out[c.get("name")] = _pp(doc, c)
        return out



def _warn_long_muscles(doc, params, sources):
    """One warning naming the muscles whose fibre or tendon slack length exceeds :data:`LONGEST_MUSCLE_LENGTH`."""
    long = [f"{sources.get(name, doc.path)} muscle {name!r}: <{key}> {p[key]:g}"
            for name, p in params.items() for key in ("optimal_fiber_length", "tendon_slack_length")
            if p.get(key, 0.0) > LONGEST_MUSCLE_LENGTH]
    if long:
        warnings.warn(f"{doc.path}: muscle length(s) longer than {LONGEST_MUSCLE_LENGTH:g} m, implausible for a "
                      "human muscle; they look like millimetres (OpenSim reads metres: divide by 1000): "
                      + "; ".join(long), UserWarning, stacklevel=5)


def _class_defaults(model_el, prior=()) -> dict:
    """The default objects of each class, oldest first: those of the ``prior`` ``<defaults>`` elements
    (documents OpenSim read before the model, e.g. a tool's setup file), then the model's first
    ``<defaults>``, as OpenSim reads them: an element that leaves a property out takes the latest
    default object's value, not the class's built-in one (``Object::updateDefaultObjectsFromXMLNode``,
    which reads a document's first ``<defaults>`` only and changes the process-wide default objects)."""
    out = {}
    own = model_el.find("defaults")
    for d in (*prior, *(() if own is None else (own,))):
        for el in d:
            if isinstance(el.tag, str) and el.get("name") == "default":
                out.setdefault(el.tag, []).append(el)
    return out


def _refuse_unapplied_defaults(doc, f, class_defaults) -> None:
    """Refuse a force element that leaves out a property the model's ``<defaults>`` object of its class
    sets: OpenSim would take that value, and mbjax reads ``<defaults>`` for muscles and actuators only."""
    missing = sorted({c.tag for d in class_defaults.get(f.tag, ()) for c in d
                      if isinstance(c.tag, str) and f.find(c.tag) is None})
    if missing:
        raise doc.error(f, f"{f.tag} {f.get('name')!r} leaves out {missing}, which a <defaults> object of {f.tag} "
                           "sets (the model's, or a tool setup file's read before it; OpenSim takes those values, "
                           "mbjax applies <defaults> to muscles and actuators only): write them in the element",
                        NotImplementedError)


def _muscle_properties(doc, f, defaults=()) -> dict[str, float]:
    """Scalar properties of a muscle element: numbers, the two ``ignore_*`` flags as 0/1, and the
    properties of its curve elements (``<ActiveForceLengthCurve>`` ...) as ``"Curve.property"``;
    ``defaults``: the model's ``<defaults>`` objects of the muscle's class, whose properties stand for
    those the muscle leaves out.

    A property mbjax reads as a number (:data:`~mbjax.muscles.parameter_rules.NUMERIC_PROPERTIES`)
    that does not parse (``1,500``) or is NaN is refused by file, line, muscle and property: OpenSim
    would not read it either, and a silent default would be a different muscle."""
    out = {}

    def number(el, key, text):
        try:
            value = float(text)
        except ValueError:
            if key in NUMERIC_PROPERTIES:
                raise doc.error(el, f"muscle {f.get('name')!r}: <{el.tag}> must be a number, got "
                                    f"{text.strip()!r}") from None
            return
        if key in NUMERIC_PROPERTIES and np.isnan(value):
            raise doc.error(el, f"muscle {f.get('name')!r}: <{el.tag}> is NaN (leave the property out "
                                "for OpenSim's default)")
        out[key] = value

    for source in (*defaults, f):  # the muscle's own values last
        for c in source:
            if c.text is not None and len(c) == 0 and c.tag not in _MUSCLE_FLAGS and c.text.strip():
                number(c, c.tag, c.text)
            elif c.tag in _MUSCLE_FLAGS and c.text is not None:
                out[c.tag] = 1.0 if c.text.strip().lower() == "true" else 0.0
            elif c.tag.endswith("Curve") and len(c):
                for g in c:
                    if g.text is not None and len(g) == 0 and g.text.strip():
                        number(g, f"{c.tag}.{g.tag}", g.text)
    return out
