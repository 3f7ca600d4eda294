"""Thin-plate splines (TPS-ligament seed Eq. 1-5) against independent routes."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.interpolate import RBFInterpolator

from mbjax.ligaments import ThinPlateSpline, fit_tps, tps_kernel


@eqx.filter_jit
def _eval(spline, pts):
    return jax.vmap(spline)(jnp.asarray(pts))


def _data(seed=0, n=9, d=2):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (n, 2))
    y = rng.normal(size=(n, d)) if d else rng.normal(size=n)
    return x, y


@pytest.mark.parametrize("d", [0, 1, 2])
def test_exact_interpolation_at_zero_lambda(d):
    x, y = _data(1, 12, d)
    s = fit_tps(x, y, 0.0)
    got = _eval(s, x)
    want = y if d else y[:, None]
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("lam", [0.0, 0.3])
def test_matches_scipy_rbf(lam):
    """scipy's RBFInterpolator (thin_plate_spline, degree 1, smoothing = λ) is a second implementation."""
    x, y = _data(2, 15, 2)
    s = fit_tps(x, y, lam)
    rbf = RBFInterpolator(x, y, kernel="thin_plate_spline", degree=1, smoothing=lam)
    pts = np.random.default_rng(3).uniform(-1.5, 1.5, (50, 2))
    np.testing.assert_allclose(_eval(s, jnp.asarray(pts)), rbf(pts), atol=1e-10)


def test_scale_and_origin_do_not_change_exact_interpolant():
    x, y = _data(4, 10, 1)
    a = fit_tps(x, y, 0.0)
    b = fit_tps(x, y, 0.0, scale=7.3e-3, origin=jnp.array([0.4, -2.0]))
    pts = jnp.asarray(np.random.default_rng(5).uniform(-1, 1, (20, 2)))
    np.testing.assert_allclose(_eval(a, pts), _eval(b, pts), atol=1e-9)


def test_affine_limit_for_large_lambda():
    x, y = _data(6, 14, 2)
    s = fit_tps(x, y, 1e9, check=False)
    p = np.c_[np.ones(len(x)), x]
    coef, *_ = np.linalg.lstsq(p, y, rcond=None)
    pts = np.random.default_rng(7).uniform(-1, 1, (30, 2))
    np.testing.assert_allclose(_eval(s, jnp.asarray(pts)), np.c_[np.ones(30), pts] @ coef, atol=1e-7)
    # per-landmark λ: only the relaxed landmarks move away from exact interpolation
    lam = np.zeros(14)
    lam[:4] = 5.0
    s2 = fit_tps(x, y, lam)
    res = np.abs(np.asarray(_eval(s2, jnp.asarray(x))) - y).max(1)
    assert res[4:].max() < 1e-12 and res[:4].min() > 1e-6


def test_jacobian_matches_jacfwd_and_is_finite_at_landmarks():
    x, y = _data(8, 10, 2)
    s = fit_tps(x, y, 0.05)
    pts = np.concatenate([np.random.default_rng(9).uniform(-1, 1, (10, 2)), x[:3]])  # include landmarks
    jac, auto = jax.jit(lambda p: (jax.vmap(s.jacobian)(p), jax.vmap(jax.jacfwd(s))(p)))(jnp.asarray(pts))
    np.testing.assert_allclose(jac, auto, atol=1e-12)
    assert np.all(np.isfinite(jac))
    # grad-safe kernel: no NaN gradient at r = 0, also through the fit (w.r.t. landmarks and values)
    assert jax.grad(tps_kernel)(0.0) == 0.0
    g = jax.jit(jax.grad(lambda lm: jnp.sum(fit_tps(lm, y, 0.0, check=False)(lm[0]))))(jnp.asarray(x))
    assert np.all(np.isfinite(g))
    # finite differences of the value (an independent route for the closed-form Jacobian)
    p = jnp.array([0.21, -0.37])
    h = 1e-6
    sv = jax.jit(jax.vmap(s))(jnp.stack([p + h * jnp.eye(2)[0], p + h * jnp.eye(2)[1], p - h * jnp.eye(2)[0], p - h * jnp.eye(2)[1]]))
    fd = ((sv[:2] - sv[2:]) / (2 * h)).T
    np.testing.assert_allclose(s.jacobian(p), fd, atol=1e-8)


def _bending_density(fn):
    hess = jax.hessian(lambda p: fn(p)[0])
    return jax.vmap(lambda p: jnp.sum(hess(p) ** 2))  # t_xx² + 2 t_xy² + t_yy²


def _square_quadrature(half, n_panels, order, grading=3):
    """Tensor Gauss-Legendre on [-half, half]² with panels graded towards the centre."""
    x, w = np.polynomial.legendre.leggauss(order)
    t = np.linspace(-1, 1, n_panels + 1)
    edges = half * np.sign(t) * np.abs(t) ** grading
    xs = ((edges[:-1, None] + edges[1:, None]) / 2 + (edges[1:, None] - edges[:-1, None]) / 2 * x).ravel()
    ws = ((edges[1:, None] - edges[:-1, None]) / 2 * w).ravel()
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    return np.stack([gx.ravel(), gy.ravel()], -1), np.outer(ws, ws).ravel()


