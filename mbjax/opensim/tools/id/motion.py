"""Inverse dynamics of a coordinates table, as OpenSim 4.6's ``InverseDynamicsTool`` computes it
(the steps of the :mod:`mbjax.opensim.tools.id` package docstring): OpenSim's filter and splines, the
dynamics of all frames in one program, and the forces excluded."""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ....program_store import persistent
from .... import _checks
from ...._batching import padded_length
from ...._dynamics import inverse_dynamics
from ...._loads import ExternalLoads
from ...._model import require_model
from ....io.arguments import name_list, positive_int, real_number, time_range as time_pair
from ...external_loads import ExternalLoadsFile, read_external_loads
from ...model.osim_speeds import rates_from_speeds, speed_joints
from .mobility import mobility_forces
from ....io.signal import NaturalSpline, lowpass_storage
from ....io.motion_ranges import warn_outside_ranges, warn_radians_as_degrees
from ....io.storage import Table, _rotational


#: OpenSim muscle classes (``Muscle`` subclasses, excluded by the ``Muscles`` keyword)
MUSCLE_CLASSES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle", "Millard2012AccelerationMuscle",
                  "Schutte1993Muscle_Deprecated")
#: actuator classes among mbjax's paths (excluded by ``Actuators``; zero force without controls)
ACTUATOR_CLASSES = MUSCLE_CLASSES + ("PathActuator",)


class IDResult(NamedTuple):
    """Inverse dynamics per frame: ``time (T,)``, generalized forces ``tau (T, nq)`` (N·m / N, model
    coordinate order; as OpenSim reports them: the mobility forces of Simbody's speeds, which for a
    ``BallJoint``'s, ``FreeJoint``'s or ``EllipsoidJoint``'s rotations are ω_F, :mod:`.mobility`), the ``coordinate_names``, OpenSim's column ``labels`` (``<coordinate>_moment``
    or ``_force``), the ``q``, ``qd``, ``qdd`` used and the applied ``loads`` (``(T, n, 3)`` arrays,
    or None).  ``columns``: the indices into ``labels`` in the order OpenSim 4.6's tool writes its
    columns (the multibody tree order, :func:`mbjax.opensim.model.osim_motion.tree_order`), which
    :meth:`table` follows; None: the model's order."""

    time: np.ndarray
    tau: np.ndarray
    coordinate_names: tuple[str, ...]
    labels: tuple[str, ...]
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    loads: ExternalLoads | None = None
    columns: tuple[int, ...] | None = None

    def table(self) -> Table:
        """The result as OpenSim writes it (``Inverse Dynamics Generalized Forces``), its columns in
        OpenSim's order (``columns``); the arrays of this result stay in the model's order."""
        k = list(self.columns) if self.columns is not None else list(range(len(self.labels)))
        return Table(self.time, tuple(self.labels[i] for i in k), np.asarray(self.tau)[:, k], False,
                     {"name": "Inverse Dynamics Generalized Forces"})


# --------------------------------------------------------------------------------------------
# coordinates: OpenSim's filter and splines
# --------------------------------------------------------------------------------------------


#: the tools already warned about float32 (:func:`warn_float32`)
_FLOAT32_WARNED: set = set()


def warn_float32(tool: str) -> None:
    """Warn once per tool when JAX computes in float32 (its default): the OpenSim tools' splines,
    dynamics and optimizations need float64 to give OpenSim's results."""
    if jnp.result_type(float) == jnp.float64 or tool in _FLOAT32_WARNED:
        return
    _FLOAT32_WARNED.add(tool)
    warnings.warn(f"{tool} runs in float32 (JAX's default): its results can differ from OpenSim's far beyond "
                  "OpenSim's tolerances; enable float64 before any computation with "
                  "jax.config.update(\"jax_enable_x64\", True) (the mbjax command line does)", stacklevel=3)


def _find_index(time: np.ndarray, t: float) -> int:
    """``Storage::findIndex``: the last row whose time is ``<= t`` (0 when none is)."""
    return max(int(np.searchsorted(time, t, side="right")) - 1, 0)


