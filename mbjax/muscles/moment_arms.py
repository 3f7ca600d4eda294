"""Generalized musculotendon lines of action and the moment-arm matrix (Ehsani Eq. 150-195).

With a unit tension in muscle ``k``, the path pulls each active point ``p`` with the force
``f_p = e_out(p) - e_in(p)`` (unit vectors of the segments leaving and entering ``p``).  Summed over
the points on body ``i`` and expressed in body ``i``'s frame this is the GMLAV E_ki (Definition 3:
``e`` towards the next body plus the reciprocal ``ē`` towards the previous one; segments inside a
body cancel), and its moment about the body origin is Ê_ki (Definition 4); bodies not in Γ_k get
zero (Definition 5, Eq. 153-154).  Resultant force and moment per body: Eq. 155-160
(:func:`body_wrenches`).

Virtual work (Eq. 161-192) gives ``δW = δqᵀ R F_mt`` with (Eq. 193, block form)

    R = Γ E + Jᵀ ϑ B Ê,

Γ = [γ_1 … γ_nb] ``(nq, 3nb)`` with γ_i of Eq. 176 (origin displacement of body ``i`` in its own
frame), E = [E_1; …] ``(3nb, nm)``, B = [β_1 … β_nb] ``(nb, 3nb)`` with β_ji of Eq. 179 (axis of
revolute joint ``j`` in body ``i``'s frame), ϑ the joint-type matrix (Eq. 178, 181), J = ∂f/∂q.
Eq. 195 is the same sum restricted to the bodies of Γ_k (column-sparse form).  Both use
Eq. 191 with β_i inside the sum (ERRATA).  Moving path points add the term
``Σ_p f_pᵀ ⁰R_b(p) ∂r_p/∂q`` (Holzbaur's zero-inertia "moving via point" bodies, folded in).

The fast path :func:`moment_arms` is Eq. 193 regrouped by the bodies that carry path points:
R = Σ_b J_bᵀ W_b with first-order world Jacobians J_b and point wrenches W_b, written so that
one kernel serves a single pose and a batch laid out batch-last (:func:`moment_arms_batched`,
chunked with ``lax.map``).  All routes agree with ``-jacfwd(muscle_lengths)`` (tests), and R
equals ``-∂L/∂q`` (OpenSim's sign: positive when the muscle shortens as q grows).
"""

from __future__ import annotations

import contextlib
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._batching import Small as _Small
from .._batching import batch_last, jvp_of_perturbed
from .._batching import materialize as _materialize
from .._kinematics import forward_pass, joint_values
from .._model import Model, require_model
from ..wrapping._jacobian_rule import raw_forward_mode
from ..wrapping.path import wrap_rows
from .geometry import _lanes_last, _wrap_lanes, muscle_lengths, path_geometry
from .geometry import wrapped_lengths as _wrapped_lengths
from .path_functions import all_paths_are_functions, function_moment_arms, get_path_functions, refuse_path_functions
from .. import _checks
from .paths import (PathState, empty_result, get_paths, reference_pose, reference_rules, require_pose_and_path,
                    unchecked_path_state)
from .pose_warning import warns_for_pose


def _body_onehot(paths, nb: int) -> np.ndarray:
    """Static ``(nm, P, nb + 1)`` indicator of the body of each point (ground last)."""
    body = np.asarray(paths.body, dtype=np.int64).reshape(paths.n_muscles, paths.n_points)
    valid = np.asarray(paths.valid, dtype=bool).reshape(body.shape)
    idx = np.where(body < 0, nb, body)
    out = np.zeros(body.shape + (nb + 1,))
    m, p = np.nonzero(valid)
    out[m, p, idx[m, p]] = 1.0
    return out


def _moving_term(st: PathState, paths, nb: int):
    """``Σ_p f_pᵀ ⁰R_b(p) ∂r_p/∂q`` for every muscle, ``(nq, nm)`` (zero without moving points)."""
    if not paths.moving_maps:
        return jnp.zeros((st.d_local.shape[-1], st.force.shape[0]), st.force.dtype)
    f_local = jnp.einsum("mpab,mpa->mpb", st.rot, st.force)
    return jnp.einsum("mpb,mpbq->qm", f_local, st.d_local)


