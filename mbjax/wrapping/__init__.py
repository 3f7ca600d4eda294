"""Wrap surfaces as OpenSim defines them, in JAX: one file per surface, one shared path algorithm.

See :mod:`mbjax.wrapping._result` for the contract every surface follows.
"""

from ._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED, WrapLine

__all__ = ["INSIDE", "MANDATORY", "NO_WRAP", "WRAPPED", "WrapLine"]
