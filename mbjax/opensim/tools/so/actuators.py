"""The scalar actuators of a static optimization (``CoordinateActuator`` reserves, ``PointActuator``
and ``TorqueActuator`` residuals): the model's own, their checks, and their generalized forces."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np

from ....forces.body_actuators import CoordinateActuator, PointActuator, TorqueActuator, actuator_matrix
from ....io.osim_coordinates import coordinate_names
from ...model.osim_speeds import speed_jacobian, speed_joints


#: OpenSim's ``CoordinateActuator`` (the reserve actuator of static optimization):
#: torque = ``optimal_force`` · x, ``min_control <= x <= max_control``
Reserve = CoordinateActuator


def check_actuators(model, actuators) -> tuple:
    """The scalar actuators checked against ``model``: names unique, each ``CoordinateActuator`` on
    one of the model's OpenSim coordinates (independent, coupled or locked), each body actuator on
    its bodies, optimal forces positive.  Actuators on locked coordinates are named in a warning:
    their force goes into the lock (OpenSim's static optimization constrains no locked coordinate's
    acceleration), so their controls come out 0 (or the bound nearest 0)."""
    actuators = tuple(actuators)
    seen = set()
    q_names = tuple(model.coordinate_names)
    info = model.osim
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
    gives F_opt ∂u_c/∂q̇ (:func:`mbjax.opensim.model.osim_speeds.speed_jacobian`: a unit column on a
    coordinate of ``q``, the coupler's gradient on a coupled one, zero on a locked one, and Eᵀ e_k on a
    Ball, Free or Ellipsoid joint's rotation k, where OpenSim's actuator drives the angular velocity);
    body actuators give :func:`mbjax.forces.body_actuators.actuator_matrix`."""
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
        on_speeds = speed_joints(model, "CoordinateActuator", targets)
        if all(c in q_names for c in targets) and not on_speeds:
            J = np.zeros((len(q_names), len(coord)))
            J[[q_names.index(c) for c in targets], np.arange(len(coord))] = 1.0
            J = jnp.asarray(J, dtype)
        else:
            names = coordinate_names(model)[0]
            J = speed_jacobian(model, q.astype(dtype), "CoordinateActuator", targets)[
                np.asarray([names.index(c) for c in targets])].T
        B = B.at[:, np.asarray(coord)].set(J * force[None, :])
    return B


def model_actuators(model) -> tuple:
    """The model's own enabled scalar actuators (``OsimInfo.actuators``: its ``CoordinateActuator``,
    ``PointActuator`` and ``TorqueActuator`` elements), which OpenSim's static optimization uses
    beside the muscles; ``()`` for a model not read from an OpenSim file."""
    info = getattr(model, "osim", None)
    return tuple(getattr(info, "actuators", ())) if info is not None else ()
