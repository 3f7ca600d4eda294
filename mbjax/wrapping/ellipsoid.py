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
and libm's ``pow``/``acos`` are replaced by XLA's (differences of an ulp).

Derivatives: the function is wrapped in a ``custom_jvp`` whose tangent is ``J @ t`` with ``J``
the forward-mode Jacobian of the exact iteration (``jax.jacfwd`` through the while loops), so
``jvp``/``jacfwd``/``grad``/``jacrev`` all work and give the derivative of the function OpenSim
actually computes (piecewise smooth; it jumps where N or a branch decision changes).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

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
#: ``calcTangentPoint``'s iteration limits
TANGENT_MAXIT = 50
TANGENT_MAXIT2 = 1000


def _dot(a, b):
    return jnp.sum(a * b, axis=-1)


def _safe_div(num, den):
    ok = den != 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), num * jnp.inf)


def _safe_sqrt(x):
    pos = x > 0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


# ----------------------------------------------------------------------------------------------
# closest points (Graphics Gems IV)
# ----------------------------------------------------------------------------------------------
def _closest_point_to_ellipse(a, b, u, v):
    """``closestPointToEllipse``: closest point (x, y) of (x/a)² + (y/b)² = 1 to (u, v)."""
    a2, b2 = a * a, b * b
    a2u2, b2v2 = a2 * (u * u), b2 * (v * v)
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

    # Newton on f(t) = P²Q² - a²u²Q² - b²v²P², P = t + a², Q = t + b²
    inside = (u / a) * (u / a) + (v / b) * (v / b) < 1.0
    t0 = jnp.where(inside, 0.0, jnp.maximum(a, b) * _safe_sqrt(u * u + v * v))

    def body(_, state):
        t, p, q, done = state
        pn, qn = t + a2, t + b2
        p2, q2 = pn * pn, qn * qn
        f = p2 * q2 - a2u2 * q2 - b2v2 * p2
        conv = jnp.abs(f) < NEWTON_TOL
        fp = 2.0 * (pn * qn * (pn + qn) - a2u2 * qn - b2v2 * pn)
        tn = t - _safe_div(f, fp)
        p = jnp.where(done, p, pn)
        q = jnp.where(done, q, qn)
        t = jnp.where(done | conv, t, tn)
        return t, p, q, done | conv

    one = jnp.ones_like(t0)
    _, p, q, _ = lax.fori_loop(0, NEWTON_STEPS, body, (t0, one, one, jnp.zeros(t0.shape, bool)))
    gx = a2 * u / p
    gy = b2 * v / q

    x = jnp.where(near_x & near_y, bx, jnp.where(near_x, nx_x, jnp.where(near_y, ny_x, gx)))
    y = jnp.where(near_x & near_y, by, jnp.where(near_x, nx_y, jnp.where(near_y, ny_y, gy)))
    return x, y


def _closest_point_plane(a, uvw, k):
    """``findClosestPoint`` with ``specialCaseAxis = k``: the 2-D problem in the plane x_k = u_k."""
    i, j = (k + 1) % 3, (k + 2) % 3
    ai, aj = jnp.take(a, i), jnp.take(a, j)
    ui, uj = jnp.take(uvw, i), jnp.take(uvw, j)
    x, y = _closest_point_to_ellipse(ai, aj, ui, uj)
    idx = jnp.arange(3)
    return jnp.where(idx == k, uvw, jnp.where(idx == i, x, y))


def _closest_point_general(a, uvw):
    """``findClosestPoint``'s general case: (point, converged); 64 Newton steps, |f| < 1e-9."""
    a2 = a * a
    k = a2 * (uvw * uvw)
    inside = jnp.sum((uvw / a) ** 2) < 1.0
    t0 = jnp.where(inside, 0.0, jnp.max(a) * safe_norm(uvw))

    def body(_, state):
        t, pqr, done = state
        pn, qn, rn = t + a2[0], t + a2[1], t + a2[2]
        p2, q2, r2 = pn * pn, qn * qn, rn * rn
        f = p2 * q2 * r2 - k[0] * q2 * r2 - k[1] * p2 * r2 - k[2] * p2 * q2
        conv = jnp.abs(f) < NEWTON_TOL
        pq, pr, qr = pn * qn, pn * rn, qn * rn
        fp = 2.0 * (pn * qn * rn * (qr + pr + pq) - k[0] * qr * (qn + rn)
                    - k[1] * pr * (pn + rn) - k[2] * pq * (pn + qn))
        tn = t - _safe_div(f, fp)
        pqr = jnp.where(done, pqr, jnp.stack([pn, qn, rn]))
        t = jnp.where(done | conv, t, tn)
        return t, pqr, done | conv

    _, pqr, done = lax.fori_loop(0, NEWTON_STEPS, body, (t0, jnp.ones(3, t0.dtype), jnp.array(False)))
    return a2 * uvw / pqr, done


