"""OpenSim 4.6 ``WrapTorus::wrapLine`` for one path segment, in JAX.

Ports ``WrapTorus::wrapLine``, ``findClosestPoint`` and ``calcCircleResids``
(``OpenSim/Simulation/Wrap/WrapTorus.cpp``).  The torus lies in its frame's xy plane, centred at
the origin; ``outer_radius`` is the radius of its centre circle, ``inner_radius`` the tube radius.

``findClosestPoint`` searches, from each end point in turn (u = 0, u along the unit direction to
the other end), a root of OpenSim's residual

    F(u) = c2 + 2 u - 2 R (2 c4 u + 2 c3) / sqrt(c4 u^2 + 2 c3 u + c5)

(note: this is the u-derivative of the squared distance to a circle of radius 2R, not R; OpenSim's
formula is reproduced as written).  OpenSim minimises F^2 with MINPACK ``lmdif`` (ftol = xtol =
1e-4, forward-difference Jacobian, step bound factor 0.2).  Here the same MINPACK iteration is
run step for step (:func:`~mbjax.wrapping._lmdif.lmdif1`, the 1-D case of ``lmdif``: same
forward-difference step, trust region, tests and counts), so mbjax stops where OpenSim stops and
the tangent points agree to round-off (full MoBL, 11 tori: path lengths within 1e-13 m of OpenSim
4.6 at 32 random poses, ``tests/validation/test_wrapping_opensim.py``).  Derivatives are those
of the stopped iterate itself (:func:`_solve_u`: forward mode through the iteration), not of the
root of F: lmdif stops on its relative tolerances (1e-4), at times where F(u*) is far from 0.

Of the two candidates the closer one to the torus circle is kept (constrained: the one on the
``wrap_sign`` side of ``wrap_axis``; neither -> ``noWrap``).  A cylinder of radius
``inner_radius`` and length 10000 is put tangent to the circle at that closest point (its x axis
towards the torus centre, y = -z_torus, quadrant +x) and :func:`~mbjax.wrapping.cylinder.wrap_cylinder`
wraps the segment over it.

``WrapTorus::wrapLine`` returns ``wrapped`` whenever a closest point was found, even when the
inner cylinder wrap failed (end point inside, no wrap): then ``code`` is ``WRAPPED`` but
``has_path`` is False (OpenSim inserts no wrap points because the wrap path is empty).
The torus-internal cylinder has no model, so its tangent adjustment follows ``single_wrap``
exactly like a model cylinder's (see :mod:`mbjax.wrapping.cylinder`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._math import dsign, normalize_or_zero
from ._jacobian_rule import iterate_rule
from ._lmdif import div, lmdif1, rounded
from ._result import NO_WRAP, WRAPPED, WrapLine
from .cylinder import _where3, wrap_cylinder

#: ``WrapTorus.cpp`` ``CYL_LENGTH``
CYL_LENGTH = 10000.0
#: ``findClosestPoint``'s lmdif settings (``ftol``, ``xtol``, ``gtol``, ``max_iter`` = maxfev,
#: ``step_factor``; ``epsfcn = 0`` is ignored by OpenSim's ``fdjac2``)
LMDIF_FTOL = 1e-4
LMDIF_XTOL = 1e-4
LMDIF_GTOL = 0.0
LMDIF_MAXFEV = 500
LMDIF_FACTOR = 0.2


def _circle_resid(u, p1, n, radius):
    """``calcCircleResids`` for the line p1 + u n (n unit) and circle radius ``radius``, in
    OpenSim's operation order."""
    r_ = rounded  # every product is rounded before it is added (no FMA), as in OpenSim's binary
    c3 = r_(p1[0] * n[0]) + r_(p1[1] * n[1])
    c2 = 2.0 * (c3 + r_(p1[2] * n[2]))
    c4 = r_(n[0] * n[0]) + r_(n[1] * n[1])
    c5 = r_(p1[0] * p1[0]) + r_(p1[1] * p1[1])
    g = r_(u * u * c4) + r_(2.0 * c3 * u) + c5
    num = 2.0 * radius * (r_(2.0 * c4 * u) + 2.0 * c3)
    return c2 + 2.0 * u - div(num, jnp.sqrt(g))


def _direction(pa, pb):
    """(pb - pa) / |pb - pa| as ``findClosestPoint`` computes it (component-wise division by
    ``sqrt(dx*dx + dy*dy + dz*dz)``); a zero-length segment gives 0 (OpenSim: NaN)."""
    d = pb - pa
    mag2 = rounded(d[0] * d[0]) + rounded(d[1] * d[1]) + rounded(d[2] * d[2])
    pos = mag2 > 0
    mag = jnp.sqrt(jnp.where(pos, mag2, 1.0))
    # one division per component: XLA turns ``vector / broadcast(scalar)`` into a multiplication by
    # the rounded reciprocal, which is not C's correctly rounded quotient
    return jnp.where(pos, jnp.stack([div(d[0], mag), div(d[1], mag), div(d[2], mag)]), 0.0)


def _lmdif_u(p1, n, radius):
    """OpenSim's lmdif from u = 0 on :func:`_circle_resid`: its stopped iterate u*."""
    u, _, _ = lmdif1(lambda v: _circle_resid(v, p1, n, radius), jnp.zeros((), p1.dtype), LMDIF_FTOL,
                     LMDIF_XTOL, LMDIF_GTOL, LMDIF_MAXFEV, LMDIF_FACTOR)
    return u


