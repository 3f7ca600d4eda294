"""Joint reactions (Blajer & Czaplicki Eq. 2.1-2.11) against independent routes.

Routes: an independent recursive Newton-Euler pass from the leaves to the root on closed-form
accelerations (``pose_derivatives``, no jacfwd); the classical formula Eq. 2.11 with C built from
rigid-body kinematics; ``mbjax.inverse_dynamics`` / ``forward_dynamics``; hand-computed statics.
"""

import os

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _trees import random_poses, random_tree

import mbjax
from mbjax import reactions as rx

HAVE_DYNAMICS = os.path.exists(os.path.join(os.path.dirname(mbjax.__file__), "_dynamics.py"))


def _vee(w):
    return jnp.stack([w[..., 2, 1], w[..., 0, 2], w[..., 1, 0]], -1)


@eqx.filter_jit
def newton_euler(model, q, qd, qdd, loads=None):
    """Wrench [moment about child origin; force] (world) the parent exerts on every body.

    Body accelerations from the closed-form ∂T/∂q, ∂²T/∂q² (not from jacfwd), then one pass
    from the leaves to the root: W_b = own inertial - own applied + Σ_children W_ch (shifted).
    """
    pd = mbjax.pose_derivatives(model, q, order=2)
    t = pd.pose
    td = jnp.einsum("iabl,l->iab", pd.d_pose, qd)
    tdd = jnp.einsum("iablm,l,m->iab", pd.dd_pose, qd, qd) + jnp.einsum("iabl,l->iab", pd.d_pose, qdd)
    r, rd, rdd = t[:, :3, :3], td[:, :3, :3], tdd[:, :3, :3]
    omega = _vee(rd @ jnp.swapaxes(r, 1, 2))
    alpha = _vee(rdd @ jnp.swapaxes(r, 1, 2) + rd @ jnp.swapaxes(rd, 1, 2))
    o = t[:, :3, 3]
    xc = jnp.einsum("bij,bj->bi", r, model.com) + o
    ac = jnp.einsum("bij,bj->bi", rdd, model.com) + tdd[:, :3, 3]
    i_w = r @ model.inertia @ jnp.swapaxes(r, 1, 2)
    nb = model.n_bodies
    f_app = model.mass[:, None] * model.gravity
    n_app = jnp.cross(xc - o, f_app)  # about the body origin
    if loads is not None:
        for k, b in enumerate(loads.bodies):
            i = model.body_index(b)
            x = r[i] @ loads.points[k] + o[i]
            f_app = f_app.at[i].add(loads.forces[k])
            n_app = n_app.at[i].add(jnp.cross(x - o[i], loads.forces[k]) + loads.torques[k])
    force = [None] * nb
    moment = [None] * nb
    parents = model.topology.parents
    for b in reversed(range(nb)):
        m = model.mass[b]
        f = m * ac[b] - f_app[b]
        n = i_w[b] @ alpha[b] + jnp.cross(omega[b], i_w[b] @ omega[b]) + jnp.cross(xc[b] - o[b], m * ac[b])
        n = n - n_app[b]
        for ch in range(b + 1, nb):
            if parents[ch] == b:
                f = f + force[ch]
                n = n + moment[ch] + jnp.cross(o[ch] - o[b], force[ch])
        force[b], moment[b] = f, n
    return jnp.stack(moment), jnp.stack(force), o


def _state(seed, nq, scale=1.0):
    x = random_poses(seed, 3, nq, scale)
    return x[0], x[1], x[2]


def _loads(model, seed):
    rng = np.random.default_rng(seed)
    bodies = tuple(str(b) for b in rng.choice(model.body_names, size=3))
    return rx.ExternalLoads(bodies, rng.normal(size=(3, 3)) * 0.2, rng.normal(size=(3, 3)) * 5, rng.normal(size=(3, 3)))


def _rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.maximum(jnp.max(jnp.abs(b)), 1.0))


