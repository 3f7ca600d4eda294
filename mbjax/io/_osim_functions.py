"""OpenSim ``Function`` types as joint-map families, evaluated exactly as OpenSim evaluates them.

Every one-argument OpenSim function the importer supports is a **piecewise polynomial with
linear (or polynomial) continuation**, so one family, :class:`PiecewisePolynomial`, holds them
all: pieces ``[t_j, t_{j+1})`` with ``f(x) = Σ_d c_jd (x - a_j)^d``, closed-form f', f'':

* ``Constant`` (one piece, degree 0), ``LinearFunction`` (``coefficients = [slope, intercept]``),
  ``PolynomialFunction`` (``coefficients`` highest power first, as SimTK::Function::Polynomial),
* ``SimmSpline``: SIMM's cubic spline (Forsythe-Malcolm-Moler ``spline`` routine: end conditions
  match the third derivative of the cubics through the first/last four knots; 2 knots = a line),
  linear continuation with the end slopes ``b_0``/``b_{n-1}`` outside the knots,
* ``NaturalCubicSpline``: OpenSim 4.x reads this tag as an alias of ``SimmSpline`` and evaluates it
  with SIMM's end conditions, so the importer does too (:func:`pp_natural_spline`, a true natural
  spline with the same continuation, stays available and is tested against SciPy),
* ``PiecewiseLinearFunction``: segment slopes, continued with the first/last slope,
* ``GCVSpline`` (``error_variance = 0``): Woltring's natural interpolating spline of degree
  ``2·half_order - 1``, continued by the polynomial of degree ``half_order - 1`` that OpenSim
  evaluates outside the knots (a smoothing GCVSpline, ``error_variance > 0``, is refused),
* ``MultiplierFunction``: ``scale ·`` any of the above.

Coefficients are computed in NumPy float64 at load time with OpenSim's algorithms (rewritten here
from the published descriptions, not copied).  Inside a piece the value is evaluated with Horner's
rule in ``x - x_k`` like OpenSim, so values agree to rounding (tests: 1e-12).  Coefficients are
array leaves (differentiable); knots are too, but a gradient with respect to the knots does not
re-run the spline fit.

A coordinate eliminated by a ``CoordinateCouplerConstraint`` becomes a map of the independent
coordinates (one or several, or through a chain of couplers); a function of it is then
:class:`ComposedPolynomial` = outer ∘ inner, chain rule in closed form.  :class:`MultivariatePolynomial` covers OpenSim's ``MultivariatePolynomialFunction``.
"""

from __future__ import annotations

import itertools
from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..maps._base import AbstractJointMap, as_coordinates

# --------------------------------------------------------------------------------------------
# coefficient algorithms (NumPy, float64)
# --------------------------------------------------------------------------------------------


def _check_knots(x, y, what: str, minimum: int = 2):
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"{what}: x has {x.size} values but y has {y.size}")
    if x.size < minimum:
        raise ValueError(f"{what}: needs at least {minimum} knots, got {x.size}")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"{what}: knots must be strictly increasing, got {x}")
    return x, y


