"""OpenSim's ``InverseKinematicsTool`` setup files: read one (:func:`read_ik_setup`), run it
(:func:`inverse_kinematics_from_setup`) and write the files the tool writes (the motion, the marker
errors)."""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np

from ...io.arguments import refuse_setup_keywords
from ...io.storage import Table, prepare_output, read_storage, read_trc, table_from_coordinates, write_storage
from ..setup_xml import SetupFile
from .setup_model import setup_model
from ..._model import require_model
from ...markers import Markers
from ...analysis.ik.checks import _default_tolerance
from ...analysis.ik.coordinate_tasks import CoordinateTask
from ...io.coordinate_task import VALUE_TYPES
from ...analysis.ik.solve import IKResult, inverse_kinematics

__all__ = ["IKSetup", "inverse_kinematics_from_setup", "read_ik_setup", "write_ik_marker_errors", "write_ik_motion"]


class IKSetup(NamedTuple):
    """What an OpenSim ``InverseKinematicsTool`` setup file says (paths made absolute)."""

    model_file: str | None
    marker_file: str | None
    coordinate_file: str | None
    output_motion_file: str | None
    time_range: tuple[float, float] | None
    accuracy: float
    constraint_weight: float
    marker_weights: dict
    coordinate_tasks: dict
    #: ``<results_directory>/<tool name>_ik_marker_errors.sto`` when ``<report_errors>`` (OpenSim's
    #: default true), else None
    errors_file: str | None = None
    #: the ``IKMarkerTask`` names switched off (``<apply> false``)
    marker_tasks_off: tuple = ()
    #: ``{coordinate task name: "file:line: <IKCoordinateTask name=...>"}``, for the messages
    coordinate_task_where: dict | None = None


