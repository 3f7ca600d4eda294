"""Reverse mode (``jax.grad``, ``jacrev``) through wrapped paths (:mod:`mbjax.wrapping._jacobian_rule`).

The iterative surfaces run ``while_loop`` s, which JAX cannot reverse; their JVP rule is their own
forward-mode Jacobian.  Independent references: the closed-form moment arm of a string around a
hinge cylinder (−R); forward mode (``jacfwd``) of the same lengths; central differences of the
lengths in a model parameter (the cylinder's radius, a path point); and the surfaces' raw forward
mode, segment by segment, for the cylinder, ellipsoid and torus.
"""

from __future__ import annotations

import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.muscles import muscle_lengths
from mbjax.wrapping._jacobian_rule import with_jacobian_rule
from mbjax.wrapping.objects import KINDS
from mbjax.wrapping.surfaces import SURFACES

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import needs_arm26  # noqa: E402
from test_wrap_path import R, _closed_form, _hinge_model  # noqa: E402


def test_grad_of_a_wrapped_length_is_the_closed_form_moment_arm():
    model = _hinge_model("link")
    thetas = np.linspace(2.0, 3.1, 9)
    _, onset = _closed_form(thetas)
    grad = jax.vmap(jax.grad(lambda th: muscle_lengths(model, th)[0]))(jnp.asarray(thetas[:, None]))[:, 0]
    wrapped = thetas > onset + 1e-3
    assert wrapped.sum() >= 3 and (~wrapped).sum() >= 3
    np.testing.assert_allclose(np.asarray(grad)[wrapped], R, atol=1e-13)  # dL/dθ = R while wrapped


def test_grad_in_model_parameters_equals_differences():
    """d(length)/d(radius) and d(length)/d(path point) by reverse mode vs central differences."""
    model = _hinge_model("link")
    q = jnp.asarray([2.9])
    obj = model.muscles.wraps

    def radius_leaf(m):
        return m.muscles.wraps.dimensions

    def length_at(m):
        return muscle_lengths(m, q)[0]

    g = jax.grad(length_at)(model)
    g_dims = np.asarray(radius_leaf(g))
    h = 1e-6
    dims = np.asarray(obj.dimensions)
    plus = eqx.tree_at(radius_leaf, model, jnp.asarray(dims).at[0, 0].add(h))
    minus = eqx.tree_at(radius_leaf, model, jnp.asarray(dims).at[0, 0].add(-h))
    fd = (float(length_at(plus)) - float(length_at(minus))) / (2 * h)
    assert abs(g_dims[0, 0] - fd) < 1e-7 and abs(fd) > 0.1  # a wrapped length grows with the radius
    loc = np.asarray(model.muscles.location)
    g_loc = np.asarray(g.muscles.location)
    for comp in range(3):
        shifted = [eqx.tree_at(lambda m: m.muscles.location, model,
                               jnp.asarray(loc).at[0, 1, comp].add(s)) for s in (h, -h)]
        fd = (float(length_at(shifted[0])) - float(length_at(shifted[1]))) / (2 * h)
        assert abs(g_loc[0, 1, comp] - fd) < 1e-7


@pytest.mark.extended
@needs_arm26
def test_arm26_jacrev_equals_differences():
    """arm26 wraps over cylinders and ellipsoids: reverse mode equals central differences of the
    lengths (forward mode = reverse mode to 1e-16 is the extended per-surface test's)."""
    model = mbjax.models.load("arm26")
    rng = np.random.default_rng(3)
    q = np.asarray(rng.uniform([-0.5, 0.1], [1.2, 2.2]))  # one pose: the vmapped program compiles for minutes
    rev = np.asarray(jax.jacrev(lambda x: muscle_lengths(model, x))(jnp.asarray(q)))  # (nm, nq)
    h = 1e-6
    stencil = np.concatenate([q + h * np.eye(2), q - h * np.eye(2)])
    lengths = np.asarray(jax.vmap(muscle_lengths, in_axes=(None, 0))(model, jnp.asarray(stencil)))
    fd = ((lengths[:2] - lengths[2:]) / (2 * h)).T
    assert np.abs(fd).max() > 0.01
    np.testing.assert_allclose(rev, fd, rtol=0, atol=1e-8)


