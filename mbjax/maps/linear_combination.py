"""``f(q) = offset + Σ_t w_t g_t(q)``: a weighted sum of single joint maps of different coordinates."""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, real_param


class LinearCombination(AbstractJointMap):
    """``f(q) = offset + Σ_t w_t g_t(q)`` of single joint maps ``g_t`` reading different coordinates.

    What a ``MovingPathPoint`` on a rotated offset frame needs: each body-frame component of its
    location is a rotation-weighted sum of the frame-frame components, each its own function of
    its own coordinate.  ∇f and H are the weighted sums of the terms' closed forms.  A stack of
    one (maps of this family are not stacked with each other).
    """

    terms: tuple[AbstractJointMap, ...]
    weights: jnp.ndarray  # (1, T)
    offset: jnp.ndarray  # (1,)
    term_columns: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, terms: Sequence[AbstractJointMap], weights, offset: float = 0.0):
        terms = (terms,) if isinstance(terms, AbstractJointMap) else tuple(terms)
        for i, t in enumerate(terms):
            if not isinstance(t, AbstractJointMap):
                raise TypeError(f"LinearCombination: terms[{i}] must be a joint map (mbjax.maps), got {type(t).__name__}")
        if not terms or any(t.n_maps != 1 for t in terms):
            raise ValueError("LinearCombination: give one or more single (unstacked) joint maps")
        names: list[str] = []
        for t in terms:
            for c in t.coordinates[0]:
                if c not in names:
                    names.append(c)
        self.terms = terms
        w = jnp.atleast_1d(real_param(weights, "LinearCombination", "weights"))
        if w.shape != (len(terms),):
            raise ValueError(f"LinearCombination: weights must have shape ({len(terms)},) (one per term), got {w.shape}")
        off = real_param(offset, "LinearCombination", "offset", ())
        self.weights = w[None]
        self.offset = off[None]
        self.term_columns = tuple(tuple(names.index(c) for c in t.coordinates[0]) for t in terms)
        self.coordinates = (tuple(names),)

    def group_key(self):
        return (type(self), id(self))

    @classmethod
    def stack(cls, maps):
        maps = list(maps)
        if len(maps) != 1:
            raise ValueError("LinearCombination maps are not stacked")
        return maps[0]

    def local(self, x):
        k = x.shape[1]
        f = jnp.broadcast_to(self.offset.astype(x.dtype), (x.shape[0],))
        grad = jnp.zeros((x.shape[0], k), x.dtype)
        hess = jnp.zeros((x.shape[0], k, k), x.dtype)
        for t, (term, cols) in enumerate(zip(self.terms, self.term_columns)):
            cols = np.asarray(cols or (0,), dtype=np.int32)
            ft, gt, ht = term.local(x[:, cols])
            w = self.weights[:, t].astype(x.dtype)
            width = min(gt.shape[1], cols.size)
            c = cols[:width]
            f = f + w * ft
            grad = grad.at[:, c].add(w[:, None] * gt[:, :width])
            hess = hess.at[:, c[:, None], c[None, :]].add(w[:, None, None] * ht[:, :width, :width])
        return f, grad, hess
