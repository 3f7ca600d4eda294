"""Closed chains (Ehsani §3-3): Newton solve, projection (Eq. 102-120), molecule, implicit JVP, pre-model."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.constraints import (
    ImplicitMap,
    LoopConstraint,
    direct_derivatives,
    hessian_rhs,
    hermite,
    implicit_solve,
    implicit_values,
    molecule_derivatives,
    molecule_offsets,
    premodel,
    projection_derivatives,
    solve,
)
from mbjax.constraints.projection import projectors
from mbjax.models.fivebar import fivebar, fivebar_constraint
from mbjax.models.fourbar import fourbar, fourbar_constraint


def _random_residual(p, f, q):
    """A generic smooth system: m = 3 joint variables, n_q = 2 coordinates."""
    return p["a"] @ f + p["b"] @ q + 0.3 * jnp.sin(p["c"] @ f + p["d"] @ q) + 0.1 * f**3 - p["e"]


@pytest.fixture(scope="module")
def random_con():
    rng = np.random.default_rng(0)
    p = {
        "a": np.eye(3) * 2 + 0.3 * rng.normal(size=(3, 3)),
        "b": rng.normal(size=(3, 2)),
        "c": rng.normal(size=(3, 3)),
        "d": rng.normal(size=(3, 2)),
        "e": rng.normal(size=3),
    }
    return LoopConstraint(_random_residual, p, ("x", "y"), ("a", "b", "c"), [0.0, 0.0], [0.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def con4():
    return fourbar_constraint()


@pytest.fixture(scope="module")
def con5():
    return fivebar_constraint()


def _cases(random_con, con4, con5):
    return [
        (random_con, jnp.array([0.3, -0.2])),
        (con4, jnp.array([1.37])),
        (con4, jnp.array([-1.91])),
        (con5, jnp.array([0.4, 0.9])),
        (con5, jnp.array([2.5, -1.3])),
    ]


def test_solve_satisfies_constraint(random_con, con4, con5):
    for con, q in _cases(random_con, con4, con5):
        f = solve(con, q)
        assert np.max(np.abs(con.residual(f, q))) < 1e-13


def test_projectors_are_the_seeds_eliminators(con5, con4):
    # γ_{i+1} (Eq. 116-117) is an orthogonal projector that annihilates ḡ_{i+1..m}
    for con, q in ((con4, jnp.array([0.8])), (con5, jnp.array([0.4, 0.9]))):
        f = solve(con, q)
        gbar = con.jacobian_f(f, q)
        gam = projectors(gbar)
        m = gbar.shape[1]
        for i in range(m):
            np.testing.assert_allclose(gam[i], gam[i].T, atol=1e-14)
            np.testing.assert_allclose(gam[i] @ gam[i], gam[i], atol=1e-13)
            for j in range(i + 1, m):
                np.testing.assert_allclose(gam[i] @ gbar[:, j], 0.0, atol=1e-13)
            assert np.linalg.norm(gam[i] @ gbar[:, i]) > 1e-3


def test_projection_matches_direct_solve_and_implicit_autodiff(random_con, con4, con5):
    for con, q in _cases(random_con, con4, con5):
        f = solve(con, q)
        g, h = projection_derivatives(con, f, q)
        g2, h2 = direct_derivatives(con, f, q)
        f3, g3, h3 = implicit_values(con, q)  # jacfwd / hessian through the custom JVP
        scale_g = 1 + np.max(np.abs(g2))
        scale_h = 1 + np.max(np.abs(h2))
        assert np.max(np.abs(g - g2)) < 1e-13 * scale_g
        assert np.max(np.abs(h - h2)) < 1e-12 * scale_h
        assert np.max(np.abs(g - g3)) < 1e-13 * scale_g
        assert np.max(np.abs(h - h3)) < 1e-12 * scale_h
        np.testing.assert_allclose(f3, f, atol=1e-14)


def test_gamma_of_eq_120(con5):
    # Σ_j ḡ_j ⊗ vec(H_j) = Γ with H from autodiff of the implicit solve (independent of Γ)
    q = jnp.array([1.1, -0.4])
    f, g, h = implicit_values(con5, q)
    gam = hessian_rhs(con5, f, q, g)
    gbar = con5.jacobian_f(f, q)
    lhs = jnp.einsum("ij,jab->iab", gbar, h)
    np.testing.assert_allclose(lhs, gam, atol=1e-12)


def test_implicit_solve_finite_differences_and_parameters(con4):
    # ∇f by central differences of the plain solve; parameter gradient via reverse mode
    q = jnp.array([0.45])
    eps = 1e-6
    fd = (solve(con4, q + eps) - solve(con4, q - eps)) / (2 * eps)
    g = jax.jacfwd(lambda qq: implicit_solve(con4, qq))(q)[:, 0]
    np.testing.assert_allclose(g, fd, rtol=1e-8, atol=1e-9)

    def theta2(con):
        return implicit_solve(con, q)[1]

    grads = eqx.filter_jit(jax.grad(theta2))(con4)
    for key in ("l0", "l1", "l3"):
        params = dict(con4.params)
        plus = {**params, key: params[key] + eps}
        minus = {**params, key: params[key] - eps}
        fp = solve(eqx.tree_at(lambda c: c.params, con4, plus), q, guess=solve(con4, q))[1]
        fm = solve(eqx.tree_at(lambda c: c.params, con4, minus), q, guess=solve(con4, q))[1]
        np.testing.assert_allclose(grads.params[key], (fp - fm) / (2 * eps), rtol=1e-7, atol=1e-9)


def test_molecule_offsets_and_accuracy(con5):
    offs = molecule_offsets(2)
    assert offs.shape == (9, 2) and np.all(offs[0] == 0)
    assert len({tuple(r) for r in offs}) == 9
    q = jnp.array([0.7, 2.2])
    f = solve(con5, q)
    g, h = projection_derivatives(con5, f, q)
    errs = []
    for step in (4e-3, 2e-3):
        fm, gm, hm = molecule_derivatives(con5, q, step)
        np.testing.assert_allclose(fm, f, atol=1e-14)
        errs.append((np.max(np.abs(gm - g)), np.max(np.abs(hm - h))))
    # central differences: error ∝ h² (ratio 4 when the step halves)
    assert 3.5 < errs[0][0] / errs[1][0] < 4.5
    assert 3.5 < errs[0][1] / errs[1][1] < 4.5
    fm, gm, hm = molecule_derivatives(con5, q, 1e-4)
    assert np.max(np.abs(gm - g)) < 1e-7 * (1 + np.max(np.abs(g)))
    assert np.max(np.abs(hm - h)) < 1e-5 * (1 + np.max(np.abs(h)))


def test_non_convergence_and_toggle_raise(con4):
    # beyond the branch's range (toggle at q ≈ 2.578): the continuation crosses the fold
    with pytest.raises(RuntimeError, match="branch|converge"):
        jax.block_until_ready(solve(con4, jnp.array([3.0])))
    # a single equation with a fold at q = 0: f² = q; near q = 0, ∂g/∂f = 2f → 0
    con = LoopConstraint(lambda p, f, q: f**2 - q, {}, ("q",), ("f",), [1.0], [1.0])
    np.testing.assert_allclose(solve(con, jnp.array([0.25])), [0.5], atol=1e-14)
    with pytest.raises(RuntimeError, match="singular"):
        jax.block_until_ready(solve(con, jnp.array([1e-18]), guess=jnp.array([1e-9])))


def test_bad_input_raises(con4):
    with pytest.raises(ValueError, match="shape"):
        solve(con4, jnp.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="equations"):
        LoopConstraint(lambda p, f, q: f[:1], {}, ("q",), ("a", "b"), [0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="does not converge"):
        LoopConstraint(lambda p, f, q: f**2 + 1.0, {}, ("q",), ("a",), [0.0], [0.3])
    with pytest.raises(ValueError, match="unknown method"):
        ImplicitMap(con4, 0, method="magic")
    with pytest.raises(ValueError, match="not one of"):
        ImplicitMap(con4, "theta9")
    with pytest.raises(ValueError, match="unknown method"):
        fourbar("magic")


def _count_whiles(jaxpr) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "while":
            n += 1
        for v in eqn.params.values():
            for j in v if isinstance(v, (tuple, list)) else (v,):
                inner = getattr(j, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    n += _count_whiles(inner)
    return n


def test_implicit_map_stack_solves_once(con4):
    lk = fourbar("projection")
    assert len(lk.model.maps) == 1 and lk.model.maps[0].n_maps == 3  # one stack of 3 maps
    q = jnp.array([0.3])
    n_model = _count_whiles(jax.make_jaxpr(lambda qq: mbjax.joint_values(lk.model, qq))(q).jaxpr)
    n_solve = _count_whiles(jax.make_jaxpr(lambda qq: solve(lk.constraint, qq))(q).jaxpr)
    assert n_model == n_solve > 0


def test_implicit_map_methods_agree_in_model(con5):
    q = jnp.array([0.9, -0.6])
    ref = None
    for method in ("projection", "implicit", "molecule"):
        lk = fivebar(method, step=1e-4)
        jv = jax.jit(mbjax.joint_values)(lk.model, q)
        if ref is None:
            ref = jv
            # identity maps for θ1, θ2; θ3, θ4 from the loop
            np.testing.assert_allclose(jv.value[:2], q)
            np.testing.assert_allclose(jv.gradient[:2], np.eye(2))
            continue
        tol = 1e-12 if method == "implicit" else 1e-6
        np.testing.assert_allclose(jv.value, ref.value, atol=1e-13)
        np.testing.assert_allclose(jv.gradient, ref.gradient, atol=tol)
        np.testing.assert_allclose(jv.hessian, ref.hessian, atol=tol * 10)


def test_jit_once_vmap_and_float32():
    lk = fivebar("projection")

    @eqx.filter_jit
    @eqx.debug.assert_max_traces(max_traces=1)
    def jv(model, q):
        return jax.vmap(mbjax.joint_values, in_axes=(None, 0))(model, q)

    qs = jnp.array([[0.1, 0.2], [1.0, -0.5], [2.0, 0.3]])
    a = jv(lk.model, qs)
    jv(lk.model, qs + 0.01)
    b = eqx.filter_jit(mbjax.joint_values)(lk.model, qs[1])
    np.testing.assert_allclose(a.gradient[1], b.gradient, atol=1e-14)
    # float32 runs (tolerances adapt to the dtype)
    f32 = eqx.filter_jit(mbjax.joint_values)(jax.tree.map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, lk.model),
                             jnp.array([0.5, 0.4], jnp.float32))
    f64 = eqx.filter_jit(mbjax.joint_values)(lk.model, jnp.array([0.5, 0.4]))
    assert f32.value.dtype == jnp.float32
    np.testing.assert_allclose(f32.gradient, f64.gradient, atol=1e-4)


def test_premodel_spline_and_policy(con4):
    grid = np.linspace(-2.0, 2.0, 201)  # step 0.02
    maps = premodel(con4, [grid], kind="spline")
    for q in (-1.433, 0.217, 1.618):
        x = jnp.array([[q]])
        qq = jnp.array([q])
        f = solve(con4, qq)
        g, h = projection_derivatives(con4, f, qq)
        for j, m in enumerate(maps):
            fv, gv, hv = m.local(x)
            assert abs(fv[0] - f[j]) < 1e-6
            assert abs(gv[0, 0] - g[j, 0]) < 1e-4
            assert abs(hv[0, 0, 0] - h[j, 0, 0]) < 1e-2
    with pytest.raises(RuntimeError, match="range"):
        jax.block_until_ready(maps[0].local(jnp.array([[2.5]])))
    with pytest.raises(ValueError, match="bicubic"):
        premodel(con4, [grid], kind="bicubic")


def test_premodel_bicubic_fivebar(con5):
    g1 = np.linspace(0.0, 1.0, 21)
    g2 = np.linspace(-0.5, 0.5, 21)
    maps = premodel(con5, [g1, g2], kind="bicubic")
    q = jnp.array([0.513, 0.071])
    f = solve(con5, q)
    g, _ = projection_derivatives(con5, f, q)
    for j, m in enumerate(maps):
        fv, gv, _ = m.local(q[None])
        assert abs(fv[0] - f[j]) < 1e-5
        np.testing.assert_allclose(gv[0], g[j], atol=1e-3)


def test_hermite_derivatives():
    knots = jnp.array([0.0, 1.0, 2.5, 3.0])
    vals = jnp.array([0.0, 1.5, -1.0, 0.2])
    slopes = jnp.array([0.0, 0.3, -0.4, 0.0])
    pos = lambda s: hermite(s, knots, vals, slopes)[0]
    ts = jnp.array([0.3, 1.7, 2.9])
    q, qd, qdd = jax.jit(jax.vmap(lambda s: hermite(s, knots, vals, slopes)))(ts)
    np.testing.assert_allclose(qd, jax.jit(jax.vmap(jax.grad(pos)))(ts), rtol=1e-12)
    np.testing.assert_allclose(qdd, jax.jit(jax.vmap(jax.grad(jax.grad(pos))))(ts), rtol=1e-12)
    for k in range(4):
        np.testing.assert_allclose(hermite(knots[k], knots, vals, slopes)[0], vals[k], atol=1e-15)
