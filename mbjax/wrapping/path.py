"""OpenSim's wrapping of a whole path (``GeometryPath::applyWrapObjects``), static-shaped and batched.

For each muscle the path is the list of its active points; its path wraps are applied in file
order.  For wrap ``i``:

1. its two tangent points from the previous pass are removed;
2. among the active path points, the first at or after the wrap's ``range`` start and the last at
   or before its end (1-based in the file, ``-1`` = ends) delimit the segments it may wrap;
   when there is none OpenSim stops wrapping the whole path there ("no active points"), and so do we;
3. every segment in that stretch (also those ending at other wraps' tangent points, but not one
   between two tangent points of the same object) is wrapped over the surface; the first segment
   whose straight line *intersects* the surface (``MANDATORY``) wins, else the ``WRAPPED`` segment
   whose length grows least; a winner without a surface path inserts nothing;
4. its tangent points r1, r2 are inserted into that segment.

With two or more wraps this pass repeats (at most 8 times) until the path length changes by less
than 0.5 mm, and after the first pass, when wrap 1 did not wrap and wrap 2 had a point inside its
surface, the two are swapped.  The length is the sum of straight segments plus, between the two
tangent points of one wrap, the surface length its ``wrapLine`` computed.  All of this is
reproduced: the reported length equals OpenSim's, including the non-converged remainder of the
0.5 mm rule.

Cached ground positions (OpenSim 4.6 behaviour, reproduced).  A tangent point is a
``PathWrapPoint``: ``setLocation`` writes its body-frame position into a cache variable, but
``Point::getLocationInGround`` keeps its *own* Stage::Position cache, filled on its first call in
a state and not invalidated by later ``setLocation`` calls.  So within one path evaluation
(passes ≥ 2 of a multi-wrap path):

* ``wrapPathSegment`` reads ``getLocation``: the *latest* tangent points of the other wraps;
* ``calcPathLengthChange`` (choice of segment) and ``calcLengthAfterPathComputation`` (the 0.5 mm
  rule and the final length) read ``getLocationInGround``: a tangent point's position at the end
  of the first pass in which it was on the path (the first call happens there, or earlier in that
  same pass when it neighbours a later wrap's candidate segment, where it has the same value);
* the surface length between two tangent points is the latest one.

Hence OpenSim's length is: straight segments between *first-pass* tangent points plus the
*last-pass* surface lengths; its ``getCurrentPath`` points are the first-pass ones too.  We keep
both: ``pos`` (latest, fed to the surfaces) and ``ground``/``frozen`` (the cache, used for
segment choice and lengths, returned as ``WrappedPath.points``).  This depends only on the pose
(caches are per state and emptied when q changes), not on earlier evaluations.  Single-wrap paths
run one pass, where both coincide.

Static shapes: each muscle holds ``N = P + 2W`` path elements (its ``P`` point slots and two per
wrap slot).  The path order is kept as a *key* per element (point ``p`` has key ``p``; a wrap
inserted between keys ``a < b`` gets ``a + (b - a)/3`` and ``a + 2(b - a)/3``), so insertion and
removal are masked writes, the next element is a masked arg-min over keys, and the whole pass is
one fixed-count ``lax.fori_loop`` (differentiable in forward and reverse mode).  Surfaces are
evaluated, per wrap step, only for the muscles whose wrap at that step has that kind.

Non-smoothness that remains (OpenSim's, documented not hidden): the choice of segment, the 0.5 mm
stopping rule, the order swap and the quadrant tests are discrete, so L(q) is piecewise smooth;
moment arms are the derivatives of the branch active at q.
"""

from __future__ import annotations

import warnings

from typing import Mapping, NamedTuple, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED
from .objects import KINDS, METHODS, PathWrap, WrapObject, quadrant_axis_sign
from ._math import seeded
from .surfaces import evaluate_surface, surface_plan

#: OpenSim's iteration limit for paths with two or more wraps (``applyWrapObjects``)
MAX_PASSES = 8
#: OpenSim's stopping rule: the path length changed by less than this (m)
LENGTH_TOLERANCE = 0.0005


