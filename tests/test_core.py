"""The one kinematics pass and its batch-last dispatch: every public route through it.

Independent references: autodiff of ``body_poses`` along a curve q(t) for body velocities and
accelerations, the autodiff Lagrangian for dynamics, plain ``vmap`` of the un-dispatched kernel
for the batch-last rule, and finite differences for the derivative rule.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import _batching
from mbjax import _dynamics as dyn
from _trees import random_poses, random_tree


@pytest.fixture(scope="module")
def tree():
    return random_tree(3, n_bodies=9, n_coordinates=4)


def _curve_derivatives(model, q, qd, qdd):
    """Ṫ and T̈ of every body along q(t) = q + t q̇ + ½ t² q̈ at t = 0, by autodiff of body_poses."""
    c = lambda t: mbjax.body_poses(model, q + t * qd + 0.5 * t * t * qdd)
    return jax.jacfwd(c)(0.0), jax.jacfwd(jax.jacfwd(c))(0.0)


_batched_body_kinematics = jax.jit(jax.vmap(mbjax.body_kinematics, (None, 0, 0, 0)))


@pytest.fixture(scope="module")
def batched_kinematics(tree):
    """Six poses and their batched ``body_kinematics`` (one compiled program for the two tests below)."""
    states = tuple(random_poses(s, 6, tree.n_coordinates) for s in (1, 2, 3))
    return states, _batched_body_kinematics(tree, *states)


def test_body_kinematics_matches_autodiff_of_poses(tree, batched_kinematics):
    (qs, qds, qdds), bk = batched_kinematics
    td, tdd = jax.jit(jax.vmap(_curve_derivatives, (None, 0, 0, 0)))(tree, qs, qds, qdds)
    rot = bk.pose[..., :3, :3]
    # Ṙ = ω̃ R, ṗ = v_O; R̈ = (ω̇~ + ω̃²) R, p̈ = a_O
    w, v = bk.velocity[..., :3], bk.velocity[..., 3:]
    al, a = bk.acceleration[..., :3], bk.acceleration[..., 3:]
    sk = mbjax._spatial.skew
    np.testing.assert_allclose(bk.pose, jax.vmap(mbjax.body_poses, (None, 0))(tree, qs), atol=1e-14)
    np.testing.assert_allclose(sk(w) @ rot, td[..., :3, :3], atol=1e-12)
    np.testing.assert_allclose(v, td[..., :3, 3], atol=1e-12)
    np.testing.assert_allclose((sk(al) + sk(w) @ sk(w)) @ rot, tdd[..., :3, :3], atol=1e-11)
    np.testing.assert_allclose(a, tdd[..., :3, 3], atol=1e-11)


def test_body_kinematics_single_pose_equals_batched(tree, batched_kinematics):
    (q, qd, qdd), batched = batched_kinematics
    for k in (0, 3, 5):
        one = mbjax.body_kinematics(tree, q[k], qd[k], qdd[k])
        for a, b in zip(one, batched):
            np.testing.assert_allclose(a, b[k], rtol=0, atol=1e-13)


def test_kinematics_result_is_consistent(tree):
    q, qd = random_poses(7, 2, tree.n_coordinates)
    kin = mbjax.kinematics(tree, q, qd)
    jv = mbjax.joint_values(tree, q)
    np.testing.assert_allclose(kin.theta, jv.value, atol=1e-15)
    np.testing.assert_allclose(kin.theta_grad, jv.gradient, atol=1e-15)
    np.testing.assert_allclose(kin.theta_dot, jv.gradient @ qd, atol=1e-13)
    np.testing.assert_allclose(kin.theta_ddot, jnp.einsum("jlm,l,m->j", jv.hessian, qd, qd), atol=1e-12)
    poses = mbjax.body_poses(tree, q)
    np.testing.assert_allclose(kin.rot, poses[:, :3, :3], atol=1e-15)
    np.testing.assert_allclose(kin.pos, poses[:, :3, 3], atol=1e-15)


def _kernel_vmap(model, q, qd, qdd):
    """The same Newton-Euler kernel under plain vmap (no batch-last rule): the dispatch's reference."""
    return jax.vmap(lambda a, b, c: dyn._inverse_dynamics_kernel(model, a, b, c))(q, qd, qdd)


