"""Static optimization on opensim-models' example pipelines, mbjax vs OpenSim 4.6 run live.

The pipelines (``OPENSIM_MODELS_DIR``: a checkout of opensim-org/opensim-models) have no static
optimization setup except Gait2392's, so each case writes one in OpenSim's conventions
(:func:`_setup`: an ``AnalyzeTool`` with a ``StaticOptimization``) over a short window of the
pipeline's own coordinates, ground reactions and actuator files, and both tools run that file:

* Gait10dof18musc: 18 pennated ``Millard2012EquilibriumMuscle`` s (OpenSim's force per unit
  activation, :mod:`mbjax.analysis.sharing.static_optimization`) with the pipeline's reserve file, and the
  library's variant with a ``PathActuator``;
* Hamner: a legacy ``<ActuatorSet>`` file (``Force``/``Torque``/``GeneralizedForce``, converted as
  OpenSim 4.6 converts them) on the full-body running model;
* Leg39: reserves on coordinates its couplers make dependent (patella angle, tibia translation);
* Rajagopal2016: the model's own 17 ``CoordinateActuator`` s (four on locked wrist coordinates)
  beside pelvis residuals, on a smooth motion inside the coordinates' ranges.

OpenSim's IPOPT runs at convergence criterion 1e-10 with 16 output digits; it still stops short
at some frames ("Restoration failed", or at a point with a higher objective than the optimum).
Checked (:func:`_compare`): the same columns (muscles and every actuator, by name), the same times,
mbjax meeting every equation; activations and controls within 1e-4 of OpenSim's at least at half
the frames, and wherever they are not, mbjax's objective below the one OpenSim reports.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import read_storage  # noqa: E402
from mbjax.opensim.tools.so import static_optimization_from_setup  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _opensim_tools import run_analyze_tool  # noqa: E402
from _osim_models import OPENSIM_MODELS  # noqa: E402

PIPELINES = os.path.join(OPENSIM_MODELS, "Pipelines") if OPENSIM_MODELS else ""
needs_library = pytest.mark.skipif(not os.path.isdir(PIPELINES),
                                   reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")

SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <AnalyzeTool name="{name}">
    <model_file>{model}</model_file>
    <replace_force_set>false</replace_force_set>
    <force_set_files>{forces}</force_set_files>
    <results_directory>{results}</results_directory>
    <output_precision>16</output_precision>
    <initial_time>{t0}</initial_time>
    <final_time>{t1}</final_time>
    <AnalysisSet name="Analyses"><objects>
      <StaticOptimization name="StaticOptimization">
        <on>true</on>
        <start_time>{t0}</start_time>
        <end_time>{t1}</end_time>
        <step_interval>{step}</step_interval>
        <in_degrees>true</in_degrees>
        <use_model_force_set>true</use_model_force_set>
        <activation_exponent>2</activation_exponent>
        <use_muscle_physiology>true</use_muscle_physiology>
        <optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>
        <optimizer_max_iterations>1000</optimizer_max_iterations>
      </StaticOptimization>
    </objects><groups /></AnalysisSet>
    <ControllerSet name="Controllers"><objects /><groups /></ControllerSet>
    <external_loads_file>{loads}</external_loads_file>
    <coordinates_file>{coordinates}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
"""


def _setup(tmp_path, *, name, model, coordinates, forces="", loads="", t0, t1, step=1):
    path = tmp_path / f"{name}_Setup_StaticOptimization.xml"
    path.write_text(SETUP.format(name=name, model=model, forces=forces, loads=loads or "Unassigned",
                                 coordinates=coordinates, results=tmp_path / "opensim", t0=t0, t1=t1, step=step))
    return path


def _run_opensim(setup, tmp_path):
    """OpenSim's AnalyzeTool on ``setup``: its activations table and, per frame, the constraint
    violation and objective ("Performance") it reports."""
    sink = osim.StringLogSink()
    osim.Logger.addSink(sink)
    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("Info")  # the per-frame report is read from the log (another test may have silenced it)
    try:
        run_analyze_tool(setup, tmp_path)
    finally:
        osim.Logger.removeSink(sink)
        osim.Logger.setLevelString(level)
    log = sink.getString()
    violation = np.array([float(v) for v in re.findall(r"Constraint violation = ([0-9.eE+-]+)", log)])
    performance = np.array([float(v) for v in re.findall(r"Performance = ([0-9.eE+-]+)", log)])
    name = re.search(r'AnalyzeTool name="([^"]+)"', setup.read_text()).group(1)
    table = read_storage(tmp_path / "opensim" / f"{name}_StaticOptimization_activation.sto")
    return table, violation, performance


