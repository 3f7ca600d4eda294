"""The iterations of OpenSim 4.6's ``WrapEllipsoid``, in JAX, for :mod:`~mbjax.wrapping.ellipsoid`.

``findClosestPoint`` / ``closestPointToEllipse`` (Eberly, Graphics Gems IV: Newton on a polynomial)
and ``calcTangentPoint`` (damped Gauss-Newton), each reproduced step by step with OpenSim's counts
and stopping tests and differentiated as it runs; the module docstring of
:mod:`~mbjax.wrapping.ellipsoid` gives the algorithm.  Also the grad-safe arithmetic the ellipsoid's
modules share.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ._jacobian_rule import iterate_rule
from ._lane_loop import lane_while_loop
from .._spatial import safe_div, safe_norm, safe_sqrt
from ._math import ROUNDOFF_ERROR, normalize_or_zero

ELLIPSOID_TOLERANCE_1 = 1e-4
ELLIPSOID_TINY = 1e-8
#: Newton steps and stopping test of ``findClosestPoint`` / ``closestPointToEllipse``
NEWTON_STEPS = 64
NEWTON_TOL = 1e-9
#: of those, the steps run unrolled before the loop (projections converge in 8-13 measured)
NEWTON_UNROLLED = 12
#: ``calcTangentPoint``'s iteration limits
TANGENT_MAXIT = 50
TANGENT_MAXIT2 = 1000


def _dot(a, b):
    return jnp.sum(a * b, axis=-1)


# ----------------------------------------------------------------------------------------------
# closest points (Graphics Gems IV)
# ----------------------------------------------------------------------------------------------
def _ellipse_special(a, b, u, v):
    """``closestPointToEllipse``'s closed forms for u or v within ``ROUNDOFF_ERROR`` of 0.

    Returns ``(x, y)`` for the case ``u ~ 0 and v ~ 0``, ``u ~ 0`` or ``v ~ 0`` (as the caller
    selects), choosing among them by the same tests as the C++.
    """
    a2, b2 = a * a, b * b
    near_x = jnp.abs(u) <= ROUNDOFF_ERROR
    near_y = jnp.abs(v) <= ROUNDOFF_ERROR
    # both near 0
    bx = jnp.where(a < b, jnp.where(u < 0.0, -a, a), u)
    by = jnp.where(a < b, v, jnp.where(v < 0.0, -b, b))
    # u == 0
    cx1 = (a >= b) | (jnp.abs(v) >= b - a2 / b)
    yy = b2 * v / jnp.where(cx1, 1.0, b2 - a2)
    ydb = yy / b
    nx_x = jnp.where(cx1, u, a * safe_sqrt(jnp.abs(1.0 - ydb * ydb)))
    nx_y = jnp.where(cx1, jnp.where(v >= 0, b, -b), yy)
    # v == 0
    cy1 = (b >= a) | (jnp.abs(u) >= a - b2 / a)
    xx = a2 * u / jnp.where(cy1, 1.0, a2 - b2)
    xda = xx / a
    ny_x = jnp.where(cy1, jnp.where(u >= 0, a, -a), xx)
    ny_y = jnp.where(cy1, v, b * safe_sqrt(jnp.abs(1.0 - xda * xda)))
    x = jnp.where(near_x & near_y, bx, jnp.where(near_x, nx_x, ny_x))
    y = jnp.where(near_x & near_y, by, jnp.where(near_x, nx_y, ny_y))
    return near_x | near_y, x, y


def _polynomial(t, c, kk, s):
    """Eberly's polynomial in t and its derivative, 2-D and 3-D in one form.

    ``P, Q = t + c0, t + c1`` and ``R = s t + c2``: ``f = P²Q²R² - k0 Q²R² - k1 P²R² - k2 P²Q²``.
    3-D: ``s = 1``, ``c = a²``, ``k = a²u²``.  The plane's ellipse: ``s = 0``, ``c2 = 1``, ``k2 = 0``,
    which is ``P²Q² - a²u²Q² - b²v²P²`` (the products by 1 and 0 are exact, so its iterates are
    those of the 2-D formula).  Returns ``f, f', (P, Q, R)``.
    """
    pn, qn, rn = t + c[0], t + c[1], s * t + c[2]
    pp, qq, rr = pn * pn, qn * qn, rn * rn
    f = pp * qq * rr - kk[0] * qq * rr - kk[1] * pp * rr - kk[2] * pp * qq
    pq_, pr_, qr_ = pn * qn, pn * rn, qn * rn
    fp = 2.0 * (pn * qn * rn * (qr_ + pr_ + s * pq_) - kk[0] * qr_ * (s * qn + rn)
                - kk[1] * pr_ * (s * pn + rn) - kk[2] * pq_ * (pn + qn))
    return f, fp, jnp.stack([pn, qn, rn])


def _newton_step(st, c, kk, s):
    """One Newton step; a converged iteration is left unchanged."""
    t, pqr, done, n = st
    f, fp, pqrn = _polynomial(t, c, kk, s)
    conv = jnp.abs(f) < NEWTON_TOL
    pqr = jnp.where(done, pqr, pqrn)
    t = jnp.where(done | conv, t, t - safe_div(f, fp, jnp.inf))
    return t, pqr, done | conv, n + 1


def _newton_more(st, c, kk, s):
    """Go on while not converged, at most ``NEWTON_STEPS``."""
    return ~st[2] & (st[3] < NEWTON_STEPS)


def _newton_iterate(t, c, kk, s):
    """The Newton iteration of :func:`_closest_point` from t: the last (P, Q, R) and whether it
    converged (1.0 / 0.0).  ``s`` is 1.0 for the 3-D problem, 0.0 for a plane's ellipse."""
    st = (t, jnp.ones(3, t.dtype), jnp.zeros((), bool), jnp.zeros((), jnp.int32))
    consts = (c, kk, s)
    for _ in range(NEWTON_UNROLLED):  # straight-line steps XLA fuses; most projections stop here
        st = _newton_step(st, *consts)
    # under vmap the few projections still iterating finish apart (lane_while_loop), not all of them
    _, pqr, ok, _ = lane_while_loop(_newton_more, _newton_step, st, consts)
    return pqr, ok.astype(t.dtype)


