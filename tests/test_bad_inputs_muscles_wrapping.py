"""Bad inputs to the paper-shaped muscle oracles (path_state, gmlav, body_wrenches, gamma_beta,
moment_arms_block, moment_arms_sparse, cross_body_lengths), the muscle building blocks
(MovingPathPoint, MusclePaths, hill_parameters, activation_rate, build_path_functions) and the
single-surface geodesics and wrap objects of mbjax.wrapping: refused by function and argument,
never a plausible number."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.models
import mbjax.muscles as mm
import mbjax.wrapping as mw
from mbjax.maps import Affine
from mbjax.muscles import ConditionalPathPoint, MovingPathPoint, MusclePaths, PathPoint, build_paths, with_muscles

RUNTIME = (RuntimeError, eqx.EquinoxRuntimeError)


def _arm():
    """Two pins about z (shoulder at the origin, elbow at (0.3, 0, 0)); a muscle from ground to the
    forearm, one with a moving point on the upper arm, one with a conditional point."""
    b = mbjax.ModelBuilder(["shoulder", "elbow"])
    b.add_body("upper", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_body("fore", parent="upper", joint="revolute", axis=[0, 0, 1], map="elbow", translation=[0.3, 0, 0],
               mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    paths = {
        "flexor": [PathPoint("ground", [0.05, 0.04, 0.0]), PathPoint("upper", [0.2, 0.03, 0.0]),
                   PathPoint("fore", [0.05, 0.02, 0.0])],
        "mover": [PathPoint("upper", [0.05, -0.03, 0.0]),
                  MovingPathPoint("upper", [0.25, -0.02, 0.0], functions=(Affine(["elbow"], [0.01], 0.25), None, None)),
                  PathPoint("fore", [0.06, -0.02, 0.01])],
        "switch": [PathPoint("ground", [0.0, 0.05, 0.0]),
                   ConditionalPathPoint("upper", [0.1, 0.05, 0.0], coordinate="elbow", range=(-1.0, 1.0)),
                   PathPoint("fore", [0.08, 0.03, 0.0])],
    }
    return with_muscles(model, paths)


@pytest.fixture(scope="module")
def arm():
    return _arm()


Q = jnp.asarray([0.3, 0.5])
ORACLES = {
    "path_state": mm.path_state,
    "gmlav": mm.gmlav,
    "gamma_beta": mm.gamma_beta,
    "moment_arms_block": mm.moment_arms_block,
    "moment_arms_sparse": mm.moment_arms_sparse,
    "cross_body_lengths": mm.cross_body_lengths,
    "body_wrenches": lambda m, q: mm.body_wrenches(m, q, jnp.ones(3)),
}


# ------------------------------------------------------------------------------------------------
# the oracles: path_state, gmlav, gamma_beta, moment_arms_block, moment_arms_sparse,
# cross_body_lengths, body_wrenches
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ORACLES))
def test_oracles_refuse_a_non_model_by_name(arm, name):
    with pytest.raises(TypeError, match=f"{name}: model must be an mbjax Model"):
        ORACLES[name](None, Q)
    with pytest.raises(TypeError, match="model must be an mbjax Model"):
        ORACLES[name](mm.path_state, Q)


@pytest.mark.parametrize("name", list(ORACLES))
@pytest.mark.parametrize("q,match", [(jnp.zeros(1), r"q must have shape \(nq,\) = \(2,\)"),
                                     (jnp.zeros((4, 2)), r"q must have shape \(nq,\) = \(2,\)"),
                                     ("0.3", "q must be a real array"),
                                     (jnp.zeros(2) + 0j, "q must be a real")])
def test_oracles_refuse_bad_q_shapes_and_types(arm, name, q, match):
    with pytest.raises(ValueError, match=match):
        ORACLES[name](arm, q)


@pytest.mark.parametrize("name", list(ORACLES))
def test_oracles_refuse_nan_q_at_run_time(arm, name):
    with pytest.raises(RUNTIME, match=f"{name}: q contains NaN or inf"):
        ORACLES[name](arm, Q.at[1].set(jnp.nan))


@pytest.mark.parametrize("name", [n for n in ORACLES if n != "gamma_beta"])
def test_oracles_refuse_a_path_with_one_active_point(name):
    """Only the conditional point of ``switch`` left: before, the path counted as length 0 and
    moment arm 0 (moment_arms and muscle_lengths refuse it as undefined)."""
    b = mbjax.ModelBuilder(["shoulder"])
    b.add_body("upper", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=1.0, inertia=np.eye(3) * 0.01)
    model = with_muscles(b.build(), {
        "ok": [PathPoint("ground", [0.0, 0.05, 0.0]), PathPoint("upper", [0.2, 0.03, 0.0])],
        "switch": [PathPoint("ground", [0.0, 0.05, 0.0]),
                   ConditionalPathPoint("upper", [0.1, 0.05, 0.0], coordinate="shoulder", range=(-1.0, 1.0))]})
    fn = ORACLES[name] if name != "body_wrenches" else (lambda m, q: mm.body_wrenches(m, q, jnp.ones(2)))
    fn(model, jnp.asarray([0.5]))  # both paths defined: runs
    with pytest.raises(RUNTIME, match=f"{name}: muscle 'switch' has fewer than 2 active points"):
        fn(model, jnp.asarray([1.5]))
    with pytest.raises(RUNTIME, match="undefined"):  # the fast route says the same
        mbjax.moment_arms(model, jnp.asarray([1.5]))


@pytest.mark.parametrize("name", [n for n in ORACLES if n != "gamma_beta"])
def test_oracles_refuse_a_nan_path_point_set_after_loading(arm, name):
    """A NaN location would drop its segments (safe norm: length 0) without a word."""
    paths = arm.muscles
    bad = with_muscles(arm, eqx.tree_at(lambda p: p.location, paths, paths.location.at[0, 1, 0].set(jnp.nan)))
    with pytest.raises(RUNTIME, match=f"{name}: muscle 'flexor' has a path point that is not finite"):
        ORACLES[name](bad, Q)


@pytest.mark.parametrize("name", ["gmlav", "body_wrenches", "moment_arms_block", "moment_arms_sparse"])
def test_straight_line_oracles_refuse_wrapped_models(name):
    """They read straight segments only: a wrapped model gave straight-line answers silently."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [-0.1, 0.0, 0.0]), PathPoint("link", [0.1, 0.0, 0.0])]},
                        wrap_objects=[mw.WrapObject("w", "WrapCylinder", "link", (0.02, 0.5, 0.0))],
                        path_wraps={"m": [mw.PathWrap("w")]})
    fn = ORACLES[name] if name != "body_wrenches" else (lambda m, q: mm.body_wrenches(m, q, jnp.ones(1)))
    with pytest.raises(NotImplementedError, match=f"{name} reads straight-line paths.*'m'.*ignore_wrapping"):
        fn(with_muscles(model, paths), jnp.zeros(1))