def _clip_time_range(time_range, first, last, source, tool, padded=False):
    """The requested time range within the coordinates' own times ``[first, last]``: a bound past
    them is clipped to them, a finite one with a warning naming the file and both ranges (OpenSim
    would take frames from the filter's padding); an infinite (or absent) bound is the file's first
    or last time, with a warning only when the file is filtered (``padded``), where OpenSim 4.6
    returns the padding's frames too.  ``None``: the file's times."""
    if time_range is None:
        return first, last
    t0, t1 = float(time_range[0]), float(time_range[1])
    if np.isnan(t0) or np.isnan(t1):
        raise ValueError(f"{source}: {tool}'s time range [{t0:g}, {t1:g}] s is not two numbers")
    if not t0 <= t1:
        raise ValueError(f"{source}: the time range starts at {t0:g} s, after its end {t1:g} s")
    if (np.isfinite(t0) and t0 > last) or (np.isfinite(t1) and t1 < first):
        raise ValueError(f"{source}: the time range [{t0:g}, {t1:g}] s does not overlap the file's times "
                         f"[{first:.6g}, {last:.6g}] s; change the setup's time range")
    tol = 1e-6 * max(1.0, abs(first), abs(last))
    early, late = np.isfinite(t0) and t0 < first - tol, np.isfinite(t1) and t1 > last + tol
    if early or late:
        warnings.warn(f"{source}: {tool}'s time range [{t0:g}, {t1:g}] s goes past the file's times "
                      f"[{first:.6g}, {last:.6g}] s: clipped to them (frames past the data would be the filter's "
                      "padding or extrapolated); change the setup's time range to silence this", stacklevel=4)
    elif padded and not (np.isfinite(t0) and np.isfinite(t1)):
        warnings.warn(f"{source}: {tool}'s time range [{t0:g}, {t1:g}] s (infinite, or none given): the file's "
                      f"times [{first:.6g}, {last:.6g}] s are used (OpenSim 4.6 would also return the frames of "
                      "its filter's padding past them); give a finite time range to silence this", stacklevel=4)
    return max(t0, first), min(t1, last)


def _warn_unused_columns(labels, names, source, tool, held=()) -> None:
    """Warn naming the columns that match no model coordinate (left out, as OpenSim leaves them), with
    the coordinate a column differs from only in case; the columns of the model's locked and coupled
    coordinates (``held``, named by their own warning) are not among them."""
    other = [lab for lab in labels if lab not in names and lab not in held]
    if not other:
        return
    lower = {n.lower(): n for n in names}

    def guess(lab):  # the coordinate a column differs from in case only, or whose state path it is
        key = lab.rstrip("/").split("/")[-2] if lab.endswith("/value") and lab.count("/") > 1 else lab
        return lower.get(key.lower())

    near = [f"{lab!r} (did you mean {guess(lab)!r}?)" for lab in other if guess(lab)]
    warnings.warn(f"{source}: columns {other} match no model coordinate: not used by {tool}"
                  + (f"; {', '.join(near)}" if near else "") + " (a coordinate's column is named after it; "
                  "speeds are computed from the coordinates)", stacklevel=4)


