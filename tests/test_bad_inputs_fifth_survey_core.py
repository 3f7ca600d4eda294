"""A fifth outside survey's findings in the core: parameters edited into a model (gravity, joint axes),
external loads on one named body, simulation options and starting poses, force elements and ligaments,
marker data, a smoothing spline and pose sweeps."""

import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.forces as F
import mbjax.ligaments as L
from mbjax._ranges import RUNTIME_ERRORS
from mbjax.config import CoordinateRangeWarning
from mbjax.io import MarkerData, load_markers
from mbjax.maps import NaturalCubicSpline

jax.config.update("jax_enable_x64", True)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = mbjax.models.load("arm26", ignore_wrapping=True)
    PEND = mbjax.models.load("double_pendulum")
Q = jnp.array([0.3, 1.0])
Z = jnp.zeros(2)


def _two_links():
    b = mbjax.ModelBuilder(["hip", "knee"], gravity=[0, -9.81, 0])
    b.add_body("thigh", axis=[0, 0, 1], map="hip", mass=1.3, com=[0, -0.35, 0], inertia=np.diag([.05, .01, .05]))
    b.add_body("shank", parent="thigh", axis=[0, 0, 1], map="knee", translation=[0, -0.7, 0], mass=0.9,
               com=[0, -0.25, 0], inertia=np.diag([.03, .01, .03]))
    return b.build()


# -- parameters edited into a model ----------------------------------------------------------------

def test_gravity_edited_into_a_model_is_checked():
    nan = eqx.tree_at(lambda m: m.gravity, ARM, jnp.array([0.0, jnp.nan, 0.0]))
    with pytest.raises(RUNTIME_ERRORS, match=r"inverse_dynamics: model.gravity contains NaN or inf"):
        mbjax.inverse_dynamics(nan, Q, Z, Z)  # was [nan, nan]
    flat = eqx.tree_at(lambda m: m.gravity, ARM, jnp.array([0.0, -9.81]))
    with pytest.raises(ValueError, match=r"gravity_forces: model.gravity must have shape \(3,\).*got \(2,\)"):
        mbjax.gravity_forces(flat, Q)  # was numpy's broadcasting error
    assert np.all(np.isfinite(mbjax.inverse_dynamics(ARM, Q, Z, Z)))


def test_joint_axes_edited_into_a_model_must_be_unit_vectors():
    scaled = eqx.tree_at(lambda m: m.axis, ARM, 2.0 * ARM.axis)
    with pytest.raises(RUNTIME_ERRORS, match=r"body_poses: the joint axis of body '\w+' is not a unit vector"):
        mbjax.body_poses(scaled, Q)  # was rotation blocks that are no rotations
    zero = eqx.tree_at(lambda m: m.axis, ARM, jnp.zeros_like(ARM.axis))
    with pytest.raises(RUNTIME_ERRORS, match=r"inverse_dynamics: the joint axis of body .* not a unit vector"):
        mbjax.inverse_dynamics(zero, Q, jnp.ones(2), Z)  # was [0, 0]
    r = np.asarray(mbjax.body_poses(ARM, Q))[:, :3, :3]
    np.testing.assert_allclose(np.einsum("bji,bjk->bik", r, r), np.broadcast_to(np.eye(3), r.shape), atol=1e-14)
    with pytest.raises(RUNTIME_ERRORS, match=r"q contains NaN or inf for coordinates"):
        mbjax.body_poses(ARM, jnp.array([jnp.nan, 1.0]))  # the pose's own rule, unchanged


def test_external_loads_on_one_named_body():
    one = mbjax.ExternalLoads("r_ulna_radius_hand", jnp.zeros((1, 3)), jnp.array([[0.0, -10.0, 0.0]]))
    same = mbjax.ExternalLoads(["r_ulna_radius_hand"], jnp.zeros((1, 3)), jnp.array([[0.0, -10.0, 0.0]]))
    single = mbjax.ExternalLoads("r_ulna_radius_hand", jnp.zeros(3), jnp.array([0.0, -10.0, 0.0]))
    for loads in (one, single):
        assert loads.bodies == same.bodies and loads.points.shape == loads.forces.shape == (1, 3)
        np.testing.assert_array_equal(loads.forces, same.forces)
    tau = mbjax.inverse_dynamics(ARM, Q, Z, Z, external=one)  # was a shape error
    np.testing.assert_array_equal(tau, mbjax.inverse_dynamics(ARM, Q, Z, Z, external=same))
    f = jnp.array([[0.0, -10.0, 0.0]])
    np.testing.assert_array_equal(mbjax.generalized_forces(ARM, Q, "r_ulna_radius_hand", jnp.zeros((1, 3)), f),
                                  mbjax.generalized_forces(ARM, Q, ["r_ulna_radius_hand"], jnp.zeros((1, 3)), f))
    with pytest.raises(ValueError, match=r"ExternalLoads: points must have shape \(\.\.\., 1, 3\).*got \(5, 3\); "
                                         r"for one body 'r_ulna_radius_hand' \(a name, not a list\)"):
        mbjax.ExternalLoads("r_ulna_radius_hand", jnp.zeros((5, 3)), jnp.ones((5, 3)))


