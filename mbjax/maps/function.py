"""Generic joint map from any smooth JAX function; ∇f and H come from autodiff."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from ._base import AbstractJointMap, as_coordinates


class FunctionMap(AbstractJointMap):
    """``f(q) = fn(params, x)`` for a user function of the local inputs ``x`` (shape ``(k,)``).

    ``params`` is any pytree of arrays (differentiable model parameters).  ∇f and H are computed
    with ``jax.grad`` and ``jax.hessian``, so this family is the autodiff route, not a closed form.
    Maps with different functions never stack (``fn`` is static).
    """

    params: Any
    fn: Callable = eqx.field(static=True)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = None

    def __init__(self, fn, coordinates, params=None, *, _stacked=False):
        self.fn = fn
        if _stacked:
            self.coordinates = coordinates
            self.params = params
        else:
            self.coordinates = (as_coordinates(coordinates, None, "FunctionMap"),)
            self.params = jax.tree.map(lambda a: jnp.asarray(a)[None], params)

    def local(self, x):
        def one(p, xi):
            f = lambda z: self.fn(p, z)
            return f(xi), jax.grad(f)(xi), jax.hessian(f)(xi)

        return jax.vmap(one)(self.params, x)

    def value(self, x):
        return jax.vmap(self.fn)(self.params, x)

    def group_key(self):
        return (type(self), self.fn, id(self))

    @classmethod
    def stack(cls, maps):
        maps = list(maps)
        if len(maps) != 1:
            raise ValueError("FunctionMap instances do not stack; keep one per group")
        return maps[0]
