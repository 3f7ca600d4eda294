"""The wrap objects of an OpenSim file (``WrapObjectSet`` of bodies, ground and offset frames) as
:class:`~mbjax.wrapping.WrapObject` specs."""

from __future__ import annotations

from typing import Any

from ..._model import GROUND
from ...wrapping.objects import WrapObject
from .osim_xml import _bool, _floats, _text, _tf, _xyz_body_fixed


#: the sizes OpenSim refuses below zero when it reads the file
_NOT_NEGATIVE = {"WrapCylinder": ("radius", "length"), "WrapSphere": ("radius",)}


class _WrapObjectsMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s wrap objects, keyed by name in ``self.wrap_elements``."""

    def _wrap_objects(self):
        """Every wrap object of the file, keyed by name (element), and as :class:`WrapObject` specs."""
        doc = self.doc
        parents = {c: p for p in self.model.iter() for c in p}
        elements: dict[str, Any] = {}
        for wset in self.model.iter("WrapObjectSet"):
            holder = wset.find("objects")
            for el in (holder if holder is not None else []):
                name = el.get("name")
                if name in elements:
                    raise doc.error(el, f"duplicate wrap object name {name!r}: also at line "
                                    f"{doc.lines.get(elements[name], '?')}")
                elements[name] = el
                el.set("_owner_frame", "")
                for tag in _NOT_NEGATIVE.get(el.tag, ()):  # refused by OpenSim even where no path uses it
                    value = _floats(doc, el, tag, 1, default=[0.0])[0]
                    if value < 0:
                        raise doc.error(el, f"{el.tag} {name!r}: <{tag}> is {value:g}, below zero (OpenSim "
                                        f"refuses it); give the {tag} in metres, > 0")
                owner = parents.get(wset)
                if owner is None:
                    raise doc.error(el, "wrap object outside a body or frame")
                if owner.tag == "Ground" or (owner.tag == "Body" and owner.get("name") == GROUND):
                    el.set("_owner_frame", GROUND)
                elif owner.tag == "Body":
                    el.set("_owner_frame", owner.get("name"))
                elif owner.tag == "PhysicalOffsetFrame":
                    el.set("_owner_frame", owner.get("name"))
                else:
                    raise doc.error(el, f"wrap object owned by <{owner.tag}> is not supported", NotImplementedError)
        self.wrap_elements = elements

    def _wrap_object(self, el):
        doc = self.doc
        body, x_bf = self._resolve(el, el.get("_owner_frame"))
        rot = _xyz_body_fixed(_floats(doc, el, "xyz_body_rotation", 3, default=[0, 0, 0]))
        trans = _floats(doc, el, "translation", 3, default=[0, 0, 0])
        x = x_bf @ _tf(rot, trans)
        if el.tag == "WrapCylinder":
            dims = [_floats(doc, el, "radius", 1, default=[1.0])[0], _floats(doc, el, "length", 1, default=[1.0])[0], 0.0]
        elif el.tag == "WrapSphere":
            dims = [_floats(doc, el, "radius", 1, default=[1.0])[0], 0.0, 0.0]
        elif el.tag == "WrapEllipsoid":
            dims = list(_floats(doc, el, "dimensions", 3, default=[1.0, 1.0, 1.0]))
        else:  # WrapTorus
            dims = [_floats(doc, el, "inner_radius", 1, default=[0.01])[0],
                    _floats(doc, el, "outer_radius", 1, default=[0.05])[0], 0.0]
        if el.find("quadrant") is not None and _text(el, "quadrant") is None:
            raise doc.error(el, "<quadrant> is empty (OpenSim 4.6 refuses it too); write all, x, +x, -x, y, +y, -y, "
                            "z, +z or -z, or leave the element out")
        quadrant = _text(el, "quadrant", "Unassigned")
        active = _bool(el, "active", default=True, doc=doc)
        try:
            return WrapObject(el.get("name"), el.tag, body, dims, x[:3, :3], x[:3, 3], quadrant, active)
        except ValueError as e:
            raise doc.error(el, str(e)) from None