def coordinate_trajectory(model, coordinates: Table, lowpass_cutoff: float = -1.0, time_range=None,
                          accelerations: str = "coordinates", tool: str = "InverseDynamicsTool",
                          step_interval: int = 1):
    """OpenSim ID's ``q``, ``q̇``, ``q̈`` ``(T, nq)`` and their ``time (T,)`` from a coordinates table
    (steps 1-3 of the package docstring).  ``lowpass_cutoff < 0``: no filtering.
    ``accelerations="speeds"``: q̈ is the derivative of a second degree-5 spline through the speeds
    at the rows (OpenSim's StaticOptimization) instead of the coordinate spline's second derivative.
    ``tool`` names the OpenSim tool in the warning about missing columns.  ``step_interval`` k: the
    rows an OpenSim analysis records (``Analysis::proceed``: the first and last rows of the range,
    and between them the rows whose index in the (padded) table is a multiple of k).  On a Ball, Free or
    Ellipsoid joint's angles the splines' rates are OpenSim's speeds there (ω_F and its derivative), so
    the returned q̇, q̈ are the angles' rates of that motion (:func:`mbjax.opensim.model.osim_speeds.rates_from_speeds`)."""
    if accelerations not in ("coordinates", "speeds"):
        raise ValueError(f"accelerations must be 'coordinates' or 'speeds', got {accelerations!r}")
    names = model.coordinate_names
    info = model.osim
    time = np.asarray(coordinates.time, float)
    data = np.asarray(coordinates.data, float)
    meta = coordinates.metadata or {}
    title = meta.get("name")
    source = (f"coordinates file {meta['file']}" if meta.get("file")
              else f"coordinates{f' {title!r}' if title else ''}")
    if time.shape[0] < 6:
        raise ValueError(f"{source}: the degree-5 splines need at least 6 rows, got {time.shape[0]}")
    back = np.flatnonzero(~(np.diff(time) > 0))
    if back.size:
        k = int(back[0]) + 1
        raise ValueError(f"{source}: time {float(time[k])!r} at row {k + 1} does not increase from row {k}'s "
                         f"{float(time[k - 1])!r}; the coordinate splines need strictly increasing times")
    labels = list(coordinates.labels)
    dup = sorted({n for n in names if labels.count(n) > 1})
    if dup:
        raise ValueError(f"{source}: columns {dup} appear more than once; keep one column per coordinate")
    used = [k for k, lab in enumerate(labels) if lab in names]
    if not used:
        raise ValueError(f"{source}: no column is named after a model coordinate {names}; columns are "
                         f"{coordinates.labels}")
    info = getattr(model, "osim", None)
    _warn_unused_columns(labels, names, source, tool,
                         {n for n, role in info.roles if role != "independent"} if info is not None else ())
    data = data[:, used]  # the other columns are neither checked nor filtered
    labels = [labels[k] for k in used]
    bad = ~np.isfinite(data)
    if bad.any():
        r, c = (int(v[0]) for v in np.nonzero(bad))
        raise ValueError(f"{source}: column {labels[c]!r} holds NaN or inf at row {r + 1} (time "
                         f"{float(time[r]):.6g} s); the coordinate splines need finite values")
    first, last = float(time[0]), float(time[-1])
    if lowpass_cutoff is not None:
        lowpass_cutoff = real_number(lowpass_cutoff, "lowpass_cutoff", tool)
    if lowpass_cutoff is not None and not np.isfinite(lowpass_cutoff):
        raise ValueError(f"lowpass_cutoff must be a finite frequency (Hz), or negative for no filtering; got "
                         f"{lowpass_cutoff!r}")
    if lowpass_cutoff == 0:
        raise ValueError("lowpass_cutoff 0 Hz would remove the whole motion; give a positive cut-off, or a "
                         "negative one for no filtering (OpenSim's default -1)")
    time_range = _clip_time_range(time_range, first, last, source, tool,
                                  padded=lowpass_cutoff is not None and lowpass_cutoff >= 0)
    if lowpass_cutoff is not None and lowpass_cutoff >= 0:
        time, data = lowpass_storage(time, data, float(lowpass_cutoff))
    cols = {lab: k for k, lab in enumerate(labels)}
    present = [n for n in names if n in cols]
    missing = [n for n in names if n not in cols]
    if missing:
        warnings.warn(f"{source} has no column for {missing}: held at their default values, as "
                      f"OpenSim's {tool} does", stacklevel=3)
    if coordinates.in_degrees:
        if info is None:
            raise ValueError("coordinates are in degrees but the model has no OpenSim motion types")
        rot = _rotational(model)
        scale = np.array([np.pi / 180.0 if rot[names.index(n)] else 1.0 for n in present])
    else:
        scale = np.ones(len(present))
    y = data[:, [cols[n] for n in present]] * scale
    warn_outside_ranges(model, present, y, source, coordinates.in_degrees, stacklevel=4)
    if coordinates.in_degrees:
        warn_radians_as_degrees(model, present, y, source, last - first, stacklevel=4)
    spline = NaturalSpline(time, y, 5)
    start, final = max(time[0], time_range[0]), min(time[-1], time_range[1])
    if final < start:
        raise ValueError(f"{source}: time range {time_range} does not overlap the file's times [{first:.6g}, "
                         f"{last:.6g}] s")
    a, b = _find_index(time, start), _find_index(time, final)
    k = positive_int(step_interval, "step_interval", tool)
    rows = np.arange(a, b + 1)
    rows = rows[(rows == a) | (rows == b) | (rows % k == 0)]
    t = time[rows]
    default = np.asarray(info.default, float) if info is not None else np.zeros(len(names))
    q = np.tile(default, (t.shape[0], 1))
    qd = np.zeros_like(q)
    qdd = np.zeros_like(q)
    idx = [names.index(n) for n in present]
    q[:, idx], qd[:, idx] = spline(t), spline(t, 1)
    if accelerations == "coordinates":
        qdd[:, idx] = spline(t, 2)
    else:  # the speeds at every row of the (padded) table, splined again
        qdd[:, idx] = NaturalSpline(time, spline(time, 1), 5)(t, 1)
    if speed_joints(model, tool):  # OpenSim puts these rates into Simbody's speeds u as they are
        _warn_rates_as_angular_velocity(model, tool)
        qd, qdd = rates_from_speeds(model, q, qd, qdd, tool)
    return t, q, qd, qdd


