"""Marker data term: measured positions of skin markers, solved jointly with the poses.

A :class:`MarkerSet` holds, per marker, its body (static) and its offset in that body's frame
``(nk, 3)``, and one scale factor per body ``(nb,)``.  Scaling body ``b`` by ``s_b`` multiplies
the offsets of its markers and the translations of the joints of its children (the segment
lengths), as OpenSim's scale tool does for a uniform scale.  The fitted tree is
``(model, markers, q)`` with the frame poses ``q (N, nq)`` among the parameters, e.g.
``where=lambda t: (t[1].offsets, t[1].scales, t[2])``:

    r = w ⊙ (x_k(q_n; model scaled by s, offsets) − x_meas[n, k])   ``(N, nk, 3)``

Scales of a body without children and the offsets of its markers appear only as products
(s_b · offset): fit one of them (``identifiability`` names the combination otherwise).

This is OpenSim's scaling only where joints have no child-frame translation and no translation
functions; for a model loaded from ``.osim``, :func:`mbjax.analysis.identify.scale_kinematics` /
:func:`~mbjax.analysis.identify.scale_model` apply OpenSim's ``Model::scale`` exactly (per OpenSim body).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._model import require_model
from ..._kinematics import body_poses
from .robust import finish
from .robust import measured as measured_data
from .robust import options, residual
from .torques import _model_of


class MarkerSet(eqx.Module):
    bodies: tuple = eqx.field(static=True)
    offsets: jnp.ndarray  # (nk, 3) in the body frames (before scaling)
    scales: jnp.ndarray  # (nb,)

    def scaled_model(self, model):
        """``model`` with each joint translation scaled by its parent body's factor."""
        parents = np.asarray(model.topology.parents)
        s_parent = jnp.where(parents >= 0, self.scales[np.maximum(parents, 0)], 1.0)
        offset = model.offset.at[:, :3, 3].multiply(s_parent[:, None])
        return eqx.tree_at(lambda m: m.offset, model, offset)

    def positions(self, model, q):
        """World marker positions ``(nk, 3)`` at pose ``q`` (``model`` already scaled)."""
        b = np.asarray(self.bodies)
        poses = body_poses(model, q)[b]
        p = self.offsets * self.scales[b][:, None]
        return jnp.einsum("kab,kb->ka", poses[:, :3, :3], p) + poses[:, :3, 3]


def marker_set(model, bodies, offsets, scales=None) -> MarkerSet:
    """Markers on ``bodies`` (names or indices) at ``offsets (nk, 3)``; ``scales`` default 1."""
    require_model(model, "marker_set")
    if isinstance(bodies, (str, int, np.integer)):  # one body, never split into characters
        bodies = (bodies,)
    idx = tuple(model.body_index(b) for b in bodies)
    sc = jnp.ones(model.n_bodies) if scales is None else jnp.asarray(scales)
    off = jnp.asarray(offsets, dtype=sc.dtype)
    if off.shape != (len(idx), 3):
        raise ValueError(f"marker_set: offsets must have shape (nk, 3) = ({len(idx)}, 3), one row per body in "
                         f"`bodies`, got {tuple(off.shape)}")
    if sc.shape != (model.n_bodies,):
        raise ValueError(f"marker_set: scales must have shape (nb,) = ({model.n_bodies},), one per body "
                         f"{model.body_names}, got {tuple(sc.shape)}")
    return MarkerSet(idx, off, sc)


class MarkerResiduals(eqx.Module):
    measured: jnp.ndarray  # (N, nk, 3)
    weights: Any = None
    huber: Any = None

    def predict(self, tree):
        model, markers, q = _model_of(tree), tree[1], tree[2]
        scaled = markers.scaled_model(model)
        return jax.vmap(markers.positions, in_axes=(None, 0))(scaled, q)

    def __call__(self, tree):
        return finish(residual(self.predict(tree), self.measured, "measured", "marker positions (N, nk, 3)"), self.weights, self.huber)


def marker_residuals(measured, *, weights=None, huber=None) -> MarkerResiduals:
    """Residuals of measured marker positions ``(N, nk, 3)`` for the tree ``(model, markers, q)``."""
    x = measured_data(measured, "measured", ("N", "nk", "3"))
    if x.shape[2] != 3:
        raise ValueError(f"measured must have shape (N, nk, 3) (x, y, z per marker), got {tuple(x.shape)}")
    return MarkerResiduals(x, options(weights, huber, x.shape, "(N, nk, 3)", "marker_residuals"), huber)
