"""Bad inputs to the muscle functions, path functions, static optimization and muscle-geometry data
terms: refused naming the argument, or warned where the value is legal but looks like the wrong
units (millimetres, deg/s, percent)."""

import warnings
from types import SimpleNamespace

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf
from mbjax.config import CoordinateRangeWarning

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "wrapping ignored", as asked
    ARM = mbjax.models.load("arm26", ignore_wrapping=True)
NAMES = list(ARM.muscles.names)
NM = len(NAMES)
Q, Z, A = jnp.array([0.3, 1.0]), jnp.zeros(2), jnp.full(NM, 0.5)
P = ARM.muscles.parameters
BARE = (mbjax.ModelBuilder(["a"], gravity=[0, -9.81, 0])
        .add_body("l", map="a", mass=1.0, com=[0, -0.1, 0], inertia=np.eye(3) * 0.01).build())


def _with(key, value):
    return eqx.tree_at(lambda m: m.muscles.parameters[key], ARM, value)


def _quiet(fn, *args, **kwargs):
    """``fn(...)`` with any UserWarning turned into an error (a valid call warns about nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------------
# muscles
# ------------------------------------------------------------------------------------------------


def test_activation_derivative_names_the_keys_a_parameter_dict_lacks():
    with pytest.raises(ValueError, match=r"activation_derivative: the parameter dict lacks \['deactivation_time_constant', "
                                         r"'minimum_activation', 'ignore_activation_dynamics'\].*hill_parameters"):
        mbjax.activation_derivative(jnp.full(NM, 0.8), A, {"activation_time_constant": jnp.full(NM, 0.01)})
    full = mbjax.muscles.hill_parameters(ARM)
    with pytest.raises(ValueError, match=r"must be arrays of one shape \(nm,\)"):
        mbjax.activation_derivative(jnp.full(NM, 0.8), A, {**full, "minimum_activation": full["minimum_activation"][:5]})
    np.testing.assert_array_equal(np.asarray(mbjax.activation_derivative(jnp.full(NM, 0.8), A, full)),
                                  np.asarray(mbjax.activation_derivative(jnp.full(NM, 0.8), A, ARM)))


def test_a_parameter_of_another_length_edited_into_the_model_is_refused_by_name():
    short = _with("max_isometric_force", P["max_isometric_force"][:5])
    with pytest.raises(ValueError, match=r"muscle parameter 'max_isometric_force' must have shape \(nm,\) = \(6,\), "
                                         r"one value per muscle \('TRIlong'.*got \(5,\)"):
        mbjax.muscle_forces(short, Q, Z, A)
    with pytest.raises(ValueError, match=r"activation_derivative: muscle parameter 'activation_time_constant'"):
        mbjax.activation_derivative(A, A, _with("activation_time_constant", jnp.full((NM, 2), 0.01)))


def test_a_model_without_muscles_gives_empty_muscle_results():
    q = jnp.zeros(1)
    assert mbjax.muscle_forces(BARE, q, q, jnp.zeros(0)).shape == (0,)
    assert mbjax.muscle_state(BARE, q, q, jnp.zeros(0)).fiber_length.shape == (0,)
    assert mbjax.activation_derivative(jnp.zeros(0), jnp.zeros(0), BARE).shape == (0,)
    with pytest.raises(ValueError, match=r"activation must have shape \(nm,\) = \(0,\)"):
        mbjax.muscle_forces(BARE, q, q, jnp.zeros(1))


def test_muscle_values_that_look_like_millimetres_or_deg_per_s_are_warned_by_muscle():
    # rigid tendons (no equilibrium solve, a cheap eager call): the warnings do not depend on the tendon model
    rigid = eqx.tree_at(lambda m: m.muscles.parameters, ARM, {**P, "ignore_tendon_compliance": jnp.ones(NM)})
    _quiet(mbjax.muscle_forces, rigid, Q, Z, A)  # the valid twin: no warning
    slack_mm = eqx.tree_at(lambda m: m.muscles.parameters["tendon_slack_length"], rigid, P["tendon_slack_length"] * 1000)
    with pytest.warns(UserWarning) as seen:  # one call, two slips: slack lengths in mm, a joint speed in deg/s
        mbjax.muscle_forces(slack_mm, Q, jnp.array([0.0, 300.0]), A)
    text = " ".join(str(w.message) for w in seen)
    assert "muscle_forces: implausible muscle values: muscle 'TRIlong': tendon_slack_length = 143 m is longer " \
           "than 2 m (it looks like millimetres" in text
    assert "path speed" in text and "deg/s? mbjax takes rad/s" in text
    lengths = jnp.full(NM, 0.15).at[0].set(312.0)  # TRIlong in mm, BIClong shorter than its tendon slack length
    with pytest.warns(UserWarning) as seen:
        mbjax.equilibrium_fiber_length(rigid, lengths, jnp.zeros(NM), A)
    text = " ".join(str(w.message) for w in seen)
    assert "equilibrium_fiber_length: implausible muscle values: muscle 'TRIlong': path length = 312 m is longer" in text
    assert ("muscle 'BIClong': path length 0.15 m is shorter than its tendon_slack_length 0.2723 m: the tendon is "
            "slack, the fibre at its minimum length, the force 0 (OpenSim warns the same)") in text


# ------------------------------------------------------------------------------------------------
# path functions
# ------------------------------------------------------------------------------------------------

SPEC = {"BIClong": (("r_elbow_flex",), 1, [0.3, -0.02])}


def test_with_path_functions_refuses_another_models_functions():
    own = mbjax.muscles.build_path_functions(NAMES, ARM.coordinate_names, SPEC)
    fitted = mbjax.with_path_functions(ARM, own)
    assert float(mbjax.muscle_lengths(fitted, Q)[NAMES.index("BIClong")]) == pytest.approx(0.3 - 0.02 * 1.0)
    other = mbjax.muscles.build_path_functions(NAMES[::-1], ARM.coordinate_names, SPEC)
    with pytest.raises(ValueError, match=r"with_path_functions: the path functions of 'BIClong' \(row 2\) do not match "
                                         r"the model's muscles.*another model"):
        mbjax.with_path_functions(ARM, other)
    other = mbjax.muscles.build_path_functions(NAMES, ["hip", "r_elbow_flex", "knee"], {"BIClong": (("knee",), 1, [0.3, 0.0])})
    with pytest.raises(ValueError, match=r"with_path_functions: the path functions read coordinates \['knee'\], which "
                                         r"the model does not have"):
        mbjax.with_path_functions(ARM, other)


@pytest.mark.parametrize("kw, error, message", [
    (dict(max_terms=1), ValueError, r"max_terms must be >= 2 \(order 1 in one coordinate has 2 terms\), got 1"),
    (dict(ranges={"r_elbow_flex": (1.0, 1.0)}), ValueError, r"ranges\['r_elbow_flex'\] = \(1, 1\) is empty"),
    (dict(seed="abc"), TypeError, r"fit_path_functions: seed must be an integer >= 0 .*got 'abc'"),
    (dict(max_order="3"), TypeError, r"fit_path_functions: max_order must be an integer, got '3'"),
])
def test_fit_path_functions_refuses_bad_settings_by_name(kw, error, message):
    with pytest.raises(error, match=message):
        mbjax.fit_path_functions(ARM, ["BIClong"], n_samples=50, progress=False, **kw)


def test_fit_path_functions_warns_about_a_motion_in_degrees():
    motion = np.stack([np.full(5, 20.0), np.linspace(0.0, 120.0, 5)], axis=1)
    with pytest.warns(CoordinateRangeWarning, match=r"fit_path_functions: motion: .*'r_elbow_flex' = 120 .*looks like "
                                                    r"degrees"):
        with pytest.raises(ValueError, match="motion holds NaN"):  # refused after the warning: no fit needed here
            mbjax.fit_path_functions(ARM, ["BIClong"], n_samples=50, progress=False,
                                     motion=np.concatenate([motion, [[np.nan, 0.0]]]))


# ------------------------------------------------------------------------------------------------
# static optimization
# ------------------------------------------------------------------------------------------------

QD, QDD = jnp.array([0.2, -0.5]), jnp.array([1.0, 2.0])


def _so(**kw):
    return mbjax.static_optimization(ARM, jnp.array([0.3, 1.2]), QD, QDD, **kw)


def test_static_optimization_refuses_bad_exponent_and_solver_options_by_name():
    with pytest.raises(TypeError, match=r"exponent must be a number > 1 .*got str '2'; write exponent=2"):
        _so(exponent="2")
    with pytest.raises(ValueError, match=r"solver_options: tol must be a finite number > 0, got -1.0"):
        _so(solver_options={"tol": -1.0})
    with pytest.raises(ValueError, match=r"solver_options: max_outer must be an integer >= 1 .*got 0"):
        _so(solver_options={"max_outer": 0})
    with pytest.raises(TypeError, match=r"solver_options: polish must be True or False, got 'no'"):
        _so(solver_options={"polish": "no"})


def test_static_optimization_weights_and_bounds():
    with pytest.raises(RuntimeError, match=r"static optimization: weights must be finite and > 0 \(a weight of 0"):
        _so(weights={"BIClong": 0.0})
    # refused before the solve, naming the muscle, whether given by name or as an array
    for weights in ({"BIClong": 0.0}, np.where(np.arange(NM) == NAMES.index("BIClong"), -1.0, 1.0)):
        with pytest.raises(ValueError, match=r"weights must be finite and > 0 .*: muscles 'BIClong' \((0|-1)\) in "
                                             r"static_optimization"):
            _so(weights=weights)
    # legal but suspicious: warned by muscle (the TypeError after the warning spares the solve)
    with pytest.warns(UserWarning, match=r"static_optimization: weights span more than a factor 1000 \(smallest: "
                                         r"'BIClong' \(1e-06\)"):
        with pytest.raises(TypeError, match="exponent must be a number"):
            _so(weights={"BIClong": 1e-6}, exponent="2")
    with pytest.warns(UserWarning, match=r"static_optimization: activation_bounds outside \[0, 1\] for muscles "
                                         r"'TRIlong' \(0, 100\).*percent\?"):
        with pytest.raises(TypeError, match="exponent must be a number"):
            _so(activation_bounds=(0.0, 100.0), exponent="2")
    with pytest.raises(TypeError, match="exponent must be a number"):  # the valid twin warns about nothing
        _quiet(_so, weights={"BIClong": 2.0}, activation_bounds=(0.0, 0.9), exponent="2")


def test_the_infeasibility_report_says_an_unconverged_frame_may_be_the_solvers():
    result = SimpleNamespace(residual=np.array([-0.15, 0.09]), converged=np.array(False))
    text = str(mbjax.analysis.sharing.infeasibility_report(result, list(ARM.coordinate_names)))
    assert "solver not converged at frames [0] (an unconverged frame may still be feasible: muscle weights" in text


def test_lengths_in_millimetres_are_named_in_static_optimization():
    q = jnp.array([0.3, 1.2])
    lengths = mbjax.muscle_lengths(ARM, q)
    with pytest.raises(RuntimeError, match=r"force per unit activation of muscle '\w+' is NaN or inf: its path "
                                           r"length \(lengths=, or at q\).*millimetres\?"):
        mbjax.analysis.sharing.sharing_problem(ARM, q, QD, QDD, L=1000 * lengths)
    frames = jnp.stack([q, q])
    with pytest.warns(UserWarning, match=r"static_optimization_trajectory: lengths: .*path length = \d+.* m is longer "
                                         r"than 2 m \(it looks like millimetres"):
        with pytest.raises(TypeError, match="exponent must be a number"):  # refused after the warning: no solve
            mbjax.static_optimization_trajectory(ARM, frames, jnp.zeros((2, 2)), jnp.zeros((2, 2)),
                                                 lengths=1000 * jnp.stack([lengths, lengths]), exponent="2")


# ------------------------------------------------------------------------------------------------
# identification data terms
# ------------------------------------------------------------------------------------------------


def test_muscle_geometry_data_in_millimetres_are_warned():
    q = np.zeros((4, 2))
    lengths = np.full((4, NM), 0.3)
    arms = np.full((4, 2, NM), 0.02)
    _quiet(idf.muscle_length_residuals, q, lengths)
    _quiet(idf.moment_arm_residuals, q, arms)
    with pytest.warns(UserWarning, match=r"muscle_length_residuals: lengths_measured: 24 value\(s\) above 2 m.*look "
                                         r"like millimetres"):
        idf.muscle_length_residuals(q, 1000 * lengths)
    with pytest.warns(UserWarning, match=r"moment_arm_residuals: moment_arms_measured: .*above 1 m.*millimetres"):
        idf.moment_arm_residuals(q, 1000 * arms)