#: the projections' Newton iterations, differentiated as they run (the iterate's derivative; a
#: projection that has not met ``|f| < 1e-9`` is not a root), forward and reverse mode
_newton = iterate_rule(_newton_iterate)


def _closest_point(a, dims, uvw, special, previous):
    """``findClosestPoint(a, b, c, u, v, w, &x, &y, &z, specialCaseAxis)`` (Eberly).

    ``special`` (int): -1 = OpenSim's default: a coordinate within ``ROUNDOFF_ERROR`` of 0 reduces
    the problem to that coordinate plane's ellipse (the smallest radii sum ``dims`` wins, first axis
    on ties), else the 3-D problem; 0..2 = that plane's ellipse (``closestPointToEllipse``).  The
    Newton iteration on Eberly's polynomial in t (:func:`_polynomial`, the 2-D or the 3-D one, the
    only one that runs) takes 64 steps at most and stops at ``|f| < 1e-9``; the 2-D one then uses
    its last P, Q; a 3-D one that never meets the test leaves OpenSim's output untouched, i.e.
    ``previous`` is returned.  It is differentiated as it runs (the derivative of the iterate).
    """
    near = jnp.abs(uvw) <= ROUNDOFF_ERROR
    sums = jnp.stack([dims[1] + dims[2], dims[0] + dims[2], dims[0] + dims[1]])
    k_auto = jnp.argmin(jnp.where(near, sums, jnp.inf))
    k = jnp.where(special >= 0, special, k_auto)
    planar = (special >= 0) | jnp.any(near)
    i, j = (k + 1) % 3, (k + 2) % 3
    ea, eb = jnp.take(a, i), jnp.take(a, j)
    eu, ev = jnp.take(uvw, i), jnp.take(uvw, j)

    # 2-D: f = P²Q² - a²u²Q² - b²v²P²;  3-D: f = P²Q²R² - a²u²Q²R² - b²v²P²R² - c²w²P²Q²
    ea2, eb2 = ea * ea, eb * eb
    a2u2, b2v2 = ea2 * (eu * eu), eb2 * (ev * ev)
    a2 = a * a
    kk = a2 * (uvw * uvw)

    in2 = (eu / ea) * (eu / ea) + (ev / eb) * (ev / eb) < 1.0
    t2 = jnp.where(in2, 0.0, jnp.maximum(ea, eb) * safe_sqrt(eu * eu + ev * ev))
    in3 = jnp.sum((uvw / a) ** 2) < 1.0
    t3 = jnp.where(in3, 0.0, jnp.max(a) * safe_norm(uvw))

    # one iteration per projection: the plane's ellipse when ``planar``, else the 3-D problem
    one = jnp.ones((), ea2.dtype)
    c = jnp.where(planar, jnp.stack([ea2, eb2, one]), a2)
    k3 = jnp.where(planar, jnp.stack([a2u2, b2v2, 0.0 * one]), kk)
    pqr, ok = _newton(jnp.where(planar, t2, t3), c, k3, jnp.where(planar, 0.0, one))
    ok3 = ~planar & (ok > 0.5)
    pq = pqr[:2]

    special_2d, sx, sy = _ellipse_special(ea, eb, eu, ev)
    x = jnp.where(special_2d, sx, ea2 * eu / pq[0])
    y = jnp.where(special_2d, sy, eb2 * ev / pq[1])
    idx = jnp.arange(3)
    plane = jnp.where(idx == k, uvw, jnp.where(idx == i, x, y))
    general = jnp.where(ok3, a2 * uvw / pqr, previous)
    return jnp.where(planar, plane, general), planar | ok3


