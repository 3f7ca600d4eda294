"""Muscle-driven forward simulation (``mbjax.simulate_muscles``) on arm26 without wrap objects.

Independent checks, all from one compiled solve (trace-counted):

* activations against the exact solution of OpenSim's first-order activation ODE
  ȧ = (u - a)/τ(a) for constant u (separable: t(a) in closed form, both branches);
* zero excitation: the activation state decreases linearly at -a_min(0.5 + 1.5 a_min)/τ_deact
  once at a_min (OpenSim clamps the activation inside ``calcDerivative``, not the state), and the
  muscles see a_min: the motion equals the one with u = a_min (where ȧ = 0);
* the README example runs in the same compiled program;
* the vector field at a fibre-length equilibrium with q̇ = 0 and u = a has ℓ̇ = 0 and ȧ = 0, and a
  fibre stretched beyond equilibrium shortens back (sign of ℓ̇).
"""

from __future__ import annotations

import pathlib
import re
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import _simulate_muscles
from mbjax.muscles import hill_parameters

TS = np.array([0.005, 0.01, 0.02, 0.04, 0.08, 0.15])
Q0 = np.array([0.3, 0.8])


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.models.arm26(ignore_wrapping=True)


@pytest.fixture(scope="module")
def runs(arm):
    """Every solve of this file through one trace of the integrator."""
    original = _simulate_muscles._integrate_muscles
    _simulate_muscles._integrate_muscles = eqx.debug.assert_max_traces(original, max_traces=1)
    try:
        out = {}

        def solve(u, a0):
            sol = mbjax.simulate_muscles(arm, Q0, np.zeros(2), 0.0, TS[-1], activation0=a0, saveat=TS,
                                         excitations=mbjax.ConstantExcitation(jnp.asarray(u)), rtol=1e-10, atol=1e-12)
            return jax.tree_util.tree_map(np.asarray, sol.ys)

        out["mixed_u"] = np.array([0.9, 0.6, 0.05, 0.02, 0.5, 0.3])
        out["mixed_a0"] = np.array([0.1, 0.2, 0.5, 0.3, 0.5, 0.6])
        out["mixed"] = solve(out["mixed_u"], out["mixed_a0"])
        out["zero"] = solve(np.zeros(6), np.full(6, 0.01))
        out["at_min"] = solve(np.full(6, 0.01), np.full(6, 0.01))
        text = (pathlib.Path(__file__).parents[1] / "docs" / "how-to" / "muscles-and-static-optimization.md").read_text()
        code = re.search(r"## Muscle-driven simulation\n.*?```python\n(.*?)```", text, re.S).group(1)
        ns: dict = {}
        exec(compile(code, "muscles-and-static-optimization.md", "exec"), ns)
        out["readme"] = ns["sol"]
        return out
    finally:
        _simulate_muscles._integrate_muscles = original


def _t_of_a(a, a0, u, tau_act, tau_deact):
    """Exact time to go from a0 to a under ȧ = (u - a)/τ(a), τ = τ_act(0.5 + 1.5a) (u > a) or
    τ_deact/(0.5 + 1.5a) (u < a); a stays on one side of u."""
    up = u > a0
    with np.errstate(invalid="ignore", divide="ignore"):  # each branch is used only on its side
        return _t_of_a_branches(a, a0, u, tau_act, tau_deact, up)


def _t_of_a_branches(a, a0, u, tau_act, tau_deact, up):
    t_up = tau_act * ((0.5 + 1.5 * u) * np.log((u - a0) / np.where(up, u - a, 1.0)) - 1.5 * (a - a0))
    t_down = tau_deact / (0.5 + 1.5 * u) * (np.log(np.abs(u - a0) / np.where(up, 1.0, np.abs(u - a)))
                                            + np.log((0.5 + 1.5 * a) / (0.5 + 1.5 * a0)))
    return np.where(up, t_up, t_down)


def test_activation_equals_closed_form_solution(arm, runs):
    p = hill_parameters(arm)
    u, a0 = runs["mixed_u"], runs["mixed_a0"]
    a = runs["mixed"].activation
    tau_a, tau_d = np.asarray(p["activation_time_constant"]), np.asarray(p["deactivation_time_constant"])
    moving = u != a0
    t_exact = _t_of_a(a[:, moving], a0[moving], u[moving], tau_a[moving], tau_d[moving])
    rate = np.abs(np.asarray(jax.vmap(lambda ai: mbjax.activation_derivative(jnp.asarray(u), ai, p))(jnp.asarray(a))))[:, moving]
    # error in a = error in t times ȧ (first order; the log form loses digits as a -> u)
    err = np.abs(t_exact - TS[:, None]) * rate
    assert err.max() < 1e-9, err.max()
    np.testing.assert_allclose(a[:, ~moving], a0[~moving][None].repeat(len(TS), 0), rtol=0, atol=1e-15)
    assert np.all(np.diff(a[:, u > a0], axis=0) > 0) and np.all(np.diff(a[:, u < a0], axis=0) < 0)


