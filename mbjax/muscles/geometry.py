"""The one path geometry: world path points, active sets, segments and unit-tension forces.

Read from the kinematics pass (:func:`mbjax._kinematics.forward_pass`), batch last, by lengths,
path points and moment arms alike.  With P path-point slots per muscle (padded), each point's
segment leaves it towards the next *active* point, which lies among the next ``C`` slots
(:func:`lookahead`; ``C = 1`` without conditional points), so segments are found by shifted masks
instead of ``(nm, P, P)`` one-hot contractions.  A unit tension pulls point ``p`` with
f_p = e_out(p) − e_in(p) (Ehsani Def. 3, summed per body in Eq. 155-160).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._batching import Small, batch_last, materialize
from .._kinematics import Kinematics, _local_eval, _scatter_gradient, check_vector, forward_pass
from .._model import Model, require_model
from ..wrapping.path import WrappedPath, wrap_paths
from ..wrapping.smooth_path import smooth_wrap_paths
from .path_functions import all_paths_are_functions, function_lengths, get_path_functions
from .. import _checks
from .paths import condition_values, empty_result, get_paths, require_pose_and_path, segment_exists
from .length_warning import warn_implausible
from .pose_warning import warns_for_pose


class PathGeometry(NamedTuple):
    """Batch-last path geometry of every muscle: ``world (nm, P, 3)``, ``active (nm, P)``,
    ``length (nm, P)`` of the segment leaving each point (0 where none), ``unit (nm, P, 3)``,
    ``force (nm, P, 3)`` = e_out − e_in, ``rot_of_points (nm, P, 3, 3)`` the rotation of each
    point's body, and for moving points their static ``slots (n, 3)`` (muscle, point, component)
    with ``moving_grad (n, nq)`` = ∂r/∂q of those components.
    """

    world: jnp.ndarray
    active: jnp.ndarray
    length: jnp.ndarray
    unit: jnp.ndarray
    force: jnp.ndarray
    rot_of_points: jnp.ndarray
    slots: np.ndarray
    moving_grad: jnp.ndarray | None


def lookahead(paths) -> int:
    """Static bound C on how far the next active point can lie (1 without conditional points).

    The next active point after ``p`` is at most the first point after it that is always active
    (valid and not conditional); never-valid padding is skipped.
    """
    valid = np.asarray(paths.valid, dtype=bool)
    always = valid & (np.asarray(paths.cond_coord) < 0)
    nm, npt = valid.shape
    reach = 1
    for m in range(nm):
        for p in np.nonzero(valid[m])[0]:
            for c in range(1, npt - p):
                if valid[m, p + c]:
                    reach = max(reach, c)
                if always[m, p + c]:
                    break
    return reach


def _body_locations(paths, q, ops: Small):
    """Body-frame point locations ``(nm, P, 3, *b)`` with moving components filled in by one gather."""
    nm, npt = paths.n_muscles, paths.n_points
    nq = q.shape[0]
    batch = q.shape[1:]
    loc = jnp.broadcast_to(ops.c(paths.location), (nm, npt, 3) + batch)
    if not paths.moving_maps:
        return loc, np.zeros((0, 3), dtype=np.int64), None
    vals, grads, slot_list = [], [], []
    for family, fam_slots, inputs in zip(paths.moving_maps or (), paths.moving_slots, paths.moving_inputs):
        inputs = np.asarray(inputs, dtype=np.int32)
        fv, gv, _ = _local_eval(family, q[inputs], ops.nbt)
        vals.append(fv.astype(ops.dtype))
        grads.append(_scatter_gradient(ops, gv.astype(ops.dtype), inputs, nq, family.width))
        slot_list.extend(fam_slots)
    slots = np.asarray(slot_list, dtype=np.int64)
    flat = (slots[:, 0] * npt + slots[:, 1]) * 3 + slots[:, 2]
    src = np.full(nm * npt * 3, len(slots))
    src[flat] = np.arange(len(slots))
    filled = jnp.concatenate(vals + [jnp.zeros((1,) + batch, ops.dtype)])[src]
    is_moving = np.zeros(nm * npt * 3, dtype=bool)
    is_moving[flat] = True
    loc = jnp.where(ops.mask(is_moving), filled, loc.reshape((nm * npt * 3,) + batch)).reshape(loc.shape)
    return loc, slots, jnp.concatenate(grads)


def path_geometry(model: Model, q, kin: Kinematics) -> PathGeometry:
    """The path geometry at ``q (nq, *batch)`` from the kinematics pass ``kin`` of the same poses."""
    paths = get_paths(model)
    nb = model.n_bodies
    ops = Small(q.ndim - 1, kin.rot.dtype)
    dtype = ops.dtype
    q = q.astype(dtype)
    batch = q.shape[1:]
    nm, npt = paths.n_muscles, paths.n_points
    body = np.asarray(paths.body, dtype=np.int64)
    valid = np.asarray(paths.valid, dtype=bool)
    bidx = np.where(body < 0, nb, body)  # ground appended last
    rot_g = jnp.concatenate([kin.rot, jnp.broadcast_to(ops.c(np.eye(3)), (1, 3, 3) + batch)])
    pos_g = jnp.concatenate([kin.pos, jnp.zeros((1, 3) + batch, dtype)])
    loc, slots, moving_grad = _body_locations(paths, q, ops)
    rot_p = rot_g[bidx]
    # world points, kept in memory: the segment stage reads them at C + 1 shifted positions
    world = materialize(ops.mv(rot_p, loc) + pos_g[bidx])

    cond = np.asarray(paths.cond_coord)
    qc = condition_values(paths, q, lambda family, x: _local_eval(family, x, ops.nbt)[0])[np.maximum(cond, 0)]
    rng = paths.cond_range.astype(dtype)
    inside = (qc >= ops.c(rng[..., 0])) & (qc <= ops.c(rng[..., 1]))
    # a NaN condition coordinate (checks off) makes its point active and NaN, so the length is NaN, not
    # the length without that point
    unknown = ops.mask(cond >= 0) & jnp.isnan(qc)
    active = ops.mask(valid) & jnp.where(ops.mask(cond >= 0), inside | unknown, True)
    world = jnp.where(ops.expand(unknown, -1), jnp.nan, world)

    def ahead(a, c):  # a[:, p + c], zero past the end
        return jnp.concatenate([a[:, c:], jnp.zeros((nm, c) + a.shape[2:], a.dtype)], axis=1)

    def behind(a, c):  # a[:, p - c], zero before the start
        return jnp.concatenate([jnp.zeros((nm, c) + a.shape[2:], a.dtype), a[:, :-c]], axis=1)

    ends, seen = [], None  # ends[c - 1][m, p]: the segment leaving p ends at p + c
    for c in range(1, min(lookahead(paths), npt - 1) + 1):
        nxt = ahead(active, c)
        ends.append(active & nxt if seen is None else active & nxt & ~seen)
        seen = nxt if seen is None else seen | nxt
    d = jnp.zeros_like(world)
    for c, e in enumerate(ends, 1):
        d = d + jnp.where(ops.expand(e, -1), ahead(world, c) - world, 0.0)
    sq = ops.dot(d, d)
    nonzero = segment_exists(sq, ops.dot(world, world) + ops.dot(world + d, world + d), dtype)  # coincident points: no segment
    root = jnp.sqrt(jnp.where(nonzero, sq, 1.0))  # grad-safe: no sqrt(0) on any branch
    length = jnp.where(nonzero, root, 0.0)
    unit = jnp.where(ops.expand(nonzero, -1), d / ops.expand(root, -1), 0.0)
    force = unit
    for c, e in enumerate(ends, 1):
        force = force - behind(jnp.where(ops.expand(e, -1), unit, 0.0), c)
    return PathGeometry(world, active, length, unit, force, rot_p, slots, moving_grad)


def wrap_frames(model: Model, kin: Kinematics):
    """World rotation ``(O, 3, 3, *b)`` and origin ``(O, 3, *b)`` of every wrap object."""
    wraps = get_paths(model).wraps
    ops = Small(kin.rot.ndim - 3, kin.rot.dtype)
    batch = kin.rot.shape[3:]
    nb = model.n_bodies
    rot_g = jnp.concatenate([kin.rot, jnp.broadcast_to(ops.c(np.eye(3)), (1, 3, 3) + batch)])
    pos_g = jnp.concatenate([kin.pos, jnp.zeros((1, 3) + batch, ops.dtype)])
    body = np.where(np.asarray(wraps.body) < 0, nb, np.asarray(wraps.body))
    rb, pb = rot_g[body], pos_g[body]
    rot = ops.mm(rb, ops.c(wraps.rotation.astype(ops.dtype)))
    org = ops.mv(rb, ops.c(wraps.translation.astype(ops.dtype))) + pb
    return rot, org


def wrapped_paths(model: Model, q, kin: Kinematics, geo: PathGeometry) -> WrappedPath:
    """OpenSim's wrapping of the wrapped muscles (``wraps.muscles``) at ``q (nq, *batch)``.

    The batch axes are flattened into the wrap pass's lanes (:func:`~mbjax.wrapping.path.wrap_paths`),
    and the result is returned batch-last like the rest of the path geometry.
    """
    wraps = get_paths(model).wraps
    if wraps.wrapping != "opensim":
        raise ValueError(f"wrapped_paths is OpenSim's wrap pass; this model's paths use {wraps.wrapping!r} wrapping "
                         "(read their lengths with wrapped_lengths)")
    batch = q.shape[1:]
    out = wrap_paths(wraps, *_wrap_lanes(wraps, kin, geo, model, len(batch)))  # poses folded into lanes
    return WrappedPath(*(_lanes_last(a, batch) for a in out))


def wrapped_lengths(model: Model, q, kin: Kinematics, geo: PathGeometry) -> jnp.ndarray:
    """Path lengths ``(M, *batch)`` of the wrapped muscles (``wraps.muscles``) at ``q (nq, *batch)``, by
    the model's wrapping algorithm: OpenSim's (:func:`wrapped_paths`) or the smooth taut cable
    (:func:`mbjax.wrapping.smooth_path.smooth_wrap_paths`)."""
    wraps = get_paths(model).wraps
    if wraps.wrapping == "opensim":
        return wrapped_paths(model, q, kin, geo).length
    batch = q.shape[1:]
    if not batch:
        rows = np.asarray(wraps.muscles)
        rot, org = wrap_frames(model, kin)
        return smooth_wrap_paths(wraps, geo.world[rows], geo.active[rows], rot, org).length
    out = smooth_wrap_paths(wraps, *_wrap_lanes(wraps, kin, geo, model, len(batch))).length  # (B, M)
    return _lanes_last(out, batch)


def _lanes_first(a, k: int, n_batch: int):
    """``a (d_1..d_k, *batch)`` -> ``(B, d_1..d_k)``: the trailing batch axes flattened in front."""
    a = jnp.moveaxis(a, tuple(range(k, a.ndim)), tuple(range(a.ndim - k)))
    return a.reshape((-1,) + a.shape[n_batch:])


def _lanes_last(a, batch: tuple):
    """Inverse of :func:`_lanes_first`: ``(B, ...)`` -> ``(..., *batch)``."""
    a = a.reshape(batch + a.shape[1:])
    return jnp.moveaxis(a, tuple(range(len(batch))), tuple(range(a.ndim - len(batch), a.ndim)))


def _wrap_lanes(wraps, kin: Kinematics, geo: PathGeometry, model: Model, n_batch: int):
    """The wrapped muscles' points, activity and wrap-object frames with the poses as leading lanes."""
    rows = np.asarray(wraps.muscles)
    rot, org = wrap_frames(model, kin)
    return (_lanes_first(geo.world[rows], 3, n_batch), _lanes_first(geo.active[rows], 2, n_batch),
            _lanes_first(rot, 3, n_batch), _lanes_first(org, 2, n_batch))