def test_bending_energy_closed_form_vs_quadrature():
    """8π aᵀKa (Duchon) against an independent quadrature of t_xx² + 2t_xy² + t_yy² (jax.hessian).

    The domain is truncated at |x|, |y| <= 20 (measured: 0.2 % below the closed form, converging
    with R and panels); landmarks lie in [-1, 1]², their log-singular second derivatives are integrable.
    """
    x, y = _data(10, 7, 1)
    s = fit_tps(x, y[:, 0], 0.0)
    pts, w = _square_quadrature(20.0, 80, 6)
    e_quad = float(jnp.sum(jax.jit(_bending_density(s))(jnp.asarray(pts)) * w))
    e_closed = float(s.bending_energy()[0])
    assert abs(e_quad - e_closed) / e_closed < 0.01


def test_bending_energy_minimal_among_interpolants():
    """TPS minimises the bending energy among interpolants of the landmarks.

    (a) orthogonality: for a compact bump h vanishing at every landmark, ∫ D²t : D²h = 0, so
    E(t + h) = E(t) + E(h) > E(t); computed on the bump's disk with a polar Gauss rule.
    (b) a Gaussian-RBF interpolant of the same data has a larger energy (quadrature on a box).
    """
    x, y = _data(11, 8, 1)
    y = y[:, 0]
    s = fit_tps(x, y, 0.0)
    c, rho = np.array([1.6, 1.6]), 0.5
    assert np.min(np.linalg.norm(x - c, axis=1)) > rho

    def bump(p):
        r2 = jnp.sum((p - c) ** 2) / rho**2
        return jnp.where(r2 < 1, (1 - jnp.minimum(r2, 1.0)) ** 4, 0.0)[None]

    rg, rw = np.polynomial.legendre.leggauss(40)
    rr, rw = rho * (rg + 1) / 2, rho / 2 * rw
    th = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    pts = np.array([c + r * np.array([np.cos(t), np.sin(t)]) for r in rr for t in th])
    w = np.array([wr * r * 2 * np.pi / 64 for r, wr in zip(rr, rw) for _ in th])
    ht = jax.jit(jax.vmap(jax.hessian(lambda p: s(p)[0])))(jnp.asarray(pts))
    hh = jax.jit(jax.vmap(jax.hessian(lambda p: bump(p)[0])))(jnp.asarray(pts))
    cross = float(jnp.sum(jnp.sum(ht * hh, (1, 2)) * w))
    e_h = float(jnp.sum(jnp.sum(hh * hh, (1, 2)) * w))
    e_t_disk = float(jnp.sum(jnp.sum(ht * ht, (1, 2)) * w))
    assert abs(cross) < 1e-8 * math.sqrt(e_h * e_t_disk)
    assert e_h > 0  # hence E(t + h) = E(t) + E(h) > E(t)

    # (b) another interpolant: Gaussian RBF + affine part, fitted to the same landmarks
    eps = 1.5
    d2 = np.sum((x[:, None] - x[None]) ** 2, -1)
    p = np.c_[np.ones(len(x)), x]
    big = np.block([[np.exp(-eps**2 * d2), p], [p.T, np.zeros((3, 3))]])
    coef = np.linalg.solve(big, np.r_[y, np.zeros(3)])

    def gauss_interp(q):
        r2 = jnp.sum((q - x) ** 2, -1)
        return (jnp.exp(-eps**2 * r2) @ coef[:-3] + coef[-3] + q @ coef[-2:])[None]

    np.testing.assert_allclose(jax.jit(jax.vmap(gauss_interp))(jnp.asarray(x))[:, 0], y, atol=1e-9)
    pts, w = _square_quadrature(12.0, 40, 5)
    e_gauss = float(jnp.sum(jax.jit(_bending_density(gauss_interp))(jnp.asarray(pts)) * w))
    assert e_gauss > float(s.bending_energy()[0]) * 1.05


def test_bad_landmarks_raise():
    y = np.arange(4.0)
    with pytest.raises(ValueError, match="collinear"):
        fit_tps(np.array([[0, 0], [1, 1], [2, 2], [3, 3.0]]), y)
    with pytest.raises(ValueError, match="duplicated"):
        fit_tps(np.array([[0, 0], [1, 0], [0, 1], [1, 0.0]]), y)
    # duplicates are fine when they are relaxed (smoothing)
    fit_tps(np.array([[0, 0], [1, 0], [0, 1], [1, 0.0]]), y, 0.5)
    with pytest.raises(ValueError, match="at least 3"):
        fit_tps(np.array([[0, 0], [1, 0.0]]), y[:2])
    with pytest.raises(ValueError, match="shape"):
        fit_tps(np.zeros((4, 3)), y)
    with pytest.raises(ValueError, match=">= 0"):
        fit_tps(np.array([[0, 0], [1, 0], [0, 1], [1, 1.0]]), y, -1.0)


def test_singular_system_under_jit_raises():
    lm = jnp.array([[0, 0], [1, 0], [0, 1], [1, 0.0]])

    @jax.jit
    def f(lm):
        return fit_tps(lm, jnp.arange(4.0), 0.0).weights

    with pytest.raises(Exception, match="singular"):
        jax.block_until_ready(f(lm))


def test_float32_runs():
    x, y = _data(12, 8, 2)
    s = fit_tps(jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32), 0.0, check=False)
    out = s(jnp.asarray([0.1, 0.2], jnp.float32))
    assert out.dtype == jnp.float32 and np.all(np.isfinite(out))
    assert isinstance(s, ThinPlateSpline) and isinstance(s, eqx.Module)
