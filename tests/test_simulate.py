"""simulate (diffrax): energy conservation, pendulum period vs the elliptic integral, gradients vs FD."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ellipk

import mbjax
from _trees import random_tree

MASS, LENGTH, G = 1.7, 0.8, 9.81


def pendulum():
    b = mbjax.ModelBuilder(["th"], gravity=[0, -G, 0])
    b.add_body("bob", axis=[0, 0, 1], map="th", mass=MASS, com=[0, -LENGTH, 0])
    return b.build()


def double_pendulum(m2=0.9):
    b = mbjax.ModelBuilder(["t1", "t2"], gravity=[0, -G, 0])
    b.add_body("upper", axis=[0, 0, 1], map="t1", mass=1.3, com=[0, -0.7, 0])
    b.add_body("lower", parent="upper", axis=[0, 0, 1], map="t2", translation=[0, -0.7, 0], mass=m2, com=[0, -0.5, 0])
    return b.build()


def test_pendulum_period_vs_elliptic_integral():
    """Implicit Kvaerno5 here; the explicit default (Tsit5) and Dopri8 run in the other tests."""
    solver = diffrax.Kvaerno5()
    th0 = 1.2
    period = 4 * np.sqrt(LENGTH / G) * ellipk(np.sin(th0 / 2) ** 2)  # scipy's ellipk takes m = k²
    sol = mbjax.simulate(pendulum(), jnp.array([th0]), jnp.zeros(1), 0.0, period, solver=solver,
                         saveat=jnp.array([0.5 * period, period]), rtol=1e-11, atol=1e-11)
    q, qd = sol.ys
    np.testing.assert_allclose(q[:, 0], [-th0, th0], atol=1e-7)
    np.testing.assert_allclose(qd[:, 0], [0.0, 0.0], atol=1e-6)


def test_energy_conserved_20_body_tree():
    model = random_tree(3, n_bodies=20, n_coordinates=5, chain_depth=8, nonlinear=False, gravity=(0, -9.81, 0))
    q0 = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 0.5, 5))
    qd0 = jnp.asarray(np.random.default_rng(1).uniform(-0.5, 0.5, 5))
    sol = mbjax.simulate(model, q0, qd0, 0.0, 1.0, solver=diffrax.Dopri8(), saveat=jnp.linspace(0, 1, 5),
                         rtol=1e-12, atol=1e-12)
    energy = jax.vmap(mbjax.total_energy, in_axes=(None, 0, 0))(model, *sol.ys)
    scale = float(jnp.max(jnp.abs(jax.vmap(mbjax.kinetic_energy, in_axes=(None, 0, 0))(model, *sol.ys))))
    drift = float(jnp.max(jnp.abs(energy - energy[0]))) / max(abs(float(energy[0])), scale)
    assert drift <= 1e-8, drift


def test_trajectory_loss_gradient_vs_finite_differences():
    """Reverse-mode through diffrax (checkpointed adjoint) vs central differences, in q0 and a mass."""
    base = double_pendulum()

    @jax.jit
    def loss(q0, m2):
        model = eqx.tree_at(lambda m: m.mass, base, base.mass.at[1].set(m2))
        sol = mbjax.simulate(model, q0, jnp.zeros(2), 0.0, 0.4, rtol=1e-12, atol=1e-12)
        return jnp.sum(sol.ys[0][-1] ** 2)

    q0, m2 = jnp.array([0.9, -0.4]), jnp.asarray(0.9)
    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))(q0, m2)
    h = 1e-6
    fd_q = [(loss(q0 + h * e, m2) - loss(q0 - h * e, m2)) / (2 * h) for e in jnp.eye(2)]
    fd_m = (loss(q0, m2 + h) - loss(q0, m2 - h)) / (2 * h)
    np.testing.assert_allclose(grad[0], fd_q, rtol=1e-6)
    np.testing.assert_allclose(grad[1], fd_m, rtol=1e-6)


def test_controls_and_forces_enter_with_the_right_sign():
    model = pendulum()
    th0 = 0.6
    hold = lambda t, q, qd: jnp.array([MASS * G * LENGTH * jnp.sin(q[0])])  # balances G
    sol = mbjax.simulate(model, jnp.array([th0]), jnp.zeros(1), 0.0, 0.5, controls=hold)
    np.testing.assert_allclose(sol.ys[0][-1], [th0], atol=1e-10)
    # an upward force at the bob cancels gravity: uniform rotation
    lift = lambda t, q, qd: mbjax.generalized_forces(model, q, "bob", jnp.array([0.0, -LENGTH, 0.0]),
                                                     jnp.array([0.0, MASS * G, 0.0]))
    sol = mbjax.simulate(model, jnp.array([0.0]), jnp.array([2.0]), 0.0, 0.5, forces=lift)
    np.testing.assert_allclose(sol.ys[0][-1], [1.0], atol=1e-9)


def test_bad_initial_state_reported():
    with pytest.raises(Exception, match="not finite"):
        mbjax.simulate(pendulum(), jnp.array([jnp.nan]), jnp.zeros(1), 0.0, 0.1)
    with pytest.raises(ValueError, match="shape"):
        mbjax.simulate(pendulum(), jnp.zeros(2), jnp.zeros(2), 0.0, 0.1)
