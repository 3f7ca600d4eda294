"""OpenSim's ``ExpressionBasedCoordinateForce``: ``f = expression(q, qdot)`` on one coordinate.

``ExpressionBasedCoordinateForce::calcExpressionForce`` evaluates a Lepton expression of the
coordinate's value ``q`` and speed ``qdot`` (SI units, radians for rotations); the expression is
compiled by :func:`mbjax.forces.expression.compile_expression` (unknown tokens refused by name).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from . import _params
from .. import _checks
from .base import CoordinateSpring, CoordinateValues
from .expression import compile_expression


class ExpressionBasedCoordinateForce(CoordinateSpring):
    """A stack of ``n`` expression forces; the expression sources are static (one compile each)."""

    coordinates: CoordinateValues
    expressions: tuple[str, ...] = eqx.field(static=True)
    element_names: tuple[str, ...] = eqx.field(static=True)

    def __check_init__(self):
        kind, names = "ExpressionBasedCoordinateForce", self.element_names
        _params.check_names(kind, names, len(self.coordinates.index))
        if len(self.expressions) != len(names):
            raise ValueError(f"{kind}: {len(self.expressions)} expressions for {len(names)} elements {names}")
        for name, e in zip(names, self.expressions):
            if not isinstance(e, str):
                raise TypeError(f"{kind} {name!r}: the expression must be a string of q and qdot, got {e!r}")
            try:
                compile_expression(e)  # refuse bad expressions at construction
            except ValueError as err:
                raise ValueError(f"{kind} {name!r}: {err}") from None

    @classmethod
    def create(cls, model, names, coordinates, expressions):
        """One element per name: ``coordinates`` (names or joint maps) and Lepton ``expressions`` of q, qdot."""
        if isinstance(expressions, str):
            raise TypeError("ExpressionBasedCoordinateForce.create: expressions must be a list of strings (one per "
                            f"element), got the single string {expressions!r}")
        return cls(CoordinateValues.one_each(model, coordinates),
                   tuple("".join(e.split()) if isinstance(e, str) else e for e in expressions),
                   _checks.names(names, "names", "ExpressionBasedCoordinateForce.create"))

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        # one traced function per distinct expression (they differ in structure, not only numbers)
        out = [jnp.broadcast_to(compile_expression(e)(q=q[k], qdot=qd[k]), q[k].shape).astype(q.dtype)
               for k, e in enumerate(self.expressions)]
        return jnp.stack(out) if out else jnp.zeros_like(q)
