"""Positions, velocities, virtual displacements and accelerations of body-fixed points (Ehsani Eq.
41, 44, 46, 57), from the closed-form pose derivatives of :mod:`mbjax._kinematics`."""

from __future__ import annotations

import jax.numpy as jnp

from . import _checks
from ._eager import compiled_when_eager
from ._kinematics import PoseDerivatives, body_poses, check_vector, pose_derivatives
from ._model import Model, require_model
from ._spatial import homogeneous


def _as_points(points):
    return _checks.points(points, "points")


def point_positions(model: Model, q, body, points) -> jnp.ndarray:
    """World positions of body-fixed points (Eq. 41); ``points`` ``(3,)`` or ``(npts, 3)``."""
    i = model.body_index(body)
    pts, single = _as_points(points)
    world = jnp.einsum("ab,pb->pa", body_poses(model, q)[i], homogeneous(pts))[:, :3]
    return world[0] if single else world


def point_velocity(model: Model, q, qd, body, points, derivs: PoseDerivatives | None = None):
    """Velocity of body-fixed points, ⁰v = D_iᵀ([r; 1] ⊗ q̇) (Eq. 44)."""
    require_model(model, "point_velocity")
    i = model.body_index(body)
    qd = check_vector(model, qd, "qd")
    derivs = pose_derivatives(model, q, order=1) if derivs is None else derivs
    pts, single = _as_points(points)
    v = jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], homogeneous(pts), qd)[:, :3]
    return v[0] if single else v


def virtual_displacement(model: Model, q, dq, body, points, derivs: PoseDerivatives | None = None):
    """Virtual displacement δ⁰r = D_iᵀ([r; 1] ⊗ δq) of body-fixed points (Eq. 46)."""
    require_model(model, "virtual_displacement")
    return point_velocity(model, q, check_vector(model, dq, "dq"), body, points, derivs)


def point_acceleration(model: Model, q, qd, qdd, body, points, derivs: PoseDerivatives | None = None):
    """Acceleration ⁰a = D'_iᵀ([r; 1] ⊗ q̇ ⊗ q̇) + D_iᵀ([r; 1] ⊗ q̈) (Eq. 57)."""
    require_model(model, "point_acceleration")
    i = model.body_index(body)
    qd, qdd = check_vector(model, qd, "qd"), check_vector(model, qdd, "qdd")
    derivs = pose_derivatives(model, q, order=2) if derivs is None else derivs
    pts, single = _as_points(points)
    r = homogeneous(pts)
    a = jnp.einsum("ablm,pb,l,m->pa", derivs.dd_pose[i], r, qd, qd)
    a = a + jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], r, qdd)
    a = a[:, :3]
    return a[0] if single else a


# called eagerly: compiled once per model structure, as the other kinematics functions
point_positions = compiled_when_eager(point_positions)
