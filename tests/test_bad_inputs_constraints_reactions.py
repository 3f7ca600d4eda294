"""Bad inputs to mbjax.constraints, mbjax.reactions and mbjax.analysis.sharing: clear errors, valid twins checked
against closed forms or a second route."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import reactions as rx
from mbjax.constraints import (
    ImplicitMap,
    LoopConstraint,
    PlanarChain,
    check_jacobian,
    direct_derivatives,
    hermite,
    hessian_rhs,
    implicit_solve,
    implicit_values,
    loop_values,
    molecule_offsets,
    premodel,
    projection_derivatives,
    projection_values,
    rcond,
)
from mbjax.analysis.sharing import (
    InfeasibleError,
    SharingProblem,
    check_feasible,
    muscle_force_coefficients,
    sharing_problem,
    solve_problem,
    solve_trajectory,
)

NAN = float("nan")


# ------------------------------------------------------------------------------------------------
# constraints: the fold f² = q (f = √q, f' = 1 / (2√q), f'' = -1 / (4 q^1.5))
# ------------------------------------------------------------------------------------------------


def _sqrt_residual(p, f, q):
    return f**2 - p["s"] * q


@pytest.fixture(scope="module")
def con():
    return LoopConstraint(_sqrt_residual, {"s": 1.0}, "q", "f", [1.0], [1.0])


Q = jnp.array([0.25])


def _closed_form(q):
    return np.sqrt(q), 1 / (2 * np.sqrt(q)), -1 / (4 * q**1.5)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(fn="f"), TypeError, r"fn must be a function"),
        (dict(joints=()), ValueError, r"joints must be one or more names"),
        (dict(joints=("f", "f"), f_ref=[1.0, 1.0]), ValueError, r"duplicate joints"),
        (dict(coordinates=("q", "q"), q_ref=[1.0, 1.0]), ValueError, r"duplicate coordinates"),
        (dict(q_ref=[NAN]), ValueError, r"q_ref must be finite"),
        (dict(f_ref=[NAN], polish=False), ValueError, r"f_ref must be finite"),
        (dict(f_ref=[1.0, 2.0]), ValueError, r"f_ref must have shape \(1,\)"),
        (dict(min_rcond=-1.0), ValueError, r"min_rcond must be finite and in \[0, 1\)"),
        (dict(tol=0.0), ValueError, r"tol must be finite and > 0"),
        (dict(tol=NAN), ValueError, r"tol must be finite and > 0"),
        (dict(tol="1e-9"), TypeError, r"tol must be a number"),
        (dict(continuation=-1), ValueError, r"continuation must be an integer >= 0"),
        (dict(continuation=2.5), ValueError, r"continuation must be an integer >= 0, got 2.5"),
        (dict(max_steps=0), ValueError, r"max_steps must be an integer >= 1"),
    ],
)
def test_loop_constraint_refuses_bad_construction(kw, exc, match):
    args = dict(fn=_sqrt_residual, params={"s": 1.0}, coordinates="q", joints="f", q_ref=[1.0], f_ref=[1.0])
    args.update(kw)
    fn, params, coords, joints, q_ref, f_ref = (args.pop(k) for k in ("fn", "params", "coordinates", "joints",
                                                                      "q_ref", "f_ref"))
    with pytest.raises(exc, match=match):
        LoopConstraint(fn, params, coords, joints, q_ref, f_ref, **args)


def test_loop_constraint_valid_twin(con):
    assert con.joints == ("f",) and con.coordinates == ("q",) and con.continuation == 8
    np.testing.assert_allclose(con.f_ref, [1.0], atol=1e-14)


def test_solvers_refuse_bad_q_and_constraint(con):
    for fn in (implicit_solve, implicit_values, loop_values, projection_values):
        name = fn.__name__
        with pytest.raises(ValueError, match=rf"{name}: q must have shape \(n_q,\) = \(1,\) for coordinates \('q',\), got \(2,\)"):
            fn(con, jnp.ones(2))
        with pytest.raises(ValueError, match=rf"{name}: q must have shape .* got \(\)"):
            fn(con, 0.25)
        with pytest.raises(TypeError, match=rf"{name}: constraint must be a mbjax.constraints.LoopConstraint, got NoneType"):
            fn(None, Q)
        # NaN q: named as such, not "did not converge"
        with pytest.raises(RuntimeError, match=r"q contains NaN or inf for coordinates \('q',\)"):
            jax.block_until_ready(fn(con, jnp.array([NAN])))
    with pytest.raises(ValueError, match=r"loop_values: unknown closed-chain method 'magic'"):
        loop_values(con, Q, method="magic")


def test_solvers_valid_twin_closed_form(con):
    f, g, h = _closed_form(0.25)
    np.testing.assert_allclose(implicit_solve(con, Q), [f], rtol=1e-12)
    for out in (implicit_values(con, Q), loop_values(con, Q), projection_values(con, Q),
                loop_values(con, Q, method="molecule", step=1e-4)):
        np.testing.assert_allclose(out[0], [f], rtol=1e-12)
        np.testing.assert_allclose(out[1], [[g]], rtol=1e-6)
        np.testing.assert_allclose(out[2], [[[h]]], rtol=1e-4)


def test_derivatives_refuse_unsolved_or_misshaped_f(con):
    f = jnp.array([0.5])
    for fn in (projection_derivatives, direct_derivatives):
        name = fn.__name__
        with pytest.raises(ValueError, match=rf"{name}: f must have shape \(m,\) = \(1,\) for joints \('f',\), got \(2,\)"):
            fn(con, jnp.ones(2), Q)
        with pytest.raises(ValueError, match=rf"{name}: q must have shape"):
            fn(con, f, jnp.ones(3))
        with pytest.raises(RuntimeError, match=rf"{name}: f contains NaN or inf"):
            jax.block_until_ready(fn(con, jnp.array([NAN]), Q))
        # an f off the constraint gave plausible derivatives of nothing
        with pytest.raises(RuntimeError, match=rf"{name}: f does not solve g\(f, q\) = 0"):
            jax.block_until_ready(fn(con, jnp.array([0.7]), Q))
        g, h = fn(con, f, Q)
        _, g0, h0 = _closed_form(0.25)
        np.testing.assert_allclose(g, [[g0]], rtol=1e-12)
        np.testing.assert_allclose(h, [[[h0]]], rtol=1e-12)


def test_hessian_rhs_shapes_and_closed_form(con):
    # a building block of projection_derivatives (which checks values); shapes checked here
    f, g0, _ = _closed_form(0.25)
    with pytest.raises(ValueError, match=r"hessian_rhs: grad \(∇f\) must have shape \(m, n_q\) = \(1, 1\)"):
        hessian_rhs(con, jnp.array([f]), Q, jnp.ones((2, 1)))
    with pytest.raises(ValueError, match=r"hessian_rhs: f must have shape"):
        hessian_rhs(con, jnp.ones(3), Q, jnp.ones((1, 1)))
    with pytest.raises(TypeError, match=r"hessian_rhs: constraint must be"):
        hessian_rhs("con", jnp.array([f]), Q, jnp.ones((1, 1)))
    # g = f² - q: ∇²g = diag(2, 0), 𝐉 = [f'; 1], Γ = -2 f'²
    gamma = hessian_rhs(con, jnp.array([f]), Q, jnp.array([[g0]]))
    np.testing.assert_allclose(gamma, [[[-2 * g0**2]]], rtol=1e-14)


def test_check_jacobian_and_rcond(con):
    f = jnp.array([0.5])
    with pytest.raises(ValueError, match=r"check_jacobian: f must have shape \(m,\) = \(1,\)"):
        check_jacobian(con, jnp.ones(2), Q)  # was accepted silently
    with pytest.raises(ValueError, match=r"check_jacobian: q must have shape"):
        check_jacobian(con, f, jnp.ones(2))
    with pytest.raises(TypeError, match=r"check_jacobian: constraint must be"):
        check_jacobian("x", f, Q)
    with pytest.raises(RuntimeError, match=r"f or q contains NaN or inf"):
        jax.block_until_ready(check_jacobian(con, jnp.array([NAN]), Q))
    with pytest.raises(RuntimeError, match=r"\(near\) singular"):
        jax.block_until_ready(check_jacobian(con, jnp.array([1e-12]), jnp.array([1e-24])))
    np.testing.assert_allclose(check_jacobian(con, f, Q), f)

    with pytest.raises(ValueError, match=r"rcond: g_f \(∂g/∂f\) must be a non-empty square matrix \(m, m\), got shape \(3,\)"):
        rcond(jnp.ones(3))
    with pytest.raises(ValueError, match=r"rcond: g_f .* got shape \(0, 0\)"):
        rcond(jnp.zeros((0, 0)))
    with pytest.raises(ValueError, match=r"rcond: g_q \(∂g/∂q\) must have shape \(m, n_q\) = \(3, n_q\), got \(2, 1\)"):
        rcond(jnp.eye(3), jnp.ones((2, 1)))
    with pytest.raises(TypeError, match=r"rcond: g_f must be real"):
        rcond(jnp.eye(2) * 1j)
    with pytest.raises(RuntimeError, match=r"rcond: g_f contains NaN or inf"):
        jax.block_until_ready(rcond(jnp.eye(3) * NAN))
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    b = np.array([[1.0], [-2.0]])
    expect = np.linalg.svd(a, compute_uv=False)[-1] / np.linalg.svd(np.hstack([a, b]), compute_uv=False)[0]
    np.testing.assert_allclose(rcond(jnp.asarray(a), jnp.asarray(b)), expect, rtol=1e-12)


@pytest.mark.parametrize("n", [-1, 1.5, "2", True, None])
def test_molecule_offsets_refuses_bad_count(n):
    with pytest.raises(ValueError, match=r"molecule_offsets: n_coordinates must be an integer >= 0"):
        molecule_offsets(n)


def test_molecule_offsets_valid_twin():
    offs = molecule_offsets(3)
    assert offs.shape == (1 + 2 * 3 + 2 * 3 * 2, 3)  # centre, ±e_k, 4 diagonals per pair
    np.testing.assert_array_equal(offs[0], 0.0)
    assert len({tuple(r) for r in offs}) == offs.shape[0]
    np.testing.assert_array_equal(molecule_offsets(np.int64(1)), [[0.0], [1.0], [-1.0]])
    assert molecule_offsets(0).shape == (1, 0)  # a loop without coordinates: the centre only


def test_implicit_map_refuses_bad_joint_and_step(con):
    with pytest.raises(TypeError, match=r"ImplicitMap: joint must be a joint name in \('f',\) or an integer index, got 0.7"):
        ImplicitMap(con, 0.7)  # int(0.7) silently picked joint 0
    with pytest.raises(TypeError, match=r"got True"):
        ImplicitMap(con, True)
    with pytest.raises(TypeError, match=r"got None"):
        ImplicitMap(con, None)
    with pytest.raises(ValueError, match=r"joint index 1 out of range for 1 joints"):
        ImplicitMap(con, 1)
    with pytest.raises(ValueError, match=r"ImplicitMap: step \(molecule difference step\) must be finite and > 0, got -0.001"):
        ImplicitMap(con, 0, method="molecule", step=-1e-3)
    with pytest.raises(ValueError, match=r"must be finite and > 0, got nan"):
        ImplicitMap(con, "f", method="molecule", step=NAN)
    with pytest.raises(ValueError, match=r"ImplicitMap: step must be a scalar or have shape \(n_q,\) = \(1,\)"):
        ImplicitMap(con, 0, method="molecule", step=[1e-4, 1e-4])
    m = ImplicitMap(con, "f", method="molecule", step=1e-4)
    np.testing.assert_allclose(m.value(Q[None]), [0.5], rtol=1e-12)


def test_premodel_refuses_bad_grids(con):
    with pytest.raises(ValueError, match=r"premodel: grids must be a list of one 1-D grid per coordinate \('q',\) .*got an array of shape \(5,\)"):
        premodel(con, np.linspace(0.2, 1.0, 5))
    with pytest.raises(ValueError, match=r"premodel: grids must be a list .* got \[\]"):
        premodel(con, [])
    with pytest.raises(ValueError, match=r"premodel: the grid of coordinate 'q' must be 1-D with >= 2 points, got shape \(1,\)"):
        premodel(con, [[0.3]])
    with pytest.raises(ValueError, match=r"the grid of coordinate 'q' contains NaN or inf"):
        premodel(con, [[0.2, NAN, 1.0]])
    with pytest.raises(ValueError, match=r"the grid of coordinate 'q' must be strictly increasing"):
        premodel(con, [[0.2, 0.6, 0.4, 1.0]])  # was fitted as given
    with pytest.raises(ValueError, match=r"the grid of coordinate 'q' must be a 1-D array of numbers"):
        premodel(con, [["a", "b"]])
    with pytest.raises(ValueError, match=r"premodel: unknown kind 'cubic'"):
        premodel(con, [np.linspace(0.2, 1.0, 5)], kind="cubic")
    with pytest.raises(TypeError, match=r"premodel: constraint must be"):
        premodel(None, [np.linspace(0.2, 1.0, 5)])
    (spline,) = premodel(con, [np.linspace(0.2, 1.0, 41)])
    np.testing.assert_allclose(spline.value(jnp.array([[0.5]])), [np.sqrt(0.5)], rtol=1e-5)


def test_hermite_refuses_bad_inputs():
    k, v, s = [0.0, 1.0, 2.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"hermite: values must have shape \(K,\) or \(K, n\) with K = 3 knots, got \(2,\)"):
        hermite(0.5, k, [0.0, 1.0], s)  # indexing clamped silently
    with pytest.raises(ValueError, match=r"hermite: slopes must have shape .* got \(4,\)"):
        hermite(0.5, k, v, [0.0] * 4)
    with pytest.raises(ValueError, match=r"values and slopes must have the same shape"):
        hermite(0.5, k, v, np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"hermite: knots must be finite and strictly increasing"):
        hermite(0.5, [0.0, NAN, 2.0], v, s)  # NaN passed the increasing test
    with pytest.raises(ValueError, match=r"strictly increasing"):
        hermite(0.5, [0.0, 2.0, 1.0], v, s)
    with pytest.raises(ValueError, match=r"hermite: knots must be a 1-D array of >= 2 times, got shape \(1,\)"):
        hermite(0.5, [0.0], [0.0], [0.0])
    with pytest.raises(ValueError, match=r"hermite: t must be a scalar time \(jax.vmap over times\), got shape \(2,\)"):
        hermite(jnp.array([0.5, 1.5]), k, np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(TypeError, match=r"hermite: t must be a real scalar"):
        hermite("0.5", k, v, s)
    with pytest.raises(RuntimeError, match=r"hermite: t contains NaN or inf"):
        jax.block_until_ready(hermite(NAN, k, v, s))
    with pytest.raises(RuntimeError, match=r"hermite: values contains NaN or inf"):
        jax.block_until_ready(hermite(0.5, k, [0.0, NAN, 0.0], s))


def test_hermite_valid_twin_reproduces_a_cubic():
    c = np.array([0.3, -1.2, 0.7, 0.25])  # q(t) = c0 + c1 t + c2 t² + c3 t³: reproduced exactly
    knots = np.array([0.0, 0.7, 1.5, 2.0])
    q = lambda t: c[0] + c[1] * t + c[2] * t**2 + c[3] * t**3
    qd = lambda t: c[1] + 2 * c[2] * t + 3 * c[3] * t**2
    qdd = lambda t: 2 * c[2] + 6 * c[3] * t
    for t in (0.2, 1.0, 1.9):
        out = hermite(t, knots, q(knots), qd(knots))
        np.testing.assert_allclose(out, [q(t), qd(t), qdd(t)], rtol=1e-12, atol=1e-12)


def _parallelogram(**kw):
    args = dict(lengths=[1.0, 1.0, 1.0], com=[0.5, 0.5, 0.5], l0=1.0, drive=np.eye(1, 9, 2))
    args.update(kw)
    return PlanarChain(**args)


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(com=[0.5, 0.5]), ValueError, r"PlanarChain: com must have shape \(n,\) = \(3,\)"),
        (dict(lengths=[1.0, NAN, 1.0]), ValueError, r"PlanarChain: lengths contains NaN or inf"),
        (dict(lengths=[1.0, -1.0, 1.0]), ValueError, r"PlanarChain: lengths must be > 0"),
        (dict(l0=[1.0, 2.0]), ValueError, r"PlanarChain: l0 \(ground span\) must be a scalar, got shape \(2,\)"),
        (dict(l0=np.inf), ValueError, r"PlanarChain: l0 contains NaN or inf"),
        (dict(lengths=[1.0, 1.0], com=[0.5, 0.5], drive=np.zeros((0, 6))), ValueError,
         r"lengths must be a 1-D array of n >= 3 link lengths"),
        (dict(lengths=[[1.0, 1.0, 1.0]]), ValueError, r"lengths must be a 1-D array of n >= 3 .* got shape \(1, 3\)"),
        (dict(lengths="abc"), TypeError, r"PlanarChain: lengths must be a real array, got str"),
        (dict(drive=np.zeros((2, 9))), ValueError, r"drive must be \(1, 9\), got \(2, 9\)"),
    ],
)
def test_planar_chain_refuses_bad_geometry(kw, exc, match):
    with pytest.raises(exc, match=match):
        _parallelogram(**kw)


def test_planar_chain_valid_twin():
    # a unit square closed to the ground pivot (1, 0); the drive is φ_1 = q
    chain = _parallelogram()
    p = chain.from_joint_angles(jnp.array([np.pi / 2, -np.pi / 2, -np.pi / 2]))
    np.testing.assert_allclose(chain.constraints(p, jnp.array([np.pi / 2])), 0.0, atol=1e-14)


# ------------------------------------------------------------------------------------------------
# reactions: a 2-link planar arm (revolute z joints)
# ------------------------------------------------------------------------------------------------


def _arm():
    b = mbjax.ModelBuilder(["a", "b"])
    b.add_body("u", joint="revolute", axis=[0, 0, 1], map="a", mass=1.0, inertia=np.eye(3) * 0.01, com=[0.5, 0, 0])
    b.add_body("v", parent="u", map="b", mass=2.0, inertia=np.eye(3) * 0.02, translation=[1, 0, 0], com=[0.5, 0, 0])
    return b.build()


ARM = _arm()
QA = jnp.array([0.3, 0.2])
Z2 = jnp.zeros(2)
_POSE_FNS = {
    "velocity_jacobian": lambda q, qd, qdd: rx.velocity_jacobian(ARM, q),
    "augmented_jacobians": lambda q, qd, qdd: rx.augmented_jacobians(ARM, q),
    "acceleration_bias": lambda q, qd, qdd: rx.acceleration_bias(ARM, q, qd),
    "body_mass_matrix": lambda q, qd, qdd: rx.body_mass_matrix(ARM, q),
    "applied_forces": lambda q, qd, qdd: rx.applied_forces(ARM, q, qd),
    "prohibited_directions": lambda q, qd, qdd: rx.prohibited_directions(ARM, q),
    "blajer_matrices": lambda q, qd, qdd: rx.blajer_matrices(ARM, q),
    "transmitted_multipliers": lambda q, qd, qdd: rx.transmitted_multipliers(ARM, q, qd, qdd),
    "resolved_multipliers": lambda q, qd, qdd: rx.resolved_multipliers(ARM, q, qd, qdd),
    "joint_reactions_dense": lambda q, qd, qdd: rx.joint_reactions_dense(ARM, q, qd, qdd),
}
_USES = {"acceleration_bias": ("q", "qd"), "applied_forces": ("q", "qd"), "transmitted_multipliers": ("q", "qd", "qdd"),
         "resolved_multipliers": ("q", "qd", "qdd"), "joint_reactions_dense": ("q", "qd", "qdd")}


@pytest.mark.parametrize("name", sorted(_POSE_FNS))
def test_reaction_oracles_refuse_bad_pose(name):
    fn = _POSE_FNS[name]
    for arg in _USES.get(name, ("q",)):
        args = {"q": QA, "qd": Z2, "qdd": Z2}
        args[arg] = Z2[:1]  # qd/qdd gave a JAX jvp/dot_general error, a short qdd was even accepted
        with pytest.raises(ValueError, match=rf"{name}: {arg} must have shape \(nq,\) = \(2,\) for coordinates \('a', 'b'\), got \(1,\)"):
            fn(**args)
        args[arg] = jnp.array([0.1, NAN])  # was NaN out (or, for the fixed bases, a finite answer)
        with pytest.raises(RuntimeError, match=rf"{name}: {arg} contains NaN or inf for coordinates"):
            jax.block_until_ready(fn(**args))


def test_constraint_matrix_guarded_by_prohibited_directions():
    # constraint_matrix (reactions/classical.py) reads q through prohibited_directions' checks
    with pytest.raises(RuntimeError, match=r"prohibited_directions: q contains NaN or inf"):
        jax.block_until_ready(rx.constraint_matrix(ARM, jnp.array([NAN, 0.0])))
    with pytest.raises(ValueError, match=r"q must have shape \(2,\)"):
        rx.constraint_matrix(ARM, QA[:1])
    with pytest.raises(TypeError, match=r"joint_reactions: model must be an mbjax.Model"):
        rx.constraint_matrix(None, QA)
    # valid twin: admissible velocities satisfy the constraints, C D = 0
    c = rx.constraint_matrix(ARM, QA)
    d = rx.velocity_jacobian(ARM, QA).reshape(-1, 2)
    assert c.shape == (10, 12)
    np.testing.assert_allclose(c @ d, 0.0, atol=1e-12)


def test_reaction_joints_and_model_refused():
    with pytest.raises(ValueError, match=r"joints is empty; name at least one joint by its child body, one of \('u', 'v'\)"):
        rx.joint_reactions_dense(ARM, QA, Z2, Z2, joints=[])  # was an empty result
    with pytest.raises(TypeError, match=r"a joint is named by its child body .* got True"):
        rx.joint_reactions_dense(ARM, QA, Z2, Z2, joints=True)  # was body 1
    with pytest.raises(TypeError, match=r"got 1.5"):
        rx.transmitted_multipliers(ARM, QA, Z2, Z2, joints=[1.5])
    with pytest.raises(ValueError, match=r"unknown joint 'elbow'"):
        rx.blajer_matrices(ARM, QA, joints=["elbow"])
    with pytest.raises(TypeError, match=r"joint_reactions: model must be an mbjax.Model .* got NoneType"):
        rx.joint_reactions_dense(None, QA, Z2, Z2)  # was "needs concrete body masses"
    with pytest.raises(TypeError, match=r"velocity_jacobian: model must be an mbjax.Model"):
        rx.velocity_jacobian("arm", QA)
    with pytest.raises(ValueError, match=r"blajer_matrices: rows must be 'all' or 'massive', got 'massiv'"):
        rx.blajer_matrices(ARM, QA, rows="massiv")  # was read as "all"
    with pytest.raises(ValueError, match=r"prohibited_directions: rtol .* must be a number in \[0, 1\), got -1.0"):
        rx.prohibited_directions(ARM, QA, rtol=-1.0)
    with pytest.raises(TypeError, match=r"applied_forces: external must be mbjax.ExternalLoads"):
        rx.applied_forces(ARM, QA, Z2, jnp.zeros(2))
    with pytest.raises(ValueError, match=r"body_mass_matrix: q must be a real array"):
        rx.body_mass_matrix(ARM, "x")


def test_model_fingerprint():
    with pytest.raises(TypeError, match=r"model_fingerprint: model must be an mbjax.Model .* got NoneType"):
        rx.model_fingerprint(None)
    with pytest.raises(TypeError, match=r"got str"):
        rx.model_fingerprint("arm26")
    assert rx.model_fingerprint(ARM) == rx.model_fingerprint(_arm())
    b = mbjax.ModelBuilder(["a"])
    b.add_body("u", joint="revolute", axis=[0, 0, 1], map="a", mass=1.0, inertia=np.eye(3) * 0.01)
    assert rx.model_fingerprint(b.build()) != rx.model_fingerprint(ARM)


def test_reaction_oracles_valid_twins():
    q, qd, qdd = QA, jnp.array([0.4, -0.3]), jnp.array([1.0, 0.5])
    fast = mbjax.joint_reactions(ARM, q, qd, qdd)  # the O(n) route
    dense = rx.joint_reactions_dense(ARM, q, qd, qdd)
    np.testing.assert_allclose(dense.local, fast.local, atol=1e-12)
    np.testing.assert_allclose(rx.transmitted_multipliers(ARM, q, qd, qdd), -fast.local, atol=1e-12)
    np.testing.assert_allclose(rx.resolved_multipliers(ARM, q, qd, qdd),
                               -np.concatenate([np.asarray(c) for c in fast.components]), atol=1e-12)
    # closed forms of body u (revolute z at the origin, COM 0.5 along its x axis)
    d = rx.velocity_jacobian(ARM, q)
    np.testing.assert_allclose(d[0, :, 0], [0, 0, 1, -0.5 * np.sin(0.3), 0.5 * np.cos(0.3), 0], atol=1e-14)
    d2, e = rx.augmented_jacobians(ARM, q)
    np.testing.assert_allclose(d2, d, atol=1e-14)
    assert e.shape == (2, 6, 2, 6)
    np.testing.assert_allclose(rx.body_mass_matrix(ARM, q)[1, 3:, 3:], 2.0 * np.eye(3))
    np.testing.assert_allclose(rx.applied_forces(ARM, q, Z2)[:, 3:], np.outer([1.0, 2.0], ARM.gravity), atol=1e-14)
    np.testing.assert_allclose(rx.acceleration_bias(ARM, q, Z2), 0.0, atol=1e-14)
    for z in rx.prohibited_directions(ARM, q):  # orthonormal, orthogonal to the free rotation about z
        np.testing.assert_allclose(z.T @ z, np.eye(5), atol=1e-14)
        np.testing.assert_allclose(z.T @ np.array([0, 0, 1, 0, 0, 0.0]), 0.0, atol=1e-14)
    dd, ez = rx.blajer_matrices(ARM, q, rows="massive")
    assert dd.shape == (12, 2) and ez.shape == (12, 10)
    # float32 / integer poses against a float64 model no longer trip JAX's jvp dtype rule
    np.testing.assert_allclose(rx.acceleration_bias(ARM, q.astype(jnp.float32), qd.astype(jnp.float32)),
                               rx.acceleration_bias(ARM, jnp.asarray(q.astype(jnp.float32), float), qd.astype(jnp.float32).astype(float)),
                               atol=1e-14)


# ------------------------------------------------------------------------------------------------
# sharing
# ------------------------------------------------------------------------------------------------


def _problem():
    """One coordinate, two muscles: min a1² + a2² s.t. 0.04·100 a1 + 0.02·100 a2 = 1 (bounds inactive)."""
    return SharingProblem(jnp.array([[0.04, 0.02]]), jnp.array([100.0, 100.0]), jnp.zeros(2), jnp.array([1.0]))


def _least_norm(problem):
    a = np.asarray(problem.moment_arms) * np.asarray(problem.f_opt)[None]
    return np.linalg.pinv(a) @ np.asarray(problem.tau)


def test_solve_problem_refuses_bad_problems():
    pr = _problem()
    with pytest.raises(TypeError,
                       match=r"solve_problem: problem must be a mbjax.analysis.sharing.SharingProblem .* got tuple"):
        solve_problem(tuple(pr)[:4])
    with pytest.raises(TypeError, match=r"got ndarray"):
        solve_problem(np.eye(2))
    with pytest.raises(ValueError, match=r"solve_problem: problem.f_opt must have shape \(2,\) \(nq = 1 coordinates, nm = 2 muscles"):
        solve_problem(pr._replace(f_opt=jnp.ones(3)))
    with pytest.raises(ValueError, match=r"problem.tau must have shape \(1,\)"):
        solve_problem(pr._replace(tau=jnp.ones(2)))
    with pytest.raises(ValueError, match=r"problem.moment_arms must have shape \(nq, nm\), got \(3, 1, 2\) \(a problem stacked over frames goes to solve_trajectory\)"):
        solve_problem(jax.tree.map(lambda x: jnp.stack([x] * 3), pr))
    with pytest.raises(RuntimeError, match=r"the problem \(moment_arms, f_opt, f_passive, tau or actuators\) contains NaN or inf"):
        jax.block_until_ready(solve_problem(pr._replace(f_opt=jnp.array([NAN, 1.0]))))  # was NaN activations
    with pytest.raises(RuntimeError, match=r"solve_problem: initial_guess contains NaN or inf"):
        jax.block_until_ready(solve_problem(pr, initial_guess=jnp.array([NAN, 0.0])))
    with pytest.raises(ValueError, match=r"initial_guess \(a previous result\) has activations of shape \(3,\)"):
        solve_problem(pr, initial_guess=solve_problem(pr)._replace(activations=jnp.ones(3)))
    with pytest.raises(ValueError,
                       match=r"solver_options: unknown option\(s\) \['bogus'\]; mbjax.analysis.sharing.qp.solve takes"):
        solve_problem(pr, solver_options=dict(bogus=1))
    with pytest.raises(RuntimeError, match=r"lower bound .* is above its upper bound"):
        jax.block_until_ready(solve_problem(pr, activation_bounds=(1.0, 0.0)))
    r = solve_problem(pr, solver_options=dict(max_outer=40))
    assert bool(r.converged)
    np.testing.assert_allclose(r.activations, _least_norm(pr), rtol=1e-8)
    np.testing.assert_allclose(r.residual, 0.0, atol=1e-10)


def test_solve_trajectory_refuses_bad_input():
    pr = _problem()
    taus = jnp.array([[1.0], [0.5], [0.8]])
    prs = SharingProblem(*(jnp.stack([x] * 3) for x in pr[:3]), taus)
    with pytest.raises(ValueError, match=r"solve_trajectory: problem.moment_arms must have shape \(T, nq, nm\), got \(1, 2\) \(one frame's problem goes to solve_problem\)"):
        solve_trajectory(pr)
    with pytest.raises(TypeError,
                       match=r"solve_trajectory: problem must be a mbjax.analysis.sharing.SharingProblem .* got list"):
        solve_trajectory([pr, pr])
    with pytest.raises(TypeError, match=r"warm_start must be True or False, got 'no'"):
        solve_trajectory(prs, warm_start="no")  # a string read as True
    with pytest.raises(ValueError, match=r"initial_guess must have shape \(nm,\) = \(2,\), got \(3,\)"):
        solve_trajectory(prs, initial_guess=jnp.ones(3))
    with pytest.raises(ValueError, match=r"got \(3, 2\) \(one guess per frame needs warm_start=False\)"):
        solve_trajectory(prs, initial_guess=jnp.ones((3, 2)))
    with pytest.raises(ValueError, match=r"\(nm,\) = \(2,\) or \(T, nm\) = \(3, 2\), got \(2, 2\)"):
        solve_trajectory(prs, warm_start=False, initial_guess=jnp.ones((2, 2)))
    with pytest.raises(RuntimeError, match=r"solve_trajectory: initial_guess contains NaN or inf"):
        jax.block_until_ready(solve_trajectory(prs, initial_guess=jnp.array([NAN, 0.0])))
    with pytest.raises(ValueError, match=r"solve_trajectory: no frames"):
        solve_trajectory(jax.tree.map(lambda x: x[:0], prs))
    for ws in (True, False):
        r = solve_trajectory(prs, warm_start=ws)
        for k in range(3):
            np.testing.assert_allclose(r.activations[k], _least_norm(jax.tree.map(lambda x: x[k], prs)), rtol=1e-7)


def test_check_feasible_refuses_bad_input():
    pr = _problem()
    r = solve_problem(pr)
    with pytest.raises(TypeError, match=r"infeasibility_report: result must be a StaticOptimizationResult .* got ndarray"):
        check_feasible(np.zeros(2))
    with pytest.raises(ValueError, match=r"tol must be a finite number >= 0 \(N·m\), got nan"):
        check_feasible(r, tol=NAN)  # every frame was reported infeasible
    with pytest.raises(ValueError, match=r"got -1"):
        check_feasible(r, tol=-1)
    bad = r._replace(residual=jnp.array([0.5]))
    with pytest.raises(ValueError, match=r"2 coordinate names \['x', 'y'\] for a residual of 1 coordinates"):
        check_feasible(bad, ["x", "y"])  # the wrong names were attached
    with pytest.raises(ValueError, match=r"times must have one entry per frame \(1,\), got shape \(0,\)"):
        check_feasible(bad, ["x"], times=[])  # was IndexError
    check_feasible(r, ["x"])  # feasible: nothing raised
    with pytest.raises(InfeasibleError, match=r"frame 0: x: residual = 0.5"):
        check_feasible(bad, "x")


ARM26 = None


def _arm26():
    global ARM26
    if ARM26 is None:
        ARM26 = mbjax.models.load("arm26", ignore_wrapping=True)
    return ARM26


def test_muscle_force_coefficients_and_sharing_problem():
    model = _arm26()
    q, z = jnp.array([0.3, 0.8]), jnp.zeros(2)
    for fn in (muscle_force_coefficients, sharing_problem):
        name = fn.__name__
        extra = (z,) if fn is sharing_problem else ()
        with pytest.raises(ValueError, match=rf"{name}: qd must have shape \(nq,\) = \(2,\) for coordinates \('r_shoulder_elev', 'r_elbow_flex'\), got \(1,\)"):
            fn(model, q, z[:1], *extra)  # was a dot_general error
        with pytest.raises(RuntimeError, match=rf"{name}: qd contains NaN or inf"):
            jax.block_until_ready(fn(model, q, jnp.array([NAN, 0.0]), *extra, **({"tau": z} if extra else {})))
        with pytest.raises(ValueError, match=rf"{name}: moment_arms must have shape \(nq, nm\) = \(2, 6\) for muscles"):
            fn(model, q, z, *extra, R=jnp.ones((2, 2)))  # was ignored in muscle_force_coefficients
        with pytest.raises(ValueError, match=rf"{name}: lengths must have shape \(nm,\) = \(6,\)"):
            fn(model, q, z, *extra, R=jnp.ones((2, 6)), L=jnp.ones(2))  # was garbage forces
        with pytest.raises(RuntimeError, match=rf"{name}: lengths must be finite and > 0 .*muscle 'TRIlong'"):
            jax.block_until_ready(fn(model, q, z, *extra, R=jnp.ones((2, 6)), L=jnp.full(6, NAN)))
        with pytest.raises(TypeError, match=rf"{name}: model must be an mbjax.Model .* got NoneType"):
            fn(None, q, z, *extra)
    with pytest.raises(RuntimeError, match=r"sharing_problem: actuators contains NaN or inf"):
        jax.block_until_ready(sharing_problem(model, q, z, z, tau=z, actuators=jnp.full((2, 1), NAN)))
    # valid twins: without physiology f_opt is the maximum isometric force; R is mbjax.moment_arms
    f_opt, f_pas = muscle_force_coefficients(model, q, z, use_muscle_physiology=False)
    from mbjax.muscles.parameters import hill_parameters
    from mbjax.muscles.paths import get_paths

    fmax = hill_parameters(get_paths(model))["max_isometric_force"]
    np.testing.assert_allclose(f_opt, fmax)
    np.testing.assert_allclose(f_pas, 0.0)
    tau = jnp.array([1.0, -2.0])
    pr = sharing_problem(model, q, z, z, tau=tau, actuators=jnp.eye(2))
    np.testing.assert_allclose(pr.tau, tau)
    np.testing.assert_allclose(pr.moment_arms, mbjax.moment_arms(model, q), atol=1e-15)
