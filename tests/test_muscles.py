"""Muscle paths and the closed-form moment-arm matrix (Ehsani Eq. 149-195)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _trees import random_poses, random_tree

import mbjax
from mbjax.maps import Affine, FunctionMap
from mbjax.muscles import (
    ConditionalPathPoint,
    MovingPathPoint,
    PathPoint,
    body_wrenches,
    build_paths,
    moment_arms,
    moment_arms_autodiff,
    moment_arms_batched,
    moment_arms_block,
    moment_arms_sparse,
    muscle_lengths,
    path_points,
    path_state,
    with_muscles,
)


def _wiggle(p, x):
    return p[0] * jnp.sin(x[0]) + p[1] * x[0] * x[-1]


def random_paths(model, seed, n_muscles=6):
    rng = np.random.default_rng(seed)
    names = ("ground",) + model.body_names
    cs = model.coordinate_names
    out = {}
    for k in range(n_muscles):
        pts = []
        n_p = int(rng.integers(2, 7))
        for p in range(n_p):
            body = names[int(rng.integers(0, len(names)))]
            loc = rng.normal(size=3) * 0.1
            kind = rng.integers(0, 4) if p > 0 else 0
            # origin and insertion always active: a path of fewer than 2 active points is an error
            if kind == 1 and p < n_p - 1:
                pts.append(ConditionalPathPoint(body, loc, coordinate=cs[1], range=(-2.0, 2.0)))
            elif kind == 2:
                fx = Affine([cs[-1]], [0.05], 0.01)
                fz = FunctionMap(_wiggle, [cs[0], cs[-1]], jnp.asarray(rng.normal(size=2) * 0.05))
                pts.append(MovingPathPoint(body, loc, functions=(fx, None, fz)))
            else:
                pts.append(PathPoint(body, loc))
        out[f"m{k}"] = pts
    return with_muscles(model, out)


@eqx.filter_jit
def _all_routes(model, qs):
    one = lambda q: jnp.stack(
        [moment_arms_autodiff(model, q), moment_arms(model, q), moment_arms_block(model, q),
         moment_arms_sparse(model, q)]
    )
    return jax.vmap(one)(qs)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.extended)])
def test_moment_arms_equal_minus_dl_dq(seed):
    """Fast path, block form (Eq. 193), sparse form (Eq. 195) vs -jacfwd(L); L vs the one-hot reference geometry."""
    model = random_paths(random_tree(seed, n_bodies=6, n_coordinates=4), seed)
    qs = random_poses(seed + 10, 3, 4)
    out = _all_routes(model, qs)
    ref = out[:, :1]
    scale = max(float(jnp.max(jnp.abs(ref))), 1.0)
    assert jnp.max(jnp.abs(out[:, 1:] - ref)) < 1e-12 * scale
    assert jnp.max(jnp.abs(out[:, 2] - out[:, 3])) < 1e-13 * scale  # block (193) = sparse (195)
    if seed == 0:  # and a route without autodiff: central differences of the lengths
        h = 1e-6
        shifts = jnp.concatenate([jnp.eye(4) * h, -jnp.eye(4) * h]) + qs[0]
        lengths = eqx.filter_jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, shifts)
        fd = -(lengths[:4] - lengths[4:]) / (2 * h)
        assert jnp.max(jnp.abs(fd - out[0, 1])) < 1e-8


def test_virtual_work_of_point_forces():
    """δqᵀ R F = Σ_p F f_p · δx_p, with δx_p from finite differences of the world points."""
    model = random_paths(random_tree(7, n_bodies=5, n_coordinates=3, nonlinear=False), 7, n_muscles=4)
    q = random_poses(1, 1, 3)[0]
    rng = np.random.default_rng(0)
    forces = jnp.asarray(rng.uniform(10, 100, size=4))
    dq = jnp.asarray(rng.normal(size=3))
    h = 1e-6
    st = path_state(model, q)
    xp, _ = path_points(model, q + h * dq)
    xm, _ = path_points(model, q - h * dq)
    dx = (xp - xm) / (2 * h)
    work = jnp.einsum("m,mpa,mpa->", forces, st.force, dx)
    assert abs(dq @ moment_arms(model, q) @ forces - work) < 1e-7 * float(jnp.abs(work) + 1)


def test_body_wrenches_balance():
    """A muscle with both ends on ground-free bodies exerts zero net world force (Eq. 155-160)."""
    model = random_paths(random_tree(3, n_bodies=5, n_coordinates=3), 3)
    q = random_poses(2, 1, 3)[0]
    forces = jnp.arange(1.0, 7.0)
    f_o, m_o = body_wrenches(model, q, forces)
    poses = mbjax.body_poses(model, q)
    st = path_state(model, q)
    paths = model.muscles
    body = np.asarray(paths.body)
    # world resultant on the moving bodies = sum over points not on ground
    on_body = jnp.asarray(body >= 0)[..., None]
    total = jnp.einsum("m,mpa->a", forces, st.force * on_body)
    assert jnp.max(jnp.abs(jnp.einsum("bac,bc->a", poses[:, :3, :3], f_o) - total)) < 1e-12
    # moments about world origin agree too
    mom_pts = jnp.einsum("m,mpa->a", forces, jnp.cross(st.world, st.force) * on_body)
    mom_bodies = jnp.einsum("bac,bc->a", poses[:, :3, :3], m_o) + jnp.cross(
        poses[:, :3, 3], jnp.einsum("bac,bc->ba", poses[:, :3, :3], f_o)
    ).sum(0)
    assert jnp.max(jnp.abs(mom_pts - mom_bodies)) < 1e-12


def test_hand_derived_planar_moment_arm():
    """A string from a ground point to a point on a hinged link: r = d h sinφ / L by hand."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = with_muscles(
        b.build(), {"m": [PathPoint("ground", [0.3, 0.0, 0.0]), PathPoint("link", [0.0, 0.2, 0.0])]}
    )
    for th in np.linspace(-1.0, 1.0, 5):
        q = jnp.asarray([th])
        x = np.array([-0.2 * np.sin(th), 0.2 * np.cos(th)])
        length = np.hypot(x[0] - 0.3, x[1])
        # L² = h² + d² - 2 h d cos(π/2 + θ) = h² + d² + 2 h d sin θ → dL/dθ = h d cos θ / L
        expected = -0.3 * 0.2 * np.cos(th) / length
        assert abs(muscle_lengths(model, q)[0] - length) < 1e-15
        assert abs(moment_arms(model, q)[0, 0] - expected) < 1e-15


