"""Generic joint map from any smooth JAX function; ∇f and H come from autodiff."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, as_coordinates, is_concrete


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
        if not callable(fn):
            raise TypeError(f"FunctionMap: fn must be a function fn(params, x) of the local inputs, got "
                            f"{type(fn).__name__}")
        self.fn = fn
        if _stacked:
            self.coordinates = coordinates
            self.params = params
        else:
            coords = as_coordinates(coordinates, None, "FunctionMap")
            self.coordinates = (coords,)
            leaves = jax.tree.leaves(params)
            if is_concrete(params) and not all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in leaves):
                raise ValueError(f"FunctionMap: params must be finite (no NaN or inf), got {params!r}")
            out = jax.eval_shape(fn, params, jax.ShapeDtypeStruct((len(coords),), jnp.result_type(float)))
            if not hasattr(out, "shape") or out.shape != ():
                raise ValueError(f"FunctionMap: fn(params, x) must return a scalar for x of shape ({len(coords)},) "
                                 f"(coordinates {coords}), got {getattr(out, 'shape', type(out).__name__)}")
            if not jnp.issubdtype(out.dtype, jnp.floating):
                raise TypeError(f"FunctionMap: fn(params, x) must return a real floating-point scalar (coordinates "
                                f"{coords}), got dtype {out.dtype}: the joint value is differentiated (an int "
                                "constant? use Constant or return a float; complex? return the real part)")
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
