"""OpenSim's ``MultivariatePolynomialFunction``: ``f(x) = Σ_t c_t Π_i x_i^{e_ti}`` in OpenSim's term order.

(:class:`~mbjax.maps.Polynomial` is the regression family with graded term order and a fitted box;
this one keeps OpenSim's coefficient layout so files map one to one.)
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, real_param


def multivariate_exponents(dimension: int, order: int) -> np.ndarray:
    """Exponent table of OpenSim's MultivariatePolynomialFunction, in its coefficient order.

    Terms are ordered lexicographically by the exponent of the first variable, then the second,
    ..., with total degree ≤ ``order`` (e.g. 2 variables, order 2: 1, y, y², x, xy, x²).
    """
    out = [e for e in itertools.product(range(order + 1), repeat=dimension) if sum(e) <= order]
    return np.asarray(sorted(out), dtype=int).reshape(-1, dimension)


class MultivariatePolynomial(AbstractJointMap):
    """``f(x) = Σ_t c_t Π_i x_i^{e_ti}`` in several coordinates, closed-form ∇f and H."""

    coefficients: jnp.ndarray  # (n_maps, T)
    exponents: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, coordinates, coefficients, order: int, *, _stacked=None):
        if _stacked is not None:
            self.coefficients, self.exponents, self.coordinates = _stacked
            return
        coords = as_coordinates(coordinates, None, "MultivariatePolynomial")
        if not coords:
            raise ValueError("MultivariatePolynomial: needs at least one coordinate (use Constant for none)")
        if isinstance(order, bool) or not isinstance(order, (int, np.integer)) and not (
                isinstance(order, (float, np.floating)) and float(order).is_integer()):
            raise ValueError(f"MultivariatePolynomial: order must be a non-negative integer, got {order!r}")
        if int(order) < 0:
            raise ValueError(f"MultivariatePolynomial: order must be a non-negative integer, got {order!r}")
        exps = multivariate_exponents(len(coords), int(order))
        coefficients = np.asarray(real_param(coefficients, "MultivariatePolynomial", "coefficients")).ravel()
        if coefficients.size != exps.shape[0]:
            raise ValueError(
                f"MultivariatePolynomial: a MultivariatePolynomialFunction of dimension {len(coords)} and order {order} needs "
                f"{exps.shape[0]} coefficients, got {coefficients.size}"
            )
        self.coefficients = jnp.asarray(coefficients)[None]
        self.exponents = tuple(tuple(int(v) for v in row) for row in exps)
        self.coordinates = (coords,)

    @classmethod
    def stack(cls, maps):
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        if len({m.exponents for m in maps}) != 1:
            raise ValueError("MultivariatePolynomial maps stack only with equal exponent tables")
        coefficients = jnp.concatenate([m.coefficients for m in maps], 0)
        coords = tuple(c for m in maps for c in m.coordinates)
        return cls(None, None, 0, _stacked=(coefficients, maps[0].exponents, coords))

    def group_key(self):
        return (type(self), self.exponents)

    def scaled(self, s: float) -> "MultivariatePolynomial":
        return type(self)(None, None, 0, _stacked=(self.coefficients * s, self.exponents, self.coordinates))

    def local(self, x):
        e = np.asarray(self.exponents, dtype=float)  # (T, k)
        k = e.shape[1]
        x = x[:, :k]
        dtype = jnp.result_type(x, self.coefficients)
        c = self.coefficients.astype(dtype)

        def powers(shift):  # Π_i x_i^(e_i - shift_i) * falling factorials
            coef = np.ones(e.shape[0])
            expo = e.copy()
            for i, s in enumerate(shift):
                for _ in range(s):
                    coef = coef * expo[:, i]
                    expo[:, i] -= 1
            safe = np.maximum(expo, 0)
            term = jnp.prod(jnp.where(jnp.asarray(safe) > 0, x[:, None, :] ** safe, 1.0), axis=-1)
            return jnp.sum(c * coef * term, axis=-1)

        f = powers([0] * k)
        grad = jnp.stack([powers([1 if i == a else 0 for i in range(k)]) for a in range(k)], -1)
        hess = jnp.stack(
            [
                jnp.stack([powers([(i == a) + (i == b) for i in range(k)]) for b in range(k)], -1)
                for a in range(k)
            ],
            -2,
        )
        width = x.shape[1]
        return f, grad[:, :width], hess[:, :width, :width]
