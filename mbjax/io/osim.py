"""OpenSim model import: ``load_osim(path)`` for the 3.x (arm26) and 4.x (MoBL) XML formats.

Mapping onto mbjax (Ehsani §3-1: every multi-dof joint is a chain of 1-dof joints through
zero-inertia bodies, every joint variable an empirical map of the coordinates):

* A joint ``parent → child`` is ``X_PB = X_PF · X_FM(q) · X_BC⁻¹`` with F, C the parent and child
  offset frames.  ``X_PF`` becomes the first chain body's constant offset.
* ``CustomJoint``: Simbody's function-based mobilizer, ``X_FM = [R, p]`` with ``p = Σ f_t(q) t_a``
  (translation axes in F) and ``R = Rot(r_1, f_1) Rot(r_2, f_2) Rot(r_3, f_3)`` (a body-fixed
  sequence).  So the chain is: prismatic along the translation axes, then revolute about r_1,
  r_2, r_3.  Axes whose function is ``Constant`` are folded into the next body's offset.  A
  ``TransformAxis`` without a function is ``Constant(0)`` whatever coordinates it names (OpenSim
  4.x's default for the property); a left-out axis is x, y, z in its triple with ``Constant(0)``.
  Two axes of a triple with ``|a × b| < 1e-5`` (as written, not normalised) are refused, as
  ``CustomJoint::extendFinalizeFromProperties`` refuses them.
  ``PinJoint`` = rotation about z, ``SliderJoint`` = translation along x, ``UniversalJoint`` =
  x then y, ``WeldJoint`` = no motion.  ``GimbalJoint``, ``BallJoint``, ``FreeJoint``: OpenSim sets
  Simbody's ``useEulerAngles``, so their rotation coordinates 0, 1, 2 are X-Y-Z body-fixed angles
  ``R = Rx(q0) Ry(q1) Rz(q2)``, singular (gimbal lock: the x and z axes align, the mass matrix loses
  rank) at ``q1 = ±π/2``; Free's coordinates 3, 4, 5 translate along F's axes before the rotation.
  (Ball/Free speeds in OpenSim are angular velocities ``u = N⁻¹ q̇``; mbjax's are ``q̇``.)
  ``PlanarJoint`` (rz, tx, ty) = translation in F's xy plane, then rotation about z.
  ``EllipsoidJoint`` = the Ball rotation after a translation ``(a z_x, b z_y, c z_z)`` (``z`` =
  R's third column) whose maps read q0, q1 (:class:`~mbjax.maps.FunctionMap`, autodiff).
  ``ScapulothoracicJoint``, ``ConstantCurvatureJoint``, ``CantileverFreeBeamJoint`` are refused by
  name; OpenSim has no screw joint (a CustomJoint with a linear translation function is one).
  A ``prescribed`` coordinate (a function of time) is refused.
* The last chain body carries the OpenSim body's name and mass properties.  When ``X_BC`` (or a
  trailing constant axis) is not the identity, a final zero-dof "weld" body (joint map
  ``Constant``) is appended so that mbjax body frames equal OpenSim's; intermediate bodies are
  named ``"<body>/<joint>/<axis>"`` and have zero inertia.
* Coordinates: a ``CoordinateCouplerConstraint`` eliminates its dependent coordinate, which
  becomes ``scale · f(q_independent)`` (one independent coordinate and any 1-D function, or
  several with a ``MultivariatePolynomialFunction``; chains of couplers compose); a transform
  axis of it is the composed map (``ComposedPolynomial``).  A ``locked`` coordinate is held at
  its default value (a constant; it is not in ``q``): a ``ConditionalPathPoint`` on it is decided
  once at that value (kept as a fixed point, or left out with a warning).  A ``ConditionalPathPoint``
  on a coupled (dependent) coordinate reads that coordinate's value through its coupler map of
  ``q`` (``ConditionalPathPoint.coordinate_map``), as OpenSim reads the constrained coordinate.
  A ``PointOnLineConstraint`` (two equations each) is eliminated too, as a closed chain
  (:mod:`mbjax.io.osim_point_on_line`): dependent coordinates chosen by column-pivoted QR of the
  constraints' Jacobian at the default pose (or all but ``independent_coordinates``) become
  :class:`~mbjax.constraints.ImplicitMap` joint maps of a Newton solve on the file's body poses.
  The model's ``q`` is the remaining independent coordinates in file order.  Defaults, ranges,
  ``clamped`` and ``locked`` flags are kept in ``model.extras["osim"]`` (:class:`OsimInfo`).
* Muscles (``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``, ``Millard2012AccelerationMuscle``,
  ``Schutte1993Muscle_Deprecated``, ``PathActuator``, ``PathSpring``, ``Ligament``): their
  ``GeometryPath`` points (``PathPoint``, ``ConditionalPathPoint``, ``MovingPathPoint``) go into
  ``model.extras["muscles"]``; their scalar properties into ``MusclePaths.parameters``.  A
  ``Schutte1993Muscle_Deprecated``'s three curve functions (``tendon_force_length_curve``,
  ``active_force_length_curve``, ``passive_force_length_curve``; 4.x ``<SimmSpline
  name="...">`` or 3.x ``<tendon_force_length_curve><SimmSpline>``; any 1-D function read here)
  are stored as padded per-muscle arrays (:mod:`mbjax.muscles.schutte1993`), the class defaults
  where the file leaves one out (for the passive curve OpenSim then uses its exponential); the
  ``ignore_tendon_compliance`` / ``ignore_activation_dynamics`` flags, which OpenSim refuses for
  this class, are refused.  A ``ConditionalPathPoint`` is active, in OpenSim's
  ``ConditionalPathPoint::isActive``, while ``range[0] - 1e-5 <= q <= range[1] + 1e-5`` (an
  absolute tolerance, computed in doubles); the stored range is that widened one (the very doubles
  OpenSim compares with), so ``MusclePaths.cond_range`` is OpenSim's effective range.  A point
  whose widened range is empty is never active and is left out, with a warning.  A
  ``MovingPathPoint`` location function reads its coordinate clamped to the coordinate's range
  (``MovingPathPoint::getLocation``, whether or not the coordinate is ``clamped``), so outside the
  range the point stands still; a coordinate without ``<range>`` has OpenSim's default [-10, 10].
  A path force whose path is a ``<FunctionBasedPath>`` (OpenSim 4.6) keeps its properties and has
  no path points (its row of ``MusclePaths`` is two invalid placeholder points); its
  ``MultivariatePolynomialFunction`` length function of independent coordinates becomes its path
  function (``model.extras["path_functions"]``, :mod:`mbjax.muscles.path_functions`; read and
  refused as :mod:`mbjax.io.osim_path_functions` says), so lengths and moment arms are the
  function's and -∂L/∂q, as OpenSim computes them.
* Force elements (``CoordinateLimitForce``, ``SpringGeneralizedForce``, ``ExpressionBasedCoordinateForce``,
  ``PointToPointSpring``, ``BushingForce``) go into ``model.extras["forces"]`` (:mod:`mbjax.forces`,
  read by :mod:`mbjax.io.osim_forces`); :func:`mbjax.model_forces` gives their generalized force.
  ``CoordinateActuator`` (an idle actuator without controls) is recorded by name
  (:data:`RECORDED_FORCES`).
* Wrap objects (``WrapCylinder``, ``WrapSphere``, ``WrapEllipsoid``, ``WrapTorus``, owned by a body,
  ground or an offset frame) and each path's ``PathWrapSet`` are read into
  ``MusclePaths.wraps`` (:mod:`mbjax.wrapping`) and applied as OpenSim applies them; only wrap
  objects some path uses are kept.  ``ignore_wrapping=True`` is the explicit choice of
  straight-line paths (warned, and recorded in ``OsimInfo.wrapping_ignored``).  An unknown
  ``<method>`` falls back to hybrid, as in OpenSim.  ``wrapping="smooth"`` reads the same objects
  into the smooth option instead (:mod:`mbjax.wrapping.smooth_path`).

* Forces and constraints mbjax does not model (ElasticFoundationForce contact, the deprecated
  ``Delp1990Muscle_Deprecated``, constraints other than couplers and point-on-line) are refused by
  name unless listed in ``ignore_forces`` / ``ignore_constraints`` (see :func:`load_osim`).
  ``Schutte1993Muscle_Deprecated`` is modelled, and ``ignore_forces=("Schutte1993Muscle_Deprecated",)``
  still leaves it out explicitly (path kept, zero tension, kind ``"Schutte1993Muscle_Deprecated
  (ignored)"``).  The ContactGeometrySet is
  read only for the geometry a HuntCrossleyForce names.  Sets that change no quantity mbjax
  computes from the model are not read: ControllerSet (mbjax takes excitations as inputs),
  ProbeSet, visual geometry.

* Bodies: inertias are used as given, as OpenSim does; physically impossible ones (not positive
  semidefinite, or principal moments violating the triangle inequality, e.g. MoBL's clavicle and
  scapula) get one warning per file naming them.  A body with ``|mass| <= SimTK::SignificantReal``
  and a non-zero inertia gets zero inertia (``Body::getInertia``).  A duplicate body name is
  refused (OpenSim renames the second and frees it with a FreeJoint).
* Coordinates: a non-finite ``default_value`` is refused; a ``clamped`` coordinate whose default
  is not in ``(min - SqrtEps, max + SqrtEps)`` or whose range has ``max < min`` is refused, as
  ``Coordinate::extendFinalizeFromProperties`` refuses it (unclamped ones may start outside).
* A missing file raises ``FileNotFoundError``.

Anything else unknown raises ``ValueError``/``NotImplementedError`` naming the file, element and
line.  This module only parses: OpenSim functions become the map families of ``mbjax.maps``
(:mod:`~mbjax.maps.piecewise`, :mod:`~mbjax.maps.simm_spline`, :mod:`~mbjax.maps.gcv_spline`,
:mod:`~mbjax.maps.composed_polynomial`, :mod:`~mbjax.maps.linear_combination`,
:mod:`~mbjax.maps.multivariate`), evaluated as OpenSim evaluates them.
"""

