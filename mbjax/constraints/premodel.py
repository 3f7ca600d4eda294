"""Pre-modelling (Ehsani §3-3, first method): sweep q on a grid, solve the loop, fit smooth maps.

The coordinates are swept with a fixed step over their range, g(f, q) = 0 is solved at every grid
point (each solve checked for convergence and conditioning), and each joint variable is fitted
by a natural cubic spline or a Fourier series (one coordinate) or a bicubic tensor spline (two
coordinates).  ∇f and H then come from the fitted maps in closed form.  Accuracy is that of the
interpolant: O(step⁴) for f, O(step²) for H of a cubic spline away from the ends (the natural end
condition H = 0 spoils H near the ends of the range).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..maps import BicubicSpline, Fourier, NaturalCubicSpline
from ._constraint import LoopConstraint, checked_constraint, solve

KINDS = ("spline", "fourier", "bicubic")


@eqx.filter_jit
def _solve_many(constraint, qs):
    return jax.vmap(lambda q: solve(constraint, q))(qs)


def _grids(constraint: LoopConstraint, grids, where: str) -> list[np.ndarray]:
    """One strictly increasing finite 1-D grid of >= 2 points per coordinate."""
    nq = constraint.n_coordinates
    if isinstance(grids, np.ndarray) or not isinstance(grids, (list, tuple)) or len(grids) != nq:
        got = f"an array of shape {np.shape(grids)}" if hasattr(grids, "shape") else repr(grids)
        raise ValueError(f"{where}: grids must be a list of one 1-D grid per coordinate {constraint.coordinates} "
                         f"(e.g. [np.linspace(lo, hi, n)]), got {got}")
    out = []
    for name, g in zip(constraint.coordinates, grids):
        try:
            arr = np.asarray(g, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: the grid of coordinate {name!r} must be a 1-D array of numbers, got {g!r}") from None
        if arr.ndim != 1 or arr.shape[0] < 2:
            raise ValueError(f"{where}: the grid of coordinate {name!r} must be 1-D with >= 2 points, got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{where}: the grid of coordinate {name!r} contains NaN or inf")
        if np.any(np.diff(arr) <= 0):
            raise ValueError(f"{where}: the grid of coordinate {name!r} must be strictly increasing")
        out.append(arr)
    return out


def sweep(constraint: LoopConstraint, grids):
    """Solutions on the tensor grid of ``grids`` (one 1-D array per coordinate): ``(*sizes, m)``."""
    checked_constraint(constraint, "sweep")
    grids = _grids(constraint, grids, "sweep")
    mesh = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1).reshape(-1, len(grids))
    f = _solve_many(constraint, jnp.asarray(mesh))
    return np.asarray(f).reshape(*[g.shape[0] for g in grids], constraint.n_joints)


def premodel(constraint: LoopConstraint, grids, kind: str = "spline", policy: str = "error",
             n_harmonics: int = 6, omega=None):
    """One fitted joint map per joint of the loop, in ``constraint.joints`` order.

    ``kind``: ``"spline"`` (:class:`~mbjax.maps.NaturalCubicSpline`, 1 coordinate),
    ``"fourier"`` (:class:`~mbjax.maps.Fourier`, 1 coordinate, ``n_harmonics``, ``omega``) or
    ``"bicubic"`` (:class:`~mbjax.maps.BicubicSpline`, 2 coordinates).  ``policy`` is the maps'
    out-of-range policy.
    """
    checked_constraint(constraint, "premodel")
    if kind not in KINDS:
        raise ValueError(f"premodel: unknown kind {kind!r}; supported: {KINDS}")
    nq = constraint.n_coordinates
    if kind in ("spline", "fourier") and nq != 1:
        raise ValueError(f"premodel: kind {kind!r} fits one coordinate, the loop has {nq}; use 'bicubic'")
    if kind == "bicubic" and nq != 2:
        raise ValueError(f"premodel: kind 'bicubic' fits two coordinates, the loop has {nq}")
    grids = _grids(constraint, grids, "premodel")
    values = sweep(constraint, grids)
    maps = []
    for j in range(constraint.n_joints):
        if kind == "spline":
            maps.append(NaturalCubicSpline.fit(constraint.coordinates[0], grids[0], values[:, j], policy=policy))
        elif kind == "fourier":
            maps.append(Fourier.fit(constraint.coordinates[0], grids[0], values[:, j], n_harmonics, omega, policy=policy))
        else:
            maps.append(BicubicSpline.fit(constraint.coordinates, grids[0], grids[1], values[..., j], policy=policy))
    return maps
