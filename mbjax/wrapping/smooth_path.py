"""Smooth wrapping of whole paths: a taut cable over cylinders and spheres (the model-level option).

An option beside the OpenSim-exact default (:mod:`mbjax.wrapping.path`), for
gradient-based optimal control: no iterations, no segment choice, no 0.5 mm rule, no tangent-point
slides, so lengths and moment arms are differentiable in forward and reverse mode (``jax.grad``,
``jax.jacrev``, ``jax.jacfwd``, ``vmap``, ``jit``), and the length is C¹ across contact.  Turn it on
with ``mbjax.io.load_osim(path, wrapping="smooth")`` or :func:`smooth_wrapping` (a model copy; the
flag is static, so the default path is untouched).  References for the idea: opensim-core's newer
geodesic wrapping and Simbody's ``CableSpan`` (which solve all obstacles of a span jointly; here
they are applied one after the other, in closed form).

Semantics.  A path is its active points ``x_0 … x_n`` (the via points are fixed pulleys); the
cable between two consecutive active points is a chain of straight *pieces* and surface arcs,
initially one piece ``(x_p, x_{p+1})``.  The path wraps of the muscle act in file order; wrap ``w``
over surface ``S_w`` (frame ``R_w, o_w``: the wrap object's body frame moved by its
``translation`` and ``xyz_body_rotation``) acts on every current straight piece ``(A, B)`` of the
segments within its ``range`` (segment ``p → p'`` with ``start ≤ p`` and ``p' ≤ end``, 1-based
file indices, ``-1`` = ends, as OpenSim), in the surface frame ``A' = R_wᵀ(A − o_w)``:

* if the straight piece clears ``S_w`` it stays;
* otherwise it is replaced by the shortest path around ``S_w`` (:mod:`mbjax.wrapping.smooth`):
  ``(A, T1)``, the geodesic arc ``T1 → T2`` of length ``s_w``, ``(T2, B)``; the tangent points are
  the ends of the straight pieces that the following wraps see;

and the length is ``L = Σ_pieces |B − A| + Σ_arcs s``.  Cylinders are infinite (OpenSim's
``length`` only switches wrapping off when both of its tangent points lie beyond the ends: a jump
left out here) and take their side from the quadrant (``cylinder_geodesic``'s ``allowed``: the
path passes the quadrant's side; ``all``: the shorter way); spheres take the shorter great circle
(a sphere's quadrant is not applied: :func:`smooth_wrapping` warns by name); ellipsoids take the
geodesic homotopic to the affine image of the sphere's shorter great circle (their quadrant and
``method`` are not applied either, with the same warning).  Tori are refused by name.  Every wrap acts on every obstructed piece
of its range, so there is no discrete choice of segment: with ``W`` wraps a segment holds at most
``2^W`` pieces, a static count (a piece that did not wrap leaves a zero-length twin).

Refinement (paths with two or more wraps).  After the sequential pass each segment is a chain
``x_p → c₁ → c₂ → … → x_{p'}`` of *contacts* (one per wrap and piece; their path order is static,
the in-order walk of the tree of splits, :func:`_chain`).  A later surface wraps a piece that
starts at an earlier one's tangent point T2, which was placed for the old far end, so the path has
a kink at T2.  :data:`REFINE_PASSES` Gauss-Seidel passes recompute every contact, in wrap order,
between its neighbours: the T2 of the nearest wrapping contact before it (else the segment's
start) and the T1 of the nearest one after it (else the segment's end); a contact that does not
wrap is skipped by its neighbours.  The chain stays a valid path at every pass, and its length is
the straight pieces between consecutive wrapping contacts plus their arcs.  Measured on
Rajagopal2016's gastrocnemii (two cylinders on one segment) at 4 poses: the sequential pass is
0.0001–0.09 mm longer than the converged chain (32 passes), two passes leave ≤ 3e-7 m.

Smoothness.  Each piece's replacement is C¹ across the start and end of contact (the arc grows
from zero with the same slope as the chord it replaces) and C^∞ elsewhere, so L(q) is C¹ where the
sequence of wraps acts on the same pieces, except:

* an end point inside a surface (``|x| < R``): the piece stays straight (OpenSim's ``INSIDE``), a
  jump in length;
* an unconstrained cylinder whose chord passes through the axis (or a sphere with antipodal ends):
  the path switches sides, the length is continuous, its gradient is not; a quadrant-constrained
  cylinder instead jumps where an end point crosses the ray opposite its quadrant;
* two surfaces on one piece: when an earlier wrap starts to touch a piece that a later one also
  obstructs, the later one now wraps the two halves through the contact point instead of the
  whole piece (the chain's order of contacts changes), so the length can jump.  Sequential
  application (OpenSim's order) fixes that order; CableSpan solves for the joint shortest path
  instead.  With one obstacle per piece (wraps in disjoint ranges, or a later obstacle that only
  meets a tangent line of an earlier one, before or after refinement) the length is C¹.

Shapes are static (``P`` point slots → ``P·2^W`` pieces, ``P(2^W − 1)`` contacts) and every step
is a closed form (an ellipsoid's a converged Newton solve), with a fixed count of refinement passes,
so the whole path is one program under ``jit``/``vmap``; :func:`smooth_wrap_paths` is read by
:func:`mbjax.muscle_lengths` and :func:`mbjax.moment_arms` (and everything built on them) when
``MuscleWraps.wrapping == "smooth"``.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._model import require_model
from .._spatial import safe_norm
from .smooth import Geodesic
from .smooth import _cylinder_geodesic as cylinder_geodesic
from .smooth import _sphere_geodesic as sphere_geodesic
from .smooth_ellipsoid import _ellipsoid_geodesic as ellipsoid_geodesic

#: the ``wrapping=`` choices of :func:`mbjax.io.load_osim` and :func:`with_wrapping`
WRAPPINGS = ("opensim", "smooth")
#: surfaces the smooth option wraps (closed form over cylinders and spheres, shooting over ellipsoids)
SMOOTH_KINDS = ("WrapCylinder", "WrapSphere", "WrapEllipsoid")
#: refinement passes after the sequential one, on paths with two or more wraps (module docstring)
REFINE_PASSES = 2


class SmoothPath(NamedTuple):
    """The smoothly wrapped paths of the wrapped muscles at one pose.

    ``length (M,)``; ``arcs (M, W)`` the surface length per wrap slot; the ``C = P(2^W − 1)``
    contacts (contact ``k`` of wrap slot ``w`` at flat index ``P(2^w − 1) + k``, on piece ``k`` of
    that wrap's pass): ``wraps (M, C)`` whether it touches its surface, ``t1``, ``t2 (M, C, 3)``
    its world tangent points (meaningful where it wraps), after the refinement passes.
    """

    length: jnp.ndarray
    arcs: jnp.ndarray
    wraps: jnp.ndarray
    t1: jnp.ndarray
    t2: jnp.ndarray


def _allowed(axis: int, sign: int) -> tuple[float, float]:
    """The cylinder quadrant as the side the path passes, in the cross-section (axis 2 refused upstream)."""
    if sign == 0:
        return (0.0, 0.0)
    return (float(sign), 0.0) if axis == 0 else (0.0, float(sign))


def _contact(wraps, w, a, b, in_range, obj_rot, obj_pos):
    """Wrap slot ``w`` of every row on the pieces ``(a, b)`` (``(M, K, 3)``, world): where it wraps
    (``in_range`` and obstructed), its world tangent points and arcs."""
    dtype = a.dtype
    M = a.shape[0]
    o = np.asarray(wraps.obj, dtype=np.int64)[:, w]
    rows_on = np.asarray(wraps.used, dtype=bool)[:, w] & np.asarray(wraps.active, dtype=bool)[o]
    kind_w = np.asarray(wraps.kinds)[o]
    if not rows_on.any():  # a padding slot (or inactive objects) everywhere: nothing wraps
        return jnp.zeros(a.shape[:2], bool), b, b, jnp.zeros(a.shape[:2], dtype)
    rot, org = obj_rot[o], obj_pos[o]  # (M, 3, 3), (M, 3)
    a_loc = jnp.einsum("mji,mkj->mki", rot, a - org[:, None])
    b_loc = jnp.einsum("mji,mkj->mki", rot, b - org[:, None])
    radius = wraps.dimensions.astype(dtype)[o, 0][:, None]  # (M, 1)
    geo = None

    def merge(geo, new, rows):  # rows (M,) static: where ``new`` applies
        if geo is None:
            return new
        sel = jnp.asarray(rows)
        return Geodesic(*(jnp.where(sel.reshape((M,) + (1,) * (x.ndim - 1)), y, x) for x, y in zip(geo, new)))

    if np.any(rows_on & (kind_w == "WrapCylinder")):
        allowed = np.array([_allowed(wraps.axis[k], wraps.sign[k]) for k in o])[:, None, :]
        geo = cylinder_geodesic(a_loc, b_loc, radius, jnp.asarray(allowed, dtype))
    if np.any(rows_on & (kind_w == "WrapSphere")):
        geo = merge(geo, sphere_geodesic(a_loc, b_loc, radius), kind_w == "WrapSphere")
    ell = rows_on & (kind_w == "WrapEllipsoid")
    if np.any(ell):  # shooting (not closed form): only the ellipsoid rows are solved
        idx = np.nonzero(ell)[0]
        eg = ellipsoid_geodesic(a_loc[idx], b_loc[idx], wraps.dimensions.astype(dtype)[o[idx]][:, None, :])
        full = Geodesic(*(jnp.zeros((M,) + x.shape[1:], x.dtype).at[idx].set(x) for x in eg))
        geo = merge(geo, full, ell)
    wrap = in_range & jnp.asarray(rows_on)[:, None] & geo.wraps
    t1 = jnp.einsum("mij,mkj->mki", rot, geo.t1) + org[:, None]
    t2 = jnp.einsum("mij,mkj->mki", rot, geo.t2) + org[:, None]
    return wrap, t1, t2, jnp.where(wrap, geo.arc, 0.0)


def _chain(P: int, W: int):
    """Static chain tables: ``order (P, 2^W − 1)`` the flat contact indices of each segment in path order
    (contact ``k`` of wrap ``w`` is flat ``P(2^w − 1) + k``) and ``level (2^W − 1,)`` their wraps."""

    def inorder(w, k):
        if w == W:
            return []
        return inorder(w + 1, k) + [(w, k)] + inorder(w + 1, k + P * 2**w)

    rows = [inorder(0, p) for p in range(P)]
    order = np.array([[P * (2**w - 1) + k for w, k in row] for row in rows], dtype=np.int64)
    level = np.array([w for w, _ in rows[0]], dtype=np.int64)
    return order, level


def _one_pose(wraps, world, active, obj_rot, obj_pos, passes: int) -> SmoothPath:
    """The smooth pass at one pose: ``world (M, P, 3)``, ``active (M, P)``, frames ``(O, 3, 3)``, ``(O, 3)``."""
    dtype = world.dtype
    M, P, _ = world.shape
    used = np.asarray(wraps.used, dtype=bool)
    W = used.shape[1] if used.size else 0
    start = np.asarray(wraps.start, dtype=np.int64)
    end = np.asarray(wraps.end, dtype=np.int64)
    later = np.triu(np.ones((P, P), dtype=bool), k=1)
    cand = jnp.asarray(later)[None] & active[:, None, :]
    has = jnp.any(cand, axis=-1)
    nxt = jnp.argmax(cand, axis=-1)  # next active point
    live = active & has
    a = world
    b = jnp.where(live[..., None], jnp.take_along_axis(world, nxt[..., None], axis=1), world)
    seg_start, seg_end = a, b
    lo = jnp.broadcast_to(jnp.arange(P), (M, P))  # the segment each piece belongs to: lo -> hi
    hi = nxt
    arcs, ranges, contacts = [], [], []
    for w in range(W):
        in_range = live & (lo >= jnp.asarray(start[:, w])[:, None]) & (hi <= jnp.asarray(end[:, w])[:, None])
        wrap, t1, t2, arc = _contact(wraps, w, a, b, in_range, obj_rot, obj_pos)
        w3 = wrap[..., None]
        arcs.append(arc)
        ranges.append(in_range)
        contacts.append((wrap, t1, t2, arc))
        a, b = jnp.concatenate([a, jnp.where(w3, t2, b)], axis=1), jnp.concatenate([jnp.where(w3, t1, b), b], axis=1)
        live = jnp.concatenate([live, live], axis=1)
        lo = jnp.concatenate([lo, lo], axis=1)
        hi = jnp.concatenate([hi, hi], axis=1)
    if not contacts:
        z = jnp.zeros((M, 0), dtype)
        return SmoothPath(jnp.sum(jnp.where(live, safe_norm(b - a), 0.0), axis=-1), z, z.astype(bool),
                          jnp.zeros((M, 0, 3), dtype), jnp.zeros((M, 0, 3), dtype))
    wrap = jnp.concatenate([c[0] for c in contacts], axis=1)  # (M, C) flat contacts
    t1 = jnp.concatenate([c[1] for c in contacts], axis=1)
    t2 = jnp.concatenate([c[2] for c in contacts], axis=1)
    arc = jnp.concatenate([c[3] for c in contacts], axis=1)
    if W < 2 or passes == 0:
        arcs = jnp.stack([jnp.sum(x, axis=-1) for x in arcs], axis=1)
        length = jnp.sum(jnp.where(live, safe_norm(b - a), 0.0), axis=-1) + jnp.sum(arcs, axis=-1)
        return SmoothPath(length, arcs, wrap, t1, t2)
    # refinement on the chains (module docstring): every contact again, between its neighbours
    order, level = _chain(P, W)
    n = order.shape[1]

    def neighbours(wrap, t1, t2):
        """For each chain position: the previous wrapping contact's T2 (else the segment's start) and
        the next one's T1 (else its end), ``(M, P, n, 3)``; and the departure after the last."""
        wc, a1, a2 = wrap[:, order], t1[:, order], t2[:, order]
        prev, nxt_ = [], []
        for i in range(n + 1):
            x = seg_start
            for j in range(i):
                x = jnp.where(wc[:, :, j, None], a2[:, :, j], x)
            prev.append(x)
        for i in range(n):
            x = seg_end
            for j in reversed(range(i + 1, n)):
                x = jnp.where(wc[:, :, j, None], a1[:, :, j], x)
            nxt_.append(x)
        return jnp.stack(prev[:n], axis=2), jnp.stack(nxt_, axis=2), prev[n]

    for _ in range(passes):
        for w in range(W):
            prev, nxt_, _ = neighbours(wrap, t1, t2)
            pos = np.nonzero(level == w)[0]  # chain positions of wrap w, each segment
            flat = order[:, pos]  # (P, 2^w) flat contacts there
            k = (flat - P * (2**w - 1)).reshape(-1)
            sort = np.argsort(k)  # to contact order k
            a_w = prev[:, :, pos].reshape(M, -1, 3)[:, sort]
            b_w = nxt_[:, :, pos].reshape(M, -1, 3)[:, sort]
            ww, tt1, tt2, aa = _contact(wraps, w, a_w, b_w, ranges[w], obj_rot, obj_pos)
            sl = slice(P * (2**w - 1), P * (2**(w + 1) - 1))
            wrap, arc = wrap.at[:, sl].set(ww), arc.at[:, sl].set(aa)
            t1, t2 = t1.at[:, sl].set(tt1), t2.at[:, sl].set(tt2)
    prev, _, last = neighbours(wrap, t1, t2)
    wc, a1, ar = wrap[:, order], t1[:, order], arc[:, order]
    into = jnp.where(wc, safe_norm(a1 - prev) + ar, 0.0)  # straight piece into each wrapping contact, its arc
    length = jnp.sum(into, axis=(1, 2)) + jnp.sum(jnp.where(live[:, :P], safe_norm(seg_end - last), 0.0), axis=-1)
    arcs = jnp.stack([jnp.sum(arc[:, P * (2**w - 1): P * (2**(w + 1) - 1)], axis=-1) for w in range(W)], axis=1)
    return SmoothPath(length, arcs, wrap, t1, t2)


