"""Joint reaction loads of recorded motion, as OpenSim 4.6's ``AnalyzeTool`` with a ``JointReaction`` analysis.

OpenSim's analysis, step by step (``AnalyzeTool::run``, ``JointReaction::record``), and what this
module does for each:

1. States: the coordinates file (lowpass filter, degree-5 splines) gives q and q̇ at the rows of
   the (padded) states table from the last row at or before ``initial_time`` to the last at or
   before ``final_time`` (:func:`mbjax.so_tool.states_trajectory`, as for static optimization).
   The analysis records at the first and last of those rows and at every row in between whose
   index in the states table is a multiple of ``step_interval`` (``Analysis::proceed``).  The
   analysis' own ``start_time``/``end_time`` are not used by the AnalyzeTool (warned when they
   differ from the tool's).
2. Actuator forces: every actuator of the model (its muscles and scalar actuators, then the
   actuators of ``force_set_files``; with ``replace_force_set`` only the latter) must have a column
   in ``forces_file`` (a static optimization's ``_force.sto``); the forces at the state's time are
   the file's rows linearly interpolated (``Storage::getDataAtTime``: the last row at or before t
   and the next, extrapolating past the ends).  Each actuation is overridden by that value
   (``ScalarActuator::overrideActuation``): a muscle's tension acts along its path
   (``GeometryPath::produceForces``: a point force at every path point whose neighbour lies on
   another body, wrap tangent points included, and the generalized force of a
   ``MovingPathPoint``), a ``CoordinateActuator`` is a generalized force on its coordinate (through
   the coupler on a coupled one; a locked one's goes into the lock), ``PointActuator`` /
   ``TorqueActuator`` apply their force / torque to their bodies.
3. Accelerations: OpenSim realizes ``Stage::Acceleration`` with those forces, i.e. *forward
   dynamics*: M q̈ = R F + τ_reserves + Q_ext + Q_elements + G − N q̇ (R: OpenSim's unit-force
   moment arms, :func:`mbjax.muscles.opensim_moment_arms`), not the kinematics' q̈.  With static
   optimization forces q̈ equals the splines' only as far as the optimization met its constraints.
4. Reaction (``Joint::calcReactionOnChildExpressedInGround``, Simbody's mobilizer reaction at the
   joint's child frame M): the Newton-Euler balance of the subtree below the joint, W = Σ (I a +
   v ×* I v − applied body loads) (:func:`mbjax._wrenches.subtree_wrenches`), moved from the child
   body origin to the child frame origin.  On the parent (``apply_on_bodies`` = parent) it is
   −W moved to the parent frame origin (``findMobilizerReactionOnParentAtFInGround``).  Force,
   moment and the point of application (that frame origin) are expressed in ``express_in_frame``:
   ``ground``, a frame of the model by name (a body, an offset frame), or the keywords ``child`` /
   ``parent`` (the joint's child / parent *body*).
5. Written as ``<name>_<analysis name>_ReactionLoads.sto`` in ``results_directory``, columns
   ``<joint>_on_<body>_in_<frame>_fx fy fz mx my mz px py pz`` per joint in ``joint_names`` order
   (``All``: the model's joints in file order), SI units, ``inDegrees=no``.

Refused by name: setups without ``forces_file`` (OpenSim then computes forces from the states),
a forces file missing one of the model's actuators (OpenSim then silently ignores the whole file),
states or speeds files, path springs and ligaments (passive path forces from the state),
body-force elements (bushings, point-to-point springs, contact: their loads on each subtree are
not computed here), models scaled after loading (the joint frames are read from the model's
``.osim``), smooth wrapping.  Warned: forces-file columns that are no actuator (the external
loads' recorded columns of a static optimization file are recognized and skipped), actuator
columns beyond the file's first n_actuators columns (OpenSim 4.6 does not read them there),
interpolation past the file's times, joint names that are not joints of the model (OpenSim skips
them), other analyses and unknown elements of the setup.  ``output_precision`` is not used:
numbers are written with 17 significant digits.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._batching import Small
from ._dynamics import _cross_force, _inertia_times, forward_dynamics
from ._wrenches import subtree_wrenches
from ._kinematics import forward_pass
from ._loads import ExternalLoads
from ._model import GROUND
from .forces.body_actuators import CoordinateActuator, PointActuator, TorqueActuator
from .forces.body_actuators import _loads as _actuator_loads
from .id_tool import ACTUATOR_CLASSES, check_input_file, disabled_paths, read_coordinates, warn_float32
from .io.storage import Table, prepare_output, write_storage
from .muscles.geometry import path_geometry, wrap_frames, wrapped_paths
from .muscles.opensim_moment_arms import (_element_bodies, _freeze, _straight_opensim_moment_arms,
                                          cross_body_lengths)
from .muscles.path_functions import function_moment_arms, get_path_functions
from .muscles.paths import get_paths
from .so_tool import actuator_columns, model_actuators, read_reserves, states_trajectory, unused_setup_elements

#: force elements whose generalized force mbjax computes and that act on coordinates only (mobility
#: forces: they change q̈ but are no body load on any subtree)
MOBILITY_ELEMENTS = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce")
DESCRIPTION = ("This file contains the reaction forces and moments\napplied to the specified body of a joint pair "
               "and expressed  in the specified reference frame.\n\nUnits are S.I. units (seconds, meters, "
               "Newtons, ...)")
_COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz", "px", "py", "pz")


class JRSetup(NamedTuple):
    """What an OpenSim ``AnalyzeTool`` setup with a ``JointReaction`` analysis says (paths absolute;
    ``joint_names`` as written, ``("ALL",)`` by default)."""

    path: str
    name: str
    analysis_name: str
    model_file: str | None
    coordinates_file: str | None
    external_loads_file: str | None
    force_set_files: tuple[str, ...]
    replace_force_set: bool
    time_range: tuple[float, float]
    lowpass_cutoff: float
    step_interval: int
    forces_file: str | None
    joint_names: tuple[str, ...]
    apply_on_bodies: tuple[str, ...]
    express_in_frame: tuple[str, ...]
    results_directory: str


class ReactionKey(NamedTuple):
    """One reported reaction: the OpenSim ``joint``, its ``child`` and ``parent`` bodies (``"ground"``
    for ground), whether it acts on the child, the body it acts on, the frame it is expressed in
    (``frame``, its name in the labels, on body ``frame_body``, ``frame_transform`` 4x4 in that
    body), and the joint's child / parent frames in their bodies (``child_frame``, ``parent_frame``
    4x4)."""

    joint: str
    child: str
    parent: str
    on_child: bool
    on_body: str
    frame: str
    frame_body: str
    frame_transform: np.ndarray
    child_frame: np.ndarray
    parent_frame: np.ndarray

    @property
    def label(self) -> str:
        return f"{self.joint}_on_{self.on_body}_in_{self.frame}"


class JRResult(NamedTuple):
    """Joint reactions per recorded frame: ``time (T,)``, ``loads (T, nj, 9)`` (force, moment,
    point of each reaction in its frame), the column ``labels``, the ``keys`` (:class:`ReactionKey`),
    the ``q, qd`` of the states, the forward-dynamics ``qdd`` the reactions use, and the actuator
    forces applied ``forces (T, na)`` with their ``actuator_names`` (muscles then force-set actuators)."""

    time: np.ndarray
    loads: np.ndarray
    labels: tuple[str, ...]
    keys: tuple[ReactionKey, ...]
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    forces: np.ndarray
    actuator_names: tuple[str, ...]

    def table(self) -> Table:
        """The result as OpenSim writes it (``Joint Reaction Loads``)."""
        data = self.loads.reshape(self.loads.shape[0], -1)
        return Table(self.time, self.labels, data, False, {"name": "Joint Reaction Loads", "description": DESCRIPTION})


# --------------------------------------------------------------------------------------------
# joints and frames of the model's .osim file
# --------------------------------------------------------------------------------------------


def _model_joints(model):
    """``(joints, frames)`` of the model's source ``.osim``: ``joints`` a list of ``(name, parent,
    child, X_PF, X_BC)`` in file order, ``frames`` the file's frames by name/path -> (body, X)."""
    from .io.osim import _Loader

    info = model.extras.get("osim")
    if info is None or not info.source:
        raise ValueError("joint reactions as OpenSim reports them need a model loaded from an .osim file "
                         "(mbjax.io.load_osim): its joints' parent and child frames are read from the file")
    scaling = getattr(info, "scaling", None)
    if scaling is not None and not np.allclose(np.asarray(scaling.factors), 1.0, rtol=0, atol=0):
        raise NotImplementedError(f"{info.source}: the model was scaled after loading; its joint frames differ "
                                  "from the file's (write it with mbjax.io.write_osim and load that file)")
    loader = _Loader(info.source, ignore_wrapping=True)
    cset = loader.model.find("ConstraintSet")
    tags = {c.tag for c in (cset.find("objects") if cset is not None and cset.find("objects") is not None else [])}
    loader.ignore_constraints = tuple(t for t in tags if t != "CoordinateCouplerConstraint")
    loader.read_structure()
    joints = [(j.get("name"), parent, child, np.asarray(x_pf, float), np.asarray(x_bc, float))
              for j, parent, child, x_pf, x_bc in loader.joints]
    return joints, loader.frames


