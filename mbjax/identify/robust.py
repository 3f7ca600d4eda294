"""Weights and the Huber loss on residuals (shared by every data term).

:func:`huber_residual` returns r̃ with ½ r̃² = ρ_δ(r), Huber's loss
ρ_δ(r) = ½ r² for |r| ≤ δ and δ (|r| − ½ δ) beyond:  r̃ = r inside, sign(r) √(2δ|r| − δ²) outside,
so Gauss-Newton and Levenberg-Marquardt minimise the Huber loss as a least-squares problem
(continuous with its first derivative at |r| = δ; the square root's argument is ≥ δ² there, so
gradients stay finite).
"""

from __future__ import annotations

import jax.numpy as jnp


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