def _lengths_kernel(model: Model, q):
    functions = get_path_functions(model)
    if functions is not None and all_paths_are_functions(model):  # no geometry to evaluate
        dtype = jnp.result_type(q, model.axis)
        return function_lengths(functions, q, jnp.zeros((get_paths(model).n_muscles,) + q.shape[1:], dtype))
    kin = forward_pass(model, q)
    geo = path_geometry(model, q, kin)
    lengths = jnp.sum(geo.length, axis=1)
    wraps = get_paths(model).wraps
    if wraps is not None:
        wrapped = wrapped_lengths(model, q.astype(lengths.dtype), kin, geo)
        lengths = lengths.at[np.asarray(wraps.muscles)].set(wrapped)
    # fewer than 2 active points (conditional points out of range), or every point at one place (length 0,
    # no direction): no path, NaN (see muscle_lengths)
    spans = jnp.sum(geo.length, axis=1) > 100 * jnp.finfo(lengths.dtype).eps
    lengths = jnp.where((jnp.sum(geo.active, axis=1) >= 2) & spans, lengths, jnp.nan)
    return lengths if functions is None else function_lengths(functions, q, lengths)


def _lengths_shape(model: Model, q) -> jax.ShapeDtypeStruct:
    """The output of :func:`_lengths_kernel` at one pose, without computing it."""
    return jax.ShapeDtypeStruct((get_paths(model).n_muscles,), jnp.result_type(q, model.axis))


