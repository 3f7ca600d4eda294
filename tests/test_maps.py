"""Empirical joint-map families: closed-form f, ∇f, H against independent routes.

Independent routes used here: ``jax.grad``/``jax.hessian`` of each map's ``value``; plain
formulas written again in this file (Fourier series, monomials with ``jnp.power``); SciPy's
``CubicSpline(bc_type="natural")`` for the 1-D spline and, applied along each axis in turn, for the
tensor-product bicubic spline; ``make_smoothing_spline`` for the smoothing fit; jacfwd/hessian of
``body_poses`` for maps used inside a ``Model``.
"""

from __future__ import annotations

import equinox as eqx
import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.test_util import check_grads
from scipy.interpolate import CubicSpline, make_smoothing_spline

import mbjax
from mbjax.maps import (
    Affine,
    BicubicSpline,
    Composed,
    Fourier,
    NaturalCubicSpline,
    Polynomial,
)

# eqx.error_if surfaces as EquinoxRuntimeError (eager / eqx.filter_jit), XlaRuntimeError or, under a
# plain jax.jit on CPU, a ValueError wrapping the callback's error: all carry the message
RUNTIME_ERRORS = (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError, ValueError)


# ------------------------------------------------------------------------------------------------
# fixtures: one stack per family, maps of different sizes
# ------------------------------------------------------------------------------------------------


def _splines(policy="error"):
    rng = np.random.default_rng(0)
    x1 = np.concatenate([[-2.0], np.sort(rng.uniform(-2.0, 2.0, 9)), [2.0]])
    x2 = np.linspace(-1.0, 3.0, 6)
    x3 = np.array([-1.0, 1.0])  # two knots: a straight line
    maps = [
        NaturalCubicSpline("a", x1, np.sin(x1) + 0.1 * rng.normal(size=11), policy),
        NaturalCubicSpline("b", x2, np.exp(-x2), policy),
        NaturalCubicSpline("c", x3, [0.5, -1.0], policy),
    ]
    return maps, [(x1, maps[0].values[0]), (x2, maps[1].values[0]), (x3, maps[2].values[0])]


def _fouriers(policy="error"):
    return [
        Fourier("a", 0.3, [1.0, -0.4, 0.2], [0.5, 0.1, -0.3], 1.7, policy, -2.0, 2.0),
        Fourier("b", -0.1, [0.7], [0.2], 0.9, policy, -1.0, 3.0),
    ]


def _polynomials(policy="extrapolate"):
    rng = np.random.default_rng(1)
    return [
        Polynomial(
            ("a", "b", "c"),
            [[0, 0, 0], [1, 0, 0], [2, 1, 0], [0, 3, 1], [1, 1, 1], [0, 0, 4]],
            rng.normal(size=6),
            policy,
            [-2, -2, -2],
            [2, 2, 2],
        ),
        Polynomial("a", [0, 1, 2, 5], rng.normal(size=4), policy, -2.0, 2.0),
        Polynomial(("a", "b"), [[1, 1], [2, 0]], rng.normal(size=2), policy, [-2, -1], [2, 1]),
    ]


def _bicubics(policy="error"):
    rng = np.random.default_rng(2)
    x1a = np.concatenate([[-1.0], np.sort(rng.uniform(-1, 1, 5)), [1.0]])
    x2a = np.concatenate([[-2.0], np.sort(rng.uniform(-2, 2, 3)), [2.0]])
    x1b, x2b = np.linspace(-1, 1, 4), np.linspace(-2, 2, 9)
    ya = rng.normal(size=(7, 5))
    yb = np.sin(x1b[:, None]) * np.cos(x2b[None])
    maps = [
        BicubicSpline(("a", "b"), x1a, x2a, ya, policy),
        BicubicSpline(("c", "d"), x1b, x2b, yb, policy),
    ]
    return maps, [(x1a, x2a, ya), (x1b, x2b, yb)]


def _composed():
    xk = np.linspace(-3, 3, 13)
    rng = np.random.default_rng(3)
    inner_spline = NaturalCubicSpline("u", xk, np.tanh(xk), "extrapolate")
    bic, _ = _bicubics("extrapolate")
    return [
        Composed(inner_spline, Affine(["a", "b"], [0.5, 0.5], 0.1)),
        Composed(NaturalCubicSpline("u", xk, np.cos(xk), "extrapolate"), [[1.0, -2.0, 0.5]], [0.2], ("a", "b", "c")),
    ], [
        Composed(bic[0], rng.normal(size=(2, 3)) * 0.4, [0.0, 0.1], ("a", "b", "c")),
        Composed(bic[1], [[1.0, 0.0], [0.3, 0.2]], None, ("a", "b")),
    ]