def test_oracles_valid_twin_agree_with_autodiff(arm):
    """Unchanged on valid input: both oracle forms equal -∂L/∂q by autodiff; cross_body_lengths is
    the path length where no segment stays on one body."""
    ref = mm.moment_arms_autodiff(arm, Q)
    np.testing.assert_allclose(mm.moment_arms_block(arm, Q), ref, atol=1e-12)
    np.testing.assert_allclose(mm.moment_arms_sparse(arm, Q), ref, atol=1e-12)
    st = mm.path_state(arm, Q)
    np.testing.assert_allclose(jnp.sum(st.seg_len, -1), mbjax.muscle_lengths(arm, Q), atol=1e-14)
    lengths = mm.cross_body_lengths(arm, Q)
    np.testing.assert_allclose(lengths[0], mbjax.muscle_lengths(arm, Q)[0], atol=1e-14)
    gamma, beta, rev, jac = mm.gamma_beta(arm, Q)
    assert gamma.shape == (arm.n_bodies, 2, 3) and jac.shape == (arm.n_bodies, 2)
    # γ_i: the displacement of body i's origin per unit coordinate, in body i's frame (finite differences)
    poses = lambda q: mbjax.body_poses(arm, q)  # noqa: E731
    h = 1e-6
    for k in range(2):
        dq = jnp.zeros(2).at[k].set(h)
        d_world = (poses(Q + dq)[:, :3, 3] - poses(Q - dq)[:, :3, 3]) / (2 * h)
        d_body = jnp.einsum("iba,ib->ia", poses(Q)[:, :3, :3], d_world)
        np.testing.assert_allclose(gamma[:, k], d_body, atol=1e-8)


def test_oracles_of_a_model_without_muscles_are_empty():
    """As moment_arms' (nq, 0): before, an einsum or argmax error from deep inside."""
    b = mbjax.ModelBuilder(["a"])
    b.add_body("l", joint="revolute", axis=[0, 0, 1], map="a", mass=1.0, inertia=np.eye(3) * 0.01)
    model, q = b.build(), jnp.zeros(1)
    empty = mbjax.moment_arms(model, q).shape
    assert mm.moment_arms_block(model, q).shape == mm.moment_arms_sparse(model, q).shape == empty == (1, 0)
    assert mm.cross_body_lengths(model, q).shape == mbjax.muscle_lengths(model, q).shape == (0,)
    assert mm.gmlav(model, q)[0].shape == (1, 3, 0) and mm.path_state(model, q).world.shape == (0, 0, 3)
    np.testing.assert_array_equal(mm.body_wrenches(model, q, jnp.zeros(0))[0], np.zeros((1, 3)))


