"""Static optimization of recorded motion, as OpenSim 4.6's ``AnalyzeTool`` with a ``StaticOptimization``.

OpenSim's tool, step by step (``AnalyzeTool::loadStatesFromFile``, ``StaticOptimization::record``),
and what this module does for each:

1. The coordinates file is read; with ``lowpass_cutoff_frequency_for_coordinates >= 0`` it is
   padded, resampled and filtered exactly as the ID tool does (:func:`mbjax.io.signal.lowpass_storage`);
   degrees become radians; a coordinate without a column is held at its default.
2. ``SimbodyEngine::formCompleteStorages``: the speeds are the first derivative of the degree-5
   natural spline through the coordinates, at the samples.  Those rows (coordinates and speeds,
   over the padded time grid) are the *states store*.
3. ``StaticOptimization`` fits a second degree-5 spline to the **speed** columns and takes its
   derivative as the target accelerations (not the coordinate spline's second derivative: the two
   differ near the ends and wherever the data are rough).
4. Frames: the states rows from the last at or before ``initial_time`` to the last at or before
   ``final_time`` (``Storage::findIndex``), the reported times the padded grid's (the tutorial's
   reference file starts at -2e-7 s).
5. Per frame, :func:`mbjax.static_optimization` with OpenSim's formulation (its module docstring)
   and OpenSim's unit-force moment arms (:func:`mbjax.muscles.opensim_moment_arms`; over an
   ellipsoid or a path wrapping twice they differ from −∂L/∂q by millimetres): τ = inverse dynamics with the external loads and the model's force elements, muscles at
   ``use_muscle_physiology`` force a·F_o f_L f_V cos α (no passive force), activation ≥ each
   muscle's ``minimum_activation`` (OpenSim raises ``min_control`` to it), exponent
   ``activation_exponent``; ``CoordinateActuator`` reserves from ``force_set_files`` (optimal
   force, min/max control) enter as |x|^p terms.  Frames are warm-started in order, and each
   goes straight to the QP's dual Newton polish from the previous frame's multipliers
   (``solver_options`` ``first_outer=0``; the augmented-Lagrangian passes run only for a frame the
   polish does not solve; the same solutions to 4e-10 on Gait2354, about a third less time).
6. Written as OpenSim writes them: ``<name>_StaticOptimization_activation.sto`` and
   ``<name>_StaticOptimization_force.sto`` in ``results_directory`` (columns: muscles then
   reserves, in the model's order; the force file then repeats each external load as OpenSim's
   ``ExternalForce::getRecordValues`` does: ``<applied_to_body>_<name>_Fx Fy Fz`` (ground axes),
   ``_px py pz`` (in the applied body's frame, when the force has a point), ``_Tx Ty Tz`` (ground
   axes, when it has a torque)).

Differences: OpenSim solves each frame with IPOPT to ``optimizer_convergence_criterion``
(default 1e-4 on its scaled problem); mbjax solves to rounding, so the two agree to OpenSim's
tolerance (tighten it in the setup file to compare closely).  The actuators of ``force_set_files``
read are ``CoordinateActuator`` reserves and the ``PointActuator``/``TorqueActuator`` residuals of
gait analyses (:mod:`mbjax.forces.body_actuators`), with the file's ``<defaults>``; a disabled one
(``isDisabled``/``appliesForce``) is left out as OpenSim leaves it out; any other actuator is
refused by name.  The model's disabled muscles and path actuators (``appliesForce`` false, 3.x
``isDisabled`` true) are left out of the optimization and the results, as OpenSim removes them.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .program_store import persistent
from . import _checks
from .forces.body_actuators import CoordinateActuator, PointActuator, TorqueActuator, actuator_matrix
from .io.osim_coordinates import coordinate_jacobian, coordinate_names
from ._batching import padded_length
from .id_tool import (_force_elements_applied, check_frames, check_input_file, coordinate_trajectory,
                      disabled_paths, dynamics_model, read_coordinates, torques_of_frames,
                      warn_float32)
from .io.storage import Table, prepare_output, write_storage
from .muscles.opensim_moment_arms import opensim_moment_arms_and_lengths
from .muscles.parameters import hill_parameters
from .muscles.paths import get_paths
from .sharing.qp import check_exponent
from .sharing.static_optimization import path_actuator_properties, static_optimization_trajectory


#: OpenSim's ``CoordinateActuator`` (the reserve actuator of static optimization):
#: torque = ``optimal_force`` · x, ``min_control <= x <= max_control``
Reserve = CoordinateActuator


class SOSetup(NamedTuple):
    """What an OpenSim ``AnalyzeTool`` setup with a ``StaticOptimization`` analysis says (paths absolute)."""

    path: str
    name: str
    model_file: str | None
    coordinates_file: str | None
    external_loads_file: str | None
    force_set_files: tuple[str, ...]
    replace_force_set: bool
    time_range: tuple[float, float]
    lowpass_cutoff: float
    activation_exponent: float
    use_muscle_physiology: bool
    use_model_force_set: bool
    convergence_criterion: float
    results_directory: str
    step_interval: int = 1


class SOResult(NamedTuple):
    """Static optimization per frame: ``time (T,)``, ``activations`` and ``forces`` ``(T, nm + nr)``
    (muscles, then reserves: controls x and torques F_r x), their ``labels``, the muscle and reserve
    names, the solver's per-frame ``result`` (:class:`mbjax.sharing.StaticOptimizationResult`), and
    the ``q, qd, qdd, tau`` used; ``external``: the external loads' recorded columns
    ``(labels, values (T, k))`` (step 6 of the module docstring) or None."""

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

    def tables(self) -> tuple[Table, Table]:
        """(activation, force) tables as OpenSim writes them (the force table with the external
        loads' columns)."""
        labels, forces = self.labels, self.forces
        if self.external is not None:
            labels, forces = labels + tuple(self.external[0]), np.concatenate([forces, self.external[1]], axis=1)
        return (Table(self.time, self.labels, self.activations, False, {"name": "Static Optimization"}),
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


# --------------------------------------------------------------------------------------------
# states and accelerations
# --------------------------------------------------------------------------------------------


def states_trajectory(model, coordinates: Table, lowpass_cutoff: float = -1.0, time_range=None,
                      step_interval: int = 1):
    """``time (T,)`` and ``q, q̇, q̈ (T, nq)`` as OpenSim's AnalyzeTool gives them to its analyses
    (module docstring, steps 1-4): the ID tool's steps with q̈ from the speeds' spline, at the rows
    an analysis with ``step_interval`` records (:func:`mbjax.id_tool.coordinate_trajectory`)."""
    return coordinate_trajectory(model, coordinates, lowpass_cutoff, time_range, accelerations="speeds",
                                 tool="AnalyzeTool", step_interval=step_interval)


# --------------------------------------------------------------------------------------------
# the optimization
# --------------------------------------------------------------------------------------------


def check_actuators(model, actuators) -> tuple:
    """The scalar actuators checked against ``model``: names unique, each ``CoordinateActuator`` on
    one of the model's OpenSim coordinates (independent, coupled or locked), each body actuator on
    its bodies, optimal forces positive.  Actuators on locked coordinates are named in a warning:
    their force goes into the lock (OpenSim's static optimization constrains no locked coordinate's
    acceleration), so their controls come out 0 (or the bound nearest 0)."""
    actuators = tuple(actuators)
    seen = set()
    q_names = tuple(model.coordinate_names)
    info = model.extras.get("osim")
    roles = dict(info.roles) if info is not None else {n: "independent" for n in q_names}
    bodies = set(model.body_names) | {"ground"}
    locked = []
    for a in actuators:
        kind = type(a).__name__
        if not isinstance(a, (CoordinateActuator, PointActuator, TorqueActuator)):
            raise TypeError(f"static optimization actuators are CoordinateActuator, PointActuator or TorqueActuator "
                            f"records, got {a!r}")
        if a.name in seen:
            raise ValueError(f"two actuators are named {a.name!r} (OpenSim's force set needs unique names)")
        seen.add(a.name)
        if not (np.isfinite(a.optimal_force) and a.optimal_force > 0):
            raise ValueError(f"{kind} {a.name!r}: optimal_force must be positive and finite, got {a.optimal_force}")
        if not a.min_control <= a.max_control:
            raise ValueError(f"{kind} {a.name!r}: min_control {a.min_control} > max_control {a.max_control}")
        if isinstance(a, CoordinateActuator):
            if a.coordinate not in roles:
                raise ValueError(f"CoordinateActuator {a.name!r}: coordinate {a.coordinate!r} is not a coordinate of "
                                 f"the model (coordinates: {tuple(roles)})")
            if roles[a.coordinate] != "independent" and info is None:
                raise ValueError(f"CoordinateActuator {a.name!r}: coordinate {a.coordinate!r} is not in q")
            if roles[a.coordinate] == "locked":
                locked.append(f"{a.name!r} ({a.coordinate})")
        else:
            for body in ((a.body,) if isinstance(a, PointActuator) else (a.body_a, a.body_b)):
                if body is not None and body not in bodies:
                    raise ValueError(f"{kind} {a.name!r}: body {body!r} is not a body of the model")
    if locked:
        warnings.warn(f"actuators on locked coordinates: {', '.join(locked)}: the lock takes their force (OpenSim "
                      "constrains no locked coordinate's acceleration), so their controls are 0", stacklevel=3)
    return actuators


def actuator_columns(model, actuators, q):
    """``B (nq, na)``: column k is the generalized force of ``actuators[k]`` at control 1 and pose
    ``q`` (traced, one pose; ``jax.vmap`` over frames).  A ``CoordinateActuator`` on coordinate c
    gives F_opt ∂c/∂q (:func:`mbjax.io.osim_coordinates.coordinate_jacobian`: a unit column on a
    coordinate of ``q``, the coupler's gradient on a coupled one, zero on a locked one); body
    actuators give :func:`mbjax.forces.body_actuators.actuator_matrix`."""
    q = jnp.asarray(q)
    dtype = jnp.result_type(q, float)
    q_names = list(model.coordinate_names)
    B = jnp.zeros((len(q_names), len(actuators)), dtype)
    body = [k for k, a in enumerate(actuators) if not isinstance(a, CoordinateActuator)]
    coord = [k for k, a in enumerate(actuators) if isinstance(a, CoordinateActuator)]
    if body:
        B = B.at[:, np.asarray(body)].set(actuator_matrix(model, [actuators[k] for k in body], q).astype(dtype))
    if coord:
        targets = [actuators[k].coordinate for k in coord]
        force = jnp.asarray([actuators[k].optimal_force for k in coord], dtype)
        if all(c in q_names for c in targets):
            J = np.zeros((len(q_names), len(coord)))
            J[[q_names.index(c) for c in targets], np.arange(len(coord))] = 1.0
            J = jnp.asarray(J, dtype)
        else:
            names = coordinate_names(model)[0]
            J = coordinate_jacobian(model, q.astype(dtype))[np.asarray([names.index(c) for c in targets])].T
        B = B.at[:, np.asarray(coord)].set(J * force[None, :])
    return B


def model_actuators(model) -> tuple:
    """The model's own enabled scalar actuators (``OsimInfo.actuators``: its ``CoordinateActuator``,
    ``PointActuator`` and ``TorqueActuator`` elements), which OpenSim's static optimization uses
    beside the muscles; ``()`` for a model not read from an OpenSim file."""
    info = model.extras.get("osim") if hasattr(model, "extras") else None
    return tuple(getattr(info, "actuators", ())) if info is not None else ()


def static_optimization_motion(model, coordinates: Table, external_loads=None, *, reserves=(),
                               use_model_actuators: bool = True, lowpass_cutoff: float = -1.0, time_range=None,
                               step_interval: int = 1, exponent: float = 2.0, use_muscle_physiology: bool = True,
                               pennation_rule: str = "opensim", progress: bool = True, solver_options=None,
                               moment_arm_rule: str = "opensim") -> SOResult:
    """OpenSim's static optimization of a coordinates table (the module docstring's steps).

    ``external_loads``: an :class:`~mbjax.io.external_loads.ExternalLoadsFile` or None;
    ``reserves``: more actuators (``CoordinateActuator`` / :class:`Reserve`, ``PointActuator``,
    ``TorqueActuator`` records, e.g. from :func:`read_reserves`), after the model's own
    (``use_model_actuators``: :func:`model_actuators`, as OpenSim uses them); ``step_interval``:
    OpenSim's analysis ``step_interval`` (every k-th row, first and last always);
    ``pennation_rule``: ``"opensim"`` (OpenSim 4.6's force per unit activation) or ``"rigid"``
    (the physical one; they differ for pennated Millard2012 muscles,
    :mod:`mbjax.sharing.static_optimization`); ``progress`` prints what runs;
    ``moment_arm_rule``: ``"opensim"`` (its unit-force moment arms, what its tool uses; they differ
    from −∂L/∂q over ellipsoids and multi-pass wraps) or ``"geometric"``.
    """
    warn_float32("static optimization")
    check_exponent(exponent)
    t, q, qd, qdd = states_trajectory(model, coordinates, lowpass_cutoff, time_range, step_interval)
    loads = None if external_loads is None else external_loads.at(t, model)
    with_forces = _force_elements_applied(model, ("Muscles",))
    q, qd, qdd, loads = check_frames(model, q, qd, qdd, loads)  # τ is computed in the solver's program
    paths = get_paths(model)
    muscles = tuple(paths.names)
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
                                           float(exponent), bool(use_muscle_physiology), str(pennation_rule),
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
    return SOResult(t, act, force, labels, muscles, actuators, res, q, qd, qdd, tau, external)


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
                  "actuators or see mbjax.sharing.infeasibility_report", stacklevel=3)


@persistent("mbjax.so_tool._solve_frames")
def _solve_frames(model, q, qd, qdd, forces_on, actuator_kw, actuators, exponent, use_muscle_physiology,
                  pennation_rule, moment_arm_rule, solver_options, off=None, loads=None):
    """All frames, compiled once per model, frame count and (static) options: a second run of the
    same setup, or another motion of the same length, does not trace again.  The inverse dynamics
    τ of the frames (:func:`mbjax.id_tool.torques_of_frames`, ``forces_on`` weighing the model's
    force elements), the actuators' generalized forces (:func:`actuator_columns`) and the
    activations' lower bounds (each muscle's ``minimum_activation``) are computed here too, not in
    programs of their own.  Returns the result, the external loads resolved at every frame as
    ``(forces, points, torques)`` ``(T, k, 3)`` each (None without) and τ ``(T, nq)``."""
    tau = torques_of_frames(dynamics_model(model), q, qd, qdd, loads, forces_on)
    resolved = None if loads is None else jax.vmap(lambda L, x: L.resolved(model, x))(loads, q)
    if resolved is not None:  # arrays only: the program's outputs are kept on disk (mbjax.program_store)
        resolved = (resolved.forces, resolved.points, resolved.torques)
    paths = get_paths(model)
    lo, hi = hill_parameters(paths)["minimum_activation"], jnp.ones((paths.n_muscles,), q.dtype)
    mask, _, min_control, max_control = path_actuator_properties(paths, q.dtype)
    if mask.any():  # a PathActuator's control bounds are its own, not an activation's
        lo, hi = jnp.where(jnp.asarray(mask), min_control, lo), jnp.where(jnp.asarray(mask), max_control, hi)
    if off is not None:  # disabled muscles and path actuators: no force
        lo, hi = jnp.where(off, 0.0, lo), jnp.where(off, 0.0, hi)
    R = L = None
    if moment_arm_rule == "opensim":  # one lane-folded wrap pass for all frames, not a vmap of it
        R, L = opensim_moment_arms_and_lengths(model, q)
    B = None
    if actuators:
        B = jax.vmap(lambda qi: actuator_columns(model, actuators, qi))(q)
    return static_optimization_trajectory(
        model, q, qd, qdd, taus=tau, exponent=exponent, activation_bounds=(lo, hi),
        use_muscle_physiology=use_muscle_physiology, solver_options=dict(solver_options) or None,
        moment_arm_rule=moment_arm_rule, moment_arms=R, lengths=L, actuators=B, pennation_rule=pennation_rule,
        **actuator_kw), resolved, tau


# --------------------------------------------------------------------------------------------
# OpenSim setup files
# --------------------------------------------------------------------------------------------


def read_reserves(path, inherited=()) -> tuple:
    """The enabled actuators of an OpenSim force-set XML file, in file order, read as OpenSim 4.6
    reads them (:mod:`mbjax.io.osim_actuators`: ``ForceSet`` or legacy ``ActuatorSet`` roots,
    ``GeneralizedForce``/``Force``/``Torque`` converted, ``<defaults>``, after the ``inherited``
    defaults of the documents read before it): ``CoordinateActuator`` (:class:`Reserve`),
    ``PointActuator`` and ``TorqueActuator`` records.  Any other element is refused naming the
    file and element."""
    return _read_force_set(path, inherited)[0]


def _read_force_set(path, inherited=()):
    """``(actuators, defaults)``: :func:`read_reserves` and the file's ``<defaults>`` elements."""
    from .io.osim_actuators import document_version, read_actuators
    from .io.setup_xml import SetupFile

    setup = SetupFile(path)
    doc, root = setup.doc, setup.root
    sets = [root] if root.tag in ("ForceSet", "ActuatorSet") else [el for el in root if el.tag in ("ForceSet", "ActuatorSet")]
    if not sets:
        raise doc.error(root, "no <ForceSet> (or legacy <ActuatorSet>) in a force-set file")
    out, defaults = [], []
    for fs in sets:
        objects = fs.find("objects")
        defaults += fs.findall("defaults")
        if objects is None:
            continue
        found, _ = read_actuators(doc, objects, version=document_version(root), defaults=fs.findall("defaults"),
                                  inherited=tuple(inherited))
        out.extend(found)
    return tuple(out), defaults


def setup_force_sets(setup_path, model, files) -> tuple:
    """The actuators of a tool's ``force_set_files``, each read with the defaults OpenSim has seen
    by then: the setup file's, the model's, the earlier files' (:mod:`mbjax.io.osim_actuators`)."""
    from .io.setup_xml import SetupFile

    tool = SetupFile(setup_path).root
    inherited = [d for el in ([tool] + list(tool)) for d in el.findall("defaults")]
    info = model.extras.get("osim") if hasattr(model, "extras") else None
    inherited += list(getattr(info, "actuator_defaults", ()) or ())
    out = []
    for f in files:
        found, defaults = _read_force_set(f, inherited)
        out.extend(found)
        inherited += defaults
    return tuple(out)


#: AnalyzeTool properties that only a forward simulation or another analysis reads (OpenSim's
#: AnalyzeTool ignores them when it replays a coordinates file)
_ANALYZE_IGNORED = ("solve_for_equilibrium_for_auxiliary_states", "maximum_number_of_integrator_steps",
                    "maximum_integrator_step_size", "minimum_integrator_step_size", "integrator_error_tolerance",
                    "output_precision", "defaults")
_ANALYZE_READ = ("model_file", "replace_force_set", "force_set_files", "results_directory", "initial_time",
                 "final_time", "AnalysisSet", "ControllerSet", "external_loads_file", "states_file",
                 "coordinates_file", "speeds_file", "lowpass_cutoff_frequency_for_coordinates",
                 "external_loads_model_kinematics_file", "external_loads_model_kinematics_file_lowpass_cutoff_frequency")
_SO_READ = ("on", "start_time", "end_time", "step_interval", "in_degrees", "use_model_force_set",
            "activation_exponent", "use_muscle_physiology", "optimizer_convergence_criterion",
            "optimizer_max_iterations")


def unused_setup_elements(doc, tool, analysis, known_analysis) -> list[str]:
    """What an AnalyzeTool setup holds that the tool does not use, as ``file:line: <element>``
    strings: unknown tool properties, other analyses of its ``AnalysisSet`` (not run), controllers,
    and unknown properties of the ``analysis`` run (``known_analysis``: its property names)."""
    out = []
    prec = tool.find("output_precision")
    txt = (prec.text or "").strip() if prec is not None else ""
    if txt:
        try:
            digits = float(txt)
        except ValueError:
            digits = float("nan")
        if not (digits >= 0 and digits == int(digits)):
            raise doc.error(prec, f"must be a non-negative integer, got {txt!r}")
        if digits != 8:
            out.append(f"{doc.where(prec)} {txt} (mbjax writes 17 significant digits)")
    for el in tool:
        if isinstance(el.tag, str) and el.tag not in _ANALYZE_READ + _ANALYZE_IGNORED:
            out.append(f"{doc.where(el)} (not an AnalyzeTool property)")
    for objs in tool.iter("AnalysisSet"):
        for o in objs.iter("objects"):
            for el in o:
                if isinstance(el.tag, str) and el is not analysis:
                    out.append(f"{doc.where(el)}: <{el.tag} name={el.get('name')!r}> (another analysis, not run)")
    for cs in tool.iter("ControllerSet"):
        for o in cs.iter("objects"):
            for el in o:
                if isinstance(el.tag, str):
                    out.append(f"{doc.where(el)}: <{el.tag} name={el.get('name')!r}> (controllers do not act when "
                               "an analysis replays a coordinates file)")
    for el in analysis:
        if isinstance(el.tag, str) and el.tag not in known_analysis:
            out.append(f"{doc.where(el)} (not a <{analysis.tag}> property)")
    return out


def read_so_setup(path) -> SOSetup:
    """Read an OpenSim ``AnalyzeTool`` setup XML whose ``AnalysisSet`` holds a ``StaticOptimization``;
    relative paths are made absolute against the setup file's folder."""
    from .io.setup_xml import SetupFile

    setup = SetupFile(path)
    path, doc, root, base = setup.path, setup.doc, setup.root, setup.base
    tool = root if root.tag == "AnalyzeTool" else root.find("AnalyzeTool")
    if tool is None:
        raise doc.error(root, "no <AnalyzeTool> (a static-optimization setup is an AnalyzeTool file)")
    so = next((el for el in tool.iter("StaticOptimization")), None)
    if so is None:
        raise doc.error(tool, "no <StaticOptimization> in its <AnalysisSet>")
    text, file_of, number, flag = setup.text, setup.resolve, setup.number, setup.flag

    unused = unused_setup_elements(doc, tool, so, _SO_READ)
    criterion = number(so, "optimizer_convergence_criterion", 1e-4)
    if not (np.isfinite(criterion) and criterion > 0):
        raise doc.error(so.find("optimizer_convergence_criterion"), "must be a positive number, got "
                        f"{text(so, 'optimizer_convergence_criterion')!r}")
    iterations = number(so, "optimizer_max_iterations", 100)
    if not (iterations >= 1 and iterations == int(iterations)):
        raise doc.error(so.find("optimizer_max_iterations"), "must be a positive integer"
                        f", got {text(so, 'optimizer_max_iterations')!r}")
    exponent = number(so, "activation_exponent", 2.0)
    if not (np.isfinite(exponent) and exponent > 1):
        raise doc.error(so.find("activation_exponent"), "must be a finite number > 1 (the objective"
                        " sum a^p has one minimum only then; OpenSim's default is 2), got "
                        f"{text(so, 'activation_exponent')!r}")
    if criterion != 1e-4:
        unused.append(f"{doc.where(so.find('optimizer_convergence_criterion'))} {criterion:g} (mbjax solves each "
                      "frame to rounding, within any criterion)")
    if iterations != 100:
        unused.append(f"{doc.where(so.find('optimizer_max_iterations'))} {iterations:g} (mbjax's solver "
                      "iterates until each frame converges)")
    if unused:
        warnings.warn(f"{path}: not used by mbjax's static optimization: " + "; ".join(unused), stacklevel=2)
    if text(tool, "external_loads_model_kinematics_file"):
        raise NotImplementedError(f"{doc.where(tool.find('external_loads_model_kinematics_file'))}: a separate "
                                  "kinematics file for the external loads is not supported")
    if text(tool, "states_file"):
        raise NotImplementedError(f"{doc.where(tool.find('states_file'))}: a states file is not supported; give "
                                  "<coordinates_file> (as the OpenSim tutorials do)")
    if text(tool, "speeds_file"):
        raise NotImplementedError(f"{doc.where(tool.find('speeds_file'))}: a speeds file is not supported; "
                                  "speeds come from the coordinates' splines")
    on = flag(so, "on", True)
    if not on:
        raise ValueError(f"{doc.where(so)}: the StaticOptimization analysis is switched off (<on> false)")
    step = number(so, "step_interval", 1)
    if not (step >= 1 and step == int(step)):
        raise doc.error(so.find("step_interval"), f"<step_interval> must be a positive integer, got {step:g}")
    # OpenSim's AnalyzeTool runs every analysis from <initial_time> to <final_time> (AbstractTool's
    # defaults 0 and 1 s); an analysis' own <start_time>/<end_time> are not read by it
    t0, t1 = number(tool, "initial_time", 0.0), number(tool, "final_time", 1.0)
    if not t0 <= t1:
        el = tool.find("final_time")
        raise doc.error(el if el is not None else tool, f"<final_time> {t1:g} is before <initial_time> {t0:g}")
    a0, a1 = number(so, "start_time", t0), number(so, "end_time", t1)
    if (a0, a1) != (t0, t1) and not (a0 <= t0 and a1 >= t1):
        warnings.warn(f"{doc.where(so)}: <start_time>/<end_time> ({a0:g}, {a1:g}) are not used: OpenSim's "
                      f"AnalyzeTool runs its analyses from <initial_time> to <final_time> ({t0:g}, {t1:g})",
                      stacklevel=2)
    results = file_of(text(tool, "results_directory")) or base
    return SOSetup(path, tool.get("name") or "static_optimization", file_of(text(tool, "model_file")),
                   file_of(text(tool, "coordinates_file")), file_of(text(tool, "external_loads_file")),
                   tuple(file_of(f) for f in (text(tool, "force_set_files") or "").split()),
                   flag(tool, "replace_force_set", False), (t0, t1),
                   number(tool, "lowpass_cutoff_frequency_for_coordinates", -1.0),
                   exponent, flag(so, "use_muscle_physiology", True),
                   flag(so, "use_model_force_set", True), criterion,
                   results, int(step))


def static_optimization_from_setup(path, model=None, *, write: bool = True, results_directory=None,
                                   progress: bool = True, **kwargs) -> SOResult:
    """Run an OpenSim static-optimization setup (``AnalyzeTool`` + ``StaticOptimization``): its model
    (unless ``model`` is given), coordinates, cut-off, time range, exponent, reserve actuators and
    external loads; results written as OpenSim writes them unless ``write=False``.  ``kwargs`` go to
    :func:`static_optimization_motion` (``solver_options``)."""
    from .io.external_loads import read_external_loads
    from .io.osim import load_osim

    setup = read_so_setup(path)
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file>")
    for tag, f in (("coordinates_file", setup.coordinates_file), ("external_loads_file", setup.external_loads_file)):
        check_input_file(path, tag, f)
    for f in setup.force_set_files:
        check_input_file(path, "force_set_files", f)
    if not setup.use_model_force_set:
        raise NotImplementedError(f"{path}: <use_model_force_set> false (coordinate actuators instead of the "
                                  "model's muscles) is not supported")
    if setup.replace_force_set:
        raise NotImplementedError(f"{path}: <replace_force_set> true is not supported (the model's muscles are "
                                  "the actuators mbjax shares the load among)")
    if model is None:
        if setup.model_file is None:
            raise ValueError(f"{path}: no <model_file>; pass model=")
        model = load_osim(setup.model_file)
    reserves = setup_force_sets(path, model, setup.force_set_files)
    out = None
    if write:  # the results folder is made (as OpenSim makes it) and checked before the solve
        out = os.fspath(results_directory) if results_directory is not None else setup.results_directory
        for kind in ("activation", "force"):
            prepare_output(os.path.join(out, f"{setup.name}_StaticOptimization_{kind}.sto"), path,
                           f"static optimization {kind} file")
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = static_optimization_motion(model, read_coordinates(path, setup.coordinates_file), loads, reserves=reserves,
                                        lowpass_cutoff=setup.lowpass_cutoff, time_range=setup.time_range,
                                        exponent=setup.activation_exponent, step_interval=setup.step_interval,
                                        use_muscle_physiology=setup.use_muscle_physiology, progress=progress,
                                        **kwargs)
    if write:
        act, force = result.tables()
        stem = os.path.join(out, f"{setup.name}_StaticOptimization_")
        write_storage(stem + "activation.sto", act, format="storage")
        write_storage(stem + "force.sto", force, format="storage")
    return result
