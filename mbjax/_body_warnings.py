"""One warning per eager dynamics call for body parameters that are legal but implausible.

The run-time rules (:mod:`mbjax._body_rules`) refuse what no computation can use (NaN, a negative
mass, an asymmetric inertia); they do not refuse an inertia that is not positive semidefinite,
because identification leaves unobservable moments anywhere and some library files carry one.
Called eagerly with concrete parameters (and checks on), :func:`warn_implausible_bodies` names each
body whose inertia has a negative principal moment (no mass distribution has it: the dynamics are
computed anyway, and ``forward_dynamics`` may accelerate the wrong way) or whose centre of mass lies
farther than :data:`FARTHEST_COM` from its body frame (millimetres given as metres?).  Under
``jit``/``vmap`` (traced parameters) it does nothing; each set of parameter arrays is judged once.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np

from ._checks import checks_enabled

#: a centre of mass farther than this (m) from its body's frame is no body segment: millimetres?
FARTHEST_COM = 10.0

_JUDGED: list = []  # the parameter arrays last judged (identity), so a loop of eager calls warns once


def warn_implausible_bodies(model, where: str, stacklevel: int = 3) -> None:
    """Warn (``UserWarning``, naming ``where`` and each body) about a negative-definite direction of an
    inertia or a centre of mass beyond :data:`FARTHEST_COM`; nothing when traced or checks are off."""
    arrays = tuple(getattr(model, k, None) for k in ("mass", "com", "inertia"))
    if not checks_enabled() or any(a is None or isinstance(a, jax.core.Tracer) for a in arrays):
        return
    if any(all(a is b for a, b in zip(arrays, seen)) for seen in _JUDGED):
        return
    _JUDGED[:] = [arrays] + _JUDGED[:7]
    mass, com, inertia = (np.asarray(a, dtype=float) for a in arrays)
    if mass.shape != (model.n_bodies,) or com.shape != mass.shape + (3,) or inertia.shape != mass.shape + (3, 3):
        return  # refused by shape where it is used
    sym = 0.5 * (inertia + np.swapaxes(inertia, -1, -2))
    finite = np.all(np.isfinite(sym), axis=(1, 2)) & np.all(np.isfinite(com), axis=1)  # else refused by the rules
    scale = np.maximum(np.max(np.abs(np.where(finite[:, None, None], sym, 0.0)), axis=(1, 2)), np.finfo(float).tiny)
    eig = np.linalg.eigvalsh(np.where(finite[:, None, None], sym, 0.0))  # (nb, 3), ascending
    distance = np.linalg.norm(np.where(finite[:, None], com, 0.0), axis=1)
    negative = finite & (eig[:, 0] < -1e-6 * scale)
    far = finite & (mass > 0) & (distance > FARTHEST_COM)
    found = []
    for b in np.nonzero(negative | far)[0]:  # only the bodies named in the warning
        name = model.body_names[b]
        if negative[b]:
            found.append(f"body {name!r}: inertia has a negative principal moment (principal moments "
                         f"{np.round(eig[b], 12).tolist()}): no mass distribution has it (the sign flipped?)")
        if far[b]:
            found.append(f"body {name!r}: centre of mass {com[b].tolist()} lies {distance[b]:.6g} m from its body "
                         f"frame, farther than {FARTHEST_COM:g} m (it looks like millimetres: mbjax takes metres, "
                         "divide by 1000)")
    if found:
        more = f"; and {len(found) - 6} more" if len(found) > 6 else ""
        warnings.warn(f"{where}: implausible body parameters (changed after loading? eqx.tree_at or a fit step): "
                      + "; ".join(found[:6]) + more + " (computed anyway; mbjax.config.checks(False) silences this)",
                      UserWarning, stacklevel=stacklevel)
