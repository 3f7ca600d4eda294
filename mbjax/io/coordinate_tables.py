"""Model coordinates to and from ``.mot``/``.sto`` tables: columns matched to coordinates, rotational
ones converted between degrees and radians as OpenSim converts them."""

from __future__ import annotations

import os
import warnings

import numpy as np

from .._checks import names as _names
from .._model import require_model
from .osim_coordinates import coordinate_names, coordinate_values
from .motion_ranges import rotational_flags as _rotational, warn_outside_ranges, warn_radians_as_degrees
from .table import Table


def coordinates_from_table(model, table: Table, missing: str = "error", rotational=None) -> np.ndarray:
    """The model's coordinates ``(T, nq)`` in radians / metres from a table.

    A column matches coordinate ``c`` when its label is ``c`` or a path ending in ``/c/value`` or
    ``/c`` (OpenSim 4 writes ``/jointset/r_shoulder/r_shoulder_elev/value``).  Rotational coordinates
    (OpenSim 4's motion types, :mod:`mbjax.opensim.model.osim_motion`, read from the model's ``.osim``; or the
    names in ``rotational``) are converted from degrees when ``table.in_degrees``, as
    ``SimbodyEngine::convertDegreesToRadians`` converts them.  A coordinate without a column raises
    (``missing="error"``) or takes its default value (``missing="default"``).  Extra columns (speeds, locked or coupled coordinates)
    are ignored.
    """
    require_model(model, "coordinates_from_table")
    names = model.coordinate_names
    info = getattr(model, "osim", None)
    if rotational is not None:
        given = _names(rotational, "rotational", "coordinates_from_table")
        unknown = [n for n in given if n not in names]
        if unknown:
            raise ValueError(f"coordinates_from_table: rotational names unknown coordinate(s) {unknown}; the model's "
                             f"coordinates are {names}")
        rot = np.array([n in set(given) for n in names])
    elif info is not None:
        rot = _rotational(model)
    elif table.in_degrees:
        raise ValueError("table is in degrees but the model has no OpenSim motion types: pass rotational=[names]")
    else:
        rot = np.zeros(len(names), bool)
    default = np.asarray(info.default) if info is not None else np.zeros(len(names))
    columns: dict[str, list[int]] = {}
    for k, lab in enumerate(table.labels):
        parts = lab.strip("/").split("/")
        key = parts[-2] if len(parts) >= 2 and parts[-1] == "value" else parts[-1]
        if parts[-1] in ("speed", "acceleration") and len(parts) >= 2:
            continue
        columns.setdefault(key, []).append(k)
    index = {key: ks[0] for key, ks in columns.items()}
    _warn_conflicting_columns(table, columns, names)
    _warn_wrong_joints(table, info, names)
    out = np.empty((table.data.shape[0], len(names)))
    lost = []
    for i, n in enumerate(names):
        if n in index:
            col = table.data[:, index[n]]
            out[:, i] = np.deg2rad(col) if (table.in_degrees and rot[i]) else col
        else:
            lost.append(n)
            out[:, i] = default[i]
    nan = [(n, np.flatnonzero(np.isnan(out[:, i]))) for i, n in enumerate(names) if n in index]
    nan = [(n, rows) for n, rows in nan if rows.size]
    if nan:
        time, file = np.asarray(table.time, float).reshape(-1), (table.metadata or {}).get("source_file")
        shown = "; ".join(f"{n!r} at {rows.size} row(s): " + ", ".join(
            f"row {int(r) + 1}" + (f" (time {float(time[r])!r})" if r < time.size else "") for r in rows[:3])
            + (" ..." if rows.size > 3 else "") for n, rows in nan)
        warnings.warn(f"coordinates_from_table: {file + ': ' if file else ''}coordinate(s) read as NaN (missing in "
                      f"the table): {shown}; every result at those rows is NaN: fill or drop the rows", stacklevel=2)
    if lost and missing == "error":
        raise ValueError(f"table has no column for coordinate(s) {lost}; columns are {table.labels} "
                         "(missing='default' uses default values)")
    if missing not in ("error", "default"):
        raise ValueError(f"missing must be 'error' or 'default', got {missing!r}")
    if info is not None:  # the tools' rule: far outside the range, or degrees labelled radians
        meta = table.metadata or {}
        file = meta.get("source_file") or meta.get("file")
        source = (f"coordinates file {file}" if file
                  else f"coordinates table {meta['name']!r}" if meta.get("name") else "coordinates table")
        read = [i for i, n in enumerate(names) if n in index]
        warn_outside_ranges(model, [names[i] for i in read], out[:, read], f"coordinates_from_table: {source}",
                            table.in_degrees, stacklevel=3, times=np.asarray(table.time, float))
        if table.in_degrees:
            time = np.asarray(table.time, float)
            warn_radians_as_degrees(model, [names[i] for i in read], out[:, read], f"coordinates_from_table: {source}",
                                    float(time[-1] - time[0]) if time.size else 0.0, stacklevel=3)
    return out