def _warn_rates_as_angular_velocity(model, tool):
    names = model.coordinate_names
    joints = [f"{kind} {joint!r} ({', '.join(names[i] for i in idx)})" for kind, joint, idx in speed_joints(model, tool)]
    warnings.warn(f"OpenSim's {tool} takes the time derivatives of the angles of {', '.join(joints)} as that joint's "
                  "speeds, the angular velocity ω_F (and its derivative), not as the angles' rates; mbjax does as "
                  "OpenSim does (q̇ = E⁻¹ u, q̈ = E⁻¹(u̇ − Ė q̇)), which is not the motion of the file's angles. For the "
                  "dynamics of the angles themselves call mbjax.inverse_dynamics with their rates",
                  stacklevel=4)


# --------------------------------------------------------------------------------------------
# the dynamics, batched
# --------------------------------------------------------------------------------------------


def torques_of_frames(model, q, qd, qdd, external, forces_on):
    """``τ (T, nq)`` traced: :func:`mbjax.inverse_dynamics` vmapped over the frames, minus
    ``forces_on`` (0/1) times the model's force elements (``model.forces``) when it has any."""

    def one(qk, qdk, qddk, ext):
        tau = inverse_dynamics(model, qk, qdk, qddk, external=ext)
        if model.forces is not None:
            tau = tau - forces_on * model.forces.generalized_force(model, qk, qdk)
        return tau

    return jax.vmap(one)(q, qd, qdd, external)


def dynamics_model(model):
    """The model as the ID programs trace it: its force elements kept, muscles etc. dropped."""
    fs = model.forces
    return model.replace(muscles=None, path_functions=None, osim=None,
                         forces=fs if fs is not None and fs.elements else None)


@persistent("mbjax.opensim.tools.id._frames")
def _frames(model, q, qd, qdd, external, forces_on):
    """``forces_on`` (traced 0/1) weighs the model's force elements, when it has any: one program."""
    return torques_of_frames(model, q, qd, qdd, external, forces_on)


def check_frames(model, q, qd, qdd, external=None):
    """The host arrays of :func:`inverse_dynamics_frames`, validated: ``q, qd, qdd`` as float
    arrays ``(T, nq)`` and ``external`` (None when it holds no load); raises for wrong shapes and
    for NaN or inf."""
    q, qd, qdd = (np.asarray(a, float) for a in (q, qd, qdd))
    T = q.shape[0]
    if q.ndim != 2 or q.shape[1] != model.n_coordinates or qd.shape != q.shape or qdd.shape != q.shape:
        raise ValueError(f"q, qd, qdd must have shape (T, nq) = (T, {model.n_coordinates}), got "
                         f"{q.shape}, {qd.shape}, {qdd.shape}")
    if isinstance(external, ExternalLoads) and not external.bodies:
        external = None
    if external is not None and not isinstance(external, ExternalLoads):
        external = np.asarray(external, float)
        if external.shape != q.shape:
            raise ValueError(f"external generalized forces must have shape {q.shape}, got {external.shape}")
    if external is not None and jax.tree_util.tree_leaves(external)[0].shape[0] != T:
        raise ValueError(f"external loads hold {jax.tree_util.tree_leaves(external)[0].shape[0]} frames, "
                         f"the coordinates {T}")
    bad = [n for n, a in (("q", q), ("qd", qd), ("qdd", qdd)) if not np.all(np.isfinite(a))]
    if external is not None:
        bad += ["external"] * (not all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(external)))
    if bad:
        raise ValueError(f"inverse_dynamics_frames: {bad} contain NaN or inf")
    return q, qd, qdd, external


