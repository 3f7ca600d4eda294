"""Dense resolved form of Blajer & Czaplicki (Eq. 2.3-2.10): the test oracle of joint reactions.

Body coordinates.  In 3-D the orientation is not a coordinate vector, so ``p`` is used at the
velocity level, as Eq. 2.4-2.5 do: for every body ``b`` the 6-vector ṗ_b = [ω_b; v_Cb] (world
angular velocity, world velocity of the centre of mass).  With the Newton-Euler equations about
the centre of mass, Eq. 2.2 reads M p̈ = h - Cᵀλ with the constant-in-form blocks

    M_b = diag(R_b I_Cb R_bᵀ, m_b 1),   h_b = [τ_Cb - ω_b × (R_b I_Cb R_bᵀ) ω_b;  m_b g + F_b].

Augmented joint coordinates (Eq. 2.3).  At each chosen joint ``c`` (named by its child body) a
small relative motion Δ(z_c) = [[1 + z̃_r, z_t], [0, 1]] is inserted after the joint,
parent→child = O_c J_c(f_c(q)) Δ(z_c): z_c = [z_r; z_t] are rotations about and translations
along the child frame's axes at the child frame's origin (the joint point).  Only ∂g/∂z at z = 0
enters (Eq. 2.4), so the first-order Δ is exact for this purpose.  D = ∂ṗ/∂q̇ and E = ∂ṗ/∂ż at
z = 0 come from ``jax.jacfwd`` of the body frames (ω = vee(Ṙ Rᵀ)), γ = Ḋ q̇ from two nested JVPs
of the body frames along q̇ (Eq. 2.5).  Only the joint maps' values are differentiated.

With all six z at a joint, λ6_c = E_cᵀ(h - M(D q̈ + γ)) is the total wrench (applied minus
inertial) of the subtree below the cut: W_c = -λ6_c is what :func:`joint_reactions_dense`
returns, the same :class:`JointReactions` as the fast :func:`mbjax.joint_reactions`.  The
prohibited directions of chains come from ``eigh`` of J_rel J_relᵀ with J_rel the relative twist
Jacobian by jacfwd (an independent route to the fast closed form).  Cost: O(n_b · n_j) per pose
with jacfwd over 6 n_j augmented coordinates — an oracle, not a fast path.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import compose as _compose, joint_transforms_unchecked as joint_transforms
from .._model import Model
from .._spatial import skew
from .._loads import checked_loads
from .. import _checks
from .spec import (CHAIN, ExternalLoads, JointReactions, ReactionSpec, checked_model, fixed_directions,
                   spec_jit)


# --------------------------------------------------------------------------------------------
# p = g(q, z) at the velocity level, D, E, γ (Eq. 2.3-2.5)
# --------------------------------------------------------------------------------------------


def _vee(w):
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], -1)


def _state(model: Model, where: str, q, qd=None, qdd=None, tie=False):
    """``q`` (and ``qd``, ``qdd``) as ``(nq,)`` arrays of one floating dtype (shapes at trace time), then
    one fused run-time check that they are finite; ``where`` names the function.  ``tie=True``
    returns the unchecked arrays and a function that attaches the check to an output (for results
    that may not depend on the values)."""
    checked_model(model, where)
    nq, ctx = model.n_coordinates, _checks.coordinates_context(model)
    named = [(n, _checks.as_array(x, f"{where}: {n}", (nq,), ("nq",), ctx))
             for n, x in (("q", q), ("qd", qd), ("qdd", qdd)) if x is not None]
    dtype = jnp.result_type(*(a for _, a in named), model.axis, float)
    arrs = [a.astype(dtype) for _, a in named]
    rules = [_checks.not_finite(a, f"{where}: {n}", ctx) for (n, _), a in zip(named, arrs)]
    if tie:
        return arrs, lambda out: _checks.all_of(out, rules)
    arrs[0] = _checks.all_of(arrs[0], rules)
    return arrs[0] if len(arrs) == 1 else tuple(arrs)


def _joint_variables(model: Model, q):
    """Joint variables f(q) ``(nb,)`` from the maps' values only (autodiff gives D, E, γ)."""
    q = jnp.asarray(q)
    top = model.topology
    if q.shape != (top.n_coordinates,):
        raise ValueError(
            f"q must have shape ({top.n_coordinates},) for coordinates {top.coordinate_names}, got {q.shape}"
        )
    dtype = jnp.result_type(q, model.axis)
    f = jnp.zeros((top.n_bodies,), dtype)
    for family, bodies, inputs in zip(model.maps, top.map_bodies, top.map_inputs):
        x = q.astype(dtype)[np.asarray(inputs, dtype=np.int32)]
        f = f.at[np.asarray(bodies)].set(family.value(x).astype(dtype))
    return f


