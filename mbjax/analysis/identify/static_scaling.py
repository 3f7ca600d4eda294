"""Scale factors fitted to a static marker trial, jointly with the static pose, then markers placed
(the least-squares alternative to OpenSim's ``ScaleTool``: ``ModelScaler`` + ``MarkerPlacer``).

OpenSim computes each factor from marker-pair distances (:func:`~mbjax.analysis.identify.scaling.measurement_factor`),
then solves IK on the averaged static frames and moves every non-fixed marker onto its measured
position (``MarkerPlacer``).  :func:`fit_static_scale` instead minimises OpenSim's IK objective of the
static frame (:mod:`mbjax.analysis.ik`: ``Σ_m w_m |⁰r_m(q; s) - x_m|² / Σ w_m + Σ_c w_c (q_c - q_c^ref)²``) over
the pose *and* one factor per group of bodies (a ``Measurement``'s ``BodyScaleSet``), with
:func:`mbjax.analysis.identify.fit` (Levenberg-Marquardt); the model markers are the generic ones scaled by
their body's factor (:func:`~mbjax.analysis.identify.scaling.scale_markers`).  Factors are fitted as
``log s`` (positive); clamped coordinates stay in their range (the transform of :mod:`mbjax.analysis.ik`).
:func:`place_markers` then moves the markers as the ``MarkerPlacer`` does.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..._model import require_model
from ...io.arguments import name_list, positive_int
from ...markers import Markers, marker_positions
from .fit import fit
from .scaling import _scaling_info, frame_range, scale_kinematics, scale_markers, scale_model


class StaticScaleResult(NamedTuple):
    """:func:`fit_static_scale`'s result: ``factors`` (body name -> factor), ``groups`` (group name ->
    factor), the static pose ``q``, the ``scaled`` model and ``markers`` (generic markers scaled),
    the averaged static frame ``measured (nk, 3)`` of the tracked ``marker_names``, their
    ``errors (nk,)`` (m), ``rms`` and the fit ``report``; ``objective`` and ``tree`` for
    :func:`mbjax.analysis.identify.identifiability` (``where=lambda t: t.log_s``)."""

    factors: dict
    groups: dict
    q: np.ndarray
    scaled: object
    markers: Markers
    marker_names: tuple
    measured: np.ndarray
    errors: np.ndarray
    rms: float
    report: object
    objective: object
    tree: object


class ScaleUnknowns(eqx.Module):
    """The fitted tree: ``log_s (ng,)`` per group and the pose variables ``u (nq,)``."""

    log_s: jnp.ndarray
    u: jnp.ndarray


class StaticObjective(eqx.Module):
    """Residuals ``[√w_m (⁰r_m(q; s) - x_m); √w_c (q_c - q_c^ref)]`` of the static frame."""

    model: object
    markers: Markers
    measured: jnp.ndarray
    weights: jnp.ndarray
    wc: jnp.ndarray
    qref: jnp.ndarray
    lo: jnp.ndarray
    hi: jnp.ndarray
    bounded: jnp.ndarray
    group: tuple = eqx.field(static=True)  # per segment: its group index

    def q(self, u):
        mid, half = 0.5 * (self.lo + self.hi), 0.5 * (self.hi - self.lo)
        return jnp.where(self.bounded > 0, mid + half * jnp.sin(u), u)

    def u_of(self, q):
        mid, half = 0.5 * (self.lo + self.hi), 0.5 * (self.hi - self.lo)
        b = self.bounded > 0
        s = jnp.clip((q - mid) / jnp.where(b, half, 1.0), -1.0 + 1e-6, 1.0 - 1e-6)
        return jnp.where(b, jnp.arcsin(s), q)

    def factors(self, log_s):
        return jnp.exp(log_s)[np.asarray(self.group, int)]

    def predict(self, t: ScaleUnknowns):
        s = self.factors(t.log_s)
        model = scale_kinematics(self.model, s)
        markers = scale_markers(self.model, self.markers, s)
        return marker_positions(model, markers, self.q(t.u))

    def __call__(self, t: ScaleUnknowns):
        r_m = (jnp.sqrt(self.weights)[:, None] * (self.predict(t) - self.measured)).reshape(-1)
        return jnp.concatenate([r_m, jnp.sqrt(self.wc) * (self.q(t.u) - self.qref)])


def average_frames(data, time_range, max_movement=None, source=None) -> np.ndarray:
    """The marker positions averaged over the frames of ``time_range`` (:func:`frame_range`), as the
    ``MarkerPlacer`` averages its static frames (missing samples left out).

    ``max_movement``: the ``MarkerPlacer``'s ``<max_marker_movement>``, in the units of the marker
    file (``data.units``, usually mm).  Where it is > 0, as OpenSim's ``MarkerData::averageFrames``
    checks it, each marker whose samples span more than it along X, Y or Z over those frames, and
    each marker missing in all of them, is named in a warning (prefixed by ``source``, e.g. the
    setup element); the frames are averaged all the same, as OpenSim averages them."""
    if not (hasattr(data, "time") and hasattr(data, "positions")):
        raise TypeError(f"average_frames: data must be marker data (mbjax.io.MarkerData, e.g. read_trc's), got "
                        f"{type(data).__name__}")
    try:
        t0, t1 = (float(v) for v in time_range)
    except (TypeError, ValueError):
        raise ValueError(f"average_frames: time_range must be two times (start, end) in s, got {time_range!r}") from None
    if max_movement is not None:
        try:
            max_movement = float(max_movement)
        except (TypeError, ValueError):
            max_movement = float("nan")
        if not np.isfinite(max_movement):
            raise ValueError(f"average_frames: max_movement must be a finite distance in the marker file's units "
                             f"(negative: no check, OpenSim's -1), got {max_movement!r}")
    i0, i1 = frame_range(data.time, t0, t1)
    x = np.asarray(data.positions, float)[i0:i1 + 1]
    if max_movement is not None and max_movement > 0:
        _warn_marker_movement(data, x, (i0, i1), float(max_movement), source)
    with np.errstate(invalid="ignore"):
        return np.nanmean(x, axis=0)


def _warn_marker_movement(data, x, rows, limit, source):
    """OpenSim's ``averageFrames`` threshold check: per marker the largest of its X, Y and Z spans
    over the frames where it is present, in the file's units."""
    from ...io.trc import TRC_UNIT_NAMES, TRC_UNITS

    units = TRC_UNIT_NAMES.get(data.units, data.units)
    per_unit = TRC_UNITS.get(units, 1.0)  # metres per file unit
    ok = np.all(np.isfinite(x), axis=-1)  # (k, nm): OpenSim skips a frame where the marker has a NaN
    lo = np.where(ok[..., None], x, np.inf).min(axis=0)
    hi = np.where(ok[..., None], x, -np.inf).max(axis=0)
    gone = ~ok.any(axis=0)
    span = np.where(gone, 0.0, (hi - lo).max(axis=-1)) / per_unit
    t = np.asarray(data.time, float)
    frames = f"the {rows[1] - rows[0] + 1} frame(s) averaged (time {t[rows[0]]:g} to {t[rows[1]]:g} s)"
    said = []
    moved = [k for k in range(len(data.names)) if span[k] > limit]
    if moved:
        said.append(f"{len(moved)} marker(s) move more than <max_marker_movement> {limit:g} {units} over {frames}: "
                    + ", ".join(f"{data.names[k]!r} {span[k]:.6g} {units}" for k in moved))
    if gone.any():
        said.append(f"marker(s) {', '.join(repr(n) for n, g in zip(data.names, gone) if g)} missing in every one "
                    "of those frames (their average is NaN)")
    if said:
        warnings.warn(f"{source or 'average_frames'}: " + "; ".join(said) + ". OpenSim's MarkerPlacer warns so and "
                      "averages the frames all the same; so does mbjax", stacklevel=3)


