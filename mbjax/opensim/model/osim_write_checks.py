"""What :func:`mbjax.io.write_osim` checks before it writes.

:func:`refuse_unloadable` refuses, before anything is written, the values :func:`mbjax.io.load_osim`
would refuse in the copy: muscle parameters outside the rules of :mod:`mbjax.muscles.parameter_rules`,
non-finite path points and wrap objects that :class:`~mbjax.wrapping.WrapObject` refuses (bodies
are checked by the writer, naming their element).

:func:`unwritten_changes` names the values of the model that differ from the source file as loaded
but that the writer does not write (joint offsets, axes and maps, conditional and moving
path point functions, force elements): :func:`write_osim` warns with them, as the copy keeps the
file's values there.  A scaled model is compared only where scaling changes nothing (joint frame
rotations); a model whose source does not load again as it was loaded (other load
options) is not compared.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np

from ...muscles.parameter_rules import parameter_problems, parameter_rules

_WHERE = "write_osim"


def _bad(rules) -> list[str]:
    """The messages of the ``(bad, messages)`` rules that hold, evaluated now."""
    out = []
    for bad, messages in rules:
        flags = np.broadcast_to(np.asarray(bad, bool), (len(messages),))
        out.extend(msg for flag, msg in zip(flags, messages) if flag)
    return out


def refuse_unloadable(paths, wrap_objects=()) -> None:
    """Raise ``ValueError`` naming every muscle value the loader would refuse in the written copy
    (bodies are checked as they are written); ``wrap_objects``: callables that build the written
    :class:`~mbjax.wrapping.WrapObject` specs (which refuse bad dimensions)."""
    problems = _muscle_problems(paths) if paths is not None else []
    for make in wrap_objects:
        try:
            make()
        except ValueError as e:
            problems.append(str(e))
    if problems:
        raise ValueError(f"{_WHERE}: {len(problems)} value(s) that load_osim would refuse in the written file "
                         "(nothing written):\n  " + "\n  ".join(problems))


def _muscle_problems(paths) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problems = _bad(parameter_rules(paths, _WHERE))
        if not problems:  # the rules across parameters (Flen and fv_linear_extrap_threshold, curves)
            given = {}
            for m, name in enumerate(paths.names):
                values = {k: float(np.asarray(v, float)[m]) for k, v in paths.parameters.items()
                          if np.ndim(v) == 1}
                given[name] = {k: v for k, v in values.items() if not np.isnan(v)}
            problems = [f"{_WHERE}: muscle {m!r}: {p}" for m, p in parameter_problems(paths.names, paths.kinds, given)]
    location = np.asarray(paths.location, float)
    valid = np.array(paths.valid, bool)
    for slots in paths.moving_slots:  # a moving point's location is its functions'
        for m, k, *_ in slots:
            valid[m, k] = False
    for m, name in enumerate(paths.names):
        for k in np.flatnonzero(valid[m] & ~np.all(np.isfinite(location[m]), axis=-1)):
            point = paths.point_names[m][k] or f"#{k}"
            problems.append(f"{_WHERE}: muscle {name!r}: path point {point!r} has location "
                            f"{location[m, k].tolist()}: not finite")
    return problems


def _differs(a, b) -> np.ndarray:
    """Element-wise: the values differ (NaN equals NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return np.ones(np.broadcast_shapes((1,), a.shape[:1] or (1,)), bool)
    both_nan = np.isnan(a) & np.isnan(b) if np.issubdtype(a.dtype, np.floating) else np.zeros(a.shape, bool)
    return (a != b) & ~both_nan


def _rows(a, b) -> np.ndarray:
    """Indices of the leading axis where ``a`` and ``b`` differ."""
    d = _differs(a, b)
    if d.ndim == 0:
        return np.asarray([0]) if d else np.zeros(0, int)
    return np.flatnonzero(d.reshape(d.shape[0], -1).any(axis=1))


def _leaves_differ(a, b) -> bool:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)  # static parts (closures) not compared
    if len(la) != len(lb):
        return True
    return any(np.asarray(x).shape != np.asarray(y).shape or _differs(x, y).any() for x, y in zip(la, lb))


def _strings(x):
    """The strings in a nest of tuples."""
    if isinstance(x, str):
        yield x
    elif isinstance(x, (tuple, list)):
        for y in x:
            yield from _strings(y)


def _names(labels, rows) -> str:
    return ", ".join(repr(labels[i]) if i < len(labels) else f"#{i}" for i in rows)


