"""Dispatch from a wrap object's kind to its surface function (one file per surface).

Every surface takes ``(p1, p2, dimensions (3,), wrap_axis, wrap_sign, method, single_wrap)`` here
(the adapters below unpack the dimensions as each surface names them) and returns a
:class:`~mbjax.wrapping._result.WrapLine`.  :func:`evaluate_surface` runs each kind only on the
lanes (muscle × pose) that have a candidate segment of that kind in the current wrap step, gathered
into chunks of static size so that each surface kernel is traced once per model, vmapped over
the candidate segments, and feeds segments that are not candidates a far-away dummy pair, so no
unused branch can put a NaN into values or gradients.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ._jacobian_rule import with_jacobian_rule
from ._math import seeded
from ._result import MANDATORY, WrapLine
from .objects import KINDS


def _cylinder(p1, p2, dims, axis, sign, method, single):
    from .cylinder import wrap_cylinder

    return wrap_cylinder(p1, p2, dims[0], dims[1], axis, sign, single)


def _sphere(p1, p2, dims, axis, sign, method, single):
    from .sphere import wrap_sphere

    return wrap_sphere(p1, p2, dims[0], axis, sign, single)


def _ellipsoid(p1, p2, dims, axis, sign, method, single):
    from .ellipsoid import wrap_ellipsoid

    return wrap_ellipsoid(p1, p2, dims, axis, sign, method, single)


def _torus(p1, p2, dims, axis, sign, method, single):
    from .torus import wrap_torus

    return wrap_torus(p1, p2, dims[0], dims[1], axis, sign, single)


SURFACES = {
    KINDS.index("WrapCylinder"): _cylinder,
    KINDS.index("WrapSphere"): _sphere,
    KINDS.index("WrapEllipsoid"): _ellipsoid,
    KINDS.index("WrapTorus"): _torus,
}


#: kinds that reverse mode differentiates as they are (closed form, no loop); the others differentiate
#: their iterations in forward mode and get a transposable JVP rule
NATIVE_REVERSE = {KINDS.index("WrapSphere")}

#: kinds whose ``WrapAction`` is known before the surface path: only the first ``MANDATORY``
#: candidate segment of a path can be chosen, so only that one runs the full (iterative) wrap
DEFERRED = {KINDS.index("WrapEllipsoid")}


def _code_only(k, p1, p2, dims):
    from .ellipsoid import ellipsoid_code

    assert k == KINDS.index("WrapEllipsoid")
    return ellipsoid_code(p1, p2, dims)


#: lanes per chunk at least (smaller chunks cost more loop overhead than they save)
CHUNK_MIN_LANES = 16
#: (lane, segment) pairs per chunk at least, for the kinds evaluated segment by segment
CHUNK_MIN_PAIRS = 64
#: chunks per kind at most (larger batches get larger chunks)
MAX_CHUNKS = 64


def surface_plan(rows_by_kind, lanes_per_row: int, segments: int = 1) -> dict[int, tuple[int, int]]:
    """Static: per kind, ``(n_chunks, chunk)`` for :func:`evaluate_surface`.

    ``rows_by_kind[k]`` are the muscle rows that may meet kind ``k`` and each row holds
    ``lanes_per_row`` lanes (poses), so at most ``n = len(rows) * lanes_per_row`` lanes need kind
    ``k`` in one wrap step (a lane wraps over one object per step).  A :data:`DEFERRED` kind runs
    once per lane, in chunks of lanes; the others run on each candidate segment, in chunks of
    (lane, segment) pairs out of ``n * segments``.  Each chunk is skipped (``lax.cond``) when no
    work is left, and chunks are small (``CHUNK_MIN_*``, or a ``MAX_CHUNKS``-th of the most work
    for large batches) because in later steps and passes few lanes need a surface and a chunk
    costs its full size (on the MoBL arm candidate segments are fewer than half of a lane's slots;
    ``benchmarks/RESULTS.md``).
    """
    out = {}
    for k, rows in rows_by_kind.items():
        n = len(rows) * lanes_per_row * (1 if k in DEFERRED else segments)
        least = CHUNK_MIN_LANES if k in DEFERRED else CHUNK_MIN_PAIRS
        chunk = min(n, max(least, -(-n // MAX_CHUNKS)))
        out[k] = (-(-n // chunk), chunk)
    return out


def _chunks(n_chunks, chunk, need, fn, like):
    """``fn(idx, valid)`` on the items where ``need (M,)``, ``chunk`` at a time; each item's result.

    ``idx (chunk,)`` are the chunk's items in order (``M`` past the last one), ``valid`` marks the
    real ones; ``fn`` returns a pytree of ``(chunk, ...)`` arrays shaped like ``like``'s leaves
    (one item).  Each chunk writes its slice of a compacted buffer in place, and one gather at the
    end brings item ``m``'s result back (rank of ``m`` among the needed items): the cost of a chunk
    is its own size, not the number of items (a select over all items per chunk made the pass
    quadratic in the batch).  Items not needed get an arbitrary value (the caller selects).  Every
    kernel ``fn`` calls is traced once; a chunk with no item left is skipped by a real branch
    (``lax.cond``).
    """
    M = need.shape[0]
    rank = jnp.cumsum(need.astype(jnp.int32)) - 1
    total = jnp.sum(need.astype(jnp.int32))
    items = jnp.arange(M, dtype=jnp.int32)
    size = n_chunks * chunk
    # the compacted order: slot r holds the item of rank r (M = none)
    order = jnp.full((size,), M, jnp.int32).at[jnp.where(need, rank, size)].set(items, mode="drop")
    buf = jax.tree.map(lambda x: jnp.zeros((size,) + x.shape, x.dtype), like)
    buf = jax.tree.map(lambda b, x: seeded(b, x), buf, like)

    def one(j, buf):
        def run(buf):
            idx = jax.lax.dynamic_slice_in_dim(order, j * chunk, chunk)
            out = fn(idx, idx < M)
            return jax.tree.map(lambda b, o: jax.lax.dynamic_update_slice_in_dim(b, o.astype(b.dtype), j * chunk, 0),
                                buf, out)

        return jax.lax.cond(j * chunk < total, run, lambda b: b, buf)

    buf = one(0, buf) if n_chunks == 1 else jax.lax.fori_loop(0, n_chunks, one, buf)
    at = jnp.clip(rank, 0, size - 1)
    return jax.tree.map(lambda b: b[at], buf)


def evaluate_surface(plan, kind, p1, p2, dims, axis, sign, method, single, cand, key) -> WrapLine:
    """Wrap the segments ``p1 -> p2`` ``(M, N, 3)`` (object frame) over each muscle's current object.

    ``plan`` (static, :func:`surface_plan`) gives each kind present its chunking; ``kind``,
    ``axis``, ``sign``, ``method``, ``single`` are ``(M,)`` (``single`` may be a static bool),
    ``dims (M, 3)``, ``cand (M, N)``, ``key (M, N)`` the path-order keys.  Each kind runs only on
    its candidate segments, gathered into chunks of (lane, segment) pairs (one traced kernel per
    kind); the padding of a chunk gets a far-away dummy pair, so no unused branch can put a NaN
    into values or gradients.  For a
    :data:`DEFERRED` kind every candidate gets its code, but only the first ``MANDATORY``
    candidate in path order (the one :func:`~mbjax.wrapping.path.wrap_paths` must choose) gets
    tangent points and a length; the others report ``has_path`` False, which no caller reads for them.
    """
    M, N, _ = p1.shape
    dtype = p1.dtype
    code = jnp.zeros((M, N), jnp.int32)
    has_path = jnp.zeros((M, N), bool)
    r1 = seeded(jnp.zeros((M, N, 3), dtype), p1)  # see seeded: one trace of each chunk loop
    r2 = seeded(jnp.zeros((M, N, 3), dtype), p1)
    length = seeded(jnp.zeros((M, N), dtype), p1)
    static_single = isinstance(single, bool)
    scale = 4.0 * jnp.max(jnp.abs(dims), -1) + 1.0  # beyond any of these surfaces
    far1 = jnp.stack([scale, scale, scale], -1)
    far2 = jnp.stack([2 * scale, scale, scale], -1)

    def surface(k):
        if static_single:
            return lambda x, y, d_, a_, s_, m_, _g=None: SURFACES[k](x, y, d_, a_, s_, m_, single)
        return SURFACES[k]

    def lanes(k, in_axes):
        """The surface vmapped over lanes; an iterative one (while loops) gets a JVP rule that reverse
        mode can transpose (:mod:`~mbjax.wrapping._jacobian_rule`)."""
        fn = jax.vmap(surface(k), in_axes=in_axes)
        return fn if k in NATIVE_REVERSE else with_jacobian_rule(fn)

    def gather(idx, *xs):
        safe = jnp.minimum(idx, M - 1)
        return tuple(x[safe] for x in xs)

    sg_in = () if static_single else (single,)
    one_lane = (has_path[0, 0], r1[0, 0], r2[0, 0], length[0, 0])  # one item's outputs (seeded like p1)
    for k, (n_chunks, chunk) in plan.items():
        use = cand & (kind == k)[:, None]  # (M, N)
        if k in DEFERRED:
            codes = jax.vmap(jax.vmap(lambda x, y, d_, _k=k: _code_only(_k, x, y, d_), in_axes=(0, 0, None)))(
                p1, p2, dims)
            mand = use & (codes == MANDATORY)
            win = jnp.argmin(jnp.where(mand, key, jnp.inf), axis=-1)  # (M,)
            any_mand = jnp.any(mand, -1)
            w1 = jnp.take_along_axis(p1, win[:, None, None], 1)[:, 0]
            w2 = jnp.take_along_axis(p2, win[:, None, None], 1)[:, 0]
            code = jnp.where(use, codes, code)

            def run(idx, valid, _k=k, w1=w1, w2=w2):
                a, b, d_, ax, sg, me, f1, f2, *si = gather(idx, w1, w2, dims, axis, sign, method, far1, far2, *sg_in)
                a = jnp.where(valid[:, None], a, f1)
                b = jnp.where(valid[:, None], b, f2)
                fn = lanes(_k, (0, 0, 0, 0, 0, 0) + ((0,) if si else ()))
                out = fn(a, b, d_, ax, sg, me, *si)
                return out.has_path, out.r1, out.r2, out.length

            hp_, r1_, r2_, ln_ = _chunks(n_chunks, chunk, any_mand, run, one_lane)
            u = any_mand[:, None] & use & (jnp.arange(N)[None] == win[:, None])  # (M, N)
            has_path = jnp.where(u, hp_[:, None], has_path)
            r1 = jnp.where(u[..., None], r1_[:, None], r1)
            r2 = jnp.where(u[..., None], r2_[:, None], r2)
            length = jnp.where(u, ln_[:, None], length)
            continue

        def run(idx, valid, _k=k):
            # a chunk of candidate (lane, segment) pairs, flattened as lane * N + segment
            lane = jnp.minimum(idx // N, M - 1)
            safe = jnp.minimum(idx, M * N - 1)
            a = jnp.where(valid[:, None], p1.reshape(-1, 3)[safe], far1[lane])
            b = jnp.where(valid[:, None], p2.reshape(-1, 3)[safe], far2[lane])
            si = tuple(x[lane] for x in sg_in)
            out = lanes(_k, 0)(a, b, dims[lane], axis[lane], sign[lane], method[lane], *si)
            return out.code.astype(jnp.int32), out.has_path, out.r1, out.r2, out.length

        got = _chunks(n_chunks, chunk, use.reshape(-1), run, (code[0, 0],) + one_lane)
        cd_, hp_, r1_, r2_, ln_ = (x.reshape((M, N) + x.shape[1:]) for x in got)
        code = jnp.where(use, cd_, code)
        has_path = jnp.where(use, hp_, has_path)
        r1 = jnp.where(use[..., None], r1_, r1)
        r2 = jnp.where(use[..., None], r2_, r2)
        length = jnp.where(use, ln_, length)
    return WrapLine(code, has_path, r1, r2, length)
