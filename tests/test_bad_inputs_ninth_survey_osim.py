"""Muscle and actuator classes of the ninth outside survey: every class ``load_osim`` reads has a
force law equal to OpenSim's, and the others are refused by file, line, element and name, with the
``ignore_forces`` opt-out (path kept, zero tension).

* ``Millard2012AccelerationMuscle`` (a fibre with mass) loaded silently and then had zero force in
  ``muscle_forces`` and static optimization (OpenSim computes its force); it is refused at load now,
  like ``RigidTendonMuscle``, ``DeGrooteFregly2016Muscle``, ``McKibbenActuator`` and the deprecated
  classes mbjax does not model.
* ``muscle_forces`` on a model without a muscle of a modelled class names the paths and classes.
* ``PathActuator`` had zero tension in ``muscle_forces`` and the muscle-driven dynamics; its tension
  is control · optimal_force (OpenSim's ``PathActuator::computeActuation``; compared with OpenSim
  live in tests/validation/test_hill_opensim.py).

Small generated two-link models (:mod:`_two_link_muscles`)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.muscles.fiber_dynamics import muscle_derivatives
from _osim_text import line_of, quietly, write_text  # noqa: E402
from _two_link_muscles import muscle, path_actuator, two_link  # noqa: E402

Q, QD = jnp.asarray([0.3, 1.0]), jnp.zeros(2)
ACC = "Millard2012AccelerationMuscle"


@pytest.mark.parametrize("others", [(), (muscle("Thelen2003Muscle", "m1"), path_actuator("pa", 10))],
                         ids=["alone", "with Thelen and PathActuator"])
def test_millard_acceleration_muscle_is_refused_by_name(tmp_path, others):
    text = two_link(*others, muscle(ACC, "acc", "0.02 0 0.01", "0.01 -0.15 0"))
    path = write_text(tmp_path, text)
    with pytest.raises(NotImplementedError, match=rf"model.osim:{line_of(text, '<' + ACC)}: <{ACC} name='acc'>: "
                                                  rf"{ACC} \(a fibre with mass.*is not modelled.*"
                                                  rf"Pass ignore_forces=\('{ACC}',\) to load the model without it "
                                                  r"\(its path is kept\)"):
        load_osim(path)
    with pytest.warns(UserWarning, match=rf"not modelled, as asked by ignore_forces.*{ACC} 'acc'"):
        model = load_osim(path, ignore_forces=(ACC,))
    assert model.muscles.kinds[-1] == f"{ACC} (ignored)"
    if not others:  # nothing with a force law left: refused, naming the path and its class
        with pytest.raises(NotImplementedError, match=rf"no muscle whose force mbjax computes among the model's "
                                                      rf"paths: 'acc' \({ACC} \(ignored\)\); the classes with a "
                                                      "force law are Thelen2003Muscle, Millard2012EquilibriumMuscle, "
                                                      "Schutte1993Muscle_Deprecated and PathActuator"):
            mbjax.muscle_forces(model, Q, QD, jnp.full(1, 0.5))
        return
    forces = np.asarray(jax.jit(lambda q: mbjax.muscle_forces(model, q, QD, jnp.full(3, 0.5)))(Q))
    assert forces[0] > 100 and forces[1] == 5.0 and forces[2] == 0.0  # the opt-out: zero tension, asked for


@pytest.mark.parametrize("cls", ["RigidTendonMuscle", "DeGrooteFregly2016Muscle", "McKibbenActuator",
                                 "Delp1990Muscle_Deprecated", "ActivationFiberLengthMuscle_Deprecated"])
def test_muscle_classes_without_a_force_law_are_refused_by_name(tmp_path, cls):
    text = two_link(muscle("Thelen2003Muscle", "m1"), muscle(cls, "other"))
    with pytest.raises(NotImplementedError, match=rf"model.osim:{line_of(text, '<' + cls)}: <{cls} name='other'>: .*"
                                                  rf"Pass ignore_forces=\('{cls}',\)"):
        load_osim(write_text(tmp_path, text))


@pytest.mark.extended  # CI: tests/validation/test_hill_opensim.py::test_path_actuator_tension_matches_opensim (the same, OpenSim live)
def test_path_actuator_tension_is_control_times_optimal_force(tmp_path):
    """A ``PathActuator``'s entry of ``activation`` is its control: tension control · optimal_force
    (default 1) in ``muscle_forces``, and, with its excitation as control, in the muscle-driven
    dynamics; a model of path actuators alone has forces too."""
    text = two_link(muscle("Thelen2003Muscle", "m1"), path_actuator("pa", 10), path_actuator("unit"))
    model = quietly(load_osim, write_text(tmp_path, text))
    a = jnp.asarray([0.5, 0.7, 0.4])
    u = jnp.asarray([0.5, 0.3, 0.9])  # in the dynamics the excitation is the control, whatever the activation

    @jax.jit
    def run(q):
        lce = mbjax.initial_fiber_lengths(model, q, QD, a)
        return mbjax.muscle_forces(model, q, QD, a), muscle_derivatives(model, q, QD, a, lce, u), mbjax.moment_arms(model, q)

    forces, d, R = run(Q)
    forces, R, tension = np.asarray(forces), np.asarray(R), np.asarray(d.state.tendon_force)
    np.testing.assert_allclose(forces[1:], [7.0, 0.4], rtol=1e-15)
    assert forces[0] > 100
    np.testing.assert_allclose(tension[1:], [3.0, 0.9], rtol=1e-15)
    np.testing.assert_allclose(np.asarray(d.generalized_forces), R @ tension, rtol=0, atol=1e-12 * np.abs(R @ tension).max())
    assert np.asarray(d.activation_rate)[1:].tolist() == [0.0, 0.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        alone = load_osim(write_text(tmp_path, two_link(path_actuator("pa", 10)), "pa.osim"))
    np.testing.assert_allclose(mbjax.muscle_forces(alone, Q, QD, jnp.asarray([0.25])), [2.5], rtol=1e-15)