# -- simulation ------------------------------------------------------------------------------------

def test_a_solver_without_error_estimates_needs_a_constant_step():
    dp = _two_links()
    with pytest.raises(ValueError, match=r"simulate: solver diffrax.Euler\(\) gives no error estimate.*"
                                         r"stepsize_controller=diffrax.ConstantStepSize\(\) and dt0"):
        mbjax.simulate(dp, jnp.array([0.5, -0.3]), Z, 0.0, 0.2, solver=diffrax.Euler())
    with pytest.raises(ValueError, match="max_steps"):  # the advised call passes this check (and stops at the next)
        mbjax.simulate(dp, jnp.array([0.5, -0.3]), Z, 0.0, 0.1, solver=diffrax.Euler(),
                       stepsize_controller=diffrax.ConstantStepSize(), dt0=0.05, max_steps=0)


def test_a_starting_pose_in_degrees_is_warned():
    # the warning comes first; a bad option then stops the call before anything compiles
    with pytest.warns(CoordinateRangeWarning, match=r"simulate: q0: .*'r_elbow_flex' = 50 .*looks like degrees"):
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate(ARM, jnp.array([20.0, 50.0]), Z, 0.0, 0.01, max_steps=0)
    with pytest.warns(CoordinateRangeWarning, match=r"simulate_muscles: q0: .*looks like degrees"):
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM, jnp.array([20.0, 50.0]), Z, 0.0, 0.01, max_steps=0,
                                   excitations=mbjax.ConstantExcitation(jnp.full(6, 0.3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate(ARM, jnp.array([0.3, 1.0]), Z, 0.0, 0.01, max_steps=0)


def test_excitation_knots_outside_the_simulated_span_are_warned():
    late = mbjax.PiecewiseLinearExcitation(jnp.array([0.5, 0.6]), jnp.full((2, 6), 0.3))
    with pytest.warns(UserWarning, match=r"simulate_muscles: the PiecewiseLinearExcitation knots span \[0.5, 0.6\] "
                                         r"s, outside the simulated \[0, 0.02\] s: .*held at the first knot"):
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM, jnp.array([0.3, 0.8]), Z, 0.0, 0.02, excitations=late, max_steps=0)
    inside = mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 0.01]), jnp.full((2, 6), 0.3))
    # knots overlapping the span: not the "outside" warning, but the held tail is named by its times
    with pytest.warns(UserWarning, match=r"leaves the PiecewiseLinearExcitation knots \[0, 0.01\] s: .*held "
                                         r"constant after 0.01 s") as rec:
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM, jnp.array([0.3, 0.8]), Z, 0.0, 0.02, excitations=inside, max_steps=0)
    assert not any("outside the simulated" in str(w.message) for w in rec)
    covering = mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 0.02]), jnp.full((2, 6), 0.3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM, jnp.array([0.3, 0.8]), Z, 0.0, 0.02, excitations=covering, max_steps=0)


# -- force elements and ligaments ------------------------------------------------------------------

def test_the_same_force_element_twice_is_refused():
    e = F.SpringGeneralizedForce.create(PEND, ["s"], ["q1"], [10.0], [0.1], [0.5])
    with pytest.raises(ValueError, match=r"with_force_elements: force element name\(s\) \['s'\] occur more than "
                                         r"once.*OpenSim refuses duplicate names"):
        F.with_force_elements(PEND, e, e)  # was a doubled force
    with pytest.raises(ValueError, match=r"\['s'\] occur more than once"):
        F.with_force_elements(F.with_force_elements(PEND, e), e)
    q, qd = jnp.array([0.3, -0.2]), jnp.array([0.5, 1.0])
    np.testing.assert_allclose(F.model_forces(F.with_force_elements(PEND, e), q, qd), [-2.25, 0.0], rtol=1e-14)