def simm_spline_coefficients(x, y):
    """b, c, d of SIMM's cubic spline (FMM end conditions); y_k + b dx + c dx² + d dx³."""
    x, y = _check_knots(x, y, "SimmSpline")
    n = x.size
    b = np.zeros(n)
    c = np.zeros(n)
    d = np.zeros(n)
    if n == 2:
        b[:] = (y[1] - y[0]) / (x[1] - x[0])
        return b, c, d
    nm1, nm2 = n - 1, n - 2
    # tridiagonal system: b = diagonal, d = off-diagonal, c = right-hand side
    d[0] = x[1] - x[0]
    c[1] = (y[1] - y[0]) / d[0]
    for i in range(1, nm1):
        d[i] = x[i + 1] - x[i]
        b[i] = 2.0 * (d[i - 1] + d[i])
        c[i + 1] = (y[i + 1] - y[i]) / d[i]
        c[i] = c[i + 1] - c[i]
    # end conditions: third derivatives from divided differences
    b[0] = -d[0]
    b[nm1] = -d[nm2]
    c[0] = 0.0
    c[nm1] = 0.0
    if n > 3:
        d1 = c[2] / (x[3] - x[1]) - c[1] / (x[2] - x[0])
        d2 = c[nm2] / (x[nm1] - x[n - 3]) - c[n - 3] / (x[nm2] - x[n - 4])
        c[0] = d1 * d[0] * d[0] / (x[3] - x[0])
        c[nm1] = -d2 * d[nm2] * d[nm2] / (x[nm1] - x[n - 4])
    for i in range(1, n):  # forward elimination
        t = d[i - 1] / b[i - 1]
        b[i] -= t * d[i - 1]
        c[i] -= t * c[i - 1]
    c[nm1] /= b[nm1]  # back substitution
    for i in range(nm2, -1, -1):
        c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
    b[nm1] = (y[nm1] - y[nm2]) / d[nm2] + d[nm2] * (c[nm2] + 2.0 * c[nm1])
    for i in range(nm1):
        b[i] = (y[i + 1] - y[i]) / d[i] - d[i] * (c[i + 1] + 2.0 * c[i])
        d[i] = (c[i + 1] - c[i]) / d[i]
        c[i] *= 3.0
    c[nm1] *= 3.0
    d[nm1] = d[nm2]
    return b, c, d


def natural_spline_coefficients(x, y):
    """b, c, d of the natural cubic spline (second derivative zero at both ends)."""
    x, y = _check_knots(x, y, "NaturalCubicSpline")
    n = x.size
    h = np.diff(x)
    if n == 2:
        s = (y[1] - y[0]) / h[0]
        return np.full(2, s), np.zeros(2), np.zeros(2)
    # solve for second derivatives m (m_0 = m_{n-1} = 0)
    a = np.zeros((n, n))
    rhs = np.zeros(n)
    a[0, 0] = a[-1, -1] = 1.0
    for i in range(1, n - 1):
        a[i, i - 1] = h[i - 1]
        a[i, i] = 2.0 * (h[i - 1] + h[i])
        a[i, i + 1] = h[i]
        rhs[i] = 6.0 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    m = np.linalg.solve(a, rhs)
    b = np.zeros(n)
    c = m / 2.0
    d = np.zeros(n)
    b[:-1] = (y[1:] - y[:-1]) / h - h * (2.0 * m[:-1] + m[1:]) / 6.0
    d[:-1] = (m[1:] - m[:-1]) / (6.0 * h)
    b[-1] = b[-2] + 2.0 * c[-2] * h[-1] + 3.0 * d[-2] * h[-1] ** 2
    return b, c, d


def gcv_spline_pieces(x, y, half_order: int):
    """Power-form pieces of OpenSim's ``GCVSpline`` with ``error_variance = 0``.

    Woltring's GCVSPL with a zero error variance returns the **interpolating natural spline** of
    degree ``2m - 1`` (``m = half_order``): a polynomial of degree ``2m - 1`` on every knot
    interval, ``C^{2m-2}`` at interior knots, derivatives ``m … 2m-2`` zero at both end knots,
    and a polynomial of degree ``m - 1`` outside ``[x_0, x_{n-1}]`` (its Taylor expansion at the
    end knot; OpenSim evaluates exactly this there).  OpenSim requires ``n >= 2m`` knots.

    The interpolation conditions are solved as one dense linear system in the interval-local
    variable ``s = (x - x_k) / h_k`` (well conditioned for any knot spacing), then rescaled to
    powers of ``x - x_k``.  Returns ``(b (n-1, 2m), left (m,), right (m,))``: piece coefficients
    and the Taylor coefficients of the two polynomial continuations.
    """
    x, y = _check_knots(x, y, "GCVSpline")
    m = int(half_order)
    if not 1 <= m <= 4:
        raise ValueError(f"GCVSpline: half_order must be 1, 2, 3 or 4 (degree 1, 3, 5, 7), got {half_order}")
    n = x.size
    if n < 2 * m:
        raise ValueError(f"GCVSpline: degree {2 * m - 1} needs at least {2 * m} knots, got {n}")
    deg = 2 * m  # coefficients per piece
    nk = n - 1
    h = np.diff(x)

    def drow(r, s):
        """Row of d^r/ds^r of [1, s, …, s^{deg-1}] at s."""
        out = np.zeros(deg)
        for d in range(r, deg):
            out[d] = np.prod(np.arange(d - r + 1, d + 1)) * s ** (d - r)
        return out

    a = np.zeros((deg * nk, deg * nk))
    rhs = np.zeros(deg * nk)
    row = 0
    for k in range(nk):
        cols = slice(deg * k, deg * (k + 1))
        a[row, cols] = drow(0, 0.0)
        rhs[row] = y[k]
        a[row + 1, cols] = drow(0, 1.0)
        rhs[row + 1] = y[k + 1]
        row += 2
    for k in range(nk - 1):  # continuity of derivatives 1 … 2m-2 at knot k+1 (x-derivatives times h_k^r)
        for r in range(1, deg - 1):
            a[row, deg * k: deg * (k + 1)] = drow(r, 1.0)
            a[row, deg * (k + 1): deg * (k + 2)] = -drow(r, 0.0) * (h[k] / h[k + 1]) ** r
            row += 1
    for r in range(m, deg - 1):  # natural end conditions
        a[row, 0:deg] = drow(r, 0.0)
        a[row + 1, deg * (nk - 1):] = drow(r, 1.0)
        row += 2
    assert row == deg * nk
    coef_s = np.linalg.solve(a, rhs).reshape(nk, deg)
    b = coef_s / h[:, None] ** np.arange(deg)  # powers of (x - x_k)
    fact = np.array([float(np.prod(np.arange(1, r + 1))) for r in range(m)])
    left = b[0, :m].copy()
    right = np.array([drow(r, 1.0) @ coef_s[-1] / h[-1] ** r for r in range(m)]) / fact
    return b, left, right


