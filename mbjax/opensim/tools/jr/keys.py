"""The reactions a ``JointReaction`` analysis reports (:class:`ReactionKey`): the joints and frames
of the model's ``.osim`` file, looked up as OpenSim looks them up."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from ...._model import GROUND


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


def _model_joints(model):
    """``(joints, frames)`` of the model's source ``.osim``: ``joints`` a list of ``(name, parent,
    child, X_PF, X_BC)`` in file order, ``frames`` the file's frames by name/path -> (body, X)."""
    from ...model.osim import _Loader

    info = model.osim
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
    return _once_each(keys, where)


def _once_each(keys, where: str) -> tuple[ReactionKey, ...]:
    """``keys`` without repeats of one reaction (joint, body, frame), warning naming the repeats: OpenSim
    writes each again as a duplicate column; mbjax computes and writes each once."""
    seen, repeated = {}, []
    for k in keys:
        if k.label in seen:
            repeated.append(k.label)
        else:
            seen[k.label] = k
    if repeated:
        warnings.warn(f"{where}: joint_names, apply_on_bodies and express_in_frame ask for the same reaction more "
                      f"than once: {sorted(set(repeated))} (joint_on_body_in_frame); each is computed and written "
                      "once (OpenSim writes duplicate columns)", stacklevel=3)
    return tuple(seen.values())
