"""Fourier series in one coordinate (Ehsani §4-4 B: the joint variables of Andrews' squeezer).

``f(x) = a0 + Σ_{k=1..K} a_k cos(k ω x) + b_k sin(k ω x)`` with closed-form

    f'  = Σ k ω (-a_k sin(k ω x) + b_k cos(k ω x)),
    f'' = -Σ (k ω)² (a_k cos(k ω x) + b_k sin(k ω x)).

This is MATLAB's ``fourierK`` model, which the seed uses for Andrews' mechanism.  Array leaves:
``a0 (n,)``, ``a, b (n, K)`` (zero-padded when maps of a stack have different K), ``omega (n,)``
and the fitted range ``lower, upper (n,)``.  Range policy outside ``[lower, upper]``: ``"error"``
(default), ``"clamp"`` (end value, zero derivatives), ``"extrapolate"`` (evaluate the series,
which is periodic) or ``"nan"``.  Without a range (``lower``/``upper`` omitted) every input is
inside.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, check_bounds, check_policy, range_guard, range_label, real_param, samples_1d
from .. import _checks
from .spline import _is_concrete, _new


class Fourier(AbstractJointMap):
    """``f = a0 + Σ_k a_k cos(k ω x) + b_k sin(k ω x)`` in one coordinate, closed-form f, ∇f, H."""

    a0: jnp.ndarray
    a: jnp.ndarray
    b: jnp.ndarray
    omega: jnp.ndarray
    lower: jnp.ndarray
    upper: jnp.ndarray
    policy: str = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 1

    def __init__(self, coordinate, a0, a, b, omega, policy: str = "error", lower=None, upper=None):
        self.coordinates = (as_coordinates(coordinate, 1, "Fourier"),)
        self.policy = check_policy(policy)
        a = jnp.atleast_1d(real_param(a, "Fourier", "a (cosine coefficients)"))
        b = jnp.atleast_1d(real_param(b, "Fourier", "b (sine coefficients)"))
        if a.ndim != 1 or a.shape != b.shape:
            raise ValueError(
                f"Fourier: cosine and sine coefficients must be 1-D of equal length, got {a.shape}, {b.shape}"
            )

        def one(v, name):
            v = jnp.asarray(v, dtype=float)
            if v.size != 1:
                raise ValueError(f"Fourier: {name} must be one number, got shape {v.shape}")
            return jnp.reshape(v, (1,))

        self.a0 = one(real_param(a0, "Fourier", "a0"), "a0")
        self.a = a[None]
        self.b = b[None]
        self.omega = one(real_param(omega, "Fourier", "omega"), "omega")
        if _is_concrete(self.omega) and not float(self.omega[0]) > 0.0:
            raise ValueError(f"Fourier: omega (the base frequency) must be > 0, got {float(self.omega[0])}")
        lo = -jnp.inf if lower is None else lower
        hi = jnp.inf if upper is None else upper
        self.lower = one(_checks.real_array(lo, "Fourier: lower must be a number", "Fourier: lower must be real"),
                         "lower")
        self.upper = one(_checks.real_array(hi, "Fourier: upper must be a number", "Fourier: upper must be real"),
                         "upper")
        check_bounds(self.lower, self.upper, "Fourier", strict=True)

    @property
    def n_harmonics(self) -> int:
        return int(self.a.shape[1])

    def guarded_inputs(self, x):
        return x[:, :1], self.lower[:, None], self.upper[:, None]

    def local(self, x):
        x = x[:, 0]
        x, inside = range_guard(x, self.lower, self.upper, self.policy, "Fourier" + range_label(self.coordinates))
        k = jnp.arange(1, self.a.shape[1] + 1, dtype=self.a.dtype)
        kw = k[None, :] * self.omega[:, None]  # (n, K)
        arg = kw * x[:, None]
        c, s = jnp.cos(arg), jnp.sin(arg)
        f = self.a0 + jnp.sum(self.a * c + self.b * s, axis=-1)
        g = jnp.sum(kw * (self.b * c - self.a * s), axis=-1)
        h = -jnp.sum(kw**2 * (self.a * c + self.b * s), axis=-1)
        if self.policy == "clamp":
            g, h = jnp.where(inside, g, 0.0), jnp.where(inside, h, 0.0)
        elif self.policy == "nan":
            f, g, h = (jnp.where(inside, v, jnp.nan) for v in (f, g, h))
        return f, g[:, None], h[:, None, None]

    # -- stacking -----------------------------------------------------------------------------
    def group_key(self):
        return (type(self), self.policy)

    @classmethod
    def stack(cls, maps: Sequence["Fourier"]) -> "Fourier":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        if len({m.policy for m in maps}) != 1:
            raise ValueError("Fourier: cannot stack maps with different policies")
        k_max = max(m.a.shape[1] for m in maps)
        pad = lambda v: jnp.pad(v, ((0, 0), (0, k_max - v.shape[1])))
        cat = lambda name: jnp.concatenate([getattr(m, name) for m in maps], axis=0)
        return _new(
            cls,
            a0=cat("a0"),
            a=jnp.concatenate([pad(m.a) for m in maps], axis=0),
            b=jnp.concatenate([pad(m.b) for m in maps], axis=0),
            omega=cat("omega"),
            lower=cat("lower"),
            upper=cat("upper"),
            policy=maps[0].policy,
            coordinates=tuple(c for m in maps for c in m.coordinates),
        )

    # -- fitting ------------------------------------------------------------------------------
    @staticmethod
    def _design(x, n_harmonics: int, omega: float):
        k = np.arange(1, n_harmonics + 1)
        arg = np.outer(x, k) * omega
        return np.concatenate([np.ones((x.shape[0], 1)), np.cos(arg), np.sin(arg)], axis=1)

    @classmethod
    def _solve(cls, x, y, n_harmonics: int, omega: float):
        """Linear least squares for fixed ω (columns scaled to unit norm); returns coef, rss."""
        d = cls._design(x, n_harmonics, omega)
        scale = np.linalg.norm(d, axis=0)
        scale[scale == 0] = 1.0
        coef, *_ = np.linalg.lstsq(d / scale, y, rcond=None)
        coef = coef / scale
        r = d @ coef - y
        return coef, float(r @ r)

    @classmethod
    def fit(
        cls,
        coordinate,
        x,
        y,
        n_harmonics: int,
        omega=None,
        policy: str = "error",
        omega_bounds=None,
    ) -> "Fourier":
        """Least-squares Fourier fit of samples ``(x, y)``; the range ``[x.min, x.max]`` is recorded.

        With ``omega`` given, the fit is linear.  With ``omega=None`` ω is fitted too (like MATLAB's
        ``fit(x, y, 'fourierK')``): the residual of the linear fit is minimised over ω by variable
        projection, first on a log-spaced grid over ``omega_bounds`` (default
        ``[π / (2L), π (n - 1) / (K L)]`` for span ``L`` and ``n`` samples: from a quarter period over
        the data up to the Nyquist limit of the highest harmonic), then refined by a bounded Brent
        search around the best grid point.
        """
        x, y = samples_1d(x, y, "Fourier.fit")
        if x.shape != y.shape or x.shape[0] < 2:
            raise ValueError(f"Fourier.fit: need equal-length samples (>= 2), got {x.shape}, {y.shape}")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("Fourier.fit: samples must be finite")
        n_harmonics = _checks.count(n_harmonics, "Fourier.fit", "n_harmonics")
        if omega is not None:
            w = np.asarray(omega)
            if w.dtype.kind not in "iuf" or w.size != 1 or not (np.isfinite(w).all() and float(w.ravel()[0]) > 0):
                raise ValueError(f"Fourier.fit: omega (the base frequency) must be one finite number > 0, got "
                                 f"{omega!r}")
            omega = float(w.ravel()[0])
        if x.shape[0] < 2 * n_harmonics + 1 + (omega is None):
            raise ValueError(
                f"Fourier.fit: {x.shape[0]} samples cannot determine {2 * n_harmonics + 1} coefficients"
                + (" and ω" if omega is None else "")
            )
        lo, hi = float(x.min()), float(x.max())
        if omega is None and n_harmonics > 0:
            omega = cls.fit_omega(x, y, n_harmonics, omega_bounds)
        elif omega is None:
            omega = 1.0
        coef, _ = cls._solve(x, y, n_harmonics, float(omega))
        k = n_harmonics
        return cls(coordinate, coef[0], coef[1 : 1 + k], coef[1 + k :], float(omega), policy, lo, hi)

    @classmethod
    def fit_omega(cls, x, y, n_harmonics: int, omega_bounds=None, n_grid: int = 400) -> float:
        """ω minimising the least-squares residual (grid search + bounded Brent refinement)."""
        from scipy.optimize import minimize_scalar

        span = float(x.max() - x.min())
        if span <= 0:
            raise ValueError("Fourier.fit: samples span no range, cannot fit ω")
        if omega_bounds is None:
            w_lo = np.pi / (2.0 * span)
            w_hi = np.pi * (x.shape[0] - 1) / (n_harmonics * span)
        else:
            w_lo, w_hi = (float(v) for v in omega_bounds)
        if not 0 < w_lo < w_hi:
            raise ValueError(f"Fourier.fit: bad ω bounds [{w_lo}, {w_hi}]")
        grid = np.geomspace(w_lo, w_hi, n_grid)
        rss = np.array([cls._solve(x, y, n_harmonics, w)[1] for w in grid])
        best = int(np.argmin(rss))
        a = grid[max(best - 1, 0)]
        b = grid[min(best + 1, n_grid - 1)]
        res = minimize_scalar(
            lambda w: cls._solve(x, y, n_harmonics, w)[1],
            bounds=(a, b),
            method="bounded",
            options={"xatol": 1e-10 * b},
        )
        w0 = float(res.x) if res.fun <= rss[best] else float(grid[best])
        # Gauss-Newton on the projected residual vector: the squared residual is flat near its
        # minimum (ω to ~√eps only); the residual vector pins ω to ~eps.
        from scipy.optimize import least_squares

        def resid(w):
            coef, _ = cls._solve(x, y, n_harmonics, float(w[0]))
            return cls._design(x, n_harmonics, float(w[0])) @ coef - y

        gn = least_squares(resid, [w0], bounds=([a], [b]), xtol=1e-15, ftol=1e-15, gtol=1e-15, method="trf")
        w1 = float(gn.x[0])
        return w1 if cls._solve(x, y, n_harmonics, w1)[1] <= cls._solve(x, y, n_harmonics, w0)[1] else w0
