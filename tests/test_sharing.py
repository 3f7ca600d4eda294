"""Static optimization (mbjax.analysis.sharing): optimum vs SciPy SLSQP, bounds, residuals, infeasibility
report, implicit derivatives vs finite differences, float32, trajectory (scan) vs per frame.

arm26 without wrapping keeps compilation short; two jitted programs are built (per-frame problems
+ solutions, and the warm-started trajectory) plus one gradient program.
"""

import pathlib
import re
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linprog, minimize

import mbjax
from mbjax.analysis.sharing import qp, sharing_problem, solve_problem

T = 50  # frames of the README example


def _slsqp(A, b, lo, hi, w, p):
    x0 = np.clip(np.linalg.lstsq(A, b, rcond=None)[0], lo, np.minimum(hi, 1e3))
    r = minimize(lambda x: np.sum(w * np.abs(x) ** p), x0, jac=lambda x: w * p * np.sign(x) * np.abs(x) ** (p - 1),
                 method="SLSQP", bounds=[(a if np.isfinite(a) else None, c if np.isfinite(c) else None)
                                         for a, c in zip(lo, hi)],
                 constraints=[dict(type="eq", fun=lambda x: A @ x - b, jac=lambda x: A)],
                 options=dict(ftol=1e-12, maxiter=1000))
    return r


@eqx.filter_jit
def _per_frame(model, qs, qds, qdds):
    """Problems and per-frame solutions (vmap) in one program."""
    problems = jax.vmap(sharing_problem, in_axes=(None, 0, 0, 0))(model, qs, qds, qdds)
    return problems, jax.vmap(solve_problem)(problems)


_solve_frames = jax.jit(jax.vmap(solve_problem))
_solve_frames_reserves = jax.jit(jax.vmap(lambda pr: solve_problem(pr, reserves=10.0)))


@pytest.fixture(scope="module")
def arm():
    """The README example (public static_optimization_trajectory, lax.scan with warm starts on
    wrap-free arm26) and the same frames solved one by one."""
    text = (pathlib.Path(__file__).parents[1] / "docs" / "how-to" / "muscles-and-static-optimization.md").read_text()
    code = re.search(r"## Force sharing \(static optimization\)\n.*?```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "muscles-and-static-optimization.md", "exec"), ns)
    model, qs, qds, qdds = (ns[k] for k in ("model", "qs", "qds", "qdds"))
    problems, per_frame = _per_frame(model, qs, qds, qdds)
    return model, (qs, qds, qdds), problems, per_frame, ns["res"]


# ------------------------------------------------------------------------------------------------
# synthetic problems: the solver alone
# ------------------------------------------------------------------------------------------------


def _synthetic(seed, m=3, n=8):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n)) * rng.uniform(5, 50, size=(m, 1))
    xt = rng.uniform(-0.3, 1.3, n).clip(0, 1)  # some targets at the bounds: active constraints
    return A, A @ xt, np.zeros(n), np.ones(n), rng.uniform(0.5, 2.0, n)


_solve_batch = jax.jit(jax.vmap(qp.solve, in_axes=(0, 0, 0, 0, 0, 0)))


def test_synthetic_matches_slsqp():
    probs = [_synthetic(s) for s in range(8)]
    A, b, lo, hi, w = (np.stack(v) for v in zip(*probs))
    ps = np.array([2.0, 3.0] * 4)  # one program for both exponents (p is traced)
    sol = _solve_batch(A, b, lo, hi, w, ps)
    assert bool(np.all(sol.converged))
    n_active = 0
    for k in range(len(probs)):
        p = ps[k]
        ref = _slsqp(A[k], b[k], lo[k], hi[k], w[k], p)
        assert ref.success
        x = np.asarray(sol.x[k])
        np.testing.assert_allclose(x, ref.x, atol=1e-6)
        assert abs(float(sol.objective[k]) - ref.fun) <= 1e-6 * max(1.0, ref.fun)
        assert float(sol.objective[k]) <= ref.fun + 1e-10  # never worse than SLSQP
        np.testing.assert_allclose(A[k] @ x, b[k], atol=1e-9 * np.abs(A[k]).max())
        assert np.all(x >= lo[k]) and np.all(x <= hi[k])
        n_active += int(np.sum((x == 0) | (x == 1)))
    assert n_active > 0  # the bounds were exercised