class MuscleWraps(eqx.Module):
    """The wrap objects of a model and the path wraps of its muscles, padded to ``W`` per muscle.

    Array leaves (differentiable): ``rotation (O, 3, 3)`` and ``translation (O, 3)`` of each
    object in its body, ``dimensions (O, 3)`` (see :mod:`mbjax.wrapping.objects`).  Static:
    object names, kinds, bodies (``-1`` = ground), quadrant ``axis``/``sign`` and ``active``; per
    wrapped muscle (``muscles``, indices into the model's muscles) its wrap slots: ``obj``,
    ``method``, 0-based point ``start``/``end``, ``used`` (padding mask); ``wrapping``, the
    algorithm the paths use (``"opensim"``, the default, or ``"smooth"``:
    :func:`mbjax.wrapping.smooth_path.with_wrapping`).
    """

    rotation: jnp.ndarray
    translation: jnp.ndarray
    dimensions: jnp.ndarray
    names: tuple[str, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    body: tuple[int, ...] = eqx.field(static=True)
    axis: tuple[int, ...] = eqx.field(static=True)
    sign: tuple[int, ...] = eqx.field(static=True)
    active: tuple[bool, ...] = eqx.field(static=True)
    muscles: tuple[int, ...] = eqx.field(static=True)
    obj: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    method: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    start: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    end: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    used: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    #: ``"opensim"`` (this module's pass) or ``"smooth"`` (:mod:`mbjax.wrapping.smooth_path`)
    wrapping: str = eqx.field(static=True, default="opensim")

    @property
    def n_slots(self) -> int:
        return len(self.obj[0]) if self.obj else 0

    def wraps_of(self, muscle: int) -> tuple[str, ...]:
        """Names of the wrap objects of model muscle ``muscle``, in path order."""
        if muscle not in self.muscles:
            return ()
        row = self.muscles.index(muscle)
        return tuple(self.names[o] for o, u in zip(self.obj[row], self.used[row]) if u)


def build_wraps(
    body_names: Sequence[str],
    muscle_names: Sequence[str],
    n_points: Mapping[str, int],
    objects: Sequence[WrapObject],
    path_wraps: Mapping[str, Sequence[PathWrap]],
) -> MuscleWraps | None:
    """Pack wrap objects and per-muscle path wraps; ``None`` when no muscle wraps.

    ``n_points[muscle]`` is the number of points in the muscle's PathPointSet (for ``range`` -1).
    """
    body_names = tuple(body_names)
    names = tuple(o.name for o in objects)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"wrap objects with the same name: {dup}")
    wrapped = [(m, name) for m, name in enumerate(muscle_names) if path_wraps.get(name)]
    if not wrapped:
        return None
    for name in path_wraps:
        if name not in muscle_names:
            raise ValueError(f"path wraps given for unknown muscle {name!r}")
    body = []
    for o in objects:
        if o.body == "ground":
            body.append(-1)
        elif o.body in body_names:
            body.append(body_names.index(o.body))
        else:
            raise ValueError(f"wrap object {o.name!r} is on unknown body {o.body!r}")
    width = max(len(path_wraps[n]) for _, n in wrapped)
    obj, method, start, end, used = [], [], [], [], []
    for _, name in wrapped:
        row_o, row_m, row_s, row_e, row_u = [], [], [], [], []
        npt = int(n_points[name])
        for w in path_wraps[name]:
            if w.wrap_object not in names:
                raise ValueError(f"muscle {name!r}: path wrap {w.name!r} names unknown wrap object {w.wrap_object!r}; "
                                 f"known: {names}")
            lo, hi = int(w.range[0]), int(w.range[1])
            s = 0 if lo < 1 else lo - 1
            e = npt - 1 if hi < 1 else hi - 1
            if not 0 <= s <= e < npt:
                raise ValueError(f"muscle {name!r}: path wrap {w.name!r} range {w.range} is outside its {npt} points")
            row_o.append(names.index(w.wrap_object))
            row_m.append(METHODS.index(w.method.lower()))
            row_s.append(s)
            row_e.append(e)
            row_u.append(True)
        pad = width - len(row_o)
        obj.append(tuple(row_o + [0] * pad))
        method.append(tuple(row_m + [0] * pad))
        start.append(tuple(row_s + [0] * pad))
        end.append(tuple(row_e + [0] * pad))
        used.append(tuple(row_u + [False] * pad))
    axes_signs = [quadrant_axis_sign(o.quadrant) for o in objects]
    return MuscleWraps(
        rotation=jnp.asarray(np.stack([np.asarray(o.rotation, float) for o in objects])),
        translation=jnp.asarray(np.stack([np.asarray(o.translation, float) for o in objects])),
        dimensions=jnp.asarray(np.stack([np.asarray(o.dimensions, float) for o in objects])),
        names=names,
        kinds=tuple(o.kind for o in objects),
        body=tuple(body),
        axis=tuple(a for a, _ in axes_signs),
        sign=tuple(s for _, s in axes_signs),
        active=tuple(bool(o.active) for o in objects),
        muscles=tuple(m for m, _ in wrapped),
        obj=tuple(obj),
        method=tuple(method),
        start=tuple(start),
        end=tuple(end),
        used=tuple(used),
    )


