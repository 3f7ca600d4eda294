"""Computed-torque tracking (Ehsani Eq. 200-201): closed-loop error vs the critically damped closed
form, torques vs a hand-derived double-pendulum inverse dynamics, exact trajectory derivatives,
compile once for new gains / knots / initial states.

One compiled closed-loop program serves every default test (the README example's model, knot
count and number of saved times): keep them identical so the file stays fast.
"""

import pathlib
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.analysis.control import (ComputedTorque, FunctionTrajectory, MinimumJerk, QuinticHermite, computed_torque,
                                    track)

M1, M2, L1, C1, C2, G = 1.3, 0.9, 0.7, 0.7, 0.5, 9.81
TS = jnp.linspace(0.0, 1.5, 31)
KNOTS = jnp.array([0.0, 0.5, 1.0, 1.5])


def double_pendulum(m2=M2):
    """The README's model: point masses M1 at C1 on link 1, M2 at C2 on link 2 (link 1 length L1)."""
    b = mbjax.ModelBuilder(["hip", "knee"], gravity=[0, -G, 0])
    b.add_body("thigh", axis=[0, 0, 1], map="hip", mass=M1, com=[0, -C1, 0])
    b.add_body("shank", parent="thigh", axis=[0, 0, 1], map="knee", translation=[0, -L1, 0], mass=m2, com=[0, -C2, 0])
    return b.build()


def pendulum_torque(q, qd, qdd, m2=M2):
    """Textbook planar double-pendulum inverse dynamics (angles from the downward vertical)."""
    c2, s2 = jnp.cos(q[1]), jnp.sin(q[1])
    m11 = M1 * C1**2 + m2 * (L1**2 + C2**2 + 2 * L1 * C2 * c2)
    m12 = m2 * (C2**2 + L1 * C2 * c2)
    m22 = m2 * C2**2
    h = m2 * L1 * C2 * s2
    g1 = M1 * G * C1 * jnp.sin(q[0]) + m2 * G * (L1 * jnp.sin(q[0]) + C2 * jnp.sin(q[0] + q[1]))
    g2 = m2 * G * C2 * jnp.sin(q[0] + q[1])
    t1 = m11 * qdd[0] + m12 * qdd[1] - h * (2 * qd[0] * qd[1] + qd[1] ** 2) + g1
    t2 = m12 * qdd[0] + m22 * qdd[1] + h * qd[0] ** 2 + g2
    return jnp.stack([t1, t2])


def _trajectory(scale=1.0):
    q = scale * jnp.array([[0.0, 0.0], [0.8, -0.6], [0.3, -1.2], [0.0, 0.0]])
    qd = scale * jnp.array([[0.0, 0.0], [0.5, -1.0], [-1.2, 0.4], [0.0, 0.0]])
    return QuinticHermite(KNOTS, q, qd, jnp.zeros_like(q))


def critically_damped(t, e0, ed0, k):
    """e(t) = (e0 + (ė0 + K e0) t) e^{-Kt} and its derivative (independent closed form)."""
    c = ed0 + k * e0
    decay = np.exp(-k * t)
    return (e0 + c * t) * decay, (ed0 - k * c * t) * decay


def _count_traces(monkeypatch):
    from mbjax import _simulate

    counted = eqx.debug.assert_max_traces(_simulate._integrate, max_traces=1)
    monkeypatch.setattr(_simulate, "_integrate", counted)
    return counted


