"""Coordinate data judged against the model: a value far outside a coordinate's range, or a
rotation too large for radians, is named in a warning before a tool computes from it.

OpenSim's tools compute from whatever the file holds; a ``.mot`` whose header says
``inDegrees=no`` over values in degrees gives torques off by orders of magnitude without a word.
mbjax computes too (a user may mean a value outside a range) but says which coordinate, how far
and the likely cause.
"""

from __future__ import annotations

import warnings

import numpy as np


#: a rotational coordinate beyond two turns (rad) is read as "degrees labelled as radians"
RADIAN_LIMIT = 4.0 * np.pi
#: a file labelled degrees whose rotational values all stay within one turn's number (2 pi), one of
#: which moves by at least this much over at least :data:`RADIANS_DURATION` s, looks like radians
RADIANS_MOTION = 0.5
RADIANS_DURATION = 0.5


def rotational_flags(model) -> np.ndarray:
    """Which model coordinates OpenSim 4 treats as rotational (``model.osim.motion_types``, derived
    from the joints at load: :mod:`mbjax.opensim.model.osim_motion`)."""
    return np.array([m == "rotational" for m in model.osim.motion_types])


def warn_outside_ranges(model, names, values, source: str, in_degrees: bool | None, stacklevel: int = 3,
                        times=None, cause: str = "") -> None:
    """Warn naming each coordinate of ``names`` whose ``values (T, k)`` (model units) leave its range
    by more than the range's width, and each rotational one beyond :data:`RADIAN_LIMIT` read from a
    file labelled radians (``in_degrees`` False; ``None``: values that were not read from a file, e.g.
    a solver's result, for which that is only "far outside").  With ``times (T,)`` each coordinate's
    first such time is named; ``cause`` is appended to the warning (the likely reason)."""
    info = model.osim
    if info is None or not len(names):
        return
    coords = list(model.coordinate_names)
    values = np.asarray(values, float)
    lines, units = [], []
    for k, name in enumerate(names):
        i = coords.index(name)
        col = values[:, k]
        lo, hi = float(info.lower[i]), float(info.upper[i])
        rotational = info.motion_types[i] == "rotational"
        far = max(hi - lo, 1e-3 if not rotational else np.radians(10.0))
        finite = col[np.isfinite(col)]  # a NaN frame is another check's (the extremes are of the numbers)
        if not finite.size:
            continue
        v_min, v_max = float(np.min(finite)), float(np.max(finite))
        outside = (col < lo - far) | (col > hi + far)
        at = f" (first at t = {float(times[np.argmax(outside)]):.6g} s)" if times is not None and outside.any() else ""
        if rotational and in_degrees is not None and not in_degrees and max(abs(v_min), abs(v_max)) > RADIAN_LIMIT:
            units.append(f"{name} reaches {max(v_min, v_max, key=abs):.4g} rad")
        elif outside.any():
            worst = v_min if lo - v_min > v_max - hi else v_max
            lines.append(f"{name} reaches {worst:.4g}, range [{lo:.4g}, {hi:.4g}]{at}")
    if units:
        warnings.warn(f"{source}: rotational coordinate(s) beyond two turns: {'; '.join(units)}. Is the file in "
                      "degrees? Its header says inDegrees=no or has no inDegrees line (values read as radians)",
                      stacklevel=stacklevel)
    if lines:
        warnings.warn(f"{source}: coordinate(s) far outside their range (by more than its width): "
                      f"{'; '.join(lines)}{cause}", stacklevel=stacklevel)


def warn_radians_as_degrees(model, names, values, source: str, duration: float, stacklevel: int = 3) -> None:
    """Warn when a file labelled degrees looks like radians: over a trial of at least
    :data:`RADIANS_DURATION` s, every rotational column of ``names`` (``values (T, k)`` converted to
    radians) holds file values within [-2 pi, 2 pi] and one moves by at least :data:`RADIANS_MOTION`
    (real degree trials reach tens of degrees; a short clip may be still)."""
    if model.osim is None or not len(names) or not duration >= RADIANS_DURATION:
        return
    rot = rotational_flags(model)
    coords = list(model.coordinate_names)
    cols = [k for k, n in enumerate(names) if rot[coords.index(n)]]
    if not cols:
        return
    raw = np.degrees(np.asarray(values, float)[:, cols])  # the numbers in the file
    if not np.all(np.isfinite(raw)) or np.max(np.abs(raw)) > 2 * np.pi:
        return
    moves = np.max(raw, axis=0) - np.min(raw, axis=0)
    k = int(np.argmax(moves))
    if moves[k] < RADIANS_MOTION:
        return
    name = names[cols[k]]
    warnings.warn(f"{source}: the header says inDegrees=yes, but every rotational coordinate stays within "
                  f"+-2 pi (e.g. {name} from {np.min(raw[:, k]):.4g} to {np.max(raw[:, k]):.4g}, read as degrees); "
                  "the values look like radians: if so, set inDegrees=no in the file's header", stacklevel=stacklevel)