class WrappedPath(NamedTuple):
    """The wrapped paths of the wrapped muscles at one pose.

    ``length (M,)``; ``points (M, N, 3)`` world positions of the ``N = P + 2W`` path elements
    (point slots first, then r1, r2 of each wrap slot) as OpenSim's ``getLocationInGround``
    reports them (tangent points from the first pass that placed them, see the module
    docstring), ``active (M, N)`` and ``order (M, N)``
    their path-order keys (sort active elements by key to walk the path); ``surface (M, W)`` the
    surface length of each wrap slot (0 when it did not wrap); ``latest (M, N, 3)`` the same elements at
    their latest positions (``PathWrapPoint::getLocation``, where OpenSim applies the tension; equal
    to ``points`` for one-pass paths).
    """

    length: jnp.ndarray
    points: jnp.ndarray
    active: jnp.ndarray
    order: jnp.ndarray
    surface: jnp.ndarray
    latest: jnp.ndarray


def _gather_rows(table, idx):
    """``table[m, idx[m]]`` for a static ``(M, W)`` numpy table and dynamic ``idx (M,)``."""
    t = jnp.asarray(np.asarray(table))
    return jnp.take_along_axis(t, idx[:, None], axis=1)[:, 0]


def wrap_paths(wraps: MuscleWraps, world, active, obj_rot, obj_pos) -> WrappedPath:
    """Apply every muscle's wraps (``GeometryPath::applyWrapObjects``) at one pose or a batch.

    ``world (..., M, P, 3)``/``active (..., M, P)``: the path points of the wrapped muscles (rows
    of ``wraps.muscles``); ``obj_rot (..., O, 3, 3)``, ``obj_pos (..., O, 3)``: world frames of the
    objects; ``...`` is at most one batch axis of poses.  The poses are folded into the muscle
    axis (one *lane* per muscle and pose), so the pass is written on explicit lanes, needs no
    ``vmap`` over poses, and can stop when every lane of the batch has converged.  All wrapped
    paths run in one group, so each surface kernel is traced (and compiled) once: a path with one
    wrap is done after the first pass, and a lane that is done asks no surface for work (the
    surfaces run on the lanes that need them, gathered in chunks, :func:`~.surfaces.evaluate_surface`).
    """
    batched = world.ndim == 4
    if not batched:
        world, active, obj_rot, obj_pos = world[None], active[None], obj_rot[None], obj_pos[None]
    used = np.asarray(wraps.used, dtype=bool)
    n_wraps = used.sum(1)
    B, M, P, _ = world.shape
    W = wraps.n_slots
    groups = [np.nonzero(n_wraps >= 1)[0]]
    parts = []
    for rows in groups:
        if len(rows):
            parts.append((rows, _wrap_group(wraps, rows, world[:, rows], active[:, rows], obj_rot, obj_pos)))
    dtype = world.dtype
    length = jnp.zeros((B, M), dtype)
    points = jnp.zeros((B, M, P + 2 * W, 3), dtype)
    act = jnp.zeros((B, M, P + 2 * W), bool)
    order = jnp.zeros((B, M, P + 2 * W), dtype)
    surface = jnp.zeros((B, M, W), dtype)
    latest = jnp.zeros((B, M, P + 2 * W, 3), dtype)
    for rows, g in parts:
        n = g.points.shape[2]
        length = length.at[:, rows].set(g.length)
        points = points.at[:, rows, :n].set(g.points)
        latest = latest.at[:, rows, :n].set(g.latest)
        act = act.at[:, rows, :n].set(g.active)
        order = order.at[:, rows, :n].set(g.order)
        surface = surface.at[:, rows, : g.surface.shape[2]].set(g.surface)
    out = WrappedPath(length, points, act, order, surface, latest)
    return out if batched else WrappedPath(*(a[0] for a in out))


