"""A fifth outside survey's findings on computed-torque tracking (``mbjax.analysis.control``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.analysis.control import ComputedTorque, MinimumJerk, QuinticHermite, _warn_beyond_span, track

jax.config.update("jax_enable_x64", True)

builder = mbjax.ModelBuilder(["hip", "knee"], gravity=[0, -9.81, 0])
builder.add_body("thigh", axis=[0, 0, 1], map="hip", mass=1.3, com=[0, -0.35, 0], inertia=np.diag([.05, .01, .05]))
builder.add_body("shank", parent="thigh", axis=[0, 0, 1], map="knee", translation=[0, -0.7, 0], mass=0.9,
                 com=[0, -0.25, 0], inertia=np.diag([.03, .01, .03]))
LEG = builder.build()
KNOTS = QuinticHermite(jnp.array([0.0, 0.5, 1.0]), jnp.array([[0.0, 0.0], [0.8, -0.6], [0.3, -1.2]]))


def test_gains_of_another_length_are_refused_by_name():
    with pytest.raises(ValueError, match=r"gains must be one number or one per coordinate, shape \(nq,\) = \(2,\) "
                                         r"for \('hip', 'knee'\), got shape \(3,\)"):
        ComputedTorque(LEG, KNOTS, [20.0, 20.0, 20.0])
    assert ComputedTorque(LEG, KNOTS, 20.0).gains.shape == (2,)  # one number for all: the valid twin


def test_a_trajectory_of_another_width_is_refused_before_simulating():
    wide = QuinticHermite(jnp.array([0.0, 0.5, 1.0]), jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"track: the trajectory gives q_des of shape \(3,\), the model has 2 "
                                         r"coordinates \('hip', 'knee'\)"):
        track(LEG, wide, [20.0, 20.0], 0.0, 1.0)


def test_a_minimum_jerk_move_of_no_duration_is_refused():
    with pytest.raises(ValueError, match=r"MinimumJerk: t_end must be later than t_start .* t_start = 0.0, t_end = 0.0"):
        MinimumJerk(0.0, 0.0, jnp.zeros(2), jnp.ones(2))


def test_tracking_past_the_last_knot_is_warned_and_inside_is_not(recwarn):
    # track() calls this before it simulates (the simulation itself is tested in test_control.py)
    with pytest.warns(UserWarning, match=r"track: the simulated time \[0, 2\] s leaves the trajectory's knots \[0, 1\] s"):
        _warn_beyond_span(KNOTS, 0.0, 2.0)
    recwarn.clear()
    _warn_beyond_span(KNOTS, 0.0, 1.0)
    _warn_beyond_span(MinimumJerk(0.0, 1.0, jnp.zeros(2), jnp.ones(2)), 0.0, 5.0)  # at rest after its end: fine
    assert not [w for w in recwarn if "leaves the trajectory" in str(w.message)]
