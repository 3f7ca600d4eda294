"""Timing helper shared by the benchmark scripts (speed lives here, never in tests)."""

from __future__ import annotations

import time

import jax


def timed(fn, *args, repeat: int = 3):
    """``(first_call_s, best_s)``: the first call (compile + run) and the best of ``repeat`` reruns."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return first, best
