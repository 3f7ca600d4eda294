"""Joint reaction forces in resolved form (Blajer & Czaplicki 2005, Eq. 2.1-2.11).

Body coordinates.  In 3-D the orientation is not a coordinate vector, so ``p`` is used at the
velocity level, as Eq. 2.4-2.5 do: for every body ``b`` the 6-vector ṗ_b = [ω_b; v_Cb] (world
angular velocity, world velocity of the centre of mass).  With the Newton-Euler equations about
the centre of mass, Eq. 2.2 reads M p̈ = h - Cᵀλ with the constant-in-form blocks

    M_b = diag(R_b I_Cb R_bᵀ, m_b 1),   h_b = [τ_Cb - ω_b × (R_b I_Cb R_bᵀ) ω_b;  m_b g + F_b].

Augmented joint coordinates (Eq. 2.3).  At each chosen joint ``c`` (named by its child body) a
small relative motion Δ(z_c) = [[1 + z̃_r, z_t], [0, 1]] is inserted after the joint,
parent→child = O_c J_c(f_c(q)) Δ(z_c): z_c = [z_r; z_t] are rotations about and translations
along the child frame's axes at the child frame's origin (the joint point, which lies on a
revolute joint's axis).  Only ∂g/∂z at z = 0 enters (Eq. 2.4), so the first-order Δ is exact for
this purpose.  D = ∂ṗ/∂q̇ and E = ∂ṗ/∂ż at z = 0 come from ``jax.jacfwd`` of the body frames
(ω = vee(Ṙ Rᵀ)), γ = Ḋ q̇ from two nested JVPs of the body frames along q̇ (Eq. 2.5).
Only the joint maps' values are differentiated (no closed-form ∇f, H needed here).

Reactions (Eq. 2.10).  With all six z at a joint, λ6_c = E_cᵀ(h - M(D q̈ + γ)) is the total
wrench (applied minus inertial) of the subtree below the cut, i.e. minus the wrench the parent
exerts on the child.  :func:`joint_reactions` returns that *full transmitted wrench*
W_c = -λ6_c (parent on child, moment about the joint point).  Blajer's λ (Eq. 2.10 with only the
prohibited directions as z) are its components on an orthonormal basis Z_c of the joint's
prohibited relative motions (child frame, joint point): λ_c = -Z_cᵀ W_c.  The component along the
joint's free motion is the actuation (joint torque / generalized force); it does no work on Z_c.

Prohibited directions Z_c (5 for a revolute joint: 3 forces and the 2 moments normal to the axis;
5 for a prismatic one: 3 moments about the joint point and the 2 forces normal to the axis; 6 for
a welded joint).  An empirical joint built as a chain through zero-inertia bodies (Ehsani §3-1)
is one *physical joint*: walking up from the named child while the parent has zero mass, has a
single child and is not itself a chosen joint.  Its free motions are the range of the relative
twist Jacobian of child w.r.t. the physical parent, of static rank min(#moving joints, #coordinates
read, 6); Z_c is the Euclidean orthogonal complement in [ω; v] at the joint point.

Conventions of other packages.  OpenSim's ``JointReaction`` analysis reports, per joint, the
force and moment transmitted by the joint *on the child* (``apply_on_bodies = child``) at the
joint's child frame, expressed in ``ground``/``child``/``parent`` — this is ``force``/``moment``
(ground axes) or ``local`` (child axes) here, with the joint point = child body frame origin.
Pinocchio's ``rnea`` stores ``data.f[i]``, the spatial force transmitted from the parent to body
``i`` in the local joint frame, ordered [linear; angular]: ``local[:, 3:]`` and ``local[:, :3]``
here.  Both include the actuation component along the joint motion (``Sᵀ f = τ``); ``components``
removes it.

The classical formula λ = (C M⁻¹ Cᵀ)⁻¹ C (M⁻¹ h - γ) (Eq. 2.11) is
:func:`joint_reactions_classical` with C built independently from rigid-body relative velocities
(:func:`constraint_matrix`); it needs every joint opened and an invertible M.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._kinematics import compose as _compose, joint_transforms
from ._model import Model
from ._spatial import homogeneous, skew
from ._topology import PRISMATIC, REVOLUTE

WELD = "weld"
CHAIN = "chain"


# --------------------------------------------------------------------------------------------
# inputs: external loads and the static choice of joints
# --------------------------------------------------------------------------------------------


class ExternalLoads(eqx.Module):
    """Applied loads in h: forces at body-fixed points (body frame), forces/torques in world axes.

    ``bodies`` (static) names or indexes the body of each application; ``points`` ``(n, 3)``,
    ``forces`` ``(n, 3)``, ``torques`` ``(n, 3)`` (default zero).  Array leaves, so it vmaps.
    """

    points: jnp.ndarray
    forces: jnp.ndarray
    torques: jnp.ndarray
    bodies: tuple = eqx.field(static=True)

    def __init__(self, bodies, points, forces, torques=None):
        if isinstance(bodies, (str, int, np.integer)):
            bodies = (bodies,)
            points = jnp.asarray(points)[None]
            forces = jnp.asarray(forces)[None]
            torques = None if torques is None else jnp.asarray(torques)[None]
        self.bodies = tuple(str(b) if isinstance(b, str) else int(b) for b in bodies)
        n = len(self.bodies)
        self.points = jnp.asarray(points)
        self.forces = jnp.asarray(forces)
        self.torques = jnp.zeros_like(self.forces) if torques is None else jnp.asarray(torques)
        for name, a in (("points", self.points), ("forces", self.forces), ("torques", self.torques)):
            if a.shape[-2:] != (n, 3):
                raise ValueError(f"ExternalLoads: {name} must have shape ({n}, 3), got {a.shape}")


@dataclasses.dataclass(frozen=True)
class ReactionSpec:
    """Static choice of joints (hashable).  Build it with :func:`reaction_spec`."""

    joints: tuple[int, ...]  # child body of each physical joint
    names: tuple[str, ...]
    parents: tuple[int, ...]  # physical parent body (-1 = ground)
    chains: tuple[tuple[int, ...], ...]  # bodies from the child up to the physical parent's child
    kinds: tuple[str, ...]  # "revolute" | "prismatic" | "weld" | "chain"
    n_components: tuple[int, ...]  # number of reaction components (6 - dof)
    massive: tuple[int, ...]  # bodies with non-zero mass (rows of the classical formula)

    @property
    def n_joints(self) -> int:
        return len(self.joints)


def _body_coordinates(model: Model) -> list[set[str]]:
    out: list[set[str]] = [set() for _ in range(model.n_bodies)]
    for family, bodies in zip(model.maps, model.topology.map_bodies):
        for pos, b in enumerate(bodies):
            out[b] = set(family.coordinates[pos])
    return out


def reaction_spec(model: Model, joints=None) -> ReactionSpec:
    """Choose the joints whose reactions are wanted (Eq. 2.3 with z at those joints only).

    ``joints``: child body names/indices; ``None`` = every body with non-zero mass (each is the
    child of one physical joint).  Needs concrete masses (call outside ``jit``, or close over the
    model) because zero-inertia chains are found from them.
    """
    try:
        mass = np.asarray(model.mass)
    except Exception as err:  # traced masses
        raise ValueError(
            "reaction_spec needs concrete body masses to find zero-inertia chains; build the spec "
            "outside jit (spec = mbjax.reaction_spec(model, joints)) and pass it as `joints=spec`"
        ) from err
    top = model.topology
    nb = top.n_bodies
    if joints is None:
        idx = [i for i in range(nb) if mass[i] > 0]
        if not idx:
            raise ValueError("reaction_spec: the model has no body with non-zero mass")
    else:
        if isinstance(joints, (str, int, np.integer)):
            joints = [joints]
        idx = []
        for j in joints:
            if isinstance(j, str) and j not in top.body_names:
                raise ValueError(
                    f"joint_reactions: unknown joint {j!r}; joints are named by their child body, "
                    f"one of {top.body_names}"
                )
            idx.append(top.body_index(j))
        if len(set(idx)) != len(idx):
            raise ValueError(f"joint_reactions: duplicate joints in {list(joints)}")
    children = [0] * nb
    for p in top.parents:
        if p >= 0:
            children[p] += 1
    coords = _body_coordinates(model)
    chosen = set(idx)
    parents, chains, kinds, ncomp = [], [], [], []
    for c in idx:
        chain = [c]
        p = top.parents[c]
        while p >= 0 and mass[p] == 0 and children[p] == 1 and p not in chosen:
            chain.append(p)
            p = top.parents[p]
        moving = [b for b in chain if coords[b]]
        read = set().union(*(coords[b] for b in chain))
        dof = min(len(moving), len(read), 6)
        if not moving:
            kind = WELD
        elif moving == [c]:
            kind = top.joint_types[c]
        else:
            kind = CHAIN
        parents.append(p)
        chains.append(tuple(chain))
        kinds.append(kind)
        ncomp.append(6 - dof)
    massive = tuple(i for i in range(nb) if mass[i] > 0)
    return ReactionSpec(
        joints=tuple(idx),
        names=tuple(top.body_names[i] for i in idx),
        parents=tuple(parents),
        chains=tuple(chains),
        kinds=tuple(kinds),
        n_components=tuple(ncomp),
        massive=massive,
    )


def _as_spec(model: Model, joints) -> ReactionSpec:
    return joints if isinstance(joints, ReactionSpec) else reaction_spec(model, joints)


def _spec_jit(fn):
    """Build the static :class:`ReactionSpec` eagerly, then run ``fn`` under ``eqx.filter_jit``."""
    jitted = eqx.filter_jit(fn)
    sig = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        bound.arguments["joints"] = _as_spec(bound.arguments["model"], bound.arguments["joints"])
        return jitted(*bound.args, **bound.kwargs)

    return wrapper


# --------------------------------------------------------------------------------------------
# p = g(q, z) at the velocity level, D, E, γ (Eq. 2.3-2.5)
# --------------------------------------------------------------------------------------------


def _vee(w):
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], -1)


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
    q = jnp.asarray(q)
    joints = () if spec is None else spec.joints
    z0 = jnp.zeros((len(joints), 6), q.dtype)
    rot, xc = _frames(model, q, z0, joints)
    d_rot, d_xc = jax.jacfwd(lambda qq: _frames(model, qq, z0, joints))(q)
    return _velocity_columns(rot, d_rot, d_xc)


@_spec_jit
def augmented_jacobians(model: Model, q, joints=None):
    """D ``(nb, 6, nq)`` and E ``(nb, 6, nj, 6)`` of Eq. 2.4 (``jax.jacfwd`` at z = 0).

    E's last axis is z_c = [rotation; translation] about/along the child frame axes at the joint
    point (all six directions; project on :func:`prohibited_directions` for Blajer's E).
    """
    spec = _as_spec(model, joints)
    q = jnp.asarray(q)
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
    return _bias_and_omega(model, jnp.asarray(q), jnp.asarray(qd))[0]


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
    q = jnp.asarray(q)
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
    q, qd = jnp.asarray(q), jnp.asarray(qd)
    _, omega, rot, xc = _bias_and_omega(model, q, qd)
    return _applied(model, rot, xc, omega, external)


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
# prohibited directions of the physical joints
# --------------------------------------------------------------------------------------------


def _normal_pair(a):
    """Two unit vectors b1, b2 with (a, b1, b2) right-handed orthonormal."""
    k = jnp.argmin(jnp.abs(a))
    e = jax.nn.one_hot(k, 3, dtype=a.dtype)
    b1 = jnp.cross(a, e)
    b1 = b1 / jnp.linalg.norm(b1)
    return b1, jnp.cross(a, b1)


def _relative_twist_jacobian(model: Model, q, c: int, p: int, dvel=None, poses=None, xc=None):
    """Twist of body c relative to body p, in c's frame at c's origin, ``(6, nq)`` [ω; v].

    Built from D (COM velocities and ω by jacfwd): v_b(o) = v_Cb + ω_b × (o - x_Cb).
    """
    q = jnp.asarray(q)
    dvel = velocity_jacobian(model, q) if dvel is None else dvel
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


@_spec_jit
def prohibited_directions(model: Model, q, joints=None, rtol: float = 1e-9):
    """Orthonormal bases Z_c ``(6, m_c)`` of each joint's prohibited motions (child frame, joint point).

    Revolute (axis a): translations e_x, e_y, e_z, then rotations b1, b2 ⟂ a, so λ = [F; M·b1;
    M·b2].  Prismatic: translations b1, b2 ⟂ a, then rotations e_x, e_y, e_z.  Weld: all six
    (forces first).  Chain (zero-inertia chain, empirical maps): the complement of the relative
    twist range, from ``eigh`` of J_rel J_relᵀ; a chain whose motion has lower rank than its static
    dof (e.g. repeated axes) is a rank-deficient choice and raises at run time.
    """
    spec = _as_spec(model, joints)
    q = jnp.asarray(q)
    dtype = jnp.result_type(q, model.axis)
    eye = jnp.eye(3, dtype=dtype)
    zero3 = jnp.zeros((3, 3), dtype)
    dvel = poses = xc = None
    out = []
    for c, p, kind, m in zip(spec.joints, spec.parents, spec.kinds, spec.n_components):
        if kind == REVOLUTE:
            b1, b2 = _normal_pair(model.axis[c].astype(dtype))
            rot = jnp.stack([b1, b2], 1)
            z = jnp.concatenate(
                [jnp.concatenate([zero3, eye], 0), jnp.concatenate([rot, jnp.zeros((3, 2), dtype)], 0)], 1
            )
        elif kind == PRISMATIC:
            b1, b2 = _normal_pair(model.axis[c].astype(dtype))
            tr = jnp.stack([b1, b2], 1)
            z = jnp.concatenate(
                [jnp.concatenate([jnp.zeros((3, 2), dtype), tr], 0), jnp.concatenate([eye, zero3], 0)], 1
            )
        elif kind == WELD:
            z = jnp.concatenate([jnp.concatenate([zero3, eye], 0), jnp.concatenate([eye, zero3], 0)], 1)
        else:
            if dvel is None:
                dvel, poses = velocity_jacobian(model, q), _poses(model, q)
                xc = jnp.einsum("bij,bj->bi", poses[:, :3, :3], model.com) + poses[:, :3, 3]
            jr = _relative_twist_jacobian(model, q, c, p, dvel, poses, xc)
            evals, evecs = jnp.linalg.eigh(jr @ jr.T)
            dof = 6 - m
            if dof > 0:
                smallest_free = evals[m]
                evecs = eqx.error_if(
                    evecs,
                    smallest_free <= rtol * jnp.maximum(evals[-1], 1.0),
                    f"joint_reactions: the zero-inertia chain ending at body {spec.names[spec.joints.index(c)]!r} "
                    f"moves with fewer than its {dof} independent directions here (rank-deficient "
                    "choice: repeated/degenerate axes or coupled maps); choose a different joint",
                )
            z = evecs[:, :m]
        out.append(z)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# resolved reactions (Eq. 2.10)
# --------------------------------------------------------------------------------------------


class JointReactions(NamedTuple):
    """Per chosen joint (order of ``spec.names``), the load the parent exerts on the child.

    ``force``/``moment`` ``(nj, 3)``: full transmitted wrench in world axes, moment about
    ``point`` ``(nj, 3)`` = the joint point (child body frame origin) in world coordinates.
    ``local`` ``(nj, 6)``: the same wrench [moment; force] in the child body frame axes.
    ``components``: tuple of ``(m_c,)`` arrays, the reaction components on the prohibited
    directions Z_c (Blajer's λ of Eq. 2.10 with the parent-on-child sign, i.e. -λ).
    ``reaction`` ``(nj, 6)``: the constraint part Z Zᵀ ``local`` (actuation removed).
    """

    force: jnp.ndarray
    moment: jnp.ndarray
    point: jnp.ndarray
    local: jnp.ndarray
    components: tuple
    reaction: jnp.ndarray


@_spec_jit
def transmitted_multipliers(model: Model, q, qd, qdd, joints=None, external=None):
    """λ6 = E_cᵀ(h - M(D q̈ + γ)) (Eq. 2.10) with all six z per joint, ``(nj, 6)`` (paper sign)."""
    spec = _as_spec(model, joints)
    q, qd, qdd = (jnp.asarray(a) for a in (q, qd, qdd))
    d, e = augmented_jacobians(model, q, spec)
    gamma, omega, rot, xc = _bias_and_omega(model, q, qd)
    acc = jnp.einsum("bkl,l->bk", d, qdd) + gamma
    i_w = _world_inertia(model, rot)
    inertial = jnp.concatenate(
        [jnp.einsum("bij,bj->bi", i_w, acc[:, :3]), model.mass[:, None] * acc[:, 3:]], -1
    )  # M (D q̈ + γ) with the block-diagonal M of Eq. 2.2
    residual = _applied(model, rot, xc, omega, external) - inertial
    return jnp.einsum("bkjn,bk->jn", e, residual)


@_spec_jit
def joint_reactions(model: Model, q, qd, qdd, joints=None, external: ExternalLoads | None = None):
    """Reaction loads the parent exerts on the child at each chosen joint (Eq. 2.10, resolved form).

    ``joints``: child body names/indices, ``None`` (every body with mass) or a
    :class:`ReactionSpec`.  ``external``: applied :class:`ExternalLoads` (contact, muscle forces
    at their attachments).  No matrix is inverted; see the module docstring for frames, points
    and how this maps to OpenSim's ``JointReaction`` and Pinocchio's ``data.f``.
    """
    spec = _as_spec(model, joints)
    lam6 = transmitted_multipliers(model, q, qd, qdd, spec, external)
    local = -lam6
    poses = _poses(model, jnp.asarray(q))
    jj = np.asarray(spec.joints, dtype=np.int32)
    rot = poses[jj, :3, :3]
    point = poses[jj, :3, 3]
    moment = jnp.einsum("jab,jb->ja", rot, local[:, :3])
    force = jnp.einsum("jab,jb->ja", rot, local[:, 3:])
    zs = prohibited_directions(model, q, spec)
    comps = tuple(z.T @ local[k] for k, z in enumerate(zs))
    reaction = jnp.stack([z @ (z.T @ local[k]) for k, z in enumerate(zs)]) if zs else local
    return JointReactions(force, moment, point, local, comps, reaction)


# --------------------------------------------------------------------------------------------
# literal forms for cross-checks: Blajer's E, the constraint matrix C, Eq. 2.10 and Eq. 2.11
# --------------------------------------------------------------------------------------------


@_spec_jit
def blajer_matrices(model: Model, q, joints=None, rows: str = "all"):
    """Flat D ``(n, nq)`` and Blajer's E ``(n, m)`` with z = the prohibited directions (Eq. 2.4).

    ``rows="all"`` keeps every body (n = 6 nb); ``"massive"`` keeps bodies with mass only.
    """
    spec = _as_spec(model, joints)
    d, e = augmented_jacobians(model, q, spec)
    zs = prohibited_directions(model, q, spec)
    e_z = jnp.concatenate([e[:, :, k, :] @ z for k, z in enumerate(zs)], axis=-1)
    if rows == "massive":
        keep = np.asarray(spec.massive)
        d, e_z = d[keep], e_z[keep]
    return d.reshape(-1, d.shape[-1]), e_z.reshape(-1, e_z.shape[-1])


@_spec_jit
def constraint_matrix(model: Model, q, joints=None, rows: str = "all"):
    """C = ∂Φ/∂p (Eq. 2.1) built from rigid-body kinematics, independently of g(q, z).

    Row block of joint c: ż_c = Z_cᵀ [R_cᵀ(ω_c - ω_P); R_cᵀ(v_c(o_c) - v_P(o_c))], the relative
    twist of the child w.r.t. its physical parent P at the joint point o_c, with v_b(x) =
    v_Cb + ω_b × (x - x_Cb).  Requires the physical parent to be ground or a massive body when
    ``rows="massive"``.
    """
    spec = _as_spec(model, joints)
    q = jnp.asarray(q)
    rot, xc = _frames(model, q, jnp.zeros((0, 6), q.dtype), ())
    poses = _poses(model, q)
    zs = prohibited_directions(model, q, spec)
    nb = model.n_bodies
    dtype = rot.dtype
    blocks = []
    for (c, p), z in zip(zip(spec.joints, spec.parents), zs):
        o = poses[c, :3, 3]
        rc = rot[c]
        row = jnp.zeros((6, nb, 6), dtype)
        # child: ω_c and v_Cc + ω_c × (o - x_Cc) = v_Cc - (o - x_Cc)~ ω_c
        row = row.at[:3, c, :3].add(rc.T)
        row = row.at[3:, c, 3:].add(rc.T)
        row = row.at[3:, c, :3].add(-rc.T @ skew(o - xc[c]))
        if p >= 0:
            row = row.at[:3, p, :3].add(-rc.T)
            row = row.at[3:, p, 3:].add(-rc.T)
            row = row.at[3:, p, :3].add(rc.T @ skew(o - xc[p]))
        blocks.append(jnp.einsum("km,mbn->kbn", z.T, row))
    c_mat = jnp.concatenate(blocks, 0)
    if rows == "massive":
        for c, p, chain in zip(spec.joints, spec.parents, spec.chains):
            for b in (c, p):
                if b >= 0 and b not in spec.massive:
                    raise ValueError(
                        f"constraint_matrix(rows='massive'): joint at body {model.body_names[c]!r} "
                        f"connects the zero-mass body {model.body_names[b]!r}"
                    )
        c_mat = c_mat[:, np.asarray(spec.massive)]
    return c_mat.reshape(c_mat.shape[0], -1)


@_spec_jit
def resolved_multipliers(model: Model, q, qd, qdd, joints=None, external=None):
    """Blajer's λ = Eᵀ(h - M(D q̈ + γ)) (Eq. 2.10) literally, flat ``(m,)``, paper sign."""
    spec = _as_spec(model, joints)
    q, qd, qdd = (jnp.asarray(a) for a in (q, qd, qdd))
    d, e = blajer_matrices(model, q, spec)
    gamma = acceleration_bias(model, q, qd).reshape(-1)
    big_m = jax.scipy.linalg.block_diag(*body_mass_matrix(model, q))
    h = applied_forces(model, q, qd, external).reshape(-1)
    return e.T @ (h - big_m @ (d @ qdd + gamma))


@_spec_jit
def joint_reactions_classical(model: Model, q, qd, joints=None, external=None):
    """Classical λ = (C M⁻¹ Cᵀ)⁻¹ C (M⁻¹ h - γ) (Eq. 2.11), flat ``(m,)``, paper sign.

    Uses the rows of the massive bodies only (M must be invertible).  ``h`` must then contain
    every applied load, actuation included (the formula is forward dynamics: no q̈).  Raises if
    the joints do not open every constraint ([D E] must be square: 6 n_massive = nq + m).
    """
    spec = _as_spec(model, joints)
    q, qd = jnp.asarray(q), jnp.asarray(qd)
    n = 6 * len(spec.massive)
    m = sum(spec.n_components)
    if n != model.n_coordinates + m:
        raise ValueError(
            f"joint_reactions_classical: 6 x {len(spec.massive)} massive bodies = {n} body "
            f"coordinates but nq + m = {model.n_coordinates} + {m}; Eq. 2.11 needs every joint "
            "opened (choose all physical joints, no coupling across joints)"
        )
    keep = np.asarray(spec.massive)
    c_mat = constraint_matrix(model, q, spec, rows="massive")
    big_m = jax.scipy.linalg.block_diag(*body_mass_matrix(model, q)[keep])
    h = applied_forces(model, q, qd, external)[keep].reshape(-1)
    gamma = acceleration_bias(model, q, qd)[keep].reshape(-1)
    m_inv_ct = jnp.linalg.solve(big_m, c_mat.T)
    rhs = c_mat @ (jnp.linalg.solve(big_m, h) - gamma)
    return jnp.linalg.solve(c_mat @ m_inv_ct, rhs)
