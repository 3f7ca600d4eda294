"""OpenSim's ``JointReaction`` analysis of a coordinates table with a forces table (the steps of the
:mod:`mbjax.opensim.tools.jr` package docstring): forward dynamics and every joint's transmitted wrench at
all frames in one program, then each reaction moved to its joint frame and expressed in its frame."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ...._batching import Small
from ...._dynamics import _cross_force, _inertia_times, forward_dynamics
from ...._wrenches import subtree_wrenches
from ...._kinematics import forward_pass
from ...._model import GROUND, require_model
from ....forces.body_actuators import CoordinateActuator
from ..id import warn_float32
from ..id.motion import external_loads_file
from ....io.arguments import real_number, time_range as time_pair
from ....io.storage import Table
from ....muscles.paths import get_paths
from ..so import actuator_columns, model_actuators, states_trajectory
from .keys import ReactionKey, reaction_keys
from .loads import (_check_actuators, _check_force_elements, _nonmuscle_loads, actuator_forces, mobility_force,
                    muscle_loads, path_force_loads)


DESCRIPTION = ("This file contains the reaction forces and moments\napplied to the specified body of a joint pair "
               "and expressed  in the specified reference frame.\n\nUnits are S.I. units (seconds, meters, "
               "Newtons, ...)")
_COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz", "px", "py", "pz")


class JRResult(NamedTuple):
    """Joint reactions per recorded frame: ``time (T,)``, ``loads (T, nj, 9)`` (force, moment,
    point of each reaction in its frame), the column ``labels``, the ``keys`` (:class:`ReactionKey`),
    the ``q, qd`` of the states, the forward-dynamics ``qdd`` the reactions use, and the actuator
    forces applied ``forces (T, na)`` with their ``actuator_names`` (muscles then force-set actuators)."""

    time: np.ndarray
    loads: np.ndarray
    labels: tuple[str, ...]
    keys: tuple[ReactionKey, ...]
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    forces: np.ndarray
    actuator_names: tuple[str, ...]

    def table(self) -> Table:
        """The result as OpenSim writes it (``Joint Reaction Loads``)."""
        data = self.loads.reshape(self.loads.shape[0], -1)
        return Table(self.time, self.labels, data, False, {"name": "Joint Reaction Loads", "description": DESCRIPTION})


@eqx.filter_jit
def _dynamics_of_frames(model, q, qd, tension, coord_forces, other, elements_on, coord_actuators):
    """Forward-dynamics q̈ and every joint's transmitted wrench at every frame (package docstring,
    steps 2-4), one program per model, frame count and load structure (not per joint choice).

    ``tension (T, nm)``: muscle tensions; ``coord_forces (T, nc)``: the forces of the
    ``CoordinateActuator`` s ``coord_actuators`` (static, optimal force 1: generalized force
    ∂c/∂qᵀ f, :func:`mbjax.opensim.tools.so.actuator_columns`); ``other``: the non-muscle body loads
    (:class:`mbjax.ExternalLoads`, ``(T, n, 3)``, any frames) or None; ``elements_on``: 1.0 to apply
    the model's force elements, None not.  Returns q̈ ``(T, nq)``, the wrench the parent transmits to
    each body ``(T, nb, 6)`` ([moment; force], about the body origin, ground axes), and the body
    poses ``rot (T, nb, 3, 3)``, ``pos (T, nb, 3)``."""
    dtype = q.dtype
    if get_paths(model).n_muscles:
        tau_m, f_mus, m_mus = muscle_loads(model, q, tension)
    else:
        tau_m, f_mus, m_mus = jnp.zeros_like(q), *(jnp.zeros((q.shape[0], model.n_bodies, 3), dtype),) * 2
    springs = path_force_loads(model, q, qd) if elements_on is not None else None
    if springs is not None:  # Ligament, PathSpring: body loads along their paths, as a muscle's
        tau_m, f_mus, m_mus = tau_m + springs[0], f_mus + springs[1], m_mus + springs[2]

    def frame(qk, qdk, tmk, fck, fm, mm, ld):
        tau = tmk
        if coord_actuators:
            tau = tau + actuator_columns(model, coord_actuators, qk) @ fck
        if elements_on is not None:
            tau = tau + elements_on * mobility_force(model, qk, qdk)
        if ld is not None:
            ld = ld.resolved(model, qk)
            tau = tau + ld.generalized_forces(model, qk)
        qdd = forward_dynamics(model, qk, qdk, tau)
        a0 = jnp.zeros(6, dtype).at[3:].set(-model.gravity.astype(dtype))
        kin = forward_pass(model, qk, qdk, qdd, base_acceleration=a0)
        ops = Small(0, dtype)  # one frame (vmapped)
        v = kin.velocity
        wrench = _inertia_times(model, ops, kin.acceleration) + _cross_force(ops, v, _inertia_times(model, ops, v))
        rot = kin.rot  # (nb, 3, 3)
        # applied loads in body axes about the body origin
        f_app = jnp.einsum("bai,ba->bi", rot, fm)
        n_app = jnp.einsum("bai,ba->bi", rot, mm)
        if ld is not None:
            bidx = np.asarray([model.body_index(b) for b in ld.bodies], np.int32)
            fb = jnp.einsum("kai,ka->ki", rot[bidx], ld.forces)
            nbk = jnp.cross(ld.points, fb) + jnp.einsum("kai,ka->ki", rot[bidx], ld.torques)
            f_app = f_app.at[bidx].add(fb)
            n_app = n_app.at[bidx].add(nbk)
        wrench = wrench - jnp.concatenate([n_app, f_app], 1)
        total = subtree_wrenches(model, kin, wrench)  # parent on child, child axes, child origin
        world = jnp.concatenate([jnp.einsum("bai,bi->ba", rot, total[:, :3]),
                                 jnp.einsum("bai,bi->ba", rot, total[:, 3:])], 1)
        return qdd, world, rot, kin.pos

    return jax.vmap(frame)(q, qd, tau_m, coord_forces, f_mus, m_mus, other)


def reaction_loads(model, keys, wrench, rot, pos) -> np.ndarray:
    """Force, moment and point ``(T, nj, 9)`` of each :class:`ReactionKey` from the transmitted
    wrenches ``wrench (T, nb, 6)`` ([moment; force] the parent exerts on each body about its
    origin, ground axes) and body poses (package docstring, step 4): moved to the joint's child
    frame origin (on the child) or negated and moved to its parent frame origin (on the parent),
    then expressed in the key's frame.  Vectorized over frames and joints."""
    wrench, rot, pos = (np.asarray(a, float) for a in (wrench, rot, pos))
    T, nb = pos.shape[:2]
    rot_g = np.concatenate([rot, np.broadcast_to(np.eye(3), (T, 1, 3, 3))], 1)  # ground last
    pos_g = np.concatenate([pos, np.zeros((T, 1, 3))], 1)

    def idx(b):
        return nb if b == GROUND else model.body_index(b)

    child = np.asarray([idx(k.child) for k in keys])
    parent = np.asarray([idx(k.parent) for k in keys])
    fbody = np.asarray([idx(k.frame_body) for k in keys])
    on_child = np.asarray([k.on_child for k in keys])[None, :, None]
    c_off = np.stack([k.child_frame[:3, 3] for k in keys])
    p_off = np.stack([k.parent_frame[:3, 3] for k in keys])
    f_rot = np.stack([k.frame_transform[:3, :3] for k in keys])
    f_off = np.stack([k.frame_transform[:3, 3] for k in keys])
    moment_o, force = wrench[:, child, :3], wrench[:, child, 3:]
    pc = pos_g[:, child] + np.einsum("tjab,jb->tja", rot_g[:, child], c_off)  # child frame origin, ground
    moment_c = moment_o - np.cross(pc - pos_g[:, child], force)
    pp = pos_g[:, parent] + np.einsum("tjab,jb->tja", rot_g[:, parent], p_off)  # parent frame origin
    moment_p = -moment_c - np.cross(pc - pp, force)
    f_out = np.where(on_child, force, -force)
    m_out = np.where(on_child, moment_c, moment_p)
    p_out = np.where(on_child, pc, pp)
    r_f = np.einsum("tjab,jbc->tjac", rot_g[:, fbody], f_rot)  # the expressed-in frame in ground
    o_f = pos_g[:, fbody] + np.einsum("tjab,jb->tja", rot_g[:, fbody], f_off)
    return np.concatenate([np.einsum("tjba,tjb->tja", r_f, f_out), np.einsum("tjba,tjb->tja", r_f, m_out),
                           np.einsum("tjba,tjb->tja", r_f, p_out - o_f)], 2)