@pytest.mark.extended  # 27 s against SciPy's SLSQP; static optimization is checked against OpenSim's in CI
def test_gait_residual_frame_matches_slsqp():
    """A Gait2354 frame with 54 muscles, 6 pelvis residuals and 17 coordinate reserves (23 rows, 83
    columns, row-scaled A spanning 1e-3..1): the previous primal-dual active-set polish cycled on
    it and returned converged = False; the damped dual Newton converges and equals SLSQP."""
    d = np.load(pathlib.Path(__file__).parent / "data" / "sharing" / "gait2354_residuals_frame0.npz")
    A, b, lo, hi, w = (d[k] for k in ("A", "b", "lo", "hi", "w"))
    sol = qp.solve(A, b, lo, hi, w, 2.0)
    assert bool(sol.converged)
    x = np.asarray(sol.x)
    np.testing.assert_allclose(A @ x, b, atol=1e-9 * np.abs(A).max())
    assert np.all(x >= lo) and np.all(x <= hi)
    # optimality certified by the KKT conditions of min Σ w x² (gradient 2 w x), whatever a peer
    # optimizer does on this CPU: multipliers λ from the free entries, stationarity there, and the
    # reduced gradient's sign at the active bounds
    g = 2.0 * w * x
    span = hi - lo
    at_lo = x <= lo + 1e-9 * np.where(np.isfinite(span), span, 1.0)
    at_hi = x >= hi - 1e-9 * np.where(np.isfinite(span), span, 1.0)
    free = ~(at_lo | at_hi)
    lam = np.linalg.lstsq(A[:, free].T, g[free], rcond=None)[0]
    reduced = g - A.T @ lam
    scale = np.abs(g).max()
    assert np.abs(reduced[free]).max() < 1e-8 * scale
    assert np.all(reduced[at_lo] > -1e-8 * scale) and np.all(reduced[at_hi] < 1e-8 * scale)
    ref = _slsqp(A, b, lo, hi, w, 2.0)
    if ref.success:  # SLSQP reaches its iteration limit on some CPUs: compared only where it converged
        assert float(sol.objective) <= ref.fun + 1e-9 * ref.fun
        np.testing.assert_allclose(x, ref.x, atol=1e-5)
    # float32: converged (tolerance relative to the rhs, where rounding is), close to float64
    s32 = qp.solve(*(jnp.asarray(v, jnp.float32) for v in (A, b, lo, hi, w)), 2.0)
    assert bool(s32.converged) and s32.x.dtype == jnp.float32
    assert abs(float(s32.objective) - float(sol.objective)) < 1e-4 * float(sol.objective)


def test_synthetic_derivative_vs_finite_differences():
    """Implicit derivative (forward mode, one program) of a loss of the solution in a random
    direction of (A, b, w) vs central differences of the same program."""
    A, b, lo, hi, w = _synthetic(3)

    def f(A, b, w):
        s = qp.solve(A, b, lo, hi, w)
        return s.objective + jnp.sum(jnp.sin(jnp.arange(1, 9) * s.x))

    fj = jax.jit(lambda args, dirs: jax.jvp(f, args, dirs))
    rng = np.random.default_rng(7)
    dirs = tuple(rng.normal(size=v.shape) for v in (A, b, w))
    val, der = fj((A, b, w), dirs)
    e = 1e-6
    plus = fj(tuple(v + e * d for v, d in zip((A, b, w), dirs)), dirs)[0]
    minus = fj(tuple(v - e * d for v, d in zip((A, b, w), dirs)), dirs)[0]
    np.testing.assert_allclose(float(der), (float(plus) - float(minus)) / (2 * e), rtol=1e-6, atol=1e-9)
    assert abs(float(der)) > 1e-3


def test_float32_runs(arm):
    """arm26 problems cast to float32: solved in float32, converged, within 1e-3 of float64."""
    _, _, problems, res, _ = arm
    p32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), problems)
    r32 = _solve_frames(p32)
    assert r32.activations.dtype == jnp.float32
    assert bool(np.all(r32.converged))
    a = np.asarray(r32.activations)
    assert np.all((a >= 0) & (a <= 1))
    np.testing.assert_allclose(a, np.asarray(res.activations), atol=1e-3)
    assert np.abs(np.asarray(r32.residual)).max() < 1e-3  # N·m, on torques of a few N·m


