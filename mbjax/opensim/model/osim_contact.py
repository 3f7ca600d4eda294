"""OpenSim ``HuntCrossleyForce`` elements and their ``ContactGeometrySet`` surfaces (:mod:`mbjax.forces.hunt_crossley`).

Each force's ``ContactParametersSet`` lists geometry names with the parameters of those surfaces;
OpenSim adds every listed geometry, in order, to one contact set with those parameters
(``HuntCrossleyForce::extendAddToSystem``).  A geometry is ``ContactSphere`` (``radius``) or
``ContactHalfSpace`` (normal ``-x`` of its frame) on ``socket_frame`` (3.x: ``body_name``) at
``location`` / ``orientation`` (X-Y-Z body-fixed).  Other geometry (``ContactMesh``,
``ContactEllipsoid``, ``ContactBrick``, ...) is refused by name.
"""

from __future__ import annotations

import numpy as np

from ..._model import GROUND
from ...forces.hunt_crossley import HALF_SPACE, SPHERE, HuntCrossleyForce
from .osim_xml import _floats, _text, _tf, _xyz_body_fixed

_KINDS = {"ContactSphere": SPHERE, "ContactHalfSpace": HALF_SPACE}


def _children(el, suffix):
    return [c for c in el if c.tag.endswith(suffix)]


def _geometries(loader):
    """Name -> element of the model's ``ContactGeometrySet``."""
    cset = loader.model.find("ContactGeometrySet")
    objs = cset.find("objects") if cset is not None else None
    return {g.get("name"): g for g in (objs if objs is not None else [])}


def _surface(loader, geom):
    """(body, kind, X_body_surface, radius) of one geometry element."""
    doc = loader.doc
    kind = _KINDS.get(geom.tag)
    if kind is None:
        raise doc.error(geom, f"{geom.tag} in a HuntCrossleyForce is not modelled (mbjax/forces/hunt_crossley.py "
                        "models ContactSphere and ContactHalfSpace only); pass ignore_forces=('HuntCrossleyForce',) "
                        "to load the model without contact", NotImplementedError)
    ref = _text(geom, "socket_frame") or _text(geom, "body_name")
    if ref is None:
        raise doc.error(geom, "contact geometry without <socket_frame>")
    body, x_bf = loader._resolve(geom, ref)
    x_fp = _tf(_xyz_body_fixed(_floats(doc, geom, "orientation", 3, default=[0, 0, 0])),
               _floats(doc, geom, "location", 3, default=[0, 0, 0]))
    radius = float(_floats(doc, geom, "radius", 1, default=[0.0])[0]) if kind == SPHERE else 0.0
    return body, kind, x_bf @ x_fp, radius


def read_hunt_crossley(loader, model, elements):
    """One :class:`~mbjax.forces.hunt_crossley.HuntCrossleyForce` stack for the (applied) forces ``elements``,
    or None when there are none."""
    if not elements:
        return None
    doc = loader.doc
    geoms = _geometries(loader)
    names, surfaces, vt = [], [], []
    for group, el in enumerate(elements):
        names.append(el.get("name") or el.tag)
        vt.append(float(_floats(doc, el, "transition_velocity", 1, default=[0.01])[0]))
        for pset in _children(el, "ContactParametersSet"):
            holder = pset.find("objects")
            for par in _children(holder if holder is not None else [], "ContactParameters"):
                vals = {t: float(_floats(doc, par, t, 1, default=[0.0])[0]) for t in
                        ("stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")}
                for gname in (_text(par, "geometry", "") or "").split():
                    geom = geoms.get(gname.split("/")[-1])
                    if geom is None:
                        raise doc.error(par, f"unknown contact geometry {gname!r} (not in the ContactGeometrySet)")
                    body, kind, x, radius = _surface(loader, geom)
                    surfaces.append(dict(group=group, body=-1 if body == GROUND else model.body_index(body),
                                         kind=kind, x_body_surface=x, radius=radius, **vals))
    return HuntCrossleyForce.create(names, surfaces, np.asarray(vt))
