"""OpenSim's body actuators, ``PointActuator`` and ``TorqueActuator``, as generalized forces.

Residual actuators of gait analyses are of this kind: forces and torques on the pelvis that absorb
what the model and the ground reactions do not balance.  Each is a scalar actuator: control x,
actuation x · ``optimal_force`` (``computeActuation``), applied as OpenSim 4.6's ``computeForce``:

* ``PointActuator``: force x F_opt d̂ (``direction`` normalized, OpenSim's ``UnitVec3``) at
  ``point`` of ``body``; the direction is in ground axes if ``force_is_global`` else in the body's;
  the point in the body frame unless ``point_is_global`` (then the body point *at* that ground
  location in the current pose).  OpenSim's defaults: point 0, direction (1, 0, 0), both flags false.
* ``TorqueActuator``: torque x F_opt â on ``body_a`` (``axis`` normalized, in ground axes if
  ``torque_is_global``, OpenSim's default, else in body A's) and the opposite torque on ``body_b``
  (none when ``body_b`` is ground or not given).

The generalized force of actuator k at control x is B_k(q) x with B_k = J_kᵀ (unit load) F_opt,
the same virtual-work map as every applied load (:meth:`mbjax.ExternalLoads.generalized_forces`,
Eq. 46/161 of the Ehsani seed).  :func:`actuator_matrix` stacks the columns ``(nq, na)``;
static optimization takes it as its ``actuators`` (:mod:`mbjax.analysis.sharing.static_optimization`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._loads import ExternalLoads
from .._model import GROUND, require_model


class _CoordinateActuatorFields(NamedTuple):
    """OpenSim ``CoordinateActuator``: generalized force x · ``optimal_force`` on ``coordinate``,
    ``min_control <= x <= max_control`` (a reserve actuator of static optimization)."""

    name: str
    coordinate: str
    optimal_force: float = 1.0
    min_control: float = -np.inf
    max_control: float = np.inf


class _PointActuatorFields(NamedTuple):
    """OpenSim ``PointActuator`` (module docstring)."""

    name: str
    body: str
    point: tuple = (0.0, 0.0, 0.0)
    direction: tuple = (1.0, 0.0, 0.0)
    point_is_global: bool = False
    force_is_global: bool = False
    optimal_force: float = 1.0
    min_control: float = -np.inf
    max_control: float = np.inf


class _TorqueActuatorFields(NamedTuple):
    """OpenSim ``TorqueActuator`` (module docstring); ``body_b`` None or ``"ground"``: no reaction torque."""

    name: str
    body_a: str
    body_b: str | None = None
    axis: tuple = (0.0, 0.0, 1.0)
    torque_is_global: bool = True
    optimal_force: float = 1.0
    min_control: float = -np.inf
    max_control: float = np.inf


def _checked_controls(record):
    """``record`` if its ``min_control <= max_control`` (numbers given; tracers and placeholders pass);
    ``ValueError`` naming the actuator otherwise (NaN included)."""
    try:
        lo, hi = float(record.min_control), float(record.max_control)
    except Exception:  # noqa: BLE001  (a tracer, None or a pytree placeholder: checked where it is used)
        return record
    if not lo <= hi:
        raise ValueError(f"{type(record).__name__} {record.name!r}: need min_control <= max_control, got [{lo}, {hi}] "
                         f"(min_control {lo} > max_control {hi}, or NaN: reversed control bounds)")
    return record


class CoordinateActuator(_CoordinateActuatorFields):
    __doc__ = _CoordinateActuatorFields.__doc__ + "  Reversed control bounds are refused."
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        return _checked_controls(super().__new__(cls, *args, **kwargs))


class PointActuator(_PointActuatorFields):
    __doc__ = _PointActuatorFields.__doc__ + "  Reversed control bounds are refused."
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        return _checked_controls(super().__new__(cls, *args, **kwargs))


class TorqueActuator(_TorqueActuatorFields):
    __doc__ = _TorqueActuatorFields.__doc__ + "  Reversed control bounds are refused."
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        return _checked_controls(super().__new__(cls, *args, **kwargs))


def _vec3(v, what):
    try:
        v = np.asarray(v, float)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: needs a 3-vector of numbers, got {v!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{what}: needs a finite 3-vector, got {v.tolist()}")
    return v


def _unit(v, what):
    v = _vec3(v, what)
    n = np.linalg.norm(v)
    if n == 0.0:
        raise ValueError(f"{what}: needs a finite non-zero 3-vector, got {v.tolist()}")
    return v / n


def _scalar_fields(a, kind):
    """``optimal_force`` finite and > 0; ``min_control <= max_control``, neither NaN."""
    try:
        f, lo, hi = float(a.optimal_force), float(a.min_control), float(a.max_control)
    except (TypeError, ValueError):
        raise TypeError(f"{kind} {a.name!r}: optimal_force, min_control and max_control must be numbers, got "
                        f"{a.optimal_force!r}, {a.min_control!r}, {a.max_control!r}") from None
    if not (np.isfinite(f) and f > 0):
        raise ValueError(f"{kind} {a.name!r}: optimal_force must be finite and > 0, got {f}")
    if np.isnan(lo) or np.isnan(hi) or lo > hi:
        raise ValueError(f"{kind} {a.name!r}: need min_control <= max_control, got [{lo}, {hi}]")


def _loads(model, actuators):
    """One :class:`ExternalLoads` holding every application (a torque actuator with a body B has
    two) at unit control, and for each application the index of its actuator."""
    bodies, points, forces, torques, pframes, fframes, owner = [], [], [], [], [], [], []
    names = set(model.body_names)
    for k, a in enumerate(actuators):
        if isinstance(a, (PointActuator, TorqueActuator)):
            _scalar_fields(a, type(a).__name__)
        if isinstance(a, PointActuator):
            if a.body not in names:
                raise ValueError(f"PointActuator {a.name!r}: body {a.body!r} is not a body of the model "
                                 f"{tuple(model.body_names)}")
            d = _unit(a.direction, f"PointActuator {a.name!r} direction")
            bodies.append(a.body)
            points.append(_vec3(a.point, f"PointActuator {a.name!r} point"))
            forces.append(d * a.optimal_force)
            torques.append(np.zeros(3))
            pframes.append(GROUND if a.point_is_global else a.body)
            fframes.append(GROUND if a.force_is_global else a.body)
            owner.append(k)
        elif isinstance(a, TorqueActuator):
            if all(b is None or b == GROUND for b in (a.body_a, a.body_b)):
                raise ValueError(f"TorqueActuator {a.name!r}: body_a {a.body_a!r} and body_b {a.body_b!r} name no body "
                                 "of the model (the torque would act on nothing)")
            if a.body_b == a.body_a:
                raise ValueError(f"TorqueActuator {a.name!r}: body_a and body_b are both {a.body_a!r} (the torques "
                                 "cancel); give body_b=None for no reaction torque")
            ax = _unit(a.axis, f"TorqueActuator {a.name!r} axis") * a.optimal_force
            frame = GROUND if a.torque_is_global else a.body_a
            for body, sign in ((a.body_a, 1.0), (a.body_b, -1.0)):
                if body is None or body == GROUND:
                    continue
                if body not in names:
                    raise ValueError(f"TorqueActuator {a.name!r}: body {body!r} is not a body of the model "
                                     f"{tuple(model.body_names)}")
                bodies.append(body)
                points.append(np.zeros(3))
                forces.append(np.zeros(3))
                torques.append(sign * ax)
                pframes.append(body)
                fframes.append(frame)
                owner.append(k)
        else:
            raise TypeError(f"actuator_matrix: actuators[{k}] is not a PointActuator or TorqueActuator: {a!r:.80}"
                            + (" (a CoordinateActuator's column is a unit column on its coordinate)"
                               if isinstance(a, CoordinateActuator) else ""))
    if not bodies:
        return None, np.zeros((0,), np.int32)
    loads = ExternalLoads(tuple(bodies), np.asarray(points), np.asarray(forces), np.asarray(torques),
                          point_frames=tuple(pframes), force_frames=tuple(fframes))
    return loads, np.asarray(owner, np.int32)


def actuator_matrix(model, actuators, q):
    """``B (nq, na)``: column k is the generalized force of ``actuators[k]`` at control 1 and pose
    ``q`` (module docstring).  One pose; ``jax.vmap`` over frames.

    In closed form from one kinematics pass (the marker Jacobian's rule,
    :func:`mbjax.markers.marker_positions_and_jacobian`): an application of force ``F`` at world
    point ``x`` and torque ``T`` on body ``b`` loads each joint ``j`` of ``b``'s chain (world axis
    ``ω_j`` through ``p_j``) with ``ω_j·(T + (x - p_j) × F)`` if revolute, ``ω_j·F`` if prismatic,
    and ``Q = Fᵀ τ`` with ``F = ∂f/∂q``.  Equal to :meth:`mbjax.ExternalLoads.generalized_forces`
    of the unit loads (body-wrench recursion) and to the loads' power (``tests/test_body_actuators.py``).
    It replaced a ``vmap`` of that recursion over the actuators, a large share of a static
    optimization program with pelvis residuals."""
    require_model(model, "actuator_matrix")
    from .._kinematics import forward_pass

    if isinstance(actuators, (str, PointActuator, TorqueActuator, CoordinateActuator)):
        raise TypeError(f"actuator_matrix: actuators must be a list of PointActuator / TorqueActuator, got a single "
                        f"{type(actuators).__name__} {actuators!r:.80} (wrap it in a list)")
    actuators = tuple(actuators)
    ctx = _checks.coordinates_context(model)
    q = _checks.as_array(q, "actuator_matrix: q", (model.n_coordinates,), ("nq",), ctx)
    q = _checks.finite(q, "actuator_matrix: q", ctx)
    dtype = jnp.result_type(q, float)
    loads, owner = _loads(model, actuators)
    if loads is None:
        return jnp.zeros((model.n_coordinates, len(actuators)), dtype)
    nb = model.n_bodies

    def index(f, default):
        return default if f is None else (nb if f == GROUND else model.body_index(f))

    body = np.asarray([model.body_index(b) for b in loads.bodies], np.int32)
    pf = body if loads.point_frames is None else np.asarray(
        [index(f, b) for f, b in zip(loads.point_frames, body)], np.int32)
    ff = np.full(len(body), nb, np.int32) if loads.force_frames is None else np.asarray(
        [index(f, nb) for f in loads.force_frames], np.int32)
    kin = forward_pass(model, q.astype(dtype))
    rot = jnp.concatenate([kin.rot, jnp.eye(3, dtype=dtype)[None]])  # index nb = ground
    pos = jnp.concatenate([kin.pos, jnp.zeros((1, 3), dtype)])
    force = jnp.einsum("kab,kb->ka", rot[ff], jnp.asarray(loads.forces, dtype))  # world axes
    torque = jnp.einsum("kab,kb->ka", rot[ff], jnp.asarray(loads.torques, dtype))
    x = jnp.einsum("kab,kb->ka", rot[pf], jnp.asarray(loads.points, dtype)) + pos[pf]  # world point
    axis = jnp.einsum("jab,jb->ja", kin.rot, model.axis.astype(dtype))  # world joint axes (nb, 3)
    d = x[:, None, :] - kin.pos[None]  # (k, nb, 3)
    rev = np.asarray(model.topology.is_revolute(), bool)
    arm = torque[:, None, :] + jnp.cross(d, force[:, None, :])
    per_joint = jnp.where(rev[None], jnp.einsum("ja,kja->kj", axis, arm), force @ axis.T)
    chain = jnp.asarray(model.topology.ancestor_mask()[body], dtype)  # (k, nb): joints moving body b_k
    onehot = jnp.asarray(owner[:, None] == np.arange(len(actuators))[None, :], dtype)  # (k, na)
    return kin.theta_grad.T @ ((per_joint * chain).T @ onehot)
