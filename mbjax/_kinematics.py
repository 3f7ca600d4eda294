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
Kronecker reference implementations of Eq. 74, 75 and 89 are
:func:`mbjax._kinematics_kron.pose_derivatives_kron`; body-fixed points: :mod:`mbjax._point_kinematics`.

Array layout: ``dT[i, a, b, l] = ∂(T_i)_ab/∂q_l`` (``jax.jacfwd`` layout) and
``ddT[i, a, b, l, m]``.  The paper's B_i = T_iᵀ and its Definition-1 layout are available via
:meth:`PoseDerivatives.kron_layout`.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._model import Model, require_model
from ._batching import Small, batch_last, materialize
from ._pose_checks import axis_rules, check_pose, check_vector, user_map_values  # noqa: F401 (re-exported)
from ._spatial import inverse_transform, skew


class JointValues(NamedTuple):
    """f ``(nb,)``, ∇f ``(nb, nq)`` and H ``(nb, nq, nq)`` of every joint (one per body)."""

    value: jnp.ndarray
    gradient: jnp.ndarray
    hessian: jnp.ndarray


class PoseDerivatives(NamedTuple):
    """World poses T_i ``(nb, 4, 4)``, ∂T_i/∂q ``(nb, 4, 4, nq)`` and ∂²T_i/∂q² ``(nb, 4, 4, nq, nq)``
    (None for ``order=1``) at the coordinates ``q`` ``(nq,)``, kept so that a function given these
    derivatives can check they are of its own ``q`` (None: not checked)."""

    pose: jnp.ndarray
    d_pose: jnp.ndarray
    dd_pose: jnp.ndarray | None
    q: jnp.ndarray | None = None

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
# the one kinematics pass (batch-last kernel; every other layer reads its result)
# --------------------------------------------------------------------------------------------


class Kinematics(NamedTuple):
    """Everything one pose's forward pass knows, laid out ``(small..., *batch)``.

    ``theta`` f(q) ``(nb,)``; ``theta_grad`` F = ∂f/∂q ``(nb, nq)``; ``rot_local``/``pos_local`` the
    parent-from-child transform ᵖʳ⁽ⁱ⁾ᵢA₄ = O_i J_i(f_i) (Eq. 38-39) as ``(nb, 3, 3)``/``(nb, 3)``;
    ``rot``/``pos`` the world pose ⁰ᵢA₄ (Eq. 40).  With velocities: ``theta_dot`` θ̇ = F q̇,
    ``theta_ddot`` θ̈ = F q̈ + [q̇ᵀ H_j q̇]_j, and the body-frame spatial velocity ``velocity``
    ``(nb, 6)`` = [ω; v_O] and spatial acceleration ``acceleration`` ``(nb, 6)`` (Featherstone:
    d/dt of the twist minus ω × v on the linear part; includes the base acceleration, e.g. −g).
    """

    theta: jnp.ndarray
    theta_grad: jnp.ndarray
    rot_local: jnp.ndarray
    pos_local: jnp.ndarray
    rot: jnp.ndarray
    pos: jnp.ndarray
    theta_dot: jnp.ndarray | None = None
    theta_ddot: jnp.ndarray | None = None
    velocity: jnp.ndarray | None = None
    acceleration: jnp.ndarray | None = None


def _local_eval(family, x, n_batch: int):
    """``family.local`` (value, gradient, Hessian) on local inputs ``x (n, k, *batch)``, batch last."""
    fn = family.local
    for _ in range(n_batch):
        fn = jax.vmap(fn, in_axes=-1, out_axes=-1)
    return fn(x)