@pytest.mark.parametrize("seed", [0])
def test_resolved_equals_newton_euler_on_random_trees(seed):
    """Empirical (non-identity) maps, prismatic joints, zero-inertia bodies, external loads."""
    model = random_tree(seed, n_bodies=7, n_coordinates=4)
    q, qd, qdd = _state(seed, 4)
    loads = _loads(model, seed)
    spec = rx.reaction_spec(model, list(range(model.n_bodies)))
    out = rx.joint_reactions(model, q, qd, qdd, spec, loads)
    n_ne, f_ne, o = newton_euler(model, q, qd, qdd, loads)
    assert _rel(out.force, f_ne) < 1e-10
    assert _rel(out.moment, n_ne) < 1e-10
    np.testing.assert_allclose(out.point, o, atol=1e-14)
    # world and local forms are the same wrench
    rot = mbjax.body_poses(model, q)[:, :3, :3]
    np.testing.assert_allclose(jnp.einsum("bij,bj->bi", rot, out.local[:, 3:]), out.force, atol=1e-10)


@pytest.mark.skipif(not HAVE_DYNAMICS, reason="mbjax/_dynamics.py not present")
@pytest.mark.parametrize("seed", [3])
def test_wrenches_project_to_inverse_dynamics(seed):
    """τ_q = Fᵀ τ_θ with τ_θ,j = S_jᵀ W_j (axis moment or axis force): the actuation component."""
    model = random_tree(seed, n_bodies=6, n_coordinates=4)
    q, qd, qdd = _state(seed, 4)
    loads = _loads(model, seed)
    out = rx.joint_reactions(model, q, qd, qdd, list(range(model.n_bodies)), loads)
    rev = jnp.asarray(model.topology.is_revolute())
    tau_theta = jnp.where(
        rev,
        jnp.einsum("bi,bi->b", model.axis, out.local[:, :3]),
        jnp.einsum("bi,bi->b", model.axis, out.local[:, 3:]),
    )
    grad = mbjax.joint_values(model, q).gradient
    q_ext = eqx.filter_jit(mbjax.generalized_forces)(
        model, q, loads.bodies, loads.points, loads.forces, loads.torques
    )
    tau = eqx.filter_jit(mbjax.inverse_dynamics)(model, q, qd, qdd, external=q_ext)
    assert _rel(grad.T @ tau_theta, tau) < 1e-10


@pytest.mark.parametrize("seed", [5])
def test_ce_identity_cd_zero_with_chains(seed):
    """Eq. 2.6-2.7 with C from rigid-body kinematics and D, E from jacfwd of p = g(q, z)."""
    model = random_tree(seed, n_bodies=8, n_coordinates=4, zero_inertia_fraction=0.4)
    spec = rx.reaction_spec(model)
    q, _, _ = _state(seed, 4)
    c = rx.constraint_matrix(model, q, spec)
    d, e = rx.blajer_matrices(model, q, spec)
    assert c.shape[0] == sum(spec.n_components)
    assert float(jnp.max(jnp.abs(c @ d))) < 1e-12
    assert float(jnp.max(jnp.abs(c @ e - jnp.eye(c.shape[0])))) < 1e-12


def test_d_matches_closed_form_kinematics():
    """D from jacfwd of the body frames vs ∂T/∂q of ``pose_derivatives`` (closed form)."""
    model = random_tree(6, n_bodies=6, n_coordinates=3)
    q, qd, qdd = _state(6, 3)
    d = rx.velocity_jacobian(model, q)
    pd = mbjax.pose_derivatives(model, q, order=2)
    rot = pd.pose[:, :3, :3]
    omega = _vee(jnp.einsum("iabl,icb->ilac", pd.d_pose[:, :3, :3], rot))
    vc = jnp.einsum("iabl,ib->ial", pd.d_pose[:, :3, :3], model.com) + pd.d_pose[:, :3, 3]
    np.testing.assert_allclose(d[:, :3], jnp.swapaxes(omega, 1, 2), atol=1e-13)
    np.testing.assert_allclose(d[:, 3:], vc, atol=1e-13)
    # γ = Ḋ q̇ against the closed-form COM acceleration at q̈ = 0
    gamma = rx.acceleration_bias(model, q, qd)
    ac = jnp.einsum("iablm,ib,l,m->ia", pd.dd_pose[:, :3, :3], model.com, qd, qd) + jnp.einsum(
        "ialm,l,m->ia", pd.dd_pose[:, :3, 3], qd, qd
    )
    np.testing.assert_allclose(gamma[:, 3:], ac, atol=1e-12)


