"""The abstract empirical joint map (Ehsani §3-1: every joint variable is f_i(q)).

A map *family* is one ``eqx.Module`` holding a **stack** of ``n_maps`` maps: every array leaf has a
leading axis of length ``n_maps`` (padded where maps differ in size), so a 30-body model evaluates
all maps of one family in one vectorised call instead of one traced call per joint.

Each map reads ``k`` of the model's generalized coordinates, named in ``coordinates`` (a static
tuple per map).  The family implements :meth:`local`, which returns the value, gradient and
Hessian **in closed form** with respect to those ``k`` local inputs.  The model scatters them into
the full ``(nq,)`` gradient ∇f_i and ``(nq, nq)`` Hessian H_i (Eq. 75, 89 consume them).

Out-of-range policy (for families fitted on a range): ``"error"`` (default: raise at run time via
``eqx.error_if``), ``"clamp"`` (hold the end value, zero derivatives), ``"extrapolate"`` (the
family's natural continuation, e.g. linear beyond a natural spline's ends) or ``"nan"``.
A silent wrong value is never the default.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks

RANGE_POLICIES = ("error", "clamp", "extrapolate", "nan")


def check_policy(policy: str) -> str:
    if policy not in RANGE_POLICIES:
        raise ValueError(f"out-of-range policy {policy!r} is not one of {RANGE_POLICIES}")
    return policy


def as_coordinates(coordinates, arity: int | None, family: str) -> tuple[str, ...]:
    """Normalise a coordinate name or sequence of names and check the family's arity."""
    if isinstance(coordinates, str):
        coordinates = (coordinates,)
    try:
        coordinates = tuple(coordinates)
    except TypeError:  # an index (0) or None
        raise ValueError(f"{family}: the coordinate must be a name (str) or a sequence of names, got "
                         f"{type(coordinates).__name__} {coordinates!r}") from None
    if not all(isinstance(c, str) for c in coordinates):
        raise ValueError(f"{family}: coordinates must be names (str), got {coordinates!r}")
    if arity is not None and len(coordinates) != arity:
        raise ValueError(
            f"{family} reads exactly {arity} coordinate(s), got {len(coordinates)}: {coordinates}"
        )
    return tuple(str(c) for c in coordinates)


def is_concrete(*arrays) -> bool:
    """No argument is a tracer (construction-time value checks run only on concrete values)."""
    return not any(isinstance(leaf, jax.core.Tracer) for a in arrays for leaf in jax.tree.leaves(a))


