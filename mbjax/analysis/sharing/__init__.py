"""Muscle force sharing (static optimization, OpenSim's ``StaticOptimization``) solved with optax."""

from . import qp as qp
from ._per_name import InvalidWeightsError as InvalidWeightsError
from ._per_name import ReversedBoundsError as ReversedBoundsError
from .report import InfeasibilityReport as InfeasibilityReport
from .report import InfeasibleError as InfeasibleError
from .report import check_feasible as check_feasible
from .report import infeasibility_report as infeasibility_report
from .static_optimization import SharingProblem as SharingProblem
from .static_optimization import StaticOptimizationResult as StaticOptimizationResult
from .force_coefficients import muscle_force_coefficients as muscle_force_coefficients
from .static_optimization import sharing_problem as sharing_problem
from .static_optimization import solve_problem as solve_problem
from .static_optimization import solve_trajectory as solve_trajectory
from .static_optimization import static_optimization as static_optimization
from .static_optimization import static_optimization_trajectory as static_optimization_trajectory

__all__ = ["InfeasibilityReport", "InfeasibleError", "InvalidWeightsError", "ReversedBoundsError", "SharingProblem", "StaticOptimizationResult",
           "check_feasible", "infeasibility_report", "muscle_force_coefficients", "qp", "sharing_problem",
           "solve_problem", "solve_trajectory", "static_optimization", "static_optimization_trajectory"]