def _actuated(model, q, tau_theta):
    """Joint torque pairs (revolute) / force pairs (prismatic) realising τ_θ as body loads."""
    poses = mbjax.body_poses(model, q)
    bodies, points, forces, torques = [], [], [], []
    for j in range(model.n_bodies):
        a = poses[j, :3, :3] @ model.axis[j]
        rev = model.topology.joint_types[j] == "revolute"
        f = jnp.zeros(3) if rev else tau_theta[j] * a
        t = tau_theta[j] * a if rev else jnp.zeros(3)
        bodies.append(j), points.append(jnp.zeros(3)), forces.append(f), torques.append(t)
        p = model.topology.parents[j]
        if p >= 0:
            o_in_p = (jnp.linalg.inv(poses[p]) @ poses[j][:, 3])[:3]
            bodies.append(p), points.append(o_in_p), forces.append(-f), torques.append(-t)
    return rx.ExternalLoads(tuple(bodies), jnp.stack(points), jnp.stack(forces), jnp.stack(torques))


@pytest.mark.skipif(not HAVE_DYNAMICS, reason="mbjax/_dynamics.py not present")
@pytest.mark.parametrize("seed", [7])
def test_resolved_equals_classical(seed):
    """Eq. 2.10 = Eq. 2.11 in forward dynamics: actuation as physical torque/force pairs."""
    nb = 5
    model = random_tree(seed, n_bodies=nb, n_coordinates=nb, zero_inertia_fraction=0.0)
    q, qd, _ = _state(seed, nb, 0.7)
    tau_theta = jnp.asarray(np.random.default_rng(seed).normal(size=nb))
    loads = _actuated(model, q, tau_theta)
    grad = mbjax.joint_values(model, q).gradient
    qdd = eqx.filter_jit(mbjax.forward_dynamics)(model, q, qd, grad.T @ tau_theta)
    spec = rx.reaction_spec(model)
    lam_resolved = rx.resolved_multipliers(model, q, qd, qdd, spec, loads)
    lam_classical = rx.joint_reactions_classical(model, q, qd, spec, loads)
    assert _rel(lam_resolved, lam_classical) < 1e-10
    comps = jnp.concatenate(rx.joint_reactions(model, q, qd, qdd, spec, loads).components)
    assert _rel(-comps, lam_resolved) < 1e-12


def test_static_pendulum_hand_computed():
    """Horizontal 2-link planar arm at rest: shear and moments by hand."""
    m1, m2, l1, c1, c2 = 2.0, 1.5, 0.4, 0.2, 0.15
    g = 9.81
    b = mbjax.ModelBuilder(["a", "b"], gravity=[0, -g, 0])
    b.add_body("upper", joint="revolute", axis=[0, 0, 1], map="a", mass=m1, com=[c1, 0, 0],
               inertia=np.diag([0.001, 0.01, 0.01]))
    b.add_body("lower", parent="upper", joint="revolute", axis=[0, 0, 1], map="b",
               translation=[l1, 0, 0], mass=m2, com=[c2, 0, 0], inertia=np.diag([0.001, 0.01, 0.01]))
    model = b.build()
    z = jnp.zeros(2)
    out = rx.joint_reactions(model, z, z, z)
    # elbow: supports m2 g, moment m2 g c2 (counter-clockwise, +z) about the elbow
    np.testing.assert_allclose(out.force[1], [0, m2 * g, 0], atol=1e-12)
    np.testing.assert_allclose(out.moment[1], [0, 0, m2 * g * c2], atol=1e-12)
    np.testing.assert_allclose(out.force[0], [0, (m1 + m2) * g, 0], atol=1e-12)
    np.testing.assert_allclose(out.moment[0], [0, 0, m1 * g * c1 + m2 * g * (l1 + c2)], atol=1e-12)
    # the z-moment is the actuation, not a reaction: components are [F; M·b1; M·b2]
    comps = out.components[1]
    assert comps.shape == (5,)
    np.testing.assert_allclose(comps[:3], [0, m2 * g, 0], atol=1e-12)
    np.testing.assert_allclose(comps[3:], 0, atol=1e-12)


