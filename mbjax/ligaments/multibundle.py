"""The multibundle model (MBM) baseline of the TPS-ligament seed §3 and its Fig. 9 variant.

Standard MBM: one fibre from every mesh vertex of Σ_tp (lifted onto Γ_t) to its homologous point
φ, Γ_f on the femur; each fibre's stiffness is ``c`` times the mean area per fibre, i.e. the area
of the spatial insertion (sum of the lifted triangles σ_kS) divided by the number of fibres.
``placement="centroids"``: fibres at the triangle centroids, same mean-area weighting (Fig. 9);
with each triangle's own area instead it would coincide with TPSM-1.  The fibre laws
(``"quadratic"``, ``"blankevoort"``) are in ``fibres.py``.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .fibres import FibreSet
from .quadrature import Mesh, _inside, check_mesh
from .tpsm import TPSMLigament


def spatial_area(lig: TPSMLigament, mesh: Mesh):
    """Area of the insertion surface Σ_t approximated by the lifted triangles σ_kS."""
    _check_ligament(lig, "spatial_area")
    mesh = check_mesh(mesh)
    warn_outside_domain(lig, mesh.vertices, "spatial_area")
    return _spatial_area(lig, jnp.asarray(mesh.vertices), jnp.asarray(mesh.triangles))


#: mesh vertices farther than this fraction of the domain's diameter outside it are warned about
DOMAIN_TOLERANCE = 0.01


def warn_outside_domain(lig, points, where: str, stacklevel: int = 3) -> None:
    """Warn when concrete planar ``points (n, 2)`` lie outside the ligament's insertion domain (by more
    than :data:`DOMAIN_TOLERANCE` of its diameter): its maps are extrapolated there, away from the
    landmarks they were fitted to, and what is computed there describes no insertion."""
    if any(isinstance(x, jax.core.Tracer) for x in (lig.domain, points)):
        return
    poly, pts = np.asarray(lig.domain, float), np.asarray(points, float).reshape(-1, 2)
    out = ~_inside(poly, pts)
    if not out.any():
        return
    a, b = poly, np.roll(poly, -1, axis=0)  # the edges; each outside point's distance to the nearest
    ab = b - a
    t = np.clip(np.einsum("pej,ej->pe", pts[out][:, None] - a, ab) / np.maximum(np.sum(ab * ab, -1), 1e-300), 0, 1)
    dist = np.linalg.norm(pts[out][:, None] - (a + t[..., None] * ab), axis=-1).min(axis=1)
    size = float(np.max(np.linalg.norm(poly[:, None] - poly[None], axis=-1)))
    far = dist > DOMAIN_TOLERANCE * size
    if far.any():
        k = np.flatnonzero(out)[far]
        warnings.warn(f"{where}: {k.size} of {len(pts)} mesh vertices lie outside the ligament's insertion domain "
                      f"(first: vertex {int(k[0])} at ({pts[k[0], 0]:.4g}, {pts[k[0], 1]:.4g}), "
                      f"{float(dist[far][0]):.3g} outside a domain {size:.3g} across): the ligament's maps are "
                      "extrapolated there; mesh the domain (triangulate(lig.domain, n))", UserWarning,
                      stacklevel=stacklevel)


def _check_ligament(lig, where: str) -> None:
    if not isinstance(lig, TPSMLigament):
        raise TypeError(f"{where}(lig, mesh): lig must be a TPSMLigament (e.g. synthetic_acl()[0]), got "
                        f"{type(lig).__name__}")


@eqx.filter_jit
def _spatial_area(lig, vertices, triangles):
    pts = jax.vmap(lambda p: lig.point_a(p)[0])(vertices)
    c = pts[triangles]
    return 0.5 * jnp.sum(jnp.linalg.norm(jnp.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]), axis=-1))


def multibundle_fibres(lig: TPSMLigament, mesh: Mesh, placement: str = "vertices") -> FibreSet:
    """MBM fibres at mesh vertices (``"vertices"``) or triangle centroids (``"centroids"``, Fig. 9)."""
    _check_ligament(lig, "multibundle_fibres")
    mesh = check_mesh(mesh)
    if placement == "vertices":
        xy = mesh.vertices
    elif placement == "centroids":
        xy = mesh.corners.mean(1)
    else:
        raise ValueError(f"multibundle_fibres: placement must be 'vertices' or 'centroids', got {placement!r}")
    area = spatial_area(lig, mesh)
    n = xy.shape[0]
    fib = lig.fibres_at(jnp.asarray(xy), jnp.ones(n))
    # MBM ignores the local area factor: every fibre carries the mean area
    return FibreSet(
        fib.points_a, fib.points_b, jnp.full(n, area / n), fib.stiffness, fib.free_length, fib.law, fib.transition_strain
    )

