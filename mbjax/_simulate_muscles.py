"""Muscle-driven forward simulation: M q̈ + N q̇ = G + R F(q, q̇, a, ℓ) + Q with muscle states.

The state is :class:`MuscleSimState` ``(q, q̇, a, ℓ)``, a the activations and ℓ the fibre lengths
``(nm,)``, as OpenSim's ``Manager`` integrates a model of ``Thelen2003Muscle`` /
``Millard2012EquilibriumMuscle`` actuators:

* ȧ = first-order activation dynamics of the excitation u(t) (``excitations``), ℓ̇ = the fibre
  velocity OpenSim's ``calcFiberVelocityInfo`` infers from the force equilibrium at ℓ
  (:mod:`mbjax.muscles.fiber_dynamics`; the flags ``ignore_activation_dynamics`` and
  ``ignore_tendon_compliance`` freeze the corresponding slot: a = u, rigid tendon);
* q̈ from :func:`mbjax.forward_dynamics` with the generalized muscle forces R F, R = -∂L/∂q and
  F the tendon forces, plus the optional ``forces(t, q, q̇)`` (external Q).

Initial fibre lengths default to OpenSim's ``equilibrateMuscles``: the compliant-tendon
equilibrium of :func:`mbjax.equilibrium_fiber_length` at (q0, q̇0, a0) (:func:`initial_fiber_lengths`:
a ``Schutte1993Muscle_Deprecated``'s is OpenSim's own stopped iteration; Thelen and Millard ones are
solved to rounding, where OpenSim stops at a force error of 1e-8 F_o, so its initial ℓ differs by
that over the stiffness).

Compile once, as :func:`mbjax.simulate`: the solve is one ``eqx.filter_jit`` whose arrays are
dynamic (states, times, tolerances, the model's parameters, an ``eqx.Module`` excitation such as
:class:`~mbjax.ConstantExcitation` with new values).  The vector field is traced with mbjax's
run-time value checks off (a rejected trial step of diffrax may be non-finite).

Bad input is refused before anything is solved: shapes when traced (never broadcast: an
excitation signal must return ``(nm,)``, ``forces`` ``(nq,)``), the initial state and u(t0) in one
fused run-time check (finite, activations and excitations in [0, 1], fibre lengths >= 0).
:func:`muscle_vector_field` checks its state and excitations the same way.

Gradients through the solve: wrapped paths over multi-wrap cylinders take their moment arms by
forward mode through a ``while_loop``, so reverse mode (the default adjoint) fails on such models
(arm26); use ``adjoint=diffrax.ForwardMode()`` there.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._checks import checks
from ._dynamics import _forward_dynamics
from ._excitations import warn_knots_outside
from ._model import Model, require_model
from ._simulate import (_as_saveat, _check_interval, _check_options, _checked_end_time, _checked_saveat, _generalized,
                        _initial_state, _is_max_steps, _is_traced, _magnitude, _max_steps_error, _same_model,
                        _warn_fine_tolerances)
from .muscles.fiber_dynamics import effective_activation, lengths_speeds_rule, muscle_derivatives, tendon_kinds
from .muscles.musculotendon import equilibrium_fiber_length
from .muscles.parameter_rules import parameter_rules
from .muscles.parameters import hill_parameters
from .muscles.path_set import get_paths
from .muscles.paths import path_point_rules, wrap_dimension_rules
from .muscles.schutte1993 import EQUILIBRIA
from .muscles.pose_warning import warns_for_pose

#: OpenSim's ``ActivationFiberLengthMuscle::default_activation``
DEFAULT_ACTIVATION = 0.05


class MuscleSimState(NamedTuple):
    """State of a muscle-driven simulation: ``q, qd`` ``(nq,)``, ``activation, fiber_length`` ``(nm,)``."""

    q: jnp.ndarray
    qd: jnp.ndarray
    activation: jnp.ndarray
    fiber_length: jnp.ndarray


class MuscleDrivenField(eqx.Module):
    """The diffrax vector field ``(t, MuscleSimState, model) -> MuscleSimState`` of the time derivatives.

    ``excitations(t)`` gives u ``(nm,)``; ``forces(t, q, q̇)`` optional extra generalized forces.
    """

    excitations: Callable
    forces: Callable | None = None
    tendons: str = eqx.field(static=True, default="both")
    moment_arms: str = eqx.field(static=True, default="geometric")

    def __call__(self, t, y, model):
        q, qd, a, lce = y
        u = jnp.asarray(_excitation_shape(self.excitations(t), a.shape[0], model), a.dtype)
        with checks(False):
            d = muscle_derivatives(model, q, qd, a, lce, u, self.tendons, self.moment_arms)
            tau = d.generalized_forces.astype(q.dtype)
            if self.forces is not None:
                tau = tau + _generalized(self.forces(t, q, qd), "forces", q, model, "simulate_muscles")
            qdd = _forward_dynamics(model, q, qd, tau)
        # each derivative in its state's dtype (a float32 state with a float64 model stays float32)
        return MuscleSimState(qd, qdd.astype(qd.dtype), d.activation_rate.astype(a.dtype),
                              d.fiber_length_rate.astype(lce.dtype))


def _excitation_problems(excitations, t0, t1, samples: int = 201) -> list:
    """``[text]`` naming the first of ``samples`` times in [t0, t1] where the excitations are NaN or inf
    (only u(t0) is checked before the solve; a NaN later makes every step fail), else ``[]``."""
    try:
        for t in np.linspace(float(t0), float(t1), samples):
            u = np.asarray(excitations(t), dtype=float)
            if not np.all(np.isfinite(u)):
                return [f"excitations(t) hold NaN or inf at t = {t:.6g} s (entries {np.flatnonzero(~np.isfinite(u)).tolist()})"]
    except Exception:
        return []
    return []


def _muscle_names(model):
    return tuple(model.muscles.names) if model.muscles is not None else ()


def _excitation_shape(u, nm: int, model, who: str = "simulate_muscles", what: str = "excitations(t)"):
    """u(t) refused (trace time) unless it is a real ``(nm,)`` array: nothing is broadcast."""
    ctx = _checks.names_context("muscles", _muscle_names(model))
    arr = _checks.real_array(u, f"{who}: {what} must be an array of shape (nm,) = ({nm},){ctx}",
                             f"{who}: {what} must be real")
    if arr.shape != (nm,):
        raise ValueError(f"{who}: {what} must have shape (nm,) = ({nm},){ctx}, got {arr.shape} "
                         "(nothing is broadcast: give one excitation per muscle)")
    return arr


class _Given(eqx.Module):
    """u(t) = ``u``: an array given as excitations (its values are checked at run time, by the caller)."""

    u: jnp.ndarray

    def __call__(self, t):
        return self.u


def _as_excitations(excitations, nm: int, model, dtype, who: str):
    """A callable excitation signal; an array is taken as constant excitations (shape checked first)."""
    if callable(excitations):
        return excitations
    try:
        arr = jnp.asarray(excitations) if dtype is None else jnp.asarray(excitations, dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{who}: excitations must be a callable t -> (nm,) or an array (nm,), "
                        f"got {type(excitations).__name__}: {excitations!r}") from None
    return _Given(_excitation_shape(arr, nm, model, who, "excitations"))


def _real_state(x, name: str, nm: int, dtype):
    """``x`` as an array of ``dtype``, refusing what is not real numbers (the shape is checked by the caller)."""
    try:
        arr = jnp.asarray(x)
    except (TypeError, ValueError):
        arr = None
    if arr is None or not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"simulate_muscles: {name} must be a real array of shape (nm,) = ({nm},), got {x!r}")
    return arr.astype(dtype)


@warns_for_pose
def initial_fiber_lengths(model: Model, q, qd, activation, excitation=None, moment_arms: str = "geometric",
                          equilibrium: str = "opensim"):
    """OpenSim's ``equilibrateMuscles``: equilibrium fibre lengths ``(nm,)`` at (q, q̇, a) (the
    excitation stands for the activation where ``ignore_activation_dynamics``); ``moment_arms``
    picks the path speed as in :func:`simulate_muscles`.

    ``equilibrium``: ``"opensim"`` (default) gives the fibre lengths OpenSim's ``equilibrateMuscles``
    leaves in the state: for a ``Schutte1993Muscle_Deprecated``, where OpenSim's
    ``computeIsometricForce`` iteration stops (a force error of up to 0.01 N), not the exact root;
    ``"exact"`` solves that equilibrium to machine precision.  Thelen and Millard equilibria are
    solved to rounding either way (OpenSim stops at 1e-8 F_o; the two differ within that
    tolerance over the stiffness).  See :func:`mbjax.muscle_forces`."""
    require_model(model, "initial_fiber_lengths")
    if not isinstance(equilibrium, str) or equilibrium not in EQUILIBRIA:
        raise ValueError(f"initial_fiber_lengths: equilibrium must be one of {EQUILIBRIA}, got {equilibrium!r}")
    rule = lengths_speeds_rule(moment_arms)
    ctx = _checks.coordinates_context(model)
    names = model.muscles.names if model.muscles is not None else ()
    mctx = _checks.names_context("muscles", names)
    q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)
    qd = _checks.as_array(qd, "qd", (model.n_coordinates,), ("nq",), ctx)
    activation = _checks.as_array(activation, "activation", (len(names),), ("nm",), mctx)
    rules = [_checks.not_finite(q, "initial_fiber_lengths: q", ctx),
             _checks.not_finite(qd, "initial_fiber_lengths: qd", ctx),
             _checks.not_finite(activation, "initial_fiber_lengths: activation", mctx),
             _checks.in_unit_interval(activation, "initial_fiber_lengths: activation", names, mctx),
             *path_point_rules(model, "initial_fiber_lengths"),
             *wrap_dimension_rules(model, "initial_fiber_lengths"),
             *parameter_rules(get_paths(model), "initial_fiber_lengths")]
    if excitation is not None:
        excitation = _checks.as_array(excitation, "excitation", (len(names),), ("nm",), mctx)
        rules += [_checks.not_finite(excitation, "initial_fiber_lengths: excitation", mctx),
                  _checks.in_unit_interval(excitation, "initial_fiber_lengths: excitation", names, mctx)]
    q = _checks.all_of(q, rules)
    with checks(False):
        L, V, _ = rule(model, q, qd)
        a = activation if excitation is None else effective_activation(model, activation, excitation)
        return equilibrium_fiber_length(model, L, V, a, equilibrium).astype(jnp.asarray(q).dtype)


@eqx.filter_jit
def _equilibrate(excitations, t0, model, q0, qd0, a0, moment_arms="geometric"):
    """:func:`initial_fiber_lengths` compiled on its own (not inside every solve); the excitations at t0
    checked first, named as ``simulate_muscles``' argument."""
    names = _muscle_names(model)
    mctx = _checks.names_context("muscles", names)
    u0 = jnp.asarray(excitations(t0), a0.dtype)
    u0 = _checks.all_of(u0, [_checks.not_finite(u0, "simulate_muscles: excitations(t0)", mctx),
                             _checks.in_unit_interval(u0, "simulate_muscles: excitations(t0)", names, mctx)])
    return initial_fiber_lengths(model, q0, qd0, a0, u0, moment_arms)


