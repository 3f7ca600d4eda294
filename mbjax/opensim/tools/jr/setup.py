"""OpenSim ``AnalyzeTool`` setup files with a ``JointReaction`` analysis: read them and run them
(:func:`mbjax.opensim.tools.jr.joint_reactions_motion` on their model, coordinates, forces file and
external loads)."""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

from ...._model import require_model
from ..id import check_input_file, read_coordinates
from ....io.storage import prepare_output, write_storage
from ...setup_xml import SetupFile
from ..setup_model import setup_model
from ..so import setup_force_sets, unused_setup_elements
from .motion import JRResult, joint_reactions_motion


class JRSetup(NamedTuple):
    """What an OpenSim ``AnalyzeTool`` setup with a ``JointReaction`` analysis says (paths absolute;
    ``joint_names`` as written, ``("ALL",)`` by default)."""

    path: str
    name: str
    analysis_name: str
    model_file: str | None
    coordinates_file: str | None
    external_loads_file: str | None
    force_set_files: tuple[str, ...]
    replace_force_set: bool
    time_range: tuple[float, float]
    lowpass_cutoff: float
    step_interval: int
    forces_file: str | None
    joint_names: tuple[str, ...]
    apply_on_bodies: tuple[str, ...]
    express_in_frame: tuple[str, ...]
    results_directory: str


#: the JointReaction properties read (``Analysis`` ones and its own)
_JR_READ = ("on", "start_time", "end_time", "step_interval", "in_degrees", "forces_file", "joint_names",
            "apply_on_bodies", "express_in_frame")


def read_jr_setup(path) -> JRSetup:
    """Read an OpenSim ``AnalyzeTool`` setup XML whose ``AnalysisSet`` holds a ``JointReaction``;
    relative paths are made absolute against the setup file's folder (OpenSim runs its tools there).
    ``initial_time``/``final_time`` default to OpenSim's 0 and 1 s; what the tool does not use is
    warned by name (:func:`mbjax.opensim.tools.so.unused_setup_elements`)."""

    setup = SetupFile(path)
    path, doc, root, base = setup.path, setup.doc, setup.root, setup.base
    tool = root if root.tag == "AnalyzeTool" else root.find("AnalyzeTool")
    if tool is None:
        raise doc.error(root, "no <AnalyzeTool> (a joint-reaction setup is an AnalyzeTool file)")
    tool = setup.tool("AnalyzeTool")  # one tool per file; a property given twice warned
    text, file_of, number, flag = setup.text, setup.resolve, setup.number, setup.flag
    jrs = [el for s in tool.findall("AnalysisSet") for objs in s.findall("objects") for el in objs
           if el.tag == "JointReaction"]
    if not jrs:
        raise doc.error(tool, "no <JointReaction> in its <AnalysisSet>")
    if len(jrs) > 1:
        raise NotImplementedError(f"{doc.where(jrs[1])}: a second <JointReaction> analysis; mbjax runs one per "
                                  "setup file")
    jr = jrs[0]
    unused = unused_setup_elements(doc, tool, jr, _JR_READ)
    if unused:
        warnings.warn(f"{path}: not used by mbjax's joint reactions: " + "; ".join(unused), stacklevel=2)
    for tag in ("states_file", "speeds_file", "external_loads_model_kinematics_file"):
        if text(tool, tag):
            raise NotImplementedError(f"{doc.where(tool.find(tag))}: <{tag}> is not supported; give "
                                      "<coordinates_file> (speeds and the loads' kinematics come from its splines)")
    if not flag(jr, "on", True):
        raise ValueError(f"{doc.where(jr)}: the JointReaction analysis is switched off (<on> false)")
    t0, t1 = setup.analysis_times(tool)
    a0, a1 = number(jr, "start_time", t0), number(jr, "end_time", t1)
    if (a0, a1) != (t0, t1):
        warnings.warn(f"{doc.where(jr)}: <start_time>/<end_time> ({a0:g}, {a1:g}) are not used: OpenSim's "
                      f"AnalyzeTool runs its analyses from <initial_time> to <final_time> ({t0:g}, {t1:g})",
                      stacklevel=2)
    step = number(jr, "step_interval", 1)
    if not (step >= 1 and step == int(step)):
        raise doc.error(jr.find("step_interval"), f"<step_interval> must be a positive integer, got {step:g}")

    def words(tag, default):
        txt = text(jr, tag)
        return tuple(txt.split()) if txt else default

    apply_on = words("apply_on_bodies", ("child",))
    bad = [a for a in apply_on if a.lower() not in ("child", "parent")]
    if bad:
        raise doc.error(jr.find("apply_on_bodies"), f"<apply_on_bodies> entries must be 'child' or 'parent', got {bad}")
    results = file_of(text(tool, "results_directory")) or base
    return JRSetup(path, tool.get("name") or "joint_reaction", jr.get("name") or "JointReaction",
                   file_of(text(tool, "model_file")), file_of(text(tool, "coordinates_file")),
                   file_of(text(tool, "external_loads_file")),
                   setup.files(tool, "force_set_files"),
                   flag(tool, "replace_force_set", False), (t0, t1),
                   setup.cutoff(tool), int(step),
                   file_of(text(jr, "forces_file")), words("joint_names", ("ALL",)), apply_on,
                   words("express_in_frame", ("ground",)), results)


