"""The ``mbjax`` command.

``mbjax moment-arms MODEL --vary COORD=START:STOP:STEP [--vary ...] [--set COORD=VALUE ...]
[--random N] [--wrt COORD ...] [--muscles NAME ...] [--degrees] [--ignore-wrapping]
[--wrapping opensim|smooth] [--allow-out-of-range] [--max-poses N] [--chunk-size N]
[--distributed [--coordinator HOST:PORT --num-processes P --process-id I]] --out FILE.csv [--plot FILE.png]``

``mbjax ik|id|so|jr SETUP.xml [--model MODEL] [--out PATH] [--plot FILE.png] [--quiet]`` runs an OpenSim
tool setup file (the files the OpenSim GUI runs): ``ik`` an ``InverseKinematicsTool`` (writes its
``output_motion_file``, coordinates in degrees), ``id`` an ``InverseDynamicsTool`` (writes
``results_directory/output_gen_force_file``), ``so`` an ``AnalyzeTool`` with a ``StaticOptimization``
(writes ``<name>_StaticOptimization_activation.sto`` and ``_force.sto`` in ``results_directory``),
``jr`` an ``AnalyzeTool`` with a ``JointReaction`` and its ``forces_file`` (writes
``<name>_<analysis>_ReactionLoads.sto`` in ``results_directory``).
``--model`` replaces the setup's ``<model_file>`` (a path or a shipped name), ``--out`` the output
file (ik, id) or folder (so, jr); ``--plot`` draws the result over time.

``mbjax run SETUP.xml [SETUP.xml ...]`` runs several such files in order in one process (a trial's
IK → ID → SO → JR): each model file is read once and each program compiled once, and every file is
checked before the first runs (:func:`run_setups`, also the Python entry point).

``mbjax info MODEL [--json]`` lists the coordinates (joint, type, range with units, default),
bodies, muscles and wrap objects that the ``.osim`` file declares (read from its XML).

``MODEL`` is an OpenSim ``.osim`` file, a shipped example by name (``arm26``, ``gait2392``, ...: ``mbjax.models.EXAMPLES``) or a built-in model
(``shoulder``, ``shoulder:degroot_brand``).  Several ``--vary`` make a grid (``STOP`` included when
it falls on the grid); ``--random N`` draws N poses uniformly in the coordinate ranges instead.
Unset coordinates sit at the model's default pose.  ``--degrees`` makes the values of *rotational*
coordinates degrees (translational ones stay metres) and writes them in degrees to the CSV.

Checks before any work: every value parses and is finite (the error names the flag), no
coordinate is given twice, ``--out`` / ``--plot`` can be written, a value outside a coordinate's
``<range>`` in the file warns and one beyond it by more than the range's width is refused
(``--allow-out-of-range`` allows it; this catches a forgotten ``--degrees``), and the sweep's host
memory is estimated before allocating (``--max-poses``).

The sweep (:func:`mbjax.sweep.sweep_poses`) runs in chunks with a progress bar and is sharded over
all local JAX devices (``XLA_FLAGS=--xla_force_host_platform_device_count=4`` makes 4 CPU devices).
With ``--distributed`` (or ``MBJAX_COORDINATOR``/``MBJAX_NUM_PROCESSES``/``MBJAX_PROCESS_ID``, see
:func:`mbjax.sweep.initialize`) it runs as several processes of one ``jax.distributed`` job; process
0 writes the CSV and the plot.  The CSV holds the coordinates (``NAME (deg|rad|m)``), the lengths
``L[muscle] (m)`` and the moment arms ``R[muscle,coord] (m)`` (per rad; dimensionless ``(m/m)`` for a
translational coordinate; OpenSim's sign R = -∂L/∂q).

Exit status: 0 success, 2 usage error (the command line is wrong: a bad flag or value, an unknown
coordinate or muscle, an unwritable output path, a model that needs ``--ignore-wrapping``, a sweep
too far outside a range or too large), 1 failure (the model file cannot be read, writing the
results fails, anything else goes wrong), 130 interrupted.  Errors are one line on stderr;
``MBJAX_TRACEBACK=1`` adds the Python traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import sys
import time
import traceback
import warnings

import numpy as np

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: library keyword -> the flag that sets it (error messages raised through the CLI name the flag)
_KEYWORD_FLAGS = {"ignore_wrapping=True": "--ignore-wrapping", "wrapping='opensim'": "--wrapping opensim"}


class UsageError(Exception):
    """The command line is wrong (exit status 2)."""


class Failure(Exception):
    """The command line is right but the work failed (exit status 1)."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mbjax")
    except Exception:  # not installed (e.g. run from a checkout on PYTHONPATH)
        return "unknown (not installed)"


# --------------------------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------------------------


