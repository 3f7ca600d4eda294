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

The iterations (closest points, tangent points) are in :mod:`._ellipsoid_iterations`, the surface
length in :mod:`._ellipsoid_surface_length`; this module decides the wrap and assembles the path.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from .._spatial import safe_div, safe_sqrt
from ._ellipsoid_iterations import (
    ELLIPSOID_TINY,
    ELLIPSOID_TOLERANCE_1,
    NEWTON_STEPS,
    NEWTON_TOL,
    NEWTON_UNROLLED,
    TANGENT_MAXIT,
    TANGENT_MAXIT2,
    _closest_point,
    _dot,
    _tangent_point,
)
from ._ellipsoid_surface_length import (
    ANGLE_BLOCK,
    DESIRED_SEG_LENGTH,
    MAX_SEGMENTS,
    _norm3,
    _path_frame,
    _ray_points,
    _surface_length,
)
from ._math import dsign, normalize_or_zero
from ._result import INSIDE, MANDATORY, NO_WRAP, WrapLine

#: ``PathWrap::WrapMethod`` values (OpenSim's enum order)
HYBRID, MIDPOINT, AXIAL = 0, 1, 2

MU_BLEND_MIN = 0.7073
MU_BLEND_MAX = 0.9
NUM_FAN_SAMPLES = 300
SV_BOUNDARY_BLEND = 0.3

__all__ = ["ANGLE_BLOCK", "AXIAL", "DESIRED_SEG_LENGTH", "ELLIPSOID_TINY", "ELLIPSOID_TOLERANCE_1", "HYBRID",
           "MAX_SEGMENTS", "MIDPOINT", "MU_BLEND_MAX", "MU_BLEND_MIN", "NEWTON_STEPS", "NEWTON_TOL",
           "NEWTON_UNROLLED", "NUM_FAN_SAMPLES", "SV_BOUNDARY_BLEND", "TANGENT_MAXIT", "TANGENT_MAXIT2",
           "ellipsoid_code", "wrap_ellipsoid"]


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
    t = safe_div(-r1, r1r2, jnp.inf)
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
    root = safe_sqrt(disc)
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
    root = safe_sqrt(bb * bb - 4.0 * aa * cc)
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
