"""Small spatial-algebra helpers shared by every layer.

Conventions: homogeneous transforms are 4x4 ``[[R, p], [0, 1]]`` mapping child coordinates to
parent coordinates; spatial (twist / wrench) 6-vectors, where used, are ``[angular; linear]``.
"""

from __future__ import annotations

import jax.numpy as jnp


def skew(v):
    """Skew matrix ``ṽ`` with ``ṽ w = v × w`` (the paper's overhead tilde)."""
    v = jnp.asarray(v)
    z = jnp.zeros_like(v[..., 0])
    return jnp.stack(
        [
            jnp.stack([z, -v[..., 2], v[..., 1]], -1),
            jnp.stack([v[..., 2], z, -v[..., 0]], -1),
            jnp.stack([-v[..., 1], v[..., 0], z], -1),
        ],
        -2,
    )


def rodrigues(axis, angle):
    """Rotation matrix of Ehsani Eq. 39: ``I + ṽ sin θ + 2 ṽ² sin²(θ/2)`` for a unit ``axis``."""
    k = skew(axis)
    s = jnp.sin(angle)[..., None, None]
    c2 = (2.0 * jnp.sin(0.5 * jnp.asarray(angle)) ** 2)[..., None, None]
    eye = jnp.eye(3, dtype=k.dtype)
    return eye + k * s + (k @ k) * c2


def transform(rotation, translation):
    """Homogeneous 4x4 transform from a 3x3 rotation and a translation (batched over leading axes)."""
    rotation = jnp.asarray(rotation)
    translation = jnp.asarray(translation)
    batch = jnp.broadcast_shapes(rotation.shape[:-2], translation.shape[:-1])
    dtype = jnp.result_type(rotation, translation)
    out = jnp.zeros(batch + (4, 4), dtype)
    out = out.at[..., :3, :3].set(rotation)
    out = out.at[..., :3, 3].set(translation)
    return out.at[..., 3, 3].set(1.0)


def inverse_transform(t):
    """Inverse of a rigid homogeneous transform without a general matrix inverse."""
    r = t[..., :3, :3]
    p = t[..., :3, 3]
    rt = jnp.swapaxes(r, -1, -2)
    return transform(rt, -jnp.einsum("...ij,...j->...i", rt, p))


def rpy_matrix(rpy):
    """URDF roll-pitch-yaw (fixed X, Y, Z) rotation: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    rpy = jnp.asarray(rpy)
    ex = jnp.array([1.0, 0.0, 0.0], rpy.dtype)
    ey = jnp.array([0.0, 1.0, 0.0], rpy.dtype)
    ez = jnp.array([0.0, 0.0, 1.0], rpy.dtype)
    return rodrigues(ez, rpy[..., 2]) @ rodrigues(ey, rpy[..., 1]) @ rodrigues(ex, rpy[..., 0])


def safe_sqrt(x):
    """``sqrt(x)`` for ``x > 0``, else 0, with a finite gradient everywhere (zero where ``x <= 0``)."""
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def safe_norm(x, axis=-1, keepdims=False):
    """Euclidean norm whose gradient is finite (zero) at ``x = 0``."""
    return safe_sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))


def safe_div(num, den, otherwise=0.0):
    """``num / den`` where ``den != 0``, else the constant ``otherwise``; neither branch's derivative
    holds inf or NaN."""
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), otherwise)


def homogeneous(points):
    """Append a 1 to 3-vectors: ``(..., 3) -> (..., 4)``."""
    points = jnp.asarray(points)
    return jnp.concatenate([points, jnp.ones(points.shape[:-1] + (1,), points.dtype)], -1)


def xyz_angle_rate_matrix(a, b, xp=jnp):
    """E(a, b) ``(..., 3, 3)`` of X-Y-Z body-fixed angles (a, b, c): the angular velocity of the rotated
    frame in the fixed one is ω = E q̇ (Simbody's Ball/Free/Ellipsoid speeds), E = [x̂, R_x(a) ŷ,
    R_x(a) R_y(b) ẑ].  ``xp``: ``jax.numpy`` or ``numpy``."""
    a, b = xp.asarray(a), xp.asarray(b)
    one, zero = xp.ones_like(a), xp.zeros_like(a)
    rows = [[one, zero, xp.sin(b)], [zero, xp.cos(a), -xp.sin(a) * xp.cos(b)],
            [zero, xp.sin(a), xp.cos(a) * xp.cos(b)]]
    return xp.stack([xp.stack(r, -1) for r in rows], -2)
