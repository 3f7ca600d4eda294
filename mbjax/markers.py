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

from ._model import require_model
from . import _checks
from ._kinematics import body_poses

__all__ = ["Markers", "marker_positions", "marker_positions_and_jacobian"]


class Markers(eqx.Module):
    """Markers on a model's bodies: ``offset (nm, 3)`` in the body frames, static ``names`` and
    ``body`` indices into ``model.body_names`` (``-1`` = ground)."""

    offset: jnp.ndarray
    names: tuple[str, ...] = eqx.field(static=True)
    body: tuple[int, ...] = eqx.field(static=True)

    def __init__(self, names, body, offset):
        if isinstance(names, str):
            raise TypeError(f"Markers: names must be a sequence of marker names, got the string {names!r}")
        self.names = tuple(str(n) for n in names)
        if isinstance(body, (str, int, np.integer)):
            raise TypeError(f"Markers: body must be a sequence of body indices (one per marker), got {body!r}")
        body = tuple(body)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"duplicate marker names in {self.names}")
        if len(body) != len(self.names):
            raise ValueError(f"{len(body)} body indices for {len(self.names)} markers")
        self.body = tuple(_body_index(n, b) for n, b in zip(self.names, body))
        self.offset = _offsets(self.names, offset)

    @classmethod
    def on_bodies(cls, model, names, bodies, offset) -> "Markers":
        """Markers from body names (``"ground"`` allowed) or indices."""
        if isinstance(bodies, str):
            raise TypeError(f"Markers.on_bodies: bodies must be a sequence (one per marker), got the string {bodies!r}")
        names, bodies = list(names), list(bodies)
        if len(bodies) != len(names):
            raise ValueError(f"Markers.on_bodies: {len(bodies)} bodies for {len(names)} markers")
        idx = []
        for n, b in zip(names, bodies):
            if (isinstance(b, str) and b == "ground") or (isinstance(b, (int, np.integer)) and b == -1):
                idx.append(-1)
                continue
            try:
                idx.append(model.body_index(b))
            except ValueError as err:
                raise ValueError(f"Markers.on_bodies: marker {str(n)!r}: {err}") from None
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


def _body_index(name: str, b) -> int:
    """A marker's body index: an integer >= -1 (``-1`` = ground)."""
    bad = isinstance(b, (bool, np.bool_, str)) or not isinstance(b, (int, np.integer, float, np.floating))
    if not bad and isinstance(b, (float, np.floating)):
        bad = not (np.isfinite(b) and float(b).is_integer())
    if bad:
        raise ValueError(f"Markers: marker {name!r} has body {b!r}; body must be an integer index into "
                         "model.body_names (-1 = ground); use Markers.on_bodies for body names")
    if int(b) < -1:
        raise ValueError(f"Markers: marker {name!r} has body index {int(b)}; indices are >= 0 into "
                         "model.body_names, or -1 for ground")
    return int(b)


def _offsets(names, offset):
    """The offsets as ``(nm, 3)``: given as ``(nm, 3)`` (or flat ``(3 nm,)``), finite when concrete."""
    nm = len(names)
    try:
        arr = jnp.asarray(offset)
    except TypeError as err:
        raise ValueError(f"Markers: offset must be a real array of shape (nm, 3) = ({nm}, 3), got "
                         f"{type(offset).__name__}: {err}") from None
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise ValueError(f"Markers: offset must be a real array, got dtype {arr.dtype}")
    if arr.shape not in ((nm, 3), (3 * nm,)):
        raise ValueError(f"Markers: offset must have shape (nm, 3) = ({nm}, 3), one body-frame point per marker, "
                         f"got {tuple(arr.shape)}")
    arr = arr.astype(float).reshape(nm, 3)
    if not isinstance(arr, jax.core.Tracer):
        bad = ~np.all(np.isfinite(np.asarray(arr)), axis=1)
        if bad.any():
            raise ValueError(f"Markers: offset of marker {names[int(np.argmax(bad))]!r} is not finite "
                             f"({np.asarray(arr)[int(np.argmax(bad))].tolist()})")
    return arr


def check_bodies(model, markers: "Markers", where: str) -> None:
    """Every marker's body index is a body of ``model`` (or ``-1``, ground); trace-time ``ValueError``."""
    nb = model.n_bodies
    for name, b in zip(markers.names, markers.body):
        if not -1 <= b < nb:
            raise ValueError(f"{where}: marker {name!r} is on body index {b}, but the model has {nb} bodies "
                             f"(indices 0..{nb - 1}, -1 = ground); the markers do not belong to this model")


def _checked(model, markers: "Markers", q, where: str):
    """Trace-time checks of the markers against ``model`` and of ``q``'s shape; one fused run-time
    check that ``q`` and the offsets are finite (offsets may be changed after construction)."""
    from ._kinematics import check_vector

    if not isinstance(markers, Markers):
        raise TypeError(f"{where}: markers must be an mbjax.Markers, got {type(markers).__name__}")
    check_bodies(model, markers, where)
    with _checks.checks(False):  # shape and dtype only here; the values below, in one check
        q = check_vector(model, q)
    names = list(markers.names)
    rules = [_checks.not_finite(q, "q", _checks.coordinates_context(model))]
    if names:
        bad, _ = _checks.not_finite(markers.offset, "offset")
        rules.append((bad, [f"{where}: offset of marker {n!r} contains NaN or inf (changed after "
                            "construction? eqx.tree_at or a fit step)" for n in names]))
    return _checks.all_of(q, rules)


def marker_positions(model, markers: Markers, q) -> jnp.ndarray:
    """World positions ``(nm, 3)`` of the markers at pose ``q`` (``⁰A_b [r; 1]``, Eq. 41)."""
    require_model(model, "marker_positions")
    q = _checked(model, markers, q, "marker_positions")
    with _checks.checks(False):  # checked above
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

    q = _checked(model, markers, q, "marker_positions_and_jacobian" if jacobian else "marker_positions")
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