def test_static_prismatic_and_weld():
    """A slider (along x) carrying a welded box: components are moments + normal forces."""
    m, g = 3.0, 9.81
    b = mbjax.ModelBuilder(["s"], gravity=[0, 0, -g])
    b.add_body("slider", joint="prismatic", axis=[1, 0, 0], map="s", mass=m, com=[0, 0.1, 0],
               inertia=np.diag([0.01, 0.01, 0.01]))
    b.add_body("box", parent="slider", map=None, translation=[0.5, 0, 0], mass=m, com=[0, 0, 0],
               inertia=np.diag([0.01, 0.01, 0.01]))
    model = b.build()
    spec = rx.reaction_spec(model)
    assert spec.kinds == ("prismatic", "weld") and spec.n_components == (5, 6)
    z = jnp.zeros(1)
    out = rx.joint_reactions(model, z, z, z, spec)
    # weld: the box hangs off the slider: force +m g z, no moment about the box centre
    np.testing.assert_allclose(out.components[1], [0, 0, m * g, 0, 0, 0], atol=1e-12)
    # slider: total 2 m g up, moment about its origin: -(r_c × m g ez) summed
    w = np.cross([0, 0.1, 0], [0, 0, -m * g]) + np.cross([0.5, 0, 0], [0, 0, -m * g])
    np.testing.assert_allclose(out.moment[0], -w, atol=1e-12)
    comps = out.components[0]  # [F·b1, F·b2, Mx, My, Mz]
    np.testing.assert_allclose(comps[2:], -w, atol=1e-12)
    np.testing.assert_allclose(jnp.linalg.norm(comps[:2]), 2 * m * g, atol=1e-12)


def test_chain_physical_joint_components():
    """A ball joint as three revolutes through zero-inertia bodies: 3 force components only."""
    b = mbjax.ModelBuilder(["x", "y", "z"], gravity=[0, -9.81, 0])
    b.add_body("base", map=None, mass=5.0, inertia=np.diag([0.1, 0.1, 0.1]))
    b.add_body("r1", parent="base", axis=[0, 0, 1], map="z", translation=[0, -0.2, 0])
    b.add_body("r2", parent="r1", axis=[1, 0, 0], map="x")
    b.add_body("femur", parent="r2", axis=[0, 1, 0], map="y", mass=8.0, com=[0, -0.18, 0],
               inertia=np.diag([0.1, 0.02, 0.1]))
    model = b.build()
    spec = rx.reaction_spec(model, ["femur"])
    assert spec.kinds == ("chain",) and spec.n_components == (3,) and spec.chains == ((3, 2, 1),)
    q, qd, qdd = _state(11, 3)
    out = rx.joint_reactions(model, q, qd, qdd, spec)
    # prohibited = translations: the reaction part has no moment and carries the whole force
    np.testing.assert_allclose(out.reaction[0, :3], 0, atol=1e-10)
    np.testing.assert_allclose(out.reaction[0, 3:], out.local[0, 3:], atol=1e-10)
    np.testing.assert_allclose(jnp.linalg.norm(out.components[0]), jnp.linalg.norm(out.force[0]), rtol=1e-12)
    n_ne, f_ne, _ = newton_euler(model, q, qd, qdd)
    assert _rel(out.force[0], f_ne[3]) < 1e-10