def _number(text: str, where: str) -> float:
    """A finite float, or a usage error naming ``where`` (the flag and its argument)."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"{where}: {text.strip()!r} is not a finite number")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _parse_assign(text: str, flag: str):
    if "=" not in text:
        raise UsageError(f"{flag} expects COORD=..., got {text!r}")
    name, value = text.split("=", 1)
    if not name.strip():
        raise UsageError(f"{flag} {text!r}: missing coordinate name before '='")
    return name.strip(), value.strip()


def _grid_spec(name: str, spec: str):
    """``(start, stop, step, n)`` of ``--vary NAME=START:STOP:STEP`` in the typed units, n without allocating."""
    where = f"--vary {name}={spec}"
    parts = spec.split(":")
    if len(parts) != 3:
        raise UsageError(f"{where}: expected START:STOP:STEP")
    start, stop, step = (_number(p, f"{where} ({w})") for p, w in zip(parts, ("START", "STOP", "STEP")))
    if step == 0 or (stop - start) / step < 0:
        raise UsageError(f"{where}: STEP must move from START towards STOP")
    x = (stop - start) / step
    n = math.floor(x + 1e-9 + 1e-12 * x) + 1  # STOP included when on the grid up to rounding
    return start, stop, step, n


def _check_writable(path: str, flag: str):
    """Refuse an output path that cannot be written, before any work (nothing is created)."""
    if not path:
        raise UsageError(f"{flag}: empty file name")
    from .io.storage import cannot_write

    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory, expected a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{flag} {path}: directory {parent} does not exist")
    why = cannot_write(path)
    if why is not None:
        raise UsageError(f"{flag} {path}: cannot be written: {why}")


def _check_plot_format(path: str):
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in formats:
        raise UsageError(f"--plot {path}: unknown image format {ext!r}; use one of {', '.join(sorted(formats))}")


def _library_message(e: Exception) -> tuple[str, bool]:
    """The library's message with Python keywords replaced by their flags; whether one was replaced."""
    text, hit = str(e), False
    for kw, flag in _KEYWORD_FLAGS.items():
        if kw in text:
            text, hit = text.replace(kw, flag), True
    return text, hit


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------

from .models.opensim_examples import EXAMPLES as _EXAMPLES  # noqa: E402

BUILTIN = tuple(_EXAMPLES) + ("shoulder", "shoulder:degroot_brand")


def _osim_path(spec: str) -> str | None:
    """The ``.osim`` file a MODEL argument names (a shipped example by name, e.g. ``arm26``), or None for a built-in."""
    from .models.opensim_examples import EXAMPLES, model_path

    if spec in EXAMPLES:
        return model_path(spec)
    if spec.startswith("shoulder") and not os.path.exists(spec):
        return None
    if os.path.isdir(spec):
        raise UsageError(f"MODEL {spec}: is a directory, expected an .osim file")
    if spec.endswith(".osim") or os.path.exists(spec):
        if not os.path.exists(spec):
            raise Failure(f"MODEL {spec}: no such file")
        return spec
    raise UsageError(f"unknown model {spec!r} (an .osim file, or one of {', '.join(BUILTIN)})")


def load_model(spec: str, ignore_wrapping: bool = False, wrapping: str = "opensim"):
    """A model from an ``.osim`` path or a built-in name; library errors name the CLI flags.
    ``wrapping``: OpenSim's algorithm or the smooth option (:func:`mbjax.io.load_osim`)."""
    path = _osim_path(spec)
    try:
        if path is None:
            from .models.shoulder import RHYTHMS, shoulder_model

            rhythm = spec.split(":", 1)[1] if ":" in spec else "holzbaur"
            if spec not in ("shoulder", "shoulder:") and rhythm not in RHYTHMS:
                raise UsageError(f"unknown model {spec!r}; shoulder rhythms are {', '.join(RHYTHMS)}")
            return shoulder_model(rhythm)
        from .io.osim import load_osim

        return load_osim(path, ignore_wrapping=ignore_wrapping, wrapping=wrapping)
    except (ValueError, NotImplementedError) as e:
        text, usage = _library_message(e)
        raise (UsageError if usage else Failure)(text) from None


def default_pose(model):
    info = model.extras.get("osim")
    if info is not None:
        return np.array(info.default, dtype=float)
    return np.zeros(model.n_coordinates)


def _coordinate_table(model, spec: str):
    """``(units, lower, upper, source)`` of the model's coordinates: units 'rad' or 'm', ranges in SI or None."""
    n = model.n_coordinates
    info = model.extras.get("osim")
    units = ["rad"] * n
    lower = upper = None
    source = spec
    if info is not None:
        lower, upper = np.asarray(info.lower, float), np.asarray(info.upper, float)
        source = os.path.basename(info.source) if spec.endswith(".osim") or spec in _EXAMPLES else spec
        units = ["m" if t == "translational" else "rad" for t in info.motion_types]
        try:  # the file's declared motion types (OpenSim 4.x files omit <motion_type>)
            from .io.osim_summary import summarize_osim

            summary = summarize_osim(info.source)
            by_name = {c.name: c for c in summary.coordinates}
            units = [by_name[c].unit if c in by_name and by_name[c].unit != "?" else u
                     for c, u in zip(model.coordinate_names, units)]
        except Exception:  # a trimmed temporary file may be gone: keep the loader's types
            pass
    return units, lower, upper, source


# --------------------------------------------------------------------------------------------
# moment-arms
# --------------------------------------------------------------------------------------------


