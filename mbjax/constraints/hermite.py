"""Piecewise cubic Hermite trajectories q(t), q̇(t), q̈(t) (the seed's Fig. 4 and 8 drive signals)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import _checks


def hermite(t, knots, values, slopes):
    """Piecewise cubic Hermite interpolant through ``values`` with ``slopes`` at ``knots``.

    ``knots (K,)`` increasing, ``values``/``slopes`` ``(K,)`` or ``(K, n)``.  Returns ``(q, q̇, q̈)``
    at ``t`` (scalar); ``t`` outside the knots is clamped (value held, derivatives zero there).
    """
    kn = np.asarray(_checks.real_array(knots, "hermite: knots must be a real array", "hermite: knots must be real"))
    if kn.ndim != 1 or kn.shape[0] < 2:
        raise ValueError(f"hermite: knots must be a 1-D array of >= 2 times, got shape {kn.shape}")
    if not np.all(np.isfinite(kn)) or np.any(np.diff(kn) <= 0):
        raise ValueError("hermite: knots must be finite and strictly increasing")
    knots = jnp.asarray(kn)
    values = _checks.real_array(values, "hermite: values must be a real array", "hermite: values must be real")
    slopes = _checks.real_array(slopes, "hermite: slopes must be a real array", "hermite: slopes must be real")
    for name, a in (("values", values), ("slopes", slopes)):
        if a.ndim not in (1, 2) or a.shape[0] != kn.shape[0]:
            raise ValueError(f"hermite: {name} must have shape (K,) or (K, n) with K = {kn.shape[0]} knots, "
                             f"got {a.shape}")
    if values.shape != slopes.shape:
        raise ValueError(f"hermite: values and slopes must have the same shape, got {values.shape} and {slopes.shape}")
    t = _checks.real_array(t, "hermite: t must be a real scalar", "hermite: t must be real")
    if t.ndim != 0:
        raise ValueError(f"hermite: t must be a scalar time (jax.vmap over times), got shape {t.shape}")
    t = _checks.all_of(t, [_checks.not_finite(t, "hermite: t"), _checks.not_finite(values, "hermite: values"),
                           _checks.not_finite(slopes, "hermite: slopes")])
    inside = (t >= knots[0]) & (t <= knots[-1])
    tc = jnp.clip(t, knots[0], knots[-1])
    k = jnp.clip(jnp.searchsorted(knots, tc, side="right") - 1, 0, knots.shape[0] - 2)
    h = knots[k + 1] - knots[k]
    s = (tc - knots[k]) / h
    p0, p1, m0, m1 = values[k], values[k + 1], slopes[k] * h, slopes[k + 1] * h
    h00, h10, h01, h11 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s, -2 * s**3 + 3 * s**2, s**3 - s**2
    d00, d10, d01, d11 = 6 * s**2 - 6 * s, 3 * s**2 - 4 * s + 1, -6 * s**2 + 6 * s, 3 * s**2 - 2 * s
    e00, e10, e01, e11 = 12 * s - 6, 6 * s - 4, -12 * s + 6, 6 * s - 2
    q = h00 * p0 + h10 * m0 + h01 * p1 + h11 * m1
    qd = (d00 * p0 + d10 * m0 + d01 * p1 + d11 * m1) / h
    qdd = (e00 * p0 + e10 * m0 + e01 * p1 + e11 * m1) / h**2
    return q, jnp.where(inside, qd, 0.0), jnp.where(inside, qdd, 0.0)
