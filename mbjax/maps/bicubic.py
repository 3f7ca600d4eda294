"""Tensor-product natural bicubic spline in two coordinates (e.g. a shoulder rhythm that depends
on the plane of elevation *and* the elevation, de Groot & Brand 2001; Ehsani §4-4 C).

With ``φ(x) = α(x) + Kᵀ β(x)`` the cardinal functions of 1-D natural cubic spline interpolation
(``K`` maps knot values to knot second derivatives, see :mod:`mbjax.maps.spline`), the interpolant
of grid values ``Y (n1, n2)`` is ``f(x1, x2) = φ1(x1)ᵀ Y φ2(x2)``: C² everywhere, exact at every
grid node, natural (zero normal curvature) on the grid's edges.  Expanded on one cell::

    f = Σ_{a∈{i,i+1}} Σ_{b∈{j,j+1}} α_a α_b Y_ab + β_a α_b M1_ab + α_a β_b M2_ab + β_a β_b M12_ab

with ``M1 = K1 Y`` (∂²/∂x1² at the nodes), ``M2 = Y K2ᵀ`` and ``M12 = K1 Y K2ᵀ``, each from natural
spline tridiagonal solves (inside :meth:`local`, so the node values stay differentiable leaves).
Gradient and Hessian use the closed-form derivatives of α, β in each coordinate.

Range policy per coordinate (outside ``[x_0, x_{n-1}]`` of that coordinate): ``"error"``
(default), ``"clamp"`` (the clamped function: edge value, zero derivative in that coordinate),
``"extrapolate"`` (each 1-D interpolant continued linearly, so the surface continues with its
edge slopes) or ``"nan"``.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, check_policy, range_label
from .spline import (
    _is_concrete,
    _new,
    check_knots,
    cubic_basis,
    end_knots,
    natural_second_derivatives,
    pad_knots,
)


class BicubicSpline(AbstractJointMap):
    """C² tensor-product natural cubic spline interpolant of ``values (n1, n2)`` on grid ``x1 × x2``."""

    knots1: jnp.ndarray
    knots2: jnp.ndarray
    values: jnp.ndarray
    sizes: tuple[tuple[int, int], ...] = eqx.field(static=True)
    policy: str = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 2

    def __init__(self, coordinates, x1, x2, values, policy: str = "error"):
        self.coordinates = (as_coordinates(coordinates, 2, "BicubicSpline"),)
        self.policy = check_policy(policy)
        if _is_concrete(x1, x2):
            check_knots(x1, "BicubicSpline", "x1")
            check_knots(x2, "BicubicSpline", "x2")
        x1 = jnp.asarray(x1, dtype=float)
        x2 = jnp.asarray(x2, dtype=float)
        if _is_concrete(values) and not np.all(np.isfinite(np.asarray(values, dtype=float))):
            raise ValueError("BicubicSpline: grid values must be finite (no NaN or inf)")
        values = jnp.asarray(values, dtype=float)
        if x1.ndim != 1 or x2.ndim != 1 or values.shape != (x1.shape[0], x2.shape[0]):
            raise ValueError(
                f"BicubicSpline: values must have shape (len(x1), len(x2)) = "
                f"({x1.shape[0] if x1.ndim == 1 else '?'}, {x2.shape[0] if x2.ndim == 1 else '?'}), "
                f"got {values.shape}"
            )
        if x1.shape[0] < 2 or x2.shape[0] < 2:
            raise ValueError("BicubicSpline: each grid axis needs >= 2 knots")
        self.knots1 = x1[None]
        self.knots2 = x2[None]
        self.values = values[None]
        self.sizes = ((int(x1.shape[0]), int(x2.shape[0])),)

    # -- evaluation ---------------------------------------------------------------------------
    def node_derivatives(self):
        """``M1 = ∂²f/∂x1²``, ``M2 = ∂²f/∂x2²``, ``M12 = ∂⁴f/∂x1²∂x2²`` at the nodes, ``(n, N1, N2)``."""
        s1 = tuple(s[0] for s in self.sizes)
        s2 = tuple(s[1] for s in self.sizes)
        y = self.values
        m1 = natural_second_derivatives(self.knots1, y, s1)
        m2 = jnp.swapaxes(natural_second_derivatives(self.knots2, jnp.swapaxes(y, 1, 2), s2), 1, 2)
        m12 = natural_second_derivatives(self.knots1, m2, s1)
        return m1, m2, m12

    def guarded_inputs(self, x):
        lo1, hi1 = end_knots(self.knots1, tuple(s[0] for s in self.sizes))
        lo2, hi2 = end_knots(self.knots2, tuple(s[1] for s in self.sizes))
        return x[:, :2], jnp.stack([lo1, lo2], 1), jnp.stack([hi1, hi2], 1)

    def local(self, x):
        s1 = tuple(s[0] for s in self.sizes)
        s2 = tuple(s[1] for s in self.sizes)
        i, (a1, b1, da1, db1, dda1, ddb1), _ = cubic_basis(self.knots1, s1, x[:, 0], self.policy, "BicubicSpline (x1)" + range_label(self.coordinates))
        j, (a2, b2, da2, db2, dda2, ddb2), _ = cubic_basis(self.knots2, s2, x[:, 1], self.policy, "BicubicSpline (x2)" + range_label(self.coordinates))
        m1, m2, m12 = self.node_derivatives()
        rows = np.arange(x.shape[0])[:, None, None]
        ii = (i[:, None] + np.arange(2)[None])[:, :, None]  # (n, 2, 1)
        jj = (j[:, None] + np.arange(2)[None])[:, None, :]  # (n, 1, 2)
        cell = [arr[rows, ii, jj] for arr in (self.values, m1, m2, m12)]  # (n, 2, 2) each

        def form(p1, q1, p2, q2):
            """Σ_ab p1_a p2_b Y + q1_a p2_b M1 + p1_a q2_b M2 + q1_a q2_b M12."""
            y, c1, c2, c12 = cell
            return (
                jnp.einsum("na,nb,nab->n", p1, p2, y)
                + jnp.einsum("na,nb,nab->n", q1, p2, c1)
                + jnp.einsum("na,nb,nab->n", p1, q2, c2)
                + jnp.einsum("na,nb,nab->n", q1, q2, c12)
            )

        f = form(a1, b1, a2, b2)
        g1 = form(da1, db1, a2, b2)
        g2 = form(a1, b1, da2, db2)
        h11 = form(dda1, ddb1, a2, b2)
        h12 = form(da1, db1, da2, db2)
        h22 = form(a1, b1, dda2, ddb2)
        g = jnp.stack([g1, g2], -1)
        h = jnp.stack([jnp.stack([h11, h12], -1), jnp.stack([h12, h22], -1)], -2)
        return f, g, h

    # -- stacking -----------------------------------------------------------------------------
    def group_key(self):
        return (type(self), self.policy)

    @classmethod
    def stack(cls, maps: Sequence["BicubicSpline"]) -> "BicubicSpline":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        if len({m.policy for m in maps}) != 1:
            raise ValueError("BicubicSpline: cannot stack maps with different policies")
        sizes = tuple(s for m in maps for s in m.sizes)
        n1 = max(s[0] for s in sizes)
        n2 = max(s[1] for s in sizes)
        k1, k2, vals = [], [], []
        for m in maps:
            for r, (s1, s2) in enumerate(m.sizes):
                k1.append(pad_knots(m.knots1[r, :s1], n1))
                k2.append(pad_knots(m.knots2[r, :s2], n2))
                vals.append(jnp.pad(m.values[r, :s1, :s2], ((0, n1 - s1), (0, n2 - s2))))
        return _new(
            cls,
            knots1=jnp.stack(k1),
            knots2=jnp.stack(k2),
            values=jnp.stack(vals),
            sizes=sizes,
            policy=maps[0].policy,
            coordinates=tuple(c for m in maps for c in m.coordinates),
        )

    def select(self, index: int) -> "BicubicSpline":
        s1, s2 = self.sizes[index]
        sl = slice(index, index + 1)
        return _new(
            type(self),
            knots1=self.knots1[sl, :s1],
            knots2=self.knots2[sl, :s2],
            values=self.values[sl, :s1, :s2],
            sizes=((s1, s2),),
            policy=self.policy,
            coordinates=(self.coordinates[index],),
        )

    # -- fitting ------------------------------------------------------------------------------
    @classmethod
    def fit(cls, coordinates, x1, x2, values, policy: str = "error") -> "BicubicSpline":
        """Interpolant of gridded samples ``values[i, j] = f(x1[i], x2[j])``.

        Grid axes given in decreasing order are flipped (with the values); samples must be finite.
        """
        x1 = np.asarray(x1, dtype=float).ravel()
        x2 = np.asarray(x2, dtype=float).ravel()
        v = np.asarray(values, dtype=float)
        if v.shape != (x1.shape[0], x2.shape[0]):
            raise ValueError(
                f"BicubicSpline.fit: values must have shape ({x1.shape[0]}, {x2.shape[0]}), got {v.shape}"
            )
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(x1)) and np.all(np.isfinite(x2))):
            raise ValueError("BicubicSpline.fit: samples must be finite")
        o1 = np.argsort(x1, kind="stable")
        o2 = np.argsort(x2, kind="stable")
        return cls(coordinates, x1[o1], x2[o2], v[np.ix_(o1, o2)], policy=policy)
