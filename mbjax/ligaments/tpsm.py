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

from .. import _checks
from .fibres import CHANGED, LAWS, FibreSet, checked, warn_long_free_length, wrench_jit
from .quadrature import Mesh, TriangleRule, adaptive_integrate, check_mesh, check_rule, quadrature_points
from .tps import ThinPlateSpline, fit_tps


def register(reference_landmarks, subject_landmarks, lam=0.0, *, scale=1.0) -> ThinPlateSpline:
    """Step (i)/(ii): the TPS mapping reference → subject planar landmarks (Eq. 3 with λ_i); both
    ``(n, 2)``, ``lam`` a number or one per landmark."""
    arrays = []
    for x, name in ((reference_landmarks, "reference_landmarks"), (subject_landmarks, "subject_landmarks")):
        a = _checks.real_array(x, f"register: {name} must be an array (n, 2) of planar points",
                               f"register: {name} must be real")
        if a.ndim != 2 or a.shape[1] != 2:
            raise ValueError(f"register: {name} must have shape (n, 2) (planar landmarks (x, y)), got {tuple(a.shape)}")
        arrays.append(a)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"register: reference_landmarks {tuple(arrays[0].shape)} and subject_landmarks "
                         f"{tuple(arrays[1].shape)} must pair up, one subject landmark per reference landmark")
    for x, name in ((lam, "lam"), (scale, "scale")):
        _checks.real_array(x, f"register: {name} must be a number", f"register: {name} must be real", show_value=True)
    return fit_tps(reference_landmarks, subject_landmarks, lam, scale=scale)


def _field(value, xy):
    """Evaluate a constant or a callable of the local coordinates (Eq. 7)."""
    if callable(value):
        return jnp.asarray(value(xy))
    return jnp.asarray(value)


def _scalar_field(value, xy, name: str):
    """:func:`_field` as ``(1,)``; anything but one number per point is refused (trace time)."""
    out = _field(value, xy)
    if out.shape not in ((), (1,)):
        kind = "its callable returns" if callable(value) else "it is"
        raise ValueError(f"TPSMLigament: {name} must be one number per point, shape () or a callable of (x, y) "
                         f"returning shape (); {kind} shape {out.shape}")
    if not (jnp.issubdtype(out.dtype, jnp.floating) or jnp.issubdtype(out.dtype, jnp.integer)):
        raise ValueError(f"TPSMLigament: {name} must be real, got dtype {out.dtype}")
    return jnp.reshape(out, (1,))


