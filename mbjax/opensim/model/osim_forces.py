"""OpenSim force elements read into ``model.forces`` (:mod:`mbjax.forces`).

Modelled (:data:`MODELLED_FORCES`): ``CoordinateLimitForce``, ``SpringGeneralizedForce``,
``ExpressionBasedCoordinateForce``, ``PointToPointSpring``, ``BushingForce`` (4.x ``socket_frame1/2``
with the force's own ``<frames>``, or 3.x ``body_1``/``location_body_1``/``orientation_body_1``),
``HuntCrossleyForce`` (sphere and half-space ``ContactGeometry``, :mod:`mbjax.opensim.model.osim_contact`).
An element with ``appliesForce`` false (3.x: ``isDisabled`` true) is skipped, as OpenSim skips it.

Coordinates: an element on an independent coordinate reads ``q``; on a coupled (eliminated) one it
reads the coordinate's map and acts through it (``Q = f ∇g``, :mod:`mbjax.forces.base`); on a
locked one it is dropped (the lock absorbs the whole generalized force; it changes no motion).
One on a rotation coordinate of a ``BallJoint``, ``FreeJoint`` or ``EllipsoidJoint`` acts as OpenSim applies
it, on the joint's angular-velocity speed u = E(q) q̇ (its speed ``(E q̇)_j``, its force ``Eᵀ e_j f``,
:mod:`mbjax.forces.base`); refused by name when another angle of that joint is locked or coupled.
A ``CoordinateLimitForce``'s per-degree units apply only when the coordinate is rotational
(OpenSim's ``_w = Rotational ? SimTK_DEGREE_TO_RADIAN : 1``), with the motion type OpenSim 4.x gives
it (:func:`mbjax.opensim.model.osim_motion.motion_types`): a coordinate a ``CustomJoint`` moves only
through functions other than a unit-slope ``LinearFunction`` (MoBL's wrist ``deviation`` and
``flexion``: splines) is *coupled*, and its limits, stiffnesses and damping are taken as written.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ...forces.bushing import BushingForce
from ...forces.coordinate_limit import CoordinateLimitForce
from ...forces.expression_coordinate import ExpressionBasedCoordinateForce
from ...forces.point_to_point_spring import PointToPointSpring
from .osim_contact import read_hunt_crossley
from .osim_motion import motion_types
from ...forces.spring_generalized import SpringGeneralizedForce
from .osim_classes import MODELLED_FORCES
from .osim_xml import _bool, _floats, _text, _tf, _xyz_body_fixed

_COORDINATE_FORCES = MODELLED_FORCES[:3]


def applies_force(el, doc=None) -> bool:
    """OpenSim 4.x ``appliesForce`` (default true); 3.x ``isDisabled`` (default false)."""
    return _bool(el, "appliesForce", True, doc) and not _bool(el, "isDisabled", False, doc)


def _coordinate_ref(loader, el, dropped):
    """An element's coordinate as a name (independent) or a joint map (coupled); None if locked."""
    doc, coords = loader.doc, loader.coords
    c = _text(el, "coordinate")
    if c is None:
        raise doc.error(el, "force without <coordinate>")
    c = c.split("/")[-1]
    if c not in coords.info:
        raise doc.error(el, f"unknown coordinate {c!r}")
    role = coords.role(c)
    if role == "locked":
        dropped.append((el.tag, el.get("name")))
        return None, c
    if role == "dependent":
        return coords.inner_of(doc, c), c
    return c, c


def _frame(loader, el, socket, frames, body_tag, loc_tag, orient_tag):
    """(body, X_body_frame) of a force's frame socket (its own <frames> first), or the 3.x body + offset."""
    doc = loader.doc
    ref = _text(el, socket)
    if ref is None:
        body = _text(el, body_tag)
        if body is None:
            raise doc.error(el, f"missing <{socket}>")
        base, x = loader._resolve(el, body)
        if loc_tag is None:
            return base, x
        off = _tf(_xyz_body_fixed(_floats(doc, el, orient_tag, 3, default=[0, 0, 0])),
                  _floats(doc, el, loc_tag, 3, default=[0, 0, 0]))
        return base, x @ off
    name = ref.strip().split("/")[-1]
    if name in frames and not ref.strip().startswith(("/bodyset", "/ground", "/jointset")):
        return frames[name]
    return loader._resolve(el, ref)


def _own_frames(loader, el):
    doc, out = loader.doc, {}
    holder = el.find("frames")
    for fr in (holder if holder is not None else []):
        if fr.tag != "PhysicalOffsetFrame":
            raise doc.error(fr, "only PhysicalOffsetFrame is supported in a force's <frames>", NotImplementedError)
        parent = _text(fr, "socket_parent")
        if parent is None:
            raise doc.error(fr, "PhysicalOffsetFrame without <socket_parent>")
        body, x = loader._resolve(fr, parent)
        off = _tf(_xyz_body_fixed(_floats(doc, fr, "orientation", 3, default=[0, 0, 0])),
                  _floats(doc, fr, "translation", 3, default=[0, 0, 0]))
        out[fr.get("name")] = (body, x @ off)
    return out


