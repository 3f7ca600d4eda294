"""The structure of an OpenSim file: its bodies, joints and offset frames, with socket paths
resolved to ``(body, X_body_frame)``."""

from __future__ import annotations

import numpy as np

from .._model import GROUND
from .osim_joints import JOINT_TYPES
from .osim_xml import _coordinate_elements, _floats, _text, _tf, _xyz_body_fixed


class _StructureMixin:
    """:class:`~mbjax.io.osim._Loader`'s reading of the BodySet, JointSet, frames and coordinates."""

    def read_structure(self):
        doc, model = self.doc, self.model
        bodyset = model.find("BodySet")
        if bodyset is None or bodyset.find("objects") is None:
            raise doc.error(model, "no <BodySet><objects>")
        self.frames[GROUND] = (GROUND, np.eye(4))
        self.frames["/ground"] = (GROUND, np.eye(4))
        for el in bodyset.find("objects"):
            if el.tag != "Body":
                raise doc.error(el, "unsupported body type (only <Body>)", NotImplementedError)
            name = el.get("name")
            if name == GROUND:
                continue
            if name in self.bodies:
                # OpenSim 4.6 renames the second to '<name>_0' and frees it with a FreeJoint
                raise doc.error(el, f"duplicate body name {name!r}: also defined at line "
                                f"{doc.lines.get(self.bodies[name], '?')}")
            self.bodies[name] = el
            self.frames[name] = (name, np.eye(4))
            self.frames[f"/bodyset/{name}"] = (name, np.eye(4))
        joint_list = []
        if self.version >= 30000:
            jointset = model.find("JointSet")
            for j in (jointset.find("objects") if jointset is not None else []):
                joint_list.append(j)
            # offset frames owned by joints or bodies
            for owner in list(joint_list) + list(bodyset.find("objects")) + [model.find("Ground")]:
                if owner is None:
                    continue
                for holder in (owner.find("frames"), owner.find("components")):
                    if holder is None:
                        continue
                    for fr in holder:
                        if fr.tag != "PhysicalOffsetFrame":
                            continue
                        self._offset_frame(fr, owner)
        else:
            for b in bodyset.find("objects"):
                jholder = b.find("Joint")
                if jholder is None or len(jholder) == 0:
                    continue
                if len(jholder) != 1:
                    raise doc.error(jholder, "expected one joint")
                j = jholder[0]
                j.set("_child_body", b.get("name"))
                joint_list.append(j)
        # coordinates first (couplers may reference coordinates of later joints)
        for j in joint_list:
            for c in _coordinate_elements(j):
                self._coordinate(c)
        self._couplers()
        for j in joint_list:
            self.joints.append(self._joint_frames(j))

    def _offset_frame(self, fr, owner):
        doc = self.doc
        parent = _text(fr, "socket_parent")
        if parent is None:
            raise doc.error(fr, "PhysicalOffsetFrame without <socket_parent>")
        trans = _floats(doc, fr, "translation", 3, default=[0, 0, 0])
        orient = _floats(doc, fr, "orientation", 3, default=[0, 0, 0])
        x = _tf(_xyz_body_fixed(orient), trans)
        base = self._resolve(fr, parent, owner)
        body, x_base = base
        resolved = (body, x_base @ x)
        name = fr.get("name")
        owner_path = self._owner_path(owner)
        self.frames[f"{owner_path}/{name}"] = resolved
        if owner.tag in JOINT_TYPES:
            self.frames.setdefault(("joint", owner.get("name"), name), resolved)
        else:
            self.frames.setdefault(name, resolved)

    def _owner_path(self, owner):
        if owner.tag == "Ground":
            return "/ground"
        if owner.tag == "Body":
            return f"/bodyset/{owner.get('name')}"
        return f"/jointset/{owner.get('name')}"

    def _resolve(self, el, ref: str, owner=None):
        """Resolve a socket path (absolute, relative '..', or bare name) to (body, X_body_frame)."""
        ref = ref.strip()
        cands = [ref]
        if ref in ("..", "../") and owner is not None and owner.tag in ("Body", "Ground"):
            cands.append(self._owner_path(owner))  # a body-owned frame's parent is the body
        if ref.startswith("../") and owner is not None:
            cands.append(f"{self._owner_path(owner)}/{ref[3:]}")
            cands.append(ref[3:])
        if owner is not None and owner.tag in JOINT_TYPES:
            cands.insert(0, ("joint", owner.get("name"), ref))
        cands.append(ref.split("/")[-1])
        for c in cands:
            if c in self.frames:
                return self.frames[c]
        raise self.doc.error(el, f"cannot resolve frame {ref!r}")
