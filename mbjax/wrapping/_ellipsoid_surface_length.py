"""OpenSim 4.6's ``CalcDistanceOnEllipsoid``, in JAX, for :mod:`~mbjax.wrapping.ellipsoid`: the
surface path between the two tangent points as chords between rays leaving the ellipsoid."""

from __future__ import annotations

import jax.numpy as jnp

from .._spatial import safe_sqrt
from ._ellipsoid_iterations import _dot
from ._math import normalize_or_zero

#: ``CalcDistanceOnEllipsoid``'s desired segment length (m) and its cap on segments
DESIRED_SEG_LENGTH = 0.001
MAX_SEGMENTS = 499
#: the path's angles k·Δφ, k = BLOCK·i + j, by angle addition from BLOCK + MAX_SEGMENTS/BLOCK sines
#: and cosines instead of one per point (a few ulp from ``cos(k·Δφ)``)
ANGLE_BLOCK = 32


def _norm3(v):
    """``Vec3::norm`` (sum of squares in index order), grad-safe at 0."""
    sq = v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2]
    return safe_sqrt(sq)


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
    mu3 = (-bb + safe_sqrt(bb * bb - 4.0 * aa * cc)) / (2.0 * aa)
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
    seg = safe_sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    return jnp.sum(jnp.where(k <= n_seg, seg, 0.0))
