"""Coordinate tasks of inverse kinematics (OpenSim's ``IKCoordinateTask``): their weights and the
reference value of each tracked coordinate in every frame."""

from __future__ import annotations

import warnings

import numpy as np

from ...io.coordinate_task import VALUE_TYPES, CoordinateTask  # noqa: F401  (the record lives with the readers)
from ...io.storage import coordinates_from_table
from .checks import _weight


def _coordinate_refs(model, tasks, free_names, coordinate_data, times):
    """Coordinate-task weights ``(nq,)`` (0: no task) and reference values ``(T, nq)``."""
    info = model.osim
    names = model.coordinate_names
    default = np.asarray(info.default) if info is not None else np.zeros(len(names))
    roles = dict(info.roles) if info is not None else {}
    wc = np.zeros(len(names))
    qref = np.zeros((len(times), len(names)))
    file_q = cols = None
    for name, task in (tasks or {}).items():
        task = (task._replace(weight=_weight(f"coordinate task {name!r}", task.weight)) if isinstance(task, CoordinateTask)
                else CoordinateTask(_weight(f"coordinate task {name!r}", task)))
        if name not in names:
            role = roles.get(name)
            if role is None:
                raise ValueError(f"coordinate task {name!r}: no such coordinate; coordinates are {names}")
            if role != "locked":
                warnings.warn(f"coordinate task {name!r} on a {role} coordinate is ignored", stacklevel=3)
            continue  # OpenSim drops tasks on locked coordinates
        if name not in free_names:
            continue  # locked by the caller
        i = names.index(name)
        if task.value_type == "default_value":
            ref = np.full(len(times), default[i])
        elif task.value_type == "manual_value":
            if not np.isfinite(float(task.value)):
                raise ValueError(f"coordinate task {name!r}: manual_value must be finite, got {task.value}")
            ref = np.full(len(times), float(task.value))
        elif task.value_type == "from_file":
            if coordinate_data is None:
                raise ValueError(f"IK: coordinate task {name!r} has value_type 'from_file' but no coordinate_data "
                                 "was given; pass coordinate_data (the coordinates Table, mbjax.io.read_storage) or "
                                 "use 'default_value' or 'manual_value'")
            if file_q is None:
                file_q = coordinates_from_table(model, coordinate_data, missing="default")
                cols = {lab.strip("/").split("/")[-2] if lab.endswith("/value") else lab.split("/")[-1]
                        for lab in coordinate_data.labels}
            if name not in cols:
                raise ValueError(f"coordinate task {name!r}: value for coordinate not found in the coordinate file")
            ref = _file_reference(coordinate_data, file_q[:, i], name, times)
        else:
            raise ValueError(f"coordinate task {name!r}: unknown value_type {task.value_type!r}; the value types "
                             f"are {', '.join(VALUE_TYPES)}")
        if not (np.isfinite(task.weight) and task.weight >= 0):
            raise ValueError(f"coordinate task {name!r}: weight must be finite and >= 0, got {task.weight}")
        wc[i] = float(task.weight)
        qref[:, i] = ref
    return wc, qref


def _file_reference(table, y, name, times):
    """A ``from_file`` reference at the marker times: OpenSim's ``InverseKinematicsTool`` fits every
    column of its ``<coordinate_file>`` with a ``GCVSplineSet`` of degree 5 (error variance 0: the
    natural quintic interpolating spline, :class:`mbjax.io.signal.NaturalSpline`), so between rows the
    reference is that spline, not a straight line; it needs 6 rows or more, as OpenSim's does."""
    from ...io.signal import NaturalSpline

    meta = table.metadata or {}
    file = meta.get("source_file") or meta.get("file")
    where = f"coordinate task {name!r}: the coordinates " + (f"file {file}" if file else "table")
    t = np.asarray(table.time, float).reshape(-1)
    if t.size < 6:
        raise ValueError(f"{where} has {t.size} row(s); OpenSim fits its from_file reference with a quintic "
                         "spline (GCVSplineSet of degree 5), which needs 6 rows or more: give a longer file")
    back = np.flatnonzero(~(np.diff(t) > 0))
    if back.size:
        k = int(back[0]) + 1
        raise ValueError(f"{where}: time {float(t[k])!r} at row {k + 1} does not increase from row {k}'s "
                         f"{float(t[k - 1])!r}; the reference spline needs strictly increasing times")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{where}: column {name!r} holds NaN or inf at row {k + 1} (time {float(t[k]):.6g} s); "
                         "the reference spline needs finite values: fill the gap or use another value_type")
    return NaturalSpline(t, np.asarray(y, float), 5)(np.asarray(times, float))
