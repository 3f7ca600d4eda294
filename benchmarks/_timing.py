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
