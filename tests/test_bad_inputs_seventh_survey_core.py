"""Bad inputs to the core API are refused (or warned about) naming the argument, body, map or muscle.

Joint-map parameters and user map values (checked in the one fused run-time check of every
kinematics call), joint values given to ``joint_transforms``, implausible body parameters and
muscle paths in millimetres (eager warnings), a coordinate no joint reads, a float body index,
a ``FunctionMap`` returning an int or complex, a path whose points all coincide, an empty pose
batch, and path-function coefficients that are not finite.  Valid inputs give the answers they
gave before.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.maps import FunctionMap
from _trees import two_link_arm  # noqa: E402

jax.config.update("jax_enable_x64", True)

RUNTIME = (RuntimeError, eqx.EquinoxRuntimeError)
Q = jnp.array([0.3, 0.5])
QD = jnp.array([0.1, -0.2])
QDD = jnp.array([0.5, 0.2])


_arm = two_link_arm  # the README's two-link arm (tests/_trees.py)


def _sqrt_model():
    b = mbjax.ModelBuilder(["a", "b"], gravity=[0, -9.81, 0])
    b.add_body("u", axis=[0, 0, 1], map="a", mass=1.0, com=[0, -0.1, 0], inertia=np.eye(3) * 0.01)
    b.add_body("f", parent="u", axis=[0, 0, 1], translation=[0, -0.3, 0],
               map=FunctionMap(lambda p, x: jnp.sqrt(x[0] - 1.0), ("b",)), mass=1.0, com=[0, -0.1, 0],
               inertia=np.eye(3) * 0.01)
    return b.build()


def _float32(model):
    return jax.tree.map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, model)


ARM = _arm()
ARM26 = mbjax.io.load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True)
Q26 = jnp.array([0.3, 1.2])


# joint-map parameters (eqx.tree_at) and map values ---------------------------------------------

@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_nan_map_slope_is_refused_naming_the_body(dtype):
    model = ARM if dtype == jnp.float64 else _float32(ARM)
    bad = eqx.tree_at(lambda m: m.maps[0].slope, model, jnp.array([[np.nan], [1.0]], dtype))
    with pytest.raises(RUNTIME, match=r"body_poses: the joint map of body 'upper_arm' \(Affine of \('shoulder',\)\) "
                                      "has parameters that are NaN or inf"):
        mbjax.body_poses(bad, Q.astype(dtype))


def test_inf_map_offset_is_refused_by_the_dynamics_naming_the_body():
    bad = eqx.tree_at(lambda m: m.maps[0].offset, ARM, jnp.array([0.0, np.inf]))
    with pytest.raises(RUNTIME, match="mass_matrix: the joint map of body 'forearm'.*NaN or inf"):
        mbjax.mass_matrix(bad, Q)
    with pytest.raises(RUNTIME, match="the joint map of body 'forearm'"):
        jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(bad, Q[None], QD[None], QDD[None])


def test_unbounded_map_range_stays_legal():
    """±inf is a legal range end (an unbounded side): only NaN is refused there."""
    b = mbjax.ModelBuilder(["x"])
    b.add_body("b", axis=[0, 0, 1], map=mbjax.maps.Polynomial("x", [0, 1, 2], [0.0, 1.0, 0.1], upper=1.0), mass=1.0,
               inertia=np.eye(3) * 0.01)
    model = b.build()
    assert np.isinf(float(model.maps[0].lower[0, 0]))
    np.testing.assert_allclose(float(mbjax.joint_variables(model, jnp.array([0.4]))[0]), 0.4 + 0.1 * 0.16)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_function_map_returning_nan_names_the_body(dtype):
    model = _sqrt_model() if dtype == jnp.float64 else _float32(_sqrt_model())
    with pytest.raises(RUNTIME, match=r"the joint map of body 'f' \(FunctionMap of \('b',\)\) returned NaN or inf"):
        mbjax.mass_matrix(model, jnp.array([0.3, 0.5], dtype))
    with pytest.raises(RUNTIME, match="joint map of body 'f'"):
        jax.vmap(mbjax.body_poses, (None, 0))(model, jnp.array([[0.3, 1.5], [0.3, 0.5]], dtype))
    ok = mbjax.body_poses(model, jnp.array([0.3, 1.5], dtype))  # defined there
    assert np.all(np.isfinite(np.asarray(ok)))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_joint_transforms_refuses_nan_joint_values(dtype):
    with pytest.raises(RUNTIME, match=r"joint_transforms: f contains NaN or inf \(the joint values of bodies "
                                      r"\('upper_arm', 'forearm'\)\)"):
        mbjax.joint_transforms(ARM, jnp.array([np.nan, 0.0], dtype))


def test_joint_transforms_refuses_a_complex_f():
    with pytest.raises(TypeError, match="joint_transforms: f .* must be real"):
        mbjax.joint_transforms(ARM, jnp.array([1j, 0.0]))


def test_valid_inputs_give_the_same_answers():
    """The checks touch the hot path: valid inputs give the closed-form answers."""
    poses = np.asarray(mbjax.body_poses(ARM, Q))
    c0, s0 = np.cos(0.3), np.sin(0.3)
    np.testing.assert_allclose(poses[0, :2, :2], [[c0, -s0], [s0, c0]], atol=1e-15)
    np.testing.assert_allclose(poses[1, :2, 3], [0.3 * s0, -0.3 * c0], atol=1e-15)
    m = np.asarray(mbjax.mass_matrix(ARM, Q))
    with mbjax.config.checks(False):
        np.testing.assert_allclose(m, np.asarray(mbjax.mass_matrix(ARM, Q)), rtol=0, atol=0)
        np.testing.assert_allclose(np.asarray(mbjax.muscle_lengths(ARM26, Q26)),
                                   np.asarray(mbjax.muscle_lengths.__wrapped_eager__(ARM26, Q26)), rtol=1e-14)
    np.testing.assert_allclose(mbjax.joint_transforms(ARM, jnp.array([0.3, 0.5]))[0, :2, :2], [[c0, -s0], [s0, c0]],
                               atol=1e-15)
    r = np.asarray(mbjax.moment_arms(ARM26, Q26))
    assert r.shape == (2, 6) and np.all(np.isfinite(r))


# implausible body parameters and paths (eager warnings) ------------------------------------------

def test_negative_definite_inertia_warns_naming_the_body():
    bad = eqx.tree_at(lambda m: m.inertia, ARM, -ARM.inertia)
    with pytest.warns(UserWarning, match="inverse_dynamics: implausible body parameters.*body 'upper_arm': inertia "
                                         "has a negative principal moment"):
        mbjax.inverse_dynamics(bad, Q, QD, QDD)


def test_com_in_millimetres_warns_naming_the_body():
    bad = eqx.tree_at(lambda m: m.com, ARM, ARM.com * 1000)
    with pytest.warns(UserWarning, match=r"body 'upper_arm': centre of mass .* lies 150 m from its body frame.*"
                                         "millimetres"):
        mbjax.forward_dynamics(bad, Q, QD)


def test_plausible_bodies_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mbjax.inverse_dynamics(ARM, Q, QD, QDD)
        mbjax.mass_matrix(ARM, Q)


def test_path_points_in_millimetres_warn_naming_the_muscle():
    bad = eqx.tree_at(lambda m: m.muscles.location, ARM26, ARM26.muscles.location * 1000)
    with pytest.warns(UserWarning, match=r"muscle_lengths: implausible muscle values: muscle 'TRIlong': path length "
                                         r"= 600\.5\d* m is longer than 2 m \(it looks like millimetres"):
        mbjax.muscle_lengths(bad, Q26)


# the builder, body indices, FunctionMap ----------------------------------------------------------

def test_builder_warns_about_a_coordinate_no_joint_reads():
    b = mbjax.ModelBuilder(["a", "b"])
    b.add_body("x", axis=[0, 0, 1], map="a", mass=1.0)
    with pytest.warns(UserWarning, match=r"ModelBuilder.build: no joint map reads the coordinate\(s\) \['b'\]"):
        b.build()


def test_builder_does_not_warn_when_every_coordinate_is_read():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _arm()


@pytest.mark.parametrize("body", [1.0, jnp.asarray(1.0), jnp.asarray(1.0, jnp.float32), None])
def test_float_body_index_is_refused_as_not_an_int_or_name(body):
    with pytest.raises(ValueError, match=r"body must be a name \(str\) or an int index 0\.\.1, got .*bodies are "
                                         r"\('upper_arm', 'forearm'\)"):
        mbjax.point_positions(ARM, Q, body, jnp.zeros(3))


def test_int_and_name_body_still_work():
    a = mbjax.point_positions(ARM, Q, 1, jnp.zeros(3))
    b = mbjax.point_positions(ARM, Q, "forearm", jnp.zeros(3))
    np.testing.assert_allclose(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("fn, dtype", [(lambda p, x: 1, "int"), (lambda p, x: x[0] + 0j, "complex"),
                                       (lambda p, x: x[0] > 0, "bool")])
def test_function_map_returning_a_non_float_is_refused(fn, dtype):
    with pytest.raises(TypeError, match=rf"FunctionMap: fn\(params, x\) must return a real floating-point scalar "
                                        rf"\(coordinates \('b',\)\), got dtype {dtype}"):
        FunctionMap(fn, ("b",))


# muscles ----------------------------------------------------------------------------------------

def _collapsed(model):
    """TRIlat with every point at the elbow's centre (humerus points and the ulna point coincide at every pose)."""
    elbow = model.offset[2][:3, 3]
    loc = model.muscles.location.at[1, :4].set(elbow.astype(model.muscles.location.dtype)).at[1, 4].set(0.0)
    return eqx.tree_at(lambda m: m.muscles.location, model, loc)


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32])
def test_zero_length_path_is_refused_naming_the_muscle(dtype):
    model = _collapsed(ARM26 if dtype == jnp.float64 else _float32(ARM26))
    q = Q26.astype(dtype)
    for fn, where in ((mbjax.muscle_lengths, "muscle_lengths"), (mbjax.moment_arms, "moment_arms")):
        with pytest.raises(RUNTIME, match=rf"{where}: muscle 'TRIlat' has an undefined path at this q: .*all its "
                                          r"points at one place \(length 0"):
            fn(model, q)