#: u*(p1, n, R) with the derivative of the stopped iterate, forward mode through every step lmdif
#: takes (its branch decisions held), in forward and reverse mode (:func:`~._jacobian_rule.iterate_rule`).
#: lmdif stops on relative reductions (ftol = xtol = 1e-4), also where F(u*) != 0 with F'(u*)
#: small, so -dF/F' (the derivative of a root of F) is not the derivative of u* there.
_solve_u = iterate_rule(_lmdif_u)


def _pass(pa, pb, radius):
    """One lmdif pass from ``pa`` towards ``pb``: the line point and its (stop-gradient) squared
    distance to the circle, ``x² + y² + z² + R² - 2 R sqrt(x² + y²)`` in OpenSim's order."""
    n = _direction(pa, pb)
    u = _solve_u(pa, n, radius)
    a = pa + rounded(u * n)
    x = jax.lax.stop_gradient(a)
    r = jax.lax.stop_gradient(radius)
    rho2 = rounded(x[0] * x[0]) + rounded(x[1] * x[1])
    dist2 = rho2 + rounded(x[2] * x[2]) + rounded(r * r) - rounded(2.0 * r * jnp.sqrt(rho2))
    return a, dist2


def find_closest_point(p1, p2, radius, wrap_axis, wrap_sign):
    """``WrapTorus::findClosestPoint``: (found, closest point on the circle of ``radius``)."""
    # both passes as one batch of two (one lmdif loop to compile)
    a12, s12 = jax.vmap(_pass, (0, 0, None))(jnp.stack([p1, p2]), jnp.stack([p2, p1]), radius)
    a1, a2, s1, s2 = a12[0], a12[1], s12[0], s12[1]
    in1 = dsign(a1[wrap_axis]) == wrap_sign
    in2 = dsign(a2[wrap_axis]) == wrap_sign
    # OpenSim compares sqrt(s1) < sqrt(s2): false when either is NaN (s < 0 by round-off)
    ok1, ok2 = s1 >= 0.0, s2 >= 0.0
    d1 = jnp.sqrt(jnp.where(ok1, s1, 0.0))
    d2 = jnp.sqrt(jnp.where(ok2, s2, 0.0))
    closer1 = ok1 & ok2 & (d1 < d2)
    first = jnp.where(wrap_sign != 0, jnp.where(in1 & in2, closer1, in1), closer1)
    found = (wrap_sign == 0) | in1 | in2
    a = _where3(first, a1, a2)
    mag2 = rounded(a[0] * a[0]) + rounded(a[1] * a[1])
    pos = mag2 > 0
    mag = jnp.sqrt(jnp.where(pos, mag2, 1.0))
    xc = jnp.where(pos, div(a[0] * radius, mag), 0.0)
    yc = jnp.where(pos, div(a[1] * radius, mag), 0.0)
    return found, jnp.stack([xc, yc, jnp.zeros_like(mag)])


def wrap_torus(p1, p2, inner_radius, outer_radius, wrap_axis, wrap_sign, single_wrap) -> WrapLine:
    """OpenSim ``WrapTorus::wrapLine`` of segment p1-p2 in the torus frame (see module docstring).

    Returns a :class:`WrapLine`; ``r1``, ``r2`` are in the torus frame.  ``code`` is ``WRAPPED``
    whenever a closest point is found (as in OpenSim), ``has_path`` whether the inner cylinder
    produced a path; without one ``r1 = p1``, ``r2 = p2``, ``length = 0``.
    """
    p1 = jnp.asarray(p1)
    p2 = jnp.asarray(p2)
    dtype = jnp.result_type(p1, p2, inner_radius, outer_radius, float)
    p1 = p1.astype(dtype)
    p2 = p2.astype(dtype)
    inner_radius = jnp.asarray(inner_radius, dtype)
    outer_radius = jnp.asarray(outer_radius, dtype)
    wrap_axis = jnp.asarray(wrap_axis, jnp.int32)
    wrap_sign = jnp.asarray(wrap_sign, jnp.int32)

    found, closest = find_closest_point(p1, p2, outer_radius, wrap_axis, wrap_sign)
    closest = -closest
    xa, _ = normalize_or_zero(closest)
    zero = jnp.zeros((), dtype)
    ya = jnp.stack([zero, zero, -jnp.ones((), dtype)])
    za = jnp.cross(xa, ya)
    rot = jnp.stack([xa, ya, za])  # rows: cylinder axes in the torus frame
    origin = rot @ closest
    q1 = rot @ p1 + origin
    q2 = rot @ p2 + origin
    cyl = wrap_cylinder(q1, q2, inner_radius, CYL_LENGTH, 0, 1, single_wrap)
    has_path = found & cyl.has_path
    r1 = rot.T @ (cyl.r1 - origin)
    r2 = rot.T @ (cyl.r2 - origin)
    return WrapLine(
        code=jnp.where(found, WRAPPED, NO_WRAP).astype(jnp.int32),
        has_path=has_path,
        r1=_where3(has_path, r1, p1),
        r2=_where3(has_path, r2, p2),
        length=jnp.where(has_path, cyl.length, 0.0),
    )
