"""Musculotendon paths, lines of action and the moment-arm matrix (Ehsani §4-2-1)."""

from .moment_arms import body_wrenches as body_wrenches
from .moment_arms import gamma_beta as gamma_beta
from .moment_arms import gmlav as gmlav
from .moment_arms import moment_arms as moment_arms
from .moment_arms import moment_arms_autodiff as moment_arms_autodiff
from .moment_arms import moment_arms_batched as moment_arms_batched
from .moment_arms import moment_arms_block as moment_arms_block
from .moment_arms import moment_arms_sparse as moment_arms_sparse
from .paths import ConditionalPathPoint as ConditionalPathPoint
from .paths import MovingPathPoint as MovingPathPoint
from .paths import MusclePaths as MusclePaths
from .paths import PathPoint as PathPoint
from .paths import build_paths as build_paths
from .geometry import muscle_lengths as muscle_lengths
from .geometry import path_points as path_points
from .paths import path_state as path_state
from .paths import with_muscles as with_muscles
from .activation import activation_derivative as activation_derivative
from .activation import activation_rate as activation_rate
from .parameters import hill_parameters as hill_parameters
from .musculotendon import MuscleState as MuscleState
from .musculotendon import equilibrium_fiber_length as equilibrium_fiber_length
from .musculotendon import muscle_forces as muscle_forces
from .musculotendon import muscle_state as muscle_state
from .musculotendon import musculotendon_state as musculotendon_state
from .musculotendon import state_from_fiber_length as state_from_fiber_length
from . import millard2012 as millard2012
from . import schutte1993 as schutte1993
from . import thelen2003 as thelen2003
from .opensim_moment_arms import cross_body_lengths as cross_body_lengths
from .opensim_moment_arms import opensim_moment_arms as opensim_moment_arms
from .opensim_moment_arms import opensim_moment_arms_and_lengths as opensim_moment_arms_and_lengths
from .path_functions import PathFunctions as PathFunctions
from .path_functions import build_path_functions as build_path_functions
from .path_functions import with_path_functions as with_path_functions
from .path_fitting import PathFitReport as PathFitReport
from .path_fitting import fit_path_functions as fit_path_functions

__all__ = ["ConditionalPathPoint", "MovingPathPoint", "MusclePaths", "MuscleState", "PathFitReport",
           "PathFunctions", "PathPoint", "activation_derivative", "activation_rate", "body_wrenches",
           "build_path_functions", "build_paths", "cross_body_lengths", "equilibrium_fiber_length",
           "fit_path_functions", "gamma_beta", "gmlav", "hill_parameters", "millard2012", "moment_arms",
           "moment_arms_autodiff", "moment_arms_batched", "moment_arms_block", "moment_arms_sparse",
           "muscle_forces", "muscle_lengths", "muscle_state", "musculotendon_state", "opensim_moment_arms",
           "opensim_moment_arms_and_lengths", "path_points", "path_state", "schutte1993",
           "state_from_fiber_length", "thelen2003", "with_muscles", "with_path_functions"]
