"""Affine joint map in any number of coordinates (a URDF ``mimic`` joint, an OpenSim LinearFunction)."""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates


class Affine(AbstractJointMap):
    """``f(q) = offset + Σ_k slope_k q_{c_k}``.  ∇f = slope, H = 0 (closed form)."""

    slope: jnp.ndarray  # (n_maps, k), zero-padded
    offset: jnp.ndarray  # (n_maps,)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, coordinates, slope, offset=0.0):
        if isinstance(coordinates, str) or (
            len(coordinates) > 0 and isinstance(coordinates[0], str)
        ):
            coords = as_coordinates(coordinates, None, "Affine")
            slope = jnp.atleast_1d(jnp.asarray(slope, dtype=float))
            if slope.shape != (len(coords),):
                raise ValueError(
                    f"Affine: {len(coords)} coordinate(s) {coords} need {len(coords)} slope(s), "
                    f"got shape {slope.shape}"
                )
            self.slope = slope[None]
            self.offset = jnp.atleast_1d(jnp.asarray(offset, dtype=float))
            self.coordinates = (coords,)
        else:  # already stacked
            self.slope = jnp.asarray(slope)
            self.offset = jnp.asarray(offset)
            self.coordinates = tuple(tuple(str(x) for x in c) for c in coordinates)

    def local(self, x):
        k = x.shape[-1]
        slope = self.slope[:, :k]
        f = self.offset + jnp.sum(slope * x, axis=-1)
        return f, slope, jnp.zeros(slope.shape + (k,), slope.dtype)

    @classmethod
    def stack(cls, maps: Sequence["Affine"]) -> "Affine":
        maps = list(maps)
        width = max(max((len(c) for c in m.coordinates), default=0) for m in maps)
        width = max(width, 1)
        slopes = [jnp.pad(m.slope, ((0, 0), (0, width - m.slope.shape[1]))) for m in maps]
        return cls(
            tuple(c for m in maps for c in m.coordinates),
            jnp.concatenate(slopes, 0),
            jnp.concatenate([m.offset for m in maps], 0),
        )

    @classmethod
    def fit(cls, coordinates, x, y):
        """Least-squares affine fit of samples ``y`` at inputs ``x`` (shape ``(n,)`` or ``(n, k)``)."""
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        y = np.asarray(y, dtype=float)
        design = np.concatenate([np.ones((x.shape[0], 1)), x], axis=1)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        return cls(coordinates, coef[1:], coef[0])
