"""OpenSim 4.6's ``WrapEllipsoid::wrapLine`` for one straight segment, in JAX.

A line-by-line port of ``OpenSim/Simulation/Wrap/WrapEllipsoid.cpp`` (Peter Loan's SIMM
algorithm) with the same constants, the same iteration counts and the same stopping rules, so that
the tangent points and the surface length agree with OpenSim to round-off (not merely to the
algorithm's own, much looser, convergence tolerance):

1. Everything is scaled by ``factor = 3 / (a + b + c)`` (the ellipsoid centre ``m`` is 0).
   ``p1e = Σ (p1_i / a_i)² - 1``; an end point with ``p1e < -1e-4`` is *inside* -> ``INSIDE``.
   Nearly collinear ``p1``, ``p2`` as seen from the centre (``|p̂1·p̂2 - 1| < 1e-4``), a line that
   misses the ellipsoid, or a segment whose two intersection parameters are not both in (0, 1)
   -> ``NO_WRAP``.  Otherwise the result is always ``MANDATORY`` (the ellipsoid never returns
   ``wrapped``) with a path.
2. The *wrapping plane* through p1, p2 and a surface point c1.  c1 depends on the method
   (``PathWrap::WrapMethod``: ``0 = hybrid``, ``1 = midpoint``, ``2 = axial``, OpenSim's enum
   order):

   * **Frans** (hybrid/axial): for the coordinate axis most parallel to the segment (largest
     ``|p̂1p̂2_i|``), ``sv`` = where the chord r1r2 crosses that coordinate plane, ``c1`` = its closest
     point on the plane's ellipse (``closestPointToEllipse``).
   * **fan** (hybrid): the mean direction of the 298 "blades" sv_k -> closest point of sv_k,
     ``sv_k = r1 + (k/300) r1r2``, k = 1..298 (``NUM_FAN_SAMPLES = 300``), added to the chord
     mid-point and projected back to the surface.
   * hybrid blends them by ``mu`` (the largest direction cosine): pure fan for
     ``mu <= 0.7073`` (``MU_BLEND_MIN``), pure Frans for ``mu >= 0.9`` (``MU_BLEND_MAX``), linear
     in between; a Frans ``sv`` near or beyond the chord's ends is faded out over 30 % of the chord
     (``SV_BOUNDARY_BLEND``).
   * **midpoint**: c1 = closest point of the chord mid-point.
   * **axial**: the Frans c1; the tangent iterations start at c1 only when its ``sv`` lies inside
     the chord (0 < t < 1), else at the two intersection points.

   With a quadrant (``wrap_sign != 0``) a c1 on the wrong side is mirrored, and (hybrid with a fan
   share ``w > 0``) moved by ``w`` toward the plane ``x_axis = 0`` and re-projected.  OpenSim's
   ``EQUAL_WITHIN_ERROR(fanWeight, -Infinity)`` test is always false (``-inf - -inf`` is NaN), so
   a pure-Frans or midpoint c1 is only mirrored; that is reproduced.
3. ``calcTangentPoint``: the tangent points r1 (from p1) and r2 (from p2) in that plane, each by
   OpenSim's damped Gauss-Newton on the 4 residuals (plane, surface, two tangency conditions)
   started at c1: at most 50 outer steps, stopped when the residual sum of squares
   ``ssq <= 1e-8`` (``ELLIPSOID_TINY``); inside each, a Levenberg loop (``alpha`` x 4 per try,
   starting at 0.01, /8 after) and a step-doubling line search, each at most 1000 tries, the step
   scaled by ``(1 - cos^100)/16``.  ``|p1e| < 1e-4`` (p1 on the surface) gives r1 = p1.  Because
   OpenSim stops at ``ssq <= 1e-8`` the tangent points are only accurate to about 1e-4 (scaled
   units) as *tangent points*, but the iteration is deterministic, so it is reproduced step by step
   (``lax.while_loop``, same counts and tests) and the result matches OpenSim's to round-off.
4. ``CalcDistanceOnEllipsoid``: ``N = int(|r1 - r2| / 0.001 m)`` segments (1 <= N <= 499; a chord
   shorter than 1 mm is taken as the length), the N - 1 interior points being where rays from
   ``a0`` (the plane's crossing of the coordinate axis most normal to it) at angles
   ``k·phi0/N`` from r1 toward r2 leave the ellipsoid; the length is the sum of the N chords
   r1 -> s_1 -> ... -> s_(N-1) -> r2 (so it depends on N: a jump of about 1e-7 m when N changes).
   With a quadrant, if the first or last chord turns back toward p1 / p2, the path is recomputed
   the long way round (angle step ``-(2π - phi0)/N``), as OpenSim does.

``findClosestPoint`` / ``closestPointToEllipse`` (Eberly, Graphics Gems IV) are ported with their
64 Newton steps and their stopping test ``|f| < 1e-9``, their coordinate-plane special cases
(``|u| <= 2e-13``) and, where the 3-D iteration does not converge, OpenSim's "output left
unchanged" behaviour (the previous value of the output variable).  The only deviations: a
non-converged projection whose output variable would hold the *previous call's* c1 (state kept by
OpenSim's PathWrap between calls) falls back to the unprojected point; SimTK's LAPACK 4x4 inverse
and libm's ``pow``/``acos`` are replaced by XLA's (differences of an ulp).  Where a far-side
(quadrant) surface ray misses the ellipsoid, OpenSim takes ``sqrt`` of a negative number and its
length is NaN (about 1 % of quadrant wraps in the validation sample); here that square root is
clamped to 0 (the ray's closest approach), so the length stays finite.

Derivatives: the iterations (closest points, tangent points) are differentiated as they run,
forward mode through every step taken with its branch decisions held: the derivative of the
stopped iterate, i.e. of the length OpenSim computes.  (The tangent iteration stops at
``ssq <= 1e-8``, far from a root of its equations, so the implicit-function derivative of that
root is not the derivative of the computed point.)  The loops are ``while_loop`` s; reverse mode
goes through the transposable JVP rule of :mod:`~mbjax.wrapping._jacobian_rule`.  The length is
piecewise smooth: it jumps (~1e-8 m) where the segment count N or a branch decision changes.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from ._jacobian_rule import iterate_rule
from ._lane_loop import lane_while_loop
from ._math import ROUNDOFF_ERROR, dsign, normalize_or_zero, safe_norm
from ._result import INSIDE, MANDATORY, NO_WRAP, WrapLine

#: ``PathWrap::WrapMethod`` values (OpenSim's enum order)
HYBRID, MIDPOINT, AXIAL = 0, 1, 2

ELLIPSOID_TOLERANCE_1 = 1e-4
ELLIPSOID_TINY = 1e-8
MU_BLEND_MIN = 0.7073
MU_BLEND_MAX = 0.9
NUM_FAN_SAMPLES = 300
SV_BOUNDARY_BLEND = 0.3
#: ``CalcDistanceOnEllipsoid``'s desired segment length (m) and its cap on segments
DESIRED_SEG_LENGTH = 0.001
MAX_SEGMENTS = 499
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


def _safe_div(num, den):
    """num / den, and a constant +inf where den == 0 (no inf/NaN in either branch's derivative)."""
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), jnp.inf)


