"""Per-muscle and per-coordinate option values given by name (``weights={"BIClong": 2.0}``)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def by_name(value, names, what: str, kind: str, where: str, default: float):
    """``value`` as one entry per name when it is a dict ``{name: number}`` (``default`` for the names
    it leaves out); any other value is returned unchanged.  Unknown names and non-numbers are refused."""
    if not isinstance(value, dict):
        return value
    names = list(names)
    unknown = [k for k in value if k not in names]
    if unknown:
        raise ValueError(f"{where}: {what} names {unknown}, which are not {kind} of the model; {kind}: {names}")
    entries = []
    for name in names:
        v = value.get(name, default)
        try:
            arr = jnp.asarray(v)
        except (TypeError, ValueError):
            arr = None
        if arr is None or arr.shape != () or not (jnp.issubdtype(arr.dtype, jnp.floating)
                                                  or jnp.issubdtype(arr.dtype, jnp.integer)):
            raise TypeError(f"{where}: {what}[{name!r}] must be a real number, got {type(v).__name__}: {v!r}")
        entries.append(arr)
    return jnp.stack(entries) if entries else jnp.zeros((0,))


class ReversedBoundsError(ValueError, RuntimeError):
    """Bounds with a lower above its upper: a ``ValueError``, and a ``RuntimeError`` as the solver's
    run-time check of the same rule raises."""


def check_bounds_by_name(bounds, names, what: str, kind: str, where: str) -> None:
    """Refuse concrete ``(lower, upper)`` bounds with a lower above its upper (or NaN), naming the entries."""
    try:
        lower, upper = (np.broadcast_to(np.asarray(b, float), (len(names),)) for b in bounds)
    except (TypeError, ValueError):
        return  # traced, or malformed: the solver's own checks name it
    bad = [n for n, lo, hi in zip(names, lower, upper) if not lo <= hi]
    if bad:
        shown = ", ".join(f"{n!r} ({lo:g} > {hi:g})" for n, lo, hi in zip(names, lower, upper) if not lo <= hi)
        raise ReversedBoundsError(f"static optimization: a lower bound ({what} of {where}) is above its upper bound "
                                  f"or NaN for {kind} {shown}")
