"""Static optimization (muscle force sharing), OpenSim's ``StaticOptimization`` analysis.

Per frame (q, q̇, q̈) the muscle torques must equal the inverse-dynamics torque
τ = M q̈ + N q̇ - G - Q_ext (DESIGN's M q̈ + N q̇ = G + R F + Q_ext):

    minimize  Σ_i w_i a_i^p + Σ_j |x_j|^p      subject to   R(q) F(a) + diag(F_r) x = τ,
                                                            0 ≤ a ≤ 1  (``activation_bounds``)

with the muscle force of ``StaticOptimizationTarget::prepareToOptimize`` /
``computeAcceleration``: each muscle's actuation is *overridden* to a · F_opt, where

* ``use_muscle_physiology=True`` (OpenSim's default): F_opt = F_o f_L(ℓ) f_V(v) cos α at
  activation 1 with rigid-tendon fibre kinematics, ``Muscle::calcInextensibleTendonActiveFiberForce``
  (Thelen: ℓ = √(h² + (L - ℓ_s)²), v = V cos α, f_V = ``calcfvInv(1, f_L, v)``), whatever the
  muscle's own tendon model.  For a pennated ``Millard2012EquilibriumMuscle`` OpenSim 4.6
  projects the fibre force on the tendon with the pennation angle of the *normalized* fibre
  length read as a length (``calcActiveFiberForceAlongTendon`` calls ``calcPennationAngle(ℓ/ℓ_o)``),
  which is near zero, so its F_opt exceeds the physical F_o f_L f_V cos α by close to 1/cos α.
  ``pennation_rule="opensim"`` (the default) reproduces OpenSim's value; ``"rigid"`` is the
  physical rigid-tendon projection cos α(ℓ).  Thelen muscles are the same in both rules;
* ``use_muscle_physiology=False``: F_opt = F_o (max isometric force).

Because the actuation is overridden, OpenSim applies **no passive fibre force** in static
optimization (``PathActuator::computeForce`` uses the override value alone).  That is the default
here (``passive_forces=False``); ``passive_forces=True`` adds the rigid-tendon passive fibre force
along the tendon, F = a F_opt + F_pas cos α, a formulation that OpenSim does not offer.

Reserve actuators (``reserves``: optimal force per coordinate, OpenSim's ``CoordinateActuator``
``optimal_force``) add parameters x_j with torque F_r,j x_j and cost |x_j|^p, exactly as OpenSim
treats every ``ScalarActuator`` (its objective Σ|x|^p runs over all actuators, unweighted; the
muscle weights w are an addition, 1 by default).  Their bounds are ``reserve_bounds`` (OpenSim's
default min/max control of a CoordinateActuator: ∓∞).  Other actuators (OpenSim's
``PointActuator`` and ``TorqueActuator`` residuals on the pelvis in gait) enter the same way
through ``actuators``: a matrix B (nq, na) whose column k is the generalized force of actuator k
at unit control (its optimal force included, :func:`mbjax.forces.body_actuators.actuator_matrix`),
controls x_a with cost |x_a|^p and ``actuator_bounds``; the constraint becomes
R F(a) + diag(F_r) x + B x_a = τ.

OpenSim constrains accelerations (q̈_target - q̈(x) = 0, i.e. M⁻¹(R F + τ_r - τ) = 0); with M
regular this has the same solution set, so the torque form is used here.  Every coordinate is
constrained (OpenSim skips coordinates that are locked/prescribed by constraints).  OpenSim
solves with IPOPT to ``optimizer_convergence_criterion`` (default 1e-4); here
:func:`mbjax.analysis.sharing.qp.solve` runs an optax augmented Lagrangian and an exact KKT polish to
0.01 √eps.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._model import require_model
from ..._dynamics import inverse_dynamics
from ...muscles.moment_arms import moment_arms
from ...muscles.length_warning import warn_implausible
from ...muscles.paths import get_paths
from . import qp
from ._per_name import by_name, check_bounds_by_name, warn_unusual_muscle_options
from .force_coefficients import _coefficient_inputs, _coefficients, check_frame_lengths
from ... import _checks


class SharingProblem(NamedTuple):
    """The data of one frame: moment arms ``R (nq, nm)``, force per unit activation
    ``f_opt (nm,)`` (N), activation-independent force ``f_passive (nm,)`` (N, zero unless
    ``passive_forces``), the torque to match ``tau (nq,)`` (N·m or N) and, optionally, the
    generalized force per unit control of non-muscle actuators ``actuators (nq, na)``."""

    moment_arms: jnp.ndarray
    f_opt: jnp.ndarray
    f_passive: jnp.ndarray
    tau: jnp.ndarray
    actuators: jnp.ndarray | None = None


class StaticOptimizationResult(NamedTuple):
    """Static-optimization solution (one frame, or stacked over frames by the trajectory call).

    ``activations (nm,)``, tendon ``forces (nm,)`` (N), ``reserve_torques (nq,)`` (zero without
    reserves), ``residual (nq,)`` = R F + τ_r + B x_a - τ (N·m), ``objective`` (Σ w a^p + Σ |x_r|^p
    + Σ |x_a|^p),
    ``converged`` (KKT residual below tolerance), ``iterations`` (optax ALM passes),
    ``polish_iterations`` (KKT Newton steps), ``multipliers`` (equality multipliers of the
    row-scaled problem; pass the result back as ``initial_guess`` to warm-start),
    ``actuator_controls (na,)``: the controls x_a of the problem's ``actuators`` (empty without).
    """

    activations: jnp.ndarray
    forces: jnp.ndarray
    reserve_torques: jnp.ndarray
    residual: jnp.ndarray
    objective: jnp.ndarray
    converged: jnp.ndarray
    iterations: jnp.ndarray
    polish_iterations: jnp.ndarray
    multipliers: jnp.ndarray
    actuator_controls: jnp.ndarray | None = None


# the OpenSim SO tool's program returns it: kept on disk by mbjax.program_store (jax.export)
if hasattr(jax, "export") and hasattr(jax.export, "register_namedtuple_serialization"):
    jax.export.register_namedtuple_serialization(StaticOptimizationResult,
                                                 serialized_name="mbjax.analysis.sharing.StaticOptimizationResult")


def sharing_problem(model, q, qd, qdd, *, tau=None, external=None, use_muscle_physiology=True,
                    passive_forces=False, moment_arm_rule="geometric", R=None, L=None, actuators=None,
                    pennation_rule="opensim") -> SharingProblem:
    """Moment arms, muscle force coefficients and the torque τ to match at one frame; τ defaults to
    ``inverse_dynamics(model, q, qd, qdd, external)``.  ``moment_arm_rule``: ``"geometric"``
    (R = −∂L/∂q, :func:`mbjax.moment_arms`) or ``"opensim"`` (OpenSim's unit-force R,
    :func:`mbjax.muscles.opensim_moment_arms`, which its StaticOptimization uses); ``R``/``L``: the
    moment arms and lengths at ``q`` when already computed (e.g. batched), which the rule then ignores;
    ``actuators (nq, na)``: generalized force per unit control of non-muscle actuators (module docstring);
    ``pennation_rule``: :func:`muscle_force_coefficients`."""
    q, qd, R, L, rules = _coefficient_inputs(model, q, qd, R, L, "sharing_problem")
    nq, paths = model.n_coordinates, get_paths(model)
    mctx = _checks.names_context("muscles", paths.names)
    if moment_arm_rule not in ("geometric", "opensim"):
        raise ValueError(f"moment_arm_rule must be 'geometric' or 'opensim', got {moment_arm_rule!r}")
    if R is None and moment_arm_rule == "opensim":
        from ...muscles.opensim_moment_arms import opensim_moment_arms

        R = opensim_moment_arms(model, q)
    elif R is None:
        R = moment_arms(model, q)
    f_opt, f_pas = _coefficients(model, q, qd, use_muscle_physiology, passive_forces, R, L, pennation_rule)
    if paths.n_muscles:  # a path length far outside a muscle's range (millimetres?) gives a NaN force
        rules.append((~jnp.isfinite(f_opt) | ~jnp.isfinite(f_pas),
                      [f"static optimization: the force per unit activation of muscle {n!r} is NaN or inf: its path "
                       "length (lengths=, or at q) is far outside the muscle's range (millimetres? mbjax takes "
                       "metres)" for n in paths.names]))
    if tau is None:
        tau = inverse_dynamics(model, q, qd, qdd, external)
    else:  # never broadcast: a (1,) torque is not every coordinate's
        ctx = _checks.coordinates_context(model)
        tau = _checks.as_array(tau, "tau", (nq,), ("nq",), ctx)
        rules += [_checks.not_finite(tau, "static optimization: tau", ctx),
                  _checks.not_finite(R, "static optimization: moment_arms", mctx)]
    if actuators is not None:
        actuators = _checks.real_array(actuators, "sharing_problem: actuators must be a real array (nq, na)",
                                       "sharing_problem: actuators must be real").astype(R.dtype)
        if actuators.ndim != 2 or actuators.shape[0] != R.shape[0]:
            raise ValueError(f"sharing_problem: actuators must have shape (nq, na) = ({R.shape[0]}, na), "
                             f"got {actuators.shape}")
        rules.append(_checks.not_finite(actuators, "sharing_problem: actuators"))
    tau = _checks.all_of(jnp.asarray(tau, R.dtype), rules)
    return SharingProblem(R, f_opt, f_pas, tau, actuators)


def _reserve_vector(reserves, nq, dtype):
    """Reserve optimal forces ``(nq,)`` from a scalar or ``(nq,)``: finite and >= 0 (0: none there)."""
    if reserves is None:
        return None
    if isinstance(reserves, dict):
        raise TypeError("reserves by coordinate name need the model: pass them to static_optimization(model, ...) "
                        "or give an array (nq,) in the model's coordinate order")
    fr = _checks.real_array(reserves, "static optimization: reserves must be a number or an array (nq,) of reserve optimal forces (or, "
                            "with static_optimization, a dict {coordinate: optimal force})",
                            "reserves must be real").astype(dtype)
    if fr.shape not in ((), (nq,)):  # never broadcast another length
        raise ValueError(f"reserves must be a scalar or have shape (nq,) = ({nq},), got {fr.shape}")
    fr = _checks.all_of(fr, [(~jnp.isfinite(fr) | (fr < 0),
                              "static optimization: reserves (optimal forces) must be finite and >= 0")])
    return jnp.broadcast_to(fr, (nq,))


def _checked_problem(problem, where: str, stacked: bool) -> SharingProblem:
    """``problem`` if it is a :class:`SharingProblem` of one frame (or, ``stacked``, of ``T`` frames)
    with consistent shapes; ``TypeError``/``ValueError`` naming ``where`` otherwise."""
    if not isinstance(problem, SharingProblem):
        raise TypeError(f"{where}: problem must be a mbjax.analysis.sharing.SharingProblem "
                        f"(from sharing_problem(...)), got {type(problem).__name__}")
    lead = 1 if stacked else 0
    R = jnp.shape(problem.moment_arms)
    if len(R) != 2 + lead:
        raise ValueError(f"{where}: problem.moment_arms must have shape {'(T, nq, nm)' if stacked else '(nq, nm)'}, got "
                         f"{R}" + ("" if stacked else " (a problem stacked over frames goes to solve_trajectory)")
                         + (" (one frame's problem goes to solve_problem)" if stacked and len(R) == 2 else ""))
    nq, nm = R[lead:]
    front = R[:lead]
    want = {"f_opt": front + (nm,), "f_passive": front + (nm,), "tau": front + (nq,)}
    for name, shape in want.items():
        got = tuple(jnp.shape(getattr(problem, name)))
        if got != shape:
            raise ValueError(f"{where}: problem.{name} must have shape {shape} (nq = {nq} coordinates, nm = {nm} "
                             f"muscles, from problem.moment_arms), got {got}")
    if problem.actuators is not None:
        got = tuple(jnp.shape(problem.actuators))
        if len(got) != 2 + lead or got[:lead + 1] != front + (nq,):
            raise ValueError(f"{where}: problem.actuators must have shape {front + (nq,)} + (na,), got {got}")
    return problem


def _qp_data(problem: SharingProblem, weights, reserves, activation_bounds, reserve_bounds,
             actuator_bounds=(-jnp.inf, jnp.inf), extra=()):
    """A, b, lo, hi, w of the parameter vector x = (a, τ_r / F_r, x_a) and the reserve optimal forces;
    ``extra``: more ``(bad, message)`` rules for the one fused check."""
    R, f_opt, f_pas, tau, B = problem
    nq, nm = R.shape
    dtype = R.dtype
    A = R * f_opt[None, :]
    b = tau - R @ f_pas
    if weights is None:
        w = jnp.ones((nm,), dtype)
    else:
        if isinstance(weights, dict):
            raise TypeError("weights by muscle name need the model: pass them to static_optimization(model, ...) "
                            "or give an array (nm,) in the problem's muscle order")
        w = _checks.real_array(weights, "static optimization: weights must be a number or an array (nm,) of muscle weights (or, with "
                               "static_optimization, a dict {muscle: weight})", "weights must be real").astype(dtype)
        if w.shape not in ((), (nm,)):  # never broadcast another length
            raise ValueError(f"weights must be a scalar or have shape (nm,) = ({nm},), got {w.shape}")
        w = jnp.broadcast_to(w, (nm,))
    lo, hi = (jnp.broadcast_to(jnp.asarray(_bound(activation_bounds, k, "activation_bounds", nm), dtype), (nm,))
              for k in (0, 1))
    fr = _reserve_vector(reserves, nq, dtype)
    if fr is not None:
        A = jnp.concatenate([A, jnp.diag(fr)], axis=1)
        w = jnp.concatenate([w, jnp.ones((nq,), dtype)])
        lo = jnp.concatenate([lo, jnp.broadcast_to(jnp.asarray(_bound(reserve_bounds, 0, "reserve_bounds", nq), dtype), (nq,))])
        hi = jnp.concatenate([hi, jnp.broadcast_to(jnp.asarray(_bound(reserve_bounds, 1, "reserve_bounds", nq), dtype), (nq,))])
    if B is not None:
        na = B.shape[1]
        A = jnp.concatenate([A, B.astype(dtype)], axis=1)
        w = jnp.concatenate([w, jnp.ones((na,), dtype)])
        lo = jnp.concatenate([lo, jnp.broadcast_to(jnp.asarray(_bound(actuator_bounds, 0, "actuator_bounds", na), dtype), (na,))])
        hi = jnp.concatenate([hi, jnp.broadcast_to(jnp.asarray(_bound(actuator_bounds, 1, "actuator_bounds", na), dtype), (na,))])
    if not A.shape[-1]:  # no muscles and nothing else: no variable to solve for
        raise ValueError("static optimization: the model has no muscles and no reserves or actuators were given: "
                         "nothing can carry the joint torques (give reserves=, e.g. reserves=100.0, or actuators=)")
    # one fused run-time check: weights finite and > 0, every lower bound at most its upper bound
    b = _checks.all_of(b, [(~jnp.all(jnp.isfinite(w) & (w > 0)),
                            "static optimization: weights must be finite and > 0 (a weight of 0 leaves that muscle's "
                            "activation free, with no single solution; give a small positive weight instead)"),
                           (jnp.any(lo > hi) | jnp.any(jnp.isnan(lo)) | jnp.any(jnp.isnan(hi)),
                            "static optimization: a lower bound (activation_bounds, reserve_bounds or "
                            "actuator_bounds) is above its upper bound or NaN"),
                           (~jnp.all(jnp.isfinite(A)) | ~jnp.all(jnp.isfinite(b)),
                            "static optimization: the problem (moment_arms, f_opt, f_passive, tau or actuators) "
                            "contains NaN or inf"), *extra])
    return A, b, lo, hi, w, fr


def _bound(bounds, k: int, name: str, n: int):
    """``bounds[k]`` (a scalar or ``(n,)``), refusing anything that is not a (lower, upper) pair."""
    if isinstance(bounds, (dict, str)):
        raise TypeError(f"{name} must be a (lower, upper) pair (each a number or an array ({n},)), got "
                        f"{type(bounds).__name__}: {bounds!r}")
    try:
        lower_upper = tuple(bounds)
    except TypeError:
        raise ValueError(f"{name} must be a (lower, upper) pair, got {bounds!r}") from None
    if len(lower_upper) != 2:
        raise ValueError(f"{name} must be a (lower, upper) pair, got {len(lower_upper)} values")
    x = _checks.real_array(lower_upper[k], f"{name}[{k}] must be a number or an array ({n},)", f"{name}[{k}] must be real")
    if x.shape not in ((), (n,)):
        raise ValueError(f"{name}[{k}] must be a scalar or have shape ({n},), got {x.shape}")
    return x


def _solver_options(options) -> dict:
    """``options`` as keyword arguments of :func:`mbjax.analysis.sharing.qp.solve`, unknown names refused."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"solver_options must be a dict of qp.solve options, got {type(options).__name__}")
    allowed = [n for n, prm in inspect.signature(qp.solve).parameters.items() if prm.kind == prm.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"solver_options: unknown option(s) {unknown}; "
                         f"mbjax.analysis.sharing.qp.solve takes {allowed}")
    for name, value in options.items():
        _check_option(name, value)
    return dict(options)


