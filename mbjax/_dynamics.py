"""Equations of motion by virtual work (Ehsani §4, Eq. 124-198): M q̈ + N q̇ = G + Q.

Fast path (default).  Poses depend on q only through the joint variables θ = f(q) (Eq. 75), so
with F = ∇f ``(nb, nq)`` and the joint Hessians H_j

    θ̇ = F q̇,   θ̈ = F q̈ + h,   h_j = q̇ᵀ H_j q̇,
    M_q = Fᵀ M_θ F,   N q̇ = Fᵀ τ_θ(θ, F q̇, h)|_(g=0),   G_q = Fᵀ G_θ,

where M_θ, τ_θ, G_θ belong to the *free* tree with one 1-dof joint per body.  They are computed
in world coordinates (spatial vectors ``[angular; linear]`` at the world origin): the joint twist
S_j (from the 4x4 S_j = T_j Â_j T_j⁻¹ of :mod:`._kinematics`), body velocities v_i = Σ_{j⪯i} S_j θ̇_j,
accelerations a_i = Σ_{j⪯i} (S_j θ̈_j + (v_j × S_j) θ̇_j), Newton-Euler body wrenches
w_i = I_i (a_i - [0; g]) + v_i ×* I_i v_i and τ_j = S_jᵀ Σ_{i⪰j} w_i (recursive Newton-Euler);
M_θ[j, k] = S_jᵀ I^c_j S_k for k ⪯ j (composite rigid body).  Every sum over ancestors or
descendants is one product with the static ancestor mask, so there is no per-body Python step.

Reference twins (tests): :func:`mass_matrix_kron` (Eq. 145 summed per Eq. 189),
:func:`bias_forces_kron` (N derived from the 2nd part of Eq. 126; Eq. 147 as printed repeats
Eq. 145), :func:`gravity_forces_kron` (Eq. 187), and the autodiff Lagrangian
(:func:`kinetic_energy`, :func:`potential_energy`, ``*_lagrangian``).

Sign convention (Eq. 198): ``inverse_dynamics`` returns τ with M q̈ + N q̇ - G - Q = τ.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from . import _kron
from ._kinematics import (
    _compose,
    _twists,
    joint_transforms,
    joint_values,
    pose_derivatives_kron,
)
from ._model import Model
from ._spatial import homogeneous, skew

# --------------------------------------------------------------------------------------------
# spatial algebra (world frame, [angular; linear] at the world origin)
# --------------------------------------------------------------------------------------------


def _twist6(s4):
    """6-vectors ``[ω; v_o]`` from 4x4 twist matrices ``(..., 4, 4)``."""
    w = jnp.stack([s4[..., 2, 1], s4[..., 0, 2], s4[..., 1, 0]], -1)
    return jnp.concatenate([w, s4[..., :3, 3]], -1)


def _cross_motion(v, m):
    """Motion cross product v × m for spatial motion vectors ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    mw, mv = m[..., :3], m[..., 3:]
    return jnp.concatenate([jnp.cross(w, mw), jnp.cross(vo, mw) + jnp.cross(w, mv)], -1)


def _cross_force(v, f):
    """Force cross product v ×* f for a motion ``v`` and a wrench ``f = [n; f]`` ``(..., 6)``."""
    w, vo = v[..., :3], v[..., 3:]
    n, fl = f[..., :3], f[..., 3:]
    return jnp.concatenate([jnp.cross(w, n) + jnp.cross(vo, fl), jnp.cross(w, fl)], -1)


def _spatial_inertia(model: Model, poses):
    """World spatial inertias about the world origin, ``(nb, 6, 6)``."""
    rot = poses[:, :3, :3]
    c = jnp.einsum("bij,bj->bi", rot, model.com) + poses[:, :3, 3]
    i_c = rot @ model.inertia @ jnp.swapaxes(rot, 1, 2)
    m = model.mass[:, None, None]
    cx = skew(c)
    eye = jnp.eye(3, dtype=poses.dtype)
    top = jnp.concatenate([i_c + m * cx @ jnp.swapaxes(cx, 1, 2), m * cx], -1)
    bot = jnp.concatenate([m * jnp.swapaxes(cx, 1, 2), m * eye], -1)
    return jnp.concatenate([top, bot], -2)


def _joint_space(model: Model, q):
    """Joint values, world poses, world joint twists ``(nb, 6)``, ancestor mask, inertias."""
    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    s = _twist6(_twists(model, poses))
    anc = jnp.asarray(model.topology.ancestor_mask(), poses.dtype)
    inertia = _spatial_inertia(model, poses)
    return jv, poses, s, anc, inertia


