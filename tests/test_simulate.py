"""simulate (diffrax): energy conservation, pendulum period vs the elliptic integral, gradients vs FD."""

import os

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ellipk

import mbjax
from _osim_models import MOBL
from _trees import random_tree
from mbjax.models.shoulder import shoulder_model

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
    energies = jax.jit(jax.vmap(lambda m, q, qd: (mbjax.total_energy(m, q, qd), mbjax.kinetic_energy(m, q, qd)),
                                in_axes=(None, 0, 0)))  # both in one compiled program
    energy, kinetic = energies(model, *sol.ys)
    scale = float(jnp.max(jnp.abs(kinetic)))
    drift = float(jnp.max(jnp.abs(energy - energy[0]))) / max(abs(float(energy[0])), scale)
    assert drift <= 1e-8, drift


def test_trajectory_loss_gradient_vs_finite_differences():
    """Reverse-mode through diffrax (checkpointed adjoint) vs central differences, in q0 and a mass."""
    base = double_pendulum()

    def loss(q0, m2):
        model = eqx.tree_at(lambda m: m.mass, base, base.mass.at[1].set(m2))
        sol = mbjax.simulate(model, q0, jnp.zeros(2), 0.0, 0.4, rtol=1e-12, atol=1e-12)
        return jnp.sum(sol.ys[0][-1] ** 2)

    q0, m2 = jnp.array([0.9, -0.4]), jnp.asarray(0.9)
    # one compiled program: its values at shifted arguments give the central differences
    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    loss_at = lambda q, m: value_and_grad(q, m)[0]  # noqa: E731
    grad = value_and_grad(q0, m2)[1]
    h = 1e-6
    fd_q = [(loss_at(q0 + h * e, m2) - loss_at(q0 - h * e, m2)) / (2 * h) for e in jnp.eye(2)]
    fd_m = (loss_at(q0, m2 + h) - loss_at(q0, m2 - h)) / (2 * h)
    np.testing.assert_allclose(grad[0], fd_q, rtol=1e-6)
    np.testing.assert_allclose(grad[1], fd_m, rtol=1e-6)


@pytest.mark.extended  # 45 s of compilation; `test_models_hold_no_empty_tuple_node` checks the cause in CI
def test_backsolve_adjoint_on_a_model_with_muscles():
    """``BacksolveAdjoint`` on arm26 (muscles, wrap objects in ``model.muscles``): the default vector field
    solves with the body tree alone, so diffrax's adjoint state holds no muscle leaves (an empty
    tuple there made diffrax 0.7 fail); its gradient in the masses equals the checkpointed one and
    central differences."""
    model = mbjax.models.arm26()
    assert model.muscle_names
    q0, qd0 = jnp.array([0.3, 0.8]), jnp.array([0.2, -0.1])

    def loss(mass, adjoint):
        m = eqx.tree_at(lambda x: x.mass, model, mass)
        sol = mbjax.simulate(m, q0, qd0, 0.0, 0.3, rtol=1e-11, atol=1e-11, adjoint=adjoint)
        return jnp.sum(sol.ys[0][-1] ** 2)

    back = jax.jit(jax.grad(lambda m: loss(m, diffrax.BacksolveAdjoint())))(model.mass)
    # one compiled program for the checkpointed gradient and the values the central differences need
    checked = jax.jit(jax.value_and_grad(lambda m: loss(m, None)))
    check = checked(model.mass)[1]
    np.testing.assert_allclose(back, check, rtol=1e-6, atol=1e-9)
    k = int(np.argmax(np.abs(np.asarray(check))))
    e = jnp.zeros_like(model.mass).at[k].set(1e-6)
    fd = (checked(model.mass + e)[0] - checked(model.mass - e)[0]) / 2e-6
    np.testing.assert_allclose(back[k], fd, rtol=1e-5)


def _empty_tuple_nodes(tree):
    is_empty = lambda x: isinstance(x, tuple) and not hasattr(x, "_fields") and x == ()
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_empty)
    return [jax.tree_util.keystr(p) for p, leaf in leaves if is_empty(leaf)]


BOUNCING_BLOCK = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "bouncing_block", "bouncing_block.osim")