def test_body_wrenches_refuse_bad_forces(arm):
    with pytest.raises(ValueError, match=r"forces must have shape \(nm,\) = \(3,\) for muscles \('flexor'.*got \(2,\)"):
        mm.body_wrenches(arm, Q, jnp.ones(2))
    with pytest.raises(ValueError, match=r"forces must have shape \(nm,\) = \(3,\).*got \(\)"):
        mm.body_wrenches(arm, Q, 1.0)  # was broadcast by nothing: an einsum error
    with pytest.raises(ValueError, match="forces must be a real array"):
        mm.body_wrenches(arm, Q, "100")
    with pytest.raises(RUNTIME, match="forces contains NaN or inf"):
        mm.body_wrenches(arm, Q, jnp.asarray([1.0, jnp.nan, 2.0]))
    # valid twin: the resultant forces are Σ_m F_m E_m (gmlav), linear in F
    f = jnp.asarray([10.0, 20.0, 5.0])
    force, moment = mm.body_wrenches(arm, Q, f)
    e, e_hat = mm.gmlav(arm, Q)
    np.testing.assert_allclose(force, sum(f[m] * e[..., m] for m in range(3)), atol=1e-12)
    np.testing.assert_allclose(moment, sum(f[m] * e_hat[..., m] for m in range(3)), atol=1e-12)


def test_gmlav_refuses_a_foreign_path_state(arm):
    with pytest.raises(TypeError, match="gmlav: st must be the PathState"):
        mm.gmlav(arm, Q, st={"force": 1})
    other = with_muscles(arm, {"one": [PathPoint("ground", [0.0, 0.05, 0.0]), PathPoint("fore", [0.1, 0.0, 0.0])]})
    with pytest.raises(ValueError, match=r"gmlav: st is the path state of another model.*\(1, 2, 3\)"):
        mm.gmlav(arm, Q, mm.path_state(other, Q))
    e1, _ = mm.gmlav(arm, Q, mm.path_state(arm, Q))
    np.testing.assert_allclose(e1, mm.gmlav(arm, Q)[0], atol=0)


def test_cross_body_lengths_refuses_a_foreign_frozen(arm):
    with pytest.raises(TypeError, match="cross_body_lengths: frozen must be frozen_wrap_paths"):
        mm.cross_body_lengths(arm, Q, frozen=(1, 2))


def test_checks_off_keeps_the_oracles_running(arm):
    with mbjax.config.checks(False):
        r = mm.moment_arms_block(arm, Q)
    np.testing.assert_allclose(r, mm.moment_arms_autodiff(arm, Q), atol=1e-12)


# ------------------------------------------------------------------------------------------------
# MovingPathPoint, MusclePaths, hill_parameters
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("functions,match", [
    ((None, None), r"functions must be a 3-tuple"),
    ("xyz", r"functions must be a 3-tuple"),
    ((None, "elbow", None), r"functions\[1\] must be a single \(unstacked\) joint map.*got str"),
    ((None, lambda q: q, None), r"functions\[1\] must be a single \(unstacked\) joint map"),
    ((Affine([("elbow",), ("shoulder",)], [[0.1], [0.2]], [0.0, 0.0]), None, None), r"functions\[0\] must be a single"),
])
def test_moving_path_point_refuses_bad_functions_at_construction(functions, match):
    with pytest.raises(ValueError, match=f"MovingPathPoint 'p' on 'upper': {match}"):
        MovingPathPoint("upper", [0.0, 0.0, 0.0], name="p", functions=functions)


def test_moving_path_point_valid_twin_moves_with_its_coordinate(arm):
    """The moving point's x follows 0.25 + 0.01 elbow: its path length changes as that point moves."""
    st = mm.path_state(arm, Q)
    np.testing.assert_allclose(st.local[1, 1, 0], 0.25 + 0.01 * Q[1], atol=1e-15)


