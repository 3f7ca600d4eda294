"""Bad inputs to the core calls: a non-Model first argument, a pose far outside the ranges given to
the muscle functions, per-muscle options by name, a model mismatch in the infeasibility report,
``simulate``'s controls, 2-D samples to the map fits, reversed and lone-string arguments of
``fit_path_functions``, and activations outside [0, 1] named by muscle.  Each with its valid twin."""

import importlib
import inspect
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import _checks
from mbjax.config import CoordinateRangeWarning

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = mbjax.models.load("arm26", ignore_wrapping=True)
Q, QD, A = jnp.asarray([0.3, 0.8]), jnp.zeros(2), jnp.full(6, 0.5)
FAR = jnp.asarray([0.0, 10.0])  # elbow at 10 rad: far outside 0..2.27
MUSCLES = ARM.muscles.names

TIERS = ["mbjax", "mbjax.io", "mbjax.opensim", "mbjax.models", "mbjax.reference", "mbjax.config", "mbjax.wrapping",
         "mbjax.muscles", "mbjax.analysis.identify", "mbjax.ligaments", "mbjax.analysis.sharing", "mbjax.forces",
         "mbjax.maps", "mbjax.constraints", "mbjax.reactions"]

#: functions in modules that other work fixes; skipped here until they refuse a non-Model clearly
FIXED_ELSEWHERE: set = set()  # every tier function refuses a non-Model first argument


def _model_functions():
    seen, out = set(), []
    for tier in TIERS:
        module = importlib.import_module(tier)
        for name in module.__all__:
            fn = getattr(module, name)
            if inspect.isclass(fn) or not callable(fn) or id(fn) in seen:
                continue
            try:
                params = list(inspect.signature(fn).parameters.values())
            except (TypeError, ValueError):
                continue
            if params and params[0].name == "model":
                seen.add(id(fn))
                out.append(pytest.param(fn, params, id=f"{tier}.{name}"))
    return out