def _closest_point(a, dims, uvw, previous):
    """``findClosestPoint`` with ``specialCaseAxis = -1``.

    A coordinate within ``ROUNDOFF_ERROR`` of 0 reduces the problem to that plane's ellipse (the
    one with the smallest radii sum, first axis on ties); otherwise the 3-D Newton iteration.
    Where that does not converge OpenSim leaves its output untouched: ``previous`` is returned.
    """
    near = jnp.abs(uvw) <= ROUNDOFF_ERROR
    sums = jnp.stack([dims[1] + dims[2], dims[0] + dims[2], dims[0] + dims[1]])
    k = jnp.argmin(jnp.where(near, sums, jnp.inf))
    plane = _closest_point_plane(a, uvw, k)
    gen, ok = _closest_point_general(a, uvw)
    gen = jnp.where(ok, gen, previous)
    return jnp.where(jnp.any(near), plane, gen)


# ----------------------------------------------------------------------------------------------
# calcTangentPoint
# ----------------------------------------------------------------------------------------------
def _tangent_point(pe, r, p, a, vs, vs4):
    """``calcTangentPoint``: r moved (in the plane vs·x + vs4 = 0) until p-r is tangent at r."""
    ia2 = 1.0 / (a * a)

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
    del ia2

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
            inv = jnp.linalg.inv(m2)
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
    return jnp.where(jnp.abs(pe) < ELLIPSOID_TOLERANCE_1, p, r_it)


# ----------------------------------------------------------------------------------------------
# CalcDistanceOnEllipsoid
# ----------------------------------------------------------------------------------------------
def _norm3(v):
    """``Vec3::norm`` (sum of squares in index order), grad-safe at 0."""
    sq = v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2]
    return _safe_sqrt(sq)


