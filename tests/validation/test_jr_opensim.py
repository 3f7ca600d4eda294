"""``mbjax.opensim.tools.jr`` vs OpenSim 4.6's AnalyzeTool + JointReaction, both run live on the same setup files.

Gait2392 (``OPENSIM_MODELS_DIR``: a checkout of opensim-org/opensim-models): the pipeline's
``subject01_Setup_JointReaction_from_SO.xml`` (hip_r on femur_r in ground, knee_r on tibia_r and
on femur_r in the tibia's frame), fed by OpenSim's own static optimization of the pipeline's
``setup_static_optimization.xml`` run first (so the comparison does not depend on mbjax's SO),
over 0.5-0.7 s.  Changed in both copies: absolute paths, the window, and two inputs OpenSim 4.6
cannot use as shipped: the coordinates are the pipeline's IK motion filtered at 6 Hz (its
``subject01_walk1_RRA_Kinematics_q.sto`` holds degrees under an ``inDegrees=no`` header, and
OpenSim's SO fails equilibrating semimem_r at those poses), and the ground reactions are
``subject01_walk1_grf.xml`` (``foot_floor_loads.xml`` is a legacy PrescribedForce set, refused by
mbjax by name).  The SO records every 10th row and the JR every row: between the SO frames the
forces are interpolated, so the accelerations (forward dynamics with those forces) differ from
the splines' by much, and only forward dynamics reproduces OpenSim.  A second run of the same
setup reports every joint on its parent body, expressed in an offset frame given by its path
(``/jointset/hip_l/pelvis_offset``).

arm26 (shipped): the SO tutorial's setup (6 Hz, wrap cylinders and ellipsoid) run by OpenSim,
then a JointReaction setup in OpenSim's conventions (every joint, child/parent, ground / body /
``parent`` frames, ``step_interval`` 3 on the padded rows) run by both.  And OpenSim's SO forces
file at its default 8 decimals read at OpenSim's (padded) frame times: no warning of a time outside
the file for a frame that differs from the file's first time only by the print's rounding.

Every column of OpenSim's ``_ReactionLoads.sto`` must agree to 1e-6 of its range over the frames
(a column that is constant to rounding, e.g. the moment of a 3-dof hip without reserves or the
point of a fixed joint, to 1e-9 of the largest force / moment / point value in the file).
"""

from __future__ import annotations

import os
import pathlib
import sys
import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import read_storage  # noqa: E402
from mbjax.opensim.tools.jr import joint_reactions_from_setup  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _osim_models import OPENSIM_MODELS  # noqa: E402

