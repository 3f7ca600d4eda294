"""One 1-D piecewise polynomial per map: every one-argument OpenSim ``Function`` as a joint map.

Pieces ``[t_j, t_{j+1})`` with ``f(x) = Σ_d c_jd (x - a_j)^d`` and closed-form f', f''; the outer
pieces carry each function's own continuation, so no range policy applies (coordinate ranges are
the importer's business; :meth:`PPData.clamped` builds ``f(clamp(x, lo, hi))`` where OpenSim
clamps).  :class:`PPData` is the plain NumPy description the constructors return:

* :func:`pp_constant`, :func:`pp_linear` (OpenSim ``Constant``, ``LinearFunction``),
  :func:`pp_polynomial` (``PolynomialFunction``: coefficients highest power first, as
  SimTK::Function::Polynomial), :func:`pp_piecewise_linear` (``PiecewiseLinearFunction``:
  segment slopes, continued with the first/last slope);
* :func:`~mbjax.maps.simm_spline.pp_simm_spline` (``SimmSpline``, ``NaturalCubicSpline``) and
  :func:`~mbjax.maps.gcv_spline.pp_gcv_spline` (``GCVSpline``) in their own modules;
* ``MultiplierFunction`` is :meth:`PPData.scaled`.

Inside a piece the value is evaluated with Horner's rule in ``x - x_k`` like OpenSim, so values
agree to rounding (tests: 1e-12).  Coefficients are array leaves (differentiable); knots are too,
but a gradient with respect to the knots does not re-run a spline fit.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, is_concrete, samples_1d


def check_knots(x, y, what: str, minimum: int = 2):
    x, y = samples_1d(x, y, what)
    if x.size < minimum:
        raise ValueError(f"{what}: needs at least {minimum} knots, got {x.size}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"{what}: knots must be strictly increasing, got {x}")
    return x, y


def pp_from_cubic(x, y, b, c, d):
    """Pieces: (-inf, x0) line, [x_k, x_{k+1}) cubics, (x_{n-1}, inf) line."""
    n = x.size
    anchors = np.concatenate([[x[0]], x[:-1], [x[-1]]])
    coef = np.zeros((n + 1, 4))
    coef[0] = [y[0], b[0], 0.0, 0.0]
    coef[1:n] = np.stack([y[:-1], b[:-1], c[:-1], d[:-1]], 1)
    coef[n] = [y[-1], b[-1], 0.0, 0.0]
    # break j separates piece j-1 and j; the last piece starts strictly after x_{n-1}
    breaks = np.concatenate([x[:-1], [np.nextafter(x[-1], np.inf)]])
    return breaks, anchors, coef


class PPData:
    """Plain (NumPy) description of one piecewise polynomial: breaks, anchors, coefficients."""

    def __init__(self, breaks, anchors, coef):
        self.breaks = np.asarray(breaks, dtype=float)
        self.anchors = np.asarray(anchors, dtype=float)
        self.coef = np.asarray(coef, dtype=float)

    def scaled(self, s: float) -> "PPData":
        return PPData(self.breaks, self.anchors, self.coef * s)

    def clamped(self, lo: float, hi: float) -> "PPData":
        """``x ↦ self(clamp(x, lo, hi))`` (SimTK::clamp), e.g. a ``MovingPathPoint`` location.

        Constant ``self(lo)`` below ``lo`` and ``self(hi)`` above ``hi``; at ``lo`` and ``hi`` themselves
        (and between) the original pieces, so values there are the unclamped ones bit for bit.
        """
        lo, hi = float(lo), float(hi)
        if not lo <= hi:
            raise ValueError(f"cannot clamp to [{lo}, {hi}]: max < min")
        if lo == -np.inf and hi == np.inf:
            return self
        deg = self.coef.shape[1]
        j = np.arange(self.anchors.size)
        piece = lambda x: int(np.sum(x >= self.breaks))  # noqa: E731  (piece of x, as __call__)
        first = piece(lo) if lo > -np.inf else 0
        last = piece(hi) if hi < np.inf else self.anchors.size - 1
        keep = (j >= first) & (j <= last)
        anchors, coef = list(self.anchors[keep]), list(self.coef[keep])
        inner = [b for b in self.breaks if lo < b <= hi]
        breaks = list(inner)
        if lo > -np.inf:
            const = np.zeros(deg)
            const[0] = float(self(np.asarray(lo))[0])
            anchors, coef, breaks = [lo] + anchors, [const] + coef, [lo] + breaks
        if hi < np.inf:
            const = np.zeros(deg)
            const[0] = float(self(np.asarray(hi))[0])
            anchors, coef, breaks = anchors + [hi], coef + [const], breaks + [np.nextafter(hi, np.inf)]
        return PPData(np.asarray(breaks), np.asarray(anchors), np.asarray(coef))

    def __call__(self, x):
        """NumPy value, first and second derivative (reference evaluation)."""
        x = np.asarray(x, dtype=float)
        j = np.sum(x[..., None] >= self.breaks, axis=-1)
        t = x - self.anchors[j]
        c = self.coef[j]
        deg = c.shape[-1]
        f = sum(c[..., k] * t**k for k in range(deg))
        g = sum(k * c[..., k] * t ** (k - 1) for k in range(1, deg))
        h = sum(k * (k - 1) * c[..., k] * t ** (k - 2) for k in range(2, deg))
        return f, g + 0 * f, h + 0 * f


def pp_constant(value: float) -> PPData:
    return PPData(np.zeros(0), np.zeros(1), np.array([[float(value)]]))


def pp_linear(slope: float, intercept: float) -> PPData:
    return PPData(np.zeros(0), np.zeros(1), np.array([[float(intercept), float(slope)]]))


def pp_polynomial(coefficients_high_first: Sequence[float]) -> PPData:
    c = np.asarray(coefficients_high_first, dtype=float)[::-1]
    if c.size == 0:
        c = np.zeros(1)
    return PPData(np.zeros(0), np.zeros(1), c[None])


def pp_piecewise_linear(x, y) -> PPData:
    x, y = check_knots(x, y, "PiecewiseLinearFunction")
    slope = np.diff(y) / np.diff(x)
    b = np.concatenate([slope, slope[-1:]])
    z = np.zeros_like(b)
    breaks, anchors, coef = pp_from_cubic(x, y, b, z, z)
    return PPData(breaks, anchors, coef[:, :2])


def _check_pieces(data: PPData):
    """Shapes ``breaks (P-1,)``, ``anchors (P,)``, ``coef (P, D)``; finite; breaks not decreasing."""
    b, a, c = data.breaks, data.anchors, data.coef
    if a.ndim != 1 or a.size < 1 or b.shape != (a.size - 1,) or c.ndim != 2 or c.shape[0] != a.size or c.shape[1] < 1:
        raise ValueError(f"PiecewisePolynomial: P pieces need breaks (P-1,), anchors (P,) and coefficients (P, D), "
                         f"got breaks {b.shape}, anchors {a.shape}, coefficients {c.shape}")
    if not is_concrete(b, a, c):
        return
    for name, v in (("breaks", b), ("anchors", a), ("coefficients", c)):
        if not np.all(np.isfinite(v)):
            raise ValueError(f"PiecewisePolynomial: {name} must be finite (no NaN or inf), got {v.tolist()}")
    if np.any(np.diff(b) < 0):
        i = int(np.argmin(np.diff(b)))
        raise ValueError(f"PiecewisePolynomial: breaks must be increasing, got breaks[{i}]={b[i]} > "
                         f"breaks[{i + 1}]={b[i + 1]}")


class PiecewisePolynomial(AbstractJointMap):
    """Stack of 1-D piecewise polynomials ``f(x) = Σ_d c_jd (x - a_j)^d`` on piece ``j``.

    ``breaks (n_maps, P-1)`` (padded with +inf), ``anchors (n_maps, P)``, ``coef (n_maps, P, D)``.
    OpenSim functions extrapolate by their own rule, which is encoded in the outer pieces, so no
    range policy applies (coordinate ranges are OpenSim's business, see the importer).
    """

    breaks: jnp.ndarray
    anchors: jnp.ndarray
    coef: jnp.ndarray
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 1

    def __init__(self, coordinate, data: PPData | None = None, kind: str = "", *, _stacked=None):
        if _stacked is not None:
            self.breaks, self.anchors, self.coef, self.coordinates, self.kinds = _stacked
            return
        self.coordinates = (as_coordinates(coordinate, 1, "PiecewisePolynomial"),)
        if not isinstance(data, PPData):
            raise TypeError(f"PiecewisePolynomial: data must be a PPData (pp_constant, pp_linear, pp_polynomial, "
                            f"pp_piecewise_linear, ...), got {type(data).__name__}")
        _check_pieces(data)
        self.breaks = jnp.asarray(data.breaks, dtype=float)[None]
        self.anchors = jnp.asarray(data.anchors, dtype=float)[None]
        self.coef = jnp.asarray(data.coef, dtype=float)[None]
        self.kinds = (kind,)

    def group_key(self):
        return (type(self),)

    @classmethod
    def stack(cls, maps):
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        npc = max(m.anchors.shape[1] for m in maps)
        deg = max(m.coef.shape[2] for m in maps)
        breaks = jnp.concatenate(
            [jnp.pad(m.breaks, ((0, 0), (0, npc - 1 - m.breaks.shape[1])), constant_values=jnp.inf) for m in maps]
        )
        anchors = jnp.concatenate([jnp.pad(m.anchors, ((0, 0), (0, npc - m.anchors.shape[1]))) for m in maps])
        coef = jnp.concatenate(
            [jnp.pad(m.coef, ((0, 0), (0, npc - m.coef.shape[1]), (0, deg - m.coef.shape[2]))) for m in maps]
        )
        coords = tuple(c for m in maps for c in m.coordinates)
        kinds = tuple(k for m in maps for k in m.kinds)
        return cls(None, _stacked=(breaks, anchors, coef, coords, kinds))

    def select(self, index):
        sl = slice(index, index + 1)
        return type(self)(
            None,
            _stacked=(self.breaks[sl], self.anchors[sl], self.coef[sl], (self.coordinates[index],), (self.kinds[index],)),
        )

    def evaluate(self, x):
        """Value, first and second derivative for ``x (n_maps,)``."""
        dtype = jnp.result_type(x, self.coef)
        x = x.astype(dtype)
        j = jnp.sum(x[:, None] >= self.breaks, axis=1)
        pick = (j[:, None] == jnp.arange(self.anchors.shape[1])).astype(dtype)  # one-hot piece
        a = jnp.sum(pick * self.anchors.astype(dtype), axis=1)
        c = jnp.einsum("np,npd->nd", pick, self.coef.astype(dtype))  # (n, D)
        t = x - a
        deg = c.shape[1]
        f = c[:, deg - 1]
        for k in range(deg - 2, -1, -1):  # Horner, as OpenSim
            f = c[:, k] + t * f
        g = jnp.zeros_like(f)
        for k in range(deg - 1, 0, -1):
            g = k * c[:, k] + t * g
        h = jnp.zeros_like(f)
        for k in range(deg - 1, 1, -1):
            h = k * (k - 1) * c[:, k] + t * h
        return f, g, h

    def local(self, x):
        f, g, h = self.evaluate(x[:, 0])
        k = x.shape[1]
        grad = jnp.zeros((f.shape[0], k), f.dtype).at[:, 0].set(g)
        hess = jnp.zeros((f.shape[0], k, k), f.dtype).at[:, 0, 0].set(h)
        return f, grad, hess
