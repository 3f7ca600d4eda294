"""Multivariate polynomial joint map (regression models of joint couplings, e.g. shoulder rhythms).

``f(x) = Σ_t c_t Π_k x_k^{e_tk}`` with non-negative integer exponents.  Closed form, with
``P_k(e) = x_k^e`` tabulated once per call::

    ∂f/∂x_j      = Σ_t c_t e_tj x_j^{e_tj - 1} Π_{k≠j} x_k^{e_tk}
    ∂²f/∂x_j²    = Σ_t c_t e_tj (e_tj - 1) x_j^{e_tj - 2} Π_{k≠j} x_k^{e_tk}
    ∂²f/∂x_j∂x_l = Σ_t c_t e_tj e_tl x_j^{e_tj - 1} x_l^{e_tl - 1} Π_{k≠j,l} x_k^{e_tk}

(powers by repeated multiplication, so no ``0 ** negative`` and no ``log`` anywhere).
Array leaves: ``coefficients (n, T)`` and the fitted box ``lower, upper (n, k)``; the exponents
are static.  Maps of a stack with different term sets or coordinate counts are zero-padded.
Default policy ``"extrapolate"`` (a polynomial is defined everywhere; without a box every input is
inside); with a box, ``"error"``, ``"clamp"`` (per coordinate: the clamped function, whose
derivative in a clamped coordinate is zero) and ``"nan"`` apply as for the other families.
"""

from __future__ import annotations

import itertools
from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, check_bounds, check_policy, range_guard, range_label, real_param
from .. import _checks
from .spline import _new


def total_degree_exponents(n_vars: int, degree: int) -> tuple[tuple[int, ...], ...]:
    """All exponent tuples of ``n_vars`` variables with total degree ``<= degree`` (graded order)."""
    out = []
    for d in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(n_vars), d):
            e = [0] * n_vars
            for v in combo:
                e[v] += 1
            out.append(tuple(e))
    return tuple(out)