from __future__ import annotations

import dataclasses
import warnings
import xml.etree.ElementTree as ET
from pyexpat import ParserCreate
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._builder import ModelBuilder
from .._model import GROUND
from ..maps.affine import Affine
from ..maps.constant import Constant
from ..maps.function import FunctionMap
from ..muscles.paths import (
    ConditionalPathPoint,
    MovingPathPoint,
    PathPoint,
    build_paths,
    with_muscles,
)
from ..maps.composed_polynomial import ComposedPolynomial
from ..maps.gcv_spline import pp_gcv_spline
from ..maps.linear_combination import LinearCombination
from ..maps.multivariate import MultivariatePolynomial
from ..maps.piecewise import PiecewisePolynomial, PPData, pp_constant, pp_linear, pp_piecewise_linear, pp_polynomial
from ..maps.simm_spline import pp_simm_spline
from ..wrapping.objects import KINDS as WRAP_KINDS
from ..wrapping.objects import METHODS as WRAP_METHODS
from ..wrapping.objects import PathWrap, WrapObject
from ..forces.base import with_force_elements
from .osim_forces import MODELLED_FORCES, read_force_elements
from .osim_actuators import ACTUATOR_TYPES, LEGACY_TYPES, default_records, read_actuators
from ..muscles.parameter_rules import NUMERIC_PROPERTIES
from ..muscles.schutte1993 import CURVES as SCHUTTE_CURVES
from ..muscles.schutte1993 import SCHUTTE, curve_parameters
from ..muscles.path_functions import with_path_functions
from .osim_path_functions import FUNCTION_BASED_PATH, read_function_based_path, table_of_loader, warn_unused

MUSCLE_TYPES = (
    "Thelen2003Muscle",
    "Millard2012EquilibriumMuscle",
    "Millard2012AccelerationMuscle",
    "Schutte1993Muscle_Deprecated",
    "PathActuator",
    "PathSpring",
    "Ligament",
)
#: path forces that are read and modelled but may still be left out (path kept, zero tension) by
#: ``ignore_forces``: the deprecated Schutte muscle, whose opt-out older scripts use
OPTIONAL_PATH_FORCES = ("Schutte1993Muscle_Deprecated",)
#: scalar actuators (:mod:`mbjax.io.osim_actuators`): no force without a control, read into
#: ``OsimInfo.actuators`` for the tools that solve for controls (static optimization)
RECORDED_FORCES = ACTUATOR_TYPES + tuple(LEGACY_TYPES)
JOINT_TYPES = ("CustomJoint", "PinJoint", "SliderJoint", "WeldJoint", "UniversalJoint", "GimbalJoint", "BallJoint",
               "FreeJoint", "PlanarJoint", "EllipsoidJoint")
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
#: forces refused by name, with what they would change
_REFUSED_FORCES = {
    "ElasticFoundationForce": "ElasticFoundationForce (contact, changes dynamics) is not modelled",
    "Delp1990Muscle_Deprecated": "Delp1990Muscle_Deprecated (spline force-length/velocity curves that the "
                                 "Thelen and Millard models cannot reproduce) is not modelled",
}
#: the placeholder path of a force with a FunctionBasedPath: two points, both marked invalid (no
#: geometry; its length and moment arms are its path function's, model.extras["path_functions"])
_NO_POINTS = [PathPoint(GROUND, (0.0, 0.0, 0.0)), PathPoint(GROUND, (0.0, 0.0, 0.0))]
#: SimTK::SqrtEps: the slack OpenSim allows a clamped coordinate's default beyond its range
_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))
#: SimTK::SignificantReal (eps^(7/8)): OpenSim zeroes the inertia of a body with |mass| at most this
_SIGNIFICANT_REAL = float(np.finfo(float).eps ** 0.875)
#: OpenSim's ConditionalPathPoint::isActive: active while range[0] - 1e-5 <= q <= range[1] + 1e-5
CONDITIONAL_RANGE_TOLERANCE = 1e-5
#: CustomJoint::extendFinalizeFromProperties refuses two axes (as written) with |a x b| below this
_COLLINEAR_TOL = 1e-5
FUNCTION_TYPES = (
    "Constant",
    "LinearFunction",
    "SimmSpline",
    "NaturalCubicSpline",
    "GCVSpline",
    "PiecewiseLinearFunction",
    "PolynomialFunction",
    "MultiplierFunction",
    "MultivariatePolynomialFunction",
)


class OsimInfo(eqx.Module):
    """What the importer knows about the OpenSim coordinates (``model.extras["osim"]``).

    ``default``, ``lower``, ``upper`` are ``(nq,)`` arrays for the model's coordinates; the static
    tuples list all OpenSim coordinates with their role: ``"independent"``, ``"dependent"``
    (coupled) or ``"locked"``.
    """

    default: jnp.ndarray
    lower: jnp.ndarray
    upper: jnp.ndarray
    clamped: tuple[bool, ...] = eqx.field(static=True)
    source: str = eqx.field(static=True)
    version: int = eqx.field(static=True)
    roles: tuple[tuple[str, str], ...] = eqx.field(static=True)
    motion_types: tuple[str, ...] = eqx.field(static=True)
    recorded_forces: tuple[tuple[str, str], ...] = eqx.field(static=True)
    wrapping_ignored: tuple[str, ...] = eqx.field(static=True)
    #: (OpenSim class, name) of the forces and constraints left out by ``ignore_forces`` /
    #: ``ignore_constraints`` (a path force among them keeps its path)
    ignored: tuple[tuple[str, str], ...] = eqx.field(static=True, default=())
    #: (coordinate, why) of the coordinates made dependent by ``PointOnLineConstraint`` elimination
    #: (:mod:`mbjax.io.osim_point_on_line`): which constraints, how they were chosen, assembled default
    eliminated: tuple[tuple[str, str], ...] = eqx.field(static=True, default=())
    #: (coordinate, value): the assembled default of those dependent coordinates (the independent
    #: ones keep their file defaults, in ``default``)
    assembled: tuple[tuple[str, float], ...] = eqx.field(static=True, default=())
    #: the model's enabled scalar actuators (``CoordinateActuator``, ``PointActuator``,
    #: ``TorqueActuator`` records of :mod:`mbjax.forces.body_actuators`, file order), read as
    #: OpenSim reads them (:mod:`mbjax.io.osim_actuators`); disabled ones are left out
    actuators: tuple = eqx.field(static=True, default=())
    #: the file's actuator ``<defaults>`` (:func:`mbjax.io.osim_actuators.default_records`), which
    #: OpenSim applies to the force-set files its tools read after the model
    actuator_defaults: tuple = eqx.field(static=True, default=())
    #: how OpenSim's scaling acts on the joint offsets (:class:`OsimScaling`)
    scaling: Any = None
    #: the coordinates that are not in ``q`` (dependent and locked), in file order, with their
    #: motion types, and each one's value as a single joint map of ``q`` (its coupler map; a
    #: ``Constant`` at the default for a locked one); read by :mod:`mbjax.io.osim_coordinates`
    other_names: tuple[str, ...] = eqx.field(static=True, default=())
    other_motion_types: tuple[str, ...] = eqx.field(static=True, default=())
    other_maps: Any = None


