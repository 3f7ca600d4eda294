"""Generalized musculotendon lines of action and the moment-arm matrix (Ehsani Eq. 150-195).

With a unit tension in muscle ``k``, the path pulls each active point ``p`` with the force
``f_p = e_out(p) - e_in(p)`` (unit vectors of the segments leaving and entering ``p``).  Summed over
the points on body ``i`` and expressed in body ``i``'s frame this is the GMLAV E_ki (Definition 3:
``e`` towards the next body plus the reciprocal ``ē`` towards the previous one; segments inside a
body cancel), and its moment about the body origin is Ê_ki (Definition 4); bodies not in Γ_k get
zero (Definition 5, Eq. 153-154).  Resultant force and moment per body: Eq. 155-160
(:func:`body_wrenches`).

Virtual work (Eq. 161-192) gives ``δW = δqᵀ R F_mt`` with (Eq. 193, block form)

    R = Γ E + Jᵀ ϑ B Ê,

Γ = [γ_1 … γ_nb] ``(nq, 3nb)`` with γ_i of Eq. 176 (origin displacement of body ``i`` in its own
frame), E = [E_1; …] ``(3nb, nm)``, B = [β_1 … β_nb] ``(nb, 3nb)`` with β_ji of Eq. 179 (axis of
revolute joint ``j`` in body ``i``'s frame), ϑ the joint-type matrix (Eq. 178, 181), J = ∂f/∂q.
Eq. 195 is the same sum restricted to the bodies of Γ_k (column-sparse form).  Both use
Eq. 191 with β_i inside the sum (ERRATA).  Moving path points add the term
``Σ_p f_pᵀ ⁰R_b(p) ∂r_p/∂q`` (Holzbaur's zero-inertia "moving via point" bodies, folded in).

The fast path :func:`moment_arms` factors through world body Jacobians instead (one einsum per
pose, no per-body or per-muscle Python step).  All three agree with ``-jacfwd(muscle_lengths)``
(tests), and R equals ``-∂L/∂q`` (OpenSim's sign: positive when the muscle shortens as q grows).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import joint_values
from .._model import Model
from .paths import PathState, get_paths, muscle_lengths, path_state


def _body_onehot(paths, nb: int) -> np.ndarray:
    """Static ``(nm, P, nb + 1)`` indicator of the body of each point (ground last)."""
    body = np.asarray(paths.body, dtype=np.int64)
    valid = np.asarray(paths.valid, dtype=bool)
    idx = np.where(body < 0, nb, body)
    out = np.zeros(body.shape + (nb + 1,))
    m, p = np.nonzero(valid)
    out[m, p, idx[m, p]] = 1.0
    return out


def _moving_term(st: PathState, paths, nb: int):
    """``Σ_p f_pᵀ ⁰R_b(p) ∂r_p/∂q`` for every muscle, ``(nq, nm)`` (zero without moving points)."""
    if not paths.moving_maps:
        return jnp.zeros((st.d_local.shape[-1], st.force.shape[0]), st.force.dtype)
    f_local = jnp.einsum("mpab,mpa->mpb", st.rot, st.force)
    return jnp.einsum("mpb,mpbq->qm", f_local, st.d_local)


def _world_jacobians(model: Model, q):
    """𝒥_i(l) ``(nb, nq, 4, 4)`` with ∂T_i/∂q_l = 𝒥_i(l) T_i (Eq. 75 in world twist form)."""
    from .._kinematics import _compose, _twists, joint_transforms

    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    s = _twists(model, poses)
    anc = jnp.asarray(model.topology.ancestor_mask(), poses.dtype)
    return jnp.einsum("ij,jab,jl->ilab", anc, s, jv.gradient)


def moment_arms(model: Model, q) -> jnp.ndarray:
    """Moment-arm matrix R ``(nq, nm)`` = -∂L/∂q, fast path through joint space.

    With W_i = Σ_{p on body i} [x_p × f_p; f_p] the world wrench (about the origin) a unit tension
    applies to body ``i`` and S_j = Σ_{i ⪰ j} W_i its sum over the subtree of joint ``j``, the
    joint-space moment arms are R_θ[j] = w_j · (S_j^ang - p_j × S_j^lin) (revolute, world axis w_j
    through the origin p_j of body j) or w_j · S_j^lin (prismatic), and R = Jᵀ R_θ (DESIGN: the
    fast path factors through joint space; this is Eq. 193 regrouped by joints instead of bodies).
    No 4x4 products beyond the pose recursion.
    """
    paths = get_paths(model)
    st = path_state(model, q)
    nb = model.n_bodies
    dtype = st.world.dtype
    jv = joint_values(model, q)
    poses = st.poses[:nb]
    axis_w = jnp.einsum("jab,jb->ja", poses[:, :3, :3], model.axis.astype(dtype))
    onehot = jnp.asarray(_body_onehot(paths, nb)[..., :nb], dtype)
    w_ang = jnp.einsum("mpb,mpa->bam", onehot, jnp.cross(st.world, st.force))  # (nb, 3, nm)
    w_lin = jnp.einsum("mpb,mpa->bam", onehot, st.force)
    anc = jnp.asarray(model.topology.ancestor_mask(), dtype)  # [i, j]: j ∈ Anc(i) ∪ {i}
    s_ang = jnp.einsum("ij,iam->jam", anc, w_ang)
    s_lin = jnp.einsum("ij,iam->jam", anc, w_lin)
    moment = s_ang - jnp.cross(poses[:, None, :3, 3], jnp.swapaxes(s_lin, 1, 2)).swapaxes(1, 2)
    rev = jnp.asarray(model.topology.is_revolute())[:, None]
    r_theta = jnp.where(rev, jnp.einsum("ja,jam->jm", axis_w, moment), jnp.einsum("ja,jam->jm", axis_w, s_lin))
    return jv.gradient.astype(dtype).T @ r_theta + _moving_term(st, paths, nb)


def moment_arms_twist(model: Model, q) -> jnp.ndarray:
    """Second route: ``R[l, k] = Σ_p f_p · (𝒥_b(p)(l) [x_p; 1])`` with world twist matrices 𝒥."""
    paths = get_paths(model)
    st = path_state(model, q)
    nb = model.n_bodies
    jac = _world_jacobians(model, q).astype(st.world.dtype)  # (nb, nq, 4, 4)
    jac = jnp.concatenate([jac, jnp.zeros((1,) + jac.shape[1:], jac.dtype)], 0)
    xh = jnp.concatenate([st.world, jnp.ones(st.world.shape[:-1] + (1,), st.world.dtype)], -1)
    onehot = jnp.asarray(_body_onehot(paths, nb), st.world.dtype)
    per_body = jnp.einsum("mpb,mpa,mpc->bacm", onehot, st.force, xh)
    r = jnp.einsum("blac,bacm->lm", jac[:, :, :3, :], per_body)
    return r + _moving_term(st, paths, nb)


def moment_arms_autodiff(model: Model, q) -> jnp.ndarray:
    """Reference twin: ``-jacfwd(muscle_lengths)(q)ᵀ``, ``(nq, nm)``."""
    return -jax.jacfwd(lambda x: muscle_lengths(model, x))(jnp.asarray(q)).T


def gmlav(model: Model, q, st: PathState | None = None):
    """GMLAV E ``(nb, 3, nm)`` and its moment Ê ``(nb, 3, nm)`` in each body's frame (Def. 3-5).

    Row block ``i`` is zero for muscles outside Λ_i (Eq. 153-154).
    """
    paths = get_paths(model)
    st = path_state(model, q) if st is None else st
    nb = model.n_bodies
    f_local = jnp.einsum("mpba,mpb->mpa", st.rot, st.force)  # R_bᵀ f_p
    m_local = jnp.cross(st.local, f_local)
    onehot = jnp.asarray(_body_onehot(paths, nb)[..., :nb], st.world.dtype)
    e = jnp.einsum("mpb,mpa->bam", onehot, f_local)
    e_hat = jnp.einsum("mpb,mpa->bam", onehot, m_local)
    return e, e_hat


def body_wrenches(model: Model, q, forces):
    """Resultant musculotendon force and moment at each body origin, body frame (Eq. 155-160).

    ``forces`` ``(nm,)`` are tensions F_mt; returns ``F_O (nb, 3)`` and ``M_O (nb, 3)``.
    """
    e, e_hat = gmlav(model, q)
    forces = jnp.asarray(forces, e.dtype)
    return jnp.einsum("bam,m->ba", e, forces), jnp.einsum("bam,m->ba", e_hat, forces)


def gamma_beta(model: Model, q):
    """γ_i (Eq. 176) ``(nb, nq, 3)``, β ``(nb_i, nb_j, 3)`` (β_ji of Eq. 179), ϑ (Eq. 178) and J.

    γ_i = Σ_{j ∈ Anc(i)∪{i}} c_ji ⊗ ∇f_j with c_ji the displacement of body ``i``'s origin per unit
    f_j in body ``i``'s frame: ``ω̂_j × (p_i - p_j)`` (revolute) or the axis (prismatic).
    """
    from .._kinematics import _compose, joint_transforms

    top = model.topology
    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    rot, pos = poses[:, :3, :3], poses[:, :3, 3]
    axis_w = jnp.einsum("jab,jb->ja", rot, model.axis.astype(rot.dtype))  # (nb, 3)
    anc = jnp.asarray(top.ancestor_mask(), rot.dtype)  # [i, j]
    rev = jnp.asarray(top.is_revolute(), rot.dtype)
    lever = pos[:, None, :] - pos[None, :, :]  # [i, j] p_i - p_j
    disp_w = jnp.where(
        rev[None, :, None] > 0, jnp.cross(axis_w[None, :, :], lever), axis_w[None, :, :]
    )  # [i, j, 3]
    disp_i = jnp.einsum("iba,ijb->ija", rot, disp_w) * anc[..., None]
    gamma = jnp.einsum("ija,jl->ila", disp_i, jv.gradient)
    beta = jnp.einsum("iba,jb->ija", rot, axis_w) * anc[..., None]
    return gamma, beta, rev, jv.gradient


def moment_arms_block(model: Model, q) -> jnp.ndarray:
    """R by the block form R = Γ E + Jᵀ ϑ B Ê (Eq. 193) plus the moving-point term."""
    paths = get_paths(model)
    st = path_state(model, q)
    e, e_hat = gmlav(model, q, st)
    gamma, beta, rev, jac = gamma_beta(model, q)
    nb, nq = jac.shape
    nm = e.shape[-1]
    big_gamma = jnp.transpose(gamma, (1, 0, 2)).reshape(nq, 3 * nb)  # [γ_1 … γ_nb]
    big_e = e.reshape(3 * nb, nm)
    big_beta = jnp.transpose(beta, (1, 0, 2)).reshape(nb, 3 * nb)  # [β_1 … β_nb], rows j
    big_e_hat = e_hat.reshape(3 * nb, nm)
    r = big_gamma @ big_e + jac.T @ (rev[:, None] * (big_beta @ big_e_hat))
    return r + _moving_term(st, paths, nb)


def moment_arms_sparse(model: Model, q) -> jnp.ndarray:
    """R column by column from the bodies of Γ_k only (Eq. 195), vectorised over muscles."""
    paths = get_paths(model)
    st = path_state(model, q)
    e, e_hat = gmlav(model, q, st)
    gamma, beta, rev, jac = gamma_beta(model, q)
    mem = np.asarray(paths.membership(), dtype=np.int32)  # (nm, G), -1 padded
    mask = jnp.asarray(mem >= 0, e.dtype)
    safe = np.maximum(mem, 0)
    cols = np.arange(mem.shape[0])[:, None]
    e_k = e[safe, :, cols] * mask[..., None]  # (nm, G, 3)
    e_hat_k = e_hat[safe, :, cols] * mask[..., None]
    lin = jnp.einsum("mgla,mga->lm", gamma[safe], e_k)
    ang = jnp.einsum("mgja,mga->jm", beta[safe], e_hat_k)
    r = lin + jac.T @ (rev[:, None] * ang)
    return r + _moving_term(st, paths, model.n_bodies)
