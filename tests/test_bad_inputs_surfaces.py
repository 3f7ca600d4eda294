"""The survey, continued: public functions the other ``test_bad_inputs*`` files do not reach, each
fed the bad inputs a user makes (a NaN, another length, another frame count, bounds the wrong way
round), each asserting that the message names the argument and the problem; and a census that every
public function of ``mbjax`` and ``mbjax.io`` is named in the survey (or exempt, with the reason).

The valid twin of each call is checked against an independent route where it defines a value.
"""

import glob
import importlib
import inspect
import os
import re
import types

import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.io

ARM = mbjax.io.load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True)
NM = 6
Q, QD, A = jnp.asarray([0.3, 0.8]), jnp.zeros(2), jnp.full(NM, 0.5)
NAN_Q = Q.at[1].set(jnp.nan)
COORDS = r"for coordinates \('r_shoulder_elev', 'r_elbow_flex'\)"


def test_initial_fiber_lengths_refuses_nan_and_other_lengths():
    with pytest.raises(RuntimeError, match=rf"initial_fiber_lengths: q contains NaN or inf {COORDS}"):
        mbjax.initial_fiber_lengths(ARM, NAN_Q, QD, A)
    with pytest.raises(RuntimeError, match=r"initial_fiber_lengths: qd contains NaN"):
        mbjax.initial_fiber_lengths(ARM, Q, QD.at[0].set(jnp.inf), A)
    with pytest.raises(RuntimeError, match=r"initial_fiber_lengths: activation contains NaN or inf for muscles"):
        mbjax.initial_fiber_lengths(ARM, Q, QD, A.at[2].set(jnp.nan))
    with pytest.raises(ValueError, match=r"activation must have shape \(nm,\) = \(6,\) for muscles"):
        mbjax.initial_fiber_lengths(ARM, Q, QD, A[:2])
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        mbjax.initial_fiber_lengths(ARM, jnp.ones(3), QD, A)
    # the valid call: each fibre length puts its muscle in equilibrium, as muscle_state finds it
    lf = np.asarray(mbjax.initial_fiber_lengths(ARM, Q, QD, A))
    ref = np.asarray(mbjax.muscle_state(ARM, Q, QD, A).fiber_length)
    np.testing.assert_allclose(lf, ref, rtol=1e-9)


def test_dynamics_refuse_none_and_a_mapping_of_loads_by_name():
    with pytest.raises(ValueError, match=rf"qd must be a real array of shape \(nq,\) {COORDS}, got None"):
        mbjax.inverse_dynamics(ARM, Q, None, QD)
    with pytest.raises(ValueError, match=rf"q must be a real array of shape \(nq,\) {COORDS}, got None"):
        mbjax.mass_matrix(ARM, None)
    with pytest.raises(TypeError, match=r"inverse_dynamics: external must be a generalized force Q \(nq,\) = \(2,\) "
                                        r"or mbjax.ExternalLoads .* got dict"):
        mbjax.inverse_dynamics(ARM, Q, QD, QD, external={"r_humerus": [0.0, 0.0, 10.0]})
    with pytest.raises(ValueError, match=r"external must be a real array of shape \(nq,\), got list"):
        mbjax.inverse_dynamics(ARM, Q, QD, QD, external=[[1.0, 2.0], [3.0]])
    # the valid twin: a generalized force Q is subtracted, τ(Q) = τ(0) - Q
    tq = jnp.asarray([0.5, -0.25])
    np.testing.assert_allclose(np.asarray(mbjax.inverse_dynamics(ARM, Q, QD, QD, external=tq)),
                               np.asarray(mbjax.inverse_dynamics(ARM, Q, QD, QD) - tq), rtol=0, atol=1e-12)