GAIT = pathlib.Path(OPENSIM_MODELS) / "Pipelines" / "Gait2392_Simbody" if OPENSIM_MODELS else None
needs_library = pytest.mark.skipif(GAIT is None or not GAIT.is_dir(),
                                   reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
ARM = pathlib.Path(__file__).resolve().parents[1] / "data" / "opensim_models" / "arm26_so"


def _rewritten(source, substitutions, dest):
    """A copy of an OpenSim setup file with each ``(old, new)`` text replaced (each ``old`` must be there)."""
    text = pathlib.Path(source).read_text()
    for old, new in substitutions:
        assert old in text, old
        text = text.replace(old, new)
    pathlib.Path(dest).write_text(text)
    return dest


def _opensim(setup, cwd):
    here = os.getcwd()
    os.chdir(cwd)  # opensim.log lands there
    try:
        assert osim.AnalyzeTool(str(setup)).run()
    finally:
        os.chdir(here)


def _compare(ours_file, theirs_file, what):
    """Same labels and times; every column within 1e-6 of its range, or of 1e-3 times the largest
    magnitude among the file's columns of its kind (forces, moments, points) for a column that is
    constant to rounding.  Returns the worst |Δ| per kind, absolute and relative to that range."""
    ours, theirs = read_storage(ours_file), read_storage(theirs_file)
    assert ours.labels == theirs.labels, (ours.labels, theirs.labels)
    np.testing.assert_allclose(ours.time, theirs.time, rtol=0, atol=1e-12)
    kind = np.array([lab[-2] for lab in theirs.labels])  # f, m, p
    rng = np.ptp(theirs.data, axis=0)
    size = np.maximum(rng, np.abs(theirs.data).max(axis=0))
    floor = np.array([size[kind == k].max() for k in kind]) * 1e-3  # the largest force / moment / point
    tol = 1e-6 * np.maximum(rng, floor)
    diff = np.abs(ours.data - theirs.data).max(axis=0)
    rel = diff / np.maximum(rng, floor)
    worst = {k: (diff[kind == k].max(), rel[kind == k].max()) for k in "fmp"}
    print(f"\n{what}: {theirs.time.size} frames, {len(theirs.labels)} columns; max |Δ| (and relative to the "
          f"column's range) force {worst['f'][0]:.1e} N ({worst['f'][1]:.0e}), moment {worst['m'][0]:.1e} N·m "
          f"({worst['m'][1]:.0e}), point {worst['p'][0]:.1e} m ({worst['p'][1]:.0e})")
    bad = [(lab, d, t) for lab, d, t in zip(theirs.labels, diff, tol) if not d <= t]
    assert not bad, bad
    return worst


@needs_library
def test_gait2392_joint_reaction_from_opensims_static_optimization(tmp_path):
    model_file = GAIT / "OutputReference" / "subject01_simbody_adjusted.osim"
    cutoff = "<lowpass_cutoff_frequency_for_coordinates>{}</lowpass_cutoff_frequency_for_coordinates>"
    coords = (("<coordinates_file> subject01_walk1_RRA_Kinematics_q.sto </coordinates_file>",
               f"<coordinates_file>{GAIT / 'subject01_walk1_ik.mot'}</coordinates_file>"),
              (cutoff.format("      -1.00000000 "), cutoff.format(" 6 ")))
    so = _rewritten(GAIT / "setup_static_optimization.xml", (
        ("<model_file> subject01_simbody_adjusted.osim </model_file>", f"<model_file>{model_file}</model_file>"),
        ("<force_set_files> gait2392_SO_weak_Residual_Actuators.xml </force_set_files>",
         f"<force_set_files>{GAIT / 'gait2392_SO_weak_Residual_Actuators.xml'}</force_set_files>"),
        ("<results_directory> ResultsStaticOptimization </results_directory>",
         f"<results_directory>{tmp_path / 'so'}</results_directory>"),
        ("<final_time>       2.00000000 </final_time>", "<final_time> 0.7 </final_time>"),
        ("<end_time>       2.00000000 </end_time>", "<end_time> 0.7 </end_time>"),
        ("<external_loads_file> foot_floor_loads.xml </external_loads_file>",
         f"<external_loads_file>{GAIT / 'subject01_walk1_grf.xml'}</external_loads_file>")) + coords,
        tmp_path / "so.xml")
    _opensim(so, tmp_path)
    forces = tmp_path / "so" / "subject01_StaticOptimization_force.sto"
    jr_subs = (
        ("<model_file>  </model_file>", f"<model_file>{model_file}</model_file>"),
        ("<force_set_files> gait2392_SO_Residual_Actuators.xml </force_set_files>",
         f"<force_set_files>{GAIT / 'gait2392_SO_Residual_Actuators.xml'}</force_set_files>"),
        ("<results_directory> ./ </results_directory>",
         f"<results_directory>{tmp_path / 'opensim'}</results_directory>"),
        ("<final_time>       2.00000000 </final_time>", "<final_time> 0.7 </final_time>"),
        ("<end_time>       2.00000000 </end_time>", "<end_time> 0.7 </end_time>"),
        (r"<forces_file> C:\Users\matt\Desktop\Gait2392_Simbody\ResultsSO\subject01_StaticOptimization_force.sto "
         "</forces_file>", f"<forces_file>{forces}</forces_file>"),
        ("<coordinates_file> ResultsRRA/subject01_Kinematics_q.sto </coordinates_file>",
         f"<coordinates_file>{GAIT / 'subject01_walk1_ik.mot'}</coordinates_file>"),
        (coords[1]),
        ("<external_loads_file> subject01_walk1_grf.xml </external_loads_file>",
         f"<external_loads_file>{GAIT / 'subject01_walk1_grf.xml'}</external_loads_file>"))
    jr = _rewritten(GAIT / "subject01_Setup_JointReaction_from_SO.xml", jr_subs, tmp_path / "jr.xml")
    _opensim(jr, tmp_path)
    model = mbjax.io.load_osim(model_file)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every forces-file column is an actuator or a recorded external load
        # (the setup asks OpenSim for 20 digits, for the comparison; mbjax says it writes 17)
        warnings.filterwarnings("ignore", message=r".*<output_precision> 20 \(mbjax writes 17")
        res = joint_reactions_from_setup(jr, model, results_directory=tmp_path / "mbjax", progress=False)
    name = "subject01_JointReaction_ReactionLoads.sto"
    worst = _compare(tmp_path / "mbjax" / name, tmp_path / "opensim" / name, "Gait2392 hip_r, knee_r (child, parent)")
    assert worst["f"][0] < 1e-8 and worst["m"][0] < 1e-8
    # between the SO's frames (every 10th row) the interpolated forces do not balance the splines' q̈
    from mbjax.opensim.tools.so import states_trajectory

    _, _, _, qdd_splines = states_trajectory(model, read_storage(GAIT / "subject01_walk1_ik.mot"), 6.0, (0.5, 0.7))
    at_so = np.isin(res.time, read_storage(forces).time)  # where OpenSim's SO met M q̈ = R F + ... (to ~1e-11)
    gap = np.abs(res.qdd - qdd_splines).max(axis=1)
    print(f"forward-dynamics q̈ vs the splines' q̈: max |Δ| {gap[at_so].max():.1e} at the SO's {at_so.sum()} "
          f"frames, {gap[~at_so].max():.0f} rad/s² between them")
    assert at_so.sum() >= 2 and gap[at_so].max() < 1e-6 and gap[~at_so].max() > 1.0

    # every joint on its parent body, in a named body's frame (same program: no new compilation)
    jr_all = _rewritten(jr, (("<joint_names> hip_r knee_r knee_r </joint_names>", "<joint_names> all </joint_names>"),
                             ("<apply_on_bodies> child child parent </apply_on_bodies>",
                              "<apply_on_bodies> parent </apply_on_bodies>"),
                             ("<express_in_frame> ground child child </express_in_frame>",
                              "<express_in_frame> /jointset/hip_l/pelvis_offset </express_in_frame>")),
                       tmp_path / "jr_all.xml")
    _opensim(jr_all, tmp_path)
    res = joint_reactions_from_setup(jr_all, model, results_directory=tmp_path / "mbjax", progress=False)
    assert len(res.keys) == 12 and res.keys[0].label == "ground_pelvis_on_ground_in_pelvis_offset"
    assert np.abs(res.keys[0].frame_transform[:3, 3]).min() > 0.05  # the left hip's parent frame, off the pelvis origin
    _compare(tmp_path / "mbjax" / name, tmp_path / "opensim" / name,
             "Gait2392 all joints on the parent, in the left hip's parent frame")


JR_ARM = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <AnalyzeTool name="arm26">
    <model_file>{model}</model_file>
    <replace_force_set>false</replace_force_set>
    <force_set_files />
    <results_directory>{results}</results_directory>
    <output_precision>20</output_precision>
    <initial_time>0.05</initial_time>
    <final_time>0.45</final_time>
    <AnalysisSet name="Analyses">
      <objects>
        <JointReaction name="ElbowAndShoulder">
          <on>true</on>
          <start_time>0.05</start_time>
          <end_time>0.45</end_time>
          <step_interval>3</step_interval>
          <in_degrees>true</in_degrees>
          <forces_file>{forces}</forces_file>
          <joint_names>All</joint_names>
          <apply_on_bodies>child parent child</apply_on_bodies>
          <express_in_frame>ground r_humerus parent</express_in_frame>
        </JointReaction>
      </objects>
      <groups />
    </AnalysisSet>
    <external_loads_file />
    <coordinates_file>{coords}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
"""


#: a ligament across the elbow's back added to arm26 (3.x form, as the file): slack at small flexion,
#: up to 100 N at large flexion, so the reactions carry its body loads and the SO its torque
ELBOW_LIGAMENT = """
				<Ligament name="elbow_lig">
					<isDisabled>false</isDisabled>
					<GeometryPath>
						<PathPointSet>
							<objects>
								<PathPoint name="lig-P1"><location> -0.02 -0.22 -0.012</location><body>r_humerus</body></PathPoint>
								<PathPoint name="lig-P2"><location> -0.02 0.02 0.0</location><body>r_ulna_radius_hand</body></PathPoint>
							</objects>
						</PathPointSet>
					</GeometryPath>
					<resting_length>0.06</resting_length>
					<pcsa_force>50</pcsa_force>
					<force_length_curve>
						<SimmSpline name="f"><x> 0.9 1 1.05 1.1 1.2 1.5</x><y> 0 0 0.1 0.3 0.8 2</y></SimmSpline>
					</force_length_curve>
				</Ligament>"""


def test_forces_of_opensims_own_static_optimization_are_read_quietly(tmp_path):
    """OpenSim's static optimization prints its times with 8 decimals: arm26's first frame, on the
    padded grid at -2.00000005e-07 s, is -2e-07 in its _force.sto.  Read at the recorded times
    (OpenSim's grid), that frame is the file's first row, with no warning of a time outside the file."""
    from mbjax.opensim.tools.id import read_coordinates
    from mbjax.opensim.tools.jr import actuator_forces
    from mbjax.opensim.tools.so import states_trajectory

    so = _rewritten(ARM / "arm26_Setup_StaticOptimization.xml", (
        ("<model_file> arm26.osim </model_file>", f"<model_file>{mbjax.models.model_path('arm26')}</model_file>"),
        ("<coordinates_file> arm26_InverseKinematics.mot </coordinates_file>",
         f"<coordinates_file>{ARM / 'arm26_InverseKinematics.mot'}</coordinates_file>"),
        ("<results_directory> PhysiologicalResults </results_directory>",
         f"<results_directory>{tmp_path / 'so'}</results_directory>"),
        ("<final_time>       1.00000000 </final_time>", "<final_time> 0.5 </final_time>")), tmp_path / "so.xml")
    _opensim(so, tmp_path)
    file = tmp_path / "so" / "arm26_StaticOptimization_force.sto"
    forces = read_coordinates(so, str(file), "forces_file")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arm26's file-level notes (3.x document, ...)
        model = mbjax.io.load_osim(mbjax.models.model_path("arm26"))
        times = states_trajectory(model, read_storage(ARM / "arm26_InverseKinematics.mot"), 6.0, (0.0, 0.5))[0]
    assert times.size == forces.time.size and 0 < abs(times[0] - forces.time[0]) < 1e-12  # the print's rounding
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        names, values = actuator_forces(model, forces, times, where="JointReaction")
    np.testing.assert_allclose(values, forces.data[:, [forces.labels.index(n) for n in names]], rtol=0, atol=1e-9)
    with pytest.warns(UserWarning, match=rf"1 recorded times lie outside the forces file {file}'s times"):
        actuator_forces(model, forces, times - 1e-8, where="JointReaction")


def test_arm26_joint_reaction_with_wrapped_muscles(tmp_path):
    """arm26 with a ligament added: the muscles' loads through OpenSim's wraps and the ligament's
    (tension T(L) along its own path, :func:`mbjax.opensim.tools.jr.loads.path_force_loads`)."""
    text = pathlib.Path(mbjax.models.model_path("arm26")).read_text()
    end = "\t\t\t</objects>\n\t\t\t<groups />\n\t\t</ForceSet>"
    assert text.count(end) == 1
    model_file = tmp_path / "arm26_ligament.osim"
    # after the muscles: OpenSim 4.6's JointReaction reads a forces file's first columns as the model's
    # actuators in order, so a ligament column (SO records it) before them would shift them
    model_file.write_text(text.replace(end, ELBOW_LIGAMENT + "\n" + end))
    so = _rewritten(ARM / "arm26_Setup_StaticOptimization.xml", (
        ("<model_file> arm26.osim </model_file>", f"<model_file>{model_file}</model_file>"),
        ("<coordinates_file> arm26_InverseKinematics.mot </coordinates_file>",
         f"<coordinates_file>{ARM / 'arm26_InverseKinematics.mot'}</coordinates_file>"),
        ("<results_directory> PhysiologicalResults </results_directory>",
         f"<results_directory>{tmp_path / 'so'}</results_directory>"),
        ("<output_precision> 8 </output_precision>", "<output_precision> 20 </output_precision>"),
        ("<final_time>       1.00000000 </final_time>", "<final_time> 0.5 </final_time>")), tmp_path / "so.xml")
    _opensim(so, tmp_path)
    jr = tmp_path / "jr.xml"
    jr.write_text(JR_ARM.format(model=model_file, results=tmp_path / "opensim",
                                coords=ARM / "arm26_InverseKinematics.mot",
                                forces=tmp_path / "so" / "arm26_StaticOptimization_force.sto"))
    _opensim(jr, tmp_path)
    so_forces = read_storage(tmp_path / "so" / "arm26_StaticOptimization_force.sto")
    window = (so_forces.time >= 0.05) & (so_forces.time <= 0.45)
    assert so_forces.data[window, so_forces.labels.index("elbow_lig")].max() > 10.0  # OpenSim's record: it pulls
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arm26's file-level notes (3.x document, ...)
        model = mbjax.io.load_osim(model_file)
    assert [type(e).__name__ for e in model.forces.elements] == ["Ligament"]
    res = joint_reactions_from_setup(jr, model, results_directory=tmp_path / "mbjax", progress=False)
    assert [k.label for k in res.keys] == ["offset_on_base_in_ground", "r_shoulder_on_base_in_r_humerus",
                                           "r_elbow_on_r_ulna_radius_hand_in_r_humerus"]
    name = "arm26_ElbowAndShoulder_ReactionLoads.sto"
    worst = _compare(tmp_path / "mbjax" / name, tmp_path / "opensim" / name, "arm26 (wrapped paths)")
    assert worst["f"][0] < 1e-8 and worst["m"][0] < 1e-8


def test_reactions_of_a_ball_joint_driven_by_reserves_are_opensims(tmp_path):
    """The Ball pendulum's reserves from OpenSim's own static optimization, then its JointReaction: the
    angles' rates are the joint's angular velocity for OpenSim's AnalyzeTool, so mbjax's reactions equal
    OpenSim's only with its speeds (and the reserves' columns) taken so."""
    from _ball_pipeline import JOINT_REACTION, STATIC_OPTIMIZATION, analyze_setup, write_ball_pipeline
    from _opensim_tools import run_analyze_tool

    model, motion = write_ball_pipeline(tmp_path)
    analyze_setup(tmp_path / "so.xml", model, motion, tmp_path / "so", STATIC_OPTIMIZATION)
    run_analyze_tool(tmp_path / "so.xml", tmp_path)
    forces = tmp_path / "so" / "ball_StaticOptimization_force.sto"
    for who in ("opensim", "mbjax"):
        analyze_setup(tmp_path / f"{who}.xml", model, motion, tmp_path / who, JOINT_REACTION.format(forces=forces))
    run_analyze_tool(tmp_path / "opensim.xml", tmp_path)
    with pytest.warns(UserWarning, match="takes the time derivatives of the angles of BallJoint 'j2'"):
        joint_reactions_from_setup(tmp_path / "mbjax.xml", progress=False)
    name = "ball_JointReaction_ReactionLoads.sto"
    theirs, ours = read_storage(tmp_path / "opensim" / name), read_storage(tmp_path / "mbjax" / name)
    assert theirs.labels == ours.labels
    diff = np.abs(ours.data - theirs.data).max()
    print(f"\nBall pendulum reactions: max difference {diff:.1e} of {np.abs(theirs.data).max():.1f}")
    assert diff < 1e-9 * np.abs(theirs.data).max()