def _moment_arm_kernel(model: Model, q) -> jnp.ndarray:
    """R ``(nq, nm, *batch)`` for ``q (nq, *batch)``: the fast path, one pose or a batch-last batch.

    Same mathematics as :func:`path_state` followed by Eq. 193, regrouped for throughput:

    * first-order joint values and world frames only (3x3 + 3 blocks, no Hessians, no 4x4s);
    * the next active point of every path point is found among the ``C`` following slots
      (:func:`~mbjax.muscles.geometry.lookahead`; ``C = 1`` without conditional points) by shifted masks instead of
      ``(nm, P, P)`` one-hot contractions;
    * only bodies carrying path points get a world Jacobian ``J_b = Σ_{j ⪯ b} ξ_j ∇f_jᵀ``
      (ξ_j the world twist of joint ``j``: ``[w_j; p_j × w_j]`` revolute, ``[0; w_j]``
      prismatic) and ``R[l, k] = Σ_b J_b[:, l] · W_bk`` with ``W_bk = Σ_{p on b} [x_p × f_p; f_p]``;
    * moving points add ``(f_p · ⁰R_b[:, c]) ∂r_pc/∂q`` per moving component.
    """
    paths = get_paths(model)
    top = model.topology
    nq = top.n_coordinates
    q = jnp.asarray(q)
    batch = q.shape[1:]
    functions = get_path_functions(model)
    if functions is not None and all_paths_are_functions(model):  # no geometry to evaluate
        zeros = jnp.zeros((nq, paths.n_muscles) + batch, jnp.result_type(q, model.axis))
        return function_moment_arms(functions, q, zeros)
    ops = _Small(len(batch), jnp.result_type(q, model.axis))
    dtype = ops.dtype
    kin = forward_pass(model, q)
    grad, rot, pos = kin.theta_grad, kin.rot, kin.pos
    geo = path_geometry(model, q, kin)
    world, force, slots = geo.world, geo.force, geo.slots
    nm = paths.n_muscles
    body = np.asarray(paths.body, dtype=np.int64)
    valid = np.asarray(paths.valid, dtype=bool)
    # world Jacobians of the bodies carrying points and the wrenches of the points on them
    rev = ops.mask(top.is_revolute()[:, None])
    w = ops.mv(rot, ops.c(model.axis))  # world joint axes
    xi_ang = jnp.where(rev, w, 0.0)
    xi_lin = jnp.where(rev, ops.cross(pos, w), w)
    carry = sorted({int(b) for b in body[valid] if b >= 0})
    anc = top.ancestor_mask()
    out = jnp.zeros((nq, nm) + batch, dtype)
    if carry:
        moment = ops.cross(world, force)
        jac, wrench = [], []
        for b in carry:
            js = np.nonzero(anc[b])[0]
            jac.append(jnp.concatenate([
                _Small.sum0(ops.expand(xi_ang[js], -1) * ops.expand(grad[js], -2)),
                _Small.sum0(ops.expand(xi_lin[js], -1) * ops.expand(grad[js], -2)),
            ]))  # (6, nq, *batch)
            on_b = body == b
            w_b = None
            for p in np.nonzero(on_b.any(0))[0]:
                pair = jnp.concatenate([moment[:, p], force[:, p]], 1)  # (nm, 6, *batch)
                t = jnp.where(ops.mask(on_b[:, p, None]), pair, 0.0)
                w_b = t if w_b is None else w_b + t
            wrench.append(w_b)  # (nm, 6, *batch)
        # each entry of R reads all of them: keep them in memory
        jac = _materialize(jnp.stack(jac))  # (nc, 6, nq, *batch)
        wrench = _materialize(jnp.stack(wrench))  # (nc, nm, 6, *batch)
        for i in range(len(carry)):
            for a in range(6):
                out = out + jac[i, a][:, None] * wrench[i, :, a][None]
    if len(slots):
        col = geo.rot_of_points[slots[:, 0], slots[:, 1], :, slots[:, 2]]  # ⁰R_b[:, c], (n, 3, *batch)
        scale = ops.dot(col, force[slots[:, 0], slots[:, 1]])  # (n, *batch)
        term = ops.expand(scale, -1) * geo.moving_grad  # (n, nq, *batch)
        cols = []
        for m in range(nm):
            mine = np.nonzero(slots[:, 0] == m)[0]
            cols.append(_Small.sum0(term[mine]) if len(mine) else jnp.zeros((nq,) + batch, dtype))
        out = out + jnp.stack(cols, axis=1)
    if paths.wraps is not None:
        out = out.at[:, np.asarray(paths.wraps.muscles)].set(_wrapped_moment_arms(model, q.astype(dtype)))
    # fewer than 2 active points, or all points at one place (length 0): no path, NaN (as muscle_lengths)
    spans = jnp.sum(geo.length, axis=1) > 100 * jnp.finfo(dtype).eps
    out = jnp.where(((jnp.sum(geo.active, axis=1) >= 2) & spans)[None], out, jnp.nan)
    return out if functions is None else function_moment_arms(functions, q, out)


