"""Positions, velocities, virtual displacements and accelerations of body-fixed points (Ehsani Eq.
41, 44, 46, 57), from the closed-form pose derivatives of :mod:`mbjax._kinematics`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._eager import compiled_when_eager
from ._kinematics import PoseDerivatives, body_poses, check_vector, pose_derivatives
from ._model import Model, require_model
from ._spatial import homogeneous


def _as_points(points):
    return _checks.points(points, "points")


def _own_derivs(model: Model, q, derivs, who: str, order: int):
    """``derivs`` (a :class:`PoseDerivatives`) checked against the call: second derivatives present when
    ``order=2``, and computed at this ``q`` (when they carry theirs): refused at the call when both are
    concrete, else at run time while checks are on.  Returns ``derivs`` (its ``d_pose`` carrying that check)."""
    if not isinstance(derivs, PoseDerivatives):
        raise TypeError(f"{who}: derivs must be the PoseDerivatives of pose_derivatives(model, q), got "
                        f"{type(derivs).__name__}")
    if order == 2 and derivs.dd_pose is None:
        raise ValueError(f"{who}: derivs has no second derivatives (dd_pose is None): give "
                         "derivs=pose_derivatives(model, q, order=2), or derivs=None to compute them")
    if derivs.q is None:
        return derivs
    q = check_vector(model, q, "q")
    own = jnp.asarray(derivs.q)
    if own.shape != q.shape:
        raise ValueError(f"{who}: derivs are of q of shape {own.shape}, not of the q given, of shape {q.shape}")
    message = (f"{who}: derivs were computed at another pose than q: give derivs=pose_derivatives(model, q) "
               "of this q, or derivs=None")
    if not isinstance(q, jax.core.Tracer) and not isinstance(own, jax.core.Tracer):
        if not np.array_equal(np.asarray(q, own.dtype), np.asarray(own), equal_nan=True):
            raise ValueError(f"{message}; derivs.q = {np.asarray(own).tolist()}, q = {np.asarray(q).tolist()}")
        return derivs
    return derivs._replace(d_pose=_checks.require(derivs.d_pose, jnp.any(q.astype(own.dtype) != own), message))


def point_positions(model: Model, q, body, points) -> jnp.ndarray:
    """World positions of body-fixed points (Eq. 41); ``points`` ``(3,)`` or ``(npts, 3)``."""
    i = model.body_index(body)
    pts, single = _as_points(points)
    world = jnp.einsum("ab,pb->pa", body_poses(model, q)[i], homogeneous(pts))[:, :3]
    return world[0] if single else world


def point_velocity(model: Model, q, qd, body, points, derivs: PoseDerivatives | None = None):
    """Velocity of body-fixed points, ⁰v = D_iᵀ([r; 1] ⊗ q̇) (Eq. 44).  ``derivs``: the
    :func:`pose_derivatives` of this ``q`` (computed when None); those of another pose are refused."""
    require_model(model, "point_velocity")
    i = model.body_index(body)
    qd = check_vector(model, qd, "qd")
    if derivs is None:
        derivs = pose_derivatives(model, q, order=1)
    else:
        derivs = _own_derivs(model, q, derivs, "point_velocity", 1)
    pts, single = _as_points(points)
    v = jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], homogeneous(pts), qd)[:, :3]
    return v[0] if single else v


def virtual_displacement(model: Model, q, dq, body, points, derivs: PoseDerivatives | None = None):
    """Virtual displacement δ⁰r = D_iᵀ([r; 1] ⊗ δq) of body-fixed points (Eq. 46)."""
    require_model(model, "virtual_displacement")
    return point_velocity(model, q, check_vector(model, dq, "dq"), body, points, derivs)


def point_acceleration(model: Model, q, qd, qdd, body, points, derivs: PoseDerivatives | None = None):
    """Acceleration ⁰a = D'_iᵀ([r; 1] ⊗ q̇ ⊗ q̇) + D_iᵀ([r; 1] ⊗ q̈) (Eq. 57).  ``derivs``: the
    :func:`pose_derivatives` of this ``q`` with ``order=2`` (computed when None); those of another pose, or
    without second derivatives, are refused."""
    require_model(model, "point_acceleration")
    i = model.body_index(body)
    qd, qdd = check_vector(model, qd, "qd"), check_vector(model, qdd, "qdd")
    if derivs is None:
        derivs = pose_derivatives(model, q, order=2)
    else:
        derivs = _own_derivs(model, q, derivs, "point_acceleration", 2)
    pts, single = _as_points(points)
    r = homogeneous(pts)
    a = jnp.einsum("ablm,pb,l,m->pa", derivs.dd_pose[i], r, qd, qd)
    a = a + jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], r, qdd)
    a = a[:, :3]
    return a[0] if single else a


# called eagerly: compiled once per model structure, as the other kinematics functions
point_positions = compiled_when_eager(point_positions)