def test_conditional_point_switches():
    b = mbjax.ModelBuilder(["a"])
    b.add_body("link", axis=[0, 0, 1], map="a")
    pts = [
        PathPoint("ground", [0.0, 0.0, 0.0]),
        ConditionalPathPoint("link", [0.0, 0.1, 0.0], coordinate="a", range=(0.0, 1.0)),
        PathPoint("link", [0.2, 0.0, 0.0]),
    ]
    model = with_muscles(b.build(), {"m": pts})
    assert abs(muscle_lengths(model, jnp.asarray([-0.5]))[0] - 0.2) < 1e-15  # straight, inactive
    assert abs(muscle_lengths(model, jnp.asarray([0.5]))[0] - (0.1 + np.hypot(0.2, 0.1))) < 1e-15
    assert abs(moment_arms(model, jnp.asarray([-0.5]))[0, 0]) < 1e-16
    # R = -dL/dq also on the branch with the conditional point active
    q = jnp.asarray([0.3])
    assert abs(moment_arms(model, q) - moment_arms_autodiff(model, q)).max() < 1e-15


def test_batched_equals_looped_and_single_trace():
    model = random_paths(random_tree(4, n_bodies=6, n_coordinates=4), 4)
    qs = random_poses(9, 5, 4)
    fn = eqx.filter_jit(eqx.debug.assert_max_traces(moment_arms, max_traces=1))
    batched = jax.vmap(fn, in_axes=(None, 0))(model, qs)
    looped = jnp.stack([fn(model, q) for q in qs])
    assert jnp.max(jnp.abs(batched - looped)) < 1e-14


