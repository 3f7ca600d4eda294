"""The path of an OpenSim path force: a ``GeometryPath``'s points and path wraps, or a
``FunctionBasedPath``."""

from __future__ import annotations

import warnings

import numpy as np

from ...maps.constant import Constant
from ...maps.linear_combination import LinearCombination
from ...muscles.paths import ConditionalPathPoint, MovingPathPoint, PathPoint
from ...wrapping.objects import KINDS as WRAP_KINDS
from ...wrapping.objects import METHODS as WRAP_METHODS
from ...wrapping.objects import PathWrap
from .osim_older_documents import SOCKET_PATHS_VERSION
from .osim_path_functions import FUNCTION_BASED_PATH, read_function_based_path, table_of_loader
from .osim_xml import _floats, _function_element, _pp, _text

#: OpenSim's ConditionalPathPoint::isActive: active while range[0] - 1e-5 <= q <= range[1] + 1e-5
CONDITIONAL_RANGE_TOLERANCE = 1e-5


class _PathsMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s path points, path wraps and function-based paths."""

    def _point(self, p):
        doc = self.doc
        if p.tag not in ("PathPoint", "ConditionalPathPoint", "MovingPathPoint"):
            raise doc.error(p, "unsupported path point; supported PathPoint, ConditionalPathPoint, "
                            "MovingPathPoint", NotImplementedError)
        ref = _text(p, "socket_parent_frame") or _text(p, "body")
        if ref is None:
            raise doc.error(p, "path point without <socket_parent_frame>/<body>")
        body, x_bf = self._resolve(p, ref)
        loc = _floats(doc, p, "location", 3, default=[0, 0, 0])

        def to_body(v):
            return x_bf[:3, :3] @ v + x_bf[:3, 3]

        name = p.get("name") or ""
        if p.tag == "PathPoint":
            return PathPoint(body, to_body(loc), name)
        if p.tag == "ConditionalPathPoint":
            cref = _text(p, "socket_coordinate") or _text(p, "coordinate")
            if cref is None:
                raise doc.error(p, "ConditionalPathPoint without coordinate")
            self._note_coordinate_reference(p, "coordinate", cref)
            c = cref.split("/")[-1]
            if c not in self.coords.info:
                raise doc.error(p, f"unknown coordinate {c!r}")
            role = self.coords.role(c)
            rng = _floats(doc, p, "range", 2, default=[0.0, 0.0])  # OpenSim's default range
            lo = float(rng[0]) - CONDITIONAL_RANGE_TOLERANCE  # the same double OpenSim compares with
            hi = float(rng[1]) + CONDITIONAL_RANGE_TOLERANCE
            if not lo <= hi:
                return None  # OpenSim never activates it
            if role == "locked":  # decided once, at the locked (default) value
                if lo <= self.coords.info[c]["default"] <= hi:
                    return PathPoint(body, to_body(loc), name)
                self._locked_off.append(name)
                return None
            if role == "dependent":  # read through the coupler: its value as a joint map of q
                return ConditionalPathPoint(body, to_body(loc), name, coordinate=c, range=(lo, hi),
                                            coordinate_map=self.coords.inner_of(doc, c))
            return ConditionalPathPoint(body, to_body(loc), name, coordinate=c, range=(lo, hi))
        fns, named = [], {}  # per frame component: a joint map, or None (constant loc[c]); coordinate -> components
        for axis_i, comp in enumerate("xyz"):
            holder = p.find(f"{comp}_location")
            cref = _text(p, f"socket_{comp}_coordinate") or _text(p, f"{comp}_coordinate")
            if holder is None:
                fns.append(None)
                continue
            if cref is None:  # OpenSim refuses it: "Connectee for Socket '<comp>_coordinate' ... is unspecified"
                owner = next((f.get("name") for f in self._force_set_objects() if any(x is p for x in f.iter())), None)
                raise doc.error(p, f"MovingPathPoint {name!r} of muscle {owner!r} has <{comp}_location> but no "
                                f"<{comp}_coordinate> (or <socket_{comp}_coordinate>): name the coordinate its "
                                "function reads, as OpenSim requires")
            self._note_coordinate_reference(p, f"{comp}_coordinate", cref)
            named.setdefault(cref.split("/")[-1], []).append(comp)
            if len(named) > 1:  # MovingPathPoint::extendConnectToModel refuses it: its work is along one coordinate
                owner = next((f.get("name") for f in self._force_set_objects() if any(x is p for x in f.iter())), None)
                raise doc.error(p, f"MovingPathPoint {name!r} of muscle {owner!r} reads more than one coordinate ("
                                + ", ".join(f"{'/'.join(v)}: {k!r}" for k, v in named.items()) + "); OpenSim "
                                "refuses it too (the components of its location must depend on the same coordinate)")
            fel = _function_element(doc, holder)
            data = _pp(doc, fel)
            if fel.tag == "Constant":
                loc[axis_i] = float(data(np.asarray(0.0))[0])
                fns.append(None)
                continue
            c = cref.split("/")[-1]
            if c in self.coords.info:  # MovingPathPoint::getLocation clamps the coordinate to its range
                try:
                    data = data.clamped(*self.coords.info[c]["range"])
                except ValueError as e:
                    raise doc.error(holder, f"coordinate {c!r}: {e}", NotImplementedError) from None
            m = self.coords.map_of(doc, holder, c, data, fel.tag)
            if isinstance(m, Constant):
                loc[axis_i] = float(m.constant[0])
                fns.append(None)
            else:
                fns.append(m)
        if self.version >= SOCKET_PATHS_VERSION:  # MovingPathPoint's three coordinate sockets must all connect
            missing = [c for c in "xyz" if (_text(p, f"socket_{c}_coordinate") or _text(p, f"{c}_coordinate")) is None]
            if missing:
                owner = next((f.get("name") for f in self._force_set_objects() if any(x is p for x in f.iter())), None)
                raise doc.error(p, f"MovingPathPoint {name!r} of muscle {owner!r} has no "
                                + ", ".join(f"<socket_{c}_coordinate>" for c in missing) + "; OpenSim refuses it "
                                "(Failed to connect Socket: unspecified): it needs all three of <socket_x_coordinate>, "
                                "<socket_y_coordinate>, <socket_z_coordinate> (the coordinate's path; the same one "
                                "for a component whose location is constant)")
        if np.array_equal(x_bf, np.eye(4)):
            return MovingPathPoint(body, loc, name, functions=tuple(fns))
        # on an offset frame: body component a = Σ_c R[a, c] loc_c(q) + p[a]
        rot, shift = x_bf[:3, :3], x_bf[:3, 3]
        const = np.array([0.0 if f is not None else loc[c] for c, f in enumerate(fns)])
        body_loc = rot @ const + shift
        body_fns = []
        for a in range(3):
            terms = [(rot[a, c], f) for c, f in enumerate(fns) if f is not None and rot[a, c] != 0.0]
            if not terms:
                body_fns.append(None)
            else:
                body_fns.append(LinearCombination([f for _, f in terms], [w for w, _ in terms], body_loc[a]))
        return MovingPathPoint(body, body_loc, name, functions=tuple(body_fns))

    def _note_coordinate_reference(self, p, socket: str, ref: str):
        """Note a path point's coordinate reference that OpenSim 4.6 refuses in a 4.x document: the
        3.x ``<coordinate>`` tag (no property: the socket stays unconnected) or a bare name in
        ``<socket_coordinate>`` (resolved from the point, not found)."""
        if self.version < SOCKET_PATHS_VERSION:
            return
        if _text(p, f"socket_{socket}") is None:
            self.note_opensim_refuses(p, f"<{socket}> {ref!r} is the 3.x tag, which OpenSim reads only in older "
                                         f"documents (this one is Version {self.version}): write <socket_{socket}> "
                                         "with the coordinate's path")
        elif "/" not in ref:
            self.note_opensim_refuses(p, f"<socket_{socket}> {ref!r} is a bare coordinate name, which OpenSim "
                                         "resolves from the point (not found): write the coordinate's path, "
                                         "/jointset/<joint>/" + ref)

    def _function_based_path(self, f, name):
        """Read a force's ``<FunctionBasedPath>`` into ``self._path_functions``
        (:mod:`mbjax.opensim.model.osim_path_functions`; its coordinates must be independent ones)."""
        if self._coordinate_table is None:
            self._coordinate_table = table_of_loader(self)
        el = f.find(FUNCTION_BASED_PATH)
        self._path_functions[name], unused = read_function_based_path(self.doc, el, name, self._coordinate_table)
        self._unused_path_elements += unused

    def _path_wrap_owner(self, w) -> str:
        """``muscle 'name'`` of the path force that holds a PathWrap."""
        for f in self._force_set_objects():
            if any(x is w for x in f.iter("PathWrap")):
                return f"muscle {f.get('name')!r}"
        return "its path force"

    def _force_set_objects(self):
        fset = self.model.find("ForceSet")
        return list(fset.find("objects")) if fset is not None and fset.find("objects") is not None else []

    def _path_wrap(self, w, kept, n_points):
        """A ``<PathWrap>`` as a :class:`~mbjax.wrapping.PathWrap`, its 1-based ``range`` re-indexed
        to the points kept (never-active conditional points are left out of the path); ``None`` for
        a range that starts past the path's ``n_points`` points and runs to its end (OpenSim's
        ``GeometryPath::applyWrapObjects`` finds no point in it and skips the wrap: warned)."""
        doc = self.doc
        if w.tag != "PathWrap":
            raise doc.error(w, "unsupported path wrap element (only <PathWrap>)", NotImplementedError)
        obj = _text(w, "wrap_object")
        if obj is None:
            raise doc.error(w, "PathWrap without <wrap_object>")
        if obj not in self.wrap_elements:
            raise doc.error(w, f"PathWrap names wrap object {obj!r}, which no body defines")
        tag = self.wrap_elements[obj].tag
        if tag not in WRAP_KINDS:
            raise doc.error(self.wrap_elements[obj], f"wrap surface <{tag}> (used by PathWrap {w.get('name')!r}) is "
                            f"not supported; supported {WRAP_KINDS}. Pass ignore_wrapping=True to load straight-line "
                            "paths", NotImplementedError)
        text = (_text(w, "method") or "hybrid").strip()
        method = text.lower()
        if text == "Unassigned":  # PathWrap::extendFinalizeFromProperties: not specified, hybrid
            method = "hybrid"
        elif method not in WRAP_METHODS or text not in (method, method.capitalize(), method.upper()):
            # PathWrap::extendFinalizeFromProperties throws for any other spelling
            raise doc.error(w, f"PathWrap {w.get('name')!r} of {self._path_wrap_owner(w)}: unknown <method> {text!r}; "
                            f"valid methods are {WRAP_METHODS} (or leave it out for hybrid)")
        rng = [int(round(v)) for v in _floats(doc, w, "range", 2, default=[-1, -1])]
        lo, hi = rng
        if lo >= 1 and hi >= 1 and hi < lo:
            raise doc.error(w, f"PathWrap {w.get('name')!r} of {self._path_wrap_owner(w)}: <range> {rng[0]} {rng[1]} "
                            "is reversed (it must be first last, 1-based path point indices, or -1 -1 for the "
                            "whole path)")
        if hi > n_points or (hi < 1 and lo > n_points):
            label = f"PathWrap {w.get('name')!r} of {self._path_wrap_owner(w)}: <range> {rng[0]} {rng[1]}"
            if hi > n_points:  # applyWrapObjects reads past the path's points: OpenSim fails at every pose
                raise doc.error(w, f"{label} runs past the path's {n_points} points (1-based point indices, or "
                                "-1 -1 for the whole path; OpenSim loads the file but fails computing the path: "
                                "array index out of bounds)")
            warnings.warn(f"{doc.where(w)}: {label} starts past the path's {n_points} points, so the wrap never "
                          "applies (as in OpenSim, which skips it): left out", stacklevel=5)
            return None
        if lo >= 1:
            lo = 1 + sum(1 for k in kept if k < lo - 1)
        if hi >= 1:
            hi = sum(1 for k in kept if k <= hi - 1)
            if hi < 1 or (lo >= 1 and hi < lo):
                raise doc.error(w, f"PathWrap range {rng} holds only never-active points", NotImplementedError)
        return PathWrap(obj, method, (lo, hi), w.get("name") or "")
