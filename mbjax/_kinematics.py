"""Closed-form kinematics of empirical body trees (Ehsani Eq. 38-99).

Fast path (default).  With T_i = ⁰ᵢA₄ the world pose of body ``i`` and Âᵢ its joint matrix
(Eq. 70-71, in the body frame), the world "joint twist" S_j = T_j Â_j T_j⁻¹ turns the paper's
W_ji = T_j Â_j ʲᵢA₄ (Eq. 76) into W_ji = S_j T_i, so Eq. 75 reads

    ∂T_i/∂q_l = (Σ_{j ∈ Anc(i)∪{i}} S_j F_jl) T_i =: 𝒥_i(l) T_i,         F = ∂f/∂q,

and differentiating again (the content of Eq. 89, unrolled over the tree)

    ∂²T_i/∂q_l∂q_m = Σ_{j ∈ Anc(i)∪{i}} κ_j(l, m) T_i,
    κ_j(l, m) = 𝒥_{pr(j)}(m) S_j F_jl + 𝒥_{pr(j)}(l) S_j F_jm + S_j² F_jl F_jm + S_j H_j,lm.

Both sums are one matrix product with the static ancestor mask, so the whole computation is a
handful of einsums with no per-body Python step and no Kronecker product.  The literal
Kronecker reference implementations of Eq. 74, 75 and 89 are :func:`pose_derivatives_kron`.

Array layout: ``dT[i, a, b, l] = ∂(T_i)_ab/∂q_l`` (``jax.jacfwd`` layout) and
``ddT[i, a, b, l, m]``.  The paper's B_i = T_iᵀ and its Definition-1 layout are available via
:meth:`PoseDerivatives.kron_layout`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _kron
from ._model import Model
from ._spatial import homogeneous, inverse_transform, rodrigues, skew, transform
from .maps._base import evaluate_global


class JointValues(NamedTuple):
    """f ``(nb,)``, ∇f ``(nb, nq)`` and H ``(nb, nq, nq)`` of every joint (one per body)."""

    value: jnp.ndarray
    gradient: jnp.ndarray
    hessian: jnp.ndarray


class PoseDerivatives(NamedTuple):
    """World poses T_i ``(nb, 4, 4)``, ∂T_i/∂q ``(nb, 4, 4, nq)`` and ∂²T_i/∂q² ``(nb, 4, 4, nq, nq)``."""

    pose: jnp.ndarray
    d_pose: jnp.ndarray
    dd_pose: jnp.ndarray | None

    def kron_layout(self):
        """The paper's B_i = T_iᵀ, D_i = ∂B_i/∂q ``(4nq, 4)`` and D'_i = ∂²B_i/∂q² ``(4nq², 4)``."""
        nq = self.d_pose.shape[-1]
        b = jnp.swapaxes(self.pose, -1, -2)
        # B_ab = T_ba; D[a*nq + l, b] = ∂B_ab/∂q_l
        d = jnp.transpose(self.d_pose, (0, 2, 3, 1)).reshape(-1, 4 * nq, 4)
        if self.dd_pose is None:
            return b, d, None
        dd = jnp.transpose(self.dd_pose, (0, 2, 3, 4, 1)).reshape(-1, 4 * nq * nq, 4)
        return b, d, dd


# --------------------------------------------------------------------------------------------
# joint maps and joint transforms
# --------------------------------------------------------------------------------------------


def joint_values(model: Model, q) -> JointValues:
    """Joint variables f(q) with closed-form ∇f and H, shapes ``(nb,)``, ``(nb, nq)``, ``(nb, nq, nq)``."""
    return _joint_values(model, q, with_derivatives=True)


def joint_variables(model: Model, q) -> jnp.ndarray:
    """Joint variables f(q) only, ``(nb,)`` (no derivative work; what ``body_poses`` needs)."""
    return _joint_values(model, q, with_derivatives=False).value


def _joint_values(model: Model, q, with_derivatives: bool) -> JointValues:
    q = jnp.asarray(q)
    top = model.topology
    if q.shape != (top.n_coordinates,):
        raise ValueError(
            f"q must have shape ({top.n_coordinates},) for coordinates {top.coordinate_names}, "
            f"got {q.shape}"
        )
    nb, nq = top.n_bodies, top.n_coordinates
    dtype = jnp.result_type(q, model.axis)
    f = jnp.zeros((nb,), dtype)
    grad = jnp.zeros((nb, nq), dtype)
    hess = jnp.zeros((nb, nq, nq), dtype)
    for family, bodies, inputs in zip(model.maps, top.map_bodies, top.map_inputs):
        idx = np.asarray(bodies)
        inputs = np.asarray(inputs, dtype=np.int32)
        if not with_derivatives:
            f = f.at[idx].set(family.value(q.astype(dtype)[inputs]).astype(dtype))
            continue
        fv, gv, hv = evaluate_global(family, inputs, q.astype(dtype))
        f = f.at[idx].set(fv.astype(dtype))
        grad = grad.at[idx].set(gv.astype(dtype))
        hess = hess.at[idx].set(hv.astype(dtype))
    return JointValues(f, grad, hess)


def joint_matrices(model: Model) -> jnp.ndarray:
    """Joint matrices Â_i (Eq. 70-71) in each body's frame, ``(nb, 4, 4)``: ∂J_i/∂f_i = J_i Â_i."""
    rev = jnp.asarray(model.topology.is_revolute())[:, None, None]
    nb = model.n_bodies
    rot_part = jnp.zeros((nb, 4, 4), model.axis.dtype).at[:, :3, :3].set(skew(model.axis))
    lin_part = jnp.zeros((nb, 4, 4), model.axis.dtype).at[:, :3, 3].set(model.axis)
    return jnp.where(rev, rot_part, lin_part)


