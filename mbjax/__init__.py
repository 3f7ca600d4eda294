"""mbjax: empirically-based multibody dynamics of musculoskeletal models in JAX."""

from . import maps as maps
from ._kinematics import JointValues as JointValues
from ._kinematics import PoseDerivatives as PoseDerivatives
from ._kinematics import body_jacobians as body_jacobians
from ._kinematics import body_poses as body_poses
from ._kinematics import joint_transforms as joint_transforms
from ._kinematics import joint_values as joint_values
from ._kinematics import point_acceleration as point_acceleration
from ._kinematics import point_positions as point_positions
from ._kinematics import point_velocity as point_velocity
from ._kinematics import pose_derivatives as pose_derivatives
from ._kinematics import pose_derivatives_kron as pose_derivatives_kron
from ._kinematics import virtual_displacement as virtual_displacement
from ._model import GROUND as GROUND
from ._model import Model as Model
from ._model import ModelBuilder as ModelBuilder