def _check_activation0(model, a0):
    """``activation0`` outside [0, 1] (concrete values) refused naming the argument and the muscle."""
    try:
        a = np.asarray(a0, float)
    except Exception:  # noqa: BLE001  (a tracer: checked in the traced program)
        return
    names = _muscle_names(model)
    nan = np.flatnonzero(~np.isfinite(a))
    if nan.size:
        raise ValueError(f"simulate_muscles: initial activation is not finite: activation0 of muscle "
                         f"{names[nan[0]]!r} is {float(a[nan[0]])!r}")
    bad = np.flatnonzero(~((a >= 0) & (a <= 1)))
    if bad.size:
        raise ValueError(f"simulate_muscles: activation0 must be in [0, 1]; muscle {names[bad[0]]!r} has {float(a[bad[0]])!r}"
                         + (f" ({bad.size} muscles outside)" if bad.size > 1 else ""))


def _integrate_muscles(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, adjoint,
                       max_steps, throw):
    """Traced body of :func:`simulate_muscles` (one trace per static configuration)."""
    t1 = _checked_end_time(t0, t1, "simulate_muscles")
    q0, qd0, a0, l0 = y0
    mctx = _checks.names_context("muscles", _muscle_names(model))
    u0 = jnp.asarray(field.excitations(t0))
    y0 = y0._replace(q=_checks.all_of(q0, [
        *((~jnp.isfinite(x), f"simulate_muscles: initial {n} is not finite") for x, n in zip(y0, MuscleSimState._fields)),
        _checks.in_unit_interval(a0, "simulate_muscles: activation0", _muscle_names(model), mctx),
        (l0 < 0, f"simulate_muscles: fiber_length0 must be >= 0 (m){mctx}"),
        _checks.not_finite(u0, "simulate_muscles: excitations(t0)", mctx),
        _checks.in_unit_interval(u0, "simulate_muscles: excitations(t0)", _muscle_names(model), mctx)]))
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        solver,
        t0=t0,
        t1=t1,
        dt0=dt0,
        y0=y0,
        args=model,
        saveat=_checked_saveat(saveat, t0, t1),
        stepsize_controller=stepsize_controller,
        adjoint=adjoint,
        max_steps=max_steps,
        throw=throw,
    )


