"""Findings of the thirteenth outside survey, each now answered as OpenSim answers or refused before any
work; checked against independent values (the bounds written in the file; OpenSim 4.6 live in
tests/validation/test_so_opensim.py)."""

from __future__ import annotations

import os
import shutil
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import Table, load_osim
from mbjax.models import model_path
from _two_link_muscles import muscle, two_link

WALK = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk")


def test_static_optimization_bounds_each_muscle_by_its_controls(tmp_path):
    """OpenSim's static optimization bounds an actuator by its controls; mbjax used [minimum_activation, 1]
    whatever the file said (a max_control of 0.02 was ignored: activations 0.15-0.35)."""
    from mbjax.muscles.paths import get_paths
    from mbjax.opensim.tools.so.motion import _check_control_bounds, muscle_control_bounds

    path = tmp_path / "m.osim"
    path.write_text(two_link(muscle("Thelen2003Muscle", "given", extra="<min_control>0.2</min_control>"
                                    "<max_control>0.6</max_control>"),
                             muscle("Millard2012EquilibriumMuscle", "below", extra="<min_control>0.001</min_control>"),
                             muscle("Millard2012EquilibriumMuscle", "plain")))
    paths = get_paths(load_osim(str(path)))
    lo, hi = (np.asarray(b) for b in muscle_control_bounds(paths))
    np.testing.assert_allclose(lo, [0.2, 0.01, 0.01])  # a lower min_control raised to minimum_activation
    np.testing.assert_allclose(hi, [0.6, 1.0, 1.0])
    path.write_text(two_link(muscle("Thelen2003Muscle", "m1", extra="<max_control>0.005</max_control>")))
    with pytest.raises(ValueError, match=r"max_control is below min_control or minimum_activation for 'm1' "
                                         r"\(activation bounds \[0.01, 0.005\]\)"):
        _check_control_bounds(get_paths(load_osim(str(path))))


def test_run_checks_every_output_before_the_first_step(tmp_path):
    """``mbjax run ik.xml id.xml`` where the ID's results folder cannot be made: refused (exit 2) before the
    IK runs, as the single-tool commands refuse it (the IK's files were written first)."""
    from mbjax.cli.common import UsageError
    from mbjax.opensim import run_setups

    folder = tmp_path / "walk"
    shutil.copytree(WALK, folder)
    (folder / "blocker").write_text("a file where a folder should be")
    ik = folder / "subject01_Setup_IK.xml"
    ik.write_text(ik.read_text().replace("<output_motion_file>subject01_walk1_ik.mot", "<output_motion_file>ik_new.mot"))
    id_ = folder / "subject01_Setup_InverseDynamics.xml"
    text = id_.read_text()
    start = text.index("<results_directory>")
    end = text.index("</results_directory>", start)
    id_.write_text(text[:start] + "<results_directory>blocker/results" + text[end:])
    with pytest.raises(UsageError, match=r"cannot create the folder .*blocker/results"):
        run_setups([str(ik), str(id_)], quiet=True)
    assert not os.path.exists(folder / "ik_new.mot")  # the IK did not run