def smooth_wrap_paths(wraps, world, active, obj_rot, obj_pos, passes: int = REFINE_PASSES) -> SmoothPath:
    """Every wrapped muscle's smooth path (module docstring), at one pose or a batch.

    ``world (..., M, P, 3)`` / ``active (..., M, P)``: the path points of the wrapped muscles (rows
    of ``wraps.muscles``); ``obj_rot (..., O, 3, 3)``, ``obj_pos (..., O, 3)``: world frames of the
    wrap objects; ``...`` is at most one batch axis of poses (``vmap``-ed: no loop to stop early).
    ``passes``: refinement passes after the sequential one (a static count; none with one wrap).
    """
    if world.ndim == 4:
        return jax.vmap(lambda *x: _one_pose(wraps, *x, passes))(world, active, obj_rot, obj_pos)
    return _one_pose(wraps, world, active, obj_rot, obj_pos, passes)


def check_smooth(wraps, muscle_names, source: str = "") -> None:
    """Refuse (``NotImplementedError``, by file, muscle and wrap object) what the smooth option cannot
    wrap; warn, by name, for sphere quadrants it does not apply."""
    where = f"{source}: " if source else ""
    refused, z_cyl, sphere_quadrant = [], [], []
    for row, m in enumerate(wraps.muscles):
        for o, u in zip(wraps.obj[row], wraps.used[row]):
            if not u:
                continue
            kind, name = wraps.kinds[o], wraps.names[o]
            if kind not in SMOOTH_KINDS:
                refused.append(f"muscle {muscle_names[m]!r} over {kind} {name!r}")
            elif kind == "WrapCylinder" and wraps.sign[o] != 0 and wraps.axis[o] == 2:
                z_cyl.append(f"muscle {muscle_names[m]!r} over WrapCylinder {name!r}")
            elif kind in ("WrapSphere", "WrapEllipsoid") and wraps.sign[o] != 0 and name not in sphere_quadrant:
                sphere_quadrant.append(name)
    if refused:
        raise NotImplementedError(
            f"{where}smooth wrapping covers {', '.join(SMOOTH_KINDS)} only, not: "
            + "; ".join(refused)
            + ". Load with wrapping='opensim' (the default, OpenSim's algorithm) or ignore_wrapping=True "
            "(straight lines)")
    if z_cyl:
        raise NotImplementedError(
            f"{where}smooth wrapping: a cylinder quadrant along its own axis (z) has no side to pass: "
            + "; ".join(z_cyl) + ". Load with wrapping='opensim' (the default) or ignore_wrapping=True")
    if sphere_quadrant:
        warnings.warn(f"{where}smooth wrapping takes the shorter way over a sphere or an ellipsoid; the quadrant of "
                      f"{', '.join(repr(n) for n in sphere_quadrant)} is not applied", stacklevel=3)


