"""lane_while_loop: each lane's result is lax.while_loop's, batched or not, with forward-mode
derivatives, however unequal the lanes' iteration counts (a few lanes at the limit)."""

import jax
import jax.numpy as jnp
import numpy as np

from mbjax.wrapping._lane_loop import lane_while_loop


def _body(state, x, n):
    v, k = state
    return v * x + jnp.sin(v), k + 1


def _cond(state, x, n):
    return state[1] < n


def _lane(x, n):
    return lane_while_loop(_cond, _body, (jnp.ones(()), jnp.zeros((), jnp.int32)), (x, n), shared=3, chunk=4)


def _reference(x, n):
    return jax.lax.while_loop(lambda s: _cond(s, x, n), lambda s: _body(s, x, n), (jnp.ones(()), jnp.zeros((), jnp.int32)))


def test_batched_lanes_equal_the_unbatched_loop():
    x = jnp.linspace(0.3, 0.9, 37)
    n = jnp.asarray(np.r_[np.arange(30) % 5, [40, 41, 0, 60, 2, 50, 45]])  # a long tail of stragglers
    got = jax.jit(jax.vmap(_lane))(x, n)
    want = [_reference(a, b) for a, b in zip(x, n)]
    np.testing.assert_array_equal(np.asarray(got[1]), [int(w[1]) for w in want])
    np.testing.assert_allclose(np.asarray(got[0]), [float(w[0]) for w in want], rtol=1e-14, atol=0)
    # unbatched consts (n shared by all lanes) and a single lane
    shared_n = jax.vmap(_lane, in_axes=(0, None))(x, 7)[0]
    np.testing.assert_allclose(np.asarray(shared_n), [float(_reference(a, 7)[0]) for a in x], rtol=1e-14)
    assert float(_lane(x[0], n[0])[0]) == float(want[0][0])


def test_forward_mode_derivatives_pass_through():
    x = jnp.linspace(0.3, 0.9, 11)
    n = jnp.asarray([0, 1, 2, 3, 4, 12, 1, 1, 30, 2, 3])
    f = lambda x: jax.vmap(_lane)(x, n)[0]  # noqa: E731
    g = lambda x: jax.vmap(_reference)(x, n)[0]  # noqa: E731
    np.testing.assert_allclose(np.asarray(jax.jacfwd(f)(x)), np.asarray(jax.jacfwd(g)(x)), rtol=1e-12, atol=1e-14)
