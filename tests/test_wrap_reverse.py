"""Reverse mode (``jax.grad``, ``jacrev``) through wrapped paths (:mod:`mbjax.wrapping._jacobian_rule`).

The iterative surfaces run ``while_loop`` s, which JAX cannot reverse; their JVP rule is their own
forward-mode Jacobian, and that rule's own rule takes forward-over-forward columns (reverse mode of
moment arms and of muscle forces, second derivatives of the lengths).  Independent references: the
closed-form moment arm of a string around a hinge cylinder (−R); forward mode (``jacfwd``) of the
same lengths; central differences of the lengths in a model parameter (the cylinder's radius, a
path point), and of moment arms and muscle forces; and the surfaces' raw forward mode, segment by
segment, for the cylinder, ellipsoid and torus.
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
from mbjax.muscles import PathPoint, moment_arms, muscle_forces, muscle_lengths, with_muscles
from mbjax.muscles.paths import build_paths
from mbjax.wrapping import PathWrap, WrapObject
from mbjax.wrapping._jacobian_rule import with_jacobian_rule
from mbjax.wrapping.objects import KINDS, xyz_body_fixed
from mbjax.wrapping.surfaces import SURFACES

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import needs_arm26  # noqa: E402
from test_wrap_path import A, C, R, _closed_form, _hinge_model  # noqa: E402


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


def _central(f, x, h=1e-6):
    """Central differences of ``f`` (array out) in every component of ``x``: ``(*x.shape, *f.shape)``."""
    x = np.asarray(x, float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(jnp.asarray(x + e))) - np.asarray(f(jnp.asarray(x - e)))) / (2 * h))
    return np.stack(cols).reshape(x.shape + cols[0].shape)


def _offset_hinge(muscle: bool = False):
    """A string from ground around a cylinder on the link that is *not* centred on the hinge (so the
    moment arm changes with the angle), optionally a Thelen muscle with a compliant tendon."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    cyl = WrapObject("cyl", "WrapCylinder", "link", (R, 0.1, 0.0), xyz_body_fixed((0.0, 0.0, 0.7)),
                     (0.012, -0.008, 0.01))
    extra = {}
    if muscle:
        extra = dict(kinds={"m": "Thelen2003Muscle"},
                     parameters={"m": {"max_isometric_force": 500.0, "optimal_fiber_length": 0.12,
                                       "tendon_slack_length": 0.33, "pennation_angle_at_optimal": 0.1}})
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [A, 0.0, 0.0]), PathPoint("link", [C, 0.0, 0.025])]},
                        wrap_objects=[cyl], path_wraps={"m": [PathWrap("cyl")]}, **extra)
    return with_muscles(model, paths)


def _location(m):
    return m.muscles.location


def _wraps(model, theta: float) -> bool:
    """The path of :func:`_offset_hinge` is longer than its straight line: it wraps."""
    straight = np.linalg.norm([C * np.cos(theta) - A, C * np.sin(theta), 0.025])
    return float(muscle_lengths(model, jnp.asarray([theta]))[0]) > straight + 1e-4


def _three_routes(model, f, loc):
    """At two wrapped poses θ (2.85, 2.95) of ``model``: the gradients of ``f(q, path points)`` in the pose
    and the path points by ``jax.grad``, by ``jax.jacfwd`` and by central differences."""
    rev = jax.jit(jax.grad(f, argnums=(0, 1)))
    fwd = jax.jit(jax.jacfwd(f, argnums=(0, 1)))
    plain = jax.jit(f)
    for theta in (2.85, 2.95):
        q = jnp.asarray([theta])
        assert _wraps(model, theta)
        yield (tuple(np.asarray(x) for x in rev(q, loc)), tuple(np.asarray(x) for x in fwd(q, loc)),
               (_central(lambda x: plain(x, loc), q), _central(lambda lc: plain(q, lc), loc)))


