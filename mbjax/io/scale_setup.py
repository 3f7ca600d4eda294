"""OpenSim ``ScaleTool`` setup files (``read_scale_setup``): subject mass, the generic model and
scale marker set, the ``ModelScaler`` (scaling order, marker-pair measurements with the bodies
they scale, manual scales, time range, mass distribution) and the ``MarkerPlacer`` (IK tasks, time
range).  Paths are made absolute (relative to the setup file); only uniform ``X Y Z`` body scales are
supported (``NotImplementedError`` naming the line otherwise)."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

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
        return mass
    if mass != -1.0:
        warnings.warn(f"{setup.doc.where(tool.find('mass'))}: subject mass {mass} <= 0: the model's masses are "
                      "kept unscaled to a subject mass, as OpenSim does (-1 says so without this warning)",
                      stacklevel=3)
    return None


def _applied(setup, el):
    txt = setup.text(el, "apply")
    return txt is None or txt.lower() in ("true", "1")


def read_scale_setup(path) -> ScaleSetup:
    """Read a ``ScaleTool`` setup XML (see the module docstring)."""
    setup = SetupFile(path)
    root = setup.root
    tool = root if root.tag == "ScaleTool" else root.find("ScaleTool")
    if tool is None:
        raise ValueError(f"{setup.path}: no <ScaleTool>")
    mass = _subject_mass(setup, tool)
    gmm = tool.find("GenericModelMaker")
    scaler = tool.find("ModelScaler")
    placer = tool.find("MarkerPlacer")
    measurements, manual = [], {}
    order, scaler_file, scaler_range, preserve = (), None, (), True
    if scaler is not None and _applied(setup, scaler):
        order = tuple((setup.text(scaler, "scaling_order") or "").split())
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
            if len(f) != 3 or len(set(f)) != 1:
                raise setup.doc.error(sc, f"only uniform manual scales are supported, got {f}", NotImplementedError)
            manual[setup.text(sc, "segment")] = f[0]
        scaler_file = setup.resolve(setup.text(scaler, "marker_file"))
        scaler_range = _floats(setup, scaler, "time_range")
        pm = setup.text(scaler, "preserve_mass_distribution")
        preserve = pm is None or pm.lower() in ("true", "1")
    weights, tasks, placer_file, placer_range = {}, {}, None, ()
    if placer is not None and _applied(setup, placer):
        for el in placer.iter():
            if el.tag not in ("IKMarkerTask", "IKCoordinateTask") or not _applied(setup, el):
                continue
            w = _floats(setup, el, "weight") or (1.0,)
            if el.tag == "IKMarkerTask":
                weights[el.get("name")] = w[0]
            else:
                v = _floats(setup, el, "value") or (0.0,)
                from ..ik import CoordinateTask  # here: mbjax.ik imports mbjax.io

                tasks[el.get("name")] = CoordinateTask(w[0], setup.text(el, "value_type") or "default_value", v[0])
        placer_file = setup.resolve(setup.text(placer, "marker_file"))
        placer_range = _floats(setup, placer, "time_range")
    return ScaleSetup(
        mass=mass,
        model_file=setup.resolve(setup.text(gmm, "model_file")) if gmm is not None else None,
        marker_set_file=setup.resolve(setup.text(gmm, "marker_set_file")) if gmm is not None else None,
        scaling_order=order, measurements=tuple(measurements), manual=manual, scaler_marker_file=scaler_file,
        scaler_time_range=scaler_range, preserve_mass_distribution=preserve, placer_marker_file=placer_file,
        placer_time_range=placer_range, marker_weights=weights, coordinate_tasks=tasks)
