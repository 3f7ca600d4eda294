"""mbjax.forces: force elements checked against independent references (no OpenSim needed).

* spring parts are conservative: with q̇ = 0 the generalized force equals ``-∇V`` of the element's
  potential (bushing ½k∘b², point-to-point ½k(ℓ-ℓ₀)², both by autodiff) and the CoordinateLimitForce's
  generalized force is ``-dV/dq`` of its numerically integrated law (trapezoid, independent of autodiff);
* damping dissipates: ``Qᵀq̇`` of the damping part is ``≤ 0``;
* Simbody's quintic step is C² (value and slopes continuous at the transition ends);
* the bushing's X-Y-Z angles invert ``Rx Ry Rz``;
* the Lepton expression grammar: precedence (``-q^2``, right-associative ``^``), functions, refusals;
* an element on a coupled coordinate acts through its map (chain rule, finite differences).
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.forces import body_fixed_xyz, compile_expression, smooth_step

sys.path.insert(0, os.path.dirname(__file__))
from _force_models import COUPLER, FORCE_MODEL  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("forces") / "forces.osim"
    p.write_text(FORCE_MODEL)
    return mbjax.io.load_osim(str(p))


def _kind(model, name):
    return next(e for e in model.forces.elements if type(e).__name__ == name)


@jax.jit
def _everything(model, qs, qds):
    """One compile: per-kind Q at (q, q̇) and at (q, 0), the total, and -∇V of the potentials."""
    out = {}
    for e in model.forces.elements:
        k = type(e).__name__
        out[k] = jax.vmap(e.generalized_force, in_axes=(None, 0, 0))(model, qs, qds)
        out[k + "/still"] = jax.vmap(e.generalized_force, in_axes=(None, 0, 0))(model, qs, jnp.zeros_like(qds))
        if hasattr(e, "potential_energy"):
            out[k + "/-gradV"] = jax.vmap(jax.grad(lambda q, e=e: -e.potential_energy(model, q)))(qs)
    out["total"] = jax.vmap(model.forces.generalized_force, in_axes=(None, 0, 0))(model, qs, qds)
    return out


Q_TEST = np.array([[0.7, 0.15, 0.4, 0.1], [0.1, 0.0, 0.6, 0.05]])
QD_TEST = np.array([[0.3, -0.2, 0.5, 0.1], [0.0, 0.0, 0.7, 0.0]])


@pytest.fixture(scope="module")
def results(model):
    rng = np.random.default_rng(2)
    qs = np.concatenate([Q_TEST, rng.uniform(-1.2, 1.2, (8, 4)) * np.array([1.3, 0.25, 0.8, 0.3])])
    qds = np.concatenate([QD_TEST, rng.uniform(-2, 2, (8, 4))])
    return qs, qds, {k: np.asarray(v) for k, v in _everything(model, jnp.asarray(qs), jnp.asarray(qds)).items()}


def test_loaded_elements(model, results):
    assert model.forces.names == ("lim_pin", "lim_slide", "lim_cdep", "sgf", "sgf_dep", "expr", "p2p", "bush")
    assert model.osim.recorded_forces == ()
    _, _, r = results
    parts = sum(r[type(e).__name__] for e in model.forces.elements)
    np.testing.assert_allclose(r["total"], parts, rtol=1e-14)


def test_conservative_parts_are_gradients(results):
    _, _, r = results
    for name in ("BushingForce", "PointToPointSpring"):
        ref = r[name + "/-gradV"]
        np.testing.assert_allclose(r[name + "/still"], ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())


def test_coordinate_limit_force_is_minus_dv_dq():
    """Independent reference: V(q) = -∫ f dq by a fine trapezoid rule; -dV/dq by central differences."""
    b = mbjax.ModelBuilder(["x"])
    b.add_body("a", axis=[0, 0, 1], map="x", mass=1.0, com=(0, -0.1, 0), inertia=np.eye(3) * 0.01)
    m = b.build()
    clf = mbjax.forces.CoordinateLimitForce.from_opensim(m, ["lim"], ["x"], np.array([True]), [2.0], [30.0], [3.0],
                                                         [-40.0], [0.05], [10.0])
    grid = np.linspace(-1.2, 1.0, 220001)
    f = np.asarray(jax.jit(jax.vmap(lambda x: clf.law(x[None], jnp.zeros(1))[0]))(jnp.asarray(grid)))
    v = -np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * np.diff(grid))])
    h = grid[1] - grid[0]
    dv = (v[2:] - v[:-2]) / (2 * h)
    np.testing.assert_allclose(-dv, f[1:-1], atol=1e-6 * np.abs(f).max())
    # zero strictly inside the limits, stiff beyond: slope -k_up·(180/π) past upper + transition
    inside = (grid > np.radians(-40)) & (grid < np.radians(30))
    assert np.all(f[inside] == 0.0)
    x = np.radians(30 + 10) + 0.1
    slope = jax.grad(lambda x: clf.law(x[None], jnp.zeros(1))[0])(jnp.asarray(x))
    np.testing.assert_allclose(slope, -2.0 * 180 / np.pi, rtol=1e-12)


def test_damping_dissipates(results):
    _, qds, r = results
    for name in ("CoordinateLimitForce", "SpringGeneralizedForce", "BushingForce"):
        power = np.einsum("ni,ni->n", r[name] - r[name + "/still"], qds)
        assert np.all(power <= 1e-12), name
        assert np.any(power < -1e-6), name


def test_smooth_step_is_c2():
    x0, x1 = 0.3, 0.8
    f = lambda x: smooth_step(x, x0, x1, 2.0, 5.0)  # noqa: E731
    d1, d2 = jax.grad(f), jax.grad(jax.grad(f))
    for x in (x0, x1):
        for e in (-1e-7, 1e-7):
            assert abs(float(d1(x + e))) < 1e-5 and abs(float(d2(x + e))) < 1e-5 * 1e2
    np.testing.assert_allclose(f(0.55), 3.5, rtol=1e-15)  # symmetric midpoint
    assert float(f(0.0)) == 2.0 and float(f(1.0)) == 5.0


def test_body_fixed_xyz_inverts_rotation():
    from mbjax.opensim.model.osim_xml import _xyz_body_fixed

    rng = np.random.default_rng(3)
    for _ in range(10):
        a = rng.uniform(-1.4, 1.4, 3)
        np.testing.assert_allclose(body_fixed_xyz(jnp.asarray(_xyz_body_fixed(a))), a, atol=1e-14)


def test_expression_grammar():
    f = compile_expression("-q^2 + 2^3^2 - 6/3/2 + max(q, qdot)*step(q) + 1e-1")
    q, qd = 1.5, -0.3
    ref = -(q**2) + 2 ** 9 - 1.0 + max(q, qd) * 1.0 + 0.1
    np.testing.assert_allclose(float(f(q=jnp.asarray(q), qdot=jnp.asarray(qd))), ref, rtol=1e-15)
    with pytest.raises(ValueError, match="unknown function 'foo'"):
        compile_expression("foo(q)")
    with pytest.raises(ValueError, match="unknown variable 'x'"):
        compile_expression("x*q")
    with pytest.raises(ValueError, match="unexpected character"):
        compile_expression("q # 2")


def test_coupled_coordinate_acts_through_its_map(results):
    """sgf_dep acts on cdep = g(r1): Q_r1 = f(g, ġ) g'(r1), checked with a hand-coded g."""
    a, b, c = COUPLER
    r, rd = 0.6, 0.7
    g, dg = a * r * r + b * r + c, 2 * a * r + b
    f_dep = -7.0 * (g - 0.2) - 0.4 * dg * rd
    got = results[2]["SpringGeneralizedForce"][1]  # at Q_TEST[1], QD_TEST[1]
    np.testing.assert_allclose(got[2], f_dep * dg, rtol=1e-13)
    np.testing.assert_allclose(got[3], -40.0 * (0.05 - 0.05) - 3.0 * 0.0, atol=1e-15)


@pytest.mark.extended
def test_simulate_with_model_forces(model):
    """simulate(..., forces=ModelForces(model)) runs (compile-heavy: extended)."""
    sol = mbjax.simulate(model, jnp.array([0.2, 0.02, 0.1, 0.02]), jnp.zeros(4), 0.0, 0.2,
                         forces=mbjax.forces.ModelForces(model), saveat=jnp.array([0.0, 0.2]))
    assert np.all(np.isfinite(np.asarray(sol.ys[0])))


def test_float32_runs():
    b = mbjax.ModelBuilder(["x"])
    b.add_body("a", axis=[0, 0, 1], map="x", mass=1.0, com=(0, -0.1, 0), inertia=np.eye(3) * 0.01)
    m = mbjax.forces.with_force_elements(b.build(), mbjax.forces.SpringGeneralizedForce.create(
        b.build(), ["s"], ["x"], [3.0], [0.1], [0.2]))
    out = mbjax.forces.model_forces(m, jnp.array([0.5], jnp.float32), jnp.array([1.0], jnp.float32))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, [-3.0 * 0.4 - 0.2], rtol=1e-6)