def test_grad_of_wrapped_moment_arms_in_pose_radius_and_path_points():
    """Reverse over forward: ``jax.grad`` of moment arms of a cylinder-wrapped path.  Closed form
    on the centred hinge (R_arm = -radius: d/dradius = -1, d/dθ = 0); on an off-centre cylinder,
    equal to ``jacfwd`` and to central differences of the moment arms, in the pose and in a path
    point."""
    hinge = _hinge_model("link")
    arm = jax.jit(jax.grad(lambda m, q: moment_arms(m, q)[0, 0], argnums=(0, 1)))
    for theta in (2.8, 3.0):  # wrapped (past the onset, 2.72)
        g_model, g_q = arm(hinge, jnp.asarray([theta]))
        np.testing.assert_allclose(np.asarray(g_model.muscles.wraps.dimensions)[0, 0], -1.0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(g_q), 0.0, atol=1e-12)

    model = _offset_hinge()
    loc = _location(model)

    def arm_at(x, lc):
        return moment_arms(eqx.tree_at(_location, model, lc), x)[0, 0]

    for (r_q, r_loc), (f_q, f_loc), (fd_q, fd_loc) in _three_routes(model, arm_at, loc):
        np.testing.assert_allclose(r_q, f_q, rtol=0, atol=1e-14)
        np.testing.assert_allclose(r_loc, f_loc, rtol=0, atol=1e-13)
        assert abs(r_q[0]) > 1e-3 and np.abs(r_loc).max() > 0.01  # the off-centre moment arm varies
        np.testing.assert_allclose(r_q, fd_q, rtol=0, atol=1e-8)
        np.testing.assert_allclose(r_loc, fd_loc, rtol=0, atol=1e-8)


@pytest.mark.extended  # ~60 s of second-derivative compiles; CI: test_grad_of_wrapped_moment_arms_in_pose_radius_and_path_points
def test_grad_of_muscle_forces_with_speed_in_path_points_and_pose():
    """``muscle_forces`` with q̇ ≠ 0 reads the moment arms (fibre speed -Rᵀq̇): its ``jax.grad`` in
    the path points and the pose of a cylinder-wrapped Thelen muscle equals forward mode and
    central differences."""
    model = _offset_hinge(muscle=True)
    loc = _location(model)
    qd, act = jnp.asarray([-0.8]), jnp.asarray([0.5])

    def force(x, lc):
        return muscle_forces(eqx.tree_at(_location, model, lc), x, qd, act)[0]

    for (r_q, r_loc), (f_q, f_loc), (fd_q, fd_loc) in _three_routes(model, force, loc):
        scale = np.abs(r_loc).max()
        assert scale > 100.0  # N/m
        np.testing.assert_allclose(r_q, f_q, rtol=1e-12, atol=0)
        np.testing.assert_allclose(r_loc, f_loc, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(r_q, fd_q, rtol=1e-6)
        np.testing.assert_allclose(r_loc, fd_loc, rtol=0, atol=1e-6 * scale)


@pytest.mark.extended  # minutes of compilation per program (second derivatives through ellipsoids)
@needs_arm26
def test_arm26_grad_of_moment_arms_and_muscle_forces_equals_forward_mode_and_differences():
    """arm26 (cylinders and ellipsoids): ``jax.grad`` of a weighted sum of moment arms in the pose
    equals ``jacfwd`` and central differences at two poses; ``jax.grad`` of muscle forces with
    q̇ ≠ 0 in the path points equals their JVP and central differences along a random direction."""
    model = mbjax.models.load("arm26")
    rng = np.random.default_rng(7)
    w = jnp.asarray(rng.normal(size=(2, 6)))

    def arms(x):
        return jnp.sum(w * moment_arms(model, x))

    rev, fwd, plain = jax.jit(jax.grad(arms)), jax.jit(jax.jacfwd(arms)), jax.jit(arms)
    for q in rng.uniform([-0.5, 0.1], [1.2, 2.2], (2, 2)):
        r = np.asarray(rev(jnp.asarray(q)))
        assert np.abs(r).max() > 1e-3
        np.testing.assert_allclose(r, np.asarray(fwd(jnp.asarray(q))), rtol=0, atol=1e-14)
        np.testing.assert_allclose(r, _central(plain, q), rtol=0, atol=1e-8)

    loc = _location(model)
    q, qd, act = jnp.asarray([0.3, 1.2]), jnp.asarray([0.5, -0.7]), jnp.full(6, 0.4)

    def force(lc):
        return jnp.sum(muscle_forces(eqx.tree_at(_location, model, lc), q, qd, act))

    g = np.asarray(jax.jit(jax.grad(force))(loc))
    v = jnp.asarray(rng.normal(size=loc.shape))
    along = float(jax.jit(lambda lc, t: jax.jvp(force, (lc,), (t,))[1])(loc, v))
    h = 1e-7
    f = jax.jit(force)
    fd = (float(f(loc + h * v)) - float(f(loc - h * v))) / (2 * h)
    assert abs(along) > 100.0
    np.testing.assert_allclose(float(np.sum(g * np.asarray(v))), along, rtol=1e-10)
    np.testing.assert_allclose(along, fd, rtol=1e-6)


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