def read_ik_setup(path) -> IKSetup:
    """Read an OpenSim ``InverseKinematicsTool`` setup XML (3.x or 4.x): files, time range, accuracy,
    marker weights (applied ``IKMarkerTask``) and coordinate tasks (applied ``IKCoordinateTask``)."""

    setup = SetupFile(path)
    path, doc, base = setup.path, setup.doc, setup.base
    tool = setup.tool("InverseKinematicsTool")

    def file_of(tag):
        return setup.file(tool, tag)

    def number(el, tag, default):
        try:
            return setup.number(el, tag, default)
        except ValueError:
            if el is tool:
                raise
            raise doc.error(el, f"<{tag}> must be a number, got {setup.text(el, tag)!r}") from None  # names the task

    time_range = setup.time_range(tool)
    marker_w, coord_t, off, unused, marker_el, task_where = {}, {}, [], [], {}, {}
    tasks = tool.find("IKTaskSet")
    objs = tasks.find("objects") if tasks is not None else None
    if tasks is not None:
        loose = [c for c in tasks if isinstance(c.tag, str) and c.tag in _TASK_READ]
        if loose:
            raise doc.error(tasks, f"its {len(loose)} task(s) (the first <{loose[0].tag} name="
                            f"{loose[0].get('name')!r}> at line {doc.lines.get(loose[0], '?')}) sit directly in "
                            "<IKTaskSet>: put them inside <objects>...</objects> in it (OpenSim reads no task "
                            "outside <objects>)")
        unused += setup.unknown(tasks, ("objects", "groups"), doc.where(tasks).split(": ", 1)[1])
    for el in (objs if objs is not None else []):
        if not isinstance(el.tag, str):
            continue
        if el.tag in _TASK_READ:
            unused += setup.unknown(el, _TASK_READ[el.tag], f"<{el.tag} name={el.get('name')!r}>")
        apply = setup.flag(el, "apply", True)
        if not apply:
            if el.tag == "IKMarkerTask":
                off.append((el.get("name") or "").strip())
            continue
        weight = number(el, "weight", 1.0)
        if not (np.isfinite(weight) and weight >= 0):
            raise doc.error(el, f"<weight> must be a finite number >= 0, got {setup.text(el, 'weight')!r}")
        name = (el.get("name") or "").strip()
        if el.tag == "IKMarkerTask":
            if not name:  # OpenSim's MarkerWeight "" matches no marker
                warnings.warn(f"{doc.where(el)}: an <IKMarkerTask> without a name tracks no marker; ignored "
                              "(give it the name of the marker to track)", stacklevel=2)
                continue
            if name in marker_w:  # OpenSim's MarkerWeight set: the first task of a name is the one used
                warnings.warn(f"{doc.where(el)}: a second applied <IKMarkerTask> for marker {name!r} (weight "
                              f"{weight:g}); OpenSim uses the first one (line {doc.lines.get(marker_el[name], '?')}, "
                              f"weight {marker_w[name]:g}) and so does mbjax: remove one of them", stacklevel=2)
                continue
            marker_w[name], marker_el[name] = weight, el
        elif el.tag == "IKCoordinateTask":
            if not name:  # OpenSim finds no coordinate "" and fails
                raise doc.error(el, "an <IKCoordinateTask> without a name: give it the name of the coordinate "
                                "to track")
            vt = (el.findtext("value_type") or "default_value").strip()
            if vt not in VALUE_TYPES:  # OpenSim's IKCoordinateTask knows these three
                raise doc.error(el, f"<value_type> {vt!r} is not a value type of an IKCoordinateTask; give one of "
                                f"{', '.join(VALUE_TYPES)}")
            if vt == "from_file" and setup.text(tool, "coordinate_file") is None:
                raise doc.error(el, "<value_type> is from_file but the setup's <coordinate_file> is empty; give "
                                "the coordinates file (.mot/.sto) in <coordinate_file>, or set <value_type> to "
                                "default_value or manual_value")
            coord_t[name] = CoordinateTask(weight, vt, number(el, "value", 0.0))
            task_where[name] = doc.where(el)
        else:
            raise ValueError(f"{path}: unknown IK task <{el.tag}>")
    constraint_weight = number(tool, "constraint_weight", float("inf"))
    unused = setup.unknown(tool, _IK_READ + _IK_IGNORED) + unused
    if setup.flag(tool, "report_marker_locations", False):
        unused.append("<report_marker_locations> true (the model's marker locations file is not written)")
    errors_file = None
    if setup.flag(tool, "report_errors", True):
        results = file_of("results_directory") or base
        errors_file = os.path.join(results, f"{tool.get('name') or ''}_ik_marker_errors.sto")
    if np.isfinite(constraint_weight):
        unused.append(f"<constraint_weight> {constraint_weight:g} (mbjax eliminates the model's constraints, "
                      "so they hold exactly, as OpenSim's default weight Infinity has them)")
    if unused:
        warnings.warn(f"{path}: not used by mbjax's inverse kinematics: " + "; ".join(unused), stacklevel=2)
    return IKSetup(file_of("model_file"), file_of("marker_file"), file_of("coordinate_file"),
                   file_of("output_motion_file"), time_range, number(tool, "accuracy", 1e-5),
                   constraint_weight, marker_w, coord_t, errors_file, tuple(off), task_where)


def check_coordinate_tasks(setup: IKSetup, coordinates, model_file=None) -> None:
    """Refuse an ``IKCoordinateTask`` naming no coordinate of the model (``coordinates``: every
    coordinate's name, locked and coupled ones included), naming the setup file, the task's line and
    the model's coordinates."""
    for name in setup.coordinate_tasks:
        if name not in coordinates:
            where = (setup.coordinate_task_where or {}).get(name, f"<IKCoordinateTask name={name!r}>")
            of = f" {model_file}" if model_file else ""
            raise ValueError(f"{where}: no coordinate {name!r} in the model{of}; its coordinates are "
                             f"{tuple(coordinates)}: give the task the name of one of them")


def check_coordinate_tasks_of_file(setup: IKSetup, model_file) -> None:
    """:func:`check_coordinate_tasks` against the coordinates an ``.osim`` file lists, read without
    building the model (a file that cannot be read is left to the model's loader to report)."""
    from ..model.osim_summary import summarize_osim

    if not setup.coordinate_tasks or model_file is None or not os.path.isfile(model_file):
        return
    try:
        names = [c.name for c in summarize_osim(model_file).coordinates]
    except (OSError, ValueError):
        return
    check_coordinate_tasks(setup, names, model_file)


