"""Static optimization from OpenSim setup files (mbjax.opensim.tools.so) on the arm26 tutorial's own files.

Independent references:

* the states: a motion quadratic in time, which OpenSim's natural quintic splines reproduce
  exactly, so q̇ and q̈ (spline of the speeds) are known in closed form;
* the optimum: the KKT conditions of min Σ a² s.t. R F(a) = τ, checked by hand at every frame
  (stationarity with the multipliers recovered by least squares on the free activations);
* the files: what was written reads back, with OpenSim's names and time grid.

OpenSim 4.6's own AnalyzeTool run of the same setup is the reference in
tests/validation/test_so_opensim.py.
"""

from __future__ import annotations

import os
import pathlib
import warnings

import jax
import numpy as np
import pytest

import mbjax
from mbjax.io import Table, read_storage
from mbjax.forces import PointActuator, TorqueActuator
from mbjax.opensim.tools.so import Reserve, read_reserves, read_so_setup, states_trajectory, static_optimization_from_setup

DATA = pathlib.Path(__file__).parent / "data" / "opensim_models" / "arm26_so"
SETUP = DATA / "arm26_Setup_StaticOptimization.xml"


def test_read_tutorial_setup():
    s = read_so_setup(SETUP)
    assert s.name == "arm26" and os.path.basename(s.model_file) == "arm26.osim"
    assert s.coordinates_file == str(DATA / "arm26_InverseKinematics.mot")
    assert s.time_range == (0.0, 1.0) and s.lowpass_cutoff == 6.0
    assert s.activation_exponent == 2.0 and s.use_muscle_physiology and s.use_model_force_set
    assert s.force_set_files == () and s.results_directory == str(DATA / "PhysiologicalResults")


def test_states_are_opensims_splines_on_a_quadratic_motion():
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 31)
    a, b, c = np.array([0.2, 1.0]), np.array([0.5, -0.4]), np.array([-1.2, 2.0])
    q = a + np.outer(t, b) + np.outer(t ** 2, c)
    table = Table(t, tuple(model.coordinate_names), q, False, {})
    tt, qs, qds, qdds = states_trajectory(model, table, -1.0, (0.1, 0.4))
    sel = (t >= 0.1 - 1e-12) & (t <= 0.4 + 1e-12)
    np.testing.assert_allclose(tt, t[sel], rtol=0, atol=0)
    np.testing.assert_allclose(qs, q[sel], rtol=0, atol=1e-14)
    np.testing.assert_allclose(qds, b + 2 * np.outer(tt, c), rtol=0, atol=1e-11)
    np.testing.assert_allclose(qdds, np.broadcast_to(2 * c, qdds.shape), rtol=0, atol=1e-8)


def test_tutorial_setup_runs_writes_and_satisfies_kkt(tmp_path):
    """The tutorial's setup file (6 Hz filter, 121 frames) on arm26 with straight paths (its wrapped
    run, against OpenSim itself, is in tests/validation/test_so_opensim.py)."""
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    res = static_optimization_from_setup(SETUP, model, results_directory=tmp_path, progress=False)
    # OpenSim's frames: the padded, filtered grid from its last row at or before 0 s (-2e-7 s) to 1 s
    assert res.time.shape == (121,) and res.time[0] < 0 < res.time[1] and abs(res.time[0]) < 1e-6
    assert res.labels == tuple(model.muscle_names) and np.asarray(res.result.converged).all()
    R = np.asarray(jax.vmap(lambda q: mbjax.muscles.opensim_moment_arms(model, q))(res.q))
    tau = np.einsum("tqm,tm->tq", R, res.forces)
    np.testing.assert_allclose(tau, res.tau, rtol=0, atol=1e-9 * max(1.0, np.abs(res.tau).max()))
    # KKT of min Σ a² with 0.01 <= a <= 1: free activations have 2 a = -(R f)ᵀ λ for one λ per frame
    f_opt = res.forces / res.activations
    for k in range(0, 121, 20):
        a = res.activations[k]
        free = (a > 0.01 + 1e-9) & (a < 1 - 1e-9)
        A = R[k] * f_opt[k]
        lam, *_ = np.linalg.lstsq(-A[:, free].T, 2 * a[free], rcond=None)
        np.testing.assert_allclose(-A[:, free].T @ lam, 2 * a[free], rtol=0, atol=1e-8)
        bound = ~free  # at the lower bound the gradient must point into the box
        assert np.all(2 * a[bound] + A[:, bound].T @ lam >= -1e-8)
    act = read_storage(tmp_path / "arm26_StaticOptimization_activation.sto")
    force = read_storage(tmp_path / "arm26_StaticOptimization_force.sto")
    assert act.labels == res.labels and force.labels == res.labels
    np.testing.assert_allclose(act.data, res.activations, rtol=1e-12, atol=0)
    np.testing.assert_allclose(force.time, res.time, rtol=0, atol=1e-15)
    _check_controls(tmp_path / "arm26_StaticOptimization_controls.xml", res)