# ----------------------------------------------------------------------------------------------
# calcTangentPoint
# ----------------------------------------------------------------------------------------------
def _inv4(m):
    """Inverse of a 4x4 matrix by cofactors (2x2 minors); SimTK's ``Mat44::invert`` uses LAPACK LU."""
    (a00, a01, a02, a03), (a10, a11, a12, a13), (a20, a21, a22, a23), (a30, a31, a32, a33) = m
    s0, s1, s2 = a00 * a11 - a10 * a01, a00 * a12 - a10 * a02, a00 * a13 - a10 * a03
    s3, s4, s5 = a01 * a12 - a11 * a02, a01 * a13 - a11 * a03, a02 * a13 - a12 * a03
    c5, c4, c3 = a22 * a33 - a32 * a23, a21 * a33 - a31 * a23, a21 * a32 - a31 * a22
    c2, c1, c0 = a20 * a33 - a30 * a23, a20 * a32 - a30 * a22, a20 * a31 - a30 * a21
    det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0
    adj = jnp.array([
        [a11 * c5 - a12 * c4 + a13 * c3, -a01 * c5 + a02 * c4 - a03 * c3,
         a31 * s5 - a32 * s4 + a33 * s3, -a21 * s5 + a22 * s4 - a23 * s3],
        [-a10 * c5 + a12 * c2 - a13 * c1, a00 * c5 - a02 * c2 + a03 * c1,
         -a30 * s5 + a32 * s2 - a33 * s1, a20 * s5 - a22 * s2 + a23 * s1],
        [a10 * c4 - a11 * c2 + a13 * c0, -a00 * c4 + a01 * c2 - a03 * c0,
         a30 * s4 - a31 * s2 + a33 * s0, -a20 * s4 + a21 * s2 - a23 * s0],
        [-a10 * c3 + a11 * c1 - a12 * c0, a00 * c3 - a01 * c1 + a02 * c0,
         -a30 * s3 + a31 * s1 - a32 * s0, a20 * s3 - a21 * s1 + a22 * s0],
    ])
    return adj / jnp.where(det != 0, det, 1.0)


def _tangent_point(pe, r, p, a, vs, vs4):
    """``calcTangentPoint``: the stopped iterate of :func:`_tangent_iterate` (r = p when p is on the
    surface), with its own derivative (every step taken, forward and reverse mode).  The iteration
    stops at ``ssq <= 1e-8``, not at the tangency it aims for, so the derivative of that root is
    not the derivative of the computed point."""
    r_it = _tangent_solve(r, p, a, vs, vs4)
    return jnp.where(jnp.abs(pe) < ELLIPSOID_TOLERANCE_1, p, r_it)