#: qp.solve's options: counts (integers), positive numbers, a flag
_COUNTS, _POSITIVE = ("inner", "max_outer", "max_polish", "first_outer"), ("rho", "alm_tol", "tol")


def _check_option(name: str, value) -> None:
    """Refuse a solver option of the wrong kind or sign, naming it (a negative tolerance would read as
    an unconverged, infeasible-looking frame)."""
    if isinstance(value, jax.core.Tracer) or (name == "tol" and value is None):
        return
    if name == "polish":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"solver_options: polish must be True or False, got {value!r}")
        return
    number = not isinstance(value, (bool, np.bool_, str)) and np.ndim(value) == 0 \
        and np.asarray(value).dtype.kind in "iuf"
    least = 0 if name == "first_outer" else 1  # first_outer=0: straight to the polish
    if name in _COUNTS and not (number and float(value).is_integer() and value >= least):
        raise ValueError(f"solver_options: {name} must be an integer >= {least} (a count of solver passes), "
                         f"got {value!r}")
    if name in _POSITIVE and not (number and np.isfinite(value) and value > 0):
        raise ValueError(f"solver_options: {name} must be a finite number > 0, got {value!r}"
                         + (" (None: the default tolerance)" if name == "tol" else ""))


def _n_actuators(problem: SharingProblem) -> int:
    return 0 if problem.actuators is None else problem.actuators.shape[-1]