def _check_controls(path, res):
    """OpenSim's ControlSet of the activations (``ControlSet::ExtractControl``): a ControlLinear per
    actuator in the activation file's order, a node (t, value) at every frame with the activations to
    the last bit, the class defaults of ``Control`` and ``ControlLinear``."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    assert root.tag == "OpenSimDocument" and root.get("Version") == "40600"
    objects = root.find("ControlSet/objects")
    assert root.find("ControlSet").get("name") == "Control Set"
    assert [c.tag for c in objects] == ["ControlLinear"] * len(res.labels)
    assert tuple(c.get("name") for c in objects) == res.labels
    for k, c in enumerate(objects):
        assert [e.tag for e in c] == ["is_model_control", "extrapolate", "default_min", "default_max", "filter_on",
                                      "use_steps", "x_nodes", "min_nodes", "max_nodes", "kp", "kv"]
        assert [c.findtext(t) for t in ("is_model_control", "extrapolate", "default_min", "default_max", "filter_on",
                                        "use_steps", "kp", "kv")] == ["true", "true", "0.02", "1", "false", "false",
                                                                      "100", "20"]
        assert len(c.find("min_nodes")) == 0 and len(c.find("max_nodes")) == 0
        nodes = c.find("x_nodes")
        np.testing.assert_array_equal([float(n.findtext("t")) for n in nodes], res.time)
        np.testing.assert_array_equal([float(n.findtext("value")) for n in nodes], res.activations[:, k])


def test_reserves_are_read_and_other_actuators_refused(tmp_path):
    good = tmp_path / "reserves.xml"
    good.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r">
      <defaults><CoordinateActuator name="default"><optimal_force>1000</optimal_force></CoordinateActuator>
      </defaults><objects>
      <PointActuator name="FX"><body>pelvis</body><point>-0.07 0 0</point><force_is_global>true</force_is_global>
        <optimal_force>4</optimal_force></PointActuator>
      <CoordinateActuator name="elbow_reserve"><coordinate>r_elbow_flex</coordinate>
        <optimal_force>10</optimal_force><min_control>-5</min_control><max_control>5</max_control>
      </CoordinateActuator>
      <CoordinateActuator name="off"><appliesForce>false</appliesForce><coordinate>r_shoulder_elev</coordinate>
      </CoordinateActuator>
      <CoordinateActuator name="shoulder_reserve"><coordinate>r_shoulder_elev</coordinate></CoordinateActuator>
      <TorqueActuator name="MZ"><bodyA>pelvis</bodyA><bodyB>ground</bodyB><optimal_force>2</optimal_force>
      </TorqueActuator></objects></ForceSet></OpenSimDocument>""")
    # file order; the <defaults> optimal force; the disabled one left out; OpenSim's property defaults
    assert read_reserves(good) == (
        PointActuator("FX", "pelvis", (-0.07, 0.0, 0.0), (1.0, 0.0, 0.0), False, True, 4.0),
        Reserve("elbow_reserve", "r_elbow_flex", 10.0, -5.0, 5.0),
        Reserve("shoulder_reserve", "r_shoulder_elev", 1000.0),
        TorqueActuator("MZ", "pelvis", "ground", (0.0, 0.0, 1.0), True, 2.0))
    bad = tmp_path / "residuals.xml"
    bad.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>
      <McKibbenActuator name="FX"><body>pelvis</body></McKibbenActuator></objects></ForceSet></OpenSimDocument>""")
    with pytest.raises(NotImplementedError, match=r"residuals.xml.*McKibbenActuator.*FX"):
        read_reserves(bad)
    bad.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>
      <PointActuator name="FX"><body>pelvis</body><point>0 1</point></PointActuator></objects></ForceSet>
      </OpenSimDocument>""")
    with pytest.raises(ValueError, match=r"residuals.xml:2.*<point> must be three numbers"):
        read_reserves(bad)


