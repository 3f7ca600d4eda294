"""A synthetic anterior cruciate ligament (ACL) built with the five TPSM steps (seed §3, ERRATA).

The paper's subject data (MRI/CT insertions, bundle centroids) are not public; this geometry is
synthetic and of realistic size.  Units: metres (the TPS kernels read millimetres, ``scale=1e-3``,
so λ = 0.1 is the paper's value).  Knee at full extension: the femur and tibia body frames
coincide (x anterior, y medial, z proximal; origin on the tibial plateau between the spines).

- Reference ("literature") data, S_rt / S_rf: elliptical contours 16 × 9 mm (tibia) and
  14 × 7 mm (femur), 16 landmarks each, AM/PL bundle centroids at (±3.5, ±1.2) mm and
  (±3.5, ±0.8) mm.
- Subject insertions, S_st / S_sf: egg-shaped 16-vertex contours, tibia 18 × 10 mm, femur
  15 × 8 mm (``r(θ) = a(1 + 0.08 cos θ)``-style asymmetry).
- Step (i): φ_t, φ_f register reference contours on subject contours exactly (λ = 0, as in the
  paper) and carry the AM/PL centroids over.
- Step (ii): φ: Σ_tp → Σ_fp, exact at the two centroids, λ = 0.1 on 8 contour landmarks paired by
  angle.
- Step (iii): Γ_t, Γ_f interpolate (λ = 0) 40-point clouds of curved surfaces: the tibial
  footprint is convex (radii 40 and 60 mm), the femoral notch wall concave (25 and 35 mm), each
  with a small cubic asymmetry.
- Frames: S_st at (8, 0, 0) mm in the tibia, normal +z; S_sf at (-9.5, -6, 22.5) mm in the femur
  on the lateral notch wall, normal +y (medial), long axis u ∥ (1, 0, 0.5) (AM anterior-proximal).
  Fibres are then about 25-35 mm long (see ``fibre_length_range``); with ``l0 = 27 mm`` the
  ligament is partially slack, with ``l0 = 10 mm`` fully taut (seed §3).
- Fibre law ``f = c ε²`` with ``c = 100 MPa`` (seed §3).
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .._spatial import transform
from .fibres import warn_implausible, warn_long_free_length
from .tps import fit_tps
from .tpsm import TPSMLigament, register

MM = 1e-3
N_CONTOUR = 16


def _ellipse(a, b, n=N_CONTOUR, egg=0.0, phase=0.0):
    th = np.linspace(0.0, 2 * np.pi, n, endpoint=False) + phase
    r = 1.0 + egg * np.cos(th)
    return np.stack([a * r * np.cos(th), b * r * np.sin(th)], -1)


REFERENCE_TIBIA_CONTOUR = _ellipse(8.0, 4.5)  # mm, S_rt
REFERENCE_FEMUR_CONTOUR = _ellipse(7.0, 3.5)  # mm, S_rf
REFERENCE_TIBIA_CENTROIDS = np.array([[3.5, 1.2], [-3.5, -1.2]])  # AM, PL (mm)
REFERENCE_FEMUR_CENTROIDS = np.array([[3.5, 0.8], [-3.5, -0.8]])
SUBJECT_TIBIA_CONTOUR = _ellipse(9.0, 5.0, egg=0.08, phase=0.1)  # mm, S_st, 18 x 10 mm
SUBJECT_FEMUR_CONTOUR = _ellipse(7.5, 4.0, egg=-0.08, phase=0.1)  # mm, S_sf, 15 x 8 mm


def _tibia_surface(x, y):  # mm -> mm, convex plateau footprint
    return -(x**2) / 80.0 - y**2 / 120.0 + 0.002 * x**2 * y


def _femur_surface(u, v):  # mm -> mm, concave notch wall
    return u**2 / 50.0 + v**2 / 70.0 - 0.003 * u * v**2


def _cloud(rng, contour, fn, n=40):
    lo, hi = contour.min(0) * 1.15, contour.max(0) * 1.15
    pts = rng.uniform(lo, hi, (n, 2))
    return pts, fn(pts[:, 0], pts[:, 1])


def _frame_femur():
    u = np.array([1.0, 0.0, 0.5])
    u /= np.linalg.norm(u)
    n = np.array([0.0, 1.0, 0.0])
    v = np.cross(n, u)
    return transform(jnp.asarray(np.stack([u, v, n], 1)), jnp.asarray(np.array([-9.5, -6.0, 22.5]) * MM))


def synthetic_acl(free_length=0.027, stiffness=100e6, law: str = "quadratic", lam_contour: float = 0.1, seed: int = 0):
    """Build the synthetic ACL (documented in the module docstring) as a :class:`TPSMLigament`.

    Returns ``(ligament, info)``; ``info`` holds the registered centroids and contours (metres).
    Built once per argument set (cached; the ligament is immutable).
    """
    warn_long_free_length("synthetic_acl", float(free_length))
    warn_implausible("synthetic_acl", "stiffness", float(stiffness))
    with warnings.catch_warnings():  # warned above, once per call (the build is cached)
        warnings.filterwarnings("ignore", message=".*looks like millimetres")
        lig, info = _synthetic_acl(float(free_length), float(stiffness), law, float(lam_contour), int(seed))
    return lig, dict(info)


@functools.lru_cache(maxsize=16)
def _synthetic_acl(free_length, stiffness, law, lam_contour, seed):
    rng = np.random.default_rng(seed)
    # step (i): reference -> subject registration (exact contour matching, as in the paper)
    phi_t = register(REFERENCE_TIBIA_CONTOUR * MM, SUBJECT_TIBIA_CONTOUR * MM, 0.0, scale=MM)
    phi_f = register(REFERENCE_FEMUR_CONTOUR * MM, SUBJECT_FEMUR_CONTOUR * MM, 0.0, scale=MM)
    cen_t = np.asarray(jax.vmap(phi_t)(jnp.asarray(REFERENCE_TIBIA_CENTROIDS * MM)))
    cen_f = np.asarray(jax.vmap(phi_f)(jnp.asarray(REFERENCE_FEMUR_CENTROIDS * MM)))
    # step (ii): insertion-to-insertion map, exact at centroids, λ on every other contour point
    sel = np.arange(0, N_CONTOUR, 2)
    land = np.concatenate([cen_t, SUBJECT_TIBIA_CONTOUR[sel] * MM])
    homo = np.concatenate([cen_f, SUBJECT_FEMUR_CONTOUR[sel] * MM])
    lam = np.concatenate([np.zeros(len(cen_t)), np.full(len(sel), lam_contour)])
    phi = fit_tps(land, homo, lam, scale=MM)
    # step (iii): insertion surfaces from point clouds (λ = 0)
    pt, zt = _cloud(rng, SUBJECT_TIBIA_CONTOUR, _tibia_surface)
    pf, zf = _cloud(rng, SUBJECT_FEMUR_CONTOUR, _femur_surface)
    gamma_a = fit_tps(pt * MM, zt * MM, 0.0, scale=MM)
    gamma_b = fit_tps(pf * MM, zf * MM, 0.0, scale=MM)
    frame_a = transform(jnp.eye(3), jnp.asarray(np.array([8.0, 0.0, 0.0]) * MM))
    lig = TPSMLigament(
        phi=phi,
        gamma_a=gamma_a,
        gamma_b=gamma_b,
        frame_a=frame_a,
        frame_b=_frame_femur(),
        domain=jnp.asarray(SUBJECT_TIBIA_CONTOUR * MM),
        stiffness=jnp.asarray(stiffness, float),
        free_length=jnp.asarray(free_length, float),
        law=law,
    )
    info = dict(
        centroids_tibia=cen_t,
        centroids_femur=cen_f,
        contour_tibia=SUBJECT_TIBIA_CONTOUR * MM,
        contour_femur=SUBJECT_FEMUR_CONTOUR * MM,
        surface_tibia=_tibia_surface,
        surface_femur=_femur_surface,
    )
    return lig, info


def fibre_length_range(lig: TPSMLigament, n: int = 2000, seed: int = 0):
    """Min, mean and max fibre length (m) at the reference pose over ``n`` random points of Σ_tp
    (those that fall inside the domain)."""
    from .quadrature import _inside

    if not isinstance(lig, TPSMLigament):
        raise TypeError(f"fibre_length_range: lig must be a TPSMLigament (e.g. synthetic_acl()[0]), got "
                        f"{type(lig).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"fibre_length_range: n must be an integer >= 1 (the number of random points), got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"fibre_length_range: seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(seed)
    poly = np.asarray(lig.domain)
    pts = rng.uniform(poly.min(0), poly.max(0), (n, 2))
    pts = pts[_inside(poly, pts)]
    if not len(pts):
        raise ValueError(f"fibre_length_range: none of the n = {n} random points fell inside the insertion domain; "
                         "increase n")
    pa = jax.vmap(lambda p: lig.point_a(p)[0])(jnp.asarray(pts))
    pb = jax.vmap(lig.point_b)(jnp.asarray(pts))
    length = np.linalg.norm(np.asarray(pa - pb), axis=-1)
    return float(length.min()), float(length.mean()), float(length.max())
