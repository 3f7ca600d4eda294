"""Path functions (OpenSim's FunctionBasedPath) and their fit to the exact paths.

Independent references: autodiff of the lengths (forward and reverse) for the closed-form moment
arms; the exact path geometry at poses the fit never saw for the fitted functions; central
differences for gradients in the coefficients.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.maps.multivariate import multivariate_exponents
from mbjax.muscles.path_fitting import _coordinate_ranges, _latin_hypercube

MODEL = "gait10dof18musc"  # no wrap objects: the exact pass compiles in seconds
#: paths of that model whose exact length is smooth over the coordinate ranges (no conditional point)
SMOOTH = ("hamstrings_r", "bifemsh_r", "vasti_r", "soleus_r", "tib_ant_r",
          "hamstrings_l", "bifemsh_l", "vasti_l", "soleus_l", "tib_ant_l")


def _random_functions(model, seed):
    rng = np.random.default_rng(seed)
    names = model.muscles.names
    coords = list(model.coordinate_names)
    out = {}
    for name in names:
        d = int(rng.integers(1, 4))
        order = int(rng.integers(2, 6))
        cs = tuple(rng.choice(coords, size=d, replace=False))
        c = rng.normal(scale=0.02, size=multivariate_exponents(d, order).shape[0])
        c[0] = 0.3
        out[name] = (cs, order, c)
    return out


def test_moment_arms_are_minus_the_gradient_of_the_lengths():
    """Closed-form -∂L/∂q against jacfwd and jacrev of the lengths, one pose and batched."""
    model = mbjax.models.load(MODEL)
    fitted = mbjax.with_path_functions(model, _random_functions(model, 0))
    qs = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, size=(5, model.n_coordinates)))
    R = jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(fitted, qs)
    lengths = lambda x: mbjax.muscle_lengths(fitted, x)  # noqa: E731
    fwd = jax.jit(jax.vmap(jax.jacfwd(lengths)))(qs)  # one program per mode for all poses
    rev = jax.jit(jax.vmap(jax.jacrev(lengths)))(qs)
    for k in range(len(qs)):
        np.testing.assert_allclose(R[k], -fwd[k].T, rtol=0, atol=1e-14)
        np.testing.assert_allclose(R[k], -rev[k].T, rtol=0, atol=1e-14)
        np.testing.assert_allclose(mbjax.moment_arms(fitted, qs[k]), R[k], rtol=0, atol=1e-15)
    # OpenSim's moment-arm rule is the same derivative for a FunctionBasedPath
    np.testing.assert_allclose(mbjax.muscles.opensim_moment_arms(fitted, qs[0]), R[0], rtol=0, atol=1e-15)


def test_lengths_are_the_polynomials_written_out():
    """L = Σ c_t Π x_i^e_ti evaluated term by term in NumPy."""
    model = mbjax.models.load(MODEL)
    funcs = _random_functions(model, 2)
    fitted = mbjax.with_path_functions(model, funcs)
    q = np.random.default_rng(3).uniform(-1.2, 1.2, size=model.n_coordinates)
    L = np.asarray(mbjax.muscle_lengths(fitted, jnp.asarray(q)))
    names = list(model.coordinate_names)
    for m, (cs, order, c) in funcs.items():
        x = q[[names.index(n) for n in cs]]
        e = multivariate_exponents(len(cs), order)
        expected = sum(ct * np.prod(x ** et) for ct, et in zip(c, e))
        assert L[list(model.muscles.names).index(m)] == pytest.approx(expected, abs=1e-15)


def test_float32_runs():
    model = mbjax.models.load(MODEL)
    fitted = mbjax.with_path_functions(model, _random_functions(model, 4))
    q = jnp.zeros(model.n_coordinates, jnp.float32) + 0.3
    L64 = mbjax.muscle_lengths(fitted, q.astype(jnp.float64))
    f32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx_float(a) else a, fitted)
    L32 = mbjax.muscle_lengths(f32, q)
    assert L32.dtype == jnp.float32
    np.testing.assert_allclose(L32, L64, rtol=1e-5)


def eqx_float(a):
    return isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.floating)


@pytest.fixture(scope="module")
def fit():
    model = mbjax.models.load(MODEL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the paths with conditional points miss the tolerance (checked below)
        fitted, report = mbjax.fit_path_functions(model, n_samples=1000, progress=False)
    return model, fitted, report


def test_fitted_paths_equal_the_exact_ones_at_poses_the_fit_never_saw(fit):
    model, fitted, report = fit
    lo, hi = _coordinate_ranges(model, None)
    qs = jnp.asarray(_latin_hypercube(300, lo, hi, np.random.default_rng(123)))
    exact_L = np.asarray(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(model, qs))
    exact_R = np.asarray(jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(model, qs))
    fit_L = np.asarray(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(fitted, qs))
    fit_R = np.asarray(jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(fitted, qs))
    names = list(model.muscles.names)
    tol = report.tolerance
    for f in report.fits:
        j = names.index(f.muscle)
        spans = [list(model.coordinate_names).index(c) for c in f.coordinates]
        e_len = fit_L[:, j] - exact_L[:, j]
        e_arm = fit_R[:, spans, j] - exact_R[:, spans, j]
        rms_len, rms_arm = np.sqrt(np.mean(e_len ** 2)), np.sqrt(np.mean(e_arm ** 2))
        # the report's test errors describe fresh poses too (same distribution, other samples)
        assert rms_len == pytest.approx(f.length_rms, rel=0.5, abs=2e-6), f.muscle
        if f.muscle in SMOOTH:
            assert f.meets_tolerance, f.muscle
            assert rms_len <= 1.5 * tol.length_rms and np.max(np.abs(e_len)) <= 1.5 * tol.length_max, f.muscle
            assert rms_arm <= 1.5 * tol.moment_arm_rms, f.muscle
        # a coordinate outside the function's spans has no moment arm in the exact path either
        others = [k for k in range(model.n_coordinates) if k not in spans]
        assert np.max(np.abs(exact_R[:, others, j])) <= 1e-4 and np.all(fit_R[:, others, j] == 0)
    # the paths with conditional points jump: named, not hidden, and the jump located
    assert set(report.missed) <= set(names) - set(SMOOTH)
    assert "iliopsoas_r" in report.missed and report["iliopsoas_r"].jumps > 0
    assert all(report[m].jumps == 0 for m in SMOOTH)
    assert "MISSED" in report.table() and "iliopsoas_r" in str(report)


def test_consumers_run_on_the_fitted_model(fit):
    """Static optimization's frame data (moment arms; force per unit activation from L and
    V = -Rᵀq̇): fitted ≈ exact for the smooth paths."""
    model, fitted, report = fit
    lo, hi = _coordinate_ranges(model, None)
    q = jnp.asarray(lo + 0.4 * (hi - lo))  # inside the ranges the fit sampled
    qd = jnp.full(model.n_coordinates, 0.3)
    names = list(model.muscles.names)
    smooth = np.asarray([names.index(m) for m in SMOOTH])
    # static optimization's frame data (what the optimizer reads: R, force per unit activation, τ);
    # the three frames in one compiled program
    @eqx.filter_jit
    def frames(model, fitted, q, qd):
        sharing_problem = mbjax.analysis.sharing.sharing_problem
        problem = lambda m, **kw: sharing_problem(m, q, qd, jnp.zeros_like(q), **kw)  # noqa: E731
        return problem(model), problem(fitted), problem(fitted, moment_arm_rule="opensim")

    exact, approx, opensim_rule = frames(model, fitted, q, qd)
    np.testing.assert_allclose(approx.f_opt[smooth], exact.f_opt[smooth], rtol=0.02)
    np.testing.assert_allclose(approx.moment_arms[:, smooth], exact.moment_arms[:, smooth], rtol=0, atol=3e-3)
    np.testing.assert_allclose(approx.tau, exact.tau, rtol=1e-12)
    # OpenSim's unit-force rule on a FunctionBasedPath is -∂L/∂q too (the moving patella of the
    # vasti makes the rules differ on the exact path, not on the function)
    np.testing.assert_array_equal(opensim_rule.moment_arms, approx.moment_arms)


def test_gradients_in_the_coefficients_equal_differences(fit):
    model, fitted, _ = fit
    q = jnp.asarray(np.array(model.osim.default, float)) + 0.1

    def total(m):
        return jnp.sum(mbjax.moment_arms(m, q) ** 2) + jnp.sum(mbjax.muscle_lengths(m, q))

    g = eqx.filter_jit(jax.grad(total))(fitted).path_functions.groups[0].coefficients
    c0 = fitted.path_functions.groups[0].coefficients
    h = 1e-6
    for idx in [(0, 0), (0, 1), (-1, -1)]:
        def at(v):
            return total(eqx_tree_at(fitted, c0.at[idx].set(c0[idx] + v)))
        fd = (at(h) - at(-h)) / (2 * h)
        assert float(g[idx]) == pytest.approx(float(fd), rel=1e-6, abs=1e-8)


def eqx_tree_at(model, coefficients):
    return eqx.tree_at(lambda m: m.path_functions.groups[0].coefficients, model, coefficients)


@pytest.mark.parametrize("functions, message", [
    ({"nope": (("knee_angle_r",), 1, [0.3, 0.1])}, "no muscle of that name"),
    ({"soleus_r": (("knee",), 1, [0.3, 0.1])}, "'knee'] are not coordinates"),
    ({"soleus_r": (("ankle_angle_r",), 2, [0.3, 0.1])}, "has 3 coefficients, got 2"),
    ({"soleus_r": (("ankle_angle_r",), 1, [0.3, np.nan])}, "not all finite"),
    ({"soleus_r": ((), 1, [0.3])}, "names no coordinate"),
    ({"soleus_r": (("ankle_angle_r", "ankle_angle_r"), 1, [0.3, 0.1, 0.1])}, "repeat"),
    ({"soleus_r": (("ankle_angle_r",), 0, [0.3])}, "order must be >= 1"),
])
def test_bad_functions_are_refused_by_name(functions, message):
    model = mbjax.models.load(MODEL)
    with pytest.raises(ValueError, match=message):
        mbjax.with_path_functions(model, functions)


def test_bad_fit_arguments_are_refused_by_name():
    model = mbjax.models.load(MODEL)
    with pytest.raises(ValueError, match="'nope'"):
        mbjax.fit_path_functions(model, ["nope"], progress=False)
    with pytest.raises(ValueError, match="n_samples must be >= 50"):
        mbjax.fit_path_functions(model, n_samples=10, progress=False)
    with pytest.raises(ValueError, match="ranges name 'knee'"):
        mbjax.fit_path_functions(model, ranges={"knee": (0, 1)}, progress=False)
    with pytest.raises(ValueError, match=r"motion must have shape \(T, 10\)"):
        mbjax.fit_path_functions(model, motion=np.zeros((4, 3)), progress=False)


def test_bad_fit_settings_are_refused_by_name():
    model = mbjax.models.load(MODEL)
    for kw in ({"length_rms": -1e-4}, {"length_max": 0.0}, {"moment_arm_rms": float("nan")}):
        with pytest.raises(ValueError, match=f"PathTolerance.{next(iter(kw))} must be a finite number > 0"):
            mbjax.muscles.path_fitting.PathTolerance(**kw)
    for kw, message in (({"moment_arm_threshold": -1.0}, "moment_arm_threshold must be"),
                        ({"moment_arm_weight": float("nan")}, "moment_arm_weight must be"),
                        ({"max_terms": 0}, "max_terms must be >= 2"),
                        ({"tolerance": 1e-4}, "tolerance must be a PathTolerance")):
        with pytest.raises((ValueError, TypeError), match=message):
            mbjax.fit_path_functions(model, progress=False, **kw)


def test_a_fitted_function_is_refused_outside_its_fitted_range(fit):
    """The exact path is the reference: inside the fitted ranges the function follows it (above);
    outside, a polynomial is no model of it, so evaluating there is an error naming the muscle, and
    range_violations names the coordinate and value."""
    model, fitted, report = fit
    lo, hi = _coordinate_ranges(model, None)
    soleus = report["soleus_r"]
    k = list(model.coordinate_names).index(soleus.coordinates[0])
    inside = jnp.asarray(0.5 * (lo + hi))
    outside = inside.at[k].set(hi[k] + 0.5)
    assert mbjax.range_violations(fitted, inside) == []
    with pytest.raises(RuntimeError, match="path function of muscle 'soleus_r' is evaluated outside the fitted range"):
        mbjax.muscle_lengths(fitted, outside)
    with pytest.raises(RuntimeError, match="outside the fitted range"):
        jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))(fitted, jnp.stack([inside, outside]))
    found = [v for v in mbjax.range_violations(fitted, outside) if v.joint == "soleus_r"]
    assert len(found) == 1 and found[0].quantity == soleus.coordinates[0]
    assert found[0].value == pytest.approx(hi[k] + 0.5) and found[0].upper == pytest.approx(hi[k])
    assert "muscle 'soleus_r' (path function)" in str(found[0])
    with mbjax.config.checks(False):  # checks off: the polynomial's value, as asked
        assert np.isfinite(np.asarray(mbjax.muscle_lengths(fitted, outside))).all()
    # functions given without ranges (e.g. read from a file) are valid everywhere
    free = mbjax.with_path_functions(model, {"soleus_r": (("ankle_angle_r",), 1, [0.3, 0.1])})
    assert np.isfinite(np.asarray(mbjax.muscle_lengths(free, outside))).all()
    with pytest.raises(ValueError, match="ranges must be one"):
        mbjax.with_path_functions(model, {"soleus_r": (("ankle_angle_r",), 1, [0.3, 0.1], [(0, 1), (0, 1)])})


def test_point_consumers_refuse_path_functions():
    model = mbjax.models.load(MODEL)
    fitted = mbjax.with_path_functions(model, _random_functions(model, 5))
    q = jnp.zeros(model.n_coordinates)
    for fn in (mbjax.muscles.gmlav, mbjax.muscles.moment_arms_block, mbjax.muscles.moment_arms_sparse):
        with pytest.raises(NotImplementedError, match="soleus_r"):
            fn(fitted, q)


def test_joint_reaction_loads_of_a_function_path_are_mobility_forces():
    """OpenSim applies a FunctionBasedPath's tension as generalized forces R F, no body load."""
    from mbjax.opensim.tools.jr import muscle_loads as eager_loads

    muscle_loads = eqx.filter_jit(eager_loads)  # one program per model structure, not op by op
    model = mbjax.models.load(MODEL)
    funcs = _random_functions(model, 6)
    some = {k: funcs[k] for k in ("soleus_r", "vasti_l")}
    fitted = mbjax.with_path_functions(model, some)
    names = list(model.muscles.names)
    q = jnp.asarray(np.random.default_rng(7).uniform(-0.5, 0.3, size=(2, model.n_coordinates)))
    tension = jnp.asarray(np.random.default_rng(8).uniform(10, 100, size=(2, len(names))))
    rows = [names.index("soleus_r"), names.index("vasti_l")]
    only = jnp.zeros_like(tension).at[:, rows].set(tension[:, rows])
    gen, force, moment = muscle_loads(fitted, q, only)
    R = jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(fitted, q)
    np.testing.assert_allclose(gen, jnp.einsum("tqm,tm->tq", R, only), rtol=1e-13, atol=1e-12)
    assert np.all(np.asarray(force) == 0) and np.all(np.asarray(moment) == 0)
    # the other muscles keep their geometric loads
    rest = tension.at[:, rows].set(0.0)
    g2, f2, m2 = muscle_loads(fitted, q, rest)
    g0, f0, m0 = muscle_loads(model, q, rest)
    np.testing.assert_allclose(g2, g0, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(f2, f0, rtol=1e-13, atol=1e-12)


@pytest.mark.extended
def test_muscle_driven_dynamics_on_a_partly_fitted_model(fit):
    """The smooth paths as functions, the others exact: the muscle-driven vector field is the exact
    one up to the functions' errors (and runs through the geometric rows unchanged)."""
    model, fitted, report = fit
    pf = fitted.path_functions
    names = list(model.coordinate_names)
    smooth_only = {}
    for m in SMOOTH:
        inputs, order, c = pf.function(m)
        smooth_only[m] = (tuple(names[i] for i in inputs), order, np.asarray(c))
    partly = mbjax.with_path_functions(model, smooth_only)
    lo, hi = _coordinate_ranges(model, None)
    q = jnp.asarray(lo + 0.45 * (hi - lo))
    nm = len(model.muscles.names)
    a = jnp.full(nm, 0.3)
    qd = jnp.zeros_like(q)
    lce = mbjax.initial_fiber_lengths(model, q, qd, a)
    exact = mbjax.muscle_vector_field(model, 0.0, mbjax.MuscleSimState(q, qd, a, lce), a)
    approx = mbjax.muscle_vector_field(partly, 0.0, mbjax.MuscleSimState(q, qd, a, lce), a)
    assert np.all(np.isfinite(np.asarray(approx.qd)))
    np.testing.assert_allclose(approx.qd, exact.qd, rtol=0.05, atol=0.05 * float(jnp.abs(exact.qd).max()))
    np.testing.assert_allclose(approx.activation, exact.activation, rtol=1e-12)


def test_jumps_are_found_where_a_length_steps_and_not_where_it_is_smooth():
    from mbjax.muscles.path_fitting import exact_path_jumps

    x = np.random.default_rng(0).uniform(-1, 1, size=(400, 2))
    smooth = 0.3 + 0.02 * np.sin(2 * x[:, 0]) * x[:, 1]
    arms = -np.stack([0.04 * np.cos(2 * x[:, 0]) * x[:, 1], 0.02 * np.sin(2 * x[:, 0])], 1)
    assert exact_path_jumps(x, smooth, arms, 5e-4) == (0, None)
    stepped = smooth + 0.01 * (x[:, 0] > 0.3)
    count, at = exact_path_jumps(x, stepped, arms, 5e-4)
    assert count > 0 and abs(at[0] - 0.3) < 0.1


def test_poses_where_the_exact_path_fails_are_left_out_and_named(monkeypatch):
    """A wrap that fails at some poses (OpenSim's own lengths are metres long there on MoBL-ARMS's
    shoulder) would wreck a least-squares fit: those samples are left out, counted and warned about,
    and the fit still equals the exact path at fresh poses."""
    from mbjax.muscles import path_fitting

    model = mbjax.models.load(MODEL)
    names = list(model.muscles.names)
    j = names.index("soleus_r")
    real = path_fitting.sample_paths
    broken = {}

    def failing_wraps(m, qs, progress=True):
        lengths, arms = real(m, qs, progress=progress)
        bad = np.arange(0, len(qs), 23)  # every 23rd pose: a path 16.7 m long, moment arms of 50 m
        lengths, arms = lengths.copy(), arms.copy()
        lengths[bad, j], arms[bad, :, j] = 16.7, 50.0
        broken["count"] = bad.size
        return lengths, arms

    monkeypatch.setattr(path_fitting, "sample_paths", failing_wraps)
    with pytest.warns(UserWarning, match=r"the exact paths of soleus_r \(\d+ poses, up to 16.7 m\) are implausible"):
        fitted, report = mbjax.fit_path_functions(model, ["soleus_r", "vasti_r"], n_samples=400, progress=False)
    assert report["soleus_r"].implausible == broken["count"] and report["vasti_r"].implausible == 0
    assert report["soleus_r"].implausible_at is not None and "implausible" in report.table()
    assert report["soleus_r"].meets_tolerance
    lo, hi = _coordinate_ranges(model, None)
    qs = jnp.asarray(_latin_hypercube(200, lo, hi, np.random.default_rng(7)))
    exact = np.asarray(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(model, qs))[:, j]
    approx = np.asarray(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(fitted, qs))[:, j]
    assert np.sqrt(np.mean((approx - exact) ** 2)) <= 1.5 * report.tolerance.length_rms
    # a path that fails over most of the ranges is refused by name, not fitted
    def mostly_failing(m, qs, progress=True):
        lengths, arms = real(m, qs, progress=progress)
        lengths = lengths.copy()
        lengths[: 3 * len(qs) // 4, j] = 16.7
        return lengths, arms

    monkeypatch.setattr(path_fitting, "sample_paths", mostly_failing)
    with pytest.raises(ValueError, match=r"exact path of 'soleus_r' is implausible .* at \d+ of \d+ sampled poses"):
        mbjax.fit_path_functions(model, ["soleus_r"], n_samples=400, progress=False)