def _frames(model: Model, q, z, joints):
    """Body rotations ``(nb, 3, 3)`` and world COM positions ``(nb, 3)`` of p = g(q, z) (Eq. 2.3)."""
    f = _joint_variables(model, q)
    local = joint_transforms(model, f)
    if len(joints):
        zr, zt = z[:, :3], z[:, 3:]
        delta = jnp.zeros((len(joints), 4, 4), local.dtype)
        delta = delta.at[:, :3, :3].set(jnp.eye(3, dtype=local.dtype) + skew(zr))
        delta = delta.at[:, :3, 3].set(zt).at[:, 3, 3].set(1.0)
        jj = np.asarray(joints)
        local = local.at[jj].set(local[jj] @ delta)
    poses = _compose(model, local)
    rot = poses[:, :3, :3]
    xc = jnp.einsum("bij,bj->bi", rot, model.com) + poses[:, :3, 3]
    return rot, xc


def _velocity_columns(rot, d_rot, d_xc):
    """[ω; v_C] columns from ∂R ``(nb,3,3,k)`` and ∂x_C ``(nb,3,k)``: ω̃ = ∂R Rᵀ. ``(nb, 6, k)``."""
    w = jnp.einsum("iabk,icb->ikac", d_rot, rot)
    omega = jnp.swapaxes(_vee(w), 1, 2)
    return jnp.concatenate([omega, d_xc], axis=1)


def _zeros_z(spec: ReactionSpec, dtype):
    return jnp.zeros((spec.n_joints, 6), dtype)


@eqx.filter_jit
def velocity_jacobian(model: Model, q, spec: ReactionSpec | None = None):
    """D = ∂g/∂q at z = 0 by ``jax.jacfwd`` (Eq. 2.4), per body ``(nb, 6, nq)`` rows [ω; v_C]."""
    return _velocity_jacobian(model, _state(model, "velocity_jacobian", q), spec)


def _velocity_jacobian(model: Model, q, spec: ReactionSpec | None = None):
    joints = () if spec is None else spec.joints
    z0 = jnp.zeros((len(joints), 6), q.dtype)
    rot, xc = _frames(model, q, z0, joints)
    d_rot, d_xc = jax.jacfwd(lambda qq: _frames(model, qq, z0, joints))(q)
    return _velocity_columns(rot, d_rot, d_xc)


@spec_jit
def augmented_jacobians(model: Model, q, joints=None):
    """D ``(nb, 6, nq)`` and E ``(nb, 6, nj, 6)`` of Eq. 2.4 (``jax.jacfwd`` at z = 0).

    E's last axis is z_c = [rotation; translation] about/along the child frame axes at the joint
    point (all six directions; project on :func:`prohibited_directions` for Blajer's E).
    """
    return _augmented_jacobians(model, _state(model, "augmented_jacobians", q), joints)


def _augmented_jacobians(model: Model, q, spec: ReactionSpec):
    z0 = _zeros_z(spec, q.dtype)
    fr = lambda qq, zz: _frames(model, qq, zz, spec.joints)
    rot, xc = fr(q, z0)
    (dq_rot, dz_rot), (dq_xc, dz_xc) = jax.jacfwd(fr, argnums=(0, 1))(q, z0)
    d = _velocity_columns(rot, dq_rot, dq_xc)
    nb, nj = model.n_bodies, spec.n_joints
    e = _velocity_columns(rot, dz_rot.reshape(nb, 3, 3, nj * 6), dz_xc.reshape(nb, 3, nj * 6))
    return d, e.reshape(nb, 6, nj, 6)