def test_zero_excitation_at_minimum_activation(arm, runs):
    p = hill_parameters(arm)
    amin, tau_d = np.asarray(p["minimum_activation"]), np.asarray(p["deactivation_time_constant"])
    expected = amin - TS[:, None] * amin * (0.5 + 1.5 * amin) / tau_d
    np.testing.assert_allclose(runs["zero"].activation, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs["at_min"].activation, np.broadcast_to(amin, (len(TS), 6)), rtol=0, atol=1e-15)
    # the muscles see clamp(a) = a_min in both runs: same motion and fibre lengths
    np.testing.assert_allclose(runs["zero"].q, runs["at_min"].q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs["zero"].fiber_length, runs["at_min"].fiber_length, rtol=0, atol=1e-10)
    assert np.abs(runs["zero"].q[-1] - Q0).max() > 1e-3  # gravity and passive forces do move the arm


def test_readme_example_and_compile_once(runs):
    sol = runs["readme"]
    assert sol.ys.q.shape == (6, 2) and sol.ys.activation.shape == (6, 6) and sol.ys.fiber_length.shape == (6, 6)
    assert np.all(np.isfinite(np.asarray(sol.ys.q)))
    # (the fixture ran 4 solves under assert_max_traces(max_traces=1): reaching here means one trace)


def test_equilibrium_is_a_rest_point_of_the_fibre_state(arm, runs):
    rng = np.random.default_rng(0)
    qs = jnp.asarray(np.stack([rng.uniform([-0.5, 0.2], [1.2, 2.0]) for _ in range(4)]))
    acts = jnp.asarray(rng.uniform(0.05, 0.9, (4, 6)))

    zero = jnp.zeros(2)
    # the equilibrium solve compiled by the solves above (same static arguments)
    lce = jnp.stack([_simulate_muscles._equilibrate(mbjax.ConstantExcitation(a), jnp.asarray(0.0), arm, q, zero, a)
                     for q, a in zip(qs, acts)])

    def field(q, a, lce):
        d = mbjax.muscle_vector_field(arm, 0.0, mbjax.MuscleSimState(q, zero, a, lce), a)
        return d.fiber_length, d.activation

    f = jax.jit(jax.vmap(field))
    ldot, adot = f(qs, acts, lce)
    assert np.abs(np.asarray(ldot)).max() < 1e-10 and np.abs(np.asarray(adot)).max() == 0.0
    ldot_stretched, _ = f(qs, acts, lce + 1e-3)
    assert np.all(np.asarray(ldot_stretched) < -1e-4)  # a fibre longer than equilibrium shortens


@pytest.mark.extended
def test_float32_runs(arm):
    sol = mbjax.simulate_muscles(arm, np.float32(Q0), np.zeros(2, np.float32), 0.0, 0.05,
                                 activation0=np.full(6, 0.2, np.float32),
                                 excitations=mbjax.ConstantExcitation(jnp.full(6, 0.5, jnp.float32)),
                                 saveat=np.linspace(0.01, 0.05, 5), rtol=1e-5, atol=1e-7)
    assert sol.ys.q.dtype == jnp.float32
    assert np.all(np.isfinite(np.asarray(sol.ys.q))) and np.all(np.isfinite(np.asarray(sol.ys.fiber_length)))


@pytest.mark.extended
def test_stiff_tendon_approaches_rigid_tendon(arm):
    """A compliant tendon 1000 times stiffer than arm26's gives the rigid-tendon accelerations
    (at rest, equilibrium fibres): the two tendon models of OpenSim meet in the limit."""
    params = arm.muscles.parameters
    stiff = eqx.tree_at(lambda m: m.muscles.parameters["FmaxTendonStrain"], arm,
                        jnp.asarray(params["FmaxTendonStrain"]) * 1e-3)
    rigid = eqx.tree_at(lambda m: m.muscles.parameters, arm,
                        {**params, "ignore_tendon_compliance": jnp.ones(6)})
    q, zero, a = jnp.asarray(Q0), jnp.zeros(2), jnp.full(6, 0.5)

    def qdd(model):
        lce = mbjax.initial_fiber_lengths(model, q, zero, a)
        return mbjax.muscle_vector_field(model, 0.0, mbjax.MuscleSimState(q, zero, a, lce), a).qd

    q_stiff, q_rigid, q_soft = (np.asarray(jax.jit(lambda: qdd(m))()) for m in (stiff, rigid, arm))
    print("rigid", q_rigid, "stiff", q_stiff, "arm26", q_soft)
    gap_soft, gap_stiff = np.abs(q_soft - q_rigid).max(), np.abs(q_stiff - q_rigid).max()
    assert gap_stiff < 3e-3 * gap_soft  # linear in the compliance: 1e-3 expected (measured 1.2e-3)


def test_opensim_moment_arm_rule_equals_geometric_on_straight_paths():
    """Without wrap objects and moving path points (arm26) OpenSim's unit-force moment arms are
    -∂L/∂q, so both rules give the same state derivatives (the wrapped case, where they differ, is compared with OpenSim in
    tests/validation/test_muscle_sim_opensim.py)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.arm26(ignore_wrapping=True)
    nm = len(model.muscle_names)
    state = mbjax.MuscleSimState(jnp.array([0.3, 0.8]), jnp.array([0.5, -1.0]), jnp.full(nm, 0.3), jnp.full(nm, 0.12))
    field = jax.jit(lambda s, rule: mbjax.muscle_vector_field(model, 0.0, s, jnp.full(nm, 0.4), moment_arms=rule),
                    static_argnums=1)
    geo, osr = field(state, "geometric"), field(state, "opensim")
    for a, b in zip(geo, osr):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="moment_arms"):
        mbjax.muscle_vector_field(model, 0.0, state, jnp.full(nm, 0.4), moment_arms="unit")
