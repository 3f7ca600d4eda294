"""Constant joint map: a joint whose variable never moves (a weld expressed as a joint)."""

from __future__ import annotations

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._base import AbstractJointMap, real_param


class Constant(AbstractJointMap):
    """``f(q) = c``; ∇f = 0, H = 0.  Reads no coordinate."""

    constant: jnp.ndarray  # (n_maps,)
    coordinates: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    arity: ClassVar[int | None] = 0

    def __init__(self, value=0.0):
        value = jnp.atleast_1d(real_param(value, "Constant", "value"))
        if value.ndim != 1:
            raise ValueError(f"Constant: value must be a number (or a 1-D stack of numbers), got shape {value.shape}")
        self.constant = value
        self.coordinates = ((),) * self.constant.shape[0]

    def local(self, x):
        n = self.constant.shape[0]
        k = x.shape[-1]
        zeros = jnp.zeros((n, k), self.constant.dtype)
        return self.constant, zeros, jnp.zeros((n, k, k), self.constant.dtype)

    @classmethod
    def fit(cls, samples):
        """Least-squares constant: the mean of the samples."""
        return cls(float(np.mean(np.asarray(samples))))