class OsimScaling(eqx.Module):
    """The joint offsets of an imported model as OpenSim's uniform scaling sees them
    (``OsimInfo.scaling``, used by :func:`mbjax.identify.scale_model` and :func:`mbjax.io.write_osim`).

    OpenSim scales a joint's parent-frame translation (``PhysicalOffsetFrame`` or 3.x
    ``location_in_parent``) and its ``CustomJoint`` translation functions by the parent body's factor
    (``OffsetFrame::extendScale``, ``SpatialTransform::scale``: the function times ``|axis|ᵀ s``,
    except a ``LinearFunction`` ``1 0``, which is a degree of freedom), and the child-frame
    translation by the child's.  So body ``i``'s offset translation is
    ``fixed_i + s_parent · unit_parent_i + s_child · unit_child_i`` and a prismatic step along a
    scaled translation function has its axis multiplied by ``s_parent · axis_weight_i``
    (``axis_weight`` 0: not scaled).  ``segments`` are the OpenSim bodies (ground excluded), ``parent``
    and ``child`` index them per model body (``-1`` = ground); ``factors`` are the factors applied
    so far (ones as loaded).
    """

    fixed: jnp.ndarray
    unit_parent: jnp.ndarray
    unit_child: jnp.ndarray
    axis_weight: jnp.ndarray
    factors: jnp.ndarray
    segments: tuple[str, ...] = eqx.field(static=True)
    parent: tuple[int, ...] = eqx.field(static=True)
    child: tuple[int, ...] = eqx.field(static=True)


# --------------------------------------------------------------------------------------------
# XML with line numbers
# --------------------------------------------------------------------------------------------


class _Doc:
    def __init__(self, path: str):
        self.path = str(path)
        self.lines: dict[Any, int] = {}
        builder = ET.TreeBuilder()
        parser = ParserCreate()

        def start(tag, attrs):
            el = builder.start(tag, attrs)
            self.lines[el] = parser.CurrentLineNumber

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.CharacterDataHandler = builder.data
        try:
            with open(self.path, "rb") as fh:
                parser.ParseFile(fh)
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path}: no such OpenSim file") from None
        except OSError as e:
            raise ValueError(f"{self.path}: cannot read OpenSim file: {e}") from None
        except Exception as e:  # expat error
            raise ValueError(f"{self.path}: malformed XML: {e}") from None
        self.root = builder.close()

    def where(self, el) -> str:
        name = el.get("name")
        label = f"<{el.tag}{' name=' + repr(name) if name else ''}>"
        return f"{self.path}:{self.lines.get(el, '?')}: {label}"

    def error(self, el, msg: str, cls=ValueError):
        return cls(f"{self.where(el)}: {msg}")


def _text(el, tag, default=None):
    child = el.find(tag)
    if child is None or child.text is None or not child.text.strip():
        return default
    return child.text.strip()


def _floats(doc, el, tag, n=None, default=None):
    txt = _text(el, tag)
    if txt is None:
        if default is not None:
            return np.asarray(default, dtype=float)
        raise doc.error(el, f"missing <{tag}>")
    try:
        vals = np.asarray([float(v) for v in txt.split()], dtype=float)
    except ValueError:
        raise doc.error(el, f"<{tag}> must hold numbers, got {txt!r}") from None
    if np.isnan(vals).any():  # OpenSim reads "nan" as a number; no model means it, every result would be NaN
        raise doc.error(el, f"<{tag}> holds NaN: {txt!r}")
    if n is not None and vals.size != n:
        raise doc.error(el, f"<{tag}> must hold {n} numbers, got {vals.size}")
    return vals


def _bool(el, tag, default=False):
    txt = _text(el, tag)
    return default if txt is None else txt.lower() in ("true", "1")


def _rot(axis, angle):
    axis = np.asarray(axis, float)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _xyz_body_fixed(angles):
    a = np.asarray(angles, float)
    return _rot([1, 0, 0], a[0]) @ _rot([0, 1, 0], a[1]) @ _rot([0, 0, 1], a[2])


def _tf(rot=None, trans=None):
    t = np.eye(4)
    if rot is not None:
        t[:3, :3] = rot
    if trans is not None:
        t[:3, 3] = trans
    return t


def _inv(t):
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


# --------------------------------------------------------------------------------------------
# functions
# --------------------------------------------------------------------------------------------


def _function_element(doc, holder):
    """The single OpenSim Function element inside ``holder`` (3.x wraps it in <function>)."""
    kids = [c for c in holder if c.tag in FUNCTION_TYPES]
    if len(kids) == 1:
        return kids[0]
    for c in holder:
        if c.tag not in FUNCTION_TYPES and len(c):
            inner = [g for g in c if g.tag in FUNCTION_TYPES]
            if len(inner) == 1 and c.tag in ("function", "coupled_coordinates_function", "x_location",
                                             "y_location", "z_location", "function_"):
                return inner[0]
    unknown = [c.tag for c in holder if len(c) or c.tag[0].isupper()]
    raise doc.error(
        holder,
        f"expected exactly one function of the supported types {FUNCTION_TYPES}, found {unknown}",
        NotImplementedError,
    )


#: properties of a TransformAxis other than its function (3.x wraps the function in <function>)
_TRANSFORM_AXIS_PROPERTIES = ("coordinates", "axis")


def _has_function(holder) -> bool:
    """Whether a TransformAxis names a function (anything but its other properties or an empty wrapper)."""
    for c in holder:
        if c.tag in _TRANSFORM_AXIS_PROPERTIES:
            continue
        if c.tag == "function" and len(c) == 0 and not (c.text or "").strip():
            continue
        return True
    return False


def _is_identity_function(doc, holder) -> bool:
    """A ``LinearFunction`` with coefficients exactly ``1 0``: a translation dof that
    ``SpatialTransform::scale`` leaves unscaled."""
    fel = _function_element(doc, holder)
    return fel.tag == "LinearFunction" and list(_floats(doc, fel, "coefficients", 2)) == [1.0, 0.0]


