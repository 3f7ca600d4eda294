"""OpenSim's ``BushingForce`` (Simbody ``Force::LinearBushing``): a 6-dof linear spring-damper between frames.

Frame F is fixed on body 1 (``X_B1F``), frame M on body 2 (``X_B2M``); ``X_FM = X_GF⁻¹ X_GM``.
Simbody's bushing coordinates are ``b = (θx, θy, θz, p_x, p_y, p_z)``: the X-Y-Z body-fixed angles of
``R_FM`` (``Rotation::convertRotationToBodyFixedXYZ``: ``θy = atan2(R₀₂, √((R₀₀²+R₀₁²+R₁₂²+R₂₂²)/2))``,
``θx = atan2(-R₁₂, R₂₂)``, ``θz = atan2(-R₀₁, R₀₀)``) and ``p_FM`` expressed in F.  The generalized
force on them is ``f = -k∘b - c∘ḃ`` (``k``, ``c`` = rotational then translational stiffness /
damping); Simbody applies it as the moment ``N_FMᵀ f_rot`` and the force ``f_trans`` on M with the
reaction on F, whose virtual power is ``fᵀ ḃ``.  So ``Q = (∂b/∂q)ᵀ f`` exactly
(:class:`~mbjax.forces.base.CoordinateSpring`).  Like Simbody's, the angles are singular at
``θy = ±π/2`` (Simbody switches branch within 4ε of it; not reproduced).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from . import _params
from .. import _checks
from .base import CoordinateSpring, frame_poses


def body_fixed_xyz(rot):
    """X-Y-Z body-fixed angles ``(..., 3)`` of rotations ``(..., 3, 3)`` (Simbody's formula, regular branch).

    ``rot`` must be rotation matrices: a wrong shape raises ``ValueError``; NaN or inf, or a matrix
    that is not orthonormal (``|RᵀR - I| > 1e-6``), a run-time error (checks on)."""
    r = _checks.real_array(rot, "body_fixed_xyz: rot must be an array of rotation matrices (..., 3, 3)",
                           "body_fixed_xyz: rot must be real")
    if r.ndim < 2 or r.shape[-2:] != (3, 3):
        raise ValueError(f"body_fixed_xyz: rot must have shape (..., 3, 3) (rotation matrices), got {r.shape}")
    if not jnp.issubdtype(r.dtype, jnp.inexact):
        r = r.astype(float)
    err = jnp.abs(jnp.einsum("...ji,...jk->...ik", r, r) - jnp.eye(3, dtype=r.dtype))
    r = _checks.all_of(r, [_checks.not_finite(r, "body_fixed_xyz: rot"),
                           (err > max(1e-6, 100 * _checks.dtype_eps(r.dtype)),
                            "body_fixed_xyz: rot is not a rotation matrix (RᵀR != I)")])
    return _xyz(r)


def _xyz(r):
    """:func:`body_fixed_xyz` without checks (rotations built from validated poses)."""
    cos_y = jnp.sqrt((r[..., 0, 0] ** 2 + r[..., 0, 1] ** 2 + r[..., 1, 2] ** 2 + r[..., 2, 2] ** 2) / 2)
    return jnp.stack([jnp.arctan2(-r[..., 1, 2], r[..., 2, 2]),
                      jnp.arctan2(r[..., 0, 2], cos_y),
                      jnp.arctan2(-r[..., 0, 1], r[..., 0, 0])], axis=-1)


class BushingForce(CoordinateSpring):
    """A stack of ``n`` linear bushings: frames ``(n, 4, 4)`` in their bodies, ``(n, 6)`` stiffness/damping."""

    x_b1f: jnp.ndarray
    x_b2m: jnp.ndarray
    stiffness: jnp.ndarray  # (n, 6): rotational x y z, translational x y z
    damping: jnp.ndarray
    body1: tuple[int, ...] = eqx.field(static=True)
    body2: tuple[int, ...] = eqx.field(static=True)
    element_names: tuple[str, ...] = eqx.field(static=True)

    def __check_init__(self):
        kind, names = "BushingForce", self.element_names
        _params.check_names(kind, names)
        _params.check_poses(kind, names, "x_b1f (frame F in body 1)", self.x_b1f)
        _params.check_poses(kind, names, "x_b2m (frame M in body 2)", self.x_b2m)
        _params.check_param(kind, names, "stiffness", self.stiffness, (6,), "warn")
        _params.check_param(kind, names, "damping", self.damping, (6,), "warn")
        _params.check_bodies(kind, names, "body1", self.body1)
        _params.check_bodies(kind, names, "body2", self.body2)
        for name, b1, b2 in zip(names, self.body1, self.body2):
            if b1 == b2:
                raise ValueError(f"BushingForce {name!r}: body1 and body2 are the same body ({b1}); a bushing "
                                 "joins two bodies")

    def deflections(self, model, q):
        """``(n, 6)`` bushing coordinates ``b``."""
        _params.check_bodies("BushingForce", self.element_names, "body1", self.body1, model.n_bodies)
        _params.check_bodies("BushingForce", self.element_names, "body2", self.body2, model.n_bodies)
        x_gf = frame_poses(model, q, self.body1, self.x_b1f)
        x_gm = frame_poses(model, q, self.body2, self.x_b2m)
        r_gf = x_gf[:, :3, :3]
        r_fm = jnp.einsum("nji,njk->nik", r_gf, x_gm[:, :3, :3])
        p_fm = jnp.einsum("nji,nj->ni", r_gf, x_gm[:, :3, 3] - x_gf[:, :3, 3])
        return jnp.concatenate([_xyz(r_fm), p_fm], axis=-1)

    def element_coordinates(self, model, q):
        return self.deflections(model, q).reshape(-1)

    def law(self, b, bdot):
        k = self.stiffness.reshape(-1).astype(b.dtype)
        c = self.damping.reshape(-1).astype(b.dtype)
        return -k * b - c * bdot

    def potential_energy(self, model, q):
        """``Σ ½ k∘b²`` (Simbody's ``LinearBushing`` potential energy)."""
        b = self.deflections(model, q)
        return 0.5 * jnp.sum(self.stiffness * b * b)
