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


def warn_outside_ranges(model, names, values, source: str, in_degrees: bool | None, stacklevel: int = 3,
                        times=None, cause: str = "") -> None:
    """Warn naming each coordinate of ``names`` whose ``values (T, k)`` (model units) leave its range
    by more than the range's width, and each rotational one beyond :data:`RADIAN_LIMIT` read from a
    file labelled radians (``in_degrees`` False; ``None``: values that were not read from a file, e.g.
    a solver's result, for which that is only "far outside").  With ``times (T,)`` each coordinate's
    first such time is named; ``cause`` is appended to the warning (the likely reason)."""
    info = model.extras.get("osim")
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
        v_min, v_max = float(np.min(col)), float(np.max(col))
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