def _pp(doc, el) -> PPData:
    """A 1-D OpenSim function as piecewise-polynomial data."""
    tag = el.tag
    if tag == "Constant":
        return pp_constant(_floats(doc, el, "value", 1)[0])
    if tag == "LinearFunction":
        c = _floats(doc, el, "coefficients", 2)
        return pp_linear(c[0], c[1])
    if tag in ("SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction"):
        x = _floats(doc, el, "x")
        y = _floats(doc, el, "y")
        try:
            # OpenSim 4.x registers <NaturalCubicSpline> as an alias of SimmSpline and evaluates it
            # with SIMM's end conditions, not natural ones (checked against opensim 4.6)
            return {"SimmSpline": pp_simm_spline, "NaturalCubicSpline": pp_simm_spline,
                    "PiecewiseLinearFunction": pp_piecewise_linear}[tag](x, y)
        except ValueError as e:
            raise doc.error(el, str(e)) from None
    if tag == "PolynomialFunction":
        return pp_polynomial(_floats(doc, el, "coefficients"))
    if tag == "MultiplierFunction":
        scale = _floats(doc, el, "scale", 1, default=[1.0])[0]
        holder = el.find("function")
        inner = _function_element(doc, holder if holder is not None else el)
        return _pp(doc, inner).scaled(scale)
    if tag == "GCVSpline":
        x = _floats(doc, el, "x")
        y = _floats(doc, el, "y")
        half = _floats(doc, el, "half_order", 1, default=[3.0])[0]
        variance = _floats(doc, el, "error_variance", 1, default=[0.0])[0]
        if variance != 0.0:
            raise doc.error(
                el,
                f"GCVSpline with error_variance={variance:g} is a smoothing spline whose smoothing parameter "
                "OpenSim finds iteratively (GCVSPL mode 3); only error_variance=0 (interpolating natural "
                "spline) is supported",
                NotImplementedError,
            )
        if half != int(half):
            raise doc.error(el, f"<half_order> must be an integer, got {half}")
        try:
            return pp_gcv_spline(x, y, int(half))
        except ValueError as e:
            raise doc.error(el, str(e)) from None
    raise doc.error(el, f"unsupported function type; supported: {FUNCTION_TYPES}", NotImplementedError)


class _Coords:
    """OpenSim coordinates -> mbjax maps (independent / dependent / locked).

    A dependent (coupled) coordinate is resolved to a map of independent coordinates on first use:
    one independent coordinate (any 1-D function), several (``MultivariatePolynomialFunction``), a
    chain of couplers (the map of a dependent coordinate is composed with its coupler), or a
    locked one (a constant).  Cycles are reported.
    """

    def __init__(self):
        self.order: list[str] = []
        self.info: dict[str, dict] = {}
        #: dependent name -> (constraint element, independent names, function element, scale)
        #: or (None, None, caller-supplied inner map, None)
        self.couplers: dict[str, tuple] = {}
        self._resolved: dict[str, Any] = {}
        self._resolving: list[str] = []

    def independent(self):
        return [c for c in self.order if self.role(c) == "independent"]

    def role(self, name):
        if name in self.couplers:
            return "dependent"
        if self.info[name]["locked"]:
            return "locked"
        return "independent"

    def inner_of(self, doc, dependent: str):
        """The dependent coordinate as a (single) joint map of the independent coordinates."""
        if dependent in self._resolved:
            return self._resolved[dependent]
        con, indep, fel, scale = self.couplers[dependent]
        if dependent in self._resolving:
            chain = " -> ".join(self._resolving + [dependent])
            raise doc.error(con, f"circular chain of coordinate couplers: {chain}")
        self._resolving.append(dependent)
        if con is None:  # caller-supplied coupling
            inner = fel
        elif fel.tag == "MultivariatePolynomialFunction":
            dim = int(_floats(doc, fel, "dimension", 1)[0])
            order = int(_floats(doc, fel, "order", 1)[0])
            if dim != len(indep):
                raise doc.error(fel, f"dimension {dim} but the coupler names {len(indep)} independent "
                                f"coordinates {indep}")
            for c in indep:
                if self.role(c) != "independent":
                    raise doc.error(con, f"a MultivariatePolynomialFunction coupler of the {self.role(c)} "
                                    f"coordinate {c!r} is not supported", NotImplementedError)
            try:
                inner = MultivariatePolynomial(indep, _floats(doc, fel, "coefficients"), order).scaled(scale)
            except ValueError as e:
                raise doc.error(fel, str(e)) from None
        else:
            if len(indep) != 1:
                raise doc.error(con, f"a {fel.tag} reads one coordinate but the coupler names {len(indep)} "
                                f"independent coordinates {indep} (use a MultivariatePolynomialFunction)")
            inner = self.map_of(doc, con, indep[0], _pp(doc, fel).scaled(scale), "coupler")
        self._resolving.pop()
        self._resolved[dependent] = inner
        return inner

    def map_of(self, doc, el, coordinate: str, outer: PPData, kind: str):
        """Joint map for ``outer(coordinate)`` resolved to the independent coordinates."""
        if coordinate not in self.info:
            raise doc.error(el, f"unknown coordinate {coordinate!r}; coordinates are {tuple(self.order)}")
        role = self.role(coordinate)
        if role == "independent":
            return PiecewisePolynomial(coordinate, outer, kind)
        if role == "locked":
            f, _, _ = outer(np.asarray(self.info[coordinate]["default"]))
            return Constant(float(f))
        inner = self.inner_of(doc, coordinate)
        if isinstance(inner, Constant):
            f, _, _ = outer(np.asarray(float(inner.constant[0])))
            return Constant(float(f))
        if kind == "identity":  # the joint's own coordinate is the dependent one
            return inner
        if isinstance(inner, Affine) and outer.coef.shape[0] == 1 and outer.coef.shape[1] <= 2:
            c = np.pad(outer.coef[0], (0, 2 - outer.coef.shape[1]))  # c0 + c1 (u - a)
            c0, s = float(c[0] - c[1] * outer.anchors[0]), float(c[1])
            return Affine(inner.coordinates[0], s * np.asarray(inner.slope[0]), s * float(inner.offset[0]) + c0)
        return ComposedPolynomial(PiecewisePolynomial("u", outer, kind), inner)


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


# --------------------------------------------------------------------------------------------
# the loader
# --------------------------------------------------------------------------------------------


def _coordinate_elements(joint):
    out = []
    cs = joint.find("coordinates")  # 4.x
    if cs is not None:
        out += [c for c in cs if c.tag == "Coordinate"]
    cs = joint.find("CoordinateSet")  # 3.x
    if cs is not None and cs.find("objects") is not None:
        out += [c for c in cs.find("objects") if c.tag == "Coordinate"]
    return out


