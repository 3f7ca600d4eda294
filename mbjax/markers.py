"""Model markers: points fixed on bodies (OpenSim's ``MarkerSet``), as one ``eqx.Module``.

A marker ``m`` is a body-fixed point ``r_m`` (body frame, metres) on body ``b_m``; its world position
is ``⁰r_m = ⁰A_{b_m}(q) [r_m; 1]`` (Eq. 41 of the seed, :func:`mbjax.point_positions` for all markers
at once).  A marker on ground has body index ``-1`` (identity pose).  ``offset`` is a differentiable
array leaf (marker placement can be optimised), names and bodies are static.
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._kinematics import body_poses


class Markers(eqx.Module):
    """Markers on a model's bodies: ``offset (nm, 3)`` in the body frames, static ``names`` and
    ``body`` indices into ``model.body_names`` (``-1`` = ground)."""

    offset: jnp.ndarray
    names: tuple[str, ...] = eqx.field(static=True)
    body: tuple[int, ...] = eqx.field(static=True)

    def __init__(self, names, body, offset):
        self.names = tuple(str(n) for n in names)
        self.body = tuple(int(b) for b in body)
        self.offset = jnp.asarray(offset, dtype=float).reshape(len(self.names), 3)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"duplicate marker names in {self.names}")
        if len(self.body) != len(self.names):
            raise ValueError(f"{len(self.body)} body indices for {len(self.names)} markers")

    @classmethod
    def on_bodies(cls, model, names, bodies, offset) -> "Markers":
        """Markers from body names (``"ground"`` allowed) or indices."""
        idx = [-1 if b == "ground" else model.body_index(b) for b in bodies]
        return cls(names, idx, offset)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"unknown marker {name!r}; markers are {self.names}") from None

    def select(self, names) -> "Markers":
        """The subset ``names`` in that order."""
        k = [self.index(n) for n in names]
        return Markers([self.names[i] for i in k], [self.body[i] for i in k], self.offset[np.asarray(k, int)])


def marker_positions(model, markers: Markers, q) -> jnp.ndarray:
    """World positions ``(nm, 3)`` of the markers at pose ``q`` (``⁰A_b [r; 1]``, Eq. 41)."""
    poses = body_poses(model, q)
    eye = jnp.broadcast_to(jnp.eye(4, dtype=poses.dtype), (1, 4, 4))
    poses = jnp.concatenate([poses, eye], axis=0)  # index -1 = ground
    sel = poses[np.asarray(markers.body, int)]
    off = markers.offset.astype(poses.dtype)
    return jnp.einsum("mab,mb->ma", sel[:, :3, :3], off) + sel[:, :3, 3]