def _tangent_iterate(r, p, a, vs, vs4):
    """``calcTangentPoint``'s loops: r moved (in the plane vs·x + vs4 = 0) until p-r is tangent."""

    def resid(r, d1):
        nr = 2.0 * r / (a * a)
        e0 = _dot(vs, r) + vs4
        e1 = -1.0 + jnp.sum((r / a) ** 2)
        e2 = _dot(nr, r) + d1
        e3 = _dot(nr, p) + d1
        return jnp.stack([e0, e1, e2, e3])

    def ssq_of(ee):
        return jnp.sum(ee * ee)

    nr0 = 2.0 * r / (a * a)
    d1 = -_dot(nr0, r)
    ee = resid(r, d1)
    ssq = ssq_of(ee)
    alpha = jnp.asarray(0.01, r.dtype)

    def outer_cond(st):
        _, _, _, ssq, _, _, nit = st
        return (ssq > ELLIPSOID_TINY) & (nit < TANGENT_MAXIT)

    def outer_body(st):
        r, d1, ee, ssq, ssqo, alpha, nit = st
        nit = nit + 1
        col0 = vs
        col1 = 2.0 * r / (a * a)
        col2 = 2.0 * (2.0 * r) / (a * a)
        col3 = 2.0 * p / (a * a)
        top = jnp.stack([col0, col1, col2, col3], axis=-1)  # (3, 4)
        dedth = jnp.concatenate([top, jnp.array([[0.0, 0.0, 1.0, 1.0]], r.dtype)], axis=0)
        p1r1, _ = normalize_or_zero(p - r)
        p1m, _ = normalize_or_zero(p)
        pcos = _dot(p1r1, p1m)
        dd = jnp.where(pcos > 0.1, 1.0 - jnp.power(jnp.where(pcos > 0.1, pcos, 0.5), 100.0), 1.0)
        v = -(dedth @ ee)
        dedth2 = dedth @ dedth.T
        diag = jnp.diagonal(dedth2)

        def lm_cond(s):
            _, _, _, ssq, ssqo, _, _, n2 = s
            return (ssq >= ssqo) & (n2 < TANGENT_MAXIT2)

        def lm_body(s):
            r, d1, ee, ssq, ssqo, alpha, vt, n2 = s
            m2 = dedth2.at[jnp.diag_indices(4)].set(diag * (1.0 + alpha))
            inv = _inv4(m2)
            vt = jnp.sum(dd * inv * v[None, :] / 16.0, axis=-1)
            r = r + vt[:3]
            d1 = d1 + vt[3]
            ee = resid(r, d1)
            ssqo = ssq
            ssq = ssq_of(ee)
            return r, d1, ee, ssq, ssqo, alpha * 4.0, vt, n2 + 1

        r, d1, ee, ssq, ssqo, alpha, vt, _ = lax.while_loop(
            lm_cond, lm_body, (r, d1, ee, ssq, ssqo, alpha, jnp.zeros(4, r.dtype), 0))
        alpha = alpha / 8.0

        def ls_cond(s):
            _, _, _, ssq, ssqo, _, n2 = s
            return (ssq <= ssqo) & (n2 < TANGENT_MAXIT2)

        def ls_body(s):
            r, d1, ee, ssq, ssqo, fakt, n2 = s
            fakt = fakt * 2.0
            r = r + vt[:3] * fakt
            d1 = d1 + vt[3] * fakt
            ee = resid(r, d1)
            return r, d1, ee, ssq_of(ee), ssq, fakt, n2 + 1

        r, d1, ee, ssq, ssqo, fakt, _ = lax.while_loop(
            ls_cond, ls_body, (r, d1, ee, ssq, ssqo, jnp.asarray(0.5, r.dtype), 0))
        r = r - vt[:3] * fakt
        d1 = d1 - vt[3] * fakt
        ee = resid(r, d1)
        ssq = ssq_of(ee)
        return r, d1, ee, ssq, ssq, alpha, nit

    r_it, *_ = lax.while_loop(outer_cond, outer_body, (r, d1, ee, ssq, ssq, alpha, 0))
    return r_it


#: the tangent iteration with the derivative of its stopped iterate (:func:`~._jacobian_rule.iterate_rule`)
_tangent_solve = iterate_rule(_tangent_iterate)
