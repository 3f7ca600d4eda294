"""The OpenSim joint and force classes :func:`mbjax.io.load_osim` reads, by name.

One home for the lists, free of JAX, so that the loader's parts and ``mbjax info``
(:mod:`mbjax.opensim.model.osim_summary`, which reads a file's XML only) share them.
"""

from __future__ import annotations

#: the joint classes read (:mod:`mbjax.opensim.model.osim_joints`)
JOINT_TYPES = ("CustomJoint", "PinJoint", "SliderJoint", "WeldJoint", "UniversalJoint", "GimbalJoint", "BallJoint",
               "FreeJoint", "PlanarJoint", "EllipsoidJoint")
#: the path forces (:mod:`mbjax.opensim.model.osim_force_set`): muscles and path actuators read into
#: paths and muscle properties, :data:`PATH_SPRING_FORCES` into force elements
MUSCLE_TYPES = (
    "Thelen2003Muscle",
    "Millard2012EquilibriumMuscle",
    "Schutte1993Muscle_Deprecated",
    "PathActuator",
    "PathSpring",
    "Ligament",
)
#: path forces that are read and modelled but may still be left out (path kept, zero tension) by
#: ``ignore_forces``: the deprecated Schutte muscle, whose opt-out older scripts use
OPTIONAL_PATH_FORCES = ("Schutte1993Muscle_Deprecated",)
#: path forces with a tension law of their own, read into force elements of ``model.forces``
#: (:mod:`mbjax.forces.path_spring`, :mod:`mbjax.forces.path_ligament`), not muscles
PATH_SPRING_FORCES = ("PathSpring", "Ligament")
#: the force elements modelled (:mod:`mbjax.opensim.model.osim_forces`)
MODELLED_FORCES = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce",
                   "PointToPointSpring", "BushingForce", "HuntCrossleyForce")
#: the scalar actuators read (:mod:`mbjax.opensim.model.osim_actuators`)
ACTUATOR_TYPES = ("CoordinateActuator", "PointActuator", "TorqueActuator")
#: OpenSim 4.6's ``Object::renameType`` of the legacy actuator classes
LEGACY_TYPES = {"GeneralizedForce": "CoordinateActuator", "Force": "PointActuator", "Torque": "TorqueActuator"}
#: scalar actuators (:mod:`mbjax.opensim.model.osim_actuators`): no force without a control, read into
#: ``OsimInfo.actuators`` for the tools that solve for controls (static optimization)
RECORDED_FORCES = ACTUATOR_TYPES + tuple(LEGACY_TYPES)
#: every ``ForceSet`` class read (path forces, force elements, actuators and their legacy names)
LOADER_FORCES = MUSCLE_TYPES + MODELLED_FORCES + RECORDED_FORCES

#: the OpenSim 4.6 properties of ``Force`` (and ``Component``), with the legacy ``isDisabled``
_FORCE_PROPERTIES = ("appliesForce", "isDisabled", "components")
#: ``Actuator`` and ``PathActuator`` (its ``path``: a ``<GeometryPath>`` or ``<FunctionBasedPath>``)
_PATH_ACTUATOR_PROPERTIES = _FORCE_PROPERTIES + ("min_control", "max_control", "GeometryPath", "FunctionBasedPath",
                                                 "optimal_force")
#: ``Muscle``
_MUSCLE_PROPERTIES = _PATH_ACTUATOR_PROPERTIES + (
    "max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal",
    "max_contraction_velocity", "ignore_tendon_compliance", "ignore_activation_dynamics")
#: the curve objects of the Millard muscles (``OpenSim_DECLARE_UNNAMED_PROPERTY``) and their properties
CURVE_PROPERTIES = {
    "ActiveForceLengthCurve": ("min_norm_active_fiber_length", "transition_norm_fiber_length",
                               "max_norm_active_fiber_length", "shallow_ascending_slope", "minimum_value"),
    "ForceVelocityCurve": ("concentric_slope_at_vmax", "concentric_slope_near_vmax", "isometric_slope",
                           "eccentric_slope_at_vmax", "eccentric_slope_near_vmax",
                           "max_eccentric_velocity_force_multiplier", "concentric_curviness", "eccentric_curviness"),
    "FiberForceLengthCurve": ("strain_at_zero_force", "strain_at_one_norm_force", "stiffness_at_low_force",
                              "stiffness_at_one_norm_force", "curviness"),
    "TendonForceLengthCurve": ("strain_at_one_norm_force", "stiffness_at_one_norm_force", "norm_force_at_toe_end",
                               "curviness"),
    "FiberCompressiveForceLengthCurve": ("norm_length_at_zero_force", "stiffness_at_zero_length", "curviness"),
    "FiberCompressiveForceCosPennationCurve": ("engagement_angle_in_degrees", "stiffness_at_perpendicular",
                                               "curviness"),
    "MuscleFirstOrderActivationDynamicModel": ("activation_time_constant", "deactivation_time_constant",
                                               "minimum_activation"),
}
#: the function properties of the path forces: 4.x writes ``<SimmSpline name="...">``, 3.x ``<name><SimmSpline>``
PATH_FORCE_FUNCTIONS = {
    "Schutte1993Muscle_Deprecated": ("tendon_force_length_curve", "active_force_length_curve",
                                     "passive_force_length_curve"),
    "Ligament": ("force_length_curve",),
}
#: every property OpenSim 4.6 declares for each path force class (its own and its base classes'),
#: read or not: a child of a path force that is none of these is not used, and warned
PATH_FORCE_PROPERTIES = {
    "Thelen2003Muscle": _MUSCLE_PROPERTIES + (
        "default_activation", "default_fiber_length", "FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive",
        "KshapePassive", "Af", "Flen", "fv_linear_extrap_threshold", "maximum_pennation_angle",
        "activation_time_constant", "deactivation_time_constant", "minimum_activation"),
    "Millard2012EquilibriumMuscle": _MUSCLE_PROPERTIES + (
        "fiber_damping", "default_activation", "default_fiber_length", "activation_time_constant",
        "deactivation_time_constant", "minimum_activation", "maximum_pennation_angle", "ActiveForceLengthCurve",
        "ForceVelocityCurve", "FiberForceLengthCurve", "TendonForceLengthCurve"),
    "Schutte1993Muscle_Deprecated": _MUSCLE_PROPERTIES + (
        "time_scale", "activation1", "activation2", "damping")
    + PATH_FORCE_FUNCTIONS["Schutte1993Muscle_Deprecated"],
    "PathActuator": _PATH_ACTUATOR_PROPERTIES,
    "PathSpring": _FORCE_PROPERTIES + ("GeometryPath", "FunctionBasedPath", "resting_length", "stiffness",
                                       "dissipation"),
    "Ligament": _FORCE_PROPERTIES + ("GeometryPath", "FunctionBasedPath", "resting_length", "pcsa_force")
    + PATH_FORCE_FUNCTIONS["Ligament"],
}
