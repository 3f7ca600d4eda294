"""Timing helpers shared by the benchmark scripts (speed lives here, never in tests)."""

from __future__ import annotations

import argparse
import os
import time


def device_setup(description: str | None = None, extra=None):
    """Parse the common flags (``--quick``, ``--device cpu|gpu``, ``--float32``) and configure JAX.

    Call before importing jax elsewhere: ``--device`` sets ``JAX_PLATFORMS``; float64 is enabled
    unless ``--float32``.  ``extra(parser)`` may add script-specific flags.
    """
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="fewer poses and repeats")
    ap.add_argument("--device", choices=("cpu", "gpu"), default=None, help="JAX backend (default: JAX's choice)")
    ap.add_argument("--float32", action="store_true", help="float32 instead of float64")
    if extra is not None:
        extra(ap)
    args = ap.parse_args()
    if args.device is not None:
        os.environ["JAX_PLATFORMS"] = "cuda" if args.device == "gpu" else "cpu"
    import jax

    jax.config.update("jax_enable_x64", not args.float32)
    return args


def timed(fn, *args, repeat: int = 3):
    """``(first_call_s, best_s)``: the first call (compile + run) and the best of ``repeat`` reruns."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return first, best


def interleaved(fns: dict, rounds: int = 15):
    """``{name: (first_call_s, best_s, median_s)}`` for ``fns = {name: (fn, arg)}``, each compiled by
    its first call, then timed in ``rounds`` rounds that call every function once in turn, so a
    change of machine load between functions shows in all of them alike (ratios taken this way
    are the fair ones on a shared machine).  A function whose first call raises is reported and
    removed from ``fns``."""
    import jax
    import numpy as np

    first = {}
    for name, (fn, arg) in list(fns.items()):
        t0 = time.perf_counter()
        try:
            jax.block_until_ready(fn(arg))
        except Exception as err:  # a route that fails is reported and left out, the others still run
            print(f"    {name}: failed ({type(err).__name__}: {str(err).splitlines()[0][:160]}); left out")
            del fns[name]
            continue
        first[name] = time.perf_counter() - t0
    runs = {name: [] for name in fns}
    for _ in range(rounds):
        for name, (fn, arg) in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(arg))
            runs[name].append(time.perf_counter() - t0)
    return {name: (first[name], min(r), float(np.median(r))) for name, r in runs.items()}