def _wrapped_moment_arms(model: Model, q) -> jnp.ndarray:
    """-∂L/∂q ``(nq, M, *batch)`` of the wrapped muscles (:func:`_wrap_pass_moment_arms`).

    Evaluated, it is the forward mode through the surfaces' loops as they run (one JVP per
    coordinate, the cheapest).  Differentiated (``jax.grad`` of moment arms, or of muscle forces
    through the fibre speed -Rᵀq̇, in the pose or in model parameters), a JVP through loops is not
    something reverse mode can transpose, so the derivative is that of the same pass through the
    surfaces' JVP rules (:mod:`mbjax.wrapping._jacobian_rule`: their Jacobian columns, whose own
    rule takes forward-over-forward columns): second order, forward and reverse mode.  The values
    computed so are the evaluated pass's to round-off (the same forward pass along each
    coordinate, fused differently)."""
    dyn, static = eqx.partition(model, eqx.is_array)

    def through(raw):
        return lambda d, x: _wrap_pass_moment_arms(eqx.combine(d, static), x, raw)

    @jax.custom_jvp
    def arms(d, x):
        return through(True)(d, x)

    @functools.partial(arms.defjvp, symbolic_zeros=True)
    def _rule(primals, tangents):
        out, t_out = jvp_of_perturbed(through(False), primals, tangents)
        return out, jnp.zeros_like(out) if t_out is None else t_out

    return arms(dyn, q)