def test_model_forces_refuses_nan_and_other_shapes():
    with pytest.raises(RuntimeError, match=rf"model_forces: q contains NaN or inf {COORDS}"):
        mbjax.forces.model_forces(ARM, NAN_Q, QD)
    with pytest.raises(RuntimeError, match=r"model_forces: qd contains NaN"):
        mbjax.forces.model_forces(ARM, Q, QD.at[1].set(jnp.nan))
    for bad in (jnp.ones(3), jnp.ones((2, 2)), jnp.asarray(0.3)):
        with pytest.raises(ValueError, match=rf"q must have shape \(nq,\) = \(2,\) {COORDS}"):
            mbjax.forces.model_forces(ARM, bad, QD)
    with pytest.raises(ValueError, match=r"qd must have shape \(nq,\) = \(2,\)"):
        mbjax.forces.model_forces(ARM, Q, jnp.ones(1))
    np.testing.assert_array_equal(np.asarray(mbjax.forces.model_forces(ARM, Q, QD)), 0.0)  # arm26 has no force elements


def test_range_violations_refuses_nan_and_other_shapes():
    with pytest.raises(ValueError, match=r"range_violations: q holds NaN or inf \(coordinate 'r_elbow_flex'\)"):
        mbjax.range_violations(ARM, NAN_Q)
    with pytest.raises(ValueError, match=r"\(coordinate 'r_elbow_flex' of pose 1\)"):
        mbjax.range_violations(ARM, jnp.stack([Q, NAN_Q]))
    for bad in (jnp.ones(3), jnp.ones((2, 2, 2)), jnp.asarray(1.0)):
        with pytest.raises(ValueError, match=r"range_violations: q must have shape \(nq,\) or \(N, nq\) with nq = 2"):
            mbjax.range_violations(ARM, bad)
    assert mbjax.range_violations(ARM, Q) == []  # arm26's maps extrapolate: nothing to report


def test_joint_transforms_refuses_another_number_of_joint_values():
    nb = ARM.axis.shape[0]
    with pytest.raises(ValueError, match=rf"joint_transforms: f .* must have shape \(nb,\) = \({nb},\) \(bodies"):
        mbjax.joint_transforms(ARM, jnp.ones(nb + 2))
    # the valid call: the transforms at f = 0 are the fixed offsets O_i (no joint motion)
    got = np.asarray(mbjax.joint_transforms(ARM, jnp.zeros(nb)))
    np.testing.assert_allclose(got, np.asarray(ARM.offset), atol=1e-15)


def test_static_optimization_refuses_bounds_the_wrong_way_and_other_lengths():
    args = (ARM, Q, QD, QD)
    with pytest.raises(RuntimeError, match=r"static optimization: a lower bound \(activation_bounds"):
        mbjax.static_optimization(*args, activation_bounds=(1.0, 0.0))
    with pytest.raises(RuntimeError, match=r"a lower bound .* is above its upper bound or NaN"):
        mbjax.static_optimization(*args, reserves=10.0, reserve_bounds=(1.0, -1.0))
    with pytest.raises(RuntimeError, match=r"static optimization: weights must be finite and > 0"):
        mbjax.static_optimization(*args, weights=jnp.ones(NM).at[0].set(-1.0))
    with pytest.raises(ValueError, match=r"weights must be a scalar or have shape \(nm,\) = \(6,\), got \(2,\)"):
        mbjax.static_optimization(*args, weights=jnp.ones(2))
    with pytest.raises(ValueError, match=r"activation_bounds must be a \(lower, upper\) pair, got 3 values"):
        mbjax.static_optimization(*args, activation_bounds=(0.0, 0.5, 1.0))
    with pytest.raises(ValueError, match=r"activation_bounds\[1\] must be a scalar or have shape \(6,\), got \(2,\)"):
        mbjax.static_optimization(*args, activation_bounds=(0.0, jnp.ones(2)))
    with pytest.raises(ValueError, match=r"exponent must be a finite number > 1"):
        mbjax.static_optimization(*args, exponent=0)
    with pytest.raises(ValueError, match=r"qs, qds, qdds must have the same shape \(T, nq\) = \(T, 2\), got "
                                         r"\(3, 2\), \(4, 2\), \(3, 2\)"):
        mbjax.static_optimization_trajectory(ARM, jnp.ones((3, 2)), jnp.ones((4, 2)), jnp.ones((3, 2)))
    # the valid twin: per-muscle upper bounds hold, and the torque is met (R F(a) = tau)
    hi = jnp.full(NM, 0.9).at[0].set(0.05)
    r = mbjax.static_optimization(*args, activation_bounds=(0.0, hi))
    assert float(np.max(np.asarray(r.activations) - np.asarray(hi))) <= 1e-9


