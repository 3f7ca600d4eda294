"""Batch-last kernels behind single-pose functions: ``jax.vmap`` of a public function is the fast path.

Every public function of mbjax takes one pose.  Its kernel is written on arrays laid out
``(small..., *batch)``: with the batch axis *last*, each entry of a 3-vector or a 3x3 block is a
contiguous run of poses, and products over the small axes are unrolled into fused elementwise
multiply-adds (:class:`Small`).  Under plain ``jax.vmap`` the batch axis would lead and every small
block becomes a strided scrap that XLA:CPU reduces slowly.

:func:`batch_last` turns such a kernel into a single-pose function whose ``jax.vmap`` runs the
kernel once with the poses moved last (a ``jax.custom_batching.custom_vmap`` rule), and whose
derivatives (``jvp``, ``grad``, ``jacfwd``/``jacrev``, also under ``vmap``) are those of the plain
kernel (a ``jax.custom_jvp`` around it, since ``custom_vmap`` alone is not differentiable).  That
JVP takes symbolic zeros: only the perturbed arguments and model leaves carry tangents through the
kernel (a derivative in q does not push zero tangents through every axis, offset, map coefficient
and inertia).  A batched *model* (vmapping over
parameters) falls back to plain ``vmap`` of the kernel.
"""

from __future__ import annotations

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_batching import custom_vmap
from jax.custom_derivatives import SymbolicZero


