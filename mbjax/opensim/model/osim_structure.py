"""The structure of an OpenSim file: its bodies, joints and offset frames, with socket paths
resolved to ``(body, X_body_frame)``."""

from __future__ import annotations

import numpy as np

from ..._model import GROUND
from .osim_classes import JOINT_TYPES
from .osim_older_documents import JOINTSET_VERSION, SOCKET_PATHS_VERSION, drop_is_disabled, rename_sockets
from .osim_summary import second_element
from .osim_xml import _coordinate_elements, _floats, _text, _tf, _xyz_body_fixed


#: children of <Model> read, or deliberately not read (they change no quantity mbjax computes:
#: descriptions, units, visuals); the objects of ControllerSet, ProbeSet and ComponentSet are listed
_MODEL_CHILDREN = ("credits", "publications", "length_units", "force_units", "assembly_accuracy", "gravity",
                   "Ground", "BodySet", "JointSet", "ConstraintSet", "MarkerSet", "ForceSet", "ControllerSet",
                   "ContactGeometrySet", "ProbeSet", "ComponentSet", "ModelVisualPreferences", "components",
                   "defaults", "FrameSet", "Appearance")
#: children of a <Body> read (mass properties, frames, wrap objects, the 3.x joint) or visual
_BODY_CHILDREN = ("mass", "mass_center", "inertia", "inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy",
                  "inertia_xz", "inertia_yz", "WrapObjectSet", "Joint", "frames", "components", "FrameGeometry",
                  "frame_geometry", "attached_geometry", "VisibleObject", "Appearance", "Displayer")
#: sets whose objects mbjax does not read, and why
_UNREAD_SETS = {"ControllerSet": "mbjax takes excitations as inputs", "ProbeSet": "probes are not computed",
                "ComponentSet": "components are not modelled"}
#: the sets whose objects must have distinct names (OpenSim renames a duplicate, which breaks every
#: reference to it)
_NAMED_SETS = ("JointSet", "ForceSet", "MarkerSet", "ConstraintSet", "ContactGeometrySet",
               "ControllerSet", "ProbeSet", "ComponentSet")


