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
refused by name.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from .forces.body_actuators import PointActuator, TorqueActuator, actuator_matrix
from .id_tool import (_force_elements_applied, check_frames, coordinate_trajectory, dynamics_model,
                      torques_of_frames)
from .io.storage import Table, read_storage, write_storage
from .muscles.opensim_moment_arms import opensim_moment_arms_and_lengths
from .muscles.parameters import hill_parameters
from .muscles.paths import get_paths
from .sharing.static_optimization import static_optimization_trajectory


class Reserve(NamedTuple):
    """An OpenSim ``CoordinateActuator``: torque = ``optimal_force`` · x, ``min_control <= x <= max_control``."""

    name: str
    coordinate: str
    optimal_force: float
    min_control: float = -np.inf
    max_control: float = np.inf


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
    reserves: tuple[Reserve, ...]
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
    loads ``resolved`` at every frame (in :func:`_solve_frames`' program)."""
    forces, points, torques = (np.asarray(a) for a in (resolved.forces, resolved.points, resolved.torques))
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


def states_trajectory(model, coordinates: Table, lowpass_cutoff: float = -1.0, time_range=None):
    """``time (T,)`` and ``q, q̇, q̈ (T, nq)`` as OpenSim's AnalyzeTool gives them to its analyses
    (module docstring, steps 1-4): the ID tool's steps with q̈ from the speeds' spline."""
    return coordinate_trajectory(model, coordinates, lowpass_cutoff, time_range, accelerations="speeds",
                                 tool="AnalyzeTool")


# --------------------------------------------------------------------------------------------
# the optimization
# --------------------------------------------------------------------------------------------


def _reserve_arrays(model, reserves):
    """Per-coordinate optimal force and control bounds ``(nq,)`` from the :class:`Reserve` s among ``reserves``."""
    names = list(model.coordinate_names)
    fr = np.zeros(len(names))
    lo = np.full(len(names), -np.inf)
    hi = np.full(len(names), np.inf)
    seen = {}
    for r in reserves:
        if not isinstance(r, Reserve):
            continue
        if r.coordinate not in names:
            raise ValueError(f"reserve actuator {r.name!r}: coordinate {r.coordinate!r} is not an independent "
                             f"coordinate of the model ({names})")
        if r.coordinate in seen:
            raise NotImplementedError(f"reserve actuators {seen[r.coordinate]!r} and {r.name!r} both act on "
                                      f"{r.coordinate!r}; mbjax takes one reserve per coordinate")
        if not r.optimal_force > 0:
            raise ValueError(f"reserve actuator {r.name!r}: optimal_force must be positive, got {r.optimal_force}")
        seen[r.coordinate] = r.name
        k = names.index(r.coordinate)
        fr[k], lo[k], hi[k] = r.optimal_force, r.min_control, r.max_control
    return fr, lo, hi


def static_optimization_motion(model, coordinates: Table, external_loads=None, *, reserves=(),
                               lowpass_cutoff: float = -1.0, time_range=None, exponent: float = 2.0,
                               use_muscle_physiology: bool = True, progress: bool = True,
                               solver_options=None, moment_arm_rule: str = "opensim") -> SOResult:
    """OpenSim's static optimization of a coordinates table (the module docstring's steps).

    ``external_loads``: an :class:`~mbjax.io.external_loads.ExternalLoadsFile` or None;
    ``reserves``: :class:`Reserve` s (``CoordinateActuator``) and
    :class:`~mbjax.forces.PointActuator` / :class:`~mbjax.forces.TorqueActuator` residuals, in the
    order of their output columns; ``progress`` prints what runs;
    ``moment_arm_rule``: ``"opensim"`` (its unit-force moment arms, what its tool uses; they differ
    from −∂L/∂q over ellipsoids and multi-pass wraps) or ``"geometric"``.
    """
    t, q, qd, qdd = states_trajectory(model, coordinates, lowpass_cutoff, time_range)
    loads = None if external_loads is None else external_loads.at(t, model)
    with_forces = _force_elements_applied(model, ("Muscles",))
    q, qd, qdd, loads = check_frames(model, q, qd, qdd, loads)  # τ is computed in the solver's program
    paths = get_paths(model)
    muscles = tuple(paths.names)
    reserves = tuple(reserves)
    fr, rlo, rhi = _reserve_arrays(model, reserves)
    body = tuple(r for r in reserves if not isinstance(r, Reserve))
    kw = {}
    if fr.any():
        kw = dict(reserves=fr, reserve_bounds=(np.where(fr > 0, rlo, 0.0), np.where(fr > 0, rhi, 0.0)))
    if body:
        kw["actuator_bounds"] = (np.array([r.min_control for r in body], float),
                                 np.array([r.max_control for r in body], float))
    dtype = np.dtype(jnp.result_type(float))
    # every host array to the device in one transfer (one device_put per array costs ~40 µs each)
    (q_d, qd_d, qdd_d, forces_on), kw, loads_d = jax.device_put(jax.tree_util.tree_map(
        lambda a: np.asarray(a, dtype), ((q, qd, qdd, np.asarray(1.0 if with_forces else 0.0)), kw, loads)))
    # frames are warm-started in order (multipliers included): the dual Newton polish converges from
    # any multipliers of a feasible problem, so it starts at once (the ALM runs only where it fails)
    options = {"first_outer": 0, **dict(solver_options or {})}
    if progress:
        print(f"static optimization: {t.shape[0]} frames, {t[0]:.4g}-{t[-1]:.4g} s, {len(muscles)} muscles, "
              f"{len(reserves)} reserves: inverse dynamics and solve (one compilation per model and frame count, "
              "frames warm-started in order) ...", flush=True)
    with _checks.checks(False):  # q, qd, qdd and the loads checked finite above: no host callbacks in the solver
        res, resolved, tau = _solve_frames(model, q_d, qd_d, qdd_d, forces_on, kw, body,
                                           float(exponent), bool(use_muscle_physiology), moment_arm_rule,
                                           tuple(sorted(options.items())), loads_d)
    tau = np.asarray(tau)
    finite = np.all(np.isfinite(np.asarray(res.activations)), axis=1)
    if not finite.all():  # the solver runs without run-time checks: a NaN is reported here
        nan = np.nonzero(~finite)[0]
        raise ValueError(f"static optimization: activations are NaN or inf at {nan.size} of {t.shape[0]} frames "
                         f"(first at t = {t[nan[0]]:.6g} s): the model's muscle lengths, moment arms or force "
                         "curves are not finite there (check them at that pose, e.g. mbjax.moment_arms under "
                         "mbjax.checks(True))")
    bad = np.nonzero(~np.asarray(res.converged))[0]
    if bad.size:
        warnings.warn(f"static optimization did not converge at {bad.size} of {t.shape[0]} frames (first at "
                      f"t = {t[bad[0]]:.6g} s); see mbjax.sharing.infeasibility_report", stacklevel=2)
    act = np.asarray(res.activations)
    force = np.asarray(res.forces)
    labels = muscles
    if reserves:
        names = list(model.coordinate_names)
        tau_r = np.asarray(res.reserve_torques)
        x_a = np.asarray(res.actuator_controls)
        xs, fs = [], []
        for r in reserves:
            if isinstance(r, Reserve):
                k = names.index(r.coordinate)
                xs.append(tau_r[:, k] / fr[k])
                fs.append(tau_r[:, k])
            else:
                xs.append(x_a[:, body.index(r)])
                fs.append(xs[-1] * r.optimal_force)
        act = np.concatenate([act, np.stack(xs, 1)], axis=1)
        force = np.concatenate([force, np.stack(fs, 1)], axis=1)
        labels = muscles + tuple(r.name for r in reserves)
    if progress:
        print(f"static optimization: done, max |R F + τ_r - τ| = {np.max(np.abs(np.asarray(res.residual))):.2e}",
              flush=True)
    external = None if loads is None else _external_records(external_loads, resolved, q)
    return SOResult(t, act, force, labels, muscles, reserves, res, q, qd, qdd, tau, external)


@eqx.filter_jit
def _solve_frames(model, q, qd, qdd, forces_on, reserve_kw, body_actuators, exponent, use_muscle_physiology,
                  moment_arm_rule, solver_options, loads=None):
    """All frames, compiled once per model, frame count and (static) options: a second run of the
    same setup, or another motion of the same length, does not trace again.  The inverse dynamics
    τ of the frames (:func:`mbjax.id_tool.torques_of_frames`, ``forces_on`` weighing the model's
    force elements) and the activations' lower bounds (each muscle's ``minimum_activation``) are
    computed here too, not in programs of their own.  Returns the result, the external ``loads
    (T, ...)`` resolved at every frame (None without) and τ ``(T, nq)``."""
    tau = torques_of_frames(dynamics_model(model), q, qd, qdd, loads, forces_on)
    resolved = None if loads is None else jax.vmap(lambda L, x: L.resolved(model, x))(loads, q)
    lo = hill_parameters(get_paths(model))["minimum_activation"]
    R = L = None
    if moment_arm_rule == "opensim":  # one lane-folded wrap pass for all frames, not a vmap of it
        R, L = opensim_moment_arms_and_lengths(model, q)
    B = None
    if body_actuators:
        B = jax.vmap(lambda qi: actuator_matrix(model, body_actuators, qi))(q)
    return static_optimization_trajectory(
        model, q, qd, qdd, taus=tau, exponent=exponent, activation_bounds=(lo, 1.0),
        use_muscle_physiology=use_muscle_physiology, solver_options=dict(solver_options) or None,
        moment_arm_rule=moment_arm_rule, moment_arms=R, lengths=L, actuators=B, **reserve_kw), resolved, tau


# --------------------------------------------------------------------------------------------
# OpenSim setup files
# --------------------------------------------------------------------------------------------


def read_reserves(path) -> tuple:
    """The actuators of an OpenSim force-set XML file, in file order: ``CoordinateActuator`` as
    :class:`Reserve`, ``PointActuator`` / ``TorqueActuator`` as :mod:`mbjax.forces.body_actuators`
    ones.  A property an element leaves out takes the value of the file's ``<defaults>`` object of
    the same type, else OpenSim's default; a disabled actuator is left out; any other actuator is
    refused, naming the file and element."""
    from .io.setup_xml import SetupFile

    setup = SetupFile(path)
    doc = setup.doc
    defaults = {el.tag: el for d in doc.root.iter("defaults") for el in d}

    def get(kind, el, tag, default):
        dflt = defaults.get(el.tag)
        if dflt is not None and setup.text(el, tag) is None:
            return kind(dflt, tag, default)
        return kind(el, tag, default)

    def text(el, tag):
        return get(lambda e, t, d: setup.text(e, t) or d, el, tag, None)

    out = []
    for objs in doc.root.iter("objects"):
        for el in objs:
            if not (el.tag.endswith("Actuator") or el.tag.endswith("Muscle")):
                continue
            if get(setup.flag, el, "isDisabled", False) or not get(setup.flag, el, "appliesForce", True):
                continue
            name = el.get("name")
            common = dict(optimal_force=get(setup.number, el, "optimal_force", 1.0),
                          min_control=get(setup.number, el, "min_control", -np.inf),
                          max_control=get(setup.number, el, "max_control", np.inf))
            if el.tag == "CoordinateActuator":
                coord = text(el, "coordinate")
                if coord is None:
                    raise doc.error(el, "CoordinateActuator without <coordinate>")
                out.append(Reserve(name, coord, **common))
            elif el.tag == "PointActuator":
                body = text(el, "body")
                if body is None:
                    raise doc.error(el, "PointActuator without <body>")
                out.append(PointActuator(name, body, get(setup.vector, el, "point", (0.0, 0.0, 0.0)),
                                         get(setup.vector, el, "direction", (1.0, 0.0, 0.0)),
                                         get(setup.flag, el, "point_is_global", False),
                                         get(setup.flag, el, "force_is_global", False), **common))
            elif el.tag == "TorqueActuator":
                body_a = text(el, "bodyA")
                if body_a is None:
                    raise doc.error(el, "TorqueActuator without <bodyA>")
                out.append(TorqueActuator(name, body_a, text(el, "bodyB"),
                                          get(setup.vector, el, "axis", (0.0, 0.0, 1.0)),
                                          get(setup.flag, el, "torque_is_global", True), **common))
            else:
                raise NotImplementedError(f"{doc.where(el)}: <{el.tag} name={name!r}> is not supported as a "
                                          "static-optimization actuator (CoordinateActuator, PointActuator and "
                                          "TorqueActuator are)")
    return tuple(out)


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

    if text(tool, "states_file"):
        raise NotImplementedError(f"{doc.where(tool.find('states_file'))}: a states file is not supported; give "
                                  "<coordinates_file> (as the OpenSim tutorials do)")
    if text(tool, "speeds_file"):
        raise NotImplementedError(f"{doc.where(tool.find('speeds_file'))}: a speeds file is not supported; "
                                  "speeds come from the coordinates' splines")
    on = flag(so, "on", True)
    if not on:
        raise ValueError(f"{doc.where(so)}: the StaticOptimization analysis is switched off (<on> false)")
    t0 = max(number(tool, "initial_time", -np.inf), number(so, "start_time", -np.inf))
    t1 = min(number(tool, "final_time", np.inf), number(so, "end_time", np.inf))
    results = file_of(text(tool, "results_directory")) or base
    return SOSetup(path, tool.get("name") or "static_optimization", file_of(text(tool, "model_file")),
                   file_of(text(tool, "coordinates_file")), file_of(text(tool, "external_loads_file")),
                   tuple(file_of(f) for f in (text(tool, "force_set_files") or "").split()),
                   flag(tool, "replace_force_set", False), (t0, t1),
                   number(tool, "lowpass_cutoff_frequency_for_coordinates", -1.0),
                   number(so, "activation_exponent", 2.0), flag(so, "use_muscle_physiology", True),
                   flag(so, "use_model_force_set", True), number(so, "optimizer_convergence_criterion", 1e-4),
                   results)


def static_optimization_from_setup(path, model=None, *, write: bool = True, results_directory=None,
                                   progress: bool = True, **kwargs) -> SOResult:
    """Run an OpenSim static-optimization setup (``AnalyzeTool`` + ``StaticOptimization``): its model
    (unless ``model`` is given), coordinates, cut-off, time range, exponent, reserve actuators and
    external loads; results written as OpenSim writes them unless ``write=False``.  ``kwargs`` go to
    :func:`static_optimization_motion` (``solver_options``)."""
    from .io.external_loads import read_external_loads
    from .io.osim import load_osim

    setup = read_so_setup(path)
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
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file>")
    reserves = tuple(r for f in setup.force_set_files for r in read_reserves(f))
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = static_optimization_motion(model, read_storage(setup.coordinates_file), loads, reserves=reserves,
                                        lowpass_cutoff=setup.lowpass_cutoff, time_range=setup.time_range,
                                        exponent=setup.activation_exponent,
                                        use_muscle_physiology=setup.use_muscle_physiology, progress=progress,
                                        **kwargs)
    if write:
        out = os.fspath(results_directory) if results_directory is not None else setup.results_directory
        os.makedirs(out, exist_ok=True)
        act, force = result.tables()
        stem = os.path.join(out, f"{setup.name}_StaticOptimization_")
        write_storage(stem + "activation.sto", act, format="storage")
        write_storage(stem + "force.sto", force, format="storage")
    return result