def test_float32_model_forces_and_torque_balance(arm):
    """SO built from a float32 model: each muscle's force per unit activation equals float64's and
    rigid-tendon ``muscle_forces`` in float32 (a rounded tendon length once read as slack dropped
    f_V), and the float32 activations balance τ with float64's R and forces per activation."""
    model, (qs, qds, qdds), problems, res, _ = arm
    f32 = lambda m: jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, m)  # noqa: E731
    m32 = f32(model)
    q32, qd32, qdd32 = (jnp.asarray(x, jnp.float32) for x in (qs, qds, qdds))
    p32, r32 = _per_frame(m32, q32, qd32, qdd32)
    assert p32.f_opt.dtype == r32.activations.dtype == jnp.float32
    f64 = np.asarray(problems.f_opt)
    np.testing.assert_allclose(np.asarray(p32.f_opt), f64, rtol=2e-5, atol=1e-3)
    # rigid tendons: muscle_forces at a = 1 is F_o f_L f_V cos α plus the passive force along the tendon
    nm = f64.shape[1]
    rigid = eqx.tree_at(lambda m: m.muscles.parameters, m32,
                        {**m32.muscles.parameters, "ignore_tendon_compliance": jnp.ones(nm, jnp.float32)})
    full = jax.jit(jax.vmap(lambda q, qd: (mbjax.muscle_forces(rigid, q, qd, jnp.ones(nm, jnp.float32)),
                                           mbjax.analysis.sharing.muscle_force_coefficients(
                                               rigid, q, qd, passive_forces=True))))
    tendon, (f_opt, f_pas) = full(q32, qd32)
    assert tendon.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(f_opt), np.asarray(p32.f_opt), rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tendon), np.asarray(f_opt + f_pas), rtol=2e-5, atol=1e-3)
    # R F = τ checked with float64's moment arms, forces per activation and torques
    assert bool(np.all(r32.converged))
    R, tau = np.asarray(problems.moment_arms), np.asarray(problems.tau)
    a = np.asarray(r32.activations, np.float64)
    miss = np.einsum("tqm,tm->tq", R, a * f64) - tau
    assert np.abs(miss).max() < 1e-4 * np.abs(tau).max()
    np.testing.assert_allclose(np.asarray(r32.residual, np.float64), miss, atol=1e-4 * np.abs(tau).max())


# ------------------------------------------------------------------------------------------------
# arm26
# ------------------------------------------------------------------------------------------------


def test_arm26_matches_slsqp(arm):
    model, _, problems, res, _ = arm
    assert bool(np.all(res.converged))
    R, f_opt, tau = (np.asarray(v) for v in (problems.moment_arms, problems.f_opt, problems.tau))
    assert np.all(f_opt > 0)
    a = np.asarray(res.activations)
    for k in range(T):
        A = R[k] * f_opt[k]
        ref = _slsqp(A, tau[k], np.zeros(6), np.ones(6), np.ones(6), 2.0)
        assert ref.success
        np.testing.assert_allclose(a[k], ref.x, atol=1e-6)
        assert abs(float(res.objective[k]) - ref.fun) <= 1e-6
    # the torque is met, bounds hold, forces are a·F_opt
    np.testing.assert_allclose(np.asarray(res.residual), 0.0, atol=1e-8)
    np.testing.assert_allclose(np.einsum("tij,tj->ti", R, np.asarray(res.forces)), tau, atol=1e-8)
    assert np.all((a >= 0) & (a <= 1))
    np.testing.assert_allclose(np.asarray(res.forces), a * f_opt, rtol=1e-14)
    assert np.any(a == 0)  # inactive muscles sit exactly at the bound


def test_trajectory_equals_per_frame(arm):
    """README example (scan, warm starts) = per-frame vmap; it converges and reports nothing."""
    model, (qs, qds, qdds), _, res, traj = arm
    assert traj.activations.shape == (T, 6) and bool(np.all(traj.converged))
    assert not mbjax.analysis.sharing.infeasibility_report(traj, model)
    np.testing.assert_allclose(np.asarray(traj.activations), np.asarray(res.activations), atol=1e-9)
    np.testing.assert_allclose(np.asarray(traj.forces), np.asarray(res.forces), atol=1e-6)
    # warm starts: the scan needs no more ALM passes than the cold starts in total
    assert int(np.sum(traj.iterations)) <= int(np.sum(res.iterations))


