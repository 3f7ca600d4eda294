"""Joint reaction loads of recorded motion, as OpenSim 4.6's ``AnalyzeTool`` with a ``JointReaction`` analysis.

OpenSim's analysis, step by step (``AnalyzeTool::run``, ``JointReaction::record``), and what this
package does for each:

1. States: the coordinates file (lowpass filter, degree-5 splines) gives q and q̇ at the rows of
   the (padded) states table from the last row at or before ``initial_time`` to the last at or
   before ``final_time`` (:func:`mbjax.opensim.tools.so.states_trajectory`, as for static optimization).
   The analysis records at the first and last of those rows and at every row in between whose
   index in the states table is a multiple of ``step_interval`` (``Analysis::proceed``).  The
   analysis' own ``start_time``/``end_time`` are not used by the AnalyzeTool (warned when they
   differ from the tool's).
2. Actuator forces: every actuator of the model (its muscles and scalar actuators, then the
   actuators of ``force_set_files``; with ``replace_force_set`` only the latter) must have a column
   in ``forces_file`` (a static optimization's ``_force.sto``); the forces at the state's time are
   the file's rows linearly interpolated (``Storage::getDataAtTime``: the last row at or before t
   and the next, extrapolating past the ends; a time past the ends by more than the rounding of the
   file's printed times, :func:`mbjax.opensim.tools.jr.loads.printed_half_digit`, is warned).  Each actuation is overridden by that value
   (``ScalarActuator::overrideActuation``): a muscle's tension acts along its path
   (``GeometryPath::produceForces``: a point force at every path point whose neighbour lies on
   another body, wrap tangent points included, and the generalized force of a
   ``MovingPathPoint``), a ``CoordinateActuator`` is a generalized force on its coordinate (through
   the coupler on a coupled one; a locked one's goes into the lock), ``PointActuator`` /
   ``TorqueActuator`` apply their force / torque to their bodies; the model's ``Ligament`` and
   ``PathSpring`` elements apply their tension T(L, L̇), computed from the state, along their paths
   as a muscle's (:func:`mbjax.opensim.tools.jr.loads.path_force_loads`).
3. Accelerations: OpenSim realizes ``Stage::Acceleration`` with those forces, i.e. *forward
   dynamics*: M q̈ = R F + τ_reserves + Q_ext + Q_elements + G − N q̇ (R: OpenSim's unit-force
   moment arms, :func:`mbjax.muscles.opensim_moment_arms`), not the kinematics' q̈.  With static
   optimization forces q̈ equals the splines' only as far as the optimization met its constraints.
4. Reaction (``Joint::calcReactionOnChildExpressedInGround``, Simbody's mobilizer reaction at the
   joint's child frame M): the Newton-Euler balance of the subtree below the joint, W = Σ (I a +
   v ×* I v − applied body loads) (:func:`mbjax._wrenches.subtree_wrenches`), moved from the child
   body origin to the child frame origin.  On the parent (``apply_on_bodies`` = parent) it is
   −W moved to the parent frame origin (``findMobilizerReactionOnParentAtFInGround``).  Force,
   moment and the point of application (that frame origin) are expressed in ``express_in_frame``:
   ``ground``, a frame of the model by name (a body, an offset frame), or the keywords ``child`` /
   ``parent`` (the joint's child / parent *body*).
5. Written as ``<name>_<analysis name>_ReactionLoads.sto`` in ``results_directory``, columns
   ``<joint>_on_<body>_in_<frame>_fx fy fz mx my mz px py pz`` per joint in ``joint_names`` order
   (``All``: the model's joints in file order), SI units, ``inDegrees=no``.

Refused by name: setups without ``forces_file`` (OpenSim then computes forces from the states),
a forces file missing one of the model's actuators (OpenSim then silently ignores the whole file),
states or speeds files, body-force elements (bushings, point-to-point springs, contact: their
loads on each subtree are not computed here), models scaled after loading (the joint frames are read from the model's
``.osim``), smooth wrapping.  Warned: forces-file columns that are no actuator (the external
loads' recorded columns of a static optimization file are recognized and skipped), actuator
columns beyond the file's first n_actuators columns (OpenSim 4.6 does not read them there),
interpolation past the file's times, joint names that are not joints of the model (OpenSim skips
them), other analyses and unknown elements of the setup.  ``output_precision`` is not used:
numbers are written with 17 significant digits.
"""

from .keys import ReactionKey, reaction_keys
from .loads import MOBILITY_ELEMENTS, actuator_forces, muscle_loads, storage_rows_at
from .motion import DESCRIPTION, JRResult, joint_reactions_motion, reaction_loads
from .setup import JRSetup, joint_reactions_from_setup, read_jr_setup

__all__ = ["DESCRIPTION", "JRResult", "JRSetup", "MOBILITY_ELEMENTS", "ReactionKey", "actuator_forces",
           "joint_reactions_from_setup", "joint_reactions_motion", "muscle_loads", "reaction_keys", "reaction_loads",
           "read_jr_setup", "storage_rows_at"]