def _wrap_pass_moment_arms(model: Model, q, raw: bool) -> jnp.ndarray:
    """-∂L/∂q ``(nq, M, *batch)`` of the wrapped muscles: forward-mode through the wrap pass (OpenSim's,
    or the smooth one, whose closed forms also run in reverse mode); ``raw``: through the surfaces'
    loops themselves (:func:`~mbjax.wrapping._jacobian_rule.raw_forward_mode`), else through their
    JVP rules (reverse-differentiable, the same values to round-off).

    The tangent points of OpenSim's surfaces are not exact geodesic tangencies (its cylinder and
    ellipsoid use heuristics, its iterations stop on loose tolerances), so the envelope theorem does
    not apply: the moment arm is the derivative of the whole pass, iterations included as they stop.

    OpenSim's pass runs one JVP whose lanes are (muscle, coordinate it spans, pose): each wrapped
    row is repeated once per coordinate that moves its points or wrap objects
    (:func:`wrapped_coordinate_spans`, static), with that coordinate's tangent, so no lane carries
    a derivative that is zero by structure, and the pass is transformed once (a ``vmap`` over
    coordinates of a JVP would batch every loop of the pass a second time: twice the program).
    """
    nq = q.shape[0]
    batch = q.shape[1:]
    wraps = get_paths(model).wraps

    if wraps.wrapping != "opensim":
        def wrapped_lengths(x):
            kin = forward_pass(model, x)
            return _wrapped_lengths(model, x, kin, path_geometry(model, x, kin))

        basis = jnp.broadcast_to(jnp.eye(nq, dtype=q.dtype).reshape((nq, nq) + (1,) * len(batch)), (nq, nq) + batch)
        with _raw_when(raw):  # one JVP per coordinate (through the surfaces' loops when raw)
            return -jax.vmap(lambda t: jax.jvp(wrapped_lengths, (q,), (t,))[1])(basis)

    spans = wrapped_coordinate_spans(model)
    n_rows = len(wraps.muscles)
    out = jnp.zeros((nq, n_rows) + batch, q.dtype)
    directions = sorted(set().union(*spans))
    if not directions:
        return out
    row_of, dir_of, coord_of = [], [], []
    for r, span in enumerate(spans):
        for c in span:
            row_of.append(r)
            dir_of.append(directions.index(c))
            coord_of.append(c)
    row_of, dir_of, coord_of = (np.asarray(a, np.int64) for a in (row_of, dir_of, coord_of))

    def lane_inputs(x):
        kin = forward_pass(model, x)
        world, active, rot, org = _wrap_lanes(wraps, kin, path_geometry(model, x, kin), model, len(batch))
        return (world, rot, org), active

    basis = np.zeros((len(directions), nq) + (1,) * len(batch))
    basis[np.arange(len(directions)), directions] = 1.0
    basis = jnp.broadcast_to(jnp.asarray(basis, q.dtype), (len(directions), nq) + batch)
    (world, rot, org), d_inputs, active = jax.vmap(
        lambda t: jax.jvp(lane_inputs, (q,), (t,), has_aux=True), out_axes=(None, 0, None))(basis)
    d_world, d_rot, d_org = d_inputs  # (J, B, M, P, 3), (J, B, O, 3, 3), (J, B, O, 3)
    n_dir = len(directions)
    B = world.shape[0]

    def sets(a):  # (B, O, ...) primal frames: one copy per direction
        return jnp.broadcast_to(a[:, None], (B, n_dir) + a.shape[1:]).reshape((B, -1) + a.shape[2:])

    def d_sets(a):  # (J, B, O, ...) tangents: set j holds direction j
        return jnp.moveaxis(a, 0, 1).reshape((B, -1) + a.shape[3:])

    primals = (world[:, row_of], sets(rot), sets(org))
    tangents = (jnp.moveaxis(d_world[dir_of, :, row_of], 0, 1), d_sets(d_rot), d_sets(d_org))
    lanes_active = active[:, row_of]
    with _raw_when(raw):  # through the surfaces' loops as they run when raw, else their rules
        _, d_length = jax.jvp(lambda w, r, o: wrap_rows(wraps, row_of, w, lanes_active, r, o, dir_of).length,
                              primals, tangents)  # (B, R')
    d_length = _lanes_last(d_length, batch)  # (R', *batch)
    return out.at[coord_of, row_of].set(-d_length)


def _raw_when(raw: bool):
    """:func:`~mbjax.wrapping._jacobian_rule.raw_forward_mode` when ``raw``, else nothing."""
    return raw_forward_mode() if raw else contextlib.nullcontext()


def wrapped_coordinate_spans(model: Model) -> tuple[tuple[int, ...], ...]:
    """Static: per wrapped muscle (rows of ``wraps.muscles``), the coordinates its wrapped length can
    depend on smoothly.

    Those of the joint maps between the deepest body ``c`` above all of its points and wrap objects
    and those bodies, and of its moving points' maps.  A coordinate that only moves ``c`` and what
    is above it moves the whole path rigidly (a pelvis's six coordinates for a leg muscle), and a
    conditional point's coordinate switches the point on or off (a step with no derivative).
    Outside its span a muscle's moment arm is zero by structure.
    """
    paths = get_paths(model)
    wraps = paths.wraps
    top = model.topology
    nb = top.n_bodies
    own = [set() for _ in range(nb)]
    for bodies, inputs in zip(top.map_bodies, top.map_inputs):
        for b, ins in zip(bodies, inputs):
            own[int(b)].update(int(i) for i in ins)
    anc = top.ancestor_mask().astype(bool)  # anc[b, j]: j is b or above it
    moving = {}
    for slots, inputs in zip(paths.moving_slots, paths.moving_inputs):
        for (m, _, _), ins in zip(slots, inputs):
            moving.setdefault(int(m), set()).update(int(i) for i in ins)
    spans = []
    for row, m in enumerate(wraps.muscles):
        bodies = {int(b) for b, v in zip(paths.body[m], paths.valid[m]) if v}
        bodies |= {int(wraps.body[o]) for o, used in zip(wraps.obj[row], wraps.used[row]) if used}
        span = set(moving.get(int(m), ()))
        if bodies and min(bodies) >= 0:  # all on moving bodies: the part above their common ancestor is rigid
            common = np.logical_and.reduce([anc[b] for b in bodies])
            rigid = anc[int(np.argmax(np.where(common, anc.sum(1), -1)))] if common.any() else np.zeros(nb, bool)
        else:
            rigid = np.zeros(nb, bool)
        for b in bodies:
            if b >= 0:
                for j in np.nonzero(anc[b] & ~rigid)[0]:
                    span |= own[j]
        spans.append(tuple(sorted(span)))
    return tuple(spans)