def _compare(setup, tmp_path, model=None, **kwargs):
    """Both tools on ``setup``.  A frame agrees when every control is within 1e-4 of OpenSim's; a
    frame that does not must be one where OpenSim stopped short: mbjax meets the constraints there
    within its bounds and reaches a lower objective, or OpenSim does not meet its own (and is within
    1e-2 still).  At least
    half the frames agree (one, when OpenSim meets its constraints at none)."""
    opensim, violation, performance = _run_opensim(setup, tmp_path)
    res = static_optimization_from_setup(setup, model, write=False, progress=False, **kwargs)
    assert set(res.labels) == set(opensim.labels), sorted(set(res.labels) ^ set(opensim.labels))
    cols = [list(opensim.labels).index(n) for n in res.labels]
    np.testing.assert_allclose(res.time, opensim.time, rtol=0, atol=1e-9)
    assert violation.size == performance.size == res.time.size
    diff = np.abs(res.activations - opensim.data[:, cols]).max(axis=1)
    objective = np.asarray(res.result.objective)
    agree = diff < 1e-4
    solved = violation < 1e-6  # OpenSim met its own constraints
    # mbjax meets the constraints (asserted below) within its bounds: with a lower objective it is
    # nearer the unique optimum of this strictly convex problem than OpenSim's stopped iterate
    # a PathActuator solves beside the muscles with its own control range (OpenSim's default: unbounded)
    from mbjax.opensim.tools.so import read_so_setup
    import xml.etree.ElementTree as ET

    path_actuators = {e.get("name"): (float(e.findtext("min_control") or "-inf"), float(e.findtext("max_control") or "inf"))
                      for e in ET.parse(read_so_setup(setup).model_file).getroot().iter("PathActuator")}
    bounds = [path_actuators.get(n, (0.0, 1.0)) for n in res.muscle_names]
    lo = np.concatenate([[b[0] for b in bounds], [r.min_control for r in res.reserves]])
    hi = np.concatenate([[b[1] for b in bounds], [r.max_control for r in res.reserves]])
    in_bounds = ((res.activations >= lo - 1e-12) & (res.activations <= hi + 1e-12)).all(axis=1)
    lower = objective < performance * (1 - 1e-12)
    opensim_short = np.asarray(res.result.converged) & in_bounds & (lower | (~solved & (diff < 1e-2)))
    print(f"{setup.name}: {res.time.size} frames, {len(res.muscle_names)} muscles, "
          f"{len(res.labels) - len(res.muscle_names)} actuators; within 1e-4 of OpenSim at {agree.sum()} "
          f"(max |Δ| {diff[agree].max() if agree.any() else np.nan:.1e}); OpenSim's violations "
          f"{np.array2string(violation, precision=1)}; objective mbjax - OpenSim "
          f"{np.array2string(objective - performance, precision=1)}; max |Δ| per frame "
          f"{np.array2string(diff, precision=1)}")
    assert np.asarray(res.result.converged).all()
    assert np.abs(np.asarray(res.result.residual)).max() < 1e-6
    assert agree.sum() >= (res.time.size + 1) // 2 or agree.sum() >= 1 and not solved.any()
    assert (agree | opensim_short).all(), np.nonzero(~(agree | opensim_short))[0]
    return res, opensim


@needs_library
def test_gait10dof18musc_millard_muscles_equal_opensim(tmp_path):
    root = os.path.join(PIPELINES, "Gait10dof18musc")
    setup = _setup(tmp_path, name="gait10dof", model=os.path.join(root, "OutputReference", "subject01.osim"),
                   coordinates=os.path.join(root, "OutputReference", "IK", "subject01_walk_IK.mot"),
                   forces=os.path.join(root, "gait10dof_Reserve_Actuators.xml"),
                   loads=os.path.join(root, "ExperimentalData", "subject01_walk_grf.xml"), t0=0.6, t1=0.75)
    res, _ = _compare(setup, tmp_path)
    # the physical rigid-tendon rule gives other activations where muscles are pennated
    rigid = static_optimization_from_setup(setup, write=False, progress=False, pennation_rule="rigid")
    assert np.abs(rigid.activations - res.activations).max() > 1e-2