def _warn_conflicting_columns(table: Table, columns: dict, names) -> None:
    """Warn where two columns (e.g. ``hip_flexion`` and ``/jointset/hip/hip_flexion/value``) give one
    coordinate different values: the first is used."""
    data = np.asarray(table.data, dtype=float)
    for n in names:
        ks = columns.get(n, [])
        for k in ks[1:]:
            a, b = data[:, ks[0]], data[:, k]
            if not np.array_equal(a, b, equal_nan=True):
                diff = np.nanmax(np.abs(a - b)) if np.any(np.isfinite(a - b)) else float("nan")
                warnings.warn(f"coordinates_from_table: columns {table.labels[ks[0]]!r} and {table.labels[k]!r} both "
                              f"give coordinate {n!r} and differ (by up to {diff:.6g}); the first is used, the other "
                              "ignored: remove one of them", stacklevel=3)


def _warn_wrong_joints(table: Table, info, names) -> None:
    """Warn for a column ``/jointset/J/c/value`` whose joint ``J`` does not hold coordinate ``c`` in the
    model's file (``model.osim.coordinate_joints``): OpenSim matches the whole path and would not read
    it as ``c``."""
    joints = dict(getattr(info, "coordinate_joints", ()) or ())
    if not joints:
        return
    source = getattr(info, "source", "")
    for lab in table.labels:
        parts = lab.strip("/").split("/")
        if len(parts) >= 3 and parts[0] == "jointset" and parts[2] in names:
            own = joints.get(parts[2])
            if own is not None and own != parts[1]:
                warnings.warn(f"coordinates_from_table: column {lab!r} names joint {parts[1]!r}, but coordinate "
                              f"{parts[2]!r} belongs to joint {own!r} in {os.path.basename(source)}; read as "
                              f"{parts[2]!r} (OpenSim matches the whole path and would not): check the file's labels",
                              stacklevel=4)


def table_from_coordinates(model, time, q, in_degrees: bool = True, name: str = "Coordinates",
                           every_coordinate: bool = True) -> Table:
    """A :class:`Table` of coordinates ``q (T, nq)`` labelled by coordinate name, rotational ones in
    degrees when ``in_degrees``, as OpenSim's IK tool writes its ``.mot``.

    For an imported OpenSim model with ``every_coordinate``, the columns are every coordinate of the
    model in its ``CoordinateSet`` (file) order, as the IK tool writes them: coupled coordinates
    from their coupler functions of ``q``, locked ones at their locked value
    (:mod:`mbjax.io.osim_coordinates`); OpenSim reading the file back gets the full pose."""
    require_model(model, "table_from_coordinates")
    q = np.asarray(q, dtype=float)
    time = np.asarray(time, dtype=float)
    if time.ndim != 1 or q.ndim != 2 or q.shape[0] != time.shape[0]:
        raise ValueError(f"table_from_coordinates: time has shape {time.shape} and q has shape {q.shape}: give "
                         f"time (T,) and q (T, nq), one row per time")
    info = getattr(model, "osim", None)
    if in_degrees and info is None:
        raise ValueError("in_degrees needs OpenSim motion types (model.osim)")
    if every_coordinate and info is not None and hasattr(info, "other_names"):
        import jax

        labels, kinds = coordinate_names(model)
        skipped = [n for n, m in zip(info.other_names, info.other_maps or ()) if m is None]
        if skipped:  # eliminated by a PointOnLineConstraint: not written, named
            warnings.warn(f"coordinates {skipped} (eliminated by a PointOnLineConstraint) are not written: "
                          "OpenSim reading the file assembles them from the constraint", stacklevel=2)
            keep = [i for i, n in enumerate(labels) if n not in skipped]
            labels, kinds = tuple(labels[i] for i in keep), tuple(kinds[i] for i in keep)
        values = np.asarray(jax.vmap(lambda x: coordinate_values(model, x, labels))(q.reshape(-1, q.shape[-1])))
        rot = np.array([k == "rotational" for k in kinds])
        order = _coordinate_set_order(info, labels)
        labels, values, rot = tuple(labels[i] for i in order), values[:, order], rot[order]
    else:
        labels, values = tuple(model.coordinate_names), q
        rot = _rotational(model) if in_degrees else None
    if in_degrees:
        values = np.where(rot, np.rad2deg(values), values)
    return Table(np.asarray(time, dtype=float), tuple(labels), values, in_degrees, {"name": name})


def _coordinate_set_order(info, labels) -> list[int]:
    """Indices putting ``labels`` in OpenSim's ``CoordinateSet`` order (``model.osim.coordinate_set_order``,
    read from the model's file at load); their own order when the model does not hold it."""
    order = tuple(getattr(info, "coordinate_set_order", ()) or ())
    if sorted(order) != sorted(labels):
        return list(range(len(labels)))
    return [list(labels).index(n) for n in order]