def test_a_rest_angle_in_degrees_is_warned():
    with pytest.warns(UserWarning, match=r"SpringGeneralizedForce 's': rest_length 30 of the rotational coordinate "
                                         r"'q1' .*looks like degrees"):
        F.SpringGeneralizedForce.create(PEND, ["s"], ["q1"], [1.0], [30.0], [0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.SpringGeneralizedForce.create(PEND, ["s"], ["q1"], [1.0], [0.5], [0.0])


def test_ligament_units_that_look_like_mpa_or_percent_are_warned():
    with pytest.warns(UserWarning, match=r"synthetic_acl: stiffness 100 Pa .*looks like MPa: give Pa \(1e\+08\)"):
        with pytest.raises(ValueError):  # a bad seed stops the (slow) build after the warning
            L.synthetic_acl(stiffness=100.0, seed="x")
    with pytest.warns(UserWarning, match=r"fibre_law: strain 5 is above 1 .*looks like percent"):
        L.fibre_law(jnp.array([5.0]), 1e8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(L.fibre_law(jnp.array([0.05]), 1e8), [1e8 * 0.05**2], rtol=1e-14)


def test_ligament_poses_must_be_rigid_transforms():
    fs = L.FibreSet(jnp.zeros((2, 3)), jnp.full((2, 3), 0.01), jnp.ones(2), jnp.full(2, 1e6), jnp.full(2, 0.01))
    eye = jnp.eye(4)
    with pytest.raises(RUNTIME_ERRORS, match=r"pose_a must be a finite rigid transform .*R a rotation"):
        L.ligament_wrench(fs, eye.at[:3, :3].multiply(2.0), eye)  # was a wrench
    with pytest.raises(RUNTIME_ERRORS, match=r"pose_b must be a finite rigid transform .*det \+1"):
        L.ligament_wrench(fs, eye, eye.at[2, 2].set(-1.0))  # a reflection
    turn = eye.at[:3, :3].set(jnp.asarray([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    assert np.all(np.isfinite(L.ligament_wrench(fs, turn, eye)))


# -- marker data, joint maps, sweeps ---------------------------------------------------------------

def test_ik_refuses_marker_times_that_do_not_increase():
    markers = load_markers(mbjax.models.model_path("arm26"), ARM)
    t = np.arange(3) / 120.0
    x = np.zeros((3, len(markers.names), 3))
    with pytest.raises(ValueError, match=r"IK: marker data time must increase strictly .*time\[1\] = 0.0083"):
        mbjax.inverse_kinematics(ARM, markers, MarkerData(t[::-1], markers.names, x, rate=120.0), progress=False)


def test_a_negative_smoothing_weight_is_refused_by_name():
    x = np.linspace(0.0, 1.0, 12)
    y = np.sin(x)
    for bad in (-1.0, "big", float("nan")):
        with pytest.raises(ValueError, match=r"NaturalCubicSpline.fit: smoothing must be None .*, got"):
            NaturalCubicSpline.fit("elbow", x, y, smoothing=bad)
    for fine in (0.0, 1e-3, "gcv"):
        assert isinstance(NaturalCubicSpline.fit("elbow", x, y, smoothing=fine), NaturalCubicSpline)


def test_sweep_poses_arguments():
    qs = np.tile(np.array([[0.3, 1.0]]), (4, 1))
    with pytest.raises(TypeError, match=r"sweep_poses: fn must be a per-pose function .*got str 'moment_arms'.*"
                                        r"sweep_poses\(fn, model, qs\)"):
        mbjax.sweep_poses("moment_arms", ARM, qs, progress=False)
    with pytest.raises(TypeError, match=r"fn must be a per-pose function .*Model.*\(fn and model swapped\?\)"):
        mbjax.sweep_poses(ARM, mbjax.joint_variables, qs, progress=False)
    with pytest.raises(ValueError, match=r"sweep_poses: batch_size must be a positive integer, None or 'auto', "
                                         r"got 'big'"):
        mbjax.sweep_poses(mbjax.joint_variables, ARM, qs, batch_size="big", progress=False)
    with pytest.raises(ValueError, match=r"sweep_poses: chunk_size must be a positive integer, got 'x'"):
        mbjax.sweep_poses(mbjax.joint_variables, ARM, qs, chunk_size="x", progress=False)
    with pytest.warns(CoordinateRangeWarning, match=r"sweep_poses: .*looks like degrees"):
        mbjax.sweep_poses(mbjax.joint_variables, ARM, 57.3 * qs, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoordinateRangeWarning)
        out = mbjax.sweep_poses(mbjax.joint_variables, ARM, qs, progress=False)
    np.testing.assert_array_equal(out[0], np.asarray(mbjax.joint_variables(ARM, jnp.asarray(qs[0]))))
