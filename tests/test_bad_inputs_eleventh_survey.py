"""Findings of the eleventh outside survey, each now answered as documented or refused naming the
argument the user gave; checked against independent values (Fo · a for a rigid-tendon force at the
same pose, the valid twins unchanged)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax


@pytest.fixture(scope="module")
def arm():
    with pytest.warns(UserWarning, match="wrapping ignored"):
        return mbjax.models.load("arm26", ignore_wrapping=True)


def _with_fmax(model, value):
    fmax = model.muscles.parameters["max_isometric_force"]
    return eqx.tree_at(lambda m: m.muscles.parameters["max_isometric_force"], model, fmax.at[0].set(value))


def test_a_nan_muscle_parameter_with_checks_off_stays_nan_never_the_default(arm):
    """With checks off a NaN set after loading propagates (the docs' rule); it was OpenSim's default
    1000 N (TRIlong's file value is 798.5 N), a plausible force; with checks on it is refused by name."""
    q, qd, a = jnp.array([0.3, 0.8]), jnp.array([0.2, -0.5]), jnp.full(6, 0.5)
    with mbjax.config.checks(False):
        f_nan = np.asarray(mbjax.muscle_forces(_with_fmax(arm, jnp.nan), q, qd, a))
    f_given = np.asarray(mbjax.muscle_forces(arm, q, qd, a))
    f_default = np.asarray(mbjax.muscle_forces(_with_fmax(arm, 1000.0), q, qd, a))
    assert np.isnan(f_nan[0]) and not np.isclose(f_given[0], f_default[0])
    np.testing.assert_array_equal(f_nan[1:], f_given[1:])  # the other muscles untouched
    with pytest.raises(RuntimeError, match="muscle 'TRIlong': max_isometric_force must be finite"):
        mbjax.muscle_forces(_with_fmax(arm, jnp.nan), q, qd, a)


def test_simulate_muscles_names_its_own_excitations(arm):
    q0 = jnp.array([0.3, 0.8])
    bad = jnp.array([2.0, 0.1, 0.3, 0.6, 0.2, 1.0])
    with pytest.raises(RuntimeError, match=r"simulate_muscles: excitations\(t0\) must be in \[0, 1\].*'TRIlong' is outside"):
        mbjax.simulate_muscles(arm, q0, jnp.zeros(2), 0.0, 0.01, excitations=bad)
    with pytest.raises(RuntimeError, match=r"simulate_muscles: excitations\(t0\) contains NaN"):
        mbjax.simulate_muscles(arm, q0, jnp.zeros(2), 0.0, 0.01, excitations=bad.at[0].set(jnp.nan))
    sol = mbjax.simulate_muscles(arm, q0, jnp.zeros(2), 0.0, 0.01, excitations=jnp.clip(bad, 0, 1))
    assert np.isfinite(np.asarray(sol.ys.q)).all()


def test_inverse_dynamics_names_its_external_loads():
    b = mbjax.ModelBuilder(["a"], gravity=[0, -9.81, 0])
    b.add_body("link", axis=[0, 0, 1], map="a", mass=1.0, com=[0, -0.1, 0], inertia=np.eye(3) * 0.01)
    model = b.build()
    z = jnp.zeros(1)
    for field in ("points", "forces", "torques"):
        arrays = {"points": jnp.array([[0.0, -0.2, 0.0]]), "forces": jnp.array([[3.0, 0.0, 0.0]]),
                  "torques": jnp.zeros((1, 3))}
        arrays[field] = arrays[field].at[0, 0].set(jnp.nan)
        loads = mbjax.ExternalLoads(bodies=("link",), names=("push",), **arrays)
        with pytest.raises(RuntimeError, match=rf"inverse_dynamics: external\.{field} contains NaN or inf for loads \('push'\)"):
            mbjax.inverse_dynamics(model, z, z, z, external=loads)
    # the valid twin: a horizontal 3 N push at 0.2 m below the pin (at q = 0) is a torque of 0.6 N·m
    loads = mbjax.ExternalLoads(bodies=("link",), points=jnp.array([[0.0, -0.2, 0.0]]), forces=jnp.array([[3.0, 0.0, 0.0]]))
    tau = mbjax.inverse_dynamics(model, z, z, z, external=loads)
    np.testing.assert_allclose(tau, [-0.6], atol=1e-14)
    np.testing.assert_allclose(jax.jit(mbjax.inverse_dynamics)(model, z, z, z, external=loads), tau, atol=1e-15)


def _arm26_with_tri(tmp_path, old, new):
    from mbjax.io import load_osim

    text = open(mbjax.models.model_path("arm26")).read()
    start = text.index('<WrapCylinder name="TRI">')
    assert old in text[start:start + 800]
    text = text[:start] + text[start:].replace(old, new, 1)
    path = tmp_path / "arm26_edited.osim"
    path.write_text(text)
    return lambda: load_osim(str(path))  # loading compiles nothing


@pytest.mark.parametrize("value", ["yes", "no", "off"])
def test_a_wrap_objects_active_flag_is_true_or_false(tmp_path, value):
    """``<active>no</active>`` kept the cylinder on without a word (OpenSim 4.6 cannot read it either and
    keeps its default, true, with a log line); refused by file, line and element, as other booleans."""
    load = _arm26_with_tri(tmp_path, "<active>true</active>", f"<active>{value}</active>")
    with pytest.raises(ValueError, match=rf"arm26_edited\.osim:\d+: <WrapCylinder name='TRI'>: <active> must be true "
                                         rf"or false, got '{value}'"):
        load()


@pytest.mark.parametrize("value, active", [("false", False), ("FALSE", False), ("0", False), ("True", True), ("1", True)])
def test_a_wrap_objects_active_flag_valid_twins(tmp_path, value, active):
    model = _arm26_with_tri(tmp_path, "<active>true</active>", f"<active>{value}</active>")()
    wraps = model.muscles.wraps
    assert bool(np.asarray(wraps.active)[list(wraps.names).index("TRI")]) is active


def test_an_empty_quadrant_is_refused_as_opensim_refuses_it(tmp_path):
    load = _arm26_with_tri(tmp_path, "<quadrant>all</quadrant>", "<quadrant></quadrant>")
    with pytest.raises(ValueError, match=r"<WrapCylinder name='TRI'>: <quadrant> is empty \(OpenSim 4\.6 refuses it "
                                         r"too\); write all, x, \+x"):
        load()
    load = _arm26_with_tri(tmp_path, "<quadrant>all</quadrant>", "<quadrant> -y </quadrant>")
    assert "TRI" in load().muscles.wraps.names  # padded text is read, as OpenSim reads it


def test_a_range_warning_names_the_numbers_of_a_column_with_a_nan_frame(arm):
    """A coordinate column far outside its range with one NaN frame: the warning gives its extreme number
    (it said "reaches nan")."""
    from mbjax.io.motion_ranges import warn_outside_ranges

    values = np.array([[0.2, 0.5], [np.nan, 0.6], [9.0, 0.7]])
    with pytest.warns(UserWarning, match=r"r_shoulder_elev reaches 9, range \[-1\.571, 3\.142\]") as record:
        warn_outside_ranges(arm, arm.coordinate_names, values, "trial.mot", in_degrees=None)
    assert "nan" not in str(record[0].message)
