"""The OpenSim joint and force classes :func:`mbjax.io.load_osim` reads, by name.

One home for the lists, free of JAX, so that the loader's parts and ``mbjax info``
(:mod:`mbjax.io.osim_summary`, which reads a file's XML only) share them.
"""

from __future__ import annotations

#: the joint classes read (:mod:`mbjax.io.osim_joints`)
JOINT_TYPES = ("CustomJoint", "PinJoint", "SliderJoint", "WeldJoint", "UniversalJoint", "GimbalJoint", "BallJoint",
               "FreeJoint", "PlanarJoint", "EllipsoidJoint")
#: the path forces read into paths and muscle properties (:mod:`mbjax.io.osim_force_set`)
MUSCLE_TYPES = (
    "Thelen2003Muscle",
    "Millard2012EquilibriumMuscle",
    "Millard2012AccelerationMuscle",
    "Schutte1993Muscle_Deprecated",
    "PathActuator",
    "PathSpring",
    "Ligament",
)
#: path forces that are read and modelled but may still be left out (path kept, zero tension) by
#: ``ignore_forces``: the deprecated Schutte muscle, whose opt-out older scripts use
OPTIONAL_PATH_FORCES = ("Schutte1993Muscle_Deprecated",)
#: the force elements modelled (:mod:`mbjax.io.osim_forces`)
MODELLED_FORCES = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce",
                   "PointToPointSpring", "BushingForce", "HuntCrossleyForce")
#: the scalar actuators read (:mod:`mbjax.io.osim_actuators`)
ACTUATOR_TYPES = ("CoordinateActuator", "PointActuator", "TorqueActuator")
#: OpenSim 4.6's ``Object::renameType`` of the legacy actuator classes
LEGACY_TYPES = {"GeneralizedForce": "CoordinateActuator", "Force": "PointActuator", "Torque": "TorqueActuator"}
#: scalar actuators (:mod:`mbjax.io.osim_actuators`): no force without a control, read into
#: ``OsimInfo.actuators`` for the tools that solve for controls (static optimization)
RECORDED_FORCES = ACTUATOR_TYPES + tuple(LEGACY_TYPES)
#: every ``ForceSet`` class read (path forces, force elements, actuators and their legacy names)
LOADER_FORCES = MUSCLE_TYPES + MODELLED_FORCES + RECORDED_FORCES
