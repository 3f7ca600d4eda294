"""Checks of the arguments of :func:`mbjax.analysis.ik.inverse_kinematics`: solver tolerances, task weights,
marker data and the start ``q0``; each refuses a bad value by name."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...io.storage import MarkerData


def _default_tolerance() -> float:
    """The solver's default ``rtol = atol``: 1e-9 in float64, 1e-5 in float32 (1e-10 can stall in
    trust-region rejections at roundoff)."""
    return 1e-9 if jnp.result_type(float) == jnp.float64 else 1e-5


def _tolerance(name: str, value) -> float:
    """A solver tolerance: a finite number >= 0 (a negative one would pass every step as converged)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"IK: {name} must be a number, got {value!r}") from None
    if not (np.isfinite(v) and v >= 0):
        raise ValueError(f"IK: {name} must be a finite number >= 0, got {value!r}")
    return v


def _weight(what: str, value) -> float:
    """A task weight as a float; a value that is not a number is refused naming the task."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: weight must be a number, got {value!r}") from None


def _checked_marker_data(data: MarkerData) -> MarkerData:
    """``data`` with ``time (T,)`` and ``positions (T, len(names), 3)`` as float arrays and unique
    names; anything else is refused naming the field and its shape."""
    if not all(hasattr(data, k) for k in ("time", "names", "positions")):  # an array, a path, None
        raise TypeError(f"IK: data must be a MarkerData (mbjax.io.read_trc(path) or MarkerData(time, names, positions "
                        f"(T, n_markers, 3))), got {type(data).__name__}")
    names = tuple(str(n) for n in data.names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"IK: the marker data names {', '.join(map(repr, dup))} more than once: "
                         "rename or drop the duplicate markers")
    try:
        time = np.asarray(data.time, float)
        pos = np.asarray(data.positions, float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"IK: marker data time and positions must be real arrays: {e}") from None
    if time.ndim != 1:
        raise ValueError(f"IK: marker data time must have shape (T,), got {time.shape}")
    if time.shape[0] == 0:
        raise ValueError("IK: the marker data has no frames")
    if pos.ndim != 3 or pos.shape[2] != 3:
        raise ValueError(f"IK: marker data positions must have shape (T, n_markers, 3) (x, y, z of each marker "
                         f"in each frame), got {pos.shape}")
    if pos.shape[1] != len(names):
        raise ValueError(f"IK: marker data positions hold {pos.shape[1]} markers (shape {pos.shape}) but names "
                         f"holds {len(names)} {names}: give one name per marker")
    if pos.shape[0] != time.shape[0]:
        raise ValueError(f"IK: marker data positions hold {pos.shape[0]} frames (shape {pos.shape}) but time "
                         f"holds {time.shape[0]}: give one time per frame")
    if not np.all(np.isfinite(time)):
        raise ValueError("IK: marker data time holds NaN or inf")
    back = np.flatnonzero(~(np.diff(time) > 0))
    if back.size:  # read_trc refuses such a file, as OpenSim's TRCFileAdapter does
        k = int(back[0]) + 1
        raise ValueError(f"IK: marker data time must increase strictly (as read_trc and OpenSim require), got "
                         f"time[{k}] = {float(time[k])!r} after time[{k - 1}] = {float(time[k - 1])!r}: sort the "
                         "frames (time and positions together) or drop the repeated ones")
    return data._replace(time=time, names=names, positions=pos)


def _checked_q0(q0, names, T: int, method: str) -> np.ndarray:
    """The start ``q0``: ``(nq,)`` (or ``(T, nq)`` with ``method="vmap"``), finite, refused naming
    the coordinates otherwise."""
    try:
        q = np.asarray(q0, float)
    except (TypeError, ValueError):
        raise ValueError(f"IK: q0 must be an array of numbers, got {q0!r}") from None
    nq = len(names)
    shapes = [(nq,), (T, nq)] if method == "vmap" else [(nq,)]
    if q.shape not in shapes:
        want = " or ".join(map(str, shapes))
        raise ValueError(f"IK: q0 must have shape {want} for coordinates {tuple(names)}, got {q.shape}")
    bad = ~np.isfinite(q.reshape(-1, nq)).all(axis=0)
    if bad.any():
        raise ValueError(f"IK: q0 holds NaN or inf for {', '.join(repr(n) for n, b in zip(names, bad) if b)}")
    return q