def test_vmap_jit_float32():
    model = random_tree(2, n_bodies=3, n_coordinates=3)
    spec = rx.reaction_spec(model)
    qs = random_poses(2, 12, 3)
    fn = eqx.filter_jit(lambda m, q, qd, qdd: rx.joint_reactions(m, q, qd, qdd, spec))
    batched = jax.vmap(fn, in_axes=(None, 0, 0, 0))(model, qs[:4], qs[4:8], qs[8:])
    single = rx.joint_reactions(model, qs[1], qs[5], qs[9], spec)
    np.testing.assert_allclose(batched.force[1], single.force, rtol=1e-10, atol=1e-10)
    m32 = jax.tree.map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, model)
    out32 = rx.joint_reactions(m32, *(x.astype(jnp.float32) for x in (qs[1], qs[5], qs[9])), spec)
    assert out32.force.dtype == jnp.float32
    assert _rel(out32.force.astype(jnp.float64), single.force) < 1e-3


def test_bad_input():
    model = random_tree(0, n_bodies=4, n_coordinates=3)
    with pytest.raises(ValueError, match="unknown joint 'knee'"):
        rx.reaction_spec(model, ["knee"])
    with pytest.raises(ValueError, match="duplicate"):
        rx.reaction_spec(model, ["b1", "b1"])
    # under jit the masses are traced: a clear message asking for a prebuilt spec
    with pytest.raises(ValueError, match="concrete body masses"):
        jax.jit(lambda m: rx.joint_reactions(m, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3)).force)(model)
    # classical formula needs every joint opened
    with pytest.raises(ValueError, match="Eq. 2.11 needs every joint"):
        rx.joint_reactions_classical(model, jnp.zeros(3), jnp.zeros(3), ["b1"])


def test_rank_deficient_chain_raises():
    """Two revolutes with the same axis in one zero-inertia chain: only 1 free direction, not 2."""
    b = mbjax.ModelBuilder(["a", "b"], gravity=[0, -9.81, 0])
    b.add_body("r1", axis=[0, 0, 1], map="a")
    b.add_body("arm", parent="r1", axis=[0, 0, 1], map="b", mass=1.0, com=[0.3, 0, 0],
               inertia=np.diag([0.01, 0.01, 0.01]))
    model = b.build()
    spec = rx.reaction_spec(model)
    assert spec.n_components == (4,)
    with pytest.raises(Exception, match="rank-deficient"):
        rx.joint_reactions(model, jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), spec)


# --------------------------------------------------------------------------------------------
# fast O(n) path vs the dense jacfwd oracle
# --------------------------------------------------------------------------------------------


def _projectors(zs):
    return [z @ z.T for z in zs]


@pytest.mark.parametrize("seed", [21, pytest.param(22, marks=pytest.mark.extended)])
def test_fast_equals_dense_oracle_with_chains_and_loads(seed):
    """Newton-Euler subtree wrenches + closed-form Z vs Eq. 2.10 with jacfwd D, E and eigh Z."""
    model = random_tree(seed, n_bodies=10, n_coordinates=5, chain_depth=7, zero_inertia_fraction=0.45)
    spec = rx.reaction_spec(model)
    assert "chain" in spec.kinds
    q, qd, qdd = _state(seed, 5)
    loads = _loads(model, seed)
    fast = rx.joint_reactions(model, q, qd, qdd, spec, loads)
    dense = rx.joint_reactions_dense(model, q, qd, qdd, spec, loads)
    for name in ("force", "moment", "local", "reaction"):
        assert _rel(getattr(fast, name), getattr(dense, name)) < 1e-10, name
    np.testing.assert_allclose(fast.point, dense.point, atol=1e-13)
    # components: same basis for fixed kinds; for chains compare through the projector
    zs = rx.prohibited_directions(model, q, spec)
    for k, kind in enumerate(spec.kinds):
        assert fast.components[k].shape == (spec.n_components[k],)
        if kind != "chain":
            assert _rel(fast.components[k], dense.components[k]) < 1e-10
        else:
            # fast components on an orthonormal basis of the same prohibited subspace
            assert _rel(zs[k] @ (zs[k].T @ fast.local[k]), fast.reaction[k]) < 1e-10
            assert abs(float(jnp.linalg.norm(fast.components[k]) - jnp.linalg.norm(dense.components[k]))) < 1e-9