def joint_transforms(model: Model, f) -> jnp.ndarray:
    """Parent-to-child transforms ᵖʳ⁽ⁱ⁾ᵢA₄ = O_i J_i(f_i) (Eq. 38-39), ``(nb, 4, 4)``."""
    rev = jnp.asarray(model.topology.is_revolute())
    rot = rodrigues(model.axis, jnp.where(rev, f, 0.0))
    trans = model.axis * jnp.where(rev, 0.0, f)[:, None]
    return model.offset @ transform(rot, trans)


def _compose(model: Model, local) -> jnp.ndarray:
    """World poses from parent-to-child transforms, one vectorised step per tree level."""
    top = model.topology
    parents = top.parent_array()
    poses = jnp.zeros_like(local)
    for level in top.levels():
        par = parents[level]
        if np.all(par < 0):
            poses = poses.at[level].set(local[level])
        else:
            base = jnp.where((par < 0)[:, None, None], jnp.eye(4, dtype=local.dtype), poses[np.maximum(par, 0)])
            poses = poses.at[level].set(base @ local[level])
    return poses


def body_poses(model: Model, q) -> jnp.ndarray:
    """World transforms ⁰ᵢA₄ (Eq. 40) of the bodies in ``model.body_names``, ``(nb, 4, 4)``."""
    return _compose(model, joint_transforms(model, joint_variables(model, q)))


# --------------------------------------------------------------------------------------------
# batch-last helpers (first-order kinematics for throughput kernels, e.g. moment arms)
# --------------------------------------------------------------------------------------------


