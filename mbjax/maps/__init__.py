"""Empirical joint maps f(q) with closed-form ∇f and H (one module per family, stacked)."""

from ._base import RANGE_POLICIES as RANGE_POLICIES
from ._base import AbstractJointMap as AbstractJointMap
from .affine import Affine as Affine
from .constant import Constant as Constant
from .function import FunctionMap as FunctionMap
from .fourier import Fourier as Fourier
from .spline import NaturalCubicSpline as NaturalCubicSpline
from .bicubic import BicubicSpline as BicubicSpline
from .composed import Composed as Composed
from .polynomial import Polynomial as Polynomial
from .piecewise import PiecewisePolynomial as PiecewisePolynomial
from .composed_polynomial import ComposedPolynomial as ComposedPolynomial
from .linear_combination import LinearCombination as LinearCombination
from .multivariate import MultivariatePolynomial as MultivariatePolynomial

__all__ = ["AbstractJointMap", "Affine", "BicubicSpline", "Composed", "ComposedPolynomial", "Constant",
           "Fourier", "FunctionMap", "LinearCombination", "MultivariatePolynomial", "NaturalCubicSpline",
           "PiecewisePolynomial", "Polynomial", "RANGE_POLICIES"]