def _frame(model, frames, name, joint, child, parent, where):
    """``express_in_frame`` as ``(label name, body, X_body_frame)``, looked up as
    ``JointReaction::setupReactionList`` does: a frame by its path in the model (``ground``,
    ``/jointset/knee_r/femur_r_offset``, ``bodyset/femur_r``), in the body set (``femur_r``) or in
    the joint set (``knee_r/femur_r_offset``), then the keywords ``child`` / ``parent`` (any case:
    the joint's child / parent body).  A bare offset-frame name is no path (OpenSim refuses it too)."""
    path = name.strip("/") if name.startswith("/") else name
    cands = ["/" + path] if name.startswith("/") else ["/" + path, "/bodyset/" + path, "/jointset/" + path]
    for c in cands:
        hit = frames.get(c)
        if hit is not None:
            body = hit[0]
            if body != GROUND and body not in model.body_names:
                raise ValueError(f"{where}: express_in_frame {name!r} is on body {body!r}, not a body of the model")
            return path.split("/")[-1], body, np.asarray(hit[1], float)
    if name.lower() == "child":
        return child, child, np.eye(4)
    if name.lower() == "parent":
        return parent, parent, np.eye(4)
    raise ValueError(f"{where}: express_in_frame {name!r} of joint {joint!r} is neither a frame of the model (ground, "
                     "a body, or an offset frame by its path, e.g. /jointset/<joint>/<frame>) nor 'child' or 'parent'")