@pytest.mark.extended  # 20 s; moment_arms_batched is a memory guard around the vmap that CI checks against -dL/dq
def test_moment_arms_batched_equals_vmap_and_minus_dl_dq():
    """Batch-last kernel in chunks (last chunk padded) = vmap(moment_arms) = -jacfwd(L) = previous path."""
    model = random_paths(random_tree(5, n_bodies=7, n_coordinates=4), 5, n_muscles=8)
    qs = random_poses(25, 37, 4, scale=2.6)  # conditional points (range ±2 in q1) switch
    _, active = eqx.filter_jit(jax.vmap(path_points, in_axes=(None, 0)))(model, qs)
    assert bool(jnp.any(active != active[:1]))
    ref = eqx.filter_jit(jax.vmap(moment_arms_autodiff, in_axes=(None, 0)))(model, qs)
    single = eqx.filter_jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, qs)
    previous = eqx.filter_jit(jax.vmap(moment_arms_block, in_axes=(None, 0)))(model, qs)
    lengths = eqx.filter_jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, qs)
    reference = eqx.filter_jit(jax.vmap(lambda m, q: jnp.sum(path_state(m, q, False).seg_len, -1), in_axes=(None, 0)))(model, qs)
    assert jnp.max(jnp.abs(lengths - reference)) < 1e-14
    scale = max(float(jnp.max(jnp.abs(ref))), 1.0)
    assert jnp.max(jnp.abs(single - ref)) < 1e-12 * scale
    assert jnp.max(jnp.abs(single - previous)) < 1e-13 * scale
    for batch_size in (8, None):
        out = eqx.filter_jit(moment_arms_batched)(model, qs, batch_size)
        assert out.shape == (37, 4, 8)
        assert jnp.max(jnp.abs(out - single)) < 1e-14 * scale
    with pytest.raises(ValueError, match="q_batch must have shape"):
        moment_arms_batched(model, qs[0])


def test_gradient_wrt_path_point_location():
    model = random_paths(random_tree(6, n_bodies=4, n_coordinates=3, nonlinear=False), 6, n_muscles=3)
    q = random_poses(4, 1, 3)[0]

    def ma(loc):
        m = eqx.tree_at(lambda m: m.muscles.location, model, loc)
        return moment_arms(m, q)[1, 0]

    loc = model.muscles.location
    ma = eqx.filter_jit(ma)
    g = eqx.filter_jit(jax.grad(ma))(loc)
    h = 1e-6
    e = jnp.zeros_like(loc).at[0, 0, 1].set(h)
    fd = (ma(loc + e) - ma(loc - e)) / (2 * h)
    assert abs(g[0, 0, 1] - fd) < 1e-7


def test_float32_runs():
    model = random_paths(random_tree(2, n_bodies=5, n_coordinates=3), 2, n_muscles=3)
    q = jnp.asarray(random_poses(0, 1, 3)[0], jnp.float32)
    r = moment_arms(model, q)
    assert r.shape == (3, 3) and bool(jnp.all(jnp.isfinite(r)))


def test_bad_paths_raise():
    model = random_tree(0, n_bodies=3, n_coordinates=2)
    with pytest.raises(ValueError, match="unknown body"):
        with_muscles(model, {"m": [PathPoint("ground", [0, 0, 0]), PathPoint("femur", [0, 0, 0])]})
    with pytest.raises(ValueError, match="at least 2 points"):
        with_muscles(model, {"m": [PathPoint("ground", [0, 0, 0])]})
    with pytest.raises(ValueError, match="reads coordinate"):
        build_paths(
            model.body_names,
            model.coordinate_names,
            {"m": [PathPoint("b0", [0, 0, 0]), ConditionalPathPoint("b1", [0, 0, 0], coordinate="zz")]},
        )
    # a model without muscles is valid: quantities over no muscles are empty
    assert muscle_lengths(model, jnp.zeros(2)).shape == (0,)


def test_attachment_sequences_and_names():
    model = random_paths(random_tree(1, n_bodies=4, n_coordinates=2), 1, n_muscles=3)
    paths = model.muscles
    assert model.muscle_names == ("m0", "m1", "m2")
    for seq in paths.attachment_sequences():
        assert all(a != b for a, b in zip(seq, seq[1:]))