def test_muscle_paths_refuse_inconsistent_tables(arm):
    paths = arm.muscles
    with pytest.raises(ValueError, match=r"MusclePaths: location must have shape \(3, 3, 3\).*got \(3, 2, 3\)"):
        dataclasses.replace(paths, location=paths.location[:, :2])
    with pytest.raises(ValueError, match=r"MusclePaths: kinds must hold one entry per muscle \(3\)"):
        dataclasses.replace(paths, kinds=paths.kinds[:2])
    with pytest.raises(ValueError, match=r"MusclePaths: body must hold one entry per muscle \(3\), each of 3"):
        dataclasses.replace(paths, body=(paths.body[0], paths.body[1], paths.body[2][:2]))
    with pytest.raises(ValueError, match=r"MusclePaths: parameters\['max_isometric_force'\] must have one row"):
        dataclasses.replace(paths, parameters={"max_isometric_force": jnp.ones(2)})
    same = dataclasses.replace(paths)
    assert isinstance(same, MusclePaths)
    np.testing.assert_array_equal(mbjax.muscle_lengths(with_muscles(arm, same), Q), mbjax.muscle_lengths(arm, Q))


@pytest.mark.parametrize("obj", [None, "arm26", {"max_isometric_force": 1.0}, 3])
def test_hill_parameters_refuses_what_is_no_model(obj):
    with pytest.raises(TypeError, match="hill_parameters: expected a model with muscles or its MusclePaths"):
        mm.hill_parameters(obj)


def test_hill_parameters_valid_twin_fills_opensim_defaults(arm):
    p = mm.hill_parameters(arm)
    same = mm.hill_parameters(arm.muscles)
    assert set(p) == set(same)
    # a path-only muscle takes Muscle::constructProperties defaults
    np.testing.assert_array_equal(p["max_isometric_force"], np.full(3, 1000.0))
    np.testing.assert_array_equal(p["optimal_fiber_length"], np.full(3, 0.1))


# ------------------------------------------------------------------------------------------------
# activation_rate
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,match", [
    (dict(activation_time_constant=-0.01), "activation_rate: activation_time_constant must be positive"),
    (dict(deactivation_time_constant=0.0), "activation_rate: deactivation_time_constant must be positive"),
    (dict(minimum_activation=1.5), r"activation_rate: minimum_activation must lie in \[0, 1\)"),
    (dict(minimum_activation=-0.1), r"activation_rate: minimum_activation must lie in \[0, 1\)"),
    (dict(excitation=jnp.nan), "activation_rate: excitation contains NaN or inf"),
    (dict(activation=jnp.inf), "activation_rate: activation contains NaN or inf"),
    (dict(activation_time_constant=jnp.nan), "activation_rate: activation_time_constant contains NaN"),
])
def test_activation_rate_refuses_bad_values(kwargs, match):
    args = dict(excitation=0.5, activation=0.2, activation_time_constant=0.01, deactivation_time_constant=0.04,
                minimum_activation=0.01)
    args.update(kwargs)
    with pytest.raises(RUNTIME, match=match):
        mm.activation_rate(**args)


def test_activation_rate_refuses_shapes_that_would_broadcast():
    with pytest.raises(ValueError, match=r"activation_rate: excitation and activation must have one shape, "
                                         r"got \(3,\) and \(1,\)"):
        mm.activation_rate(jnp.ones(3), jnp.ones(1), 0.01, 0.04, 0.01)
    with pytest.raises(ValueError, match=r"activation_rate: minimum_activation must be a scalar or have the shape"):
        mm.activation_rate(jnp.ones(3), jnp.ones(3), 0.01, 0.04, jnp.ones(2) * 0.01)
    with pytest.raises(TypeError, match="activation_rate: excitation must be a real number or array, got str"):
        mm.activation_rate("0.5", 0.2, 0.01, 0.04, 0.01)


def test_activation_rate_valid_twin_is_the_closed_form():
    """ȧ = (u - a)/τ, τ = τ_act (0.5 + 1.5 a) rising, τ_deact / (0.5 + 1.5 a) falling; float32 too."""
    u, a = jnp.asarray([0.8, 0.1]), jnp.asarray([0.2, 0.5])
    got = mm.activation_rate(u, a, 0.01, jnp.asarray([0.04, 0.05]), 0.01)
    want = [(0.8 - 0.2) / (0.01 * (0.5 + 1.5 * 0.2)), (0.1 - 0.5) / (0.05 / (0.5 + 1.5 * 0.5))]
    np.testing.assert_allclose(got, want, rtol=1e-14)
    got32 = mm.activation_rate(u.astype(jnp.float32), a.astype(jnp.float32), 0.01, 0.04, 0.01)
    assert got32.dtype == jnp.float32
    np.testing.assert_allclose(got32[0], want[0], rtol=1e-6)
    # the simulation's route (activation_derivative) is unchanged
    d = mm.activation_derivative(jnp.asarray([0.8]), jnp.asarray([0.2]),
                                 {"minimum_activation": jnp.asarray([0.01]),
                                  "activation_time_constant": jnp.asarray([0.01]),
                                  "deactivation_time_constant": jnp.asarray([0.04]),
                                  "ignore_activation_dynamics": jnp.asarray([0.0])})
    np.testing.assert_allclose(d, want[:1], rtol=1e-14)