def reaction_keys(model, joints=("ALL",), apply_on_bodies=("child",), express_in_frame=("ground",),
                  where: str = "JointReaction") -> tuple[ReactionKey, ...]:
    """The reactions a ``JointReaction`` analysis reports (``JointReaction::setupReactionList``).

    ``joints``: OpenSim joint names or ``ALL`` (first entry, any case: every joint in file order);
    ``apply_on_bodies`` (``child``/``parent``) and ``express_in_frame`` hold one entry or one per
    joint name.  A name that is no joint of the model is warned and skipped, as OpenSim skips it."""
    joints = (joints,) if isinstance(joints, str) else tuple(joints)
    apply_on_bodies = (apply_on_bodies,) if isinstance(apply_on_bodies, str) else tuple(apply_on_bodies)
    express_in_frame = (express_in_frame,) if isinstance(express_in_frame, str) else tuple(express_in_frame)
    joints = joints or ("ALL",)
    apply_on_bodies = apply_on_bodies or ("child",)
    express_in_frame = express_in_frame or ("ground",)
    table, frames = _model_joints(model)
    by_name = {j[0]: j for j in table}
    if joints[0].upper() == "ALL":
        joints = tuple(by_name)
    for prop, values in (("apply_on_bodies", apply_on_bodies), ("express_in_frame", express_in_frame)):
        if len(values) not in (1, len(joints)):
            raise ValueError(f"{where}: {prop} holds {len(values)} entries; it must hold 1 or one per joint "
                             f"({len(joints)}: {list(joints)})")
    keys, unknown = [], []
    for i, name in enumerate(joints):
        if name not in by_name:
            unknown.append(name)
            continue
        _, parent, child, x_pf, x_bc = by_name[name]
        for body in (child, parent):
            if body != GROUND and body not in model.body_names:
                raise ValueError(f"{where}: joint {name!r} joins body {body!r}, which is not a body of the model")
        on = (apply_on_bodies[i] if len(apply_on_bodies) > 1 else apply_on_bodies[0]).lower()
        if on not in ("child", "parent"):
            raise ValueError(f"{where}: apply_on_bodies {on!r} for joint {name!r} must be 'child' or 'parent'")
        fname = express_in_frame[i] if len(express_in_frame) > 1 else express_in_frame[0]
        label, fbody, fx = _frame(model, frames, fname, name, child, parent, where)
        keys.append(ReactionKey(name, child, parent, on == "child", child if on == "child" else parent, label, fbody,
                                fx, x_bc, x_pf))
    if unknown:
        warnings.warn(f"{where}: {unknown} are not joints of the model {list(by_name)}: skipped, as OpenSim skips "
                      "them", stacklevel=3)
    if not keys:
        raise ValueError(f"{where}: no joint of joint_names {list(joints)} is a joint of the model ({list(by_name)})")
    return tuple(keys)


