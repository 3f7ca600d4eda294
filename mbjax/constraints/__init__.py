"""Closed kinematic chains (Ehsani §3-3): loop constraints and four ways to get f, ∇f, H."""

from ._constraint import LoopConstraint as LoopConstraint
from ._constraint import check_jacobian as check_jacobian
from ._constraint import rcond as rcond
from ._constraint import solve as solve
from .implicit import ImplicitMap as ImplicitMap
from .implicit import implicit_solve as implicit_solve
from .implicit import implicit_values as implicit_values
from .implicit import loop_values as loop_values
from .molecule import molecule_derivatives as molecule_derivatives
from .molecule import molecule_offsets as molecule_offsets
from .projection import direct_derivatives as direct_derivatives
from .projection import hessian_rhs as hessian_rhs
from .projection import projection_derivatives as projection_derivatives
from .projection import projection_values as projection_values
from .absolute import PlanarChain as PlanarChain
from .hermite import hermite as hermite
from .premodel import premodel as premodel
from .premodel import sweep as sweep

__all__ = ["ImplicitMap", "LoopConstraint", "PlanarChain", "check_jacobian", "direct_derivatives", "hermite",
           "hessian_rhs", "implicit_solve", "implicit_values", "loop_values", "molecule_derivatives",
           "molecule_offsets", "premodel", "projection_derivatives", "projection_values", "rcond", "solve",
           "sweep"]
