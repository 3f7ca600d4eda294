"""OpenSim joints as chains of 1-dof mbjax joints: each joint's parent and child frames and its
axes (kind, axis, joint map or constant) in Simbody's order."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..._model import GROUND
from ...maps.constant import Constant
from ...maps.function import FunctionMap
from ...maps.multivariate import MultivariatePolynomial
from ...maps.piecewise import pp_linear
from .osim_classes import JOINT_TYPES
from .osim_couplers import _Coords
from .osim_older_documents import CHILD_LOCATION_VERSION, JOINT_OFFSETS_VERSION, JOINTSET_VERSION, opensim_rounded
from .osim_xml import (
    _bool,
    _coordinate_elements,
    _floats,
    _function_element,
    _has_function,
    _is_identity_function,
    _pp,
    _text,
    _tf,
    _xyz_body_fixed,
)

_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
#: Simbody mobilizers of OpenSim's fixed joints as 1-dof chains: (kind, axis in F, index of the
#: joint's coordinate in file order).  OpenSim sets ``useEulerAngles`` (``Model::initializeState``),
#: so Ball/Free/Ellipsoid rotations are the X-Y-Z body-fixed angles of their coordinates 0, 1, 2
#: (``Rotation(BodyRotationSequence, q0, X, q1, Y, q2, Z)``), as Gimbal's are; Free's and Planar's
#: translations are along F's axes (``p_FM`` expressed in F), applied before the rotation.
_MOBILIZER_CHAINS = {
    "PinJoint": [("revolute", _Z, 0)],
    "SliderJoint": [("prismatic", _X, 0)],
    "UniversalJoint": [("revolute", _X, 0), ("revolute", _Y, 1)],
    "GimbalJoint": [("revolute", _X, 0), ("revolute", _Y, 1), ("revolute", _Z, 2)],
    "BallJoint": [("revolute", _X, 0), ("revolute", _Y, 1), ("revolute", _Z, 2)],
    "EllipsoidJoint": [("revolute", _X, 0), ("revolute", _Y, 1), ("revolute", _Z, 2)],
    "FreeJoint": [("prismatic", _X, 3), ("prismatic", _Y, 4), ("prismatic", _Z, 5),
                  ("revolute", _X, 0), ("revolute", _Y, 1), ("revolute", _Z, 2)],
    "PlanarJoint": [("prismatic", _X, 1), ("prismatic", _Y, 2), ("revolute", _Z, 0)],
}
_MOBILIZER_NQ = {k: 1 + max(i for _, _, i in v) for k, v in _MOBILIZER_CHAINS.items()}
#: OpenSim joints refused by name, with the reason
_REFUSED_JOINTS = {
    "ScapulothoracicJoint": "ScapulothoracicJoint (Seth 2016: Simbody ellipsoid mobilizer with a winging "
                            "axis) is not supported",
    "ConstantCurvatureJoint": "ConstantCurvatureJoint (rotation-coupled translation of a bent beam) is not supported",
    "CantileverFreeBeamJoint": "CantileverFreeBeamJoint is not supported",
}
#: CustomJoint::extendFinalizeFromProperties refuses two axes (as written) with |a x b| below this
_COLLINEAR_TOL = 1e-5


def _axis_map(doc, coords: _Coords, holder, coord_names: list[str]):
    """Joint map of one TransformAxis / location function; ``None`` if it is a constant."""
    fel = _function_element(doc, holder)
    if fel.tag == "MultivariatePolynomialFunction":
        dim = int(_floats(doc, fel, "dimension", 1)[0])
        order = int(_floats(doc, fel, "order", 1)[0])
        coefs = _floats(doc, fel, "coefficients")
        if len(coord_names) != dim:
            raise doc.error(fel, f"dimension {dim} but {len(coord_names)} coordinates {coord_names}")
        for c in coord_names:
            if coords.role(c) != "independent":
                raise doc.error(fel, f"MultivariatePolynomialFunction of a {coords.role(c)} coordinate {c!r} "
                                "is not supported", NotImplementedError)
        try:
            return MultivariatePolynomial(coord_names, coefs, order), None
        except ValueError as e:
            raise doc.error(fel, str(e)) from None
    data = _pp(doc, fel)
    if not coord_names or fel.tag == "Constant":
        return None, float(data(np.asarray(0.0))[0])
    if len(coord_names) != 1:
        raise doc.error(holder, f"a {fel.tag} reads one coordinate, got {coord_names}")
    return coords.map_of(doc, holder, coord_names[0], data, fel.tag), None


class _JointsMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s reading of a joint's frames and 1-dof chain."""

    def _joint_frames(self, j):
        doc = self.doc
        if j.tag not in JOINT_TYPES:
            why = _REFUSED_JOINTS.get(j.tag, "unsupported joint type")
            raise doc.error(j, f"{why}; supported: {JOINT_TYPES}", NotImplementedError)
        if _bool(j, "reverse", doc=self.doc):
            raise doc.error(j, "reversed joints are not supported", NotImplementedError)
        if self.version >= JOINT_OFFSETS_VERSION:
            pf = _text(j, "socket_parent_frame")
            cf = _text(j, "socket_child_frame")
            if pf is None or cf is None:
                raise doc.error(j, "joint needs <socket_parent_frame> and <socket_child_frame>")
            parent, x_pf = self._resolve(j, pf, j)
            child, x_bc = self._resolve(j, cf, j)
        elif self.version >= JOINTSET_VERSION:  # bodies by socket, frames by offsets in them
            pf = _text(j, "socket_parent_frame") or _text(j, "socket_parent_body")
            cf = _text(j, "socket_child_frame") or _text(j, "socket_child_body")
            if pf is None or cf is None:
                raise doc.error(j, f"joint needs a parent_body and a child_body connector (document version "
                                f"{self.version})")
            # OpenSim keeps the last name of each path (Joint::updateFromXMLNode)
            parent, x_p = self._resolve(j, pf.split("/")[-1], j)
            child, x_c = self._resolve(j, cf.split("/")[-1], j)
            x_pf = x_p @ self._offset(j, "location_in_parent", "orientation_in_parent")
            x_bc = x_c @ self._offset(j, "location_in_child", "orientation_in_child")
        else:  # in its child body (3.x)
            parent = _text(j, "parent_body")
            if parent not in self.frames:
                raise doc.error(j, f"unknown parent body {parent!r}")
            parent = self.frames[parent][0]
            child = j.get("_child_body")
            x_pf = self._offset(j, "location_in_parent", "orientation_in_parent")
            x_bc = (self._offset(j, "location", "orientation") if self.version < CHILD_LOCATION_VERSION
                    else self._offset(j, "location_in_child", "orientation_in_child"))
        if child == GROUND:
            raise doc.error(j, "joint whose child is ground (reverse joints) is not supported", NotImplementedError)
        return j, parent, child, x_pf, x_bc

    def _offset(self, j, location: str, orientation: str):
        """The transform a joint's ``location``/``orientation`` elements place a frame by (documents
        older than ``JOINT_OFFSETS_VERSION``: their values as OpenSim rounds them converting)."""
        return _tf(_xyz_body_fixed(opensim_rounded(_floats(self.doc, j, orientation, 3, default=[0, 0, 0]))),
                   opensim_rounded(_floats(self.doc, j, location, 3, default=[0, 0, 0])))

    def _axes(self, j):
        """The 1-dof chain of a joint: list of (kind, axis, name, map | None, constant)."""
        doc = self.doc
        coords = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag == "WeldJoint":
            if coords:  # OpenSim refuses it (Joint::getMotionType: invalid CoordinateIndex)
                raise doc.error(j, f"WeldJoint {j.get('name')!r} needs 0 coordinates, got {coords} (a weld has no "
                                "motion, and OpenSim refuses a coordinate in it): remove the <Coordinate> or use a "
                                "joint that moves")
            return []
        if j.tag in _MOBILIZER_CHAINS:
            spec, need = _MOBILIZER_CHAINS[j.tag], _MOBILIZER_NQ[j.tag]
            if len(coords) != need:
                raise doc.error(j, f"{j.tag} needs {need} coordinate(s), got {coords}")
            out = []
            for kind, axis, k in spec:
                c = coords[k]
                m = self.coords.map_of(doc, j, c, pp_linear(1.0, 0.0), "identity")
                const = None
                if isinstance(m, Constant):
                    m, const = None, float(m.constant[0])
                out.append((kind, np.asarray(axis, float), c, m, const, 0.0))  # coordinates are never scaled
            if j.tag == "EllipsoidJoint":
                out = self._ellipsoid_translations(j, coords, out) + out
            return out
        st = j.find("SpatialTransform")
        if st is None:
            raise doc.error(j, "CustomJoint without <SpatialTransform>")
        axes = {ta.get("name"): ta for ta in st if ta.tag == "TransformAxis"}
        names = ["translation1", "translation2", "translation3", "rotation1", "rotation2", "rotation3"]
        unknown = [ta.get("name") for ta in st if ta.tag == "TransformAxis" and ta.get("name") not in names]
        if unknown:
            raise doc.error(st, f"unknown TransformAxis names {unknown}; expected {names}")
        out = []
        raw_axes = {}
        for n in names:  # Simbody: X_FM = Trans(Σ t) · R1 R2 R3
            ta = axes.get(n)
            if ta is None:  # OpenSim's default axis (x, y, z in each triple), function Constant(0)
                raw_axes[n] = np.eye(3)[names.index(n) % 3]
                continue
            axis = _floats(doc, ta, "axis", 3)
            raw_axes[n] = axis
            norm = np.linalg.norm(axis)
            if norm == 0:
                raise doc.error(ta, "zero axis")
            axis = axis / norm
            cn = (_text(ta, "coordinates", "") or "").split()
            for c in cn:
                if c not in coords and c not in self.coords.info:
                    raise doc.error(ta, f"unknown coordinate {c!r}")
                if c not in coords:
                    raise doc.error(ta, f"joint {j.get('name')!r}: TransformAxis {n} names coordinate {c!r}, which "
                                    f"is not one of this joint's coordinates {coords} (OpenSim refuses it); name one "
                                    "of the joint's own coordinates (couple others with a CoordinateCouplerConstraint)")
            weight = 0.0
            if _has_function(ta):
                m, const = _axis_map(doc, self.coords, ta, cn)
                if n.startswith("translation") and not _is_identity_function(doc, ta):
                    weight = float(np.abs(raw_axes[n]).sum())  # SpatialTransform::scale: |axis|ᵀ s
            else:  # OpenSim 4.x TransformAxis: the function property defaults to Constant(0)
                m, const = None, 0.0
            if isinstance(m, Constant):
                m, const = None, float(m.constant[0])
            out.append(("prismatic" if n.startswith("translation") else "revolute", axis, n, m, const, weight))
        used = {c for ta in axes.values() for c in (_text(ta, "coordinates", "") or "").split()}
        idle = [c for c in coords if c not in used]
        if idle:  # OpenSim refuses the file too (an index past the coordinates the axes name)
            raise doc.error(j, f"joint {j.get('name')!r}: coordinate(s) {idle} used by no TransformAxis of its "
                            "SpatialTransform (each would be a coordinate that moves nothing, and OpenSim refuses "
                            "the file): name it in a TransformAxis's <coordinates> or remove it")
        for triple in (names[3:], names[:3]):  # CustomJoint::extendFinalizeFromProperties
            for i, k in ((0, 1), (0, 2), (1, 2)):
                if np.linalg.norm(np.cross(raw_axes[triple[i]], raw_axes[triple[k]])) < _COLLINEAR_TOL:
                    raise doc.error(st, f"{triple[i]} and {triple[k]} axes {raw_axes[triple[i]]} and "
                                    f"{raw_axes[triple[k]]} are collinear (OpenSim refuses such a CustomJoint; "
                                    "an axis left out defaults to x, y, z in turn)")
        return out

    def _ellipsoid_translations(self, j, coords, rotations):
        """Simbody's Ellipsoid mobilizer translation ``p_FM = (a z_x, b z_y, c z_z)`` with
        ``z = R_FM e_z = (sin q1, -sin q0 cos q1, cos q0 cos q1)`` (X-Y-Z body-fixed angles q0, q1):
        three prismatic steps along F's axes whose maps read the first two coordinates."""
        doc = self.doc
        radii = _floats(doc, j, "radii_x_y_z", 3, default=[0.0, 0.0, 0.0])
        rx, ry = coords[0], coords[1]
        for c, (_, _, _, m, _, _) in zip((rx, ry), rotations[:2]):
            if self.coords.role(c) != "independent":
                raise doc.error(j, f"EllipsoidJoint whose coordinate {c!r} is {self.coords.role(c)} is not "
                                "supported (its translation reads the first two angles)", NotImplementedError)
        out = []
        for k, (axis, fn) in enumerate(zip((_X, _Y, _Z), (_ellipsoid_x, _ellipsoid_y, _ellipsoid_z))):
            if radii[k] == 0.0:
                continue
            out.append(("prismatic", np.asarray(axis), f"{'xyz'[k]}_surface",
                        FunctionMap(fn, (rx, ry), jnp.asarray(float(radii[k]))), None, 1.0))  # radii scale
        return out


def _ellipsoid_x(radius, x):
    """x component of Simbody's Ellipsoid mobilizer translation: ``a sin q1``."""
    return radius * jnp.sin(x[1])


def _ellipsoid_y(radius, x):
    """y component: ``-b sin q0 cos q1``."""
    return -radius * jnp.sin(x[0]) * jnp.cos(x[1])


def _ellipsoid_z(radius, x):
    """z component: ``c cos q0 cos q1``."""
    return radius * jnp.cos(x[0]) * jnp.cos(x[1])
