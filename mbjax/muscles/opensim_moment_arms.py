"""Two notions of moment arm, and OpenSim's as its tools report it.

* **Geometric** (what :func:`mbjax.moment_arms` returns): R = −∂L/∂q, the change of path length
  with each independent coordinate (Ehsani Eq. 193/195; coupled coordinates eliminated, so the
  derivative runs along the constraint manifold).  Research codes (e.g. PredSim) use this.
* **Effective / unit-force** (OpenSim's ``Muscle.computeMomentArm``, ``MomentArmSolver``): apply a
  unit tension along the path, map the point forces to generalized forces g = Jᵀ F of the
  *unconstrained* tree (``GeometryPath::produceForces``), and read r_c = C_cᵀ g with C_c the speed
  direction that ``projectU`` returns when coordinate c is driven at unit speed.

Relation.  For coordinate couplers with one independent coordinate each (OpenSim's
``CoordinateCouplerConstraint`` as used in MoBL), C_c = ∂q_all/∂q_c, the tangent of the manifold, so
r_c = −dL/dq_c *if* g = −∂L/∂q_all.  Virtual work gives that for fixed points and wrap surfaces,
but ``produceForces`` applies forces only at points whose neighbour lies on **another** body; a
segment between two points of one body is skipped.  That is exact for fixed points (a rigid body
does not change the distance) and wrong for a ``MovingPathPoint`` next to a point of its own body:
the segment's length changes with the point's coordinate and OpenSim drops that change.  Hence, for
straight-line paths,

    r_OpenSim(q) = −∂/∂q Σ_{segments s between different bodies} ℓ_s(q)

(:func:`opensim_moment_arms`), equal to the geometric R except through such segments (MoBL's DELT2:
0.2 mm about shoulder_rot; with the couplers 12 mm about shoulder_elv, LAT2).

**Wrapped paths.**  OpenSim applies the tension at the tangent points as at fixed points of the
wrap object's body (``PathWrapPoint``), and nothing along the surface arc (both ends on one body).
So its moment arm is −∂/∂q of the cross-body straight segments with the tangent points *frozen in
their wrap frames*.  Virtual work makes that the geometric −∂L/∂q only when the wrapped path is
stationary in its tangent points (a true shortest path): OpenSim's cylinder and sphere paths are,
its ellipsoid path (an iterated approximation) is not quite: arm26's BIClong over its humeral
ellipsoid differs by 0.26 mm about the shoulder.  OpenSim's static optimization and its reported
lengthening speeds (V = −Rᵀq̇, wrap points moving with their bodies) use this R.

**Fast path without wrap objects.**  A segment between two points of one body has the length of
their body-frame distance, which depends on q only through moving points, so
r_OpenSim = R_geometric + ∂/∂q Σ_{same-body segments} |p_b − p_a| (body-frame locations): the
closed-form :func:`mbjax.moment_arms` plus a correction that needs no kinematics (zero in models
without ``MovingPathPoint`` s), instead of forward-differentiating the cross-body lengths through
the whole kinematics (much slower).  The reference :func:`cross_body_lengths` route
stays for wrapped paths and in the tests.

**Smooth wrapping** (``load_osim(..., wrapping="smooth")``, :mod:`mbjax.wrapping.smooth_path`) has
no OpenSim counterpart; its surface paths are exact shortest paths between their tangent points,
so the unit tension's moment arm over them is −∂L/∂q and :func:`opensim_moment_arms` returns the
straight-line rule for every muscle: the geometric R plus the same-body correction of the straight
segments between a ``MovingPathPoint`` and a point of its own body.

Tested against OpenSim 4.6's ``computeMomentArm`` in ``tests/validation/test_opensim_moment_arms.py``.
Use the geometric R for dynamics (it is the generalized force a tension produces through the
model's true kinematics: M q̈ + N q̇ = G + R F); use this function to reproduce numbers from
OpenSim's tools.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from typing import NamedTuple

from .._kinematics import check_vector, forward_pass
from .._model import Model, require_model
from .geometry import path_geometry, wrap_frames, wrapped_lengths, wrapped_paths
from .moment_arms import moment_arms
from .path_functions import all_paths_are_functions, function_lengths, function_moment_arms, get_path_functions
from .. import _checks
from .paths import (_active, _locations, _segment_length, get_paths, reference_pose, reference_rules,
                    require_pose_and_path, unchecked_path_state)
from .pose_warning import warns_for_pose


def _smooth(paths) -> bool:
    """Whether the paths use smooth wrapping: a taut cable through exact tangent points, so the unit
    tension's virtual work is −∂L/∂q over its surfaces (module docstring, "Smooth wrapping")."""
    return paths.wraps is not None and paths.wraps.wrapping == "smooth"


