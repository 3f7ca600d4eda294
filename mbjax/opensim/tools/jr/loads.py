"""The loads a ``JointReaction`` analysis applies (step 2 of the :mod:`mbjax.opensim.tools.jr` package
docstring): the actuator forces of the forces file, the body loads of the muscles' paths, the
external loads and body actuators, and which force elements and actuators apply."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ...._kinematics import forward_pass
from ...._loads import ExternalLoads
from ...._model import GROUND
from ....forces.body_actuators import CoordinateActuator, PointActuator, TorqueActuator
from ....forces.body_actuators import _loads as _actuator_loads
from ....forces.path_force import PathForce
from ..id import ACTUATOR_CLASSES, disabled_paths
from ....io.storage import Table
from ....muscles.geometry import path_geometry, wrap_frames, wrapped_paths
from ....muscles.opensim_moment_arms import (_element_bodies, _freeze, _straight_opensim_moment_arms,
                                           cross_body_lengths)
from ....muscles.path_functions import function_moment_arms, get_path_functions
from ....muscles.paths import get_paths


#: force elements whose generalized force mbjax computes and that act on coordinates only (mobility
#: forces: they change q̈ but are no body load on any subtree)
MOBILITY_ELEMENTS = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce")


def storage_rows_at(time, data, t) -> np.ndarray:
    """Rows of a table at times ``t`` as ``Storage::getDataAtTime`` gives them: linear between the
    last row at or before t and the next (the last two rows past the end, the first two before the
    start: linear extrapolation; one row: that row)."""
    time = np.asarray(time, float)
    data = np.asarray(data, float)
    t = np.asarray(t, float)
    n = time.shape[0]
    i1 = np.maximum(np.searchsorted(time, t, side="right") - 1, 0)
    i2 = i1 + 1
    end = i2 == n
    i1 = np.where(end, np.maximum(i1 - 1, 0), i1)
    i2 = np.where(end, np.maximum(i2 - 1, 0), i2)
    den = time[i2] - time[i1]
    pct = np.where(den < np.finfo(float).eps, 0.0, (t - time[i1]) / np.where(den > 0, den, 1.0))[:, None]
    return np.where(pct == 0.0, data[i1], data[i1] + pct * (data[i2] - data[i1]))


def _external_record_labels(external_loads) -> set[str]:
    """The columns a static optimization's force file repeats for each external load
    (``ExternalForce::getRecordValues``): recognized in a forces file and skipped."""
    out = set()
    for f in (external_loads.forces if external_loads is not None else ()):
        stem = f"{f.applied_to_body}_{f.name}_"
        out |= {stem + c for c in ("Fx", "Fy", "Fz", "px", "py", "pz", "Tx", "Ty", "Tz")}
    return out


def _warn_if_activations(forces: Table, muscle_columns, where: str) -> None:
    """Warn when every muscle column stays within [0, 1] over the file: a static optimization's
    ``_activation.sto`` given where its ``_force.sto`` is meant (OpenSim reads it as forces in N too)."""
    if len(muscle_columns) < 2:
        return
    values = np.asarray(forces.data, float)[:, muscle_columns]
    if values.size and np.all(np.isfinite(values)) and values.min() >= 0.0 and values.max() <= 1.0:
        file = (forces.metadata or {}).get("file") or (forces.metadata or {}).get("source_file")
        warnings.warn(f"{where}: every muscle column of the forces file{f' {file}' if file else ''} lies within "
                      f"[0, 1]: these look like activations (a static optimization's _activation.sto), not forces "
                      f"in N (its _force.sto); they are applied as forces", stacklevel=4)


def printed_half_digit(times) -> float:
    """Half a unit of the last decimal ``times`` were printed with: the fewest decimals (up to 17)
    that write every time as read.  A recorded time nearer a file's first or last time than this is
    that time rounded in print (OpenSim writes 8 decimals: its static optimization's first time
    0.49999971999999304 s is 0.49999972 in its file), not a time outside the file."""
    t = np.asarray(times, float)
    t = t[np.isfinite(t)]
    for k in range(18):
        scale = 10.0 ** k
        if np.all(np.round(t * scale) / scale == t):  # k decimals parse to exactly these doubles
            return 0.5 / scale
    return 0.0


def actuator_forces(model, forces: Table, times, actuators=(), external_loads=None, *,
                    replace_force_set: bool = False, where: str = "forces_file"):
    """The model's actuator forces at ``times`` from a forces table (package docstring, step 2).

    Returns ``(names, values (T, na))``: the model's muscles (path actuators, in model order; none
    with ``replace_force_set``) then ``actuators`` (the model's scalar actuators and the force-set
    files').  A missing actuator is an error (OpenSim would drop the whole file and compute forces
    from the states); a column that is no actuator is warned by name, the external loads' recorded
    columns excepted."""
    paths = get_paths(model)
    muscles = ()
    if not replace_force_set:
        disabled = disabled_paths(model)  # OpenSim applies no force of a disabled one
        kinds = {n: k for n, k in zip(paths.names, paths.kinds) if n not in disabled}
        passive = [n for n, k in kinds.items() if k not in ACTUATOR_CLASSES and "(ignored)" not in k]
        if passive:
            raise NotImplementedError(f"{where}: the model's path forces {passive} "
                                      f"({sorted({kinds[n] for n in passive})}) are not actuators: OpenSim applies "
                                      "their passive force from the state, which the joint-reaction tool does not "
                                      "compute")
        ignored = [n for n, k in kinds.items() if "(ignored)" in k]
        if ignored:
            warnings.warn(f"{where}: the model's path forces {ignored} were left out at loading (ignore_forces): "
                          "OpenSim applies them, mbjax does not", stacklevel=3)
        muscles = tuple(n for n, k in kinds.items() if k in ACTUATOR_CLASSES)
    names = muscles + tuple(a.name for a in actuators)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"{where}: actuator names {dup} are not unique (muscles and force-set actuators)")
    labels = list(forces.labels)
    dup = sorted({n for n in labels if labels.count(n) > 1})
    if dup:
        file = (forces.metadata or {}).get("file")
        raise ValueError(f"{where}: the forces file{f' {file}' if file else ''} has more than one column labelled "
                         f"{dup}; keep one column per actuator")
    missing = [n for n in names if n not in labels]
    if missing:
        raise ValueError(f"{where}: no column for the actuators {missing}; OpenSim would then ignore the whole "
                         "forces file and compute every actuator's force from the states (which mbjax does not do)")
    records = _external_record_labels(external_loads)
    springs = {n for e in (model.forces.elements if model.forces is not None else ()) if isinstance(e, PathForce)
               for n in e.names}
    recorded = [c for c in labels if c in springs and c not in names]
    if recorded:  # a static optimization records them; their tension follows from the state
        warnings.warn(f"{where}: columns {recorded} are the model's path forces (Ligament, PathSpring): their tension is "
                      "computed from the states, as OpenSim does, and the columns are not read", stacklevel=3)
    extra = [c for c in labels if c not in names and c not in records and c not in springs]
    if extra:
        warnings.warn(f"{where}: columns {extra} are not actuators of the model: not applied", stacklevel=3)
    late = [n for n in names if labels.index(n) >= len(names)]
    if late:
        warnings.warn(f"{where}: the columns of {late} come after the file's first {len(names)} columns, where "
                      "OpenSim 4.6's JointReaction does not read (it takes their forces as zero or undefined); "
                      "mbjax applies them by name", stacklevel=3)
    times = np.asarray(times, float)
    ft = np.asarray(forces.time, float)
    if ft.size == 0:
        raise ValueError(f"{where}: the forces file has no rows")
    tol = printed_half_digit(ft)
    out = times[(times < ft[0] - tol) | (times > ft[-1] + tol)]
    if out.size:
        file = (forces.metadata or {}).get("file")
        first, last, t = float(ft[0]), float(ft[-1]), float(out[0])
        warnings.warn(f"{where}: {out.size} recorded times lie outside the forces file{f' {file}' if file else ''}'s "
                      f"times {first!r}-{last!r} s (first {t!r} s, {max(first - t, t - last):.3g} s outside): forces "
                      "extrapolated linearly, as OpenSim's Storage does", stacklevel=3)
    cols = [labels.index(n) for n in names]
    _warn_if_activations(forces, [labels.index(n) for n in muscles], where)
    values = storage_rows_at(ft, np.asarray(forces.data, float)[:, cols], times)
    if not np.all(np.isfinite(values)):
        bad = [names[k] for k in np.nonzero(~np.all(np.isfinite(values), axis=0))[0]]
        raise ValueError(f"{where}: forces of {bad} are NaN or inf at the recorded times")
    return names, values


def muscle_loads(model, q, tension):
    """:func:`_path_loads` of the geometric paths plus, for the muscles with a path function
    (``FunctionBasedPath``), the generalized force R F alone: OpenSim applies such a path's tension
    as mobility forces, no body load."""
    functions = get_path_functions(model)
    if functions is None:
        return _path_loads(model, q, tension)
    q = jnp.asarray(q)
    tension = jnp.asarray(tension, q.dtype)
    rows = functions.rows
    on_functions = jnp.zeros_like(tension).at[:, rows].set(tension[:, rows])
    gen, force, moment = _path_loads(model, q, tension.at[:, rows].set(0.0))
    zeros = jnp.zeros((model.n_coordinates, get_paths(model).n_muscles), q.dtype)
    gen_f = jax.vmap(lambda x, t: function_moment_arms(functions, x, zeros) @ t)(q, on_functions)
    return gen + gen_f, force, moment


def _path_loads(model, q, tension):
    """What the muscle tensions ``tension (T, nm)`` apply at poses ``q (T, nq)``: the generalized
    force ``(T, nq)`` (R F with OpenSim's unit-force moment arms R, MovingPathPoint terms included)
    and the resultant force and moment about each body origin, world axes, ``(T, nb, 3)`` each.

    ``GeometryPath::produceForces``: a point force T·u at every path element whose neighbour lies
    on another body, toward that neighbour (u the unit direction between their ground positions),
    wrap tangent points on the wrap object's body (applied at their latest positions).  For
    straight paths the body loads are the sum of T (e_out − e_in) over each body's active points
    (segments inside one body cancel).  The wrap pass runs once for both (batch-last); with wraps,
    R F = −∇_q (F · cross-body lengths with the tangent points frozen), one gradient per frame
    (:func:`mbjax.muscles.opensim_moment_arms.cross_body_lengths`)."""
    paths = get_paths(model)
    nb = model.n_bodies
    q = jnp.asarray(q)
    dtype = q.dtype
    tension = jnp.asarray(tension, dtype)
    qb = q.T  # batch-last: (nq, T)
    kin = forward_pass(model, qb)
    geo = path_geometry(model, qb, kin)
    body = np.asarray(paths.body, dtype=np.int64)
    onehot = np.zeros(body.shape + (nb,))
    m, p = np.nonzero(np.asarray(paths.valid, bool) & (body >= 0))
    onehot[m, p, body[m, p]] = 1.0
    straight = np.ones(paths.n_muscles)
    if paths.wraps is not None:
        straight[np.asarray(paths.wraps.muscles)] = 0.0
    f = geo.force * (tension.T * jnp.asarray(straight, dtype)[:, None])[:, None, None, :]  # (nm, P, 3, T)
    oh = jnp.asarray(onehot, dtype)
    force = jnp.einsum("mpb,mpat->tba", oh, f)
    moment = jnp.einsum("mpb,mpat->tba", oh, jnp.cross(geo.world, f, axis=2))
    if paths.wraps is None:
        R = jax.vmap(lambda x: _straight_opensim_moment_arms(model, x))(q)
        gen = jnp.einsum("tqm,tm->tq", R, tension)
    else:
        if paths.wraps.wrapping != "opensim":
            raise NotImplementedError("joint reactions with smooth wrapping (load_osim(wrapping='smooth')) have no "
                                      "OpenSim counterpart; load the model with OpenSim's wrapping")
        wp = wrapped_paths(model, qb, kin, geo)
        rot, org = wrap_frames(model, kin)
        front = lambda a: jnp.moveaxis(a, -1, 0)  # noqa: E731  (the trailing batch axis to the front)
        wp = type(wp)(*(front(a) for a in wp))
        frozen = jax.vmap(lambda w, r, o: _freeze(model, w, r, o))(wp, front(rot), front(org))
        gen = jax.vmap(lambda x, fz, t: -jax.grad(lambda y: jnp.dot(t, cross_body_lengths(model, y, fz)))(x))(
            q, frozen, tension)
        rows = np.asarray(paths.wraps.muscles)
        el_body = np.asarray(_element_bodies(paths))
        el_body = np.where(el_body < 0, nb, el_body)

        def one(points, latest, active, order, t):
            key = jnp.where(active, order, jnp.inf)
            idx = jnp.argsort(key, axis=1)
            valid = jnp.take_along_axis(active, idx, axis=1)
            pts = jnp.take_along_axis(points, idx[..., None], axis=1)
            app = jnp.take_along_axis(latest, idx[..., None], axis=1)
            bod = jnp.take_along_axis(jnp.asarray(el_body), idx, axis=1)
            d = pts[:, 1:] - pts[:, :-1]
            n = jnp.linalg.norm(d, axis=-1, keepdims=True)
            u = jnp.where(n > 0, d / jnp.where(n > 0, n, 1.0), 0.0)
            seg = valid[:, :-1] & valid[:, 1:] & (bod[:, :-1] != bod[:, 1:])
            g = jnp.where(seg[..., None], u, 0.0) * t[:, None, None]
            zero = jnp.zeros_like(g[:, :1])
            fe = jnp.concatenate([g, zero], 1) - jnp.concatenate([zero, g], 1)  # out minus in, per element
            oh_e = jax.nn.one_hot(bod, nb + 1, dtype=dtype)[..., :nb]
            return (jnp.einsum("mnb,mna->ba", oh_e, fe), jnp.einsum("mnb,mna->ba", oh_e, jnp.cross(app, fe)))

        fw, mw = jax.vmap(one)(wp.points, wp.latest, wp.active, wp.order, tension[:, rows])
        force, moment = force + fw, moment + mw
    origin = jnp.moveaxis(kin.pos, -1, 0)  # (T, nb, 3)
    return gen, force, moment - jnp.cross(origin, force)


def path_force_loads(model, q, qd):
    """What the model's path forces (``Ligament``, ``PathSpring``: :class:`mbjax.forces.PathForce`)
    apply at frames ``q, qd (T, nq)``: their tensions T(L, L̇) carried by their paths as a muscle's
    (:func:`muscle_loads`, ``GeometryPath::produceForces``), ``(generalized force (T, nq), body force,
    body moment (T, nb, 3))``; ``None`` when the model has none."""
    elements = [e for e in (model.forces.elements if model.forces is not None else ()) if isinstance(e, PathForce)]
    if not elements:
        return None
    out = None
    for e in elements:  # one entry per element *kind* (a stack of its elements)
        tension = jax.vmap(lambda x, xd: e.tensions(model, x, xd))(q, qd)
        loads = muscle_loads(e.path_model(model), q, tension)
        out = loads if out is None else tuple(a + b for a, b in zip(out, loads))
    return out


def mobility_force(model, q, qd):
    """The generalized force of the model's force elements other than path forces (those enter as
    body loads, :func:`path_force_loads`) at one frame."""
    out = jnp.zeros_like(q)
    for e in model.forces.elements:
        if not isinstance(e, PathForce):
            out = out + e.generalized_force(model, q, qd)
    return out


def _check_force_elements(model, replace_force_set: bool, where: str) -> bool:
    """Whether the model's force elements apply (not with ``replace_force_set``); body-force elements
    other than path forces are refused by name (their loads on each subtree are not computed here)."""
    fs = model.forces
    if fs is None or not fs.elements or replace_force_set:
        return False
    body = [(type(e).__name__, n) for e in fs.elements for n in e.names
            if type(e).__name__ not in MOBILITY_ELEMENTS and not isinstance(e, PathForce)]
    if body:
        raise NotImplementedError(f"{where}: the model's force elements {body} apply body forces, whose share in "
                                  "each joint's reaction mbjax does not compute; remove them (or load the model "
                                  "with ignore_forces)")
    return True


def _check_actuators(model, actuators, where):
    """The scalar actuators checked against the model: a ``CoordinateActuator`` on one of its OpenSim
    coordinates (independent, coupled or locked; one on a locked coordinate is warned: the lock
    absorbs its force, as in OpenSim), body actuators on its bodies."""
    info = model.osim
    roles = dict(info.roles) if info is not None else {n: "independent" for n in model.coordinate_names}
    bodies = set(model.body_names) | {GROUND}
    locked = []
    for a in actuators:
        if isinstance(a, CoordinateActuator):
            if a.coordinate not in roles:
                raise ValueError(f"{where}: CoordinateActuator {a.name!r}: {a.coordinate!r} is not a coordinate of "
                                 f"the model ({tuple(roles)})")
            if roles[a.coordinate] == "locked":
                locked.append(a.name)
        elif isinstance(a, (PointActuator, TorqueActuator)):
            for body in ((a.body,) if isinstance(a, PointActuator) else (a.body_a, a.body_b)):
                if body is not None and body not in bodies:
                    raise ValueError(f"{where}: {type(a).__name__} {a.name!r}: body {body!r} is not a body of "
                                     "the model")
        else:
            raise TypeError(f"{where}: actuators are CoordinateActuator, PointActuator or TorqueActuator records, "
                            f"got {a!r}")
    if locked:
        warnings.warn(f"{where}: CoordinateActuators {locked} act on locked coordinates: the lock absorbs their force "
                      "(no effect on the reactions, as in OpenSim)", stacklevel=3)


def _nonmuscle_loads(model, times, external_loads, actuators, values, names):
    """External loads at ``times`` and the Point/TorqueActuator loads of their recorded forces, as one
    :class:`mbjax.ExternalLoads` with ``(T, n, 3)`` arrays (frames resolved per pose), or None."""
    parts = []
    if external_loads is not None:
        ext = external_loads.at(times, model)
        if ext.bodies:
            parts.append(ext)
    body_acts = [(k, a) for k, a in enumerate(actuators) if isinstance(a, (PointActuator, TorqueActuator))]
    if body_acts:
        unit, owner = _actuator_loads(model, [a._replace(optimal_force=1.0) for _, a in body_acts])
        col = np.asarray([names.index(body_acts[o][1].name) for o in owner])
        scale = values[:, col][..., None]  # (T, k, 1)
        T = len(times)
        parts.append(ExternalLoads(unit.bodies, np.broadcast_to(np.asarray(unit.points), (T,) + unit.points.shape),
                                   np.asarray(unit.forces)[None] * scale, np.asarray(unit.torques)[None] * scale,
                                   point_frames=unit.point_frames, force_frames=unit.force_frames))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]

    def frames(ld, which):
        got = getattr(ld, which)
        return got if got is not None else (None,) * len(ld.bodies)

    return ExternalLoads(sum((p.bodies for p in parts), ()),
                         np.concatenate([np.asarray(p.points) for p in parts], 1),
                         np.concatenate([np.asarray(p.forces) for p in parts], 1),
                         np.concatenate([np.asarray(p.torques) for p in parts], 1),
                         point_frames=sum((frames(p, "point_frames") for p in parts), ()),
                         force_frames=sum((frames(p, "force_frames") for p in parts), ()))