@pytest.mark.parametrize("name", ["arm26", "gait2354", "shoulder", "bouncing_block"])
def test_models_hold_no_empty_tuple_node(name):
    """Muscle paths without moving/conditional maps and force elements without coupled coordinates
    store ``None``: an empty-tuple node anywhere in ``args`` breaks diffrax's ``BacksolveAdjoint``
    (next test).  Models with muscles, wrap objects, force elements and a constraint."""
    if name == "shoulder":
        if not os.path.exists(MOBL):
            pytest.skip(f"MoBL model not found at {MOBL} (non-commercial licence, not shipped; set "
                        "MBJAX_SHARED_DATA, see README 'Data')")
        model = shoulder_model()
    elif name == "bouncing_block":
        model = mbjax.io.load_osim(BOUNCING_BLOCK)
    else:
        model = mbjax.models.load(name)
    assert _empty_tuple_nodes(model) == []


@pytest.mark.extended
def test_users_vector_field_with_the_model_in_args_under_backsolve():
    """A vector field of the user's own receiving the whole arm26 model (muscles, wrap objects) as
    diffrax ``args``: ``BacksolveAdjoint`` runs (it failed inside diffrax on the empty-tuple map
    fields) and its gradient in the masses equals the checkpointed one."""
    model = mbjax.models.arm26()
    assert model.muscle_names and _empty_tuple_nodes(model) == []
    y0 = (jnp.array([0.3, 0.8]), jnp.array([0.2, -0.1]))

    def field(t, y, m):
        q, qd = y
        return qd, mbjax.forward_dynamics(m, q, qd)

    def loss(mass, adjoint):
        m = eqx.tree_at(lambda x: x.mass, model, mass)
        sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), 0.0, 0.2, 0.01, y0, args=m,
                                  stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-10),
                                  adjoint=adjoint)
        return jnp.sum(sol.ys[0][-1] ** 2)

    back = jax.jit(jax.grad(lambda m: loss(m, diffrax.BacksolveAdjoint())))(model.mass)
    check = jax.jit(jax.grad(lambda m: loss(m, diffrax.RecursiveCheckpointAdjoint())))(model.mass)
    assert np.max(np.abs(np.asarray(check))) > 1e-3
    np.testing.assert_allclose(back, check, rtol=1e-6, atol=1e-9)


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


# --------------------------------------------------------------------------------------------
# compile once
# --------------------------------------------------------------------------------------------


class _Gains(eqx.Module):
    """A controller with array parameters: new gains are new dynamic leaves, not a new function."""

    k: jnp.ndarray
    c: jnp.ndarray

    def __call__(self, t, q, qd):
        return -self.k * q - self.c * qd


def _direct_pendulum(q0, qd0, t0, t1, ts, k, c, tol=1e-11):
    """Reference: a hand-written pendulum ODE solved by diffrax directly (not through mbjax)."""

    def field(t, y, args):
        th, om = y
        tau = -k * th - c * om
        inertia = MASS * LENGTH**2
        return om, (tau - MASS * G * LENGTH * jnp.sin(th)) / inertia

    sol = diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), t0, t1, None, (q0[0], qd0[0]),
                              saveat=diffrax.SaveAt(ts=ts), stepsize_controller=diffrax.PIDController(rtol=tol, atol=tol),
                              max_steps=100_000)
    return sol.ys


def _count_traces(monkeypatch):
    from mbjax import _simulate

    counted = eqx.debug.assert_max_traces(_simulate._integrate, max_traces=1)
    monkeypatch.setattr(_simulate, "_integrate", counted)
    return counted


def test_simulate_compiles_once_for_new_states_times_and_gains(monkeypatch):
    """New y0, t0, t1, saveat times (same count), rtol and controller gains: one trace, same answers as diffrax directly."""
    counted = _count_traces(monkeypatch)
    model = pendulum()
    cases = [
        (0.3, 0.0, 0.0, 1.0, 2.0, 0.1),
        (1.1, -0.5, 0.2, 1.7, 0.5, 0.0),
        (-0.7, 2.0, 1.0, 1.4, 5.0, 0.3),
    ]
    for th0, om0, t0, t1, k, c in cases:
        ts = jnp.linspace(t0, t1, 7)
        sol = mbjax.simulate(model, jnp.array([th0]), jnp.array([om0]), t0, t1, saveat=ts,
                             controls=_Gains(jnp.array([k]), jnp.array([c])), rtol=1e-11, atol=1e-11)
        ref = _direct_pendulum(jnp.array([th0]), jnp.array([om0]), t0, t1, ts, k, c)
        np.testing.assert_allclose(sol.ys[0][:, 0], ref[0], atol=1e-8)
        np.testing.assert_allclose(sol.ys[1][:, 0], ref[1], atol=1e-8)
    # a looser tolerance is a new value, not a new program
    mbjax.simulate(model, jnp.array([0.2]), jnp.zeros(1), 0.0, 1.0, saveat=jnp.linspace(0.0, 1.0, 7),
                   controls=_Gains(jnp.array([1.0]), jnp.array([0.0])), rtol=1e-6, atol=1e-6)
    assert eqx.debug.get_num_traces(counted) == 1