def refuse_unsupported(path, setup: JRSetup) -> None:
    """Refuse a joint-reaction setup mbjax cannot run (before any file is read or written)."""
    if setup.forces_file is None:
        raise NotImplementedError(f"{path}: the JointReaction has no <forces_file>; OpenSim then computes actuator "
                                  "forces from the states, which mbjax does not (give a static optimization's "
                                  "_force.sto)")
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file>")


def joint_reactions_from_setup(path, model=None, *, write: bool = True, results_directory=None,
                               progress: bool = True) -> JRResult:
    """Run an OpenSim joint-reaction setup (``AnalyzeTool`` + ``JointReaction``): its model (unless
    ``model`` is given), coordinates, cut-off, time range, step interval, actuators, external loads
    and forces file; the result written as OpenSim writes it
    (``<results_directory>/<name>_<analysis>_ReactionLoads.sto``; ``results_directory`` replaces the
    setup's folder) unless ``write=False``."""
    from ...external_loads import read_external_loads

    if model is not None:
        require_model(model, "joint_reactions_from_setup")
    setup = read_jr_setup(path)
    refuse_unsupported(path, setup)
    for tag, f in (("forces_file", setup.forces_file), ("coordinates_file", setup.coordinates_file),
                   ("external_loads_file", setup.external_loads_file)):
        check_input_file(path, tag, f)
    for f in setup.force_set_files:
        check_input_file(path, "force_set_files", f)
    out = None
    if write:  # the results folder is made (as OpenSim makes it) and checked before computing
        folder = os.fspath(results_directory) if results_directory is not None else setup.results_directory
        out = prepare_output(os.path.join(folder, f"{setup.name}_{setup.analysis_name}_ReactionLoads.sto"), path,
                             "joint reaction loads file",
                             [("model_file", setup.model_file), ("coordinates_file", setup.coordinates_file),
                              ("external_loads_file", setup.external_loads_file), ("forces_file", setup.forces_file)]
                             + [("force_set_files", f) for f in setup.force_set_files])
    model = setup_model(path, setup.model_file, model)
    actuators = setup_force_sets(path, model, setup.force_set_files)
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = joint_reactions_motion(model, read_coordinates(path, setup.coordinates_file),
                                    read_coordinates(path, setup.forces_file, "forces_file"), loads,
                                    joints=setup.joint_names, apply_on_bodies=setup.apply_on_bodies,
                                    express_in_frame=setup.express_in_frame, actuators=actuators,
                                    replace_force_set=setup.replace_force_set, lowpass_cutoff=setup.lowpass_cutoff,
                                    time_range=setup.time_range, step_interval=setup.step_interval,
                                    progress=progress, where=f"{path}: JointReaction {setup.analysis_name!r}")
    if out is not None:
        write_storage(out, result.table(), format="storage")
    return result