@pytest.fixture(scope="module")
def plain_vmap_reference(tree):
    """151 poses and the kernel under plain vmap: one compiled reference for every batch size below
    (``random_poses`` draws row by row, so the first n rows are the poses of a batch of n)."""
    states = tuple(random_poses(s, 151, tree.n_coordinates) for s in (8, 9, 10))
    return states, jax.jit(_kernel_vmap)(tree, *states)


# 64 (= CPU_CHUNK, still one kernel call) takes the same unchunked path as 5; the chunk-size
# boundary itself is asserted in test_chunk_size_policy
@pytest.mark.parametrize("n", [1, 5, pytest.param(64, marks=pytest.mark.extended), 151])
def test_vmap_dispatch_equals_plain_vmap(tree, plain_vmap_reference, n):
    # 151 > CPU_CHUNK: three equal chunks of 51 on CPU, the last padded by two poses
    states, ref = plain_vmap_reference
    q, qd, qdd = (x[:n] for x in states)
    fast = jax.jit(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0)))(tree, q, qd, qdd)
    np.testing.assert_allclose(fast, ref[:n], rtol=0, atol=1e-12)


@pytest.mark.extended
def test_derivatives_through_dispatch():
    tree = random_tree(4, n_bodies=5, n_coordinates=3)
    q, qd, qdd = (random_poses(s, 4, tree.n_coordinates) for s in (11, 12, 13))
    # oracle: 4th-order central differences of the (jitted, batched) values, one column at a time;
    # the values themselves equal the Lagrangian route (test_dynamics, test_vmap_over_models_falls_back)
    tau = jax.jit(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0)))
    args = (q, qd, qdd)
    h = 1e-3
    ref = []
    for k in range(3):
        cols = []
        for j in range(tree.n_coordinates):
            e = jnp.zeros(tree.n_coordinates).at[j].set(h)
            f = lambda t: tau(tree, *(a + t * e if i == k else a for i, a in enumerate(args)))
            cols.append((8 * (f(1) - f(-1)) - (f(2) - f(-2))) / 12 / h)
        ref.append(jnp.stack(cols, -1))
    for jac in (jax.jacfwd, jax.jacrev):
        ours = jax.jit(jax.vmap(jac(mbjax.inverse_dynamics, argnums=(1, 2, 3)), (None, 0, 0, 0)))(tree, q, qd, qdd)
        for a, b in zip(ours, ref):
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-7)
    # parameter gradient of a batched loss, vs the Lagrangian route, along physical parameters:
    # rotations stay rotations and axes unit vectors (off that manifold the two formulations are
    # different functions), inertias symmetric
    nb = tree.n_bodies
    sk = mbjax._spatial.skew

    def cayley(w):  # (I - w̃)⁻¹(I + w̃): a rotation for every w, smooth, identity at 0 (compiles
        # in a fraction of jax.scipy.linalg.expm's time under grad: 8.7 -> 4.0 s measured)
        return jnp.linalg.solve(jnp.eye(3) - sk(w), jnp.eye(3) + sk(w))

    def perturbed(p):
        rot = jax.vmap(cayley)(p["w_off"])
        offset = tree.offset.at[:, :3, :3].set(tree.offset[:, :3, :3] @ rot).at[:, :3, 3].add(p["d_off"])
        axis = jnp.einsum("bij,bj->bi", jax.vmap(cayley)(p["w_axis"]), tree.axis)
        sym = p["d_inertia"] + jnp.swapaxes(p["d_inertia"], 1, 2)
        return eqx.tree_at(lambda m: (m.offset, m.axis, m.mass, m.com, m.inertia), tree,
                           (offset, axis, tree.mass + p["d_mass"], tree.com + p["d_com"], tree.inertia + sym))

    p0 = {k: jnp.zeros(s) for k, s in (("w_off", (nb, 3)), ("d_off", (nb, 3)), ("w_axis", (nb, 3)),
                                       ("d_mass", (nb,)), ("d_com", (nb, 3)), ("d_inertia", (nb, 3, 3)))}
    loss = jax.jit(lambda p: jnp.sum(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(perturbed(p), q, qd, qdd) ** 2))
    g = jax.jit(jax.grad(loss))(p0)
    # independent check: central differences of the loss along random directions of each group
    # (the values themselves equal the Lagrangian route, above and in test_dynamics)
    rng = np.random.default_rng(17)
    h = 1e-5
    for name in p0:
        for _ in range(2):
            v = {k: jnp.zeros_like(x) for k, x in p0.items()}
            v[name] = jnp.asarray(rng.standard_normal(p0[name].shape))
            if name == "d_inertia":
                v[name] = v[name] + jnp.swapaxes(v[name], 1, 2)
            shift = lambda t: {k: p0[k] + t * v[k] for k in p0}
            fd = (float(loss(shift(h))) - float(loss(shift(-h)))) / (2 * h)
            ad = float(sum(jnp.sum(g[k] * v[k]) for k in p0))
            np.testing.assert_allclose(ad, fd, rtol=1e-6, atol=1e-8 * max(abs(fd), 1.0), err_msg=name)


