"""Force elements (OpenSim's passive forces) as generalized forces on the model's coordinates.

See :mod:`mbjax.forces.base` for the contract; the elements reproduce OpenSim's own formulas.
"""

from .base import CoordinateSpring as CoordinateSpring
from .base import CoordinateValues as CoordinateValues
from .base import ForceElement as ForceElement
from .base import ForceSet as ForceSet
from .base import ModelForces as ModelForces
from .base import model_forces as model_forces
from .base import with_force_elements as with_force_elements
from .body_actuators import CoordinateActuator as CoordinateActuator
from .body_actuators import PointActuator as PointActuator
from .body_actuators import TorqueActuator as TorqueActuator
from .body_actuators import actuator_matrix as actuator_matrix
from .bushing import BushingForce as BushingForce
from .bushing import body_fixed_xyz as body_fixed_xyz
from .coordinate_limit import CoordinateLimitForce as CoordinateLimitForce
from .coordinate_limit import smooth_step as smooth_step
from .expression import compile_expression as compile_expression
from .expression_coordinate import ExpressionBasedCoordinateForce as ExpressionBasedCoordinateForce
from .hunt_crossley import HuntCrossleyForce as HuntCrossleyForce
from .path_force import PathForce as PathForce
from .path_ligament import Ligament as Ligament
from .path_spring import PathSpring as PathSpring
from .point_to_point_spring import PointToPointSpring as PointToPointSpring
from .spring_generalized import SpringGeneralizedForce as SpringGeneralizedForce

__all__ = ["BushingForce", "CoordinateActuator", "CoordinateLimitForce", "CoordinateSpring",
           "CoordinateValues", "ExpressionBasedCoordinateForce", "ForceElement", "ForceSet",
           "HuntCrossleyForce", "Ligament", "ModelForces", "PathForce", "PathSpring", "PointActuator",
           "PointToPointSpring",
           "SpringGeneralizedForce", "TorqueActuator", "actuator_matrix", "body_fixed_xyz",
           "compile_expression", "model_forces", "smooth_step", "with_force_elements"]
