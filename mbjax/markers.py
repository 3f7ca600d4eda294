"""Model markers: points fixed on bodies (OpenSim's ``MarkerSet``), as one ``eqx.Module``.

A marker ``m`` is a body-fixed point ``r_m`` (body frame, metres) on body ``b_m``; its world position
is ``⁰r_m = ⁰A_{b_m}(q) [r_m; 1]`` (Eq. 41 of the seed, :func:`mbjax.point_positions` for all markers
at once).  A marker on ground has body index ``-1`` (identity pose).  ``offset`` is a differentiable
array leaf (marker placement can be optimised), names and bodies are static.
"""

from __future__ import annotations

import equinox as eqx
import jax
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
        own = self.names  # one attribute read: a method of an eqx.Module is rebuilt at every access
        k = [own.index(n) if n in own else self.index(n) for n in names]
        offset = self.offset
        # concrete offsets are gathered on the host (an eager jnp gather is a dispatch of its own); traced ones
        # (marker placement being fitted) by jnp, so the selection stays differentiable
        offset = offset[np.asarray(k, int)] if isinstance(offset, jax.core.Tracer) else np.asarray(offset)[k]
        return Markers([own[i] for i in k], [self.body[i] for i in k], offset)


def marker_positions(model, markers: Markers, q) -> jnp.ndarray:
    """World positions ``(nm, 3)`` of the markers at pose ``q`` (``⁰A_b [r; 1]``, Eq. 41)."""
    poses = body_poses(model, q)
    eye = jnp.broadcast_to(jnp.eye(4, dtype=poses.dtype), (1, 4, 4))
    poses = jnp.concatenate([poses, eye], axis=0)  # index -1 = ground
    sel = poses[np.asarray(markers.body, int)]
    off = markers.offset.astype(poses.dtype)
    return jnp.einsum("mab,mb->ma", sel[:, :3, :3], off) + sel[:, :3, 3]


def marker_positions_and_jacobian(model, markers: Markers, q):
    """World positions ``(nm, 3)`` of the markers at pose ``q`` and their Jacobian ``∂⁰r_m/∂q``
    ``(nm, 3, nq)`` in closed form (no forward-mode sweep over the coordinates).

    One kinematics pass gives the world rotation ``R_j``, origin ``p_j`` and joint-map gradient
    ``F = ∂f/∂q`` of every body.  Joint ``j`` moves the markers of its subtree: a revolute joint
    about the world axis ``ω_j = R_j a_j`` through ``p_j`` (``∂⁰r_m/∂f_j = ω_j × (⁰r_m - p_j)``), a
    prismatic one along ``R_j a_j``; then ``∂⁰r_m/∂q = Σ_j A[b_m, j] ∂⁰r_m/∂f_j F_j`` with the static
    ancestor mask ``A`` (Ehsani Eq. 75 for points).  Equal to ``jax.jacfwd(marker_positions)`` to
    rounding (``tests/test_ik.py``); about 10x cheaper on Gait2354.
    """
    return _marker_kinematics(model, markers, q, jacobian=True)


def _marker_kinematics(model, markers: Markers, q, jacobian: bool):
    """Positions (and with ``jacobian`` their Jacobian) from one :func:`forward_pass`."""
    from ._kinematics import forward_pass

    top = model.topology
    body = np.asarray(markers.body, int)
    anc = top.ancestor_mask()
    mask = np.where(body[:, None] >= 0, anc[np.maximum(body, 0)], 0.0)  # (nm, nb)
    rev = np.asarray(top.is_revolute(), bool)
    kin = forward_pass(model, jnp.asarray(q))
    rot, pos, grad = kin.rot, kin.pos, kin.theta_grad  # (nb, 3, 3), (nb, 3), (nb, nq)
    dtype = rot.dtype
    axis = jnp.einsum("jab,jb->ja", rot, model.axis.astype(dtype))  # world joint axes
    rot_g = jnp.concatenate([rot, jnp.eye(3, dtype=dtype)[None]])[body]  # index -1 = ground
    pos_g = jnp.concatenate([pos, jnp.zeros((1, 3), dtype)])[body]
    r = jnp.einsum("mab,mb->ma", rot_g, markers.offset.astype(dtype)) + pos_g
    if not jacobian:
        return r
    d = r[:, None, :] - pos[None]  # (nm, nb, 3)
    w = jnp.broadcast_to(axis[None], d.shape)
    turn = jnp.cross(w, d)
    per_joint = jnp.where(jnp.asarray(rev)[None, :, None], turn, w) * jnp.asarray(mask, dtype)[:, :, None]
    return r, jnp.einsum("mja,jl->mal", per_joint, grad)