def _euler_lagrange(model, q, qd, qdd):
    """τ = d/dt ∂T/∂q̇ - ∂T/∂q + ∂V/∂q by autodiff of the energies: the time derivative as one jvp
    along (q̇, q̈) (``dyn.inverse_dynamics_lagrangian`` builds the whole Hessian M first)."""
    dt_dqd = lambda x, v: jax.grad(dyn.kinetic_energy, argnums=2)(model, x, v)  # noqa: E731
    _, ddt = jax.jvp(dt_dqd, (q, qd), (qd, qdd))
    return (ddt - jax.grad(dyn.kinetic_energy, argnums=1)(model, q, qd)
            + jax.grad(dyn.potential_energy, argnums=1)(model, q))


def test_vmap_over_models_falls_back(tree):
    q, qd, qdd = (random_poses(s, 1, tree.n_coordinates)[0] for s in (14, 15, 16))
    scales = jnp.asarray([0.5, 1.0, 2.0])
    models = jax.vmap(lambda s: eqx.tree_at(lambda m: m.mass, tree, tree.mass * s))(scales)
    out = jax.vmap(mbjax.inverse_dynamics, (0, None, None, None))(models, q, qd, qdd)
    lag = jax.jit(_euler_lagrange)  # one compile for the three models
    for k, s in enumerate(scales):
        one = lag(eqx.tree_at(lambda m: m.mass, tree, tree.mass * s), q, qd, qdd)
        np.testing.assert_allclose(out[k], one, rtol=1e-10, atol=1e-10)


def test_compiles_once_over_poses(tree):
    fn = eqx.filter_jit(eqx.debug.assert_max_traces(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0)), max_traces=1))
    for seed in range(3):
        q, qd, qdd = (random_poses(seed + s, 32, tree.n_coordinates) for s in (0, 1, 2))
        fn(tree, q, qd, qdd)


def test_chunk_size_policy():
    assert _batching.chunk_size(10) is None
    cpu = jax.default_backend() == "cpu"
    assert _batching.chunk_size(10 * _batching.CPU_CHUNK) == (_batching.CPU_CHUNK if cpu else None)
    # equal chunks, never above CPU_CHUNK, padding below one pose per chunk: 73 -> 2 x 37, not 2 x 64
    for n in (_batching.CPU_CHUNK + 1, 73, 151, 1000):
        size = _batching.chunk_size(n)
        if not cpu:
            assert size is None
            continue
        chunks = -(-n // size)
        assert size <= _batching.CPU_CHUNK and chunks == -(-n // _batching.CPU_CHUNK) and chunks * size - n < chunks
    if cpu:
        assert _batching.chunk_size(73) == 37
    assert _batching.chunk_size(_batching.CPU_CHUNK) is None  # a full chunk is still one call


def test_float32_runs(tree, plain_vmap_reference):
    """float32 batch vs the float64 values of the same poses (the plain-vmap reference above)."""
    m32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, tree)
    states, ref = plain_vmap_reference
    q, qd, qdd = (x[:8].astype(jnp.float32) for x in states)
    tau = jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(m32, q, qd, qdd)
    assert tau.dtype == jnp.float32
    ref = ref[:8]
    np.testing.assert_allclose(tau, ref, rtol=2e-3, atol=2e-3 * float(jnp.max(jnp.abs(ref))))


def test_shape_errors_name_the_argument(tree):
    nq = tree.n_coordinates
    with pytest.raises(ValueError, match="qd must have shape"):
        mbjax.inverse_dynamics(tree, jnp.zeros(nq), jnp.zeros(nq + 1), jnp.zeros(nq))
    with pytest.raises(ValueError, match="tau must have shape"):
        mbjax.forward_dynamics(tree, jnp.zeros(nq), jnp.zeros(nq), jnp.zeros(1))
