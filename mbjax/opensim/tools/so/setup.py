"""OpenSim ``AnalyzeTool`` setup files with a ``StaticOptimization`` analysis: the setup, its
force-set files (reserves and residuals), what it holds that is not used, and running it
(:func:`mbjax.opensim.tools.so.static_optimization_motion`)."""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np

from ...._model import require_model
from ..id import check_input_file, read_coordinates
from ....io.arguments import refuse_setup_keywords
from ....io.storage import prepare_output, write_storage
from ...setup_xml import SetupFile
from ..setup_model import setup_model
from .controls import write_controls
from .motion import SOResult, static_optimization_motion


class SOSetup(NamedTuple):
    """What an OpenSim ``AnalyzeTool`` setup with a ``StaticOptimization`` analysis says (paths absolute)."""

    path: str
    name: str
    model_file: str | None
    coordinates_file: str | None
    external_loads_file: str | None
    force_set_files: tuple[str, ...]
    replace_force_set: bool
    time_range: tuple[float, float]
    lowpass_cutoff: float
    activation_exponent: float
    use_muscle_physiology: bool
    use_model_force_set: bool
    convergence_criterion: float
    results_directory: str
    step_interval: int = 1


def read_reserves(path, inherited=()) -> tuple:
    """The enabled actuators of an OpenSim force-set XML file, in file order, read as OpenSim 4.6
    reads them (:mod:`mbjax.opensim.model.osim_actuators`: ``ForceSet`` or legacy ``ActuatorSet`` roots,
    ``GeneralizedForce``/``Force``/``Torque`` converted, ``<defaults>``, after the ``inherited``
    defaults of the documents read before it): ``CoordinateActuator`` (:class:`Reserve`),
    ``PointActuator`` and ``TorqueActuator`` records.  Any other element is refused naming the
    file and element."""
    return _read_force_set(path, inherited)[0]


def _read_force_set(path, inherited=()):
    """``(actuators, defaults)``: :func:`read_reserves` and the file's ``<defaults>`` elements."""
    from ...model.osim_actuators import document_version, read_actuators

    setup = SetupFile(path)
    doc, root = setup.doc, setup.root
    sets = [root] if root.tag in ("ForceSet", "ActuatorSet") else [el for el in root if el.tag in ("ForceSet", "ActuatorSet")]
    if not sets:
        raise doc.error(root, "no <ForceSet> (or legacy <ActuatorSet>) in a force-set file")
    out, defaults = [], []
    for fs in sets:
        objects = fs.find("objects")
        defaults += fs.findall("defaults")
        if objects is None:
            continue
        found, _ = read_actuators(doc, objects, version=document_version(root), defaults=fs.findall("defaults"),
                                  inherited=tuple(inherited))
        out.extend(found)
    return tuple(out), defaults


def setup_force_sets(setup_path, model, files) -> tuple:
    """The actuators of a tool's ``force_set_files``, each read with the defaults OpenSim has seen
    by then: the setup file's, the model's, the earlier files' (:mod:`mbjax.opensim.model.osim_actuators`)."""

    inherited = list(SetupFile(setup_path).defaults())
    info = getattr(model, "osim", None)
    inherited += list(getattr(info, "actuator_defaults", ()) or ())
    out, owner = [], {}
    for f in files:
        found, defaults = _read_force_set(f, inherited)
        for a in found:
            if a.name in owner and owner[a.name] != f:
                raise ValueError(f"{setup_path}: <force_set_files>: an actuator named {a.name!r} is in {owner[a.name]} "
                                 f"and in {f}; OpenSim's force set needs unique names: rename or remove one")
            owner.setdefault(a.name, f)
        out.extend(found)
        inherited += defaults
    return tuple(out)


#: AnalyzeTool properties that only a forward simulation or another analysis reads (OpenSim's
#: AnalyzeTool ignores them when it replays a coordinates file)
_ANALYZE_IGNORED = ("solve_for_equilibrium_for_auxiliary_states", "maximum_number_of_integrator_steps",
                    "maximum_integrator_step_size", "minimum_integrator_step_size", "integrator_error_tolerance",
                    "output_precision", "defaults")
_ANALYZE_READ = ("model_file", "replace_force_set", "force_set_files", "results_directory", "initial_time",
                 "final_time", "AnalysisSet", "ControllerSet", "external_loads_file", "states_file",
                 "coordinates_file", "speeds_file", "lowpass_cutoff_frequency_for_coordinates",
                 "external_loads_model_kinematics_file", "external_loads_model_kinematics_file_lowpass_cutoff_frequency")
_SO_READ = ("on", "start_time", "end_time", "step_interval", "in_degrees", "use_model_force_set",
            "activation_exponent", "use_muscle_physiology", "optimizer_convergence_criterion",
            "optimizer_max_iterations")


