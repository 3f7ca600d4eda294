"""OpenSim ``InverseDynamicsTool`` setup files: read them and run them
(:func:`mbjax.opensim.tools.id.inverse_dynamics_motion` on their model, coordinates and external loads)."""

from __future__ import annotations

import functools
import os
import warnings
from typing import NamedTuple

import numpy as np

from ...._model import require_model
from ....io.arguments import refuse_setup_keywords
from ....io.storage import Table, prepare_output, read_storage, write_storage
from ...setup_xml import SetupFile
from ..setup_model import setup_model
from .motion import IDResult, inverse_dynamics_motion


class IDSetup(NamedTuple):
    """What an OpenSim ``InverseDynamicsTool`` setup file says (paths made absolute; ``None`` when
    unassigned).  ``output_file`` is where OpenSim writes: ``results_directory/<output_gen_force_file>``."""

    path: str
    model_file: str | None
    coordinates_file: str | None
    external_loads_file: str | None
    time_range: tuple[float, float]
    lowpass_cutoff: float
    forces_to_exclude: tuple[str, ...]
    results_directory: str
    output_file: str


def check_input_file(setup_path, tag, file):
    """Raise ``FileNotFoundError`` naming the setup file and its ``<tag>`` when ``file`` is not a file."""
    if file is not None and not os.path.isfile(file):
        what = "is a folder, not a file" if os.path.isdir(file) else "not found"
        raise FileNotFoundError(f"{setup_path}: <{tag}> {file}: {what}; fix the path in the setup file "
                                "(relative paths are relative to the setup file's folder)")


def read_coordinates(setup_path, file, tag="coordinates_file") -> Table:
    """A setup's coordinates table, its path kept in ``metadata["file"]`` for the messages."""
    check_input_file(setup_path, tag, file)
    table = read_storage(file)
    return table._replace(metadata={**(table.metadata or {}), "file": file})


#: the InverseDynamicsTool properties read, and those without effect on the generalized forces
_ID_READ = ("model_file", "coordinates_file", "external_loads_file", "time_range", "forces_to_exclude",
            "lowpass_cutoff_frequency_for_coordinates", "results_directory", "output_gen_force_file",
            "joints_to_report_body_forces", "input_directory")
_ID_IGNORED = ("output_body_forces_file",)


def read_id_setup(path) -> IDSetup:
    """Read an OpenSim ``InverseDynamicsTool`` setup XML (3.x or 4.x); relative paths are made
    absolute against the setup file's folder (OpenSim runs its tools there)."""

    setup = SetupFile(path)
    path, doc, base = setup.path, setup.doc, setup.base
    tool = setup.tool("InverseDynamicsTool")

    text, file_of, number = (functools.partial(f, tool) for f in (setup.text, setup.file, setup.number))
    unused = [f"{doc.where(el)} (not an InverseDynamicsTool property)" for el in tool
              if isinstance(el.tag, str) and el.tag not in _ID_READ + _ID_IGNORED]
    inputs = text("input_directory")
    if inputs is not None:
        gone = "" if os.path.isdir(setup.resolve(inputs)) else ", a folder that does not exist"
        unused.append(f"{doc.where(tool.find('input_directory'))} {inputs!r}{gone} (OpenSim 4 "
                      "does not read it either: paths are relative to the setup file's folder)")
    if unused:
        warnings.warn(f"{path}: not used by mbjax's inverse dynamics: " + "; ".join(unused), stacklevel=2)

    time_range = setup.time_range(tool, (-np.inf, np.inf))
    excluded = tuple((text("forces_to_exclude") or "").split())
    joints = text("joints_to_report_body_forces")
    if joints:
        warnings.warn(f"{doc.where(tool.find('joints_to_report_body_forces'))}: body forces at joints are not "
                      "reported by mbjax (use mbjax.joint_reactions)", stacklevel=2)
    results = file_of("results_directory") or base
    return IDSetup(path, file_of("model_file"), file_of("coordinates_file"), file_of("external_loads_file"),
                   time_range, setup.cutoff(tool), excluded, results,
                   _output_file(doc, tool, text("output_gen_force_file"), results))


