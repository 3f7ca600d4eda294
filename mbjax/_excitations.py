"""Excitation signals u(t) ``(nm,)`` as ``eqx.Module`` objects (their numbers are dynamic leaves).

Passed as ``excitations`` to :func:`mbjax.simulate_muscles`: a new instance with new numbers (same
shapes) reuses the compiled solve.  Any callable ``t -> (nm,)`` works too (a plain function is a
static argument, hashed by identity).

* :class:`ConstantExcitation`: u(t) = u₀ (OpenSim: a ``PrescribedController`` with ``Constant``
  functions);
* :class:`PiecewiseLinearExcitation`: linear interpolation between knots, constant outside
  (OpenSim: ``PiecewiseLinearFunction`` controls).  Its kinks are where an adaptive solver should
  stop: pass the knots as ``jump_ts`` of a ``diffrax.PIDController`` for tight tolerances.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


class ConstantExcitation(eqx.Module):
    """u(t) = ``values`` ``(nm,)``."""

    values: jnp.ndarray

    def __call__(self, t):
        return jnp.asarray(self.values)


class PiecewiseLinearExcitation(eqx.Module):
    """Linear interpolation of ``values`` ``(n, nm)`` at increasing knot ``times`` ``(n,)``."""

    times: jnp.ndarray
    values: jnp.ndarray

    def __call__(self, t):
        return jax.vmap(lambda col: jnp.interp(t, self.times, col), in_axes=1)(jnp.asarray(self.values))