class _Small:
    """Algebra on the small leading axes of arrays laid out ``(small..., *batch)``.

    Batch axes trail (structure of arrays): with ``jax.vmap`` the batch axis leads and every
    3-vector or 3x3 block is a strided scrap XLA:CPU reduces slowly; with the batch last, each
    entry of a small matrix is a contiguous run of poses and products over the small axes are
    unrolled into fused elementwise multiply-adds.  ``n_batch = 0`` is the single-pose case.
    """

    def __init__(self, n_batch: int, dtype):
        self.nbt = n_batch
        self.dtype = dtype

    def c(self, a):
        """A batch-free array (constant or model leaf) with trailing singleton batch axes."""
        a = jnp.asarray(a).astype(self.dtype)
        return a.reshape(a.shape + (1,) * self.nbt)

    def mask(self, a):
        """A static boolean table with trailing singleton batch axes."""
        a = jnp.asarray(np.asarray(a, dtype=bool))
        return a.reshape(a.shape + (1,) * self.nbt)

    def take(self, a, k: int, axis: int):
        """``a[..., k, ...]`` along small axis ``axis`` (negative, counted among the small axes)."""
        return jax.lax.index_in_dim(a, k, a.ndim + axis - self.nbt, keepdims=False)

    def expand(self, a, axis: int):
        """New small axis at ``axis`` (negative, counted among the small axes of the result)."""
        return jnp.expand_dims(a, a.ndim + 1 + axis - self.nbt)

    def mm(self, a, b):
        """``(..., I, K) @ (..., K, J)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.expand(self.take(a, k, -1), -1) * self.expand(self.take(b, k, -2), -2)
            out = t if out is None else out + t
        return out

    def mv(self, a, v):
        """``(..., I, K) @ (..., K)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.take(a, k, -1) * self.expand(self.take(v, k, -1), -1)
            out = t if out is None else out + t
        return out

    def dot(self, a, b):
        """``Σ_k a[..., k] b[..., k]`` over the last small axis, unrolled."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.take(a, k, -1) * self.take(b, k, -1)
            out = t if out is None else out + t
        return out

    def cross(self, a, b):
        a0, a1, a2 = (self.take(a, k, -1) for k in range(3))
        b0, b1, b2 = (self.take(b, k, -1) for k in range(3))
        out = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
        return jnp.stack(out, axis=a.ndim - 1 - self.nbt)

    @staticmethod
    def sum0(a):
        """Unrolled sum over the first axis."""
        out = a[0]
        for k in range(1, a.shape[0]):
            out = out + a[k]
        return out


def _materialize(x):
    """Identity that keeps ``x`` in memory under XLA:CPU instead of fusing it into its consumers.

    Loop fusion recomputes a fused producer once per element of each consumer, so an array read
    at several shifted positions or broadcast over a small axis (world path points, sines of
    joint angles, body Jacobians) is recomputed many times; ``lax.optimization_barrier`` is
    stripped before fusion on CPU.  A conditional's operand is a buffer, so an identity branch
    pins it; the predicate is a run-time value (``x₀ == x₀``, false only for NaN, where the
    other branch returns ``x + 0``) that XLA cannot fold.  Values and derivatives are unchanged;
    under ``vmap`` the conditional becomes a fused select (no effect, no harm).
    """
    if x.size == 0:
        return x
    flat = x.reshape(-1)
    return jax.lax.cond(flat[0] == flat[0], lambda v: v, lambda v: v + jnp.zeros((), v.dtype), x)


def _local_eval(family, x, n_batch: int):
    """``family.local`` value and gradient on local inputs ``x (n, k, *batch)``, batch last."""
    fn = lambda xx: family.local(xx)[:2]  # the Hessian is dead code under jit
    for _ in range(n_batch):
        fn = jax.vmap(fn, in_axes=-1, out_axes=-1)
    return fn(x)


def _scatter_gradient(ops: _Small, g, inputs: np.ndarray, nq: int, width: int | None = None):
    """Local gradients ``g (n, k, *batch)`` into ``(n, nq, *batch)`` at static input positions.

    Static one-hot multiply-adds instead of a scatter (``.at[].add``); duplicated inputs (padding)
    add up as in :func:`~mbjax.maps._base.evaluate_global`.
    """
    n = inputs.shape[0]
    k_max = min(g.shape[1], inputs.shape[1], g.shape[1] if width is None else width)
    out = None
    for k in range(k_max):
        onehot = np.zeros((n, nq))
        onehot[np.arange(n), inputs[:, k]] = 1.0
        t = ops.expand(g[:, k], -1) * ops.c(onehot)
        out = t if out is None else out + t
    if out is None:
        out = jnp.zeros((n, nq) + g.shape[2:], ops.dtype)
    return out


def _joint_values_first(model: Model, q, ops: _Small):
    """f ``(nb, *batch)`` and ∇f ``(nb, nq, *batch)`` for ``q (nq, *batch)``; no Hessian work.

    Families are concatenated and put in body order by one static gather (bodies without a map
    read a zero row) instead of per-family scatters.
    """
    top = model.topology
    nb, nq = top.n_bodies, top.n_coordinates
    batch = q.shape[1:]
    vals, grads, rows = [], [], []
    for family, bodies, inputs in zip(model.maps, top.map_bodies, top.map_inputs):
        inputs = np.asarray(inputs, dtype=np.int32)
        f, g = _local_eval(family, q[inputs], ops.nbt)
        vals.append(f.astype(ops.dtype))
        grads.append(_scatter_gradient(ops, g.astype(ops.dtype), inputs, nq))
        rows.extend(int(b) for b in bodies)
    perm = np.full(nb, len(rows))
    for pos, b in enumerate(rows):
        perm[b] = pos
    f = jnp.concatenate(vals + [jnp.zeros((1,) + batch, ops.dtype)])[perm]
    grad = jnp.concatenate(grads + [jnp.zeros((1, nq) + batch, ops.dtype)])[perm]
    return f, grad


def _world_frames(model: Model, f, ops: _Small):
    """World rotations ``(nb, 3, 3, *batch)`` and origins ``(nb, 3, *batch)`` from joint variables.

    Same quantities as :func:`body_poses` (Eq. 38-40) on 3x3 + 3 blocks, one level of the tree
    per step; the offset rotation is folded into Rodrigues' formula,
    O (I + ṽ sin θ + 2ṽ² sin²(θ/2)) = O + (Oṽ) sin θ + (Oṽ²) 2 sin²(θ/2).
    """
    top = model.topology
    rev = top.is_revolute()
    axis = model.axis
    k = skew(axis)
    off_r, off_p = model.offset[:, :3, :3], model.offset[:, :3, 3]
    angle = jnp.where(ops.mask(rev), f, 0.0)
    sin = _materialize(jnp.sin(angle))  # else recomputed for every matrix entry downstream
    vers = _materialize(2.0 * jnp.sin(0.5 * angle) ** 2)
    col = lambda s: ops.expand(ops.expand(s, -1), -1)
    r_loc = ops.c(off_r) + ops.c(off_r @ k) * col(sin) + ops.c(off_r @ (k @ k)) * col(vers)
    trans = ops.c(axis) * ops.expand(jnp.where(ops.mask(rev), 0.0, f), -1)
    p_loc = ops.mv(ops.c(off_r), trans) + ops.c(off_p)
    parents = top.parent_array()
    levels = top.levels()
    if not levels:
        return r_loc, p_loc
    slot = {}  # body -> position inside its level
    rots, poss = [], []
    for li, level in enumerate(levels):
        r_l, p_l = r_loc[level], p_loc[level]
        if li > 0:  # depth li > 0: every parent lies on level li - 1
            pos = np.asarray([slot[int(p)] for p in parents[level]])
            r_par, p_par = rots[li - 1][pos], poss[li - 1][pos]
            r_l, p_l = ops.mm(r_par, r_l), ops.mv(r_par, p_l) + p_par
        for s, b in enumerate(level):
            slot[int(b)] = s
        rots.append(r_l)
        poss.append(p_l)
    inv = np.argsort(np.concatenate(levels))
    return jnp.concatenate(rots)[inv], jnp.concatenate(poss)[inv]


# --------------------------------------------------------------------------------------------
# fast closed-form derivatives
# --------------------------------------------------------------------------------------------


def _mm(a, b):
    """Small matrix product over the last two axes as a broadcast multiply-and-sum.

    XLA on CPU runs many tiny batched ``dot_general``s slowly; elementwise products fuse into one
    loop instead (measured ~5x faster for the 4x4 products here under ``vmap``).
    """
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def _twists(model: Model, poses):
    """World joint twists S_j = T_j Â_j T_j⁻¹ as 4x4 matrices, ``(nb, 4, 4)``."""
    a_hat = joint_matrices(model)
    return _mm(_mm(poses, a_hat), inverse_transform(poses))


def pose_derivatives(model: Model, q, order: int = 2) -> PoseDerivatives:
    """T_i, ∂T_i/∂q and (``order=2``) ∂²T_i/∂q² in closed form (Eq. 75 and 89, einsum path)."""
    top = model.topology
    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    s = _twists(model, poses)
    anc = jnp.asarray(top.ancestor_mask(), poses.dtype)
    fq = jv.gradient  # (nb, nq)
    # 𝒥_i(l) = Σ_j A_ij S_j F_jl : (nb, nq, 4, 4)
    sf = s[:, None] * fq[:, :, None, None]
    jac = jnp.einsum("ij,jlab->ilab", anc, sf)  # constant mask: one large matmul under vmap
    d_pose = jnp.moveaxis(_mm(jac, poses[:, None]), 1, -1)
    if order < 2:
        return PoseDerivatives(poses, d_pose, None)
    parents = top.parent_array()
    jac_parent = jnp.where(
        (parents < 0)[:, None, None, None], 0.0, jac[np.maximum(parents, 0)]
    )  # 𝒥_pr(j)
    # κ_j(l, m)
    cross = _mm(jac_parent[:, None, :], sf[:, :, None])  # (j, l, m): 𝒥_pr(j)(m) S_j F_jl
    ss = _mm(s, s)
    kappa = (
        cross
        + jnp.swapaxes(cross, 1, 2)
        + ss[:, None, None] * (fq[:, :, None] * fq[:, None, :])[..., None, None]
        + s[:, None, None] * jv.hessian[..., None, None]
    )
    k_sum = jnp.einsum("ij,jlmab->ilmab", anc, kappa)
    dd_pose = jnp.moveaxis(_mm(k_sum, poses[:, None, None]), (1, 2), (-2, -1))
    return PoseDerivatives(poses, d_pose, dd_pose)


def body_jacobians(model: Model, q) -> jnp.ndarray:
    """World-frame twist Jacobians of all bodies, ``(nb, 6, nq)``, rows ``[angular; linear]``.

    The linear part is the velocity of the material point at the world origin (spatial velocity
    convention), so a point ``p`` moves with ``v = v_o + ω × p``.
    """
    top = model.topology
    jv = joint_values(model, q)
    poses = _compose(model, joint_transforms(model, jv.value))
    s = _twists(model, poses)
    anc = jnp.asarray(top.ancestor_mask(), poses.dtype)
    jac = jnp.einsum("ij,jab,jl->ilab", anc, s, jv.gradient)
    omega = jnp.stack([jac[..., 2, 1], jac[..., 0, 2], jac[..., 1, 0]], axis=1)  # (nb, 3, nq)
    lin = jnp.swapaxes(jac[..., :3, 3], 1, 2)  # (nb, 3, nq)
    return jnp.concatenate([omega, lin], axis=1)


def _as_points(points):
    points = jnp.asarray(points)
    single = points.ndim == 1
    return (points[None] if single else points), single


def point_positions(model: Model, q, body, points) -> jnp.ndarray:
    """World positions of body-fixed points (Eq. 41); ``points`` ``(3,)`` or ``(npts, 3)``."""
    i = model.body_index(body)
    pts, single = _as_points(points)
    world = jnp.einsum("ab,pb->pa", body_poses(model, q)[i], homogeneous(pts))[:, :3]
    return world[0] if single else world


def point_velocity(model: Model, q, qd, body, points, derivs: PoseDerivatives | None = None):
    """Velocity of body-fixed points, ⁰v = D_iᵀ([r; 1] ⊗ q̇) (Eq. 44)."""
    i = model.body_index(body)
    derivs = pose_derivatives(model, q, order=1) if derivs is None else derivs
    pts, single = _as_points(points)
    v = jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], homogeneous(pts), qd)[:, :3]
    return v[0] if single else v


def virtual_displacement(model: Model, q, dq, body, points, derivs: PoseDerivatives | None = None):
    """Virtual displacement δ⁰r = D_iᵀ([r; 1] ⊗ δq) of body-fixed points (Eq. 46)."""
    return point_velocity(model, q, dq, body, points, derivs)


def point_acceleration(model: Model, q, qd, qdd, body, points, derivs: PoseDerivatives | None = None):
    """Acceleration ⁰a = D'_iᵀ([r; 1] ⊗ q̇ ⊗ q̇) + D_iᵀ([r; 1] ⊗ q̈) (Eq. 57)."""
    i = model.body_index(body)
    derivs = pose_derivatives(model, q, order=2) if derivs is None else derivs
    pts, single = _as_points(points)
    r = homogeneous(pts)
    a = jnp.einsum("ablm,pb,l,m->pa", derivs.dd_pose[i], r, qd, qd)
    a = a + jnp.einsum("abl,pb,l->pa", derivs.d_pose[i], r, qdd)
    a = a[:, :3]
    return a[0] if single else a


