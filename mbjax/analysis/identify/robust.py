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

from ..._checks import all_of, broadcasts_to, not_finite, real_array


def huber_residual(r, delta):
    """r̃ with ½ r̃² = Huber ρ_δ(r) (see module): ``r`` real residuals (any shape), ``delta`` the
    threshold, one finite number > 0.  NaN/inf in ``r`` (or a traced ``delta`` out of range) raise at
    run time (checks on)."""
    r = real_array(r, "huber_residual: r must be an array of real residuals",
                   "huber_residual: r must hold real residuals")
    d = real_array(delta, "huber_residual: delta must be a number (the Huber threshold, > 0)",
                   "huber_residual: delta must be a real number (the Huber threshold, > 0)", show_value=True)
    if d.ndim != 0:
        raise ValueError(f"huber_residual: delta must be one number (the Huber threshold, > 0), got shape "
                         f"{tuple(d.shape)}; weight the residuals instead for a threshold per residual")
    rules = [not_finite(r, "huber_residual: r")]
    v = _concrete(d)
    if v is not None:
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"huber_residual: delta must be a finite number > 0 (the residual size beyond which "
                             f"the loss grows linearly), got {delta!r}")
    else:
        rules.append((~(jnp.isfinite(d) & (d > 0)), "huber_residual: delta must be a finite number > 0"))
    return all_of(_huber(r, d), rules)


def _huber(r, delta):
    """:func:`huber_residual` unchecked (``delta`` checked when the data term is built)."""
    a = jnp.abs(r)
    inside = a <= delta
    outer = jnp.sqrt(jnp.maximum(2.0 * delta * a - delta**2, delta**2))
    return jnp.where(inside, r, jnp.sign(r) * outer)


def finish(r, weights=None, huber=None):
    """Apply ``weights`` (broadcast to ``r``), then Huber with threshold ``huber``; flatten."""
    if weights is not None:
        r = r * weights
    if huber is not None:
        r = _huber(r, huber)
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
    if not broadcasts_to(w.shape, shape):
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