def _planar_point(xy, where: str):
    """One planar point ``(2,)`` of Σ_tp (trace time)."""
    return _checks.as_array(xy, f"{where}: xy", (2,), (2,), " (one planar point (x, y) of the insertion; "
                            "jax.vmap for several)")


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
        for name in ("phi", "gamma_a", "gamma_b"):
            if not isinstance(getattr(self, name), ThinPlateSpline):
                raise TypeError(f"TPSMLigament: {name} must be a ThinPlateSpline (fit_tps), got "
                                f"{type(getattr(self, name)).__name__}")
        if self.phi.out_dim != 2 or self.gamma_a.out_dim != 1 or self.gamma_b.out_dim != 1:
            raise ValueError("TPSMLigament: phi must map R²→R² and gamma_a, gamma_b R²→R")
        for name in ("frame_a", "frame_b"):
            _checks.as_array(getattr(self, name), f"TPSMLigament: {name}", (4, 4), (4, 4),
                             " (a homogeneous transform [[R, p], [0, 0, 0, 1]])")
        dom = _checks.as_array(self.domain, "TPSMLigament: domain", (None, 2), ("nc", 2), " (polygon of Σ_tp)")
        if dom.shape[0] < 3:
            raise ValueError(f"TPSMLigament: domain must be a polygon of >= 3 vertices (nc, 2), got {dom.shape}")
        ts = self.transition_strain
        if isinstance(ts, bool) or not isinstance(ts, (int, float, np.integer, np.floating)) or not (
                np.isfinite(ts) and ts > 0):
            raise ValueError(f"TPSMLigament: transition_strain must be a finite number > 0, got {ts!r}")
        for name, positive in (("stiffness", False), ("free_length", True)):
            value = getattr(self, name)
            if callable(value):
                continue
            if np.shape(value) not in ((), (1,)):
                raise ValueError(f"TPSMLigament: {name} must be a number or a callable of (x, y), got shape "
                                 f"{np.shape(value)}")
            try:
                v = float(np.asarray(value).reshape(()))
            except (TypeError, jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
                continue
            if name == "free_length" and v <= 0:
                raise ValueError("TPSMLigament: free_length must be > 0")
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"TPSMLigament: {name} must be finite and {'> 0' if positive else '>= 0'}, got {v}")
            if name == "free_length":
                warn_long_free_length("TPSMLigament", v, stacklevel=5)
        for name in ("frame_a", "frame_b", "domain"):
            if not isinstance(getattr(self, name), jax.core.Tracer):
                if not np.all(np.isfinite(np.asarray(getattr(self, name)))):
                    raise ValueError(f"TPSMLigament: {name} must be finite")

    def rules(self, where: str, stiffness=None, free_length=None) -> list:
        """``(bad, message)`` rules of :func:`mbjax._checks.all_of` on the ligament's values (maps,
        frames, domain; ``stiffness``/``free_length`` as evaluated, else the constants)."""
        out = []
        for name in ("phi", "gamma_a", "gamma_b"):
            out += getattr(self, name).rules(f"{where}: TPSMLigament.{name}")
        for name in ("frame_a", "frame_b", "domain"):
            out.append((~jnp.isfinite(getattr(self, name)),
                        f"{where}: TPSMLigament.{name} contains NaN or inf{CHANGED}"))
        c = stiffness if stiffness is not None else (None if callable(self.stiffness) else jnp.asarray(self.stiffness))
        l0 = free_length if free_length is not None else (
            None if callable(self.free_length) else jnp.asarray(self.free_length))
        if c is not None:
            out.append((~jnp.isfinite(c) | (c < 0),
                        f"{where}: TPSMLigament.stiffness is NaN, inf or < 0 (Pa){CHANGED}"))
        if l0 is not None:
            out.append((~jnp.isfinite(l0) | (l0 <= 0),
                        f"{where}: TPSMLigament.free_length (slack length) is NaN, inf or <= 0 (m){CHANGED}"))
        return out

    def _point_a(self, xy):
        z = self.gamma_a.value(xy)[0]
        grad = self.gamma_a.jacobian_unchecked(xy)[0]
        local = jnp.concatenate([jnp.asarray(xy), z[None]])
        area = jnp.sqrt(1.0 + jnp.sum(grad**2))
        return self.frame_a[:3, :3] @ local + self.frame_a[:3, 3], area

    def _point_b(self, xy):
        uv = self.phi.value(xy)
        local = jnp.concatenate([uv, self.gamma_b.value(uv)])
        return self.frame_b[:3, :3] @ local + self.frame_b[:3, 3]

    def point_a(self, xy):
        """``p`` in body A's frame (3,) and the area factor ‖r_x × r_y‖ = sqrt(1 + Γ_x² + Γ_y²) (Eq. 8)."""
        xy = _planar_point(xy, "TPSMLigament.point_a")
        xy = _checks.all_of(xy, [_checks.not_finite(xy, "TPSMLigament.point_a: xy")] + self.rules("point_a"))
        return self._point_a(xy)

    def point_b(self, xy):
        """``q`` in body B's frame (3,): ``[u, v, Γ_f(u, v)]`` with ``(u, v) = φ(x, y)``."""
        xy = _planar_point(xy, "TPSMLigament.point_b")
        xy = _checks.all_of(xy, [_checks.not_finite(xy, "TPSMLigament.point_b: xy")] + self.rules("point_b"))
        return self._point_b(xy)

    def integrand(self, xy, pose_a, pose_b, pole=None):
        """``[m_O; f] ‖r_x × r_y‖`` at one planar point (6,): the integrand of Eq. 8 (force on B)."""
        xy = _planar_point(xy, "TPSMLigament.integrand")
        pa, area = self._point_a(xy)
        pb = self._point_b(xy)
        c = _scalar_field(self.stiffness, xy, "stiffness")
        l0 = _scalar_field(self.free_length, xy, "free_length")
        fib = FibreSet(pa[None], pb[None], area[None], c, l0, self.law, self.transition_strain)
        extra = [_checks.not_finite(xy, "TPSMLigament.integrand: xy")] + self.rules("integrand", c, l0)
        pose_a, pose_b, pole = checked(fib, pose_a, pose_b, "TPSMLigament.integrand", pole, extra)
        return wrench_jit(fib, pose_a, pose_b, pole)

    def fibres_at(self, xy, weight) -> FibreSet:
        """Fibres through planar points ``xy (N, 2)`` with planar weights ``(N,)`` (× area factor)."""
        xy = _checks.as_array(xy, "TPSMLigament.fibres_at: xy", (None, 2), ("N", 2))
        weight = _checks.as_array(weight, "TPSMLigament.fibres_at: weight", (xy.shape[0],), ("N",),
                                  " (one planar weight per point)")
        _scalar_field(self.stiffness, xy[0] if xy.shape[0] else jnp.zeros(2), "stiffness")  # shapes
        _scalar_field(self.free_length, xy[0] if xy.shape[0] else jnp.zeros(2), "free_length")
        return _fibres_at(self, xy, weight)


