"""Affine joint map in any number of coordinates (a URDF ``mimic`` joint, an OpenSim LinearFunction)."""

from __future__ import annotations

from typing import ClassVar, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, real_param


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
            slope = jnp.atleast_1d(real_param(slope, "Affine", "slope"))
            if slope.shape != (len(coords),):
                raise ValueError(
                    f"Affine: {len(coords)} coordinate(s) {coords} need {len(coords)} slope(s), "
                    f"got shape {slope.shape}"
                )
            offset = real_param(offset, "Affine", "offset")
            if offset.size != 1:
                raise ValueError(f"Affine: offset must be one number (a map of {coords}), got shape {offset.shape}")
            self.slope = slope[None]
            self.offset = jnp.reshape(offset, (1,))
            self.coordinates = (coords,)
        else:  # already stacked
            coords = tuple(tuple(str(x) for x in c) for c in coordinates)
            if not coords:
                raise ValueError("Affine: no coordinates given (a map reading none is a Constant)")
            n, k = len(coords), max(max(len(c) for c in coords), 1)
            self.slope = real_param(slope, "Affine", "slope", (n, None), f" (n_maps, k) with k >= {k} for {coords}")
            if self.slope.shape[1] < k:
                raise ValueError(f"Affine: slope must have shape (n_maps, k) with k >= {k} for {coords}, "
                                 f"got {tuple(self.slope.shape)}")
            self.offset = real_param(offset, "Affine", "offset", (n,), f" (one per map of {coords})")
            self.coordinates = coords

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
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError(f"Affine.fit: y must be 1-D of length len(x) = {x.shape[0]} (one value per sample), "
                             f"got shape {y.shape}")
        design = np.concatenate([np.ones((x.shape[0], 1)), x], axis=1)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        return cls(coordinates, coef[1:], coef[0])
