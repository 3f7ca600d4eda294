"""Dispatch from a wrap object's kind to its surface function (one file per surface).

Every surface takes ``(p1, p2, dimensions (3,), wrap_axis, wrap_sign, method, single_wrap)`` here
(the adapters below unpack the dimensions as each surface names them) and returns a
:class:`~mbjax.wrapping._result.WrapLine`.  :func:`evaluate_surface` runs each kind only on the
muscle rows that may meet it (static), vmapped over the candidate segments, and feeds segments
that are not candidates a far-away dummy pair, so no unused branch can put a NaN into values or
gradients.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

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


#: kinds whose ``WrapAction`` is known before the surface path: only the first ``MANDATORY``
#: candidate segment of a path can be chosen, so only that one runs the full (iterative) wrap
DEFERRED = {KINDS.index("WrapEllipsoid")}


def _code_only(k, p1, p2, dims):
    from .ellipsoid import ellipsoid_code

    assert k == KINDS.index("WrapEllipsoid")
    return ellipsoid_code(p1, p2, dims)


def evaluate_surface(rows_by_kind, kind, p1, p2, dims, axis, sign, method, single, cand, key) -> WrapLine:
    """Wrap the segments ``p1 -> p2`` ``(M, N, 3)`` (object frame) over each muscle's current object.

    ``rows_by_kind`` (static) maps a kind index to the muscle rows that may meet it; ``kind``,
    ``axis``, ``sign``, ``method``, ``single`` are ``(M,)``, ``dims (M, 3)``, ``cand (M, N)``,
    ``key (M, N)`` the path-order keys.  For a :data:`DEFERRED` kind every candidate gets its code,
    but only the first ``MANDATORY`` candidate in path order (the one
    :func:`~mbjax.wrapping.path.wrap_paths` must choose) gets tangent points and a length; the
    others report ``has_path`` False, which no caller reads for them.
    """
    M, N, _ = p1.shape
    dtype = p1.dtype
    code = jnp.zeros((M, N), jnp.int32)
    has_path = jnp.zeros((M, N), bool)
    r1 = jnp.zeros((M, N, 3), dtype)
    r2 = jnp.zeros((M, N, 3), dtype)
    length = jnp.zeros((M, N), dtype)
    for k, rows in rows_by_kind.items():
        rows = np.asarray(rows)
        use = cand[rows] & (kind[rows] == k)[:, None]  # (R, N)
        if k in DEFERRED:
            codes = jax.vmap(jax.vmap(lambda x, y, d_, _k=k: _code_only(_k, x, y, d_), in_axes=(0, 0, None)))(
                p1[rows], p2[rows], dims[rows])
            mand = use & (codes == MANDATORY)
            win = jnp.argmin(jnp.where(mand, key[rows], jnp.inf), axis=-1)  # (R,)
            any_mand = jnp.any(mand, -1)
            scale = 4.0 * jnp.max(jnp.abs(dims[rows]), -1) + 1.0
            w1 = jnp.take_along_axis(p1[rows], win[:, None, None], 1)[:, 0]
            w2 = jnp.take_along_axis(p2[rows], win[:, None, None], 1)[:, 0]
            w1 = jnp.where(any_mand[:, None], w1, jnp.stack([scale, scale, scale], -1))
            w2 = jnp.where(any_mand[:, None], w2, jnp.stack([2 * scale, scale, scale], -1))
            fn = jax.vmap(SURFACES[k], in_axes=(0, 0, 0, 0, 0, 0, None if isinstance(single, bool) else 0))
            out = fn(w1, w2, dims[rows], axis[rows], sign[rows], method[rows],
                     single if isinstance(single, bool) else single[rows])
            at = (jnp.arange(N)[None] == win[:, None]) & any_mand[:, None]  # (R, N)
            hp = at & out.has_path[:, None]
            code = code.at[rows].set(jnp.where(use, codes, code[rows]))
            has_path = has_path.at[rows].set(jnp.where(use, hp, has_path[rows]))
            r1 = r1.at[rows].set(jnp.where((use & at)[..., None], out.r1[:, None].astype(dtype), r1[rows]))
            r2 = r2.at[rows].set(jnp.where((use & at)[..., None], out.r2[:, None].astype(dtype), r2[rows]))
            length = length.at[rows].set(jnp.where(use & at, out.length[:, None].astype(dtype), length[rows]))
            continue
        scale = 4.0 * jnp.max(jnp.abs(dims[rows]), -1) + 1.0  # beyond any of these surfaces
        far1 = jnp.stack([scale, scale, scale], -1)[:, None]
        far2 = jnp.stack([2 * scale, scale, scale], -1)[:, None]
        q1 = jnp.where(use[..., None], p1[rows], far1)
        q2 = jnp.where(use[..., None], p2[rows], far2)
        if isinstance(single, bool):  # static: every path of this group has one wrap
            def fn(a, b, d, ax, sg, me, _single=single, _k=k):
                return jax.vmap(jax.vmap(lambda x, y, d_, a_, s_, m_: SURFACES[_k](x, y, d_, a_, s_, m_, _single),
                                         in_axes=(0, 0, None, None, None, None)))(a, b, d, ax, sg, me)
            out = fn(q1, q2, dims[rows], axis[rows], sign[rows], method[rows])
        else:
            fn = jax.vmap(jax.vmap(SURFACES[k], in_axes=(0, 0, None, None, None, None, None)))
            out = fn(q1, q2, dims[rows], axis[rows], sign[rows], method[rows], single[rows])
        u = use
        code = code.at[rows].set(jnp.where(u, out.code.astype(jnp.int32), code[rows]))
        has_path = has_path.at[rows].set(jnp.where(u, out.has_path, has_path[rows]))
        r1 = r1.at[rows].set(jnp.where(u[..., None], out.r1.astype(dtype), r1[rows]))
        r2 = r2.at[rows].set(jnp.where(u[..., None], out.r2.astype(dtype), r2[rows]))
        length = length.at[rows].set(jnp.where(u, out.length.astype(dtype), length[rows]))
    return WrapLine(code, has_path, r1, r2, length)