def _rnea(s, anc, inertia, thd, thdd, a0):
    """Free-tree inverse dynamics τ_θ ``(nb,)`` (world-frame recursive Newton-Euler, masked sums)."""
    v = anc @ (s * thd[:, None])  # v_i = Σ_{j⪯i} S_j θ̇_j
    sdot = _cross_motion(v, s)  # Ṡ_j = v_j × S_j
    a = anc @ (s * thdd[:, None] + sdot * thd[:, None]) + a0
    h = jnp.einsum("bij,bj->bi", inertia, v)
    w = jnp.einsum("bij,bj->bi", inertia, a) + _cross_force(v, h)
    return jnp.einsum("jk,jk->j", s, anc.T @ w)  # τ_j = S_jᵀ Σ_{i⪰j} w_i


def _base_acceleration(model: Model, dtype):
    return jnp.concatenate([jnp.zeros(3, dtype), -model.gravity.astype(dtype)])


def joint_space_mass_matrix(model: Model, q):
    """M_θ of the free tree (composite rigid body), ``(nb, nb)``."""
    _, _, s, anc, inertia = _joint_space(model, q)
    return _crb(s, anc, inertia)


def _crb(s, anc, inertia):
    ic = jnp.einsum("ij,iab->jab", anc, inertia)  # I^c_j = Σ_{i⪰j} I_i
    x = jnp.einsum("ja,jab,kb->jk", s, ic, s)  # S_jᵀ I^c_j S_k
    low = anc * x  # entries with k ⪯ j
    return low + low.T - jnp.diag(jnp.diag(x))


# --------------------------------------------------------------------------------------------
# public fast path
# --------------------------------------------------------------------------------------------


def mass_matrix(model: Model, q):
    """Mass matrix M(q) ``(nq, nq)`` of Eq. 188-189, as Fᵀ M_θ F (composite rigid body)."""
    jv, _, s, anc, inertia = _joint_space(model, q)
    f = jv.gradient
    return f.T @ _crb(s, anc, inertia) @ f


def bias_forces(model: Model, q, qd):
    """Coriolis and centrifugal term N(q, q̇) q̇ ``(nq,)`` (Eq. 146/190), without gravity."""
    jv, _, s, anc, inertia = _joint_space(model, q)
    f = jv.gradient
    thd = f @ qd
    h = jnp.einsum("jlm,l,m->j", jv.hessian, qd, qd)
    zero = jnp.zeros(6, s.dtype)
    return f.T @ _rnea(s, anc, inertia, thd, h, zero)


def gravity_forces(model: Model, q):
    """Generalized gravity force G(q) ``(nq,)`` (Eq. 187/197, right-hand side of Eq. 198)."""
    jv, _, s, anc, inertia = _joint_space(model, q)
    g6 = jnp.concatenate([jnp.zeros(3, s.dtype), model.gravity.astype(s.dtype)])
    w = jnp.einsum("bij,j->bi", inertia, g6)  # gravity wrench [c × m g; m g]
    g_theta = jnp.einsum("jk,jk->j", s, anc.T @ w)
    return jv.gradient.T @ g_theta


def inverse_dynamics(model: Model, q, qd, qdd, external=None):
    """Generalized force τ with M q̈ + N q̇ - G - Q = τ (Eq. 198), by recursive Newton-Euler.

    ``external`` is an optional generalized force Q ``(nq,)`` (e.g. from
    :func:`generalized_forces`).  Computed as Fᵀ τ_θ(θ, F q̇, F q̈ + h) with gravity as a base
    acceleration.
    """
    jv, _, s, anc, inertia = _joint_space(model, q)
    f = jv.gradient
    thd = f @ qd
    thdd = f @ qdd + jnp.einsum("jlm,l,m->j", jv.hessian, qd, qd)
    tau = f.T @ _rnea(s, anc, inertia, thd, thdd, _base_acceleration(model, s.dtype))
    if external is not None:
        tau = tau - external
    return tau


def forward_dynamics(model: Model, q, qd, tau=None):
    """q̈ solving M q̈ = G + τ - N q̇ (Eq. 198) with a Cholesky factorization of M.

    ``tau`` ``(nq,)`` is any applied generalized force (actuation plus external Q).  M must be
    positive definite: a coordinate that moves only zero-inertia bodies makes it singular and
    gives non-finite q̈.
    """
    jv, _, s, anc, inertia = _joint_space(model, q)
    f = jv.gradient
    m = f.T @ _crb(s, anc, inertia) @ f
    thd = f @ qd
    h = jnp.einsum("jlm,l,m->j", jv.hessian, qd, qd)
    # τ_θ at zero θ̈ holds bias plus gravity: rhs = τ - Fᵀ τ_θ(θ, θ̇, h)
    c = f.T @ _rnea(s, anc, inertia, thd, h, _base_acceleration(model, s.dtype))
    rhs = -c if tau is None else tau - c
    return jsl.cho_solve(jsl.cho_factor(m, lower=True), rhs)


