"""OpenSim's inverse dynamics reports *mobility* forces, the generalized forces of Simbody's speeds u.

For most joints u = q̇ and they are mbjax's generalized forces τ (of q̇).  A ``BallJoint``'s, a
``FreeJoint``'s and an ``EllipsoidJoint``'s rotation coordinates (X-Y-Z body-fixed angles a, b, c)
have the angular velocity of the child in the parent frame as their speeds, u = ω_F = E(a, b) q̇ with

    E = [x̂, R_x(a) ŷ, R_x(a) R_y(b) ẑ] = [[1, 0, sin b], [0, cos a, -sin a cos b], [0, sin a, cos a cos b]],

so equal power, τ_uᵀ u = τᵀ q̇, gives τ_u = E⁻ᵀ τ for those three entries (translations: u = q̇).
"""

from __future__ import annotations

import numpy as np

from ...._spatial import xyz_angle_rate_matrix
from ...model.osim_speeds import speed_joints


def mobility_forces(model, q, tau, where: str) -> np.ndarray:
    """OpenSim's mobility forces ``(T, nq)`` from mbjax's generalized forces ``tau (T, nq)`` at ``q (T, nq)``
    (the module docstring); ``tau`` itself when the model has no such joint.  A joint whose rotation
    coordinates are not all independent coordinates of the model (locked or coupled) is refused by name."""
    joints = speed_joints(model, where)
    if not joints:
        return tau
    out = np.array(tau, dtype=float, copy=True)
    q = np.asarray(q, float)
    for _, _, idx in joints:
        idx = list(idx)
        e = xyz_angle_rate_matrix(q[:, idx[0]], q[:, idx[1]], np)
        out[:, idx] = np.linalg.solve(np.swapaxes(e, -1, -2), out[:, idx][..., None])[..., 0]
    return out
