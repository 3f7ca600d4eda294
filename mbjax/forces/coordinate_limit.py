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
``c = damping / w``.  (OpenSim divides by ``k_up``/``k_low``: a zero stiffness, NaN there in
OpenSim, is refused at construction.)
"""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp

import numpy as np

from . import _params
from .. import _checks
from .base import CoordinateSpring, CoordinateValues


def smooth_step(x, x0, x1, y0, y1):
    """Simbody's ``Function::Step``: quintic ``stepUp`` from ``(x0, y0)`` to ``(x1, y1)`` (``x1 > x0``).

    ``x1 <= x0`` raises ``ValueError`` (concrete ends) or a run-time error, as does NaN or inf in any
    argument (checks on)."""
    args = {}
    for name, v in (("x", x), ("x0", x0), ("x1", x1), ("y0", y0), ("y1", y1)):
        args[name] = _checks.real_array(v, f"smooth_step: {name} must be a real number or array",
                                        f"smooth_step: {name} must be real")
    x, x0, x1, y0, y1 = args.values()
    try:
        jnp.broadcast_shapes(*(a.shape for a in args.values()))
    except ValueError:
        raise ValueError("smooth_step: x, x0, x1, y0, y1 must broadcast together, got shapes "
                         f"{tuple(tuple(a.shape) for a in args.values())}") from None
    if _params.concrete(x0, x1) and np.any(np.asarray(x1) <= np.asarray(x0)):
        raise ValueError(f"smooth_step: need x1 > x0 (the step rises from x0 to x1), got x0 = "
                         f"{np.asarray(x0).tolist()}, x1 = {np.asarray(x1).tolist()}")
    rules = [_checks.not_finite(a, f"smooth_step: {n}") for n, a in args.items() if jnp.issubdtype(a.dtype, jnp.inexact)]
    x = _checks.all_of(x, rules + [(x1 <= x0, "smooth_step: need x1 > x0 (the step rises from x0 to x1)")])
    return _step(x, x0, x1, y0, y1)


def _step(x, x0, x1, y0, y1):
    """:func:`smooth_step` without checks (the force law; its ends are checked at construction)."""
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

    def __check_init__(self):
        kind, names = "CoordinateLimitForce", self.element_names
        _params.check_names(kind, names, len(self.coordinates.index))
        for field, value, sign in (("q_up (upper_limit)", self.q_up, None), ("q_low (lower_limit)", self.q_low, None),
                                   ("k_up (upper_stiffness; OpenSim divides by it)", self.k_up, "pos"),
                                   ("k_low (lower_stiffness; OpenSim divides by it)", self.k_low, "pos"),
                                   ("damping", self.damping, "warn"), ("width (transition)", self.width, "pos")):
            _params.check_param(kind, names, field, value, (), sign)
        if _params.concrete(self.q_up, self.q_low):
            bad = np.flatnonzero(np.asarray(self.q_low) > np.asarray(self.q_up))
            if bad.size:
                i = int(bad[0])
                raise ValueError(f"{kind} {names[i]!r}: lower_limit {float(self.q_low[i])} is above upper_limit "
                                 f"{float(self.q_up[i])} (SI units; limits the wrong way round?)")

    @classmethod
    def from_opensim(cls, model, names, coordinates, rotational, upper_stiffness, upper_limit, lower_stiffness,
                     lower_limit, damping, transition):
        """Build from OpenSim's properties (per-degree for rotational coordinates), ``(n,)`` each."""
        names = _checks.names(names, "names", "CoordinateLimitForce.from_opensim")
        rot = jnp.asarray(rotational)
        if rot.shape == () and len(names) == 1:  # one element's flag
            rot = rot[None]
        if rot.shape != (len(names),) or rot.dtype != jnp.bool_:
            raise ValueError(f"CoordinateLimitForce.from_opensim: rotational must be booleans of shape ({len(names)},) "
                             f"(one per element {names}), got {rot.dtype}{tuple(rot.shape)}")
        w = jnp.where(rot, jnp.pi / 180.0, 1.0)

        def a(v, field):
            v = _params.floats(v, "CoordinateLimitForce", field)
            if v.shape != (len(names),):
                raise ValueError(f"CoordinateLimitForce: {field} must have shape ({len(names)},) (one per element "
                                 f"{names}), got {tuple(v.shape)}")
            return v

        return cls(CoordinateValues.one_each(model, coordinates), w * a(upper_limit, "upper_limit"),
                   w * a(lower_limit, "lower_limit"), a(upper_stiffness, "upper_stiffness") / w,
                   a(lower_stiffness, "lower_stiffness") / w, a(damping, "damping") / w,
                   w * a(transition, "transition"), names)

    def element_coordinates(self, model, q):
        return self.coordinates(q)

    def law(self, q, qd):
        k_up = _step(q, self.q_up, self.q_up + self.width, 0.0, self.k_up)
        k_low = _step(q, self.q_low - self.width, self.q_low, self.k_low, 0.0)
        f_up = -k_up * (q - self.q_up)
        f_low = k_low * (self.q_low - q)
        f_damp = -self.damping * (k_up / self.k_up + k_low / self.k_low) * qd
        return f_up + f_low + f_damp
