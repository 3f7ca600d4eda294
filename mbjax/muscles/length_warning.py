"""One warning per eager call for muscle lengths and speeds that look like the wrong units.

The muscle functions compute anywhere the equations are defined, so values that are legal but
implausible for metres (a length in millimetres, a joint speed in deg/s) would give forces of 0
without a word.  Called eagerly with concrete arrays (and checks on), :func:`warn_implausible`
names each muscle whose path length, fibre or tendon slack length exceeds
:data:`LONGEST_MUSCLE_LENGTH` (the limit the ``.osim`` reader warns at), whose path is shorter than
its tendon slack length (the fibre at its minimum length, as OpenSim warns), or whose path speed
exceeds twice its fastest fibre speed ``max_contraction_velocity * optimal_fiber_length``.  Under
``jit``/``vmap`` (traced arrays) it does nothing.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np

from .._checks import checks_enabled
from .parameters import HILL_KINDS, MUSCLE_DEFAULTS

#: a muscle length (m) above this is no human muscle: millimetres given as metres?
LONGEST_MUSCLE_LENGTH = 2.0

#: a path speed above this multiple of the fibre's fastest speed (m/s) looks like a joint speed in deg/s
FASTEST_PATH_SPEED = 2.0


def _concrete(x):
    """``x`` as a float array, or None when it is traced (or absent)."""
    if x is None or isinstance(x, jax.core.Tracer):
        return None
    return np.asarray(x, dtype=float)


def _parameter(paths, key):
    """A parameter ``(nm,)`` with OpenSim's default where absent, or None when traced."""
    given = paths.parameters.get(key)
    if given is None:
        return np.full(paths.n_muscles, MUSCLE_DEFAULTS[key])
    v = _concrete(given)
    return None if v is None else np.where(np.isnan(v), MUSCLE_DEFAULTS[key], v)


def warn_implausible(paths, where: str, length=None, speed=None, stacklevel: int = 3, slack: bool = True) -> None:
    """Warn (``UserWarning``, naming ``where`` and each muscle) about values that look like the
    wrong units; ``length``/``speed`` ``(nm,)`` (or ``(T, nm)``, frames): path lengths (m) and lengthening
    speeds (m/s); ``slack=False``: no warning for a path shorter than its tendon slack length."""
    if not checks_enabled() or paths.n_muscles == 0:
        return
    keys = ("optimal_fiber_length", "tendon_slack_length", "max_contraction_velocity")
    values = {k: _parameter(paths, k) for k in keys}
    if any(v is None for v in values.values()) or any(isinstance(x, jax.core.Tracer) for x in (length, speed)):
        return  # traced: nothing concrete to judge
    hill = np.asarray([k in HILL_KINDS for k in paths.kinds], bool)
    length, speed = _concrete(length), _concrete(speed)
    nm = paths.n_muscles
    if any(x is not None and x.shape[-1:] != (nm,) for x in (length, speed)) \
            or any(v.shape != (nm,) for v in values.values()):
        return  # another shape: refused where it is used
    if length is not None and length.shape[-1:] == (nm,) and length.ndim > 1:  # frames: the extremes
        longest, length = np.max(length.reshape(-1, nm), axis=0), np.min(length.reshape(-1, nm), axis=0)
    else:
        longest = length
    if speed is not None and speed.ndim > 1:
        speed = np.max(np.abs(speed.reshape(-1, nm)), axis=0)
    found = []
    for m, name in enumerate(paths.names):
        if not hill[m]:
            continue
        ofl, tsl, vmax = (values[k][m] for k in keys)
        for key, value in (("optimal_fiber_length", ofl), ("tendon_slack_length", tsl),
                           ("path length", None if longest is None else longest[m])):
            if value is not None and value > LONGEST_MUSCLE_LENGTH:
                found.append(f"muscle {name!r}: {key} = {value:.6g} m is longer than {LONGEST_MUSCLE_LENGTH:g} m "
                             "(it looks like millimetres: mbjax takes metres, divide by 1000"
                             + (")" if key == "path length" else "; was the model changed after loading?)"))
        if slack and length is not None and 0 < length[m] < tsl <= LONGEST_MUSCLE_LENGTH:
            found.append(f"muscle {name!r}: path length {length[m]:.6g} m is shorter than its tendon_slack_length "
                         f"{tsl:.6g} m: the tendon is slack, the fibre at its minimum length, the force 0 "
                         "(OpenSim warns the same)")
        fastest = vmax * ofl
        if speed is not None and np.isfinite(fastest) and abs(speed[m]) > FASTEST_PATH_SPEED * fastest:
            found.append(f"muscle {name!r}: path speed {speed[m]:.6g} m/s is more than {FASTEST_PATH_SPEED:g} times "
                         f"its fastest fibre speed max_contraction_velocity * optimal_fiber_length = {fastest:.6g} "
                         "m/s (a joint speed qd in deg/s? mbjax takes rad/s)")
    if found:
        more = f"; and {len(found) - 6} more" if len(found) > 6 else ""
        warnings.warn(f"{where}: implausible muscle values: " + "; ".join(found[:6]) + more
                      + " (computed anyway; mbjax.config.checks(False) silences this)", UserWarning,
                      stacklevel=stacklevel)
