"""``lane_while_loop``: a per-lane ``while_loop`` whose ``vmap`` does not wait for the slowest lane.

The surfaces' iterations (a cylinder's tangency restarts, an ellipsoid's tangent-point and
Newton iterations) are written for one segment and ``vmap``-ped over many (muscles × poses ×
segments).  ``jax.vmap`` of ``lax.while_loop`` runs the body on *every* lane until the last lane
stops, so one lane that needs OpenSim's iteration limit (a cylinder's 100 restarts that never
become tangent) makes the whole batch pay it: on the MoBL arm that was most of the time per pose.

Here, under ``vmap`` (a ``custom_vmap`` rule), all lanes share the first ``shared`` iterations
(almost every lane has stopped by then); the lanes still running are then gathered ``chunk`` at a
time and run apart to their end.  Each lane goes through exactly the iterations the unbatched
loop would, so its values are those of ``lax.while_loop``.  Gathers and scatters are linear, so
forward-mode derivatives (``jvp``, ``jacfwd``: what moment arms use) pass through; like any
``while_loop`` it is not reverse-mode differentiable by itself: the surfaces that use it get a
transposable JVP rule in :mod:`~mbjax.wrapping._jacobian_rule`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

#: iterations every lane of a batch runs together before the lanes still running are compacted
SHARED_ITERATIONS = 8
#: lanes per compacted chunk of the remaining iterations, at least
CHUNK_LANES = 16
#: compacted chunks per batch, at most (larger batches get larger chunks): every iteration of a
#: chunk costs a loop step whose fixed cost on CPU exceeds a few hundred lanes' arithmetic, so a
#: batch with many slow lanes (a cylinder's 100 restarts) must not run them 16 at a time
MAX_APART_CHUNKS = 8


def _select(mask, new, old):
    return jax.tree.map(lambda n, o: jnp.where(mask.reshape(mask.shape + (1,) * (n.ndim - 1)), n, o), new, old)


def lane_while_loop(cond_fun, body_fun, init_val, consts=(), shared: int = SHARED_ITERATIONS,
                    chunk: int = CHUNK_LANES, max_chunks: int = MAX_APART_CHUNKS):
    """``lax.while_loop(lambda s: cond_fun(s, *consts), lambda s: body_fun(s, *consts), init_val)``
    for one lane (see the module docstring).

    ``cond_fun`` and ``body_fun`` must not close over traced values: pass them in ``consts``
    (a tuple of arrays; the ones batched by an outer ``vmap`` are gathered with the lanes).
    The lanes still running after ``shared`` iterations go on in compacted chunks of
    ``max(chunk, n / max_chunks)`` lanes.
    """
    consts = tuple(jnp.asarray(c) for c in consts)

    @custom_vmap
    def run(consts, init):
        return jax.lax.while_loop(lambda s: cond_fun(s, *consts), lambda s: body_fun(s, *consts), init)

    @run.def_vmap
    def run_batched(n, in_batched, consts, init):
        b_consts, b_init = in_batched
        consts = tuple(jnp.asarray(x) for x in consts)  # (the rule may receive numpy constants)
        if not any(jax.tree.leaves((b_consts, b_init))):
            # nothing batched (JAX calls the rule so when only tangents are: vmap of jvp at a
            # shared primal): one loop, outputs unbatched
            out = jax.lax.while_loop(lambda s: cond_fun(s, *consts), lambda s: body_fun(s, *consts), init)
            return out, jax.tree.map(lambda _: False, out)
        init = jax.tree.map(lambda x, b: jnp.asarray(x) if b else jnp.broadcast_to(x, (n,) + jnp.shape(x)),
                            init, b_init)
        axes = tuple(0 if b else None for b in b_consts)
        vbody = jax.vmap(body_fun, in_axes=(0,) + axes)
        vcond = jax.vmap(cond_fun, in_axes=(0,) + axes)

        def step(state, live, cs):  # one iteration of the lanes still running
            state = _select(live, vbody(state, *cs), state)
            return state, live & vcond(state, *cs)

        def together(c):
            state, live, it = c
            return step(state, live, consts) + (it + 1,)

        live = vcond(init, *consts)
        state, live, _ = jax.lax.while_loop(lambda c: (c[2] < shared) & jnp.any(c[1]), together, (init, live, 0))
        size = min(n, max(chunk, -(-n // max_chunks)))

        def apart(c):  # the first `size` lanes still running, to their end
            state, live = c
            idx = jnp.nonzero(live, size=size, fill_value=n)[0]
            safe = jnp.minimum(idx, n - 1)
            cs = tuple(x[safe] if b else x for x, b in zip(consts, b_consts))
            sub = jax.tree.map(lambda x: x[safe], state)
            sub, _ = jax.lax.while_loop(lambda s: jnp.any(s[1]), lambda s: step(*s, cs), (sub, live[safe] & (idx < n)))
            state = jax.tree.map(lambda x, y: x.at[idx].set(y, mode="drop"), state, sub)
            return state, live.at[idx].set(False, mode="drop")

        state, _ = jax.lax.while_loop(lambda c: jnp.any(c[1]), apart, (state, live))
        return state, jax.tree.map(lambda _: True, state)

    return run(consts, init_val)
