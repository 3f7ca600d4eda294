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

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from . import _kron
from ._batching import Small, batch_last, jvp_of_perturbed
from ._body_rules import body_rules, model_array
from . import _checks
from ._kinematics import Kinematics, body_poses, check_pose, check_vector, forward_pass
from ._kinematics_kron import pose_derivatives_kron
from ._loads import ExternalLoads, checked_loads
from ._wrenches import _joint_torques, _ops_of, subtree_wrenches
from ._model import Model, require_model

# --------------------------------------------------------------------------------------------
# Newton-Euler and composite-rigid-body kernels on the kinematics pass (batch last)
# --------------------------------------------------------------------------------------------


def _inertia_times(model: Model, ops: Small, m6):
    """Body-frame spatial inertia (about the body origin) times motion vectors ``(nb, 6, *b)``.

    With mass m, COM c and central inertia I_c (body frame, constant):
    I [ω; v] = [I_c ω + c × p; p] with p = m (v + ω × c).
    """
    w, v = m6[:, :3], m6[:, 3:]
    c = ops.c(model.com)
    p = ops.c(model.mass)[:, None] * (v + ops.cross(w, c))
    ang = ops.mv(ops.c(model.inertia), w) + ops.cross(c, p)
    return jnp.concatenate([ang, p], 1)


def _cross_force(ops: Small, v, f):
    """Force cross product v ×* f for a motion ``v = [ω; v]`` and a wrench ``f = [n; f]``."""
    w, vo = v[:, :3], v[:, 3:]
    n, fl = f[:, :3], f[:, 3:]
    return jnp.concatenate([ops.cross(w, n) + ops.cross(vo, fl), ops.cross(w, fl)], 1)


def _newton_euler(model: Model, q, qd, qdd, gravity: bool = True):
    """Fᵀ τ_θ(θ, F q̇, F q̈ + [q̇ᵀ H_j q̇]_j) by recursive Newton-Euler in body frames (kernel)."""
    dtype = jnp.result_type(q, model.axis)
    a0 = jnp.zeros(6, dtype)
    if gravity:
        a0 = a0.at[3:].set(-model.gravity.astype(dtype))
    kin = forward_pass(model, q, qd, qdd, base_acceleration=a0)
    ops = _ops_of(kin)
    v = kin.velocity
    wrench = _inertia_times(model, ops, kin.acceleration) + _cross_force(ops, v, _inertia_times(model, ops, v))
    return _joint_torques(model, kin, subtree_wrenches(model, kin, wrench))


def _gravity_kernel(model: Model, q):
    """G = Fᵀ G_θ with G_θ the subtree sums of the gravity wrenches [c × m g_b; m g_b] (body axes)."""
    kin = forward_pass(model, q)
    ops = _ops_of(kin)
    g_body = ops.mtv(kin.rot, ops.c(model.gravity)[None])  # Rᵀ g, (nb, 3, *b)
    f = ops.c(model.mass)[:, None] * g_body
    wrench = jnp.concatenate([ops.cross(ops.c(model.com), f), f], 1)
    return _joint_torques(model, kin, subtree_wrenches(model, kin, wrench))


def _world_twists(model: Model, ops: Small, kin: Kinematics):
    """World joint twists at the world origin ``(nb, 6, *b)``: [w; p × w] revolute, [0; w] prismatic."""
    rev = ops.mask(model.topology.is_revolute()[:, None])
    w = ops.mv(kin.rot, ops.c(model.axis))
    return jnp.concatenate([jnp.where(rev, w, 0.0), jnp.where(rev, ops.cross(kin.pos, w), w)], 1)