def generalized_forces(model: Model, q, bodies, points, forces, torques=None):
    """Generalized force Q = Σ_k (∂p_k/∂q)ᵀ F_k + (∂ω_{b_k}/∂q̇)ᵀ T_k (virtual work, Eq. 46/161).

    ``bodies`` is a body (name or index) or a sequence of them ``(n,)``; ``points`` ``(n, 3)`` in
    the body frames; ``forces`` and ``torques`` ``(n, 3)`` in world coordinates.  Single
    applications may be passed without the leading axis.
    """
    if isinstance(bodies, (str, int, np.integer)):
        bodies = [bodies]
        points = jnp.asarray(points)[None]
        forces = jnp.asarray(forces)[None]
        torques = None if torques is None else jnp.asarray(torques)[None]
    idx = np.asarray([model.body_index(b) for b in bodies], dtype=np.int32)
    points = jnp.asarray(points)
    forces = jnp.asarray(forces)
    if points.shape != (len(idx), 3) or forces.shape != (len(idx), 3):
        raise ValueError(
            f"generalized_forces: points and forces must have shape ({len(idx)}, 3), got "
            f"{points.shape} and {forces.shape}"
        )
    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    s = _twist6(_twists(model, poses))
    anc = jnp.asarray(model.topology.ancestor_mask(), poses.dtype)
    p_world = jnp.einsum("kab,kb->ka", poses[idx], homogeneous(points))[:, :3]
    moment = jnp.cross(p_world, forces)
    if torques is not None:
        torques = jnp.asarray(torques)
        if torques.shape != (len(idx), 3):
            raise ValueError(f"generalized_forces: torques must have shape ({len(idx)}, 3)")
        moment = moment + torques
    wrench = jnp.concatenate([moment, forces], -1)  # at the world origin
    per_body = jnp.zeros((model.n_bodies, 6), wrench.dtype).at[idx].add(wrench)
    q_theta = jnp.einsum("jk,jk->j", s, anc.T @ per_body)
    return jv.gradient.T @ q_theta


# --------------------------------------------------------------------------------------------
# literal Kronecker reference path (Eq. 145, 126, 187); test oracles
# --------------------------------------------------------------------------------------------


def _kron_setup(model: Model, q, derivs):
    nq = model.n_coordinates
    if derivs is None:
        b, d, dd = pose_derivatives_kron(model, q)
    else:
        b, d, dd = derivs
    dtype = d[0].dtype
    return nq, b, d, dd, dtype, model.pseudo_inertia().astype(dtype)


def mass_matrix_kron(model: Model, q, derivs=None):
    """M = Σ_i C1ᵀ (J_i ⊗ U_{nq,4}ᵀ)(D_i D_iᵀ ⊗ I_4)(I_4 ⊗ U_{nq,4}) C1 (Eq. 142, 145, 189).

    Literal Kronecker products (Python loop over bodies): a test oracle, not a fast path.
    ``derivs`` may pass ``(B, D, D')`` lists in the paper's layout.
    """
    nq, _, d, _, dtype, jmat = _kron_setup(model, q, derivs)
    eye4 = jnp.eye(4, dtype=dtype)
    u = _kron.commutation_matrix(nq, 4, dtype)
    c1 = jnp.kron(eye4.reshape(16, 1), jnp.eye(nq, dtype=dtype))
    right = jnp.kron(eye4, u) @ c1
    out = jnp.zeros((nq, nq), dtype)
    for i in range(model.n_bodies):
        left = c1.T @ jnp.kron(jmat[i], u.T)
        out = out + left @ jnp.kron(d[i] @ d[i].T, eye4) @ right
    return out


