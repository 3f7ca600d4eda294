"""Reverse-mode derivatives through the iterative wrap surfaces.

The cylinder's restarts, the ellipsoid's Newton projections and tangent search and the torus's
``lmdif`` run in ``while_loop`` s (:mod:`~mbjax.wrapping._lane_loop`), which JAX differentiates in
forward mode (through every step taken: the derivative of the stopped iterate, which is what the
length is made of; these loops stop on OpenSim's tolerances, not at roots) but not in reverse.  :func:`with_jacobian_rule` wraps a surface function batched over lanes
``(p1, p2, dims, *ints) -> WrapLine`` in a ``custom_jvp`` whose rule is the surface's own
forward-mode Jacobian (one ``jvp`` per input component, vmapped: 3 + 3 + 3 = 9 for the end points
and the dimensions) contracted with each lane's input tangents::

    ṙ1, ṙ2, L̇ = J(p1, p2, dims) · (ṗ1, ṗ2, ḋims)

``J`` depends on the primals only, so the rule is linear in the tangents and JAX transposes it:
``jax.grad`` / ``jax.vjp`` / ``jacrev`` of anything that reads wrapped paths now work, with
derivatives equal to the forward-mode ones (those are unchanged: the same ``jvp`` through the
loops, reordered).  The integer outputs (``code``, ``has_path``) have no derivative.  Nothing
changes when nothing is differentiated: the rule is traced only under differentiation.
:func:`mbjax.moment_arms` keeps its own forward mode through the loops (:func:`raw_forward_mode`):
with few coordinates, one JVP per coordinate is cheaper than the rule's 6-9 columns.
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


def with_jacobian_rule(surface):
    """``surface(p1 (n, 3), p2 (n, 3), dims (n, k), *rest) -> WrapLine`` (a lane-batched surface:
    lanes are independent) with a reverse-differentiable JVP rule (module docstring); ``rest`` are
    integer/bool arrays (quadrant, method, flags).

    The rule's Jacobian columns are ``jvp`` s of the batched surface with one input component
    seeded on every lane at once, vmapped over the components, so the lanes' ``vmap`` stays
    *inside* the ``jvp`` (where :func:`~mbjax.wrapping._lane_loop.lane_while_loop` folds them), as
    in :func:`mbjax.moment_arms`.  Inputs whose tangent is a symbolic zero (e.g. the dimensions
    when only the pose is differentiated) get no columns.  Under :func:`raw_forward_mode` the
    surface is returned as it is."""
    if _RAW[0]:
        return surface

    @jax.custom_jvp
    def wrapped(p1, p2, dims, *rest):
        return surface(p1, p2, dims, *rest)

    @functools.partial(wrapped.defjvp, symbolic_zeros=True)
    def _rule(primals, tangents):
        p1, p2, dims, *rest = primals
        dtype = p1.dtype
        ins = (p1, p2, dims.astype(dtype))
        live = [i for i in range(3) if not isinstance(tangents[i], SymbolicZero)]
        out = surface(p1, p2, dims, *rest)
        if not live:
            zero = jax.tree.map(jnp.zeros_like, (out.r1, out.r2, out.length))
            return out, WrapLine(_float0_like(out.code), _float0_like(out.has_path), *zero)
        sizes = [ins[i].shape[-1] for i in live]
        x = jnp.concatenate([ins[i] for i in live], -1)  # (n, c): the differentiated components

        def floats(v):
            args = list(ins)
            at = 0
            for i, k in zip(live, sizes):
                args[i] = v[..., at:at + k]
                at += k
            res = surface(args[0], args[1], args[2].astype(dims.dtype), *rest)
            return res.r1, res.r2, res.length

        c = x.shape[-1]
        basis = jnp.broadcast_to(jnp.eye(c, dtype=dtype)[:, None, :], (c,) + x.shape)  # (c, n, c)
        with raw_forward_mode():  # the solvers inside need no rule of their own (iterate_rule)
            cols = jax.vmap(lambda e: jax.jvp(floats, (x,), (e,))[1])(basis)  # (c, n, ...) each
        t = jnp.concatenate([jnp.asarray(tangents[i], dtype) for i in live], -1)  # (n, c)

        def contract(col):
            tt = jnp.moveaxis(t, -1, 0).reshape((c,) + t.shape[:-1] + (1,) * (col.ndim - t.ndim))
            return jnp.sum(tt * col, axis=0)

        d_r1, d_r2, d_len = (contract(col) for col in cols)
        tangent = WrapLine(_float0_like(out.code), _float0_like(out.has_path), d_r1.astype(out.r1.dtype),
                           d_r2.astype(out.r2.dtype), d_len.astype(out.length.dtype))
        return out, tangent

    return wrapped


def iterate_rule(solver):
    """``solver(*xs) -> ys`` (float arrays in, a pytree of float arrays out; loops inside) with a
    JVP rule reverse mode can transpose: ``ẏ = Σ_j (∂y/∂x_j) ẋ_j``, the columns ``∂y/∂x_j`` being
    forward-mode derivatives of the solver itself (through every step its loops take, branch
    decisions held), so the derivative is that of the stopped iterate, in forward and reverse mode.

    The surfaces' own iterations (torus ``lmdif``, ellipsoid projections and tangent points) use it
    so that a single surface call is reverse-differentiable.  Under :func:`raw_forward_mode` (and
    inside :func:`with_jacobian_rule`'s columns) the solver is differentiated directly instead:
    one tangent per input direction asked for, no columns."""

    @jax.custom_jvp
    def ruled(*xs):
        return solver(*xs)

    @ruled.defjvp
    def _rule(primals, tangents):
        out = solver(*primals)
        live = [i for i, x in enumerate(primals) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
        dtype = jnp.result_type(*(primals[i] for i in live))
        sizes = [int(np.prod(jnp.shape(primals[i]))) for i in live]
        flat = jnp.concatenate([jnp.ravel(primals[i]).astype(dtype) for i in live])

        def of_flat(v):  # the solver as a function of its float inputs (the others held)
            args, at = list(primals), 0
            for i, k in zip(live, sizes):
                args[i] = v[at:at + k].reshape(jnp.shape(primals[i])).astype(jnp.result_type(primals[i]))
                at += k
            return solver(*args)

        with raw_forward_mode():
            cols = jax.vmap(lambda e: jax.jvp(of_flat, (flat,), (e,))[1])(jnp.eye(flat.size, dtype=dtype))
        t = jnp.concatenate([jnp.ravel(jnp.asarray(tangents[i], dtype)) for i in live])

        def contract(col, y):
            if not jnp.issubdtype(jnp.result_type(y), jnp.inexact):
                return _float0_like(y)
            return jnp.tensordot(t, col, axes=1).astype(jnp.result_type(y))

        return out, jax.tree.map(contract, cols, out)

    def call(*xs):
        return solver(*xs) if _RAW[0] else ruled(*xs)

    return call