# --------------------------------------------------------------------------------------------
# the actuator forces of the forces file
# --------------------------------------------------------------------------------------------


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


def actuator_forces(model, forces: Table, times, actuators=(), external_loads=None, *,
                    replace_force_set: bool = False, where: str = "forces_file"):
    """The model's actuator forces at ``times`` from a forces table (module docstring, step 2).

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
    extra = [c for c in labels if c not in names and c not in records]
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
    out = times[(times < ft[0]) | (times > ft[-1])]
    if out.size:
        warnings.warn(f"{where}: {out.size} recorded times lie outside the file's {ft[0]:.6g}-{ft[-1]:.6g} s "
                      f"(first {out[0]:.6g} s): forces extrapolated linearly, as OpenSim's Storage does", stacklevel=3)
    cols = [labels.index(n) for n in names]
    values = storage_rows_at(ft, np.asarray(forces.data, float)[:, cols], times)
    if not np.all(np.isfinite(values)):
        bad = [names[k] for k in np.nonzero(~np.all(np.isfinite(values), axis=0))[0]]
        raise ValueError(f"{where}: forces of {bad} are NaN or inf at the recorded times")
    return names, values


# --------------------------------------------------------------------------------------------
# body loads and the reactions, all frames in one program
# --------------------------------------------------------------------------------------------


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


def _check_force_elements(model, replace_force_set: bool, where: str) -> bool:
    """Whether the model's force elements apply (not with ``replace_force_set``); body-force elements
    are refused by name (their loads on each subtree are not computed here)."""
    fs = model.extras.get("forces")
    if fs is None or not fs.elements or replace_force_set:
        return False
    body = [(type(e).__name__, n) for e in fs.elements for n in e.names if type(e).__name__ not in MOBILITY_ELEMENTS]
    if body:
        raise NotImplementedError(f"{where}: the model's force elements {body} apply body forces, whose share in "
                                  "each joint's reaction mbjax does not compute; remove them (or load the model "
                                  "with ignore_forces)")
    return True


def _check_actuators(model, actuators, where):
    """The scalar actuators checked against the model: a ``CoordinateActuator`` on one of its OpenSim
    coordinates (independent, coupled or locked; one on a locked coordinate is warned: the lock
    absorbs its force, as in OpenSim), body actuators on its bodies."""
    info = model.extras.get("osim")
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


@eqx.filter_jit
def _dynamics_of_frames(model, q, qd, tension, coord_forces, other, elements_on, coord_actuators):
    """Forward-dynamics q̈ and every joint's transmitted wrench at every frame (module docstring,
    steps 2-4), one program per model, frame count and load structure (not per joint choice).

    ``tension (T, nm)``: muscle tensions; ``coord_forces (T, nc)``: the forces of the
    ``CoordinateActuator`` s ``coord_actuators`` (static, optimal force 1: generalized force
    ∂c/∂qᵀ f, :func:`mbjax.so_tool.actuator_columns`); ``other``: the non-muscle body loads
    (:class:`mbjax.ExternalLoads`, ``(T, n, 3)``, any frames) or None; ``elements_on``: 1.0 to apply
    the model's force elements, None not.  Returns q̈ ``(T, nq)``, the wrench the parent transmits to
    each body ``(T, nb, 6)`` ([moment; force], about the body origin, ground axes), and the body
    poses ``rot (T, nb, 3, 3)``, ``pos (T, nb, 3)``."""
    dtype = q.dtype
    if get_paths(model).n_muscles:
        tau_m, f_mus, m_mus = muscle_loads(model, q, tension)
    else:
        tau_m, f_mus, m_mus = jnp.zeros_like(q), *(jnp.zeros((q.shape[0], model.n_bodies, 3), dtype),) * 2

    def frame(qk, qdk, tmk, fck, fm, mm, ld):
        tau = tmk
        if coord_actuators:
            tau = tau + actuator_columns(model, coord_actuators, qk) @ fck
        if elements_on is not None:
            tau = tau + elements_on * model.extras["forces"].generalized_force(model, qk, qdk)
        if ld is not None:
            ld = ld.resolved(model, qk)
            tau = tau + ld.generalized_forces(model, qk)
        qdd = forward_dynamics(model, qk, qdk, tau)
        a0 = jnp.zeros(6, dtype).at[3:].set(-model.gravity.astype(dtype))
        kin = forward_pass(model, qk, qdk, qdd, base_acceleration=a0)
        ops = Small(0, dtype)  # one frame (vmapped)
        v = kin.velocity
        wrench = _inertia_times(model, ops, kin.acceleration) + _cross_force(ops, v, _inertia_times(model, ops, v))
        rot = kin.rot  # (nb, 3, 3)
        # applied loads in body axes about the body origin
        f_app = jnp.einsum("bai,ba->bi", rot, fm)
        n_app = jnp.einsum("bai,ba->bi", rot, mm)
        if ld is not None:
            bidx = np.asarray([model.body_index(b) for b in ld.bodies], np.int32)
            fb = jnp.einsum("kai,ka->ki", rot[bidx], ld.forces)
            nbk = jnp.cross(ld.points, fb) + jnp.einsum("kai,ka->ki", rot[bidx], ld.torques)
            f_app = f_app.at[bidx].add(fb)
            n_app = n_app.at[bidx].add(nbk)
        wrench = wrench - jnp.concatenate([n_app, f_app], 1)
        total = subtree_wrenches(model, kin, wrench)  # parent on child, child axes, child origin
        world = jnp.concatenate([jnp.einsum("bai,bi->ba", rot, total[:, :3]),
                                 jnp.einsum("bai,bi->ba", rot, total[:, 3:])], 1)
        return qdd, world, rot, kin.pos

    return jax.vmap(frame)(q, qd, tau_m, coord_forces, f_mus, m_mus, other)


def reaction_loads(model, keys, wrench, rot, pos) -> np.ndarray:
    """Force, moment and point ``(T, nj, 9)`` of each :class:`ReactionKey` from the transmitted
    wrenches ``wrench (T, nb, 6)`` ([moment; force] the parent exerts on each body about its
    origin, ground axes) and body poses (module docstring, step 4): moved to the joint's child
    frame origin (on the child) or negated and moved to its parent frame origin (on the parent),
    then expressed in the key's frame.  Vectorized over frames and joints."""
    wrench, rot, pos = (np.asarray(a, float) for a in (wrench, rot, pos))
    T, nb = pos.shape[:2]
    rot_g = np.concatenate([rot, np.broadcast_to(np.eye(3), (T, 1, 3, 3))], 1)  # ground last
    pos_g = np.concatenate([pos, np.zeros((T, 1, 3))], 1)

    def idx(b):
        return nb if b == GROUND else model.body_index(b)

    child = np.asarray([idx(k.child) for k in keys])
    parent = np.asarray([idx(k.parent) for k in keys])
    fbody = np.asarray([idx(k.frame_body) for k in keys])
    on_child = np.asarray([k.on_child for k in keys])[None, :, None]
    c_off = np.stack([k.child_frame[:3, 3] for k in keys])
    p_off = np.stack([k.parent_frame[:3, 3] for k in keys])
    f_rot = np.stack([k.frame_transform[:3, :3] for k in keys])
    f_off = np.stack([k.frame_transform[:3, 3] for k in keys])
    moment_o, force = wrench[:, child, :3], wrench[:, child, 3:]
    pc = pos_g[:, child] + np.einsum("tjab,jb->tja", rot_g[:, child], c_off)  # child frame origin, ground
    moment_c = moment_o - np.cross(pc - pos_g[:, child], force)
    pp = pos_g[:, parent] + np.einsum("tjab,jb->tja", rot_g[:, parent], p_off)  # parent frame origin
    moment_p = -moment_c - np.cross(pc - pp, force)
    f_out = np.where(on_child, force, -force)
    m_out = np.where(on_child, moment_c, moment_p)
    p_out = np.where(on_child, pc, pp)
    r_f = np.einsum("tjab,jbc->tjac", rot_g[:, fbody], f_rot)  # the expressed-in frame in ground
    o_f = pos_g[:, fbody] + np.einsum("tjab,jb->tja", rot_g[:, fbody], f_off)
    return np.concatenate([np.einsum("tjba,tjb->tja", r_f, f_out), np.einsum("tjba,tjb->tja", r_f, m_out),
                           np.einsum("tjba,tjb->tja", r_f, p_out - o_f)], 2)


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