def _points_kernel(model: Model, q):
    geo = path_geometry(model, q, forward_pass(model, q))
    return geo.world, geo.active


def muscle_lengths(model: Model, q) -> jnp.ndarray:
    """Musculotendon path lengths L(q) ``(nm,)``: straight segments between active points, and
    over wrap surfaces where the model has wrap objects (OpenSim's algorithm, :mod:`mbjax.wrapping.path`,
    or the smooth option, :mod:`mbjax.wrapping.smooth_path`, as the model was loaded); a muscle
    with a path function (:mod:`mbjax.muscles.path_functions`) is that function's value.

    A path left with fewer than 2 active points (its conditional points out of range) has no
    length: NaN, and a run-time error (``eqx.error_if``) naming the muscle while checks are on; so has
    a path whose points all coincide at ``q`` (length 0: no direction, no moment arm).  Coincident
    consecutive points in a longer path are a zero-length segment (:func:`~mbjax.muscles.paths.segment_exists`).
    """
    ctx = _checks.coordinates_context(model)
    q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)  # values: in the fused check below
    if not get_paths(model).n_muscles:  # no muscles: (0,)
        return empty_result(model, _checks.finite(q, "q", ctx), (0,))
    return require_pose_and_path(batch_last(_lengths_kernel, _lengths_shape)(model, q), model, q, "muscle_lengths")


@warns_for_pose
def path_points(model: Model, q):
    """World positions ``(nm, P, 3)`` of every path point and the active mask ``(nm, P)``."""
    require_model(model, "path_points")
    q = check_vector(model, q)
    empty = empty_result(model, q, (0, 0, 3))  # no muscles: (0, 0, 3) and (0, 0)
    if empty is not None:
        return empty, jnp.zeros((0, 0), bool)
    return batch_last(_points_kernel)(model, q)


from .._eager import compiled_when_eager as _naming  # noqa: E402


def _judge_lengths(model: Model, lengths) -> None:
    """An eager call's lengths: a path longer than any muscle (points in millimetres?) is named."""
    warn_implausible(get_paths(model), "muscle_lengths", length=lengths, slack=False)


muscle_lengths = _naming(muscle_lengths, judge=_judge_lengths)
