"""Composition of an outer joint map with an affine inner map: ``f(q) = g(A q_sub + b)``.

Example: a joint variable that is a spline of the mean of two coordinates,
``Composed(NaturalCubicSpline("u", x, y), [[0.5, 0.5]], [0.0], coordinates=("q1", "q2"))`` or,
equivalently, ``Composed(NaturalCubicSpline("u", x, y), Affine(["q1", "q2"], [0.5, 0.5]))``.

Chain rule in closed form (``g`` any family with closed-form ``∇g``, ``H_g``)::

    u = A x + b,   f = g(u),   ∇f = Aᵀ ∇g(u),   H = Aᵀ H_g(u) A.

The outer map's coordinate names are placeholders for the inner variables ``u``; the composed map
reads ``coordinates``.  Array leaves: the outer map's leaves, ``matrix (n, m, k)`` and
``offset (n, m)`` (zero-padded in a stack).  The outer family's range policy applies to ``u``.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp

from ._base import AbstractJointMap, as_coordinates, real_param
from .affine import Affine
from .spline import _new


class Composed(AbstractJointMap):
    """``f(q) = outer(A q_sub + b)``: an affine inner map feeding an outer map of any family."""

    outer: AbstractJointMap
    matrix: jnp.ndarray
    offset: jnp.ndarray
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, outer: AbstractJointMap, matrix, offset=None, coordinates=None):
        if not isinstance(outer, AbstractJointMap):
            raise TypeError(f"Composed: outer must be a joint map (mbjax.maps), got {type(outer).__name__}")
        if outer.n_maps != 1:
            raise ValueError(f"Composed: outer must be a single joint map (a stack of one), got {outer.n_maps} maps")
        m = len(outer.coordinates[0])
        if m == 0:
            raise ValueError("Composed: the outer map reads no variable; nothing to compose")
        if isinstance(matrix, Affine):
            if offset is not None:
                raise ValueError("Composed: give the offset inside the Affine inner map, not twice")
            matrix, offset, coordinates = _from_affine(matrix, m, coordinates)
        if coordinates is None:
            raise ValueError(
                "Composed: name the coordinates the inner affine map reads (coordinates=...), "
                "or pass an Affine inner map (one per outer variable)"
            )
        coords = as_coordinates(coordinates, None, "Composed")
        a = real_param(matrix, "Composed", "matrix")
        if a.ndim == 1 and m == 1:
            a = a[None]
        if a.shape != (m, len(coords)):
            raise ValueError(
                f"Composed: matrix must have shape (outer variables {m}, coordinates {len(coords)}), "
                f"got {a.shape}"
            )
        if offset is None:
            b = jnp.zeros((m,), a.dtype)
        else:
            b = real_param(offset, "Composed", "offset")
            if b.shape not in ((), (1,), (m,)):
                raise ValueError(f"Composed: offset must have shape (outer variables {m},), got {b.shape}")
            b = jnp.broadcast_to(b, (m,))
        self.outer = outer
        self.matrix = a[None]
        self.offset = jnp.asarray(b)[None]
        self.coordinates = (coords,)

    def guarded_inputs(self, x):
        """The outer map's range applies to ``u = A x + b``."""
        k = x.shape[-1]
        u = jnp.einsum("nmk,nk->nm", self.matrix[:, :, :k], x) + self.offset
        return self.outer.guarded_inputs(u)

    def local(self, x):
        k = x.shape[-1]
        a = self.matrix[:, :, :k]
        u = jnp.einsum("nmk,nk->nm", a, x) + self.offset
        fo, go, ho = self.outer.local(u)
        m_out = go.shape[-1]
        a = a[:, :m_out]
        g = jnp.einsum("nm,nmk->nk", go, a)
        h = jnp.einsum("nmk,nmp,npl->nkl", a, ho, a)
        return fo, g, h

    # -- stacking -----------------------------------------------------------------------------
    def group_key(self):
        return (type(self), self.outer.group_key())

    @classmethod
    def stack(cls, maps: Sequence["Composed"]) -> "Composed":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        outer = type(maps[0].outer).stack([mp.outer for mp in maps])
        m_max = max(outer.width, max(mp.matrix.shape[1] for mp in maps))
        k_max = max(mp.matrix.shape[2] for mp in maps)
        mats = [jnp.pad(mp.matrix, ((0, 0), (0, m_max - mp.matrix.shape[1]), (0, k_max - mp.matrix.shape[2]))) for mp in maps]
        offs = [jnp.pad(mp.offset, ((0, 0), (0, m_max - mp.offset.shape[1]))) for mp in maps]
        return _new(
            cls,
            outer=outer,
            matrix=jnp.concatenate(mats, 0),
            offset=jnp.concatenate(offs, 0),
            coordinates=tuple(c for mp in maps for c in mp.coordinates),
        )

    def select(self, index: int) -> "Composed":
        m = len(self.outer.coordinates[index])
        k = len(self.coordinates[index])
        sl = slice(index, index + 1)
        return _new(
            type(self),
            outer=self.outer.select(index),
            matrix=self.matrix[sl, :m, :k],
            offset=self.offset[sl, :m],
            coordinates=(self.coordinates[index],),
        )

    # -- fitting ------------------------------------------------------------------------------
    @classmethod
    def fit(cls, outer_family, matrix, offset, coordinates, x, y, *args, **kwargs) -> "Composed":
        """Fit the outer map on the inner variables ``u = A x + b`` of samples ``x (n, k)``.

        ``outer_family.fit(names, u, y, *args, **kwargs)`` is called with placeholder names
        ``u0, u1, ...``; e.g. ``Composed.fit(NaturalCubicSpline, [[.5, .5]], 0, ("q1", "q2"), x, y)``.
        """
        import numpy as np

        coords = as_coordinates(coordinates, None, "Composed.fit")
        a = np.atleast_2d(np.asarray(matrix, dtype=float))
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        b = np.zeros(a.shape[0]) if offset is None else np.broadcast_to(np.asarray(offset, dtype=float), (a.shape[0],))
        u = x @ a.T + b
        names = tuple(f"u{i}" for i in range(a.shape[0]))
        if a.shape[0] == 1:
            outer = outer_family.fit(names[0], u[:, 0], y, *args, **kwargs)
        else:
            outer = outer_family.fit(names, u, y, *args, **kwargs)
        return cls(outer, a, b, coords)


def _from_affine(inner: Affine, m: int, coordinates):
    """Matrix, offset and coordinate names from a stack of ``m`` Affine maps (one per outer variable)."""
    if inner.n_maps != m:
        raise ValueError(f"Composed: the outer map reads {m} variable(s), the Affine inner map gives {inner.n_maps}")
    names: list[str] = list(coordinates) if coordinates is not None else []
    for c in inner.coordinates:
        for n in c:
            if n not in names:
                if coordinates is not None:
                    raise ValueError(f"Composed: inner map reads {n!r}, not in coordinates {tuple(coordinates)}")
                names.append(n)
    a = jnp.zeros((m, len(names)), inner.slope.dtype)
    for r, c in enumerate(inner.coordinates):
        for col, n in enumerate(c):
            a = a.at[r, names.index(n)].add(inner.slope[r, col])
    return a, inner.offset, tuple(names)
