"""OpenSim 4.6 ``WrapTorus::wrapLine`` for one path segment, in JAX.

Ports ``WrapTorus::wrapLine``, ``findClosestPoint`` and ``calcCircleResids``
(``OpenSim/Simulation/Wrap/WrapTorus.cpp``).  The torus lies in its frame's xy plane, centred at
the origin; ``outer_radius`` is the radius of its centre circle, ``inner_radius`` the tube radius.

``findClosestPoint`` searches, from each end point in turn (u = 0, u along the unit direction to
the other end), a root of OpenSim's residual

    F(u) = c2 + 2 u - 2 R (2 c4 u + 2 c3) / sqrt(c4 u^2 + 2 c3 u + c5)

(note: this is the u-derivative of the squared distance to a circle of radius 2R, not R; OpenSim's
formula is reproduced as written).  OpenSim minimises F^2 with MINPACK ``lmdif`` (ftol = xtol =
1e-4, forward-difference Jacobian, step bound factor 0.2).  Here the same residual is solved to
convergence by a fixed number of trust-region Newton steps (the 1-D analogue of lmdif: the
Levenberg-Marquardt step in 1-D is the Newton step clipped to the trust radius, which starts at
0.2 in units scaled by |F'| and doubles after good steps / halves after bad ones), with the
implicit-function derivative attached to the converged root.  OpenSim stops at its 1e-4 relative
tolerances, so agreement with OpenSim is limited by where lmdif stopped (and, rarely, by lmdif
settling on a different root); see the validation test for the measured size.

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
from ._result import NO_WRAP, WRAPPED, WrapLine
from .cylinder import _safe_div, _safe_sqrt, _where3, wrap_cylinder

#: ``WrapTorus.cpp`` ``CYL_LENGTH``
CYL_LENGTH = 10000.0
#: trust-region Newton steps of the closest-point search (converges far below lmdif's 1e-4)
NEWTON_STEPS = 40
#: lmdif's initial step bound (``factor``) in |F'|-scaled units
STEP_FACTOR = 0.2


def _circle_resid(u, p1, n, radius):
    """``calcCircleResids`` for the line p1 + u n (n unit) and circle radius ``radius``."""
    c2 = 2.0 * (p1[0] * n[0] + p1[1] * n[1] + p1[2] * n[2])
    c3 = p1[0] * n[0] + p1[1] * n[1]
    c4 = n[0] * n[0] + n[1] * n[1]
    c5 = p1[0] * p1[0] + p1[1] * p1[1]
    g = u * u * c4 + 2.0 * c3 * u + c5
    return c2 + 2.0 * u - 2.0 * radius * _safe_div(2.0 * c4 * u + 2.0 * c3, _safe_sqrt(g))


def _solve_u(p1, n, radius):
    """Root of :func:`_circle_resid` from u = 0 by trust-region Newton (1-D Levenberg-Marquardt)."""
    f = lambda u: _circle_resid(u, p1, n, radius)  # noqa: E731
    df = jax.grad(f)
    u0 = jnp.zeros((), p1.dtype)

    def body(_, carry):
        u, delta, diag = carry
        fu, ju = f(u), df(u)
        diag = jnp.maximum(diag, jnp.abs(ju))
        p_gn = -_safe_div(fu, ju)
        sdiag = jnp.where(diag > 0, diag, 1.0)
        pn = jnp.abs(p_gn) * sdiag
        p = jnp.where(pn <= delta, p_gn, jnp.sign(p_gn) * delta / sdiag)
        fn = f(u + p)
        pred = fu * fu - (fu + ju * p) ** 2
        act = fu * fu - fn * fn
        ratio = _safe_div(act, pred)
        good = (ratio >= 1e-4) & (fu != 0)
        step = jnp.abs(p) * sdiag
        delta = jnp.where(ratio >= 0.75, 2.0 * step, jnp.where(ratio <= 0.25, 0.5 * delta, delta))
        return jnp.where(good, u + p, u), jnp.maximum(delta, jnp.finfo(delta.dtype).tiny), diag

    init = (u0, jnp.asarray(STEP_FACTOR, p1.dtype), jnp.zeros((), p1.dtype))
    u, _, _ = jax.lax.fori_loop(0, NEWTON_STEPS, body, init)
    u = jax.lax.stop_gradient(u)
    # implicit-function derivative at the root: value unchanged, d u = -dF / F'
    corr = -_safe_div(f(u), df(u))
    return u + corr - jax.lax.stop_gradient(corr)


def _pass(pa, pb, radius):
    """One lmdif pass from ``pa`` towards ``pb``: the line point and its distance to the circle."""
    n, _ = normalize_or_zero(pb - pa)
    u = _solve_u(pa, n, radius)
    a = pa + u * n
    x = jax.lax.stop_gradient(a)
    rho = jnp.sqrt(x[0] * x[0] + x[1] * x[1])
    dist = jnp.sqrt(jnp.maximum(jnp.sum(x * x) + radius * radius - 2.0 * radius * rho, 0.0))
    return a, jax.lax.stop_gradient(dist)


def find_closest_point(p1, p2, radius, wrap_axis, wrap_sign):
    """``WrapTorus::findClosestPoint``: (found, closest point on the circle of ``radius``)."""
    a1, dist1 = _pass(p1, p2, radius)
    a2, dist2 = _pass(p2, p1, radius)
    in1 = dsign(a1[wrap_axis]) == wrap_sign
    in2 = dsign(a2[wrap_axis]) == wrap_sign
    closer1 = dist1 < dist2
    first = jnp.where(wrap_sign != 0, jnp.where(in1 & in2, closer1, in1), closer1)
    found = (wrap_sign == 0) | in1 | in2
    a = _where3(first, a1, a2)
    mag = _safe_sqrt(a[0] * a[0] + a[1] * a[1])
    scale = _safe_div(radius, mag)
    return found, jnp.stack([a[0] * scale, a[1] * scale, jnp.zeros_like(mag)])


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