# --------------------------------------------------------------------------------------------
# literal Kronecker reference path (tests only)
# --------------------------------------------------------------------------------------------


def pose_derivatives_kron(model: Model, q, method: str = "recursive"):
    """B_i, ∂B_i/∂q, ∂²B_i/∂q² in the paper's layout, built literally with Kronecker products.

    ``method="recursive"``: Eq. 74 for D_i and Eq. 89 for D'_i.  ``method="closed"``: Eq. 75
    (Σ_j W_jiᵀ ⊗ ∇f_j with W_ji of Eq. 76) for D_i, Eq. 89 for D'_i.  Python loops over bodies:
    this is a test oracle, not a fast path.  Returns lists ``B``, ``D``, ``Dpp`` over bodies.

    Eq. 88 as printed writes W_iiᵀ for the factor (Âᵢᵀ ᵖʳᵢA₄ᵀ) of Eq. 86; the latter is used.
    """
    top = model.topology
    nq = top.n_coordinates
    jv = joint_values(model, q)
    local = joint_transforms(model, jv.value)
    poses = _compose(model, local)
    a_hat = joint_matrices(model)
    dtype = poses.dtype
    eye_nq = jnp.eye(nq, dtype=dtype)
    u = _kron.commutation_matrix(nq, nq, dtype)
    grad = [jv.gradient[i].reshape(nq, 1) for i in range(top.n_bodies)]
    vec_h = [jv.hessian[i].reshape(nq * nq, 1) for i in range(top.n_bodies)]
    b_list, d_list, dd_list = [], [], []
    for i in range(top.n_bodies):
        p = top.parents[i]
        b_i = poses[i].T
        w_ii_t = a_hat[i].T @ poses[i].T  # W_iiᵀ = Âᵢᵀ ⁰ᵢA₄ᵀ
        local_t = local[i].T  # ᵖʳ⁽ⁱ⁾ᵢA₄ᵀ
        if method == "recursive":
            d_i = jnp.kron(w_ii_t, grad[i])
            if p >= 0:
                d_i = d_i + jnp.kron(local_t, eye_nq) @ d_list[p]
        elif method == "closed":
            d_i = jnp.zeros((4 * nq, 4), dtype)
            for j in top.ancestors(i) + (i,):
                t_ji = inverse_transform(poses[j]) @ poses[i]  # ʲᵢA₄
                w_ji = poses[j] @ a_hat[j] @ t_ji  # Eq. 76
                d_i = d_i + jnp.kron(w_ji.T, grad[j])
        else:
            raise ValueError(f"method must be 'recursive' or 'closed', got {method!r}")
        # Eq. 89
        dd_i = jnp.kron(a_hat[i].T, u) @ jnp.kron(d_i, grad[i]) + jnp.kron(w_ii_t, vec_h[i])
        if p >= 0:
            factor = a_hat[i].T @ local_t  # Âᵢᵀ ᵖʳᵢA₄ᵀ (Eq. 86)
            dd_i = dd_i + jnp.kron(factor, jnp.kron(eye_nq, grad[i])) @ d_list[p]
            dd_i = dd_i + jnp.kron(local_t, jnp.eye(nq * nq, dtype=dtype)) @ dd_list[p]
        b_list.append(b_i)
        d_list.append(d_i)
        dd_list.append(dd_i)
    return b_list, d_list, dd_list
