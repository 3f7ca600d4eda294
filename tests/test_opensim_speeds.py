"""OpenSim's generalized speeds on Ball/Free joints (:mod:`mbjax.opensim.model.osim_speeds`), checked against
the model's own kinematics and autodiff (OpenSim itself: tests/validation/test_id_opensim.py, test_so_opensim.py).

* A reserve ``CoordinateActuator`` on a ``BallJoint`` angle does the power of Simbody's speed there: its
  column of the static optimization's actuator matrix, dotted with q̇, is the child's angular velocity in the
  joint's parent frame, ω_F = R_FM (R_cᵀ Ṙ_c)^∨ (R_FM the X-Y-Z body-fixed rotation of the angles), taken
  from mbjax's body rotations by forward-mode differentiation.
* The tools' rates: u = E q̇ and u̇ = d/dt(E q̇) of an analytic q(t) (differentiated by JAX) give back q̇, q̈.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from test_bad_inputs_eighth_survey_osim import pendulum

from mbjax.forces.body_actuators import CoordinateActuator
from mbjax.opensim.model.osim_speeds import rates_from_speeds, speed_jacobian
from mbjax.opensim.tools.so.actuators import actuator_columns


@pytest.fixture(scope="module")
def ball(tmp_path_factory):
    path = tmp_path_factory.mktemp("ball") / "ball.osim"
    path.write_text(pendulum(""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.io.load_osim(str(path))


def _xyz(a, b, c):
    ca, sa, cb, sb, cc, sc = jnp.cos(a), jnp.sin(a), jnp.cos(b), jnp.sin(b), jnp.cos(c), jnp.sin(c)
    rx = jnp.array([[1, 0, 0], [0, ca, -sa], [0, sa, ca]])
    ry = jnp.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    rz = jnp.array([[cc, -sc, 0], [sc, cc, 0], [0, 0, 1]])
    return rx @ ry @ rz


def _speed_matrix(a, b, c):
    """E with ω_F = E q̇, from the rotation itself: column k is R vee(Rᵀ ∂R/∂q_k) (independent of mbjax)."""
    angles = jnp.stack([a, b, c])
    rot = _xyz(*angles)
    d_rot = jax.jacfwd(lambda x: _xyz(*x))(angles)  # (3, 3, k)
    w = jnp.einsum("ji,jlk->ilk", rot, d_rot)  # Rᵀ ∂R/∂q_k
    return rot @ jnp.stack([w[2, 1], w[0, 2], w[1, 0]])


def test_reserve_on_a_ball_angle_does_the_power_of_the_angular_velocity(ball):
    assert ball.coordinate_names == ("q1", "q2", "q3", "q4")
    reserves = [CoordinateActuator(f"r_{c}", c, optimal_force=f) for c, f in zip(ball.coordinate_names, (2., 3., 5., 7.))]
    rng = np.random.default_rng(0)
    for _ in range(4):
        q = jnp.asarray(rng.uniform(-1, 1, 4))
        qd = jnp.asarray(np.r_[0.0, rng.uniform(-1, 1, 3)])  # the parent at rest: ω_F from the child alone
        rot, rot_dot = jax.jvp(lambda x: mbjax.body_poses(ball, x)[-1, :3, :3], (q,), (qd,))
        w = rot.T @ rot_dot
        omega_f = _xyz(q[1], q[2], q[3]) @ jnp.array([w[2, 1], w[0, 2], w[1, 0]])
        power = actuator_columns(ball, reserves, q).T @ qd
        np.testing.assert_allclose(power[1:], np.array([3., 5., 7.]) * omega_f, rtol=1e-12, atol=1e-13)
        assert abs(power[0]) < 1e-14  # the pin's reserve: q̇1 = 0
        # and what the q̇-space column would have said is not that
        assert np.abs(np.array([3., 5., 7.]) * qd[1:] - power[1:]).max() > 1e-3
    jac = speed_jacobian(ball, q)
    np.testing.assert_allclose(jac[1:, 1:], _speed_matrix(q[1], q[2], q[3]), atol=1e-15)


def test_tool_rates_taken_as_speeds_give_back_the_angles_rates(ball):
    def angles(t):
        return jnp.stack([0.2 * t, 0.3 + jnp.sin(2 * t), -0.4 + 0.5 * t ** 2, jnp.cos(3 * t)])

    def speeds(t):  # u = E q̇ on the ball's angles, q̇ on the pin
        q, qd = jax.jvp(angles, (t,), (jnp.ones_like(t),))
        return qd.at[1:].set(_speed_matrix(q[1], q[2], q[3]) @ qd[1:])

    ts = jnp.linspace(0.0, 1.0, 7)
    q = jax.vmap(angles)(ts)
    qd = jax.vmap(lambda t: jax.jvp(angles, (t,), (1.0,))[1])(ts)
    qdd = jax.vmap(lambda t: jax.jvp(lambda s: jax.jvp(angles, (s,), (1.0,))[1], (t,), (1.0,))[1])(ts)
    u = jax.vmap(speeds)(ts)
    udot = jax.vmap(lambda t: jax.jvp(speeds, (t,), (1.0,))[1])(ts)
    rates, accelerations = rates_from_speeds(ball, q, u, udot, "test")
    np.testing.assert_allclose(rates, qd, rtol=0, atol=1e-13)
    np.testing.assert_allclose(accelerations, qdd, rtol=0, atol=1e-12)


def test_spring_on_a_ball_angle_acts_on_the_angular_velocity(tmp_path):
    """A SpringGeneralizedForce on the Ball joint's second angle: its speed is ω_F's second component
    (from the body rotations), and its power Q·q̇ is f·ω_F[1] with f = -k (q3 - rest) - c ω_F[1]."""
    from test_bad_inputs_eighth_survey_osim import _SGF

    path = tmp_path / "ball_spring.osim"
    path.write_text(pendulum(_SGF.format(c="q3")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(str(path))
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = jnp.asarray(rng.uniform(-1, 1, 4))
        qd = jnp.asarray(np.r_[0.0, rng.uniform(-1, 1, 3)])
        rot, rot_dot = jax.jvp(lambda x: mbjax.body_poses(model, x)[-1, :3, :3], (q,), (qd,))
        w = rot.T @ rot_dot
        speed = (_xyz(q[1], q[2], q[3]) @ jnp.array([w[2, 1], w[0, 2], w[1, 0]]))[1]
        f = -5.0 * (q[2] - 0.1) - 0.3 * speed  # _SGF: stiffness 5, rest_length 0.1, viscosity 0.3
        power = model.forces.generalized_force(model, q, qd) @ qd
        np.testing.assert_allclose(power, f * speed, rtol=1e-12, atol=1e-14)
        angle_rate_power = (-5.0 * (q[2] - 0.1) - 0.3 * qd[2]) * qd[2]  # the spring on the angle's q̇: not OpenSim's
        assert abs(float(power - angle_rate_power)) > 1e-4