def unwritten_changes(model, reference, scaled: bool, written_points, written_parameters,
                      file_bodies=()) -> list[str]:
    """What differs between ``model`` and ``reference`` (its source as loaded) that is not written.

    ``file_bodies``: the bodies written (those of the file); ``written_points``: the ``(muscle, slot)`` path points written; ``written_parameters``: the
    ``(muscle, key)`` parameters written."""
    out = []
    bodies, coords = model.body_names, model.coordinate_names
    if reference.body_names != bodies or reference.coordinate_names != coords:
        return out
    if not scaled:
        rows = _rows(model.offset, reference.offset)
        if rows.size:
            out.append(f"joint offsets (model.offset) of the bodies {_names(bodies, rows)}")
        for k, (a, b) in enumerate(zip(model.maps, reference.maps)):
            if _leaves_differ(a, b):
                which = sorted(set(_strings(getattr(a, "coordinates", ()))))
                out.append(f"joint maps (model.maps[{k}], {type(a).__name__}" +
                           (f" of the coordinates {which})" if which else ")"))
    else:
        rows = _rows(np.asarray(model.offset)[..., :3, :3], np.asarray(reference.offset)[..., :3, :3])
        if rows.size:
            out.append(f"joint frame rotations (model.offset) of the bodies {_names(bodies, rows)}")
    rows = _rows(model.axis, reference.axis)
    if rows.size and not scaled:
        out.append(f"joint axes (model.axis) of the bodies {_names(bodies, rows)}")
    for field, label in (("mass", "masses"), ("com", "centres of mass"), ("inertia", "inertias")):
        rows = [i for i in _rows(getattr(model, field), getattr(reference, field)) if bodies[i] not in file_bodies]
        if rows:  # the massless bodies of a joint's chain of steps, which the file does not have
            out.append(f"{label} (model.{field}) of the bodies {_names(bodies, rows)}, which are steps of a "
                       "joint, not bodies of the file")
    paths, ref_paths = model.muscles, reference.muscles
    if paths is not None and ref_paths is not None and paths.names == ref_paths.names and not scaled:
        out += _unwritten_muscle_changes(paths, ref_paths, written_points, written_parameters)
    for key in ("forces",):  # the elements other than the file's coordinates, muscles and path functions
        ours, theirs = getattr(model, key), getattr(reference, key)
        if ours is None:
            continue
        if theirs is None or not _leaves_differ(ours, theirs):
            if theirs is None:
                out.append(f"model.{key} (not from the file)")
            continue
        a, b = getattr(ours, "elements", None), getattr(theirs, "elements", None)
        if isinstance(a, tuple) and isinstance(b, tuple) and len(a) >= len(b):
            which = [_label(e, k) for k, e in enumerate(a) if k >= len(b) or _leaves_differ(e, b[k])]
            out.append(f"model.{key} elements {', '.join(which)}")
        else:
            out.append(f"model.{key}")
    return out


def _label(element, k) -> str:
    name = getattr(element, "name", None)
    return f"{name!r}" if isinstance(name, str) else f"#{k} ({type(element).__name__})"


def _unwritten_muscle_changes(paths, ref, written_points, written_parameters) -> list[str]:
    out = []
    names = paths.names
    loc, ref_loc = np.asarray(paths.location, float), np.asarray(ref.location, float)
    if loc.shape == ref_loc.shape:
        valid = np.asarray(paths.valid, bool)
        for slots in paths.moving_slots:  # a moving point's location is its functions' (not used)
            for m, k, *_ in slots:
                valid[m, k] = False
        changed = valid & _differs(loc, ref_loc).any(axis=-1)
        missed = [(m, k) for m, k in zip(*np.nonzero(changed)) if (int(m), int(k)) not in written_points]
        if missed:
            out.append("path point locations of " +
                       ", ".join(f"{names[m]!r} point {paths.point_names[m][k] or k!r}" for m, k in missed))
    for key, v in paths.parameters.items():
        r = ref.parameters.get(key)
        if r is None or np.shape(v) != np.shape(r):
            continue
        rows = [m for m in _rows(v, r) if (int(m), key) not in written_parameters]
        if rows:
            out.append(f"muscle parameter {key} (not a property of the file's element) of {_names(names, rows)}")
    for field in ("cond_range", "moving_maps", "cond_maps"):
        if _leaves_differ(getattr(paths, field), getattr(ref, field)):
            out.append(f"model.muscles.{field} (conditional and moving path points)")
    return out