def bias_forces_kron(model: Model, q, qd, derivs=None):
    """N q̇ from the 2nd part of Eq. 126, with the manipulations of Eq. 134-145 applied to it.

    ∫ trace[2nd part] dm = δqᵀ N_i q̇ with (q̇^[2] = q̇ ⊗ q̇, C_2 = vec(I_4) ⊗ I_{nq²})

        N_i q̇ = C1ᵀ (J_i ⊗ U_{nq,4}ᵀ)(D_i D'_iᵀ ⊗ I_4)(I_4 ⊗ U_{nq²,4}) C_2 q̇^[2],

    i.e. Eq. 145 with D_iᵀ → D'_iᵀ and q̈ → q̇ ⊗ q̇ (Eq. 147 as printed repeats Eq. 145, see
    ERRATA).  Returns N q̇ = Σ_i N_i q̇ ``(nq,)`` (Eq. 190).
    """
    nq, _, d, dd, dtype, jmat = _kron_setup(model, q, derivs)
    eye4 = jnp.eye(4, dtype=dtype)
    u = _kron.commutation_matrix(nq, 4, dtype)
    u2 = _kron.commutation_matrix(nq * nq, 4, dtype)
    c1 = jnp.kron(eye4.reshape(16, 1), jnp.eye(nq, dtype=dtype))
    c2 = jnp.kron(eye4.reshape(16, 1), jnp.eye(nq * nq, dtype=dtype))
    qd2 = jnp.kron(qd, qd)
    right = jnp.kron(eye4, u2) @ (c2 @ qd2)
    out = jnp.zeros((nq,), dtype)
    for i in range(model.n_bodies):
        left = c1.T @ jnp.kron(jmat[i], u.T)
        out = out + left @ (jnp.kron(d[i] @ dd[i].T, eye4) @ right)
    return out


def gravity_forces_kron(model: Model, q, derivs=None):
    """G = Σ_i m_i ({ⁱr_cmᵀ | 1} ⊗ I_nq) D_i {g; 0} (Eq. 187, 197)."""
    nq, _, d, _, dtype, _ = _kron_setup(model, q, derivs)
    g4 = jnp.concatenate([model.gravity.astype(dtype), jnp.zeros(1, dtype)])
    out = jnp.zeros((nq,), dtype)
    for i in range(model.n_bodies):
        r = jnp.concatenate([model.com[i].astype(dtype), jnp.ones(1, dtype)])[None]
        out = out + model.mass[i] * (jnp.kron(r, jnp.eye(nq, dtype=dtype)) @ d[i] @ g4)
    return out


# --------------------------------------------------------------------------------------------
# autodiff Lagrangian twins (independent route for tests and benchmarks)
# --------------------------------------------------------------------------------------------


def kinetic_energy(model: Model, q, qd):
    """T = ½ Σ_i trace(Ṫ_i J_i Ṫ_iᵀ) with Ṫ_i = jvp of the world poses and J_i of Eq. 131."""
    from ._kinematics import body_poses

    _, tdot = jax.jvp(lambda x: body_poses(model, x), (q,), (qd,))
    jmat = model.pseudo_inertia().astype(tdot.dtype)
    return 0.5 * jnp.einsum("iab,ibc,iac->", tdot, jmat, tdot)


def potential_energy(model: Model, q):
    """V = -Σ_i m_i gᵀ c_i (gravity only)."""
    from ._kinematics import body_poses

    poses = body_poses(model, q)
    c = jnp.einsum("bij,bj->bi", poses[:, :3, :3], model.com) + poses[:, :3, 3]
    return -jnp.sum(model.mass * (c @ model.gravity))


def mass_matrix_lagrangian(model: Model, q):
    """M = ∂²T/∂q̇² by autodiff."""
    return jax.hessian(lambda v: kinetic_energy(model, q, v))(jnp.zeros_like(q))


def bias_forces_lagrangian(model: Model, q, qd):
    """N q̇ = (∂²T/∂q̇∂q) q̇ - ∂T/∂q (d/dt ∂T/∂q̇ - ∂T/∂q at q̈ = 0) by autodiff."""
    dt_dqd = lambda x: jax.grad(kinetic_energy, argnums=2)(model, x, qd)
    _, mixed = jax.jvp(dt_dqd, (q,), (qd,))
    return mixed - jax.grad(kinetic_energy, argnums=1)(model, q, qd)


def gravity_forces_lagrangian(model: Model, q):
    """G = -∂V/∂q by autodiff."""
    return -jax.grad(potential_energy, argnums=1)(model, q)


def inverse_dynamics_lagrangian(model: Model, q, qd, qdd):
    """τ = M q̈ + N q̇ - G, every term from the autodiff Lagrangian."""
    return (
        mass_matrix_lagrangian(model, q) @ qdd
        + bias_forces_lagrangian(model, q, qd)
        - gravity_forces_lagrangian(model, q)
    )


def total_energy(model: Model, q, qd):
    """T + V (gravity only), for energy-conservation checks."""
    return kinetic_energy(model, q, qd) + potential_energy(model, q)