def test_infeasibility_report_and_reserves(arm):
    """Muscles at 4% strength cannot hold the arm: the report names exactly the frames/coordinates
    that a linear program declares infeasible; reserves restore feasibility (vs SLSQP)."""
    model, _, problems, _, _ = arm
    weak = problems._replace(f_opt=0.04 * problems.f_opt)
    res = _solve_frames(weak)
    rep = mbjax.analysis.sharing.infeasibility_report(res, model, tol=1e-6)
    R, f_opt, tau = (np.asarray(v) for v in (weak.moment_arms, weak.f_opt, weak.tau))
    lp_infeasible = [k for k in range(T)
                     if linprog(np.zeros(6), A_eq=R[k] * f_opt[k], b_eq=tau[k], bounds=[(0, 1)] * 6).status == 2]
    assert lp_infeasible and rep.frames == lp_infeasible
    assert set(rep.coordinates) <= set(model.coordinate_names) and rep.coordinates
    assert not np.any(np.asarray(res.converged)[lp_infeasible])
    assert "frame" in str(rep) and rep.coordinates[0] in str(rep)
    with pytest.raises(mbjax.analysis.sharing.InfeasibleError):
        mbjax.analysis.sharing.check_feasible(res, model)
    # a coordinate no muscle crosses is named (and only it)
    zero_row = problems._replace(moment_arms=problems.moment_arms.at[:, 0, :].set(0.0))
    rep0 = mbjax.analysis.sharing.infeasibility_report(_solve_frames(zero_row), model.coordinate_names)
    assert rep0.coordinates == [model.coordinate_names[0]] and rep0.frames == list(range(T))
    # reserves (optimal force 10 N·m): feasible, equal to SLSQP over activations and x_r = τ_r / 10
    rr = _solve_frames_reserves(weak)
    assert bool(np.all(rr.converged)) and not mbjax.analysis.sharing.infeasibility_report(rr, model)
    for k in lp_infeasible[:3]:
        A = np.concatenate([R[k] * f_opt[k], 10.0 * np.eye(2)], 1)
        ref = _slsqp(A, tau[k], np.r_[np.zeros(6), -np.inf, -np.inf], np.r_[np.ones(6), np.inf, np.inf],
                     np.ones(8), 2.0)
        np.testing.assert_allclose(np.r_[rr.activations[k], rr.reserve_torques[k] / 10.0], ref.x, atol=1e-6)


@pytest.mark.extended
def test_gradient_wrt_max_isometric_force(arm):
    """d(Σ a² over 3 frames)/dF_o by implicit differentiation vs central differences (the
    compile-heavy twin of test_synthetic_gradient_vs_finite_differences: reverse mode through
    moment arms, muscle curves and inverse dynamics)."""
    model, (qs, qds, qdds), _, _, _ = arm
    fo = model.muscles.parameters["max_isometric_force"]

    def with_fo(v):
        return eqx.tree_at(lambda m: m.muscles.parameters["max_isometric_force"], model, v)

    def loss(v, sl=slice(0, 3)):
        m = with_fo(v)
        r = jax.vmap(mbjax.static_optimization, in_axes=(None, 0, 0, 0))(m, qs[sl], qds[sl], qdds[sl])
        return jnp.sum(r.activations ** 2 * jnp.arange(1, 7))

    g = np.asarray(eqx.filter_jit(jax.grad(loss))(fo))
    assert np.any(np.abs(g) > 0)

    def loss_fd(v):  # the same loss through the already-compiled per-frame program
        _, r = _per_frame(with_fo(v), qs, qds, qdds)
        return float(jnp.sum(r.activations[:3] ** 2 * jnp.arange(1, 7)))

    e = 1e-3  # N, on forces of several hundred N
    for i in range(6):
        d = np.zeros(6)
        d[i] = e
        fd = (loss_fd(fo + d) - loss_fd(fo - d)) / (2 * e)
        np.testing.assert_allclose(g[i], fd, rtol=1e-5, atol=1e-9)



def test_rank_deficient_constraints_reach_the_least_norm_point():
    """Repeated rows (a consistent rank-one A): the dual Newton matrix A S Aᵀ is singular but for its
    ridge.  Oracles: min |x|² s.t. a·x = 1 is a / |a|²; with a bound active, the free entries stay
    proportional to a (stationarity) and a·x = 1 holds."""
    from mbjax.analysis.sharing import qp

    a = np.array([1.0, 2.0, 3.0, 0.5])
    A, b = np.stack([a, a, 2 * a]), np.array([1.0, 1.0, 2.0])
    free = qp.solve(A, b, np.full(4, -np.inf), np.full(4, np.inf), np.ones(4), 2.0)
    assert bool(free.converged)
    np.testing.assert_allclose(free.x, a / (a @ a), rtol=1e-12)
    boxed = qp.solve(A, b, np.zeros(4), np.array([0.05, 1.0, 1.0, 1.0]), np.ones(4), 2.0)
    x = np.asarray(boxed.x)
    assert bool(boxed.converged) and x[0] == 0.05
    np.testing.assert_allclose(A @ x, b, atol=1e-12)
    np.testing.assert_allclose(x[1:] / a[1:], x[1] / a[1], rtol=1e-12)
