"""Triangle quadrature and Delaunay meshing of a planar insertion (TPS-ligament seed Eq. 9-15).

Reference triangle ``{r, s >= 0, r + s <= 1}`` with ``x = (1-r-s) x1 + r x2 + s x3`` (Eq. 11).
Rules are stored with weights summing to 1, so ``∫_σ f ≈ A_σ Σ_g W_g f(r_g, s_g)`` (Eq. 14-15 with
``J_kg = A_σk``).  Rules: the paper's 1-, 3- and 4-point Gauss rules (Table 1, restored in
ERRATA), Radon's 7-point degree-5 rule (= Dunavant degree 5) and Stroud's conical-product rules of
any degree (collapsed Gauss-Legendre, ``m²`` points, exact to degree ``2m - 2``) for reference values.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
from scipy.spatial import Delaunay


class TriangleRule(NamedTuple):
    """Points ``(g, 2)`` as ``(r, s)`` on the reference triangle, weights ``(g,)`` summing to 1."""

    points: np.ndarray
    weights: np.ndarray
    degree: int
    name: str


def gauss_rule(n_points: int) -> TriangleRule:
    """The seed's Table 1 (ERRATA) rules: ``n_points`` in {1, 3, 4}; 7 gives Radon's degree-5 rule."""
    if n_points == 1:
        return TriangleRule(np.array([[1 / 3, 1 / 3]]), np.array([1.0]), 1, "gauss-1")
    if n_points == 3:
        pts = np.array([[1 / 6, 1 / 6], [2 / 3, 1 / 6], [1 / 6, 2 / 3]])
        return TriangleRule(pts, np.full(3, 1 / 3), 2, "gauss-3")
    if n_points == 4:
        pts = np.array([[1 / 3, 1 / 3], [1 / 5, 1 / 5], [3 / 5, 1 / 5], [1 / 5, 3 / 5]])
        return TriangleRule(pts, np.array([-27 / 48, 25 / 48, 25 / 48, 25 / 48]), 3, "gauss-4")
    if n_points == 7:
        s15 = math.sqrt(15.0)
        a1, a2 = (6 - s15) / 21, (6 + s15) / 21
        w1, w2 = (155 - s15) / 1200, (155 + s15) / 1200
        pts = [[1 / 3, 1 / 3]]
        pts += [[a1, a1], [1 - 2 * a1, a1], [a1, 1 - 2 * a1]]
        pts += [[a2, a2], [1 - 2 * a2, a2], [a2, 1 - 2 * a2]]
        w = np.array([9 / 40] + [w1] * 3 + [w2] * 3)
        return TriangleRule(np.array(pts), w, 5, "radon-7")
    raise ValueError(f"gauss_rule: n_points must be 1, 3, 4 (seed Table 1) or 7 (Radon), got {n_points}")


def conical_rule(degree: int) -> TriangleRule:
    """Stroud conical-product rule exact for polynomials of total degree ``<= degree``.

    ``r = ξ``, ``s = η (1 - ξ)`` with Gauss-Legendre nodes on [0, 1] in ξ and η and Jacobian
    ``1 - ξ``: a degree-``p`` polynomial becomes degree ``p + 1`` in ξ, so ``m = ceil((p + 2)/2)``
    points per direction suffice.
    """
    degree = _whole(degree, "conical_rule: degree", 0)
    m = max(1, math.ceil((degree + 2) / 2))
    x, w = np.polynomial.legendre.leggauss(m)
    x, w = 0.5 * (x + 1.0), 0.5 * w
    xi, eta = np.meshgrid(x, x, indexing="ij")
    wxi, weta = np.meshgrid(w, w, indexing="ij")
    r = xi.ravel()
    s = (eta * (1.0 - xi)).ravel()
    wt = (wxi * weta * (1.0 - xi)).ravel() * 2.0
    return TriangleRule(np.stack([r, s], -1), wt, 2 * m - 2, f"conical-{m * m}")


def _whole(value, name: str, low: int) -> int:
    """``value`` as an integer ``>= low`` (``ValueError`` naming ``name`` otherwise)."""
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))
    if ok:
        ok = bool(np.isfinite(value)) and float(value).is_integer() and value >= low
    if not ok:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def check_rule(rule, where: str) -> TriangleRule:
    """A :class:`TriangleRule`: points ``(g, 2)`` and weights ``(g,)``, finite, ``g >= 1``."""
    if not isinstance(rule, TriangleRule):
        raise TypeError(f"{where}: rule must be a TriangleRule (gauss_rule(n) or conical_rule(degree)), got "
                        f"{type(rule).__name__}")
    pts, w = np.asarray(rule.points, float), np.asarray(rule.weights, float)
    if pts.ndim != 2 or pts.shape[1] != 2 or pts.shape[0] < 1 or w.shape != (pts.shape[0],):
        raise ValueError(f"{where}: rule points must have shape (g, 2) and weights (g,), got {pts.shape} and "
                         f"{w.shape}")
    if not (np.all(np.isfinite(pts)) and np.all(np.isfinite(w))):
        raise ValueError(f"{where}: rule points and weights must be finite")
    return rule


class Mesh(NamedTuple):
    """Planar triangulation: ``vertices (nv, 2)``, ``triangles (nt, 3)`` (counter-clockwise)."""

    vertices: np.ndarray
    triangles: np.ndarray

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    @property
    def corners(self) -> np.ndarray:
        """``(nt, 3, 2)`` vertex coordinates per triangle."""
        return self.vertices[self.triangles]


def signed_areas(corners: np.ndarray) -> np.ndarray:
    """Signed areas of triangles ``(..., 3, 2)`` (half the Jacobian determinant of Eq. 13)."""
    a, b, c = corners[..., 0, :], corners[..., 1, :], corners[..., 2, :]
    return 0.5 * ((b[..., 0] - a[..., 0]) * (c[..., 1] - a[..., 1]) - (c[..., 0] - a[..., 0]) * (b[..., 1] - a[..., 1]))


def check_mesh(mesh: Mesh, rtol: float = 1e-10) -> Mesh:
    """Validate a mesh: finite vertices, valid indices, no zero-area triangles (``ValueError``).

    Clockwise triangles are reoriented (orientation does not change the integral: ``J_kg = A_σk``).
    """
    if not (hasattr(mesh, "vertices") and hasattr(mesh, "triangles")):
        raise TypeError(f"mesh must be a Mesh(vertices (nv, 2), triangles (nt, 3)), got {type(mesh).__name__}")
    v = np.asarray(mesh.vertices, float)
    t_raw = np.asarray(mesh.triangles)
    whole = np.issubdtype(t_raw.dtype, np.integer) or (
        np.issubdtype(t_raw.dtype, np.floating) and np.all(np.isfinite(t_raw)) and np.all(t_raw == np.round(t_raw)))
    if t_raw.size and not whole:
        raise ValueError(f"mesh: triangles must hold integer vertex indices, got dtype {t_raw.dtype}")
    t = t_raw.astype(int)
    if v.ndim != 2 or v.shape[1] != 2 or t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"mesh: need vertices (nv, 2) and triangles (nt, 3), got {v.shape} and {t.shape}")
    if t.shape[0] == 0:
        raise ValueError("mesh: no triangles (an empty ligament mesh has no fibres and would give a zero wrench)")
    if not np.all(np.isfinite(v)):
        raise ValueError("mesh: vertices must be finite")
    if t.size and (t.min() < 0 or t.max() >= v.shape[0]):
        raise ValueError(f"mesh: triangle indices out of range [0, {v.shape[0]})")
    area = signed_areas(v[t])
    scale = max(np.ptp(v, axis=0).max(), 1e-300) ** 2 if v.size else 1.0
    bad = np.flatnonzero(np.abs(area) <= rtol * scale)
    if bad.size:
        raise ValueError(
            f"mesh: {bad.size} triangle(s) of zero area (indices {bad[:10].tolist()}); Eq. 13's "
            "Jacobian |J_k| = 2 A_σk vanishes there. Remove them or re-mesh."
        )
    t = np.where((area < 0)[:, None], t[:, [0, 2, 1]], t)
    return Mesh(v, t)


def polygon_area(polygon: np.ndarray) -> float:
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def _inside(polygon: np.ndarray, pts: np.ndarray) -> np.ndarray:
    from matplotlib.path import Path

    return Path(polygon).contains_points(pts)


def _crossing_edges(poly):
    """``(i, j)`` of the first two edges of the closed polygon that are not neighbours and meet (a
    self-intersecting polygon), else None."""
    n = len(poly)
    a, b = poly, np.roll(poly, -1, 0)

    def side(p, q, r):  # sign of the turn p -> q -> r
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))

    for i in range(n):
        j = np.arange(i + 2, n if i > 0 else n - 1)  # not i's neighbours (the last edge neighbours the first)
        if j.size == 0:
            continue
        d1, d2 = side(a[i], b[i], a[j]), side(a[i], b[i], b[j])
        d3, d4 = side(a[j], b[j], a[i][None]), side(a[j], b[j], b[i][None])
        hit = (d1 * d2 <= 0) & (d3 * d4 <= 0) & ~((d1 == 0) & (d2 == 0))
        if hit.any():
            return i, int(j[np.argmax(hit)])
    return None


def triangulate(polygon, n_triangles: int, seed: int = 0) -> Mesh:
    """Delaunay mesh (Eq. 9) of the polygon ``(nc, 2)`` with about ``n_triangles`` triangles.

    Boundary: the polygon's vertices plus equal subdivisions of its edges at the target spacing
    ``h = sqrt(4A / (√3 n))``; interior: farthest-point samples of a fine grid, then three Lloyd-like
    smoothing sweeps.  Euler's formula ``n_t = 2 n_int + n_b - 2`` fixes the interior count, so the
    result has ``n_triangles`` or ``n_triangles ± 1`` triangles.  The meshed region is exactly the
    polygon for every refinement; a polygon that crosses itself is refused naming the edges.  Triangles whose centroid lies outside a non-convex polygon and
    degenerate Delaunay slivers (zero area) are dropped (documented policy), then ``check_mesh``.
    """
    n_triangles = _whole(n_triangles, "triangulate: n_triangles", 1)
    poly = np.asarray(polygon, float)
    if poly.ndim != 2 or poly.shape[1] != 2 or poly.shape[0] < 3:
        raise ValueError(f"triangulate: polygon must be (nc >= 3, 2), got {poly.shape}")
    if n_triangles < poly.shape[0] - 2:
        raise ValueError(f"triangulate: n_triangles must be >= nc - 2 = {poly.shape[0] - 2}")
    if not np.all(np.isfinite(poly)):
        raise ValueError("triangulate: polygon vertices must be finite")
    crossing = _crossing_edges(poly)
    if crossing is not None:
        i, j = crossing
        raise ValueError(f"triangulate: the polygon crosses itself (edge {i}-{(i + 1) % len(poly)} meets edge "
                         f"{j}-{(j + 1) % len(poly)}); give a simple polygon, its vertices in order around the "
                         "boundary")
    area = polygon_area(poly)
    if area <= 0:
        raise ValueError("triangulate: polygon has zero area")
    h = math.sqrt(4 * area / (math.sqrt(3) * n_triangles))
    bnd = []
    for a, b in zip(poly, np.roll(poly, -1, 0)):
        k = max(1, int(round(np.linalg.norm(b - a) / h)))
        bnd.extend(a + (b - a) * (i / k) for i in range(k))
    bnd = np.array(bnd)
    n_int = max(0, int(round((n_triangles - bnd.shape[0] + 2) / 2)))
    rng = np.random.default_rng(seed)
    lo, hi = poly.min(0), poly.max(0)
    g = h / 6
    gx, gy = np.meshgrid(np.arange(lo[0], hi[0], g) + g / 2, np.arange(lo[1], hi[1], g) + g / 2)
    cand = np.stack([gx.ravel(), gy.ravel()], -1)
    cand = cand + rng.uniform(-1e-3, 1e-3, cand.shape) * g
    cand = cand[_inside(poly, cand)]
    dist = np.min(np.linalg.norm(cand[:, None] - bnd[None], axis=-1), 1)
    cand = cand[dist > 0.45 * h] if np.sum(dist > 0.45 * h) >= n_int else cand
    dist = np.min(np.linalg.norm(cand[:, None] - bnd[None], axis=-1), 1)
    chosen = []
    for _ in range(n_int):
        i = int(np.argmax(dist))
        chosen.append(cand[i])
        dist = np.minimum(dist, np.linalg.norm(cand - cand[i], axis=-1))
    interior = np.array(chosen).reshape(-1, 2)
    for _ in range(3):  # Lloyd-like smoothing: move interior points to the mean of their neighbours
        pts = np.concatenate([bnd, interior])
        tri = Delaunay(pts).simplices
        nb = bnd.shape[0]
        acc = np.zeros_like(pts)
        cnt = np.zeros(pts.shape[0])
        for e in ((0, 1), (1, 2), (2, 0)):
            np.add.at(acc, tri[:, e[0]], pts[tri[:, e[1]]])
            np.add.at(cnt, tri[:, e[0]], 1)
            np.add.at(acc, tri[:, e[1]], pts[tri[:, e[0]]])
            np.add.at(cnt, tri[:, e[1]], 1)
        new = acc[nb:] / np.maximum(cnt[nb:, None], 1)
        ok = _inside(poly, new)
        interior = np.where(ok[:, None], new, interior)
    pts = np.concatenate([bnd, interior])
    tri = Delaunay(pts).simplices
    cen = pts[tri].mean(1)
    tri = tri[_inside(poly, cen)]
    a = signed_areas(pts[tri])
    tri = tri[np.abs(a) > 1e-12 * area]
    return check_mesh(Mesh(pts, tri))


def quadrature_points(mesh: Mesh, rule: TriangleRule):
    """Physical points ``(nt·g, 2)`` and weights ``W_g A_σk`` ``(nt·g,)`` (Eq. 11, 14-15)."""
    rule = check_rule(rule, "quadrature_points")
    checked = check_mesh(mesh)
    if isinstance(mesh, Mesh):  # validated; the caller's orientation kept (same points as before)
        mesh = Mesh(np.asarray(mesh.vertices, float), np.asarray(mesh.triangles).astype(int))
    else:
        mesh = checked
    c = mesh.corners  # (nt, 3, 2)
    r, s = rule.points[:, 0], rule.points[:, 1]
    bary = np.stack([1 - r - s, r, s], -1)  # (g, 3)
    xy = np.einsum("gk,tkd->tgd", bary, c).reshape(-1, 2)
    w = (np.abs(signed_areas(c))[:, None] * rule.weights[None, :]).reshape(-1)
    return xy, w


def _split4(c: np.ndarray) -> np.ndarray:
    a, b, d = c[:, 0], c[:, 1], c[:, 2]
    ab, bd, da = (a + b) / 2, (b + d) / 2, (d + a) / 2
    kids = np.stack(
        [np.stack([a, ab, da], 1), np.stack([ab, b, bd], 1), np.stack([da, bd, d], 1), np.stack([ab, bd, da], 1)], 1
    )
    return kids.reshape(-1, 3, 2)


def adaptive_integrate(
    fn: Callable[[np.ndarray], np.ndarray],
    mesh: Mesh,
    rule: TriangleRule | None = None,
    tol: float = 1e-10,
    max_level: int = 12,
):
    """Adaptive integral of ``fn`` over the mesh (the paper's ``integral2`` reference).

    ``fn`` maps points ``(N, 2)`` to values ``(N, k)``.  Each triangle is compared with the sum over
    its four mid-point children (both with ``rule``, default degree-10 conical); a triangle is
    accepted when the difference is below ``tol · A_σ / A`` (relative to the running integral's
    norm), otherwise it is split.  Returns ``(integral (k,), error_estimate, n_evaluations)``, where
    the error estimate is the sum of the accepted differences (a conservative bound: the children's
    sum is accepted, which is ``~2^(degree+1)`` times more accurate for smooth integrands).
    """
    rule = conical_rule(10) if rule is None else check_rule(rule, "adaptive_integrate")
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)) or not (
            np.isfinite(tol) and tol > 0):
        raise ValueError(f"adaptive_integrate: tol must be a finite number > 0, got {tol!r}")
    max_level = _whole(max_level, "adaptive_integrate: max_level", 0)
    if not callable(fn):
        raise TypeError(f"adaptive_integrate: fn must be a callable of points (N, 2), got {type(fn).__name__}")
    corners = check_mesh(mesh).corners
    total_area = float(np.sum(np.abs(signed_areas(corners))))

    def integrate(c):
        xy, w = quadrature_points(Mesh(c.reshape(-1, 2), np.arange(c.shape[0] * 3).reshape(-1, 3)), rule)
        vals = np.asarray(fn(xy))
        if vals.ndim == 0 or vals.shape[0] != xy.shape[0] or vals.size == 0:
            raise ValueError(f"adaptive_integrate: fn must map points (N, 2) to values (N,) or (N, k); for "
                             f"N = {xy.shape[0]} points it returned shape {vals.shape}")
        vals = vals.reshape(xy.shape[0], -1)
        bad = ~np.all(np.isfinite(vals), axis=1)
        if bad.any():  # a NaN difference never passes the tolerance: every triangle would split to max_level
            k = int(np.argmax(bad))
            raise ValueError(f"adaptive_integrate: fn returned NaN or inf at {int(bad.sum())} of {xy.shape[0]} points "
                             f"(first at ({xy[k, 0]:.6g}, {xy[k, 1]:.6g}), in triangle {k // (w.size // c.shape[0])} "
                             f"of the {'mesh' if c is corners else 'refinement'}): the integrand must be finite "
                             "over the mesh")
        return np.einsum("tg,tgk->tk", w.reshape(c.shape[0], -1), vals.reshape(c.shape[0], w.size // c.shape[0], -1))

    n_eval = 0
    coarse = integrate(corners)
    n_eval += corners.shape[0] * rule.weights.size
    scale = max(np.linalg.norm(coarse.sum(0)), 1e-300)
    value = np.zeros(coarse.shape[1])
    err = 0.0
    level = 0
    active, active_val = corners, coarse
    while active.shape[0]:
        kids = _split4(active)
        kv = integrate(kids)
        n_eval += kids.shape[0] * rule.weights.size
        kv4 = kv.reshape(active.shape[0], 4, -1)
        fine = kv4.sum(1)
        diff = np.linalg.norm(fine - active_val, axis=-1)
        area = np.abs(signed_areas(active))
        ok = (diff <= tol * scale * area / total_area) | (level >= max_level)
        value += fine[ok].sum(0)
        err += diff[ok].sum()
        active = kids.reshape(active.shape[0], 4, 3, 2)[~ok].reshape(-1, 3, 2)
        active_val = kv4[~ok].reshape(-1, kv.shape[1])
        level += 1
    return value, err, n_eval