def test_batched_entry_points_refuse_other_shapes_and_name_the_nan():
    with pytest.raises(ValueError, match=r"q_batch must have shape \(N, 2\) \(N, nq\), got \(2,\)"):
        mbjax.muscles.moment_arms_batched(ARM, Q)
    with pytest.raises(RuntimeError, match=r"q contains NaN or inf"):
        mbjax.muscles.moment_arms_batched(ARM, jnp.stack([Q, NAN_Q]))
    with pytest.raises(ValueError, match=r"sweep_poses: qs contains NaN or inf \(first at pose 1, coordinate 1\)"):
        mbjax.sweep_poses(mbjax.muscle_lengths, ARM, jnp.stack([Q, NAN_Q]), progress=False)
    with pytest.raises(ValueError, match=r"sweep_poses: qs must have shape \(N, nq\) = \(N, 2\), one row per pose, "
                       r"for coordinates .*, got \(4, 3\)"):
        mbjax.sweep_poses(mbjax.muscle_lengths, ARM, jnp.ones((4, 3)), progress=False)
    with pytest.raises(ValueError, match=r"q, qd, qdd must have shape \(T, nq\) = \(T, 2\), got \(4, 2\), \(5, 2\)"):
        mbjax.inverse_dynamics_frames(ARM, jnp.ones((4, 2)), jnp.ones((5, 2)), jnp.ones((4, 2)))
    with pytest.raises(ValueError, match=r"inverse_dynamics_frames: \['q'\] contain NaN or inf"):
        mbjax.inverse_dynamics_frames(ARM, jnp.ones((4, 2)).at[1, 0].set(jnp.nan), jnp.ones((4, 2)), jnp.ones((4, 2)))
    # the valid twins: the batched routes equal the one-pose functions
    qs = jnp.stack([Q, Q + 0.1])
    np.testing.assert_allclose(np.asarray(mbjax.muscles.moment_arms_batched(ARM, qs))[1],
                               np.asarray(mbjax.moment_arms(ARM, Q + 0.1)), atol=1e-14)


def test_model_builders_refuse_what_is_not_theirs():
    with pytest.raises(TypeError, match=r"with_force_elements: str 'spring' is not a ForceElement"):
        mbjax.forces.with_force_elements(ARM, "spring")
    with pytest.raises(ValueError, match=r"path function for 'nope': the model has no muscle of that name"):
        mbjax.with_path_functions(ARM, {"nope": None})
    with pytest.raises(ValueError, match=r"path function for muscle 'BRA': expected \(coordinates, order, "
                                         r"coefficients\) or \(coordinates, order, coefficients, ranges\), got None"):
        mbjax.with_path_functions(ARM, {"BRA": None})
    with pytest.raises(TypeError, match=r"path functions must be a PathFunctions or a dict .*got float"):
        mbjax.with_path_functions(ARM, 3.0)
    with pytest.raises(ValueError, match=r"path function for muscle 'BRA': coefficients are not all finite"):
        mbjax.with_path_functions(ARM, {"BRA": (("r_elbow_flex",), 1, [0.1, np.nan])})
    # the valid twin: a linear function of the elbow is that line, and its moment arm minus its slope
    f = mbjax.with_path_functions(ARM, {"BRA": (("r_elbow_flex",), 1, [0.1, -0.02])})
    row = ARM.muscles.names.index("BRA")
    assert abs(float(mbjax.muscle_lengths(f, Q)[row]) - (0.1 - 0.02 * 0.8)) < 1e-15
    assert abs(float(mbjax.moment_arms(f, Q)[1, row]) - 0.02) < 1e-15


