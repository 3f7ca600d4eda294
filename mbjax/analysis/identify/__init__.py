"""Gradient-based parameter identification: :func:`fit`, parametrizations, data
terms, identifiability.  One concept per file:

* ``fit.py`` — :func:`fit` (adam, L-BFGS, Gauss-Newton, Levenberg-Marquardt); ``report.py``;
* ``selection.py`` — ``where`` + parametrizations ↔ the free vector θ, parameter names;
* ``parametrizations.py`` — :class:`Identity`, :class:`Positive`, :class:`Symmetric`;
* ``inertia.py`` — :class:`PhysicalInertia` (log-Cholesky pseudo-inertia), :class:`StandardInertial`;
* data terms: ``torques.py``, ``trajectories.py`` (single / multiple shooting, :class:`ViscousDamping`),
  ``kinematic.py`` (moment arms, muscle lengths), ``isometric.py`` (torque-angle curves of
  activated muscles), ``scaling.py`` (OpenSim's model scaling), ``markers.py`` (markers with offsets and segment scales, jointly with the
  poses); ``robust.py`` (weights, Huber);
* ``identifiability.py`` — singular values, named unidentifiable combinations, base parameters,
  standard errors.
"""

from .fit import fit as fit
from .identifiability import Identifiability as Identifiability
from .identifiability import identifiability as identifiability
from .inertia import PhysicalInertia as PhysicalInertia
from .inertia import StandardInertial as StandardInertial
from .inertia import pseudo_inertia as pseudo_inertia
from .kinematic import moment_arm_residuals as moment_arm_residuals
from .kinematic import muscle_length_residuals as muscle_length_residuals
from .parametrizations import Identity as Identity
from .parametrizations import Parametrization as Parametrization
from .parametrizations import Positive as Positive
from .parametrizations import Symmetric as Symmetric
from .report import FitReport as FitReport
from .robust import huber_residual as huber_residual
from .selection import Selection as Selection
from .torques import torque_residuals as torque_residuals
from .trajectories import ViscousDamping as ViscousDamping
from .trajectories import multiple_shooting as multiple_shooting
from .trajectories import trajectory_residuals as trajectory_residuals
from .isometric import isometric_torque_residuals as isometric_torque_residuals
from .isometric import isometric_torques as isometric_torques
from .markers import MarkerSet as MarkerSet
from .markers import marker_residuals as marker_residuals
from .markers import marker_set as marker_set
from .scaling import scale_model as scale_model
from .scaling import scale_markers as scale_markers
from .scaling import segment_factors as segment_factors
from .scaling import segment_names as segment_names
from .scaling import measurement_factor as measurement_factor
from .static_scaling import average_frames as average_frames
from .static_scaling import fit_static_scale as fit_static_scale
from .static_scaling import place_markers as place_markers
from .scaling import scale_kinematics as scale_kinematics

__all__ = ["FitReport", "Identifiability", "Identity", "MarkerSet", "Parametrization", "PhysicalInertia",
           "Positive", "Selection", "StandardInertial", "Symmetric", "ViscousDamping", "average_frames", "fit",
           "fit_static_scale", "huber_residual", "identifiability", "isometric_torque_residuals",
           "isometric_torques", "marker_residuals", "marker_set", "measurement_factor",
           "moment_arm_residuals", "multiple_shooting", "muscle_length_residuals", "place_markers",
           "pseudo_inertia", "scale_kinematics", "scale_markers", "scale_model", "segment_factors",
           "segment_names", "torque_residuals", "trajectory_residuals"]
