"""Bad inputs of force elements, ligaments, simulation, .osim actuators/muscles and the JR tool (third survey)."""

from __future__ import annotations

import warnings

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.forces as F
import mbjax.ligaments as L
from mbjax.config import CoordinateRangeWarning
from mbjax.forces import _params
from mbjax.forces.base import ForceSet
from mbjax.io import load_osim
from mbjax.opensim.tools.jr.keys import reaction_keys
from mbjax.models.opensim_examples import model_path
from mbjax.muscles.path_fitting import _coordinate_ranges
from mbjax._simulate import _warn_fine_tolerances
from mbjax._simulate_muscles import _check_fiber_lengths

LIMIT = dict(upper_stiffness=[2.0], upper_limit=[30.0], lower_stiffness=[2.0], lower_limit=[-30.0], damping=[0.01],
             transition=[5.0])


@pytest.fixture(scope="module")
def pend():
    return mbjax.models.load("double_pendulum")


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.models.load("arm26", ignore_wrapping=True)


def _no_warnings():
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("error")
    return w


# ---- simulate: tolerances and the max-steps failure ---------------------------------------------

def test_simulate_refuses_zero_tolerances(pend, arm):
    with pytest.raises(ValueError, match=r"simulate: rtol and atol are both 0"):
        mbjax.simulate(pend, jnp.array([0.5, 1.2]), jnp.zeros(2), 0.0, 0.2, rtol=0.0, atol=0.0)
    with pytest.raises(ValueError, match=r"simulate_muscles: rtol and atol are both 0"):
        mbjax.simulate_muscles(arm, jnp.array([0.3, 1.0]), jnp.zeros(2), 0.0, 0.2, excitations=jnp.full(6, 0.3),
                               rtol=0, atol=0)


class _Constant(eqx.Module):
    """Constant controls: new values, one compiled solve."""

    value: jnp.ndarray

    def __call__(self, t, q, qd):
        return self.value


def test_simulate_names_the_likely_causes_of_max_steps(pend):
    q0, qd0 = jnp.array([0.5, 1.2]), jnp.zeros(2)
    with pytest.raises(RuntimeError, match=r"simulate: the solver reached max_steps.*max_steps=400.*controls\(t0, q0, "
                                           r"qd0\) of magnitude up to 1e\+12") as info:
        mbjax.simulate(pend, q0, qd0, 0.0, 0.2, controls=_Constant(jnp.full(2, 1e12)), max_steps=400)
    assert isinstance(info.value.__cause__, eqx.EquinoxRuntimeError)
    sol = mbjax.simulate(pend, q0, qd0, 0.0, 0.2, controls=_Constant(jnp.full(2, 0.1)), max_steps=400)  # valid twin
    assert np.all(np.isfinite(np.asarray(sol.ys[0])))


def test_simulate_warns_tolerances_below_float32_resolution():
    # a float32 state with a float64 model does not run under x64 (the tests' setting): the rule itself
    with pytest.warns(RuntimeWarning, match=r"rtol=1e-12 and atol=1e-14 lie far below the resolution of the float32"):
        _warn_fine_tolerances(1e-12, 1e-14, np.float32, "simulate")
    w = _no_warnings()
    try:
        _warn_fine_tolerances(1e-8, 1e-10, np.float32, "simulate")  # the defaults
        _warn_fine_tolerances(1e-12, 1e-14, np.float64, "simulate")
    finally:
        w.__exit__(None, None, None)


def test_simulate_muscles_refuses_fibre_lengths_in_millimetres(arm):
    with pytest.raises(ValueError, match=r"fiber_length0 is more than 10 times the optimal fibre length for "
                                         r"'TRIlong': 100 m \(optimal 0.134 m\)"):
        mbjax.simulate_muscles(arm, jnp.array([0.3, 1.0]), jnp.zeros(2), 0.0, 0.02, excitations=jnp.full(6, 0.3),
                               fiber_length0=jnp.full(6, 100.0))
    _check_fiber_lengths(arm, jnp.full(6, 0.1))  # plausible lengths pass


# ---- force elements -----------------------------------------------------------------------------

def test_force_constructors_take_a_lone_name_as_one(pend):
    one = F.CoordinateLimitForce.from_opensim(pend, "lim", "q1", True, **LIMIT)
    listed = F.CoordinateLimitForce.from_opensim(pend, ["lim"], ["q1"], [True], **LIMIT)
    assert one.names == listed.names == ("lim",)
    q, qd = jnp.array([0.7, 0.0]), jnp.zeros(2)
    np.testing.assert_array_equal(F.model_forces(F.with_force_elements(pend, one), q, qd),
                                  F.model_forces(F.with_force_elements(pend, listed), q, qd))
    s = F.SpringGeneralizedForce.create(pend, "s", "q2", [1.0], [0.0], [0.1])
    assert s.names == ("s",)
    e = F.ExpressionBasedCoordinateForce.create(pend, "e", "q1", ["-q"])
    assert e.names == ("e",)
    with pytest.raises(TypeError, match=r"SpringGeneralizedForce: element_names must be a tuple of names, got the "
                                        r"lone string 's'"):
        _params.check_names("SpringGeneralizedForce", "s")


def test_elements_of_another_model_are_refused(pend, arm):
    other = F.CoordinateLimitForce.from_opensim(arm, ["lim"], ["r_elbow_flex"], [True], **LIMIT)
    with pytest.raises(ValueError, match=r"with_force_elements: CoordinateLimitForce \('lim',\) was built for a model "
                                         r"with coordinates \('r_shoulder_elev', 'r_elbow_flex'\), not this model's "
                                         r"\('q1', 'q2'\)"):
        F.with_force_elements(pend, other)
    with pytest.raises(ValueError, match=r"model_forces: CoordinateLimitForce \('lim',\) was built for a model"):
        F.model_forces(pend.replace(forces=ForceSet((other,))), jnp.ones(2), jnp.zeros(2))
    own = F.with_force_elements(pend, F.CoordinateLimitForce.from_opensim(pend, ["lim"], ["q2"], [True], **LIMIT))
    assert np.asarray(F.model_forces(own, jnp.ones(2), jnp.zeros(2)))[1] < 0