def unused_setup_elements(doc, tool, analysis, known_analysis) -> list[str]:
    """What an AnalyzeTool setup holds that the tool does not use, as ``file:line: <element>``
    strings: unknown tool properties, other analyses of its ``AnalysisSet`` (not run), controllers,
    and unknown properties of the ``analysis`` run (``known_analysis``: its property names)."""
    out = []
    prec = tool.find("output_precision")
    txt = (prec.text or "").strip() if prec is not None else ""
    if txt:
        try:
            digits = float(txt)
        except ValueError:
            digits = float("nan")
        if not (digits >= 0 and digits == int(digits)):
            raise doc.error(prec, f"must be a non-negative integer, got {txt!r}")
        if digits != 8:
            out.append(f"{doc.where(prec)} {txt} (mbjax writes 17 significant digits)")
    for el in tool:
        if isinstance(el.tag, str) and el.tag not in _ANALYZE_READ + _ANALYZE_IGNORED:
            out.append(f"{doc.where(el)} (not an AnalyzeTool property)")
    for objs in tool.iter("AnalysisSet"):
        for o in objs.iter("objects"):
            for el in o:
                if isinstance(el.tag, str) and el is not analysis:
                    out.append(f"{doc.where(el)}: <{el.tag} name={el.get('name')!r}> (another analysis, not run)")
    for cs in tool.iter("ControllerSet"):
        for o in cs.iter("objects"):
            for el in o:
                if isinstance(el.tag, str):
                    out.append(f"{doc.where(el)}: <{el.tag} name={el.get('name')!r}> (controllers do not act when "
                               "an analysis replays a coordinates file)")
    for el in analysis:
        if isinstance(el.tag, str) and el.tag not in known_analysis:
            out.append(f"{doc.where(el)} (not a <{analysis.tag}> property)")
    return out


def read_so_setup(path) -> SOSetup:
    """Read an OpenSim ``AnalyzeTool`` setup XML whose ``AnalysisSet`` holds a ``StaticOptimization``;
    relative paths are made absolute against the setup file's folder."""

    setup = SetupFile(path)
    path, doc, root, base = setup.path, setup.doc, setup.root, setup.base
    tool = root if root.tag == "AnalyzeTool" else root.find("AnalyzeTool")
    if tool is None:
        raise doc.error(root, "no <AnalyzeTool> (a static-optimization setup is an AnalyzeTool file)")
    tool = setup.tool("AnalyzeTool")  # one tool per file; a property given twice warned
    so = next((el for el in tool.iter("StaticOptimization")), None)
    if so is None:
        raise doc.error(tool, "no <StaticOptimization> in its <AnalysisSet>")
    text, file_of, number, flag = setup.text, setup.resolve, setup.number, setup.flag

    unused = unused_setup_elements(doc, tool, so, _SO_READ)
    criterion = number(so, "optimizer_convergence_criterion", 1e-4)
    if not (np.isfinite(criterion) and criterion > 0):
        raise doc.error(so.find("optimizer_convergence_criterion"), "must be a positive number, got "
                        f"{text(so, 'optimizer_convergence_criterion')!r}")
    iterations = number(so, "optimizer_max_iterations", 100)
    if not (iterations >= 1 and iterations == int(iterations)):
        raise doc.error(so.find("optimizer_max_iterations"), "must be a positive integer"
                        f", got {text(so, 'optimizer_max_iterations')!r}")
    exponent = number(so, "activation_exponent", 2.0)
    if not (np.isfinite(exponent) and exponent > 1):
        raise doc.error(so.find("activation_exponent"), "must be a finite number > 1 (the objective"
                        " sum a^p has one minimum only then; OpenSim's default is 2), got "
                        f"{text(so, 'activation_exponent')!r}")
    if criterion != 1e-4:
        unused.append(f"{doc.where(so.find('optimizer_convergence_criterion'))} {criterion:g} (mbjax solves each "
                      "frame to rounding, within any criterion)")
    if iterations != 100:
        unused.append(f"{doc.where(so.find('optimizer_max_iterations'))} {iterations:g} (mbjax's solver "
                      "iterates until each frame converges)")
    if unused:
        warnings.warn(f"{path}: not used by mbjax's static optimization: " + "; ".join(unused), stacklevel=2)
    if text(tool, "external_loads_model_kinematics_file"):
        raise NotImplementedError(f"{doc.where(tool.find('external_loads_model_kinematics_file'))}: a separate "
                                  "kinematics file for the external loads is not supported")
    if text(tool, "states_file"):
        raise NotImplementedError(f"{doc.where(tool.find('states_file'))}: a states file is not supported; give "
                                  "<coordinates_file> (as the OpenSim tutorials do)")
    if text(tool, "speeds_file"):
        raise NotImplementedError(f"{doc.where(tool.find('speeds_file'))}: a speeds file is not supported; "
                                  "speeds come from the coordinates' splines")
    on = flag(so, "on", True)
    if not on:
        raise ValueError(f"{doc.where(so)}: the StaticOptimization analysis is switched off (<on> false)")
    step = number(so, "step_interval", 1)
    if not (step >= 1 and step == int(step)):
        raise doc.error(so.find("step_interval"), f"<step_interval> must be a positive integer, got {step:g}")
    # OpenSim's AnalyzeTool runs every analysis from <initial_time> to <final_time> (AbstractTool's
    # defaults 0 and 1 s); an analysis' own <start_time>/<end_time> are not read by it
    t0, t1 = setup.analysis_times(tool)
    a0, a1 = number(so, "start_time", t0), number(so, "end_time", t1)
    if (a0, a1) != (t0, t1) and not (a0 <= t0 and a1 >= t1):
        warnings.warn(f"{doc.where(so)}: <start_time>/<end_time> ({a0:g}, {a1:g}) are not used: OpenSim's "
                      f"AnalyzeTool runs its analyses from <initial_time> to <final_time> ({t0:g}, {t1:g})",
                      stacklevel=2)
    results = file_of(text(tool, "results_directory")) or base
    return SOSetup(path, tool.get("name") or "static_optimization", file_of(text(tool, "model_file")),
                   file_of(text(tool, "coordinates_file")), file_of(text(tool, "external_loads_file")),
                   setup.files(tool, "force_set_files"),
                   flag(tool, "replace_force_set", False), (t0, t1),
                   setup.cutoff(tool),
                   exponent, flag(so, "use_muscle_physiology", True),
                   flag(so, "use_model_force_set", True), criterion,
                   results, int(step))