def real_param(value, family: str, name: str, shape=None, what: str = ""):
    """``value`` as a float array: real, of ``shape`` (``None`` entries match any size) and, when
    concrete, free of NaN and inf; else ``TypeError`` / ``ValueError`` naming ``family`` and ``name``."""
    arr = _checks.real_array(value, f"{family}: {name} must be a real number or array",
                             f"{family}: {name} must be real")
    arr = jnp.asarray(arr, dtype=float)
    if shape is not None and (arr.ndim != len(shape) or any(s is not None and a != s
                                                            for a, s in zip(arr.shape, shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"{family}: {name} must have shape {want}{what}, got {tuple(arr.shape)}")
    if is_concrete(arr) and not np.all(np.isfinite(np.asarray(arr))):
        raise ValueError(f"{family}: {name} must be finite (no NaN or inf), got {np.asarray(arr).tolist()}")
    return arr


def samples_1d(x, y, where: str, x_name: str = "x", y_name: str = "y"):
    """Samples ``x, y`` as float vectors of one length; a 2-D ``y`` (several curves) is refused, never flattened."""
    out = []
    for name, v in ((x_name, x), (y_name, y)):
        try:
            arr = np.asarray(v, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{where}: {name} must be a 1-D array of numbers, got {type(v).__name__}") from None
        if arr.ndim != 1:
            size = f" of length len({x_name})" if name == y_name else ""
            raise ValueError(f"{where}: {name} must be 1-D{size} (one curve), got shape {arr.shape}; fit each "
                             "column separately")
        out.append(arr)
    if out[0].shape != out[1].shape:
        raise ValueError(f"{where}: {x_name} and {y_name} differ in length ({out[0].size} and {out[1].size} values)")
    return out[0], out[1]


def check_bounds(lower, upper, family: str, strict: bool = False):
    """Concrete range ends: no NaN, ``lower <= upper`` (``<`` when ``strict``), element-wise."""
    if not is_concrete(lower, upper):
        return
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
        raise ValueError(f"{family}: the range [lower, upper] holds NaN: lower {lo.tolist()}, upper {hi.tolist()}")
    bad = (lo >= hi) if strict else (lo > hi)
    if np.any(bad):
        raise ValueError(f"{family}: need lower {'<' if strict else '<='} upper, got lower {lo.tolist()}, "
                         f"upper {hi.tolist()} (bounds the wrong way round?)")


class AbstractJointMap(eqx.Module):
    """A stack of empirical joint maps f(q) of one family with closed-form ∇f and H."""

    coordinates: eqx.AbstractVar[tuple[tuple[str, ...], ...]]

    #: number of coordinates one map reads (``None``: any number, padded to the widest map)
    arity: ClassVar[int | None] = None

    @abc.abstractmethod
    def local(self, x):
        """Closed-form value, gradient and Hessian for local inputs ``x`` of shape ``(n_maps, k)``.

        Returns ``f (n_maps,)``, ``g (n_maps, k)``, ``h (n_maps, k, k)``.
        """

    def value(self, x):
        """Map value only, ``(n_maps,)``; differentiated by autodiff in the cross-check tests."""
        return self.local(x)[0]

    def guarded_inputs(self, x):
        """The range-checked quantities at local inputs ``x (n_maps, k)``, or ``None``.

        ``(values, lower, upper)``, each ``(n_maps, m)``: what this family's out-of-range policy
        compares (the inputs themselves for a spline; ``u = A x + b`` for :class:`Composed`).
        ``None`` for families without a fitted range.  Read by :func:`mbjax.range_violations`.
        """
        return None

    @property
    def n_maps(self) -> int:
        return len(self.coordinates)

    @property
    def width(self) -> int:
        """Number of local inputs ``k`` (the widest map of the stack)."""
        return max((len(c) for c in self.coordinates), default=0)

    def group_key(self):
        """Maps with equal keys can be stacked into one module (same family and static options)."""
        statics = []
        for field in dataclasses.fields(self):
            if field.metadata.get("static", False) and field.name != "coordinates":
                statics.append((field.name, getattr(self, field.name)))
        return (type(self), tuple(statics))

    @classmethod
    def stack(cls, maps: Sequence["AbstractJointMap"]) -> "AbstractJointMap":
        """Concatenate maps of this family along the leading axis.

        The default works when every array leaf has the same trailing shape; families whose maps
        differ in size (knots, harmonics, coordinates) override it and pad.
        """
        maps = list(maps)
        if len(maps) == 1:
            return maps[0]
        keys = {m.group_key() for m in maps}
        if len(keys) != 1:
            raise ValueError(f"cannot stack maps with different options: {keys}")
        dyn = [eqx.filter(m, eqx.is_array) for m in maps]
        _, static = eqx.partition(maps[0], eqx.is_array)
        joined = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=0), *dyn)
        out = eqx.combine(joined, static)
        return replace_fields(out, coordinates=tuple(c for m in maps for c in m.coordinates))

    def select(self, index: int) -> "AbstractJointMap":
        """The ``index``-th map of the stack, as a stack of one."""
        sl = slice(index, index + 1)
        dyn, static = eqx.partition(self, eqx.is_array)
        dyn = jax.tree.map(lambda a: a[sl], dyn)
        out = eqx.combine(dyn, static)
        return replace_fields(out, coordinates=(self.coordinates[index],))

    def __call__(self, x):
        """Value, gradient and Hessian at local inputs ``x (n_maps, k)``; accepts ``(k,)`` for a single map.

        ``k`` is :attr:`width`; a wrong shape raises ``ValueError``, NaN or inf in ``x`` a run-time
        error (checks on)."""
        family, k, n = type(self).__name__, self.width, self.n_maps
        x = _checks.real_array(x, f"{family}: x must be a real array", f"{family}: x must be real")
        coords = self.coordinates if n > 1 else self.coordinates[0]
        if not ((x.ndim == 2 and x.shape == (n, k)) or (x.ndim == 1 and n == 1 and x.shape == (k,))):
            single = f"({k},) or " if n == 1 else ""
            raise ValueError(f"{family}: x must have shape {single}(n_maps, k) = ({n}, {k}) (the local inputs "
                             f"{coords}), got {tuple(x.shape)}")
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            x = x.astype(float)
        x = _checks.finite(x, f"{family}: x", f" (coordinates {coords})")
        if x.ndim == 1:
            f, g, h = self.local(x[None])
            return f[0], g[0], h[0]
        return self.local(x)


def replace_fields(module, **changes):
    """Copy of an ``eqx.Module`` with some fields (static ones included) replaced, bypassing ``__init__``."""
    new = object.__new__(type(module))
    for field in dataclasses.fields(module):
        object.__setattr__(new, field.name, changes.get(field.name, getattr(module, field.name)))
    return new


def local_index(coordinates: Sequence[Sequence[str]], names: Sequence[str], width: int) -> np.ndarray:
    """Integer ``(n_maps, width)`` positions of each map's coordinates in ``names``.

    Maps narrower than ``width`` are padded with their first coordinate (their padded
    coefficients are zero, so the padding contributes nothing).
    """
    pos = {n: i for i, n in enumerate(names)}
    out = np.zeros((len(coordinates), max(width, 1)), dtype=np.int32)
    for m, coords in enumerate(coordinates):
        for c in coords:
            if c not in pos:
                raise ValueError(f"joint map reads coordinate {c!r}, which is not one of {tuple(names)}")
        idx = [pos[c] for c in coords] or [0]
        idx = idx + [idx[0]] * (out.shape[1] - len(idx))
        out[m] = idx
    return out


def evaluate_global(family: AbstractJointMap, index: np.ndarray, q):
    """Evaluate a family on the full coordinate vector: ``f (n,)``, ``∇f (n, nq)``, ``H (n, nq, nq)``."""
    nq = q.shape[0]
    x = q[index]
    f, g, h = family.local(x)
    n, k = index.shape
    rows = np.arange(n)[:, None]
    grad = jnp.zeros((n, nq), f.dtype).at[rows, index].add(g)
    rows3 = np.arange(n)[:, None, None]
    hess = jnp.zeros((n, nq, nq), f.dtype).at[rows3, index[:, :, None], index[:, None, :]].add(h)
    return f, grad, hess


def range_label(coordinates) -> str:
    """The coordinates a stack of maps reads, for an out-of-range message: `` of 'a', 'b'`` (at most 8)."""
    names = list(dict.fromkeys(c for cs in coordinates for c in cs))
    return (" of " + ", ".join(repr(n) for n in names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            if names else "")


def range_guard(x, lower, upper, policy: str, family: str):
    """Apply an out-of-range policy to local inputs.

    Returns ``(x_eval, inside)``: the inputs at which to evaluate and a boolean mask of the inputs
    that lay inside ``[lower, upper]`` (a relative slack of 1e-12 of the span forgives rounding).
    ``family`` names the maps in the error (e.g. ``"NaturalCubicSpline" + range_label(coordinates)``).
    """
    span = jnp.abs(upper - lower)
    # a half-infinite range has an infinite span: its slack must stay finite
    tol = 1e-12 * jnp.maximum(jnp.where(jnp.isfinite(span), span, 1.0), 1.0)
    inside = (x >= lower - tol) & (x <= upper + tol)
    if policy == "error":
        x = eqx.error_if(
            x,
            ~inside,
            f"{family}: coordinate outside the fitted range (policy 'error'; use 'clamp', "
            "'extrapolate' or 'nan' to allow it). mbjax.range_violations(model, q) at that pose names the "
            "joint, coordinate, value and range (a simulation: run it with throw=False or to an earlier t1 "
            "for the states it reached)",
        )
        return x, inside
    if policy == "clamp":
        return jnp.clip(x, lower, upper), inside
    return x, inside