def inverse_dynamics_frames(model, q, qd, qdd, external=None, *, forces: bool = False, chunk: int = 256):
    """``τ (T, nq)`` of every frame: :func:`mbjax.inverse_dynamics` vmapped over ``q, qd, qdd (T, nq)``
    and ``external`` (:class:`mbjax.ExternalLoads` with ``(T, n, 3)`` arrays, generalized forces
    ``(T, nq)``, or None).  ``forces``: also subtract the model's force elements (``model.forces``).
    Frames run in chunks of ``chunk`` (the last padded; a trial shorter than ``chunk`` is padded to
    the next quarter octave, :func:`padded_length`): one compilation per model, load structure and
    padded length."""
    require_model(model, "inverse_dynamics_frames")
    C = positive_int(chunk, "chunk", "inverse_dynamics_frames")
    q, qd, qdd, external = check_frames(model, q, qd, qdd, external)
    T = q.shape[0]
    dyn = dynamics_model(model)  # muscles etc. are not traced
    C = min(C, padded_length(T))  # a short trial: the next quarter octave, not a whole chunk
    out = np.empty_like(q)
    host = None if external is None else jax.tree_util.tree_map(np.asarray, external)
    dtype = np.dtype(jnp.result_type(float))
    for a in range(0, T, C):
        b = min(a + C, T)
        pad = np.r_[np.arange(a, b), np.full(C - (b - a), b - 1)].astype(int)
        ext = None if host is None else jax.tree_util.tree_map(lambda x: x[pad], host)
        # one transfer for every array of the chunk (a device_put per array is a transfer each)
        args = jax.device_put(jax.tree_util.tree_map(lambda x: np.asarray(x, dtype), (
            q[pad], qd[pad], qdd[pad], ext, np.asarray(1.0 if forces else 0.0))))
        with _checks.checks(False):  # inputs checked above; one program whatever the switch says
            tau = _frames(dyn, *args)
        out[a:b] = np.asarray(tau)[: b - a]
    return out


# --------------------------------------------------------------------------------------------
# excluded forces
# --------------------------------------------------------------------------------------------


def _force_elements_applied(model, exclude) -> bool:
    """Which model forces apply (``DynamicsTool::disableModelForces``): True when the force elements
    do; raises for forces mbjax cannot compute that are not excluded."""
    keys = [str(e).strip() for e in exclude if str(e).strip()]
    upper = {k.upper() for k in keys}
    paths = model.muscles
    fs = model.forces
    elements = tuple(fs.names) if fs is not None else ()
    if "ALL" in upper:
        return False
    path_names = tuple(paths.names) if paths is not None else ()
    kinds = dict(zip(path_names, paths.kinds)) if paths is not None else {}
    off = set()
    for k in keys:
        if k.upper() == "MUSCLES":
            off |= {n for n, c in kinds.items() if c in MUSCLE_CLASSES}
        elif k.upper() == "ACTUATORS":
            off |= {n for n, c in kinds.items() if c in ACTUATOR_CLASSES}
        elif k in kinds:
            off.add(k)
        elif k in elements:
            raise NotImplementedError(f"forces_to_exclude: excluding the single force element {k!r} is not "
                                      "supported; exclude 'All' or remove it from the model")
        else:
            warnings.warn(f"forces_to_exclude: no force named {k!r} (mbjax does not read ForceSet groups)",
                          stacklevel=3)
    off |= set(disabled_paths(model))  # OpenSim applies no force of a disabled one
    left = [n for n in path_names if n not in off and kinds[n] != "PathActuator"]
    if left:
        raise NotImplementedError(f"inverse dynamics: the forces {left} ({sorted({kinds[n] for n in left})}) are "
                                  "not computed by mbjax's ID; exclude them (forces_to_exclude 'Muscles', 'All' or "
                                  "their names), as OpenSim ID setups exclude muscles")
    return bool(elements)