@eqx.filter_jit
def acceleration_bias(model: Model, q, qd):
    """γ = Ḋ q̇ (Eq. 2.5), per body ``(nb, 6)``, and ω ``(nb, 3)``.

    Nested JVPs along q̇ give Ṙ, ẋ_C and R̈|_(q̈=0), ẍ_C|_(q̈=0); then ω̇|_(q̈=0) = vee(R̈ Rᵀ + Ṙ Ṙᵀ)
    and γ = [ω̇; ẍ_C] at q̈ = 0, which is Ḋ q̇ (cheaper than a JVP of the full Jacobian).
    """
    return _bias_and_omega(model, *_state(model, "acceleration_bias", q, qd))[0]


def _bias_and_omega(model: Model, q, qd):
    z0 = jnp.zeros((0, 6), q.dtype)
    fr = lambda qq: _frames(model, qq, z0, ())
    first = lambda qq: jax.jvp(fr, (qq,), (qd,))
    (rot, xc), (rot_d, xc_d) = first(q)
    _, (rot_dd, xc_dd) = jax.jvp(lambda qq: first(qq)[1], (q,), (qd,))
    rt = jnp.swapaxes(rot, 1, 2)
    omega = _vee(rot_d @ rt)
    alpha = _vee(rot_dd @ rt + rot_d @ jnp.swapaxes(rot_d, 1, 2))
    return jnp.concatenate([alpha, xc_dd], -1), omega, rot, xc


# --------------------------------------------------------------------------------------------
# M and h in body coordinates (Eq. 2.2)
# --------------------------------------------------------------------------------------------


def _world_inertia(model: Model, rot):
    return rot @ model.inertia @ jnp.swapaxes(rot, 1, 2)


@eqx.filter_jit
def body_mass_matrix(model: Model, q):
    """Blocks M_b = diag(R I_C Rᵀ, m 1) of Eq. 2.2, ``(nb, 6, 6)``."""
    return _body_mass_matrix(model, _state(model, "body_mass_matrix", q))


def _body_mass_matrix(model: Model, q):
    rot, _ = _frames(model, q, jnp.zeros((0, 6), q.dtype), ())
    nb = model.n_bodies
    out = jnp.zeros((nb, 6, 6), rot.dtype)
    out = out.at[:, :3, :3].set(_world_inertia(model, rot))
    return out.at[:, 3:, 3:].set(model.mass[:, None, None] * jnp.eye(3, dtype=rot.dtype))


@eqx.filter_jit
def applied_forces(model: Model, q, qd, external: ExternalLoads | None = None):
    """h of Eq. 2.2 per body ``(nb, 6)``: [moment about the COM (incl. -ω × I ω); force], world axes.

    Gravity ``model.gravity`` on every body, plus ``external`` loads (point forces, torques).
    """
    q, qd = _state(model, "applied_forces", q, qd)
    return _applied_forces(model, q, qd, _resolved(model, q, external, "applied_forces"))


def _applied_forces(model: Model, q, qd, resolved):
    _, omega, rot, xc = _bias_and_omega(model, q, qd)
    return _applied(model, rot, xc, omega, resolved)


def _resolved(model: Model, q, external, where: str = "joint reactions"):
    """``external`` with points in body frames, forces/torques in world axes (:meth:`ExternalLoads.resolved`)."""
    external = checked_loads(external, where)
    return None if external is None else external.resolved(model, q)


def _applied(model: Model, rot, xc, omega, external):
    i_w = _world_inertia(model, rot)
    gyro = -jnp.cross(omega, jnp.einsum("bij,bj->bi", i_w, omega))
    force = model.mass[:, None] * model.gravity.astype(rot.dtype)
    h = jnp.concatenate([gyro, force], -1)
    if external is not None and len(external.bodies):
        idx = np.asarray([model.body_index(b) for b in external.bodies], dtype=np.int32)
        p_world = jnp.einsum("kij,kj->ki", rot[idx], external.points) + (
            xc[idx] - jnp.einsum("kij,kj->ki", rot[idx], model.com[idx])
        )
        moment = jnp.cross(p_world - xc[idx], external.forces) + external.torques
        h = h.at[idx].add(jnp.concatenate([moment, external.forces], -1))
    return h


# --------------------------------------------------------------------------------------------
# prohibited directions of chains (eigh oracle)
# --------------------------------------------------------------------------------------------


