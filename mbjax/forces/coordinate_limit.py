"""OpenSim's ``CoordinateLimitForce``: smooth one-sided springs and damping beyond a coordinate's limits.

``CoordinateLimitForce::calcLimitForce`` (OpenSim 4.x), in SI units (a rotational coordinate's
limits, stiffnesses, damping and transition are given per degree; ``w = π/180`` converts, ``w = 1``
for translational ones):

* ``K_up(q)  = Step(0 → k_up,  q_up  → q_up + w·transition)``,
* ``K_low(q) = Step(k_low → 0, q_low - w·transition → q_low)``,
* ``f = -K_up (q - q_up) + K_low (q_low - q) - c (K_up/k_up + K_low/k_low) q̇``,

with ``Step`` Simbody's ``Function::Step``: ``y0`` before ``x0``, ``y1`` after ``x1`` and
``y0 + (y1 - y0) s³(10 - 15 s + 6 s²)`` between (``s = (x - x0)/(x1 - x0)``, the quintic
``stepUp``: C² at both ends).  ``q_up = w·upper_limit``, ``k_up = upper_stiffness / w``,
``c = damping / w``.  (OpenSim divides by ``k_up``/``k_low``: a zero stiffness gives NaN there as
it does in OpenSim.)
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

from .base import CoordinateSpring, CoordinateValues


def smooth_step(x, x0, x1, y0, y1):
    """Simbody's ``Function::Step``: quintic ``stepUp`` from ``(x0, y0)`` to ``(x1, y1)`` (``x1 > x0``)."""
    s = jnp.clip((x - x0) / (x1 - x0), 0.0, 1.0)
    return y0 + (y1 - y0) * s * s * s * (10.0 + s * (6.0 * s - 15.0))


class CoordinateLimitForce(CoordinateSpring):
    """A stack of ``n`` CoordinateLimitForces (parameters in SI units, ``(n,)`` each)."""

    coordinates: CoordinateValues
    q_up: jnp.ndarray
    q_low: jnp.ndarray
    k_up: jnp.ndarray
    k_low: jnp.ndarray
    damping: jnp.ndarray
    width: jnp.ndarray  # w · transition (SI)
    element_names: tuple[str, ...] = eqx.field(static=True)


    @classmethod
    def from_opensim(cls, model, names, coordinates, rotational, upper_stiffness, upper_limit, lower_stiffness,
                     lower_limit, damping, transition):
        """Build from OpenSim's properties (per-degree for rotational coordinates)."""
        w = jnp.where(jnp.asarray(rotational), jnp.pi / 180.0, 1.0)
        a = lambda v: jnp.asarray(v, dtype=float)  # noqa: E731
        return cls(CoordinateValues.of(model, coordinates), w * a(upper_limit), w * a(lower_limit),
                   a(upper_stiffness) / w, a(lower_stiffness) / w, a(damping) / w, w * a(transition), tuple(names))

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        k_up = smooth_step(q, self.q_up, self.q_up + self.width, 0.0, self.k_up)
        k_low = smooth_step(q, self.q_low - self.width, self.q_low, self.k_low, 0.0)
        f_up = -k_up * (q - self.q_up)
        f_low = k_low * (self.q_low - q)
        f_damp = -self.damping * (k_up / self.k_up + k_low / self.k_low) * qd
        return f_up + f_low + f_damp