@pytest.mark.extended
def test_chain_basis_is_orthonormal_complement():
    """Closed-form Z_c of chains: orthonormal, ⟂ the relative twist Jacobian (by jacfwd)."""
    from mbjax.reactions import dense, resolved
    from mbjax._batching import Small
    from mbjax._kinematics import forward_pass

    model = random_tree(22, n_bodies=10, n_coordinates=5, chain_depth=7, zero_inertia_fraction=0.45)
    spec = rx.reaction_spec(model)
    q, qd, qdd = _state(22, 5)
    kin = forward_pass(model, q, qd, qdd)
    pos = [k for k, kind in enumerate(spec.kinds) if kind == "chain"]
    z, quality = resolved._chain_directions(model, spec, kin, Small(0, q.dtype), pos)
    assert bool(jnp.all(quality > 1e-6))
    zd = rx.prohibited_directions(model, q, spec)
    for i, k in enumerate(pos):
        zk = z[i, : spec.n_components[k]].T  # (6, m)
        np.testing.assert_allclose(zk.T @ zk, np.eye(zk.shape[1]), atol=1e-12)
        np.testing.assert_allclose(zk @ zk.T, zd[k] @ zd[k].T, atol=1e-10)
        jr = dense._relative_twist_jacobian(model, q, spec.joints[k], spec.parents[k])
        np.testing.assert_allclose(zk.T @ jr, 0, atol=1e-10)


def test_ball_chain_components_are_child_axis_forces():
    """A ball joint as three revolutes: the closed-form Z gives [F_x, F_y, F_z] in child axes."""
    b = mbjax.ModelBuilder(["x", "y", "z"], gravity=[0, -9.81, 0])
    b.add_body("r1", axis=[0, 0, 1], map="z", translation=[0, 1.0, 0])
    b.add_body("r2", parent="r1", axis=[1, 0, 0], map="x")
    b.add_body("femur", parent="r2", axis=[0, 1, 0], map="y", mass=8.0, com=[0, -0.18, 0],
               inertia=np.diag([0.1, 0.02, 0.1]))
    model = b.build()
    q, qd, qdd = _state(12, 3)
    out = rx.joint_reactions(model, q, qd, qdd)
    np.testing.assert_allclose(out.components[0], out.local[0, 3:], atol=1e-12)


def test_batched_equals_loop_and_compiles_once():
    """jax.vmap(joint_reactions) (one batch-last kernel) = a loop of single poses; one trace."""
    model = random_tree(23, n_bodies=8, n_coordinates=4, zero_inertia_fraction=0.4)
    spec = rx.reaction_spec(model)
    qs = random_poses(23, 3 * 70, 4)  # 70 poses: more than one CPU chunk, with padding
    q, qd, qdd = qs[:70], qs[70:140], qs[140:]
    rng = np.random.default_rng(23)
    bodies = ("b1", "b5")
    pts, frc = jnp.asarray(rng.normal(size=(70, 2, 3))), jnp.asarray(rng.normal(size=(70, 2, 3)) * 4)

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def batched(m, a, b, c, p, f):
        return jax.vmap(lambda a, b, c, p, f: rx.joint_reactions(m, a, b, c, spec, rx.ExternalLoads(bodies, p, f)))(
            a, b, c, p, f
        )

    out = batched(model, q, qd, qdd, pts, frc)
    out2 = batched(model, q + 0.1, qd, qdd, pts, frc)  # same shapes: no retrace
    assert out2.force.shape == (70, spec.n_joints, 3)
    for i in (0, 37, 69):
        single = rx.joint_reactions(model, q[i], qd[i], qdd[i], spec, rx.ExternalLoads(bodies, pts[i], frc[i]))
        for name in ("force", "moment", "point", "local", "reaction"):
            np.testing.assert_allclose(getattr(out, name)[i], getattr(single, name), rtol=1e-12, atol=1e-12)
        for a, b in zip(out.components, single.components):
            np.testing.assert_allclose(a[i], b, rtol=1e-12, atol=1e-12)