# ------------------------------------------------------------------------------------------------
# build_path_functions
# ------------------------------------------------------------------------------------------------


NAMES, COORDS = ("flexor", "mover"), ("shoulder", "elbow")


@pytest.mark.parametrize("spec,match", [
    (("elbow", 2, [0.3, 0.1, 0.01]),
     r"coordinates must be a sequence of names, got the string 'elbow' \(write \('elbow',\)"),
    ((("elbow",), 2.5, [0.3, 0.1, 0.01]), "order must be an integer >= 1, got 2.5"),
    ((("elbow",), True, [0.3, 0.1]), "order must be an integer >= 1, got True"),
    ((("elbow",), None, [0.3, 0.1]), "order must be an integer >= 1, got None"),
    ((("elbow",), 2, "abc"), "coefficients must be a sequence of numbers"),
    ((("elbow",), 2, [[0.3, 0.1, 0.01]]), r"coefficients must be one flat sequence .*got shape \(1, 3\)"),
    ((("elbow",), 2, [0.3, 0.1, 0.01], "a"), r"ranges must be one \(lower, upper\) pair of numbers"),
])
def test_build_path_functions_refuses_bad_specs_by_muscle(spec, match):
    with pytest.raises(ValueError, match=f"path function for muscle 'flexor': {match}"):
        mm.build_path_functions(NAMES, COORDS, {"flexor": spec})


def test_build_path_functions_refuses_bad_name_lists():
    spec = {"flexor": (("elbow",), 1, [0.3, 0.1])}
    with pytest.raises(TypeError, match="build_path_functions: muscle_names must be a sequence of names"):
        mm.build_path_functions("flexor", COORDS, spec)
    with pytest.raises(ValueError, match="build_path_functions: muscle_names repeat a name"):
        mm.build_path_functions(("flexor", "flexor"), COORDS, spec)
    with pytest.raises(ValueError, match="build_path_functions: coordinate_names repeat a name"):
        mm.build_path_functions(NAMES, ("elbow", "elbow"), spec)


def test_build_path_functions_valid_twin_evaluates_the_polynomial(arm):
    """L = 0.3 + 0.1 elbow + 0.01 elbow² (OpenSim term order 1, x, x²) and R = -dL/dq, closed form;
    an integral float order is accepted as the integer."""
    pf = mm.build_path_functions(arm.muscle_names, arm.coordinate_names,
                                 {"flexor": (("elbow",), 2.0, np.asarray([0.3, 0.1, 0.01]))})
    model = mm.with_path_functions(arm, pf)
    e = float(Q[1])
    np.testing.assert_allclose(mbjax.muscle_lengths(model, Q)[0], 0.3 + 0.1 * e + 0.01 * e * e, rtol=1e-14)
    np.testing.assert_allclose(mbjax.moment_arms(model, Q)[:, 0], [0.0, -(0.1 + 0.02 * e)], rtol=1e-14)


# ------------------------------------------------------------------------------------------------
# sphere_geodesic, sphere_geodesic_length, cylinder_geodesic, cylinder_geodesic_length (Geodesic)
# ------------------------------------------------------------------------------------------------


P1, P2 = jnp.asarray([2.0, 0.1, 0.0]), jnp.asarray([-2.0, 0.2, 0.5])
GEODESICS = {
    "sphere_geodesic": mw.sphere_geodesic,
    "sphere_geodesic_length": mw.sphere_geodesic_length,
    "cylinder_geodesic": mw.cylinder_geodesic,
    "cylinder_geodesic_length": mw.cylinder_geodesic_length,
}


@pytest.mark.parametrize("name", list(GEODESICS))
@pytest.mark.parametrize("radius,match", [(0.0, "radius must be finite and positive"),
                                          (-1.0, "radius must be finite and positive"),
                                          (jnp.nan, "radius must be finite and positive"),
                                          (jnp.inf, "radius must be finite and positive")])
def test_geodesics_refuse_bad_radii(name, radius, match):
    """Before: a straight chord (no wrap) for radius 0, negative or NaN, without a word."""
    with pytest.raises(RUNTIME, match=f"{name}: {match}"):
        GEODESICS[name](P1, P2, radius)


