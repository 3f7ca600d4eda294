"""Muscle state derivatives given the muscle states: OpenSim's ``computeStateVariableDerivatives``.

For a muscle-driven forward simulation every Hill muscle carries the states of OpenSim's
``ActivationFiberLengthMuscle`` / ``Millard2012EquilibriumMuscle``:

* activation a, with ȧ from :func:`mbjax.muscles.activation_derivative` (first-order
  ``MuscleFirstOrderActivationDynamicModel``); where ``ignore_activation_dynamics`` the activation
  is the clamped excitation clamp(a_min, u, 1) (Millard's ``getControl(s)`` branch) and ȧ = 0;
* fibre length ℓ (compliant tendon), with ℓ̇ the fibre velocity that OpenSim's
  ``calcFiberVelocityInfo`` derives from the force equilibrium at the state's ℓ
  (:func:`mbjax.muscles.state_from_fiber_length`: Thelen's ``calcdlceN`` inverse of its
  force-velocity relation with the ``fv_linear_extrap_threshold`` extrapolation and the
  minimum-length clamp ``isFiberStateClamped``; Millard's inverse force-velocity curve or the
  damped Newton solve ``calcDampedNormFiberVelocity``; ``Schutte1993Muscle_Deprecated``'s
  ``computeActuation``, :mod:`mbjax.muscles.schutte1993`).  Rigid-tendon muscles
  (``ignore_tendon_compliance``) have no fibre-length state in OpenSim; here the slot is kept
  (fixed array shapes) with ℓ̇ = 0 and their force is the rigid-tendon force of (L, V, a), the
  slot's value unused.

A ``PathActuator`` has no states: its control is the excitation u, its tension u · optimal_force
(OpenSim's ``PathActuator::computeActuation``), ȧ = ℓ̇ = 0 in its (unused) slots.

The tendon force F then enters the equations of motion as R F with R = -∂L/∂q
(:func:`mbjax.moment_arms`) and the lengthening speed is V = -Rᵀ q̇.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .activation import activation_rate_of_muscles, clamp_activation
from .geometry import muscle_lengths
from . import schutte1993 as sch
from .by_class import PATH_ACTUATOR, by_class, tendon_kinds as _tendon_kinds
from .musculotendon import MuscleState, _Family, _rigid_state, _schutte_rigid_refused, _state_from_fiber_length
from .parameters import HILL_KINDS, SCHUTTE, hill_parameters, kind_mask


class MuscleDerivatives(NamedTuple):
    """What a muscle-driven vector field needs at one instant (``(nm,)`` unless stated)."""

    state: MuscleState  #: fibre and tendon state (OpenSim's length/velocity/dynamics info)
    activation_rate: jnp.ndarray  #: ȧ (0 where ``ignore_activation_dynamics``)
    fiber_length_rate: jnp.ndarray  #: ℓ̇ (0 where ``ignore_tendon_compliance``)
    generalized_forces: jnp.ndarray  #: R F ``(nq,)``
    moment_arms: jnp.ndarray  #: R ``(nq, nm)``


def _one_muscle_from_states(kind, p, lce, L, V, a, tendons="both"):
    """Rigid-tendon state of (L, V, a) or elastic-tendon state of the fibre-length state ``lce``;
    ``tendons`` ('rigid', 'elastic', 'both') is static: which branches are traced.  A
    ``Schutte1993Muscle_Deprecated`` is ``computeActuation`` at its fibre-length state (no rigid mode)."""
    if kind == SCHUTTE:
        return _schutte_rigid_refused(p, sch.muscle_state(p, lce, L, V, a), tendons)
    fam = _Family(kind, p)
    a = clamp_activation(a, p["minimum_activation"])
    if tendons == "elastic":
        return _state_from_fiber_length(fam, lce, L, V, a)
    rigid = _rigid_state(fam, L, V, a)
    if tendons == "rigid":
        return rigid
    # a rigid muscle's (unused) slot may hold anything: evaluate the elastic branch at a safe length
    use_rigid = p["ignore_tendon_compliance"] > 0.5
    elastic = _state_from_fiber_length(fam, jnp.where(use_rigid, rigid.fiber_length, lce), L, V, a)
    return jax.tree_util.tree_map(lambda r, e: jnp.where(use_rigid, r, e), rigid, elastic)


def tendon_kinds(model) -> str:
    """'rigid', 'elastic' or 'both' from a concrete model's ``ignore_tendon_compliance`` flags
    (decide before ``jit``; 'both' when they are traced)."""
    return _tendon_kinds(hill_parameters(model)["ignore_tendon_compliance"])


def effective_activation(model, activation, excitation):
    """Activation the muscles see: the state, or the excitation where ``ignore_activation_dynamics``
    (unclamped here; every consumer clamps to [a_min, 1] as OpenSim does) and for a
    ``PathActuator`` (its control)."""
    p = hill_parameters(model)
    direct = (p["ignore_activation_dynamics"] > 0.5) | jnp.asarray(kind_mask(model, PATH_ACTUATOR))
    return jnp.where(direct, excitation, activation)


def state_from_states(model, fiber_length, length, speed, activation, tendons: str = "both") -> MuscleState:
    """OpenSim's muscle state from path lengths and speeds and the muscle states ``(nm,)`` each:
    elastic tendons from the fibre-length state, rigid tendons from (L, V, a)."""
    args = jnp.broadcast_arrays(*(jnp.asarray(x) for x in (fiber_length, length, speed, activation)))
    return by_class(model, lambda kind, p, *a: _one_muscle_from_states(kind, p, *a, tendons=tendons), *args,
                    control=args[-1])


def lengths_speeds_moment_arms(model, q, qd):
    """L ``(nm,)``, V = L̇ = -Rᵀq̇ ``(nm,)`` and R = -∂L/∂q ``(nq, nm)`` from one forward-mode pass
    of :func:`mbjax.muscle_lengths` (nq + 1 tangents; equal to :func:`mbjax.moment_arms`)."""
    q = jnp.asarray(q)
    tangents = jnp.concatenate([jnp.eye(q.shape[0], dtype=q.dtype), jnp.asarray(qd, q.dtype)[None]])
    L, dL = jax.vmap(lambda t: jax.jvp(lambda x: muscle_lengths(model, x), (q,), (t,)))(tangents)
    return L[0], dL[-1], -dL[:-1]


MOMENT_ARM_RULES = ("geometric", "opensim")


def lengths_speeds_opensim_moment_arms(model, q, qd):
    """L ``(nm,)``, V = -R_osᵀ q̇ and R_os ``(nq, nm)``, OpenSim's unit-force moment arms
    (:func:`mbjax.muscles.opensim_moment_arms`): the generalized force OpenSim applies for a unit
    tension, and, by the same points, ``GeometryPath``'s lengthening speed.  Over wrap surfaces
    whose tangent points are not exact (OpenSim's ellipsoid and cylinder heuristics) R_os is not
    -∂L/∂q, so these are the dynamics OpenSim integrates, not a Lagrangian system in L."""
    from .opensim_moment_arms import opensim_moment_arms

    q = jnp.asarray(q)
    R = opensim_moment_arms(model, q)
    return muscle_lengths(model, q), -(R.T @ jnp.asarray(qd, q.dtype)), R


def lengths_speeds_rule(moment_arms: str):
    """The ``(model, q, q̇) -> (L, V, R)`` function of a moment-arm rule (:data:`MOMENT_ARM_RULES`)."""
    if moment_arms not in MOMENT_ARM_RULES:
        raise ValueError(f"moment_arms must be one of {MOMENT_ARM_RULES}, got {moment_arms!r}")
    return lengths_speeds_moment_arms if moment_arms == "geometric" else lengths_speeds_opensim_moment_arms


def muscle_derivatives(model, q, qd, activation, fiber_length, excitation, tendons: str = "both",
                       moment_arms: str = "geometric") -> MuscleDerivatives:
    """Muscle state derivatives and generalized muscle forces at (q, q̇, a, ℓ) with excitation u
    (OpenSim: ``computeStateVariableDerivatives`` of every muscle and ``Muscle::computeForce``).

    ``moment_arms``: ``"geometric"`` (R = -∂L/∂q, V = L̇) or ``"opensim"`` (OpenSim's unit-force
    R and its path speed, :func:`lengths_speeds_opensim_moment_arms`); they differ over wrap
    surfaces with inexact tangent points and through segments between a ``MovingPathPoint`` and a
    point of its own body (see :mod:`mbjax.muscles.opensim_moment_arms`)."""
    dtype = jnp.asarray(q).dtype
    L, V, R = lengths_speeds_rule(moment_arms)(model, q, qd)
    p = hill_parameters(model)
    a_eff = effective_activation(model, activation, excitation)
    st = state_from_states(model, fiber_length, L, V, a_eff, tendons)
    hill = sum(kind_mask(model, k) for k in HILL_KINDS) > 0  # static: other path elements have no states
    adot = jnp.where(hill, activation_rate_of_muscles(excitation, activation, p), 0.0)
    ldot = jnp.where(hill & (p["ignore_tendon_compliance"] <= 0.5), st.fiber_velocity, 0.0)
    return MuscleDerivatives(st, adot.astype(dtype), ldot.astype(dtype), R @ st.tendon_force.astype(dtype), R)
