"""Discrete ligament fibres and their wrench (TPS-ligament seed Eq. 6, 10, 14).

Both discretisations of a ligament end up here: TPSM-n (one fibre per Gauss point, weight
``W_g A_σk ‖r_x × r_y‖``) and the multibundle model (one fibre per mesh vertex, weight = mean
area per fibre).  A fibre runs from ``p`` on body A (the tibia, integration side, Σ_t) to ``q`` on
body B (the femur).  With ``l = ‖p - q‖``, ``ε = (l - l0)/l0`` and ``ŝ = (p - q)/l`` the force per
unit area on body B is ``f(ε) ŝ`` (Eq. 6) and on body A ``-f(ε) ŝ``; the moment about a pole O is
``(q - O) × f ŝ`` (equal to ``(p - O) × f ŝ`` since ``f ∥ p - q``).

Fibre laws (force per unit area, i.e. stress, Pa, for stiffness ``c`` in Pa):
- ``"quadratic"``: ``c ε²`` for ε > 0, 0 when slack (seed §3, ERRATA);
- ``"blankevoort"``: Blankevoort & Huiskes (1991), ``c ε²/(4 ε_l)`` for ``0 <= ε <= 2 ε_l``,
  ``c (ε - ε_l)`` above, 0 when slack; C¹ with transition strain ``2 ε_l = 0.06``.

Zero-length fibres (``p = q``) are handled by a grad-safe norm: they are slack for ``l0 > 0`` and
carry no force (``ŝ`` is set to 0).  Free lengths must be positive (``ValueError``).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._spatial import safe_norm

LAWS = ("quadratic", "blankevoort")


def fibre_law(strain, stiffness, law: str = "quadratic", transition_strain: float = 0.06):
    """Fibre stress ``f(c, ε)`` of Eq. 6 (zero for slack fibres)."""
    eps = jnp.asarray(strain)
    pos = jnp.maximum(eps, 0.0)
    if law == "quadratic":
        return stiffness * pos**2
    if law == "blankevoort":
        el = 0.5 * transition_strain
        toe = stiffness * pos**2 / (4.0 * el)
        lin = stiffness * (pos - el)
        return jnp.where(pos <= 2.0 * el, toe, lin)
    raise ValueError(f"fibre law {law!r} is not one of {LAWS}")


def fibre_energy_density(strain, stiffness, free_length, law: str = "quadratic", transition_strain: float = 0.06):
    """Elastic energy per unit area ``∫_{l0}^{l} f dl = l0 ∫_0^ε f(e) de`` (for virtual-work tests)."""
    pos = jnp.maximum(jnp.asarray(strain), 0.0)
    if law == "quadratic":
        return free_length * stiffness * pos**3 / 3.0
    if law == "blankevoort":
        el = 0.5 * transition_strain
        toe = stiffness * pos**3 / (12.0 * el)
        e2 = 2.0 * el
        lin = stiffness * (e2**3 / (12.0 * el) + 0.5 * (pos - el) ** 2 - 0.5 * (e2 - el) ** 2)
        return free_length * jnp.where(pos <= e2, toe, lin)
    raise ValueError(f"fibre law {law!r} is not one of {LAWS}")


class FibreSet(eqx.Module):
    """``N`` fibres: ends ``points_a (N, 3)`` in body A's frame and ``points_b (N, 3)`` in body B's,
    ``weight (N,)`` (area, m²), ``stiffness (N,)`` (Pa), ``free_length (N,)`` (m) and a static law."""

    points_a: jnp.ndarray
    points_b: jnp.ndarray
    weight: jnp.ndarray
    stiffness: jnp.ndarray
    free_length: jnp.ndarray
    law: str = eqx.field(static=True, default="quadratic")
    transition_strain: float = eqx.field(static=True, default=0.06)

    def __check_init__(self):
        n = self.points_a.shape[0]
        for name in ("points_b", "weight", "stiffness", "free_length"):
            if getattr(self, name).shape[0] != n:
                raise ValueError(f"FibreSet: {name} has {getattr(self, name).shape[0]} rows, expected {n}")
        if self.law not in LAWS:
            raise ValueError(f"FibreSet: law {self.law!r} is not one of {LAWS}")
        try:
            l0 = np.asarray(self.free_length)
            k, w = np.asarray(self.stiffness), np.asarray(self.weight)
            pa, pb = np.asarray(self.points_a), np.asarray(self.points_b)
        except Exception:  # traced: skip the concrete check
            return
        if not all(np.all(np.isfinite(a)) for a in (l0, k, w, pa, pb)):
            raise ValueError("FibreSet: points, weights, stiffnesses and free lengths must be finite")
        if np.any(l0 <= 0):
            raise ValueError("FibreSet: free lengths must be > 0 (strain ε = (l - l0)/l0 of Eq. 6)")
        if np.any(k < 0):
            raise ValueError(f"FibreSet: stiffness must be >= 0 (Pa), got min {k.min()} (fibre {int(np.argmin(k))})")
        if np.any(w < 0):
            raise ValueError(f"FibreSet: weights (areas, m²) must be >= 0, got min {w.min()} (fibre {int(np.argmin(w))})")

    @property
    def n_fibres(self) -> int:
        return int(self.points_a.shape[0])


def _world(pose, pts):
    return pts @ pose[:3, :3].T + pose[:3, 3]


def fibre_state(fibres: FibreSet, pose_a, pose_b):
    """World ends ``p, q``, lengths ``l``, strains ``ε`` and unit vectors ``ŝ = (p - q)/l``."""
    pose_a, pose_b = _checks.pose(pose_a, "pose_a"), _checks.pose(pose_b, "pose_b")
    p = _world(pose_a, fibres.points_a)
    q = _world(pose_b, fibres.points_b)
    d = p - q
    length = safe_norm(d, axis=-1)
    s_hat = d / jnp.where(length > 0, length, 1.0)[:, None]
    strain = (length - fibres.free_length) / fibres.free_length
    return p, q, length, strain, s_hat


@eqx.filter_jit
def ligament_wrench(fibres: FibreSet, pose_a, pose_b, pole=None):
    """Wrench ``[M_O; F]`` (6,) that the ligament applies to body B (Eq. 6 summed as Eq. 10/14).

    ``pose_a``, ``pose_b``: world 4x4 poses of bodies A and B; ``pole`` (3,) defaults to the world
    origin (then the wrench pairs with ``body_jacobians``' twists).  The wrench on body A is the
    negative (same pole).
    """
    _, q, _, strain, s_hat = fibre_state(fibres, pose_a, pose_b)
    t = fibre_law(strain, fibres.stiffness, fibres.law, fibres.transition_strain) * fibres.weight
    force = t[:, None] * s_hat
    arm = q if pole is None else q - _checks.finite(_checks.as_array(pole, "pole", (3,), (3,)), "pole")
    moment = jnp.cross(arm, force)
    return jnp.concatenate([moment.sum(0), force.sum(0)])


def ligament_energy(fibres: FibreSet, pose_a, pose_b):
    """Elastic energy of the discretised ligament (J); its negative gradient is the wrench."""
    _, _, _, strain, _ = fibre_state(fibres, pose_a, pose_b)
    e = fibre_energy_density(strain, fibres.stiffness, fibres.free_length, fibres.law, fibres.transition_strain)
    return jnp.sum(e * fibres.weight)
