"""Thin-plate splines (TPS), TPS-ligament seed Eq. 1-5.

``t(x, y) = α0 + α1 x + α2 y + Σ_i a_i g_i(x, y)`` with the kernel ``g = r² log r`` (Eq. 1-2); the
coefficients solve the ``(n+3)`` system ``[[G + diag(λ), P], [Pᵀ, 0]] C = [t; 0]`` (Eq. 3-5) by a
linear solve (never an explicit inverse).  ``λ_i = 0`` interpolates landmark ``i`` exactly; large
``λ`` tends to the least-squares affine map.  Values may be vectors (``d = 2`` for the 2-D → 2-D
mappings φ, φ_t, φ_f; ``d = 1`` for the insertion surfaces Γ_t, Γ_f).

The kernel is evaluated on ``u = (x - origin) / scale`` (the affine part too), which improves the
conditioning and fixes the length unit in which ``λ`` is read: ``scale = 1e-3`` with inputs in
metres makes ``λ`` the paper's millimetre value.  At ``λ = 0`` the interpolant does not depend on
``origin``/``scale``.
"""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks

#: the hint the run-time messages end with
CHANGED = " (changed after fitting? eqx.tree_at or a fit step)"


def tps_kernel(r2):
    """``g = r² log r = ½ r² log r²`` as a function of squared distances ``r² >= 0``; ``g(0) = 0``
    with finite gradients.  NaN, inf or negative ``r²`` raise at run time (checks on).

    The double-``where`` keeps ``jax.grad`` finite (zero) at ``r = 0`` (the true first derivative
    there is 0; the second derivative of ``r² log r`` is log-singular and is returned as 0).
    """
    r2 = _checks.real_array(r2, "tps_kernel: r2 must be an array of squared distances",
                            "tps_kernel: r2 must be real squared distances")
    return _checks.all_of(_tps_kernel(r2), [
        (~jnp.isfinite(r2) | (r2 < 0), "tps_kernel: r2 (squared distances) must be finite and >= 0")])


def _tps_kernel(r2):
    """:func:`tps_kernel` unchecked (distances computed from checked landmarks)."""
    pos = r2 > 0
    safe = jnp.where(pos, r2, 1.0)
    return jnp.where(pos, 0.5 * safe * jnp.log(safe), 0.0)


def _kernel_dlog(r2):
    """``log r² + 1`` (so that ∂g/∂u = (u - u_i)(log r² + 1)); 0 at r = 0 (the product's limit)."""
    pos = r2 > 0
    safe = jnp.where(pos, r2, 1.0)
    return jnp.where(pos, jnp.log(safe) + 1.0, 0.0)


