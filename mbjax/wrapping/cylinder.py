"""OpenSim 4.6 ``WrapCylinder::wrapLine`` for one path segment, in JAX.

Ports ``WrapCylinder::wrapLine``, ``_make_spiral_path`` and ``_adjust_tangent_point``
(``OpenSim/Simulation/Wrap/WrapCylinder.cpp``) decision for decision.  The cylinder's axis is the
frame's z axis, centred at the origin; ``length`` only matters for the final "both tangent points
beyond the ends" test (the surface itself is infinite, as in OpenSim).

Every branch of the C++ is evaluated and selected with ``jnp.where``; all square roots, divisions
and ``atan2`` calls are guarded so that unused branches never inject NaN into gradients, and the
``acos`` angles OpenSim only *compares* are computed under ``stop_gradient``.

Heuristics reproduced exactly (they are OpenSim's, documented here because they shape the result):

* Tangent-point candidates r1a/r1b (r2a/r2b) are the two tangents from p1 (p2) in the plane
  through p1 perpendicular to the axis; *unconstrained* picks the pair with the largest cosine
  between their radial directions, *constrained* (quadrant ``wrap_axis``, ``wrap_sign``) picks by
  the sign of the wrap-axis coordinate, with ``far_side_wrap`` from comparing
  ``acos`` angles, and ``long_wrap`` when ``(r1-p11 + r2-p22)·(r1-p1 + r2-p2) < 0``.
* The preliminary tangent points slide along the axis to the plane through p1, p2 and an apex
  point; the slid point is kept only if its axial projection (OpenSim passes the *point* p22 / p11
  as the line *direction* there, reproduced literally) moves towards the other end.
* ``noWrap`` if both tangent points lie beyond ``|z| > length/2``.
* ``_make_spiral_path``: the surface length is the helix length ``sqrt((R theta)^2 + dz^2)`` with
  ``theta = atan2`` of the radial vectors (``2 pi - theta`` for a long wrap).  When the path holds
  more than one ``PathWrap`` (``single_wrap`` False) and the helix is sampled with at least two
  0.002 m segments (``int(L / 0.002) >= 2``), r1 and r2 are moved by
  ``_adjust_tangent_point`` (1.5 x the step to the intersection of p1-w1 with the axial line
  through r1) until the p-r and r-w directions make the same angle with the axis to within
  ``TANGENCY_THRESHOLD`` = 0.1 degree, at most ``MAX_ITERATIONS`` = 100 restarts; r2's adjustment
  uses the helix point at ``1 - t`` built from the *already adjusted* r1 and the old angle, as the
  C++ lambda does.  With ``single_wrap`` True OpenSim never adjusts (assumes a model whose
  visualisation is disabled, or any WrapTorus-internal cylinder: the length is the same).

Degenerate inputs where the C++ reads an uninitialised ``Vec3`` (segment exactly parallel to the
axis in ``IntersectLines``) use :func:`mbjax.wrapping._math.intersect_lines`'s fallback points.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._spatial import safe_div, safe_sqrt
from ._math import (
    ROUNDOFF_ERROR,
    closest_point_on_line,
    distance_squared,
    distance_squared_point_to_line,
    dsign,
    intersect_lines,
    intersect_segment_plane,
    normalize_or_zero,
)
from ._lane_loop import lane_while_loop
from ._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED, WrapLine

#: ``WrapCylinder.cpp`` ``MAX_ITERATIONS`` (restarts of the spiral path for tangency)
MAX_ITERATIONS = 100
#: ``WrapCylinder.cpp`` ``TANGENCY_THRESHOLD``: 0.1 degree in radians
TANGENCY_THRESHOLD = 0.1 * (3.14159265358979323846 / 180.0)
#: length of one sampled wrap segment in ``_make_spiral_path`` (metres)
WRAP_SEGMENT_LENGTH = 0.002


def _unit_vec3(v):
    """SimTK ``UnitVec3(v)``: v / |v| (zero vector -> zero here; OpenSim gets NaN, same decisions)."""
    n, mag = normalize_or_zero(v)
    return jnp.where(mag > 0, v / jnp.where(mag > 0, mag, 1.0), n)


def _where3(c, a, b):
    return jnp.where(c[..., None], a, b)


def _axis_consts(dtype):
    p0 = jnp.array([0.0, 0.0, -1.0], dtype)
    dn = jnp.array([0.0, 0.0, 1.0], dtype)
    return p0, dn


def _tangent_candidates(p, radius, p0, dn):
    """The two tangent points from p onto the circle of the cylinder in p's axial plane."""
    pa, _ = closest_point_on_line(p, p0, dn)
    vv, pdist = normalize_or_zero(p - pa)
    sin_theta = safe_div(radius, pdist)
    dist = radius * sin_theta
    pp = pa + dist * vv
    dist = safe_sqrt(radius * radius - dist * dist)
    uu = jnp.cross(dn, vv)
    return pa, pdist, pp + dist * uu, pp - dist * uu


