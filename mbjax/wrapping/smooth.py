"""Smooth wrapping: the shortest path over a sphere or an infinite cylinder (exact geodesics).

An option beside the OpenSim-exact default, for gradient-based optimal
control: closed forms with no iterations, no quadrant heuristics and no branch that a gradient
cannot cross, so ``jax.grad`` (reverse mode) works and the length is C¹ across the start and end
of contact (a segment touching the surface tangentially) and C^∞ elsewhere.  They are not
OpenSim's numbers where OpenSim's heuristics depart from the shortest path (the cylinder's
tangent-point slide and restarts, quadrants, far-side wraps): use :mod:`mbjax.wrapping.path` for
those.  Frames as in the OpenSim surfaces: centred at the origin, the cylinder's axis is z.  This
module is one segment over one surface; whole paths and models (``load_osim(path,
wrapping="smooth")``) are :mod:`mbjax.wrapping.smooth_path`.

With end points at distances ``a, b > R`` from the centre (sphere) or the axis (cylinder, in the
cross-section), the angle ``γ`` between them about the centre/axis and the tangency angles
``α = acos(R/a)``, ``β = acos(R/b)``, the straight segment clears the surface iff ``γ ≤ α + β``;
otherwise the shortest path is tangent line + arc + tangent line,

    L₂ = √(a² − R²) + √(b² − R²) + R (γ − α − β)

(at ``γ = α + β`` both the value and ``dL/dγ = R`` match the straight chord's, hence C¹).  On a
sphere that is the path (a great circle in the plane of the two points and the centre); on a
cylinder the developed surface is a plane, so the path is straight there and
``L = √(L₂² + Δz²)`` with ``L₂`` from the cross-section.  An end point on the surface (``a = R``)
is its own tangent point (``α = 0``): the path is the limit of the paths from outside, e.g. ``π R``
between antipodal points of a sphere.  An end point inside the surface (``a < R``) has no wrapping
path: the straight segment is returned (OpenSim's ``INSIDE``), the one place the length is not
smooth.

Tangent points (:func:`sphere_geodesic`, :func:`cylinder_geodesic`), needed to chain wraps along
a path (:mod:`mbjax.wrapping.smooth_path`).  Sphere: in the plane of p1, p2 and the centre, with
``e₁ = p̂1`` and ``e₂`` the unit component of p2 normal to ``e₁`` (so p2 = b(cos γ e₁ + sin γ e₂)),

    T1 = R (cos α e₁ + sin α e₂),   T2 = R (cos(γ − β) e₁ + sin(γ − β) e₂),   arc = R (γ − α − β)

(``|p1 − T1| = √(a² − R²)`` because ``cos α = R/a``).  Antipodal ends (γ = π) leave the plane
undefined: every great circle gives the same length (continuous), the tangent points and the
gradient are not (the sphere's analogue of the cylinder's side switch).  Cylinder, in the
cross-section with ``ê_u = u/a``, ``ê_v = v/b`` (u, v the xy parts of p1, p2), travel sense
``s = ±1`` (counter-clockwise about +z is +1) and ``rot(θ)`` the planar rotation,

    T1_xy = R rot(s α) ê_u,   T2_xy = R rot(−s β) ê_v,
    T1_z = z₁ + Δz ℓ₁/L₂,     T2_z = z₂ − Δz ℓ₂/L₂,     arc = R (γ − α − β) L/L₂,

with ``ℓ₁ = √(a² − R²)``, ``ℓ₂ = √(b² − R²)``: the developed path is a straight line, so the
heights grow in proportion to the developed length, and the arc is a helix.  The sum
``|p1 − T1| + arc + |T2 − p2|`` is ``L`` identically.

Quadrants (cylinder).  ``allowed = d`` (a unit vector in the cross-section: OpenSim's quadrant
``+x`` is d = (1, 0), ``-y`` is (0, −1)) restricts the path to the homotopy class that passes the
``d`` side: it may not cross the ray from the axis in the direction ``−d`` (as if the cylinder
carried a half-plane fin there).  With ``φ_u``, ``φ_v ∈ (−π, π]`` the angles of u and v from d,
the travel is ``γ = |φ_v − φ_u|`` in the sense ``s = sign(φ_v − φ_u)``: smooth except where an
end point crosses the forbidden ray (``φ`` jumps by 2π: the path jumps from one way round to the
other), which is the place OpenSim's quadrant is not meant for either.  Unconstrained
(``d = 0``): the shorter way, ``γ = |φ|`` with φ the signed angle from u to v, so the side
switches (length continuous, gradient not) where the chord in the cross-section passes through
the axis (φ = ±π).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._spatial import safe_norm, safe_sqrt


def _circle_angles(a, b, gamma, radius):
    """Tangency angles ``α = acos(R/a)``, ``β = acos(R/b)`` and whether the chord is obstructed.  An end
    point on the surface (``a = R``) is outside: ``α = 0``, with the derivative of the limit from
    outside (0, where ``acos`` alone would give an infinite one)."""
    inside = (a < radius) | (b < radius)

    def acos_ratio(d):
        r = jnp.where(inside, 0.5, radius / jnp.where(inside, 1.0, d))
        below = r < 1.0
        return jnp.where(below, jnp.arccos(jnp.where(below, r, 0.5)), 0.0)

    alpha, beta = acos_ratio(a), acos_ratio(b)
    return alpha, beta, ~inside & (gamma > alpha + beta)


def _circle_wrap(a, b, gamma, radius, chord):
    """The shortest length around a circle/great circle: ``chord`` where it clears, else L₂."""
    alpha, beta, wrap = _circle_angles(a, b, gamma, radius)
    around = safe_sqrt(a * a - radius * radius) + safe_sqrt(b * b - radius * radius) + radius * (gamma - alpha - beta)
    return jnp.where(wrap, around, chord), wrap


def _sphere_geodesic_length(p1, p2, radius):
    """:func:`sphere_geodesic_length` without its argument checks (inputs of a validated model)."""
    p1, p2 = jnp.asarray(p1), jnp.asarray(p2)
    a, b = safe_norm(p1), safe_norm(p2)
    return _circle_wrap(a, b, _sphere_angle(p1, p2, a, b), radius, safe_norm(p1 - p2))


def _sphere_angle(p1, p2, a, b):
    """The angle between p1 and p2 about the centre, in [0, π]; 0 (grad-safe) where an end point is
    at the centre (inside the sphere, where it is not used)."""
    centre = (a == 0) | (b == 0)
    cross = jnp.where(centre, 0.0, safe_norm(jnp.cross(p1, p2)))
    return jnp.arctan2(cross, jnp.where(centre, 1.0, jnp.sum(p1 * p2, axis=-1)))


def _cylinder_geodesic_length(p1, p2, radius, side: int = 0):
    """:func:`cylinder_geodesic_length` without its argument checks."""
    p1, p2 = jnp.asarray(p1), jnp.asarray(p2)
    u, v = p1[..., :2], p2[..., :2]
    a, b = safe_norm(u), safe_norm(v)
    phi = _angle(u, v)  # (-π, π]
    if side == 0:
        gamma = jnp.abs(phi)
    elif side in (1, -1):
        s = side * phi
        gamma = jnp.where(s >= 0, s, s + 2 * jnp.pi)
    else:
        raise ValueError(f"side must be -1, 0 or +1, got {side!r}")
    l2, wraps = _circle_wrap(a, b, gamma, radius, safe_norm(u - v))
    dz = p2[..., 2] - p1[..., 2]
    return jnp.where(wraps, safe_sqrt(l2 * l2 + dz * dz), safe_norm(p1 - p2)), wraps


class Geodesic(NamedTuple):
    """The shortest path from p1 to p2 around one surface (all in the surface's frame).

    ``length`` the whole path (the chord where it clears); ``wraps`` whether it touches the
    surface; ``t1``, ``t2`` where it leaves the line from p1 and rejoins the one to p2 (both
    ``p2`` where it does not wrap, so ``(p1, t1)``, ``(t2, p2)`` are always the straight pieces);
    ``arc`` the length on the surface between them (0 where it does not wrap).
    """

    length: jnp.ndarray
    wraps: jnp.ndarray
    t1: jnp.ndarray
    t2: jnp.ndarray
    arc: jnp.ndarray


def _unit(v, n):
    ok = n > 0
    return jnp.where(ok[..., None], v / jnp.where(ok, n, 1.0)[..., None], 0.0)


def _any_normal(e):
    """A unit vector normal to the unit vector ``e`` (for antipodal sphere ends, where the plane is free)."""
    k = jnp.argmin(jnp.abs(e), axis=-1)
    axis = (jnp.arange(3) == k[..., None]).astype(e.dtype)
    n = jnp.cross(e, axis)
    return _unit(n, safe_norm(n))


def _sphere_geodesic(p1, p2, radius) -> Geodesic:
    """:func:`sphere_geodesic` without its argument checks (inputs of a validated model)."""
    p1, p2 = jnp.asarray(p1), jnp.asarray(p2)
    radius = jnp.asarray(radius, p1.dtype)
    a, b = safe_norm(p1), safe_norm(p2)
    gamma = _sphere_angle(p1, p2, a, b)
    alpha, beta, wrap = _circle_angles(a, b, gamma, radius)
    e1 = _unit(p1, a)
    w = p2 - jnp.sum(p2 * e1, axis=-1, keepdims=True) * e1
    wn = safe_norm(w)
    e2 = jnp.where((wn > 1e-12 * b)[..., None], _unit(w, wn), _any_normal(e1))
    r = radius[..., None]
    t1 = r * (jnp.cos(alpha)[..., None] * e1 + jnp.sin(alpha)[..., None] * e2)
    g2 = gamma - beta
    t2 = r * (jnp.cos(g2)[..., None] * e1 + jnp.sin(g2)[..., None] * e2)
    arc = radius * (gamma - alpha - beta)
    length = jnp.where(wrap, safe_sqrt(a * a - radius * radius) + safe_sqrt(b * b - radius * radius) + arc,
                       safe_norm(p1 - p2))
    w3 = wrap[..., None]
    return Geodesic(length, wrap, jnp.where(w3, t1, p2), jnp.where(w3, t2, p2), jnp.where(wrap, arc, 0.0))


def _cross2(u, v):
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


def _angle(d, u):
    """Signed angle from the 2-vector ``d`` to ``u`` in (−π, π] (0, grad-safe, where either is 0: an
    end point on the axis, inside the cylinder, where the angle is not used)."""
    zero = jnp.all(u == 0, axis=-1) | jnp.all(d == 0, axis=-1)
    u = jnp.where(zero[..., None], jnp.ones_like(u), u)
    d = jnp.where(zero[..., None], jnp.ones_like(d), d)
    return jnp.arctan2(_cross2(d, u), jnp.sum(d * u, axis=-1))


def _rot2(e, theta):
    c, s = jnp.cos(theta), jnp.sin(theta)
    return jnp.stack([c * e[..., 0] - s * e[..., 1], s * e[..., 0] + c * e[..., 1]], axis=-1)


def _cylinder_geodesic(p1, p2, radius, allowed=None) -> Geodesic:
    """:func:`cylinder_geodesic` without its argument checks (inputs of a validated model)."""
    p1, p2 = jnp.asarray(p1), jnp.asarray(p2)
    radius = jnp.asarray(radius, p1.dtype)
    u, v = p1[..., :2], p2[..., :2]
    a, b = safe_norm(u), safe_norm(v)
    phi = _angle(u, v)  # shorter way: u -> v
    if allowed is not None:
        d = jnp.broadcast_to(jnp.asarray(allowed, p1.dtype), u.shape)
        constrained = jnp.any(d != 0, axis=-1)
        d = jnp.where(constrained[..., None], d, jnp.ones_like(d))  # grad-safe where unconstrained
        phi = jnp.where(constrained, _angle(d, v) - _angle(d, u), phi)
    gamma = jnp.abs(phi)
    sense = jnp.where(phi >= 0, 1.0, -1.0).astype(p1.dtype)
    alpha, beta, wrap = _circle_angles(a, b, gamma, radius)
    l1 = safe_sqrt(a * a - radius * radius)
    l2 = safe_sqrt(b * b - radius * radius)
    arc2 = radius * (gamma - alpha - beta)
    dev = jnp.where(wrap, l1 + l2 + arc2, 1.0)  # developed (cross-section) length L₂
    dz = p2[..., 2] - p1[..., 2]
    length3 = safe_sqrt(dev * dev + dz * dz)
    r = radius[..., None]
    t1 = jnp.concatenate([r * _rot2(_unit(u, a), sense * alpha), (p1[..., 2] + dz * l1 / dev)[..., None]], axis=-1)
    t2 = jnp.concatenate([r * _rot2(_unit(v, b), -sense * beta), (p2[..., 2] - dz * l2 / dev)[..., None]], axis=-1)
    arc = arc2 * length3 / dev
    w3 = wrap[..., None]
    return Geodesic(jnp.where(wrap, length3, safe_norm(p1 - p2)), wrap, jnp.where(w3, t1, p2), jnp.where(w3, t2, p2),
                    jnp.where(wrap, arc, 0.0))


def geodesic_inputs(where: str, p1, p2, radius, radius_name: str = "radius", radius_axis: bool = False, extra=()):
    """The checked end points and surface size of a single-surface geodesic.

    Trace time: ``p1``, ``p2`` real ``(..., 3)`` arrays whose leading axes broadcast together;
    ``radius`` a scalar (``radius_axis``: ``(..., 3)`` semi-axes) that does not enlarge the points'
    batch shape; integer points are taken as floats.  Run time (one fused check, checks on): points
    finite, sizes finite and positive.  ``extra``: further ``(bad, message)`` rules.
    """
    def real(x, name):
        return _checks.real_array(x, f"{where}: {name} must be a real array",
                                  f"{where}: {name} must be a real (integer or floating) array")

    p1, p2, radius = real(p1, "p1"), real(p2, "p2"), real(radius, radius_name)
    for name, p in (("p1", p1), ("p2", p2)):
        if p.ndim < 1 or p.shape[-1] != 3:
            raise ValueError(f"{where}: {name} must have shape (..., 3) (points in the surface's frame), "
                             f"got {tuple(p.shape)}")
    try:
        batch = np.broadcast_shapes(p1.shape[:-1], p2.shape[:-1])
    except ValueError:
        raise ValueError(f"{where}: p1 {tuple(p1.shape)} and p2 {tuple(p2.shape)} must have leading (batch) "
                         "axes that broadcast together") from None
    if radius_axis and (radius.ndim < 1 or radius.shape[-1] != 3):
        raise ValueError(f"{where}: {radius_name} must have shape (..., 3) (the semi-axes along x, y, z), "
                         f"got {tuple(radius.shape)}")
    own = radius.shape[:-1] if radius_axis else radius.shape
    if not _checks.broadcasts_to(own, batch):
        expect = "(..., 3) semi-axes whose leading axes" if radius_axis else "a scalar or an array that"
        raise ValueError(f"{where}: {radius_name} must be {expect} broadcast to the points' batch shape "
                         f"{tuple(batch)}, got {tuple(radius.shape)} (one surface per pair of points; "
                         "jax.vmap over several surfaces)")
    floating = [p.dtype for p in (p1, p2) if jnp.issubdtype(p.dtype, jnp.floating)]
    dtype = jnp.result_type(*floating) if floating else jnp.result_type(float)
    p1, p2 = (p if jnp.issubdtype(p.dtype, jnp.floating) else p.astype(dtype) for p in (p1, p2))
    rules = [_checks.not_finite(p1, f"{where}: p1"), _checks.not_finite(p2, f"{where}: p2"),
             (~jnp.isfinite(radius) | (radius <= 0),
              f"{where}: {radius_name} must be finite and positive"), *extra]
    return _checks.all_of(p1, rules), p2, radius


def sphere_geodesic_length(p1, p2, radius):
    """Shortest length from ``p1`` to ``p2`` (``(..., 3)``) outside a sphere of ``radius`` at the origin.

    Returns ``(length, wraps)``; ``wraps`` is True where the path touches the sphere.  An end point
    inside the sphere: the straight segment, ``wraps`` False (no path outside exists; OpenSim's wrap
    methods also leave such a segment unwrapped).
    """
    return _sphere_geodesic_length(*geodesic_inputs("sphere_geodesic_length", p1, p2, radius))


def cylinder_geodesic_length(p1, p2, radius, side: int = 0):
    """Shortest length from ``p1`` to ``p2`` (``(..., 3)``) outside an infinite cylinder (axis z).

    ``side``: ``+1`` the path goes counter-clockwise about +z from p1 to p2, ``-1`` clockwise,
    ``0`` the shorter way (where both ways are equally long, e.g. p1 and p2 diametrically opposite,
    the length is continuous but its gradient is not).  Returns ``(length, wraps)``.  An end point
    inside the cylinder: the straight segment, ``wraps`` False (as OpenSim leaves it unwrapped).
    """
    if isinstance(side, (bool, np.bool_)) or side not in (-1, 0, 1):
        raise ValueError(f"cylinder_geodesic_length: side must be -1, 0 or +1, got {side!r}")
    return _cylinder_geodesic_length(*geodesic_inputs("cylinder_geodesic_length", p1, p2, radius), int(side))


def sphere_geodesic(p1, p2, radius) -> Geodesic:
    """The great-circle shortest path from ``p1`` to ``p2`` (``(..., 3)``) around a sphere at the origin,
    with its tangent points (module docstring)."""
    return _sphere_geodesic(*geodesic_inputs("sphere_geodesic", p1, p2, radius))


def cylinder_geodesic(p1, p2, radius, allowed=None) -> Geodesic:
    """The shortest path from ``p1`` to ``p2`` (``(..., 3)``) around an infinite cylinder (axis z) with
    its tangent points (module docstring).

    ``allowed`` ``(..., 2)``: the side the path must pass (OpenSim's quadrant as a unit vector in
    the cross-section; a zero vector or ``None``: unconstrained, the shorter way).  An end point inside
    the cylinder: the straight segment, not wrapped (as OpenSim leaves it).
    """
    extra = []
    if allowed is not None:
        allowed = _checks.real_array(allowed, "cylinder_geodesic: allowed must be a real array (..., 2) (a "
                                     "direction in the cross-section) or None",
                                     "cylinder_geodesic: allowed must be a real (integer or floating) array")
        if allowed.ndim < 1 or allowed.shape[-1] != 2:
            raise ValueError(f"cylinder_geodesic: allowed must have shape (..., 2) (a direction in the "
                             f"cross-section, e.g. (1, 0) for quadrant +x), got {tuple(allowed.shape)}")
        extra = [_checks.not_finite(allowed, "cylinder_geodesic: allowed")]
    p1, p2, radius = geodesic_inputs("cylinder_geodesic", p1, p2, radius, extra=extra)
    if allowed is not None:
        batch = np.broadcast_shapes(p1.shape[:-1], p2.shape[:-1])
        if not _checks.broadcasts_to(allowed.shape[:-1], batch):
            raise ValueError(f"cylinder_geodesic: allowed {tuple(allowed.shape)} must have leading axes that "
                             f"broadcast to the points' batch shape {tuple(batch)}")
        p1, p2 = jnp.broadcast_to(p1, batch + (3,)), jnp.broadcast_to(p2, batch + (3,))
    return _cylinder_geodesic(p1, p2, radius, allowed)