def solve_problem(problem: SharingProblem, *, exponent=2, weights=None, reserves=None, activation_bounds=(0.0, 1.0),
                  reserve_bounds=(-jnp.inf, jnp.inf), actuator_bounds=(-jnp.inf, jnp.inf), initial_guess=None,
                  solver_options=None) -> StaticOptimizationResult:
    """Solve one frame's :class:`SharingProblem` (see :func:`static_optimization`)."""
    R, f_opt, f_pas, tau, B = _checked_problem(problem, "solve_problem", stacked=False)
    nq, nm = R.shape
    na = _n_actuators(problem)
    nr = 0 if reserves is None else nq
    dtype = R.dtype
    guess_rules = []
    if initial_guess is not None and not isinstance(initial_guess, StaticOptimizationResult):
        initial_guess = _checks.real_array(initial_guess, "solve_problem: initial_guess must be activations (nm,) or a "
                                           "StaticOptimizationResult", "solve_problem: initial_guess must be real")
        guess_rules.append(_checks.not_finite(initial_guess, "solve_problem: initial_guess"))
    A, b, lo, hi, w, fr = _qp_data(problem, weights, reserves, activation_bounds, reserve_bounds, actuator_bounds,
                                   guess_rules)
    x0 = lam0 = None
    if initial_guess is not None:
        if isinstance(initial_guess, StaticOptimizationResult):
            if jnp.shape(initial_guess.activations) != (nm,):
                raise ValueError(f"solve_problem: initial_guess (a previous result) has activations of shape "
                                 f"{jnp.shape(initial_guess.activations)}, this problem has nm = {nm} muscles")
            parts = [initial_guess.activations]
            if fr is not None:
                parts.append(initial_guess.reserve_torques / jnp.where(fr == 0, 1.0, fr))
            if na:
                parts.append(initial_guess.actuator_controls)
            x0 = jnp.concatenate(parts)
            lam0 = initial_guess.multipliers
        else:
            x0 = jnp.asarray(initial_guess, dtype)
            if x0.shape not in ((nm,), (nm + nr + na,)):
                raise ValueError(f"initial_guess must have shape (nm,) = ({nm},) (activations) or ({nm + nr + na},) "
                                 f"(activations, reserves, actuators), got {x0.shape}")
            if x0.shape[0] == nm and nr + na:
                x0 = jnp.concatenate([x0, jnp.zeros((nr + na,), dtype)])
    sol = qp.solve(A, b, lo, hi, w, exponent, x0, lam0, **_solver_options(solver_options))
    a = sol.x[:nm]
    forces = a * f_opt + f_pas
    tau_r = sol.x[nm:nm + nr] * fr if fr is not None else jnp.zeros((nq,), dtype)
    x_a = sol.x[nm + nr:]
    residual = R @ forces + tau_r - tau
    if na:
        residual = residual + B @ x_a
    return StaticOptimizationResult(a, forces, tau_r, residual, sol.objective, sol.converged, sol.alm_iterations,
                                    sol.polish_iterations, sol.lam, x_a)