@pytest.mark.parametrize("name", list(GEODESICS))
def test_geodesics_refuse_nan_points(name):
    """Before: length 0 (NaN through the grad-safe norms) or inf."""
    with pytest.raises(RUNTIME, match=f"{name}: p1 contains NaN or inf"):
        GEODESICS[name](P1.at[0].set(jnp.nan), P2, 1.0)
    with pytest.raises(RUNTIME, match=f"{name}: p2 contains NaN or inf"):
        GEODESICS[name](P1, P2.at[2].set(jnp.inf), 1.0)


@pytest.mark.parametrize("name", list(GEODESICS))
@pytest.mark.parametrize("p1,p2,radius,exc,match", [
    (P1[:2], P2[:2], 1.0, ValueError, r"p1 must have shape \(\.\.\., 3\).*got \(2,\)"),
    (jnp.tile(P1, (2, 1)), jnp.tile(P2, (4, 1)), 1.0, ValueError, r"p1 \(2, 3\) and p2 \(4, 3\) must have leading"),
    (P1, P2, jnp.ones(3), ValueError, r"radius must be a scalar or an array that broadcast.*got \(3,\)"),
    ("p1", P2, 1.0, TypeError, "p1 must be a real array, got str"),
    (P1, P2, "1", TypeError, "radius must be a real array, got str"),
    (P1 + 0j, P2, 1.0, TypeError, "p1 must be a real"),
])
def test_geodesics_refuse_bad_shapes_and_types(name, p1, p2, radius, exc, match):
    with pytest.raises(exc, match=f"{name}: {match}"):
        GEODESICS[name](p1, p2, radius)


def test_cylinder_side_and_allowed_are_checked():
    with pytest.raises(ValueError, match=r"cylinder_geodesic_length: side must be -1, 0 or \+1, got 2"):
        mw.cylinder_geodesic_length(P1, P2, 1.0, side=2)
    with pytest.raises(ValueError, match=r"side must be -1, 0 or \+1, got True"):
        mw.cylinder_geodesic_length(P1, P2, 1.0, side=True)
    with pytest.raises(ValueError, match=r"cylinder_geodesic: allowed must have shape \(\.\.\., 2\).*got \(3,\)"):
        mw.cylinder_geodesic(P1, P2, 1.0, allowed=jnp.ones(3))
    with pytest.raises(TypeError, match="cylinder_geodesic: allowed must be a real array"):
        mw.cylinder_geodesic(P1, P2, 1.0, allowed="+x")
    with pytest.raises(ValueError, match=r"cylinder_geodesic: allowed \(4, 2\) must have leading axes"):
        mw.cylinder_geodesic(P1, P2, 1.0, allowed=jnp.ones((4, 2)))
    with pytest.raises(RUNTIME, match="cylinder_geodesic: allowed contains NaN or inf"):
        mw.cylinder_geodesic(P1, P2, 1.0, allowed=jnp.asarray([jnp.nan, 0.0]))


def test_geodesics_valid_twins_match_closed_forms():
    """Sphere: √(a²−R²) + √(b²−R²) + R(γ − α − β); the Geodesic's pieces add up to its length;
    integer points are taken as floats (a float radius was truncated to the points' integer dtype)."""
    R = 1.0
    a, b = float(jnp.linalg.norm(P1)), float(jnp.linalg.norm(P2))
    gamma = float(jnp.arccos(jnp.dot(P1, P2) / (a * b)))
    closed = np.sqrt(a * a - R * R) + np.sqrt(b * b - R * R) + R * (gamma - np.arccos(R / a) - np.arccos(R / b))
    geo = mw.sphere_geodesic(P1, P2, R)
    assert isinstance(geo, mw.Geodesic) and bool(geo.wraps)
    np.testing.assert_allclose(geo.length, closed, rtol=1e-14)
    np.testing.assert_allclose(mw.sphere_geodesic_length(P1, P2, R)[0], closed, rtol=1e-14)
    pieces = jnp.linalg.norm(geo.t1 - P1) + geo.arc + jnp.linalg.norm(P2 - geo.t2)
    np.testing.assert_allclose(pieces, geo.length, rtol=1e-13)
    cyl = mw.cylinder_geodesic(P1, P2, R)
    np.testing.assert_allclose(jnp.linalg.norm(cyl.t1 - P1) + cyl.arc + jnp.linalg.norm(P2 - cyl.t2), cyl.length,
                               rtol=1e-13)
    np.testing.assert_allclose(mw.cylinder_geodesic_length(P1, P2, R)[0], cyl.length, rtol=1e-14)
    # integer points, float radius: the radius is used as given (it was cast to the points' integer dtype)
    floats = mw.sphere_geodesic(jnp.asarray([3.0, 0, 0]), jnp.asarray([-3.0, 1, 0]), 1.5)
    for p1, p2 in [([3, 0, 0], [-3, 1, 0]), ([3, 0, 0], [-3.0, 1, 0]), ([3.0, 0, 0], [-3, 1, 0])]:
        got = mw.sphere_geodesic(jnp.asarray(p1), jnp.asarray(p2), 1.5)
        np.testing.assert_allclose(got.t1, floats.t1, rtol=1e-15)
        np.testing.assert_allclose(got.length, floats.length, rtol=1e-15)
    # a batch of pairs with one radius per pair broadcasts as documented
    lengths, _ = mw.sphere_geodesic_length(jnp.stack([P1, P1]), P2, jnp.asarray([1.0, 0.5]))
    np.testing.assert_allclose(lengths[0], closed, rtol=1e-14)
    # gradients still flow (autodiff against central differences in the radius)
    g = jax.grad(lambda r: mw.cylinder_geodesic_length(P1, P2, r)[0])(R)
    h = 1e-6
    fd = (mw.cylinder_geodesic_length(P1, P2, R + h)[0] - mw.cylinder_geodesic_length(P1, P2, R - h)[0]) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-7)