def _acos_angle(a, b):
    """``acos(a·b / (|a||b|))`` as the C++ computes it, only for comparisons (no gradient)."""
    a = jax.lax.stop_gradient(a)
    b = jax.lax.stop_gradient(b)
    na = jnp.linalg.norm(a)
    nb = jnp.linalg.norm(b)
    return jnp.arccos(jnp.dot(a, b) / (na * nb))


def _spiral(r1, r2, radius, far_side, p0, dn):
    """Angle, axial distance and helix length of ``_make_spiral_path`` for tangent points r1, r2."""
    r1a, _ = closest_point_on_line(r1, p0, dn)
    r2a, _ = closest_point_on_line(r2, p0, dn)
    axial = jnp.dot(r2a - r1a, dn)
    uu = r1 - r1a
    vv = r2 - r2a
    s = jnp.dot(jnp.cross(uu, vv), dn)
    c = jnp.dot(uu, vv)
    ok = (s * s + c * c) > 0
    theta = jnp.where(ok, jnp.arctan2(jnp.where(ok, s, 0.0), jnp.where(ok, c, 1.0)), 0.0)
    theta = jnp.where(far_side, 2.0 * jnp.pi - theta, theta)
    x = radius * theta
    length = safe_sqrt(x * x + axial * axial)
    return theta, axial, length


def _spiral_point(t, r1, theta, axial, sense, dn):
    """``CalcSpiralWrapPoint``: r1 rotated by ``sense t theta`` about z, raised by ``t dz``."""
    ang = sense * t * theta
    c, s = jnp.cos(ang), jnp.sin(ang)
    rot = jnp.stack([c * r1[0] - s * r1[1], s * r1[0] + c * r1[1], r1[2]])
    return rot + dn * (t * axial)


def _line_point_closest_to_line(p1, p2, p3, p4):
    """``IntersectLines``' ``pInt2``: the point of line p3p4 closest to line p1p2.

    The 3x3 determinant is written as a triple product (same value as ``_math.intersect_lines``,
    much cheaper to compile inside the restart loop); parallel lines give p3 (see module doc).
    """
    vec1, _ = normalize_or_zero(p2 - p1)
    vec2, _ = normalize_or_zero(p4 - p3)
    cross = jnp.cross(vec1, vec2)
    denom = jnp.dot(cross, cross)
    ok = jnp.abs(denom) > ROUNDOFF_ERROR
    t = jnp.dot(p3 - p1, jnp.cross(vec1, cross)) / jnp.where(ok, denom, 1.0)
    return p3 + jnp.where(ok, t, 0.0) * vec2