def test_error_is_critically_damped_and_compiles_once(monkeypatch):
    """Exact and perturbed starts, three gain sets, two trajectories, two plants: one trace.

    The simulated error e = q - q_des must be the closed form e(t) = (e0 + (ė0 + K e0) t) e^{-Kt}
    per coordinate (e0 = ė0 = 0: exact tracking).  A plant with a different mass (same topology)
    is a new value, not a new program; its error then departs from the closed form (model mismatch).
    """
    counted = _count_traces(monkeypatch)
    model = double_pendulum()
    cases = [
        # gains, q0 offset, q̇0 offset, trajectory scale
        ([20.0, 20.0], [0.0, 0.0], [0.0, 0.0], 1.0),
        ([20.0, 20.0], [0.05, 0.0], [0.0, 0.0], 1.0),
        ([4.0, 9.0], [0.1, -0.2], [0.3, 0.5], 0.7),
        ([2.5, 15.0], [-0.05, 0.1], [-0.4, 1.0], 1.2),
    ]
    t = np.asarray(TS)[:, None]
    for gains, de0, dde0, scale in cases:
        traj = _trajectory(scale)
        q_start, qd_start, _ = traj(0.0)
        e0, ed0 = np.asarray(de0), np.asarray(dde0)
        r = track(model, traj, gains, 0.0, 1.5, saveat=TS, q0=q_start + e0, qd0=qd_start + ed0, rtol=1e-10, atol=1e-12)
        e_ref, ed_ref = critically_damped(t, e0, ed0, np.asarray(gains))
        np.testing.assert_allclose(r.q - r.q_des, e_ref, atol=3e-9)
        np.testing.assert_allclose(r.qd - r.qd_des, ed_ref, atol=3e-8)
        if not e0.any() and not ed0.any():
            assert float(jnp.max(jnp.abs(r.q - r.q_des))) < 1e-9
    # model mismatch: the controller's model is wrong (shank mass +50 %); same compiled program
    r = track(model, _trajectory(), [20.0, 20.0], 0.0, 1.5, saveat=TS, plant=double_pendulum(1.5 * M2),
              rtol=1e-10, atol=1e-12)
    assert 1e-4 < float(jnp.max(jnp.abs(r.q - r.q_des))) < 0.2
    assert eqx.debug.get_num_traces(counted) == 1


def test_torque_is_inverse_dynamics_of_the_desired_motion():
    """Exact tracking: τ(t) = hand-derived double-pendulum inverse dynamics at (q_des, q̇_des, q̈_des)."""
    model = double_pendulum()
    r = track(model, _trajectory(), [20.0, 20.0], 0.0, 1.5, saveat=TS, rtol=1e-10, atol=1e-12)
    ref = jax.jit(jax.vmap(pendulum_torque))(r.q_des, r.qd_des, r.qdd_des)
    scale = float(jnp.max(jnp.abs(ref)))
    np.testing.assert_allclose(r.tau, ref, atol=1e-7 * scale)
    inv = jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)))(model, r.q_des, r.qd_des, r.qdd_des)
    np.testing.assert_allclose(r.tau, inv, atol=1e-7 * scale)
    # off the trajectory the law is M Q_d + N q̇ - G with Q_d from Eq. 201 (hand-derived M, N, G)
    q, qd = jnp.array([0.4, -0.9]), jnp.array([1.1, -0.3])
    qdes, qddes, qdddes, k = jnp.array([0.1, 0.2]), jnp.array([-0.5, 0.7]), jnp.array([2.0, -1.0]), jnp.array([3.0, 7.0])
    qdd_cmd = qdddes - 2 * k * (qd - qddes) - k**2 * (q - qdes)
    np.testing.assert_allclose(computed_torque(model, q, qd, qdes, qddes, qdddes, k), pendulum_torque(q, qd, qdd_cmd),
                               rtol=1e-12)