def _surface_path(r1, r2, a, vs, vs4, n_seg, far):
    """``CalcDistanceOnEllipsoid``: the N + 1 path points (padded to 500) and the chord sum."""
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
    nf = n_seg.astype(r1.dtype)
    dphi = jnp.where(far, -(2.0 * math.pi - phi0) / nf, phi0 / nf)
    vsz, _ = normalize_or_zero(jnp.cross(ar1, ar2))
    vsy = jnp.cross(vsz, ar1)

    k = jnp.arange(1, MAX_SEGMENTS + 1)  # point index along the path (0 = r1)
    phi = k.astype(r1.dtype) * dphi
    ray = ar1[None, :] * jnp.cos(phi)[:, None] + vsy[None, :] * jnp.sin(phi)[:, None]
    f1 = ray / a
    f2 = a0 / a
    aa = jnp.sum(f1 * f1, axis=-1)
    bb = 2.0 * jnp.sum(f1 * f2, axis=-1)
    cc = jnp.sum(f2 * f2) - 1.0
    mu3 = (-bb + _safe_sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
    s = a0 + mu3[:, None] * ray
    pts = jnp.where((k == n_seg)[:, None], r2, s)
    pts = jnp.concatenate([r1[None], pts], axis=0)  # (500, 3)
    seg = _norm3(pts[1:] - pts[:-1])
    length = jnp.sum(jnp.where(k <= n_seg, seg, 0.0))
    return pts, length


# ----------------------------------------------------------------------------------------------
# wrapLine
# ----------------------------------------------------------------------------------------------
def _plane_point(p1, p2, r1, r2, a, dims, method, wrap_axis, wrap_sign):
    """COMPUTE WRAPPING PLANE: c1 and the starting points of the tangent iterations."""
    dtype = p1.dtype
    p1p2 = p1 - p2
    r1r2 = r2 - r1
    mu, _ = normalize_or_zero(p1p2)
    mu = jnp.abs(mu)
    t = _safe_div(-r1, r1r2)
    t = jnp.where(jnp.isfinite(t), t, 0.0)
    t_sv = r1[None, :] + t[:, None] * r1r2[None, :]  # (3 axes, 3)
    t_c1 = jnp.stack([_closest_point_plane(a, t_sv[i], i) for i in range(3)])
    best = jnp.argmax(mu)
    mub = jnp.take(mu, best)
    tb = jnp.take(t, best)
    hybrid = method == HYBRID
    axial = method == AXIAL

    # hybrid: fade out a Frans sv near / beyond the chord ends
    s = jnp.where((tb < 0.0) | (tb > 1.0), 0.0,
                  jnp.where(tb < SV_BOUNDARY_BLEND, tb / SV_BOUNDARY_BLEND,
                            jnp.where(tb > 1.0 - SV_BOUNDARY_BLEND, (1.0 - tb) / SV_BOUNDARY_BLEND, 1.0)))
    mub = jnp.where(hybrid & (mub > MU_BLEND_MIN) & (s < 1.0), MU_BLEND_MIN + s * (mub - MU_BLEND_MIN), mub)
    frans = axial | (hybrid & (mub > MU_BLEND_MIN))
    c1_frans = t_c1[best]
    sv_frans = t_sv[best]

    # fan
    sv_mid = r1 + 0.5 * r1r2
    tt = jnp.arange(1, NUM_FAN_SAMPLES - 1).astype(dtype) / NUM_FAN_SAMPLES
    sv_k = r1[None, :] + tt[:, None] * r1r2[None, :]
    gen, ok = jax.vmap(lambda u: _closest_point_general(a, u))(sv_k)
    near = jnp.abs(sv_k) <= ROUNDOFF_ERROR
    sums = jnp.stack([dims[1] + dims[2], dims[0] + dims[2], dims[0] + dims[1]])
    kk = jnp.argmin(jnp.where(near, sums[None, :], jnp.inf), axis=-1)
    plane = jax.vmap(lambda u, k: _closest_point_plane(a, u, k))(sv_k, kk)
    has_near = jnp.any(near, axis=-1)
    ok = ok | has_near
    c_k = jnp.where(has_near[:, None], plane, gen)
    # a non-converged projection leaves t_c1[0] at its last value (forward fill)
    n = jnp.arange(tt.shape[0])
    last = lax.cummax(jnp.where(ok, n, -1), axis=0)
    c_k = jnp.where((last >= 0)[:, None], c_k[jnp.maximum(last, 0)], t_c1[0][None, :])
    blade, _ = normalize_or_zero(c_k - sv_k)
    v_sum, _ = normalize_or_zero(jnp.sum(blade, axis=0))
    tc1 = sv_mid + v_sum
    pure_fan = mub <= MU_BLEND_MIN
    c1_fan = _closest_point(a, dims, tc1, jnp.where(pure_fan, tc1, t_c1[1]))
    w = (mub - MU_BLEND_MIN) / (MU_BLEND_MAX - MU_BLEND_MIN)
    c1_mix = w * c1_frans + (1.0 - w) * c1_fan
    sv_mix = w * sv_frans + (1.0 - w) * sv_mid
    c1_blend = _closest_point(a, dims, c1_mix, c1_frans)
    fan = hybrid & (mub < MU_BLEND_MAX)
    c1_h = jnp.where(fan, jnp.where(pure_fan, c1_fan, c1_blend), c1_frans)
    sv_h = jnp.where(fan, jnp.where(pure_fan, sv_mid, sv_mix), sv_frans)
    fan_weight = jnp.where(fan, jnp.where(pure_fan, 1.0, 1.0 - w), -jnp.inf)
    del frans

    # midpoint
    sv_m = r1 + 0.5 * (r2 - r1)
    c1_m = _closest_point(a, dims, sv_m, sv_m)

    c1 = jnp.where(method == MIDPOINT, c1_m, jnp.where(axial, c1_frans, c1_h))
    sv = jnp.where(method == MIDPOINT, sv_m, jnp.where(axial, sv_frans, sv_h))
    fan_weight = jnp.where(hybrid, fan_weight, -jnp.inf)
    del sv

    use_c1 = ~axial | ((tb > 0.0) & (tb < 1.0))
    r1s = jnp.where(use_c1, c1, r1)
    r2s = jnp.where(use_c1, c1, r2)

    # quadrant: mirror c1 to the active side (and pull it toward the bisecting plane)
    idx = jnp.arange(3)
    on_axis = idx == wrap_axis
    c_ax = jnp.sum(jnp.where(on_axis, c1, 0.0))
    flip = (wrap_sign != 0) & (dsign(c_ax) != wrap_sign)
    c1f = jnp.where(on_axis, -c1, c1)
    fw = jnp.minimum(fan_weight, 1.0)
    bis = (c_ax + (-c_ax)) / 2.0
    c1g = jnp.where(on_axis, -c1 + jnp.where(fw > 0, fw, 0.0) * (bis - (-c1)), c1)
    c1g = _closest_point(a, dims, c1g, c1g)
    c1_q = jnp.where(fw > 0.0, c1g, c1f)
    c1 = jnp.where(flip, c1_q, c1)
    r1s = jnp.where(flip, c1f, r1s)
    r2s = jnp.where(flip, c1f, r2s)
    return c1, r1s, r2s


def _wrap_impl(p1, p2, dimensions, wrap_axis, wrap_sign, method):
    dims = dimensions
    factor = 3.0 / (dims[0] + dims[1] + dims[2])
    a = dims * factor
    q1 = p1 * factor
    q2 = p2 * factor
    p1e = -1.0 + jnp.sum((q1 / a) ** 2)
    p2e = -1.0 + jnp.sum((q2 / a) ** 2)
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
    code = jnp.where(inside, INSIDE, jnp.where(~collinear & pierce, MANDATORY, NO_WRAP)).astype(jnp.int32)
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
    t1 = _tangent_point(p1e, r1s, q1, a, vs, vs4)
    t2 = _tangent_point(p2e, r2s, q2, a, vs, vs4)

    chord = _norm3(t1 - t2)
    length_m = chord / factor
    n_seg = jnp.clip(jnp.floor(length_m / DESIRED_SEG_LENGTH), 1, MAX_SEGMENTS).astype(jnp.int32)
    pts, near_len = _surface_path(t1, t2, a, vs, vs4, n_seg, False)
    # wrong-way test (quadrant only, at least one interior point)
    w1 = pts[1]
    w2 = pts[jnp.maximum(n_seg - 1, 0)]
    d1, _ = normalize_or_zero(q1 - t1)
    e1, _ = normalize_or_zero(w1 - t1)
    d2, _ = normalize_or_zero(q2 - t2)
    e2, _ = normalize_or_zero(w2 - t2)
    wrong = (_dot(d1, e1) > 0.0) | (_dot(d2, e2) > 0.0)
    far = (wrap_sign != 0) & (n_seg >= 2) & wrong
    _, far_len = _surface_path(t1, t2, a, vs, vs4, n_seg, True)
    length = jnp.where(far, far_len, near_len)
    length = jnp.where(length_m < DESIRED_SEG_LENGTH, chord, length)

    length = jnp.where(wraps, length / factor, 0.0)
    r1o = jnp.where(wraps, t1 / factor, p1)
    r2o = jnp.where(wraps, t2 / factor, p2)
    return code, wraps, r1o, r2o, length


@jax.custom_jvp
def _wrap_diff(p1, p2, dimensions, wrap_axis, wrap_sign, method):
    return _wrap_impl(p1, p2, dimensions, wrap_axis, wrap_sign, method)


@_wrap_diff.defjvp
def _wrap_diff_jvp(primals, tangents):
    p1, p2, dims, wrap_axis, wrap_sign, method = primals
    dp1, dp2, ddims = tangents[:3]
    out = _wrap_diff(*primals)

    def smooth(x):
        _, _, r1, r2, length = _wrap_impl(x[0:3], x[3:6], x[6:9], wrap_axis, wrap_sign, method)
        return jnp.concatenate([r1, r2, length[None]])

    x = jnp.concatenate([p1, p2, dims])
    jac = jax.jacfwd(smooth)(x)
    dx = jnp.concatenate([_zeros_if_float0(dp1, p1), _zeros_if_float0(dp2, p2), _zeros_if_float0(ddims, dims)])
    dy = jac @ dx
    code, wraps = out[0], out[1]
    t_out = (_float0_like(code), _float0_like(wraps), dy[0:3], dy[3:6], dy[6])
    return out, t_out


def _zeros_if_float0(t, like):
    if getattr(t, "dtype", None) == jax.dtypes.float0:
        return jnp.zeros_like(like)
    return t


def _float0_like(x):
    import numpy as np

    return np.zeros(jnp.shape(x), dtype=jax.dtypes.float0)


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
    code, has_path, r1, r2, length = _wrap_diff(p1, p2, dimensions, wrap_axis, wrap_sign, method)
    return WrapLine(code=code, has_path=has_path, r1=r1, r2=r2, length=length)