def test_path_through_joint_centres_is_not_refused():
    """Points at the bodies' origins (the joint centres): a real path whose moment arms are 0."""
    model = eqx.tree_at(lambda m: m.muscles.location, ARM26, ARM26.muscles.location.at[0].set(0.0))
    assert float(mbjax.muscle_lengths(model, Q26)[0]) > 0.3
    np.testing.assert_allclose(np.asarray(mbjax.moment_arms(model, Q26))[:, 0], 0.0, atol=1e-12)


@pytest.mark.parametrize("batch_size", [None, 2])
def test_moment_arms_batched_on_an_empty_batch_is_empty(batch_size):
    out = mbjax.muscles.moment_arms_batched(ARM26, jnp.ones((0, 2)), batch_size)
    assert out.shape == (0, 2, 6)


def test_moment_arms_batched_still_matches_vmap():
    qs = jnp.array([[0.3, 1.2], [0.1, 0.4], [0.5, 0.9]])
    np.testing.assert_allclose(np.asarray(mbjax.muscles.moment_arms_batched(ARM26, qs, 2)),
                               np.asarray(jax.vmap(mbjax.moment_arms, (None, 0))(ARM26, qs)), rtol=1e-12, atol=1e-15)


def test_nan_path_function_coefficients_name_the_muscle():
    functions = mbjax.muscles.path_functions.build_path_functions(
        ARM26.muscles.names, ARM26.coordinate_names,
        {"BIClong": (("r_elbow_flex",), 2, [0.4, -0.02, 0.001])})
    fitted = mbjax.muscles.path_functions.with_path_functions(ARM26, functions)
    ok = mbjax.muscle_lengths(fitted, Q26)
    np.testing.assert_allclose(float(ok[3]), 0.4 - 0.02 * 1.2 + 0.001 * 1.44, rtol=1e-12)
    c = fitted.path_functions.groups[0].coefficients
    bad = eqx.tree_at(lambda m: m.path_functions.groups[0].coefficients, fitted, c * np.nan)
    for fn, where in ((mbjax.muscle_lengths, "muscle_lengths"), (mbjax.moment_arms, "moment_arms")):
        with pytest.raises(RUNTIME, match=rf"{where}: the path function of muscle 'BIClong' has coefficients that "
                                          "are NaN or inf"):
            fn(bad, Q26)


def test_eager_error_leads_with_the_message_and_flags_the_compile_time_stack():
    mbjax.mass_matrix(ARM, Q)  # compiles
    with pytest.raises(RUNTIME) as info:
        mbjax.mass_matrix(ARM, jnp.array([np.nan, 0.5]))
    text = str(info.value)
    assert text.startswith("q contains NaN or inf for coordinates ('shoulder', 'elbow')")
    assert "recorded when the program was compiled" in text
