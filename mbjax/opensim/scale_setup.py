"""OpenSim ``ScaleTool`` setup files (``read_scale_setup``): subject mass, the generic model and
scale marker set, the ``ModelScaler`` (scaling order, marker-pair measurements with the bodies
they scale, manual scales, time range, mass distribution) and the ``MarkerPlacer`` (IK tasks, time
range, ``max_marker_movement``), the files the tool writes (mbjax writes none of them) and the
subject's ``height``, ``age`` and ``notes`` (OpenSim keeps them for information).  Paths are made
absolute (relative to the setup file); only uniform ``X Y Z`` body scales are supported
(``NotImplementedError`` naming the line otherwise).  A flag other than true/false, a ``time_range``
that is not two times in order, an unknown ``scaling_order`` step, a negative weight or manual
``scales`` that are not finite and positive (a negative factor mirrors the body) is refused naming the
element and line; elements OpenSim's ScaleTool does not know (and a ``MarkerPlacer``
``coordinate_file``, not read) are named in a warning."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

from ..io.coordinate_task import VALUE_TYPES, CoordinateTask
from .setup_xml import SetupFile


class Measurement(NamedTuple):
    name: str
    pairs: tuple  # ((marker, marker), ...)
    bodies: tuple  # body names it scales


class ScaleSetup(NamedTuple):
    mass: float | None  # the subject's mass (kg), None: keep the scaled model's masses (OpenSim's <= 0)
    model_file: str | None
    marker_set_file: str | None
    scaling_order: tuple
    measurements: tuple  # Measurement, applied ones only
    manual: dict  # body -> factor (applied manual scales)
    scaler_marker_file: str | None
    scaler_time_range: tuple
    preserve_mass_distribution: bool
    placer_marker_file: str | None
    placer_time_range: tuple
    marker_weights: dict  # applied IKMarkerTask name -> weight
    coordinate_tasks: dict  # applied IKCoordinateTask name -> CoordinateTask
    #: the MarkerPlacer's limit on a marker's movement over the averaged static frames, in the units of
    #: its marker file (OpenSim's default -1: none); pass it to
    #: :func:`mbjax.analysis.identify.average_frames`, which warns as OpenSim does
    max_marker_movement: float = -1.0
    #: ``"file:line: <max_marker_movement>"`` when the element is given, for that warning
    max_marker_movement_where: str | None = None
    #: the files OpenSim's ModelScaler and MarkerPlacer write (None: not asked for); mbjax writes none
    scaler_output_model_file: str | None = None
    scaler_output_scale_file: str | None = None
    placer_output_model_file: str | None = None
    placer_output_motion_file: str | None = None
    placer_output_marker_file: str | None = None
    #: the subject's height and age and the setup's notes, as given (OpenSim uses none of them)
    height: float | None = None
    age: float | None = None
    notes: str | None = None


def _floats(setup, el, tag):
    txt = setup.text(el, tag)
    if txt is None:
        return ()
    try:
        return tuple(float(v) for v in txt.split())
    except ValueError:
        raise setup.doc.error(el.find(tag), f"<{tag}> must hold numbers, got {txt!r}") from None


def _subject_mass(setup, tool) -> float | None:
    """``<mass>``: the subject's mass, or None where OpenSim keeps the model's masses.

    ``Model::scale`` rescales to the subject's mass only when it is > 0; the default ``-1`` means
    "keep".  Another value <= 0 is kept as OpenSim keeps it, with a warning naming the line (a typed
    ``-72.6`` is more likely a mistake than a request); NaN or inf is refused."""
    values = _floats(setup, tool, "mass")
    if not values:
        return None
    if len(values) != 1 or not math.isfinite(values[0]):
        raise setup.doc.error(tool.find("mass"), f"<mass> must be one finite number (kg), got {values}")
    mass = values[0]
    if mass > 0:
        if not 1 <= mass <= 500:
            warnings.warn(f"{setup.doc.where(tool.find('mass'))}: subject mass {mass:g} kg is implausible for a human "
                          f"(expected 1..500 kg){'; it looks like grams' if mass > 500 else ''}; <mass> is in kg",
                          stacklevel=4)
        return mass
    if mass != -1.0:
        warnings.warn(f"{setup.doc.where(tool.find('mass'))}: subject mass {mass} <= 0: the model's masses are "
                      "kept unscaled to a subject mass, as OpenSim does (-1 says so without this warning)",
                      stacklevel=3)
    return None


#: the properties OpenSim's ``ScaleTool`` and its parts read, by element
_KNOWN = {
    "ScaleTool": ("mass", "height", "age", "notes", "GenericModelMaker", "ModelScaler", "MarkerPlacer"),
    "GenericModelMaker": ("model_file", "marker_set_file"),
    "ModelScaler": ("apply", "scaling_order", "MeasurementSet", "ScaleSet", "marker_file", "time_range",
                    "preserve_mass_distribution", "output_model_file", "output_scale_file"),
    "MarkerPlacer": ("apply", "IKTaskSet", "marker_file", "coordinate_file", "time_range", "output_motion_file",
                     "output_model_file", "output_marker_file", "max_marker_movement"),
}
#: the ``scaling_order`` steps ``ModelScaler`` knows
_STEPS = ("measurements", "manualScale")


def _bool(setup, el, tag, default=True):
    """A true/false element (``1``/``0`` too); another value is refused naming the element."""
    return setup.flag(el, tag, default)


def _applied(setup, el):
    return _bool(setup, el, "apply")


def _time_range(setup, el):
    """``<time_range>``: two finite numbers, start <= end (``()`` when absent)."""
    rng = _floats(setup, el, "time_range")
    if rng and (len(rng) != 2 or not all(math.isfinite(v) for v in rng) or rng[0] > rng[1]):
        raise setup.doc.error(el.find("time_range"), f"<time_range> must be two finite times, start <= end, got "
                              f"{setup.text(el, 'time_range')!r}")
    return rng


def _weight(setup, el):
    w = _floats(setup, el, "weight") or (1.0,)
    if len(w) != 1 or not math.isfinite(w[0]) or w[0] < 0:
        raise setup.doc.error(el.find("weight"), f"<weight> must be one finite number >= 0, got "
                              f"{setup.text(el, 'weight')!r}")
    return w[0]


def _unknown(setup, tool):
    """The elements of the tool and its parts that OpenSim's ScaleTool does not read (misspellings)."""
    out = []
    for el in [tool] + [tool.find(k) for k in ("GenericModelMaker", "ModelScaler", "MarkerPlacer")]:
        if el is None:
            continue
        out += [f"<{c.tag}> in <{el.tag}> (line {setup.doc.lines.get(c, '?')})" for c in el
                if isinstance(c.tag, str) and c.tag not in _KNOWN[el.tag]]
    return out


