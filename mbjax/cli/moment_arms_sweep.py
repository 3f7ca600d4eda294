"""``mbjax moment-arms``: a grid or random sweep of muscle lengths and moment arms to CSV and a plot
(the package docstring has the command line and its checks)."""

from __future__ import annotations

import contextlib
import csv
import math
import os
import sys
import time
import warnings

import numpy as np

from .common import (
    EXIT_OK,
    Failure,
    UsageError,
    _EXAMPLES,
    _check_plot_format,
    _check_writable,
    _grid_spec,
    _number,
    _parse_assign,
    default_pose,
    load_model,
)


def _coordinate_table(model, spec: str):
    """``(units, lower, upper, source)`` of the model's coordinates: units 'rad' or 'm', ranges in SI or None."""
    n = model.n_coordinates
    info = model.osim
    units = ["rad"] * n
    lower = upper = None
    source = spec
    if info is not None:
        lower, upper = np.asarray(info.lower, float), np.asarray(info.upper, float)
        source = os.path.basename(info.source) if spec.endswith(".osim") or spec in _EXAMPLES else spec
        units = ["m" if t == "translational" else "rad" for t in info.motion_types]
        try:  # the file's declared motion types (OpenSim 4.x files omit <motion_type>)
            from ..opensim.model.osim_summary import summarize_osim

            summary = summarize_osim(info.source)
            by_name = {c.name: c for c in summary.coordinates}
            units = [by_name[c].unit if c in by_name and by_name[c].unit != "?" else u
                     for c, u in zip(model.coordinate_names, units)]
        except Exception:  # a trimmed temporary file may be gone: keep the loader's types
            pass
    return units, lower, upper, source


def lengths_and_moment_arms(model, q):
    """Lengths ``(nm,)`` and moment arms ``(nq, nm)`` at one pose (the per-pose function the CLI sweeps)."""
    from .. import moment_arms, muscle_lengths

    return muscle_lengths(model, q), moment_arms(model, q)


def sweep(model, qs, chunk: int | None = None, progress: bool = True):
    """Lengths ``(n, nm)`` and moment arms ``(n, nq, nm)`` at poses ``qs``: :func:`mbjax.analysis.sweep.sweep_poses`."""
    from ..analysis.sweep import sweep_poses

    return sweep_poses(lengths_and_moment_arms, model, qs, chunk_size=chunk, progress=progress, desc="moment arms")


def _start_distributed(args) -> bool:
    """``jax.distributed`` for ``--distributed`` / ``--coordinator`` ... or ``MBJAX_*`` variables."""
    from ..analysis.sweep import initialize

    env = any(os.environ.get(k) for k in ("MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID"))
    explicit = (args.coordinator, args.num_processes, args.process_id)
    if not (args.distributed or env or any(v is not None for v in explicit)):
        return False
    try:
        return initialize(*explicit)
    except ValueError as e:  # flags that do not make a job: a usage error naming them
        text = str(e).removeprefix("initialize: ")
        for kw, flag in (("coordinator_address", "--coordinator"), ("num_processes", "--num-processes"),
                         ("process_id", "--process-id")):
            text = text.replace(kw, flag)
        given = [f"{f} {v}" for f, v in zip(("--coordinator", "--num-processes", "--process-id"), explicit)
                 if v is not None] + (["--distributed"] if args.distributed else [])
        raise UsageError(f"{' '.join(given) or 'MBJAX_* variables'}: {text}") from None


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
    if args.random and args.vary:  # --random draws in the coordinate ranges: a --vary grid would be dropped
        raise UsageError(f"--random {args.random} and --vary {args.vary[0]} cannot be combined: --random draws poses "
                         "in the coordinates' ranges, --vary sweeps a grid; give one of them")
    if args.ignore_wrapping and args.wrapping == "smooth":
        raise UsageError("--wrapping smooth and --ignore-wrapping contradict each other: --ignore-wrapping loads "
                         "straight-line paths, --wrapping smooth wraps them; give one of them")
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