# ------------------------------------------------------------------------------------------------
# ellipsoid_geodesic, ellipsoid_geodesic_length
# ------------------------------------------------------------------------------------------------


RADII = jnp.asarray([1.0, 0.8, 0.6])


@pytest.mark.parametrize("name", ["ellipsoid_geodesic", "ellipsoid_geodesic_length"])
@pytest.mark.parametrize("radii", [-RADII, RADII.at[0].set(0.0), RADII.at[2].set(jnp.nan)])
def test_ellipsoid_refuses_bad_radii_before_solving(name, radii):
    """Before: NaN (negative), or a straight chord (0, NaN) returned as the length."""
    with pytest.raises(RUNTIME, match=f"{name}: radii must be finite and positive"):
        getattr(mw, name)(P1, P2, radii)


@pytest.mark.parametrize("name", ["ellipsoid_geodesic", "ellipsoid_geodesic_length"])
@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(radii=1.0), ValueError, r"radii must have shape \(\.\.\., 3\) \(the semi-axes"),
    (dict(radii=RADII[:2]), ValueError, r"radii must have shape \(\.\.\., 3\)"),
    (dict(radii=jnp.ones((4, 3))), ValueError, r"radii must be \(\.\.\., 3\) semi-axes whose leading axes broadcast"),
    (dict(p1=P1[:2]), ValueError, r"p1 must have shape \(\.\.\., 3\)"),
    (dict(p2="x"), TypeError, "p2 must be a real array"),
    (dict(steps=0), ValueError, "steps must be a positive integer"),
    (dict(steps=-3), ValueError, "steps must be a positive integer"),
    (dict(steps=2.5), ValueError, "steps must be a positive integer"),
])
def test_ellipsoid_refuses_bad_shapes_types_and_steps(name, kwargs, exc, match):
    args = dict(p1=P1, p2=P2, radii=RADII)
    args.update(kwargs)
    with pytest.raises(exc, match=f"{name}: {match}"):
        getattr(mw, name)(**args)


def test_ellipsoid_refuses_nan_points():
    with pytest.raises(RUNTIME, match="ellipsoid_geodesic: p1 contains NaN or inf"):
        mw.ellipsoid_geodesic(P1.at[1].set(jnp.nan), P2, RADII)


def test_ellipsoid_valid_twin_passes_the_checks_unchanged():
    """Valid inputs reach the solve as given (integer points as floats); the solve's numbers are checked
    against the sphere's closed form and finite differences in tests/test_wrap_smooth_ellipsoid.py
    (a compile of about a minute, so not repeated here)."""
    from mbjax.wrapping.smooth_ellipsoid import _inputs

    p1, p2, radii = _inputs("ellipsoid_geodesic", P1, P2, RADII, 64)
    np.testing.assert_array_equal(p1, P1)
    np.testing.assert_array_equal(p2, P2)
    np.testing.assert_array_equal(radii, RADII)
    p1, _, _ = _inputs("ellipsoid_geodesic", jnp.asarray([2, 0, 0]), P2, RADII, 64)
    assert jnp.issubdtype(p1.dtype, jnp.floating)


@pytest.mark.extended  # two compiles of the shooting solve (about a minute each)
def test_ellipsoid_float32_points_in_a_float64_session():
    """float32 inputs with x64 on: the solve failed with a structure error deep inside lineax; now it
    runs in float64 and returns float32, agreeing with the float64 call to float32 precision."""
    f32 = [x.astype(jnp.float32) for x in (P1, P2, RADII)]
    geo32 = mw.ellipsoid_geodesic(*f32)
    assert geo32.length.dtype == jnp.float32
    np.testing.assert_allclose(geo32.length, mw.ellipsoid_geodesic_length(P1, P2, RADII), rtol=1e-6)