def test_trajectory_derivatives_are_exact():
    """Knot interpolation and C² continuity of the quintic Hermite; minimum jerk vs its derivative formulas."""
    rng = np.random.default_rng(0)
    ts = jnp.array([0.0, 0.3, 1.0, 1.4])
    q, qd, qdd = (jnp.asarray(rng.normal(size=(4, 3))) for _ in range(3))
    spline = QuinticHermite(ts, q, qd, qdd)
    ev = jax.jit(jax.vmap(spline))
    for side in (-1e-11, 1e-11):  # both sides of every interior knot, one side of the ends
        at = jnp.clip(ts + side, 0.0, 1.4)
        for got, want, tol in zip(ev(at), (q, qd, qdd), (1e-8, 1e-7, 1e-6)):
            np.testing.assert_allclose(got, want, atol=tol)
    # from samples: passes through them, velocities/accelerations are those of SciPy's cubic spline
    from scipy.interpolate import CubicSpline

    tsam = np.linspace(0.0, 2.0, 9)
    qsam = np.column_stack([np.sin(2 * tsam), tsam**2])
    fit = QuinticHermite.from_samples(tsam, qsam)
    cs = CubicSpline(tsam, qsam, axis=0)
    got = jax.jit(jax.vmap(fit))(jnp.asarray(tsam))
    np.testing.assert_allclose(got[0], qsam, atol=1e-14)
    np.testing.assert_allclose(got[1], cs(tsam, 1), atol=1e-12)
    np.testing.assert_allclose(got[2], cs(tsam, 2), atol=1e-10)
    # minimum jerk: q̇ = Δ (30τ² - 60τ³ + 30τ⁴)/T, q̈ = Δ (60τ - 180τ² + 120τ³)/T², rest outside
    mj = MinimumJerk(0.5, 2.5, jnp.array([0.2, -1.0]), jnp.array([1.2, 0.5]))
    tt = jnp.linspace(0.0, 3.0, 13)
    qm, qdm, qddm = jax.vmap(mj)(tt)
    tau = np.clip((np.asarray(tt) - 0.5) / 2.0, 0, 1)[:, None]
    delta = np.array([1.0, 1.5])
    np.testing.assert_allclose(qm, np.array([0.2, -1.0]) + delta * (10 * tau**3 - 15 * tau**4 + 6 * tau**5), atol=1e-14)
    np.testing.assert_allclose(qdm, delta * (30 * tau**2 - 60 * tau**3 + 30 * tau**4) / 2.0, atol=1e-13)
    np.testing.assert_allclose(qddm, delta * (60 * tau - 180 * tau**2 + 120 * tau**3) / 4.0, atol=1e-13)
    # a closed-form function: derivatives by autodiff equal the hand-written ones
    ft = FunctionTrajectory(lambda t, p: p[0] * jnp.sin(p[1] * t) * jnp.ones(2), jnp.array([0.7, 3.0]))
    a, ad, add = ft(0.9)
    np.testing.assert_allclose([a[0], ad[0], add[0]], [0.7 * np.sin(2.7), 2.1 * np.cos(2.7), -6.3 * np.sin(2.7)], rtol=1e-14)


def test_bad_inputs_refused():
    model = double_pendulum()
    with pytest.raises(ValueError, match="positive"):
        ComputedTorque(model, _trajectory(), [20.0, 0.0])
    with pytest.raises(ValueError, match="increasing"):
        QuinticHermite(jnp.array([0.0, 1.0, 1.0]), jnp.zeros((3, 2)))
    with pytest.raises(ValueError, match="knots"):
        QuinticHermite(jnp.array([0.0, 1.0]), jnp.zeros((3, 2)))