def test_simulate_refuses_model_forces_of_another_model(pend, arm):
    with pytest.raises(ValueError, match=r"simulate: forces \(ModelForces\) was built for a model with coordinates "
                                         r"\('r_shoulder_elev', 'r_elbow_flex'\), but the simulated model has "
                                         r"\('q1', 'q2'\)"):
        mbjax.simulate(pend, jnp.ones(2), jnp.zeros(2), 0.0, 0.05, forces=F.ModelForces(arm))


def test_model_forces_names_a_non_finite_element_force(pend):
    m = F.with_force_elements(pend, F.ExpressionBasedCoordinateForce.create(pend, ["e"], ["q1"], ["1/q"]))
    with pytest.raises(RuntimeError, match=r"model_forces: the generalized force of ExpressionBasedCoordinateForce "
                                           r"\('e',\) contains NaN or inf at this state"):
        F.model_forces(m, jnp.zeros(2), jnp.zeros(2))
    np.testing.assert_allclose(F.model_forces(m, jnp.array([2.0, 0.0]), jnp.zeros(2)), [0.5, 0.0])


def _spring(pend, point2):
    rod2 = pend.body_index("rod2")
    return F.PointToPointSpring(jnp.zeros((1, 3)), jnp.asarray([point2], float), jnp.array([10.0]),
                                jnp.array([0.1]), (rod2,), (rod2,), ("p",))


def test_point_to_point_spring_with_coincident_points_is_named(pend):
    m = F.with_force_elements(pend, _spring(pend, [0.0, 0.0, 0.0]))
    with pytest.raises(RuntimeError, match=r"PointToPointSpring 'p': its two points coincide"):
        F.model_forces(m, jnp.zeros(2), jnp.zeros(2))
    ok = F.with_force_elements(pend, _spring(pend, [0.0, 0.2, 0.0]))
    np.testing.assert_allclose(F.model_forces(ok, jnp.zeros(2), jnp.zeros(2)), [0.0, 0.0], atol=1e-12)


# ---- ligaments ----------------------------------------------------------------------------------

def test_synthetic_acl_warns_a_free_length_in_millimetres():
    with pytest.warns(UserWarning, match=r"synthetic_acl: free_length 27 m .* looks like millimetres"):
        L.synthetic_acl(free_length=27.0)
    w = _no_warnings()
    try:
        L.synthetic_acl(free_length=0.027)
    finally:
        w.__exit__(None, None, None)


# ---- .osim files --------------------------------------------------------------------------------

def _variant(tmp_path, name, old, new):
    text = open(model_path(name)).read()
    assert old in text
    path = tmp_path / f"{name}.osim"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def test_osim_actuator_on_an_unknown_coordinate_is_refused(tmp_path):
    path = _variant(tmp_path, "double_pendulum", "<coordinate>q1</coordinate>", "<coordinate>q9</coordinate>")
    with pytest.raises(ValueError, match=r"double_pendulum.osim:\d+: .*CoordinateActuator '\w+' acts on the coordinate "
                                         r"'q9', which the model does not have"):
        load_osim(path)
    assert load_osim(model_path("double_pendulum")).osim.actuators


@pytest.mark.filterwarnings("ignore:.*wrapping ignored")
def test_osim_muscle_lengths_in_millimetres_warn(tmp_path):
    path = _variant(tmp_path, "arm26", "<optimal_fiber_length>0.134</optimal_fiber_length>",
                    "<optimal_fiber_length>134</optimal_fiber_length>")
    with pytest.warns(UserWarning, match=r"look like millimetres.*muscle 'TRIlong': <optimal_fiber_length> 134"):
        load_osim(path, ignore_wrapping=True)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        load_osim(model_path("arm26"), ignore_wrapping=True)
    assert not [w for w in got if "millimetres" in str(w.message)]


# ---- path fitting ranges ------------------------------------------------------------------------

def test_fit_path_functions_ranges_in_degrees_warn(arm):
    with pytest.warns(CoordinateRangeWarning, match=r"fit_path_functions: ranges.*'r_elbow_flex' = 130 .*looks like "
                                                    r"degrees"):
        _coordinate_ranges(arm, {"r_elbow_flex": (0, 130)})
    w = _no_warnings()
    try:
        lower, upper = _coordinate_ranges(arm, {"r_elbow_flex": (0, 2.0)})
    finally:
        w.__exit__(None, None, None)
    assert upper[1] == 2.0


# ---- joint reactions ----------------------------------------------------------------------------

def test_repeated_joint_reactions_are_warned_and_kept_once(pend):
    with pytest.warns(UserWarning, match=r"the same reaction more than once: \['pin1_on_rod1_in_ground'\]"):
        keys = reaction_keys(pend, ["pin1", "pin2", "pin2", "pin1"], "child", ["ground", "child", "rod1", "parent"])
    assert [k.label for k in keys] == ["pin1_on_rod1_in_ground", "pin2_on_rod2_in_rod2", "pin2_on_rod2_in_rod1"]
    with pytest.warns(UserWarning, match=r"more than once"):
        assert len(reaction_keys(pend, ["pin1", "pin1"], "child", "ground")) == 1
    w = _no_warnings()
    try:
        assert len(reaction_keys(pend, ["pin1", "pin2"], "child", "ground")) == 2
    finally:
        w.__exit__(None, None, None)
