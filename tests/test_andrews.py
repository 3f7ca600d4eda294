"""Andrews' squeezer: the cut tree vs the Test Set's M and f, and the reduced ODE / DAE vs the published solution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.models import andrews as A
from mbjax.models import andrews_dae as D

# Test Set for IVP Solvers (Mazzia, Magherini, Bari), andrews.f SOLN: PSIDE at rtol = atol = 1e-14,
# y(t = 0.03): angles [β, Θ, γ, Φ, δ, Ω, ε] and their rates.
REF_Q = np.array([0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
                  0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1])
REF_QD = np.array([0.1139920302151208e4, -0.1424379294994111e4, 0.1103291221937134e2, 0.1929337464421385e2,
                   0.5735699284790808, -0.1929337464421385e2, 0.3231791658026955])


@pytest.fixture(scope="module")
def fit():
    return A.fourier_maps(12)


def test_tree_reproduces_test_set_equations():
    tree = A.andrews_tree()
    rng = np.random.default_rng(0)
    qs = jnp.asarray(rng.uniform(-np.pi, np.pi, (6, 7)))
    qds = jnp.asarray(rng.normal(size=(6, 7)) * 300)
    ours = jax.jit(jax.vmap(lambda q, qd: (mbjax.mass_matrix(tree, q), A.generalized_rhs(tree, q, qd))))(qs, qds)
    ref = jax.vmap(lambda q, qd: (A.test_set_mass_matrix(q), A.test_set_rhs(q, qd)))(qs, qds)
    for a, b in zip(ours, ref):
        assert float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b))) < 1e-13


def test_consistent_initial_accelerations_and_multipliers():
    tree = A.andrews_tree()
    qdd, lam = jax.jit(D.multipliers)(tree, jnp.asarray(A.Q0), jnp.zeros(7))
    np.testing.assert_allclose(qdd, A.QDD0, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(lam, A.LAMBDA0, rtol=1e-10, atol=1e-10)
    assert float(jnp.max(jnp.abs(A.constraints(jnp.asarray(A.Q0))))) < 1e-15


def test_fourier_premodelling_residuals(fit):
    _, (betas, xs), residuals = fit
    assert abs(betas[-1] - betas[0] - 2 * np.pi) < 0.01
    for name, r in residuals.items():
        assert r < 1e-8, (name, r)


def test_implicit_map_derivatives_vs_autodiff(fit):
    imap = A.AndrewsImplicitMap(fit[0], 0)
    beta = jnp.asarray(1.3)
    # independent route: differentiate through the Newton iteration itself (8 steps from the predictor)
    newton = lambda b: A._newton(b, imap._predict(b), None, 8)

    @jax.jit
    def both(beta):
        return imap.solve(beta), A._residual(imap.solve(beta)[0], beta), jax.jacfwd(newton)(beta), \
            jax.jacfwd(jax.jacfwd(newton))(beta)

    (x, d1, d2), res, ad1, ad2 = both(beta)
    assert float(jnp.max(jnp.abs(res))) < 1e-14
    np.testing.assert_allclose(d1, ad1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d2, ad2, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("kind, tol_q, tol_qd", [("implicit", 1e-7, 1e-6)])
def test_reduced_ode_matches_published_solution(fit, kind, tol_q, tol_qd):
    model, _ = A.andrews_reduced(kind, fit=fit)
    sol = mbjax.simulate(model, jnp.array([A.Q0[0]]), jnp.zeros(1), 0.0, A.T_END,
                         vector_field=A.reduced_vector_field(model), rtol=1e-10, atol=1e-10)
    q, qd = A.full_state(model, sol.ys[0][-1, 0], sol.ys[1][-1, 0])
    np.testing.assert_allclose(q, REF_Q, rtol=tol_q, atol=tol_q)
    np.testing.assert_allclose(qd, REF_QD, rtol=tol_qd, atol=1e-3)


def test_dae_baseline_matches_published_solution():
    tree = A.andrews_tree()
    sol = mbjax.simulate(tree, jnp.asarray(A.Q0), jnp.zeros(7), 0.0, A.T_END,
                         vector_field=D.dae_vector_field(tree, 1e3, 1e3), rtol=1e-10, atol=1e-10)
    q, qd = sol.ys[0][-1], sol.ys[1][-1]
    np.testing.assert_allclose(q, REF_Q, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(qd, REF_QD, rtol=1e-6, atol=1e-3)
    assert float(jnp.max(jnp.abs(A.constraints(q)))) < 1e-10


def test_implicit_map_is_a_constraints_implicit_map(fit):
    from mbjax import constraints

    imap = A.AndrewsImplicitMap(fit[0], 2)
    assert isinstance(imap.loop, constraints.ImplicitMap)
    assert isinstance(imap.loop.constraint, constraints.LoopConstraint)
    # far from the reference configuration (several crank turns): one Newton solve from the predictor
    betas = jnp.array([-20.0, 7.5, 31.0])
    x = jax.jit(jax.vmap(lambda b: imap.solve(b)[0]))(betas)
    res = jax.vmap(A._residual)(x, betas)
    assert float(jnp.max(jnp.abs(res))) < 1e-13


# the implicit map in the extended group (~13 s); in CI through test_reduced_ode_matches_published_solution
@pytest.mark.parametrize("kind", ["fourier", pytest.param("implicit", marks=pytest.mark.extended)])
def test_reduced_field_equals_library_forward_dynamics(fit, kind):
    """The one-pass ODE right-hand side vs forward_dynamics with the applied forces (three library passes)."""
    model, _ = A.andrews_reduced(kind, fit=fit)
    states = jnp.array([[0.3, 50.0], [-2.0, -700.0], [4.0, 1200.0]])

    @jax.jit
    def both(s):
        q, qd = s[:1], s[1:]
        ref = mbjax.forward_dynamics(model, q, qd, A.applied_forces(model, q))
        return A.ReducedField()(0.0, (q, qd), model)[1], ref

    ours, ref = jax.vmap(both)(states)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_dae_closed_form_equals_library_dae():
    tree = A.andrews_tree()
    rng = np.random.default_rng(2)
    q, qd = jnp.asarray(A.Q0 + 0.1 * rng.normal(size=7)), jnp.asarray(rng.normal(size=7) * 100)
    library, closed = D.dae_vector_field(tree, 1e3, 1e3), D.dae_vector_field(tree, 1e3, 1e3, closed_form=True)
    a, b = jax.jit(lambda q, qd: (library(0.0, (q, qd), tree)[1], closed(0.0, (q, qd), tree)[1]))(q, qd)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * float(jnp.max(jnp.abs(b))))


def test_reduced_ode_compiles_once(fit, monkeypatch):
    """New start angle, end time and tolerance: the reduced ODE solve is traced once."""
    import equinox as eqx
    from mbjax import _simulate

    counted = eqx.debug.assert_max_traces(_simulate._integrate, max_traces=1)
    monkeypatch.setattr(_simulate, "_integrate", counted)
    model, _ = A.andrews_reduced("fourier", fit=fit)
    model = eqx.tree_at(lambda m: m.mass, model, model.mass * 1.0)  # a fresh value, same structure
    for beta0, t1, tol in ((A.Q0[0], 0.002, 1e-8), (0.4, 0.003, 1e-6), (-1.0, 0.001, 1e-9)):
        sol = mbjax.simulate(model, jnp.array([beta0]), jnp.zeros(1), 0.0, t1, saveat=jnp.array([0.5 * t1, t1]),
                             vector_field=A.reduced_vector_field(), rtol=tol, atol=tol, max_steps=12_345)
        assert np.all(np.isfinite(np.asarray(sol.ys[0])))
    assert eqx.debug.get_num_traces(counted) == 1  # max_steps=12_345: a static configuration no other test uses
