"""Closed-form kinematics (Ehsani Eq. 38-99) against autodiff, finite differences and the literal Kronecker path."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mbjax
from _trees import random_poses, random_tree


@jax.jit
def _autodiff(model, q):
    poses = lambda x: mbjax.body_poses(model, x)
    # one compiled call for both (eagerly, jacfwd and hessian each traced and compiled their own)
    return jax.jit(lambda x: (jax.jacfwd(poses)(x), jax.hessian(poses)(x)))(q)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.extended), pytest.param(2, marks=pytest.mark.extended)])
def test_pose_derivatives_match_autodiff(seed):
    model = random_tree(seed, n_bodies=9, n_coordinates=4, chain_depth=7)
    q = random_poses(seed + 10, 1, 4)[0]
    d = jax.jit(mbjax.pose_derivatives)(model, q)
    jac, hess = _autodiff(model, q)
    np.testing.assert_allclose(d.pose, mbjax.body_poses(model, q), atol=1e-14)
    np.testing.assert_allclose(d.d_pose, jac, atol=1e-12)
    np.testing.assert_allclose(d.dd_pose, hess, atol=1e-12)


def test_pose_derivatives_match_finite_differences():
    model = random_tree(3, n_bodies=8, n_coordinates=4)
    q = random_poses(4, 1, 4)[0]
    d = mbjax.pose_derivatives(model, q)
    h = 1e-5
    eye = jnp.eye(4)
    first = jax.jit(lambda x: mbjax.pose_derivatives(model, x, 1).d_pose)
    fd1 = jnp.stack(
        [(mbjax.body_poses(model, q + h * e) - mbjax.body_poses(model, q - h * e)) / (2 * h) for e in eye], -1
    )
    np.testing.assert_allclose(d.d_pose, fd1, atol=1e-8)
    # second derivative: central differences of the closed-form first derivative
    fd2 = jnp.stack(
        [
            (first(q + h * e) - first(q - h * e)) / (2 * h)
            for e in eye
        ],
        -1,
    )
    np.testing.assert_allclose(d.dd_pose, fd2, atol=1e-7)


@pytest.mark.parametrize("method", ["recursive", "closed"])
def test_kronecker_reference_equals_fast_path(method):
    """Eq. 74 / Eq. 75 (W_ji of Eq. 76) and Eq. 89, literally with Kronecker products."""
    model = random_tree(5, n_bodies=7, n_coordinates=4, chain_depth=6)
    q = random_poses(6, 1, 4)[0]
    b_ref, d_ref, dd_ref = mbjax.reference.pose_derivatives_kron(model, q, method=method)
    b, d, dd = mbjax.pose_derivatives(model, q).kron_layout()
    for i in range(model.n_bodies):
        np.testing.assert_allclose(b_ref[i], b[i], atol=1e-14)
        np.testing.assert_allclose(d_ref[i], d[i], atol=1e-13)
        np.testing.assert_allclose(dd_ref[i], dd[i], atol=1e-12)


def test_kron_layout_is_definition_1_of_autodiff():
    """The paper's D_i = ∂B_i/∂q with B_i = ⁰ᵢA₄ᵀ in Definition 1's layout, built from jacfwd."""
    from mbjax import _kron

    model = random_tree(7, n_bodies=5, n_coordinates=3)
    q = random_poses(8, 1, 3)[0]
    _, d, dd = mbjax.pose_derivatives(model, q).kron_layout()

    @jax.jit
    def reference(q):
        out = []
        for i in range(model.n_bodies):
            b_fn = lambda x: mbjax.body_poses(model, x)[i].T
            d_fn = lambda x: mbjax.pose_derivatives(model, x, 1).kron_layout()[1][i]
            out.append((_kron.derivative(b_fn, q), _kron.derivative(d_fn, q)))
        return out

    for i, (d_ref, dd_ref) in enumerate(reference(q)):
        np.testing.assert_allclose(d[i], d_ref, atol=1e-13)
        np.testing.assert_allclose(dd[i], dd_ref, atol=1e-12)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_bodies=st.integers(6, 8),
    n_coordinates=st.integers(4, 6),
)
def test_random_trees_hypothesis(seed, n_bodies, n_coordinates):
    """Depth >= 6, >= 4 coordinates, mixed joints, nonlinear multi-coordinate maps, zero-inertia bodies."""
    model = random_tree(seed, n_bodies=n_bodies, n_coordinates=n_coordinates, chain_depth=6)
    assert int(model.topology.depth().max()) >= 5  # six bodies deep
    q = random_poses(seed + 1, 1, n_coordinates)[0]
    d = jax.jit(mbjax.pose_derivatives)(model, q)
    jac, hess = _autodiff(model, q)
    np.testing.assert_allclose(d.d_pose, jac, atol=1e-11)
    np.testing.assert_allclose(d.dd_pose, hess, atol=1e-11)


def test_point_velocity_acceleration_along_trajectory():
    """Eq. 44, 46, 57 against time derivatives of the point position along q(t) (jvp of jvp)."""
    model = random_tree(11, n_bodies=8, n_coordinates=4)
    point = jnp.array([0.1, -0.2, 0.05])
    q0 = random_poses(12, 1, 4)[0]
    w = jnp.array([0.7, -1.1, 0.4, 0.9])

    def q_of_t(t):
        return q0 + jnp.sin(w * t) + 0.3 * t**2

    @jax.jit
    def pos(t):
        return mbjax.point_positions(model, q_of_t(t), "b6", point)

    t = 0.37
    q = q_of_t(t)
    qd = jax.jacfwd(q_of_t)(t)
    qdd = jax.jacfwd(jax.jacfwd(q_of_t))(t)
    v = mbjax.point_velocity(model, q, qd, "b6", point)
    a = mbjax.point_acceleration(model, q, qd, qdd, "b6", point)
    np.testing.assert_allclose(v, jax.jit(jax.jacfwd(pos))(t), atol=1e-12)
    np.testing.assert_allclose(a, jax.jit(jax.jacfwd(jax.jacfwd(pos)))(t), atol=1e-11)
    dq = jnp.array([1e-3, -2e-3, 0.5e-3, 1e-3])
    dr = mbjax.reference.virtual_displacement(model, q, dq, "b6", point)
    np.testing.assert_allclose(dr, jax.jvp(lambda x: mbjax.point_positions(model, x, "b6", point), (q,), (dq,))[1], atol=1e-15)
    # several points at once
    pts = jnp.stack([point, -point, 2 * point])
    vs = mbjax.point_velocity(model, q, qd, "b6", pts)
    np.testing.assert_allclose(vs[0], v, atol=1e-15)


def test_body_jacobians_give_point_velocities():
    model = random_tree(13, n_bodies=7, n_coordinates=4)
    q = random_poses(14, 1, 4)[0]
    qd = jnp.array([0.3, -0.5, 1.2, 0.1])
    jac = mbjax.body_jacobians(model, q)
    p_local = jnp.array([0.2, 0.1, -0.3])
    for body in range(model.n_bodies):
        twist = jac[body] @ qd
        p_world = mbjax.point_positions(model, q, body, p_local)
        v_expected = mbjax.point_velocity(model, q, qd, body, p_local)
        np.testing.assert_allclose(twist[3:] + jnp.cross(twist[:3], p_world), v_expected, atol=1e-12)


def test_batched_equals_looped_and_compiles_once():
    model = random_tree(21, n_bodies=8, n_coordinates=4)
    qs = random_poses(22, 1000, 4)

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def sweep(m, qs):
        return jax.vmap(mbjax.pose_derivatives, in_axes=(None, 0))(m, qs)

    batched = sweep(model, qs)
    batched_again = sweep(model, qs + 0.1)  # new values, same shapes: no retrace
    assert batched_again.pose.shape == (1000, 8, 4, 4)
    one = jax.jit(mbjax.pose_derivatives)
    for k in [0, 1, 499, 998, 999]:
        looped = one(model, qs[k])
        np.testing.assert_allclose(batched.dd_pose[k], looped.dd_pose, atol=1e-14)
        np.testing.assert_allclose(batched.d_pose[k], looped.d_pose, atol=1e-14)


def test_joint_values_match_autodiff_of_maps():
    model = random_tree(31, n_bodies=9, n_coordinates=5)
    q = random_poses(32, 1, 5)[0]
    jv = mbjax.joint_values(model, q)
    f = lambda x: mbjax.joint_values(model, x).value
    np.testing.assert_allclose(jv.gradient, jax.jit(jax.jacfwd(f))(q), atol=1e-13)
    np.testing.assert_allclose(jv.hessian, jax.jit(jax.hessian(f))(q), atol=1e-13)


def test_float32_runs():
    model = random_tree(41, n_bodies=6, n_coordinates=4)
    model32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, model)
    q = random_poses(42, 1, 4)[0].astype(jnp.float32)
    d = jax.jit(mbjax.pose_derivatives)(model32, q)
    assert d.dd_pose.dtype == jnp.float32
    d64 = mbjax.pose_derivatives(model, q.astype(jnp.float64))
    np.testing.assert_allclose(d.dd_pose, d64.dd_pose, atol=2e-4)


def test_gradient_with_respect_to_model_parameters():
    """Poses are differentiable in the model's array leaves (axes, offsets, map coefficients)."""
    model = random_tree(51, n_bodies=6, n_coordinates=4)
    q = random_poses(52, 1, 4)[0]

    def loss(m):
        return jnp.sum(mbjax.pose_derivatives(m, q).d_pose ** 2)

    loss = eqx.filter_jit(loss)
    grads = eqx.filter_jit(eqx.filter_grad(loss))(model)
    # directional derivative along the offsets, checked by central differences
    direction = jax.random.normal(jax.random.PRNGKey(0), model.offset.shape)
    h = 1e-6
    plus = eqx.tree_at(lambda m: m.offset, model, model.offset + h * direction)
    minus = eqx.tree_at(lambda m: m.offset, model, model.offset - h * direction)
    fd = (loss(plus) - loss(minus)) / (2 * h)
    np.testing.assert_allclose(jnp.sum(grads.offset * direction), fd, rtol=1e-6)


