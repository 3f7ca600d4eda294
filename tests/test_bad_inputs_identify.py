"""Identification refuses data it cannot fit, by name, before any step: wrong shapes (never
broadcast), no samples, NaN/inf samples, an empty selection, a non-finite start, and a forward-mode
solver over a reverse-mode-only simulation (the message says which adjoint or method to use)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf


def _arm():
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=2.0, com=[0, -0.15, 0],
               inertia=np.diag([0.01, 0.002, 0.01]))
    b.add_body("forearm", parent="upper_arm", joint="revolute", axis=[0, 0, 1], translation=[0.01, -0.3, 0.02],
               map="elbow", mass=1.2, com=[0, -0.12, 0], inertia=np.diag([0.01, 0.002, 0.01]))
    return b.build()


ARM = _arm()
RNG = np.random.default_rng(0)
Q, QD, QDD = (RNG.normal(size=(20, 2)) for _ in range(3))
TAU = np.asarray(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0))(ARM, Q, QD, QDD))
START = eqx.tree_at(lambda m: m.mass, ARM, ARM.mass * 1.3)
MASS = lambda m: m.mass  # noqa: E731


def _fit(objective, where=MASS, **kw):
    return idf.fit(START, objective, where, progress=False, **kw)


@pytest.mark.parametrize("tau,match", [
    (TAU[:, :1], r"tau has shape \(20, 1\), q \(20, 2\): both \(N, nq\)"),
    (TAU[:, 0], r"tau must have shape \(N, nq\), got \(20,\)"),
    (TAU[:10], r"different numbers of samples: q 20, qd 20, qdd 20, tau 10"),
])
def test_torque_data_of_another_shape_refused(tau, match):
    with pytest.raises(ValueError, match=match):
        idf.torque_residuals(Q, QD, QDD, tau)


def test_no_samples_refused():
    with pytest.raises(ValueError, match=r"q holds no samples \(N = 0\)"):
        idf.torque_residuals(Q[:0], QD[:0], QDD[:0], TAU[:0])
    with pytest.raises(ValueError, match="empty residual"):
        _fit(lambda m: jnp.zeros(0) * m.mass[0])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_samples_refused_with_index(bad):
    tau = TAU.copy()
    tau[3, 1] = bad
    with pytest.raises(ValueError, match=r"tau holds 1 NaN or inf value\(s\), the first at index \(3, 1\) \(sample 3\)"):
        idf.torque_residuals(Q, QD, QDD, tau)
    q = Q.copy()
    q[5, 0] = bad
    with pytest.raises(ValueError, match=r"q_meas holds 1 NaN"):
        idf.trajectory_residuals(np.linspace(0, 1, 20), q, Q[0], QD[0])
    with pytest.raises(ValueError, match=r"lengths_measured holds 1 NaN"):
        idf.muscle_length_residuals(Q, q)


def test_times_must_increase():
    ts = np.linspace(0, 1, 20)
    ts[7] = ts[6]
    with pytest.raises(ValueError, match=r"ts must be strictly increasing \(ts\[6\]"):
        idf.trajectory_residuals(ts, Q, Q[0], QD[0])


def test_empty_selection_refused():
    with pytest.raises(ValueError, match="`where` selected nothing"):
        _fit(idf.torque_residuals(Q, QD, QDD, TAU), where=lambda m: ())


def test_non_finite_start_refused():
    with pytest.raises(ValueError, match="objective is nan at the start"):
        _fit(lambda m: jnp.full(3, jnp.nan) * m.mass[1])


def test_forward_mode_over_simulate_names_the_fix():
    ts = jnp.linspace(0, 0.2, 5)
    q0, qd0 = jnp.asarray([0.3, 0.2]), jnp.zeros(2)
    meas = mbjax.simulate(ARM, q0, qd0, 0.0, 0.2, saveat=ts).ys[0]

    def objective(adjoint):
        return lambda m: jnp.ravel(mbjax.simulate(m, q0, qd0, 0.0, 0.2, saveat=ts, adjoint=adjoint).ys[0] - meas)

    with pytest.raises(TypeError, match=r"adjoint=diffrax.ForwardMode\(\).*method='lbfgs'"):
        _fit(objective(None), max_steps=2)


@pytest.mark.extended  # 15 s of compilation: the fix the message above names works
def test_the_forward_mode_fix_recovers_the_masses():
    ts = jnp.linspace(0, 0.2, 5)
    q0, qd0 = jnp.asarray([0.3, 0.2]), jnp.zeros(2)
    meas = mbjax.simulate(ARM, q0, qd0, 0.0, 0.2, saveat=ts).ys[0]

    def objective(m):
        return jnp.ravel(mbjax.simulate(m, q0, qd0, 0.0, 0.2, saveat=ts, adjoint=diffrax.ForwardMode()).ys[0] - meas)

    fitted, report = _fit(objective, max_steps=30)  # independent: the simulated truth
    np.testing.assert_allclose(np.asarray(fitted.mass)[1:], np.asarray(ARM.mass)[1:], rtol=1e-5)


def test_valid_twin_recovers_the_masses():
    fitted, report = _fit(idf.torque_residuals(Q, QD, QDD, TAU))
    assert report.converged
    np.testing.assert_allclose(np.asarray(fitted.mass), np.asarray(ARM.mass), rtol=1e-8)