def test_readme_tracking_example():
    text = (pathlib.Path(__file__).parents[1] / "docs" / "how-to" / "muscles-and-static-optimization.md").read_text()
    code = re.search(r"## Computed-torque tracking\n.*?```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "muscles-and-static-optimization.md", "exec"), ns)
    r = ns["result"]
    e_ref, _ = critically_damped(np.asarray(r.ts)[:, None], np.array([0.05, 0.0]), np.zeros(2), np.array([20.0, 20.0]))
    np.testing.assert_allclose(r.q - r.q_des, e_ref, atol=3e-9)


_FLOAT32_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
assert not jax.config.jax_enable_x64
import mbjax
from mbjax.analysis.control import QuinticHermite, track
b = mbjax.ModelBuilder(["hip", "knee"], gravity=[0, -9.81, 0])
b.add_body("thigh", axis=[0, 0, 1], map="hip", mass=1.3, com=[0, -0.7, 0])
b.add_body("shank", parent="thigh", axis=[0, 0, 1], map="knee", translation=[0, -0.7, 0], mass=0.9, com=[0, -0.5, 0])
traj = QuinticHermite(np.array([0.0, 0.5, 1.0, 1.5]), np.array([[0.0, 0.0], [0.8, -0.6], [0.3, -1.2], [0.0, 0.0]]))
r = track(b.build(), traj, [20.0, 20.0], 0.0, 1.5, saveat=np.linspace(0, 1.5, 31), rtol=1e-5, atol=1e-6)
assert r.q.dtype == jnp.float32 and r.tau.dtype == jnp.float32, (r.q.dtype, r.tau.dtype)
err = float(jnp.max(jnp.abs(r.q - r.q_des)))
assert err < 1e-4, err
print("ok", err)
"""


@pytest.mark.extended
def test_float32_tracking_runs():
    """float32 (JAX's default) runs (no crash, float32 outputs) and tracks to float32-level accuracy."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    root = str(pathlib.Path(__file__).parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", _FLOAT32_SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1].startswith("ok")


@pytest.mark.extended
def test_shoulder_tracking_exact_start():
    """The seed's shoulder experiment (de Groot & Brand rhythm, MoBL inertias): q1, q3 held, q2 tracked."""
    from mbjax.models.shoulder import shoulder_model, without_phantom_inertia

    try:
        model = without_phantom_inertia(shoulder_model(rhythm="degroot_brand"))
    except FileNotFoundError as err:
        pytest.skip(str(err))
    deg = np.pi / 180
    q = np.array([[90 * deg, 15 * deg, -30 * deg], [90 * deg, 120 * deg, -30 * deg], [90 * deg, 15 * deg, -30 * deg]])
    r = track(model, QuinticHermite(jnp.array([0.0, 1.5, 3.0]), q), [100.0, 100.0, 1000.0], 0.0, 3.0,
              saveat=jnp.linspace(0.0, 3.0, 61), rtol=1e-10, atol=1e-12)
    err = np.max(np.abs(np.asarray(r.q - r.q_des)), axis=0)
    assert err[0] < 1e-12 and err[2] < 1e-12 and err[1] < 1e-9, err
    ref = jax.vmap(lambda *a: mbjax.inverse_dynamics(model, *a))(r.q_des, r.qd_des, r.qdd_des)
    np.testing.assert_allclose(r.tau, ref, atol=1e-6)


@pytest.mark.extended
def test_shoulder_dae_agrees_with_the_empirical_ode():
    """Independent formulation: clavicle and scapula free (14 coordinates), the rhythm as 11 constraints,
    index-1 + Baumgarte DAE with the computed-torque row (Eq. 200): same q and τ as the 3-coordinate ODE."""
    from mbjax.models.shoulder import shoulder_model, without_phantom_inertia
    from mbjax.models.shoulder_dae import RhythmConstraints, TrackingDAEField, free_shoulder_model

    try:
        model = without_phantom_inertia(shoulder_model(rhythm="degroot_brand"))
        free = without_phantom_inertia(free_shoulder_model())
    except FileNotFoundError as err:
        pytest.skip(str(err))
    deg = np.pi / 180
    q = np.array([[90 * deg, 15 * deg, -30 * deg], [90 * deg, 70 * deg, -30 * deg]])
    traj, gains, ts = QuinticHermite(jnp.array([0.0, 0.6]), q), [100.0, 100.0, 1000.0], jnp.linspace(0.0, 0.6, 13)
    ode = track(model, traj, gains, 0.0, 0.6, saveat=ts, rtol=1e-10, atol=1e-12)
    cons = RhythmConstraints(model, free)
    field = TrackingDAEField(cons, traj, gains)
    q0, qd0 = cons.consistent_state(*traj(0.0)[:2], free.n_coordinates)
    sol = mbjax.simulate(free, q0, qd0, 0.0, 0.6, saveat=ts, vector_field=field, rtol=1e-10, atol=1e-12)
    qf, qdf = sol.ys
    ind = np.asarray(cons.independent)
    np.testing.assert_allclose(qf[:, ind], ode.q, atol=1e-9)
    np.testing.assert_allclose(qdf[:, ind], ode.qd, atol=1e-7)
    assert float(jnp.max(jnp.abs(jax.vmap(cons)(qf)))) < 1e-12
    tau = jax.vmap(lambda t, a, b: field.solve(t, a, b, free)[2])(ts, qf, qdf)
    np.testing.assert_allclose(tau, ode.tau, atol=1e-5)