@needs_library
def test_gait10dof18musc_path_actuator_equals_opensim(tmp_path):
    """The library's subject01 with a ``PathActuator`` (an ankle assist along a path, optimal force
    10 N, unbounded control): a scalar actuator OpenSim's static optimization solves for."""
    root = os.path.join(PIPELINES, "Gait10dof18musc")
    model_file = os.path.join(OPENSIM_MODELS, "Models", "Gait10dof18musc", "subject01_metabolics_path_actuator.osim")
    setup = _setup(tmp_path, name="assist", model=model_file,
                   coordinates=os.path.join(root, "OutputReference", "IK", "subject01_walk_IK.mot"),
                   forces=os.path.join(root, "gait10dof_Reserve_Actuators.xml"),
                   loads=os.path.join(root, "ExperimentalData", "subject01_walk_grf.xml"), t0=0.6, t1=0.63)
    res, _ = _compare(setup, tmp_path)
    k = list(res.labels).index("PlantarFlexAssist")
    assert np.abs(res.activations[:, k]).min() > 2e-4  # it carries load: left out, it would miss OpenSim's by that
    np.testing.assert_allclose(res.forces[:, k], 10.0 * res.activations[:, k], rtol=1e-12)


@needs_library
def test_hamner_legacy_actuator_set_equals_opensim(tmp_path):
    root = os.path.join(PIPELINES, "Hamner")
    setup = _setup(tmp_path, name="hamner", model=os.path.join(root, "outputReference", "subject02_scaled.osim"),
                   coordinates=os.path.join(root, "outputReference", "ResultsIK", "subject02_running_ik.mot"),
                   forces=os.path.join(root, "Actuators_RRA.xml"), loads=os.path.join(root, "External_Loads.xml"),
                   t0=0.6, t1=0.66)
    with pytest.warns(UserWarning, match=r"Actuators_RRA.xml.*OpenSim 4.6 does not read.*FX.*body_A"):
        res, _ = _compare(setup, tmp_path)
    assert {"FX", "MZ", "hip_flexion_r", "pro_sup_l"} <= set(res.labels)


def _smooth_motion(model, path, n=60, duration=1.0):
    """A .mot of every coordinate: each independent one its default plus a slow sine of 5 % of its
    range (kept inside the range), written as OpenSim's IK tool writes (coupled and locked too)."""
    names = list(model.coordinate_names)
    info = model.osim
    lo, hi = np.asarray(info.lower), np.asarray(info.upper)
    mid = np.clip(np.asarray(info.default), lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo))
    t = np.linspace(0.0, duration, n)
    q = mid[None] + 0.05 * (hi - lo)[None] * np.sin(2 * np.pi * t[:, None] / duration + np.arange(len(names))[None])
    mbjax.io.write_storage(path, mbjax.io.table_from_coordinates(model, t, q, in_degrees=True))
    return path


RESIDUALS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <ForceSet name="pelvis_residuals">
    <objects>
      <PointActuator name="FX"><body>pelvis</body><direction>1 0 0</direction><force_is_global>true</force_is_global><optimal_force>1000</optimal_force></PointActuator>
      <PointActuator name="FY"><body>pelvis</body><direction>0 1 0</direction><force_is_global>true</force_is_global><optimal_force>1000</optimal_force></PointActuator>
      <PointActuator name="FZ"><body>pelvis</body><direction>0 0 1</direction><force_is_global>true</force_is_global><optimal_force>1000</optimal_force></PointActuator>
      <TorqueActuator name="MX"><bodyA>pelvis</bodyA><bodyB>ground</bodyB><axis>1 0 0</axis><optimal_force>1000</optimal_force></TorqueActuator>
      <TorqueActuator name="MY"><bodyA>pelvis</bodyA><bodyB>ground</bodyB><axis>0 1 0</axis><optimal_force>1000</optimal_force></TorqueActuator>
      <TorqueActuator name="MZ"><bodyA>pelvis</bodyA><bodyB>ground</bodyB><axis>0 0 1</axis><optimal_force>1000</optimal_force></TorqueActuator>
    </objects>
  </ForceSet>
