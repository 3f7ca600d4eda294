"""``f(q) = outer(inner(q))`` with a 1-D piecewise-polynomial outer map: a function of a coupled coordinate.

A coordinate eliminated by an OpenSim ``CoordinateCouplerConstraint`` is a map of the independent
coordinates (one or several, or through a chain of couplers); a function of it is this
composition, chain rule in closed form.  (:class:`~mbjax.maps.Composed` is the affine-inner case
for any outer family.)
"""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx

from ._base import AbstractJointMap
from .piecewise import PiecewisePolynomial


class ComposedPolynomial(AbstractJointMap):
    """``f(q) = outer(inner(q))``: a function of a coupled (eliminated) coordinate (Eq. 75's f_i).

    ``outer`` is a 1-D :class:`PiecewisePolynomial`; ``inner`` is the eliminated coordinate as a
    map of the independent ones: a :class:`PiecewisePolynomial` (one-coordinate coupler), a
    :class:`MultivariatePolynomial` (coupler with several independent coordinates), an
    :class:`~mbjax.maps.Affine`, or another ``ComposedPolynomial`` (a chain of couplers).
    Chain rule in closed form: ∇f = o'(u) ∇u,  H = o''(u) ∇u ∇uᵀ + o'(u) H_u.
    """

    outer: PiecewisePolynomial
    inner: AbstractJointMap
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, outer: PiecewisePolynomial, inner: AbstractJointMap):
        if not isinstance(outer, PiecewisePolynomial):
            raise TypeError(f"ComposedPolynomial: outer must be a PiecewisePolynomial, got {type(outer).__name__} "
                            "(mbjax.maps.Composed composes any outer family with an affine inner map)")
        if not isinstance(inner, AbstractJointMap):
            raise TypeError(f"ComposedPolynomial: inner must be a joint map (mbjax.maps), got {type(inner).__name__}")
        if outer.n_maps != inner.n_maps:
            raise ValueError(f"ComposedPolynomial: {outer.n_maps} outer maps but {inner.n_maps} inner maps")
        self.outer = outer
        self.inner = inner
        self.coordinates = inner.coordinates

    def group_key(self):
        return (type(self), self.inner.group_key())

    @classmethod
    def stack(cls, maps):
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        inner_cls = type(maps[0].inner)
        return cls(
            PiecewisePolynomial.stack([m.outer for m in maps]), inner_cls.stack([m.inner for m in maps])
        )

    def select(self, index):
        return type(self)(self.outer.select(index), self.inner.select(index))

    def local(self, x):
        u, du, ddu = self.inner.local(x)
        f, df, ddf = self.outer.evaluate(u)
        grad = df[:, None] * du
        hess = ddf[:, None, None] * du[:, :, None] * du[:, None, :] + df[:, None, None] * ddu
        return f, grad, hess