# --------------------------------------------------------------------------------------------
# piecewise polynomials (one family for every 1-D OpenSim function)
# --------------------------------------------------------------------------------------------


def _pp_from_cubic(x, y, b, c, d):
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


def pp_simm_spline(x, y) -> PPData:
    x, y = _check_knots(x, y, "SimmSpline")
    return PPData(*_pp_from_cubic(x, y, *simm_spline_coefficients(x, y)))


def pp_natural_spline(x, y) -> PPData:
    x, y = _check_knots(x, y, "NaturalCubicSpline")
    return PPData(*_pp_from_cubic(x, y, *natural_spline_coefficients(x, y)))


def pp_gcv_spline(x, y, half_order: int = 3) -> PPData:
    """OpenSim ``GCVSpline`` (error variance 0): natural interpolating spline, see :func:`gcv_spline_pieces`."""
    x, y = _check_knots(x, y, "GCVSpline")
    b, left, right = gcv_spline_pieces(x, y, half_order)
    n, deg = x.size, b.shape[1]
    coef = np.zeros((n + 1, deg))
    coef[0, : left.size] = left
    coef[1:n] = b
    coef[n, : right.size] = right
    anchors = np.concatenate([[x[0]], x[:-1], [x[-1]]])
    breaks = np.concatenate([x[:-1], [np.nextafter(x[-1], np.inf)]])
    return PPData(breaks, anchors, coef)


def pp_piecewise_linear(x, y) -> PPData:
    x, y = _check_knots(x, y, "PiecewiseLinearFunction")
    slope = np.diff(y) / np.diff(x)
    b = np.concatenate([slope, slope[-1:]])
    z = np.zeros_like(b)
    breaks, anchors, coef = _pp_from_cubic(x, y, b, z, z)
    return PPData(breaks, anchors, coef[:, :2])


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
        terms = tuple(terms)
        if not terms or any(t.n_maps != 1 for t in terms):
            raise ValueError("LinearCombination: give one or more single (unstacked) joint maps")
        names: list[str] = []
        for t in terms:
            for c in t.coordinates[0]:
                if c not in names:
                    names.append(c)
        self.terms = terms
        self.weights = jnp.asarray(np.asarray(weights, dtype=float).reshape(1, len(terms)))
        self.offset = jnp.asarray([float(offset)])
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
        exps = multivariate_exponents(len(coords), int(order))
        coefficients = np.asarray(coefficients, dtype=float).ravel()
        if coefficients.size != exps.shape[0]:
            raise ValueError(
                f"MultivariatePolynomialFunction of dimension {len(coords)} and order {order} needs "
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