class Small:
    """Algebra on the small leading axes of arrays laid out ``(small..., *batch)``.

    ``n_batch`` trailing axes are batch axes (``0``: one pose).  Products over small axes are
    unrolled sums of broadcast products, which XLA fuses into one loop per output.
    """

    def __init__(self, n_batch: int, dtype):
        self.nbt = n_batch
        self.dtype = dtype

    def c(self, a):
        """A batch-free array (constant or model leaf) with trailing singleton batch axes."""
        a = jnp.asarray(a).astype(self.dtype)
        return a.reshape(a.shape + (1,) * self.nbt)

    def mask(self, a):
        """A static boolean table with trailing singleton batch axes."""
        a = jnp.asarray(np.asarray(a, dtype=bool))
        return a.reshape(a.shape + (1,) * self.nbt)

    def take(self, a, k: int, axis: int):
        """``a[..., k, ...]`` along small axis ``axis`` (negative, counted among the small axes)."""
        return jax.lax.index_in_dim(a, k, a.ndim + axis - self.nbt, keepdims=False)

    def expand(self, a, axis: int):
        """New small axis at ``axis`` (negative, counted among the small axes of the result)."""
        return jnp.expand_dims(a, a.ndim + 1 + axis - self.nbt)

    def mm(self, a, b):
        """``(..., I, K) @ (..., K, J)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.expand(self.take(a, k, -1), -1) * self.expand(self.take(b, k, -2), -2)
            out = t if out is None else out + t
        return out

    def mtm(self, a, b):
        """``(..., K, I)ᵀ @ (..., K, J)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-2 - self.nbt]):
            t = self.expand(self.take(a, k, -2), -1) * self.expand(self.take(b, k, -2), -2)
            out = t if out is None else out + t
        return out

    def mv(self, a, v):
        """``(..., I, K) @ (..., K)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.take(a, k, -1) * self.expand(self.take(v, k, -1), -1)
            out = t if out is None else out + t
        return out

    def mtv(self, a, v):
        """``(..., K, I)ᵀ @ (..., K)`` as an unrolled sum over ``K``."""
        out = None
        for k in range(a.shape[-2 - self.nbt]):
            t = self.take(a, k, -2) * self.expand(self.take(v, k, -1), -1)
            out = t if out is None else out + t
        return out

    def dot(self, a, b):
        """``Σ_k a[..., k] b[..., k]`` over the last small axis, unrolled."""
        out = None
        for k in range(a.shape[-1 - self.nbt]):
            t = self.take(a, k, -1) * self.take(b, k, -1)
            out = t if out is None else out + t
        return out

    def cross(self, a, b):
        a0, a1, a2 = (self.take(a, k, -1) for k in range(3))
        b0, b1, b2 = (self.take(b, k, -1) for k in range(3))
        out = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
        return jnp.stack(out, axis=a.ndim - 1 - self.nbt)

    @staticmethod
    def sum0(a):
        """Unrolled sum over the first axis."""
        out = a[0]
        for k in range(1, a.shape[0]):
            out = out + a[k]
        return out


def materialize(x):
    """Identity that keeps ``x`` in memory under XLA:CPU instead of fusing it into its consumers.

    Loop fusion recomputes a fused producer once per element of each consumer, so an array read
    at several shifted positions or broadcast over a small axis is recomputed many times;
    ``lax.optimization_barrier`` is stripped before fusion on CPU.  A conditional's operand is a
    buffer, so an identity branch pins it; the predicate is a run-time value (``x₀ == x₀``, false
    only for NaN, where the other branch returns ``x + 0``) that XLA cannot fold.  Values and
    derivatives are unchanged; under ``vmap`` the conditional becomes a fused select.
    """
    if x.size == 0:
        return x
    flat = x.reshape(-1)
    return jax.lax.cond(flat[0] == flat[0], lambda v: v, lambda v: v + jnp.zeros((), v.dtype), x)


#: poses per kernel call on CPU under ``vmap`` (intermediates stay in cache; 32-128 is best measured)
CPU_CHUNK = 64


def chunk_size(axis_size: int) -> int | None:
    """Poses per kernel call for a batch of ``axis_size``: on CPU at most ``CPU_CHUNK``, in equal
    chunks (73 poses run as 2 x 37, not as 2 x 64 with 55 padding poses); all at once elsewhere.

    On a GPU one kernel over the whole batch is fastest (chunks in a sequential ``lax.map`` are
    much slower than one call); :func:`mbjax.analysis.sweep`-style helpers chunk huge sweeps
    for memory.
    """
    if jax.default_backend() == "cpu" and axis_size > CPU_CHUNK:
        n_chunks = -(-axis_size // CPU_CHUNK)
        return -(-axis_size // n_chunks)  # equal chunks: 73 poses run as 2 x 37, not 2 x 64
    return None


def padded_length(n: int) -> int:
    """The frame count a trial of ``n`` frames is padded to: the next power of two up to 8, then the
    next quarter octave ``m 2^k``, ``m`` in 4..7 (73 -> 80, 129 -> 160): at most 25 % padding, four
    compiled programs per octave of trial lengths (powers of two would pad Gait2354's 73 frames to
    128)."""
    n = max(int(n), 1)
    if n <= 8:
        return 1 << (n - 1).bit_length()
    step = 1 << ((n - 1).bit_length() - 3)
    return -(-n // step) * step


def _run_chunked(fn, xs, axis_size: int):
    """``fn(*xs)`` on batch-last arrays ``xs`` in ``lax.map`` chunks (last chunk padded by repetition)."""
    size = chunk_size(axis_size)
    if size is None:
        return fn(*xs)
    n_chunks = -(-axis_size // size)
    pad = n_chunks * size - axis_size

    def split(x):
        if pad:
            x = jnp.concatenate([x, jnp.broadcast_to(x[..., -1:], x.shape[:-1] + (pad,))], -1)
        return jnp.moveaxis(x.reshape(x.shape[:-1] + (n_chunks, size)), -2, 0)

    out = jax.lax.map(lambda c: fn(*c), tuple(split(x) for x in xs))
    return jax.tree.map(lambda o: jnp.moveaxis(o, 0, -2).reshape(o.shape[1:-1] + (-1,))[..., :axis_size], out)


def _is_symbolic_zero(t) -> bool:
    return isinstance(t, SymbolicZero)


def jvp_of_perturbed(fn, primals, tangents, is_zero=_is_symbolic_zero):
    """``jax.jvp(fn, primals, tangents)`` over the perturbed leaves only.

    A leaf whose tangent ``is_zero`` (``SymbolicZero`` in a custom JVP with ``symbolic_zeros=True``;
    ``None`` in :func:`equinox.filter_custom_jvp`) is closed over as a constant instead of being
    given an instantiated zero tangent, so a derivative in q does not push zeros through every
    model parameter (axes, offsets, map coefficients, inertias) of a kernel.  ``(out, None)`` when
    nothing is perturbed.
    """
    flat_p, tree = jax.tree.flatten(primals)
    flat_t = tree.flatten_up_to(tangents)
    live = [i for i, t in enumerate(flat_t) if not is_zero(t)]

    def of_live(*xs):
        full = list(flat_p)
        for i, x in zip(live, xs):
            full[i] = x
        return fn(*jax.tree.unflatten(tree, full))

    if not live:
        return fn(*primals), None
    return jax.jvp(of_live, tuple(flat_p[i] for i in live), tuple(flat_t[i] for i in live))


def batch_last(kernel, out_shape=None):
    """Single-pose function ``fn(model, *arrays)`` from a batch-last ``kernel(model, *arrays)``.

    ``kernel`` must accept its array arguments with any number of trailing batch axes (the same
    number on all of them) and return a pytree whose leaves carry those axes last.  Non-array
    options must be bound before (``functools.partial``); they are static.  Under ``vmap`` the
    kernel runs on the poses moved last, in cache-sized chunks on CPU (:func:`chunk_size`).

    ``out_shape(model, *arrays)`` (optional) gives the single-pose output as a pytree of
    ``jax.ShapeDtypeStruct`` without computing it.  With it the kernel is traced once, for the
    program actually compiled (:func:`_lazy_kernel`); without it ``custom_vmap`` traces the
    single-pose kernel as well before its batching rule traces the batched one.
    """

    if out_shape is not None:
        return _lazy_kernel(kernel, out_shape)

    @functools.wraps(kernel)
    def public(model, *xs):
        dyn, static = eqx.partition(model, eqx.is_array)
        xs = tuple(jnp.asarray(x) for x in xs)

        def plain(d, *a):
            return kernel(eqx.combine(d, static), *a)

        @custom_vmap
        def batched(d, *a):
            return plain(d, *a)

        @batched.def_vmap
        def _rule(axis_size, in_batched, d, *a):
            d_b, *a_b = in_batched
            if any(jax.tree.leaves(d_b)):  # a batch of models: plain vmap
                axes = (jax.tree.map(lambda b: 0 if b else None, d_b),) + tuple(0 if b else None for b in a_b)
                out = jax.vmap(plain, in_axes=axes)(d, *a)
            else:
                moved = tuple(
                    jnp.moveaxis(x, 0, -1) if b else jnp.broadcast_to(x[..., None], x.shape + (axis_size,))
                    for x, b in zip(a, a_b)
                )
                out = _run_chunked(lambda *a: plain(d, *a), moved, axis_size)
                out = jax.tree.map(lambda o: jnp.moveaxis(o, -1, 0), out)
            return out, jax.tree.map(lambda _: True, out)

        @jax.custom_jvp
        def fn(d, *a):
            return batched(d, *a)

        @functools.partial(fn.defjvp, symbolic_zeros=True)
        def _jvp(primals, tangents):
            out, t_out = jvp_of_perturbed(plain, primals, tangents)
            return out, jax.tree.map(jnp.zeros_like, out) if t_out is None else t_out

        return fn(dyn, *xs)

    return public


# --- batch-last kernels traced once: a primitive whose output shapes are declared -----------------
#
# ``custom_vmap`` traces its function when called, so ``jax.vmap(f)`` traces the single-pose kernel
# and then, in the batching rule, the batch-last one: twice the tracing, half of it thrown away (on
# a wrapped arm model that is seconds per program).  ``batch_last_p`` instead carries the kernel as
# a parameter: its abstract evaluation reads the declared output shapes, its batching rule rebinds
# it on batch-last arrays, and the kernel is traced only when the program is lowered (or
# differentiated, by the JVP rule below), at the shapes that program uses.

from jax.extend.core import Primitive as _Primitive  # noqa: E402
from jax.interpreters import ad as _ad  # noqa: E402
from jax.interpreters import batching as _batching  # noqa: E402
from jax.interpreters import mlir as _mlir  # noqa: E402
from jax._src import dispatch as _dispatch  # noqa: E402

batch_last_p = _Primitive("mbjax_batch_last")
batch_last_p.multiple_results = True


def _evaluate(*flat, apply, n_model, n_batch, axis_size, out_avals):
    """The kernel on ``flat`` (model leaves, then arrays with ``n_batch`` trailing batch axes)."""
    model_leaves, xs = flat[:n_model], flat[n_model:]
    if n_batch:
        outs = _run_chunked(lambda *a: apply(*model_leaves, *a), xs, axis_size)
    else:
        outs = apply(*model_leaves, *xs)
    checked = []
    for o, aval in zip(outs, out_avals):
        if tuple(o.shape) != tuple(aval.shape):
            raise AssertionError(f"batch-last kernel {apply.__name__}: output shape {o.shape}, declared {aval.shape}")
        checked.append(o.astype(aval.dtype))
    return checked


def _abstract_eval(*avals, apply, n_model, n_batch, axis_size, out_avals):
    return list(out_avals)


def _batch_rule(args, dims, *, apply, n_model, n_batch, axis_size, out_avals):
    params = dict(apply=apply, n_model=n_model, n_batch=n_batch, axis_size=axis_size, out_avals=out_avals)
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    if n_batch or any(d is not None for d in dims[:n_model]):
        # a second batch axis, or a batch of models: plain vmap of the kernel as it stands
        outs = jax.vmap(functools.partial(_evaluate, **params), in_axes=tuple(dims))(*args)
        return outs, [0] * len(outs)
    moved = tuple(
        jnp.moveaxis(x, d, -1) if d is not None else jnp.broadcast_to(x[..., None], x.shape + (size,))
        for x, d in zip(args[n_model:], dims[n_model:])
    )
    batched_avals = tuple(jax.core.ShapedArray(a.shape + (size,), a.dtype) for a in out_avals)
    outs = batch_last_p.bind(*args[:n_model], *moved, apply=apply, n_model=n_model, n_batch=1, axis_size=size,
                             out_avals=batched_avals)
    return outs, [o.ndim - 1 for o in outs]


def _jvp_rule(primals, tangents, **params):
    """Derivatives of the kernel as written, through the perturbed inputs only (:func:`jvp_of_perturbed`:
    a derivative in q pushes no tangent through the model's parameters)."""
    if all(isinstance(t, _ad.Zero) for t in tangents):
        outs = batch_last_p.bind(*primals, **params)
        return outs, [_ad.Zero.from_primal_value(o) for o in outs]
    return jvp_of_perturbed(lambda *flat: _evaluate(*flat, **params), tuple(primals), tuple(tangents),
                            is_zero=lambda t: isinstance(t, _ad.Zero))


batch_last_p.def_impl(functools.partial(_dispatch.apply_primitive, batch_last_p))
batch_last_p.def_abstract_eval(_abstract_eval)
_batching.primitive_batchers[batch_last_p] = _batch_rule
_ad.primitive_jvps[batch_last_p] = _jvp_rule
_mlir.register_lowering(batch_last_p, _mlir.lower_fun(_evaluate, multiple_results=True))


def _lazy_kernel(kernel, out_shape):
    """:func:`batch_last` with declared output shapes: one ``batch_last_p`` per call."""

    @functools.wraps(kernel)
    def public(model, *xs):
        dyn, static = eqx.partition(model, eqx.is_array)
        xs = tuple(jnp.asarray(x) for x in xs)
        leaves, tree = jax.tree.flatten(dyn)
        shapes = out_shape(model, *xs)
        flat_shapes, out_tree = jax.tree.flatten(shapes)

        def apply(*flat):
            d = jax.tree.unflatten(tree, flat[: len(leaves)])
            return jax.tree.leaves(kernel(eqx.combine(d, static), *flat[len(leaves):]))

        apply.__name__ = getattr(kernel, "__name__", "kernel")
        avals = tuple(jax.core.ShapedArray(tuple(s.shape), jnp.dtype(s.dtype)) for s in flat_shapes)
        outs = batch_last_p.bind(*leaves, *xs, apply=apply, n_model=len(leaves), n_batch=0, axis_size=0,
                                 out_avals=avals)
        return jax.tree.unflatten(out_tree, outs)

    return public