</OpenSimDocument>
"""


@needs_library
def test_rajagopal_model_actuators_on_locked_coordinates_equal_opensim(tmp_path):
    """Rajagopal2016's own 17 CoordinateActuators (wrists locked) with pelvis residuals written in
    OpenSim's conventions (the pipeline's CMC file has residuals of 10 N, which make IPOPT stop
    short on a motion without ground reactions)."""
    model_file = os.path.join(OPENSIM_MODELS, "Models", "Rajagopal", "Rajagopal2016.osim")
    model = mbjax.io.load_osim(model_file)
    own = [a.name for a in model.osim.actuators]
    assert len(own) == 17 and "wrist_flex_r" in own
    motion = _smooth_motion(model, tmp_path / "motion.mot")
    residuals = tmp_path / "residuals.xml"
    residuals.write_text(RESIDUALS)
    setup = _setup(tmp_path, name="rajagopal", model=model_file, coordinates=motion, forces=residuals,
                   t0=0.3, t1=0.4, step=2)
    with pytest.warns(UserWarning, match=r"locked coordinates.*wrist_flex_r"):
        res, _ = _compare(setup, tmp_path, model=model)
    k = list(res.labels).index("wrist_flex_r")
    np.testing.assert_allclose(res.activations[:, k], 0.0, atol=1e-9)


LEG39_ACTUATORS = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <ForceSet name="leg39_reserves">
    <defaults><CoordinateActuator name="default"><optimal_force>1000</optimal_force></CoordinateActuator></defaults>
    <objects>
      <CoordinateActuator name="tz_residual"><coordinate>pelvis_tz</coordinate></CoordinateActuator>
      <CoordinateActuator name="tx_residual"><coordinate>pelvis_tx</coordinate></CoordinateActuator>
      <CoordinateActuator name="ty_residual"><coordinate>pelvis_ty</coordinate></CoordinateActuator>
      <CoordinateActuator name="hip_reserve"><coordinate>hip_angle_r</coordinate><optimal_force>10</optimal_force></CoordinateActuator>
      <CoordinateActuator name="knee_reserve"><coordinate>knee_angle_r</coordinate><optimal_force>10</optimal_force></CoordinateActuator>
      <CoordinateActuator name="ankle_reserve"><coordinate>ankle_angle_r</coordinate><optimal_force>10</optimal_force></CoordinateActuator>
      <CoordinateActuator name="patella_reserve"><coordinate>pat_angle_r</coordinate><optimal_force>20</optimal_force></CoordinateActuator>
      <CoordinateActuator name="tibia_reserve"><coordinate>tib_tx_r</coordinate><optimal_force>50</optimal_force></CoordinateActuator>
    </objects>
  </ForceSet>
</OpenSimDocument>
"""


@needs_library
def test_leg39_reserves_on_coupled_coordinates_equal_opensim(tmp_path):
    """Leg39 (no static optimization in its pipeline: a setup written here, a smooth swing motion):
    9 Thelen muscles, pelvis residuals, and reserves on two coordinates that couplers make dependent
    (the patella's angle, the tibia's translation): their generalized force reaches the knee through
    the coupler, as OpenSim's constraints route it."""
    model_file = os.path.join(OPENSIM_MODELS, "Models", "Leg39", "leg39.osim")
    model = mbjax.io.load_osim(model_file)
    roles = dict(model.osim.roles)
    assert roles["pat_angle_r"] == roles["tib_tx_r"] == "dependent"
    motion = _smooth_motion(model, tmp_path / "motion.mot")
    forces = tmp_path / "reserves.xml"
    forces.write_text(LEG39_ACTUATORS)
    setup = _setup(tmp_path, name="leg39", model=model_file, coordinates=motion, forces=forces, t0=0.3, t1=0.5)
    res, _ = _compare(setup, tmp_path, model=model)
    k = [list(res.labels).index(n) for n in ("patella_reserve", "tibia_reserve")]
    assert np.abs(res.activations[:, k]).max() > 1e-4  # they carry load through the couplers