@eqx.filter_jit
def _fibres_at(lig: TPSMLigament, xy, weight) -> FibreSet:
    pa, area = jax.vmap(lig._point_a)(xy)
    pb = jax.vmap(lig._point_b)(xy)
    c = jnp.broadcast_to(jax.vmap(lambda p: _field(lig.stiffness, p))(xy), (xy.shape[0],))
    l0 = jnp.broadcast_to(jax.vmap(lambda p: _field(lig.free_length, p))(xy), (xy.shape[0],))
    w = weight * area
    rules = [_checks.not_finite(xy, "TPSMLigament.fibres_at: xy"),
             _checks.not_finite(weight, "TPSMLigament.fibres_at: weight")]
    w = _checks.all_of(w, rules + lig.rules("fibres_at", c, l0))
    return FibreSet(pa, pb, w, c, l0, lig.law, lig.transition_strain)


def discretize(lig: TPSMLigament, mesh: Mesh, rule: TriangleRule) -> FibreSet:
    """TPSM-n: one fibre per Gauss point (Eq. 14-15), weight ``W_g A_σk ‖r_x × r_y‖``.

    The fibre ends are pose-independent, so this runs once; ``ligament_wrench`` of the result is the
    quadrature of Eq. 8 at any pose.
    """
    rule = check_rule(rule, "discretize")
    xy, w = quadrature_points(check_mesh(mesh), rule)
    return lig.fibres_at(jnp.asarray(xy), jnp.asarray(w))


def reference_wrench(lig: TPSMLigament, mesh: Mesh, pose_a, pose_b, pole=None, tol=1e-10, rule=None, max_level=12):
    """Adaptive integral of Eq. 8 (the paper's ``integral2`` benchmark).

    Returns ``(wrench (6,), error_estimate, n_evaluations)``; see ``adaptive_integrate``.
    """
    if not isinstance(lig, TPSMLigament):
        raise TypeError(f"reference_wrench: lig must be a TPSMLigament, got {type(lig).__name__}")
    f = jax.jit(jax.vmap(lambda p: lig.integrand(p, pose_a, pose_b, pole)))

    chunk = 4096  # fixed batch: one compilation for the whole adaptive run

    def fn(xy):
        n = xy.shape[0]
        size = -(-max(n, 1) // chunk) * chunk
        pad = jnp.asarray(np.concatenate([xy, np.repeat(xy[:1], size - n, 0)]))
        out = [np.asarray(f(pad[i : i + chunk])) for i in range(0, size, chunk)]
        return np.concatenate(out)[:n]

    return adaptive_integrate(fn, mesh, rule, tol=tol, max_level=max_level)
