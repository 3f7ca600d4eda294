"""Empirical joint maps f(q) with closed-form ∇f and H (one module per family, stacked)."""

from ._base import RANGE_POLICIES as RANGE_POLICIES
from ._base import AbstractJointMap as AbstractJointMap
from .affine import Affine as Affine
from .constant import Constant as Constant
from .function import FunctionMap as FunctionMap
