"""OpenSim's ``ExpressionBasedCoordinateForce``: ``f = expression(q, qdot)`` on one coordinate.

``ExpressionBasedCoordinateForce::calcExpressionForce`` evaluates a Lepton expression of the
coordinate's value ``q`` and speed ``qdot`` (SI units, radians for rotations); the expression is
compiled by :func:`mbjax.forces.expression.compile_expression` (unknown tokens refused by name).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from .base import CoordinateSpring, CoordinateValues
from .expression import compile_expression


class ExpressionBasedCoordinateForce(CoordinateSpring):
    """A stack of ``n`` expression forces; the expression sources are static (one compile each)."""

    coordinates: CoordinateValues
    expressions: tuple[str, ...] = eqx.field(static=True)
    element_names: tuple[str, ...] = eqx.field(static=True)

    def __check_init__(self):
        for e in self.expressions:
            compile_expression(e)  # refuse bad expressions at construction


    @classmethod
    def create(cls, model, names, coordinates, expressions):
        return cls(CoordinateValues.of(model, coordinates), tuple("".join(e.split()) for e in expressions),
                   tuple(names))

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        # one traced function per distinct expression (they differ in structure, not only numbers)
        out = [jnp.broadcast_to(compile_expression(e)(q=q[k], qdot=qd[k]), q[k].shape).astype(q.dtype)
               for k, e in enumerate(self.expressions)]
        return jnp.stack(out) if out else jnp.zeros_like(q)