def fit_static_scale(model, markers: Markers, data, groups, *, weights=None, coordinate_tasks=None,
                     time_range=None, mass=None, factors0=None, bounds: str | None = "clamped",
                     max_steps: int = 100, progress: bool = False) -> StaticScaleResult:
    """Fit one factor per group of ``groups`` (group name -> body names; every OpenSim body in one
    group) and the static pose to the averaged frames of ``data`` in ``time_range`` (all frames if
    None).  ``weights``: marker name -> weight (default 1 for every marker in model and data);
    ``coordinate_tasks``: coordinate name -> :class:`mbjax.analysis.ik.CoordinateTask` or weight (default
    value); ``mass``: subject mass (mass distribution preserved); ``factors0``: group name -> start
    (default 1).  The start pose is :func:`mbjax.inverse_kinematics` on the model scaled by
    ``factors0``.  Unknown names, a body in no group or in two, raise ``ValueError``."""
    from ..ik import CoordinateTask, inverse_kinematics
    from ...io.trc import MarkerData

    segs = _scaling_info(model, "fit_static_scale", geometry=False).segments
    max_steps = positive_int(max_steps, "max_steps", "fit_static_scale")
    _check_inputs(markers, data, groups, weights, factors0, time_range)
    group_names = tuple(groups)
    where = {}
    for g, bodies in groups.items():
        if isinstance(bodies, str) or not isinstance(bodies, (tuple, list, set, frozenset)):
            raise TypeError(f"fit_static_scale: group {g!r} must be a tuple of body names, got {bodies!r}"
                            + (f"; for one body write ({bodies!r},)" if isinstance(bodies, str) else ""))
        if not bodies:
            raise ValueError(f"fit_static_scale: group {g!r} holds no body (its factor would not change the model); "
                             "drop it")
        for b in bodies:
            if b not in segs:
                raise ValueError(f"group {g!r}: unknown body {b!r}; bodies are {segs}")
            if b in where:
                raise ValueError(f"body {b!r} is in groups {where[b]!r} and {g!r}")
            where[b] = g
    missing = [b for b in segs if b not in where]
    if missing:
        raise ValueError(f"bodies {missing} are in no group (put each OpenSim body in exactly one)")
    group = tuple(group_names.index(where[b]) for b in segs)
    f0 = dict(factors0 or {})
    for g in f0:
        if g not in groups:
            raise ValueError(f"factors0: unknown group {g!r}; groups are {group_names}")
    s0 = np.array([_number(f0.get(g, 1.0), f"factors0[{g!r}]") for g in group_names])
    if not np.all(np.isfinite(s0) & (s0 > 0)):
        raise ValueError(f"factors0 must be positive and finite, got {s0.tolist()}")
    # the static frame and the tracked markers
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a marker missing in every frame: left out below
        x = average_frames(data, time_range) if time_range is not None else np.nanmean(data.positions, axis=0)
    wdict = {n: 1.0 for n in data.names if n in markers.names} if weights is None else dict(weights)
    for n in wdict:
        if n not in markers.names or n not in data.names:
            raise ValueError(f"fit_static_scale: weights names marker {n!r}, which is not in "
                             f"{'the model' if n not in markers.names else 'the data'}")
        v = _number(wdict[n], f"weights[{n!r}]")
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"fit_static_scale: weights[{n!r}] must be a finite number >= 0, got {v!r}")
    if not wdict:
        raise ValueError(f"fit_static_scale: no marker of the model is in the data (model markers "
                         f"{markers.names[:8]}, data markers {tuple(data.names)[:8]})")
    used = [n for n in data.names if n in wdict and np.all(np.isfinite(x[data.names.index(n)]))]
    if not used:
        raise ValueError(f"fit_static_scale: every tracked marker {tuple(wdict)[:8]} is missing (NaN) in every frame"
                         f"{'' if time_range is None else f' of time_range {tuple(time_range)}'}: nothing to fit")
    xm = x[[data.names.index(n) for n in used]]
    w = np.array([float(wdict[n]) for n in used])
    if not np.all(np.isfinite(w) & (w >= 0)) or w.sum() <= 0:
        raise ValueError(f"fit_static_scale: marker weights are all 0 for the measured markers {used[:8]}: "
                         "nothing to fit")
    mk = markers.select(used)
    # coordinate tasks and bounds (as mbjax.analysis.ik / OpenSim's IK)
    info = model.osim
    names = model.coordinate_names
    wc, qref = np.zeros(len(names)), np.asarray(info.default, float).copy()
    if coordinate_tasks is not None and not isinstance(coordinate_tasks, dict):
        raise TypeError(f"fit_static_scale: coordinate_tasks must be a dict coordinate name -> CoordinateTask or "
                        f"weight, got {type(coordinate_tasks).__name__}")
    all_coordinates = set(names) | {c for c, _ in info.roles}
    for c, task in dict(coordinate_tasks or {}).items():
        if c not in all_coordinates:
            raise ValueError(f"fit_static_scale: coordinate_tasks names an unknown coordinate {c!r}; coordinates "
                             f"are {names}")
        if c not in names:
            continue  # a locked coordinate (OpenSim drops the task)
        task = task if isinstance(task, CoordinateTask) else CoordinateTask(_number(task, f"coordinate_tasks[{c!r}]"))
        if not (np.isfinite(task.weight) and task.weight >= 0):
            raise ValueError(f"fit_static_scale: coordinate task {c!r} has weight {task.weight!r}; give a finite "
                             "weight >= 0")
        k = names.index(c)
        wc[k] = task.weight
        if task.value_type == "manual_value":
            qref[k] = task.value
        elif task.value_type != "default_value":
            raise ValueError(f"coordinate task {c!r}: value_type {task.value_type!r} (only default_value, manual_value)")
    lo, hi = np.asarray(info.lower, float), np.asarray(info.upper, float)
    if bounds == "clamped":
        bounded = np.asarray(info.clamped, float)
    elif bounds == "all":
        bounded = np.ones(len(names))
    elif bounds is None:
        bounded = np.zeros(len(names))
    else:
        raise ValueError(f"bounds must be 'clamped', 'all' or None, got {bounds!r}")
    obj = StaticObjective(model, mk, jnp.asarray(xm), jnp.asarray(w / w.sum()), jnp.asarray(wc), jnp.asarray(qref),
                          jnp.asarray(lo), jnp.asarray(hi), jnp.asarray(bounded), group)
    # start: IK on the model scaled by the start factors
    s_start = s0[np.asarray(group, int)]
    frame = MarkerData(np.zeros(1), tuple(used), xm[None])
    ik = inverse_kinematics(scale_kinematics(model, s_start), scale_markers(model, mk, s_start), frame,
                            weights={n: float(wdict[n]) for n in used},
                            coordinate_tasks={names[k]: CoordinateTask(float(wc[k]), "manual_value", float(qref[k]))
                                              for k in range(len(names)) if wc[k] > 0},
                            bounds=bounds, progress=False)
    tree = ScaleUnknowns(jnp.log(jnp.asarray(s0)), obj.u_of(jnp.asarray(ik.q[0])))
    fitted, report = fit(tree, obj, lambda t: (t.log_s, t.u), method="levenberg_marquardt", max_steps=max_steps,
                         progress=progress)
    s = np.asarray(obj.factors(fitted.log_s))
    q = np.asarray(obj.q(fitted.u))
    scaled = scale_model(model, jnp.asarray(s), mass=None if mass is None else float(mass))
    scaled_markers = scale_markers(model, markers, jnp.asarray(s))
    err = np.linalg.norm(np.asarray(obj.predict(fitted)) - xm, axis=1)
    return StaticScaleResult(
        factors=dict(zip(segs, s.tolist())), groups=dict(zip(group_names, np.exp(np.asarray(fitted.log_s)).tolist())),
        q=q, scaled=scaled, markers=scaled_markers, marker_names=tuple(used), measured=xm, errors=err,
        rms=float(np.sqrt(np.mean(err**2))), report=report, objective=obj, tree=fitted)