class ThinPlateSpline(eqx.Module):
    """A fitted TPS ``R² → R^d`` (Eq. 1); evaluate one point ``(2,)`` -> ``(d,)``, ``jax.vmap`` for more.

    Fields: ``landmarks (n, 2)`` in input units, ``weights (n, d)`` = a_i, ``affine (3, d)`` = α_k
    (in normalised coordinates), ``origin (2,)``, ``scale ()``.
    """

    landmarks: jnp.ndarray
    weights: jnp.ndarray
    affine: jnp.ndarray
    origin: jnp.ndarray
    scale: jnp.ndarray

    @property
    def out_dim(self) -> int:
        return self.weights.shape[-1]

    def _u(self, xy):
        """Normalised inputs; the *last* axis of ``xy`` is (x, y), leading axes are a batch."""
        xy = jnp.asarray(xy)
        if xy.ndim == 0 or xy.shape[-1] != 2:
            raise ValueError(f"thin-plate spline: xy must have shape (2,) or (..., 2) (batch, 2), got {xy.shape}")
        return (xy - self.origin) / self.scale

    def rules(self, where: str) -> list:
        """``(bad, message)`` rules of :func:`mbjax._checks.all_of`: finite fields, ``scale > 0``."""
        out = [(~jnp.isfinite(getattr(self, f)), f"{where}: {f} contains NaN or inf{CHANGED}")
               for f in ("landmarks", "weights", "affine", "origin")]
        out.append((~jnp.isfinite(self.scale) | (self.scale <= 0), f"{where}: scale is NaN, inf or <= 0{CHANGED}"))
        return out

    def __call__(self, xy):
        """t(x, y) of Eq. 1: ``xy (2,)`` -> ``(d,)``; a batch ``(..., 2)`` -> ``(..., d)``.

        The batch axis rule is explicit (leading axes are points, the landmarks are a separate
        axis), so a batch whose size equals the number of landmarks is not confused with them.
        """
        xy = self._checked(xy)
        return self.value(xy)

    def jacobian(self, xy):
        """Closed-form ∂t/∂(x, y): ``(d, 2)`` for ``xy (2,)``, ``(..., d, 2)`` for a batch."""
        return self.jacobian_unchecked(self._checked(xy))

    def _checked(self, xy):
        xy = jnp.asarray(xy)
        if not (jnp.issubdtype(xy.dtype, jnp.floating) or jnp.issubdtype(xy.dtype, jnp.integer)):
            raise ValueError(f"thin-plate spline: xy must be a real array, got dtype {xy.dtype}")
        self._u(xy)  # shape
        return _checks.all_of(xy, [_checks.not_finite(xy, "thin-plate spline: xy")] + self.rules("thin-plate spline"))

    def value(self, xy):
        """:meth:`__call__` without the run-time value checks (shapes are checked)."""
        u = self._u(xy)
        uk = (self.landmarks - self.origin) / self.scale
        d = u[..., None, :] - uk  # (..., n, 2)
        g = _tps_kernel(jnp.sum(d * d, -1))
        return g @ self.weights + self.affine[0] + u @ self.affine[1:]

    def jacobian_unchecked(self, xy):
        """:meth:`jacobian` without the run-time value checks (shapes are checked)."""
        u = self._u(xy)
        uk = (self.landmarks - self.origin) / self.scale
        d = u[..., None, :] - uk  # (..., n, 2)
        dg = d * _kernel_dlog(jnp.sum(d * d, -1))[..., None]  # (..., n, 2)
        return (jnp.einsum("nd,...nk->...dk", self.weights, dg) + self.affine[1:].T) / self.scale

    def bending_energy(self):
        """∫_{R²} (t_xx² + 2 t_xy² + t_yy²) dx dy = 8π aᵀ K a / scale² per output (Duchon), ``(d,)``.

        ``K`` is the kernel matrix without λ (so for λ > 0 this is the energy of the smoothed spline).
        """
        uk = (self.landmarks - self.origin) / self.scale
        d = uk[:, None, :] - uk[None, :, :]
        k = _tps_kernel(jnp.sum(d * d, -1))
        return 8.0 * math.pi * jnp.einsum("id,ij,jd->d", self.weights, k, self.weights) / self.scale**2


def _is_concrete(*xs) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in xs)


def _check_landmarks(landmarks: np.ndarray, values: np.ndarray, lam: np.ndarray, scale: float) -> None:
    n = landmarks.shape[0]
    if n < 3:
        raise ValueError(f"thin-plate spline: need at least 3 landmarks, got {n}")
    if not (np.all(np.isfinite(landmarks)) and np.all(np.isfinite(values)) and np.all(np.isfinite(lam))):
        raise ValueError("thin-plate spline: landmarks, values and λ must be finite")
    if np.any(lam < 0):
        raise ValueError(f"thin-plate spline: relaxation λ must be >= 0, got min {lam.min()}")
    u = (landmarks - landmarks.mean(0)) / scale
    span = np.max(np.abs(u)) if n else 0.0
    sv = np.linalg.svd(u, compute_uv=False)
    if span == 0.0 or sv[-1] <= 1e-10 * max(span, 1.0) * math.sqrt(n):
        raise ValueError(
            "thin-plate spline: landmarks are collinear (or coincident); the affine part of Eq. 1 "
            "is undetermined and the (n+3) system of Eq. 3-5 is singular. Use >= 3 non-collinear landmarks."
        )
    d2 = np.sum((u[:, None, :] - u[None, :, :]) ** 2, -1)
    iu, ju = np.triu_indices(n, 1)
    dup = d2[iu, ju] <= (1e-12 * max(span, 1.0)) ** 2
    if np.any(dup):
        pairs = [(int(i), int(j)) for i, j in zip(iu[dup], ju[dup]) if lam[i] == 0 or lam[j] == 0]
        if pairs:
            raise ValueError(
                f"thin-plate spline: duplicated landmarks {pairs[:5]} with λ = 0 make the system of "
                "Eq. 3-5 singular; remove duplicates or give them λ > 0 (smoothing)."
            )