def cross_body_lengths(model: Model, q, frozen=None) -> jnp.ndarray:
    """Σ of the path segments whose ends lie on different bodies, ``(nm,)``; −∂/∂q of it is OpenSim's moment arm.

    Straight-line paths need nothing else.  A model with wrap objects needs ``frozen``
    (:func:`frozen_wrap_paths` at the pose of interest): the wrapped muscles' element order,
    tangent points in the wrap frames and segment directions u, held fixed while ``q`` varies; for
    those muscles the value is Σ u·(x_b − x_a), the length at that pose for one-pass paths, and its
    derivative there is the unit tension's virtual work either way.
    """
    q = reference_pose(model, q, "cross_body_lengths")
    paths = get_paths(model)
    if paths.wraps is not None and frozen is None:
        raise ValueError("cross_body_lengths: the model has wrap objects; pass frozen=frozen_wrap_paths(model, q0)")
    if frozen is not None and not isinstance(frozen, FrozenWrap):
        raise TypeError(f"cross_body_lengths: frozen must be frozen_wrap_paths(model, q0) or None, "
                        f"got {type(frozen).__name__}")
    out, active = _cross_body_lengths(model, q, frozen)
    return _checks.all_of(out, reference_rules(model, q, active, "cross_body_lengths"))


def _cross_body_lengths(model: Model, q, frozen):
    """:func:`cross_body_lengths` without its checks, and the active points ``(nm, P)``."""
    paths = get_paths(model)
    st = unchecked_path_state(model, q, derivatives=False)
    body = np.asarray(paths.body, dtype=np.int64).reshape(paths.n_muscles, paths.n_points)  # static; -1 = ground
    nxt_body = jnp.take_along_axis(jnp.asarray(body), st.nxt, axis=1)
    cross = (jnp.asarray(body) != nxt_body) & st.seg
    out = jnp.sum(jnp.where(cross, st.seg_len, 0.0), axis=1)
    if paths.wraps is not None:
        out = out.at[np.asarray(paths.wraps.muscles)].set(_wrapped_cross_body_lengths(model, q, frozen))
    return out, st.active


class FrozenWrap(NamedTuple):
    """Wrapped muscles at one pose: ``index (M, N)`` elements in path order, ``valid (M, N)``
    (active, in that order), the tangent points ``local (M, 2W, 3)`` in their wrap frames (latest
    positions: where OpenSim applies the tension), and the unit ``direction (M, N - 1, 3)`` of each
    segment in path order (from the cached ground positions, as ``getPointForceDirections``)."""

    index: jnp.ndarray
    valid: jnp.ndarray
    local: jnp.ndarray
    direction: jnp.ndarray


def _element_bodies(paths):
    """Body of every wrapped element ``(M, N)`` (static): path-point slots, then r1, r2 per wrap slot."""
    wraps = paths.wraps
    rows = np.asarray(wraps.muscles)
    point_body = np.asarray(paths.body)[rows]
    wrap_body = np.asarray(wraps.body)[np.asarray(wraps.obj)]  # (M, W)
    return np.concatenate([point_body, np.repeat(wrap_body, 2, axis=1)], axis=1)


def frozen_wrap_paths(model: Model, q) -> FrozenWrap:
    """OpenSim's wrapped paths at ``q``, frozen for :func:`cross_body_lengths` (tangent points as
    ``getCurrentPath`` reports them: first-pass positions, see :mod:`mbjax.wrapping.path`)."""
    q = check_vector(model, q)
    kin = forward_pass(model, q)
    return _freeze(model, wrapped_paths(model, q, kin, path_geometry(model, q, kin)), *wrap_frames(model, kin))


