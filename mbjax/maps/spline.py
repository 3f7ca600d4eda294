"""Natural cubic spline in one coordinate (Ehsani §3-3, pre-modelling of closed chains).

The seed sweeps a closed chain's generalized coordinate with a fixed step, solves the loop at
every step and interpolates each joint variable with a natural cubic spline; differentiating the
spline gives ∇f and H (Eq. 100 ff. use them).  Here the spline is stored by its knots ``x`` and
knot values ``y`` (both differentiable array leaves); the knot second derivatives ``M`` come from
the natural-spline tridiagonal system (``M_0 = M_{n-1} = 0``), solved inside :meth:`local` with
``lax.linalg.tridiagonal_solve`` (O(n), differentiable).  On ``[x_i, x_{i+1}]``, with
``h = x_{i+1} - x_i``, ``t = x - x_i``, ``u = x_{i+1} - x``::

    S(x) = α_i y_i + α_{i+1} y_{i+1} + β_i M_i + β_{i+1} M_{i+1}
    α_i = u/h,  α_{i+1} = t/h,  β_i = (u³/h - h u)/6,  β_{i+1} = (t³/h - h t)/6

and S', S'' follow from the closed-form derivatives of α, β (no autodiff).

Range policies (outside ``[x_0, x_{n-1}]``): ``"error"`` (default), ``"clamp"`` (end value, zero
derivatives), ``"extrapolate"`` (linear continuation with the end slope: a natural spline has zero
curvature at its ends, so this continuation is C²) and ``"nan"``.

Maps with different knot counts stack by padding: padded knots continue beyond the last knot,
their rows of the tridiagonal system are the identity (``M = 0``) and the interval search is
clipped to each map's own knots, so padding never changes a value.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, check_policy, range_guard, range_label, samples_1d

# ------------------------------------------------------------------------------------------------
# shared helpers (also used by the tensor-product bicubic spline)
# ------------------------------------------------------------------------------------------------


def _is_concrete(*arrays) -> bool:
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


def check_knots(x, family: str, name: str = "x") -> np.ndarray:
    """Validate a concrete knot vector: 1-D, at least 2 finite, strictly increasing values."""
    xn = np.asarray(x, dtype=float)
    if xn.ndim != 1 or xn.shape[0] < 2:
        raise ValueError(f"{family}: knots {name} must be a 1-D array of >= 2 values, got shape {xn.shape}")
    if not np.all(np.isfinite(xn)):
        raise ValueError(f"{family}: knots {name} must be finite")
    if np.any(np.diff(xn) <= 0):
        bad = int(np.argmin(np.diff(xn)))
        raise ValueError(
            f"{family}: knots {name} must be strictly increasing (x[{bad}]={xn[bad]}, "
            f"x[{bad + 1}]={xn[bad + 1]})"
        )
    return xn


def pad_knots(x, n_max: int):
    """Pad a ``(n,)`` knot vector to ``n_max`` with knots continuing beyond the last one."""
    x = jnp.asarray(x)
    n = x.shape[0]
    if n == n_max:
        return x
    span = x[-1] - x[0]
    extra = x[-1] + span * jnp.arange(1, n_max - n + 1, dtype=x.dtype)
    return jnp.concatenate([x, extra])


def natural_second_derivatives(knots, values, sizes: Sequence[int]):
    """Knot second derivatives ``M`` of natural cubic splines, batched over a stack.

    ``knots`` ``(n_maps, N)`` (padded), ``values`` ``(n_maps, N, P)`` (``P`` splines sharing the
    knots of each map), ``sizes`` the static true knot counts.  Rows ``0`` and ``n-1`` (and all
    padded rows) are ``M = 0``; interior rows are the classical continuity equations
    ``h_{r-1} M_{r-1} + 2 (h_{r-1} + h_r) M_r + h_r M_{r+1} = 6 (Δ_r - Δ_{r-1})``, ``Δ = Δy/h``.
    """
    n_maps, big_n = knots.shape
    dtype = knots.dtype
    rows = np.arange(big_n)[None, :]
    sizes_np = np.asarray(sizes)[:, None]
    interior = (rows >= 1) & (rows <= sizes_np - 2)  # (n_maps, N), static
    if big_n < 3 or not interior.any():
        return jnp.zeros_like(values)
    h = jnp.diff(knots, axis=1)  # (n_maps, N-1)
    one = jnp.ones((n_maps, 1), dtype)
    h_prev = jnp.concatenate([one, h], axis=1)  # h_{r-1}
    h_next = jnp.concatenate([h, one], axis=1)  # h_r
    slope = jnp.diff(values, axis=1) / h[:, :, None]  # (n_maps, N-1, P)
    zero = jnp.zeros((n_maps, 1, values.shape[2]), values.dtype)
    s_prev = jnp.concatenate([zero, slope], axis=1)
    s_next = jnp.concatenate([slope, zero], axis=1)
    mask = jnp.asarray(interior)
    dl = jnp.where(mask, h_prev, 0.0)
    du = jnp.where(mask, h_next, 0.0)
    d = jnp.where(mask, 2.0 * (h_prev + h_next), 1.0)
    rhs = jnp.where(mask[:, :, None], 6.0 * (s_next - s_prev), 0.0)
    return jax.lax.linalg.tridiagonal_solve(dl, d, du, rhs)


def knot_interval(knots, sizes: Sequence[int], x):
    """Interval index ``i`` (``x_i <= x < x_{i+1}``, clipped to each map's knots) for ``x`` ``(n_maps,)``."""
    idx = jax.vmap(lambda k, v: jnp.searchsorted(k, v, side="right"))(knots, x) - 1
    upper = jnp.asarray(np.asarray(sizes) - 2, dtype=idx.dtype)
    return jnp.clip(idx, 0, upper)


def end_knots(knots, sizes: Sequence[int]):
    """First and last true knot of every map of a stack, ``(n_maps,)`` each."""
    last = knots[np.arange(knots.shape[0]), np.asarray(sizes) - 1]
    return knots[:, 0], last


def cubic_basis(knots, sizes: Sequence[int], x, policy: str, family: str):
    """Local cardinal functions of natural cubic spline interpolation and their derivatives.

    For inputs ``x`` ``(n_maps,)`` returns ``(idx, basis, inside)`` where ``idx`` is the interval,
    ``basis = (a, b, da, db, dda, ddb)`` each of shape ``(n_maps, 2)`` (entries for knots
    ``idx`` and ``idx + 1``): the spline is ``Σ a y + b M``, its derivative ``Σ da y + db M`` and its
    second derivative ``Σ dda y + ddb M``.  The out-of-range policy is applied to the basis:
    ``extrapolate`` continues it linearly beyond the end knots, ``clamp`` freezes it at the end
    (zero derivatives), ``nan`` poisons it, ``error`` raises via ``eqx.error_if``.
    """
    lo, hi = end_knots(knots, sizes)
    x, inside = range_guard(x, lo, hi, policy, family)
    xc = jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))  # gradient 1 at the ends, unlike clip
    dx = x - xc
    idx = knot_interval(knots, sizes, xc)
    xl = jnp.take_along_axis(knots, idx[:, None], axis=1)[:, 0]
    xr = jnp.take_along_axis(knots, idx[:, None] + 1, axis=1)[:, 0]
    h = xr - xl
    t = xc - xl
    u = xr - xc
    a = jnp.stack([u / h, t / h], -1)
    da = jnp.stack([-1.0 / h, 1.0 / h], -1)
    dda = jnp.zeros_like(a)
    b = jnp.stack([(u**3 / h - h * u) / 6.0, (t**3 / h - h * t) / 6.0], -1)
    db = jnp.stack([(h - 3.0 * u**2 / h) / 6.0, (3.0 * t**2 / h - h) / 6.0], -1)
    ddb = jnp.stack([u / h, t / h], -1)
    out = inside[:, None]
    if policy == "extrapolate":
        a = a + da * dx[:, None]
        b = b + db * dx[:, None]
        ddb = jnp.where(out, ddb, 0.0)
    elif policy == "clamp":
        da, db = jnp.where(out, da, 0.0), jnp.where(out, db, 0.0)
        ddb = jnp.where(out, ddb, 0.0)
    elif policy == "nan":
        nan = jnp.asarray(jnp.nan, a.dtype)
        a, b, da, db, dda, ddb = (jnp.where(out, v, nan) for v in (a, b, da, db, dda, ddb))
    return idx, (a, b, da, db, dda, ddb), inside