def joint_reactions_motion(model, coordinates: Table, forces: Table, external_loads=None, *, joints=("ALL",),
                           apply_on_bodies=("child",), express_in_frame=("ground",), actuators=(),
                           use_model_actuators: bool = True, replace_force_set: bool = False,
                           lowpass_cutoff: float = -1.0, time_range=None, step_interval: int = 1,
                           progress: bool = True, where: str = "JointReaction") -> JRResult:
    """OpenSim's ``JointReaction`` analysis of a coordinates table with a forces table (module docstring).

    ``forces``: a static optimization's force table (:func:`mbjax.io.read_storage` of ``_force.sto``);
    ``external_loads``: an :class:`~mbjax.io.external_loads.ExternalLoadsFile` or None;
    ``actuators``: the force-set files' actuators (:func:`mbjax.so_tool.read_reserves`), after the
    model's own scalar actuators (``use_model_actuators``: :func:`mbjax.so_tool.model_actuators`);
    ``replace_force_set``: the model's muscles, actuators and force elements are left out (OpenSim's
    ``replace_force_set``); ``joints``/``apply_on_bodies``/``express_in_frame``: as :func:`reaction_keys`;
    ``step_interval``: the rows recorded (the first, the last, and every row of the padded states
    table whose index is a multiple of it).
    """
    warn_float32("joint reactions")
    keys = reaction_keys(model, joints, apply_on_bodies, express_in_frame, where)
    with_elements = _check_force_elements(model, replace_force_set, where)
    own = model_actuators(model) if use_model_actuators and not replace_force_set else ()
    actuators = tuple(own) + tuple(actuators)
    _check_actuators(model, actuators, where)
    t, q, qd, _ = states_trajectory(model, coordinates, lowpass_cutoff, time_range, step_interval=step_interval)
    names, values = actuator_forces(model, forces, t, actuators, external_loads, replace_force_set=replace_force_set,
                                    where=where)
    paths = get_paths(model)
    tension = np.zeros((t.shape[0], paths.n_muscles))
    n_mus = len(names) - len(actuators)
    if n_mus:
        order = list(paths.names)
        tension[:, [order.index(n) for n in names[:n_mus]]] = values[:, :n_mus]
    acts = values[:, n_mus:]
    coord = [k for k, a in enumerate(actuators) if isinstance(a, CoordinateActuator)]
    coord_actuators = tuple(actuators[k]._replace(optimal_force=1.0) for k in coord)
    other = _nonmuscle_loads(model, t, external_loads, actuators, acts, names[n_mus:])
    if progress:
        print(f"joint reactions: {t.shape[0]} frames, {t[0]:.4g}-{t[-1]:.4g} s, {len(keys)} reactions, "
              f"{n_mus} muscles and {len(actuators)} actuators from the forces file: forward dynamics and "
              "Newton-Euler (one compilation per model and frame count) ...", flush=True)
    dtype = np.dtype(jnp.result_type(float))
    args = jax.device_put(jax.tree_util.tree_map(lambda a: np.asarray(a, dtype),
                                                 (q, qd, tension, acts[:, coord], other)))
    qdd, wrench, rot, pos = _dynamics_of_frames(model, *args, 1.0 if with_elements else None, coord_actuators)
    qdd = np.asarray(qdd)
    loads = reaction_loads(model, keys, wrench, rot, pos)
    if not (np.all(np.isfinite(qdd)) and np.all(np.isfinite(loads))):
        bad = np.nonzero(~(np.all(np.isfinite(qdd), 1) & np.all(np.isfinite(loads), (1, 2))))[0]
        raise ValueError(f"{where}: accelerations or reactions are NaN or inf at {bad.size} of {t.shape[0]} frames "
                         f"(first at t = {t[bad[0]]:.6g} s): check the model's paths and mass matrix at that pose")
    labels = tuple(f"{k.label}_{c}" for k in keys for c in _COMPONENTS)
    if progress:
        print("joint reactions: done", flush=True)
    return JRResult(t, loads, labels, keys, q, qd, qdd, values, names)