def wrap_rows(wraps: MuscleWraps, rows, world, active, obj_rot, obj_pos, frame_of_row=None) -> WrappedPath:
    """The wrap pass for the wrapped-muscle rows ``rows`` (static, repeats allowed) at ``B`` poses.

    ``world (B, R, P, 3)``, ``active (B, R, P)`` hold the points of each row; the object frames
    ``obj_rot (B, S·O, 3, 3)``, ``obj_pos (B, S·O, 3)`` come in ``S`` sets of the ``O`` objects, row
    ``r`` reading set ``frame_of_row[r]`` (static; default: one set).  Repeated rows with their own
    frame sets carry one derivative direction each through a single JVP
    (:func:`mbjax.muscles.moment_arms`).  Lane ``b·R + r`` is row ``rows[r]`` at pose ``b``.
    """
    return _wrap_group(wraps, np.asarray(rows, dtype=np.int64), world, active, obj_rot, obj_pos, frame_of_row)


def _wrap_group(wraps: MuscleWraps, rows, world, active, obj_rot, obj_pos, frame_of_row=None) -> WrappedPath:
    """The wrap pass for the static group ``rows`` of wrapped muscles at ``B`` poses.

    ``world (B, R, P, 3)``, ``active (B, R, P)``, ``obj_rot (B, S·O, 3, 3)``, ``obj_pos (B, S·O, 3)``;
    lane ``b·R + r`` is muscle ``rows[r]`` at pose ``b``, reading frame set ``frame_of_row[r]``
    (see :func:`wrap_paths`, :func:`wrap_rows`).
    """
    dtype = world.dtype
    if np.dtype(dtype).itemsize < 8:
        _warn_float32_ellipsoids(wraps, rows)
    B, R, P, _ = world.shape
    O = len(wraps.kinds)
    S = obj_rot.shape[1] // O
    frame_of_row = np.zeros(R, np.int32) if frame_of_row is None else np.asarray(frame_of_row, np.int32)
    M = B * R  # lanes
    world = world.reshape(M, P, 3)
    active = active.reshape(M, P)
    used = np.asarray(wraps.used, dtype=bool)[rows]
    n_wraps = used.sum(1)
    W = int(n_wraps.max())
    used = np.tile(used[:, :W], (B, 1))
    tables = {k: np.tile(np.asarray(getattr(wraps, k))[rows][:, :W], (B, 1)) for k in ("obj", "method", "start", "end")}
    N = P + 2 * W
    multi = np.tile(n_wraps >= 2, B)
    obj_table = tables["obj"].astype(np.int32)
    pose_of_lane = np.repeat(np.arange(B, dtype=np.int32), R)
    kinds_arr = np.array([KINDS.index(k) for k in wraps.kinds], dtype=np.int32)
    obj_axis = jnp.asarray(np.asarray(wraps.axis, dtype=np.int32))
    obj_sign = jnp.asarray(np.asarray(wraps.sign, dtype=np.int32))
    obj_active = jnp.asarray(np.asarray(wraps.active, dtype=bool))
    single = jnp.asarray(np.tile(n_wraps == 1, B))
    static_single = bool(np.all(n_wraps == 1))  # a Python True drops the cylinder's restart loop
    dims = wraps.dimensions.astype(dtype)
    obj_rot = obj_rot.reshape(B * S * O, 3, 3)
    obj_pos = obj_pos.reshape(B * S * O, 3)
    frame_of_lane = (pose_of_lane * S + np.tile(frame_of_row, B)) * O
    # static element tables: the wrap object of each element (-1 for path points)
    elem_obj = np.full((M, N), -1, dtype=np.int32)
    for w in range(W):
        elem_obj[:, P + 2 * w] = np.where(used[:, w], obj_table[:, w], -1)
        elem_obj[:, P + 2 * w + 1] = elem_obj[:, P + 2 * w]
    elem_obj_j = jnp.asarray(elem_obj)
    is_second = np.zeros(N, dtype=bool)
    is_second[P + 1::2] = True
    slot_of = np.full(N, -1, dtype=np.int32)
    for w in range(W):
        slot_of[P + 2 * w: P + 2 * w + 2] = w
    arange_n = jnp.arange(N)
    inf = jnp.asarray(jnp.inf, dtype)
    plan = surface_plan(kinds_of_rows(wraps, used[:R], obj_table[:R]), B, N)

    def successor(act, key):
        later = act[:, None, :] & (key[:, None, :] > key[:, :, None])  # [m, e, e']: e' after e
        nxt = jnp.argmin(jnp.where(later, key[:, None, :], inf), axis=-1)
        return nxt, act & jnp.any(later, axis=-1)

    def path_length(pos, act, key, surf):
        nxt, has = successor(act, key)
        nxt_pos = jnp.take_along_axis(pos, nxt[..., None], axis=1)
        d = nxt_pos - pos
        sq = jnp.sum(d * d, -1)
        dist = jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)
        same = (elem_obj_j >= 0) & (jnp.take_along_axis(elem_obj_j, nxt, 1) == elem_obj_j)
        nxt_second = jnp.asarray(is_second)[nxt]
        nxt_slot = jnp.asarray(np.maximum(slot_of, 0))[nxt]
        on_surface = jnp.where(nxt_second, jnp.take_along_axis(surf, nxt_slot, 1), 0.0)
        return jnp.sum(jnp.where(has, jnp.where(same, on_surface, dist), 0.0), -1)

    def step(i, state):
        pos, ground, frozen, act, key, surf, swapped, stopped, result = state
        live = ~stopped
        s = jnp.where((i < 2) & swapped & jnp.asarray(multi), 1 - i, i).astype(jnp.int32)
        present = _gather_rows(used, s) & live
        o = _gather_rows(obj_table, s)
        e1 = P + 2 * s
        mine = (arange_n[None] == e1[:, None]) | (arange_n[None] == e1[:, None] + 1)
        act = act & ~(mine & present[:, None])
        # 2. the stretch of active path points this wrap may use
        lo = _gather_rows(tables["start"], s)
        hi = _gather_rows(tables["end"], s)
        pidx = jnp.arange(P)
        in_range = act[:, :P] & (pidx >= lo[:, None]) & (pidx <= hi[:, None])
        any_pt = jnp.any(in_range, -1)
        smp = jnp.argmax(in_range, -1)
        emp = P - 1 - jnp.argmax(in_range[:, ::-1], -1)
        stop_now = present & ~any_pt
        work = present & any_pt & obj_active[o]
        key_lo = jnp.take_along_axis(key, smp[:, None], 1)[:, 0]
        key_hi = jnp.take_along_axis(key, emp[:, None], 1)[:, 0]
        # 3. candidate segments e -> nxt(e)
        nxt, has = successor(act, key)
        cand = has & (key >= key_lo[:, None]) & (key < key_hi[:, None])
        cand = cand & ~((elem_obj_j >= 0) & (jnp.take_along_axis(elem_obj_j, nxt, 1) == elem_obj_j))
        cand = cand & work[:, None]
        a = pos  # wrapPathSegment reads PathWrapPoint::getLocation: the latest tangent points
        b = jnp.take_along_axis(pos, nxt[..., None], axis=1)
        seen = jnp.where(frozen[..., None], ground, pos)  # calcPathLengthChange: getLocationInGround
        ga = seen
        gb = jnp.take_along_axis(seen, nxt[..., None], axis=1)
        lane_obj = jnp.asarray(frame_of_lane) + o  # this lane's object at this lane's pose (and frame set)
        rot = obj_rot[lane_obj]  # (M, 3, 3)
        org = obj_pos[lane_obj]
        a_loc = jnp.einsum("mji,mnj->mni", rot, a - org[:, None])
        b_loc = jnp.einsum("mji,mnj->mni", rot, b - org[:, None])
        kind = jnp.asarray(kinds_arr)[o]
        method = _gather_rows(tables["method"], s)
        res = evaluate_surface(
            plan, kind, a_loc, b_loc, dims[o], obj_axis[o], obj_sign[o], method,
            True if static_single else single, cand, key
        )
        r1 = jnp.einsum("mij,mnj->mni", rot, res.r1) + org[:, None]
        r2 = jnp.einsum("mij,mnj->mni", rot, res.r2) + org[:, None]

        def dist(x, y):
            d = x - y
            sq = jnp.sum(d * d, -1)
            return jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)

        change = dist(ga, r1) + res.length + dist(r2, gb) - dist(ga, gb)
        code = jnp.where(cand, res.code, NO_WRAP)
        mand = cand & (code == MANDATORY)
        has_mand = jnp.any(mand, -1)
        first_mand = jnp.argmin(jnp.where(mand, key, inf), -1)
        # a WRAPPED code with no path (the torus when its 1-D solve fails) never wins: OpenSim's
        # length change for it is NaN, and NaN < best is false in WrapObject selection
        wrapd = cand & (code == WRAPPED) & res.has_path
        best_wrapped = jnp.argmin(jnp.where(wrapd, change, inf), -1)
        found = has_mand | jnp.any(wrapd, -1)
        best = jnp.where(has_mand, first_mand, best_wrapped)
        take = found & jnp.take_along_axis(res.has_path, best[:, None], 1)[:, 0]
        last_cand = jnp.argmax(jnp.where(cand, key, -inf), -1)
        code_last = jnp.where(jnp.any(cand, -1), jnp.take_along_axis(code, last_cand[:, None], 1)[:, 0], NO_WRAP)
        res_i = jnp.where(has_mand, MANDATORY, code_last)
        result = result.at[:, i].set(jnp.where(present, res_i, result[:, i]))
        # 4. insert r1, r2 after the chosen segment's start
        ka = jnp.take_along_axis(key, best[:, None], 1)[:, 0]
        kb = jnp.take_along_axis(key, jnp.take_along_axis(nxt, best[:, None], 1), 1)[:, 0]
        r1b = jnp.take_along_axis(r1, best[:, None, None], 1)[:, 0]
        r2b = jnp.take_along_axis(r2, best[:, None, None], 1)[:, 0]
        first = (arange_n[None] == e1[:, None]) & take[:, None]
        second = (arange_n[None] == e1[:, None] + 1) & take[:, None]
        pos = jnp.where(first[..., None], r1b[:, None], jnp.where(second[..., None], r2b[:, None], pos))
        key = jnp.where(first, (ka + (kb - ka) / 3)[:, None], jnp.where(second, (ka + 2 * (kb - ka) / 3)[:, None], key))
        act = act | first | second
        length_b = jnp.take_along_axis(res.length, best[:, None], 1)[:, 0]
        slot_hot = (jnp.arange(W)[None] == s[:, None]) & present[:, None]
        surf = jnp.where(slot_hot, jnp.where(take, length_b, 0.0)[:, None], surf)
        return pos, ground, frozen, act, key, surf, swapped, stopped | stop_now, result

    def freeze(pos, ground, frozen, act):
        """``Point::getLocationInGround`` on every element of the path: first call caches."""
        now = act & ~frozen
        return jnp.where(now[..., None], pos, ground), frozen | act

    def one_pass(kk, carry):
        pos, ground, frozen, act, key, surf, swapped, stopped, done, last = carry
        # a lane already done keeps its old state (``sel`` below): it runs as stopped, so it
        # asks no surface for work
        state = (pos, ground, frozen, act, key, surf, swapped, stopped | done, jnp.zeros((M, W), jnp.int32))
        state = jax.lax.fori_loop(0, W, step, state) if W > 1 else step(0, state)
        n_pos, n_ground, n_frozen, n_act, n_key, n_surf, _, n_stopped, result = state
        n_ground, n_frozen = freeze(n_pos, n_ground, n_frozen, n_act)
        length = path_length(n_ground, n_act, n_key, n_surf)
        converged = jnp.abs(length - last) < LENGTH_TOLERANCE
        n_done = converged | ~jnp.asarray(multi) | n_stopped
        if W >= 2:
            swap = (kk == 0) & jnp.asarray(multi) & ~n_done & (result[:, 0] == NO_WRAP) & (result[:, 1] == INSIDE)
            zero = (arange_n[None] == P) | (arange_n[None] == P + 1)
            n_act = n_act & ~(zero & swap[:, None])
            n_swapped = swapped | swap
        else:
            n_swapped = swapped
        keep = done

        def sel(old, new):
            k = keep.reshape(keep.shape + (1,) * (new.ndim - 1))
            return jnp.where(k, old, new)

        return (sel(pos, n_pos), sel(ground, n_ground), sel(frozen, n_frozen), sel(act, n_act), sel(key, n_key),
                sel(surf, n_surf), sel(swapped, n_swapped), sel(stopped, n_stopped), done | n_done,
                jnp.where(done, last, length))

    pos0 = jnp.concatenate([world, jnp.zeros((M, 2 * W, 3), dtype)], 1)
    act0 = jnp.concatenate([active, jnp.zeros((M, 2 * W), bool)], 1)
    key0 = jnp.concatenate([jnp.broadcast_to(jnp.arange(P, dtype=dtype), (M, P)), jnp.zeros((M, 2 * W), dtype)], 1)
    frozen0 = jnp.broadcast_to(arange_n < P, (M, N))  # path points never move: ground = pos
    carry = (pos0, pos0, frozen0, act0, key0, seeded(jnp.zeros((M, W), dtype), world), jnp.zeros(M, bool),
             jnp.zeros(M, bool), jnp.zeros(M, bool), seeded(jnp.full((M,), jnp.inf, dtype), world))
    passes = MAX_PASSES if bool(multi.any()) else 1
    if passes > 1:
        # a pass after every lane of the batch has converged changes nothing: skip it (the
        # predicate is one scalar over all lanes, so this is a real branch, not a select)
        def maybe_pass(kk, carry):
            return jax.lax.cond(jnp.all(carry[8]), lambda c: c, lambda c: one_pass(kk, c), carry)

        carry = jax.lax.fori_loop(0, passes, maybe_pass, carry)
    else:
        carry = one_pass(0, carry)
    pos, ground, frozen, act, key, surf = carry[:6]
    ground, _ = freeze(pos, ground, frozen, act)
    out = WrappedPath(path_length(ground, act, key, surf), ground, act, key, surf, pos)
    return WrappedPath(*(a.reshape((B, R) + a.shape[1:]) for a in out))