def _scatter_gradient(ops: Small, g, inputs: np.ndarray, nq: int, width: int | None = None):
    """Local gradients ``g (n, k, *batch)`` into ``(n, nq, *batch)`` at static input positions.

    Static one-hot multiply-adds instead of a scatter; duplicated inputs (padding) add up.
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


def _scatter_hessian(ops: Small, h, inputs: np.ndarray, nq: int):
    """Local Hessians ``h (n, k, k, *batch)`` into ``(n, nq, nq, *batch)`` (one-hot products)."""
    n, k = inputs.shape[0], min(h.shape[1], inputs.shape[1])
    out = jnp.zeros((n, nq, nq) + h.shape[3:], ops.dtype)
    for a in range(k):
        for b in range(k):
            onehot = np.zeros((n, nq, nq))
            onehot[np.arange(n), inputs[:, a], inputs[:, b]] = 1.0
            out = out + ops.expand(ops.expand(h[:, a, b], -1), -1) * ops.c(onehot)
    return out


def _joint_values(model: Model, q, ops: Small, qd=None, qdd=None, hessian: bool = False):
    """f, F ``(nb, nq)``, θ̇ = F q̇, θ̈ = F q̈ + q̇ᵀ H q̇ and (``hessian``) dense H, batch last.

    Each map family is evaluated once on its local inputs; θ̇ and the Hessian term are contracted
    locally (``k`` inputs per map), so the ``(nb, nq, nq)`` Hessian exists only when asked for.
    Families are concatenated and put in body order by one static gather (bodies without a map
    read a zero row).
    """
    top = model.topology
    nb, nq = top.n_bodies, top.n_coordinates
    batch = q.shape[1:]
    parts = {"f": [], "g": [], "td": [], "tdd": [], "h": []}
    rows = []
    for family, bodies, inputs in zip(model.maps, top.map_bodies, top.map_inputs):
        inputs = np.asarray(inputs, dtype=np.int32)
        local = [a.astype(ops.dtype) for a in _local_eval(family, q[inputs], ops.nbt)]
        f, g, h = user_map_values(model, family, bodies, local)
        parts["f"].append(f)
        parts["g"].append(_scatter_gradient(ops, g, inputs, nq))
        if hessian:
            parts["h"].append(_scatter_hessian(ops, h, inputs, nq))
        if qd is not None:
            k = min(g.shape[1], inputs.shape[1])
            xd = qd[inputs[:, :k]]
            parts["td"].append(ops.dot(jnp.moveaxis(g[:, :k], 1, -1 - ops.nbt), jnp.moveaxis(xd, 1, -1 - ops.nbt))
                               if ops.nbt else jnp.sum(g[:, :k] * xd, 1))
            hq = None
            for a in range(k):
                for b in range(k):
                    t = h[:, a, b] * xd[:, a] * xd[:, b]
                    hq = t if hq is None else hq + t
            hq = jnp.zeros_like(f) if hq is None else hq
            if qdd is not None:
                xdd = qdd[inputs[:, :k]]
                acc = hq
                for a in range(k):
                    acc = acc + g[:, a] * xdd[:, a]
                parts["tdd"].append(acc)
            else:
                parts["tdd"].append(hq)
        rows.extend(int(b) for b in bodies)
    perm = np.full(nb, len(rows))
    for pos, b in enumerate(rows):
        perm[b] = pos

    def gather(key, shape):
        return jnp.concatenate(parts[key] + [jnp.zeros((1,) + shape + batch, ops.dtype)])[perm]

    out = {"f": gather("f", ()), "g": gather("g", (nq,))}
    out["h"] = gather("h", (nq, nq)) if hessian else None
    out["td"] = gather("td", ()) if qd is not None else None
    out["tdd"] = gather("tdd", ()) if qd is not None else None
    return out


def _local_frames(model: Model, f, ops: Small):
    """Parent-from-child rotations ``(nb, 3, 3)`` and translations ``(nb, 3)`` (Eq. 38-39), batch last.

    O (I + ṽ sin θ + 2ṽ² sin²(θ/2)) = O + (Oṽ) sin θ + (Oṽ²) 2 sin²(θ/2): the offset rotation is
    folded into Rodrigues' formula (Eq. 39), so each entry is two fused multiply-adds.
    """
    rev = model.topology.is_revolute()
    axis = model.axis
    k = skew(axis)
    off_r, off_p = model.offset[:, :3, :3], model.offset[:, :3, 3]
    angle = jnp.where(ops.mask(rev), f, 0.0)
    sin = materialize(jnp.sin(angle))  # else recomputed for every matrix entry downstream
    vers = materialize(2.0 * jnp.sin(0.5 * angle) ** 2)
    col = lambda s: ops.expand(ops.expand(s, -1), -1)
    r_loc = ops.c(off_r) + ops.c(off_r @ k) * col(sin) + ops.c(off_r @ (k @ k)) * col(vers)
    trans = ops.c(axis) * ops.expand(jnp.where(ops.mask(rev), 0.0, f), -1)
    p_loc = ops.mv(ops.c(off_r), trans) + ops.c(off_p)
    return r_loc, p_loc


def _by_level(model: Model, step, *roots):
    """Run ``step(level, parent_slots, *parent_values) -> values`` over the tree by depth level.

    ``step`` gets the static body indices of one level and, for levels below the roots, the
    values of their parents (gathered from the previous level's outputs); roots get ``None``.
    Returns the per-body values in body order.  One traced step per level, never per body.
    """
    top = model.topology
    parents = top.parent_array()
    levels = top.levels()
    slot, outs = {}, []
    for li, level in enumerate(levels):
        if li == 0:
            vals = step(level, None)
        else:
            pos = np.asarray([slot[int(p)] for p in parents[level]])
            vals = step(level, tuple(v[pos] for v in outs[li - 1]))
        for s, b in enumerate(level):
            slot[int(b)] = s
        outs.append(vals)
    inv = np.argsort(np.concatenate(levels)) if levels else np.zeros(0, int)
    return tuple(jnp.concatenate([o[k] for o in outs])[inv] for k in range(len(outs[0]))) if outs else ()


def _motion_subspace(model: Model, ops: Small):
    """Body-frame joint motion subspaces ``(nb, 6)``: [a; 0] revolute, [0; a] prismatic."""
    rev = model.topology.is_revolute()[:, None]
    a = model.axis
    return ops.c(jnp.concatenate([jnp.where(rev, a, 0.0), jnp.where(rev, 0.0, a)], -1))


def _transform_motion(ops: Small, rot, pos, m):
    """Parent motion vector ``m = [ω; v]`` into the child frame: [Eᵀω; Eᵀ(v + ω × r)]."""
    w, v = m[:, :3], m[:, 3:]
    return jnp.concatenate([ops.mtv(rot, w), ops.mtv(rot, v + ops.cross(w, pos))], 1)


def _cross_motion_b(ops: Small, v, m):
    """Motion cross product v × m, ``(..., 6, *batch)``."""
    w, vo = v[:, :3], v[:, 3:]
    mw, mv = m[:, :3], m[:, 3:]
    return jnp.concatenate([ops.cross(w, mw), ops.cross(vo, mw) + ops.cross(w, mv)], 1)


def forward_pass(model: Model, q, qd=None, qdd=None, base_acceleration=None, hessian: bool = False):
    """The one kinematics pass (batch-last kernel): a :class:`Kinematics` for ``q (nq, *batch)``.

    Joint values (closed form per map family), local transforms, world poses by a recursion over
    depth levels, and with ``qd`` the body-frame velocities and with ``qd`` (and ``qdd``, default
    0) the spatial accelerations by Featherstone's forward recursion in parent-local frames:
    v_i = X_i v_pr(i) + s_i θ̇_i,  a_i = X_i a_pr(i) + s_i θ̈_i + v_i × s_i θ̇_i,  a_ground =
    ``base_acceleration`` (``(6,)``, world axes; −g gives gravity the Newton-Euler way).
    ``hessian=True`` also returns the dense H (for :func:`joint_values`) as ``theta_hessian``.
    """
    q = jnp.asarray(q)
    ops = Small(q.ndim - 1, jnp.result_type(q, model.axis))
    q = q.astype(ops.dtype)
    qd = None if qd is None else jnp.asarray(qd).astype(ops.dtype)
    qdd = None if qdd is None else jnp.asarray(qdd).astype(ops.dtype)
    jv = _joint_values(model, q, ops, qd, qdd, hessian)
    r_loc, p_loc = _local_frames(model, jv["f"], ops)

    def pose_step(level, par):
        r, p = r_loc[level], p_loc[level]
        if par is None:
            return r, p
        r_par, p_par = par
        return ops.mm(r_par, r), ops.mv(r_par, p) + p_par

    rot, pos = _by_level(model, pose_step)
    out = Kinematics(jv["f"], jv["g"], r_loc, p_loc, rot, pos)
    if qd is None:
        return (out, jv["h"]) if hessian else out
    s = _motion_subspace(model, ops)
    thd, thdd = jv["td"], jv["tdd"]
    sv = s * ops.expand(thd, -1)
    batch = q.shape[1:]
    a0 = jnp.zeros((6,), ops.dtype) if base_acceleration is None else jnp.asarray(base_acceleration, ops.dtype)

    def vel_step(level, par):
        v_j, a_j = sv[level], s[level] * ops.expand(thdd[level], -1)
        if par is None:  # parent = ground (world axes): v = 0, a = a0
            a_p = jnp.broadcast_to(ops.c(a0)[None], (len(level), 6) + batch)
            a = _transform_motion(ops, r_loc[level], p_loc[level], a_p)
            return v_j, a + a_j  # v × s θ̇ = s θ̇ × s θ̇ = 0
        v_p, a_p = par
        v = _transform_motion(ops, r_loc[level], p_loc[level], v_p) + v_j
        a = _transform_motion(ops, r_loc[level], p_loc[level], a_p) + a_j + _cross_motion_b(ops, v, v_j)
        return v, a

    vel, acc = _by_level(model, vel_step)
    out = out._replace(theta_dot=thd, theta_ddot=thdd, velocity=vel, acceleration=acc)
    return (out, jv["h"]) if hessian else out


def compose(model: Model, local) -> jnp.ndarray:
    """World poses from any parent-to-child transforms ``(nb, 4, 4)`` (one pose), level by level (for callers
    that perturb the local transforms: the reaction oracles; the kinematics pass composes its own the same way)."""
    (poses,) = _by_level(model, lambda level, par: (local[level] if par is None else par[0] @ local[level],))
    return poses


def _to4x4(rot, pos):
    """Homogeneous transforms from batch-last rotations ``(n, 3, 3, *b)`` and origins ``(n, 3, *b)``."""
    batch = rot.shape[3:]
    top = jnp.concatenate([rot, pos[:, :, None]], 2)  # (n, 3, 4, *b)
    last = jnp.broadcast_to(
        jnp.asarray([0.0, 0.0, 0.0, 1.0], rot.dtype).reshape((1, 1, 4) + (1,) * len(batch)),
        (rot.shape[0], 1, 4) + batch,
    )
    return jnp.concatenate([top, last], 1)


# --------------------------------------------------------------------------------------------
# public single-pose functions on the pass (jax.vmap of them runs the batch-last kernel)
# --------------------------------------------------------------------------------------------


def _joint_values_kernel(model: Model, q):
    kin, h = forward_pass(model, q, hessian=True)
    return JointValues(kin.theta, kin.theta_grad, h)


def _joint_variables_kernel(model: Model, q):
    return forward_pass(model, q).theta


def _body_poses_kernel(model: Model, q):
    kin = forward_pass(model, q)
    return _to4x4(kin.rot, kin.pos)


def joint_values(model: Model, q) -> JointValues:
    """Joint variables f(q) with closed-form ∇f and H, shapes ``(nb,)``, ``(nb, nq)``, ``(nb, nq, nq)``."""
    return batch_last(_joint_values_kernel)(model, check_pose(model, q, "joint_values"))


def joint_variables(model: Model, q) -> jnp.ndarray:
    """Joint variables f(q) only, ``(nb,)`` (no derivative work)."""
    return batch_last(_joint_variables_kernel)(model, check_pose(model, q, "joint_variables"))


def body_poses(model: Model, q) -> jnp.ndarray:
    """World transforms ⁰ᵢA₄ (Eq. 40) of the bodies in ``model.body_names``, ``(nb, 4, 4)``."""
    return batch_last(_body_poses_kernel)(model, check_pose(model, q, "body_poses"))


def kinematics(model: Model, q, qd=None, qdd=None) -> Kinematics:
    """The kinematics result (:class:`Kinematics`) of one pose; ``jax.vmap`` it over poses."""
    q = check_pose(model, q, "kinematics")
    args = [q] + [check_vector(model, x, n) for x, n in ((qd, "qd"), (qdd, "qdd")) if x is not None]
    if qdd is not None and qd is None:
        raise ValueError("kinematics: qdd needs qd")
    return batch_last(forward_pass)(model, *args)


class BodyKinematics(NamedTuple):
    """World poses ``(nb, 4, 4)``, velocities ``(nb, 6)`` = [ω; v_O] and accelerations ``(nb, 6)`` =
    [ω̇; a_O] of every body, world axes, where v_O and a_O are the velocity and (classical)
    acceleration of the body-frame origin.  A body-fixed point at world offset d = R r from the
    origin moves with v = v_O + ω × d and a = a_O + ω̇ × d + ω × (ω × d) (Eq. 44, 57).
    """

    pose: jnp.ndarray
    velocity: jnp.ndarray
    acceleration: jnp.ndarray


def _body_kinematics_kernel(model: Model, q, qd, qdd):
    kin = forward_pass(model, q, qd, qdd)
    ops = Small(q.ndim - 1, kin.theta.dtype)
    w, v = kin.velocity[:, :3], kin.velocity[:, 3:]
    alpha, a_sp = kin.acceleration[:, :3], kin.acceleration[:, 3:]
    a_origin = a_sp + ops.cross(w, v)  # classical = spatial + ω × v
    world = lambda x: ops.mv(kin.rot, x)
    return BodyKinematics(
        _to4x4(kin.rot, kin.pos),
        jnp.concatenate([world(w), world(v)], 1),
        jnp.concatenate([world(alpha), world(a_origin)], 1),
    )


def body_kinematics(model: Model, q, qd, qdd) -> BodyKinematics:
    """World poses, velocities and accelerations of every body (Eq. 40, 44, 57 for all points at once).

    By the forward recursion of the kinematics pass (second order through θ̈ = F q̈ + [q̇ᵀ H_j q̇]_j),
    not by contracting ∂²B/∂q²; see :class:`BodyKinematics` for the layout.
    """
    q = check_pose(model, q, "body_kinematics")
    qd, qdd = check_vector(model, qd, "qd"), check_vector(model, qdd, "qdd")
    return batch_last(_body_kinematics_kernel)(model, q, qd, qdd)


def joint_matrices(model: Model) -> jnp.ndarray:
    """Joint matrices Â_i (Eq. 70-71) in each body's frame, ``(nb, 4, 4)``: ∂J_i/∂f_i = J_i Â_i."""
    rev = jnp.asarray(model.topology.is_revolute())[:, None, None]
    nb = model.n_bodies
    rot_part = jnp.zeros((nb, 4, 4), model.axis.dtype).at[:, :3, :3].set(skew(model.axis))
    lin_part = jnp.zeros((nb, 4, 4), model.axis.dtype).at[:, :3, 3].set(model.axis)
    return jnp.where(rev, rot_part, lin_part)


def joint_transforms(model: Model, f) -> jnp.ndarray:
    """Parent-to-child transforms ᵖʳ⁽ⁱ⁾ᵢA₄ = O_i J_i(f_i) (Eq. 38-39), ``(nb, 4, 4)``."""
    require_model(model, "joint_transforms")
    f = _checks.real_array(f, "joint_transforms: f (the joint values) must be a real array",
                           "joint_transforms: f (the joint values) must be real")
    nf = model.axis.shape[0]
    if f.ndim < 1 or f.shape[0] != nf:
        raise ValueError(f"joint_transforms: f (the joint values, one per body) must have shape (nb,) = ({nf},) "
                         f"(bodies {model.topology.body_names}), got {f.shape}")
    return joint_transforms_unchecked(model, _checks.finite(f, "joint_transforms: f",
                                                            f" (the joint values of bodies {model.body_names})"))


def joint_transforms_unchecked(model: Model, f) -> jnp.ndarray:
    """:func:`joint_transforms` for callers whose joint values come from an already checked pose."""
    ops = Small(f.ndim - 1, jnp.result_type(f, model.axis))
    return _to4x4(*_local_frames(model, f.astype(ops.dtype), ops))


# --------------------------------------------------------------------------------------------
# fast closed-form derivatives
# --------------------------------------------------------------------------------------------


def _mm(a, b):
    """Small matrix product over the last two axes as a broadcast multiply-and-sum.

    XLA on CPU runs many tiny batched ``dot_general``s slowly; elementwise products fuse into one
    loop instead (faster for the 4x4 products here under ``vmap``).
    """
    return jnp.sum(a[..., :, :, None] * b[..., None, :, :], axis=-2)


def _twists(model: Model, poses):
    """World joint twists S_j = T_j Â_j T_j⁻¹ as 4x4 matrices, ``(nb, 4, 4)``."""
    a_hat = joint_matrices(model)
    return _mm(_mm(poses, a_hat), inverse_transform(poses))


def pose_derivatives(model: Model, q, order: int = 2) -> PoseDerivatives:
    """T_i, ∂T_i/∂q and (``order=2``) ∂²T_i/∂q² in closed form (Eq. 75 and 89, einsum path)."""
    top, order = model.topology, _checks.derivative_order(order, "pose_derivatives")
    jv = joint_values(model, q)
    poses = body_poses(model, q)
    s = _twists(model, poses)
    anc = jnp.asarray(top.ancestor_mask(), poses.dtype)
    fq = jv.gradient  # (nb, nq)
    # 𝒥_i(l) = Σ_j A_ij S_j F_jl : (nb, nq, 4, 4)
    sf = s[:, None] * fq[:, :, None, None]
    jac = jnp.einsum("ij,jlab->ilab", anc, sf)  # constant mask: one large matmul under vmap
    d_pose = jnp.moveaxis(_mm(jac, poses[:, None]), 1, -1)
    if order < 2:
        return PoseDerivatives(poses, d_pose, None, jnp.asarray(q))
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
    return PoseDerivatives(poses, d_pose, dd_pose, jnp.asarray(q))


def body_jacobians(model: Model, q) -> jnp.ndarray:
    """World-frame twist Jacobians of all bodies, ``(nb, 6, nq)``, rows ``[angular; linear]``; the linear part is
    the velocity of the material point at the world origin: a point ``p`` moves with ``v_o + ω × p``."""
    top = model.topology
    jv = joint_values(model, q)
    poses = body_poses(model, q)
    s = _twists(model, poses)
    anc = jnp.asarray(top.ancestor_mask(), poses.dtype)
    jac = jnp.einsum("ij,jab,jl->ilab", anc, s, jv.gradient)
    omega = jnp.stack([jac[..., 2, 1], jac[..., 0, 2], jac[..., 1, 0]], axis=1)  # (nb, 3, nq)
    lin = jnp.swapaxes(jac[..., :3, 3], 1, 2)  # (nb, 3, nq)
    return jnp.concatenate([omega, lin], axis=1)


# called eagerly: compiled once per model structure (mbjax._eager), and an out-of-range map names its
# joint, coordinate, value and range (mbjax._ranges); under an outer jit/vmap/grad: unchanged
from ._eager import compiled_when_eager as _naming  # noqa: E402

joint_values = _naming(joint_values)
joint_variables = _naming(joint_variables)
body_poses = _naming(body_poses)
kinematics = _naming(kinematics)
body_kinematics = _naming(body_kinematics)
pose_derivatives = _naming(pose_derivatives)
body_jacobians = _naming(body_jacobians)