def _freeze(model, wp, rot, org) -> FrozenWrap:
    paths = get_paths(model)
    wraps = paths.wraps
    P = np.asarray(paths.body).shape[1]
    obj = np.repeat(np.asarray(wraps.obj), 2, axis=1)  # (M, 2W)
    local = jnp.einsum("mkji,mkj->mki", rot[obj], wp.latest[:, P:] - org[obj])
    key = jnp.where(wp.active, wp.order, jnp.inf)
    index = jnp.argsort(key, axis=1)
    valid = jnp.take_along_axis(wp.active, index, axis=1)
    x = jnp.take_along_axis(wp.points, index[..., None], axis=1)
    d = x[:, 1:] - x[:, :-1]
    n = jnp.linalg.norm(d, axis=-1, keepdims=True)
    direction = jnp.where(n > 0, d / jnp.where(n > 0, n, 1.0), 0.0)
    return jax.lax.stop_gradient(FrozenWrap(index, valid, local, direction))


def _wrapped_cross_body_lengths(model: Model, q, frozen: FrozenWrap):
    paths = get_paths(model)
    wraps = paths.wraps
    rows = np.asarray(wraps.muscles)
    kin = forward_pass(model, q)
    geo = path_geometry(model, q, kin)
    rot, org = wrap_frames(model, kin)
    obj = np.repeat(np.asarray(wraps.obj), 2, axis=1)
    tangent = jnp.einsum("mkij,mkj->mki", rot[obj], frozen.local) + org[obj]
    x = jnp.concatenate([geo.world[rows], tangent], axis=1)  # (M, N, 3)
    x = jnp.take_along_axis(x, frozen.index[..., None], axis=1)
    body = jnp.take_along_axis(jnp.asarray(_element_bodies(paths)), frozen.index, axis=1)
    seg = frozen.valid[:, :-1] & frozen.valid[:, 1:] & (body[:, :-1] != body[:, 1:])
    # u · (x_b - x_a) with u frozen: its derivative is the unit tension's virtual work (the value
    # itself is the segment length only where u is the current direction)
    proj = jnp.sum(frozen.direction * (x[:, 1:] - x[:, :-1]), axis=-1)
    return jnp.sum(jnp.where(seg, proj, 0.0), axis=1)


def same_body_lengths(model: Model, q, muscles=None) -> jnp.ndarray:
    """Σ of the path segments whose ends lie on one body, ``(nm,)``, from body-frame locations
    (no kinematics): L = cross-body + same-body lengths for straight-line paths.  ``muscles``: a
    static index array, to compute those rows only."""
    paths = get_paths(model)
    q = jnp.asarray(q)
    loc, _ = _locations(paths, q, False)
    active = _active(paths, q)
    body = np.asarray(paths.body)
    if muscles is not None:
        loc, active, body = loc[muscles], active[muscles], body[muscles]
    npt = body.shape[1]
    later = np.triu(np.ones((npt, npt), dtype=bool), k=1)
    cand = jnp.asarray(later)[None] & active[:, None, :]
    nxt = jnp.argmax(cand, axis=-1)
    seg = active & jnp.any(cand, axis=-1)
    same = jnp.asarray(body) == jnp.take_along_axis(jnp.asarray(body), nxt, axis=1)
    loc_next = jnp.take_along_axis(loc, nxt[..., None], axis=1)
    d = loc_next - loc
    ell = _segment_length(d, jnp.sum(loc * loc, -1) + jnp.sum(loc_next * loc_next, -1))
    return jnp.sum(jnp.where(seg & same, ell, 0.0), axis=1)


def _straight_opensim_moment_arms(model: Model, q):
    """Fast path without wrap objects (module docstring): R_geometric + ∂(same-body lengths)/∂q."""
    R = moment_arms(model, q)
    paths = get_paths(model)
    if not paths.moving_maps:
        return R
    # same-body lengths move only with the moving maps' inputs (conditional points switch, with zero
    # derivative): differentiate in those coordinates alone (Gait2354: 2 of 23)
    inputs = np.unique(np.concatenate([np.asarray(i, np.int64).reshape(-1) for i in paths.moving_inputs]))
    # ... and only the paths that hold a moving point (Gait2354: 4 of 54)
    mine = np.unique(np.concatenate([np.asarray(s, np.int64)[:, 0] for s in paths.moving_slots]))
    q = jnp.asarray(q, R.dtype)
    d_sub = jax.jacfwd(lambda z: same_body_lengths(model, q.at[inputs].set(z), mine))(q[inputs])  # (n, k)
    return R.at[inputs[:, None], mine[None, :]].add(d_sub.T)