class Polynomial(AbstractJointMap):
    """``f = Σ_t c_t Π_k x_k^{e_tk}`` in any number of coordinates, closed-form f, ∇f, H."""

    coefficients: jnp.ndarray
    lower: jnp.ndarray
    upper: jnp.ndarray
    exponents: tuple[tuple[tuple[int, ...], ...], ...] = eqx.field(static=True)
    policy: str = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, coordinates, exponents, coefficients, policy: str = "extrapolate", lower=None, upper=None):
        coords = as_coordinates(coordinates, None, "Polynomial")
        k = len(coords)
        if k == 0:
            raise ValueError("Polynomial: needs at least one coordinate (use Constant for none)")
        raw = np.asarray(exponents)
        if not (np.issubdtype(raw.dtype, np.integer) or (np.issubdtype(raw.dtype, np.floating)
                                                         and np.all(np.mod(raw, 1) == 0))):
            raise ValueError(f"Polynomial: exponents must be non-negative integers, got {raw.tolist()}")
        exps = raw.astype(np.int64)
        if exps.ndim == 1 and k == 1:
            exps = exps[:, None]
        if exps.ndim != 2 or exps.shape[1] != k:
            raise ValueError(
                f"Polynomial: exponents must have shape (n_terms, {k}) for coordinates {coords}, "
                f"got {np.shape(exponents)}"
            )
        if np.any(exps < 0):
            raise ValueError("Polynomial: exponents must be non-negative integers")
        coef = jnp.atleast_1d(real_param(coefficients, "Polynomial", "coefficients"))
        if coef.shape != (exps.shape[0],):
            raise ValueError(
                f"Polynomial: {exps.shape[0]} terms need {exps.shape[0]} coefficients, got shape {coef.shape}"
            )
        self.coordinates = (coords,)
        self.policy = check_policy(policy)
        self.exponents = (tuple(tuple(int(v) for v in row) for row in exps),)
        self.coefficients = coef[None]
        def bound(v, name, fill):
            if v is None:
                return jnp.full((k,), fill)
            v = jnp.asarray(_checks.real_array(v, f"Polynomial: {name} must be a number or array",
                                               f"Polynomial: {name} must be real"), dtype=float)
            if v.shape not in ((), (1,), (k,)):
                raise ValueError(f"Polynomial: {name} must have shape ({k},) (one per coordinate of {coords}), "
                                 f"got {v.shape}")
            return jnp.broadcast_to(v, (k,))

        lo, hi = bound(lower, "lower", -jnp.inf), bound(upper, "upper", jnp.inf)
        check_bounds(lo, hi, "Polynomial")
        self.lower = jnp.asarray(lo, dtype=coef.dtype)[None]
        self.upper = jnp.asarray(hi, dtype=coef.dtype)[None]

    @property
    def degree(self) -> int:
        return max((sum(e) for m in self.exponents for e in m), default=0)

    def _exponent_array(self, k: int) -> np.ndarray:
        """Static ``(n, T, k)`` exponents, terms and coordinates zero-padded."""
        n_terms = self.coefficients.shape[1]
        out = np.zeros((self.n_maps, n_terms, k), dtype=np.int64)
        for m, rows in enumerate(self.exponents):
            for t, e in enumerate(rows):
                out[m, t, : len(e)] = e
        return out

    def guarded_inputs(self, x):
        lower, upper = self._box(x.shape[1], x.dtype)
        return x, lower, upper

    def local(self, x):
        n, k = x.shape
        lower, upper = self._box(k, x.dtype)
        x, inside = range_guard(x, lower, upper, self.policy, "Polynomial" + range_label(self.coordinates))
        if self.policy == "clamp":
            pass  # range_guard already clipped x
        e = self._exponent_array(k)  # (n, T, k) static
        d_max = max(int(e.max(initial=0)), 0)
        # P[n, k, d] = x^d for d = 0..d_max, by repeated multiplication
        powers = [jnp.ones_like(x)]
        for _ in range(d_max):
            powers.append(powers[-1] * x)
        p = jnp.stack(powers, axis=-1)  # (n, k, D+1)
        rows = np.arange(n)[:, None, None]
        cols = np.arange(k)[None, None, :]
        e1 = np.maximum(e - 1, 0)
        e2 = np.maximum(e - 2, 0)
        dt = x.dtype
        val = p[rows, cols, e]  # (n, T, k): x_k^{e}
        d1 = jnp.asarray(e, dt) * p[rows, cols, e1]  # e x^{e-1}
        d2 = jnp.asarray(e * (e - 1), dt) * p[rows, cols, e2]  # e (e-1) x^{e-2}
        eye = np.eye(k, dtype=bool)
        # gradient factors: G[n, t, j, k] = d1 if k == j else val
        gfac = jnp.where(eye[None, None], d1[:, :, None, :], val[:, :, None, :])
        # Hessian factors: H[n, t, j, l, k]
        on_j = eye[:, None, :]  # k == j
        on_l = eye[None, :, :]  # k == l
        both = on_j & on_l  # k == j == l
        one = on_j ^ on_l  # exactly one of them (j != l)
        v5 = val[:, :, None, None, :]
        hfac = jnp.where(both, d2[:, :, None, None, :], jnp.where(one, d1[:, :, None, None, :], v5))
        c = self.coefficients
        f = jnp.sum(c * jnp.prod(val, axis=-1), axis=-1)
        g = jnp.einsum("nt,ntj->nj", c, jnp.prod(gfac, axis=-1))
        h = jnp.einsum("nt,ntjl->njl", c, jnp.prod(hfac, axis=-1))
        if self.policy == "clamp":
            g = jnp.where(inside, g, 0.0)
            h = jnp.where(inside[:, :, None] & inside[:, None, :], h, 0.0)
        elif self.policy == "nan":
            ok = jnp.all(inside, axis=-1)
            f = jnp.where(ok, f, jnp.nan)
            g = jnp.where(ok[:, None], g, jnp.nan)
            h = jnp.where(ok[:, None, None], h, jnp.nan)
        return f, g, h

    def _box(self, k: int, dtype):
        w = self.lower.shape[1]
        if w >= k:
            return self.lower[:, :k], self.upper[:, :k]
        pad = ((0, 0), (0, k - w))
        return (
            jnp.pad(self.lower, pad, constant_values=-jnp.inf),
            jnp.pad(self.upper, pad, constant_values=jnp.inf),
        )

    # -- stacking -----------------------------------------------------------------------------
    def group_key(self):
        return (type(self), self.policy)

    @classmethod
    def stack(cls, maps: Sequence["Polynomial"]) -> "Polynomial":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        if len({m.policy for m in maps}) != 1:
            raise ValueError("Polynomial: cannot stack maps with different policies")
        t_max = max(m.coefficients.shape[1] for m in maps)
        k_max = max(m.lower.shape[1] for m in maps)
        coefs, lows, ups, exps = [], [], [], []
        for m in maps:
            coefs.append(jnp.pad(m.coefficients, ((0, 0), (0, t_max - m.coefficients.shape[1]))))
            pad = ((0, 0), (0, k_max - m.lower.shape[1]))
            lows.append(jnp.pad(m.lower, pad, constant_values=-jnp.inf))
            ups.append(jnp.pad(m.upper, pad, constant_values=jnp.inf))
            exps.extend(m.exponents)
        return _new(
            cls,
            coefficients=jnp.concatenate(coefs, 0),
            lower=jnp.concatenate(lows, 0),
            upper=jnp.concatenate(ups, 0),
            exponents=tuple(exps),
            policy=maps[0].policy,
            coordinates=tuple(c for m in maps for c in m.coordinates),
        )

    def select(self, index: int) -> "Polynomial":
        k = len(self.coordinates[index])
        t = len(self.exponents[index])
        sl = slice(index, index + 1)
        return _new(
            type(self),
            coefficients=self.coefficients[sl, :t],
            lower=self.lower[sl, :k],
            upper=self.upper[sl, :k],
            exponents=(self.exponents[index],),
            policy=self.policy,
            coordinates=(self.coordinates[index],),
        )

    # -- fitting ------------------------------------------------------------------------------
    @classmethod
    def fit(cls, coordinates, x, y, degree: int, policy: str = "extrapolate") -> "Polynomial":
        """Least-squares polynomial of total degree ``degree`` through samples ``x (n,)|(n, k)``, ``y (n,)``.

        The sample box ``[min x, max x]`` per coordinate is recorded for the range policy.
        """
        coords = as_coordinates(coordinates, None, "Polynomial.fit")
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        y = np.asarray(y, dtype=float)
        if y.ndim != 1:
            raise ValueError(f"Polynomial.fit: y must be 1-D of length len(x) (one curve), got shape {y.shape}; "
                             "fit each column separately")
        if x.shape != (y.shape[0], len(coords)):
            raise ValueError(
                f"Polynomial.fit: x must have shape (n, {len(coords)}) matching y (n,), got {x.shape}, {y.shape}"
            )
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("Polynomial.fit: samples must be finite")
        degree = _checks.count(degree, "Polynomial.fit", "degree")
        exps = np.asarray(total_degree_exponents(len(coords), degree), dtype=np.int64)
        if y.shape[0] < exps.shape[0]:
            raise ValueError(f"Polynomial.fit: {y.shape[0]} samples cannot determine {exps.shape[0]} terms")
        design = np.prod(x[:, None, :] ** exps[None], axis=-1)
        scale = np.linalg.norm(design, axis=0)
        scale[scale == 0] = 1.0
        coef, *_ = np.linalg.lstsq(design / scale, y, rcond=None)
        return cls(coords, exps, coef / scale, policy, x.min(axis=0), x.max(axis=0))