class _StructureMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s reading of the BodySet, JointSet, frames and coordinates."""

    def _check_model_elements(self):
        """Refuse duplicate names within a set; list the model's elements that are not used in
        ``self.unused`` (warned once by the loader)."""
        doc, model = self.doc, self.model
        for set_name in _NAMED_SETS:
            for holder in model.findall(set_name):
                objects = holder.find("objects")
                seen = {}
                for el in (objects if objects is not None else []):
                    name = el.get("name")
                    if name is None:
                        continue
                    if name in seen:
                        first = seen[name]
                        raise doc.error(el, f"duplicate name {name!r} in the {set_name}: also the name of <{first.tag}> "
                                        f"at line {doc.lines.get(first, '?')} (OpenSim renames the second, which "
                                        "breaks every reference to it); rename one")
                    seen[name] = el
        first_of = {}
        for el in model:
            if not isinstance(el.tag, str):
                continue
            if el.tag in first_of:  # OpenSim reads the first element of a property's name only
                again = second_element(el, first_of[el.tag], doc.lines)
                if el.tag.endswith("Set"):
                    raise doc.error(el, again)
                self.unused.append(f"line {doc.lines.get(el, '?')} <{el.tag}> in <Model> ({again})")
                continue
            first_of[el.tag] = el
            if el.tag not in _MODEL_CHILDREN:
                self.unused.append(f"line {doc.lines.get(el, '?')} <{el.tag}> in <Model>")
            elif el.tag in _UNREAD_SETS and el.find("objects") is not None:
                for o in el.find("objects"):
                    self.unused.append(f"line {doc.lines.get(o, '?')} <{o.tag} name={o.get('name')!r}> in the "
                                       f"{el.tag} ({_UNREAD_SETS[el.tag]})")
        bodyset = model.find("BodySet")
        for b in (bodyset.find("objects") if bodyset is not None and bodyset.find("objects") is not None else []):
            for c in b:
                if isinstance(c.tag, str) and c.tag not in _BODY_CHILDREN:
                    self.unused.append(f"line {doc.lines.get(c, '?')} <{c.tag}> in <Body name={b.get('name')!r}>")
            for holder in (b.find("components"), b.find("frames")):
                for c in (holder if holder is not None else []):
                    if isinstance(c.tag, str) and c.tag != "PhysicalOffsetFrame":
                        self.unused.append(f"line {doc.lines.get(c, '?')} <{c.tag} name={c.get('name')!r}> in "
                                           f"<Body name={b.get('name')!r}>/<{holder.tag}>")

    def read_structure(self):
        doc, model = self.doc, self.model
        rename_sockets(doc, self.version)
        self._check_model_elements()
        self._note_invalid_names()
        self.unused += drop_is_disabled(doc, self.version, [o for tag in ("ForceSet", "ConstraintSet")
                                                            for o in model.findall(f"{tag}/objects/*")])
        bodyset = model.find("BodySet")
        if bodyset is None or bodyset.find("objects") is None:
            raise doc.error(model, "no <BodySet><objects>")
        self.frames[GROUND] = (GROUND, np.eye(4))
        self.frames["/ground"] = (GROUND, np.eye(4))
        for el in bodyset.find("objects"):
            if el.tag != "Body":
                raise doc.error(el, "unsupported body type (only <Body>)", NotImplementedError)
            name = el.get("name")
            if name == GROUND and self.version >= JOINTSET_VERSION:  # a body, not the model's <Ground>
                raise doc.error(el, f"a Body named {GROUND!r} (a child body that OpenSim keeps apart from the model's "
                                f"Ground, /bodyset/{GROUND} vs /{GROUND}) is not supported: mbjax names the model's "
                                f"Ground {GROUND!r}; rename the body and its /bodyset/{GROUND} references",
                                NotImplementedError)
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
        if self.version >= JOINTSET_VERSION:
            jointset = model.find("JointSet")
            for j in (jointset.find("objects") if jointset is not None else []):
                joint_list.append(j)
            # offset frames owned by joints, bodies, ground or the model (its <components>)
            pending = []
            for owner in list(joint_list) + list(bodyset.find("objects")) + [model.find("Ground"), model]:
                if owner is None:
                    continue
                for holder in (owner.find("frames"), owner.find("components")):
                    if holder is None:
                        continue
                    pending += [(fr, owner) for fr in holder if fr.tag == "PhysicalOffsetFrame"]
            while pending:  # in file order; a frame on a frame read later (a chain) on the next pass
                failed = []
                for fr, owner in pending:
                    try:
                        self._offset_frame(fr, owner)
                    except ValueError:
                        failed.append((fr, owner))
                if len(failed) == len(pending):
                    self._offset_frame(*failed[0])  # raises, naming the frame
                pending = failed
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
            jointset = model.find("JointSet/objects")
            if not joint_list and jointset is not None and len(jointset):
                raise doc.error(doc.root, f"Version=\"{self.version}\" is a 3.x document (joints inside bodies), but "
                                "the joints are in the model's <JointSet> (the 4.x layout): set the Version attribute "
                                "to the version the file was saved in (e.g. 40000)")
        seen = {}
        for j in joint_list:
            name = j.get("name")
            if name is not None and name in seen:
                raise doc.error(j, f"duplicate joint name {name!r}: also the name of <{seen[name].tag}> at line "
                                f"{doc.lines.get(seen[name], '?')}; rename one")
            seen[name] = j
        # coordinates first (couplers may reference coordinates of later joints)
        for j in joint_list:
            for c in _coordinate_elements(j):
                self._coordinate(c)
        self._couplers()
        child_of = {}
        for j in joint_list:
            self.joints.append(self._joint_frames(j))
            child = self.joints[-1][2]
            if child in child_of:  # mbjax's tree gives each body one parent joint
                first = child_of[child]
                raise doc.error(j, f"body {child!r} is the child of two joints, <{first.tag} name="
                                f"{first.get('name')!r}> (line {doc.lines.get(first, '?')}) and <{j.tag} name="
                                f"{j.get('name')!r}> (line {doc.lines.get(j, '?')}): a closed loop; keep one joint and "
                                "close the loop with a constraint")
            child_of[child] = j

    def _offset_frame(self, fr, owner):
        doc = self.doc
        parent = _text(fr, "socket_parent")
        if parent is None:
            raise doc.error(fr, "PhysicalOffsetFrame without <socket_parent>")
        trans = _floats(doc, fr, "translation", 3, default=[0, 0, 0])
        orient = _floats(doc, fr, "orientation", 3, default=[0, 0, 0])
        x = _tf(_xyz_body_fixed(orient), trans)
        if (owner.tag in JOINT_TYPES and self.version >= SOCKET_PATHS_VERSION and "/" not in parent.strip()
                and ("joint", owner.get("name"), parent.strip()) in self.frames):
            # OpenSim resolves the socket from this frame, whose siblings are at ../<name>
            raise doc.error(fr, f"<socket_parent> {parent.strip()!r} is a bare frame name; OpenSim refuses it (could "
                            f"not find {parent.strip()!r} from the frame {fr.get('name')!r}): write the sibling frame's "
                            f"path ../{parent.strip()}")
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
        if owner.tag == "Model":  # a frame in the model's <components> is at /<name>
            return ""
        if owner.tag == "Body":
            return f"/bodyset/{owner.get('name')}"
        return f"/jointset/{owner.get('name')}"

    def note_opensim_refuses(self, el, what: str):
        """List (once) a reference or name of element ``el`` that OpenSim 4.6 refuses and mbjax reads as meant."""
        name = el.get("name")
        note = f"line {self.doc.lines.get(el, '?')} <{el.tag}{' name=' + repr(name) if name else ''}>: {what}"
        if note not in self._opensim_refuses:
            self._opensim_refuses.append(note)

    def _note_invalid_names(self):
        """List the components mbjax names whose name holds a character OpenSim refuses in one
        (``Component::finalizeFromProperties``: whitespace, \\, /, * or +)."""
        model = self.model
        named = [el for tag in ("BodySet", "JointSet", "ForceSet", "ConstraintSet", "MarkerSet")
                 for el in model.findall(f"{tag}/objects/*")]
        named += [el for tag in ("Coordinate", "PathPoint", "ConditionalPathPoint", "MovingPathPoint", "PathWrap")
                  for el in model.iter(tag)]
        for el in named:
            name = el.get("name") or ""
            bad = sorted({ch for ch in name if ch.isspace() or ch in "\\/*+"})
            if bad:
                self.note_opensim_refuses(el, f"name {name!r} holds {', '.join(map(repr, bad))}, which OpenSim refuses "
                                              "in a component's name (invalid characters)")

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
                if (c == ref and self.version >= SOCKET_PATHS_VERSION and "/" not in ref
                        and (ref in self.bodies or ref == GROUND)):
                    self.note_opensim_refuses(el, f"socket {ref!r} is a bare body name, which OpenSim resolves "
                                                  "from the element (not found); write the path "
                                                  f"/{'' if ref == GROUND else 'bodyset/'}{ref}")
                return self.frames[c]
        raise self.doc.error(el, f"cannot resolve frame {ref!r}")
