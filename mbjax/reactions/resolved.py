"""Joint reactions in O(n) from one Newton-Euler pass (the fast resolved form of Blajer Eq. 2.10).

With all six augmented coordinates z at a joint, Blajer's λ6_c = E_cᵀ(h - M(D q̈ + γ)) is the
total applied-minus-inertial wrench of the subtree below the cut (Eq. 2.10 read through Eq.
2.4: E_c moves the subtree rigidly).  That is exactly the backward half of recursive
Newton-Euler: with body-frame wrenches w_i = I_i a_i + v_i ×* I_i v_i - (applied loads), gravity
as the base acceleration -g, the subtree sums W_i = Σ_{k ⪰ i} ᵢX*_k w_k
(:func:`mbjax._wrenches.subtree_wrenches`) are the wrenches the parent transmits to each body
through its joint, about the body origin (the joint point), in body axes.  So

    local_c = W_c = -λ6_c,     components_c = Z_cᵀ W_c (= -λ_c, Eq. 2.10),     reaction_c = Z_c Z_cᵀ W_c.

No D, E, M or γ is formed and nothing is differentiated: one kinematics pass (levels down), one
wrench pass (levels up).  The whole computation is a batch-last kernel (:func:`batch_last`), so
``jax.vmap(joint_reactions)`` runs it with the poses last.

Prohibited directions Z_c.  Single revolute / prismatic joints and welds: fixed bases
(:func:`.spec.fixed_directions`).  Chains through zero-inertia bodies: the free motions are
spanned by the joint twists s_b of the chain's moving bodies moved to the child frame at the
joint point, ᶜX_b s_b (or, when coupled maps make the chain's dof smaller than its number of
moving joints, by the relative twist Jacobian columns J_rel[:, l] = Σ_b ᶜX_b s_b F_bl over the
coordinates read).  A fixed-size pivoted Gram-Schmidt (pivot = first candidate whose residual is
at least half the largest: deterministic, well conditioned) gives an orthonormal free basis U;
the same on the projected unit vectors (I - U Uᵀ) e_k, tried in the order [forces; moments],
gives Z_c.  So a ball joint's components are the force in child axes, a planar chain's
[F_z, M_x, M_y].  Chains of all joints are processed together (padded), never one traced step
per joint.  A chain moving with fewer independent directions than its static dof raises.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._batching import Small, batch_last
from .._dynamics import _cross_force, _inertia_times
from .._wrenches import subtree_wrenches
from .._kinematics import _motion_subspace, check_vector, forward_pass
from .._model import Model
from .._loads import checked_loads
from .spec import CHAIN, ExternalLoads, JointReactions, ReactionSpec, as_spec, fixed_directions

RANK_RTOL = 1e-9  # squared residual of a free direction relative to the largest candidate


def _pivoted_gram_schmidt(ops: Small, cand, steps: int, active: np.ndarray):
    """Orthonormal vectors from candidates ``cand (n, K, 6, *b)`` by greedy pivoting.

    Step ``k`` (of ``steps``) runs for the rows with ``active[:, k]``; the others add zeros.  The
    pivot is the first candidate whose squared residual is ≥ ½ the largest.  Returns the vectors
    ``(n, steps, 6, *b)`` and each step's pivot residual relative to the largest initial
    candidate (``(n, steps, *b)``, 1 where inactive) for the rank check.
    """
    k_axis = 1
    n2 = jnp.sum(cand * cand, 2)
    scale = jnp.maximum(jnp.max(n2, k_axis), 1.0)
    res, vecs, quality = cand, [], []
    for step in range(steps):
        n2 = jnp.sum(res * res, 2)  # (n, K, *b)
        pick = jnp.argmax(n2 >= 0.5 * jnp.max(n2, k_axis, keepdims=True), k_axis)
        onehot = jax.nn.one_hot(pick, res.shape[k_axis], axis=k_axis, dtype=res.dtype)  # (n, K, *b)
        u = jnp.sum(ops.expand(onehot, -1) * res, k_axis)  # (n, 6, *b)
        nu2 = jnp.sum(u * u, 1)
        act = ops.mask(active[:, step])
        u = jnp.where(ops.expand(act, -1), u / ops.expand(jnp.sqrt(jnp.where(nu2 > 0, nu2, 1.0)), -1), 0.0)
        res = res - ops.expand(jnp.sum(res * u[:, None], 2), -1) * u[:, None]
        vecs.append(u)
        quality.append(jnp.where(act, nu2 / scale, 1.0))
    return jnp.stack(vecs, 1), jnp.stack(quality, 1)


def _chain_directions(model: Model, spec: ReactionSpec, kin, ops: Small, chain_pos):
    """Z of the chain joints ``(n_c, m_max, 6, *b)`` (padded) and rank qualities ``(n_c, *b)``."""
    moving = [spec.moving[k] for k in chain_pos]
    read = [spec.read[k] for k in chain_pos]
    cj = [spec.joints[k] for k in chain_pos]
    dof = np.asarray([6 - spec.n_components[k] for k in chain_pos])
    n_c, n_l = len(cj), max(len(mv) for mv in moving)
    cidx = np.asarray([[c] * n_l for c in cj])
    bidx = np.asarray([list(mv) + [mv[0]] * (n_l - len(mv)) for mv in moving])
    lmask = np.asarray([[i < len(mv) for i in range(n_l)] for mv in moving])
    # joint twists ᶜX_b s_b (child frame, joint point): ω = R_cb s_ω, v = R_cb s_v - ω × r_cb
    r_c, r_b = kin.rot[cidx], kin.rot[bidx]
    r_cb = ops.mtm(r_c, r_b)
    d = ops.mtv(r_c, kin.pos[bidx] - kin.pos[cidx])
    s = _motion_subspace(model, ops)[bidx]
    w = ops.mv(r_cb, s[:, :, :3])
    v = ops.mv(r_cb, s[:, :, 3:]) - ops.cross(w, d)
    tw = jnp.where(ops.mask(lmask[..., None]), jnp.concatenate([w, v], 2), 0.0)  # (n_c, L, 6, *b)
    coupled = np.asarray([dof[i] < len(moving[i]) for i in range(n_c)])
    if coupled.any():  # J_rel columns over the coordinates read: Σ_b twist_b F_bl
        n_k = max(n_l, max(len(r) for r in read))
        lidx = np.asarray([list(r) + [r[0]] * (n_k - len(r)) for r in read])  # (n_c, K)
        kmask = np.asarray([[i < len(r) for i in range(n_k)] for r in read])
        f = kin.theta_grad[bidx[:, None, :], lidx[:, :, None]]  # (n_c, K, L, *b)
        eye = np.zeros((n_c, n_k, n_l))
        eye[:, np.arange(min(n_k, n_l)), np.arange(min(n_k, n_l))] = 1.0
        sel = coupled[:, None, None]
        weight = jnp.where(ops.mask(sel & kmask[:, :, None]), f, 0.0) + ops.c(np.where(sel, 0.0, eye))
        cand = jnp.sum(ops.expand(weight, -1) * tw[:, None], 2)  # (n_c, K, 6, *b)
    else:
        cand = tw
    d_max = int(dof.max())
    free, quality = _pivoted_gram_schmidt(ops, cand, d_max, np.arange(d_max)[None] < dof[:, None])
    # complement: (I - U Uᵀ) e_k for e_k in the order [forces (v); moments (ω)]
    order = np.asarray([3, 4, 5, 0, 1, 2])
    basis = ops.c(np.eye(6)[order])[None]  # (1, 6 cand, 6, 1s)
    proj = basis - jnp.sum(ops.expand(free[:, :, order], -1) * free[:, :, None], 1)  # (n_c, 6, 6, *b)
    m = 6 - dof
    m_max = int(m.max())
    z, _ = _pivoted_gram_schmidt(ops, proj, m_max, np.arange(m_max)[None] < m[:, None])
    return z, jnp.min(quality, 1)


def _reaction_kernel(model: Model, spec: ReactionSpec, ext_bodies: tuple, q, qd, qdd, *ext):
    dtype = jnp.result_type(q, model.axis)
    a0 = jnp.zeros(6, dtype).at[3:].set(-model.gravity.astype(dtype))
    kin = forward_pass(model, q, qd, qdd, base_acceleration=a0)
    ops = Small(q.ndim - 1, kin.theta.dtype)
    v = kin.velocity
    wrench = _inertia_times(model, ops, kin.acceleration) + _cross_force(ops, v, _inertia_times(model, ops, v))
    if ext_bodies:  # applied loads in body axes about the body origin: subtract from the inertial wrench
        points, forces, torques = (x.astype(dtype) for x in ext)
        idx = np.asarray(ext_bodies, dtype=np.int32)
        rot = kin.rot[idx]
        f_b = ops.mtv(rot, forces)
        n_b = ops.cross(points, f_b) + ops.mtv(rot, torques)
        onehot = np.zeros((model.n_bodies, len(idx)))
        onehot[idx, np.arange(len(idx))] = 1.0
        wrench = wrench - jnp.einsum("bn,n...->b...", jnp.asarray(onehot, dtype), jnp.concatenate([n_b, f_b], 1))
    total = subtree_wrenches(model, kin, wrench)
    jj = np.asarray(spec.joints, dtype=np.int32)
    local = total[jj]
    rot, point = kin.rot[jj], kin.pos[jj]
    moment, force = ops.mv(rot, local[:, :3]), ops.mv(rot, local[:, 3:])
    comps = [None] * spec.n_joints
    recon = [None] * spec.n_joints
    chain_pos = [k for k, kind in enumerate(spec.kinds) if kind == CHAIN]
    quality = None  # (no chains: a zero-size output would break the chunked batch rule)
    if chain_pos:
        z, quality = _chain_directions(model, spec, kin, ops, chain_pos)  # (n_c, m_max, 6, *b)
        lam = ops.dot(z, local[np.asarray(chain_pos)][:, None])  # (n_c, m_max, *b)
        rec = ops.mtv(z, lam)
        for i, k in enumerate(chain_pos):
            comps[k], recon[k] = lam[i, : spec.n_components[k]], rec[i]
    groups: dict[int, list[int]] = {}
    for k, kind in enumerate(spec.kinds):
        if kind != CHAIN:
            groups.setdefault(spec.n_components[k], []).append(k)
    for m, ks in groups.items():  # pose-independent bases, one stacked product per size
        zg = jnp.stack([fixed_directions(model.axis[spec.joints[k]], spec.kinds[k], dtype) for k in ks])
        lam = ops.mtv(ops.c(zg), local[np.asarray(ks)])  # (n_g, m, *b)
        rec = ops.mv(ops.c(zg), lam)
        for i, k in enumerate(ks):
            comps[k], recon[k] = lam[i], rec[i]
    reaction = jnp.stack(recon) if recon else local
    return JointReactions(force, moment, point, local, tuple(comps), reaction), quality


@eqx.filter_jit
def _run(model: Model, spec: ReactionSpec, q, qd, qdd, external):
    ext_bodies = () if external is None else tuple(model.body_index(b) for b in external.bodies)
    ext = () if external is None or not ext_bodies else (external.points, external.forces, external.torques)
    kernel = lambda m, *xs: _reaction_kernel(m, spec, ext_bodies, *xs)
    out, quality = batch_last(kernel)(model, q, qd, qdd, *ext)
    chain_pos = [k for k, kind in enumerate(spec.kinds) if kind == CHAIN]
    for i, k in enumerate(chain_pos):
        out = eqx.error_if(
            out,
            quality[i] <= RANK_RTOL,
            f"joint_reactions: the zero-inertia chain ending at body {spec.names[k]!r} moves with fewer "
            f"than its {6 - spec.n_components[k]} independent directions here (rank-deficient choice: "
            "repeated/degenerate axes or coupled maps); choose a different joint",
        )
    return out


def joint_reactions(model: Model, q, qd, qdd, joints=None, external: ExternalLoads | None = None) -> JointReactions:
    """Reaction loads the parent exerts on the child at each chosen joint (Eq. 2.10, resolved form).

    ``joints``: child body names/indices, ``None`` (every body with mass) or a
    :class:`ReactionSpec` (required under ``jit`` of the model).  ``external``: applied
    :class:`ExternalLoads` (contact, muscle forces at their attachments).  O(n) per pose by one
    Newton-Euler pass (module docstring); ``jax.vmap`` over poses runs one batch-last kernel.
    Frames and conventions (OpenSim ``JointReaction``, Pinocchio ``data.f``): see
    :mod:`mbjax.reactions`.
    """
    spec = as_spec(model, joints)
    q = check_vector(model, q)
    qd = check_vector(model, qd, "qd")
    qdd = check_vector(model, qdd, "qdd")
    external = checked_loads(external, "joint_reactions")
    if external is not None and not external.in_body_frames:
        external = external.resolved(model, q)
    return _run(model, spec, q, qd, qdd, external)