def disabled_paths(model) -> tuple[str, ...]:
    """The model's muscles and path actuators that its OpenSim file disables (``appliesForce`` false,
    3.x ``isDisabled`` true; ``OsimInfo.disabled_forces``): OpenSim's tools leave them out; ``()``
    for a model not read from a file."""
    info = getattr(model, "osim", None)
    paths = getattr(model, "muscles", None)
    off = set(getattr(info, "disabled_forces", ()))
    return () if paths is None else tuple(n for n in paths.names if n in off)


def _labels(model) -> tuple[str, ...]:
    names = model.coordinate_names
    if model.osim is None:
        return tuple(names)
    rot = _rotational(model)
    return tuple(n + ("_moment" if r else "_force") for n, r in zip(names, rot))


def tree_columns(model, where: str) -> tuple[int, ...] | None:
    """Indices of the model's coordinates in OpenSim 4.6's multibody tree order
    (:func:`mbjax.opensim.model.osim_motion.tree_order` of the model's file): the order of the
    columns OpenSim's ``InverseDynamicsTool`` writes.  None for a model not read from a file; when
    the file cannot be read again (moved, changed), None with a warning naming it."""
    from ...model.osim_motion import tree_order

    info = getattr(model, "osim", None)
    if info is None or not getattr(info, "source", None):
        return None
    names = tuple(model.coordinate_names)
    try:
        order = {n: k for k, n in enumerate(tree_order(info.source))}
    except (OSError, ValueError) as e:
        order, why = None, f"cannot read it again ({e})"
    else:
        missing = [n for n in names if n not in order]
        why = f"it has no coordinate {missing} (changed since the model was read)" if missing else None
    if why is not None:
        warnings.warn(f"{where}: the model's file {info.source}: {why}: the generalized-force columns are written in "
                      "the model's coordinate order, not in OpenSim 4.6's multibody tree order", stacklevel=3)
        return None
    return tuple(sorted(range(len(names)), key=lambda i: order[names[i]]))


def external_loads_file(external_loads, where: str):
    """``external_loads`` as an :class:`ExternalLoadsFile` or None: a path to an ExternalLoads .xml is
    read (:func:`mbjax.io.read_external_loads`); another type is refused saying what is accepted."""
    if external_loads is None or isinstance(external_loads, ExternalLoadsFile):
        return external_loads
    if isinstance(external_loads, (str, os.PathLike)):
        return read_external_loads(external_loads)
    raise TypeError(f"{where}: external_loads must be an ExternalLoadsFile (mbjax.io.read_external_loads), the path "
                    f"of an ExternalLoads .xml, or None; got {type(external_loads).__name__} {external_loads!r}")


def inverse_dynamics_motion(model, coordinates: Table, external_loads=None, *, lowpass_cutoff: float = -1.0,
                            time_range=None, forces_to_exclude=("Muscles",), chunk: int = 256) -> IDResult:
    """OpenSim's ID of a coordinates table with external loads (the package docstring's steps).

    ``external_loads``: an :class:`~mbjax.opensim.external_loads.ExternalLoadsFile` (read with
    :func:`mbjax.io.read_external_loads`) or its .xml path, evaluated at the ID frames, or None.
    ``forces_to_exclude``: OpenSim's list (``All``, ``Muscles``, ``Actuators``, names).
    """
    where = "inverse_dynamics_motion"
    require_model(model, where)
    if lowpass_cutoff is not None:  # None: no filtering
        lowpass_cutoff = real_number(lowpass_cutoff, "lowpass_cutoff", where)
    time_range = time_pair(time_range, where)
    chunk = positive_int(chunk, "chunk", where)
    forces_to_exclude = name_list(forces_to_exclude, "forces_to_exclude", where)
    external_loads = external_loads_file(external_loads, where)
    warn_float32("inverse dynamics")
    t, q, qd, qdd = coordinate_trajectory(model, coordinates, lowpass_cutoff, time_range)
    with_forces = _force_elements_applied(model, forces_to_exclude)
    loads = None if external_loads is None else external_loads.at(t, model)
    tau = inverse_dynamics_frames(model, q, qd, qdd, loads, forces=with_forces, chunk=chunk)
    tau = mobility_forces(model, q, np.asarray(tau), where)  # OpenSim's speeds: ω_F for Ball/Free rotations
    return IDResult(t, tau, tuple(model.coordinate_names), _labels(model), q, qd, qdd, loads,
                    tree_columns(model, where))