def test_gradients_through_fast_path():
    """Derivatives of the batch-last kernel (custom_jvp) = those of the dense oracle."""
    model = random_tree(24, n_bodies=4, n_coordinates=2, zero_inertia_fraction=0.3)
    spec = rx.reaction_spec(model)
    q, qd, qdd = _state(24, 2)

    # ∂/∂q along a random direction (any difference between the Jacobians shows there with
    # probability 1); the reverse-mode gradient with respect to the body masses
    dir_q = jnp.asarray(np.random.default_rng(24).normal(size=q.shape))
    with_mass = lambda w: eqx.tree_at(lambda m: m.mass, model, w)

    @eqx.filter_jit
    def derivs(fn):
        dq = jax.jvp(lambda x: fn(model, x, qd, qdd, spec).local, (q,), (dir_q,))[1]
        dm = jax.grad(lambda w: jnp.sum(fn(with_mass(w), q, qd, qdd, spec).reaction ** 2))(model.mass)
        return dq, dm

    (dq, dm), (dq_d, dm_d) = derivs(rx.joint_reactions), derivs(rx.joint_reactions_dense)
    assert _rel(dq, dq_d) < 1e-9
    assert _rel(dm, dm_d) < 1e-9


def test_spec_for_another_model_is_refused():
    model = random_tree(0, n_bodies=4, n_coordinates=3)
    other = random_tree(1, n_bodies=4, n_coordinates=3)
    spec = rx.reaction_spec(other)
    with pytest.raises(ValueError, match="built for another model"):
        rx.joint_reactions(model, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), spec)
    with pytest.raises(ValueError, match="built for another model"):
        rx.joint_reactions_dense(model, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), spec)
    # same topology, other parameters (e.g. under grad or jit): accepted
    heavier = eqx.tree_at(lambda m: m.mass, model, model.mass * 2)
    rx.joint_reactions(heavier, jnp.zeros(3), jnp.zeros(3), jnp.zeros(3), rx.reaction_spec(model))


def test_coupled_chain_uses_relative_twist_jacobian():
    """Two revolutes of a zero-inertia chain driven by one coordinate (a coupled knee-like joint):
    dof 1 < 2 moving joints, so the free direction is J_rel, not the two twists."""
    from mbjax.maps import Affine

    b = mbjax.ModelBuilder(["a", "c"], gravity=[0, -9.81, 0])
    b.add_body("thigh", axis=[0, 0, 1], map="c", mass=6.0, com=[0, -0.2, 0], inertia=np.diag([0.1, 0.02, 0.1]))
    b.add_body("r1", parent="thigh", axis=[0, 0, 1], map="a", translation=[0, -0.4, 0])
    b.add_body("shank", parent="r1", axis=[1, 0, 0], map=Affine(["a"], [0.3], 0.05), translation=[0, -0.02, 0.01],
               mass=3.0, com=[0, -0.2, 0], inertia=np.diag([0.05, 0.01, 0.05]))
    model = b.build()
    spec = rx.reaction_spec(model, ["shank"])
    assert spec.kinds == ("chain",) and spec.n_components == (5,)
    q, qd, qdd = _state(31, 2)
    fast = rx.joint_reactions(model, q, qd, qdd, spec)
    dense = rx.joint_reactions_dense(model, q, qd, qdd, spec)
    assert _rel(fast.local, dense.local) < 1e-10
    assert _rel(fast.reaction, dense.reaction) < 1e-10
    np.testing.assert_allclose(jnp.linalg.norm(fast.components[0]), jnp.linalg.norm(dense.components[0]), rtol=1e-10)
