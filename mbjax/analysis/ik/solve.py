"""The public inverse kinematics of every frame of a marker trial (:func:`inverse_kinematics`) and
its result (:class:`IKResult`); the method is described in :mod:`mbjax.analysis.ik`."""

from __future__ import annotations

import time as _time
import warnings
from collections.abc import Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ... import _checks
from ..._batching import padded_length
from ...io.motion_ranges import warn_outside_ranges
from ..._model import require_model
from ...io.arguments import name_list
from ...io.storage import MarkerData, Table
from ...markers import Markers, marker_positions
from .checks import _checked_marker_data, _checked_q0, _default_tolerance, _tolerance, _weight
from .coordinate_tasks import _coordinate_refs
from .frame_solver import _Fixed, _Spec, _to_u, solve_frames
from .solution_checks import _check_marker_scale, _check_zero_frames, _flag_unfit_frames, _report_undetermined


class IKResult(NamedTuple):
    """IK solution: ``time (T,)``, coordinates ``q (T, nq)`` (radians / metres, model order), the
    tracked ``marker_names``, ``marker_errors (T, nm)`` (metres, NaN where missing), per-frame
    ``rms`` and ``max`` marker error (OpenSim's: ``rms`` divides by all ``nm`` tracked markers, those
    missing in the frame included; NaN where none is present), ``converged (T,)`` and solver
    ``steps (T,)``."""

    time: np.ndarray
    q: np.ndarray
    coordinate_names: tuple[str, ...]
    marker_names: tuple[str, ...]
    marker_errors: np.ndarray
    rms: np.ndarray
    max: np.ndarray
    converged: np.ndarray
    steps: np.ndarray