@jax.jit
def _system(landmarks, values, lam, origin, scale):
    """``L`` (Eq. 4-5, λ on the diagonal of G) and the right-hand side ``[t; 0]`` of Eq. 3."""
    n = landmarks.shape[0]
    u = (landmarks - origin) / scale
    d = u[:, None, :] - u[None, :, :]
    g = _tps_kernel(jnp.sum(d * d, -1)) + jnp.diag(lam)
    p = jnp.concatenate([jnp.ones((n, 1), u.dtype), u], 1)
    top = jnp.concatenate([g, p], 1)
    bottom = jnp.concatenate([p.T, jnp.zeros((3, 3), u.dtype)], 1)
    big = jnp.concatenate([top, bottom], 0)
    rhs = jnp.concatenate([values.astype(u.dtype), jnp.zeros((3, values.shape[1]), u.dtype)], 0)
    return big, rhs


@jax.jit
def _solve(big, rhs):
    coef = jnp.linalg.solve(big, rhs)
    return eqx.error_if(coef, ~jnp.all(jnp.isfinite(coef)), "thin-plate spline: singular TPS system (Eq. 3-5)")


def fit_tps(landmarks, values, lam=0.0, *, scale=1.0, origin=None, check: bool = True) -> ThinPlateSpline:
    """Fit Eq. 1 to ``values (n,)`` or ``(n, d)`` at ``landmarks (n, 2)`` with per-landmark ``lam``.

    Solves Eq. 3 ``L C = [t; 0]`` with ``L = [[G + diag(λ), P], [Pᵀ, 0]]`` (Eq. 4-5) by
    ``jnp.linalg.solve``.  Differentiable in landmarks, values and λ.  With concrete inputs and
    ``check=True`` degenerate landmarks (fewer than 3, collinear, duplicated with λ = 0, negative λ,
    non-finite) raise ``ValueError`` and an ill-conditioned ``L`` (cond > 1e13) raises too; under a
    trace a non-finite solution triggers ``eqx.error_if``.
    """
    landmarks = jnp.asarray(landmarks)
    values = jnp.asarray(values)
    if landmarks.ndim != 2 or landmarks.shape[1] != 2:
        raise ValueError(f"thin-plate spline: landmarks must have shape (n, 2), got {landmarks.shape}")
    vec = values.ndim == 2
    if not vec:
        values = values[:, None]
    if values.ndim != 2 or values.shape[0] != landmarks.shape[0]:
        raise ValueError(
            f"thin-plate spline: values must have shape (n,) or (n, d) with n = {landmarks.shape[0]}, "
            f"got {values.shape}"
        )
    n = landmarks.shape[0]
    if jnp.ndim(lam) not in (0,) and jnp.shape(lam) != (n,):
        raise ValueError(f"thin-plate spline: lam must be a number or have shape (n,) = ({n},), one per landmark, "
                         f"got {jnp.shape(lam)}")
    lam = jnp.broadcast_to(jnp.asarray(lam, dtype=landmarks.dtype), (n,))
    if jnp.ndim(scale) != 0:
        raise ValueError(f"thin-plate spline: scale must be a number (the landmarks' length unit), got shape "
                         f"{jnp.shape(scale)}")
    scale = jnp.asarray(scale, dtype=landmarks.dtype)
    if _is_concrete(scale) and not (np.isfinite(float(scale)) and float(scale) > 0):
        raise ValueError(f"thin-plate spline: scale must be finite and > 0, got {float(scale)}")
    if origin is not None:
        origin = _checks.as_array(origin, "thin-plate spline: origin", (2,), (2,))
        if _is_concrete(origin) and not np.all(np.isfinite(np.asarray(origin))):
            raise ValueError(f"thin-plate spline: origin must be finite, got {np.asarray(origin).tolist()}")
    origin = jnp.mean(landmarks, 0) if origin is None else jnp.asarray(origin, landmarks.dtype)
    concrete = _is_concrete(landmarks, values, lam, scale)
    if check and concrete:
        _check_landmarks(np.asarray(landmarks), np.asarray(values), np.asarray(lam), float(scale))
    big, rhs = _system(landmarks, values, lam, origin, scale)
    if check and concrete:
        cond = np.linalg.cond(np.asarray(big))
        if not np.isfinite(cond) or cond > 1e13:
            raise ValueError(
                f"thin-plate spline: the (n+3) system of Eq. 3-5 is singular or ill-conditioned "
                f"(cond = {cond:.3g}); check for (near-)duplicated or collinear landmarks or set `scale` "
                "to the landmarks' length unit"
            )
    coef = _solve(big, rhs)
    return ThinPlateSpline(landmarks=landmarks, weights=coef[:n], affine=coef[n:], origin=origin, scale=scale)