def test_seed_parametrization_revolute_and_prismatic():
    """Eq. 38-39 literally: revolute = translate d V_d then rotate θ about V_θ; prismatic via O = Rot(V_θ, θ)."""
    from mbjax._spatial import rodrigues

    v_d = np.array([0.0, 0.6, 0.8])
    v_t = np.array([1.0, 0.0, 0.0])
    d, theta = 0.4, 0.9
    b = mbjax.ModelBuilder(["th", "dd"])
    b.add_body("rev", axis=v_t, translation=d * v_d, map="th")
    rot_const = np.asarray(rodrigues(jnp.asarray(v_t), theta))
    b.add_body("pri", parent="rev", joint="prismatic", rotation=rot_const, axis=rot_const.T @ v_d, map="dd")
    model = b.build()
    q = jnp.array([theta, d])
    poses = mbjax.body_poses(model, q)

    def seed_a4(v_d, d, v_t, th):
        a = np.eye(4)
        k = np.array([[0, -v_t[2], v_t[1]], [v_t[2], 0, -v_t[0]], [-v_t[1], v_t[0], 0]])
        a[:3, :3] = np.eye(3) + k * np.sin(th) + 2 * k @ k * np.sin(th / 2) ** 2  # Eq. 39
        a[:3, 3] = d * v_d  # Eq. 38
        return a

    a1 = seed_a4(v_d, d, v_t, theta)
    a2 = seed_a4(v_d, d, v_t, theta)  # prismatic: d = f = 0.4, constant θ = 0.9
    np.testing.assert_allclose(poses[0], a1, atol=1e-15)
    np.testing.assert_allclose(poses[1], a1 @ a2, atol=1e-15)
