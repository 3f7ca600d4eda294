"""A fourth outside survey's findings: an excitation above 1, a string for IK's markers, an
activation file given where joint reactions read forces; and joint-reaction frames that lie on a
forces file's first or last time up to the rounding of its printed times."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.opensim.tools.jr import actuator_forces
from mbjax.models import arm26_path

jax.config.update("jax_enable_x64", True)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = mbjax.io.load_osim(arm26_path(), ignore_wrapping=True)


def test_an_excitation_above_one_is_refused_naming_the_muscle():
    a = jnp.full(6, 0.3)
    with pytest.raises(mbjax._ranges.RUNTIME_ERRORS, match=r"excitation must be in \[0, 1\]: 'TRIlong' is outside"):
        mbjax.activation_derivative(jnp.full(6, 2.0), a, ARM)
    # the valid twin: OpenSim's first-order rule (MuscleFirstOrderActivationDynamicModel::calcDerivative)
    p = mbjax.muscles.hill_parameters(ARM)
    u = 0.9
    tau = np.asarray(p["activation_time_constant"]) * (0.5 + 1.5 * 0.3)
    np.testing.assert_allclose(mbjax.activation_derivative(jnp.full(6, u), a, ARM), (u - 0.3) / tau, rtol=1e-14)


def test_ik_refuses_markers_that_are_not_markers():
    data = mbjax.io.MarkerData(np.zeros(2), ("m",), np.zeros((2, 1, 3)))
    with pytest.raises(TypeError, match=r"IK: markers must be the model's mbjax.Markers .*got str"):
        mbjax.inverse_kinematics(ARM, "markers", data)


def test_an_activation_file_as_joint_reaction_forces_is_warned():
    names = tuple(ARM.muscle_names)
    t = np.arange(3) / 100.0
    activations = mbjax.io.Table(t, names, np.full((3, len(names)), 0.4), False, {"file": "arm_activation.sto"})
    with pytest.warns(UserWarning, match=r"arm_activation\.sto lies within \[0, 1\]: these look like activations"):
        _, values = actuator_forces(ARM, activations, t, where="JointReaction")
    np.testing.assert_array_equal(values, 0.4)  # applied as given, as OpenSim does
    forces = mbjax.io.Table(t, names, np.full((3, len(names)), 120.0), False, {"file": "arm_force.sto"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actuator_forces(ARM, forces, t, where="JointReaction")


def test_an_eager_check_error_leads_with_its_message():
    # equinox's debugging banner came first and the message in the middle; the message now leads
    with pytest.raises(eqx.EquinoxRuntimeError) as info:
        mbjax.muscle_forces(ARM, jnp.zeros(2), jnp.zeros(2), jnp.full(6, 1.5))
    first = str(info.value).splitlines()[0]
    assert first.startswith("activation must be in [0, 1]") and "'TRIlong'" in first
    assert "EQX_ON_ERROR=breakpoint" in str(info.value)  # equinox's debugging hint is kept, after it


def test_joint_reaction_times_at_print_rounding_of_the_forces_file_are_not_outside_it():
    """OpenSim prints times with 8 decimals: its static optimization's first frame 0.49999971999999304 s
    is 0.49999972 in its _force.sto.  That frame is the file's first row (quiet, the row's forces); a
    frame outside by more than half the last printed digit is warned, naming the file and the gap."""
    from mbjax.opensim.tools.jr.loads import printed_half_digit

    names = tuple(ARM.muscle_names)
    ft = np.array([0.49999972, 0.50999972, 0.51999972])  # as read from the file's 8 decimals
    assert printed_half_digit(ft) == 0.5e-8 and printed_half_digit([0.5, 0.25]) == 0.5e-2
    assert printed_half_digit([0.1 + 0.2]) <= 0.5e-16  # written with every digit: no slack
    forces = mbjax.io.Table(ft, names, 100.0 + np.arange(3)[:, None] * np.ones(len(names)), False,
                            {"file": "walk_force.sto"})
    recorded = np.array([0.49999971999999304, 0.51, 0.51999972000000002])
    assert recorded[0] != ft[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, values = actuator_forces(ARM, forces, recorded, where="JointReaction")
    np.testing.assert_allclose(values[0], 100.0, atol=1e-12)
    with pytest.warns(UserWarning, match=r"JointReaction: 1 recorded times lie outside the forces file walk_force\.sto's "
                                         r"times 0\.49999972-0\.51999972 s \(first 0\.4999997 s, 2(\.\d+)?e-08 s outside\)"):
        actuator_forces(ARM, forces, np.array([0.4999997, 0.51]), where="JointReaction")
    with pytest.warns(UserWarning, match=r"first 0\.52 s"):
        actuator_forces(ARM, forces, np.array([0.51, 0.52]), where="JointReaction")
