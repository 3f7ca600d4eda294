"""A Ball pendulum with one reserve actuator per coordinate, a smooth motion of its angles and OpenSim
AnalyzeTool setups for it (the static optimization and joint reaction validations of Ball joints)."""

from __future__ import annotations

import numpy as np

from test_bad_inputs_eighth_survey_osim import pendulum

COORDINATES = ("q1", "q2", "q3", "q4")
OPTIMAL_FORCES = (10.0, 5.0, 7.0, 3.0)

_ANALYZE = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><AnalyzeTool name="ball">
 <model_file>{model}</model_file><replace_force_set>false</replace_force_set><force_set_files></force_set_files>
 <results_directory>{results}</results_directory><output_precision>16</output_precision>
 <initial_time>0.1</initial_time><final_time>0.9</final_time>
 <AnalysisSet name="Analyses"><objects>{analysis}</objects></AnalysisSet>
 <external_loads_file></external_loads_file><coordinates_file>{motion}</coordinates_file>
 <lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>
"""
_COMMON = "<on>true</on><start_time>0.1</start_time><end_time>0.9</end_time><step_interval>1</step_interval>" \
          "<in_degrees>false</in_degrees>"
STATIC_OPTIMIZATION = (f'<StaticOptimization name="StaticOptimization">{_COMMON}<use_model_force_set>true'
                       '</use_model_force_set><activation_exponent>2</activation_exponent><use_muscle_physiology>true'
                       '</use_muscle_physiology><optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>'
                       '<optimizer_max_iterations>1000</optimizer_max_iterations></StaticOptimization>')
JOINT_REACTION = (f'<JointReaction name="JointReaction">{_COMMON}<forces_file>{{forces}}</forces_file><joint_names>ALL'
                  '</joint_names><apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame>'
                  '</JointReaction>')


def write_ball_pipeline(folder):
    """``(model, motion)`` paths in ``folder``: the reserve-driven Ball pendulum and 51 frames of its
    angles over 1 s (radians)."""
    from mbjax.io import Table, write_storage

    reserves = "".join(f'<CoordinateActuator name="r_{c}"><coordinate>{c}</coordinate><optimal_force>{f}'
                       '</optimal_force><min_control>-1000</min_control><max_control>1000</max_control>'
                       '</CoordinateActuator>' for c, f in zip(COORDINATES, OPTIMAL_FORCES))
    model = folder / "ball.osim"
    model.write_text(pendulum(reserves))
    t = np.linspace(0.0, 1.0, 51)
    q = np.stack([0.3 + 0.4 * np.sin(2.0 * t), 0.1 + 0.5 * np.sin(3.0 * t + 0.2), -0.3 + 0.6 * t ** 2,
                  0.5 * np.cos(2.5 * t)], 1)
    motion = folder / "motion.mot"
    write_storage(motion, Table(t, COORDINATES, q, in_degrees=False), name="motion")
    return model, motion


def analyze_setup(path, model, motion, results, analysis) -> None:
    """An AnalyzeTool setup at ``path`` running ``analysis`` (one of the analyses above) on ``motion``."""
    path.write_text(_ANALYZE.format(model=model, results=results, motion=motion, analysis=analysis))