@pytest.mark.parametrize("bad", [None, "arm26", 3.0], ids=["None", "str", "float"])
@pytest.mark.parametrize("fn, params", _model_functions())
def test_a_non_model_first_argument_is_refused(fn, params, bad):
    if fn.__name__ in FIXED_ELSEWHERE:
        pytest.skip("fixed in a module owned elsewhere")
    positional = [jnp.zeros(2) for p in params[1:] if p.default is p.empty
                  and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keywords = {p.name: jnp.zeros(2) for p in params[1:] if p.default is p.empty and p.kind == p.KEYWORD_ONLY}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(TypeError, match=r"mbjax[ .]Model"):
            fn(bad, *positional, **keywords)


def test_activation_derivative_refuses_params_that_are_no_model():
    with pytest.raises(TypeError, match=r"activation_derivative.*params must be an mbjax Model.*got NoneType"):
        mbjax.activation_derivative(0.5, 0.2, None)
    with pytest.raises(TypeError, match=r"params must be an mbjax Model.*got str"):
        mbjax.activation_derivative(A, A, "arm26")
    np.testing.assert_allclose(np.asarray(mbjax.activation_derivative(A, A, ARM)), 0.0, atol=1e-12)


# -- a pose far outside the ranges given eagerly to the muscle functions -------------------------

@pytest.mark.parametrize("name, call", [
    ("muscle_state", lambda q: mbjax.muscle_state(ARM, q, QD, A)),
    ("muscle_forces", lambda q: mbjax.muscle_forces(ARM, q, QD, A)),
    ("initial_fiber_lengths", lambda q: mbjax.initial_fiber_lengths(ARM, q, QD, A)),
    ("opensim_moment_arms", lambda q: mbjax.muscles.opensim_moment_arms(ARM, q)),
    ("path_points", lambda q: mbjax.muscles.path_points(ARM, q)),
    ("moment_arms_batched", lambda q: mbjax.muscles.moment_arms_batched(ARM, q[None])),
])
def test_muscle_functions_warn_once_for_a_pose_far_outside_the_ranges(name, call):
    with pytest.warns(CoordinateRangeWarning, match=rf"^{name}: .*'r_elbow_flex' = 10 outside") as record:
        call(FAR)
    assert len([w for w in record if issubclass(w.category, CoordinateRangeWarning)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        call(Q)  # the valid twin: no warning
        with mbjax.config.checks(False):
            call(FAR)  # checks off: silent


def test_muscle_state_numbers_unchanged():
    state = mbjax.muscle_state(ARM, Q, QD, A)
    length = mbjax.muscle_lengths(ARM, Q)
    speed = -(mbjax.moment_arms(ARM, Q).T @ QD)
    ref = mbjax.muscles.musculotendon_state(ARM, length, speed, A)
    np.testing.assert_array_equal(np.asarray(state.tendon_force), np.asarray(ref.tendon_force))
    np.testing.assert_array_equal(np.asarray(mbjax.muscle_forces(ARM, Q, QD, A)), np.asarray(ref.tendon_force))
    assert "minimum_activation" in mbjax.muscle_forces.__doc__


def test_activation_outside_the_unit_interval_names_the_muscle():
    with pytest.raises(RuntimeError, match=r"activation must be in \[0, 1\] for muscles .*: 'TRImed' is outside"):
        mbjax.muscle_forces(ARM, Q, QD, A.at[2].set(1.5))
    with pytest.raises(RuntimeError, match=r"initial_fiber_lengths: activation must be in \[0, 1\].*'BRA' is outside"):
        mbjax.initial_fiber_lengths(ARM, Q, QD, A.at[5].set(-0.1))


# -- static optimization: per-muscle options by name ---------------------------------------------

def test_static_optimization_takes_weights_and_reserves_by_name():
    by_name = mbjax.static_optimization(ARM, Q, QD, QD, weights={"BIClong": 2.0})
    w = np.ones(6)
    w[MUSCLES.index("BIClong")] = 2.0
    by_array = mbjax.static_optimization(ARM, Q, QD, QD, weights=jnp.asarray(w))
    np.testing.assert_array_equal(np.asarray(by_name.activations), np.asarray(by_array.activations))
    res_name = mbjax.static_optimization(ARM, Q, QD, QD, reserves={"r_elbow_flex": 10.0})
    res_array = mbjax.static_optimization(ARM, Q, QD, QD, reserves=jnp.asarray([0.0, 10.0]))
    np.testing.assert_array_equal(np.asarray(res_name.activations), np.asarray(res_array.activations))
    with pytest.raises(ValueError, match=r"static_optimization: weights names \['BIClongX'\], which are not muscles "
                                         r"of the model; muscles: \['TRIlong'"):
        mbjax.static_optimization(ARM, Q, QD, QD, weights={"BIClongX": 2.0})
    with pytest.raises(ValueError, match=r"reserves names \['elbow'\], which are not coordinates.*'r_elbow_flex'"):
        mbjax.static_optimization(ARM, Q, QD, QD, reserves={"elbow": 10.0})
    with pytest.raises(TypeError, match=r"weights\['BIClong'\] must be a real number, got str"):
        mbjax.static_optimization(ARM, Q, QD, QD, weights={"BIClong": "2"})
    with pytest.raises(TypeError, match=r"static optimization: weights must be a number or an array \(nm,\).*got str"):
        mbjax.static_optimization(ARM, Q, QD, QD, weights="BIClong")
    with pytest.raises(ValueError, match=r"static_optimization_trajectory: weights names \['x'\]"):
        mbjax.static_optimization_trajectory(ARM, Q[None], QD[None], QD[None], weights={"x": 1.0})


def test_solve_problem_refuses_weights_by_name_without_a_model():
    problem = mbjax.analysis.sharing.sharing_problem(ARM, Q, QD, QD)
    with pytest.raises(TypeError, match=r"weights by muscle name need the model: pass them to static_optimization"):
        mbjax.analysis.sharing.solve_problem(problem, weights={"BIClong": 2.0})


def test_static_optimization_names_the_muscle_of_reversed_bounds():
    upper = jnp.ones(6).at[2].set(0.2)
    with pytest.raises(ValueError, match=r"static optimization: a lower bound \(activation_bounds of "
                                         r"static_optimization\) is above its upper bound or NaN for muscles 'TRImed' \(0.5 > 0.2\)"):
        mbjax.static_optimization(ARM, Q, QD, QD, activation_bounds=(0.5, upper))
    with pytest.raises(TypeError, match=r"activation_bounds must be a \(lower, upper\) pair .* got dict"):
        mbjax.static_optimization(ARM, Q, QD, QD, activation_bounds={"lower": 0.0, "upper": 1.0})
    ok = mbjax.static_optimization(ARM, Q, QD, QD, activation_bounds=(0.0, upper))
    assert float(ok.activations[2]) <= 0.2 + 1e-9


def test_infeasibility_report_refuses_another_models_names():
    result = mbjax.static_optimization(ARM, Q, QD, QD)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = mbjax.models.load("double_pendulum")
    with pytest.raises(ValueError, match=r"result is of a model with 6 muscles and 2 coordinates, but the model given "
                                         r"has 0 muscles .*\['q1', 'q2'\]"):
        mbjax.analysis.sharing.check_feasible(result, other)
    with pytest.raises(TypeError, match=r"infeasibility_report: coordinate_names must be names \(str\), got int 3"):
        mbjax.analysis.sharing.infeasibility_report(result, ["r_shoulder_elev", 3])
    mbjax.analysis.sharing.check_feasible(result, ARM)  # the valid twin
    assert not mbjax.analysis.sharing.infeasibility_report(result, ARM)
    assert not mbjax.analysis.sharing.infeasibility_report(result, ARM.coordinate_names)


# -- simulate: controls ---------------------------------------------------------------------------

def test_simulate_checks_the_controls_callable():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.load("double_pendulum")
    z = jnp.zeros(2)
    with pytest.raises(TypeError, match=r"simulate: controls must take three arguments \(t, q, qd\) .*<lambda>\(t, y\)"):
        mbjax.simulate(model, z, z, 0.0, 0.01, controls=lambda t, y: z)
    with pytest.raises(ValueError, match=r"simulate: controls\(t0, q0, qd0\) returned NaN or inf for coordinates "
                                         r"\['q2'\]"):
        mbjax.simulate(model, z, z, 0.0, 0.01, controls=lambda t, q, qd: jnp.asarray([0.0, jnp.nan]))
    with pytest.raises(ValueError, match=r"controls\(t, q, qd\) must return generalized forces of shape \(nq,\) = "
                                         r"\(2,\).*got \(3,\)"):
        mbjax.simulate(model, z, z, 0.0, 0.01, controls=lambda t, q, qd: jnp.ones(3))
    with pytest.raises(TypeError, match=r"simulate: forces must take three arguments"):
        mbjax.simulate(model, z, z, 0.0, 0.01, forces=lambda t: z)
    sol = mbjax.simulate(model, z, z, 0.0, 0.01, controls=lambda t, q, qd, *rest: -qd)
    assert np.all(np.isfinite(np.asarray(sol.ys[0])))


# -- map fits: 2-D samples ------------------------------------------------------------------------

X = np.linspace(0.0, 1.0, 11)


@pytest.mark.parametrize("fit", [
    lambda y: mbjax.maps.NaturalCubicSpline.fit("e", X, y),
    lambda y: mbjax.maps.Fourier.fit("e", X, y, 1, omega=1.0),
    lambda y: mbjax.maps.Polynomial.fit(("e",), X, y, 2),
    lambda y: mbjax.maps.Affine.fit(("e",), X, y),
], ids=["NaturalCubicSpline", "Fourier", "Polynomial", "Affine"])
def test_map_fits_refuse_2d_samples(fit):
    with pytest.raises(ValueError, match=r"\.fit: y must be 1-D of length len\(x\).*\(11, 2\)"):
        fit(np.stack([X, X], 1))
    fit(X ** 2)  # the valid twin


def test_names_helper_takes_a_lone_string_as_one_name():
    assert _checks.names("BIClong", "muscles", "f") == ("BIClong",)
    assert _checks.names(["a", "b"], "muscles", "f") == ("a", "b")
    with pytest.raises(TypeError, match=r"f: muscles must be names \(str\), got int 3"):
        _checks.names(["a", 3], "muscles", "f")
    with pytest.raises(TypeError, match=r"f: muscles must be a name or a list of names \(str\), got float"):
        _checks.names(2.0, "muscles", "f")


def test_fit_path_functions_names_a_reversed_range_and_takes_a_lone_muscle():
    with pytest.raises(ValueError, match=r"fit_path_functions: .*ranges\['r_elbow_flex'\] = \(2, 0\) is reversed "
                                         r"\(lower > upper\); give \(0, 2\)"):
        mbjax.fit_path_functions(ARM, ["BIClong"], ranges={"r_elbow_flex": (2.0, 0.0)})
    with pytest.raises(ValueError, match=r"ranges\['r_elbow_flex'\] must be a pair of numbers"):
        mbjax.fit_path_functions(ARM, ["BIClong"], ranges={"r_elbow_flex": 2.0})
    with pytest.raises(TypeError, match=r"muscles must be names \(str\), got int"):
        mbjax.fit_path_functions(ARM, ["BIClong", 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 50 samples miss the default tolerance: not what is tested here
        _, report = mbjax.fit_path_functions(ARM, "BIClong", n_samples=50, max_order=2, progress=False,
                                             ranges={"r_elbow_flex": (0.0, 2.0)})
    assert [f.muscle for f in report.fits] == ["BIClong"]


def test_marker_set_takes_a_lone_body():
    one = mbjax.analysis.identify.marker_set(ARM, "r_humerus", jnp.zeros((1, 3)))
    listed = mbjax.analysis.identify.marker_set(ARM, ["r_humerus"], jnp.zeros((1, 3)))
    assert one.bodies == listed.bodies