def write_ik_marker_errors(path, result: IKResult) -> None:
    """OpenSim's ``<name>_ik_marker_errors.sto`` (``InverseKinematicsTool::run`` with
    ``report_errors``): per frame ``total_squared_error`` (Σ |e|² over the markers present, m²),
    ``marker_error_RMS`` (√(total / tracked markers), those missing in the frame counted, as
    OpenSim divides by ``getNumMarkersInUse``) and ``marker_error_max`` (m)."""
    err = np.asarray(result.marker_errors, float)
    total = np.nansum(err ** 2, axis=1)
    table = Table(np.asarray(result.time, float), ("total_squared_error", "marker_error_RMS", "marker_error_max"),
                  np.stack([total, result.rms, result.max], axis=1), False, {"name": "Model Marker Errors from IK"})
    write_storage(prepare_output(path, None, "IK marker errors file"), table, format="storage")


#: InverseKinematicsTool properties read by :func:`read_ik_setup`, and those that change nothing
#: mbjax computes (``results_directory`` and ``input_directory`` locate OpenSim's own extra files)
_IK_READ = ("model_file", "marker_file", "coordinate_file", "output_motion_file", "time_range", "accuracy",
            "constraint_weight", "IKTaskSet", "report_errors", "report_marker_locations")
_IK_IGNORED = ("results_directory", "input_directory", "defaults")
#: the properties of OpenSim's IK tasks
_TASK_READ = {"IKMarkerTask": ("apply", "weight"), "IKCoordinateTask": ("apply", "weight", "value_type", "value")}


def _nearest_row(time: np.ndarray, t: float) -> int:
    """``TimeSeriesTable::getNearestRowIndexForTime``: the row whose time is closest to ``t``."""
    return int(np.argmin(np.abs(time - t)))


#: the inverse_kinematics arguments an InverseKinematicsTool setup gives
_IK_KEYWORDS = {"weights": "<IKMarkerTask> weights", "coordinate_tasks": "<IKCoordinateTask>",
                "coordinate_data": "<coordinate_file>", "data": "<marker_file>"}