def _safe_sqrt(x):
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


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
    nx_x = jnp.where(cx1, u, a * _safe_sqrt(jnp.abs(1.0 - ydb * ydb)))
    nx_y = jnp.where(cx1, jnp.where(v >= 0, b, -b), yy)
    # v == 0
    cy1 = (b >= a) | (jnp.abs(u) >= a - b2 / a)
    xx = a2 * u / jnp.where(cy1, 1.0, a2 - b2)
    xda = xx / a
    ny_x = jnp.where(cy1, jnp.where(u >= 0, a, -a), xx)
    ny_y = jnp.where(cy1, v, b * _safe_sqrt(jnp.abs(1.0 - xda * xda)))
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
    t = jnp.where(done | conv, t, t - _safe_div(f, fp))
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
    t2 = jnp.where(in2, 0.0, jnp.maximum(ea, eb) * _safe_sqrt(eu * eu + ev * ev))
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


# ----------------------------------------------------------------------------------------------
# CalcDistanceOnEllipsoid
# ----------------------------------------------------------------------------------------------
def _norm3(v):
    """``Vec3::norm`` (sum of squares in index order), grad-safe at 0."""
    sq = v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2]
    return _safe_sqrt(sq)


#: the path's angles k·Δφ, k = BLOCK·i + j, by angle addition from BLOCK + MAX_SEGMENTS/BLOCK sines
#: and cosines instead of one per point (a few ulp from ``cos(k·Δφ)``)
ANGLE_BLOCK = 32


