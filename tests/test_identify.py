"""Parameter identification: noise-free recovery by every method, named unidentifiable
combinations, gradients through simulate vs finite differences, native save/load, physically
consistent inertia parametrization, Huber residuals vs optax's Huber loss."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import mbjax
from mbjax.analysis import identify as idf
from mbjax._inertia import inertia_problems

from _trees import random_tree


def two_link(m1=2.0, m2=1.2, extra_fixed=False):
    """Planar 2-link arm about z with gravity -y; optionally a third body welded to link 1 with
    its COM on link 1's COM (its mass then only appears summed with link 1's)."""
    b = mbjax.ModelBuilder(["q1", "q2"], gravity=[0, -9.81, 0])
    b.add_body("upper", axis=[0, 0, 1], map="q1", mass=m1, com=[0.05, -0.15, 0.01], inertia=np.diag([0.012, 0.002, 0.011]))
    b.add_body("fore", parent="upper", axis=[0, 0, 1], map="q2", translation=[0, -0.3, 0], mass=m2,
               com=[0.02, -0.12, 0.0], inertia=np.diag([0.006, 0.001, 0.0055]))
    if extra_fixed:
        b.add_body("load", parent="upper", map=None, mass=0.5, com=[0.05, -0.15, 0.01], inertia=np.diag([0.001, 0.001, 0.001]))
    return b.build()


def torque_data(model, n=24, seed=0):
    rng = np.random.default_rng(seed)
    q, qd, qdd = (rng.uniform(-1.5, 1.5, (n, model.n_coordinates)) for _ in range(3))
    tau = jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(model, q, qd, qdd)
    return idf.torque_residuals(q, qd, qdd, tau)


@pytest.fixture(scope="module")
def problem():
    truth = two_link()
    res = torque_data(truth)
    start = eqx.tree_at(lambda m: m.mass, truth, jnp.array([1.0, 2.0]))
    return truth, res, start


@pytest.mark.parametrize("method", [
    "gauss_newton",
    # compile-heavy twins on the same problem: extended group (Levenberg-Marquardt also runs in
    # tests/test_readme.py's identification example)
    pytest.param("levenberg_marquardt", marks=pytest.mark.extended),
    pytest.param("lbfgs", marks=pytest.mark.extended), pytest.param("adam", marks=pytest.mark.extended),
])
def test_noise_free_recovery(problem, method):
    truth, res, start = problem
    kw = dict(max_steps=1500, learning_rate=0.05) if method == "adam" else {}
    fitted, rep = idf.fit(start, res, lambda m: m.mass, method=method, parametrization=idf.Positive(), progress=False, **kw)
    rel = np.max(np.abs(fitted.mass - truth.mass) / truth.mass)
    assert rel <= (1e-3 if method == "adam" else 1e-6), (method, rel, str(rep))
    assert rep.loss[-1] < rep.loss[0] and rep.steps >= 1 and rep.wall_s > 0
    if method != "adam":
        assert rep.converged, str(rep)
    assert rep.names == ("mass[upper]", "mass[fore]")


def test_optax_step_compiles_once(monkeypatch):
    """lbfgs and adam: one trace of the optax step per fit (optax's lbfgs state starts weakly typed;
    without normalising it the second step compiled again), and the minimum found is the known one."""
    import importlib

    fit_mod = importlib.import_module("mbjax.analysis.identify.fit")
    traced = []
    real = fit_mod._optax_optimizer
    monkeypatch.setattr(fit_mod, "_optax_optimizer", lambda *a: traced.append(a[0]) or real(*a))
    target = jnp.array([0.5, -1.0, 2.0])
    for method in ("lbfgs", "adam"):
        traced.clear()
        tree = {"a": jnp.array([1.0, 2.0, 3.0]), "b": jnp.zeros(2)}
        fitted, rep = idf.fit(tree, lambda t: t["a"] - target, lambda t: t["a"], method=method, progress=False,
                              max_steps=400, learning_rate=0.05)
        assert traced == [method, method], traced  # init + one step
        np.testing.assert_allclose(fitted["a"], target, atol=1e-6 if method == "lbfgs" else 1e-2)


def test_identifiability_names_mass_sum():
    truth = two_link(extra_fixed=True)
    res = torque_data(truth)
    # masses of 'upper' and the welded 'load' (same COM) enter only as their sum
    info = idf.identifiability(truth, res, lambda m: m.mass, sigma=0.01)
    assert info.rank == 2 and len(info.unidentifiable) == 1
    combo = info.unidentifiable[0]
    assert "mass[upper]" in combo and "mass[load]" in combo and "mass[fore]" not in combo
    null = info.null_space[:, 0] * np.sign(info.null_space[0, 0])
    np.testing.assert_allclose(null, [2**-0.5, 0, -(2**-0.5)], atol=1e-9)
    assert np.isfinite(info.standard_errors[1]) and not np.any(np.isfinite(info.standard_errors[[0, 2]]))


@pytest.mark.extended
def test_identifiability_fixed_axis_inertia_and_standard_errors():
    truth = two_link(extra_fixed=True)
    res = torque_data(truth)
    # standard inertial parameters of the first link (fixed z axis, in-plane gravity): only I_zz about the
    # origin and the in-plane first moments can be seen; its mass, mc_z and the other inertias cannot
    info = idf.identifiability(truth, res, lambda m: (m.mass, m.com, m.inertia),
                               parametrization=idf.StandardInertial(bodies=["upper"]), sigma=0.01)
    assert info.rank == 3
    base = {info.names[i] for i in info.base}
    assert base == {"mc_x[upper]", "mc_y[upper]", "I_zz[upper]"}
    dep = {info.names[i] for i in info.dependent}
    assert dep == {"m[upper]", "mc_z[upper]", "I_xx[upper]", "I_xy[upper]", "I_xz[upper]", "I_yy[upper]", "I_yz[upper]"}
    # standard errors σ²(J_BᵀJ_B)⁻¹ vs the spread of least-squares estimates from noisy data (linear
    # problem: one normal-equation solve per draw, independent of the library's fit loop)
    jb = info.jacobian[:, list(info.base)]
    noise = np.random.default_rng(1).normal(0, 0.01, (4000, jb.shape[0]))
    est = np.linalg.lstsq(jb, noise.T, rcond=None)[0].T
    np.testing.assert_allclose(est.std(0), info.base_standard_errors, rtol=0.06)


@pytest.mark.extended  # reverse mode through diffrax: ~15 s of compile on its own
def test_gradient_through_simulate_matches_finite_differences():
    import diffrax

    b = mbjax.ModelBuilder(["q"], gravity=[0, -9.81, 0])
    b.add_body("link", axis=[0, 0, 1], map="q", mass=1.5, com=[0.0, -0.3, 0.0], inertia=np.diag([0.01, 0.01, 0.02]))
    model = b.build()
    ts = jnp.linspace(0.0, 0.6, 7)
    q_obs = 0.4 * jnp.cos(4.0 * ts)[:, None]
    term = idf.trajectory_residuals(ts, q_obs, jnp.array([0.5]), jnp.array([0.0]),
                                    adjoint=diffrax.RecursiveCheckpointAdjoint())
    sel = idf.Selection((model, idf.ViscousDamping(jnp.array([0.3]))), lambda t: (t[0].mass, t[1].c))
    tree = (model, idf.ViscousDamping(jnp.array([0.3])))
    theta = sel.theta(tree)
    vg = jax.jit(jax.value_and_grad(lambda th: 0.5 * jnp.sum(term(sel.apply(th, tree)) ** 2)))
    _, g = vg(theta)
    h = 1e-5
    fd = np.array([(vg(theta.at[i].add(h))[0] - vg(theta.at[i].add(-h))[0]) / (2 * h) for i in range(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    assert sel.names == ("mass[link]", "ViscousDamping.c[0]")


def test_save_load_round_trip(tmp_path):
    for k, model in enumerate((random_tree(0), mbjax.models.arm26())):
        path = tmp_path / f"m{k}.mbjax"
        mbjax.io.save_model(path, model)
        back = mbjax.io.load_model(path)
        assert jax.tree.structure(back) == jax.tree.structure(model)
        for a, b in zip(jax.tree.leaves(model), jax.tree.leaves(back)):
            assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b))
    poses = jax.jit(jax.vmap(mbjax.body_poses, (None, 0)))
    q = np.random.default_rng(0).uniform(-1, 1, (5, model.n_coordinates))
    assert np.array_equal(poses(model, q), poses(back, q))
    with pytest.raises(TypeError, match="pickle"):
        mbjax.io.save_model(tmp_path / "bad.mbjax", (model, lambda x: x))


def test_physical_inertia_parametrization():
    model = random_tree(3, n_bodies=3, n_coordinates=2, zero_inertia_fraction=0.0)
    where = lambda m: (m.mass, m.com, m.inertia)  # noqa: E731
    sel = idf.Selection(model, where, idf.PhysicalInertia())
    theta = sel.theta(model)
    back = sel.apply(theta, model)
    for a, b in zip(where(model), where(back)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    # any θ gives physically consistent bodies (triangle inequality included)
    rng = np.random.default_rng(0)
    thetas = theta + rng.normal(0, 2.0, (200, theta.size))
    vals = jax.jit(jax.vmap(lambda t: where(sel.apply(t, model))))(thetas)
    for m, _, inertia in zip(*[np.asarray(v).reshape(-1, *v.shape[2:]) for v in vals]):
        assert m > 0 and not inertia_problems("b", float(m), inertia, tol=1e-9)
    # and its pseudo-inertia is positive definite
    ev = np.linalg.eigvalsh(np.asarray(idf.pseudo_inertia(vals[0][0], vals[1][0], vals[2][0])))
    assert np.all(ev > 0)


def test_huber_residual_matches_optax():
    r = jnp.linspace(-3, 3, 61)
    for delta in (0.5, 1.0):
        rt = idf.huber_residual(r, delta)
        np.testing.assert_allclose(0.5 * rt**2, optax.losses.huber_loss(r, delta=delta), rtol=1e-12, atol=1e-15)


@pytest.mark.extended
def test_markers_scales_and_poses_jointly():
    """Markers on both links of the 2-link arm: the upper arm's scale (it moves the elbow) and the
    frame poses are recovered from noise-free positions; the forearm's scale and its markers'
    offsets appear only as products, and identifiability names that combination."""
    truth = two_link()
    offsets = np.array([[0.03, -0.1, 0.02], [-0.02, -0.25, 0.0], [0.02, -0.05, 0.03], [0.0, -0.2, -0.02]])
    markers = idf.marker_set(truth, ["upper", "upper", "fore", "fore"], offsets, scales=[1.1, 0.95])
    q = np.random.default_rng(0).uniform(-1, 1, (6, 2))
    term = idf.marker_residuals(np.zeros((6, 4, 3)))
    measured = term.predict((truth, markers, jnp.asarray(q)))
    term = idf.marker_residuals(measured)
    start = (truth, eqx.tree_at(lambda m: m.scales, markers, jnp.array([1.0, 0.95])), jnp.asarray(q) + 0.1)
    where = lambda t: (t[1].scales, t[2])  # noqa: E731
    fitted, rep = idf.fit(start, term, where, method="levenberg_marquardt", parametrization=(idf.Positive(index=[0]), idf.Identity()), progress=False)
    np.testing.assert_allclose(fitted[1].scales, [1.1, 0.95], rtol=1e-8)
    np.testing.assert_allclose(fitted[2], q, atol=1e-8)
    info = idf.identifiability(fitted, term, lambda t: (t[1].scales, t[1].offsets),
                               parametrization=(idf.Identity(index=[1]), idf.Identity(index=[2, 3])))
    assert info.rank == 6 and len(info.unidentifiable) == 1
    combo = info.unidentifiable[0]
    assert "MarkerSet.scales[1]" in combo and "MarkerSet.offsets[2,0]" in combo
    # the null direction: scaling s up and the offsets down by the same factor, v ∝ (s, -offsets)
    v = info.null_space[:, 0]
    expect = np.concatenate([[0.95], -offsets[2:].ravel()])
    np.testing.assert_allclose(np.abs(v @ expect) / np.linalg.norm(expect), 1.0, atol=1e-9)