def pick(array, idx):
    """``array[m, idx[m]]`` and ``array[m, idx[m] + 1]`` stacked as ``(n_maps, 2, ...)``."""
    rows = np.arange(array.shape[0])
    return jnp.stack([array[rows, idx], array[rows, idx + 1]], axis=1)


def _new(cls, **fields):
    """Instance of an ``eqx.Module`` subclass from its field values, bypassing ``__init__``."""
    obj = object.__new__(cls)
    for k, v in fields.items():
        object.__setattr__(obj, k, v)
    return obj


# ------------------------------------------------------------------------------------------------
# the family
# ------------------------------------------------------------------------------------------------


class NaturalCubicSpline(AbstractJointMap):
    """Interpolating natural cubic spline ``f(x)`` through knots ``x`` (strictly increasing) and ``y``.

    Closed-form f, f', f'' (stored as ∇f ``(n_maps, 1)`` and H ``(n_maps, 1, 1)``).  Array leaves:
    ``knots`` and ``values`` ``(n_maps, N)``; static: ``sizes`` (true knot counts), ``policy``.
    """

    knots: jnp.ndarray
    values: jnp.ndarray
    sizes: tuple[int, ...] = eqx.field(static=True)
    policy: str = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 1

    def __init__(self, coordinate, x, y, policy: str = "error"):
        self.coordinates = (as_coordinates(coordinate, 1, "NaturalCubicSpline"),)
        self.policy = check_policy(policy)
        if _is_concrete(x):
            check_knots(x, "NaturalCubicSpline")
        if _is_concrete(y) and not np.all(np.isfinite(np.asarray(y, dtype=float))):
            raise ValueError("NaturalCubicSpline: knot values y must be finite")
        x = jnp.asarray(x, dtype=float)
        y = jnp.asarray(y, dtype=float)
        if x.ndim != 1 or y.shape != x.shape or x.shape[0] < 2:
            raise ValueError(
                f"NaturalCubicSpline: need 1-D x and y of equal length >= 2, got {x.shape} and {y.shape}"
            )
        self.knots = x[None]
        self.values = y[None]
        self.sizes = (int(x.shape[0]),)

    # -- evaluation ---------------------------------------------------------------------------
    def second_derivatives(self):
        """Knot second derivatives M ``(n_maps, N)`` (zero at both ends: the natural condition)."""
        return natural_second_derivatives(self.knots, self.values[:, :, None], self.sizes)[:, :, 0]

    def guarded_inputs(self, x):
        lo, hi = end_knots(self.knots, self.sizes)
        return x[:, :1], lo[:, None], hi[:, None]

    def local(self, x):
        x = x[:, 0]
        m = self.second_derivatives()
        idx, (a, b, da, db, dda, ddb), _ = cubic_basis(
            self.knots, self.sizes, x, self.policy, "NaturalCubicSpline" + range_label(self.coordinates)
        )
        y2 = pick(self.values, idx)
        m2 = pick(m, idx)
        f = jnp.sum(a * y2 + b * m2, axis=-1)
        g = jnp.sum(da * y2 + db * m2, axis=-1)
        h = jnp.sum(dda * y2 + ddb * m2, axis=-1)
        return f, g[:, None], h[:, None, None]

    # -- stacking -----------------------------------------------------------------------------
    def group_key(self):
        return (type(self), self.policy)

    @classmethod
    def stack(cls, maps: Sequence["NaturalCubicSpline"]) -> "NaturalCubicSpline":
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        if len({m.policy for m in maps}) != 1:
            raise ValueError("NaturalCubicSpline: cannot stack maps with different policies")
        sizes = tuple(s for m in maps for s in m.sizes)
        n_max = max(sizes)
        knots, values = [], []
        for m in maps:
            for r, s in enumerate(m.sizes):
                knots.append(pad_knots(m.knots[r, :s], n_max))
                values.append(jnp.pad(m.values[r, :s], (0, n_max - s)))
        return _new(
            cls,
            knots=jnp.stack(knots),
            values=jnp.stack(values),
            sizes=sizes,
            policy=maps[0].policy,
            coordinates=tuple(c for m in maps for c in m.coordinates),
        )

    def select(self, index: int) -> "NaturalCubicSpline":
        s = self.sizes[index]
        return _new(
            type(self),
            knots=self.knots[index : index + 1, :s],
            values=self.values[index : index + 1, :s],
            sizes=(s,),
            policy=self.policy,
            coordinates=(self.coordinates[index],),
        )

    # -- fitting ------------------------------------------------------------------------------
    @classmethod
    def fit(cls, coordinate, x, y, policy: str = "error", smoothing=None) -> "NaturalCubicSpline":
        """Spline from samples ``(x, y)`` (sorted here; duplicate abscissae are an error).

        ``smoothing=None``: interpolation (knots = samples).  ``smoothing=λ >= 0`` (or ``"gcv"``):
        the natural cubic *smoothing* spline minimising ``Σ (y_i - f(x_i))² + λ ∫ f''²``
        (``scipy.interpolate.make_smoothing_spline``; ``"gcv"`` picks λ by generalized
        cross-validation); it is a natural cubic spline with knots at the samples, stored here by
        its values there.
        """
        x, y = samples_1d(x, y, "NaturalCubicSpline.fit")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise ValueError("NaturalCubicSpline.fit: samples must be finite")
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        check_knots(x, "NaturalCubicSpline.fit")
        if smoothing is not None:
            from scipy.interpolate import make_smoothing_spline

            lam = None if (isinstance(smoothing, str) and smoothing == "gcv") else _smoothing(smoothing)
            y = make_smoothing_spline(x, y, lam=lam)(x)
        return cls(coordinate, x, y, policy=policy)


def _smoothing(value) -> float:
    """``smoothing=λ`` of :meth:`NaturalCubicSpline.fit` as a finite float >= 0, else refused by name."""
    numeric = not isinstance(value, (str, bool, np.bool_)) and np.ndim(value) == 0
    try:
        lam = float(value) if numeric else None
    except (TypeError, ValueError):
        lam = None
    if lam is None or not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"NaturalCubicSpline.fit: smoothing must be None (interpolate), a finite number >= 0 (the "
                         f"weight λ of ∫ f''²) or 'gcv', got {value!r}")
    return lam
