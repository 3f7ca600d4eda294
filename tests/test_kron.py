"""Kronecker matrix calculus of Ehsani §2 (Eq. 1-37) against forward-mode autodiff.

``jax.jacfwd`` of a matrix-valued function ``A(q)`` gives ``(m, n, r)``; Definition 1's layout is
``[i·r + l, k] = ∂A_ik/∂q_l`` (ERRATA: shape ``(m·r, n)``).  Each theorem is checked on random
smooth matrix functions of ``q`` (products, Kronecker products, trig/exp entries).  The literal
pose derivatives of the lead's ``pose_derivatives_kron`` (Eq. 74, 75, 89) are checked against
the fast path and against autodiff of ``B_i = T_iᵀ`` directly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _trees import random_tree

import mbjax
from mbjax import _kron

R = 3  # length of q


def _matrix_fn(seed: int, m: int, n: int):
    """A random smooth matrix function A(q): (m, n) from q (R,), nonlinear in every entry."""
    rng = np.random.default_rng(seed)
    c0, c1, c2 = (jnp.asarray(rng.normal(size=(m, n, R))) for _ in range(3))
    base = jnp.asarray(rng.normal(size=(m, n)))

    def fn(q):
        return base + jnp.sin(c0 @ q) + jnp.exp(0.3 * (c1 @ q)) * (c2 @ q) ** 2

    return fn


def _scalar_fn(seed: int):
    rng = np.random.default_rng(seed)
    w = jnp.asarray(rng.normal(size=R))
    return lambda q: jnp.cos(w @ q) + (w @ q) ** 3


def _jac_layout(fn, q):
    """Definition-1 layout straight from jax.jacfwd (an independent transcription of the layout)."""
    jac = jax.jacfwd(fn)(q)  # (m, n, r)
    m, n, r = jac.shape
    out = np.zeros((m * r, n))
    for i in range(m):
        for k in range(n):
            for l in range(r):
                out[i * r + l, k] = jac[i, k, l]
    return out


Q = jnp.asarray([0.3, -0.7, 0.45])


def test_elementary_matrices():
    e = _kron.elementary(1, 2, 3, 4)
    assert e.shape == (3, 4)
    assert e[1, 2] == 1.0 and float(jnp.sum(jnp.abs(e))) == 1.0
    # A = Σ_ik A_ik 𝓔_ik
    a = jnp.asarray(np.random.default_rng(0).normal(size=(3, 4)))
    recon = sum(a[i, k] * _kron.elementary(i, k, 3, 4) for i in range(3) for k in range(4))
    np.testing.assert_array_equal(recon, a)


@pytest.mark.parametrize("m,n", [(2, 3), (3, 3), (4, 1), (1, 5)])
def test_commutation_matrix(m, n):
    u = _kron.commutation_matrix(m, n)
    assert u.shape == (m * n, m * n)
    # a permutation matrix: 0/1 entries, one 1 per row and column, orthogonal, U_{m,n}ᵀ = U_{n,m}
    assert set(np.unique(np.asarray(u))) <= {0.0, 1.0}
    np.testing.assert_array_equal(u.sum(0), 1.0)
    np.testing.assert_array_equal(u.sum(1), 1.0)
    np.testing.assert_array_equal(u @ u.T, np.eye(m * n))
    np.testing.assert_array_equal(u.T, _kron.commutation_matrix(n, m))
    rng = np.random.default_rng(m * 10 + n)
    a = jnp.asarray(rng.normal(size=(m, n)))
    # with row-major vec and A (m x n): U_{m,n} vec(Aᵀ) = vec(A), i.e. U_{n,m} vec(A) = vec(Aᵀ).
    # (_kron.commutation_matrix's docstring states U_{m,n} vec(A) = vec(Aᵀ) for A ∈ R^{m×n}: that
    # holds only for square A.)
    np.testing.assert_array_equal(u @ a.T.reshape(-1), a.reshape(-1))
    np.testing.assert_array_equal(_kron.commutation_matrix(n, m) @ a.reshape(-1), a.T.reshape(-1))
    # commutative rule used in Theorem 3: U_{s,r} (B ⊗ C) = C ⊗ B for B (r x 1), C (s x p)
    r, s, p = n, m, 3
    b = jnp.asarray(rng.normal(size=(r, 1)))
    c = jnp.asarray(rng.normal(size=(s, p)))
    np.testing.assert_allclose(_kron.commutation_matrix(s, r) @ jnp.kron(b, c), jnp.kron(c, b), atol=1e-15)


@pytest.mark.parametrize("m,n", [(2, 3), (4, 4), (3, 1)])
def test_definition_1_layout(m, n):
    fn = _matrix_fn(m + 7 * n, m, n)
    ref = _jac_layout(fn, Q)
    lit = _kron.derivative_literal(fn, Q)
    fast = _kron.derivative(fn, Q)
    assert lit.shape == (m * R, n)
    np.testing.assert_allclose(lit, ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(fast, ref, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(_kron.to_jacobian(fast, m, R), jax.jacfwd(fn)(Q), rtol=1e-14)
    # row l of block i is ∂(row i of A)/∂q_l: a finite-difference check of the layout
    eps = 1e-6
    for l in range(R):
        dq = jnp.zeros(R).at[l].set(eps)
        fd = (fn(Q + dq) - fn(Q - dq)) / (2 * eps)
        np.testing.assert_allclose(fast[l::R], fd, rtol=1e-6, atol=1e-8)


def test_theorem_1_product_rule():
    for m, n, p in [(2, 3, 4), (3, 3, 1), (1, 2, 2)]:
        a_fn, b_fn = _matrix_fn(1, m, n), _matrix_fn(2, n, p)
        da, db = _kron.derivative(a_fn, Q), _kron.derivative(b_fn, Q)
        got = _kron.product_rule(a_fn(Q), da, b_fn(Q), db, R)
        np.testing.assert_allclose(got, _jac_layout(lambda q: a_fn(q) @ b_fn(q), Q), rtol=1e-12, atol=1e-12)


def test_theorem_2_scalar_rule():
    s_fn, a_fn = _scalar_fn(3), _matrix_fn(4, 3, 2)
    got = _kron.scalar_rule(s_fn(Q), jax.grad(s_fn)(Q), a_fn(Q), _kron.derivative(a_fn, Q))
    np.testing.assert_allclose(got, _jac_layout(lambda q: s_fn(q) * a_fn(q), Q), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes", [((2, 3), (2, 2)), ((3, 1), (2, 3)), ((1, 2), (3, 1))])
def test_theorem_3_kron_rule(shapes):
    (m, n), (s, p) = shapes
    a_fn, c_fn = _matrix_fn(5, m, n), _matrix_fn(6, s, p)
    got = _kron.kron_rule(a_fn(Q), _kron.derivative(a_fn, Q), c_fn(Q), _kron.derivative(c_fn, Q), R)
    ref = _jac_layout(lambda q: jnp.kron(a_fn(q), c_fn(q)), Q)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_theorem_4_differentials():
    m, n = 3, 2
    a_fn = _matrix_fn(8, m, n)
    dq = jnp.asarray([0.2, -0.1, 0.7])
    _, ref = jax.jvp(a_fn, (Q,), (dq,))  # dA along dq
    got_a = _kron.differential_a(_kron.derivative(a_fn, Q), dq, m)
    got_b = _kron.differential_b(_kron.derivative(lambda q: a_fn(q).T, Q), dq, n)
    np.testing.assert_allclose(got_a, ref, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got_b, ref, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------------------------------------
# literal pose derivatives (Eq. 74, 75, 89) vs the fast path and vs autodiff
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed,n_bodies,n_coordinates", [(1, 7, 4)])
def test_pose_derivatives_kron(seed, n_bodies, n_coordinates):
    model = random_tree(seed, n_bodies=n_bodies, n_coordinates=n_coordinates, chain_depth=6)
    q = jnp.asarray(np.random.default_rng(seed + 100).uniform(-1, 1, n_coordinates))
    b_fast, d_fast, dd_fast = mbjax.pose_derivatives(model, q).kron_layout()
    # independent: Definition-1 layout of B_i = T_iᵀ and of ∂B_i/∂q, by jacfwd
    b_of = lambda i: (lambda x: mbjax.body_poses(model, x)[i].T)
    for method in ("recursive", "closed"):
        b_k, d_k, dd_k = mbjax.reference.pose_derivatives_kron(model, q, method)
        for i in range(model.n_bodies):
            np.testing.assert_allclose(b_k[i], b_fast[i], atol=1e-14)
            np.testing.assert_allclose(d_k[i], d_fast[i], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(dd_k[i], dd_fast[i], rtol=1e-11, atol=1e-11)
    for i in (model.n_bodies - 1,):
        d_ref = _kron.derivative(b_of(i), q)
        dd_ref = _kron.derivative(lambda x: _kron.derivative(b_of(i), x), q)
        np.testing.assert_allclose(d_k[i], d_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dd_k[i], dd_ref, rtol=1e-11, atol=1e-11)


def test_pose_derivatives_kron_with_spline_maps():
    """Same check on a chain whose joints are empirical spline / Fourier / bicubic maps."""
    from mbjax.maps import BicubicSpline, Fourier, NaturalCubicSpline

    xk = np.linspace(-2, 2, 21)
    g = np.linspace(-2, 2, 6)
    rng = np.random.default_rng(5)
    maps = [
        NaturalCubicSpline("q0", xk, np.sin(xk)),
        BicubicSpline(("q0", "q1"), g, g, rng.normal(size=(6, 6)) * 0.4),
        Fourier("q1", 0.2, [0.4], [-0.3], 1.1),
        NaturalCubicSpline("q1", xk, np.cos(xk) * 0.5),
    ]
    b = mbjax.ModelBuilder(["q0", "q1"])
    parent = "ground"
    for i, m in enumerate(maps):
        axis = rng.normal(size=3)
        b.add_body(f"b{i}", parent=parent, joint="prismatic" if i == 2 else "revolute",
                   axis=axis / np.linalg.norm(axis), map=m, translation=rng.normal(size=3) * 0.3, mass=1.0)
        parent = f"b{i}"
    model = b.build()
    q = jnp.asarray([0.4, -0.6])
    _, d_fast, dd_fast = mbjax.pose_derivatives(model, q).kron_layout()
    for method in ("recursive", "closed"):
        _, d_k, dd_k = mbjax.reference.pose_derivatives_kron(model, q, method)
        for i in range(model.n_bodies):
            np.testing.assert_allclose(d_k[i], d_fast[i], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(dd_k[i], dd_fast[i], rtol=1e-11, atol=1e-11)
