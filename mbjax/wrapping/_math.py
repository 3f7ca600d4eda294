"""Line and plane helpers of OpenSim's ``WrapMath``, in JAX (single points; vmap for batches).

Each mirrors the C++ routine of the same name, including its tolerances (``LINE_EPSILON``,
``ROUNDOFF_ERROR``) and its zero-vector conventions, so that the surfaces built on them reproduce
OpenSim's branch decisions.  All are grad-safe: no ``sqrt(0)`` or division by zero on any branch.
"""

from __future__ import annotations

import jax.numpy as jnp

from .._spatial import safe_norm

#: ``WrapMath.cpp``'s tolerance for segment/plane tests
LINE_EPSILON = 1e-5
#: ``SimmMacros.h`` ``ROUNDOFF_ERROR`` (``EQUAL_WITHIN_ERROR``)
ROUNDOFF_ERROR = 2e-13
#: ``SimTK::Eps`` for double (``NormalizeOrZero``)
SIMTK_EPS = 2.220446049250313e-16


def dsign(a):
    """``DSIGN``: +1 for ``a >= 0`` (zero included), -1 otherwise (int32)."""
    return jnp.where(a >= 0.0, 1, -1).astype(jnp.int32)


def normalize_or_zero(v):
    """``NormalizeOrZero``: (v / |v|, |v|), or (0, |v|) when |v| < SimTK::Eps."""
    mag = safe_norm(v)
    ok = mag >= SIMTK_EPS
    unit = jnp.where(ok[..., None], v / jnp.where(ok, mag, 1.0)[..., None], 0.0)
    return unit, mag


def distance_squared(a, b):
    """``CalcDistanceSquaredBetweenPoints``."""
    d = a - b
    return jnp.sum(d * d, axis=-1)


def distance_squared_point_to_line(point, line_point, line):
    """``CalcDistanceSquaredPointToLine`` (``line`` need not be unit)."""
    n, _ = normalize_or_zero(line)
    v = line_point - point
    w = v - jnp.sum(v * n, axis=-1, keepdims=True) * n
    return jnp.sum(w * w, axis=-1)


def closest_point_on_line(pt, line_point, line):
    """``GetClosestPointOnLineToPoint``: (closest point, t) with t measured in units of |line|."""
    v1, mag = normalize_or_zero(pt - line_point)
    v2, mag2 = normalize_or_zero(line)
    t = jnp.sum(v1 * v2, axis=-1) * mag
    closest = line_point + t[..., None] * v2
    return closest, t / jnp.where(mag2 > 0, mag2, 1.0)


def intersect_lines(p1, p2, p3, p4):
    """``IntersectLines``: closest points of lines p1p2 and p3p4.

    Returns ``(ok, p_int1, s, p_int2, t)`` with ``p_int1 = p1 + s (p2 - p1)`` and
    ``p_int2 = p3 + t (p4 - p3)``; for (near-)parallel lines ``ok`` is False and s, t are NaN (as
    in OpenSim; callers must select around them) and the points are p1 and p3.
    """
    vec1, mag1 = normalize_or_zero(p2 - p1)
    vec2, mag2 = normalize_or_zero(p4 - p3)
    cross = jnp.cross(vec1, vec2)
    denom = jnp.sum(cross * cross, axis=-1)
    ok = jnp.abs(denom) > ROUNDOFF_ERROR
    safe_denom = jnp.where(ok, denom, 1.0)
    d = p3 - p1
    t = jnp.linalg.det(jnp.stack([d, vec1, cross], axis=-2)) / safe_denom
    s = jnp.linalg.det(jnp.stack([d, vec2, cross], axis=-2)) / safe_denom
    p_int2 = p3 + jnp.where(ok, t, 0.0)[..., None] * vec2
    p_int1 = p1 + jnp.where(ok, s, 0.0)[..., None] * vec1
    s = jnp.where(ok, s / jnp.where(mag1 > 0, mag1, 1.0), jnp.nan)
    t = jnp.where(ok, t / jnp.where(mag2 > 0, mag2, 1.0), jnp.nan)
    return ok, p_int1, s, p_int2, t


def intersect_segment_plane(pt1, pt2, normal, d):
    """``IntersectLineSegPlane``: where segment pt1pt2 meets the plane n·x + d = 0.

    Returns ``(ok, point)``; ``ok`` is False when the segment is parallel to the plane (within
    ``LINE_EPSILON``) or the intersection lies beyond its ends (with the same slack).
    """
    vec = pt2 - pt1
    dot = jnp.sum(vec * normal, axis=-1)
    par = jnp.abs(dot) < LINE_EPSILON
    t = (-d - jnp.sum(normal * pt1, axis=-1)) / jnp.where(par, 1.0, dot)
    ok = ~par & (t >= -LINE_EPSILON) & (t <= 1.0 + LINE_EPSILON)
    return ok, pt1 + jnp.where(ok, t, 0.0)[..., None] * vec


def seeded(x, like):
    """``x`` unchanged in value, but carrying a (zero) derivative and batch axis wherever ``like`` does.

    Loop carries that start as constants (zeros, inf) and get a derivative inside the loop make
    ``jvp`` and ``vmap`` of ``lax.fori_loop``/``lax.cond`` retrace the loop body until the carries'
    derivative (batching) pattern is stable, once more per nesting level; seeding the initial value
    with ``like``'s pattern makes the first trace the last.  The select's predicate is constant
    ``False``: the value is exactly ``x`` (no ``0 * like``, so an inf or NaN in ``like`` cannot leak).
    """
    src = jnp.broadcast_to(jnp.reshape(like, (-1,))[0].astype(x.dtype), x.shape)
    return jnp.where(jnp.zeros(x.shape, bool), src, x)
