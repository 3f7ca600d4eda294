"""Element-wise parametrizations of fitted leaves: free vector θ ↔ leaf values.

A parametrization maps an unconstrained vector ``θ`` to the values of the leaves that
:func:`mbjax.analysis.identify.fit` changes, so an optimizer never leaves the admissible set and nothing
is clipped.  Each one implements

* ``free(value) -> θ`` (1-D), the inverse map at the starting point;
* ``value(θ, value) -> value``, the leaves for ``θ`` (entries not selected keep ``value``'s);
* ``names(info) -> list[str]``, one name per entry of ``θ`` (see :class:`LeafInfo`).

``index`` selects entries of the leaf with NumPy indexing on its shape (``None``: all): e.g.
``Positive(index=[1, 2])`` fits the masses of bodies 1 and 2 only, ``Identity(index=np.s_[:, 0])``
the first column.  Spline coefficients are fitted at fixed knots by selecting the coefficient leaf
(``where=lambda m: m.maps[k].coef``) and not its ``breaks``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class LeafInfo:
    """Name of a selected leaf (``"mass"``, ``"maps[1].coef"``) and labels of its axes.

    ``labels[k]`` names the entries along axis ``k`` (body names, ``x y z``) or is ``None``
    (numbers are used).  :func:`entry_name` formats one entry: ``com[forearm,y]``.
    """

    name: str
    shape: tuple[int, ...]
    labels: tuple[Any, ...] = ()

    def entry(self, idx: tuple[int, ...]) -> str:
        if not idx:
            return self.name
        parts = []
        for k, i in enumerate(idx):
            lab = self.labels[k] if k < len(self.labels) else None
            parts.append(str(lab[i]) if lab is not None and i < len(lab) else str(i))
        return f"{self.name}[{','.join(parts)}]"


@dataclasses.dataclass(frozen=True)
class _ArrayIndex:
    """A hashable stand-in for a list / array index (static fields must hash)."""

    values: tuple
    shape: tuple

    def array(self):
        return np.asarray(self.values).reshape(self.shape)


def _hashable_index(index):
    if isinstance(index, (list, np.ndarray)):
        a = np.asarray(index)
        return _ArrayIndex(tuple(a.ravel().tolist()), a.shape)
    return index


def _positions(shape, index) -> np.ndarray:
    """Flat positions of the entries of a leaf of ``shape`` selected by ``index``."""
    if isinstance(index, _ArrayIndex):
        index = index.array()
    pos = np.arange(int(np.prod(shape, dtype=int))).reshape(shape)
    return np.asarray(pos if index is None else pos[index]).ravel()


class Parametrization(eqx.Module):
    """Base class; ``group = True`` for parametrizations of several leaves at once."""

    group: ClassVar[bool] = False

    def bind(self, value, info):
        """Resolve names/defaults against the leaf (``info``: :class:`LeafInfo` or a tuple of them)."""
        return self

    def free(self, value) -> jnp.ndarray:
        raise NotImplementedError

    def value(self, theta, value):
        raise NotImplementedError

    def names(self, info) -> list[str]:
        raise NotImplementedError


def _checked_positions(param, shape, index, name, what="entries") -> np.ndarray:
    """:func:`_positions`, refusing an index that selects nothing, repeats an entry or does not index ``shape``."""
    if isinstance(index, _ArrayIndex) and not index.values:
        raise ValueError(f"{type(param).__name__}: index [] selects no {what} of {name} (shape {shape})")
    try:
        pos = _positions(shape, index)
    except (IndexError, TypeError, ValueError) as err:
        raise ValueError(f"{type(param).__name__}: index {_shown(index)} does not index {name} of shape {shape} "
                         f"({err})") from None
    if pos.size == 0:
        raise ValueError(f"{type(param).__name__}: index {_shown(index)} selects no {what} of {name} (shape {shape})")
    if np.unique(pos).size != pos.size:
        raise ValueError(f"{type(param).__name__}: index {_shown(index)} selects some {what} of {name} more than once")
    return pos


def _shown(index):
    return index.array().tolist() if isinstance(index, _ArrayIndex) else index


class _Elementwise(Parametrization):
    index: Any = eqx.field(static=True, default=None, converter=_hashable_index)

    def bind(self, value, info):
        _checked_positions(self, tuple(np.shape(value)), self.index, info.name)
        return self

    def _pos(self, value):
        return _positions(jnp.shape(value), self.index)

    def _to(self, x):  # value entries -> θ
        return x

    def _from(self, t):  # θ -> value entries
        return t

    def free(self, value):
        return self._to(jnp.ravel(value)[self._pos(value)])

    def value(self, theta, value):
        flat = jnp.ravel(value).at[self._pos(value)].set(self._from(theta).astype(jnp.result_type(value)))
        return flat.reshape(jnp.shape(value))

    def names(self, info):
        return [info.entry(tuple(int(i) for i in np.unravel_index(p, info.shape))) for p in _positions(info.shape, self.index)]


class Identity(_Elementwise):
    """θ = the selected entries themselves."""


class Positive(_Elementwise):
    """θ = log(value): masses, lengths, stiffnesses and damping stay > 0 (the start must be > 0)."""

    def bind(self, value, info):
        pos = _checked_positions(self, tuple(np.shape(value)), self.index, info.name)
        if not isinstance(value, jax.core.Tracer):
            x = np.ravel(np.asarray(value))[pos]
            bad = ~(np.isfinite(x) & (x > 0))
            if bad.any():
                names = [info.entry(tuple(int(i) for i in np.unravel_index(p, info.shape))) for p in pos[bad]]
                raise ValueError("Positive: the starting values must be finite and > 0, got "
                                 + ", ".join(f"{n} = {float(v)!r}" for n, v in zip(names, x[bad])))
        return self

    def free(self, value):
        x = jnp.ravel(value)[self._pos(value)]
        if not isinstance(x, jax.core.Tracer) and not np.all(np.asarray(x) > 0):
            raise ValueError(f"Positive: the starting values must be finite and > 0, got {np.asarray(x)}")
        return jnp.log(x)

    def _from(self, t):
        return jnp.exp(t)


class Symmetric(Parametrization):
    """Symmetric ``(..., 3, 3)`` tensors (inertias): θ = the upper triangles of the selected
    matrices (``index`` selects along the leading axes), written back to both triangles."""

    index: Any = eqx.field(static=True, default=None, converter=_hashable_index)

    def bind(self, value, info):
        shape = tuple(np.shape(value))
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"Symmetric parametrizes stacks of square matrices (..., n, n) (e.g. m.inertia); "
                             f"{info.name} has shape {shape}")
        _checked_positions(self, shape[:-2], self.index, info.name, "matrices")
        return self

    def _mats(self, value):
        return _positions(jnp.shape(value)[:-2], self.index)

    def free(self, value):
        n = value.shape[-1]
        iu = np.triu_indices(n)
        mats = jnp.reshape(value, (-1, n, n))[self._mats(value)]
        return mats[:, iu[0], iu[1]].ravel()

    def value(self, theta, value):
        n = value.shape[-1]
        iu = np.triu_indices(n)
        sel = self._mats(value)
        t = theta.reshape(len(sel), -1).astype(value.dtype)
        m = jnp.zeros((len(sel), n, n), value.dtype).at[:, iu[0], iu[1]].set(t)
        m = m + jnp.swapaxes(m, 1, 2) - m * jnp.eye(n, dtype=value.dtype)
        flat = jnp.reshape(value, (-1, n, n)).at[sel].set(m)
        return flat.reshape(value.shape)

    def names(self, info):
        lead = info.shape[:-2]
        n = info.shape[-1]
        iu = np.triu_indices(n)
        out = []
        for p in _positions(lead, self.index):
            idx = tuple(int(i) for i in np.unravel_index(p, lead))
            out += [info.entry(idx + (int(a), int(b))) for a, b in zip(*iu)]
        return out
