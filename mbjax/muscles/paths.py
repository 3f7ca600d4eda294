"""Musculotendon paths: attachment sequences Γ_k and path points (Ehsani §4-2-1, Definition 2).

A path is an ordered list of points, each fixed in a body frame (the ground included, body index
``-1``).  Three kinds of point exist, as in OpenSim:

* **fixed** points (``PathPoint``, via points): a constant location in the body frame;
* **moving** points (``MovingPathPoint``): some location components are joint maps of the
  coordinates (any :class:`~mbjax.maps.AbstractJointMap` family, so their ∇ and Hessian are closed
  form).  Holzbaur's "moving via points" modelled as zero-inertia bodies are the same thing;
* **conditional** points (``ConditionalPathPoint``): active only while one coordinate lies in a
  closed range ``[lo, hi]``; a coordinate that is not one of the model's ``q`` (an OpenSim
  coordinate made dependent by a coupler) is read through its ``coordinate_map``, a joint map of
  ``q`` that gives its value.  The path length is continuous when such a point switches only if the
  point lies on the straight segment it replaces; in general L(q) has a kink (or a jump) at the
  range ends, and moment arms there are one-sided.  Everything here is evaluated with the point
  set active at ``q`` (OpenSim's convention), i.e. we differentiate the piecewise-smooth branch.

All muscles are stored **padded and index based** in one :class:`MusclePaths` module — points
``(nm, P, 3)``, body indices and activity tables as static tuples — so lengths and moment arms of
every muscle are evaluated by one vectorised kernel, never a Python loop over muscles.
The model carries it in ``model.muscles`` (see :func:`with_muscles`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .. import _checks
from ..wrapping.objects import DIMENSIONS_USED
from .._kinematics import body_poses
from .._model import GROUND, Model, require_model
from ..maps._base import AbstractJointMap, local_index
from ..wrapping.path import build_wraps
from .parameter_rules import check_hill_parameters, given_or_default
from .path_functions import path_function_range_rules
from .path_set import ConditionalPathPoint, MovingPathPoint, MusclePaths, PathPoint, get_paths


def build_paths(
    body_names: Sequence[str],
    coordinate_names: Sequence[str],
    paths: Mapping[str, Sequence[PathPoint]],
    kinds: Mapping[str, str] | None = None,
    parameters: Mapping[str, Mapping[str, float]] | None = None,
    wrap_objects: Sequence[Any] = (),
    path_wraps: Mapping[str, Sequence[Any]] | None = None,
    sources: Mapping[str, str] | None = None,
) -> MusclePaths:
    """Pack named paths into one padded :class:`MusclePaths`.

    ``paths`` maps a muscle name to its points (origin first).  ``parameters`` maps a muscle name to
    a dict of scalar properties; missing properties of a muscle are stored as NaN.
    ``wrap_objects`` (:class:`mbjax.wrapping.WrapObject`) and ``path_wraps`` (muscle name ->
    :class:`mbjax.wrapping.PathWrap` list, in file order) add OpenSim wrapping.
    Hill parameters outside the values their muscle model is defined for are refused
    (:func:`mbjax.muscles.parameter_rules.check_hill_parameters`); ``sources`` maps a muscle name to
    where it was read, for the message.
    """
    body_names = tuple(body_names)
    coordinate_names = tuple(coordinate_names)
    names = tuple(paths)
    if not names:
        raise ValueError("build_paths: no paths given")
    kinds = dict(kinds or {})
    parameters = dict(parameters or {})
    n_pts = max(len(p) for p in paths.values())
    nm = len(names)
    location = np.zeros((nm, n_pts, 3))
    cond_range = np.zeros((nm, n_pts, 2))
    cond_range[..., 0] = -np.inf
    cond_range[..., 1] = np.inf
    body = np.full((nm, n_pts), -1, dtype=int)
    valid = np.zeros((nm, n_pts), dtype=bool)
    cond = np.full((nm, n_pts), -1, dtype=int)
    point_names = [[""] * n_pts for _ in range(nm)]
    moving: dict[Any, list[tuple[tuple[int, int, int], AbstractJointMap]]] = {}
    conditions: dict[Any, list[tuple[tuple[int, int], AbstractJointMap]]] = {}
    for m, name in enumerate(names):
        pts = paths[name]
        if len(pts) < 2:
            raise ValueError(f"muscle {name!r}: a path needs at least 2 points, got {len(pts)}")
        for p, pt in enumerate(pts):
            if not isinstance(pt, PathPoint):
                raise ValueError(f"muscle {name!r}: point {p} is not a PathPoint: {pt!r}")
            if pt.body == GROUND:
                body[m, p] = -1
            elif pt.body in body_names:
                body[m, p] = body_names.index(pt.body)
            else:
                raise ValueError(
                    f"muscle {name!r}: point {p} ({pt.name or 'unnamed'}) is on unknown body "
                    f"{pt.body!r}; bodies are {('ground',) + body_names}"
                )
            loc = np.asarray(pt.location, dtype=float)
            if loc.shape != (3,) or not np.all(np.isfinite(loc)):
                raise ValueError(f"muscle {name!r}: point {p} location must be a finite 3-vector, got {loc!r}")
            location[m, p] = loc
            valid[m, p] = True
            point_names[m][p] = pt.name
            if isinstance(pt, ConditionalPathPoint):
                cmap = pt.coordinate_map
                if cmap is None and pt.coordinate not in coordinate_names:
                    raise ValueError(
                        f"muscle {name!r}: conditional point {pt.name!r} reads coordinate "
                        f"{pt.coordinate!r}, not one of {coordinate_names} (give its coordinate_map)"
                    )
                if cmap is not None and (not isinstance(cmap, AbstractJointMap) or cmap.n_maps != 1):
                    raise ValueError(
                        f"muscle {name!r}: conditional point {pt.name!r}: coordinate_map must be a single joint map"
                    )
                lo, hi = float(pt.range[0]), float(pt.range[1])
                if not lo <= hi:
                    raise ValueError(f"muscle {name!r}: conditional point {pt.name!r} has range {pt.range} with lo > hi")
                if cmap is None:
                    cond[m, p] = coordinate_names.index(pt.coordinate)
                else:
                    conditions.setdefault(cmap.group_key(), []).append(((m, p), cmap))
                cond_range[m, p] = (lo, hi)
            if isinstance(pt, MovingPathPoint):
                if len(pt.functions) != 3:
                    raise ValueError(f"muscle {name!r}: moving point {pt.name!r} needs 3 location functions")
                for c, fn in enumerate(pt.functions):
                    if fn is None:
                        continue
                    if not isinstance(fn, AbstractJointMap) or fn.n_maps != 1:
                        raise ValueError(
                            f"muscle {name!r}: moving point {pt.name!r} component {c} must be a single joint map"
                        )
                    moving.setdefault(fn.group_key(), []).append(((m, p, c), fn))
    maps, slots, inputs = [], [], []
    for entries in moving.values():
        family = type(entries[0][1])
        stacked = family.stack([fn for _, fn in entries])
        maps.append(stacked)
        slots.append(tuple(s for s, _ in entries))
        idx = local_index(stacked.coordinates, coordinate_names, stacked.width)
        inputs.append(tuple(tuple(int(v) for v in row) for row in idx))
    cond_maps, cond_inputs = [], []
    offset = len(coordinate_names)  # condition maps' values follow q in [q; values]
    for entries in conditions.values():
        stacked = type(entries[0][1]).stack([fn for _, fn in entries])
        cond_maps.append(stacked)
        for k, ((m, p), _) in enumerate(entries):
            cond[m, p] = offset + k
        offset += len(entries)
        idx = local_index(stacked.coordinates, coordinate_names, stacked.width)
        cond_inputs.append(tuple(tuple(int(v) for v in row) for row in idx))
    wraps = build_wraps(body_names, names, {n: len(paths[n]) for n in names}, tuple(wrap_objects),
                        dict(path_wraps or {}))
    keys = sorted({k for v in parameters.values() for k in v})
    rows = given_or_default(names, [kinds.get(n, "path") for n in names], parameters, keys)
    params = {k: jnp.asarray(rows[k], dtype=float) for k in keys}
    built = MusclePaths(
        location=jnp.asarray(location),
        cond_range=jnp.asarray(cond_range),
        moving_maps=tuple(maps) or None,
        parameters=params,
        names=names,
        kinds=tuple(kinds.get(n, "path") for n in names),
        body=tuple(tuple(int(b) for b in row) for row in body),
        valid=tuple(tuple(bool(v) for v in row) for row in valid),
        cond_coord=tuple(tuple(int(c) for c in row) for row in cond),
        moving_slots=tuple(slots),
        moving_inputs=tuple(inputs),
        point_names=tuple(tuple(r) for r in point_names),
        wraps=wraps,
        cond_maps=tuple(cond_maps) or None,
        cond_inputs=tuple(cond_inputs),
    )
    check_hill_parameters(built, parameters, sources)
    return built


def with_muscles(model: Model, paths: MusclePaths | Mapping[str, Sequence[PathPoint]], **kwargs) -> Model:
    """A copy of ``model`` whose ``muscles`` are ``paths`` (built with :func:`build_paths`)."""
    require_model(model, "with_muscles")
    if not isinstance(paths, MusclePaths):
        paths = build_paths(model.body_names, model.coordinate_names, paths, **kwargs)
    nb = model.n_bodies
    for name, row in zip(paths.names, paths.body):
        if any(b >= nb for b in row):
            raise ValueError(f"muscle {name!r}: body index out of range for this model ({nb} bodies)")
    return model.replace(muscles=paths)


def empty_result(model: Model, q, shape: tuple[int, ...]):
    """``None`` if the model has muscles, else zeros of ``shape`` (a quantity over no muscles)."""
    if get_paths(model).n_muscles:
        return None
    return jnp.zeros(shape, jnp.result_type(q, model.axis))


PATH_UNDEFINED = ("has an undefined path at this q: fewer than 2 active points (conditional points out of "
                  "range), a NaN path point, all its points at one place (length 0: no direction, no moment "
                  "arm), or (smooth wrapping) an ellipsoid geodesic that did not converge")


def require_pose_and_path(out, model: Model, q, where: str):
    """``out`` unchanged; one fused run-time check (checks on, one host callback per pose): ``q``
    finite (it was only shape-checked on entry), and no NaN in ``out``, which the kernels give for
    a path with fewer than 2 active points (all but one conditional point out of range), and the
    smooth option for an ellipsoid wrap whose shooting solve failed."""
    ctx = _checks.coordinates_context(model)
    return _checks.all_of(out, [_checks.not_finite(q, "q", ctx),
                                *path_point_rules(model, where),
                                *wrap_dimension_rules(model, where),
                                *path_function_range_rules(model, q, where),
                                _undefined_path_rule(out, model, where)])


def _undefined_path_rule(out, model: Model, where: str):
    """The rule that ``out`` (lengths ``(..., nm)`` or moment arms ``(nq, nm)``) holds no NaN, the kernels'
    mark of a muscle without a defined path, with one message per muscle naming it."""
    names = get_paths(model).names
    if names and jnp.ndim(out) and jnp.shape(out)[-1] == len(names):
        return jnp.moveaxis(jnp.isnan(out), -1, 0), [f"{where}: muscle {n!r} {PATH_UNDEFINED}" for n in names]
    return jnp.isnan(out), f"{where}: a muscle path {PATH_UNDEFINED}"


def path_point_rules(model: Model, where: str) -> list:
    """``(bad, message)`` per muscle whose path points are not finite (a file refuses them; a model
    changed after loading is checked at call time, since a NaN point would drop its segments
    from the length without a word)."""
    paths = get_paths(model)
    if not paths.n_muscles:
        return []
    valid = np.asarray(paths.valid, bool)
    bad = ~jnp.all(jnp.where(valid[..., None], jnp.isfinite(paths.location), True), axis=(1, 2))
    return [(bad, [f"{where}: muscle {name!r} has a path point that is not finite: was the model changed "
                   "after loading (eqx.tree_at, a fit step)?" for name in paths.names])]


def wrap_dimension_rules(model: Model, where: str) -> list:
    """``(bad, message)`` per wrap object whose dimensions are not finite and positive (a torus: inner
    below outer radius), as :class:`~mbjax.wrapping.objects.WrapObject` requires when a file is read;
    checked again at call time because a model's arrays can be changed after loading
    (``eqx.tree_at``, an identification step), and a NaN or negative radius would otherwise give a
    straight or mirrored path without a word."""
    wraps = get_paths(model).wraps
    if wraps is None:
        return []
    used = np.array([[k < DIMENSIONS_USED[kind] for k in range(3)] for kind in wraps.kinds])
    torus = np.array([kind == "WrapTorus" for kind in wraps.kinds])
    d = wraps.dimensions
    bad = ~jnp.all(jnp.where(used, jnp.isfinite(d) & (d > 0), True), axis=1) | (torus & ~(d[:, 0] < d[:, 1]))
    rot = wraps.rotation
    tol = 1e3 * _checks.dtype_eps(rot.dtype)
    not_rotation = jnp.max(jnp.abs(jnp.einsum("oji,ojk->oik", rot, rot) - jnp.eye(3, dtype=rot.dtype)), axis=(1, 2)) > tol
    placement = ~jnp.all(jnp.isfinite(rot), axis=(1, 2)) | not_rotation | (jnp.linalg.det(rot) < 0) \
        | ~jnp.all(jnp.isfinite(wraps.translation), axis=1)
    objects = list(zip(wraps.names, wraps.kinds))
    return [(bad, [f"{where}: wrap object {name!r} ({kind}) has dimensions that are not finite and "
                   f"positive{' (inner radius below outer)' if kind == 'WrapTorus' else ''}: "
                   "was the model changed after loading (eqx.tree_at, a fit step)?" for name, kind in objects]),
            (placement, [f"{where}: wrap object {name!r} ({kind}) has a translation that is not finite or a "
                         "rotation that is not a finite proper rotation matrix: was the model changed after "
                         "loading (eqx.tree_at, a fit step)?" for name, kind in objects])]


# --------------------------------------------------------------------------------------------
# evaluation kernels (one pose, all muscles at once)
# --------------------------------------------------------------------------------------------


class PathState(eqx.Module):
    """Everything the length and moment-arm kernels share at one pose.

    ``local (nm, P, 3)`` body-frame locations, ``d_local (nm, P, 3, nq)`` their q-derivatives
    (non-zero only for moving points), ``world (nm, P, 3)`` positions, ``active (nm, P)``,
    ``nxt (nm, P)`` index of the next active point, ``seg (nm, P)`` segment p→nxt exists,
    ``unit (nm, P, 3)`` unit vector of that segment, ``seg_len (nm, P)``, ``force (nm, P, 3)`` the
    net unit-tension force f_p = e_out - e_in that the path applies at each point (world frame),
    the body poses ``poses (nb + 1, 4, 4)`` with ground appended last and each point's body
    rotation ``rot (nm, P, 3, 3)``.
    """

    local: jnp.ndarray
    d_local: jnp.ndarray
    world: jnp.ndarray
    active: jnp.ndarray
    nxt: jnp.ndarray
    seg: jnp.ndarray
    unit: jnp.ndarray
    seg_len: jnp.ndarray
    force: jnp.ndarray
    poses: jnp.ndarray
    rot: jnp.ndarray


def _locations(paths: MusclePaths, q, derivatives: bool):
    """Body-frame point locations with moving components filled in (and their q-derivatives).

    Scatters use static one-hot matrices (dense contractions vectorise better than scatters
    under ``vmap`` on CPU).
    """
    loc = paths.location.astype(q.dtype)
    nm, npt, _ = loc.shape
    nq = q.shape[0]
    d_loc = jnp.zeros((nm, npt, 3, nq), q.dtype) if derivatives else None
    for family, slots, inputs in zip(paths.moving_maps or (), paths.moving_slots, paths.moving_inputs):
        idx = np.asarray(slots, dtype=np.int64)
        inp = np.asarray(inputs, dtype=np.int64)
        n = idx.shape[0]
        place = np.zeros((n, nm, npt, 3))
        place[np.arange(n), idx[:, 0], idx[:, 1], idx[:, 2]] = 1.0
        keep = 1.0 - place.sum(0)
        f, g, _ = family.local(q[inp])
        loc = loc * jnp.asarray(keep, q.dtype) + jnp.einsum("n,nmpc->mpc", f.astype(q.dtype), jnp.asarray(place, q.dtype))
        if derivatives:
            to_q = np.zeros(inp.shape + (nq,))
            for k in range(inp.shape[1]):
                to_q[np.arange(n), k, inp[:, k]] = 1.0
            if family.width < inp.shape[1]:
                to_q[:, family.width:] = 0.0
            grad = jnp.einsum("nk,nkq->nq", g.astype(q.dtype), jnp.asarray(to_q[:, : g.shape[1]], q.dtype))
            d_loc = d_loc + jnp.einsum("nq,nmpc->mpcq", grad, jnp.asarray(place, q.dtype))
    return loc, d_loc


def condition_values(paths: MusclePaths, q, value=None):
    """``[q; c]`` (``(nq + nc, *batch)``): ``q`` followed by the values ``c`` of the coordinates that
    conditional points read through a ``coordinate_map``; ``cond_coord`` indexes it.

    ``value(family, x)`` evaluates a stacked map family on local inputs ``x (n, k, *batch)``
    (default ``family.value``, for an unbatched ``q``).
    """
    if not paths.cond_maps:
        return q
    value = value or (lambda family, x: family.value(x))
    parts = [q] + [value(family, q[np.asarray(inputs, dtype=np.int32)]).astype(q.dtype)
                   for family, inputs in zip(paths.cond_maps, paths.cond_inputs)]
    return jnp.concatenate(parts, axis=0)


def _active(paths: MusclePaths, q):
    valid = jnp.asarray(np.asarray(paths.valid, dtype=bool))
    cond = np.asarray(paths.cond_coord, dtype=np.int32)
    qc = condition_values(paths, q)[np.maximum(cond, 0)]
    lo, hi = paths.cond_range[..., 0], paths.cond_range[..., 1]
    inside = (qc >= lo) & (qc <= hi) | jnp.isnan(qc)  # a NaN coordinate: see path_geometry
    return valid & jnp.where(jnp.asarray(cond >= 0), inside, True)


#: segments shorter than COINCIDENT · eps · (|x_p| + |x_next|) are coincident points (rounding level)
COINCIDENT = 256.0


def segment_exists(sq, scale2, dtype):
    """Whether a segment of squared length ``sq`` between points of squared norms summing to
    ``scale2`` has a direction: ``sq > (COINCIDENT · eps)² · scale2`` (and ``sq > 0``).

    Coincident consecutive points (a zero-length segment) have no unit vector and ``|d|`` has no
    derivative at ``d = 0`` (a cone): the policy is length 0 and a zero contribution to the moment
    arms (the zero subgradient, the mean of the one-sided slopes), in the fast path and by autodiff
    alike.  Below the tolerance the computed ``d`` is rounding noise, so the same rule applies.  A NaN
    ``sq`` (from a NaN coordinate with checks off) counts as a segment, so the NaN reaches the length.
    """
    tol = (COINCIDENT * float(jnp.finfo(dtype).eps)) ** 2
    return (sq > tol * scale2) & (sq > 0) | jnp.isnan(sq)


def _segment_length(d, scale2=None):
    """``|d|`` of path segments, 0 with a zero gradient where a segment does not exist: ``d = 0``, or
    with ``scale2`` the points' squared distances from the origin, coincident to rounding
    (:func:`segment_exists`)."""
    sq = jnp.sum(d * d, axis=-1)
    pos = sq > 0 if scale2 is None else segment_exists(sq, scale2, d.dtype)
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, sq, 1.0)), 0.0)


def path_state(model: Model, q, derivatives: bool = True) -> PathState:
    """Path points, active sets and segments at one pose by dense one-hot contractions (reference).

    The literal form that the paper-shaped oracles (GMLAV, Eq. 193 block and Eq. 195 sparse moment
    arms) read; the fast path is :func:`mbjax.muscles.geometry.path_geometry`, checked against it.
    ``q (nq,)`` is checked (shape at trace time; NaN, NaN path points and paths with fewer than two
    active points at run time, one fused check).
    """
    q = reference_pose(model, q, "path_state")
    st = unchecked_path_state(model, q, derivatives)
    return _checks.all_of(st, reference_rules(model, q, st.active, "path_state"))


def reference_pose(model: Model, q, where: str):
    """``q`` of the reference routes, shape-checked at trace time (``where`` names the caller)."""
    require_model(model, where)
    return _checks.as_array(q, "q", (model.n_coordinates,), ("nq",),
                            f"{_checks.coordinates_context(model)} ({where})")


def reference_rules(model: Model, q, active, where: str) -> list:
    """The run-time rules of the reference routes (for one :func:`mbjax._checks.all_of`): ``q``
    finite, path points finite, and every path with at least two active points at ``q`` (else it
    has no segment and would count as length 0 and moment arm 0)."""
    names = get_paths(model).names
    rules = [_checks.not_finite(q, f"{where}: q", _checks.coordinates_context(model)), *path_point_rules(model, where),
             *wrap_dimension_rules(model, where)]
    if names:
        rules.append((jnp.sum(active, axis=-1) < 2,
                      [f"{where}: muscle {n!r} has fewer than 2 active points at this q (conditional points "
                       "out of range): its path is undefined" for n in names]))
    return rules


def unchecked_path_state(model: Model, q, derivatives: bool = True) -> PathState:
    """:func:`path_state` without its checks (for the routes that check their own result)."""
    paths = get_paths(model)
    q = jnp.asarray(q)
    with _checks.checks(False):  # the caller's one fused check covers q
        poses = body_poses(model, q)
    dtype = poses.dtype
    q = q.astype(dtype)
    poses = jnp.concatenate([poses, jnp.eye(4, dtype=dtype)[None]], 0)  # ground = index nb (= -1)
    if not paths.n_muscles:  # no muscles: every table is empty
        f, i = (lambda *shape: jnp.zeros((0, 0) + shape, dtype)), jnp.zeros((0, 0), jnp.int32)
        return PathState(f(3), f(3, q.shape[0]), f(3), i.astype(bool), i, i.astype(bool), f(3), f(), f(3), poses,
                         f(3, 3))
    body = np.asarray(paths.body, dtype=np.int32)
    bidx = np.where(body < 0, model.n_bodies, body)
    loc, d_loc = _locations(paths, q, derivatives)
    sel = np.zeros(body.shape + (poses.shape[0],))
    np.put_along_axis(sel, bidx[..., None], 1.0, axis=-1)
    sel = jnp.asarray(sel, dtype)  # static one-hot (nm, P, nb + 1)
    rot_p = jnp.einsum("mpb,bac->mpac", sel, poses[:, :3, :3])
    world = jnp.einsum("mpac,mpc->mpa", rot_p, loc) + jnp.einsum("mpb,ba->mpa", sel, poses[:, :3, 3])
    active = _active(paths, q)
    npt = body.shape[1]
    later = np.triu(np.ones((npt, npt), dtype=bool), k=1)  # [p, p'] = p' > p
    cand = jnp.asarray(later)[None] & active[:, None, :]
    has_next = jnp.any(cand, axis=-1)
    nxt = jnp.argmax(cand, axis=-1)
    seg = active & has_next
    onehot = (nxt[..., None] == jnp.arange(npt)) & seg[..., None]  # [m, p, p'] segment p ends at p'
    x_next = jnp.einsum("mpq,mqa->mpa", onehot.astype(dtype), world)
    d = x_next - world
    seg_len = jnp.where(seg, _segment_length(d, jnp.sum(world * world, -1) + jnp.sum(x_next * x_next, -1)), 0.0)
    safe_len = jnp.where(seg_len > 0, seg_len, 1.0)
    unit = jnp.where((seg & (seg_len > 0))[..., None], d / safe_len[..., None], 0.0)
    # net force of a unit tension at each point: e_out(p) - e_in(p)
    e_in = jnp.einsum("mpq,mpc->mqc", onehot.astype(dtype), unit)
    force = unit - e_in
    return PathState(loc, d_loc, world, active, nxt, seg, unit, seg_len, force, poses, rot_p)