def _named_options(model, weights, reserves, activation_bounds, reserve_bounds, where: str):
    """``weights``/``reserves`` given by name as arrays in model order; concrete bounds checked by name."""
    require_model(model, where)
    muscles, coords = get_paths(model).names, model.coordinate_names
    weights = by_name(weights, muscles, "weights", "muscles", where, 1.0)
    reserves = by_name(reserves, coords, "reserves", "coordinates", where, 0.0)
    check_bounds_by_name(activation_bounds, muscles, "activation_bounds", "muscles", where)
    warn_unusual_muscle_options(weights, activation_bounds, muscles, where)
    if reserves is not None:
        check_bounds_by_name(reserve_bounds, coords, "reserve_bounds", "coordinates", where)
    return weights, reserves


def static_optimization(model, q, qd, qdd, *, tau=None, external=None, exponent=2, weights=None, reserves=None,
                        activation_bounds=(0.0, 1.0), reserve_bounds=(-jnp.inf, jnp.inf), use_muscle_physiology=True,
                        passive_forces=False, initial_guess=None, solver_options=None, actuators=None,
                        actuator_bounds=(-jnp.inf, jnp.inf), pennation_rule="opensim") -> StaticOptimizationResult:
    """Static optimization at one frame (OpenSim's ``StaticOptimization``, module docstring).

    Minimizes Σ w_i a_i^p (+ Σ |τ_r,j / F_r,j|^p with reserves) subject to R F(a) + τ_r = τ and
    ``activation_bounds``.  ``tau`` overrides the inverse-dynamics torque; ``external`` is a
    generalized force Q_ext subtracted from it; ``weights`` (nm,) weigh the muscle terms (or a dict
    ``{muscle: weight}``, the rest 1); ``reserves`` is a scalar or ``(nq,)`` of reserve optimal forces
    (0 = none on that coordinate), or a dict ``{coordinate: optimal force}`` (the rest 0);
    ``actuators (nq, na)`` adds other actuators by their generalized force per unit control (module
    docstring) with ``actuator_bounds`` on their controls;
    ``initial_guess`` is activations ``(nm,)`` or a previous result (warm start);
    ``solver_options`` go to :func:`mbjax.analysis.sharing.qp.solve` (``rho``, ``inner``, ``max_outer``,
    ``tol``, ...).  Pure and vmappable; differentiable in the model's parameters (implicit
    derivatives at the optimum).  Infeasible frames are not raised here: check ``residual`` /
    ``converged`` or use :func:`mbjax.analysis.sharing.infeasibility_report`.
    """
    weights, reserves = _named_options(model, weights, reserves, activation_bounds, reserve_bounds,
                                       "static_optimization")
    qp.check_exponent(exponent)  # up front: a bad option is refused before any muscle is computed
    _solver_options(solver_options)
    problem = sharing_problem(model, q, qd, qdd, tau=tau, external=external,
                              use_muscle_physiology=use_muscle_physiology, passive_forces=passive_forces,
                              actuators=actuators, pennation_rule=pennation_rule)
    return solve_problem(problem, exponent=exponent, weights=weights, reserves=reserves,
                         activation_bounds=activation_bounds, reserve_bounds=reserve_bounds,
                         actuator_bounds=actuator_bounds, initial_guess=initial_guess, solver_options=solver_options)