def _warn_float32_ellipsoids(wraps: MuscleWraps, rows) -> None:
    """Warn (when traced) that OpenSim's ellipsoid algorithm runs in float32: its tolerances (1e-9 and
    finer) are below float32's resolution, and its lengths can be off by centimetres."""
    used, obj = np.asarray(wraps.used, bool)[rows], np.asarray(wraps.obj)[rows]
    names = sorted({wraps.names[o] for o in obj[used] if wraps.kinds[o] == "WrapEllipsoid"})
    if names:
        warnings.warn(f"muscle paths over the WrapEllipsoid objects {names} in float32: OpenSim's ellipsoid "
                      "algorithm stops on tolerances below float32's resolution, and its lengths can be off by "
                      "centimetres; enable float64 (jax.config.update('jax_enable_x64', True)), or fit path "
                      "functions in float64 (mbjax.fit_path_functions) and evaluate those in float32", stacklevel=2)


def kinds_of_rows(wraps: MuscleWraps, used, obj) -> dict[int, np.ndarray]:
    """Static: each kind of surface the wrapped muscles use, and the muscle rows that use it.

    The wrap steps run in one ``fori_loop`` (each surface is traced once); at most the lanes of
    these rows need that kind in one step, which sizes its chunks (:func:`~.surfaces.surface_plan`).
    """
    out: dict[int, list[int]] = {}
    for m in range(used.shape[0]):
        for w in np.nonzero(used[m])[0]:
            k = KINDS.index(wraps.kinds[obj[m, w]])
            if m not in out.setdefault(k, []):
                out[k].append(m)
    return {k: np.asarray(sorted(v), dtype=np.int64) for k, v in sorted(out.items())}
