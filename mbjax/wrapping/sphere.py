"""One straight path segment over a sphere: OpenSim 4.6 ``WrapSphere::wrapLine`` in JAX.

:func:`wrap_sphere` reproduces the C++ routine branch by branch (each branch a ``jnp.where``), so
it returns OpenSim's code, tangent points and arc length for the same inputs:

1. **inside** -- ``|p1| < R`` or ``|p2| < R``: ``INSIDE``, no path.
2. **intersection** -- the line ``p2 + l (p1 - p2)`` meets the sphere at ``l1 >= l2`` (roots of
   ``a l^2 + b l + c``); unless *both* roots lie in the open interval (0, 1) the code is
   ``NO_WRAP``.  The sphere therefore wraps **only segments that pierce it**; unlike the cylinder
   it never produces a "potential" wrap for a segment that passes beside it, whatever the quadrant.
3. **tangent candidates** -- in the plane through p1, p2 and the centre (normal
   ``n = (p1 - p2)^ x p2^``) each end point has two tangent points
   ``p + (cos a y -+ sin a z)|p| cos a`` with ``sin a = R / |p|``, ``y = -p^``, ``z = n x y``
   (OpenSim's rotation of the frame ``[n y z]`` about x by ``+-a``).  Of the four pairs the one
   with the largest ``r1^ . r2^`` (shortest arc) is taken, with the C++'s strict ``>`` tie order.
4. **constrained quadrant** (``wrap_sign != 0``; axis ``wrap_axis``, ``DSIGN(0) = +1``):

   * if p1 or p2 is on the constrained side: the closest point ``mm`` of the line to the centre
     and its distance ``tt`` *in metres* from p1 towards p2 are computed; ``|mm| < R`` and
     ``0 < tt < 1`` gives ``MANDATORY`` (OpenSim compares the metric ``tt`` with 1, so a pierced
     segment whose closest point is more than 1 m from p1 is not mandatory); otherwise the ends on
     opposite sides with ``mm`` off the constrained side give ``WRAPPED``, anything else returns
     ``NO_WRAP`` at once (no path).
   * if p1 or p2 is off the constrained side: each tangent point is re-chosen as the candidate
     closer to ``-(p1 + p2)^``, both are swapped for the other candidates when
     ``((r1 - p1) + (r2 - p2))^ . (sign e_axis) < 0``, and the wrap is a **far-side** wrap when
     ``(r1 + r2) . ((r1 - p1) + (r2 - p2)) < 0``.
5. **arc** -- ``angle = acos(r1^ . r2^)``; for a far-side wrap OpenSim sets
   ``angle = -(2 pi - angle)``, so the returned ``length = R angle`` is **negative** there (the
   path length OpenSim reports then subtracts the long way round; reproduced as is).

Deviations from the C++ (documented, not reachable by random inputs):

* When ``|(p1 - p2)^ x p2^| < 1e-5`` (the line passes within ~1e-5 rad of the centre) OpenSim
  skips steps 3-4 and reuses the tangent points of the *previous* call stored in the ``PathWrap``
  (state this pure function does not have).  Here the tangent points are computed from the current
  points instead (with the plane normal from the cross product, or any perpendicular of p1 - p2
  when the points are exactly collinear with the centre, where every such plane gives the same
  length); the code is ``WRAPPED`` like OpenSim's and the quadrant logic is skipped like OpenSim's.
* The arc angle ``acos(r1^ . r2^)`` is evaluated as ``atan2(|r1^ x r2^|, r1^ . r2^)``: the same
  angle, accurate for short arcs where OpenSim's ``acos`` loses ``~eps/theta`` (measured: OpenSim's
  arcs deviate from the exact ones by up to 7e-10 m at theta ~ 3e-8 rad; ours by < 1e-15 m), and
  never NaN (OpenSim's ``acos`` is NaN for a round-off cosine ``1 + eps``).

Smoothness of the segment length ``|p1 - r1| + length + |r2 - p2|`` (``|p1 - p2|`` when
``wraps`` is False) in p1, p2 and R:

* Quadrant "all": C-infinity wherever the code stays the same, and **C1 across wrap onset** (the
  line becoming tangent: r1 = r2, zero arc, value and gradient equal the straight line's; the
  gradient jump shrinks linearly with the penetration, see ``tests/test_wrap_sphere.py``).  It is
  only C0 where the line passes **through the centre** (the path switches sides: the pair
  choice of step 3 ties, the length is the minimum of two smooth branches), and it jumps where an
  end point enters the sphere (``INSIDE``: back to the straight line; the tangent length
  ``sqrt(|p|^2 - R^2)`` also has an infinite slope as ``|p| -> R``).
* Constrained quadrant: piecewise C-infinity with **jumps** at every decision of step 4 -- an end
  point crossing the plane ``x_axis = 0`` (changes which rules apply), ``mm`` crossing it or ``tt``
  crossing 1 m when that turns the code into ``NO_WRAP`` (a MANDATORY/WRAPPED change alone keeps
  the length, but can change which segment of a longer path wraps), the candidate re-choice and
  swap (tangent points jump to the other side), and the far-side switch (the arc length jumps by
  ``2 pi R`` with its sign).  With both ends on the constrained side the length is that of
  quadrant "all".

Gradients are finite everywhere (no NaN from unused branches): every ``sqrt``, ``asin``,
``atan2`` and division is guarded on both branches of its ``where``, and the atan2 arc angle has
a finite gradient at zero arc.

``single_wrap`` (OpenSim's ``WrapResult.singleWrap``) is accepted for the common surface signature
and ignored, as ``WrapSphere`` ignores it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._spatial import safe_norm
from ._math import closest_point_on_line, dsign, normalize_or_zero, SIMTK_EPS
from ._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED, WrapLine

#: ``WrapSphere.cpp``: below this ``|(p1 - p2)^ x p2^|`` OpenSim reuses the previous tangent points
NEAR_CENTRE = 1e-5


def _dot(a, b):
    return jnp.sum(a * b, axis=-1)


def _component(v, axis):
    """``v[axis]`` for a traced ``axis`` by selects (exact; no gather/scatter in derivatives)."""
    return jnp.where(axis == 0, v[..., 0], jnp.where(axis == 1, v[..., 1], v[..., 2]))


def _perpendicular(u):
    """A unit vector normal to ``u`` (cross product with the axis least aligned with it)."""
    e = jax.nn.one_hot(jnp.argmin(jnp.abs(u)), 3, dtype=u.dtype)
    return normalize_or_zero(jnp.cross(u, e))[0]


def tangent_candidates(p, radius, n):
    """The two tangent points from ``p`` to the sphere in the plane with normal ``n``.

    ``WrapSphere::wrapLine``: frame ``[n, y, z]`` with ``y = -p^``, ``z = n x y``, rotated about its
    x by ``+a`` and ``-a`` with ``sin a = R/|p|``; the points are
    ``p + (cos a y -+ sin a z)|p| cos a``.  ``cos a = sqrt(1 - sin^2 a)`` replaces OpenSim's
    ``cos(asin(.))`` (equal to round-off; no trigonometric calls).  For ``|p| <= R`` (no tangent;
    unused by the caller) ``a = pi/2`` keeps everything finite.
    """
    pn = safe_norm(p)
    y, _ = normalize_or_zero(-p)
    z = jnp.cross(n, y)
    ratio = radius / jnp.where(pn > 0, pn, 1.0)
    ok = (pn > 0) & (ratio < 1.0)
    s = jnp.where(ok, ratio, 1.0)
    c = jnp.where(ok, jnp.sqrt(jnp.where(ok, 1.0 - ratio * ratio, 1.0)), 0.0)
    reach = pn * c
    ra = p + (c * y - s * z) * reach
    rb = p + (c * y + s * z) * reach
    return ra, rb


def arc_angle(r1n, r2n):
    """OpenSim's ``acos(r1n . r2n)``, evaluated as ``atan2(|r1n x r2n|, r1n . r2n)``.

    The same angle, but accurate to round-off for short arcs, where ``acos`` of a cosine near 1
    loses about ``eps / theta`` (OpenSim's own arc carries that error, up to ~1e-9 m for
    theta ~ 1e-8 rad), and with a finite gradient at theta = 0.  Zero vectors (R = 0) give 0.
    """
    sin_part, cos_part = safe_norm(jnp.cross(r1n, r2n)), _dot(r1n, r2n)
    origin = (sin_part == 0.0) & (cos_part == 0.0)  # atan2'(0, 0) is NaN
    return jnp.where(origin, 0.0, jnp.arctan2(sin_part, jnp.where(origin, 1.0, cos_part)))


def wrap_sphere(p1, p2, radius, wrap_axis, wrap_sign, single_wrap=True):
    """OpenSim's ``WrapSphere::wrapLine`` for the segment p1-p2 (sphere frame, centre at 0).

    Args:
        p1, p2: ``(3,)`` segment end points in the sphere's frame.
        radius: sphere radius.
        wrap_axis: int, 0/1/2 (x/y/z) -- the constrained axis (unused when ``wrap_sign == 0``).
        wrap_sign: int in {-1, 0, +1}; 0 is quadrant "all".
        single_wrap: ``WrapResult.singleWrap`` (ignored by the sphere; kept for the common API).

    Returns:
        :class:`~mbjax.wrapping.WrapLine`.  Without a path, ``r1 = p1``, ``r2 = p2`` and
        ``length = 0``.  See the module docstring for the branches and their smoothness.
    """
    del single_wrap
    p1 = jnp.asarray(p1)
    p2 = jnp.asarray(p2)
    dtype = jnp.result_type(p1, p2, radius, float)
    p1 = p1.astype(dtype)
    p2 = p2.astype(dtype)
    radius = jnp.asarray(radius, dtype)
    wrap_axis = jnp.asarray(wrap_axis, jnp.int32)
    wrap_sign = jnp.asarray(wrap_sign, jnp.int32)

    # 1. inside
    inside = (safe_norm(p1) < radius) | (safe_norm(p2) < radius)

    # 2. does the segment pierce the sphere?  (roots l of |p2 + l (p1 - p2)| = R)
    ri = p1 - p2
    mp = -p2
    a = _dot(ri, ri)
    b = -2.0 * _dot(mp, ri)
    c = _dot(mp, mp) - radius * radius
    disc = b * b - 4.0 * a * c
    pos = disc > 0
    root = jnp.where(pos, jnp.sqrt(jnp.where(pos, disc, 1.0)), 0.0)
    a_ok = a > 0  # a == 0: OpenSim's roots are NaN and every test below fails -> noWrap
    two_a = 2.0 * jnp.where(a_ok, a, 1.0)
    l1 = (-b + root) / two_a
    l2 = (-b - root) / two_a
    pierces = (a_ok & (disc >= 0.0) & (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0)
               & ~(l1 < l2))

    # 3. plane of p1, p2 and the centre; tangent candidates and the shortest-arc pair
    u12, _ = normalize_or_zero(ri)  # OpenSim's normalised p1p2 (points from p2 to p1)
    np2, _ = normalize_or_zero(p2)
    hp2 = jnp.cross(u12, np2)
    near_centre = safe_norm(hp2) < NEAR_CENTRE
    n, nmag = normalize_or_zero(hp2)
    n = jnp.where(nmag >= SIMTK_EPS, n, _perpendicular(u12))

    r1a, r1b = tangent_candidates(p1, radius, n)
    r2a, r2b = tangent_candidates(p2, radius, n)
    r1am, _ = normalize_or_zero(r1a)
    r1bm, _ = normalize_or_zero(r1b)
    r2am, _ = normalize_or_zero(r2a)
    r2bm, _ = normalize_or_zero(r2b)
    j1, j2, j3, j4 = _dot(r1am, r2am), _dot(r1am, r2bm), _dot(r1bm, r2am), _dot(r1bm, r2bm)
    c1 = (j1 > j2) & (j1 > j3) & (j1 > j4)
    c2 = ~c1 & (j2 > j3) & (j2 > j4)
    c3 = ~c1 & ~c2 & (j3 > j4)
    first_a = (c1 | c2)[..., None]   # r1 = r1a (else r1b); the other one is "r11"
    second_a = (c1 | c3)[..., None]  # r2 = r2a (else r2b); the other one is "r22"
    r1 = jnp.where(first_a, r1a, r1b)
    r2 = jnp.where(second_a, r2a, r2b)

    # 4. constrained quadrant
    constrained = (wrap_sign != 0) & ~near_centre
    s1 = dsign(_component(p1, wrap_axis))
    s2 = dsign(_component(p2, wrap_axis))
    either_on = (s1 == wrap_sign) | (s2 == wrap_sign)
    mm, t = closest_point_on_line(jnp.zeros_like(p1), p1, u12)
    tt = -t  # metres from p1 towards p2 (u12 is unit)
    mandatory = (_dot(mm, mm) < radius * radius) & (tt > 0.0) & (tt < 1.0)
    potential = (s1 != s2) & (dsign(_component(mm, wrap_axis)) != wrap_sign)
    gives_up = constrained & either_on & ~mandatory & ~potential

    rechoose = constrained & ((s1 != wrap_sign) | (s2 != wrap_sign))
    axis_vec = jax.nn.one_hot(wrap_axis, 3, dtype=dtype) * wrap_sign.astype(dtype)
    toward, _ = normalize_or_zero(-p1 - p2)
    pick1 = (_dot(r1am, toward) > _dot(r1bm, toward))[..., None]
    pick2 = (_dot(r2am, toward) > _dot(r2bm, toward))[..., None]
    q1, q11 = jnp.where(pick1, r1a, r1b), jnp.where(pick1, r1b, r1a)
    q2, q22 = jnp.where(pick2, r2a, r2b), jnp.where(pick2, r2b, r2a)
    musc, _ = normalize_or_zero((q1 - p1) + (q2 - p2))
    flip = (_dot(musc, axis_vec) < 0.0)[..., None]
    q1, q2 = jnp.where(flip, q11, q1), jnp.where(flip, q22, q2)
    far_side = rechoose & (_dot(q1 + q2, (q1 - p1) + (q2 - p2)) < 0.0)
    r1 = jnp.where(rechoose[..., None], q1, r1)
    r2 = jnp.where(rechoose[..., None], q2, r2)

    # codes, in OpenSim's order of early returns
    quadrant_code = jnp.where(mandatory, MANDATORY, jnp.where(potential, WRAPPED, NO_WRAP))
    code = jnp.where(
        inside, INSIDE,
        jnp.where(~pierces, NO_WRAP,
                  jnp.where(constrained & either_on, quadrant_code, WRAPPED))).astype(jnp.int32)
    has_path = ~inside & pierces & ~gives_up

    # 5. arc on the great circle through r1, r2
    r1n, _ = normalize_or_zero(r1)
    r2n, _ = normalize_or_zero(r2)
    angle = arc_angle(r1n, r2n)
    angle = jnp.where(far_side, angle - 2.0 * jnp.pi, angle)
    length = jnp.where(has_path, radius * angle, 0.0)
    r1 = jnp.where(has_path[..., None], r1, p1)
    r2 = jnp.where(has_path[..., None], r2, p2)
    return WrapLine(code=code, has_path=has_path, r1=r1, r2=r2, length=length)