def test_a_locked_coordinates_column_is_not_called_unknown(tmp_path):
    """A coordinates file's column of a locked coordinate: one warning (locked or coupled, from the tool),
    not also "matches no model coordinate" (it does)."""
    from mbjax.opensim.tools.id import coordinate_trajectory

    path = tmp_path / "locked.osim"
    path.write_text(two_link().replace("<default_value>0.5</default_value>",
                                       "<default_value>0.5</default_value><locked>true</locked>"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(str(path))
    assert model.coordinate_names == ("q1",)
    t = np.linspace(0.0, 0.5, 11)
    table = Table(t, ("q1", "q2", "bogus"), np.column_stack([0.1 * t, np.full_like(t, 0.5), t]), False,
                  {"name": "coordinates"})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        time, q, _, _ = coordinate_trajectory(model, table)
    unknown = [str(w.message) for w in seen if "match no model coordinate" in str(w.message)]
    assert len(unknown) == 1 and "'bogus'" in unknown[0] and "'q2'" not in unknown[0]
    np.testing.assert_allclose(np.asarray(q)[:, 0], 0.1 * np.asarray(time), atol=1e-12)


def test_a_nan_core_muscle_parameter_with_checks_off_gives_nan_not_zero_newtons(tmp_path):
    """With checks off a NaN or inf optimal fibre length, tendon slack length or pennation angle gave
    that muscle exactly 0 N (the solvers' guards); now its state is NaN, the other rows untouched (a
    PathActuator's row, which holds none of these, included), and checks on still refuse it by name."""
    import equinox as eqx

    path = tmp_path / "m.osim"
    path.write_text(two_link(muscle("Thelen2003Muscle", "m1", extra="<ignore_tendon_compliance>true"
                                    "</ignore_tendon_compliance>"), '<PathActuator name="pa"><GeometryPath name="path"><PathPointSet><objects>'
                             '<PathPoint name="a"><socket_parent_frame>/bodyset/upper</socket_parent_frame>'
                             '<location>-0.02 -0.1 0.01</location></PathPoint><PathPoint name="b">'
                             '<socket_parent_frame>/bodyset/lower</socket_parent_frame><location>-0.01 -0.05 0'
                             '</location></PathPoint></objects></PathPointSet></GeometryPath>'
                             '<optimal_force>300</optimal_force></PathActuator>'))
    model = load_osim(str(path))
    q, qd, a = jnp.array([0.3, 0.5]), jnp.zeros(2), jnp.array([0.4, 0.5])
    base = np.asarray(mbjax.muscle_forces(model, q, qd, a))
    assert np.isfinite(base).all() and base[1] == 150.0 and base[0] > 1.0
    @eqx.filter_jit  # traced once, with checks off: every edited model below is the same program
    def forces_and_fibres(m):
        state = mbjax.muscle_state(m, q, qd, a)
        return state.tendon_force, state.fiber_length

    with mbjax.config.checks(False):
        np.testing.assert_allclose(np.asarray(forces_and_fibres(model)[0]), base, rtol=1e-12)
        for key in ("optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal"):
            for value in (np.nan, np.inf):
                edited = eqx.tree_at(lambda m: m.muscles.parameters[key], model,
                                     model.muscles.parameters[key].at[0].set(value))
                f, lce = (np.asarray(x) for x in forces_and_fibres(edited))
                assert np.isnan(f[0]) and np.isnan(lce[0]), (key, value, f)
                np.testing.assert_allclose(f[1:], base[1:], rtol=1e-12)
    with pytest.raises(RuntimeError, match="muscle 'm1': tendon_slack_length must be finite"):
        mbjax.muscle_forces(eqx.tree_at(lambda m: m.muscles.parameters["tendon_slack_length"], model,
                                        model.muscles.parameters["tendon_slack_length"].at[0].set(np.nan)), q, qd, a)


def test_a_ligament_fibre_with_a_nan_end_with_checks_off_is_nan_not_left_out():
    """``ligament_energy`` left out a fibre with a NaN end (0.2177 J where the ligament's is 0.2493 J) and
    gave 0 J for a NaN pose (its length was taken as 0); now NaN, the valid energy unchanged and still
    minus the wrench's virtual work (central differences)."""
    import equinox as eqx

    from mbjax import ligaments as lig

    rng = np.random.default_rng(0)
    pa = rng.normal(size=(5, 3)) * 0.01
    pb = pa + np.array([0, 0.03, 0]) + rng.normal(size=(5, 3)) * 0.002
    fib = lig.FibreSet(jnp.asarray(pa), jnp.asarray(pb), jnp.full(5, 1e-6), jnp.full(5, 1e8), jnp.full(5, 0.028),
                       law="blankevoort")
    eye, pose_b = jnp.eye(4), jnp.eye(4).at[:3, 3].set(jnp.array([0.001, 0.004, -0.002]))
    energy = float(lig.ligament_energy(fib, eye, pose_b))
    h = 1e-7
    up, down = (float(lig.ligament_energy(fib, eye, pose_b.at[1, 3].add(s * h))) for s in (1, -1))
    np.testing.assert_allclose(-(up - down) / (2 * h), float(lig.ligament_wrench(fib, eye, pose_b)[4]), rtol=1e-6)
    bad = eqx.tree_at(lambda f: f.points_b, fib, fib.points_b.at[0, 1].set(jnp.nan))
    with mbjax.config.checks(False):
        assert np.isnan(float(lig.ligament_energy(bad, eye, pose_b)))
        assert np.isnan(float(lig.ligament_energy(fib, eye, pose_b.at[0, 3].set(jnp.nan))))
        # ligament_wrench is jitted: the checks switch is read when it is traced (mbjax.config), so the
        # unjitted wrench it runs is called here
        assert np.isnan(np.asarray(lig.fibres.wrench(bad, eye, pose_b))).all()
    assert energy > 0.2


def test_the_max_steps_message_names_excitations_that_turn_nan_after_t0():
    """Only u(t0) is checked before a muscle-driven solve; a NaN later made every step fail until
    max_steps, and the message named tolerances only.  It now names the first sampled NaN time."""
    from mbjax._simulate_muscles import _excitation_problems

    u = lambda t: jnp.where(t > 0.005, jnp.nan, 0.5) * jnp.ones(3)  # noqa: E731
    (text,) = _excitation_problems(u, 0.0, 0.01)
    assert "excitations(t) hold NaN or inf at t = 0.00505 s (entries [0, 1, 2])" in text
    assert _excitation_problems(lambda t: jnp.full(3, 0.5), 0.0, 0.01) == []


def test_float32_paths_over_an_ellipsoid_warn_by_object():
    """OpenSim's ellipsoid algorithm stops on tolerances below float32's resolution: arm26's BIClong came
    out 0.509 m in float32 where float64 (and OpenSim) give 0.391 m at the same rounded pose, without a
    word.  Tracing the float32 pass now warns naming the ellipsoids; float64 does not."""
    import equinox as eqx
    import jax

    arm = mbjax.models.load("arm26")
    arm32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, arm)
    with pytest.warns(UserWarning, match=r"WrapEllipsoid objects \['BIClonghh', 'TRIlonghh'\] in float32"):
        jax.jit(lambda q: mbjax.muscle_lengths(arm32, q)).lower(jnp.zeros(2, jnp.float32))  # traced, not compiled
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jax.jit(lambda q: mbjax.muscle_lengths(arm, q)).lower(jnp.zeros(2))
