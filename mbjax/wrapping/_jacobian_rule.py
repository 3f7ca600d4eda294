"""Reverse-mode derivatives through the iterative wrap surfaces.

The cylinder's restarts, the ellipsoid's Newton projections and tangent search and the torus's
``lmdif`` run in ``while_loop`` s (:mod:`~mbjax.wrapping._lane_loop`), which JAX differentiates in
forward mode (through every step taken: the derivative of the stopped iterate, which is what the
length is made of; these loops stop on OpenSim's tolerances, not at roots) but not in reverse.
:func:`with_jacobian_rule` wraps a surface function batched over lanes
``(p1, p2, dims, *ints) -> WrapLine`` in a ``custom_jvp`` whose rule is the surface's own
forward-mode Jacobian (one ``jvp`` per input component, vmapped: 3 + 3 + 3 = 9 for the end points
and the dimensions) contracted with each lane's input tangents::

    ṙ1, ṙ2, L̇ = J(p1, p2, dims) · (ṗ1, ṗ2, ḋims)

``J`` depends on the primals only, so the rule is linear in the tangents and JAX transposes it:
``jax.grad`` / ``jax.vjp`` / ``jacrev`` of anything that reads wrapped paths now work, with
derivatives equal to the forward-mode ones (those are unchanged: the same ``jvp`` through the
loops, reordered).  The integer outputs (``code``, ``has_path``) have no derivative.  Nothing
changes when nothing is differentiated: the rule is traced only under differentiation.

Second order.  The rule's values and tangent come from one custom function (:func:`_with_tangent`)
with a rule of its own: the columns of ``J t`` in the inputs are forward-over-forward derivatives
of the surface (one vmapped pass), so reverse mode can also differentiate a JVP of the lengths
(``jax.grad`` of moment arms or of muscle forces through their fibre speed), and forward over
reverse (``jax.hessian``) differentiates the columns' loops in forward mode.  Reverse over reverse
is not covered (the first reverse pass inlines the columns, loops and all).

:func:`mbjax.moment_arms` keeps its own forward mode through the loops (:func:`raw_forward_mode`):
with few coordinates, one JVP per coordinate is cheaper than the rule's 6-9 columns; differentiated,
it takes the rules (:func:`mbjax.muscles.moment_arms._wrapped_moment_arms`).
:func:`iterate_rule` is the same construction for one solver inside a surface, so that a single
surface call (``wrap_torus``, ``wrap_ellipsoid``) is reverse-differentiable too.
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from ._result import WrapLine


#: while set (trace time), surfaces are differentiated through their loops as they are: mbjax's own
#: forward-mode moment arms (one JVP per coordinate, cheaper than 6-9 Jacobian columns when the
#: model has few coordinates; their values are the same)
_RAW = [False]


@contextlib.contextmanager
def raw_forward_mode():
    """Inside the block, traced surfaces skip the rule (module docstring): forward mode only."""
    old = _RAW[0]
    _RAW[0] = True
    try:
        yield
    finally:
        _RAW[0] = old


def _float0_like(x):
    return np.zeros(jnp.shape(x), dtype=jax.dtypes.float0)


def _columns(fn, xs, which):
    """``fn(*xs) -> (floats, ints)`` (pytrees: float arrays, and outputs without a derivative) and
    its forward-mode derivatives in each component of the last axis of ``xs[i]``, ``i`` in
    ``which`` (static): one ``jvp`` per component, seeded on every lane (the leading axes,
    independent lanes) at once and vmapped over the components, through the loops as they run
    (:func:`raw_forward_mode`).  Returns ``(floats, columns, ints)``, the columns' leaves
    ``(c, ...)`` with ``c = Σ_i k_i``."""
    sizes = [xs[i].shape[-1] for i in which]
    x = jnp.concatenate([xs[i] for i in which], -1)  # (..., c): the differentiated components

    def of(v):
        args, at = list(xs), 0
        for i, k in zip(which, sizes):
            args[i] = v[..., at:at + k]
            at += k
        return fn(*args)

    c = x.shape[-1]
    basis = jnp.broadcast_to(jnp.eye(c, dtype=x.dtype).reshape((c,) + (1,) * (x.ndim - 1) + (c,)), (c,) + x.shape)
    with raw_forward_mode():  # the solvers inside need no rule of their own (iterate_rule)
        floats, cols, ints = jax.vmap(lambda e: jax.jvp(of, (x,), (e,), has_aux=True))(basis)
    first = functools.partial(jax.tree.map, lambda y: y[0])  # (the same on every column)
    return first(floats), cols, first(ints)


def _contract_lanes(t, col):
    """``Σ_k t[..., k] col[k, ...]``: lane tangents ``t (..., c)`` times columns ``col (c, ..., *out)``."""
    c = t.shape[-1]
    tt = jnp.moveaxis(t, -1, 0).reshape((c,) + t.shape[:-1] + (1,) * (col.ndim - t.ndim))
    return jnp.sum(tt * col, axis=0)


def _contract_flat(t, col):
    """``Σ_k t[k] col[k, ...]`` for one flat input ``t (c,)``."""
    return jnp.tensordot(t, col, axes=1)


def _with_tangent(fn, n_in, live, contract):
    """``P(*xs, *ts, *ints) = (y, Σ_{i in live} J_i(xs) ts_i, aux)`` with ``(y, aux) = fn(*xs, *ints)``:
    the values of ``fn`` (``y`` float arrays, ``aux`` outputs without a derivative; ``xs`` the
    ``n_in`` float inputs ``(..., k_i)``, leading axes independent lanes) and its JVP along the
    tangents ``ts`` of the inputs ``live`` (static), both from one vmapped forward pass
    (:func:`_columns`), the JVP contracted from the columns, so linear in ``ts``: reverse mode
    transposes it (``jax.grad`` of lengths).

    ``P`` has its own JVP rule, so reverse mode can differentiate the JVP once more (``jax.grad``
    of moment arms, themselves a JVP of the lengths): from one forward-over-forward pass, vmapped
    over the components ``u`` of the inputs that carry tangents here or below (``ts``' inputs),
    ``ẏ = Σ_u J_u ẋ_u`` and ``(J t)˙ = Σ_u ∂(J t)/∂x_u ẋ_u + Σ_{k in live} J_k ṫ_k``, again linear
    in the tangents, the columns functions of the primals only (through every step the loops
    take).  Its value ``J t`` there is the plain forward pass along ``t``, as
    :func:`raw_forward_mode` computes it.  Reverse over reverse (``jacrev`` of ``grad``) is not
    covered: the first reverse pass inlines ``P``'s primal, whose columns run the loops."""
    n_t = len(live)

    @jax.custom_jvp
    def both(*args):
        xs, ts, ints = args[:n_in], args[n_in:n_in + n_t], args[n_in + n_t:]
        y, cols, aux = _columns(lambda *a: fn(*a, *ints), xs, live)
        t = jnp.concatenate(ts, -1)
        return y, jax.tree.map(lambda col: contract(t, col), cols), aux

    @functools.partial(both.defjvp, symbolic_zeros=True)
    def _rule(primals, tangents):
        xs, ts, ints = primals[:n_in], primals[n_in:n_in + n_t], primals[n_in + n_t:]
        moved = [i for i in range(n_in) if not isinstance(tangents[i], SymbolicZero)]
        comps = sorted(set(live) | set(moved))

        def along(*zs):  # (y, J t), aux: the forward pass along ts
            def of(*v):
                args = list(zs)
                for i, x in zip(live, v):
                    args[i] = x
                return fn(*args, *ints)

            y, jt, aux = jax.jvp(of, tuple(zs[i] for i in live), tuple(ts), has_aux=True)
            return (y, jt), aux

        (y, jt), (d_y, d_jt), aux = _columns(along, xs, comps)

        def stacked(ds):  # the tangents of the components ``comps``, zero where there is none
            return jnp.concatenate([jnp.zeros_like(xs[i]) if isinstance(ds.get(i), (SymbolicZero, type(None)))
                                    else jnp.asarray(ds[i], xs[i].dtype) for i in comps], -1)

        dx = stacked({i: tangents[i] for i in moved})
        dt = stacked({i: tangents[n_in + j] for j, i in enumerate(live)})
        t_y = jax.tree.map(lambda col: contract(dx, col), d_y)  # J ẋ
        t_jt = jax.tree.map(lambda h, col: contract(dx, h) + contract(dt, col), d_jt, d_y)  # ∂(J t)/∂x ẋ + J ṫ
        return (y, jt, aux), (t_y, t_jt, jax.tree.map(_float0_like, aux))

    return both


def with_jacobian_rule(surface):
    """``surface(p1 (n, 3), p2 (n, 3), dims (n, k), *rest) -> WrapLine`` (a lane-batched surface:
    lanes are independent) with a reverse-differentiable JVP rule (module docstring); ``rest`` are
    integer/bool arrays (quadrant, method, flags).

    The rule's Jacobian columns are ``jvp`` s of the batched surface with one input component
    seeded on every lane at once, vmapped over the components, so the lanes' ``vmap`` stays
    *inside* the ``jvp`` (where :func:`~mbjax.wrapping._lane_loop.lane_while_loop` folds them), as
    in :func:`mbjax.moment_arms`.  Inputs whose tangent is a symbolic zero (e.g. the dimensions
    when only the pose is differentiated) get no columns.  The values come from the same pass
    (:func:`_with_tangent`, which also gives the rule a rule: second derivatives).  Under
    :func:`raw_forward_mode` the surface is returned as it is."""
    if _RAW[0]:
        return surface

    @jax.custom_jvp
    def wrapped(p1, p2, dims, *rest):
        return surface(p1, p2, dims, *rest)

    @functools.partial(wrapped.defjvp, symbolic_zeros=True)
    def _rule(primals, tangents):
        p1, p2, dims, *rest = primals
        live = tuple(i for i in range(3) if not isinstance(tangents[i], SymbolicZero))
        if not live:
            out = wrapped(p1, p2, dims, *rest)
            zero = jax.tree.map(jnp.zeros_like, (out.r1, out.r2, out.length))
            return out, WrapLine(_float0_like(out.code), _float0_like(out.has_path), *zero)
        dtype = p1.dtype
        dims_dtype = dims.dtype

        def floats(a, b, d, *ints):
            res = surface(a, b, d.astype(dims_dtype), *ints)
            return (res.r1, res.r2, res.length), (res.code, res.has_path)

        ts = tuple(jnp.asarray(tangents[i], dtype) for i in live)
        (r1, r2, length), (d_r1, d_r2, d_len), (code, has_path) = _with_tangent(floats, 3, live, _contract_lanes)(
            p1, p2, dims.astype(dtype), *ts, *rest)
        out = WrapLine(code, has_path, r1, r2, length)
        tangent = WrapLine(_float0_like(code), _float0_like(has_path), d_r1.astype(r1.dtype),
                           d_r2.astype(r2.dtype), d_len.astype(length.dtype))
        return out, tangent

    return wrapped


def iterate_rule(solver):
    """``solver(*xs) -> ys`` (float arrays in, a pytree of float arrays out; loops inside) with a
    JVP rule reverse mode can transpose: ``ẏ = Σ_j (∂y/∂x_j) ẋ_j``, the columns ``∂y/∂x_j`` being
    forward-mode derivatives of the solver itself (through every step its loops take, branch
    decisions held), so the derivative is that of the stopped iterate, in forward and reverse mode
    (and, through :func:`_with_tangent`, reverse over forward).

    The surfaces' own iterations (torus ``lmdif``, ellipsoid projections and tangent points) use it
    so that a single surface call is reverse-differentiable.  Under :func:`raw_forward_mode` (and
    inside :func:`with_jacobian_rule`'s columns) the solver is differentiated directly instead:
    one tangent per input direction asked for, no columns."""

    @jax.custom_jvp
    def ruled(*xs):
        return solver(*xs)

    @ruled.defjvp
    def _rule(primals, tangents):
        live = [i for i, x in enumerate(primals) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
        held = [i for i in range(len(primals)) if i not in live]
        dtype = jnp.result_type(*(primals[i] for i in live))
        sizes = [int(np.prod(jnp.shape(primals[i]))) for i in live]
        flat = jnp.concatenate([jnp.ravel(primals[i]).astype(dtype) for i in live])
        shape = jax.eval_shape(solver, *primals)
        leaves, tree = jax.tree.flatten(shape)
        is_float = [jnp.issubdtype(y.dtype, jnp.inexact) for y in leaves]

        def of_flat(v, *others):  # the solver as a function of its float inputs (the others held)
            args, at = list(primals), 0
            for i, k in zip(live, sizes):
                args[i] = v[at:at + k].reshape(jnp.shape(primals[i])).astype(jnp.result_type(primals[i]))
                at += k
            for i, x in zip(held, others):
                args[i] = x
            ys = jax.tree.leaves(solver(*args))
            return (tuple(y for y, f in zip(ys, is_float) if f), tuple(y for y, f in zip(ys, is_float) if not f))

        t = jnp.concatenate([jnp.ravel(jnp.asarray(tangents[i], dtype)) for i in live])
        ys, d_ys, others = _with_tangent(of_flat, 1, (0,), _contract_flat)(flat, t, *(primals[i] for i in held))
        ys, d_ys, others = iter(ys), iter(d_ys), iter(others)
        out = [next(ys) if f else next(others) for f in is_float]
        d_out = [next(d_ys).astype(y.dtype) if f else _float0_like(y) for y, f in zip(out, is_float)]
        return jax.tree.unflatten(tree, out), jax.tree.unflatten(tree, d_out)

    def call(*xs):
        return solver(*xs) if _RAW[0] else ruled(*xs)

    return call