def inverse_kinematics(model, markers: Markers, data: MarkerData, weights=None, coordinate_tasks=None, *,
                       coordinate_data: Table | None = None, locked=None, bounds: str | None = "clamped",
                       q0=None, method: str = "scan", rtol: float | None = None, atol: float | None = None,
                       max_steps: int = 200, chunk: int = 256, progress: bool | None = None) -> IKResult:
    """Inverse kinematics of every frame of ``data`` (see :mod:`mbjax.analysis.ik` for the method).

    ``method="scan"``: frames in sequence, each from the previous solution (the first from ``q0``,
    default the model's default pose).  ``method="vmap"``: all frames of a chunk in parallel, each
    from its row of ``q0 (T, nq)`` (e.g. a previous or coarser solution; default: the default pose).
    ``rtol``/``atol``: optimistix's Cauchy termination on the solver variables and the objective
    (default 1e-9 in float64, 1e-5 in float32); a frame is reported converged only if, besides,
    a Gauss-Newton step from its solution is within 100 times that tolerance, and its RMS marker error
    is at most 1 m or the spread of the model's markers (beyond both the markers fit no pose: warned,
    naming the frames).  Data with every tracked marker at exactly (0, 0, 0) in every frame is
    refused (missing data exported as zeros), in some frames warned.  ``progress``: print
    a line per chunk of ``chunk`` frames (default: when there is more than one chunk).
    """
    require_model(model, "inverse_kinematics")
    if method not in ("scan", "vmap"):
        raise ValueError(f"method must be 'scan' or 'vmap', got {method!r}")
    tol = _default_tolerance()
    rtol = tol if rtol is None else _tolerance("rtol", rtol)
    atol = tol if atol is None else _tolerance("atol", atol)
    if rtol == 0 and atol == 0:
        raise ValueError("IK: rtol and atol are both 0: no step passes the convergence test; give a positive "
                         f"tolerance (default {tol:g})")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"IK: chunk (frames solved per program run) must be a positive integer, got {chunk!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"IK: max_steps must be a positive integer, got {max_steps!r}")
    if not isinstance(markers, Markers):
        raise TypeError("IK: markers must be the model's mbjax.Markers (mbjax.io.load_markers(osim_path, model) reads "
                        f"the .osim file's MarkerSet), got {type(markers).__name__}")
    data = _checked_marker_data(data)
    names = model.coordinate_names
    nq = len(names)
    info = model.osim
    # ---- markers and weights -----------------------------------------------------------------
    if weights is None:
        used = [n for n in data.names if n in markers.names]
        wdict = {n: 1.0 for n in used}
    else:
        if not isinstance(weights, Mapping):
            raise TypeError(f"IK: weights must be a dict marker name -> weight (e.g. {{'r_acromion': 1.0}}), got "
                            f"{type(weights).__name__} {weights!r}; None weights every marker in both the model "
                            "and the data by 1")
        if not weights:
            raise ValueError("IK: weights is empty: no marker task to track; give a dict marker name -> weight, "
                             "or None to weight every marker in both the model and the data by 1")
        wdict = {str(k): _weight(f"IK marker task {k!r}", v) for k, v in dict(weights).items()}
        unknown = {n: ("the model or the marker data" if n not in markers.names and n not in data.names
                       else "the model" if n not in markers.names else "the marker data")
                   for n in wdict if n not in markers.names or n not in data.names}
        used = [n for n in data.names if n in wdict and n in markers.names]
        if unknown and not used:
            raise ValueError("IK: no weighted marker is in both the model and the marker data: "
                             + ", ".join(f"{n!r} (not in {where})" for n, where in unknown.items())
                             + f"; model markers {markers.names}, marker data {data.names}")
        for n, where in unknown.items():
            warnings.warn(f"IK marker task {n!r}: marker not in {where}; ignored", stacklevel=2)
    if not used:
        raise ValueError(f"no marker is in both the model {markers.names} and the data {data.names}")
    bad = [n for n in used if not (np.isfinite(wdict[n]) and wdict[n] >= 0)]
    if bad:
        raise ValueError(f"marker weights must be finite and >= 0: {[(n, wdict[n]) for n in bad]}")
    if not any(wdict[n] > 0 for n in used):
        raise ValueError(f"every marker weight is 0 ({', '.join(used)}): no marker task determines the pose; "
                         "give the markers to track weights > 0")
    mk = markers.select(used)
    col = [data.names.index(n) for n in used]
    x = np.asarray(data.positions, float)[:, col]
    present = np.all(np.isfinite(x), axis=-1)
    w = np.where(present, np.asarray([wdict[n] for n in used])[None, :], 0.0)
    w_sum = w.sum(axis=1, keepdims=True)
    w = np.where(w_sum > 0, w / np.where(w_sum > 0, w_sum, 1.0), 0.0)  # Simbody's weighted mean
    never = [n for k, n in enumerate(used) if wdict[n] > 0 and not present[:, k].any()]
    if never:
        warnings.warn(f"IK: marker(s) {', '.join(map(repr, never))} have weight > 0 but no data in any frame "
                      "(empty in the marker data): they track nothing; check the marker file's labels",
                      stacklevel=2)
    x = np.where(present[..., None], x, 0.0)
    times = np.asarray(data.time, float)
    T = times.shape[0]
    # ---- coordinates: locked, bounds, start ----------------------------------------------------
    default = np.asarray(info.default, float) if info is not None else np.zeros(nq)
    q_fix = default.copy()
    lock = {}
    if locked is not None:
        lock = dict(locked) if isinstance(locked, dict) else {n: None for n in name_list(locked, "locked", "IK")}
    for n, v in lock.items():
        if n not in names:
            raise ValueError(f"locked coordinate {n!r} is not a coordinate of the model {names}")
        if v is not None:
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"IK: locked coordinate {n!r}: value must be a number, got {v!r}") from None
            if not np.isfinite(v):
                raise ValueError(f"IK: locked coordinate {n!r}: value must be finite, got {v}")
            q_fix[names.index(n)] = v
    free = np.array([n not in lock for n in names])
    if bounds not in (None, "clamped", "all"):
        raise ValueError(f"bounds must be 'clamped', 'all' or None, got {bounds!r}")
    if bounds is not None and info is None:
        raise ValueError("bounds need OpenSim coordinate ranges (model.osim); pass bounds=None")
    lo = np.asarray(info.lower, float) if info is not None else np.zeros(nq)
    hi = np.asarray(info.upper, float) if info is not None else np.ones(nq)
    if bounds == "clamped":
        bounded = np.asarray(info.clamped, bool)
    else:
        bounded = np.full(nq, bounds == "all")
    bounded &= free
    for i in np.flatnonzero(bounded):
        if not lo[i] < hi[i]:
            raise ValueError(f"coordinate {names[i]!r}: range [{lo[i]}, {hi[i]}] is empty; cannot bound it")
    wc, qref = _coordinate_refs(model, coordinate_tasks, [n for n in names if n not in lock], coordinate_data,
                                times)
    start = np.broadcast_to(default if q0 is None else _checked_q0(q0, names, T, method), (T, nq) if method == "vmap"
                            else (nq,))
    start = np.where(free, start, q_fix)
    _check_zero_frames(used, times, x, present)  # after the arguments' checks: the data's own
    spec = _Spec(method, rtol, atol, int(max_steps))
    dtype = jnp.result_type(float)
    np_dtype = np.dtype(dtype)
    j = lambda a: np.asarray(a, dtype=np_dtype)  # noqa: E731  (host arrays: one transfer per call below)
    kin_model = model.replace(muscles=None, forces=None, path_functions=None, osim=None)  # kinematics only: muscles etc. are not traced
    fx = _Fixed(kin_model, mk, *jax.device_put(tuple(j(a) for a in (free, bounded, q_fix, lo, hi, wc))))
    u = j(_to_u(_Fixed(None, None, free, bounded, q_fix, lo, hi, wc), start, np))  # on the host: no eager ops
    # ---- chunks ------------------------------------------------------------------------------
    C = min(int(chunk), padded_length(T))  # a short trial: the next quarter octave (one program per bucket)
    n_chunks = -(-T // C)
    progress = n_chunks > 1 if progress is None else progress
    q_out = np.empty((T, nq))
    xm_out = np.empty((T, len(used), 3))
    ok_out = np.empty(T, bool)
    steps_out = np.empty(T, int)
    loose_out = np.zeros((T, nq), bool)
    t0 = _time.perf_counter()
    with _checks.checks(False):  # inputs are checked above; no host callbacks inside the solver
        for c in range(n_chunks):
            a, b = c * C, min((c + 1) * C, T)
            n = b - a
            u_start = u if method == "scan" else u[a:b]
            uc, q_out[a:b], xm_out[a:b], ok_out[a:b], steps_out[a:b], loose_out[a:b] = solve_frames(
                spec, fx, j(x[a:b]), j(w[a:b]), j(qref[a:b]), u_start, C)
            if method == "scan":
                u = uc[n - 1]
            if progress:
                err = np.where(present[a:b], np.linalg.norm(xm_out[a:b] - x[a:b], axis=-1), np.nan)
                worst = np.nanmax(err) if np.any(present[a:b]) else float("nan")
                print(f"IK: {b}/{T} frames ({_time.perf_counter() - t0:.1f} s), max marker error in chunk "
                      f"{worst:.3g} m, {int(np.sum(~ok_out[a:b]))} not converged", flush=True)
    _report_undetermined(names, times, loose_out, ok_out)
    _check_marker_scale(data, x, xm_out, present, lambda: _default_marker_positions(kin_model, mk, default))
    if info is not None:  # a free coordinate the solver took far beyond its range: named, not silent
        loose = [i for i in range(nq) if free[i] and not bounded[i]]
        warn_outside_ranges(model, [names[i] for i in loose], q_out[:, loose], "IK", None, stacklevel=3,
                            times=times, cause=". The markers may not fit the model there (scaling, marker "
                            "placement or labels), or the coordinate should be clamped")
    err = np.where(present, np.linalg.norm(xm_out - x, axis=-1), np.nan)
    count = present.sum(axis=1)
    sq = np.where(present, err, 0.0) ** 2
    # OpenSim's IK tool: √(Σ e² / markers in use), a marker missing in the frame counting in the mean
    rms = np.where(count > 0, np.sqrt(sq.sum(axis=1) / len(used)), np.nan)
    mx = np.where(count > 0, np.max(np.where(present, err, -np.inf), axis=1), np.nan)
    _flag_unfit_frames(times, xm_out, present, rms, ok_out)
    return IKResult(times, q_out, tuple(names), tuple(used), err, rms, mx, ok_out, steps_out)


def _default_marker_positions(model, markers, q):
    """The markers at the default pose ``(nm, 3)`` (the size reference of a units error's advice)."""
    with _checks.checks(False):
        return np.asarray(marker_positions(model, markers, jnp.asarray(q)))
