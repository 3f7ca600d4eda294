"""mbjax: empirically-based multibody dynamics of musculoskeletal models in JAX."""

from . import maps as maps
from ._ranges import MapRangeError as MapRangeError
from ._ranges import RangeViolation as RangeViolation
from ._ranges import range_violations as range_violations
from ._checks import checks as checks
from ._checks import checks_enabled as checks_enabled
from ._checks import set_checks as set_checks
from .compilation_cache import enable_compilation_cache as enable_compilation_cache
from .cpu_threads import single_threaded_matmuls as single_threaded_matmuls
from ._kinematics import JointValues as JointValues
from ._kinematics import PoseDerivatives as PoseDerivatives
from ._kinematics import BodyKinematics as BodyKinematics
from ._kinematics import Kinematics as Kinematics
from ._kinematics import body_jacobians as body_jacobians
from ._kinematics import body_kinematics as body_kinematics
from ._kinematics import kinematics as kinematics
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
from ._builder import ModelBuilder as ModelBuilder
from ._dynamics import mass_matrix as mass_matrix
from ._dynamics import bias_forces as bias_forces
from ._dynamics import gravity_forces as gravity_forces
from ._dynamics import generalized_forces as generalized_forces
from ._dynamics import body_wrench_forces as body_wrench_forces
from ._dynamics import inverse_dynamics as inverse_dynamics
from ._dynamics import forward_dynamics as forward_dynamics
from ._dynamics import mass_matrix_kron as mass_matrix_kron
from ._dynamics import bias_forces_kron as bias_forces_kron
from ._dynamics import gravity_forces_kron as gravity_forces_kron
from ._dynamics import kinetic_energy as kinetic_energy
from ._dynamics import potential_energy as potential_energy
from ._dynamics import total_energy as total_energy
from ._simulate import simulate as simulate
from .discrete_adjoint import DiscreteAdjoint as DiscreteAdjoint
from ._kinematics import joint_variables as joint_variables
from . import constraints as constraints
from ._loads import ExternalLoads as ExternalLoads
from .reactions import JointReactions as JointReactions
from .reactions import ReactionSpec as ReactionSpec
from .reactions import joint_reactions as joint_reactions
from .reactions import joint_reactions_classical as joint_reactions_classical
from .reactions import reaction_spec as reaction_spec
from . import ligaments as ligaments
from . import muscles as muscles
from .muscles import moment_arms as moment_arms
from .muscles import moment_arms_batched as moment_arms_batched
from .muscles import muscle_lengths as muscle_lengths
# paths as empirical functions of the coordinates (OpenSim's FunctionBasedPath)
from .muscles.path_fitting import PathTolerance as PathTolerance
from .muscles.path_fitting import fit_path_functions as fit_path_functions
from .muscles.path_functions import with_path_functions as with_path_functions
from . import io as io
from . import sweep as sweep
from .sweep import sweep_poses as sweep_poses
from . import models as models
from .muscles import activation_derivative as activation_derivative
from .muscles import muscle_forces as muscle_forces
from .muscles import muscle_state as muscle_state
from .muscles import equilibrium_fiber_length as equilibrium_fiber_length
# OpenSim data files (.mot/.sto/.trc), model markers and inverse kinematics (issue 17 items 3-4)
from . import ik as ik
from .ik import inverse_kinematics as inverse_kinematics
from .ik import inverse_kinematics_from_setup as inverse_kinematics_from_setup
from .markers import Markers as Markers
from .markers import marker_positions as marker_positions
# inverse dynamics of recorded motion with external loads, OpenSim's ID tool (issue 17 item 5)
from . import id_tool as id_tool
from .id_tool import inverse_dynamics_frames as inverse_dynamics_frames
from .id_tool import inverse_dynamics_from_setup as inverse_dynamics_from_setup
from .id_tool import inverse_dynamics_motion as inverse_dynamics_motion
from . import so_tool as so_tool
from .so_tool import static_optimization_from_setup as static_optimization_from_setup
from .so_tool import static_optimization_motion as static_optimization_motion
from .jr_tool import joint_reactions_from_setup as joint_reactions_from_setup

# muscle-driven forward simulation (issue 15 item 2)
from ._simulate_muscles import simulate_muscles as simulate_muscles
from ._simulate_muscles import MuscleSimState as MuscleSimState
from ._simulate_muscles import muscle_vector_field as muscle_vector_field
from ._simulate_muscles import initial_fiber_lengths as initial_fiber_lengths
from ._excitations import ConstantExcitation as ConstantExcitation
from ._excitations import PiecewiseLinearExcitation as PiecewiseLinearExcitation

# computed-torque tracking (Ehsani Eq. 200-201)
from . import control as control

# muscle force sharing (static optimization, optax)
from . import sharing as sharing
from .sharing import static_optimization as static_optimization
from .sharing import static_optimization_trajectory as static_optimization_trajectory
from .sharing import infeasibility_report as infeasibility_report

# force elements (OpenSim's CoordinateLimitForce, SpringGeneralizedForce, ExpressionBasedCoordinateForce,
# PointToPointSpring, BushingForce) in model.extras["forces"]
from . import forces as forces
from .forces import ModelForces as ModelForces
from .forces import model_forces as model_forces
from .forces import with_force_elements as with_force_elements

# parameter identification (issue 16): fit, parametrizations, data terms, identifiability
from . import identify as identify