def _output_file(doc, tool, out, results) -> str:
    """Where OpenSim's ID writes ``<output_gen_force_file>``: its file name (a folder part dropped,
    with a warning naming the element and the file written, as OpenSim warns) in ``results``, with
    ``.sto`` added when it has no extension.  A name that is a folder (``.``, ``sub/``), which OpenSim
    turns into a hidden ``.sto``, is refused."""
    if out is None:
        return os.path.join(results, "inverse_dynamics.sto")
    cut = max(out.rfind("/"), out.rfind("\\")) + 1
    folder, name = out[:cut], out[cut:]
    el = tool.find("output_gen_force_file")
    if name in ("", ".", ".."):
        raise doc.error(el, f"{out!r} names a folder, not a file (OpenSim 4.6 would write a hidden file '.sto' "
                            "into <results_directory>); give a file name, e.g. inverse_dynamics.sto, and the "
                            "folder in <results_directory>")
    stem, ext = os.path.splitext(name)
    file = os.path.join(results, stem + (ext or ".sto"))
    if folder:
        warnings.warn(f"{doc.where(el)}: {out!r} names the folder {folder!r}, where only a file name is expected: "
                      f"OpenSim ignores the folder, and so does mbjax: the setup's output file is {file} (in "
                      "<results_directory>); name the folder in <results_directory>", stacklevel=3)
    return file


#: the inverse_dynamics_motion keywords an InverseDynamicsTool setup gives
_ID_KEYWORDS = {"lowpass_cutoff": "<lowpass_cutoff_frequency_for_coordinates>", "time_range": "<time_range>",
                "forces_to_exclude": "<forces_to_exclude>"}


def inverse_dynamics_from_setup(path, model=None, *, output_file=None, write: bool = True, **kwargs) -> IDResult:
    """Run an OpenSim ``InverseDynamicsTool`` setup file: its model (unless ``model`` is given),
    coordinates, external loads, time range, cut-off and excluded forces; the result is written
    where OpenSim writes it (``results_directory/output_gen_force_file``, or ``output_file``) as an
    ``OpenSim::Storage`` ``.sto`` unless ``write=False``.  ``kwargs`` go to
    :func:`inverse_dynamics_motion` (``chunk``)."""
    from ...external_loads import read_external_loads

    if model is not None:
        require_model(model, "inverse_dynamics_from_setup")
    refuse_setup_keywords("inverse_dynamics_from_setup", kwargs, _ID_KEYWORDS, "inverse_dynamics_motion")
    setup = read_id_setup(path)
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file> (mbjax's ID needs coordinates, as OpenSim's does)")
    check_input_file(path, "coordinates_file", setup.coordinates_file)
    check_input_file(path, "external_loads_file", setup.external_loads_file)
    out = None
    if write:  # the results folder is made and checked before computing (OpenSim makes it too)
        out = prepare_output(output_file if output_file is not None else setup.output_file, path,
                             "generalized-force output file",
                             [("model_file", setup.model_file), ("coordinates_file", setup.coordinates_file),
                              ("external_loads_file", setup.external_loads_file)])
    model = setup_model(path, setup.model_file, model)
    info = model.osim
    if info is not None:
        other = [n for n, role in info.roles if role != "independent"]
        if other:
            warnings.warn(f"coordinates {other} are locked or coupled: no generalized force is reported for them "
                          "(OpenSim reports residuals ignoring constraints)", stacklevel=2)
    coords = read_coordinates(path, setup.coordinates_file)
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = inverse_dynamics_motion(model, coords, loads, lowpass_cutoff=setup.lowpass_cutoff,
                                     time_range=setup.time_range, forces_to_exclude=setup.forces_to_exclude,
                                     **kwargs)
    if out is not None:
        write_storage(out, result.table(), format="storage")
    return result