def _relative_twist_jacobian(model: Model, q, c: int, p: int, dvel=None, poses=None, xc=None):
    """Twist of body c relative to body p, in c's frame at c's origin, ``(6, nq)`` [ω; v].

    Built from D (COM velocities and ω by jacfwd): v_b(o) = v_Cb + ω_b × (o - x_Cb).
    """
    q = jnp.asarray(q)
    dvel = _velocity_jacobian(model, q) if dvel is None else dvel
    if poses is None or xc is None:
        poses = _poses(model, q)
        xc = jnp.einsum("bij,bj->bi", poses[:, :3, :3], model.com) + poses[:, :3, 3]
    o = poses[c, :3, 3]

    def at_o(b):
        w = dvel[b, :3]
        return w, dvel[b, 3:] + jnp.cross(w.T, o - xc[b]).T

    w, v = at_o(c)
    if p >= 0:
        wp, vp = at_o(p)
        w, v = w - wp, v - vp
    rot = poses[c, :3, :3]
    return jnp.concatenate([rot.T @ w, rot.T @ v], 0)


def _poses(model: Model, q):
    return _compose(model, joint_transforms(model, _joint_variables(model, q)))


@spec_jit
def prohibited_directions(model: Model, q, joints=None, rtol: float = 1e-9):
    """Orthonormal bases Z_c ``(6, m_c)`` of each joint's prohibited motions (child frame, joint point).

    Revolute / prismatic / weld: :func:`fixed_directions`.  Chain (zero-inertia chain, empirical
    maps): the complement of the relative twist range, from ``eigh`` of J_rel J_relᵀ (J_rel by
    jacfwd); a chain whose motion has lower rank than its static dof raises at run time.  The
    basis of a chain's complement is ``eigh``'s (arbitrary within the subspace): compare Z Zᵀ.
    """
    if isinstance(rtol, (bool, np.bool_)) or not isinstance(rtol, (int, float, np.integer, np.floating)) \
            or not (np.isfinite(rtol) and 0 <= rtol < 1):
        raise ValueError(f"prohibited_directions: rtol (relative rank tolerance) must be a number in [0, 1), got {rtol!r}")
    (q,), checked = _state(model, "prohibited_directions", q, tie=True)
    return checked(_prohibited_directions(model, q, joints, rtol))  # fixed bases do not depend on q


def _prohibited_directions(model: Model, q, spec: ReactionSpec, rtol: float = 1e-9):
    dtype = jnp.result_type(q, model.axis)
    dvel = poses = xc = None
    out = []
    for c, p, kind, m in zip(spec.joints, spec.parents, spec.kinds, spec.n_components):
        if kind != CHAIN:
            out.append(fixed_directions(model.axis[c], kind, dtype))
            continue
        if dvel is None:
            dvel, poses = _velocity_jacobian(model, q), _poses(model, q)
            xc = jnp.einsum("bij,bj->bi", poses[:, :3, :3], model.com) + poses[:, :3, 3]
        jr = _relative_twist_jacobian(model, q, c, p, dvel, poses, xc)
        evals, evecs = jnp.linalg.eigh(jr @ jr.T)
        dof = 6 - m
        if dof > 0:
            evecs = eqx.error_if(
                evecs,
                evals[m] <= rtol * jnp.maximum(evals[-1], 1.0),
                f"joint_reactions: the zero-inertia chain ending at body {model.body_names[c]!r} "
                f"moves with fewer than its {dof} independent directions here (rank-deficient "
                "choice: repeated/degenerate axes or coupled maps); choose a different joint",
            )
        out.append(evecs[:, :m])
    return tuple(out)


# --------------------------------------------------------------------------------------------
# resolved reactions with all six z (Eq. 2.10) and Blajer's literal λ
# --------------------------------------------------------------------------------------------


@spec_jit
def transmitted_multipliers(model: Model, q, qd, qdd, joints=None, external=None):
    """λ6 = E_cᵀ(h - M(D q̈ + γ)) (Eq. 2.10) with all six z per joint, ``(nj, 6)`` (paper sign)."""
    q, qd, qdd = _state(model, "transmitted_multipliers", q, qd, qdd)
    return _transmitted_multipliers(model, q, qd, qdd, joints, _resolved(model, q, external, "transmitted_multipliers"))