def static_optimization_trajectory(model, qs, qds, qdds, *, taus=None, externals=None, warm_start=True,
                                   initial_guess=None, exponent=2, weights=None, reserves=None,
                                   activation_bounds=(0.0, 1.0), reserve_bounds=(-jnp.inf, jnp.inf),
                                   use_muscle_physiology=True, passive_forces=False, solver_options=None,
                                   moment_arm_rule="geometric", moment_arms=None, lengths=None, actuators=None,
                                   actuator_bounds=(-jnp.inf, jnp.inf), pennation_rule="opensim"
                                   ) -> StaticOptimizationResult:
    """Static optimization of ``T`` frames (``qs, qds, qdds`` of shape ``(T, nq)``); every field of
    the result gets a leading ``T`` axis.

    The per-frame problems are built with ``vmap``.  ``warm_start=True`` solves them in order with
    ``lax.scan``, each frame starting from the previous solution (and its multipliers);
    ``warm_start=False`` solves all frames at once with ``vmap`` from ``initial_guess``
    (``(nm,)`` or ``(T, nm)`` activations, a least-norm start when None).  ``moment_arm_rule``: see
    :func:`sharing_problem`; ``moment_arms (T, nq, nm)`` and ``lengths (T, nm)``: precomputed per
    frame (e.g. :func:`mbjax.muscles.opensim_moment_arms_and_lengths`, one wrap pass for all frames);
    ``actuators (T, nq, na)``: other actuators' generalized force per unit control per frame.
    """
    require_model(model, "static_optimization_trajectory")
    weights, reserves = _named_options(model, weights, reserves, activation_bounds, reserve_bounds,
                                       "static_optimization_trajectory")
    check_frame_lengths(lengths, get_paths(model).names, "static_optimization_trajectory")
    if lengths is not None:
        warn_implausible(get_paths(model), "static_optimization_trajectory: lengths", length=lengths, stacklevel=3,
                         slack=False)
    qp.check_exponent(exponent)
    _solver_options(solver_options)
    qs = jnp.asarray(qs)
    nq = model.n_coordinates
    shapes = [jnp.shape(x) for x in (qs, qds, qdds)]
    if any(len(sh) != 2 or sh[1] != nq or sh[0] != shapes[0][0] for sh in shapes):
        raise ValueError(f"qs, qds, qdds must have the same shape (T, nq) = (T, {nq}), got "
                         f"{', '.join(str(tuple(sh)) for sh in shapes)}")
    T, nm = shapes[0][0], get_paths(model).n_muscles
    if T == 0:
        raise ValueError("static_optimization_trajectory: no frames (qs has shape (0, nq))")
    for name, x, shape in (("taus", taus, (T, nq)),
                           ("moment_arms", moment_arms, (T, nq, nm)), ("lengths", lengths, (T, nm))):
        if x is not None and tuple(jnp.shape(x)) != shape:
            raise ValueError(f"static_optimization_trajectory: {name} must have shape {shape} (T frames, "
                             f"nq = {nq} coordinates, nm = {nm} muscles), got {tuple(jnp.shape(x))}")
    if initial_guess is not None and not isinstance(initial_guess, StaticOptimizationResult) \
            and tuple(jnp.shape(initial_guess)) not in ((nm,), (T, nm)):
        raise ValueError(f"static_optimization_trajectory: initial_guess must have shape (nm,) = ({nm},) or "
                         f"(T, nm) = ({T}, {nm}), got {tuple(jnp.shape(initial_guess))}")

    solve = dict(warm_start=warm_start, initial_guess=initial_guess, exponent=exponent, weights=weights,
                 reserves=reserves, activation_bounds=activation_bounds, reserve_bounds=reserve_bounds,
                 actuator_bounds=actuator_bounds, solver_options=solver_options)
    problem = dict(use_muscle_physiology=use_muscle_physiology, passive_forces=passive_forces,
                   moment_arm_rule=moment_arm_rule, pennation_rule=pennation_rule)
    arrays = (qs, jnp.asarray(qds, qs.dtype), jnp.asarray(qdds, qs.dtype), taus, externals, moment_arms, lengths, actuators)
    return _trajectory(model, arrays, problem, solve)