def _adjust_tangent_point(pt1, dn, r1, w1):
    """``_adjust_tangent_point``: (adjusted?, new r1)."""
    pr, _ = normalize_or_zero(r1 - pt1)
    rw, _ = normalize_or_zero(w1 - r1)
    alpha = jnp.arccos(jax.lax.stop_gradient(jnp.dot(pr, dn)))
    omega = jnp.arccos(jax.lax.stop_gradient(jnp.dot(rw, dn)))
    adjust = jnp.abs(alpha - omega) > TANGENCY_THRESHOLD
    p1a, _ = closest_point_on_line(pt1, r1, dn)
    w1a, _ = closest_point_on_line(w1, r1, dn)
    p1aw1a_int = _line_point_closest_to_line(pt1, w1, p1a, w1a)
    new = r1 + 1.5 * (p1aw1a_int - r1)
    return adjust, _where3(adjust, new, r1)


def _restart(p1, p2, radius, far_side, single_wrap, r1, r2):
    """One pass of ``_make_spiral_path``'s restart loop: (r1, r2, tangent?) for one lane."""
    p0, dn = _axis_consts(r1.dtype)
    sense = jnp.where(far_side, -1.0, 1.0)
    theta, axial, length = _spiral(r1, r2, radius, far_side, p0, dn)
    nseg = jnp.floor(length / WRAP_SEGMENT_LENGTH)
    t = 1.0 / jnp.maximum(nseg, 1.0)
    try_adjust = jnp.logical_not(single_wrap) & (nseg >= 2)
    w = _spiral_point(t, r1, theta, axial, sense, dn)
    adj1, r1n = _adjust_tangent_point(p1, dn, r1, w)
    w2 = _spiral_point(1.0 - t, r1n, theta, axial, sense, dn)
    adj2, r2n = _adjust_tangent_point(p2, dn, r2, w2)
    restart = try_adjust & (adj1 | adj2)
    return _where3(restart, r1n, r1), _where3(restart, r2n, r2), ~restart


def _restart_step(state, p1, p2, radius, far_side, single_wrap):
    """The restart loop's body: ``state = (r1, r2, finished, k)``; a lane finishes when tangent or
    after ``MAX_ITERATIONS`` restarts."""
    r1, r2, _, k = state
    r1, r2, tangent = _restart(p1, p2, radius, far_side, single_wrap, r1, r2)
    return r1, r2, tangent | (k + 1 >= MAX_ITERATIONS), k + 1


def _make_spiral_path(p1, p2, r1, r2, radius, far_side, single_wrap, p0, dn, skip=False):
    """``_make_spiral_path``: final (r1, r2, surface length) after the tangency restarts.

    ``skip``: the segment produces no path (OpenSim returns before this call), so no restarts run
    for it (its result is discarded).  The restarts stop as soon as the lane is tangent, under
    ``vmap`` lane by lane (:func:`~mbjax.wrapping._lane_loop.lane_while_loop`: one lane that never
    becomes tangent no longer makes the batch run OpenSim's 100 restarts); the loop is
    forward-mode differentiable (jvp, jacfwd: what moment arms use); reverse mode goes through the
    transposable rule :func:`~mbjax.wrapping.surfaces.evaluate_surface` attaches.
    """
    if not (isinstance(single_wrap, bool) and single_wrap):  # a static True needs no loop
        init = (r1, r2, jnp.asarray(skip, bool), jnp.zeros((), jnp.int32))
        consts = (p1, p2, radius, far_side, single_wrap)
        r1, r2, _, _ = lane_while_loop(lambda s, *c: ~s[2], _restart_step, init, consts)
    _, _, length = _spiral(r1, r2, radius, far_side, p0, dn)
    return r1, r2, length