def _mass_matrix_kernel(model: Model, q):
    """M_q = Fᵀ M_θ F, M_θ[j, k] = S_jᵀ I^c_j S_k (k ⪯ j) by composite rigid bodies in world axes.

    The composite inertias I^c_j = Σ_{i ⪰ j} I_i are one product with the static ancestor mask
    (over the batch, a single matrix product), applied to the world twists directly:
    I^c_j S_k = Σ_{i ⪰ j} I_i S_k, with I_i S computed from each body's mass, world COM and
    world central inertia.
    """
    kin = forward_pass(model, q)
    ops = _ops_of(kin)
    s = _world_twists(model, ops, kin)  # (nb, 6, *b)
    rot = kin.rot
    com = ops.mv(rot, ops.c(model.com)) + kin.pos  # world COM
    i_c = ops.mm(ops.mm(rot, ops.c(model.inertia)), jnp.swapaxes(rot, 1, 2))
    mass = ops.c(model.mass)[:, None]
    anc = model.topology.ancestor_mask()
    # world spatial inertias about the origin, (nb, 6, 6, *b); composite ones by one mask product
    eye = ops.c(np.eye(3))[None]
    cx = _skew_b(ops, com)
    i6 = jnp.concatenate([
        jnp.concatenate([i_c + mass[..., None] * ops.mm(cx, jnp.swapaxes(cx, 1, 2)), mass[..., None] * cx], 2),
        jnp.concatenate([mass[..., None] * jnp.swapaxes(cx, 1, 2), jnp.broadcast_to(mass[..., None] * eye, cx.shape)], 2),
    ], 1)  # (nb, 6, 6, *b)
    ic = jnp.einsum("ij,iab...->jab...", jnp.asarray(anc, ops.dtype), i6)
    y = ops.mv(ic, s)  # I^c_j S_j, (nb, 6, *b)
    x = ops.dot(ops.expand(y, -2), ops.expand(s, -3))  # [j, k] = S_kᵀ I^c_j S_j
    low = ops.mask(anc) * x
    m_theta = low + jnp.swapaxes(low, 0, 1) - ops.mask(np.eye(len(anc))) * x
    f = kin.theta_grad
    return jnp.einsum("jl...,jk...,km...->lm...", f, m_theta, f)


def _skew_b(ops: Small, v):
    z = jnp.zeros_like(v[:, 0])
    x, y, w = v[:, 0], v[:, 1], v[:, 2]
    return jnp.stack([jnp.stack([z, -w, y], 1), jnp.stack([w, z, -x], 1), jnp.stack([-y, x, z], 1)], 1)


def _inverse_dynamics_kernel(model: Model, q, qd, qdd):
    return _newton_euler(model, q, qd, qdd, gravity=True)


def _bias_kernel(model: Model, q, qd):
    return _newton_euler(model, q, qd, None, gravity=False)


def _bias_gravity_kernel(model: Model, q, qd):
    return _newton_euler(model, q, qd, None, gravity=True)


# --------------------------------------------------------------------------------------------
# public fast path (single pose; jax.vmap runs the batch-last kernels)
# --------------------------------------------------------------------------------------------


_vector = check_vector


def _pose(model: Model, q, where: str):
    """``q`` checked as :func:`check_vector` does, with the model's body parameters, joint axes and
    gravity (one fused run-time check, :mod:`mbjax._body_rules`)."""
    changed = " (changed after loading? eqx.tree_at)"
    g = model_array(model.gravity, f"{where}: model.gravity", (3,), (3,), " (world axes)")
    gravity = (~jnp.isfinite(g), f"{where}: model.gravity contains NaN or inf{changed}")
    return check_pose(model, q, where, body_rules(model, where) + [gravity])


def mass_matrix(model: Model, q):
    """Mass matrix M(q) ``(nq, nq)`` of Eq. 188-189, as Fᵀ M_θ F (composite rigid body)."""
    return batch_last(_mass_matrix_kernel)(model, _pose(model, q, "mass_matrix"))


def bias_forces(model: Model, q, qd):
    """Coriolis and centrifugal term N(q, q̇) q̇ ``(nq,)`` (Eq. 146/190), without gravity."""
    return batch_last(_bias_kernel)(model, _pose(model, q, "bias_forces"), _vector(model, qd, "qd"))


def gravity_forces(model: Model, q):
    """Generalized gravity force G(q) ``(nq,)`` (Eq. 187/197, right-hand side of Eq. 198)."""
    return batch_last(_gravity_kernel)(model, _pose(model, q, "gravity_forces"))


