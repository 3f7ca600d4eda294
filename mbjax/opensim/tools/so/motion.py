"""Static optimization of a coordinates table, as OpenSim 4.6's ``StaticOptimization`` analysis
runs it (the steps of the :mod:`mbjax.opensim.tools.so` package docstring): the states trajectory and all
frames solved in one program."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ....program_store import persistent
from .... import _checks
from ...._batching import padded_length
from ..id import (check_frames, coordinate_trajectory, disabled_paths, dynamics_model, torques_of_frames,
                       warn_float32)
from ..id.motion import _force_elements_applied, external_loads_file
from ...._model import require_model
from ....io.arguments import real_number, time_range as time_pair
from ....io.storage import Table
from ....muscles.opensim_moment_arms import opensim_moment_arms_and_lengths
from ....muscles.parameters import hill_parameters
from ....muscles.paths import get_paths
from ....analysis.sharing.qp import check_exponent
from ....analysis.sharing.force_coefficients import path_actuator_properties
from ....analysis.sharing.static_optimization import static_optimization_trajectory
from .actuators import actuator_columns, check_actuators, model_actuators


class SOResult(NamedTuple):
    """Static optimization per frame: ``time (T,)``, ``activations`` and ``forces`` ``(T, nm + nr)``
    (muscles, then reserves: controls x and torques F_r x), their ``labels``, the muscle and reserve
    names, the solver's per-frame ``result`` (:class:`mbjax.analysis.sharing.StaticOptimizationResult`), and
    the ``q, qd, qdd, tau`` used; ``external``: the external loads' recorded columns
    ``(labels, values (T, k))`` (step 6 of the package docstring) or None.  ``columns``: the indices
    into ``labels`` in the order OpenSim writes them (the model's ForceSet order, where the model's
    own actuators may come before or between its muscles; then the force-set files'), which
    :meth:`tables` follows; None: the order of ``labels``."""

    time: np.ndarray
    activations: np.ndarray
    forces: np.ndarray
    labels: tuple[str, ...]
    muscle_names: tuple[str, ...]
    reserves: tuple
    result: object
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    tau: np.ndarray
    external: tuple | None = None
    columns: tuple[int, ...] | None = None

    def tables(self) -> tuple[Table, Table]:
        """(activation, force) tables as OpenSim writes them: the actuators in OpenSim's order
        (``columns``), the force table then with the external loads' columns."""
        k = list(self.columns) if self.columns is not None else list(range(len(self.labels)))
        labels, act, forces = tuple(self.labels[i] for i in k), self.activations[:, k], self.forces[:, k]
        act_labels = labels
        if self.external is not None:
            labels, forces = labels + tuple(self.external[0]), np.concatenate([forces, self.external[1]], axis=1)
        return (Table(self.time, act_labels, act, False, {"name": "Static Optimization"}),
                Table(self.time, labels, forces, False, {"name": "Static Optimization"}))


def _external_records(external_loads, resolved, q):
    """``ExternalForce::getRecordValues`` at every frame: labels and values ``(T, k)``, from the
    loads ``resolved`` at every frame (in :func:`_solve_frames`' program): ``(forces, points, torques)``."""
    forces, points, torques = (np.asarray(a) for a in resolved)
    labels, cols = [], []
    for k, f in enumerate(external_loads.forces):
        stem = f"{f.applied_to_body}_{f.name}_"
        if f.force_columns is not None:
            labels += [stem + c for c in ("Fx", "Fy", "Fz")]
            cols.append(forces[:, k])
            if f.point_columns is not None:
                labels += [stem + c for c in ("px", "py", "pz")]
                cols.append(points[:, k])
        if f.torque_columns is not None:
            labels += [stem + c for c in ("Tx", "Ty", "Tz")]
            cols.append(torques[:, k])
    values = np.concatenate(cols, axis=1) if cols else np.zeros((q.shape[0], 0))
    return tuple(labels), values


def states_trajectory(model, coordinates: Table, lowpass_cutoff: float = -1.0, time_range=None,
                      step_interval: int = 1):
    """``time (T,)`` and ``q, q̇, q̈ (T, nq)`` as OpenSim's AnalyzeTool gives them to its analyses
    (package docstring, steps 1-4): the ID tool's steps with q̈ from the speeds' spline, at the rows
    an analysis with ``step_interval`` records (:func:`mbjax.opensim.tools.id.coordinate_trajectory`)."""
    return coordinate_trajectory(model, coordinates, lowpass_cutoff, time_range, accelerations="speeds",
                                 tool="AnalyzeTool", step_interval=step_interval)


def static_optimization_motion(model, coordinates: Table, external_loads=None, *, reserves=(),
                               use_model_actuators: bool = True, lowpass_cutoff: float = -1.0, time_range=None,
                               step_interval: int = 1, exponent: float = 2.0, use_muscle_physiology: bool = True,
                               pennation_rule: str = "opensim", progress: bool = True, solver_options=None,
                               moment_arm_rule: str = "opensim") -> SOResult:
    """OpenSim's static optimization of a coordinates table (the package docstring's steps).

    ``external_loads``: an :class:`~mbjax.opensim.external_loads.ExternalLoadsFile`, its .xml path, or None;
    ``reserves``: more actuators (``CoordinateActuator`` / :class:`Reserve`, ``PointActuator``,
    ``TorqueActuator`` records, e.g. from :func:`read_reserves`), after the model's own
    (``use_model_actuators``: :func:`model_actuators`, as OpenSim uses them); ``step_interval``:
    OpenSim's analysis ``step_interval`` (every k-th row, first and last always);
    ``pennation_rule``: ``"opensim"`` (OpenSim 4.6's force per unit activation) or ``"rigid"``
    (the physical one; they differ for pennated Millard2012 muscles,
    :mod:`mbjax.analysis.sharing.static_optimization`); ``progress`` prints what runs;
    ``moment_arm_rule``: ``"opensim"`` (its unit-force moment arms, what its tool uses; they differ
    from −∂L/∂q over ellipsoids and multi-pass wraps) or ``"geometric"``.
    """
    where = "static_optimization_motion"
    require_model(model, where)
    use_muscle_physiology = _checks.true_or_false(use_muscle_physiology, f"{where}: use_muscle_physiology")
    use_model_actuators = _checks.true_or_false(use_model_actuators, f"{where}: use_model_actuators")
    if lowpass_cutoff is not None:  # None: no filtering
        lowpass_cutoff = real_number(lowpass_cutoff, "lowpass_cutoff", where)
    exponent = real_number(exponent, "exponent", where)
    time_range = time_pair(time_range, where)
    external_loads = external_loads_file(external_loads, where)
    warn_float32("static optimization")
    check_exponent(exponent)
    t, q, qd, qdd = states_trajectory(model, coordinates, lowpass_cutoff, time_range, step_interval)
    loads = None if external_loads is None else external_loads.at(t, model)
    with_forces = _force_elements_applied(model, ("Muscles",))
    q, qd, qdd, loads = check_frames(model, q, qd, qdd, loads)  # τ is computed in the solver's program
    paths = get_paths(model)
    muscles = tuple(paths.names)
    _check_control_bounds(paths)
    disabled = disabled_paths(model)  # held at zero and left out of the results, as OpenSim removes them
    off = np.array([n in disabled for n in muscles], bool)
    actuators = check_actuators(model, (model_actuators(model) if use_model_actuators else ()) + tuple(reserves))
    kw = {}
    if actuators:
        kw["actuator_bounds"] = (np.array([r.min_control for r in actuators], float),
                                 np.array([r.max_control for r in actuators], float))
    dtype = np.dtype(jnp.result_type(float))
    # the frames padded to the next quarter octave by repeating the last (solved after the real ones,
    # which they cannot change): a trial of another length in the same bucket reuses the program
    T, P = q.shape[0], padded_length(q.shape[0])

    def pad(a):
        a = np.asarray(a, dtype)
        return np.concatenate([a, np.repeat(a[-1:], P - T, axis=0)]) if P > T else a

    # every host array to the device in one transfer (a device_put per array is a transfer each)
    (q_d, qd_d, qdd_d, forces_on), kw, loads_d = jax.device_put((
        (pad(q), pad(qd), pad(qdd), np.asarray(1.0 if with_forces else 0.0, dtype)),
        jax.tree_util.tree_map(lambda a: np.asarray(a, dtype), kw),
        None if loads is None else jax.tree_util.tree_map(pad, loads)))
    # frames are warm-started in order (multipliers included): the dual Newton polish converges from
    # any multipliers of a feasible problem, so it starts at once (the ALM runs only where it fails)
    options = {"first_outer": 0, **dict(solver_options or {})}
    if progress:
        print(f"static optimization: {t.shape[0]} frames, {t[0]:.4g}-{t[-1]:.4g} s, {len(muscles)} muscles, "
              f"{len(actuators)} other actuators: inverse dynamics and solve (one compilation per model and "
              "padded frame count, frames warm-started in order) ...", flush=True)
    with _checks.checks(False):  # q, qd, qdd and the loads checked finite above: no host callbacks in the solver
        res, resolved, tau = _solve_frames(model, q_d, qd_d, qdd_d, forces_on, kw, actuators,
                                           float(exponent), use_muscle_physiology, str(pennation_rule),
                                           moment_arm_rule, tuple(sorted(options.items())), off, loads_d)
    res, resolved, tau = jax.tree_util.tree_map(lambda a: a[:T], (res, resolved, tau))  # the padding dropped
    tau = np.asarray(tau)
    finite = np.all(np.isfinite(np.asarray(res.activations)), axis=1)
    if not finite.all():  # the solver runs without run-time checks: a NaN is reported here
        nan = np.nonzero(~finite)[0]
        raise ValueError(f"static optimization: activations are NaN or inf at {nan.size} of {t.shape[0]} frames "
                         f"(first at t = {t[nan[0]]:.6g} s): the model's muscle lengths, moment arms or force "
                         "curves are not finite there (check them at that pose, e.g. mbjax.moment_arms under "
                         "mbjax.config.checks(True))")
    _report_failures(model, t, res)
    keep = np.flatnonzero(~off)
    act = np.asarray(res.activations)[:, keep]
    force = np.asarray(res.forces)[:, keep]
    labels = muscles = tuple(muscles[k] for k in keep)
    if actuators:
        x_a = np.asarray(res.actuator_controls)
        act = np.concatenate([act, x_a], axis=1)
        force = np.concatenate([force, x_a * np.array([r.optimal_force for r in actuators])[None, :]], axis=1)
        labels = muscles + tuple(r.name for r in actuators)
    if progress:
        print(f"static optimization: done, max |R F + B x - τ| = {np.max(np.abs(np.asarray(res.residual))):.2e}",
              flush=True)
    external = None if loads is None else _external_records(external_loads, resolved, q)
    own = len(model_actuators(model)) if use_model_actuators else 0
    return SOResult(t, act, force, labels, muscles, actuators, res, q, qd, qdd, tau, external,
                    force_set_columns(model, labels, len(muscles) + own))


def force_set_columns(model, labels, n: int) -> tuple[int, ...] | None:
    """Indices putting the model's own actuators, the first ``n`` of ``labels`` (its muscles, then
    its scalar actuators, as :class:`SOResult` holds them), in the order of its file's ``<ForceSet>``
    (the order of OpenSim's columns), the other labels after them as they are; None when that is
    their order or the model has no file to read."""
    from ...model.osim_xml import _Doc

    info = getattr(model, "osim", None)
    names = tuple(labels[:n])
    if info is None or not getattr(info, "source", None) or not getattr(info, "actuators", ()):
        return None
    try:
        objects = _Doc(info.source).root.find("Model/ForceSet/objects")
    except (OSError, ValueError):
        return None
    order = {}
    for el in (objects if objects is not None else []):
        order.setdefault(el.get("name"), len(order))
    if any(m not in order for m in names):
        return None
    first = sorted(range(n), key=lambda i: order[names[i]])
    return None if first == list(range(n)) else tuple(first) + tuple(range(n, len(labels)))


def _report_failures(model, t, res):
    """OpenSim's report of a frame without a solution (``StaticOptimization::record``: "The model
    appears unsuitable ... acceleration constraint violation(s)"), as one warning naming the frames
    and, at the first, the coordinates whose equation is not met."""
    bad = np.nonzero(~np.asarray(res.converged))[0]
    if not bad.size:
        return
    residual = np.asarray(res.residual)[bad[0]]
    names = tuple(model.coordinate_names)
    worst = np.argsort(-np.abs(residual))[:5]
    unmet = ", ".join(f"{names[k]}: {residual[k]:.3g}" for k in worst if abs(residual[k]) > 1e-6)
    warnings.warn(f"static optimization did not converge at {bad.size} of {t.shape[0]} frames (first at "
                  f"t = {t[bad[0]]:.6g} s" + (f"; unmet generalized forces there (N·m or N) {unmet}" if unmet else "")
                  + "): the muscles and actuators cannot produce the inverse-dynamics forces; add reserve "
                  "actuators or see mbjax.analysis.sharing.infeasibility_report", stacklevel=3)


def muscle_control_bounds(paths, dtype=float):
    """Each muscle's activation bounds ``(lo, hi)`` ``(nm,)`` in OpenSim's static optimization, which
    bounds an actuator by its controls: ``[min_control, max_control]`` where the file (or a
    ``<defaults>`` object) gives them, ``min_control`` raised to ``minimum_activation`` (OpenSim's
    muscles raise or refuse a lower one), else ``[minimum_activation, 1]`` (a muscle's built-in
    ``max_control``).  PathActuator rows are replaced by their own controls by the caller."""
    lo = jnp.asarray(hill_parameters(paths)["minimum_activation"], dtype)
    hi = jnp.ones((paths.n_muscles,), dtype)
    given_lo, given_hi = paths.parameters.get("min_control"), paths.parameters.get("max_control")
    if given_lo is not None:
        given_lo = jnp.asarray(given_lo, dtype)
        lo = jnp.where(jnp.isnan(given_lo), lo, jnp.maximum(lo, given_lo))
    if given_hi is not None:
        given_hi = jnp.asarray(given_hi, dtype)
        hi = jnp.where(jnp.isnan(given_hi), hi, given_hi)
    return lo, hi


def _check_control_bounds(paths) -> None:
    """Refuse, by muscle, bounds no activation meets (``max_control`` below ``min_control`` or below the
    minimum activation): the problem has no solution."""
    if paths.n_muscles == 0:
        return
    mask = path_actuator_properties(paths)[0]
    lo, hi = (np.asarray(b, float) for b in muscle_control_bounds(paths))
    bad = [f"{n!r} (activation bounds [{a:g}, {b:g}])" for n, a, b, pa in zip(paths.names, lo, hi, mask)
           if not pa and not a <= b]
    if bad:
        raise ValueError(f"static optimization: max_control is below min_control or minimum_activation for "
                         f"{', '.join(bad)}: no activation meets the bounds; fix <max_control> in the model")


@persistent("mbjax.opensim.tools.so._solve_frames")
def _solve_frames(model, q, qd, qdd, forces_on, actuator_kw, actuators, exponent, use_muscle_physiology,
                  pennation_rule, moment_arm_rule, solver_options, off=None, loads=None):
    """All frames, compiled once per model, frame count and (static) options: a second run of the
    same setup, or another motion of the same length, does not trace again.  The inverse dynamics
    τ of the frames (:func:`mbjax.opensim.tools.id.torques_of_frames`, ``forces_on`` weighing the model's
    force elements), the actuators' generalized forces (:func:`actuator_columns`) and the
    activations' bounds (:func:`muscle_control_bounds`) are computed here too, not in
    programs of their own.  Returns the result, the external loads resolved at every frame as
    ``(forces, points, torques)`` ``(T, k, 3)`` each (None without) and τ ``(T, nq)``."""
    tau = torques_of_frames(dynamics_model(model), q, qd, qdd, loads, forces_on)
    resolved = None if loads is None else jax.vmap(lambda L, x: L.resolved(model, x))(loads, q)
    if resolved is not None:  # arrays only: the program's outputs are kept on disk (mbjax.program_store)
        resolved = (resolved.forces, resolved.points, resolved.torques)
    paths = get_paths(model)
    lo, hi = muscle_control_bounds(paths, q.dtype)
    mask, _, min_control, max_control = path_actuator_properties(paths, q.dtype)
    if mask.any():  # a PathActuator's control bounds are its own, not an activation's
        lo, hi = jnp.where(jnp.asarray(mask), min_control, lo), jnp.where(jnp.asarray(mask), max_control, hi)
    if off is not None:  # disabled muscles and path actuators: no force
        lo, hi = jnp.where(off, 0.0, lo), jnp.where(off, 0.0, hi)
    R = L = None
    if paths.n_muscles == 0:  # reserves (and residuals) alone
        R, L = jnp.zeros(q.shape + (0,), q.dtype), jnp.zeros(q.shape[:1] + (0,), q.dtype)
    elif moment_arm_rule == "opensim":  # one lane-folded wrap pass for all frames, not a vmap of it
        R, L = opensim_moment_arms_and_lengths(model, q)
    B = None
    if actuators:
        B = jax.vmap(lambda qi: actuator_columns(model, actuators, qi))(q)
    return static_optimization_trajectory(
        model, q, qd, qdd, taus=tau, exponent=exponent, activation_bounds=(lo, hi),
        use_muscle_physiology=use_muscle_physiology, solver_options=dict(solver_options) or None,
        moment_arm_rule=moment_arm_rule, moment_arms=R, lengths=L, actuators=B, pennation_rule=pennation_rule,
        **actuator_kw), resolved, tau
