"""Applied external loads: point forces and torques on bodies, in the frames the data use.

:class:`ExternalLoads` holds ``n`` applications (a body each, static) with array leaves
``points``, ``forces``, ``torques`` ``(..., n, 3)``, so it vmaps over frames.  By default a point is
given in its body's frame and forces/torques in world (ground) axes, the form joint reactions and
:func:`generalized_forces` take.  ``point_frames`` / ``force_frames`` name other frames (a body or
``"ground"``), as OpenSim's ``ExternalForce`` does with ``point_expressed_in_body`` and
``force_expressed_in_body`` (the torque is expressed in the force's frame);
:meth:`ExternalLoads.resolved` re-expresses them with the pose at ``q``
(``ExternalForce::implProduceForces``: a point given in ground is the body point that is *at*
that ground location in this pose).
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._kinematics import body_poses
from . import _checks
from ._model import GROUND, Model
from ._wrenches import generalized_forces


def _frame_key(f):
    if f is None:
        return None
    if isinstance(f, (int, np.integer)):
        return int(f)
    return str(f)


class ExternalLoads(eqx.Module):
    """Applied loads: forces at points of bodies plus torques (see the module docstring).

    ``bodies`` (static) names or indexes the body of each application; ``points`` ``(n, 3)``,
    ``forces`` ``(n, 3)``, ``torques`` ``(n, 3)`` (default zero); any leading axes (frames) are
    allowed.  ``point_frames``: per application the frame its point is expressed in (``None`` =
    the applied body); ``force_frames``: the frame force and torque are expressed in (``None`` =
    ground).  Frames are body names/indices or ``"ground"``.  ``names``: optional labels.
    """

    points: jnp.ndarray
    forces: jnp.ndarray
    torques: jnp.ndarray
    bodies: tuple = eqx.field(static=True)
    point_frames: tuple | None = eqx.field(static=True, default=None)
    force_frames: tuple | None = eqx.field(static=True, default=None)
    names: tuple = eqx.field(static=True, default=())

    def __init__(self, bodies, points, forces, torques=None, *, point_frames=None, force_frames=None, names=()):
        one = isinstance(bodies, (str, int, np.integer))
        if one:  # one body: a (3,) point, force, torque gains the load axis; (..., 1, 3) is kept
            bodies = (bodies,)
            points, forces = (a[None] if a.ndim == 1 else a for a in (jnp.asarray(points), jnp.asarray(forces)))
            torques = None if torques is None else jnp.asarray(torques)
            torques = torques[None] if torques is not None and torques.ndim == 1 else torques
            point_frames = (point_frames,) if isinstance(point_frames, (str, int, np.integer)) else point_frames
            force_frames = (force_frames,) if isinstance(force_frames, (str, int, np.integer)) else force_frames
            names = (names,) if isinstance(names, str) else names
        self.bodies = tuple(_frame_key(b) for b in bodies)
        n = len(self.bodies)
        self.points = jnp.asarray(points)
        self.forces = jnp.asarray(forces)
        self.torques = jnp.zeros_like(self.forces) if torques is None else jnp.asarray(torques)
        for name, a in (("points", self.points), ("forces", self.forces), ("torques", self.torques)):
            if a.shape[-2:] != (n, 3):
                given = (f"one body {self.bodies[0]!r} (a name, not a list): {name} (3,) or (..., 1, 3)" if one
                         else f"{n} bodies {self.bodies}: {name} (..., {n}, 3)")
                raise ValueError(f"ExternalLoads: {name} must have shape (..., {n}, 3), one row of 3 per entry of "
                                 f"bodies, got {a.shape}; for {given}")
        for name, fr in (("point_frames", point_frames), ("force_frames", force_frames)):
            if fr is not None and len(fr) != n:
                raise ValueError(f"ExternalLoads: {name} must name one frame per load ({n}), got {len(fr)}")
        if GROUND in self.bodies:
            raise ValueError("ExternalLoads: a load applied to ground does no work on the model; leave it out")
        self.point_frames = None if point_frames is None else tuple(_frame_key(f) for f in point_frames)
        self.force_frames = None if force_frames is None else tuple(_frame_key(f) for f in force_frames)
        self.names = tuple(str(s) for s in names)
        if self.names and len(self.names) != n:
            raise ValueError(f"ExternalLoads: names must hold one label per load ({n}), got {len(self.names)}")

    @property
    def in_body_frames(self) -> bool:
        """Whether points are in their bodies' frames and forces/torques in ground axes."""
        own = self.point_frames is None or all(f is None or f == b for f, b in zip(self.point_frames, self.bodies))
        world = self.force_frames is None or all(f is None or f == GROUND for f in self.force_frames)
        return own and world

    def resolved(self, model: Model, q) -> "ExternalLoads":
        """The same loads with points in their applied bodies' frames and forces/torques in ground
        axes, re-expressed with the body poses at ``q`` (one pose; ``jax.vmap`` for frames)."""
        if self.in_body_frames:
            return ExternalLoads(self.bodies, self.points, self.forces, self.torques, names=self.names)
        poses = body_poses(model, q)
        poses = jnp.concatenate([poses, jnp.eye(4, dtype=poses.dtype)[None]], 0)  # last: ground
        nb = model.n_bodies

        def index(f):
            return nb if f == GROUND else model.body_index(f)

        bodies = np.asarray([index(b) for b in self.bodies], np.int32)
        pf = bodies if self.point_frames is None else np.asarray(
            [b if f is None else index(f) for f, b in zip(self.point_frames, bodies)], np.int32)
        ff = np.full(len(bodies), nb, np.int32) if self.force_frames is None else np.asarray(
            [nb if f is None else index(f) for f in self.force_frames], np.int32)
        rot_f = poses[ff, :3, :3]
        forces = jnp.einsum("kab,kb->ka", rot_f, self.forces)
        torques = jnp.einsum("kab,kb->ka", rot_f, self.torques)
        p_world = jnp.einsum("kab,kb->ka", poses[pf, :3, :3], self.points) + poses[pf, :3, 3]
        points = jnp.einsum("kba,kb->ka", poses[bodies, :3, :3], p_world - poses[bodies, :3, 3])
        return ExternalLoads(self.bodies, points, forces, torques, names=self.names)

    def generalized_forces(self, model: Model, q):
        """Generalized force ``Q (nq,)`` of these loads at ``q`` (virtual work,
        :func:`mbjax.generalized_forces`); one pose, ``jax.vmap`` for frames."""
        loads = self.resolved(model, q)
        if not loads.bodies:
            return jnp.zeros(model.n_coordinates, jnp.result_type(q, float))
        return generalized_forces(model, q, list(loads.bodies), loads.points, loads.forces, loads.torques)