def moment_arms(model: Model, q) -> jnp.ndarray:
    """Moment-arm matrix R ``(nq, nm)`` = -∂L/∂q at one pose; ``jax.vmap`` it over poses.

    With W_i = Σ_{p on body i} [x_p × f_p; f_p] the world wrench (about the origin) a unit tension
    applies to body ``i`` and J_i its world Jacobian, R = Σ_i J_iᵀ W_i plus the moving-point term:
    Eq. 193 regrouped by the bodies that carry path points, read from the one kinematics pass
    (first order only, no 4x4 products, no ``(nm, P, P)`` one-hots; see :func:`_moment_arm_kernel`).
    ``jax.vmap(moment_arms, in_axes=(None, 0))`` runs the kernel batch-last (cache-sized chunks on
    CPU, one call on GPU); its derivatives are those of the same kernel.
    """
    ctx = _checks.coordinates_context(model)
    q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)  # values: in the fused check below
    if not get_paths(model).n_muscles:  # no muscles: (nq, 0)
        return empty_result(model, _checks.finite(q, "q", ctx), (model.n_coordinates, 0))
    return require_pose_and_path(batch_last(_moment_arm_kernel, _moment_arm_shape)(model, q), model, q, "moment_arms")


def _moment_arm_shape(model: Model, q) -> jax.ShapeDtypeStruct:
    """The output of :func:`_moment_arm_kernel` at one pose, without computing it."""
    return jax.ShapeDtypeStruct((model.n_coordinates, get_paths(model).n_muscles), jnp.result_type(q, model.axis))