def joint_reactions_motion(model, coordinates: Table, forces: Table, external_loads=None, *, joints=("ALL",),
                           apply_on_bodies=("child",), express_in_frame=("ground",), actuators=(),
                           use_model_actuators: bool = True, replace_force_set: bool = False,
                           lowpass_cutoff: float = -1.0, time_range=None, step_interval: int = 1,
                           progress: bool = True, where: str = "JointReaction") -> JRResult:
    """OpenSim's ``JointReaction`` analysis of a coordinates table with a forces table (package docstring).

    ``forces``: a static optimization's force table (:func:`mbjax.io.read_storage` of ``_force.sto``);
    ``external_loads``: an :class:`~mbjax.opensim.external_loads.ExternalLoadsFile`, its .xml path, or None;
    ``actuators``: the force-set files' actuators (:func:`mbjax.opensim.tools.so.read_reserves`), after the
    model's own scalar actuators (``use_model_actuators``: :func:`mbjax.opensim.tools.so.model_actuators`);
    ``replace_force_set``: the model's muscles, actuators and force elements are left out (OpenSim's
    ``replace_force_set``); ``joints``/``apply_on_bodies``/``express_in_frame``: as :func:`reaction_keys`;
    ``step_interval``: the rows recorded (the first, the last, and every row of the padded states
    table whose index is a multiple of it).
    """
    require_model(model, "joint_reactions_motion")
    if lowpass_cutoff is not None:  # None: no filtering
        lowpass_cutoff = real_number(lowpass_cutoff, "lowpass_cutoff", where)
    time_range = time_pair(time_range, where)
    external_loads = external_loads_file(external_loads, where)
    warn_float32("joint reactions")
    keys = reaction_keys(model, joints, apply_on_bodies, express_in_frame, where)
    with_elements = _check_force_elements(model, replace_force_set, where)
    own = model_actuators(model) if use_model_actuators and not replace_force_set else ()
    actuators = tuple(own) + tuple(actuators)
    _check_actuators(model, actuators, where)
    t, q, qd, _ = states_trajectory(model, coordinates, lowpass_cutoff, time_range, step_interval=step_interval)
    names, values = actuator_forces(model, forces, t, actuators, external_loads, replace_force_set=replace_force_set,
                                    where=where)
    paths = get_paths(model)
    tension = np.zeros((t.shape[0], paths.n_muscles))
    n_mus = len(names) - len(actuators)
    if n_mus:
        order = list(paths.names)
        tension[:, [order.index(n) for n in names[:n_mus]]] = values[:, :n_mus]
    acts = values[:, n_mus:]
    coord = [k for k, a in enumerate(actuators) if isinstance(a, CoordinateActuator)]
    coord_actuators = tuple(actuators[k]._replace(optimal_force=1.0) for k in coord)
    other = _nonmuscle_loads(model, t, external_loads, actuators, acts, names[n_mus:])
    if progress:
        print(f"joint reactions: {t.shape[0]} frames, {t[0]:.4g}-{t[-1]:.4g} s, {len(keys)} reactions, "
              f"{n_mus} muscles and {len(actuators)} actuators from the forces file: forward dynamics and "
              "Newton-Euler (one compilation per model and frame count) ...", flush=True)
    dtype = np.dtype(jnp.result_type(float))
    args = jax.device_put(jax.tree_util.tree_map(lambda a: np.asarray(a, dtype),
                                                 (q, qd, tension, acts[:, coord], other)))
    qdd, wrench, rot, pos = _dynamics_of_frames(model, *args, 1.0 if with_elements else None, coord_actuators)
    qdd = np.asarray(qdd)
    loads = reaction_loads(model, keys, wrench, rot, pos)
    if not (np.all(np.isfinite(qdd)) and np.all(np.isfinite(loads))):
        bad = np.nonzero(~(np.all(np.isfinite(qdd), 1) & np.all(np.isfinite(loads), (1, 2))))[0]
        raise ValueError(f"{where}: accelerations or reactions are NaN or inf at {bad.size} of {t.shape[0]} frames "
                         f"(first at t = {t[bad[0]]:.6g} s): check the model's paths and mass matrix at that pose")
    labels = tuple(f"{k.label}_{c}" for k in keys for c in _COMPONENTS)
    if progress:
        print("joint reactions: done", flush=True)
    return JRResult(t, loads, labels, keys, q, qd, qdd, values, names)
