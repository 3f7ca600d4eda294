"""``mbjax jr`` vs OpenSim 4.6's JointReaction on the other example pipelines, both run live.

The pipelines of opensim-org/opensim-models (``OPENSIM_MODELS_DIR``) ship no JointReaction setup
except Gait2392's (``test_jr_opensim.py``), so one is written here in OpenSim's conventions for each
(every joint; child / parent / ground frames), with a forces file written here too: every actuator
of the model (muscles along their wrapped paths, the model's own CoordinateActuators) with a smooth
force of its own, in OpenSim's actuator order.  No static optimization is run: the comparison is of
the joint-reaction computation alone (forces along paths, accelerations by forward dynamics,
reactions), on

* Gait10dof18musc: Millard muscles, the pipeline's IK motion and ground reactions;
* Hamner: 92 Thelen muscles through wraps, the pipeline's IK motion and ground reactions;
* Leg39: couplers (patella, tibia translation), a smooth motion written here;
* Rajagopal2016: its own CoordinateActuators, locked wrists, walker knees, at a pose held still
  (q̇ = 0: OpenSim's knee velocity terms deviate from its own mass matrix's Lagrangian,
  ``test_pipelines_opensim.py``; with q̇ = 0 they do not enter).

Every column must agree to 1e-6 of its range (``test_jr_opensim._compare``).
"""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import Table, write_storage  # noqa: E402
from mbjax.opensim.tools.jr import joint_reactions_from_setup  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import OPENSIM_MODELS  # noqa: E402
from test_jr_opensim import _compare, _opensim  # noqa: E402
from test_so_pipelines_opensim import _smooth_motion  # noqa: E402

LIB = pathlib.Path(OPENSIM_MODELS) if OPENSIM_MODELS else None
needs_library = pytest.mark.skipif(LIB is None or not (LIB / "Pipelines").is_dir(),
                                   reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")

SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <AnalyzeTool name="{name}">
    <model_file>{model}</model_file>
    <replace_force_set>false</replace_force_set>
    <force_set_files />
    <results_directory>{results}</results_directory>
    <output_precision>20</output_precision>
    <initial_time>{t0}</initial_time>
    <final_time>{t1}</final_time>
    <AnalysisSet name="Analyses">
      <objects>
        <JointReaction name="JR">
          <on>true</on>
          <step_interval>1</step_interval>
          <in_degrees>true</in_degrees>
          <forces_file>{forces}</forces_file>
          <joint_names>all</joint_names>
          <apply_on_bodies>{apply}</apply_on_bodies>
          <express_in_frame>{frame}</express_in_frame>
        </JointReaction>
      </objects>
      <groups />
    </AnalysisSet>
    <external_loads_file>{loads}</external_loads_file>
    <coordinates_file>{coords}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>{cutoff}</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
"""


def _forces_file(model_file, path, t0, t1):
    """Every actuator of the model, in OpenSim's order, a smooth force of its own: muscles 5-25 % of
    their maximum isometric force, other actuators ±0.2 of their optimal force."""
    model = osim.Model(str(model_file))
    acts = model.getActuators()
    names, scale = [], []
    for k in range(acts.getSize()):
        a = acts.get(k)
        names.append(a.getName())
        muscle = osim.Muscle.safeDownCast(a)
        scale.append(muscle.getMaxIsometricForce() if muscle is not None else
                     osim.ScalarActuator.safeDownCast(a).getOptimalForce())
    t = np.linspace(t0 - 0.05, t1 + 0.05, 41)
    phase = np.arange(len(names))
    wave = np.sin(2 * np.pi * 3 * t[:, None] + phase[None])
    is_muscle = np.array([osim.Muscle.safeDownCast(acts.get(k)) is not None for k in range(len(names))])
    data = np.where(is_muscle[None], 0.15 + 0.1 * wave, 0.2 * wave) * np.asarray(scale)[None]
    write_storage(path, Table(t, tuple(names), data, False, {"name": "forces"}))
    return path, len(names)


def _still_motion(model, path, t0, t1):
    """The model's default pose (inside each range), held: q̇ = q̈ = 0 from the splines."""
    info = model.osim
    lo, hi = np.asarray(info.lower), np.asarray(info.upper)
    q = np.clip(np.asarray(info.default), lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo))
    t = np.linspace(t0 - 0.1, t1 + 0.1, 21)
    write_storage(path, mbjax.io.table_from_coordinates(model, t, np.repeat(q[None], t.size, 0), in_degrees=True))
    return path


P = "Pipelines"
CASES = {
    "gait10dof18musc": dict(model=f"{P}/Gait10dof18musc/OutputReference/subject01.osim",
                            coords=f"{P}/Gait10dof18musc/OutputReference/IK/subject01_walk_IK.mot",
                            loads=f"{P}/Gait10dof18musc/ExperimentalData/subject01_walk_grf.xml",
                            window=(0.7, 0.76), cutoff=6, apply="child", frame="ground"),
    "hamner": dict(model=f"{P}/Hamner/outputReference/subject02_scaled.osim",
                   coords=f"{P}/Hamner/outputReference/ResultsIK/subject02_running_ik.mot",
                   loads=f"{P}/Hamner/External_Loads.xml", window=(0.6, 0.66), cutoff=6,
                   apply="parent", frame="child"),
    "leg39": dict(model="Models/Leg39/leg39.osim", motion=lambda model, path, t0, t1: _smooth_motion(model, path),
                  window=(0.3, 0.4), cutoff=-1,
                  apply="child", frame="parent"),
    "rajagopal": dict(model="Models/Rajagopal/Rajagopal2016.osim", motion=_still_motion, window=(0.3, 0.35),
                      cutoff=-1, apply="child", frame="ground"),
}


@needs_library
@pytest.mark.parametrize("case", list(CASES))
def test_joint_reactions_with_given_forces_equal_opensim(case, tmp_path):
    c = CASES[case]
    model_file = LIB / c["model"]
    model = mbjax.io.load_osim(model_file)
    t0, t1 = c["window"]
    coords = LIB / c["coords"] if "coords" in c else c["motion"](model, tmp_path / "motion.mot", t0, t1)
    forces, n_act = _forces_file(model_file, tmp_path / "forces.sto", t0, t1)
    setup = tmp_path / f"{case}_Setup_JointReaction.xml"
    setup.write_text(SETUP.format(name=case, model=model_file, results=tmp_path / "opensim", t0=t0, t1=t1,
                                  forces=forces, apply=c["apply"], frame=c["frame"], cutoff=c["cutoff"],
                                  loads=LIB / c["loads"] if "loads" in c else "Unassigned", coords=coords))
    _opensim(setup, tmp_path)
    res = joint_reactions_from_setup(setup, model, results_directory=tmp_path / "mbjax", progress=False)
    assert len(res.keys) == osim.Model(str(model_file)).getJointSet().getSize()  # "all": every joint
    name = f"{case}_JR_ReactionLoads.sto"
    worst = _compare(tmp_path / "mbjax" / name, tmp_path / "opensim" / name,
                     f"{case}: {n_act} actuators, every joint on the {c['apply']} in the {c['frame']} frame")
    assert worst["f"][1] < 1e-6 and worst["m"][1] < 1e-6