@warns_for_pose
def moment_arms_batched(model: Model, q_batch, batch_size: int | None = None) -> jnp.ndarray:
    """``jax.vmap(moment_arms)`` over ``q_batch (N, nq)`` in ``lax.map`` chunks of ``batch_size`` poses.

    A memory guard for huge sweeps, nothing more: ``jax.vmap(moment_arms)`` is the fast path and
    already runs in cache-sized chunks on CPU.  ``batch_size=None`` (default) is one vmap; the last
    chunk is padded with copies of the last pose so one program is compiled.  An empty batch ``(0, nq)``
    gives an empty ``(0, nq, nm)``.
    """
    require_model(model, "moment_arms_batched")
    q_batch = jnp.asarray(q_batch)
    if q_batch.ndim != 2 or q_batch.shape[1] != model.n_coordinates:
        raise ValueError(f"q_batch must have shape (N, {model.n_coordinates}) (N, nq), got {q_batch.shape}")
    if batch_size is not None:
        batch_size = _checks.count(batch_size, "moment_arms_batched", "batch_size", 1, " or None")
    one = jax.vmap(moment_arms, in_axes=(None, 0))
    n = q_batch.shape[0]
    if batch_size is None or n <= batch_size:
        return one(model, q_batch)
    n_chunks = -(-n // batch_size)
    pad = n_chunks * batch_size - n
    if pad:
        q_batch = jnp.concatenate([q_batch, jnp.broadcast_to(q_batch[-1:], (pad, q_batch.shape[1]))])
    r = jax.lax.map(lambda c: one(model, c), q_batch.reshape(n_chunks, batch_size, -1))
    return r.reshape((n_chunks * batch_size,) + r.shape[2:])[:n]


def moment_arms_autodiff(model: Model, q) -> jnp.ndarray:
    """Reference twin: ``-jacfwd(muscle_lengths)(q)ᵀ``, ``(nq, nm)``."""
    return -jax.jacfwd(lambda x: muscle_lengths(model, x))(jnp.asarray(q)).T


def _reference_inputs(model: Model, q, where: str):
    """``q`` shape-checked for the paper-shaped oracles, which read straight-line path points only:
    a model with path functions or wrap objects is refused by name."""
    q = reference_pose(model, q, where)
    refuse_path_functions(model, where)
    paths = get_paths(model)
    if paths.wraps is not None:
        wrapped = [paths.names[m] for m in paths.wraps.muscles]
        raise NotImplementedError(
            f"{where} reads straight-line paths, and the muscles {wrapped} wrap over objects; use "
            "mbjax.moment_arms / mbjax.muscle_lengths, or the model loaded with ignore_wrapping=True")
    return q


def gmlav(model: Model, q, st: PathState | None = None):
    """GMLAV E ``(nb, 3, nm)`` and its moment Ê ``(nb, 3, nm)`` in each body's frame (Def. 3-5).

    Row block ``i`` is zero for muscles outside Λ_i (Eq. 153-154).  ``st``: the
    :func:`~mbjax.muscles.path_state` of this model at ``q`` (computed when None).
    """
    q = _reference_inputs(model, q, "gmlav")
    if st is None:
        st = unchecked_path_state(model, q)
    elif not isinstance(st, PathState):
        raise TypeError(f"gmlav: st must be the PathState of mbjax.muscles.path_state(model, q) or None, "
                        f"got {type(st).__name__}")
    else:
        paths = get_paths(model)
        expect = (paths.n_muscles, paths.n_points, 3)
        if tuple(st.world.shape) != expect:
            raise ValueError(f"gmlav: st is the path state of another model: its points have shape "
                             f"{tuple(st.world.shape)}, this model's (nm, P, 3) = {expect}")
    out = _gmlav(model, st)
    return _checks.all_of(out, reference_rules(model, q, st.active, "gmlav"))


def _gmlav(model: Model, st: PathState):
    paths = get_paths(model)
    nb = model.n_bodies
    f_local = jnp.einsum("mpba,mpb->mpa", st.rot, st.force)  # R_bᵀ f_p
    m_local = jnp.cross(st.local, f_local)
    onehot = jnp.asarray(_body_onehot(paths, nb)[..., :nb], st.world.dtype)
    e = jnp.einsum("mpb,mpa->bam", onehot, f_local)
    e_hat = jnp.einsum("mpb,mpa->bam", onehot, m_local)
    return e, e_hat


def body_wrenches(model: Model, q, forces):
    """Resultant musculotendon force and moment at each body origin, body frame (Eq. 155-160).

    ``forces`` ``(nm,)`` are tensions F_mt; returns ``F_O (nb, 3)`` and ``M_O (nb, 3)``.
    """
    q = _reference_inputs(model, q, "body_wrenches")
    names = get_paths(model).names
    ctx = _checks.names_context("muscles", names) + " (body_wrenches)"
    forces = _checks.as_array(forces, "forces", (len(names),), ("nm",), ctx)
    st = unchecked_path_state(model, q)
    e, e_hat = _gmlav(model, st)
    forces = forces.astype(e.dtype)
    out = jnp.einsum("bam,m->ba", e, forces), jnp.einsum("bam,m->ba", e_hat, forces)
    return _checks.all_of(out, [_checks.not_finite(forces, "forces", ctx),
                                *reference_rules(model, q, st.active, "body_wrenches")])


def gamma_beta(model: Model, q):
    """γ_i (Eq. 176) ``(nb, nq, 3)``, β ``(nb_i, nb_j, 3)`` (β_ji of Eq. 179), ϑ (Eq. 178) and J.

    γ_i = Σ_{j ∈ Anc(i)∪{i}} c_ji ⊗ ∇f_j with c_ji the displacement of body ``i``'s origin per unit
    f_j in body ``i``'s frame: ``ω̂_j × (p_i - p_j)`` (revolute) or the axis (prismatic).
    """
    q = reference_pose(model, q, "gamma_beta")
    out = _gamma_beta(model, q)
    return _checks.all_of(out, [_checks.not_finite(q, "gamma_beta: q", _checks.coordinates_context(model))])


def _gamma_beta(model: Model, q):
    from .._kinematics import body_poses

    top = model.topology
    with _checks.checks(False):  # the caller's one fused check covers q
        jv = joint_values(model, q)
        poses = body_poses(model, q)
    rot, pos = poses[:, :3, :3], poses[:, :3, 3]
    axis_w = jnp.einsum("jab,jb->ja", rot, model.axis.astype(rot.dtype))  # (nb, 3)
    anc = jnp.asarray(top.ancestor_mask(), rot.dtype)  # [i, j]
    rev = jnp.asarray(top.is_revolute(), rot.dtype)
    lever = pos[:, None, :] - pos[None, :, :]  # [i, j] p_i - p_j
    disp_w = jnp.where(
        rev[None, :, None] > 0, jnp.cross(axis_w[None, :, :], lever), axis_w[None, :, :]
    )  # [i, j, 3]
    disp_i = jnp.einsum("iba,ijb->ija", rot, disp_w) * anc[..., None]
    gamma = jnp.einsum("ija,jl->ila", disp_i, jv.gradient)
    beta = jnp.einsum("iba,jb->ija", rot, axis_w) * anc[..., None]
    return gamma, beta, rev, jv.gradient


def moment_arms_block(model: Model, q) -> jnp.ndarray:
    """R by the block form R = Γ E + Jᵀ ϑ B Ê (Eq. 193) plus the moving-point term."""
    q = _reference_inputs(model, q, "moment_arms_block")
    paths = get_paths(model)
    st = unchecked_path_state(model, q)
    e, e_hat = _gmlav(model, st)
    gamma, beta, rev, jac = _gamma_beta(model, q)
    nb, nq = jac.shape
    nm = e.shape[-1]
    big_gamma = jnp.transpose(gamma, (1, 0, 2)).reshape(nq, 3 * nb)  # [γ_1 … γ_nb]
    big_e = e.reshape(3 * nb, nm)
    big_beta = jnp.transpose(beta, (1, 0, 2)).reshape(nb, 3 * nb)  # [β_1 … β_nb], rows j
    big_e_hat = e_hat.reshape(3 * nb, nm)
    r = big_gamma @ big_e + jac.T @ (rev[:, None] * (big_beta @ big_e_hat))
    r = r + _moving_term(st, paths, nb)
    return _checks.all_of(r, reference_rules(model, q, st.active, "moment_arms_block"))


def moment_arms_sparse(model: Model, q) -> jnp.ndarray:
    """R column by column from the bodies of Γ_k only (Eq. 195), vectorised over muscles."""
    q = _reference_inputs(model, q, "moment_arms_sparse")
    paths = get_paths(model)
    st = unchecked_path_state(model, q)
    e, e_hat = _gmlav(model, st)
    gamma, beta, rev, jac = _gamma_beta(model, q)
    mem = np.asarray(paths.membership(), dtype=np.int32).reshape(paths.n_muscles, -1) if paths.n_muscles \
        else np.zeros((0, 1), np.int32)  # (nm, G), -1 padded
    mask = jnp.asarray(mem >= 0, e.dtype)
    safe = np.maximum(mem, 0)
    cols = np.arange(mem.shape[0])[:, None]
    e_k = e[safe, :, cols] * mask[..., None]  # (nm, G, 3)
    e_hat_k = e_hat[safe, :, cols] * mask[..., None]
    lin = jnp.einsum("mgla,mga->lm", gamma[safe], e_k)
    ang = jnp.einsum("mgja,mga->jm", beta[safe], e_hat_k)
    r = lin + jac.T @ (rev[:, None] * ang)
    r = r + _moving_term(st, paths, model.n_bodies)
    return _checks.all_of(r, reference_rules(model, q, st.active, "moment_arms_sparse"))


from .._eager import compiled_when_eager as _naming  # noqa: E402

moment_arms = _naming(moment_arms)