def inverse_kinematics_from_setup(path, model=None, markers: Markers | None = None, *, accuracy: float | None = None,
                                  write: bool = False, output_motion_file=None, **kwargs) -> IKResult:
    """Run an OpenSim IK setup file with :func:`inverse_kinematics`: its model (unless ``model`` /
    ``markers`` are given), marker file, time range (rows nearest to its ends, as OpenSim picks
    them), marker weights, coordinate tasks and accuracy.  ``kwargs`` go to :func:`inverse_kinematics`.

    With ``write`` (or an ``output_motion_file``), the motion is written as OpenSim's IK tool writes
    it (:func:`write_ik_motion`: every coordinate, degrees) to ``output_motion_file`` or the setup's
    ``<output_motion_file>``; its folder is made and checked writable before solving.

    **Accuracy**: the file's ``<accuracy>`` (or ``accuracy=``) is the solver's ``rtol = atol``
    (:func:`inverse_kinematics`' Cauchy test on the steps and the objective), not below the dtype's
    default (1e-9 in float64, 1e-5 in float32); explicit ``rtol`` / ``atol`` take precedence.  That
    test is stricter than OpenSim's: at the file's accuracy mbjax's coordinates lie closer to the
    optimum than OpenSim 4.6's tool's, in fewer Levenberg-Marquardt steps than at 1e-9
    (``benchmarks/RESULTS.md``)."""
    from ..model.osim_markers import load_markers

    if model is not None:
        require_model(model, "inverse_kinematics_from_setup")
    refuse_setup_keywords("inverse_kinematics_from_setup", kwargs, _IK_KEYWORDS, "inverse_kinematics")
    setup = read_ik_setup(path)
    out = None
    if write or output_motion_file is not None:
        out = output_motion_file if output_motion_file is not None else setup.output_motion_file
        if out is None:
            raise ValueError(f"{path}: no <output_motion_file> to write; pass output_motion_file=")
        own = [("model_file", setup.model_file), ("marker_file", setup.marker_file),
               ("coordinate_file", setup.coordinate_file)]
        out = prepare_output(out, path, "IK output motion file", own)
        if setup.errors_file is not None:  # checked against the inputs too, before the solve
            prepare_output(setup.errors_file if output_motion_file is None else os.path.join(
                os.path.dirname(out), os.path.basename(setup.errors_file)), path, "IK marker errors file", own)
    acc = setup.accuracy if accuracy is None else float(accuracy)
    if not (np.isfinite(acc) and acc > 0):
        raise ValueError(f"{path}: the IK accuracy must be a positive number, got {acc} "
                         f"({'<accuracy> in the file' if accuracy is None else 'accuracy='})")
    kwargs.setdefault("rtol", max(acc, _default_tolerance()))
    kwargs.setdefault("atol", max(acc, _default_tolerance()))
    if not setup.marker_weights:
        why = (f"every <IKMarkerTask> is switched off (<apply> false: {', '.join(map(repr, setup.marker_tasks_off))})"
               if setup.marker_tasks_off else "its <IKTaskSet> has no applied, named <IKMarkerTask>")
        raise ValueError(f"{path}: no marker to track: {why}; set <apply> true in the tasks of the markers to track")
    if setup.marker_file is None:
        raise ValueError(f"{path}: no <marker_file>")
    for tag, file in (("marker_file", setup.marker_file), ("coordinate_file", setup.coordinate_file)):
        if file is not None and not os.path.isfile(file):  # checked before the model is loaded
            raise FileNotFoundError(f"{path}: <{tag}> {file}: not found (paths are relative to the setup "
                                    "file's folder)")
    model_given = model is not None
    if model is None and setup.model_file is not None:
        check_coordinate_tasks_of_file(setup, setup.model_file)  # before the model is built
    model = setup_model(path, setup.model_file, model)
    info = model.osim
    check_coordinate_tasks(setup, [n for n, _ in info.roles] if info is not None else model.coordinate_names)
    if markers is None:
        if setup.model_file is None:
            raise ValueError(f"{path}: no <model_file> to read markers from; pass markers=")
        try:
            markers = load_markers(setup.model_file, model)
        except ValueError as e:
            if model_given:
                raise ValueError(f"{path}: the model passed does not match the setup's <model_file>: {e}") from None
            raise
    data = read_trc(setup.marker_file)
    if setup.time_range is not None:
        from .id.motion import _clip_time_range  # the tools' one rule for time ranges

        t0, t1 = _clip_time_range(setup.time_range, float(data.time[0]), float(data.time[-1]),
                                  f"{path}: marker file {setup.marker_file}", "InverseKinematicsTool")
        t0, t1 = max(t0, data.time[0]), min(t1, data.time[-1])
        a, b = _nearest_row(data.time, t0), _nearest_row(data.time, t1) + 1
        data = data._replace(time=data.time[a:b], positions=data.positions[a:b],
                             frame=None if data.frame is None else data.frame[a:b])
    coords = read_storage(setup.coordinate_file) if setup.coordinate_file else None
    if coords is not None and not coords.in_degrees and any(
            getattr(t, "value_type", None) == "from_file" for t in setup.coordinate_tasks.values()):
        # OpenSim's IK tool converts the file's rotational columns from degrees whatever its header says
        warnings.warn(f"{path}: <coordinate_file> {setup.coordinate_file} is not marked inDegrees=yes, but "
                      "OpenSim's InverseKinematicsTool converts its rotational columns from degrees whatever the "
                      "header says (SimbodyEngine::convertDegreesToRadians), and so does mbjax: write the "
                      "reference angles in degrees", stacklevel=2)
        coords = coords._replace(in_degrees=True)
    result = inverse_kinematics(model, markers, data, setup.marker_weights, setup.coordinate_tasks,
                                coordinate_data=coords, **kwargs)
    if out is not None:
        write_ik_motion(out, model, result)
        if setup.errors_file is not None:  # beside the motion when its path was given here
            write_ik_marker_errors(setup.errors_file if output_motion_file is None else os.path.join(
                os.path.dirname(os.path.abspath(out)), os.path.basename(setup.errors_file)), result)
    return result


def write_ik_motion(path, model, result: IKResult) -> None:
    """Write an IK solution as OpenSim's IK tool does: an ``OpenSim::Storage`` ``.mot`` named
    ``Coordinates``, ``inDegrees=yes``, with every coordinate of the model in its ``CoordinateSet``
    order (coupled ones from their couplers, locked ones at their locked value; rotational ones in
    degrees) so OpenSim's tools reading it get the full pose."""
    write_storage(path, table_from_coordinates(model, result.time, result.q, in_degrees=True), format="storage")