def test_muscle_vector_field_refuses_a_state_of_other_lengths():
    exc = jnp.full(NM, 0.3)
    state = mbjax.MuscleSimState(Q, QD, A, jnp.full(NM, 0.1))
    with pytest.raises(ValueError, match=r"state.activation must have shape \(nm,\) = \(6,\), got \(3,\)"):
        mbjax.muscle_vector_field(ARM, 0.0, state._replace(activation=A[:3]), exc)
    with pytest.raises(ValueError, match=r"state.qd must have shape \(nq,\) = \(2,\), got \(3,\)"):
        mbjax.muscle_vector_field(ARM, 0.0, state._replace(qd=jnp.zeros(3)), exc)
    d = mbjax.muscle_vector_field(ARM, 0.0, state, exc)
    np.testing.assert_array_equal(np.asarray(d.q), np.asarray(state.qd))  # dq/dt = qd, by definition


SETUPS = os.path.join(os.path.dirname(__file__), "data", "opensim_models")


def test_setup_runners_refuse_missing_files_and_other_tools(tmp_path):
    missing = str(tmp_path / "none.xml")
    for fn in (mbjax.opensim.inverse_kinematics_from_setup, mbjax.opensim.inverse_dynamics_from_setup,
               mbjax.opensim.static_optimization_from_setup, mbjax.opensim.joint_reactions_from_setup):
        with pytest.raises(FileNotFoundError, match=re.escape(missing)):
            fn(missing)
    so = os.path.join(SETUPS, "arm26_so", "arm26_Setup_StaticOptimization.xml")
    ik = os.path.join(SETUPS, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
    with pytest.raises(ValueError, match=r"arm26_Setup_StaticOptimization.xml: no <InverseKinematicsTool>"):
        mbjax.opensim.inverse_kinematics_from_setup(so)
    with pytest.raises(ValueError, match=r"arm26_Setup_InverseKinematics.xml:2: <OpenSimDocument>: no <AnalyzeTool>"):
        mbjax.opensim.static_optimization_from_setup(ik)


def test_simulate_muscles_refuses_other_lengths_before_solving():
    exc = mbjax.ConstantExcitation(jnp.full(NM, 0.3))
    with pytest.raises(ValueError, match=r"q0 and qd0 must have shape \(2,\), got \(1,\) and \(2,\)"):
        mbjax.simulate_muscles(ARM, Q[:1], QD, 0.0, 0.01, excitations=exc)
    with pytest.raises(ValueError, match=r"excitation must have shape \(nm,\) = \(6,\) for muscles"):
        mbjax.simulate_muscles(ARM, Q, QD, 0.0, 0.01, excitations=mbjax.ConstantExcitation(jnp.full(3, 0.3)))
    with pytest.raises(ValueError, match=r"t1 must not be before t0"):
        mbjax.simulate_muscles(ARM, Q, QD, 0.1, 0.0, excitations=exc)


def test_fit_path_functions_refuses_what_it_cannot_fit():
    with pytest.raises(ValueError, match=r"fit_path_functions: \['nope'\] are not muscles of the model"):
        mbjax.fit_path_functions(ARM, ["nope"], n_samples=50)
    with pytest.raises(ValueError, match=r"fit_path_functions: n_samples must be >= 50, got 0"):
        mbjax.fit_path_functions(ARM, ["BRA"], n_samples=0)
    with pytest.raises(ValueError, match=r"no finite range for coordinates \['r_elbow_flex'\]"):
        mbjax.fit_path_functions(ARM, ["BRA"], n_samples=50, ranges={"r_elbow_flex": (2.0, 1.0)})


def test_model_and_set_files_name_the_path(tmp_path):
    missing = str(tmp_path / "nope.osim")
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        mbjax.io.load_model(missing)
    with pytest.raises(IsADirectoryError, match=re.escape(str(tmp_path))):
        mbjax.io.load_model(str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"/proc/nope/x.osim"):
        mbjax.io.save_model("/proc/nope/x.osim", ARM)
    for fn in (mbjax.io.load_marker_set, mbjax.io.read_path_functions):
        with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "none.xml")) + ": no such OpenSim file"):
            fn(str(tmp_path / "none.xml"), ARM)
    with pytest.raises(ValueError, match=r"write_path_functions: the model has no path functions"):
        mbjax.io.write_path_functions(ARM, str(tmp_path / "pf.xml"))