@eqx.filter_jit
def _trajectory(model, arrays, problem, solve):
    """:func:`static_optimization_trajectory` of checked inputs, one program per model structure, shapes and
    options (an eager call compiles once; its ``vmap`` and ``scan`` run eagerly were traced at every call)."""

    def build(q, qd, qdd, tau, ext, R, L, B):
        return sharing_problem(model, q, qd, qdd, tau=tau, external=ext, R=R, L=L, actuators=B, **problem)

    in_axes = (0, 0, 0) + tuple(None if x is None else 0 for x in arrays[3:])
    return solve_trajectory(jax.vmap(build, in_axes=in_axes)(*arrays), **solve)


def solve_trajectory(problems: SharingProblem, *, warm_start=True, initial_guess=None, **kw) -> StaticOptimizationResult:
    """Solve stacked per-frame problems (leading axis ``T``): ``lax.scan`` with warm starts, or
    ``vmap`` (see :func:`static_optimization_trajectory`; ``kw`` as in :func:`solve_problem`)."""
    _checked_problem(problems, "solve_trajectory", stacked=True)
    if not isinstance(warm_start, (bool, np.bool_)):
        raise TypeError(f"solve_trajectory: warm_start must be True or False, got {warm_start!r}")
    T, nm = problems.f_opt.shape
    if T == 0:
        raise ValueError("solve_trajectory: no frames (the problems' leading axis T is 0)")
    if initial_guess is not None:
        if isinstance(initial_guess, StaticOptimizationResult):
            raise TypeError("solve_trajectory: initial_guess must be activations (nm,)"
                            + ("" if warm_start else " or (T, nm)") + ", not a StaticOptimizationResult")
        initial_guess = _checks.real_array(initial_guess, "solve_trajectory: initial_guess must be an array of activations",
                                           "solve_trajectory: initial_guess must be real")
        shapes = ((nm,),) if warm_start else ((nm,), (T, nm))
        if initial_guess.shape not in shapes:
            raise ValueError(f"solve_trajectory: initial_guess must have shape (nm,) = ({nm},)"
                             + ("" if warm_start else f" or (T, nm) = ({T}, {nm})")
                             + f", got {initial_guess.shape}" + (" (one guess per frame needs warm_start=False)"
                                                                 if warm_start and initial_guess.ndim == 2 else ""))
        initial_guess = _checks.all_of(initial_guess, [_checks.not_finite(initial_guess, "solve_trajectory: initial_guess")])
    if not warm_start:
        if initial_guess is None:
            return jax.vmap(lambda pr: solve_problem(pr, **kw))(problems)
        guess = jnp.broadcast_to(jnp.asarray(initial_guess, problems.f_opt.dtype), (T, nm))
        return jax.vmap(lambda pr, g: solve_problem(pr, initial_guess=g, **kw))(problems, guess)

    # warm start: the carry is the previous frame's result; before frame 0 it holds the guess
    # (default: frame 0's least-norm point A⁺b, as a cold start would use), λ = 0
    first = jax.tree_util.tree_map(lambda x: x[0], problems)
    nq = problems.tau.shape[-1]
    na = _n_actuators(problems)
    dtype = problems.tau.dtype
    A, b, _, _, _, fr = _qp_data(first, kw.get("weights"), kw.get("reserves"), (0.0, 1.0), (-jnp.inf, jnp.inf))
    nr = 0 if fr is None else nq
    x0 = qp.least_norm_start(A, b) if initial_guess is None else jnp.asarray(initial_guess, dtype)
    if x0.shape[0] == nm and nr + na:
        x0 = jnp.concatenate([x0, jnp.zeros((nr + na,), dtype)])
    zq = jnp.zeros((nq,), dtype)
    carry0 = StaticOptimizationResult(x0[:nm], jnp.zeros((nm,), dtype), zq if fr is None else x0[nm:nm + nr] * fr,
                                      zq, jnp.zeros((), dtype), jnp.zeros((), bool), jnp.zeros((), jnp.int32),
                                      jnp.zeros((), jnp.int32), zq, x0[nm + nr:])

    def step(prev, pr):
        r = solve_problem(pr, initial_guess=prev, **kw)
        return r, r

    _, rs = jax.lax.scan(step, carry0, problems)
    return rs