@eqx.filter_jit
def _solve_muscles(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, adjoint,
                   max_steps, throw):
    # looked up at trace time, so a test can wrap it to count traces
    return _integrate_muscles(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller,
                              adjoint, max_steps, throw)


def simulate_muscles(
    model: Model,
    q0,
    qd0,
    t0,
    t1,
    *,
    excitations,
    activation0=None,
    fiber_length0=None,
    saveat=None,
    solver=None,
    forces: Callable | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    dt0: float | None = 1e-4,
    max_steps: int | None = 100_000,
    adjoint=None,
    stepsize_controller=None,
    throw: bool = True,
    moment_arms: str = "geometric",
) -> diffrax.Solution:
    """Integrate a muscle-driven model from (q0, q̇0, a0, ℓ0) at ``t0`` to ``t1 >= t0``.

    ``excitations``: u(t) ``(nm,)``, a callable or an ``eqx.Module`` (:class:`~mbjax.ConstantExcitation`,
    :class:`~mbjax.PiecewiseLinearExcitation`); an array is taken as constant excitations.  A
    ``PathActuator``'s excitation is its control (tension u · optimal_force, no states).
    ``activation0`` ``(nm,)`` defaults to the file's ``default_activation`` (else OpenSim's 0.05);
    ``fiber_length0`` ``(nm,)`` defaults to the equilibrium (OpenSim's ``equilibrateMuscles``).
    ``moment_arms``: ``"geometric"`` (default: R = -∂L/∂q, the muscles as a Lagrangian system) or
    ``"opensim"`` (the unit-force moment arms and path speed OpenSim's own forward dynamics uses;
    equal except over wrap surfaces with inexact tangent points, see
    :func:`mbjax.muscles.fiber_dynamics.lengths_speeds_opensim_moment_arms`).
    Returns the ``diffrax.Solution``; ``sol.ys`` is a :class:`MuscleSimState` with a leading time
    axis.  ``saveat``, ``solver`` (default ``diffrax.Tsit5()``), ``rtol``/``atol``, ``dt0``,
    ``stepsize_controller``, ``adjoint``, ``max_steps`` and ``throw`` as in :func:`mbjax.simulate`,
    except that ``dt0`` defaults to 1e-4 s: diffrax's automatic first step would trace the (large)
    vector field twice more into the compiled program.
    """
    q0, qd0 = _initial_state(model, q0, qd0, "simulate_muscles")
    dtype = q0.dtype
    nm = len(model.muscle_names)
    if nm == 0:
        raise ValueError("simulate_muscles: the model has no muscles; use mbjax.simulate")
    if activation0 is None:
        p = hill_parameters(model)
        activation0 = p.get("default_activation", jnp.full((nm,), DEFAULT_ACTIVATION, dtype))
        activation0 = jnp.where(jnp.isnan(activation0), DEFAULT_ACTIVATION, activation0)
    a0 = _real_state(activation0, "activation0", nm, dtype)
    equilibrate = fiber_length0 is None
    l0 = jnp.zeros((nm,), dtype) if equilibrate else _real_state(fiber_length0, "fiber_length0", nm, dtype)  # placeholder
    if a0.shape != (nm,) or l0.shape != (nm,):
        raise ValueError(f"activation0 and fiber_length0 must have shape ({nm},) (nm,), got {a0.shape} and {l0.shape}")
    if not equilibrate:
        _check_fiber_lengths(model, l0)
    if equilibrate:  # before the equilibrium below reads it (given fibre lengths: checked in the program)
        _check_activation0(model, a0)
    excitations = _as_excitations(excitations, nm, model, dtype, "simulate_muscles")
    if forces is not None and not callable(forces):
        raise TypeError(f"simulate_muscles: forces must be a callable (t, q, qd) -> (nq,), got {type(forces).__name__}")
    if forces is not None:
        _same_model(forces, "forces", model, "simulate_muscles")
    _check_interval(t0, t1, "simulate_muscles")
    warn_knots_outside(excitations, t0, t1, "simulate_muscles")
    max_steps = _check_options(dt0, rtol, atol, max_steps, solver, "simulate_muscles",
                               tolerances=stepsize_controller is None)
    t0 = jnp.asarray(t0, dtype=dtype)
    t1 = jnp.asarray(t1, dtype=dtype)
    if dt0 is not None:
        dt0 = jnp.asarray(dt0, dtype=dtype)
    lengths_speeds_rule(moment_arms)  # a bad rule name fails here, before anything compiles
    if equilibrate:
        l0 = _equilibrate(excitations, t0, model, q0, qd0, a0, moment_arms)
    if solver is None:
        solver = diffrax.Tsit5()
    saveat = _as_saveat(saveat, t0, t1, dtype)
    custom_controller = stepsize_controller is not None
    if stepsize_controller is None:
        stepsize_controller = diffrax.PIDController(rtol=jnp.asarray(rtol, dtype=dtype), atol=jnp.asarray(atol, dtype=dtype))
    if adjoint is None:
        adjoint = diffrax.RecursiveCheckpointAdjoint()
    field = MuscleDrivenField(excitations, forces, tendon_kinds(model), moment_arms)
    if not custom_controller:
        _warn_fine_tolerances(rtol, atol, dtype, "simulate_muscles")
    try:
        return _solve_muscles(field, solver, t0, t1, dt0, MuscleSimState(q0, qd0, a0, l0), model, saveat,
                              stepsize_controller, adjoint, max_steps, throw)
    except eqx.EquinoxRuntimeError as err:
        if not _is_max_steps(err) or any(_is_traced(x) for x in (t0, t1, q0, qd0, a0, l0)):
            raise
        inputs = _excitation_problems(excitations, t0, t1) + _magnitude("forces", forces, t0, q0, qd0) + [
            f"initial state q0={np.asarray(q0)}, qd0={np.asarray(qd0)}, activation0={np.asarray(a0)}, "
            f"fiber_length0={np.asarray(l0)} (m) for muscles {_muscle_names(model)}"]
        raise _max_steps_error("simulate_muscles", err, rtol, atol, max_steps, dtype, t0, t1, inputs) from err