def wrap_cylinder(p1, p2, radius, length, wrap_axis, wrap_sign, single_wrap) -> WrapLine:
    """OpenSim ``WrapCylinder::wrapLine`` of segment p1-p2 (cylinder frame: axis z, centre 0).

    ``wrap_axis`` (0, 1, 2) and ``wrap_sign`` (-1, +1; 0 for quadrant ``all``) are the quadrant;
    ``single_wrap`` is OpenSim's ``WrapResult::singleWrap`` (the path has exactly one PathWrap),
    which switches off the tangent-point adjustment (a Python ``True`` also drops the restart loop
    from the compiled graph).  Returns a :class:`WrapLine`; where no path is
    produced ``r1 = p1``, ``r2 = p2`` and ``length = 0``.
    """
    p1 = jnp.asarray(p1)
    p2 = jnp.asarray(p2)
    dtype = jnp.result_type(p1, p2, radius, float)
    p1 = p1.astype(dtype)
    p2 = p2.astype(dtype)
    radius = jnp.asarray(radius, dtype)
    length = jnp.asarray(length, dtype)
    wrap_axis = jnp.asarray(wrap_axis, jnp.int32)
    wrap_sign = jnp.asarray(wrap_sign, jnp.int32)
    if not isinstance(single_wrap, bool):
        single_wrap = jnp.asarray(single_wrap, bool)
    p0, dn = _axis_consts(dtype)
    r_sq = radius * radius
    constrained = wrap_sign != 0

    inside = (distance_squared_point_to_line(p1, p0, dn) < r_sq) | (
        distance_squared_point_to_line(p2, p0, dn) < r_sq)

    half = 0.5 * length
    cyl_start = jnp.stack([jnp.zeros((), dtype), jnp.zeros((), dtype), -half])
    cyl_end = jnp.stack([jnp.zeros((), dtype), jnp.zeros((), dtype), half])
    _, near12, t12, near00, _ = intersect_lines(p1, p2, cyl_start, cyl_end)
    hits = (distance_squared(near12, near00) < r_sq) & (t12 > 0.0) & (t12 < 1.0)

    p11, p11_dist, r1a, r1b = _tangent_candidates(p1, radius, p0, dn)
    p22, p22_dist, r2a, r2b = _tangent_candidates(p2, radius, p0, dn)

    # --- constrained: early decision on the quadrant
    s1 = dsign(p1[wrap_axis])
    s2 = dsign(p2[wrap_axis])
    either_side = (s1 == wrap_sign) | (s2 == wrap_sign)
    potential = (s1 != s2) & (dsign(near12[wrap_axis]) != wrap_sign)
    con_code = jnp.where(either_side, jnp.where(hits, MANDATORY, jnp.where(potential, WRAPPED, NO_WRAP)),
                         WRAPPED)
    code = jnp.where(constrained, con_code, jnp.where(hits, MANDATORY, NO_WRAP)).astype(jnp.int32)

    # --- constrained: the 4-candidate choice, far_side_wrap and long_wrap
    alpha = _acos_angle(r1a - p11, r2b - p22)
    beta = _acos_angle(r1b - p11, r2a - p22)
    g = alpha > beta
    a1 = dsign(r1a[wrap_axis]) == wrap_sign
    b1 = dsign(r1b[wrap_axis]) == wrap_sign
    a2 = dsign(r2a[wrap_axis]) == wrap_sign
    b2 = dsign(r2b[wrap_axis]) == wrap_sign
    # True: (r1a, r2b); False: (r1b, r2a)
    pick_ab = jnp.where(a1, jnp.where(b1, ~a2, True), jnp.where(b1, False, ~a2 & (b2 | g)))
    none_active = ~a1 & ~b1 & ~a2 & ~b2
    far_side = jnp.where(none_active, True, jnp.where(pick_ab, g, ~g))
    c_r1 = _where3(pick_ab, r1a, r1b)
    c_r2 = _where3(pick_ab, r2b, r2a)
    sum_musc = (c_r1 - p1) + (c_r2 - p2)
    sum_r = (c_r1 - p11) + (c_r2 - p22)
    long_wrap = jnp.dot(sum_r, sum_musc) < 0.0

    # --- unconstrained: the pair with the most aligned radial directions
    n1a, _ = normalize_or_zero(r1a - p11)
    n1b, _ = normalize_or_zero(r1b - p11)
    n2a, _ = normalize_or_zero(r2a - p22)
    n2b, _ = normalize_or_zero(r2b - p22)
    d1, d2, d3, d4 = jnp.dot(n1a, n2a), jnp.dot(n1a, n2b), jnp.dot(n1b, n2a), jnp.dot(n1b, n2b)
    c1 = (d1 > d2) & (d1 > d3) & (d1 > d4)
    c2 = ~c1 & (d2 > d3) & (d2 > d4)
    c3 = ~c1 & ~c2 & (d3 > d4)
    u_r1 = _where3(c1 | c2, r1a, r1b)
    u_r2 = _where3(c1 | c3, r2a, r2b)

    r1 = _where3(constrained, c_r1, u_r1)
    r2 = _where3(constrained, c_r2, u_r2)
    far_side = constrained & far_side
    long_wrap = constrained & long_wrap

    # --- apex on the cylinder edge facing (or, far side, opposite) the segment
    t = safe_div(p11_dist, p11_dist + p22_dist)
    mpt = p1 + t * (p2 - p1)
    axispt, _ = closest_point_on_line(mpt, p0, dn)
    l1, _ = normalize_or_zero(p1 - axispt)
    l2, _ = normalize_or_zero(p2 - axispt)
    plane_normal, _ = normalize_or_zero(_unit_vec3(jnp.cross(l1, l2)))
    vert1, _ = normalize_or_zero(jnp.cross(dn, plane_normal))
    vert2, _ = normalize_or_zero(jnp.cross(plane_normal, dn))
    apex1 = axispt + radius * vert1
    apex2 = axispt + radius * vert2
    closer1 = distance_squared(mpt, apex1) < distance_squared(mpt, apex2)
    apex = _where3(closer1 != far_side, apex1, apex2)

    # --- slide r1/r2 along the axis onto the plane (p1, p2, apex)
    uu, _ = normalize_or_zero(p1 - apex)
    vv, _ = normalize_or_zero(p2 - apex)
    plane_normal = _unit_vec3(jnp.cross(uu, vv))
    d = -p1[0] * plane_normal[0] - p1[1] * plane_normal[1] - p1[2] * plane_normal[2]
    r1_inter, r1p = intersect_segment_plane(r1 - 10.0 * dn, r1 + 10.0 * dn, plane_normal, d)
    r2_inter, r2p = intersect_segment_plane(r2 - 10.0 * dn, r2 + 10.0 * dn, plane_normal, d)
    # OpenSim passes the point p22 as the line direction here: reproduced literally
    r1ax, _ = closest_point_on_line(r1p, p11, p22)
    r2ax, _ = closest_point_on_line(r2p, p11, p22)
    use1 = r1_inter & (distance_squared(r1ax, p22) < distance_squared(p11, p22))
    use2 = r2_inter & (distance_squared(r2ax, p11) < distance_squared(p22, p11))
    r1 = _where3(use1, r1p, r1)
    r2 = _where3(use2, r2p, r2)

    beyond = ((r1[2] < -half) | (r1[2] > half)) & ((r2[2] < -half) | (r2[2] > half))

    code = jnp.where(inside, INSIDE, jnp.where(beyond, NO_WRAP, code)).astype(jnp.int32)
    has_path = (code == WRAPPED) | (code == MANDATORY)
    r1, r2, wrap_len = _make_spiral_path(p1, p2, r1, r2, radius, long_wrap, single_wrap, p0, dn, skip=~has_path)

    return WrapLine(
        code=code,
        has_path=has_path,
        r1=_where3(has_path, r1, p1),
        r2=_where3(has_path, r2, p2),
        length=jnp.where(has_path, wrap_len, 0.0),
    )