def _transmitted_multipliers(model: Model, q, qd, qdd, spec: ReactionSpec, resolved):
    d, e = _augmented_jacobians(model, q, spec)
    gamma, omega, rot, xc = _bias_and_omega(model, q, qd)
    acc = jnp.einsum("bkl,l->bk", d, qdd) + gamma
    i_w = _world_inertia(model, rot)
    inertial = jnp.concatenate(
        [jnp.einsum("bij,bj->bi", i_w, acc[:, :3]), model.mass[:, None] * acc[:, 3:]], -1
    )  # M (D q̈ + γ) with the block-diagonal M of Eq. 2.2
    residual = _applied(model, rot, xc, omega, resolved) - inertial
    return jnp.einsum("bkjn,bk->jn", e, residual)


@spec_jit
def joint_reactions_dense(model: Model, q, qd, qdd, joints=None, external: ExternalLoads | None = None):
    """Oracle of :func:`mbjax.joint_reactions`: λ6 from jacfwd D, E (Eq. 2.10), same result layout.

    ``joints``: child body names/indices, ``None`` (every body with mass) or a
    :class:`ReactionSpec`.  ``external``: applied :class:`ExternalLoads` (contact, muscle forces
    at their attachments).  No matrix is inverted; see the module docstring for frames, points
    and how this maps to OpenSim's ``JointReaction`` and Pinocchio's ``data.f``.
    """
    spec = joints
    q, qd, qdd = _state(model, "joint_reactions_dense", q, qd, qdd)
    lam6 = _transmitted_multipliers(model, q, qd, qdd, spec, _resolved(model, q, external, "joint_reactions_dense"))
    local = -lam6
    poses = _poses(model, q)
    jj = np.asarray(spec.joints, dtype=np.int32)
    rot = poses[jj, :3, :3]
    point = poses[jj, :3, 3]
    moment = jnp.einsum("jab,jb->ja", rot, local[:, :3])
    force = jnp.einsum("jab,jb->ja", rot, local[:, 3:])
    zs = _prohibited_directions(model, q, spec)
    comps = tuple(z.T @ local[k] for k, z in enumerate(zs))
    reaction = jnp.stack([z @ (z.T @ local[k]) for k, z in enumerate(zs)]) if zs else local
    return JointReactions(force, moment, point, local, comps, reaction)



@spec_jit
def blajer_matrices(model: Model, q, joints=None, rows: str = "all"):
    """Flat D ``(n, nq)`` and Blajer's E ``(n, m)`` with z = the prohibited directions (Eq. 2.4).

    ``rows="all"`` keeps every body (n = 6 nb); ``"massive"`` keeps bodies with mass only.
    """
    if rows not in ("all", "massive"):
        raise ValueError(f"blajer_matrices: rows must be 'all' or 'massive', got {rows!r}")
    return _blajer_matrices(model, _state(model, "blajer_matrices", q), joints, rows)


def _blajer_matrices(model: Model, q, spec: ReactionSpec, rows: str = "all"):
    d, e = _augmented_jacobians(model, q, spec)
    zs = _prohibited_directions(model, q, spec)
    e_z = jnp.concatenate([e[:, :, k, :] @ z for k, z in enumerate(zs)], axis=-1)
    if rows == "massive":
        keep = np.asarray(spec.massive)
        d, e_z = d[keep], e_z[keep]
    return d.reshape(-1, d.shape[-1]), e_z.reshape(-1, e_z.shape[-1])


@spec_jit
def resolved_multipliers(model: Model, q, qd, qdd, joints=None, external=None):
    """Blajer's λ = Eᵀ(h - M(D q̈ + γ)) (Eq. 2.10) literally, flat ``(m,)``, paper sign."""
    q, qd, qdd = _state(model, "resolved_multipliers", q, qd, qdd)
    d, e = _blajer_matrices(model, q, joints)
    gamma = _bias_and_omega(model, q, qd)[0].reshape(-1)
    big_m = jax.scipy.linalg.block_diag(*_body_mass_matrix(model, q))
    h = _applied_forces(model, q, qd, _resolved(model, q, external, "resolved_multipliers")).reshape(-1)
    return e.T @ (h - big_m @ (d @ qdd + gamma))
