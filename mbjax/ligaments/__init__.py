"""Ligaments: thin-plate splines, triangle quadrature, the TPS ligament model (TPSM), the multibundle
baseline (MBM) and ligaments as force elements (TPS-ligament seed, Eq. 1-16)."""

from .acl import fibre_length_range as fibre_length_range
from .acl import synthetic_acl as synthetic_acl
from .fibres import FibreSet as FibreSet
from .fibres import fibre_energy_density as fibre_energy_density
from .fibres import fibre_law as fibre_law
from .fibres import fibre_state as fibre_state
from .fibres import ligament_energy as ligament_energy
from .fibres import ligament_wrench as ligament_wrench
from .force_element import LigamentForce as LigamentForce
from .force_element import generalized_stiffness as generalized_stiffness
from .force_element import ligament_body_wrenches as ligament_body_wrenches
from .force_element import ligament_generalized_forces as ligament_generalized_forces
from .force_element import ligament_potential as ligament_potential
from .force_element import ligament_stiffness as ligament_stiffness
from .force_element import twist_perturbation as twist_perturbation
from .multibundle import multibundle_fibres as multibundle_fibres
from .multibundle import spatial_area as spatial_area
from .quadrature import Mesh as Mesh
from .quadrature import TriangleRule as TriangleRule
from .quadrature import adaptive_integrate as adaptive_integrate
from .quadrature import check_mesh as check_mesh
from .quadrature import conical_rule as conical_rule
from .quadrature import gauss_rule as gauss_rule
from .quadrature import quadrature_points as quadrature_points
from .quadrature import triangulate as triangulate
from .tps import ThinPlateSpline as ThinPlateSpline
from .tps import fit_tps as fit_tps
from .tps import tps_kernel as tps_kernel
from .tpsm import TPSMLigament as TPSMLigament
from .tpsm import discretize as discretize
from .tpsm import reference_wrench as reference_wrench
from .tpsm import register as register

__all__ = ["FibreSet", "LigamentForce", "Mesh", "TPSMLigament", "ThinPlateSpline", "TriangleRule",
           "adaptive_integrate", "check_mesh", "conical_rule", "discretize", "fibre_energy_density",
           "fibre_law", "fibre_length_range", "fibre_state", "fit_tps", "gauss_rule",
           "generalized_stiffness", "ligament_body_wrenches", "ligament_energy",
           "ligament_generalized_forces", "ligament_potential", "ligament_stiffness", "ligament_wrench",
           "multibundle_fibres", "quadrature_points", "reference_wrench", "register", "spatial_area",
           "synthetic_acl", "tps_kernel", "triangulate", "twist_perturbation"]