def refuse_unsupported(path, setup: SOSetup) -> None:
    """Refuse a static-optimization setup mbjax cannot run (before any file is read or written)."""
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file>")
    if not setup.use_model_force_set:
        raise NotImplementedError(f"{path}: <use_model_force_set> false (coordinate actuators instead of the "
                                  "model's muscles) is not supported")
    if setup.replace_force_set:
        raise NotImplementedError(f"{path}: <replace_force_set> true is not supported (the model's muscles are "
                                  "the actuators mbjax shares the load among)")


#: the static_optimization_motion keywords a static-optimization setup gives
_SO_KEYWORDS = {"reserves": "<force_set_files>", "lowpass_cutoff": "<lowpass_cutoff_frequency_for_coordinates>",
                "time_range": "<initial_time>/<final_time>", "exponent": "<activation_exponent>",
                "step_interval": "<step_interval>", "use_muscle_physiology": "<use_muscle_physiology>"}


def static_optimization_from_setup(path, model=None, *, write: bool = True, results_directory=None,
                                   progress: bool = True, **kwargs) -> SOResult:
    """Run an OpenSim static-optimization setup (``AnalyzeTool`` + ``StaticOptimization``): its model
    (unless ``model`` is given), coordinates, cut-off, time range, exponent, reserve actuators and
    external loads; results written as OpenSim writes them unless ``write=False``: the activation and
    force ``.sto`` files and the ControlSet of the activations, ``<name>_StaticOptimization_controls.xml``
    (:mod:`mbjax.opensim.tools.so.controls`).  ``kwargs`` go to
    :func:`static_optimization_motion` (``solver_options``)."""
    from ...external_loads import read_external_loads

    if model is not None:
        require_model(model, "static_optimization_from_setup")
    refuse_setup_keywords("static_optimization_from_setup", kwargs, _SO_KEYWORDS, "static_optimization_motion")
    setup = read_so_setup(path)
    refuse_unsupported(path, setup)
    for tag, f in (("coordinates_file", setup.coordinates_file), ("external_loads_file", setup.external_loads_file)):
        check_input_file(path, tag, f)
    for f in setup.force_set_files:
        check_input_file(path, "force_set_files", f)
    model = setup_model(path, setup.model_file, model)
    reserves = setup_force_sets(path, model, setup.force_set_files)
    out = None
    if write:  # the results folder is made (as OpenSim makes it) and checked before the solve
        out = os.fspath(results_directory) if results_directory is not None else setup.results_directory
        for kind in ("activation.sto", "force.sto", "controls.xml"):
            prepare_output(os.path.join(out, f"{setup.name}_StaticOptimization_{kind}"), path,
                           f"static optimization {kind.split('.')[0]} file",
                           [("model_file", setup.model_file), ("coordinates_file", setup.coordinates_file),
                            ("external_loads_file", setup.external_loads_file)]
                           + [("force_set_files", f) for f in setup.force_set_files])
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = static_optimization_motion(model, read_coordinates(path, setup.coordinates_file), loads, reserves=reserves,
                                        lowpass_cutoff=setup.lowpass_cutoff, time_range=setup.time_range,
                                        exponent=setup.activation_exponent, step_interval=setup.step_interval,
                                        use_muscle_physiology=setup.use_muscle_physiology, progress=progress,
                                        **kwargs)
    if write:
        act, force = result.tables()
        stem = os.path.join(out, f"{setup.name}_StaticOptimization_")
        write_storage(stem + "activation.sto", act, format="storage")
        write_storage(stem + "force.sto", force, format="storage")
        write_controls(stem + "controls.xml", act)  # OpenSim's ControlSet of the activations
    return result