#: a fibre longer than this many optimal fibre lengths is no muscle state (metres given in millimetres?)
FIBER_LENGTH_LIMIT = 10.0


def _check_fiber_lengths(model, l0):
    """Refuse (concrete values) initial fibre lengths over ``FIBER_LENGTH_LIMIT`` optimal fibre lengths."""
    lopt = hill_parameters(model).get("optimal_fiber_length")
    if lopt is None or _is_traced(l0) or _is_traced(lopt):
        return
    lopt, lv = np.asarray(lopt, float), np.asarray(l0, float)
    bad = [(n, float(v), float(o)) for n, v, o in zip(_muscle_names(model), lv, lopt) if v > FIBER_LENGTH_LIMIT * o]
    if bad:
        shown = ", ".join(f"{n!r}: {v:g} m (optimal {o:g} m)" for n, v, o in bad)
        raise ValueError(f"simulate_muscles: fiber_length0 is more than {FIBER_LENGTH_LIMIT:g} times the optimal "
                         f"fibre length for {shown}; give fibre lengths in metres, or leave fiber_length0=None "
                         "for the equilibrium")


def muscle_vector_field(model: Model, t, state: MuscleSimState, excitations, moment_arms: str = "geometric") -> MuscleSimState:
    """Time derivative of a :class:`MuscleSimState` (the right-hand side :func:`simulate_muscles`
    integrates), e.g. to compare with OpenSim's ``computeStateVariableDerivatives``; ``moment_arms``
    as in :func:`simulate_muscles`.

    ``state``: a :class:`MuscleSimState` ``(q, qd, activation, fiber_length)``; ``excitations``: an
    array ``(nm,)`` or a callable ``t -> (nm,)``.  Shapes are refused when traced (nothing is
    broadcast); values in one fused run-time check: finite, activations and excitations in
    [0, 1], fibre lengths >= 0."""
    who = "muscle_vector_field"
    lengths_speeds_rule(moment_arms)
    require_model(model, who)
    names = _muscle_names(model)
    nq, nm = model.n_coordinates, len(names)
    if nm == 0:
        raise ValueError(f"{who}: the model has no muscles")
    if isinstance(state, jax.Array) or not isinstance(state, (tuple, list)) or len(state) != 4:
        raise TypeError(f"{who}: state must be a MuscleSimState (q, qd, activation, fiber_length), "
                        f"got {type(state).__name__}" + (f" of length {len(state)}" if isinstance(state, (tuple, list)) else ""))
    ctx, mctx = _checks.coordinates_context(model), _checks.names_context("muscles", names)
    state = MuscleSimState(*(_checks.as_array(x, f"state.{f}", (n,), (dim,)) for x, f, n, dim in zip(
        state, MuscleSimState._fields, (nq, nq, nm, nm), ("nq", "nq", "nm", "nm"))))
    t = _checks.as_array(t, f"{who}: t", (), ())
    u = _excitation_shape(_as_excitations(excitations, nm, model, None, who)(t), nm, model, who)
    q, qd, a, lce = state
    rules = [_checks.not_finite(t, f"{who}: t"),
             _checks.not_finite(q, f"{who}: state.q", ctx),
             _checks.not_finite(qd, f"{who}: state.qd", ctx),
             _checks.not_finite(a, f"{who}: state.activation", mctx),
             _checks.in_unit_interval(a, f"{who}: state.activation", names, mctx),
             _checks.not_finite(lce, f"{who}: state.fiber_length", mctx),
             (lce < 0, f"{who}: state.fiber_length must be >= 0 (m){mctx}"),
             _checks.not_finite(u, f"{who}: excitations", mctx),
             _checks.in_unit_interval(u, f"{who}: excitations", names, mctx),
             *path_point_rules(model, who),
             *wrap_dimension_rules(model, who),
             *parameter_rules(get_paths(model), who)]
    state = state._replace(q=_checks.all_of(q, rules))
    return MuscleDrivenField(_Given(u), None, tendon_kinds(model), moment_arms)(t, state, model)