# --------------------------------------------------------------------------------------------
# OpenSim setup files
# --------------------------------------------------------------------------------------------


#: the JointReaction properties read (``Analysis`` ones and its own)
_JR_READ = ("on", "start_time", "end_time", "step_interval", "in_degrees", "forces_file", "joint_names",
            "apply_on_bodies", "express_in_frame")


def read_jr_setup(path) -> JRSetup:
    """Read an OpenSim ``AnalyzeTool`` setup XML whose ``AnalysisSet`` holds a ``JointReaction``;
    relative paths are made absolute against the setup file's folder (OpenSim runs its tools there).
    ``initial_time``/``final_time`` default to OpenSim's 0 and 1 s; what the tool does not use is
    warned by name (:func:`mbjax.so_tool.unused_setup_elements`)."""
    from .io.setup_xml import SetupFile

    setup = SetupFile(path)
    path, doc, root, base = setup.path, setup.doc, setup.root, setup.base
    tool = root if root.tag == "AnalyzeTool" else root.find("AnalyzeTool")
    if tool is None:
        raise doc.error(root, "no <AnalyzeTool> (a joint-reaction setup is an AnalyzeTool file)")
    text, file_of, number, flag = setup.text, setup.resolve, setup.number, setup.flag
    jrs = [el for s in tool.findall("AnalysisSet") for objs in s.findall("objects") for el in objs
           if el.tag == "JointReaction"]
    if not jrs:
        raise doc.error(tool, "no <JointReaction> in its <AnalysisSet>")
    if len(jrs) > 1:
        raise NotImplementedError(f"{doc.where(jrs[1])}: a second <JointReaction> analysis; mbjax runs one per "
                                  "setup file")
    jr = jrs[0]
    unused = unused_setup_elements(doc, tool, jr, _JR_READ)
    if unused:
        warnings.warn(f"{path}: not used by mbjax's joint reactions: " + "; ".join(unused), stacklevel=2)
    for tag in ("states_file", "speeds_file", "external_loads_model_kinematics_file"):
        if text(tool, tag):
            raise NotImplementedError(f"{doc.where(tool.find(tag))}: <{tag}> is not supported; give "
                                      "<coordinates_file> (speeds and the loads' kinematics come from its splines)")
    if not flag(jr, "on", True):
        raise ValueError(f"{doc.where(jr)}: the JointReaction analysis is switched off (<on> false)")
    t0, t1 = number(tool, "initial_time", 0.0), number(tool, "final_time", 1.0)
    if not t0 <= t1:
        el = tool.find("final_time")
        raise doc.error(el if el is not None else tool, f"<final_time> {t1:g} is before <initial_time> {t0:g}")
    a0, a1 = number(jr, "start_time", t0), number(jr, "end_time", t1)
    if (a0, a1) != (t0, t1):
        warnings.warn(f"{doc.where(jr)}: <start_time>/<end_time> ({a0:g}, {a1:g}) are not used: OpenSim's "
                      f"AnalyzeTool runs its analyses from <initial_time> to <final_time> ({t0:g}, {t1:g})",
                      stacklevel=2)
    step = number(jr, "step_interval", 1)
    if not (step >= 1 and step == int(step)):
        raise doc.error(jr.find("step_interval"), f"<step_interval> must be a positive integer, got {step:g}")

    def words(tag, default):
        txt = text(jr, tag)
        return tuple(txt.split()) if txt else default

    apply_on = words("apply_on_bodies", ("child",))
    bad = [a for a in apply_on if a.lower() not in ("child", "parent")]
    if bad:
        raise doc.error(jr.find("apply_on_bodies"), f"<apply_on_bodies> entries must be 'child' or 'parent', got {bad}")
    results = file_of(text(tool, "results_directory")) or base
    return JRSetup(path, tool.get("name") or "joint_reaction", jr.get("name") or "JointReaction",
                   file_of(text(tool, "model_file")), file_of(text(tool, "coordinates_file")),
                   file_of(text(tool, "external_loads_file")),
                   tuple(file_of(f) for f in (text(tool, "force_set_files") or "").split()),
                   flag(tool, "replace_force_set", False), (t0, t1),
                   number(tool, "lowpass_cutoff_frequency_for_coordinates", -1.0), int(step),
                   file_of(text(jr, "forces_file")), words("joint_names", ("ALL",)), apply_on,
                   words("express_in_frame", ("ground",)), results)