def read_scale_setup(path) -> ScaleSetup:
    """Read a ``ScaleTool`` setup XML (see the module docstring)."""
    setup = SetupFile(path)
    root = setup.root
    tool = root if root.tag == "ScaleTool" else root.find("ScaleTool")
    if tool is None:
        raise ValueError(f"{setup.path}: no <ScaleTool>")
    tool = setup.tool("ScaleTool")  # one tool per file; a property given twice warned
    mass = _subject_mass(setup, tool)
    gmm = tool.find("GenericModelMaker")
    scaler = tool.find("ModelScaler")
    placer = tool.find("MarkerPlacer")
    measurements, manual = [], {}
    order, scaler_file, scaler_range, preserve = (), None, (), True
    if scaler is not None and _applied(setup, scaler):
        order = tuple((setup.text(scaler, "scaling_order") or "").split())
        wrong = [o for o in order if o not in _STEPS]
        if wrong:
            raise setup.doc.error(scaler.find("scaling_order"), f"unknown scaling step(s) {wrong}; the steps are "
                                  f"{list(_STEPS)}")
        for meas in scaler.iter("Measurement"):
            if not _applied(setup, meas):
                continue
            pairs = tuple(tuple((setup.text(p, "markers") or "").split()) for p in meas.iter("MarkerPair"))
            bad = [p for p in pairs if len(p) != 2]
            if bad:
                raise setup.doc.error(meas, f"a MarkerPair must name two markers, got {bad}")
            bodies = []
            for bs in meas.iter("BodyScale"):
                axes = (setup.text(bs, "axes") or "").split()
                if sorted(axes) != ["X", "Y", "Z"]:
                    raise setup.doc.error(bs, f"only uniform 'X Y Z' body scales are supported, got {axes}",
                                          NotImplementedError)
                bodies.append(bs.get("name"))
            measurements.append(Measurement(meas.get("name"), pairs, tuple(bodies)))
        sset = scaler.find("ScaleSet")
        for sc in (sset.iter("Scale") if sset is not None else []):
            if not _applied(setup, sc):
                continue
            f = _floats(setup, sc, "scales")
            seg = setup.text(sc, "segment")
            if len(f) != 3 or not all(math.isfinite(v) for v in f):
                raise setup.doc.error(sc.find("scales"), f"<scales> of segment {seg!r} must be three finite "
                                      f"factors, got {setup.text(sc, 'scales')!r}")
            if min(f) <= 0:
                raise setup.doc.error(sc.find("scales"), f"<scales> of segment {seg!r} must be positive, got "
                                      f"{setup.text(sc, 'scales')!r} (a negative factor mirrors the body, zero "
                                      "collapses it); give factors > 0")
            if len(set(f)) != 1:
                raise setup.doc.error(sc, f"only uniform manual scales are supported, got {f}", NotImplementedError)
            if not 0.1 <= f[0] <= 10:  # no human segment is scaled so
                hint = " (it looks like a percentage: a factor is a ratio, 110 % is 1.10)" if 10 < f[0] <= 1000 else ""
                warnings.warn(f"{setup.doc.where(sc)}: implausible <scales> {f[0]:g} for segment {seg!r} of a human "
                              f"subject (expected 0.1..10){hint}", stacklevel=3)
            manual[setup.text(sc, "segment")] = f[0]
        scaler_file = setup.resolve(setup.text(scaler, "marker_file"))
        scaler_range = _time_range(setup, scaler)
        preserve = _bool(setup, scaler, "preserve_mass_distribution")
        outputs = {f"scaler_{tag}": setup.file(scaler, tag) for tag in ("output_model_file", "output_scale_file")}
    else:
        outputs = {}
    weights, tasks, placer_file, placer_range, unused = {}, {}, None, (), []
    movement, movement_where = -1.0, None
    if placer is not None and _applied(setup, placer):
        for el in placer.iter():
            if el.tag not in ("IKMarkerTask", "IKCoordinateTask") or not _applied(setup, el):
                continue
            w = (_weight(setup, el),)
            if el.tag == "IKMarkerTask":
                weights[el.get("name")] = w[0]
            else:
                v = _floats(setup, el, "value") or (0.0,)
                vt = setup.text(el, "value_type") or "default_value"
                if vt not in VALUE_TYPES:
                    raise setup.doc.error(el, f"<value_type> {vt!r} is not a value type of an IKCoordinateTask; give "
                                              f"one of {', '.join(VALUE_TYPES)}")
                tasks[el.get("name")] = CoordinateTask(w[0], vt, v[0])
        placer_file = setup.resolve(setup.text(placer, "marker_file"))
        placer_range = _time_range(setup, placer)
        movement = setup.number(placer, "max_marker_movement", -1.0)
        if not math.isfinite(movement):
            raise setup.doc.error(placer.find("max_marker_movement"), "<max_marker_movement> must be a finite "
                                  "distance in the marker file's units, or -1 for no limit; got "
                                  f"{setup.text(placer, 'max_marker_movement')!r}")
        if setup.text(placer, "max_marker_movement") is not None:
            movement_where = setup.doc.where(placer.find("max_marker_movement"))
        outputs.update({f"placer_{tag}": setup.file(placer, tag)
                        for tag in ("output_model_file", "output_motion_file", "output_marker_file")})
        if setup.text(placer, "coordinate_file") is not None:
            line = setup.doc.lines.get(placer.find("coordinate_file"), "?")
            unused.append(f"<coordinate_file> in <MarkerPlacer> (line {line}): mbjax's coordinate tasks take "
                          "default_value or manual_value, never values from a file")
    unused = _unknown(setup, tool) + unused
    if unused:
        warnings.warn(f"{setup.path}: not read by mbjax (misspelt, or not used): " + "; ".join(unused), stacklevel=2)
    return ScaleSetup(
        mass=mass,
        model_file=setup.resolve(setup.text(gmm, "model_file")) if gmm is not None else None,
        marker_set_file=setup.resolve(setup.text(gmm, "marker_set_file")) if gmm is not None else None,
        scaling_order=order, measurements=tuple(measurements), manual=manual, scaler_marker_file=scaler_file,
        scaler_time_range=scaler_range, preserve_mass_distribution=preserve, placer_marker_file=placer_file,
        placer_time_range=placer_range, marker_weights=weights, coordinate_tasks=tasks, max_marker_movement=movement,
        max_marker_movement_where=movement_where, **outputs, height=setup.number(tool, "height", None),
        age=setup.number(tool, "age", None), notes=setup.text(tool, "notes"))