def with_wrapping(model, wrapping: str, source: str = ""):
    """A copy of ``model`` whose muscle paths wrap by ``wrapping`` (one of :data:`WRAPPINGS`).

    ``"opensim"``: OpenSim 4.6's algorithm (:mod:`mbjax.wrapping.path`, the default of every
    loaded model); ``"smooth"``: this module's taut cable (refuses tori by name).  A
    model without wrapping is returned unchanged (straight lines are smooth already).  Only a static
    flag of ``MusclePaths.wraps`` changes: parameters, gradients and names stay.
    """
    require_model(model, "with_wrapping")
    if not isinstance(wrapping, str) or wrapping not in WRAPPINGS:
        raise ValueError(f"with_wrapping: wrapping must be one of {WRAPPINGS}, got {wrapping!r}")
    paths = model.muscles
    wraps = None if paths is None else paths.wraps
    if wraps is None or wraps.wrapping == wrapping:
        return model
    if wrapping == "smooth":
        check_smooth(wraps, paths.names, source)
    paths = dataclasses.replace(paths, wraps=dataclasses.replace(wraps, wrapping=wrapping))
    return model.replace(muscles=paths)


def smooth_wrapping(model):
    """A copy of ``model`` whose paths use smooth wrapping (``with_wrapping(model, "smooth")``)."""
    return with_wrapping(model, "smooth")