# --------------------------------------------------------------------------------------------
# the census
# --------------------------------------------------------------------------------------------

#: public names with no input a user can get wrong, or reached through the names that wrap them
EXEMPT = {
    "GROUND": "a constant",
    "Kinematics": "a result container", "BodyKinematics": "a result container", "JointValues": "a result container",
    "PoseDerivatives": "a result container", "JointReactions": "a result container",
    "MuscleSimState": "a result container", "RangeViolation": "a result container",
    "MapRangeError": "an exception class",
    "ReactionSpec": "built by joint_reactions' readers; its fields are checked where it is read",
    "Markers": "built by load_markers (in the survey)", "ModelForces": "a wrapper of model_forces (in the survey)",
    "ExternalLoads": "built by read_external_loads (in the survey)",
    "ConstantExcitation": "an excitation; simulate_muscles refuses its values (in the survey)",
    "PiecewiseLinearExcitation": "an excitation; its times and values are refused where built (test_control.py)",
    "DiscreteAdjoint": "an adjoint option of simulate (test_discrete_adjoint.py)",
    "PathTolerance": "a tolerance option of the wrap pass",
    "infeasibility_report": "reads a static optimization result (test_sharing.py)",
    "signal": "a module: its filters are reached through the tools' cut-offs (test_bad_inputs_tools.py)",
    "ExternalForceSpec": "a result container of read_external_loads (in the survey)",
    "ExternalLoadsFile": "a result container of read_external_loads (in the survey)",
    "FitReport": "a result container of identify.fit", "Identifiability": "a result container",
    "InfeasibilityReport": "a result container", "MuscleState": "a result container",
    "PathFitReport": "a result container of fit_path_functions",
    "StaticOptimizationResult": "a result container", "SharingProblem": "built by sharing_problem",
}


#: public names the survey does not reach yet: the debt, listed so that it can only shrink (a name
#: here that the survey reaches fails the census, as does a new public name in neither list)
NOT_YET: set[str] = set()


def _survey_text():
    """The bad-input tests: ``test_bad_inputs*.py`` and the data-file readers' refusals (test_storage.py)."""
    here = os.path.dirname(__file__)
    files = glob.glob(os.path.join(here, "test_bad_inputs*.py")) + [os.path.join(here, "test_storage.py")]
    return "".join(open(f).read() for f in files)


def _exempt_by_kind(module, name) -> bool:
    """Submodules (their functions are public through their own tier), constants, exception classes."""
    obj = getattr(module, name)
    return (isinstance(obj, types.ModuleType) or name.isupper()
            or (inspect.isclass(obj) and issubclass(obj, BaseException)))


#: every public tier (each has an ``__all__``)
TIERS = ["mbjax", "mbjax.io", "mbjax.opensim", "mbjax.models", "mbjax.reference", "mbjax.config", "mbjax.wrapping",
         "mbjax.muscles", "mbjax.analysis.identify", "mbjax.ligaments", "mbjax.analysis.sharing", "mbjax.forces",
         "mbjax.maps", "mbjax.constraints", "mbjax.reactions"]


@pytest.mark.parametrize("name", TIERS)
def test_census_every_public_function_is_in_the_survey(name):
    module = importlib.import_module(name)
    text = _survey_text().replace(
        "".join(open(__file__).read().partition("# the census")[1:]), "")  # the census itself does not count
    public = [n for n in module.__all__ if n not in EXEMPT and not _exempt_by_kind(module, n)]
    reached = {n for n in public if re.search(rf"\b{n}\b", text)}
    missing = [n for n in public if n not in NOT_YET and n not in reached]
    assert not missing, f"public names of {module.__name__} no bad-input test reaches: {missing}"
    paid = sorted(NOT_YET & reached)
    assert not paid, f"reached by the survey now, take them out of NOT_YET: {paid}"