def checked_loads(external, where: str) -> "ExternalLoads | None":
    """``external`` for one pose: ``None`` or :class:`ExternalLoads` of shape ``(n, 3)`` (no frame
    axis: ``jax.vmap`` over frames), its arrays finite (one run-time check); anything else refused
    by name (a generalized-force array cannot be split among the joints)."""
    if external is None:
        return None
    if not isinstance(external, ExternalLoads):
        raise TypeError(f"{where}: external must be mbjax.ExternalLoads (forces at points of bodies, torques), "
                        f"got {type(external).__name__}; a generalized force (nq,) says nothing about which "
                        "body carries the load")
    n = len(external.bodies)
    for name in ("points", "forces", "torques"):
        a = getattr(external, name)
        if a.shape != (n, 3):
            raise ValueError(f"{where}: external.{name} must have shape ({n}, 3) for one pose, got {a.shape} "
                             "(jax.vmap over frames)")
    ctx = _checks.names_context("loads", external.names or tuple(str(b) for b in external.bodies))
    # the check holds all three arrays, so it runs before any later check of what they feed
    checked = _checks.all_of((external.points, external.forces, external.torques),
                             [_checks.not_finite(getattr(external, k), f"{where}: external.{k}", ctx)
                              for k in ("points", "forces", "torques")])
    return eqx.tree_at(lambda e: (e.points, e.forces, e.torques), external, checked)