def test_simulate_compiles_once_energy_conserved(monkeypatch):
    """Default field, end point only, Python floats vs NumPy vs JAX times: one trace; energy is conserved."""
    counted = _count_traces(monkeypatch)
    model = double_pendulum(0.77)  # masses are leaves: a fresh model value, the same topology
    for q0, t1 in (([0.9, -0.4], 0.5), ([0.2, 1.3], np.float64(0.8)), ([-1.0, 0.1], jnp.asarray(0.3))):
        q0 = jnp.asarray(q0)
        sol = mbjax.simulate(model, q0, jnp.zeros(2), 0.0, t1, solver=diffrax.Dopri8(), rtol=1e-12, atol=1e-12)
        e0 = mbjax.total_energy(model, q0, jnp.zeros(2))
        e1 = mbjax.total_energy(model, sol.ys[0][-1], sol.ys[1][-1])
        assert abs(float(e1 - e0)) <= 1e-9 * max(1.0, abs(float(e0)))
        np.testing.assert_allclose(float(sol.ts[-1]), float(t1), rtol=1e-15)
    assert eqx.debug.get_num_traces(counted) == 1


def test_simulate_vmapped_over_initial_states(monkeypatch):
    """jax.vmap over (q0, q̇0): one trace for single solves and two batches; each member equals its own solve."""
    counted = _count_traces(monkeypatch)
    model = double_pendulum()
    damper = _Gains(jnp.zeros(2), jnp.array([0.05, 0.02]))  # a static configuration no other test uses
    rng = np.random.default_rng(4)
    ts = jnp.linspace(0.0, 0.6, 4)
    q0s = [jnp.asarray(rng.uniform(-1, 1, (5, 2))) for _ in range(2)]
    qd0s = [jnp.asarray(rng.uniform(-1, 1, (5, 2))) for _ in range(2)]
    one = lambda q0, qd0: mbjax.simulate(model, q0, qd0, 0.0, 0.6, saveat=ts, forces=damper, rtol=1e-11, atol=1e-11).ys
    singles = [one(q0, qd0) for q0, qd0 in zip(q0s[0], qd0s[0])]
    run = jax.jit(jax.vmap(one))
    batched = [run(q0, qd0) for q0, qd0 in zip(q0s, qd0s)]
    assert eqx.debug.get_num_traces(counted) == 1
    assert batched[0][0].shape == (5, 4, 2)
    for i, (q, qd) in enumerate(singles):
        np.testing.assert_allclose(batched[0][0][i], q, atol=1e-9)
        np.testing.assert_allclose(batched[0][1][i], qd, atol=1e-9)
    # an unjitted vmap gives the same
    q, _ = jax.vmap(one)(q0s[1], qd0s[1])
    np.testing.assert_allclose(q, batched[1][0], atol=1e-12)
    assert eqx.debug.get_num_traces(counted) == 1


@eqx.filter_jit
def _end_state_traced_times(model, t0, t1):
    """Traced t0, t1 (one compiled program for every case below)."""
    return mbjax.simulate(model, jnp.array([0.3]), jnp.zeros(1), t0, t1).ys[0]


@pytest.mark.parametrize("t0, t1", [(0.0, np.nan), (np.nan, 1.0), (0.0, np.inf), (1.0, 0.5)])
def test_bad_time_interval_reported(t0, t1):
    model = pendulum()
    with pytest.raises(ValueError, match="t1|t0"):
        mbjax.simulate(model, jnp.array([0.3]), jnp.zeros(1), t0, t1)
    # traced times: a run-time error instead of a silent 0-step "success"
    with pytest.raises(Exception, match="t1 >= t0"):
        jax.block_until_ready(_end_state_traced_times(model, jnp.asarray(t0), jnp.asarray(t1)))
    # t1 == t0 is a valid empty solve
    sol = mbjax.simulate(model, jnp.array([0.3]), jnp.zeros(1), 0.5, 0.5)
    np.testing.assert_allclose(sol.ys[0][-1], [0.3])
