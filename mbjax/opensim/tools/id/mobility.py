"""OpenSim's inverse dynamics reports *mobility* forces, the generalized forces of Simbody's speeds u.

For most joints u = q̇ and they are mbjax's generalized forces τ (of q̇).  A ``BallJoint``'s, a
``FreeJoint``'s and an ``EllipsoidJoint``'s rotation coordinates (X-Y-Z body-fixed angles a, b, c)
have the angular velocity of the child in the parent frame as their speeds, u = ω_F = E(a, b) q̇ with

    E = [x̂, R_x(a) ŷ, R_x(a) R_y(b) ẑ] = [[1, 0, sin b], [0, cos a, -sin a cos b], [0, sin a, cos a cos b]],

so equal power, τ_uᵀ u = τᵀ q̇, gives τ_u = E⁻ᵀ τ for those three entries (translations: u = q̇).
"""

from __future__ import annotations

import numpy as np

from ...model.osim_motion import angular_velocity_joints


def rotation_speed_matrix(a, b) -> np.ndarray:
    """E(a, b) ``(..., 3, 3)``: ω_F = E q̇ for X-Y-Z body-fixed angles (a, b, c)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    one, zero = np.ones_like(a), np.zeros_like(a)
    rows = [[one, zero, np.sin(b)], [zero, np.cos(a), -np.sin(a) * np.cos(b)], [zero, np.sin(a), np.cos(a) * np.cos(b)]]
    return np.stack([np.stack(r, -1) for r in rows], -2)


def mobility_forces(model, q, tau, where: str) -> np.ndarray:
    """OpenSim's mobility forces ``(T, nq)`` from mbjax's generalized forces ``tau (T, nq)`` at ``q (T, nq)``
    (the module docstring); ``tau`` itself when the model has no such joint.  A joint whose rotation
    coordinates are not all independent coordinates of the model (locked or coupled) is refused by name."""
    info = getattr(model, "osim", None)
    source = getattr(info, "source", None)
    if not source:
        return tau
    try:
        joints = angular_velocity_joints(source)
    except OSError:  # the file is gone: nothing to read the joints from
        return tau
    if not joints:
        return tau
    names = list(model.coordinate_names)
    out = np.array(tau, dtype=float, copy=True)
    q = np.asarray(q, float)
    for kind, joint, coords in joints:
        missing = [c for c in coords if c not in names]
        if missing:
            raise NotImplementedError(f"{where}: the {kind} {joint!r} has rotation coordinates {missing} that are not "
                                      "independent coordinates of the model (locked or coupled); OpenSim reports its "
                                      "mobility forces in the angular-velocity speeds, which mbjax computes only when "
                                      "all three are independent")
        idx = [names.index(c) for c in coords]
        e = rotation_speed_matrix(q[:, idx[0]], q[:, idx[1]])
        out[:, idx] = np.linalg.solve(np.swapaxes(e, -1, -2), out[:, idx][..., None])[..., 0]
    return out