def test_reserve_carries_what_muscles_cannot(tmp_path):
    """With a strong elbow reserve and muscles limited, the reserve takes the rest: R F + τ_r = τ."""
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 31)
    q = np.stack([0.1 + 0.0 * t, 0.5 + 1.5 * t ** 2], 1)
    from mbjax.opensim.tools.so import static_optimization_motion

    res = static_optimization_motion(model, Table(t, tuple(model.coordinate_names), q, False, {}),
                                     reserves=(Reserve("elbow", "r_elbow_flex", 1.0),), progress=False)
    assert res.labels[-1] == "elbow" and res.activations.shape == (31, 7)
    R = np.asarray(jax.vmap(lambda x: mbjax.muscles.opensim_moment_arms(model, x))(res.q))
    tau = np.einsum("tqm,tm->tq", R, res.forces[:, :6])
    tau[:, 1] += res.forces[:, 6]
    np.testing.assert_allclose(tau, res.tau, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.forces[:, 6], res.activations[:, 6] * 1.0, rtol=0, atol=0)
    from mbjax.opensim.tools.so import write_controls

    write_controls(tmp_path / "controls.xml", res.tables()[0])  # the reserve's control too, after the muscles'
    _check_controls(tmp_path / "controls.xml", res)


def test_written_columns_in_the_model_force_set_order(tmp_path):
    """A model whose own CoordinateActuator is listed before its muscles: OpenSim's columns follow the
    ForceSet (that actuator first; the force-set files' reserves after, as listed), so the written tables
    do; the result's arrays keep muscles first (its OpenSim run: tests/validation/test_so_opensim.py)."""
    from mbjax.opensim.tools.so import SOResult
    from mbjax.opensim.tools.so.motion import force_set_columns

    text = open(mbjax.models.model_path("arm26")).read()
    at = text.index("<objects>", text.index("<ForceSet")) + len("<objects>")
    path = tmp_path / "arm.osim"
    path.write_text(text[:at] + '<CoordinateActuator name="model_elbow"><coordinate>r_elbow_flex</coordinate>'
                    "</CoordinateActuator>" + text[at:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(path, ignore_wrapping=True)
    muscles = tuple(model.muscle_names)
    labels = muscles + ("model_elbow", "z_res", "a_res")
    assert force_set_columns(model, labels[:7], 7) == (6, 0, 1, 2, 3, 4, 5)
    t = np.array([0.0, 0.1])
    act = np.arange(18.0).reshape(2, 9)
    res = SOResult(t, act, 10 * act, labels, muscles, (), None, None, None, None, None,
                   (("calcn_Fx",), np.ones((2, 1))), force_set_columns(model, labels, 7))
    a, f = res.tables()
    assert a.labels == ("model_elbow",) + muscles + ("z_res", "a_res")
    assert f.labels == a.labels + ("calcn_Fx",)
    np.testing.assert_array_equal(a.data, act[:, [6, 0, 1, 2, 3, 4, 5, 7, 8]])
    np.testing.assert_array_equal(f.data[:, :9], 10 * a.data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = mbjax.io.load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True)
    assert force_set_columns(plain, muscles + ("r",), 6) is None  # muscles first in the file: as they are


def test_second_motion_of_the_same_length_does_not_trace_again(monkeypatch):
    """Compile once, run many: a second motion (new values, same frame count) reuses the program."""
    from mbjax.opensim.tools.so import motion as so_motion
    from mbjax.opensim.tools.so import static_optimization_motion

    traces = []
    inner = so_motion.static_optimization_trajectory

    def counting(*a, **k):
        traces.append(1)
        return inner(*a, **k)

    monkeypatch.setattr(so_motion, "static_optimization_trajectory", counting)
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 21)
    names = tuple(model.coordinate_names)
    first = static_optimization_motion(model, Table(t, names, np.stack([0.1 + 0 * t, 0.5 + t], 1), False, {}),
                                       progress=False)
    after_first = len(traces)  # 1, or 0 when an earlier test left this program on disk (mbjax.program_store)
    second = static_optimization_motion(model, Table(t, names, np.stack([0.2 + t, 1.0 - t], 1), False, {}),
                                        progress=False)
    assert after_first <= 1 and len(traces) == after_first
    assert not np.allclose(first.activations, second.activations)
    # a motion of another frame count in the same bucket (23 frames, padded to 24 like 21): the same
    # program; the motion is linear, so its first 21 frames are the second motion's (to the splines' round-off)
    t3 = np.arange(23) * (t[1] - t[0])
    third = static_optimization_motion(model, Table(t3, names, np.stack([0.2 + t3, 1.0 - t3], 1), False, {}),
                                       progress=False)
    assert len(traces) == after_first and third.activations.shape[0] == 23
    np.testing.assert_allclose(third.activations[:21], second.activations, rtol=0, atol=1e-10)


def test_nan_in_the_model_is_reported_not_returned():
    """The solver is traced without run-time checks (so it can be cached on disk): a path point
    made NaN must still stop the run with a message naming the frames, not return NaN activations."""
    import equinox as eqx

    from mbjax.opensim.tools.so import static_optimization_motion

    model = mbjax.models.load("arm26", ignore_wrapping=True)
    paths = model.muscles
    bad = eqx.tree_at(lambda p: p.location, paths, paths.location.at[2, 0, 0].set(np.nan))
    model = model.replace(muscles=bad)
    t = np.linspace(0.0, 0.5, 11)
    table = Table(t, tuple(model.coordinate_names), np.stack([0.1 + 0 * t, 0.5 + t], 1), False, {})
    with pytest.raises(ValueError, match=r"NaN or inf at 11 of 11 frames \(first at t = 0 s\)"):
        static_optimization_motion(model, table, progress=False)


# --------------------------------------------------------------------------------------------
# every actuator OpenSim's static optimization uses
# --------------------------------------------------------------------------------------------


def test_legacy_actuator_set_is_converted_as_opensim_converts_it(tmp_path):
    """An OpenSim 1.x ``<ActuatorSet>`` (no ``OpenSimDocument`` root: version 10500): ``Force`` ->
    PointActuator (body_B -> body, point_B -> point, direction_A negated, force_is_global),
    ``Torque`` -> TorqueActuator (body_B -> bodyA, body_A -> bodyB, direction_A negated),
    ``GeneralizedForce`` -> CoordinateActuator; legacy ``<defaults>`` and ``min_force`` not read
    (as ``opensim.ForceSet`` reads this very file; tests/validation/test_so_pipelines_opensim.py
    runs Hamner's such file through OpenSim)."""
    path = tmp_path / "legacy.xml"
    path.write_text("""<?xml version="1.0"?><ActuatorSet name="t">
      <defaults><Force name="default"><optimal_force>7</optimal_force></Force></defaults><objects>
      <Force name="FX"><optimal_force>5</optimal_force><body_A>ground</body_A><body_B>pelvis</body_B>
        <point_B>-0.07 0 0</point_B><direction_A>-1 0 0</direction_A><max_force>10</max_force></Force>
      <Force name="FY"><body_B>pelvis</body_B></Force>
      <Torque name="MZ"><optimal_force>2</optimal_force><body_A>ground</body_A><body_B>pelvis</body_B>
        <direction_A>0 0 -1</direction_A></Torque>
      <GeneralizedForce name="elbow"><coordinate>r_elbow_flex</coordinate><optimal_force>3</optimal_force>
      </GeneralizedForce></objects></ActuatorSet>""")
    with pytest.warns(UserWarning, match=r"legacy.xml: properties that OpenSim 4.6 does not read.*'FX' "
                      r"\(<body_A>, <max_force>\)"):
        got = read_reserves(path)
    assert got == (PointActuator("FX", "pelvis", (-0.07, 0.0, 0.0), (1.0, -0.0, -0.0), False, True, 5.0),
                   PointActuator("FY", "pelvis", (0.0, 0.0, 0.0), (-1.0, -0.0, -0.0), False, True, 1.0),
                   TorqueActuator("MZ", "pelvis", "ground", (-0.0, -0.0, 1.0), True, 2.0),
                   Reserve("elbow", "r_elbow_flex", 3.0))


def test_force_set_files_inherit_the_model_and_setup_defaults(tmp_path):
    """OpenSim's default objects are global: a force-set file read after the model takes the
    model's ``<defaults>`` for what its elements leave out (Rajagopal's PointActuator default has
    force_is_global true), and its own override them."""
    from mbjax.opensim.tools.so import setup_force_sets

    src = open(mbjax.models.model_path("arm26")).read()
    model_file = tmp_path / "arm26.osim"
    model_file.write_text(src.replace("<Model name=", "<Model name=", 1).replace(
        "<ForceSet", "<defaults><PointActuator name=\"default\"><force_is_global>true</force_is_global>"
        "<optimal_force>50</optimal_force></PointActuator></defaults><ForceSet", 1))
    model = mbjax.io.load_osim(model_file, ignore_wrapping=True)
    forces = tmp_path / "residuals.xml"
    forces.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r">
      <defaults><PointActuator name="default"><optimal_force>9</optimal_force></PointActuator></defaults>
      <objects><PointActuator name="F"><body>r_humerus</body></PointActuator></objects></ForceSet>
      </OpenSimDocument>""")
    setup = tmp_path / "setup.xml"
    setup.write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"><AnalyzeTool name="a"/></OpenSimDocument>')
    (f,) = setup_force_sets(setup, model, [forces])
    assert f.force_is_global and f.optimal_force == 9.0
    (g,) = read_reserves(forces)  # alone: OpenSim's class defaults
    assert not g.force_is_global


def test_actuators_on_coupled_and_locked_coordinates(tmp_path):
    """A CoordinateActuator's generalized force is F ∂c/∂q (virtual work): on a coordinate coupled
    to ``flex`` by c = s·flex + b the column is s·F on flex, on a locked one zero (the lock takes
    it); slopes from the model file (tests/_ik_models.py)."""
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from _ik_models import KNEE, SLIDE, write_model

    from mbjax.opensim.tools.so import actuator_columns

    model = mbjax.io.load_osim(write_model(tmp_path))
    assert tuple(model.coordinate_names) == ("flex",)
    acts = (Reserve("k", "knee", 2.0), Reserve("s", "slide", 3.0), Reserve("t", "tilt", 5.0), Reserve("f", "flex", 7.0))
    B = np.asarray(actuator_columns(model, acts, np.array([0.4])))
    np.testing.assert_allclose(B, [[KNEE[0] * 2.0, SLIDE[0] * 3.0, 0.0, 7.0]], rtol=1e-12, atol=1e-15)
    from mbjax.opensim.tools.so import check_actuators

    with pytest.warns(UserWarning, match=r"locked coordinates: 't' \(tilt\)"):
        check_actuators(model, acts)


def test_two_reserves_on_one_coordinate_share_it_by_their_optimal_forces():
    """OpenSim accepts several actuators on one coordinate; with cost x₁² + x₂² and F₁x₁ + F₂x₂ = τ_r
    the optimum has x₂/x₁ = F₂/F₁ (KKT: 2xᵢ = λFᵢ)."""
    from mbjax.opensim.tools.so import static_optimization_motion

    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 11)
    q = np.stack([0.3 + 0.2 * t, 0.5 + t], 1)
    table = Table(t, tuple(model.coordinate_names), q, False, {})
    res = static_optimization_motion(model, table, reserves=(Reserve("a", "r_elbow_flex", 1.0),
                                                             Reserve("b", "r_elbow_flex", 3.0)), progress=False)
    xa, xb = res.activations[:, -2], res.activations[:, -1]
    assert np.abs(xa).max() > 1e-6
    np.testing.assert_allclose(xb, 3.0 * xa, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(res.forces[:, -2:], np.stack([xa, 3.0 * xb], 1), rtol=1e-12)


def test_step_interval_records_opensims_rows():
    """``Analysis::proceed``: the first and last rows of the range, and between them the rows whose
    index is a multiple of the interval (rows 2, 3, 6, 9, 12, 15 of a 0.01 s table from 0.025 to 0.15 s)."""
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.arange(20) * 0.01
    q = np.stack([0.3 + 0.2 * t, 0.5 + t], 1)
    table = Table(t, tuple(model.coordinate_names), q, False, {})
    time, *_ = states_trajectory(model, table, time_range=(0.025, 0.15), step_interval=3)
    np.testing.assert_allclose(time, [0.02, 0.03, 0.06, 0.09, 0.12, 0.15], atol=1e-15)
    with pytest.raises(ValueError, match="step_interval"):
        states_trajectory(model, table, step_interval=0)


def test_millard_force_per_activation_is_opensims():
    """OpenSim 4.6 projects a Millard2012 muscle's active force with calcPennationAngle(ℓ/ℓ_o):
    the two rules' ratio is cos(asin(h/(ℓ/ℓ_o))) / cos(asin(h/ℓ)), h = ℓ_o sin α_o, ℓ the
    rigid-tendon fibre length √(h² + (L - ℓ_s)²), computed here with NumPy from the parameters."""
    from mbjax.muscles.parameters import hill_parameters
    from mbjax.analysis.sharing import muscle_force_coefficients

    model = mbjax.models.load("gait10dof18musc")
    q = np.asarray(model.osim.default)
    qd = np.zeros_like(q)
    f_os, _ = muscle_force_coefficients(model, q, qd)
    f_rigid, _ = muscle_force_coefficients(model, q, qd, pennation_rule="rigid")
    p = {k: np.asarray(v) for k, v in hill_parameters(model).items()}
    L = np.asarray(mbjax.muscle_lengths(model, q))
    h = p["optimal_fiber_length"] * np.sin(p["pennation_angle_at_optimal"])
    lce = np.sqrt(h ** 2 + (L - p["tendon_slack_length"]) ** 2)
    expected = np.cos(np.arcsin(h / (lce / p["optimal_fiber_length"]))) / np.cos(np.arcsin(h / lce))
    assert (p["pennation_angle_at_optimal"] > 0.1).any()
    np.testing.assert_allclose(np.asarray(f_os) / np.asarray(f_rigid), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="pennation_rule"):
        muscle_force_coefficients(model, q, qd, pennation_rule="cos")


def test_analysis_times_are_not_the_tools(tmp_path):
    """OpenSim's AnalyzeTool runs its analyses from <initial_time> to <final_time> (AbstractTool's
    defaults 0 and 1 s) and never reads an analysis' <start_time>/<end_time>: a narrower analysis
    window is named in a warning and the tool's window used."""
    path = tmp_path / "so.xml"
    path.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><AnalyzeTool name="a">'
                    '<initial_time>0.1</initial_time><final_time>0.4</final_time><AnalysisSet><objects>'
                    '<StaticOptimization name="so"><start_time>0.2</start_time><end_time>0.3</end_time>'
                    '</StaticOptimization></objects></AnalysisSet></AnalyzeTool></OpenSimDocument>')
    with pytest.warns(UserWarning, match=r"so.xml:2.*start_time.*0.2, 0.3.*not used.*0.1, 0.4"):
        setup = read_so_setup(path)
    assert setup.time_range == (0.1, 0.4)
    path.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><AnalyzeTool name="a"><AnalysisSet>'
                    '<objects><StaticOptimization name="so"/></objects></AnalysisSet></AnalyzeTool></OpenSimDocument>')
    assert read_so_setup(path).time_range == (0.0, 1.0)