def _points(maps, rng, n=6, margin=0.05):
    """Random local inputs ``(n, n_maps, width)`` inside every map's fitted range."""
    stack = type(maps[0]).stack(maps)
    width = stack.width
    lo, hi = -0.9, 0.9  # inside every range used above
    return stack, jnp.asarray(rng.uniform(lo + margin, hi - margin, size=(n, len(maps), width)))


FAMILIES = {
    "spline": lambda: _splines()[0],
    "fourier": _fouriers,
    "polynomial": _polynomials,
    "bicubic": lambda: _bicubics()[0],
    "composed_spline": lambda: _composed()[0],
    "composed_bicubic": lambda: _composed()[1],
}


def _stack_autodiff(m, x):
    """Closed form of a whole stack and jax.grad / jax.hessian of Σ_i value_i (block-diagonal)."""
    total = lambda z: jnp.sum(m.value(z))
    return m.local(x), jax.grad(total)(x), jax.hessian(total)(x)


_stack_jit = jax.jit(jax.vmap(_stack_autodiff, in_axes=(None, 0)))

# one compiled program per map (and batch size) instead of op-by-op eager dispatch of every primitive
_call = jax.jit(lambda m, x: m(x))
_call_each = jax.jit(jax.vmap(lambda m, x: m(x), in_axes=(None, 0)))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_closed_form_matches_autodiff_and_stacking(family):
    """∇f and H of every family equal jax.grad / jax.hessian of its value; stacked = one by one."""
    rng = np.random.default_rng(10)
    maps = FAMILIES[family]()
    stack, xs = _points(maps, rng)
    (f, g, h), g_ad, h_ad = _stack_jit(stack, xs)  # one compile per family
    n = len(maps)
    h_blocks = h_ad[:, np.arange(n), :, np.arange(n), :]  # (n_maps, n_pts, k, k)
    np.testing.assert_allclose(g, g_ad, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(h, jnp.swapaxes(h_blocks, 0, 1), rtol=1e-10, atol=1e-11)
    for i, m in enumerate(maps):
        k = len(m.coordinates[0])
        xi = xs[0, i, :k]
        f1, g1, h1 = _call(m, xi)  # the single map on its own
        np.testing.assert_allclose(f[0, i], f1, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(g[0, i, :k], g1, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(h[0, i, :k, :k], h1, rtol=1e-12, atol=1e-12)
        # padded inputs of narrower maps carry no derivative
        np.testing.assert_array_equal(g[:, i, k:], 0.0)
        np.testing.assert_array_equal(h[:, i, k:], 0.0)
        np.testing.assert_array_equal(h[:, i, :, k:], 0.0)
        # select() undoes stack()
        f2, g2, _ = _call(stack.select(i), xi)
        np.testing.assert_allclose(f2, f1, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(g2, g1, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------------------------------------
# independent evaluations
# ------------------------------------------------------------------------------------------------


def test_spline_matches_scipy_natural_cubic_spline():
    maps, data = _splines("extrapolate")
    rng = np.random.default_rng(4)
    for m, (x, y) in zip(maps, data):
        cs = CubicSpline(x, np.asarray(y), bc_type="natural")
        pts = np.concatenate([rng.uniform(x[0], x[-1], 50), x])
        f, g, h = _call_each(m, jnp.asarray(pts)[:, None])
        scale = max(1.0, np.abs(cs(pts, 2)).max())
        np.testing.assert_allclose(f, cs(pts), atol=1e-13 * scale)
        np.testing.assert_allclose(g[:, 0], cs(pts, 1), atol=1e-12 * scale)
        np.testing.assert_allclose(h[:, 0, 0], cs(pts, 2), atol=1e-11 * scale)
        # natural: zero curvature at both ends
        np.testing.assert_allclose(np.asarray(h)[-len(x) :, 0, 0][np.array([0, -1])], 0.0, atol=1e-12 * scale)


def test_fourier_matches_plain_series():
    maps = _fouriers()
    xs = jnp.linspace(-0.9, 0.9, 7)
    for m in maps:
        a0, a, b, w = float(m.a0[0]), np.asarray(m.a[0]), np.asarray(m.b[0]), float(m.omega[0])

        def series(x):
            k = jnp.arange(1, a.shape[0] + 1)
            return a0 + jnp.sum(a * jnp.cos(k * w * x) + b * jnp.sin(k * w * x))

        both = lambda x: (m(x[None]), series(x), jax.grad(series)(x), jax.grad(jax.grad(series))(x))
        (f, g, h), f_ref, g_ref, h_ref = jax.jit(jax.vmap(both))(xs)  # all points, one compile per map
        np.testing.assert_allclose(f, f_ref, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(g[:, 0], g_ref, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(h[:, 0, 0], h_ref, rtol=1e-13, atol=1e-13)


def test_polynomial_matches_plain_monomials():
    maps = _polynomials()
    rng = np.random.default_rng(5)
    for m in maps:
        e = np.asarray(m.exponents[0])
        c = np.asarray(m.coefficients[0])

        def plain(x):  # Σ_t c_t Π_k x_k ** e_tk with Python-int powers (lax.integer_pow)
            out = 0.0
            for t in range(e.shape[0]):
                term = c[t]
                for k in range(e.shape[1]):
                    term = term * x[k] ** int(e[t, k])
                out = out + term
            return out

        x = jnp.asarray(rng.uniform(-1.5, 1.5, size=(2, e.shape[1])))  # two points
        both = lambda x: (m(x), plain(x), jax.grad(plain)(x), jax.hessian(plain)(x))
        (f, g, h), f_ref, g_ref, h_ref = jax.jit(jax.vmap(both))(x)  # one compile per map
        np.testing.assert_allclose(f, f_ref, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h, h_ref, rtol=1e-12, atol=1e-12)


def _bicubic_scipy(x1, x2, y, p, q, d1=0, d2=0):
    """Tensor-product natural spline by SciPy: interpolate along x1, then along x2."""
    col = CubicSpline(x1, y, axis=0, bc_type="natural")(p, d1)
    return CubicSpline(x2, col, bc_type="natural")(q, d2)


def test_bicubic_matches_scipy_tensor_product():
    maps, data = _bicubics()
    rng = np.random.default_rng(6)
    for m, (x1, x2, y) in zip(maps, data):
        pts = np.stack([rng.uniform(x1[0], x1[-1], 6), rng.uniform(x2[0], x2[-1], 6)], -1)
        nodes = np.stack(np.meshgrid(x1, x2, indexing="ij"), -1).reshape(-1, 2)
        f_all, g_all, h_all = _call_each(m, jnp.asarray(np.concatenate([pts, nodes])))  # one call
        for k, (p, q) in enumerate(pts):
            f, g, h = f_all[k], g_all[k], h_all[k]
            ref = lambda d1, d2: _bicubic_scipy(x1, x2, y, p, q, d1, d2)
            np.testing.assert_allclose(f, ref(0, 0), atol=1e-12)
            np.testing.assert_allclose(g, [ref(1, 0), ref(0, 1)], atol=1e-11)
            np.testing.assert_allclose(h, [[ref(2, 0), ref(1, 1)], [ref(1, 1), ref(0, 2)]], atol=1e-10)
        # exact at the nodes
        f = f_all[len(pts) :].reshape(len(x1), len(x2))
        np.testing.assert_allclose(f, y, atol=1e-13)


@jax.jit
def _composed_and_autodiff(m, x):
    """The composed map and autodiff of the outer map's value at A x + b (one compile per map)."""
    plain = lambda z: m.outer.value((m.matrix[0] @ z + m.offset[0])[None])[0]
    return m(x), plain(x), jax.grad(plain)(x), jax.hessian(plain)(x)


def test_composed_chain_rule():
    """Composed = outer(A x + b): against autodiff of the outer map's value at the inner variables."""
    for m in (_composed()[0][1], _composed()[1][0]):
        x = jnp.linspace(-0.5, 0.7, m.matrix[0].shape[1])
        (f, g, h), f_ref, g_ref, h_ref = _composed_and_autodiff(m, x)
        np.testing.assert_allclose(f, f_ref, rtol=1e-14)
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(h, h_ref, rtol=1e-11, atol=1e-12)
    # the Affine-inner form equals the matrix form
    xk = np.linspace(-3, 3, 13)
    s = NaturalCubicSpline("u", xk, np.tanh(xk))
    m1 = Composed(s, Affine(["q2", "q1"], [0.25, 0.75], 0.1))
    m2 = Composed(s, [[0.25, 0.75]], [0.1], ("q2", "q1"))
    x = jnp.asarray([0.3, -0.2])
    for u, v in zip(_call(m1, x), _call(m2, x)):
        np.testing.assert_allclose(u, v, rtol=1e-15)


# ------------------------------------------------------------------------------------------------
# fits
# ------------------------------------------------------------------------------------------------


def test_spline_fit_of_sin_on_a_0p01_grid():
    """Natural spline of sin on [-2, 2], step 0.01 (the seed's pre-modelling step).

    Away from the ends (|x| <= 1.8) the natural end condition's boundary layer has decayed and
    the classical O(h⁴), O(h³), O(h²) bounds hold: |e| <= 5/384 h⁴ = 1.3e-10, |e'| <= h³/24 = 4.2e-8,
    |e''| <= 3/8 h² = 3.8e-5 (max |sin⁽⁴⁾| = 1).  Sin has curvature at ±2, the natural spline none,
    so the error is larger at the very ends: it is bounded there by h² |f''(end)| / 2.
    """
    x = np.round(np.arange(-200, 201) * 0.01, 12)
    s = NaturalCubicSpline.fit("q", x[::-1], np.sin(x[::-1]))  # unsorted input is sorted
    xs = np.linspace(-2.0, 2.0, 8001)
    f, g, h = jax.jit(jax.vmap(lambda v: s(v[None])))(jnp.asarray(xs))
    inner = np.abs(xs) <= 1.8
    assert np.abs(f - np.sin(xs))[inner].max() < 1e-10
    assert np.abs(g[:, 0] - np.cos(xs))[inner].max() < 4.2e-8
    assert np.abs(h[:, 0, 0] + np.sin(xs))[inner].max() < 3.8e-5
    assert np.abs(f - np.sin(xs)).max() < 0.5 * 0.01**2 * np.sin(2.0)
    # sin on [0, π] has zero curvature at the ends: the bound holds everywhere
    x = np.linspace(0, np.pi, 315)
    s = NaturalCubicSpline.fit("q", x, np.sin(x))
    xs = np.linspace(0, np.pi, 4001)
    f = _call_each(s, jnp.asarray(xs)[:, None])[0]
    assert np.abs(f - np.sin(xs)).max() < 5 / 384 * (x[1] - x[0]) ** 4


def test_smoothing_spline_fit():
    rng = np.random.default_rng(7)
    x = np.sort(rng.uniform(0, 2 * np.pi, 80))
    y = np.sin(x) + 0.05 * rng.normal(size=80)
    for lam in (1e-3, "gcv"):
        s = NaturalCubicSpline.fit("q", x, y, smoothing=lam)
        ref = make_smoothing_spline(x, y, lam=None if lam == "gcv" else lam)
        xs = np.linspace(x[0], x[-1], 500)
        f = _call_each(s, jnp.asarray(xs)[:, None])[0]
        np.testing.assert_allclose(f, ref(xs), atol=1e-9)  # the same natural cubic spline
    # smoothing removes most of the noise
    assert np.sqrt(np.mean((f - np.sin(xs)) ** 2)) < 0.03


def test_fourier_fit_recovers_periodic_function():
    x = np.linspace(-1.0, 2.0, 301)
    w = 2.3
    y = 0.4 + 1.2 * np.cos(w * x) - 0.3 * np.sin(w * x) + 0.1 * np.cos(2 * w * x) + 0.05 * np.sin(3 * w * x)
    m = Fourier.fit("q", x, y, 3)  # ω fitted too
    np.testing.assert_allclose(m.omega, [w], rtol=1e-10)
    np.testing.assert_allclose(m.a0, [0.4], atol=1e-9)
    np.testing.assert_allclose(m.a[0], [1.2, 0.1, 0.0], atol=1e-9)
    np.testing.assert_allclose(m.b[0], [-0.3, 0.0, 0.05], atol=1e-9)
    np.testing.assert_allclose([m.lower[0], m.upper[0]], [-1.0, 2.0])
    # fixed ω: linear least squares, exact
    m = Fourier.fit("q", x, y, 3, omega=w)
    np.testing.assert_allclose(m.a[0], [1.2, 0.1, 0.0], atol=1e-12)
    # a smooth non-periodic function (like Andrews' joint angles): few harmonics fit it closely
    y = np.exp(0.5 * x) * np.sin(x)
    m = Fourier.fit("q", x, y, 4)
    f = _call_each(m, jnp.asarray(x)[:, None])[0]
    assert np.abs(f - y).max() < 1e-4
    with pytest.raises(ValueError, match="cannot determine"):
        Fourier.fit("q", x[:5], y[:5], 3)


def test_polynomial_fit_reproduces_a_polynomial():
    rng = np.random.default_rng(8)
    x = rng.uniform(-1, 1, size=(60, 2))
    y = 0.3 - x[:, 0] + 2 * x[:, 0] * x[:, 1] ** 2 + 0.5 * x[:, 1] ** 3
    m = Polynomial.fit(("a", "b"), x, y, 3)
    xt = rng.uniform(-1, 1, size=(10, 2))
    yt = 0.3 - xt[:, 0] + 2 * xt[:, 0] * xt[:, 1] ** 2 + 0.5 * xt[:, 1] ** 3
    f = _call_each(m, jnp.asarray(xt))[0]
    np.testing.assert_allclose(f, yt, atol=1e-12)
    np.testing.assert_allclose(m.lower[0], x.min(0))
    np.testing.assert_allclose(m.upper[0], x.max(0))


def test_bicubic_fit_of_a_smooth_function():
    """sin(x1) cos(x2) + 0.1 x1 x2² on a 41 x 41 grid (step 0.05): O(h⁴) away from the edges."""
    fn = lambda a, b: np.sin(a) * np.cos(b) + 0.1 * a * b**2
    x1, x2 = np.linspace(-1, 1, 41), np.linspace(0, 2, 41)
    m = BicubicSpline.fit(("a", "b"), x1[::-1], x2, fn(x1[::-1, None], x2[None]))
    p = np.random.default_rng(9).uniform([-1, 0], [1, 2], (400, 2))
    f = _call_each(m, jnp.asarray(p))[0]
    err = np.abs(f - fn(p[:, 0], p[:, 1]))
    inner = (np.abs(p[:, 0]) < 0.7) & (np.abs(p[:, 1] - 1) < 0.7)
    assert err[inner].max() < 2e-7
    # natural edges: an O(h²) boundary layer, |e| <= h² max|∂²f| / 2 with max|∂²f| <= 1.05 here
    assert err.max() < 0.5 * 0.05**2 * 1.05


# ------------------------------------------------------------------------------------------------
# out-of-range policies
# ------------------------------------------------------------------------------------------------


def _outside_cases():
    x = np.linspace(-1.0, 1.0, 9)
    return {
        "spline": (lambda p: NaturalCubicSpline("q", x, np.sin(2 * x), p), jnp.asarray([1.5])),
        "fourier": (lambda p: Fourier("q", 0.1, [0.5, 0.2], [0.3, -0.1], 1.3, p, -1.0, 1.0), jnp.asarray([1.5])),
        "polynomial": (
            lambda p: Polynomial(("q", "r"), [[1, 0], [1, 2], [0, 3]], [0.5, 1.0, -0.7], p, [-1, -1], [1, 1]),
            jnp.asarray([0.3, -1.5]),
        ),
        "bicubic": (
            lambda p: BicubicSpline(("q", "r"), x, x[:5] * 2 + 1, np.outer(np.sin(x), np.cos(x[:5])), p),
            jnp.asarray([1.5, 0.2]),
        ),
    }


@pytest.mark.parametrize("family", ["spline", "fourier", "polynomial", "bicubic"])
def test_policy_error_raises_under_jit_and_vmap(family):
    make, x_out = _outside_cases()[family]
    m = make("error")
    inside = jnp.zeros_like(x_out) + 0.1 if family != "bicubic" else jnp.asarray([0.1, 0.5])
    fn = jax.jit(lambda mm, x: mm(x))
    fn(m, inside)  # fine inside
    with pytest.raises(RUNTIME_ERRORS, match="outside the fitted range"):
        jax.block_until_ready(fn(m, x_out))
    with pytest.raises(eqx.EquinoxRuntimeError, match="outside the fitted range"):
        jax.block_until_ready(eqx.filter_jit(lambda mm, x: mm(x))(m, x_out))
    batch = jnp.stack([inside, x_out])
    with pytest.raises(RUNTIME_ERRORS, match="outside the fitted range"):
        jax.block_until_ready(jax.jit(jax.vmap(lambda x: m(x)))(batch))


@pytest.mark.parametrize("family", ["spline", "fourier", "polynomial", "bicubic"])
def test_policy_clamp_nan(family):
    make, x_out = _outside_cases()[family]
    lower = {"spline": [-1.0], "fourier": [-1.0], "polynomial": [-1.0, -1.0], "bicubic": [-1.0, -1.0]}[family]
    upper = {"spline": [1.0], "fourier": [1.0], "polynomial": [1.0, 1.0], "bicubic": [1.0, 1.0]}[family]
    x_clip = jnp.clip(x_out, jnp.asarray(lower), jnp.asarray(upper))
    out = np.asarray(x_out != x_clip)
    f_in, g_in, h_in = _call(make("extrapolate"), x_clip)
    f, g, h = jax.jit(lambda x: make("clamp")(x))(x_out)
    np.testing.assert_allclose(f, f_in, rtol=1e-14)
    # the clamped function: zero derivative in every clamped coordinate
    np.testing.assert_array_equal(np.asarray(g)[out], 0.0)
    np.testing.assert_allclose(np.asarray(g)[~out], np.asarray(g_in)[~out], rtol=1e-14)
    np.testing.assert_array_equal(np.asarray(h)[out], 0.0)
    np.testing.assert_array_equal(np.asarray(h)[:, out], 0.0)
    f, g, h = jax.jit(lambda x: make("nan")(x))(x_out)
    assert np.isnan(f) and np.all(np.isnan(g)) and np.all(np.isnan(h))
    f, g, h = _call(make("nan"), x_clip)
    assert np.isfinite(f)


def test_policy_extrapolate():
    """Spline: linear continuation with the end slope; bicubic: same per coordinate; Fourier: the series."""
    x = np.linspace(-1.0, 1.0, 9)
    s = NaturalCubicSpline("q", x, np.sin(2 * x), "extrapolate")
    cs = CubicSpline(x, np.sin(2 * x), bc_type="natural")
    for xo, xe in [(1.7, 1.0), (-2.5, -1.0)]:
        f, g, h = s(jnp.asarray([xo]))
        np.testing.assert_allclose(f, cs(xe) + cs(xe, 1) * (xo - xe), rtol=1e-13)
        np.testing.assert_allclose(g[0], cs(xe, 1), rtol=1e-13)
        assert h[0, 0] == 0.0
        # the continuation is what autodiff sees too
        np.testing.assert_allclose(jax.grad(lambda z: s.value(z[None, None])[0])(xo), g[0], rtol=1e-13)
    fo = Fourier("q", 0.1, [0.5], [0.3], 1.3, "extrapolate", -1.0, 1.0)
    np.testing.assert_allclose(fo(jnp.asarray([3.0]))[0], 0.1 + 0.5 * np.cos(3.9) + 0.3 * np.sin(3.9), rtol=1e-14)
    x2 = np.linspace(0.0, 2.0, 6)
    y = np.outer(np.sin(x), np.cos(x2))
    b = BicubicSpline(("q", "r"), x, x2, y, "extrapolate")
    p, q = 1.4, 0.7  # x1 beyond its end: f = f(1, q) + (p - 1) ∂f/∂x1(1, q)
    f, g, h = b(jnp.asarray([p, q]))
    ref = lambda d1, d2: _bicubic_scipy(x, x2, y, 1.0, q, d1, d2)
    np.testing.assert_allclose(f, ref(0, 0) + (p - 1) * ref(1, 0), rtol=1e-12)
    np.testing.assert_allclose(g, [ref(1, 0), ref(0, 1) + (p - 1) * ref(1, 1)], rtol=1e-12, atol=1e-13)
    assert h[0, 0] == 0.0


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="strictly increasing"):
        NaturalCubicSpline("q", [0.0, 1.0, 1.0], [0, 1, 2])
    with pytest.raises(ValueError, match="strictly increasing"):
        NaturalCubicSpline.fit("q", [0.0, 1.0, 1.0], [0, 1, 2])
    with pytest.raises(ValueError, match="policy"):
        NaturalCubicSpline("q", [0.0, 1.0], [0, 1], policy="wrap")
    with pytest.raises(ValueError, match="exactly 1"):
        Fourier(("q", "r"), 0.0, [1.0], [0.0], 1.0)
    with pytest.raises(ValueError, match="shape"):
        BicubicSpline(("q", "r"), [0, 1, 2], [0, 1], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="exponents"):
        Polynomial(("q", "r"), [[1, 0, 0]], [1.0])
    with pytest.raises(ValueError, match="matrix"):
        Composed(NaturalCubicSpline("u", [0.0, 1.0], [0, 1]), [[1.0, 2.0]], None, ("q",))
    b = mbjax.ModelBuilder(["q"])
    with pytest.raises(ValueError, match="not one of"):
        b.add_body("a", map=NaturalCubicSpline("p", [0.0, 1.0], [0, 1]))


# ------------------------------------------------------------------------------------------------
# gradients with respect to the map parameters
# ------------------------------------------------------------------------------------------------


@pytest.mark.extended
def test_parameter_gradients_check_grads():
    """f, ∇f, H are differentiable w.r.t. coefficients, knot values, knots and ω."""
    x = jnp.asarray([[0.37]])
    s, _ = _splines()
    s = s[0]

    def spline_out(knots, values):
        m = eqx.tree_at(lambda mm: (mm.knots, mm.values), s, (knots, values))
        f, g, h = m.local(x)
        return jnp.concatenate([f, g.ravel(), h.ravel()])

    check_grads(spline_out, (s.knots, s.values), order=2, modes=("rev",), eps=1e-6)

    fo = _fouriers()[0]

    def fourier_out(a0, a, b, w):
        m = eqx.tree_at(lambda mm: (mm.a0, mm.a, mm.b, mm.omega), fo, (a0, a, b, w))
        f, g, h = m.local(x)
        return jnp.concatenate([f, g.ravel(), h.ravel()])

    check_grads(fourier_out, (fo.a0, fo.a, fo.b, fo.omega), order=1, modes=("fwd", "rev"))

    po = _polynomials()[0]
    xp = jnp.asarray([[0.3, -0.4, 0.8]])
    check_grads(
        lambda c: jnp.concatenate([v.ravel() for v in eqx.tree_at(lambda mm: mm.coefficients, po, c).local(xp)]),
        (po.coefficients,),
        order=1,
        modes=("rev",),
    )

    bc = _bicubics()[0][0]
    xb = jnp.asarray([[0.1, 0.4]])
    check_grads(
        lambda v: jnp.concatenate([u.ravel() for u in eqx.tree_at(lambda mm: mm.values, bc, v).local(xb)]),
        (bc.values,),
        order=1,
        modes=("rev",),
    )

    co = _composed()[0][1]
    xc = jnp.asarray([[0.1, 0.2, -0.3]])
    check_grads(
        lambda a, y: jnp.concatenate(
            [u.ravel() for u in eqx.tree_at(lambda mm: (mm.matrix, mm.outer.values), co, (a, y)).local(xc)]
        ),
        (co.matrix, co.outer.values),
        order=1,
        modes=("rev",),
    )


# ------------------------------------------------------------------------------------------------
# maps inside a Model
# ------------------------------------------------------------------------------------------------


def _model_with_maps():
    """A branched 6-body tree whose joints are spline, bicubic, Fourier, polynomial and composed maps."""
    rng = np.random.default_rng(11)
    xk = np.linspace(-2, 2, 41)
    grid1, grid2 = np.linspace(-2, 2, 9), np.linspace(-2, 2, 7)
    maps = [
        NaturalCubicSpline("q0", xk, np.sin(xk), "extrapolate"),
        BicubicSpline(("q0", "q2"), grid1, grid2, rng.normal(size=(9, 7)) * 0.3, "extrapolate"),
        Fourier("q1", 0.1, [0.3, 0.2], [0.1, -0.2], 1.3),
        Polynomial(("q0", "q1", "q2"), [[1, 0, 0], [0, 2, 1], [1, 1, 1]], [0.5, 0.2, -0.3]),
        Composed(NaturalCubicSpline("u", xk, np.tanh(xk), "extrapolate"), Affine(["q1", "q2"], [0.5, 0.5])),
        NaturalCubicSpline("q1", np.linspace(-3, 3, 17), np.cos(np.linspace(-3, 3, 17)), "extrapolate"),
    ]
    b = mbjax.ModelBuilder(["q0", "q1", "q2"], gravity=[0, -9.81, 0])
    parent = "ground"
    for i, m in enumerate(maps):
        axis = rng.normal(size=3)
        b.add_body(
            f"b{i}",
            parent=parent if i != 4 else "b1",
            joint="prismatic" if i % 3 == 0 else "revolute",
            axis=axis / np.linalg.norm(axis),
            map=m,
            translation=rng.normal(size=3) * 0.2,
            mass=1.0,
            inertia=np.diag([0.01, 0.02, 0.015]),
        )
        parent = f"b{i}"
    return b.build()


@jax.jit
def _autodiff_pose_derivatives(model, q):
    """Poses, jacfwd and hessian of ``body_poses`` from one trace (one compile, not three)."""
    jac = lambda x: jax.jacfwd(mbjax.body_poses, argnums=1)(model, x)
    hess, jac_q = jax.jacfwd(lambda x: (jac(x), jac(x)), has_aux=True)(q)
    return mbjax.body_poses(model, q), jac_q, hess


@pytest.mark.extended
def test_maps_inside_a_model_pose_derivatives_match_autodiff():
    model = _model_with_maps()
    assert sum(m.n_maps for m in model.maps) == model.n_bodies
    assert len(model.maps) == 5  # the two splines share one stack
    q = jnp.asarray([0.4, -0.7, 0.25])
    d = jax.jit(mbjax.pose_derivatives)(model, q)
    pose, jac, hess = _autodiff_pose_derivatives(model, q)
    np.testing.assert_allclose(d.pose, pose, atol=1e-14)
    np.testing.assert_allclose(d.d_pose, jac, atol=1e-12)
    np.testing.assert_allclose(d.dd_pose, hess, atol=1e-11)
    # batched joint values equal looped ones
    qs = jnp.asarray(np.random.default_rng(12).uniform(-0.9, 0.9, (4, 3)))
    batched = jax.jit(jax.vmap(mbjax.joint_values, in_axes=(None, 0)))(model, qs)
    single = jax.jit(mbjax.joint_values)
    for k in range(4):
        for u, v in zip(batched, single(model, qs[k])):
            np.testing.assert_allclose(u[k], v, rtol=1e-14, atol=1e-15)


_local = jax.jit(lambda m, x: m.local(x))


def test_float32_runs():
    maps = [_splines()[0][0], _fouriers()[0], _polynomials()[0], _bicubics()[0][0], _composed()[1][0]]
    for m in maps:
        m32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, m)
        x = jnp.full((1, m.width), 0.25, jnp.float32)
        f, g, h = _local(m32, x)
        assert f.dtype == g.dtype == h.dtype == jnp.float32
        f64 = _local(m, x.astype(jnp.float64))[0]
        np.testing.assert_allclose(f, f64, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------------
# property tests
# ------------------------------------------------------------------------------------------------


@st.composite
def _knots_and_values(draw):
    n = draw(st.integers(2, 12))
    gaps = draw(hnp.arrays(np.float64, n - 1, elements=st.floats(0.05, 2.0)))
    x0 = draw(st.floats(-5, 5))
    x = x0 + np.concatenate([[0.0], np.cumsum(gaps)])
    y = draw(hnp.arrays(np.float64, n, elements=st.floats(-10, 10)))
    return x, y


_at_knots = jax.jit(lambda s, x: jax.vmap(lambda v: s(v[None]))(x))


@settings(max_examples=10, deadline=None)
@given(_knots_and_values())
def test_property_spline_interpolates_at_knots(data):
    x, y = data
    s = NaturalCubicSpline("q", x, y)
    # jitted per knot count (eager dispatch recompiles every primitive per new shape: 5x slower)
    f, _, h = _at_knots(s, jnp.asarray(x))
    np.testing.assert_allclose(f, y, atol=1e-12 * max(1.0, np.abs(y).max()))
    # natural end conditions
    scale = max(1.0, np.abs(y).max()) / min(1.0, np.diff(x).min()) ** 2
    np.testing.assert_allclose(np.asarray(h)[np.array([0, -1]), 0, 0], 0.0, atol=1e-11 * scale)


def _single(m, x):
    value = lambda z: m.value(z[None])[0]
    return m.local(x[None]), jax.grad(value)(x), jax.hessian(value)(x)


_bicubic_check = jax.jit(_single)


@pytest.mark.extended
@settings(max_examples=10, deadline=None)
@given(
    hnp.arrays(np.float64, 4, elements=st.floats(-2, 2)),
    hnp.arrays(np.float64, (2,), elements=st.floats(-0.95, 0.95)),
)
def test_property_bicubic_interpolates_and_matches_autodiff(corner, x):
    g1 = np.linspace(-1, 1, 4)
    vals = np.outer(np.polyval(corner[:2], g1), np.polyval(corner[2:], g1)) + np.outer(g1, g1**2)
    b = BicubicSpline(("q", "r"), g1, g1, vals)
    (f, g, h), g_ad, h_ad = _bicubic_check(b, jnp.asarray(x))
    np.testing.assert_allclose(g[0], g_ad, atol=1e-12)
    np.testing.assert_allclose(h[0], h_ad, atol=1e-11)
    # separable data of degree <= 1 per axis is reproduced exactly (natural spline of a line)
    lin = np.outer(corner[0] + corner[1] * g1, corner[2] + corner[3] * g1)
    b = BicubicSpline(("q", "r"), g1, g1, lin)
    ref = (corner[0] + corner[1] * x[0]) * (corner[2] + corner[3] * x[1])
    np.testing.assert_allclose(_bicubic_check(b, jnp.asarray(x))[0][0][0], ref, atol=1e-12)
