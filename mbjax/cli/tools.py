"""``mbjax ik|id|so|jr SETUP.xml`` and ``mbjax run SETUP.xml ...``: OpenSim tool setup files run by
mbjax's tools, one by one or a trial's chain in one process."""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from .common import (
    EXIT_FAILURE,
    EXIT_OK,
    Failure,
    UsageError,
    _check_plot_format,
    _check_writable,
    _not_a_folder,
    _osim_path,
    load_model,
    warnings_once,
)
from .moment_arms_sweep import curve_styles
from ..opensim.xml_booleans import BOOL_TEXT


def _setup_model(args, tool):
    """The model a tool runs on: ``--model`` or the setup's ``<model_file>`` (float64 enabled: the
    results are compared with OpenSim's)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if not args.no_compile_cache:
        from ..compilation_cache import enable_compilation_cache

        try:
            enable_compilation_cache()
        except ValueError as e:  # an unwritable cache folder costs speed, not the run
            print(f"mbjax: warning: {e}; compiling without the cache", file=sys.stderr)
    if args.model is not None:
        return _loaded(args.model), _osim_path(args.model)
    _require_setup_file(args.setup)
    setup = tool(args.setup)
    path = setup.model_file
    if path is None:
        raise UsageError(f"{args.setup}: no <model_file>; give --model")
    if not os.path.exists(path):
        raise Failure(f"{args.setup}: <model_file> {path}: no such file (give --model to use another)")
    return _loaded(path), path


def _require_setup_file(path: str) -> None:
    if not os.path.exists(path):
        raise Failure(f"SETUP {path}: no such file")
    if os.path.isdir(path):
        raise Failure(f"SETUP {path}: is a directory, expected an OpenSim setup .xml file")


_RUN_MODELS: dict | None = None


def _loaded(spec: str):
    """:func:`load_model`, once per file and modification time within ``mbjax run``."""
    if _RUN_MODELS is None:
        return load_model(spec)
    path = _osim_path(spec)
    key = (os.path.abspath(path), os.path.getmtime(path)) if path is not None and os.path.exists(path) else spec
    if key not in _RUN_MODELS:
        _RUN_MODELS[key] = load_model(spec)
    return _RUN_MODELS[key]


_RUNNABLE = {"InverseKinematicsTool": ("ik",), "InverseDynamicsTool": ("id",)}


_ANALYSES = (("StaticOptimization", "so"), ("JointReaction", "jr"))


def tools_of_setup(path: str) -> tuple[str, ...]:
    """The mbjax tools (``ik``, ``id``, ``so``, ``jr``) an OpenSim setup file asks for, read from its
    tool element (and an ``AnalyzeTool``'s analyses, switched-off ones left out); anything else is
    refused by name."""
    import xml.etree.ElementTree as ET

    _require_setup_file(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise Failure(f"SETUP {path}: not an XML file ({e})") from None
    tool = root[0] if root.tag == "OpenSimDocument" and len(root) else root
    if tool.tag in _RUNNABLE:
        return _RUNNABLE[tool.tag]
    if tool.tag == "AnalyzeTool":
        found, off = [], []
        for element, name in _ANALYSES:
            for el in tool.iter(element):
                on = BOOL_TEXT.get((el.findtext("on") or "true").strip().lower(), True)  # bad text: the reader refuses it
                (found if on else off).append(name)
                break
        others = sorted({el.tag for analyses in tool.iter("AnalysisSet") for objs in analyses.iter("objects")
                         for el in objs} - {e for e, _ in _ANALYSES})
        if not found:
            raise Failure(f"SETUP {path}: its AnalyzeTool has no StaticOptimization or JointReaction analysis "
                             f"switched on ({', '.join(others) or 'no analyses'}); mbjax runs those two")
        if others:
            print(f"mbjax run: warning: {path}: analyses mbjax does not run, left out: {', '.join(others)}",
                  file=sys.stderr)
        if off:
            print(f"mbjax run: warning: {path}: analyses switched off (<on> false), not run: "
                  f"{', '.join(e for e, n in _ANALYSES if n in off)}", file=sys.stderr)
        return tuple(n for _, n in _ANALYSES if n in found)
    raise Failure(f"SETUP {path}: <{tool.tag}> is not a tool mbjax runs (InverseKinematicsTool, "
                     "InverseDynamicsTool, AnalyzeTool with StaticOptimization or JointReaction)")


def _setup_files(path, tool):
    """``(inputs, outputs)`` of one step of a plan: ``[(element, file)]`` it reads, the files it writes."""
    if tool == "ik":
        from ..opensim.tools.ik import read_ik_setup

        s = read_ik_setup(path)
        return ([("model_file", s.model_file), ("marker_file", s.marker_file), ("coordinate_file", s.coordinate_file)],
                [s.output_motion_file, s.errors_file])
    if tool == "id":
        from ..opensim.tools.id import read_id_setup

        s = read_id_setup(path)
        return ([("model_file", s.model_file), ("coordinates_file", s.coordinates_file),
                 ("external_loads_file", s.external_loads_file)], [s.output_file])
    if tool == "so":
        from ..opensim.tools.so import read_so_setup

        s = read_so_setup(path)
        stem = os.path.join(s.results_directory, f"{s.name}_StaticOptimization_")
        outputs = [stem + "activation.sto", stem + "force.sto", stem + "controls.xml"]
    else:
        from ..opensim.tools.jr import read_jr_setup

        s = read_jr_setup(path)
        outputs = [os.path.join(s.results_directory, f"{s.name}_{s.analysis_name}_ReactionLoads.sto")]
    inputs = [("model_file", s.model_file), ("coordinates_file", s.coordinates_file),
              ("external_loads_file", s.external_loads_file)] + [("force_set_files", f) for f in s.force_set_files]
    if tool == "jr":
        inputs.append(("forces_file", s.forces_file))
    return inputs, outputs


def _own_inputs(path, tool, inputs, model=None):
    """A step's inputs as ``(how given, file)``: the setup's elements (``model`` replacing its
    ``<model_file>``) and the setup file itself."""
    own = [(f"<{tag}> of {path}", f) for tag, f in inputs if not (tag == "model_file" and model is not None)]
    given = _osim_path(model) if model is not None else None
    return own + ([("--model", given)] if given is not None else []) + [("the setup file", path)]


#: what each tool's outputs (:func:`_setup_files`) are, for the messages
_OUTPUT_NAMES = {"ik": ("<output_motion_file>", "marker errors file (<report_errors>)"),
                 "id": ("<results_directory>/<output_gen_force_file>",),
                 "so": ("activation file in <results_directory>", "force file in <results_directory>",
                        "controls file in <results_directory>"),
                 "jr": ("ReactionLoads file in <results_directory>",)}


def _refuse_overwriting_inputs(path, tool, outputs, model=None) -> None:
    """Refuse a step whose outputs (``[(how given, file)]``) include one of its own inputs, before it runs."""
    from ..io.output_paths import refuse_overwriting_inputs

    inputs, _ = _setup_files(path, tool)
    own = _own_inputs(path, tool, inputs, model)
    for given, f in outputs:
        if f is not None:
            refuse_overwriting_inputs(f, own, given, (os.path.dirname(os.path.abspath(path)),))


def _refuse_unsupported(path, tool, model=None) -> None:
    """What a tool refuses in a setup it reads, refused before any step runs (and before its model
    is built: an IK coordinate task naming no coordinate of the model file)."""
    if tool == "ik":
        from ..opensim.tools.ik import check_coordinate_tasks_of_file, read_ik_setup

        setup = read_ik_setup(path)
        check_coordinate_tasks_of_file(setup, setup.model_file if model is None else _osim_path(model))
    elif tool == "so":
        from ..opensim.tools.so import read_so_setup
        from ..opensim.tools.so.setup import refuse_unsupported

        refuse_unsupported(path, read_so_setup(path))
    elif tool == "jr":
        from ..opensim.tools.jr import read_jr_setup
        from ..opensim.tools.jr.setup import refuse_unsupported

        refuse_unsupported(path, read_jr_setup(path))
    elif tool == "id":
        from ..opensim.tools.id import read_id_setup

        if read_id_setup(path).coordinates_file is None:
            raise ValueError(f"{path}: no <coordinates_file> (mbjax's ID needs coordinates, as OpenSim's does)")


def check_plan(plan, model: str | None = None) -> None:
    """Every setup of ``mbjax run`` checked before the first runs: it parses (time ranges
    well-formed, cut-offs finite), and each file it reads exists or is written by an earlier step; a
    coordinates or marker file already there must overlap the setup's time range; every output can be
    written (its folder made, as the tool would make it)."""
    import warnings

    from ..opensim.tools.id import check_input_file
    from ..opensim.tools.id.motion import _clip_time_range
    from ..io.output_paths import prepare_output
    from ..io.storage import read_storage

    made: set[str] = set()
    for path, tool in plan:
        inputs, outputs = _setup_files(path, tool)
        _refuse_unsupported(path, tool, model)
        _refuse_overwriting_inputs(path, tool, [(f"{path}: its {w}", o) for w, o in zip(_OUTPUT_NAMES[tool], outputs)],
                                   model)
        if model is None and dict(inputs)["model_file"] is None:
            raise UsageError(f"{path}: no <model_file>; give --model")
        for what, o in zip(_OUTPUT_NAMES[tool], outputs):  # writable (its folder made, as the tool makes it)
            if o is not None:
                prepare_output(o, path, f"output {what}")
        for tag, f in inputs:
            if f is None or (tag == "model_file" and model is not None) or os.path.abspath(f) in made:
                continue
            check_input_file(path, tag, f)
            if tag in ("coordinates_file", "coordinate_file") and tool != "ik":
                from ..opensim.tools.id import read_id_setup
                from ..opensim.tools.jr import read_jr_setup
                from ..opensim.tools.so import read_so_setup

                reader = {"id": read_id_setup, "so": read_so_setup, "jr": read_jr_setup}[tool]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t = read_storage(f).time
                    if len(t):
                        _clip_time_range(reader(path).time_range, float(t[0]), float(t[-1]),
                                         f"{path}: coordinates file {f}", tool)
            if tag == "marker_file" and tool == "ik":
                from ..opensim.tools.ik import read_ik_setup
                from ..io.storage import read_trc

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rng, t = read_ik_setup(path).time_range, read_trc(f).time
                    if rng is not None and len(t):
                        _clip_time_range(rng, float(t[0]), float(t[-1]), f"{path}: marker file {f}",
                                         "InverseKinematicsTool")
        made |= {os.path.abspath(o) for o in outputs if o is not None}


def run_setups(setups, model: str | None = None, quiet: bool = False, compile_cache: bool = True) -> int:
    """Run OpenSim setup files in order in one process (``mbjax run``): IK, ID, static optimization
    and joint reactions as each file asks (:func:`tools_of_setup`), each writing the files its setup
    names, so a setup reading the previous one's output chains.  ``setups``: a list of paths (one
    path is a one-item list).  Every file and ``model`` are checked before the first runs; each
    model file is read once and each program compiled once.  Returns 0, or 1 when a step did not
    converge everywhere (its files are still written and the next steps run); a setup, model or
    data file that cannot be read or run (the library's ``ValueError``, ``NotImplementedError``,
    ``OSError``) raises :class:`Failure` (``mbjax run`` exits 1), a bad ``model`` name, no setup or
    an output file that cannot be written (``OutputPathError``) :class:`UsageError` (exit 2); the
    original error is chained (``__cause__``) and its message kept.  Each warning is shown once."""
    from ..io.output_paths import OutputPathError

    try:
        with warnings_once():
            return _run_setups(setups, model, quiet, compile_cache)
    except OutputPathError as e:
        raise UsageError(str(e)) from e
    except (ValueError, NotImplementedError, OSError) as e:
        raise Failure(str(e)) from e


def _run_setups(setups, model, quiet, compile_cache) -> int:
    global _RUN_MODELS

    if isinstance(setups, (str, os.PathLike)):
        setups = [setups]
    try:
        setups = [os.fspath(p) for p in setups]
    except TypeError:
        raise TypeError(f"run_setups: setups must be a list of setup file paths, got {setups!r}") from None
    if not setups:
        raise UsageError("run_setups: no setup files given; pass a list of setup file paths")
    if model is not None:
        _osim_path(model)  # an unknown name or missing file refused before the setups are read
    plan = [(path, tool) for path in setups for tool in tools_of_setup(path)]
    check_plan(plan, model)
    commands = {"ik": ik_command, "id": id_command, "so": so_command, "jr": jr_command}
    status = EXIT_OK
    _RUN_MODELS = {}
    try:
        for i, (path, tool) in enumerate(plan):
            if not quiet:
                print(f"mbjax run [{i + 1}/{len(plan)}]: {tool} {path}", flush=True)
            args = argparse.Namespace(setup=path, model=model, out=None, plot=None, quiet=quiet,
                                      no_compile_cache=not compile_cache, accuracy=None)
            status = max(status, commands[tool](args))
    finally:
        _RUN_MODELS = None
    return status


def run_command(args):
    return run_setups(args.setups, model=args.model, quiet=args.quiet, compile_cache=not args.no_compile_cache)


def _plot_series(path, time, data, labels, ylabel, title):
    _plot_panels(path, time, [(data, labels, ylabel)], title)


def _plot_panels(path, time, panels, title):
    """One panel per ``(data (T, n), labels, ylabel)``, stacked, sharing the time axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 4.5 if len(panels) == 1 else 3.2 * len(panels)),
                             sharex=True, squeeze=False)
    for ax, (data, labels, ylabel) in zip(axes[:, 0], panels):
        for k, (color, style, _) in enumerate(curve_styles(len(labels))):
            ax.plot(time, data[:, k], color=color, linestyle=style, label=labels[k])
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if len(labels) <= 24:
            ax.legend(fontsize=6, ncol=1 if len(labels) <= 8 else 3)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].set_title(title)
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise Failure(f"--plot {path}: cannot write the figure: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def _tool_outputs(args, is_dir):
    if args.out is not None:
        if is_dir:
            if os.path.exists(args.out) and not os.path.isdir(args.out):
                raise UsageError(f"--out {args.out}: exists and is not a directory")
            blocked = _not_a_folder(args.out)
            if blocked is not None:
                raise UsageError(f"--out {args.out}: {blocked} is a file, not a directory")
        else:
            _check_writable(args.out, "--out")
    if args.plot is not None:
        _check_writable(args.plot, "--plot")
        _check_plot_format(args.plot)


def _outputs_not_inputs(args, tool, is_dir):
    """``--out``, ``--plot`` and the setup's own outputs refused (usage error) when one names one of
    the tool's inputs (the setup, its model, data and force-set files) or ``--plot`` names ``--out``."""
    from ..io.output_paths import same_file

    if args.plot is not None and args.out is not None and not is_dir and same_file(args.plot, args.out):
        raise UsageError(f"--plot {args.plot} and --out {args.out} are the same file: the plot would overwrite "
                         "the results; give two files")
    if not os.path.isfile(args.setup):
        return  # reported when the setup is read
    _, outputs = _setup_files(args.setup, tool)
    if args.out is not None:
        outputs = ([args.out] + [os.path.join(os.path.dirname(os.path.abspath(args.out)), os.path.basename(o))
                                 for o in outputs[1:] if o is not None]) if not is_dir else \
            [os.path.join(args.out, os.path.basename(o)) for o in outputs]
        named = [("--out", outputs[0]) if not is_dir else (f"--out {args.out}: the {_OUTPUT_NAMES[tool][0]}", outputs[0])]
        named += [(f"--out {args.out}: the {w}", o) for w, o in zip(_OUTPUT_NAMES[tool][1:], outputs[1:])]
    else:
        named = [(f"{args.setup}: its {w}", o) for w, o in zip(_OUTPUT_NAMES[tool], outputs)]
    if args.plot is not None:
        named.append(("--plot", args.plot))
    try:
        _refuse_overwriting_inputs(args.setup, tool, named, args.model)
    except OSError as e:
        raise UsageError(str(e)) from None


def ik_command(args):
    from ..opensim.tools.ik import inverse_kinematics_from_setup, read_ik_setup, write_ik_marker_errors
    from ..io.coordinate_tables import table_from_coordinates
    from ..io.output_paths import prepare_output
    from ..io.storage import write_storage

    _tool_outputs(args, is_dir=False)
    _outputs_not_inputs(args, "ik", is_dir=False)
    if os.path.isfile(args.setup):
        _refuse_unsupported(args.setup, "ik", args.model)
    from ..opensim.model.osim_markers import load_markers

    model, model_file = _setup_model(args, read_ik_setup)
    if model_file is None:
        raise UsageError(f"--model {args.model}: IK needs an .osim model (its MarkerSet)")
    setup = read_ik_setup(args.setup)
    out = args.out or setup.output_motion_file
    if out is None:
        raise UsageError(f"{args.setup}: no <output_motion_file>; give --out")
    errors = None
    if setup.errors_file is not None:  # OpenSim's report_errors file: results_directory, or beside --out
        errors = setup.errors_file if not args.out else os.path.join(
            os.path.dirname(os.path.abspath(out)), os.path.basename(setup.errors_file))
    try:  # the folders made (as OpenSim makes them) and both files checked before the solve
        prepare_output(out, args.setup, "IK motion file")
        if errors is not None:
            prepare_output(errors, args.setup, "IK marker errors file")
    except OSError as e:
        raise UsageError(str(e)) from None
    t0 = time.time()
    res = inverse_kinematics_from_setup(args.setup, model, load_markers(model_file, model), progress=not args.quiet,
                                        accuracy=args.accuracy)
    write_storage(out, table_from_coordinates(model, res.time, res.q, in_degrees=True), format="storage")
    if errors is not None:
        write_ik_marker_errors(errors, res)
    if not args.quiet:
        print(f"mbjax ik: {res.time.size} frames in {time.time() - t0:.1f} s; marker RMS max {np.nanmax(res.rms) * 1e3:.2f} mm, "
              f"worst marker error {np.nanmax(res.max) * 1e3:.2f} mm; {int(np.sum(~res.converged))} frames not converged; "
              f"wrote {out}")
    if args.plot:
        from ..io.coordinate_tables import _rotational

        scale = np.where(_rotational(model), 180.0 / np.pi, 1.0)
        _plot_series(args.plot, res.time, res.q * scale, list(model.coordinate_names), "coordinate (deg or m)",
                     f"inverse kinematics: {os.path.basename(args.setup)}")
    return EXIT_OK if np.all(res.converged) else EXIT_FAILURE


def _run_tool(args, reader, run, *, is_dir: bool, out_of, summary, plot, tool):
    """The skeleton of ``mbjax id|so|jr``: outputs checked before any work, the model the setup
    names (or ``--model``), ``run(model)``, one summary line (``summary(res, seconds, out)``) and
    the plot ``plot(res, title)`` when ``--plot`` asks.  Returns the tool's result."""
    _tool_outputs(args, is_dir=is_dir)
    _outputs_not_inputs(args, tool, is_dir)
    model, _ = _setup_model(args, reader)
    t0 = time.time()
    res = run(model)
    out = args.out or out_of(reader(args.setup))
    if not args.quiet:
        print(summary(res, time.time() - t0, out))
    if args.plot:
        plot(res, os.path.basename(args.setup))
    return res


def id_command(args):
    from ..opensim.tools.id import inverse_dynamics_from_setup, read_id_setup

    _run_tool(args, read_id_setup, lambda model: inverse_dynamics_from_setup(args.setup, model, output_file=args.out),
              is_dir=False, out_of=lambda setup: setup.output_file,
              summary=lambda res, s, out: f"mbjax id: {res.time.size} frames in {s:.1f} s; wrote {out}",
              plot=lambda res, title: _plot_series(args.plot, res.time, res.tau, list(res.labels),
                                                   "generalized force (N·m or N)", f"inverse dynamics: {title}"),
              tool="id")
    return EXIT_OK


def so_command(args):
    from ..opensim.tools.so import read_so_setup, static_optimization_from_setup

    def summary(res, seconds, out):
        ok = bool(np.all(np.asarray(res.result.converged)))
        return (f"mbjax so: {res.time.size} frames, {len(res.labels)} actuators in {seconds:.1f} s; "
                f"{'all frames converged' if ok else 'NOT all frames converged'}; wrote {out}")

    def plot(res, title):
        nm = len(res.muscle_names)
        panels = [(res.activations[:, :nm], list(res.labels[:nm]), "muscle activation")]
        if len(res.labels) > nm:  # reserve and residual actuators: their forces (N·m or N), not controls
            panels.append((res.forces[:, nm:], list(res.labels[nm:]), "actuator force (N·m or N)"))
        _plot_panels(args.plot, res.time, panels, f"static optimization: {title}")

    res = _run_tool(args, read_so_setup,
                    lambda model: static_optimization_from_setup(args.setup, model, results_directory=args.out,
                                                                 progress=not args.quiet),
                    is_dir=True, out_of=lambda setup: setup.results_directory, summary=summary, plot=plot, tool="so")
    return EXIT_OK if bool(np.all(np.asarray(res.result.converged))) else EXIT_FAILURE


def jr_command(args):
    from ..opensim.tools.jr import read_jr_setup, joint_reactions_from_setup

    def plot(res, title):
        keys = [k.label for k in res.keys]
        panels = [(res.loads[:, :, :3].reshape(res.time.size, -1), [f"{k}_f{c}" for k in keys for c in "xyz"],
                   "reaction force (N)"),
                  (res.loads[:, :, 3:6].reshape(res.time.size, -1), [f"{k}_m{c}" for k in keys for c in "xyz"],
                   "reaction moment (N·m)")]
        _plot_panels(args.plot, res.time, panels, f"joint reactions: {title}")

    _run_tool(args, read_jr_setup,
              lambda model: joint_reactions_from_setup(args.setup, model, results_directory=args.out,
                                                       progress=not args.quiet),
              is_dir=True, out_of=lambda setup: setup.results_directory,
              summary=lambda res, s, out: (f"mbjax jr: {res.time.size} frames, {len(res.keys)} joint reactions in "
                                           f"{s:.1f} s; wrote {out}"),
              plot=plot, tool="jr")
    return EXIT_OK