def _path_frame(r1, r2, a, vs, vs4):
    """``CalcDistanceOnEllipsoid``'s ray origin a0, the unit rays to r1 and the in-plane normal, phi0."""
    imax = jnp.argmax(jnp.abs(vs))
    idx = jnp.arange(3)
    vs_imax = jnp.take(vs, imax)
    mu = -vs4 / jnp.where(vs_imax != 0, vs_imax, 1.0)
    a0 = jnp.where(idx == imax, mu, 0.0)
    ar1, _ = normalize_or_zero(r1 - a0)
    ar2, _ = normalize_or_zero(r2 - a0)
    c = _dot(ar1, ar2)
    inner = jnp.abs(c) < 1.0
    phi0 = jnp.where(inner, jnp.arccos(jnp.where(inner, c, 0.0)), jnp.where(c > 0, 0.0, jnp.pi))
    vsz, _ = normalize_or_zero(jnp.cross(ar1, ar2))
    vsy = jnp.cross(vsz, ar1)
    return a0, ar1, vsy, phi0


def _ray_points(a0, ar1, vsy, a, cos, sin):
    """Where the rays ``a0 + μ (ar1 cos φ + vsy sin φ)`` leave the ellipsoid, per component (x, y, z)."""
    ray = [ar1[i] * cos + vsy[i] * sin for i in range(3)]
    f1 = [ray[i] / a[i] for i in range(3)]
    f2 = [a0[i] / a[i] for i in range(3)]
    aa = f1[0] * f1[0] + f1[1] * f1[1] + f1[2] * f1[2]
    bb = 2.0 * (f1[0] * f2[0] + f1[1] * f2[1] + f1[2] * f2[2])
    cc = f2[0] * f2[0] + f2[1] * f2[1] + f2[2] * f2[2] - 1.0
    mu3 = (-bb + _safe_sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
    return [a0[i] + mu3 * ray[i] for i in range(3)]


def _surface_length(r1, r2, a0, ar1, vsy, a, dphi, n_seg):
    """The chord sum r1 -> s_1 -> ... -> s_(N-1) -> r2 over the rays at angles k·dphi (N = n_seg)."""
    nb = -(-MAX_SEGMENTS // ANGLE_BLOCK)
    j = jnp.arange(ANGLE_BLOCK).astype(r1.dtype) * dphi
    i = jnp.arange(nb).astype(r1.dtype) * (ANGLE_BLOCK * dphi)
    cj, sj, ci, si = jnp.cos(j), jnp.sin(j), jnp.cos(i), jnp.sin(i)
    cos = (ci[:, None] * cj[None, :] - si[:, None] * sj[None, :]).reshape(-1)[1:MAX_SEGMENTS + 1]
    sin = (si[:, None] * cj[None, :] + ci[:, None] * sj[None, :]).reshape(-1)[1:MAX_SEGMENTS + 1]
    s = _ray_points(a0, ar1, vsy, a, cos, sin)
    k = jnp.arange(1, MAX_SEGMENTS + 1)
    last = k == n_seg
    pts = [jnp.where(last, r2[c], s[c]) for c in range(3)]
    prev = [jnp.concatenate([r1[c][None], pts[c][:-1]]) for c in range(3)]
    d = [pts[c] - prev[c] for c in range(3)]
    seg = _safe_sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return jnp.sum(jnp.where(k <= n_seg, seg, 0.0))


# ----------------------------------------------------------------------------------------------
# wrapLine
# ----------------------------------------------------------------------------------------------
def _plane_point(p1, p2, r1, r2, a, dims, method, wrap_axis, wrap_sign):
    """COMPUTE WRAPPING PLANE: c1, and the starting points of the two tangent iterations."""
    dtype = p1.dtype
    p1p2 = p1 - p2
    r1r2 = r2 - r1
    mu, _ = normalize_or_zero(p1p2)
    mu = jnp.abs(mu)
    t = _safe_div(-r1, r1r2)
    t = jnp.where(jnp.isfinite(t), t, 0.0)  # only for axes other than the most parallel one
    t_sv = r1[None, :] + t[:, None] * r1r2[None, :]  # Frans: chord meets plane x_i = 0, i = 0..2
    best = jnp.argmax(mu)  # first index on ties, like the C++ strict '>'
    mub = jnp.take(mu, best)
    tb = jnp.take(t, best)
    hybrid = method == HYBRID
    axial = method == AXIAL
    midpoint = method == MIDPOINT

    # every independent projection in one batch: 3 Frans points (forced planes), the 298 fan
    # samples and the chord mid-point (OpenSim's default special-case test)
    sv_mid = r1 + 0.5 * r1r2
    sv_m = r1 + 0.5 * (r2 - r1)
    tt = jnp.arange(1, NUM_FAN_SAMPLES - 1).astype(dtype) / NUM_FAN_SAMPLES
    sv_k = r1[None, :] + tt[:, None] * r1r2[None, :]
    pts = jnp.concatenate([t_sv, sv_k, sv_m[None]], axis=0)
    special = jnp.concatenate([jnp.arange(3), -jnp.ones(sv_k.shape[0] + 1, jnp.int32)])
    proj, ok = jax.vmap(lambda u, sp: _closest_point(a, dims, u, sp, u))(pts, special)
    t_c1 = proj[:3]
    c_k, ok_k = proj[3:-1], ok[3:-1]
    c1_m = proj[-1]  # not converged: OpenSim keeps the previous call's c1; here: the mid-point

    # hybrid: fade out a Frans sv near / beyond the chord ends
    s = jnp.where((tb < 0.0) | (tb > 1.0), 0.0,
                  jnp.where(tb < SV_BOUNDARY_BLEND, tb / SV_BOUNDARY_BLEND,
                            jnp.where(tb > 1.0 - SV_BOUNDARY_BLEND, (1.0 - tb) / SV_BOUNDARY_BLEND, 1.0)))
    mub = jnp.where(hybrid & (mub > MU_BLEND_MIN) & (s < 1.0), MU_BLEND_MIN + s * (mub - MU_BLEND_MIN), mub)
    c1_frans = t_c1[best]
    sv_frans = t_sv[best]

    # fan: a non-converged projection leaves t_c1[0] at its last value (forward fill)
    n = jnp.arange(c_k.shape[0])
    last = lax.cummax(jnp.where(ok_k, n, -1), axis=0)
    c_k = jnp.where((last >= 0)[:, None], c_k[jnp.maximum(last, 0)], t_c1[0][None, :])
    blade, _ = normalize_or_zero(c_k - sv_k)
    v_sum, _ = normalize_or_zero(jnp.sum(blade, axis=0))
    tc1 = sv_mid + v_sum
    pure_fan = mub <= MU_BLEND_MIN
    fan = hybrid & (mub < MU_BLEND_MAX)
    w = (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
    fan_weight = jnp.where(fan, jnp.where(pure_fan, 1.0, 1.0 - w), -jnp.inf)
    sv_mix = w * sv_frans + (1.0 - w) * sv_mid
    del sv_mix  # sv only feeds OpenSim's next call (previousWrap); it does not change this one

    idx = jnp.arange(3)
    on_axis = idx == wrap_axis

    def choose(c1_fan, c1_blend):
        c1_h = jnp.where(fan, jnp.where(pure_fan, c1_fan, c1_blend), c1_frans)
        c1 = jnp.where(midpoint, c1_m, jnp.where(axial, c1_frans, c1_h))
        c_ax = jnp.sum(jnp.where(on_axis, c1, 0.0))
        fw = jnp.minimum(fan_weight, 1.0)
        bis = (c_ax + (-c_ax)) / 2.0
        c1g = jnp.where(on_axis, -c1 + jnp.where(fw > 0, fw, 0.0) * (bis - (-c1)), c1)
        return c1, c_ax, fw, c1g

    # the three dependent projections (fan c1, blended c1, quadrant c1) share one loop body
    def stage(k, carry):
        c1_fan, c1_blend, c1_q = carry
        c1_mix = w * c1_frans + (1.0 - w) * c1_fan
        _, _, _, c1g = choose(c1_fan, c1_blend)
        x = jnp.where(k == 0, tc1, jnp.where(k == 1, c1_mix, c1g))
        # not converged: the C++ output variable keeps t_c1[1] (blend), the previous call's c1
        # (pure fan; here tc1), the Frans c1 (blend) or the moved c1 (quadrant)
        prev = jnp.where(k == 0, jnp.where(pure_fan, tc1, t_c1[1]), jnp.where(k == 1, c1_frans, c1g))
        y, _ = _closest_point(a, dims, x, -1, prev)
        return (jnp.where(k == 0, y, c1_fan), jnp.where(k == 1, y, c1_blend), jnp.where(k == 2, y, c1_q))

    c1_fan, c1_blend, c1_q = lax.fori_loop(0, 3, stage, (tc1, tc1, tc1))
    c1, c_ax, fw, _ = choose(c1_fan, c1_blend)

    use_c1 = ~axial | ((tb > 0.0) & (tb < 1.0))
    r1s = jnp.where(use_c1, c1, r1)
    r2s = jnp.where(use_c1, c1, r2)

    # quadrant: mirror c1 to the active side (and, with a fan share, pull it toward x_axis = 0)
    flip = (wrap_sign != 0) & (dsign(c_ax) != wrap_sign)
    c1f = jnp.where(on_axis, -c1, c1)
    c1 = jnp.where(flip, jnp.where(fw > 0.0, c1_q, c1f), c1)
    r1s = jnp.where(flip, c1f, r1s)
    r2s = jnp.where(flip, c1f, r2s)
    return c1, r1s, r2s


def _scaled(p1, p2, dims):
    """OpenSim's scaling to ``a + b + c = 3``: (factor, a, q1, q2, p1e, p2e)."""
    factor = 3.0 / (dims[0] + dims[1] + dims[2])
    a = dims * factor
    q1 = p1 * factor
    q2 = p2 * factor
    p1e = -1.0 + jnp.sum((q1 / a) ** 2)
    p2e = -1.0 + jnp.sum((q2 / a) ** 2)
    return factor, a, q1, q2, p1e, p2e


def _code(q1, q2, a, p1e, p2e):
    inside = (p1e < -0.0001) | (p2e < -0.0001)
    u1, _ = normalize_or_zero(q1)
    u2, _ = normalize_or_zero(q2)
    collinear = jnp.abs(_dot(u1, u2) - 1.0) < 0.0001
    p1p2 = q1 - q2
    f1 = p1p2 / a
    f2 = q2 / a
    aa = _dot(f1, f1)
    bb = 2.0 * _dot(f1, f2)
    cc = _dot(f2, f2) - 1.0
    disc = bb * bb - 4.0 * aa * cc
    aa_ok = aa > 0
    root = _safe_sqrt(disc)
    two_aa = 2.0 * jnp.where(aa_ok, aa, 1.0)
    l1 = (-bb + root) / two_aa
    l2 = (-bb - root) / two_aa
    pierce = aa_ok & (disc >= 0.0) & (0.0 < l1) & (l1 < 1.0) & (0.0 < l2) & (l2 < 1.0)
    return jnp.where(inside, INSIDE, jnp.where(~collinear & pierce, MANDATORY, NO_WRAP)).astype(jnp.int32)


def ellipsoid_code(p1, p2, dimensions):
    """The ``WrapAction`` of ``wrapLine`` alone (``INSIDE``, ``NO_WRAP`` or ``MANDATORY``), cheaply.

    The ellipsoid's code depends only on the end points and the straight line (step 1 of the
    module docstring), so a path can choose its segment (the first ``MANDATORY`` one) before
    running the expensive tangent-point iterations on that one segment only.
    """
    dimensions = jnp.asarray(dimensions)
    _, a, q1, q2, p1e, p2e = _scaled(jnp.asarray(p1), jnp.asarray(p2), dimensions)
    return _code(q1, q2, a, p1e, p2e)


def _wrap_impl(p1, p2, dimensions, wrap_axis, wrap_sign, method):
    dims = dimensions
    factor, a, q1, q2, p1e, p2e = _scaled(p1, p2, dims)
    code = _code(q1, q2, a, p1e, p2e)
    wraps = code == MANDATORY

    # lanes without a wrap run a fixed, well-conditioned dummy segment (keeps every branch finite)
    dummy1 = a * jnp.array([-2.0, 0.3, 0.4], a.dtype)
    dummy2 = a * jnp.array([2.0, 0.25, 0.45], a.dtype)
    q1 = jnp.where(wraps, q1, dummy1)
    q2 = jnp.where(wraps, q2, dummy2)
    p1e = jnp.where(wraps, p1e, 3.16)
    p2e = jnp.where(wraps, p2e, 3.16)
    p1p2 = q1 - q2
    f1 = p1p2 / a
    f2 = q2 / a
    aa = _dot(f1, f1)
    bb = 2.0 * _dot(f1, f2)
    cc = _dot(f2, f2) - 1.0
    root = _safe_sqrt(bb * bb - 4.0 * aa * cc)
    l1 = (-bb + root) / (2.0 * aa)
    l2 = (-bb - root) / (2.0 * aa)
    r1 = q2 + l1 * p1p2
    r2 = q2 + l2 * p1p2

    c1, r1s, r2s = _plane_point(q1, q2, r1, r2, a, dims, method, wrap_axis, wrap_sign)

    vs, _ = normalize_or_zero(jnp.cross(p1p2, q1 - c1))
    vs4 = -_dot(vs, c1)
    tp = jax.vmap(_tangent_point, in_axes=(0, 0, 0, None, None, None))
    t12 = tp(jnp.stack([p1e, p2e]), jnp.stack([r1s, r2s]), jnp.stack([q1, q2]), a, vs, vs4)
    t1, t2 = t12[0], t12[1]

    chord = _norm3(t1 - t2)
    length_m = chord / factor
    n_seg = jnp.clip(jnp.floor(length_m / DESIRED_SEG_LENGTH), 1, MAX_SEGMENTS).astype(jnp.int32)
    # wrong-way test (quadrant only, at least one interior point): the near path's first and last
    # interior points decide which way round the one path below goes
    a0, ar1, vsy, phi0 = _path_frame(t1, t2, a, vs, vs4)
    nf = n_seg.astype(t1.dtype)
    near = phi0 / nf
    ends = jnp.stack([near, jnp.maximum(nf - 1.0, 0.0) * near])
    w = _ray_points(a0, ar1, vsy, a, jnp.cos(ends), jnp.sin(ends))
    w1 = jnp.stack([c[0] for c in w])
    w2 = jnp.stack([c[1] for c in w])
    d1, _ = normalize_or_zero(q1 - t1)
    e1, _ = normalize_or_zero(w1 - t1)
    d2, _ = normalize_or_zero(q2 - t2)
    e2, _ = normalize_or_zero(w2 - t2)
    wrong = (_dot(d1, e1) > 0.0) | (_dot(d2, e2) > 0.0)
    far = (wrap_sign != 0) & (n_seg >= 2) & wrong
    dphi = jnp.where(far, -(2.0 * math.pi - phi0) / nf, near)
    length = _surface_length(t1, t2, a0, ar1, vsy, a, dphi, n_seg)
    length = jnp.where(length_m < DESIRED_SEG_LENGTH, chord, length)

    length = jnp.where(wraps, length / factor, 0.0)
    r1o = jnp.where(wraps, t1 / factor, p1)
    r2o = jnp.where(wraps, t2 / factor, p2)
    return code, wraps, r1o, r2o, length


def wrap_ellipsoid(p1, p2, dimensions, wrap_axis, wrap_sign, method=HYBRID, single_wrap=True):
    """OpenSim's ``WrapEllipsoid::wrapLine`` for the segment p1-p2 (ellipsoid frame, centre 0).

    Args:
        p1, p2: ``(3,)`` segment end points in the ellipsoid's frame.
        dimensions: ``(3,)`` semi-axes (OpenSim's ``dimensions``), all > 0.
        wrap_axis: int 0/1/2 (x/y/z), the quadrant's axis (unused when ``wrap_sign == 0``).
        wrap_sign: int in {-1, 0, +1}; 0 is quadrant "all".
        method: int, ``PathWrap::WrapMethod``: 0 = hybrid (OpenSim's default), 1 = midpoint,
            2 = axial.
        single_wrap: ``WrapResult.singleWrap`` (unused by the ellipsoid; common API).

    Returns:
        :class:`~mbjax.wrapping.WrapLine`; code is ``INSIDE``, ``NO_WRAP`` or ``MANDATORY`` (never
        ``WRAPPED``), ``has_path`` is True exactly for ``MANDATORY``.  Without a path ``r1 = p1``,
        ``r2 = p2``, ``length = 0``.  See the module docstring for the algorithm and tolerances.
    """
    del single_wrap
    p1 = jnp.asarray(p1)
    p2 = jnp.asarray(p2)
    dtype = jnp.result_type(p1, p2, dimensions, float)
    p1 = p1.astype(dtype)
    p2 = p2.astype(dtype)
    dimensions = jnp.asarray(dimensions, dtype)
    wrap_axis = jnp.asarray(wrap_axis, jnp.int32)
    wrap_sign = jnp.asarray(wrap_sign, jnp.int32)
    method = jnp.asarray(method, jnp.int32)
    code, has_path, r1, r2, length = _wrap_impl(p1, p2, dimensions, wrap_axis, wrap_sign, method)
    return WrapLine(code=code, has_path=has_path, r1=r1, r2=r2, length=length)