class _Loader:
    def __init__(self, path, ignore_wrapping: bool, couplings=None, ignore_forces=(), ignore_constraints=()):
        self.couplings = dict(couplings or {})
        self.ignore_forces = _class_names("ignore_forces", ignore_forces,
                                          tuple(t for t in MUSCLE_TYPES if t not in OPTIONAL_PATH_FORCES)
                                          + RECORDED_FORCES)
        #: muscle name -> {curve property: PPData} of the Schutte1993Muscle_Deprecated muscles
        self._schutte_curves: dict[str, dict] = {}
        self._muscle_sources: dict[str, str] = {}
        self.ignore_constraints = _class_names("ignore_constraints", ignore_constraints,
                                               ("CoordinateCouplerConstraint",))
        self.ignored: list[tuple[str, str]] = []
        #: enforced PointOnLineConstraint elements (eliminated by :mod:`.osim_point_on_line`)
        self.point_on_line: list = []
        #: (dependent coordinate, why) and (coordinate, assembled default) of that elimination
        self.eliminated: tuple[tuple[str, str], ...] = ()
        self.assembled: tuple[tuple[str, float], ...] = ()
        self._locked_off: list[str] = []
        self._force_elements: list = []
        self._actuators: tuple = ()
        #: muscle -> (coordinates, order, coefficients) of the path forces with a FunctionBasedPath
        self._path_functions: dict = {}
        self._unused_path_elements: list = []
        self._coordinate_table = None
        self.doc = _Doc(path)
        self.ignore_wrapping = ignore_wrapping
        root = self.doc.root
        if root.tag != "OpenSimDocument":
            raise ValueError(f"{path}: root element is <{root.tag}>, expected <OpenSimDocument>")
        self.version = int(root.get("Version", "0") or 0)
        self.model = root.find("Model")
        if self.model is None:
            raise self.doc.error(root, "no <Model> element")
        self.coords = _Coords()
        self.frames: dict[str, tuple[str, np.ndarray]] = {}  # frame path/name -> (body, X_body_frame)
        self.bodies: dict[str, Any] = {}  # OpenSim body name -> element
        self.joints: list[tuple[Any, str, str, np.ndarray, np.ndarray]] = []
        self._inertias: dict[str, np.ndarray] = {}
        self._massless: set[str] = set()
        #: mbjax body -> (OpenSim parent, OpenSim child, unit_fixed, unit_parent, unit_child, axis weight)
        self.scaling: dict[str, tuple] = {}

    # ---- structure ------------------------------------------------------------------------
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

    def _coordinate(self, c):
        doc = self.doc
        name = c.get("name")
        if name in self.coords.info:
            raise doc.error(c, f"duplicate coordinate {name!r}")
        rng = _floats(doc, c, "range", 2, default=[-10.0, 10.0])  # OpenSim's default range
        mt = _text(c, "motion_type", "rotational")
        default = float(_floats(doc, c, "default_value", 1, default=[0.0])[0])
        clamped = _bool(c, "clamped")
        if _bool(c, "prescribed") and c.find("prescribed_function") is not None and len(c.find("prescribed_function")):
            # OpenSim drives it as a function of time (a constraint); mbjax has no time-dependent coordinate
            raise doc.error(c, f"prescribed coordinate {name!r} (a function of time) is not supported",
                            NotImplementedError)
        if not np.isfinite(default):
            # OpenSim 4.6 loads an unclamped NaN/inf default (and its default pose is then NaN/inf)
            raise doc.error(c, f"coordinate {name!r}: <default_value> must be finite, got {default}")
        if clamped:  # OpenSim's Coordinate::extendFinalizeFromProperties refuses these
            if not rng[0] <= rng[1]:
                raise doc.error(c, f"clamped coordinate {name!r}: <range> {rng[0]:g} {rng[1]:g} has max < min")
            if not (rng[0] - _SQRT_EPS < default < rng[1] + _SQRT_EPS):
                raise doc.error(c, f"clamped coordinate {name!r}: <default_value> {default!r} is outside its "
                                f"<range> [{rng[0]!r}, {rng[1]!r}]")
        self.coords.order.append(name)
        self.coords.info[name] = dict(
            default=default,
            range=(float(rng[0]), float(rng[1])),
            clamped=clamped,
            locked=_bool(c, "locked"),
            motion_type=mt,
            element=c,
        )

    def _couplers(self):
        doc = self.doc
        cset = self.model.find("ConstraintSet")
        if cset is None or cset.find("objects") is None:
            return
        for con in cset.find("objects"):
            if not _bool(con, "isEnforced", True) or _bool(con, "isDisabled", False):
                continue  # a constraint OpenSim does not enforce changes nothing
            if con.tag != "CoordinateCouplerConstraint":
                if con.tag == "PointOnLineConstraint" and con.tag not in self.ignore_constraints:
                    self.point_on_line.append(con)  # eliminated by load_osim (osim_point_on_line)
                    continue
                if con.tag in self.ignore_constraints:
                    self.ignored.append((con.tag, con.get("name")))
                    continue
                raise doc.error(con, "unsupported constraint (only CoordinateCouplerConstraint and "
                                "PointOnLineConstraint). Pass "
                                f"ignore_constraints=({con.tag!r},) to load the model without it", NotImplementedError)
            indep = (_text(con, "independent_coordinate_names", "") or "").split()
            dep = _text(con, "dependent_coordinate_name")
            if not indep or dep is None:
                raise doc.error(con, "coupler needs <independent_coordinate_names> and <dependent_coordinate_name>")
            for n in indep + [dep]:
                if n not in self.coords.info:
                    raise doc.error(con, f"unknown coordinate {n!r}")
            if dep in indep:
                raise doc.error(con, f"coordinate {dep!r} is coupled to itself")
            if dep in self.coords.couplers:
                raise doc.error(con, f"coordinate {dep!r} is the dependent coordinate of two couplers")
            holder = con.find("coupled_coordinates_function")
            fel = _function_element(doc, holder if holder is not None else con)
            scale = float(_floats(doc, con, "scale_factor", 1, default=[1.0])[0])
            self.coords.couplers[dep] = (con, indep, fel, scale)
        for dep, inner in self.couplings.items():  # caller-supplied multi-coordinate couplings
            if dep not in self.coords.info:
                raise ValueError(f"{doc.path}: coupling for unknown coordinate {dep!r}")
            self.coords.couplers[dep] = (None, None, inner, None)
        for dep, inner in self.couplings.items():
            for c in inner.coordinates[0]:
                if c not in self.coords.info or self.coords.role(c) != "independent":
                    raise ValueError(f"{doc.path}: coupling of {dep!r} reads {c!r}, which is not an independent coordinate")
        for dep in list(self.coords.couplers):  # resolve now: errors surface at load, chains checked
            self.coords.inner_of(doc, dep)

    def _joint_frames(self, j):
        doc = self.doc
        if j.tag not in JOINT_TYPES:
            why = _REFUSED_JOINTS.get(j.tag, "unsupported joint type")
            raise doc.error(j, f"{why}; supported: {JOINT_TYPES}", NotImplementedError)
        if _bool(j, "reverse"):
            raise doc.error(j, "reversed joints are not supported", NotImplementedError)
        if self.version >= 30000:
            pf = _text(j, "socket_parent_frame")
            cf = _text(j, "socket_child_frame")
            if pf is None or cf is None:
                raise doc.error(j, "joint needs <socket_parent_frame> and <socket_child_frame>")
            parent, x_pf = self._resolve(j, pf, j)
            child, x_bc = self._resolve(j, cf, j)
        else:
            parent = _text(j, "parent_body")
            if parent not in self.frames:
                raise doc.error(j, f"unknown parent body {parent!r}")
            parent = self.frames[parent][0]
            child = j.get("_child_body")
            x_pf = _tf(_xyz_body_fixed(_floats(doc, j, "orientation_in_parent", 3, default=[0, 0, 0])),
                       _floats(doc, j, "location_in_parent", 3, default=[0, 0, 0]))
            x_bc = _tf(_xyz_body_fixed(_floats(doc, j, "orientation", 3, default=[0, 0, 0])),
                       _floats(doc, j, "location", 3, default=[0, 0, 0]))
        if child == GROUND:
            raise doc.error(j, "joint whose child is ground (reverse joints) is not supported", NotImplementedError)
        return j, parent, child, x_pf, x_bc

    def _axes(self, j):
        """The 1-dof chain of a joint: list of (kind, axis, name, map | None, constant)."""
        doc = self.doc
        coords = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag == "WeldJoint":
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

    # ---- assemble ------------------------------------------------------------------------------
    def build(self):
        doc = self.doc
        self.read_structure()
        indep = self.coords.independent()
        gravity = _floats(doc, self.model, "gravity", 3, default=[0, -9.80665, 0])
        b = ModelBuilder(indep, gravity=gravity)
        placed = {GROUND}
        pending = list(self.joints)
        while pending:
            progressed = False
            for item in list(pending):
                j, parent, child, x_pf, x_bc = item
                if parent not in placed:
                    continue
                self._add_chain(b, item)
                placed.add(child)
                pending.remove(item)
                progressed = True
            if not progressed:
                j = pending[0][0]
                raise doc.error(j, f"parent body {pending[0][1]!r} is never attached to ground (closed loop "
                                "or missing joint)")
        for name, el in self.bodies.items():
            if name not in placed:
                raise doc.error(el, "body has no joint")
        model = b.build()
        # OpenSim inertias are taken as given (as OpenSim 4.6 takes them): some published ones (MoBL's
        # clavicle and scapula) violate the triangle inequality that ModelBuilder enforces, so they
        # are set after building, with one warning per file naming them.
        inertia = np.zeros((model.n_bodies, 3, 3))
        for name, value in self._inertias.items():
            inertia[model.body_index(name)] = value
        self._warn_inertias()
        model = eqx.tree_at(lambda m: m.inertia, model, jnp.asarray(inertia))
        self._wrap_objects()
        muscles, kinds, params, recorded, wrapped, path_wraps = self._forces(model)
        info = self._info(indep, recorded, wrapped if self.ignore_wrapping else (), model.body_names)
        if self.ignored:
            warnings.warn(f"{doc.path}: {len(self.ignored)} element(s) not modelled, as asked by ignore_forces / "
                          "ignore_constraints (paths of ignored path forces are kept, with zero tension): "
                          + ", ".join(f"{t} {n!r}" for t, n in self.ignored), stacklevel=3)
        if muscles:
            used = sorted({w.wrap_object for ws in path_wraps.values() for w in ws})
            objects = [self._wrap_object(self.wrap_elements[n]) for n in used]
            paths = build_paths(model.body_names, model.coordinate_names, muscles, kinds, params,
                                wrap_objects=objects, path_wraps=path_wraps, sources=self._muscle_sources)
            if self._schutte_curves:  # per-muscle curves as padded arrays (mbjax.muscles.schutte1993)
                curves = curve_parameters([self._schutte_curves.get(n, {}) for n in paths.names],
                                          paths.location.dtype)
                paths = eqx.tree_at(lambda p: p.parameters, paths, {**paths.parameters, **curves})
            if self._path_functions:  # function-based paths have no points: their placeholder rows are invalid
                valid = tuple(tuple(False for _ in row) if n in self._path_functions else row
                              for n, row in zip(paths.names, paths.valid))
                paths = dataclasses.replace(paths, valid=valid)
            model = with_muscles(model, paths)
            if self._path_functions:
                model = with_path_functions(model, self._path_functions)
                warn_unused(doc.path, self._unused_path_elements, stacklevel=4)
        stacks, dropped = read_force_elements(self, model, self._force_elements)
        if dropped:
            warnings.warn(f"{doc.path}: {len(dropped)} force element(s) on locked coordinates left out (the lock "
                          "absorbs their force): " + ", ".join(f"{t} {n!r}" for t, n in dropped), stacklevel=3)
        if stacks:
            model = with_force_elements(model, *stacks)
        extras = dict(model.extras)
        extras["osim"] = info
        return model.with_extras(extras)

    def _schutte_muscle(self, f, props):
        """The curves of a ``Schutte1993Muscle_Deprecated`` (``{curve: PPData}``, absent = default);
        the two ``ignore_*`` flags OpenSim refuses for the class are refused here too."""
        doc = self.doc
        for flag in _MUSCLE_FLAGS:
            if props.get(flag, 0.0) > 0.5:
                raise doc.error(f, f"{SCHUTTE} with {flag}=true: OpenSim refuses the flag for this class "
                                "(ActivationFiberLengthMuscle_Deprecated::extendAddToSystem)", NotImplementedError)
        out = {}
        for c in f:
            if c.tag in SCHUTTE_CURVES:  # 3.x: <tendon_force_length_curve><SimmSpline>...
                out[c.tag] = _pp(doc, _function_element(doc, c))
            elif c.get("name") in SCHUTTE_CURVES and len(c):  # 4.x: <SimmSpline name="tendon_force_length_curve">
                if c.tag not in FUNCTION_TYPES:
                    raise doc.error(c, f"unsupported function type for {c.get('name')}; supported: {FUNCTION_TYPES}",
                                    NotImplementedError)
                out[c.get("name")] = _pp(doc, c)
        return out

    def _warn_inertias(self):
        bad, massless = [], []
        for name, el in self.bodies.items():
            if name not in self._inertias:
                continue
            if name in self._massless:
                massless.append(name)
                continue
            why = _inertia_problem(self._inertias[name])
            if why:
                bad.append(f"{name} ({why})")
        parts = []
        if bad:
            parts.append(f"{len(bad)} body(ies) have an inertia no mass distribution has, used as given (as "
                         f"OpenSim does): {'; '.join(bad)}")
        if massless:
            parts.append(f"massless body(ies) with non-zero inertia, set to zero as OpenSim does: {', '.join(massless)}")
        if parts:
            warnings.warn(f"{self.doc.path}: " + ". ".join(parts), stacklevel=4)

    def _mass_props(self, el):
        doc = self.doc
        mass = float(_floats(doc, el, "mass", 1, default=[0.0])[0])
        if not mass >= 0 or not np.isfinite(mass):  # OpenSim's Body refuses a negative mass too
            raise doc.error(el.find("mass"), f"body {el.get('name')!r}: mass must be finite and >= 0, got {mass}")
        com = _floats(doc, el, "mass_center", 3, default=[0, 0, 0])
        if el.find("inertia") is not None:
            v = _floats(doc, el, "inertia", 6)
        else:
            v = np.array([float(_floats(doc, el, t, 1, default=[0.0])[0]) for t in
                          ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz")])
        if not (np.isfinite(mass) and np.all(np.isfinite(v))):
            raise doc.error(el, f"mass {mass} and inertia {v} must be finite")
        inertia = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        if abs(mass) <= _SIGNIFICANT_REAL and np.linalg.norm(v) > _SIGNIFICANT_REAL:
            # OpenSim's Body::getInertia: "massless but nonzero inertia provided. Inertia reset to zero"
            self._massless.add(el.get("name"))
            inertia = np.zeros((3, 3))
        return mass, com, inertia

    def _add_chain(self, b: ModelBuilder, item):
        j, parent, child, x_pf, x_bc = item
        el = self.bodies.get(child)
        if el is None:
            raise self.doc.error(j, f"child body {child!r} is not in the BodySet")
        mass, com, inertia = self._mass_props(el)
        self._inertias[child] = inertia
        inertia = None  # set after ModelBuilder.build (see build)
        pending = x_pf.copy()
        # the offset translations as s_parent * unit_parent + s_child * unit_child (OpenSim's uniform
        # scaling of the joint frames and of the constant translation functions; see OsimScaling)
        # (+ unit_fixed, the translations OpenSim never scales: constant generalized coordinates)
        unit_parent, unit_fixed = x_pf[:3, 3].copy(), np.zeros(3)
        steps = []
        for kind, axis, axname, m, const, weight in self._axes(j):
            if m is None:
                if const:
                    if kind == "prismatic":
                        if weight:
                            unit_parent = unit_parent + pending[:3, :3] @ (axis * const * weight)
                        else:
                            unit_fixed = unit_fixed + pending[:3, :3] @ (axis * const)
                    pending = pending @ (_tf(_rot(axis, const)) if kind == "revolute" else _tf(None, axis * const))
                continue
            steps.append((kind, axis, axname, m, pending, unit_parent, unit_fixed, weight))
            pending = np.eye(4)
            unit_parent, unit_fixed = np.zeros(3), np.zeros(3)
        tail = pending @ _inv(x_bc)
        unit_child = pending[:3, :3] @ (-x_bc[:3, :3].T @ x_bc[:3, 3])
        need_weld = not np.allclose(tail, np.eye(4), atol=0, rtol=0) or not steps
        current = parent
        for k, (kind, axis, axname, m, offset, unit_p, unit_f, weight) in enumerate(steps):
            last = k == len(steps) - 1 and not need_weld
            name = child if last else f"{child}/{j.get('name')}/{axname}"
            b.add_body(name, parent=current, joint=kind, axis=axis, map=m, offset=offset,
                       mass=mass if last else 0.0, com=com if last else (0, 0, 0),
                       inertia=inertia if last else None)
            self.scaling[name] = (parent, child, unit_f, unit_p, np.zeros(3), weight)
            current = name
        if need_weld:
            b.add_body(child, parent=current, joint="revolute", axis=[0, 0, 1], map=Constant(0.0),
                       offset=tail, mass=mass, com=com, inertia=inertia)
            self.scaling[child] = (parent, child, unit_fixed, unit_parent, unit_child, 0.0)


    # ---- forces and paths -------------------------------------------------------------------
    def _forces(self, model):
        doc = self.doc
        fset = self.model.find("ForceSet")
        muscles, kinds, params, path_wraps = {}, {}, {}, {}
        recorded, wrapped, never, locked_off = [], [], [], []
        if fset is None or fset.find("objects") is None:
            return muscles, kinds, params, tuple(recorded), tuple(wrapped), path_wraps
        self._locked_off = []
        actuators = []
        for f in fset.find("objects"):
            if f.tag in RECORDED_FORCES:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                    continue
                recorded.append((f.tag, f.get("name")))
                actuators.append(f)
                continue
            if f.tag in MODELLED_FORCES:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                else:
                    self._force_elements.append(f)
                continue
            has_path = f.find("GeometryPath") is not None or f.find(FUNCTION_BASED_PATH) is not None
            path_only = f.tag in self.ignore_forces and has_path
            if f.tag not in MUSCLE_TYPES and not path_only:
                if f.tag in self.ignore_forces:
                    self.ignored.append((f.tag, f.get("name")))
                    continue
                why = _REFUSED_FORCES.get(f.tag, "unsupported force")
                raise doc.error(f, f"{why}; supported path forces {MUSCLE_TYPES}, force elements "
                                f"{MODELLED_FORCES}, recorded {RECORDED_FORCES}. Pass ignore_forces=({f.tag!r},) to load the model without "
                                "it" + (" (its path is kept)" if has_path else ""),
                                NotImplementedError)
            if path_only:
                self.ignored.append((f.tag, f.get("name")))
            name = f.get("name")
            gp = f.find("GeometryPath")
            if f.find(FUNCTION_BASED_PATH) is not None:
                if gp is not None:
                    raise doc.error(f, "path force with both <GeometryPath> and <FunctionBasedPath>")
                self._function_based_path(f, name)
                muscles[name] = _NO_POINTS
                kinds[name] = f"{f.tag} (ignored)" if path_only else f.tag
                params[name] = _muscle_properties(doc, f)
                self._muscle_sources[name] = doc.where(f)
                if f.tag == SCHUTTE and not path_only:
                    self._schutte_curves[name] = self._schutte_muscle(f, params[name])
                continue
            if gp is None:
                raise doc.error(f, "path force without <GeometryPath> or <FunctionBasedPath>")
            pset = gp.find("PathPointSet")
            if pset is None or pset.find("objects") is None:
                raise doc.error(gp, "GeometryPath without <PathPointSet><objects>")
            points = [(p, self._point(p)) for p in pset.find("objects")]
            never.extend(f"{name}/{p.get('name')}" for p, pt in points
                         if pt is None and p.get("name") not in self._locked_off)
            locked_off.extend(f"{name}/{p.get('name')}" for p, pt in points
                              if pt is None and p.get("name") in self._locked_off)
            self._locked_off = []
            muscles[name] = [pt for _, pt in points if pt is not None]
            wset = gp.find("PathWrapSet")
            pws = [w for w in (wset.find("objects") if wset is not None and wset.find("objects") is not None else [])]
            if pws:
                wrapped.append(name)
            if pws and not self.ignore_wrapping:
                kept = [k for k, (_, pt) in enumerate(points) if pt is not None]
                path_wraps[name] = [self._path_wrap(w, kept) for w in pws]
            kinds[name] = f"{f.tag} (ignored)" if path_only else f.tag
            params[name] = _muscle_properties(doc, f)
            self._muscle_sources[name] = doc.where(f)
            if f.tag == SCHUTTE and not path_only:
                self._schutte_curves[name] = self._schutte_muscle(f, params[name])
        if wrapped and self.ignore_wrapping:
            warnings.warn(
                f"{doc.path}: wrapping ignored (straight lines), as asked by ignore_wrapping=True, for "
                f"{len(wrapped)} path(s): {', '.join(wrapped)}",
                stacklevel=4,
            )
            path_wraps = {}
        if never:
            warnings.warn(
                f"{doc.path}: {len(never)} ConditionalPathPoint(s) left out: their <range> has min > max + "
                f"{2 * CONDITIONAL_RANGE_TOLERANCE:g}, so OpenSim never activates them: {', '.join(never)}",
                stacklevel=4,
            )
        if locked_off:
            warnings.warn(
                f"{doc.path}: {len(locked_off)} ConditionalPathPoint(s) left out: their coordinate is locked at a "
                f"default value outside their <range>, so OpenSim never activates them: {', '.join(locked_off)}",
                stacklevel=4,
            )
        if actuators:
            defaults = self.model.findall("defaults") + fset.findall("defaults")
            self._actuators, _ = read_actuators(doc, actuators, version=self.version, defaults=defaults)
        return muscles, kinds, params, tuple(recorded), tuple(wrapped), path_wraps

    def _function_based_path(self, f, name):
        """Read a force's ``<FunctionBasedPath>`` into ``self._path_functions``
        (:mod:`mbjax.io.osim_path_functions`; its coordinates must be independent ones)."""
        if self._coordinate_table is None:
            self._coordinate_table = table_of_loader(self)
        el = f.find(FUNCTION_BASED_PATH)
        self._path_functions[name], unused = read_function_based_path(self.doc, el, name, self._coordinate_table)
        self._unused_path_elements += unused

    def _path_wrap(self, w, kept):
        """A ``<PathWrap>`` as a :class:`~mbjax.wrapping.PathWrap`, its 1-based ``range`` re-indexed
        to the points kept (never-active conditional points are left out of the path)."""
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
        method = (_text(w, "method") or "hybrid").strip().lower()
        if method not in WRAP_METHODS:
            method = "hybrid"  # PathWrap::extendFinalizeFromProperties falls back to hybrid
        rng = [int(round(v)) for v in _floats(doc, w, "range", 2, default=[-1, -1])]
        lo, hi = rng
        if lo >= 1:
            lo = 1 + sum(1 for k in kept if k < lo - 1)
        if hi >= 1:
            hi = sum(1 for k in kept if k <= hi - 1)
            if hi < 1 or (lo >= 1 and hi < lo):
                raise doc.error(w, f"PathWrap range {rng} holds only never-active points", NotImplementedError)
        return PathWrap(obj, method, (lo, hi), w.get("name") or "")

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
        quadrant = (_text(el, "quadrant") or "Unassigned").strip()
        active = (_text(el, "active") or "true").strip().lower() not in ("false", "0")
        try:
            return WrapObject(el.get("name"), el.tag, body, dims, x[:3, :3], x[:3, 3], quadrant, active)
        except ValueError as e:
            raise doc.error(el, str(e)) from None

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
        fns = []  # per frame component: a joint map, or None (constant loc[c])
        for axis_i, comp in enumerate("xyz"):
            holder = p.find(f"{comp}_location")
            cref = _text(p, f"socket_{comp}_coordinate") or _text(p, f"{comp}_coordinate")
            if holder is None:
                fns.append(None)
                continue
            fel = _function_element(doc, holder)
            data = _pp(doc, fel)
            if cref is None or fel.tag == "Constant":
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

    def _scaling(self, body_names):
        segments = tuple(n for n in body_names if n in self.bodies)
        index = {n: k for k, n in enumerate(segments)}
        rows = [self.scaling[n] for n in body_names]
        vec = lambda k: jnp.asarray(np.array([r[k] for r in rows], dtype=float).reshape(len(rows), 3))
        return OsimScaling(
            fixed=vec(2), unit_parent=vec(3), unit_child=vec(4),
            axis_weight=jnp.asarray([float(r[5]) for r in rows], dtype=float),
            factors=jnp.ones(len(segments)), segments=segments,
            parent=tuple(index.get(r[0], -1) for r in rows), child=tuple(index[r[1]] for r in rows))

    def _info(self, indep, recorded, wrapped, body_names=()):
        info = self.coords.info
        others = [c for c in self.coords.order if self.coords.role(c) != "independent"]
        return OsimInfo(
            default=jnp.asarray([info[c]["default"] for c in indep], dtype=float),
            lower=jnp.asarray([info[c]["range"][0] for c in indep], dtype=float),
            upper=jnp.asarray([info[c]["range"][1] for c in indep], dtype=float),
            clamped=tuple(info[c]["clamped"] for c in indep),
            source=self.doc.path,
            version=self.version,
            roles=tuple((c, self.coords.role(c)) for c in self.coords.order),
            motion_types=tuple(info[c]["motion_type"] for c in indep),
            recorded_forces=tuple(recorded),
            wrapping_ignored=tuple(wrapped),
            ignored=tuple(self.ignored),
            eliminated=self.eliminated,
            assembled=self.assembled,
            scaling=self._scaling(body_names) if body_names else None,
            actuators=self._actuators,
            actuator_defaults=default_records(self.model.findall("defaults")
                                              + [d for fs in self.model.findall("ForceSet") for d in fs.findall("defaults")]),
            other_names=tuple(others),
            other_motion_types=tuple(info[c]["motion_type"] for c in others),
            other_maps=tuple(self._coordinate_map(c) for c in others) or None,
        )

    def _coordinate_map(self, name):
        """A coordinate that is not in ``q`` as a single joint map of ``q``; None for one a
        ``PointOnLineConstraint`` eliminates (its loop is solved once, inside the joint maps)."""
        if name in dict(self.eliminated):
            return None
        if self.coords.role(name) == "locked":
            return Constant(float(self.coords.info[name]["default"]))
        return self.coords.inner_of(self.doc, name)


def _ellipsoid_x(radius, x):
    """x component of Simbody's Ellipsoid mobilizer translation: ``a sin q1``."""
    return radius * jnp.sin(x[1])


def _ellipsoid_y(radius, x):
    """y component: ``-b sin q0 cos q1``."""
    return -radius * jnp.sin(x[0]) * jnp.cos(x[1])


def _ellipsoid_z(radius, x):
    """z component: ``c cos q0 cos q1``."""
    return radius * jnp.cos(x[0]) * jnp.cos(x[1])


def _inertia_problem(inertia: np.ndarray) -> str | None:
    """Why an inertia tensor (about the centre of mass) belongs to no mass distribution, or None.

    Its principal moments must be non-negative and satisfy the triangle inequality (slack 1e-9 of the
    largest moment).  Simbody (release builds, so OpenSim) does not check this.
    """
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-9 * float(np.abs(eig).max())
    moments = " ".join(f"{e:.4g}" for e in eig)
    if eig[0] < -tol:
        return f"not positive semidefinite, principal moments {moments}"
    if eig[0] + eig[1] < eig[2] - tol:
        return f"principal moments {moments} violate the triangle inequality"
    return None


_MUSCLE_FLAGS = ("ignore_tendon_compliance", "ignore_activation_dynamics")


def _muscle_properties(doc, f) -> dict[str, float]:
    """Scalar properties of a muscle element: numbers, the two ``ignore_*`` flags as 0/1, and the
    properties of its curve elements (``<ActiveForceLengthCurve>`` ...) as ``"Curve.property"``.

    A property mbjax reads as a number (:data:`~mbjax.muscles.parameter_rules.NUMERIC_PROPERTIES`)
    that does not parse (``1,500``) or is NaN is refused by file, line, muscle and property: OpenSim
    would not read it either, and a silent default would be a different muscle."""
    out = {}

    def number(el, key, text):
        try:
            value = float(text)
        except ValueError:
            if key in NUMERIC_PROPERTIES:
                raise doc.error(el, f"muscle {f.get('name')!r}: <{el.tag}> must be a number, got "
                                    f"{text.strip()!r}") from None
            return
        if key in NUMERIC_PROPERTIES and np.isnan(value):
            raise doc.error(el, f"muscle {f.get('name')!r}: <{el.tag}> is NaN (leave the property out "
                                "for OpenSim's default)")
        out[key] = value

    for c in f:
        if c.text is not None and len(c) == 0 and c.tag not in _MUSCLE_FLAGS and c.text.strip():
            number(c, c.tag, c.text)
        elif c.tag in _MUSCLE_FLAGS and c.text is not None:
            out[c.tag] = 1.0 if c.text.strip().lower() == "true" else 0.0
        elif c.tag.endswith("Curve") and len(c):
            for g in c:
                if g.text is not None and len(g) == 0 and g.text.strip():
                    number(g, f"{c.tag}.{g.tag}", g.text)
    return out


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def load_osim(path, ignore_wrapping: bool = False, couplings=None, ignore_forces=(), ignore_constraints=(),
              independent_coordinates=None, wrapping: str = "opensim"):
    """Load an OpenSim ``.osim`` model (3.x or 4.x XML) as an mbjax :class:`~mbjax.Model`.

    Muscle paths go to ``model.extras["muscles"]`` (those of a ``FunctionBasedPath`` to
    ``model.extras["path_functions"]``), coordinate metadata to ``model.extras["osim"]``.
    See the module docstring for the mapping and what is refused.  ``couplings`` (advanced) maps a
    coordinate name to an :class:`~mbjax.maps.Affine` of independent coordinates that replaces
    (or adds) its coupler: the multi-coordinate rhythms OpenSim's couplers cannot express.

    ``ignore_forces`` / ``ignore_constraints``: OpenSim class names (e.g. ``("HuntCrossleyForce",
    "BushingForce")``, ``("PointOnLineConstraint",)``) of elements mbjax does not model, loaded
    anyway without them: the explicit opt-out, warned and listed in ``OsimInfo.ignored``.  An ignored
    force that has a ``GeometryPath`` (``Delp1990Muscle_Deprecated``, or ``Schutte1993Muscle_Deprecated``,
    which is otherwise modelled) keeps its path (lengths, moment arms), with zero tension like a
    ``PathActuator``.  Kinematics, path geometry and the
    mass matrix do not depend on the ignored elements; forward dynamics and, for constraints, the
    set of reachable poses do.

    ``PointOnLineConstraint`` (each two equations) is eliminated, not ignored
    (:mod:`mbjax.io.osim_point_on_line`): the file is loaded once with every coordinate independent
    (the premodel), ``m`` coordinates are made dependent (column-pivoted QR of the constraints'
    ``∂g/∂q`` at the default pose, or all but the caller's ``independent_coordinates``), solved by
    Newton from the assembled default (:class:`~mbjax.constraints.LoopConstraint`, run-time error on
    a near-singular ``∂g/∂f``) and read by the model through
    :class:`~mbjax.constraints.ImplicitMap` joint maps.  ``OsimInfo.eliminated`` says which and why,
    ``OsimInfo.assembled`` their assembled defaults.  ``ignore_constraints=("PointOnLineConstraint",)``
    still leaves them out instead.

    ``wrapping``: how muscle paths wrap over the wrap surfaces, ``"opensim"`` (default: OpenSim 4.6's
    algorithm, lengths equal to OpenSim's) or ``"smooth"`` (a taut cable of geodesics over
    cylinders, spheres and ellipsoids, differentiable in reverse mode and C¹ across contact, for
    gradient-based optimal control; tori are refused by name,
    :mod:`mbjax.wrapping.smooth_path`).  With ``ignore_wrapping=True`` paths are straight either way.
    """
    from ..wrapping.smooth_path import WRAPPINGS, with_wrapping

    if wrapping not in WRAPPINGS:
        raise ValueError(f"load_osim: wrapping must be one of {WRAPPINGS}, got {wrapping!r}")
    kwargs = dict(ignore_wrapping=ignore_wrapping, couplings=couplings, ignore_forces=ignore_forces,
                  ignore_constraints=ignore_constraints)
    loader = _Loader(path, **kwargs)
    model = loader.build()
    if not loader.point_on_line:
        if independent_coordinates is not None:
            raise ValueError(f"{loader.doc.path}: independent_coordinates is for PointOnLineConstraint "
                             "elimination, and the file has no enforced PointOnLineConstraint")
        return with_wrapping(model, wrapping, loader.doc.path)
    from .osim_point_on_line import eliminate

    return with_wrapping(eliminate(path, loader, model, kwargs, independent_coordinates), wrapping, loader.doc.path)


def _class_names(arg: str, names, supported) -> tuple[str, ...]:
    """``names`` as a tuple of OpenSim class names; a supported class cannot be ignored."""
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"{arg} must hold OpenSim class names (strings), got {n!r}")
        if n in supported:
            raise ValueError(f"{arg}: {n!r} is supported by load_osim and cannot be ignored")
    return names


def default_pose(model):
    """The OpenSim default coordinate values of an imported model, ``(nq,)``."""
    return model.extras["osim"].default