def joint_reactions_from_setup(path, model=None, *, write: bool = True, results_directory=None,
                               progress: bool = True) -> JRResult:
    """Run an OpenSim joint-reaction setup (``AnalyzeTool`` + ``JointReaction``): its model (unless
    ``model`` is given), coordinates, cut-off, time range, step interval, actuators, external loads
    and forces file; the result written as OpenSim writes it
    (``<results_directory>/<name>_<analysis>_ReactionLoads.sto``; ``results_directory`` replaces the
    setup's folder) unless ``write=False``."""
    from .io.external_loads import read_external_loads
    from .io.osim import load_osim

    setup = read_jr_setup(path)
    if setup.forces_file is None:
        raise NotImplementedError(f"{path}: the JointReaction has no <forces_file>; OpenSim then computes actuator "
                                  "forces from the states, which mbjax does not (give a static optimization's "
                                  "_force.sto)")
    if setup.coordinates_file is None:
        raise ValueError(f"{path}: no <coordinates_file>")
    for tag, f in (("forces_file", setup.forces_file), ("coordinates_file", setup.coordinates_file),
                   ("external_loads_file", setup.external_loads_file)):
        check_input_file(path, tag, f)
    for f in setup.force_set_files:
        check_input_file(path, "force_set_files", f)
    out = None
    if write:  # the results folder is made (as OpenSim makes it) and checked before computing
        folder = os.fspath(results_directory) if results_directory is not None else setup.results_directory
        out = prepare_output(os.path.join(folder, f"{setup.name}_{setup.analysis_name}_ReactionLoads.sto"), path,
                             "joint reaction loads file")
    if model is None:
        if setup.model_file is None:
            raise ValueError(f"{path}: no <model_file>; pass model=")
        model = load_osim(setup.model_file)
    actuators = tuple(a for f in setup.force_set_files for a in read_reserves(f))
    loads = None
    if setup.external_loads_file is not None:
        loads = read_external_loads(setup.external_loads_file, base_dirs=(os.path.dirname(os.path.abspath(path)),))
    result = joint_reactions_motion(model, read_coordinates(path, setup.coordinates_file),
                                    read_coordinates(path, setup.forces_file, "forces_file"), loads,
                                    joints=setup.joint_names, apply_on_bodies=setup.apply_on_bodies,
                                    express_in_frame=setup.express_in_frame, actuators=actuators,
                                    replace_force_set=setup.replace_force_set, lowpass_cutoff=setup.lowpass_cutoff,
                                    time_range=setup.time_range, step_interval=setup.step_interval,
                                    progress=progress, where=f"{path}: JointReaction {setup.analysis_name!r}")
    if out is not None:
        write_storage(out, result.table(), format="storage")
    return result
