"""Eager calls of the core functions: a non-Model first argument is refused; a pose far outside the
file's coordinate ranges (degrees for radians, millimetres for metres) is warned, naming the coordinate."""

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.config import CoordinateRangeWarning

jax.config.update("jax_enable_x64", True)


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.models.load("arm26", ignore_wrapping=True)


def _ranges(model):
    info = model.osim
    return np.asarray(info.lower), np.asarray(info.upper)


@pytest.mark.parametrize("fn", [mbjax.body_poses, mbjax.moment_arms, mbjax.muscle_lengths, mbjax.mass_matrix])
def test_a_pose_in_degrees_is_warned_naming_the_coordinate(arm, fn):
    lo, hi = _ranges(arm)
    q_rad = 0.5 * (lo + hi)  # mid-range, in radians
    with pytest.warns(CoordinateRangeWarning, match=r"r_elbow_flex.*looks like degrees"):
        got = fn(arm, jnp.asarray(np.rad2deg(q_rad)))
    assert np.all(np.isfinite(np.asarray(got)))  # computed anyway: sweeps past a range are legitimate
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        fn(arm, jnp.asarray(q_rad))  # the same pose in radians: no warning


def test_only_the_far_coordinate_is_named_and_the_switch_silences_it(arm):
    lo, hi = _ranges(arm)
    q = 0.5 * (lo + hi)
    q[1] = hi[1] + 1.5 * (hi[1] - lo[1])  # beyond the elbow's range by more than its width, not degrees
    with pytest.warns(CoordinateRangeWarning, match="r_elbow_flex") as record:
        mbjax.body_poses(arm, jnp.asarray(q))
    assert "r_shoulder_elev" not in str(record[0].message) and "degrees" not in str(record[0].message)
    q[1] = hi[1] + 0.5 * (hi[1] - lo[1])  # just past the range: a sweep's business, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        mbjax.body_poses(arm, jnp.asarray(q))
        with mbjax.config.checks(False):
            mbjax.body_poses(arm, jnp.asarray(np.rad2deg(q)))


def test_a_translational_coordinate_in_millimetres_is_named(arm):
    info = arm.osim
    as_slider = dataclasses.replace(info, motion_types=("rotational", "translational"),
                                    lower=jnp.asarray([info.lower[0], -0.5]), upper=jnp.asarray([info.upper[0], 0.5]))
    model = arm.replace(osim=as_slider)
    with pytest.warns(CoordinateRangeWarning, match=r"r_elbow_flex' = 300 outside \[-0.5, 0.5\] m.*millimetres"):
        mbjax.body_poses(model, jnp.asarray([0.0, 300.0]))


def test_unbounded_ranges_and_models_without_a_file_are_not_judged():
    b = mbjax.ModelBuilder(["x"])
    b.add_body("link", axis=[0, 0, 1], map="x", mass=1.0, com=(0, -0.1, 0), inertia=np.eye(3) * 0.01)
    model = b.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        mbjax.body_poses(model, jnp.asarray([1000.0]))


@pytest.mark.parametrize("bad", [None, "arm26", 3.0])
def test_a_non_model_first_argument_is_refused(bad):
    with pytest.raises(TypeError, match="body_poses: model must be an mbjax Model"):
        mbjax.body_poses(bad, jnp.zeros(2))


def test_a_path_given_for_the_model_says_how_to_load_it():
    with pytest.raises(TypeError, match=r"load_osim\('arm26.osim'\)"):
        mbjax.mass_matrix("arm26.osim", jnp.zeros(2))