def _number(x, what: str) -> float:
    """``x`` as a float; ``TypeError`` naming ``what`` otherwise."""
    if isinstance(x, (str, bytes, bool)) or np.ndim(x) != 0:
        raise TypeError(f"fit_static_scale: {what} must be a number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise TypeError(f"fit_static_scale: {what} must be a number, got {x!r}") from None


def _check_inputs(markers, data, groups, weights, factors0, time_range):
    """Types and shapes of :func:`fit_static_scale`'s arguments."""
    from ...io.trc import MarkerData

    if not isinstance(markers, Markers):
        raise TypeError(f"fit_static_scale: markers must be mbjax.Markers (e.g. mbjax.io.load_marker_set), got "
                        f"{type(markers).__name__}")
    if not isinstance(data, MarkerData):
        raise TypeError(f"fit_static_scale: data must be mbjax.io.MarkerData (e.g. mbjax.io.read_trc), got "
                        f"{type(data).__name__}")
    t, pos = np.asarray(data.time), np.asarray(data.positions)
    if t.ndim != 1 or t.size == 0 or pos.shape != (t.size, len(data.names), 3):
        raise ValueError(f"fit_static_scale: data must hold time (T,) and positions (T, n_markers, 3) = "
                         f"({t.size}, {len(data.names)}, 3) with T >= 1, got time {t.shape}, positions {pos.shape}")
    for name, d, what in (("groups", groups, "group name -> tuple of body names"),
                          ("weights", weights, "marker name -> weight"), ("factors0", factors0, "group name -> factor")):
        if d is not None and not isinstance(d, dict):
            raise TypeError(f"fit_static_scale: {name} must be a dict {what}, got {type(d).__name__}")
    if time_range is not None:
        if isinstance(time_range, str) or np.shape(time_range) != (2,):
            raise TypeError(f"fit_static_scale: time_range must be (start, end) in seconds, got {time_range!r}")
        start, end = (_number(v, "time_range") for v in time_range)
        if not start <= end:
            raise ValueError(f"fit_static_scale: time_range start {start} is past its end {end}")
        if start > float(t[-1]) or end < float(t[0]):
            raise ValueError(f"fit_static_scale: time_range ({start:g}, {end:g}) lies outside the data's times "
                             f"{float(t[0]):g} to {float(t[-1]):g}")


def place_markers(model, markers: Markers, q, measured, names, movable=None) -> Markers:
    """OpenSim's ``MarkerPlacer`` step: each marker in ``names`` (and ``movable``, default all) moved
    onto its ``measured (k, 3)`` world position at pose ``q``, i.e. its offset becomes
    ``⁰A_b(q)⁻¹ x``; the others are kept."""
    from ..._kinematics import body_poses

    require_model(model, "place_markers")
    names = name_list(names, "names", "place_markers")
    movable = set(names if movable is None else name_list(movable, "movable", "place_markers"))
    for arg, given in (("names", names), ("movable", movable)):
        unknown = sorted(n for n in set(given) if n not in markers.names)
        if unknown:
            raise ValueError(f"place_markers: {arg} holds marker(s) {unknown} that are not in `markers`; markers are "
                             f"{markers.names}")
    poses = np.asarray(body_poses(model, jnp.asarray(q)))
    offset = np.asarray(markers.offset, float).copy()
    x = np.asarray(measured, float)
    names = tuple(names)
    if x.shape != (len(names), 3):
        raise ValueError(f"place_markers: measured must have shape (k, 3) = ({len(names)}, 3), one row per name in "
                         f"`names`, got {x.shape}")
    bad = [n for k, n in enumerate(names) if n in movable and not np.all(np.isfinite(x[k]))]
    if bad:
        raise ValueError(f"place_markers: measured positions of {bad} hold NaN or inf; leave those markers out of "
                         "`names` (or `movable`)")
    for k, n in enumerate(names):
        if n not in movable:
            continue
        i = markers.index(n)
        b = markers.body[i]
        pose = poses[b] if b >= 0 else np.eye(4)
        offset[i] = pose[:3, :3].T @ (x[k] - pose[:3, 3])
    return Markers(markers.names, markers.body, offset)
