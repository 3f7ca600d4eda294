"""Bad inputs to the solvers and tools (activation rate, static optimization, control, identify,
sweeps, IK, ligaments, path fitting, actuators, excitations): refused or warned by name, never a
silent wrong answer; valid inputs on the checked hot paths give the answers they gave before."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.forces as F
import mbjax.ligaments as L
from mbjax.analysis import identify as idf
from mbjax.analysis.control import FunctionTrajectory, QuinticHermite, computed_torque, track
from mbjax.io.trc import MarkerData
from mbjax.analysis.sharing import InvalidWeightsError, ReversedBoundsError
from _trees import two_link_arm  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM26 = mbjax.models.arm26(ignore_wrapping=True)


_two_links = two_link_arm  # the README's two-link arm (tests/_trees.py)


ARM = _two_links()
Q, QD, QDD = jnp.array([0.3, 1.2]), jnp.zeros(2), jnp.array([0.5, 1.0])


def _float32(fn):
    jax.config.update("jax_enable_x64", False)
    try:
        return fn()
    finally:
        jax.config.update("jax_enable_x64", True)


# -- activation_rate: the excitation in [0, 1] ------------------------------------------------------

@pytest.mark.parametrize("u", [5.0, -0.1])
def test_activation_rate_refuses_an_excitation_outside_0_1(u):
    with pytest.raises(RuntimeError, match=r"activation_rate: excitation must be in \[0, 1\]"):
        mbjax.muscles.activation_rate(jnp.array(u), jnp.array(0.2), 0.01, 0.04, 0.01)
    with pytest.raises(RuntimeError, match=r"activation_rate: excitation must be in \[0, 1\]"):
        _float32(lambda: mbjax.muscles.activation_rate(jnp.array(u, jnp.float32), jnp.array(0.2, jnp.float32),
                                                       0.01, 0.04, 0.01))


def test_activation_rate_of_valid_excitations_is_unchanged():
    u, a = jnp.array([0.0, 0.5, 1.0]), jnp.array([0.2, 0.2, 0.9])
    got = mbjax.muscles.activation_rate(u, a, 0.01, 0.04, 0.01)
    tau = np.where(np.asarray(u) > np.asarray(a), 0.01 * (0.5 + 1.5 * np.asarray(a)), 0.04 / (0.5 + 1.5 * np.asarray(a)))
    np.testing.assert_allclose(got, (np.asarray(u) - np.asarray(a)) / tau, rtol=1e-14)


# -- static optimization ---------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["use_muscle_physiology", "passive_forces"])
def test_static_optimization_flags_must_be_true_or_false(flag):
    with pytest.raises(TypeError, match=rf"static optimization: {flag} must be True or False, got 'no'"):
        mbjax.static_optimization(ARM26, Q, QD, QDD, **{flag: "no"})


def test_static_optimization_motion_flag_must_be_true_or_false():
    from mbjax.opensim.tools.so.motion import static_optimization_motion

    with pytest.raises(TypeError, match=r"static_optimization_motion: use_muscle_physiology must be True or False, "
                                        r"got 'false'"):
        static_optimization_motion(ARM26, None, use_muscle_physiology="false", progress=False)


def test_static_optimization_trajectory_refuses_impossible_lengths_by_muscle_and_frame():
    T = 5
    qs, qds, qdds = jnp.tile(Q, (T, 1)), jnp.zeros((T, 2)), jnp.tile(QDD, (T, 1))
    lengths = np.asarray(mbjax.muscle_lengths(ARM26, Q))[None].repeat(T, 0)
    bad = lengths.copy()
    bad[3, 3] = -0.2  # BIClong at frame 3
    bad[4, 3] = np.nan
    with pytest.raises(ValueError, match=r"static_optimization_trajectory: lengths must be finite and > 0 .*muscles "
                                         r"'BIClong' at frames 3, 4 .*\(first: -0.2 for 'BIClong' at frame 3\)"):
        mbjax.static_optimization_trajectory(ARM26, qs, qds, qdds, lengths=bad)
    with pytest.raises(ValueError, match=r"lengths must be finite and > 0"):
        mbjax.static_optimization_trajectory(ARM26, qs, qds, qdds, lengths=-jnp.ones((T, 6)))
    # traced lengths: refused at run time, naming the muscle
    run = eqx.filter_jit(lambda Ls: mbjax.static_optimization_trajectory(ARM26, qs, qds, qdds, lengths=Ls).activations)
    with pytest.raises(RuntimeError, match=r"sharing_problem: lengths must be finite and > 0 .*muscle 'BIClong'"):
        run(jnp.asarray(bad))
    # valid lengths: the answer is the one computed from q
    ref = mbjax.static_optimization_trajectory(ARM26, qs, qds, qdds)
    got = mbjax.static_optimization_trajectory(ARM26, qs, qds, qdds, lengths=lengths)
    np.testing.assert_allclose(got.activations, ref.activations, atol=1e-10)
    assert bool(np.all(got.converged))


@pytest.mark.parametrize("w", [0.0, -1.0, np.nan])
def test_static_optimization_weights_not_positive_raise_invalid_weights_error(w):
    with pytest.raises(InvalidWeightsError, match=r"weights must be finite and > 0 .*muscles 'TRIlong'") as e:
        mbjax.static_optimization(ARM26, Q, QD, QDD, weights=jnp.ones(6).at[0].set(w))
    assert isinstance(e.value, ValueError) and not isinstance(e.value, ReversedBoundsError)


# -- control ---------------------------------------------------------------------------------------

TR = QuinticHermite(jnp.array([0., .5, 1.]), jnp.array([[0., 0.], [.5, .3], [0., 0.]]))


def test_track_names_a_non_finite_q0_or_qd0():
    with pytest.raises(RuntimeError, match=r"track: q0 contains NaN or inf for coordinates \('shoulder', 'elbow'\)"):
        track(ARM, TR, gains=[5., 5.], t0=0., t1=1., q0=jnp.array([np.nan, 0.]))
    with pytest.raises(RuntimeError, match=r"track: qd0 contains NaN or inf"):
        track(ARM, TR, gains=[5., 5.], t0=0., t1=1., qd0=jnp.array([0., np.inf]))
    with pytest.raises(ValueError, match=r"track: q0 must have shape \(nq,\) = \(2,\)"):
        track(ARM, TR, gains=[5., 5.], t0=0., t1=1., q0=jnp.zeros(3))


@pytest.mark.parametrize("arg", ["q", "qd", "q_des", "qd_des", "qdd_des"])
def test_computed_torque_names_the_non_finite_argument(arg):
    args = dict(q=jnp.zeros(2), qd=jnp.zeros(2), q_des=jnp.zeros(2), qd_des=jnp.zeros(2), qdd_des=jnp.zeros(2))
    args[arg] = jnp.array([np.nan, 0.])
    with pytest.raises(RuntimeError, match=rf"computed_torque: {arg} contains NaN or inf for coordinates"):
        computed_torque(ARM, **args, gains=jnp.ones(2))


def test_computed_torque_in_float32_names_q_des():
    def run():
        z = jnp.zeros(2, jnp.float32)
        return computed_torque(ARM, z, z, jnp.array([np.nan, 0.], jnp.float32), z, z, jnp.ones(2, jnp.float32))

    with pytest.raises(RuntimeError, match=r"computed_torque: q_des contains NaN or inf"):
        _float32(run)


def test_a_trajectory_non_finite_at_a_saved_time_is_refused_before_integrating():
    bad = FunctionTrajectory(lambda t, p: jnp.where(t > .5, jnp.nan, t) * jnp.ones(2))
    with pytest.raises(ValueError, match=r"track: the trajectory \(FunctionTrajectory\) returned NaN or inf .* at "
                                         r"t = 0.51 s"):
        track(ARM, bad, gains=[5., 5.], t0=0., t1=1.)


def test_a_trajectory_non_finite_between_saved_times_is_named_by_the_controller():
    bad = FunctionTrajectory(lambda t, p: jnp.where((t > .3) & (t < .7), jnp.nan, t) * jnp.ones(2))
    with pytest.raises(RuntimeError, match=r"ComputedTorque: the trajectory \(FunctionTrajectory\) returned NaN"):
        track(ARM, bad, gains=[5., 5.], t0=0., t1=1., saveat=jnp.array([0.0, 1.0]))


def test_computed_torque_gains_of_the_wrong_length_are_refused_as_track_does():
    z = jnp.zeros(2)
    with pytest.raises(ValueError, match=r"computed_torque: gains must be one number or one per coordinate, shape "
                                         r"\(nq,\) = \(2,\) for \('shoulder', 'elbow'\), got shape \(4,\)"):
        computed_torque(ARM, z, z, z, z, z, jnp.ones(4))
    with pytest.raises(TypeError, match=r"computed_torque: gains must be"):
        computed_torque(ARM, z, z, z, z, z, "5")


def test_computed_torque_and_tracking_of_valid_inputs_are_unchanged():
    q, qd, qd_, qdd_ = jnp.array([.1, .2]), jnp.array([.3, .1]), jnp.array([.05, 0.]), jnp.array([.2, -.1])
    q_des = jnp.array([.15, .1])
    for k in (3.0, jnp.array([3.0, 4.0])):
        kk = jnp.broadcast_to(k, (2,))
        want = mbjax.inverse_dynamics(ARM, q, qd, qdd_ - 2 * kk * (qd - qd_) - kk * kk * (q - q_des))
        np.testing.assert_allclose(computed_torque(ARM, q, qd, q_des, qd_, qdd_, k), want, rtol=1e-14)
    r = track(ARM, TR, gains=[5., 5.], t0=0., t1=1.)
    np.testing.assert_allclose(r.q, r.q_des, atol=1e-6)  # consistent start: exact tracking


# -- identify, sweeps --------------------------------------------------------------------------------

def test_identify_fit_refuses_an_integer_leaf_by_its_path():
    rng = np.random.default_rng(0)
    q_, qd_, qdd_ = rng.uniform(-1.5, 1.5, (3, 20, 2))
    tau_ = jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(ARM, q_, qd_, qdd_)
    R = idf.torque_residuals(q_, qd_, qdd_, tau_)
    with pytest.raises(TypeError, match=r"`where` selected the leaf '\[1\]' of dtype int\d+: only floating-point "
                                        r"leaves can be fitted"):
        idf.fit((ARM, jnp.array(3)), lambda t: R(t[0]), lambda t: t[1], progress=False)


def test_sweep_poses_refuses_transposed_poses():
    with pytest.raises(ValueError, match=r"sweep_poses: qs must have shape \(N, nq\) = \(N, 2\), one row per pose, .*"
                                         r"got \(2, 7\) \(transposed\? pass qs.T\)"):
        mbjax.sweep_poses(mbjax.moment_arms, ARM26, np.zeros((2, 7)), progress=False)
    with pytest.raises(ValueError, match=r"qs must have shape \(N, nq\) = \(N, 2\).*got \(7, 3\)$"):
        mbjax.sweep_poses(mbjax.moment_arms, ARM26, np.zeros((7, 3)), progress=False)


# -- inverse kinematics ------------------------------------------------------------------------------

MK = mbjax.Markers(("A", "B", "C", "D"), (0, 0, 1, 1),
                   jnp.array([[.05, -.1, 0], [0, -.3, .02], [.03, -.1, 0], [0, -.25, .03]]))
T_IK = 4
QTRUE = np.stack([np.linspace(.1, .5, T_IK), np.linspace(.3, 1., T_IK)], 1)


def _marker_data(offset=0.0):
    pos = np.asarray(jax.vmap(mbjax.marker_positions, (None, None, 0))(ARM, MK, QTRUE)) + offset
    return MarkerData(np.linspace(0, .3, T_IK), MK.names, pos)


def test_ik_refuses_all_zero_marker_data():
    with pytest.raises(ValueError, match=r"IK: every tracked marker \('A', 'B', 'C', 'D'\) sits exactly at \(0, 0, 0\) "
                                         r"in every frame \(4 frames\): missing data exported as zeros"):
        mbjax.inverse_kinematics(ARM, MK, MarkerData(np.linspace(0, .3, 4), MK.names, np.zeros((4, 4, 3))),
                                 bounds=None, progress=False)


def test_ik_warns_about_all_zero_frames():
    d = _marker_data()
    pos = np.array(d.positions)
    pos[1] = 0.0
    with pytest.warns(UserWarning, match=r"IK: every tracked marker .* at \(0, 0, 0\) in 1 of 4 frames \(t = 0.1 s\)"):
        mbjax.inverse_kinematics(ARM, MK, d._replace(positions=pos), bounds=None, progress=False)


def test_ik_markers_far_from_the_model_are_not_converged_and_named():
    with pytest.warns(UserWarning, match=r"IK: the markers do not fit the model at 4 of 4 frame\(s\): RMS marker "
                                         r"error 173 m at t = 0 s"):
        r = mbjax.inverse_kinematics(ARM, MK, _marker_data(100.0), bounds=None, progress=False)
    assert not r.converged.any()
    assert np.all(r.rms > 100)


def test_ik_markers_far_from_the_model_in_float32():
    def run():
        with pytest.warns(UserWarning, match=r"IK: the markers do not fit the model at 4 of 4 frame"):
            return mbjax.inverse_kinematics(ARM, MK, _marker_data(100.0), bounds=None, progress=False)

    assert not _float32(run).converged.any()


def test_ik_of_markers_that_fit_is_unchanged_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = mbjax.inverse_kinematics(ARM, MK, _marker_data(), bounds=None, progress=False)
    assert r.converged.all()
    np.testing.assert_allclose(r.q, QTRUE, atol=1e-8)


# -- ligaments -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_adaptive_integrate_refuses_a_non_finite_integrand_at_once(value):
    mesh = L.triangulate(np.array([[0., 0], [1, 0], [0, 1]]), 4)
    with pytest.raises(ValueError, match=r"adaptive_integrate: fn returned NaN or inf at \d+ of \d+ points \(first at "
                                         r"\([-\d.e]+, [-\d.e]+\), in triangle 0 of the mesh\)"):
        L.adaptive_integrate(lambda p: np.full(len(p), value), mesh)
    # a pole met only after refinement is named as such
    centroid = L.TriangleRule(np.array([[1 / 3, 1 / 3]]), np.array([1.0]), 1, "centroid")
    with pytest.raises(ValueError, match=r"fn returned NaN or inf at 1 of 4 points \(first at \(0.666667, 0.166667\), "
                                         r"in triangle \d of the refinement\)"):
        L.adaptive_integrate(lambda p: np.where(p[:, 0] > 0.5, value, 1.0),
                             L.Mesh(np.array([[0., 0], [1, 0], [0, 1]]), np.array([[0, 1, 2]])), rule=centroid)


def test_adaptive_integrate_of_a_valid_integrand_is_unchanged():
    mesh = L.triangulate(np.array([[0., 0], [1, 0], [0, 1]]), 4)
    value, err, n = L.adaptive_integrate(lambda p: p[:, 0] ** 2, mesh)
    np.testing.assert_allclose(value, [1 / 12], rtol=1e-12)


def test_spatial_area_warns_about_a_mesh_outside_the_domain():
    acl, _ = L.synthetic_acl()
    far = L.Mesh(np.array([[100., 100], [101, 100], [100, 101]]), np.array([[0, 1, 2]]))
    with pytest.warns(UserWarning, match=r"spatial_area: 3 of 3 mesh vertices lie outside the ligament's insertion "
                                         r"domain \(first: vertex 0 at \(100, 100\)"):
        L.spatial_area(acl, far)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the domain's own mesh (vertices on its boundary): silent
        area = L.spatial_area(acl, L.triangulate(acl.domain, 50))
    assert np.isfinite(area) and area > 0


# -- path fitting, actuators, excitations ------------------------------------------------------------

def test_fit_path_functions_refuses_a_muscle_named_twice():
    with pytest.raises(ValueError, match=r"fit_path_functions: muscles names 'BIClong' more than once"):
        mbjax.fit_path_functions(ARM26, ["BIClong", "BRA", "BIClong"], n_samples=50, progress=False)


@pytest.mark.parametrize("make", [
    lambda lo, hi: F.CoordinateActuator("x", "elbow", min_control=lo, max_control=hi),
    lambda lo, hi: F.PointActuator("x", "forearm", min_control=lo, max_control=hi),
    lambda lo, hi: F.TorqueActuator("x", "forearm", min_control=lo, max_control=hi),
])
def test_actuators_refuse_reversed_control_bounds_by_name(make):
    with pytest.raises(ValueError, match=r"Actuator 'x': need min_control <= max_control, got \[1.0, -1.0\]"):
        make(1.0, -1.0)
    with pytest.raises(ValueError, match=r"Actuator 'x': need min_control <= max_control, got \[nan, 1.0\]"):
        make(np.nan, 1.0)
    ok = make(-1.0, 1.0)
    assert (ok.name, ok.min_control, ok.max_control) == ("x", -1.0, 1.0)


def test_an_excitation_held_past_its_last_knot_is_warned_with_the_times():
    u = mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 0.005]), jnp.full((2, 6), 0.3))
    with pytest.warns(UserWarning, match=r"simulate_muscles: the simulated time \[0, 0.02\] s leaves the "
                                         r"PiecewiseLinearExcitation knots \[0, 0.005\] s: the excitation is held "
                                         r"constant after 0.005 s at the last knot's values"):
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM26, jnp.array([.3, .8]), jnp.zeros(2), 0.0, 0.02, excitations=u, max_steps=0)
    early = mbjax.PiecewiseLinearExcitation(jnp.array([0.01, 0.03]), jnp.full((2, 6), 0.3))
    with pytest.warns(UserWarning, match=r"held constant before 0.01 s at the first knot's values"):
        with pytest.raises(ValueError, match="max_steps"):
            mbjax.simulate_muscles(ARM26, jnp.array([.3, .8]), jnp.zeros(2), 0.0, 0.02, excitations=early, max_steps=0)
