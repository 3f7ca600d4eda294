"""The thin-plate-spline ligament model (TPSM), TPS-ligament seed §2 (Eq. 6-15).

Five steps: (i) register reference contours/centroids on the subject (``register``, Eq. 1-5 with
λ-relaxed contour landmarks); (ii) the insertion-to-insertion map φ: Σ_tp → Σ_fp (exact at bundle
centroids, λ on contour landmarks); (iii) insertion surfaces Γ_t, Γ_f as 2-D → 1-D TPS of point
clouds; (iv) the fibre wrench per unit area (Eq. 6-7); (v) its integral over Σ_tp with the area
factor ‖r_x × r_y‖ (Eq. 8), numerically by Gauss rules on a Delaunay mesh (Eq. 9-15,
``discretize``) or adaptively (``reference_wrench``, the paper's ``integral2``).

Frames: ``frame_a`` is S_st (tibial insertion plane, z along the plane normal) in body A's frame,
``frame_b`` is S_sf in body B's frame.  A tibial planar point ``(x, y)`` gives the fibre ends
``p = frame_a [x, y, Γ_t(x, y)]`` and ``q = frame_b [u, v, Γ_f(u, v)]`` with ``(u, v) = φ(x, y)``.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .fibres import LAWS, FibreSet, ligament_wrench
from .quadrature import Mesh, TriangleRule, adaptive_integrate, check_mesh, quadrature_points
from .tps import ThinPlateSpline, fit_tps


def register(reference_landmarks, subject_landmarks, lam=0.0, *, scale=1.0) -> ThinPlateSpline:
    """Step (i)/(ii): the TPS mapping reference → subject planar landmarks (Eq. 3 with λ_i)."""
    return fit_tps(reference_landmarks, subject_landmarks, lam, scale=scale)


def _field(value, xy):
    """Evaluate a constant or a callable of the local coordinates (Eq. 7)."""
    if callable(value):
        return jnp.asarray(value(xy))
    return jnp.asarray(value)


class TPSMLigament(eqx.Module):
    """A continuous ligament: maps φ (2→2), Γ_a (2→1), Γ_b (2→1), insertion frames and fibre law.

    ``stiffness`` (Pa) and ``free_length`` (m) are constants or callables of ``(x, y)`` (Eq. 7);
    ``domain`` is the polygon ``(nc, 2)`` of Σ_tp in S_st.
    """

    phi: ThinPlateSpline
    gamma_a: ThinPlateSpline
    gamma_b: ThinPlateSpline
    frame_a: jnp.ndarray
    frame_b: jnp.ndarray
    domain: jnp.ndarray
    stiffness: Any
    free_length: Any
    law: str = eqx.field(static=True, default="quadratic")
    transition_strain: float = eqx.field(static=True, default=0.06)

    def __check_init__(self):
        if self.law not in LAWS:
            raise ValueError(f"TPSMLigament: law {self.law!r} is not one of {LAWS}")
        if self.phi.out_dim != 2 or self.gamma_a.out_dim != 1 or self.gamma_b.out_dim != 1:
            raise ValueError("TPSMLigament: phi must map R²→R² and gamma_a, gamma_b R²→R")
        if not callable(self.free_length):
            try:
                if np.any(np.asarray(self.free_length) <= 0):
                    raise ValueError("TPSMLigament: free_length must be > 0")
            except (TypeError, jax.errors.TracerArrayConversionError):
                pass

    def point_a(self, xy):
        """``p`` in body A's frame (3,) and the area factor ‖r_x × r_y‖ = sqrt(1 + Γ_x² + Γ_y²) (Eq. 8)."""
        z = self.gamma_a(xy)[0]
        grad = self.gamma_a.jacobian(xy)[0]
        local = jnp.concatenate([jnp.asarray(xy), z[None]])
        area = jnp.sqrt(1.0 + jnp.sum(grad**2))
        return self.frame_a[:3, :3] @ local + self.frame_a[:3, 3], area

    def point_b(self, xy):
        """``q`` in body B's frame (3,): ``[u, v, Γ_f(u, v)]`` with ``(u, v) = φ(x, y)``."""
        uv = self.phi(xy)
        local = jnp.concatenate([uv, self.gamma_b(uv)])
        return self.frame_b[:3, :3] @ local + self.frame_b[:3, 3]

    def integrand(self, xy, pose_a, pose_b, pole=None):
        """``[m_O; f] ‖r_x × r_y‖`` at one planar point (6,): the integrand of Eq. 8 (force on B)."""
        pa, area = self.point_a(xy)
        pb = self.point_b(xy)
        fib = FibreSet(
            pa[None],
            pb[None],
            area[None],
            jnp.reshape(_field(self.stiffness, xy), (1,)),
            jnp.reshape(_field(self.free_length, xy), (1,)),
            self.law,
            self.transition_strain,
        )
        return ligament_wrench(fib, pose_a, pose_b, pole)

    def fibres_at(self, xy, weight) -> FibreSet:
        """Fibres through planar points ``xy (N, 2)`` with planar weights ``(N,)`` (× area factor)."""
        return _fibres_at(self, jnp.asarray(xy), jnp.asarray(weight))


@eqx.filter_jit
def _fibres_at(lig: TPSMLigament, xy, weight) -> FibreSet:
    pa, area = jax.vmap(lig.point_a)(xy)
    pb = jax.vmap(lig.point_b)(xy)
    c = jnp.broadcast_to(jax.vmap(lambda p: _field(lig.stiffness, p))(xy), (xy.shape[0],))
    l0 = jnp.broadcast_to(jax.vmap(lambda p: _field(lig.free_length, p))(xy), (xy.shape[0],))
    return FibreSet(pa, pb, weight * area, c, l0, lig.law, lig.transition_strain)


def discretize(lig: TPSMLigament, mesh: Mesh, rule: TriangleRule) -> FibreSet:
    """TPSM-n: one fibre per Gauss point (Eq. 14-15), weight ``W_g A_σk ‖r_x × r_y‖``.

    The fibre ends are pose-independent, so this runs once; ``ligament_wrench`` of the result is the
    quadrature of Eq. 8 at any pose.
    """
    xy, w = quadrature_points(check_mesh(mesh), rule)
    return lig.fibres_at(jnp.asarray(xy), jnp.asarray(w))


def reference_wrench(lig: TPSMLigament, mesh: Mesh, pose_a, pose_b, pole=None, tol=1e-10, rule=None, max_level=12):
    """Adaptive integral of Eq. 8 (the paper's ``integral2`` benchmark).

    Returns ``(wrench (6,), error_estimate, n_evaluations)``; see ``adaptive_integrate``.
    """
    f = jax.jit(jax.vmap(lambda p: lig.integrand(p, pose_a, pose_b, pole)))

    chunk = 4096  # fixed batch: one compilation for the whole adaptive run

    def fn(xy):
        n = xy.shape[0]
        size = -(-max(n, 1) // chunk) * chunk
        pad = jnp.asarray(np.concatenate([xy, np.repeat(xy[:1], size - n, 0)]))
        out = [np.asarray(f(pad[i : i + chunk])) for i in range(0, size, chunk)]
        return np.concatenate(out)[:n]

    return adaptive_integrate(fn, mesh, rule, tol=tol, max_level=max_level)
