"""Applied loads to generalized forces: subtree wrench sums and virtual work (Ehsani Eq. 46/161).

Every applied load (muscle, ligament, contact, external force) reaches the coordinates through
:func:`body_wrench_forces`: body-frame wrenches are summed over each body's subtree (the backward
half of recursive Newton-Euler, :func:`subtree_wrenches`) and projected on the joint axes and the
joint-map gradient F (Q = Fᵀ τ_θ).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from . import _checks
from ._batching import Small, batch_last
from ._kinematics import Kinematics, _motion_subspace, body_poses, check_vector, forward_pass
from ._model import Model, require_model


def _ops_of(kin: Kinematics) -> Small:
    return Small(kin.theta.ndim - 1, kin.theta.dtype)


def subtree_wrenches(model: Model, kin: Kinematics, wrench):
    """Σ over the subtree of each body of body-frame wrenches ``(nb, 6, *b)``, in each body's frame.

    The backward half of recursive Newton-Euler: levels deepest first, each child's total
    wrench moved to its parent's frame (n_p = E n_c + r × E f_c, f_p = E f_c with E, r the local
    transform) and added by one static one-hot product per level.  With the Newton-Euler body
    wrenches this is the wrench the parent transmits to each body through its joint, about the
    body origin, in body axes (what joint reactions read).
    """
    ops = _ops_of(kin)
    top = model.topology
    levels = top.levels()
    parents = top.parent_array()
    total = [wrench[level] for level in levels]
    for li in range(len(levels) - 1, 0, -1):
        level, above = levels[li], levels[li - 1]
        rot, pos = kin.rot_local[level], kin.pos_local[level]
        f = ops.mv(rot, total[li][:, 3:])
        n = ops.mv(rot, total[li][:, :3]) + ops.cross(pos, f)
        moved = jnp.concatenate([n, f], 1)
        slot = {int(b): s for s, b in enumerate(above)}
        onehot = np.zeros((len(above), len(level)))
        onehot[[slot[int(p)] for p in parents[level]], np.arange(len(level))] = 1.0
        total[li - 1] = total[li - 1] + jnp.einsum("pc,c...->p...", jnp.asarray(onehot, ops.dtype), moved)
    inv = np.argsort(np.concatenate(levels)) if levels else np.zeros(0, int)
    return jnp.concatenate(total)[inv] if levels else wrench


def _joint_torques(model: Model, kin: Kinematics, total):
    """τ_θ = s_iᵀ W_i and the generalized force Fᵀ τ_θ ``(nq, *b)``."""
    ops = _ops_of(kin)
    s = _motion_subspace(model, ops)
    tau_theta = ops.dot(s, total)
    return jnp.sum(kin.theta_grad * tau_theta[:, None], 0)


def generalized_forces(model: Model, q, bodies, points, forces, torques=None):
    """Generalized force Q = Σ_k (∂p_k/∂q)ᵀ F_k + (∂ω_{b_k}/∂q̇)ᵀ T_k (virtual work, Eq. 46/161).

    ``bodies`` is a body (name or index) or a sequence of them ``(n,)``; ``points`` ``(n, 3)`` in
    the body frames; ``forces`` and ``torques`` ``(n, 3)`` in world coordinates.  Single
    applications may be passed without the leading axis.  Every applied load (muscle, ligament,
    contact) reaches the coordinates through :func:`body_wrench_forces`.
    """
    require_model(model, "generalized_forces")
    if isinstance(bodies, (str, int, np.integer)):  # one body: a (3,) point, force, torque gains the load axis
        bodies = [bodies]
        points, forces, torques = (None if a is None else jnp.asarray(a)[None] if jnp.ndim(a) == 1 else jnp.asarray(a)
                                   for a in (points, forces, torques))
    idx = np.asarray([model.body_index(b) for b in bodies], dtype=np.int32)
    points = jnp.asarray(points)
    forces = jnp.asarray(forces)
    if points.shape != (len(idx), 3) or forces.shape != (len(idx), 3):
        raise ValueError(
            f"generalized_forces: points and forces must have shape ({len(idx)}, 3), one row per entry of bodies "
            f"{tuple(bodies)}, got {points.shape} and {forces.shape} (one pose: jax.vmap over frames)"
        )
    points = _checks.finite(points, "generalized_forces: points")
    forces = _checks.finite(forces, "generalized_forces: forces")
    if torques is not None:
        torques = jnp.asarray(torques)
        if torques.shape != (len(idx), 3):
            raise ValueError(f"generalized_forces: torques must have shape ({len(idx)}, 3), got {torques.shape}")
        torques = _checks.finite(torques, "generalized_forces: torques")
    poses = body_poses(model, q)
    rot = poses[idx, :3, :3]
    f_body = jnp.einsum("kab,ka->kb", rot, forces)  # Rᵀ F
    n_body = jnp.cross(points, f_body)
    if torques is not None:
        n_body = n_body + jnp.einsum("kab,ka->kb", rot, torques)
    wrench = jnp.zeros((model.n_bodies, 6), f_body.dtype).at[idx].add(jnp.concatenate([n_body, f_body], -1))
    return body_wrench_forces(model, q, wrench)


def _wrench_kernel(model: Model, q, wrench):
    kin = forward_pass(model, q)
    return _joint_torques(model, kin, subtree_wrenches(model, kin, wrench.astype(kin.theta.dtype)))


def body_wrench_forces(model: Model, q, wrench):
    """Generalized force Q ``(nq,)`` of body-frame wrenches ``(nb, 6)`` = [moment about the body
    origin; force], both in body axes: Q = Fᵀ τ_θ with τ_θ the joint components of their subtree sums.
    """
    require_model(model, "body_wrench_forces")
    wrench = _checks.as_array(wrench, "wrench", (model.n_bodies, 6), ("nb", 6), f" for bodies {model.body_names}")
    wrench = _checks.finite(wrench, "wrench")
    return batch_last(_wrench_kernel)(model, check_vector(model, q, "q"), wrench)