def lengths_and_moment_arms(model, q):
    """Lengths ``(nm,)`` and moment arms ``(nq, nm)`` at one pose (the per-pose function the CLI sweeps)."""
    from . import moment_arms, muscle_lengths

    return muscle_lengths(model, q), moment_arms(model, q)


def sweep(model, qs, chunk: int | None = None, progress: bool = True):
    """Lengths ``(n, nm)`` and moment arms ``(n, nq, nm)`` at poses ``qs``: :func:`mbjax.sweep.sweep_poses`."""
    from .sweep import sweep_poses

    return sweep_poses(lengths_and_moment_arms, model, qs, chunk_size=chunk, progress=progress, desc="moment arms")


def _start_distributed(args) -> bool:
    """``jax.distributed`` for ``--distributed`` / ``--coordinator`` ... or ``MBJAX_*`` variables."""
    from .sweep import initialize

    env = any(os.environ.get(k) for k in ("MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID"))
    explicit = (args.coordinator, args.num_processes, args.process_id)
    if not (args.distributed or env or any(v is not None for v in explicit)):
        return False
    return initialize(*explicit)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"


def _check_size(n_poses: int, nq: int, nm: int, args, what: str):
    """Refuse a sweep whose arrays would not fit (before allocating them)."""
    per_pose = 8 * (2 * nq + nm + nq * nm)  # qs (+ one grid copy), lengths, moment arms, float64
    need = n_poses * per_pose
    limit = args.max_poses
    mem = _physical_memory()
    if limit is None:
        limit = max(1, (mem // 2) // per_pose) if mem else 10**8
    if n_poses > limit:
        have = f"; this machine has {_fmt_bytes(mem)}" if mem else ""
        raise UsageError(
            f"{what} makes {n_poses:,} poses, about {_fmt_bytes(need)} of results in host memory{have} "
            f"(limit {limit:,} poses). Sweep fewer poses (a coarser STEP) or pass --max-poses {n_poses} to try anyway"
        )


def _check_ranges(values: dict, table, names, args, scale):
    """Warn when a value leaves a coordinate's range; refuse one beyond it by more than its width."""
    units, lower, upper, source = table
    if lower is None:
        return
    for i, (flag, lo_v, hi_v) in values.items():
        lo, hi = float(lower[i]), float(upper[i])
        if not lo < hi:
            continue
        width = hi - lo
        u = units[i]
        shown = "deg" if scale[i] != 1.0 else u
        rng = f"[{lo / scale[i]:.6g}, {hi / scale[i]:.6g}] {shown}"
        worst = lo_v if lo - lo_v > hi_v - hi else hi_v
        if lo <= lo_v and hi_v <= hi:
            continue
        far = worst < lo - width or worst > hi + width
        text = f"{flag} reaches {worst / scale[i]:.6g} {shown}, outside the range {rng} of {names[i]!r} in {source}"
        if far and not args.allow_out_of_range:
            hint = ""
            if u == "rad" and not args.degrees and lo - width <= np.deg2rad(worst) <= hi + width:
                hint = "; these look like degrees: did you forget --degrees?"
            raise UsageError(f"{text}, beyond it by more than the range's width{hint} "
                             f"(pass --allow-out-of-range to sweep there anyway)")
        print(f"mbjax: warning: {text}", file=sys.stderr)


def _check_unique(items, flag):
    seen = set()
    for x in items:
        if x in seen:
            raise UsageError(f"{flag} {x!r} given twice")
        seen.add(x)


def moment_arms_command(args):
    # --- the command line alone: values, duplicates, output paths (before JAX, the model, the sweep)
    sets = [(item, *_parse_assign(item, "--set")) for item in args.set or []]
    varies = [(item, *_parse_assign(item, "--vary")) for item in args.vary or []]
    _check_unique([c for _, c, _ in sets], "--set: coordinate")
    _check_unique([c for _, c, _ in varies], "--vary: coordinate")
    both = {c for _, c, _ in sets} & {c for _, c, _ in varies}
    if both:
        raise UsageError(f"coordinate {sorted(both)[0]!r} is given by both --set and --vary")
    set_values = {c: _number(v, f"--set {item}") for item, c, v in sets}
    specs = {c: _grid_spec(c, s) for _, c, s in varies}
    _check_unique(args.wrt or [], "--wrt: coordinate")
    _check_unique(args.muscles or [], "--muscles: muscle")
    _check_writable(args.out, "--out")
    if args.plot:
        if os.path.abspath(args.plot) == os.path.abspath(args.out):
            raise UsageError(f"--plot and --out are the same file {args.out}")
        _check_writable(args.plot, "--plot")
        _check_plot_format(args.plot)

    import jax

    jax.config.update("jax_enable_x64", True)
    _start_distributed(args)  # before anything starts the JAX backends
    lead = jax.process_index() == 0  # only process 0 reports and writes files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(args.model, args.ignore_wrapping, args.wrapping)
    for w in caught if lead else ():
        print(f"mbjax: warning: {w.message}", file=sys.stderr)

    # --- names against the model
    names = model.coordinate_names
    muscles = list(model.muscle_names)

    def index(c, flag):
        if c not in names:
            raise UsageError(f"{flag}: unknown coordinate {c!r}; coordinates are {', '.join(names)}")
        return names.index(c)

    table = _coordinate_table(model, args.model)
    units = table[0]
    scale = np.array([np.pi / 180.0 if (args.degrees and u == "rad") else 1.0 for u in units])
    base = default_pose(model)
    checked = {}
    for c, v in set_values.items():
        i = index(c, "--set")
        base[i] = v * scale[i]
        checked[i] = (f"--set {c}={v:g}", base[i], base[i])
    varied = [index(c, "--vary") for c in specs]
    if not muscles:
        raise UsageError(f"model {args.model!r} has no muscle paths")
    if args.muscles:
        unknown = [m for m in args.muscles if m not in muscles]
        if unknown:
            raise UsageError(f"--muscles: unknown muscles {unknown}; muscles are {', '.join(muscles)}")
    sel_m = [muscles.index(m) for m in (args.muscles or muscles)]

    # --- size and ranges, then the poses
    nq, nm = len(names), len(muscles)
    for (c, (start, _, step, n)), i in zip(specs.items(), varied):  # the grid's ends, without allocating it
        ends = sorted((start * scale[i], (start + step * (n - 1)) * scale[i]))
        checked[i] = (f"--vary {c}", *ends)
    if lead:
        _check_ranges(checked, table, names, args, scale)
    else:
        with open(os.devnull, "w") as null, contextlib.redirect_stderr(null):
            _check_ranges(checked, table, names, args, scale)
    if args.random:
        _check_size(args.random, nq, nm, args, f"--random {args.random}")
    elif specs:
        _check_size(math.prod(s[3] for s in specs.values()), nq, nm, args,
                    " ".join(f"--vary {c}={s[0]:g}:{s[1]:g}:{s[2]:g}" for c, s in specs.items()))
    grids = [(start + step * np.arange(n)) * scale[i] for (start, _, step, n), i in zip(specs.values(), varied)]
    if args.random:
        lower, upper = table[1], table[2]
        lo = np.maximum(lower, -np.pi) if lower is not None else -np.pi * np.ones(nq)
        hi = np.minimum(upper, np.pi) if upper is not None else np.pi * np.ones(nq)
        rng = np.random.default_rng(args.seed)
        cols = varied or list(range(nq))
        qs = np.repeat(base[None], args.random, 0)
        qs[:, cols] = rng.uniform(lo[cols], hi[cols], size=(args.random, len(cols)))
        varied = cols
    elif grids:
        qs = np.repeat(base[None], math.prod(len(g) for g in grids), 0)
        qs[:, varied] = np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(len(qs), len(varied))  # product order
    else:
        qs = base[None]
    wrt = args.wrt or [names[i] for i in varied] or list(names)
    sel_c = [index(c, "--wrt") for c in wrt]

    # --- the sweep
    t0 = time.perf_counter()
    lengths, arms = sweep(model, qs, chunk=args.chunk_size, progress=not args.quiet)
    dt = time.perf_counter() - t0
    if not lead:
        return EXIT_OK
    n_proc = jax.process_count()
    print(
        f"mbjax: {len(qs)} poses x {nm} muscles x {nq} coordinates in {dt:.2f} s "
        f"on {jax.device_count()} device(s)" + (f" in {n_proc} processes" if n_proc > 1 else ""),
        file=sys.stderr,
    )
    bad = ~(np.isfinite(lengths).all(axis=1) & np.isfinite(arms).all(axis=(1, 2)))
    if bad.any():
        print(f"mbjax: warning: {int(bad.sum())} pose(s) gave non-finite lengths or moment arms "
              f"(written as nan/inf), first at row {int(np.argmax(bad)) + 1}", file=sys.stderr)
    shown = ["deg" if scale[i] != 1.0 else units[i] for i in range(nq)]
    arm_unit = ["m" if units[c] == "rad" else "m/m" for c in range(nq)]
    header = [f"{n} ({u})" for n, u in zip(names, shown)] + [f"L[{muscles[m]}] (m)" for m in sel_m]
    header += [f"R[{muscles[m]},{names[c]}] ({arm_unit[c]})" for m in sel_m for c in sel_c]
    try:
        with open(args.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for q, ln, r in zip(qs / scale, lengths, arms):
                w.writerow([repr(float(v)) for v in q] + [repr(float(ln[m])) for m in sel_m]
                           + [repr(float(r[c, m])) for m in sel_m for c in sel_c])
    except OSError as e:
        raise Failure(f"--out {args.out}: cannot write the CSV: {e.strerror or e}") from None
    if args.plot:
        _plot(args, qs, arms, scale, shown, names, muscles, sel_m, sel_c, varied, grids)
    return EXIT_OK


#: line styles cycled with the colours: curve k gets colour k % 10 and style k % 4, so no two of
#: the first 20 curves look alike and coincident curves stay visible (dashes over a solid line)
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "v", "D", "x", "+", "*")


def curve_styles(n: int):
    """Distinct (colour, line style, marker) for ``n`` curves."""
    import matplotlib

    colors = matplotlib.colormaps["tab10"].colors
    return [(colors[k % 10], LINESTYLES[k % 4], MARKERS[k % len(MARKERS)]) for k in range(n)]


def _plot(args, qs, arms, scale, shown, names, muscles, sel_m, sel_c, varied, grids):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_idx = varied[0] if varied else 0
    order = np.argsort(qs[:, x_idx], kind="stable")
    xs = qs[order, x_idx] / scale[x_idx]
    lines = bool(grids) and len(grids) == 1 and not args.random
    fig, axes = plt.subplots(1, len(sel_c), figsize=(5 * len(sel_c), 4), squeeze=False)
    styles = curve_styles(len(sel_m))
    n = len(sel_m)
    for ax, c in zip(axes[0], sel_c):
        for k, ((color, ls, marker), m) in enumerate(zip(styles, sel_m)):
            y = arms[order, c, m] * 100.0
            # later curves are drawn thinner on top of earlier ones: coincident curves show as stripes
            if lines:
                ax.plot(xs, y, color=color, linestyle=ls, lw=1.0 + 2.5 * (n - 1 - k) / max(n - 1, 1), label=muscles[m])
            else:
                ax.plot(xs, y, linestyle="none", marker=marker, color=color, ms=2.0 + 3.0 * (n - 1 - k) / max(n - 1, 1),
                        label=muscles[m])
        ax.set_xlabel(f"{names[x_idx]} ({shown[x_idx]})")
        unit = "cm" if shown[c] != "m" else "cm/m"
        ax.set_ylabel(f"moment arm about {names[c]} ({unit})")
        ax.axhline(0.0, color="0.6", lw=0.6)
    if len(sel_m) <= 20:
        axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(args.plot, dpi=120)
    except OSError as e:
        raise Failure(f"--plot {args.plot}: cannot write the figure: {e.strerror or e}") from None
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------------------------
# info
# --------------------------------------------------------------------------------------------


def info_command(args):
    path = _osim_path(args.model)
    if path is None:  # a built-in model assembled in code: list what the Model knows
        model = load_model(args.model, ignore_wrapping=True)
        info = model.extras.get("osim")
        data = {
            "model": args.model,
            "coordinates": [{"name": n, "unit": "rad",
                             "range": [float(info.lower[i]), float(info.upper[i])] if info is not None else None,
                             "default": float(default_pose(model)[i])}
                            for i, n in enumerate(model.coordinate_names)],
            "bodies": [{"name": b} for b in model.body_names],
            "muscles": [{"name": m} for m in model.muscle_names],
            "wrap_objects": [],
        }
    else:
        from .io.osim_summary import summarize_osim

        try:
            s = summarize_osim(path)
        except ValueError as e:
            raise Failure(str(e)) from None
        data = {
            "model": path,
            "name": s.model_name,
            "version": s.version,
            "coordinates": [{"name": c.name, "joint": c.joint, "type": c.motion_type, "unit": c.unit,
                             "range": list(c.range), "default": c.default, "clamped": c.clamped,
                             "locked": c.locked, "coupled_to": list(c.coupled_to) if c.coupled_to else None}
                            for c in s.coordinates],
            "bodies": [{"name": b.name, "mass": b.mass} for b in s.bodies],
            "muscles": [{"name": m.name, "class": m.kind, "wrap_objects": list(m.wrap_objects), "path": m.path}
                        for m in s.muscles],
            "wrap_objects": [{"name": w.name, "class": w.kind, "body": w.body} for w in s.wrap_objects],
        }
        if s.constraints:
            data["constraints"] = [{"name": c.name, "class": c.kind, "enforced": c.enforced, "handling": c.handling}
                                   for c in s.constraints]
    if args.json:
        print(json.dumps(data, indent=1))
        return EXIT_OK
    out = []
    title = data["model"] + (f"  (model {data['name']!r}, OpenSim document version {data['version']})"
                             if "version" in data else "")
    out.append(title)
    cs = data["coordinates"]
    out.append(f"\ncoordinates ({len(cs)}):")
    width = max([len(c["name"]) for c in cs] + [4])
    for c in cs:
        rng = c["range"]
        if rng is None:
            r = "no range"
        elif c["unit"] == "rad":
            r = f"[{rng[0]:.6g}, {rng[1]:.6g}] rad = [{np.rad2deg(rng[0]):.4g}, {np.rad2deg(rng[1]):.4g}] deg"
        else:
            r = f"[{rng[0]:.6g}, {rng[1]:.6g}] {c['unit']}"
        flags = [k for k in ("clamped", "locked") if c.get(k)]
        if c.get("coupled_to"):
            flags.append(f"coupled to {', '.join(c['coupled_to'])}")
        joint = f"  joint {c['joint']}" if "joint" in c else ""
        kind = f" {c['type']}" if "type" in c else ""
        out.append(f"  {c['name']:<{width}} {r}  default {c['default']:.6g} {c['unit']}{kind}{joint}"
                   + (f"  ({'; '.join(flags)})" if flags else ""))
    bs = data["bodies"]
    out.append(f"\nbodies ({len(bs)}):")
    out.extend(f"  {b['name']}" + (f"  {b['mass']:.6g} kg" if "mass" in b else "") for b in bs)
    ms = data["muscles"]
    out.append(f"\nmuscles ({len(ms)}):")
    for m in ms:
        wraps = f"  wraps over {', '.join(m['wrap_objects'])}" if m.get("wrap_objects") else ""
        if m.get("path") == "FunctionBasedPath":
            wraps = "  FunctionBasedPath (a function of the coordinates)"
        out.append(f"  {m['name']}" + (f"  {m['class']}" if "class" in m else "") + wraps)
    ws = data["wrap_objects"]
    out.append(f"\nwrap objects ({len(ws)}):")
    out.extend(f"  {w['name']}  {w['class']} on {w['body']}" for w in ws)
    if data.get("constraints"):
        out.append(f"\nconstraints ({len(data['constraints'])}):")
        out.extend(f"  {c['name']}  {c['class']}: {c['handling']}" for c in data["constraints"])
    try:
        print("\n".join(out))
    except BrokenPipeError:  # `mbjax info MODEL | head`
        sys.stdout = open(os.devnull, "w")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# parser and entry point
# --------------------------------------------------------------------------------------------

EPILOG = """exit status:
  0    success
  1    failure: the model file cannot be read, the results cannot be written, an unexpected error
  2    usage error: a bad flag or value (named in the message), an unknown coordinate or muscle,
       an output path that cannot be written, a model that needs --ignore-wrapping, a sweep far
       outside a coordinate's range or larger than --max-poses
  130  interrupted (Ctrl-C)
Errors are one line on stderr; MBJAX_TRACEBACK=1 adds the traceback of an unexpected error."""


# --------------------------------------------------------------------------------------------
# OpenSim tool setup files: mbjax ik|id|so SETUP.xml
# --------------------------------------------------------------------------------------------


def _setup_model(args, tool):
    """The model a tool runs on: ``--model`` or the setup's ``<model_file>`` (float64 enabled: the
    results are compared with OpenSim's)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    if not args.no_compile_cache:
        from .compilation_cache import enable_compilation_cache

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
        raise UsageError(f"SETUP {path}: is a directory, expected an OpenSim setup .xml file")


#: models loaded by the setups of one ``mbjax run`` (None outside it): each file is read once
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


#: the OpenSim tools ``mbjax run`` runs, by the setup file's tool element
_RUNNABLE = {"InverseKinematicsTool": ("ik",), "InverseDynamicsTool": ("id",)}
#: the analyses of an AnalyzeTool setup that ``mbjax run`` runs, in this order
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
        raise UsageError(f"SETUP {path}: not an XML file ({e})") from None
    tool = root[0] if root.tag == "OpenSimDocument" and len(root) else root
    if tool.tag in _RUNNABLE:
        return _RUNNABLE[tool.tag]
    if tool.tag == "AnalyzeTool":
        found, off = [], []
        for element, name in _ANALYSES:
            for el in tool.iter(element):
                on = (el.findtext("on") or "true").strip().lower() != "false"
                (found if on else off).append(name)
                break
        others = sorted({el.tag for analyses in tool.iter("AnalysisSet") for objs in analyses.iter("objects")
                         for el in objs} - {e for e, _ in _ANALYSES})
        if not found:
            raise UsageError(f"SETUP {path}: its AnalyzeTool has no StaticOptimization or JointReaction analysis "
                             f"switched on ({', '.join(others) or 'no analyses'}); mbjax runs those two")
        if others:
            print(f"mbjax run: warning: {path}: analyses mbjax does not run, left out: {', '.join(others)}",
                  file=sys.stderr)
        if off:
            print(f"mbjax run: warning: {path}: analyses switched off (<on> false), not run: "
                  f"{', '.join(e for e, n in _ANALYSES if n in off)}", file=sys.stderr)
        return tuple(n for _, n in _ANALYSES if n in found)
    raise UsageError(f"SETUP {path}: <{tool.tag}> is not a tool mbjax runs (InverseKinematicsTool, "
                     "InverseDynamicsTool, AnalyzeTool with StaticOptimization or JointReaction)")


def run_setups(setups, model: str | None = None, quiet: bool = False, compile_cache: bool = True) -> int:
    """Run OpenSim setup files in order in one process (``mbjax run``): IK, ID, static optimization
    and joint reactions as each file asks (:func:`tools_of_setup`), each writing the files its setup
    names, so a setup reading the previous one's output chains.  Every file is checked before the
    first runs; each model file is read once and each program compiled once.  Returns the exit
    status: 0, or the worst of the steps (1: a step did not converge everywhere; its files are
    still written and the next steps run)."""
    global _RUN_MODELS

    plan = [(path, tool) for path in setups for tool in tools_of_setup(path)]
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
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _tool_outputs(args, is_dir):
    if args.out is not None:
        if is_dir:
            if os.path.exists(args.out) and not os.path.isdir(args.out):
                raise UsageError(f"--out {args.out}: exists and is not a directory")
        else:
            _check_writable(args.out, "--out")
    if args.plot is not None:
        _check_writable(args.plot, "--plot")
        _check_plot_format(args.plot)


def ik_command(args):
    from .ik import inverse_kinematics_from_setup, read_ik_setup, write_ik_marker_errors
    from .io.storage import prepare_output, table_from_coordinates, write_storage

    _tool_outputs(args, is_dir=False)
    from .io.osim_markers import load_markers

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
        from .io.storage import _rotational

        scale = np.where(_rotational(model), 180.0 / np.pi, 1.0)
        _plot_series(args.plot, res.time, res.q * scale, list(model.coordinate_names), "coordinate (deg or m)",
                     f"inverse kinematics: {os.path.basename(args.setup)}")
    return EXIT_OK if np.all(res.converged) else EXIT_FAILURE


def id_command(args):
    from .id_tool import inverse_dynamics_from_setup, read_id_setup

    _tool_outputs(args, is_dir=False)
    model, _ = _setup_model(args, read_id_setup)
    t0 = time.time()
    res = inverse_dynamics_from_setup(args.setup, model, output_file=args.out)
    out = args.out or read_id_setup(args.setup).output_file
    if not args.quiet:
        print(f"mbjax id: {res.time.size} frames in {time.time() - t0:.1f} s; wrote {out}")
    if args.plot:
        _plot_series(args.plot, res.time, res.tau, list(res.labels), "generalized force (N·m or N)",
                     f"inverse dynamics: {os.path.basename(args.setup)}")
    return EXIT_OK


def so_command(args):
    from .so_tool import read_so_setup, static_optimization_from_setup

    _tool_outputs(args, is_dir=True)
    model, _ = _setup_model(args, read_so_setup)
    t0 = time.time()
    res = static_optimization_from_setup(args.setup, model, results_directory=args.out, progress=not args.quiet)
    out = args.out or read_so_setup(args.setup).results_directory
    ok = bool(np.all(np.asarray(res.result.converged)))
    if not args.quiet:
        print(f"mbjax so: {res.time.size} frames, {len(res.labels)} actuators in {time.time() - t0:.1f} s; "
              f"{'all frames converged' if ok else 'NOT all frames converged'}; wrote {out}")
    if args.plot:
        nm = len(res.muscle_names)
        panels = [(res.activations[:, :nm], list(res.labels[:nm]), "muscle activation")]
        if len(res.labels) > nm:  # reserve and residual actuators: their forces (N·m or N), not controls
            panels.append((res.forces[:, nm:], list(res.labels[nm:]), "actuator force (N·m or N)"))
        _plot_panels(args.plot, res.time, panels, f"static optimization: {os.path.basename(args.setup)}")
    return EXIT_OK if ok else EXIT_FAILURE


def jr_command(args):
    from .jr_tool import read_jr_setup, joint_reactions_from_setup

    _tool_outputs(args, is_dir=True)
    model, _ = _setup_model(args, read_jr_setup)
    t0 = time.time()
    res = joint_reactions_from_setup(args.setup, model, results_directory=args.out, progress=not args.quiet)
    out = args.out or read_jr_setup(args.setup).results_directory
    if not args.quiet:
        print(f"mbjax jr: {res.time.size} frames, {len(res.keys)} joint reactions in {time.time() - t0:.1f} s; "
              f"wrote {out}")
    if args.plot:
        keys = [k.label for k in res.keys]
        panels = [(res.loads[:, :, :3].reshape(res.time.size, -1), [f"{k}_f{c}" for k in keys for c in "xyz"],
                   "reaction force (N)"),
                  (res.loads[:, :, 3:6].reshape(res.time.size, -1), [f"{k}_m{c}" for k in keys for c in "xyz"],
                   "reaction moment (N·m)")]
        _plot_panels(args.plot, res.time, panels, f"joint reactions: {os.path.basename(args.setup)}")
    return EXIT_OK


def build_parser():
    p = argparse.ArgumentParser(prog="mbjax", description="mbjax: empirical multibody musculoskeletal models in JAX",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"mbjax {_version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="{moment-arms,info,ik,id,so,jr,run}")
    model_help = f"an .osim file, a shipped example ({', '.join(_EXAMPLES)}), 'shoulder' or 'shoulder:degroot_brand'"

    ma = sub.add_parser("moment-arms", help="sweep muscle lengths and moment arms of a model", epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ma.add_argument("model", help=model_help)
    ma.add_argument("--vary", action="append", metavar="COORD=START:STOP:STEP",
                    help="sweep a coordinate (STOP included when on the grid); several make a grid")
    ma.add_argument("--set", action="append", metavar="COORD=VALUE", help="hold a coordinate (default: the model's default)")
    ma.add_argument("--random", type=_positive_int, metavar="N", help="N random poses in the coordinate ranges")
    ma.add_argument("--seed", type=int, default=0)
    ma.add_argument("--wrt", nargs="+", metavar="COORD", help="coordinates of the moment arms (default: varied)")
    ma.add_argument("--muscles", nargs="+", metavar="NAME")
    ma.add_argument("--degrees", action="store_true",
                    help="values of rotational coordinates are degrees (in --vary/--set and in the CSV)")
    ma.add_argument("--ignore-wrapping", action="store_true", help="load wrapping paths as straight lines")
    ma.add_argument("--wrapping", choices=("opensim", "smooth"), default="opensim",
                    help="wrap paths by OpenSim's algorithm (default) or the smooth geodesic option "
                         "(cylinders, spheres, ellipsoids; tori refused)")
    ma.add_argument("--allow-out-of-range", action="store_true",
                    help="sweep beyond a coordinate's range by more than its width (otherwise refused)")
    ma.add_argument("--max-poses", type=_positive_int, metavar="N",
                    help="refuse larger sweeps (default: as many as fit in half the physical memory)")
    ma.add_argument("--quiet", action="store_true", help="no progress bar")
    ma.add_argument("--chunk-size", type=_positive_int, metavar="N",
                    help="poses per step and process (default: 4096 per CPU device, 65536 per GPU)")
    dist = ma.add_argument_group(
        "distributed", "run as one of several processes (hosts, GPUs) under jax.distributed; the poses are split "
        "between the processes and process 0 writes the files. Also enabled by MBJAX_COORDINATOR, "
        "MBJAX_NUM_PROCESSES, MBJAX_PROCESS_ID; under SLURM (srun) or Open MPI --distributed alone is enough")
    dist.add_argument("--distributed", action="store_true",
                      help="call jax.distributed.initialize (via mbjax.sweep.initialize)")
    dist.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0 (implies --distributed)")
    dist.add_argument("--num-processes", type=_positive_int, metavar="P", help="number of processes (implies --distributed)")
    dist.add_argument("--process-id", type=int, metavar="I", help="this process, 0..P-1 (implies --distributed)")
    ma.add_argument("--out", required=True, metavar="FILE.csv")
    ma.add_argument("--plot", metavar="FILE.png")
    ma.set_defaults(func=moment_arms_command)

    info = sub.add_parser("info", help="list a model's coordinates (ranges, units), bodies, muscles, wrap objects",
                          epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("model", help=model_help)
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    info.set_defaults(func=info_command)

    for name, fn, what, out_help in (
            ("ik", ik_command, "inverse kinematics from an OpenSim InverseKinematicsTool setup file",
             "motion file to write (default: the setup's <output_motion_file>)"),
            ("id", id_command, "inverse dynamics from an OpenSim InverseDynamicsTool setup file",
             "generalized-force .sto to write (default: results_directory/output_gen_force_file)"),
            ("so", so_command, "static optimization from an OpenSim AnalyzeTool (StaticOptimization) setup file",
             "folder for the activation and force .sto files (default: the setup's results_directory)"),
            ("jr", jr_command, "joint reaction loads from an OpenSim AnalyzeTool (JointReaction) setup file with a "
             "forces_file", "folder for the ReactionLoads .sto file (default: the setup's results_directory)")):
        tool = sub.add_parser(name, help=what, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        tool.add_argument("setup", metavar="SETUP.xml", help="the OpenSim setup file")
        tool.add_argument("--model", help="use this model instead of the setup's <model_file> (" + model_help + ")")
        tool.add_argument("--out", help=out_help)
        tool.add_argument("--plot", metavar="FILE.png", help="plot the result over time")
        tool.add_argument("--quiet", action="store_true", help="no progress output")
        tool.add_argument("--no-compile-cache", action="store_true",
                          help="do not keep compiled programs on disk between runs (default: kept in "
                               "$MBJAX_CACHE_DIR or ~/.cache/mbjax/xla, so a second run skips XLA compilation)")
        if name == "ik":
            tool.add_argument("--accuracy", type=float, default=None,
                              help="solver tolerance (default: the setup's <accuracy>, not below 1e-9)")
        tool.set_defaults(func=fn)
    run = sub.add_parser("run", help="run several OpenSim setup files in order in one process (IK, ID, SO, JR as "
                         "each file asks; a setup reading the previous one's output chains)", epilog=EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("setups", nargs="+", metavar="SETUP.xml", help="OpenSim setup files, run in this order")
    run.add_argument("--model", help="use this model for every setup instead of their <model_file> (" + model_help + ")")
    run.add_argument("--quiet", action="store_true", help="no progress output")
    run.add_argument("--no-compile-cache", action="store_true",
                     help="do not keep compiled programs on disk between runs")
    run.set_defaults(func=run_command)
    return p


def main(argv=None) -> int:
    """Run the command; returns the exit status (argparse's own usage errors exit 2 directly)."""
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if given and given[0].startswith("-") and given[0] not in ("-h", "--help", "--version"):
        parser.error(f"unrecognized option {given[0]!r} before the command; the command comes first "
                     "(moment-arms, info, ik, id, so, jr, run)")  # argparse would only say a command is required
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as e:
        print(f"mbjax: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        from .io.storage import OutputPathError  # an output the setup names, found unwritable before the work

        if not isinstance(e, OutputPathError):
            text, _ = _library_message(e)
            print(f"mbjax: error: {text}", file=sys.stderr)
            return EXIT_FAILURE
        print(f"mbjax: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("mbjax: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (Failure, OSError, ValueError, NotImplementedError) as e:
        text, _ = _library_message(e)
        print(f"mbjax: error: {text}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as e:  # a bug or an exhausted resource: one line, the traceback on request
        if os.environ.get("MBJAX_TRACEBACK"):
            traceback.print_exc()
        print(f"mbjax: error: unexpected {type(e).__name__}: {e} (set MBJAX_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
