"""The multibundle model (MBM) baseline of the TPS-ligament seed §3 and its Fig. 9 variant.

Standard MBM: one fibre from every mesh vertex of Σ_tp (lifted onto Γ_t) to its homologous point
φ, Γ_f on the femur; each fibre's stiffness is ``c`` times the mean area per fibre, i.e. the area
of the spatial insertion (sum of the lifted triangles σ_kS) divided by the number of fibres.
``placement="centroids"``: fibres at the triangle centroids, same mean-area weighting (Fig. 9);
with each triangle's own area instead it would coincide with TPSM-1.  The fibre laws
(``"quadratic"``, ``"blankevoort"``) are in ``fibres.py``.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .fibres import FibreSet
from .quadrature import Mesh, check_mesh
from .tpsm import TPSMLigament


def spatial_area(lig: TPSMLigament, mesh: Mesh):
    """Area of the insertion surface Σ_t approximated by the lifted triangles σ_kS."""
    _check_ligament(lig, "spatial_area")
    mesh = check_mesh(mesh)
    return _spatial_area(lig, jnp.asarray(mesh.vertices), jnp.asarray(mesh.triangles))


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