def read_force_elements(loader, model, elements):
    """Force-element stacks (one per modelled class) for the ForceSet entries ``elements``.

    Returns ``(stacks, dropped)``: ``dropped`` lists ``(class, name)`` of elements on locked
    coordinates (no effect on motion).
    """
    doc = loader.doc
    dropped: list[tuple[str, str]] = []
    by_kind: dict[str, list] = {k: [] for k in MODELLED_FORCES}
    motion = None

    def bidx(body):
        return -1 if body == "ground" else model.body_index(body)

    for el in elements:
        if not applies_force(el, doc):
            continue
        name = el.get("name") or el.tag
        if el.tag in _COORDINATE_FORCES:
            ref, cname = _coordinate_ref(loader, el, dropped)
            if ref is None:
                continue
            if el.tag == "CoordinateLimitForce":
                if motion is None:
                    motion = motion_types(doc.path)
                mt = motion.get(cname, "undefined")
                vals = [float(_floats(doc, el, t, 1, default=[d])[0]) for t, d in
                        (("upper_stiffness", 1.0), ("upper_limit", 0.0), ("lower_stiffness", 1.0),
                         ("lower_limit", 0.0), ("damping", 0.001), ("transition", 0.1))]
                if vals[3] > vals[1]:  # OpenSim computes a limit force that pushes both ways inside the gap
                    raise doc.error(el, f"CoordinateLimitForce {name!r}: lower_limit {vals[3]:g} is above upper_limit "
                                    f"{vals[1]:g}; mbjax refuses it (OpenSim loads it and applies both limits' "
                                    "springs between them); swap the limits")
                by_kind[el.tag].append((name, ref, mt == "rotational", *vals))
            elif el.tag == "SpringGeneralizedForce":
                vals = [float(_floats(doc, el, t, 1, default=[d])[0]) for t, d in
                        (("stiffness", 0.0), ("rest_length", 0.0), ("viscosity", 0.0))]
                by_kind[el.tag].append((name, ref, *vals))
            else:
                expr = _text(el, "expression", "0.0")
                if el.find("expression") is not None and _text(el, "expression") is None:
                    raise doc.error(el, f"ExpressionBasedCoordinateForce {name!r}: <expression> is empty (OpenSim "
                                    "refuses it too: unexpected end of expression); write the force, e.g. -10*q, "
                                    "or leave the element out for a zero force")
                from ...forces.expression import compile_expression

                try:
                    compile_expression(expr)
                except ValueError as e:
                    raise doc.error(el, str(e), NotImplementedError) from None
                by_kind[el.tag].append((name, ref, expr))
        elif el.tag == "PointToPointSpring":
            b1, x1 = _frame(loader, el, "socket_body1", {}, "body1", None, None)
            b2, x2 = _frame(loader, el, "socket_body2", {}, "body2", None, None)
            p1 = x1[:3, :3] @ _floats(doc, el, "point1", 3, default=[0, 0, 0]) + x1[:3, 3]
            p2 = x2[:3, :3] @ _floats(doc, el, "point2", 3, default=[0, 0, 0]) + x2[:3, 3]
            k = float(_floats(doc, el, "stiffness", 1, default=[1.0])[0])
            length = float(_floats(doc, el, "rest_length", 1, default=[0.0])[0])
            by_kind[el.tag].append((name, bidx(b1), bidx(b2), p1, p2, k, length))
        elif el.tag == "BushingForce":
            own = _own_frames(loader, el)
            b1, x1 = _frame(loader, el, "socket_frame1", own, "body_1", "location_body_1", "orientation_body_1")
            b2, x2 = _frame(loader, el, "socket_frame2", own, "body_2", "location_body_2", "orientation_body_2")
            k = np.concatenate([_floats(doc, el, "rotational_stiffness", 3, default=[0, 0, 0]),
                                _floats(doc, el, "translational_stiffness", 3, default=[0, 0, 0])])
            c = np.concatenate([_floats(doc, el, "rotational_damping", 3, default=[0, 0, 0]),
                                _floats(doc, el, "translational_damping", 3, default=[0, 0, 0])])
            if b1 == b2:
                raise doc.error(el, "BushingForce between two frames of the same body")
            by_kind[el.tag].append((name, bidx(b1), bidx(b2), x1, x2, k, c))
        elif el.tag == "HuntCrossleyForce":
            by_kind[el.tag].append(el)
    stacks = _stacks(model, by_kind)
    contact = read_hunt_crossley(loader, model, by_kind["HuntCrossleyForce"])
    return stacks + ([contact] if contact is not None else []), tuple(dropped)


def _stacks(model, by_kind):
    out = []
    rows = by_kind["CoordinateLimitForce"]
    if rows:
        cols = list(zip(*rows))
        out.append(CoordinateLimitForce.from_opensim(model, cols[0], cols[1], np.asarray(cols[2]), *cols[3:]))
    rows = by_kind["SpringGeneralizedForce"]
    if rows:
        cols = list(zip(*rows))
        out.append(SpringGeneralizedForce.create(model, cols[0], cols[1], *cols[2:]))
    rows = by_kind["ExpressionBasedCoordinateForce"]
    if rows:
        cols = list(zip(*rows))
        out.append(ExpressionBasedCoordinateForce.create(model, cols[0], cols[1], cols[2]))
    rows = by_kind["PointToPointSpring"]
    if rows:
        n, b1, b2, p1, p2, k, length = zip(*rows)
        a = lambda v: jnp.asarray(np.asarray(v, dtype=float))  # noqa: E731
        out.append(PointToPointSpring(a(p1), a(p2), a(k), a(length),
                                      tuple(b1), tuple(b2), tuple(n)))
    rows = by_kind["BushingForce"]
    if rows:
        n, b1, b2, x1, x2, k, c = zip(*rows)
        a = lambda v: jnp.asarray(np.asarray(v, dtype=float))  # noqa: E731
        out.append(BushingForce(a(x1), a(x2), a(k), a(c), tuple(b1), tuple(b2),
                                tuple(n)))
    return out