def inverse_dynamics(model: Model, q, qd, qdd, external=None):
    """Generalized force τ with M q̈ + N q̇ - G - Q = τ (Eq. 198), by recursive Newton-Euler.

    Computed as Fᵀ τ_θ(θ, F q̇, F q̈ + [q̇ᵀ H_j q̇]_j) on the free tree in body frames, gravity as a
    base acceleration.  ``external`` is an optional generalized force Q ``(nq,)`` (e.g. from
    :func:`generalized_forces`) or :class:`~mbjax.ExternalLoads` (point forces and torques, turned
    into Q at this pose by virtual work; OpenSim's ID with an ``external_loads_file``).
    """
    q = _pose(model, q, "inverse_dynamics")
    tau = batch_last(_inverse_dynamics_kernel)(model, q, _vector(model, qd, "qd"), _vector(model, qdd, "qdd"))
    if isinstance(external, ExternalLoads):
        external = checked_loads(external, "inverse_dynamics").generalized_forces(model, q)
    elif isinstance(external, (dict, str, bytes)):
        raise TypeError(f"inverse_dynamics: external must be a generalized force Q (nq,) = ({model.n_coordinates},) "
                        f"or mbjax.ExternalLoads (forces and torques at points of named bodies), got "
                        f"{type(external).__name__}")
    if external is not None:
        tau = tau - _vector(model, external, "external")
    return tau


def singular_tolerance(m):
    """Relative pivot tolerance of :func:`forward_dynamics`: ``nq · eps(dtype)``.

    A Cholesky pivot ``L_ii`` with ``L_ii² <= nq · eps · M_ii`` is at the rounding level of its own
    diagonal entry: what coordinate ``i`` adds to the inertia of the coordinates before it is
    rounding, so the factor carries no information in that direction.  Relative to each coordinate's
    own ``M_ii``, the test does not depend on units (a toe's 1e-4 kg·m² beside a pelvis's 70 kg).
    """
    return m.shape[-1] * jnp.finfo(m.dtype).eps


def _cholesky_checked(m):
    """Lower Cholesky factor of M, refused (``eqx.error_if``, checks on) when M is singular.

    Singular: a non-finite factor of a finite M (M indefinite or rank deficient, e.g. a
    coordinate that moves only zero-inertia bodies) or a pivot below :func:`singular_tolerance`
    (e.g. two joint axes aligned through zero-inertia bodies, gimbal lock of a 3-axis chain).
    A non-finite M itself is left to the argument checks (it comes from non-finite inputs).
    """
    chol, lower = jsl.cho_factor(m, lower=True)
    if not _checks.checks_enabled():
        return chol, lower
    pivots = jnp.diagonal(chol)
    own = jnp.abs(jnp.diagonal(m))
    small = jnp.any(jnp.where(jnp.isfinite(pivots), pivots, 0.0) ** 2 <= singular_tolerance(m) * own)
    bad = jnp.all(jnp.isfinite(m)) & (small | ~jnp.all(jnp.isfinite(pivots)))
    chol = _checks.require(
        chol,
        bad,
        "forward_dynamics: the mass matrix M(q) is singular or indefinite (a coordinate moves only "
        "zero-inertia bodies, joint axes align through zero-inertia bodies, or a body's inertia is not a "
        "mass distribution's): q̈ is undefined at this q",
    )
    return chol, lower


def forward_dynamics(model: Model, q, qd, tau=None):
    """q̈ solving M q̈ = G + τ - N q̇ (Eq. 198) with a Cholesky factorization of M.

    ``tau`` ``(nq,)`` is any applied generalized force (actuation plus external Q).  M must be
    positive definite: a singular M (a coordinate that moves only zero-inertia bodies, joint axes
    aligned through zero-inertia bodies) raises at run time (``eqx.error_if``, see
    :func:`_cholesky_checked`) while checks are on; with ``mbjax.config.checks(False)`` it gives
    non-finite or meaningless q̈.

    Derivatives (``jvp``/``grad``/``jacfwd``/``jacrev``, any order) come from inverse dynamics,
    q̈' = M⁻¹(τ' − ∂ID/∂(model, q, q̇)·(model, q, q̇)'), so reverse mode costs a Cholesky solve and
    one Newton-Euler VJP (cheaper than autodiff through the mass matrix and its factorization;
    ``benchmarks/RESULTS.md``).  For a raw 3x3 inertia leaf the
    derivative is defined along symmetric perturbations (any physical one).
    """
    q, qd = _pose(model, q, "forward_dynamics"), _vector(model, qd, "qd")
    tau = None if tau is None else _vector(model, tau, "tau")
    return _forward_dynamics(model, q, qd, tau)


