"""Per-muscle and per-coordinate option values given by name (``weights={"BIClong": 2.0}``)."""

from __future__ import annotations

import warnings

import jax
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
    """Bounds with a lower above its upper: a ``ValueError``, and a ``RuntimeError`` as the
    solver's run-time check of the same rule raises."""


class InvalidWeightsError(ValueError, RuntimeError):
    """Muscle weights that are not finite and > 0: a ``ValueError``, and a ``RuntimeError`` as the
    solver's run-time check of the same rule raises."""


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


#: muscle weights spanning more than this ratio leave the solver's dual Newton polish unconverged
WEIGHT_SPREAD = 1e3


def _concrete(x, n: int):
    """``x`` broadcast to ``(n,)`` floats, or None when traced or malformed (checked elsewhere)."""
    if x is None or isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.broadcast_to(np.asarray(x, float), (n,))
    except (TypeError, ValueError):
        return None


def warn_unusual_muscle_options(weights, activation_bounds, muscles, where: str) -> None:
    """Refuse concrete weights that are not finite and > 0, and warn, naming the muscles, about concrete options that OpenSim-like problems accept but that
    look like a slip: activation bounds outside [0, 1] (percent?), weights spanning more than
    :data:`WEIGHT_SPREAD` (the solver may stop unconverged on a feasible frame)."""
    muscles = list(muscles)
    try:
        lower, upper = (_concrete(b, len(muscles)) for b in activation_bounds)
    except (TypeError, ValueError):
        lower = upper = None
    if lower is not None and upper is not None:
        out = [f"{n!r} ({lo:g}, {hi:g})" for n, lo, hi in zip(muscles, lower, upper) if lo < 0 or hi > 1]
        if out:
            warnings.warn(f"{where}: activation_bounds outside [0, 1] for muscles {', '.join(out[:8])}"
                          + (" ..." if len(out) > 8 else "") + ": an activation above 1 asks a muscle for more "
                          "than its maximum force, below 0 makes it push (percent? activations are fractions); "
                          "solved anyway", UserWarning, stacklevel=4)
    w = _concrete(weights, len(muscles))
    if w is not None and not np.all(np.isfinite(w) & (w > 0)):
        bad = ", ".join(f"{n!r} ({v:g})" for n, v in zip(muscles, w) if not (np.isfinite(v) and v > 0))
        raise InvalidWeightsError(f"static optimization: weights must be finite and > 0 (a weight of 0 leaves that "
                                  "muscle's activation free, with no single solution; give a small positive weight "
                                  f"instead): muscles {bad} in {where}")
    if w is not None and np.all(np.isfinite(w)) and np.all(w > 0) and w.max() > WEIGHT_SPREAD * w.min():
        small = [f"{n!r} ({v:g})" for n, v in zip(muscles, w) if w.max() > WEIGHT_SPREAD * v]
        warnings.warn(f"{where}: weights span more than a factor {WEIGHT_SPREAD:g} (smallest: {', '.join(small[:8])}; "
                      f"largest {w.max():g}): the solver may stop unconverged (converged=False, a residual) on a "
                      "feasible frame; keep the weights within that factor", UserWarning, stacklevel=4)
