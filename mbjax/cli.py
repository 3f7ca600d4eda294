"""The ``mbjax`` command.

``mbjax moment-arms MODEL --vary COORD=START:STOP:STEP [--vary ...] [--set COORD=VALUE ...]
[--random N] [--wrt COORD ...] [--muscles NAME ...] [--degrees] [--ignore-wrapping]
[--chunk-size N] [--distributed [--coordinator HOST:PORT --num-processes P --process-id I]]
--out FILE.csv [--plot FILE.png]``

``MODEL`` is an OpenSim ``.osim`` file or a built-in model (``shoulder``,
``shoulder:degroot_brand``).  Several ``--vary`` make a grid (``STOP`` included when it falls on
the grid); ``--random N`` draws N poses uniformly in the coordinate ranges instead.  Unset
coordinates sit at the model's default pose.  The sweep (:func:`mbjax.sweep.sweep_poses`) runs in
chunks with a progress bar and is sharded over all local JAX devices when there are several
(``XLA_FLAGS=--xla_force_host_platform_device_count=4`` makes 4 CPU devices).  With
``--distributed`` (or the ``MBJAX_COORDINATOR``/``MBJAX_NUM_PROCESSES``/``MBJAX_PROCESS_ID``
variables, see :func:`mbjax.sweep.initialize`) the same command runs as several processes of one
``jax.distributed`` job, e.g. ``srun -n 8 mbjax moment-arms ... --distributed``: each process
takes its share of the poses and process 0 writes the CSV and the plot.  The CSV holds the
coordinates, the lengths ``L[muscle]`` and the moment arms ``R[muscle,coord]`` (m per rad,
OpenSim sign R = -∂L/∂q).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time
import warnings

import numpy as np


def _parse_assign(text: str, what: str):
    if "=" not in text:
        raise SystemExit(f"mbjax: {what} expects COORD=..., got {text!r}")
    name, value = text.split("=", 1)
    return name.strip(), value.strip()


def _grid(spec: str, scale: float):
    parts = spec.split(":")
    if len(parts) != 3:
        raise SystemExit(f"mbjax: --vary expects START:STOP:STEP, got {spec!r}")
    start, stop, step = (float(p) * scale for p in parts)
    if step == 0 or (stop - start) / step < 0:
        raise SystemExit(f"mbjax: --vary {spec!r}: STEP must move from START towards STOP")
    n = int(np.floor((stop - start) / step + 1e-9)) + 1
    return start + step * np.arange(n)


def load_model(spec: str, ignore_wrapping: bool = False):
    """A model from an ``.osim`` path or a built-in name."""
    if spec.startswith("shoulder"):
        from .models.shoulder import shoulder_model

        rhythm = spec.split(":", 1)[1] if ":" in spec else "holzbaur"
        return shoulder_model(rhythm)
    if spec.endswith(".osim"):
        from .io.osim import load_osim

        return load_osim(spec, ignore_wrapping=ignore_wrapping)
    raise SystemExit(f"mbjax: unknown model {spec!r} (an .osim file, 'shoulder' or 'shoulder:degroot_brand')")


def default_pose(model):
    info = model.extras.get("osim")
    if info is not None:
        return np.array(info.default, dtype=float)
    return np.zeros(model.n_coordinates)


def lengths_and_moment_arms(model, q):
    """Lengths ``(nm,)`` and moment arms ``(nq, nm)`` at one pose (the per-pose function the CLI sweeps)."""
    from . import moment_arms, muscle_lengths

    return muscle_lengths(model, q), moment_arms(model, q)


def sweep(model, qs, chunk: int | None = None, progress: bool = True):
    """Lengths ``(n, nm)`` and moment arms ``(n, nq, nm)`` at poses ``qs``: :func:`mbjax.sweep.sweep_poses`.

    Chunked, sharded over the local devices and, under ``jax.distributed``, split over the
    processes and gathered in order on every process.
    """
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


def moment_arms_command(args):
    import jax

    if args.chunk_size is not None and args.chunk_size < 1:
        raise SystemExit(f"mbjax: --chunk-size must be a positive integer, got {args.chunk_size}")
    jax.config.update("jax_enable_x64", True)
    _start_distributed(args)  # before anything starts the JAX backends
    lead = jax.process_index() == 0  # only process 0 reports and writes files
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(args.model, args.ignore_wrapping)
    for w in caught if lead else ():
        print(f"mbjax: warning: {w.message}", file=sys.stderr)
    names = model.coordinate_names
    scale = np.pi / 180.0 if args.degrees else 1.0
    base = default_pose(model)
    for item in args.set or []:
        c, v = _parse_assign(item, "--set")
        if c not in names:
            raise SystemExit(f"mbjax: --set: unknown coordinate {c!r}; coordinates are {names}")
        base[names.index(c)] = float(v) * scale
    varied = []
    grids = []
    for item in args.vary or []:
        c, spec = _parse_assign(item, "--vary")
        if c not in names:
            raise SystemExit(f"mbjax: --vary: unknown coordinate {c!r}; coordinates are {names}")
        varied.append(names.index(c))
        grids.append(_grid(spec, scale))
    if args.random:
        info = model.extras.get("osim")
        lo = np.maximum(np.asarray(info.lower), -np.pi) if info is not None else -np.pi * np.ones(len(names))
        hi = np.minimum(np.asarray(info.upper), np.pi) if info is not None else np.pi * np.ones(len(names))
        rng = np.random.default_rng(args.seed)
        cols = varied or list(range(len(names)))
        qs = np.repeat(base[None], args.random, 0)
        qs[:, cols] = rng.uniform(lo[cols], hi[cols], size=(args.random, len(cols)))
        varied = cols
    elif grids:
        qs = np.repeat(base[None], int(np.prod([len(g) for g in grids])), 0)
        for row, values in enumerate(itertools.product(*grids)):
            qs[row, varied] = values
    else:
        qs = base[None]
    muscles = list(model.muscle_names)
    if not muscles:
        raise SystemExit(f"mbjax: model {args.model!r} has no muscle paths")
    if args.muscles:
        unknown = [m for m in args.muscles if m not in muscles]
        if unknown:
            raise SystemExit(f"mbjax: unknown muscles {unknown}; muscles are {tuple(muscles)}")
    sel_m = [muscles.index(m) for m in (args.muscles or muscles)]
    wrt = args.wrt or [names[i] for i in varied] or list(names)
    for c in wrt:
        if c not in names:
            raise SystemExit(f"mbjax: --wrt: unknown coordinate {c!r}; coordinates are {names}")
    sel_c = [names.index(c) for c in wrt]
    t0 = time.perf_counter()
    lengths, arms = sweep(model, qs, chunk=args.chunk_size, progress=not args.quiet)
    dt = time.perf_counter() - t0
    if not lead:
        return 0
    n_proc = jax.process_count()
    print(
        f"mbjax: {len(qs)} poses x {len(muscles)} muscles x {len(names)} coordinates in {dt:.2f} s "
        f"on {jax.device_count()} device(s)" + (f" in {n_proc} processes" if n_proc > 1 else ""),
        file=sys.stderr,
    )
    header = list(names) + [f"L[{muscles[m]}]" for m in sel_m]
    header += [f"R[{muscles[m]},{names[c]}]" for m in sel_m for c in sel_c]
    with open(args.out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for q, l, r in zip(qs, lengths, arms):
            w.writerow([repr(float(v)) for v in q] + [repr(float(l[m])) for m in sel_m]
                       + [repr(float(r[c, m])) for m in sel_m for c in sel_c])
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        x_idx = varied[0] if varied else 0
        order = np.argsort(qs[:, x_idx], kind="stable")
        xs = qs[order, x_idx] / scale
        fig, axes = plt.subplots(1, len(sel_c), figsize=(5 * len(sel_c), 4), squeeze=False)
        for ax, c in zip(axes[0], sel_c):
            for m in sel_m:
                style = "-" if grids and len(grids) == 1 and not args.random else "."
                ax.plot(xs, arms[order, c, m], style, label=muscles[m], ms=2)
            ax.set_xlabel(f"{names[x_idx]} ({'deg' if args.degrees else 'model units'})")
            ax.set_ylabel(f"moment arm about {names[c]} (m)")
        if len(sel_m) <= 16:
            axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="mbjax", description="mbjax: empirical multibody musculoskeletal models in JAX")
    sub = p.add_subparsers(dest="command", required=True)
    ma = sub.add_parser("moment-arms", help="sweep muscle lengths and moment arms of a model")
    ma.add_argument("model", help="an .osim file, 'shoulder' or 'shoulder:degroot_brand'")
    ma.add_argument("--vary", action="append", metavar="COORD=START:STOP:STEP")
    ma.add_argument("--set", action="append", metavar="COORD=VALUE")
    ma.add_argument("--random", type=int, default=0, metavar="N", help="N random poses instead of a grid")
    ma.add_argument("--seed", type=int, default=0)
    ma.add_argument("--wrt", nargs="+", metavar="COORD", help="coordinates of the moment arms (default: varied)")
    ma.add_argument("--muscles", nargs="+", metavar="NAME")
    ma.add_argument("--degrees", action="store_true", help="--vary/--set values are degrees")
    ma.add_argument("--ignore-wrapping", action="store_true", help="load wrapping paths as straight lines")
    ma.add_argument("--quiet", action="store_true", help="no progress bar")
    ma.add_argument("--chunk-size", type=int, metavar="N",
                    help="poses per step and process (default: 4096 per CPU device, 65536 per GPU)")
    dist = ma.add_argument_group(
        "distributed", "run as one of several processes (hosts, GPUs) under jax.distributed; the poses are split "
        "between the processes and process 0 writes the files. Also enabled by MBJAX_COORDINATOR, "
        "MBJAX_NUM_PROCESSES, MBJAX_PROCESS_ID; under SLURM (srun) or Open MPI --distributed alone is enough")
    dist.add_argument("--distributed", action="store_true",
                      help="call jax.distributed.initialize (via mbjax.sweep.initialize)")
    dist.add_argument("--coordinator", metavar="HOST:PORT", help="address of process 0 (implies --distributed)")
    dist.add_argument("--num-processes", type=int, metavar="P", help="number of processes (implies --distributed)")
    dist.add_argument("--process-id", type=int, metavar="I", help="this process, 0..P-1 (implies --distributed)")
    ma.add_argument("--out", required=True, metavar="FILE.csv")
    ma.add_argument("--plot", metavar="FILE.png")
    ma.set_defaults(func=moment_arms_command)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, NotImplementedError, FileNotFoundError) as e:
        print(f"mbjax: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
