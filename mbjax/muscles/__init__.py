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
