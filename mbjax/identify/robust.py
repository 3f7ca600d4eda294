"""Weights and the Huber loss on residuals (shared by every data term).

:func:`huber_residual` returns r̃ with ½ r̃² = ρ_δ(r), Huber's loss
ρ_δ(r) = ½ r² for |r| ≤ δ and δ (|r| − ½ δ) beyond:  r̃ = r inside, sign(r) √(2δ|r| − δ²) outside,
so Gauss-Newton and Levenberg-Marquardt minimise the Huber loss as a least-squares problem
(continuous with its first derivative at |r| = δ; the square root's argument is ≥ δ² there, so
gradients stay finite).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def huber_residual(r, delta):
    """r̃ with ½ r̃² = Huber ρ_δ(r) (see module)."""
    a = jnp.abs(r)
    inside = a <= delta
    outer = jnp.sqrt(jnp.maximum(2.0 * delta * a - delta**2, delta**2))
    return jnp.where(inside, r, jnp.sign(r) * outer)


def finish(r, weights=None, huber=None):
    """Apply ``weights`` (broadcast to ``r``), then Huber with threshold ``huber``; flatten."""
    if weights is not None:
        r = r * weights
    if huber is not None:
        r = huber_residual(r, huber)
    return jnp.ravel(r)


def _concrete(x):
    """``x`` as a numpy array, or None when it is traced."""
    try:
        return np.asarray(x)
    except Exception:  # a tracer
        return None


def options(weights, huber, shape, dims: str, builder: str):
    """``weights`` (None, or an array that broadcasts to the residuals' ``shape`` without changing it:
    finite, >= 0, not all zero) and ``huber`` (None, or a finite number > 0), checked when the data
    term is built; returns ``weights`` as an array."""
    shape = tuple(int(n) for n in shape)
    if huber is not None:
        h = _concrete(huber)
        if np.ndim(huber) != 0:
            raise ValueError(f"{builder}: huber must be a number (the Huber threshold, > 0), got shape {np.shape(huber)}")
        if h is not None and not (np.isfinite(h) and h > 0):
            raise ValueError(f"{builder}: huber must be a finite number > 0 (the residual size beyond which the loss "
                             f"grows linearly), got {huber!r}; pass huber=None for least squares")
    if weights is None:
        return None
    w = jnp.asarray(weights)
    try:
        ok = np.broadcast_shapes(tuple(w.shape), shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{builder}: weights has shape {tuple(w.shape)}, which does not broadcast to the residuals "
                         f"{dims} = {shape}; give one weight per residual, per trailing axis (e.g. per column), or "
                         "a scalar (a weight per sample: weights[:, None])")
    v = _concrete(w)
    if v is not None:
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{builder}: weights holds NaN or inf")
        if np.any(v < 0):
            k = tuple(int(i) for i in np.argwhere(v < 0)[0])
            raise ValueError(f"{builder}: weights must be >= 0, got {float(v[k])!r} at index {k}")
        if v.size and not np.any(v):
            raise ValueError(f"{builder}: weights are all zero: nothing to fit (a zero weight drops a sample; "
                             "keep some weights > 0)")
    return w


def measured(x, name: str, dims: tuple[str, ...]):
    """A data array of ``len(dims)`` axes (first: samples), refused when it is empty or holds NaN/inf.

    Checked once, when the data term is built (never per step): a NaN sample would otherwise turn
    the fit into a "solver failure", an empty one into a "converged" start."""
    if x is None:
        return None
    arr = jnp.asarray(x)
    shape = "(" + ", ".join(dims) + ")"
    if arr.ndim != len(dims):
        raise ValueError(f"{name} must have shape {shape}, got {tuple(arr.shape)}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} holds no samples ({dims[0]} = 0): nothing to fit")
    if not isinstance(arr, jax.core.Tracer):
        bad = ~np.isfinite(np.asarray(arr))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} holds {int(bad.sum())} NaN or inf value(s), the first at index {where} "
                             f"(sample {where[0]}); drop or fill those samples")
    return arr


def same_samples(**arrays) -> None:
    """Every data array has the same number of samples (first axis)."""
    n = {k: int(v.shape[0]) for k, v in arrays.items() if v is not None}
    if len(set(n.values())) > 1:
        raise ValueError("data arrays hold different numbers of samples: "
                         + ", ".join(f"{k} {v}" for k, v in n.items()))


def residual(predicted, target, name: str, what: str):
    """``predicted - target`` with equal shapes (checked when traced: no broadcast)."""
    if predicted.shape != target.shape:
        raise ValueError(f"{name} has shape {tuple(target.shape)} but the model predicts {what} of shape "
                         f"{tuple(predicted.shape)}: one column per model coordinate/muscle, in the model's order")
    return predicted - target