# ------------------------------------------------------------------------------------------------
# WrapObject, WrapLine, smooth_wrapping, with_wrapping
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(rotation=np.diag([1.0, 1.0, -1.0])), ValueError, "rotation must be a 3x3 proper rotation matrix.*reflection"),
    (dict(rotation=np.full((3, 3), np.nan)), ValueError, "rotation must be a 3x3 proper rotation matrix"),
    (dict(rotation="eye"), ValueError, "rotation must be a 3x3 rotation matrix of numbers, got 'eye'"),
    (dict(translation="x"), ValueError, "translation must be a 3-vector of numbers"),
    (dict(dimensions="abc"), ValueError, "dimensions must be a 3-vector of numbers"),
    (dict(dimensions=(0.1,)), ValueError, "dimensions must be a finite 3-vector"),
    (dict(dimensions=(-0.1, 0.2, 0.0)), ValueError, "dimensions must be positive"),
    (dict(quadrant=None), TypeError, "quadrant must be a string, got NoneType"),
    (dict(quadrant="+w"), ValueError, "quadrant '\\+w' is not one of"),
    (dict(body=None), TypeError, "body must be a string, got NoneType"),
    (dict(active="no"), TypeError, "active must be True or False, got 'no'"),
    (dict(kind="wrapcylinder"), ValueError, "kind 'wrapcylinder' is not one of"),
])
def test_wrap_object_refuses_bad_fields(kwargs, exc, match):
    args = dict(name="c", kind="WrapCylinder", body="link", dimensions=(0.1, 0.2, 0.0))
    args.update(kwargs)
    with pytest.raises(exc, match=f"wrap object 'c'.*{match}"):
        mw.WrapObject(**args)


def test_wrap_object_and_wrap_line_valid_twin():
    """A proper rotation is accepted; the OpenSim sphere's WrapLine over it wraps with the closed-form
    tangent-point arc (its surface length equals the smooth sphere's arc for a symmetric pass)."""
    from mbjax.wrapping.objects import xyz_body_fixed
    from mbjax.wrapping.sphere import wrap_sphere

    obj = mw.WrapObject("s", "WrapSphere", "link", (0.5, 0.0, 0.0), xyz_body_fixed((0.1, 0.2, 0.3)))
    np.testing.assert_allclose(np.linalg.det(np.asarray(obj.rotation)), 1.0)
    p1, p2 = jnp.asarray([1.0, 0.1, 0.0]), jnp.asarray([-1.0, 0.1, 0.0])
    line = wrap_sphere(p1, p2, jnp.asarray(0.5), 0, 0)
    assert isinstance(line, mw.WrapLine) and bool(line.wraps)
    np.testing.assert_allclose(line.length, mw.sphere_geodesic(p1, p2, 0.5).arc, rtol=1e-9)


@pytest.mark.parametrize("model", [None, "arm26", {"muscles": None}])
def test_with_wrapping_and_smooth_wrapping_refuse_a_non_model(model):
    with pytest.raises(TypeError, match="with_wrapping: model must be an mbjax Model"):
        mw.with_wrapping(model, "smooth")
    with pytest.raises(TypeError, match="with_wrapping: model must be an mbjax Model"):
        mw.smooth_wrapping(model)


@pytest.mark.parametrize("wrapping", ["Smooth", None, ["smooth"]])
def test_with_wrapping_refuses_unknown_choices(arm, wrapping):
    with pytest.raises(ValueError, match=r"with_wrapping: wrapping must be one of \('opensim', 'smooth'\)"):
        mw.with_wrapping(arm, wrapping)


def test_smooth_wrapping_valid_twin_is_the_geodesic():
    """A hinge with a cylinder: the smooth model's length is the cylinder geodesic between the ends."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [-0.1, 0.01, 0.0]), PathPoint("link", [0.1, 0.01, 0.0])]},
                        wrap_objects=[mw.WrapObject("w", "WrapSphere", "link", (0.02, 0.0, 0.0))],
                        path_wraps={"m": [mw.PathWrap("w")]})
    smooth = mw.smooth_wrapping(with_muscles(model, paths))
    assert mw.with_wrapping(smooth, "smooth") is smooth
    q = jnp.zeros(1)
    np.testing.assert_allclose(mbjax.muscle_lengths(smooth, q)[0],
                               mw.sphere_geodesic_length(jnp.asarray([-0.1, 0.01, 0.0]),
                                                         jnp.asarray([0.1, 0.01, 0.0]), 0.02)[0], rtol=1e-12)