@warns_for_pose
def opensim_moment_arms_and_lengths(model: Model, qs):
    """OpenSim's moment arms ``(T, nq, nm)`` and the path lengths ``(T, nm)`` at ``T`` poses
    ``qs (T, nq)``, with one lane-folded wrap pass for all poses (no ``vmap`` over the wrap pass;
    per pose only the kinematics is differentiated).  Equals ``vmap`` of :func:`opensim_moment_arms`
    and :func:`mbjax.muscle_lengths`."""
    require_model(model, "opensim_moment_arms_and_lengths")
    qs = jnp.asarray(qs)
    if qs.ndim != 2 or qs.shape[1] != model.n_coordinates:
        raise ValueError(f"qs must have shape (T, nq) = (T, {model.n_coordinates}), got {qs.shape}")
    q = qs.T  # batch-last
    functions = get_path_functions(model)
    if functions is not None:  # a path function's moment arm is -∂L/∂q in OpenSim too (FunctionBasedPath)
        if all_paths_are_functions(model):
            return jax.vmap(lambda x: moment_arms(model, x))(qs), function_lengths(
                functions, q, jnp.zeros((get_paths(model).n_muscles, qs.shape[0]), qs.dtype)).T
        R, lengths = _opensim_moment_arms_and_lengths(model, qs)  # function rows overwritten below
        R = jax.vmap(lambda x, r: function_moment_arms(functions, x, r))(qs, R)
        lengths = function_lengths(functions, q, lengths.T).T
    else:
        R, lengths = _opensim_moment_arms_and_lengths(model, qs)
    return R, require_pose_and_path(lengths, model, qs, "opensim_moment_arms_and_lengths")


def _opensim_moment_arms_and_lengths(model: Model, qs):
    q = qs.T
    paths = get_paths(model)
    kin = forward_pass(model, q)
    geo = path_geometry(model, q, kin)
    lengths = jnp.sum(geo.length, axis=1)  # (nm, T)
    frozen = None
    if _smooth(paths):
        lengths = lengths.at[np.asarray(paths.wraps.muscles)].set(wrapped_lengths(model, q, kin, geo))
    elif paths.wraps is not None:
        wp = wrapped_paths(model, q, kin, geo)
        lengths = lengths.at[np.asarray(paths.wraps.muscles)].set(wp.length)
        rot, org = wrap_frames(model, kin)

        def front(a):  # the trailing batch axis to the front
            return jnp.moveaxis(a, -1, 0)

        wp_t = type(wp)(*(front(a) for a in wp))
        frozen = jax.vmap(lambda w, r, o: _freeze(model, w, r, o))(wp_t, front(rot), front(org))
    lengths = jnp.where(jnp.sum(geo.active, axis=1) >= 2, lengths, jnp.nan).T
    if frozen is None:
        return jax.vmap(lambda x: _straight_opensim_moment_arms(model, x))(qs), lengths

    def one(x, fz):
        return -jax.jacfwd(lambda y: _cross_body_lengths(model, y, fz)[0])(x).T  # checked by the caller

    return jax.vmap(one)(qs, frozen), lengths


@warns_for_pose
def opensim_moment_arms(model: Model, q) -> jnp.ndarray:
    """Moment arms ``(nq, nm)`` as OpenSim's ``Muscle.computeMomentArm`` reports them (see module doc),
    over wrap surfaces too."""
    require_model(model, "opensim_moment_arms")
    q = check_vector(model, q)
    functions = get_path_functions(model)
    if functions is not None:  # a path function's moment arm is -∂L/∂q in OpenSim too (FunctionBasedPath)
        if all_paths_are_functions(model):
            return moment_arms(model, q)
        R = function_moment_arms(functions, q, _opensim_moment_arms(model, q))
    else:
        R = _opensim_moment_arms(model, q)
    return require_pose_and_path(R, model, q, "opensim_moment_arms")


def _opensim_moment_arms(model: Model, q):
    paths = get_paths(model)
    if paths.wraps is None or _smooth(paths):
        return _straight_opensim_moment_arms(model, q)
    frozen = frozen_wrap_paths(model, q)
    return -jax.jacfwd(lambda x: _cross_body_lengths(model, x, frozen)[0])(q).T  # checked by the caller
