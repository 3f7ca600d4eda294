"""OpenSim's ``HuntCrossleyForce`` (Simbody ``HuntCrossleyForce`` on a ``GeneralContactSubsystem``).

Each OpenSim force is one *contact set* ("group") of surfaces (``ContactHalfSpace``, ``ContactSphere``),
each with its own parameters: stiffness ``E`` (Simbody uses ``k = E^(2/3)``), dissipation ``c``,
static/dynamic/viscous friction ``μs, μd, μv``; the group has a transition velocity ``vt``.  Surface frame ``P`` on body ``B``:
``X_BP = X_BF · (XYZ body-fixed ``orientation``, ``location``)``.

Contact detection (Simbody ``CollisionDetectionAlgorithm``):

* half space (surface 1; it fills ``x > 0`` of its frame, outward normal ``n = -x̂``) and sphere of
  radius ``r`` centred at ``x`` in the half-space frame: depth ``d = r + x₀``, contact point
  ``X_GP (d/2, x₁, x₂)``, radius ``R = r``;
* two spheres ``r₁, r₂`` at ``c₁, c₂``: ``d = r₁ + r₂ - |c₂ - c₁|``, ``n = (c₂ - c₁)/|c₂ - c₁|``,
  point ``c₁ + (r₁ - d/2) n``, ``R = r₁r₂/(r₁+r₂)``; spheres on one body are skipped (zero net force).

A pair is in contact when ``d > 0``.  Force (Simbody ``HuntCrossleyForceImpl::calcForce``), with
``s₁ = k₂/(k₁+k₂)``, ``s₂ = 1 - s₁``:

* contact point moved to ``p = p₀ + d (½ - s₁) n``; ``k = k₁ s₁``, ``c = c₁ s₁ + c₂ s₂``;
* Hertz force ``f_H = 4/3 k d √(R k d)``; with the body-fixed points of 1 and 2 at ``p``,
  ``v = v₁ - v₂``, ``v_n = v·n``, ``v_t = v - v_n n``: ``f = f_H (1 + 3/2 c v_n)``;
* friction (``v_s = |v_t| ≠ 0``): harmonic means ``μ = 2μ₁μ₂/(μ₁+μ₂)`` (0 when both are 0),
  ``v_r = v_s/vt``, ``f_f = f (min(v_r, 1)(μd + 2(μs - μd)/(1 + v_r²)) + μv v_s)``;
* ``F = f n + f_f v_t/v_s`` on body 2 at ``p``, ``-F`` on body 1; ``Q = (J₂ - J₁)ᵀ F``.

Simbody stops the whole contact set at the first contact with ``f ≤ 0`` (``return``, not
``continue``): contacts are ordered by the sweep-and-prune of ``GeneralContactSubsystem`` (surfaces
sorted by the start ``c_a - r`` of their bounding sphere along the axis ``a`` of largest
``Σ|c - mean(c)|``; a half space's start is ``-∞``; pairs in order of the sorted first surface,
then the second; ties keep list order).  That is reproduced: a contact after one with ``f ≤ 0``
exerts no force.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import body_poses
from .. import _checks
from .base import ForceElement

HALF_SPACE, SPHERE = "halfspace", "sphere"


def _all_poses(model, q):
    p = body_poses(model, q)
    return jnp.concatenate([p, jnp.eye(4, dtype=p.dtype)[None]], axis=0)


def _harmonic(a, b):
    s = a + b
    return jnp.where((a != 0) | (b != 0), 2 * a * b / jnp.where(s == 0, 1, s), 0)


class HuntCrossleyForce(ForceElement):
    """A stack of Hunt-Crossley contact sets: ``nS`` surfaces, ``nG`` groups (one per OpenSim force).

    Array leaves (differentiable): surface frames ``x_body_surface (nS, 4, 4)``, ``radius (nS,)``
    (0 for a half space), ``stiffness``, ``dissipation``, ``static_friction``, ``dynamic_friction``,
    ``viscous_friction (nS,)`` and ``transition_velocity (nG,)``.  Static: surface bodies (``-1`` =
    ground), kinds, groups and the candidate pairs ``(surface 1, surface 2)``.  Build with
    :meth:`create`.
    """

    x_body_surface: jnp.ndarray
    radius: jnp.ndarray
    stiffness: jnp.ndarray
    dissipation: jnp.ndarray
    static_friction: jnp.ndarray
    dynamic_friction: jnp.ndarray
    viscous_friction: jnp.ndarray
    transition_velocity: jnp.ndarray
    surface_body: tuple[int, ...] = eqx.field(static=True)
    surface_kind: tuple[str, ...] = eqx.field(static=True)
    surface_group: tuple[int, ...] = eqx.field(static=True)
    pairs: tuple[tuple[int, int], ...] = eqx.field(static=True)
    element_names: tuple[str, ...] = eqx.field(static=True)

    @classmethod
    def create(cls, names, surfaces, transition_velocity):
        """``names``: one per group; ``surfaces``: dicts with ``group, body, kind, x_body_surface, radius,
        stiffness, dissipation, static_friction, dynamic_friction, viscous_friction`` (list order = the
        order OpenSim adds them to the contact set)."""
        for s in surfaces:
            if s["kind"] not in (HALF_SPACE, SPHERE):
                raise NotImplementedError(f"mbjax/forces/hunt_crossley.py: HuntCrossleyForce between "
                                          f"{s['kind']!r} surfaces is not modelled (half space and sphere only)")
        pairs = []
        for i, a in enumerate(surfaces):
            for j in range(i + 1, len(surfaces)):
                b = surfaces[j]
                if a["group"] != b["group"] or a["body"] == b["body"] or a["kind"] == b["kind"] == HALF_SPACE:
                    continue  # other set; one body (zero net force, f > 0); no half space-half space algorithm
                pairs.append((j, i) if b["kind"] == HALF_SPACE else (i, j))
        a = lambda key, shape=(): jnp.asarray(np.asarray([s[key] for s in surfaces], float).reshape(-1, *shape))  # noqa: E731
        return cls(a("x_body_surface", (4, 4)), a("radius"), a("stiffness"), a("dissipation"),
                   a("static_friction"), a("dynamic_friction"), a("viscous_friction"),
                   jnp.asarray(np.asarray(transition_velocity, float).reshape(-1)),
                   tuple(int(s["body"]) for s in surfaces), tuple(s["kind"] for s in surfaces),
                   tuple(int(s["group"]) for s in surfaces), tuple(pairs),
                   _checks.names(names, "names", "HuntCrossleyForce.create"))

    # ---- geometry -------------------------------------------------------------------------
    def _surface_poses(self, poses):
        idx = np.asarray([b if b >= 0 else poses.shape[0] - 1 for b in self.surface_body], np.int32)
        return poses[idx] @ self.x_body_surface.astype(poses.dtype)

    def _ranks(self, x_gs):
        """Sweep-and-prune sort position of every surface within its group (``(nS,)``, static order ties)."""
        dt = x_gs.dtype
        g = np.asarray(self.surface_group)
        member = jnp.asarray((g[None, :] == np.arange(len(self.element_names))[:, None]).astype(float), dt)
        c = x_gs[:, :3, 3]
        mean = (member @ c) / jnp.sum(member, axis=1, keepdims=True)
        var = member @ jnp.abs(c - mean[g])  # (nG, 3)
        axis = jnp.where(var[:, 0] > var[:, 1], 0, 1)
        axis = jnp.where(var[:, 2] > jnp.take_along_axis(var, axis[:, None], 1)[:, 0], 2, axis)
        centre = jnp.take_along_axis(c, axis[g][:, None], 1)[:, 0]
        is_hs = np.asarray([k == HALF_SPACE for k in self.surface_kind])
        start = jnp.where(is_hs, -jnp.inf, centre - self.radius.astype(dt))
        n = len(g)
        same = g[:, None] == g[None, :]
        earlier = np.arange(n)[:, None] < np.arange(n)[None, :]  # [t, s]: t listed before s
        ahead = (start[:, None] < start[None, :]) | ((start[:, None] == start[None, :]) & earlier)
        return jnp.sum(same & ahead, axis=0)

    def contacts(self, model, q):
        """Per pair: ``depth, normal (on 1 towards 2), point p₀ (before the stiffness shift), R, rank key``."""
        x_gs = self._surface_poses(_all_poses(model, q))
        i1 = np.asarray([p[0] for p in self.pairs], np.int32)
        i2 = np.asarray([p[1] for p in self.pairs], np.int32)
        hs = np.asarray([self.surface_kind[a] == HALF_SPACE for a in i1])
        r1, r2 = self.radius.astype(q.dtype)[i1], self.radius.astype(q.dtype)[i2]
        x1, c2 = x_gs[i1], x_gs[i2, :3, 3]
        c1, rot1 = x1[:, :3, 3], x1[:, :3, :3]
        # half space 1 - sphere 2
        loc = jnp.einsum("nji,nj->ni", rot1, c2 - c1)
        d_hs = r2 + loc[:, 0]
        n_hs = -rot1[:, :, 0]
        p_hs = c1 + jnp.einsum("nij,nj->ni", rot1, jnp.stack([d_hs / 2, loc[:, 1], loc[:, 2]], -1))
        # sphere 1 - sphere 2
        delta = c2 - c1
        dist2 = jnp.sum(delta * delta, axis=-1)
        coincident = hs | (dist2 == 0)  # Simbody: no contact between concentric spheres
        dist = jnp.sqrt(jnp.where(coincident, 1.0, dist2))
        d_ss = jnp.where(coincident, -1.0, r1 + r2 - dist)
        n_ss = delta / dist[:, None]
        p_ss = c1 + (r1 - d_ss / 2)[:, None] * n_ss
        rad_ss = r1 * r2 / jnp.where(hs, 1.0, r1 + r2)
        depth = jnp.where(hs, d_hs, d_ss)
        normal = jnp.where(hs[:, None], n_hs, n_ss)
        point = jnp.where(hs[:, None], p_hs, p_ss)
        radius = jnp.where(hs, r2, rad_ss)
        rank = self._ranks(x_gs)
        lo, hi = jnp.minimum(rank[i1], rank[i2]), jnp.maximum(rank[i1], rank[i2])
        return depth, normal, point, radius, (lo, hi)

    # ---- force ----------------------------------------------------------------------------
    def pair_forces(self, model, q, qd):
        """``(F (nP, 3) on surface 2's body, point p (nP, 3), included (nP,))`` (world frame)."""
        return self._evaluate(model, q, qd)[:3]

    def _evaluate(self, model, q, qd):
        dt = q.dtype
        i1 = np.asarray([p[0] for p in self.pairs], np.int32)
        i2 = np.asarray([p[1] for p in self.pairs], np.int32)
        b1 = np.asarray([self.surface_body[a] for a in i1])
        b2 = np.asarray([self.surface_body[a] for a in i2])
        group = np.asarray([self.surface_group[a] for a in i1])
        p = lambda v: v.astype(dt)  # noqa: E731
        k23 = p(self.stiffness) ** (2.0 / 3.0)  # Simbody stores the stiffness as E^(2/3)
        k1, k2 = k23[i1], k23[i2]
        c1, c2 = p(self.dissipation)[i1], p(self.dissipation)[i2]
        depth, normal, point, radius, (lo, hi) = self.contacts(model, q)
        active = depth > 0
        s1 = k2 / (k1 + k2)
        d = jnp.where(active, depth, 0)
        loc = point + (d * (0.5 - s1))[:, None] * normal
        k = k1 * s1
        c = c1 * s1 + c2 * (1 - s1)
        f_h = 4.0 / 3.0 * k * d * jnp.sqrt(radius * k * jnp.where(active, depth, 1))

        poses = _all_poses(model, q)
        nb = poses.shape[0] - 1
        j1 = np.where(b1 < 0, nb, b1).astype(np.int32)
        j2 = np.where(b2 < 0, nb, b2).astype(np.int32)

        def station(pose, x):  # body-fixed coordinates of a world point
            return jnp.einsum("nji,nj->ni", pose[:, :3, :3], x - pose[:, :3, 3])

        st1, st2 = station(poses[j1], loc), station(poses[j2], loc)

        def separation(x):  # world offset of the body-2 point from the body-1 point (0 at x = q)
            ps = _all_poses(model, x)
            w = lambda j, s: jnp.einsum("nij,nj->ni", ps[j, :3, :3], s) + ps[j, :3, 3]  # noqa: E731
            return w(j2, st2) - w(j1, st1)

        _, v21 = jax.jvp(separation, (q,), (qd,))
        v = -v21  # Simbody's v = v1 - v2
        vn = jnp.sum(v * normal, axis=-1)
        vt = v - vn[:, None] * normal
        f = f_h * (1 + 1.5 * c * vn)
        slip2 = jnp.sum(vt * vt, axis=-1)
        slipping = active & (slip2 != 0)
        slip_safe = jnp.sqrt(jnp.where(slipping, slip2, 1.0))
        us = _harmonic(p(self.static_friction)[i1], p(self.static_friction)[i2])
        ud = _harmonic(p(self.dynamic_friction)[i1], p(self.dynamic_friction)[i2])
        uv = _harmonic(p(self.viscous_friction)[i1], p(self.viscous_friction)[i2])
        vrel = slip_safe / p(self.transition_velocity)[group]
        ff = f * (jnp.minimum(vrel, 1) * (ud + 2 * (us - ud) / (1 + vrel * vrel)) + uv * slip_safe)
        force = f[:, None] * normal + jnp.where(slipping, ff / slip_safe, 0)[:, None] * vt
        # Simbody returns at the first contact (in sweep order) with f <= 0: later ones exert nothing
        stop = active & (f <= 0)
        same = group[:, None] == group[None, :]
        before = same & ((lo[:, None] < lo[None, :]) | ((lo[:, None] == lo[None, :]) & (hi[:, None] < hi[None, :])))
        included = active & (f > 0) & ~jnp.any(before & stop[:, None], axis=0)
        force = jnp.where(included[:, None], force, 0)
        return force, loc, included, separation

    def generalized_force(self, model, q, qd):
        if not self.pairs:
            return jnp.zeros_like(q)
        force, _, _, separation = self._evaluate(model, q, qd)
        _, pullback = jax.vjp(separation, q)
        return pullback(force.astype(q.dtype))[0]