def _segments(kind, n, rng):
    """End points on opposite sides of the surface (the straight segment crosses it), and its dimensions."""
    a = rng.uniform(0.5, 1.0, n) * np.where(rng.random(n) < 0.5, 1, -1)
    p1 = np.stack([0.12 * a, 0.15 + 0.05 * rng.random(n), rng.uniform(-0.03, 0.03, n)], -1)
    p2 = np.stack([-0.12 * a, -0.15 - 0.05 * rng.random(n), rng.uniform(-0.03, 0.03, n)], -1)
    dims = {"WrapCylinder": (0.05, 0.5, 0.0), "WrapEllipsoid": (0.05, 0.07, 0.04)}[kind]
    return jnp.asarray(p1), jnp.asarray(p2), jnp.broadcast_to(jnp.asarray(dims), (n, 3))


@pytest.mark.extended  # 25-85 s of compilation; the hinge and arm26 tests cover both kinds in the suite
@pytest.mark.parametrize("kind", ["WrapCylinder", "WrapEllipsoid"])
def test_surface_rule_gives_the_raw_forward_jacobian_in_reverse(kind):
    """Per segment: ``jacrev`` of the ruled surface equals ``jacfwd`` of the raw one (the loops' own
    forward mode) in the end points and the dimensions.  (The sphere is closed form and the torus
    differentiates after its loop: reverse mode needs no rule there, ``test_wrap_torus.py``.)"""
    n = 4
    p1, p2, dims = _segments(kind, n, np.random.default_rng(1))
    zeros = jnp.zeros(n, jnp.int32)
    raw = jax.vmap(SURFACES[KINDS.index(kind)], in_axes=(0, 0, 0, 0, 0, 0, None))

    def length(fn, a, b, d):
        out = fn(a, b, d, zeros, zeros, zeros, False)
        return jnp.where(out.wraps, out.length, 0.0) + jnp.sum(out.r1 + out.r2, -1)

    ruled = with_jacobian_rule(raw)
    assert np.all(np.asarray(raw(p1, p2, dims, zeros, zeros, zeros, False).wraps))
    fwd = jax.jacfwd(lambda *x: length(raw, *x), argnums=(0, 1, 2))(p1, p2, dims)
    rev = jax.jacrev(lambda *x: length(ruled, *x), argnums=(0, 1, 2))(p1, p2, dims)
    for r, f in zip(rev, fwd):
        assert np.all(np.isfinite(np.asarray(r))) and np.abs(np.asarray(f)).max() > 0.1
        np.testing.assert_allclose(np.asarray(r), np.asarray(f), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(length(ruled, p1, p2, dims)), np.asarray(length(raw, p1, p2, dims)))


@pytest.mark.extended  # ~20 s idle, 60 s on a loaded machine: two compilations of L-BFGS's step
def test_fit_recovers_a_wrap_radius_by_reverse_mode_gradients():
    """mbjax.analysis.identify.fit with optax's L-BFGS (jax.value_and_grad of a scalar loss through the wrap
    pass) recovers the cylinder radius from lengths measured at wrapped and unwrapped poses."""
    from mbjax.analysis import identify as idf

    truth = _hinge_model("link")
    thetas = jnp.asarray(np.linspace(2.0, 3.1, 12)[:, None])
    measured = jax.vmap(muscle_lengths, in_axes=(None, 0))(truth, thetas)[:, 0]

    def dims(m):
        return m.muscles.wraps.dimensions

    start = eqx.tree_at(dims, truth, dims(truth).at[0, 0].set(0.8 * R))

    def loss(m):
        lengths = jax.vmap(muscle_lengths, in_axes=(None, 0))(m, thetas)[:, 0]
        return 0.5 * jnp.sum((lengths - measured) ** 2)

    fitted, report = idf.fit(start, loss, dims, method="lbfgs", max_steps=100, tol=1e-14,
                             progress=False)
    assert abs(float(dims(fitted)[0, 0]) / R - 1.0) < 1e-6, report
    np.testing.assert_array_equal(np.asarray(dims(fitted))[0, 1:], np.asarray(dims(truth))[0, 1:])  # no say in L
