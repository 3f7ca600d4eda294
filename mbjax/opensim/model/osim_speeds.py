"""OpenSim's generalized speeds u beside mbjax's q̇: the map that a force *on a coordinate* needs.

Simbody's speeds are q̇ for every mobilizer but the ``BallJoint``'s, ``FreeJoint``'s and
``EllipsoidJoint``'s rotations (X-Y-Z body-fixed angles a, b, c), whose speeds are the angular
velocity of the child in the parent frame (OpenSim's ``useEulerAngles``):

    u = ω_F = E(a, b) q̇,   E = [[1, 0, sin b], [0, cos a, -sin a cos b], [0, sin a, cos a cos b]].

A ``CoordinateActuator`` (or any mobility force) of size f on such a coordinate acts on its *speed*:
its power f u_k = f e_kᵀ E q̇ makes the generalized force of q̇ ``Eᵀ e_k f`` on the joint's three
angles, not ``f`` on the one angle.  :func:`speed_jacobian` stacks ∂u/∂q̇ for every OpenSim
coordinate (the coupled and locked ones through :func:`mbjax.io.osim_coordinates.coordinate_jacobian`).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..._model import angular_speed_joints
from ..._spatial import xyz_angle_rate_matrix
from ...io.osim_coordinates import coordinate_jacobian, coordinate_names
from .osim_motion import angular_velocity_joints


def speed_joints(model, where: str, needed=None) -> tuple[tuple[str, str, tuple[int, int, int]], ...]:
    """``(joint class, joint name, indices in q of its three rotation angles)`` of each joint whose
    rotation speeds are ω_F; ``()`` for a model with none or not read from an OpenSim file.  A joint
    whose rotation coordinates are not all in ``q`` (locked or coupled) is refused naming it when
    ``needed`` (coordinate names; None: all) holds one of its coordinates, else left out."""
    info = getattr(model, "osim", None)
    if info is None:
        return ()
    joints = getattr(info, "speed_joints", None)
    if joints is None:  # a model saved before the field existed: read its file
        try:
            joints = angular_velocity_joints(info.source)
        except (OSError, ValueError):
            return ()
    out = []
    for kind, joint, coords, idx, missing in angular_speed_joints(joints, model.coordinate_names):
        if missing and (needed is None or set(coords) & set(needed)):
            raise NotImplementedError(f"{where}: the {kind} {joint!r} has rotation coordinates {list(missing)} that "
                                      "are not independent coordinates of the model (locked or coupled); OpenSim's "
                                      "speeds there are the angular velocity, which mbjax maps only when all three "
                                      "are independent")
        if idx is not None:
            out.append((kind, joint, idx))
    return tuple(out)


def speed_jacobian(model, q, where: str = "speed_jacobian", needed=None):
    """∂u/∂q̇ ``(n_all, nq)`` at ``q``: row k the OpenSim speed of coordinate k (file order,
    :func:`mbjax.io.osim_coordinates.coordinate_names`) per q̇; equal to ∂c/∂q except on the rotations of
    Ball, Free and Ellipsoid joints, whose rows are E's (module docstring).  The generalized force
    of a unit mobility force on coordinate k is row k.  ``needed``: the coordinates whose rows are
    used (a joint with a locked or coupled rotation is refused only when it holds one of them)."""
    q = jnp.asarray(q)
    jac = coordinate_jacobian(model, q)
    joints = speed_joints(model, where, needed)
    if not joints:
        return jac
    all_names = list(coordinate_names(model)[0])
    q_names = list(model.coordinate_names)
    for _, _, idx in joints:
        e = xyz_angle_rate_matrix(q[idx[0]], q[idx[1]], jnp).astype(jac.dtype)
        rows = np.asarray([all_names.index(q_names[i]) for i in idx])
        jac = jac.at[rows].set(0.0).at[rows[:, None], np.asarray(idx)[None, :]].set(e)
    return jac


def _rotation_speed_matrix_rate(a, b, da, db):
    """Ė = ∂E/∂a ȧ + ∂E/∂b ḃ ``(..., 3, 3)`` (numpy)."""
    z = np.zeros_like(a)
    sa, ca, sb, cb = np.sin(a), np.cos(a), np.sin(b), np.cos(b)
    rows = [[z, z, cb * db],
            [z, -sa * da, -ca * cb * da + sa * sb * db],
            [z, ca * da, -sa * cb * da - ca * sb * db]]
    return np.stack([np.stack(r, -1) for r in rows], -2)


def rates_from_speeds(model, q, u, udot, where: str):
    """``(q̇, q̈)`` ``(T, nq)`` of motions whose Ball/Free/Ellipsoid rotation entries of ``u``, ``udot``
    are Simbody's speeds there (ω_F and its derivative): q̇ = E⁻¹ u, q̈ = E⁻¹ (u̇ − Ė q̇) on those
    entries, the others unchanged.  OpenSim's ID tool and AnalyzeTool put the time derivatives of a
    coordinates file's columns into the speeds u as they are, so on such a joint they stand for ω_F
    (and u̇), not for the angles' rates: this is the motion they then analyse.  ``u`` itself when the
    model has no such joint."""
    joints = speed_joints(model, where)
    if not joints:
        return u, udot
    q = np.asarray(q, float)
    qd, qdd = np.array(u, float, copy=True), np.array(udot, float, copy=True)
    for _, _, idx in joints:
        idx = list(idx)
        a, b = q[:, idx[0]], q[:, idx[1]]
        e = xyz_angle_rate_matrix(a, b, np)
        rate = np.linalg.solve(e, qd[:, idx][..., None])[..., 0]
        e_dot = _rotation_speed_matrix_rate(a, b, rate[:, 0], rate[:, 1])
        qd[:, idx] = rate
        qdd[:, idx] = np.linalg.solve(e, (qdd[:, idx] - np.einsum("tij,tj->ti", e_dot, rate))[..., None])[..., 0]
    return qd, qdd