def _forward_dynamics(model: Model, q, qd, tau=None):
    """:func:`forward_dynamics` without the argument checks (the simulator's vector field: diffrax
    must be free to try a non-finite trial state and reject the step); the singular-M check stays.

    Differentiated through :func:`_forward_dynamics_rule`: the tangent of q̈ from inverse dynamics.
    """
    return _forward_dynamics_rule(model, q, qd, tau)


def _solve_qdd(model: Model, q, qd, tau):
    """``(q̈, Cholesky factor of M)`` with M q̈ = τ - (N q̇ - G): composite rigid body + Newton-Euler."""
    m = batch_last(_mass_matrix_kernel)(model, q)
    c = batch_last(_bias_gravity_kernel)(model, q, qd)  # N q̇ - G
    rhs = -c if tau is None else tau - c
    chol = _cholesky_checked(m)
    return jsl.cho_solve(chol, rhs), chol


@eqx.filter_custom_jvp
def _forward_dynamics_rule(model: Model, q, qd, tau):
    return _solve_qdd(model, q, qd, tau)[0]


@_forward_dynamics_rule.def_jvp
def _forward_dynamics_jvp(primals, tangents):
    """Tangent of q̈ = FD(x, τ), x = (model, q, q̇), from ID(x, FD(x, τ)) = τ and ∂ID/∂q̈ = M:

        q̈' = M⁻¹ (τ' - ∂ID/∂x · x'),

    one forward-mode Newton-Euler pass at the solved q̈ plus a solve with the factor already made.
    Reverse mode transposes exactly this: a Cholesky solve of the cotangent, then the VJP of
    Newton-Euler (no VJP through the composite-rigid-body mass matrix nor through the Cholesky
    factorization, which autodiff of the solve would differentiate).  Only the perturbed leaves
    of the model enter the inverse-dynamics tangent.
    """
    model, q, qd, tau = primals
    t_model, t_q, t_qd, t_tau = tangents
    qdd, chol = _solve_qdd(model, q, qd, tau)
    # equinox passes None for every leaf that is not differentiated: those stay constants
    _, d_id = jvp_of_perturbed(lambda m, a, b: batch_last(_inverse_dynamics_kernel)(m, a, b, qdd),
                               (model, q, qd), (t_model, t_q, t_qd), is_zero=lambda t: t is None)
    if d_id is None and t_tau is None:
        return qdd, None
    rhs = t_tau if d_id is None else (-d_id if t_tau is None else t_tau - d_id)
    return qdd, jsl.cho_solve(chol, rhs)


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
    require_model(model, "mass_matrix_kron")
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
    require_model(model, "bias_forces_kron")
    qd = _vector(model, qd, "qd")
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
    require_model(model, "kinetic_energy")
    q, qd = _vector(model, q, "q"), _vector(model, qd, "qd")
    dtype = jnp.result_type(q, model.axis)  # as the kinematics pass: integer or mixed poses promoted
    q, qd = q.astype(dtype), qd.astype(dtype)
    _, tdot = jax.jvp(lambda x: body_poses(model, x), (q,), (qd,))
    jmat = model.pseudo_inertia().astype(tdot.dtype)
    return 0.5 * jnp.einsum("iab,ibc,iac->", tdot, jmat, tdot)


def potential_energy(model: Model, q):
    """V = -Σ_i m_i gᵀ c_i (gravity only)."""
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
    require_model(model, "total_energy")
    return kinetic_energy(model, q, qd) + potential_energy(model, q)


# Eager calls compile once (first eager mass_matrix: seconds, op by op; later: the cached
# executable); under an outer jit / vmap / grad this is a nested jit that XLA inlines.
from ._eager import compiled_when_eager as _compiled_when_eager  # noqa: E402

mass_matrix = _compiled_when_eager(mass_matrix, bodies=True)
bias_forces = _compiled_when_eager(bias_forces, bodies=True)
gravity_forces = _compiled_when_eager(gravity_forces, bodies=True)
inverse_dynamics = _compiled_when_eager(inverse_dynamics, bodies=True)
forward_dynamics = _compiled_when_eager(forward_dynamics, bodies=True)
