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
  (:mod:`mbjax.opensim.model.osim_point_on_line`): dependent coordinates chosen by column-pivoted QR of the
  constraints' Jacobian at the default pose (or all but ``independent_coordinates``) become
  :class:`~mbjax.constraints.ImplicitMap` joint maps of a Newton solve on the file's body poses.
  The model's ``q`` is the remaining independent coordinates in file order.  Defaults, ranges,
  ``clamped`` and ``locked`` flags are kept in ``model.osim`` (:class:`OsimInfo`).
* Muscles (``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle``, ``Schutte1993Muscle_Deprecated``,
  ``PathActuator``): their
  ``GeometryPath`` points (``PathPoint``, ``ConditionalPathPoint``, ``MovingPathPoint``) go into
  ``model.muscles``; their scalar properties into ``MusclePaths.parameters``.  One with ``appliesForce``
  false (3.x ``isDisabled`` true) is left out, warned (OpenSim applies no force of it).  ``PathSpring``
  (``T = k max(L - L₀, 0) (1 + c L̇)``) and ``Ligament`` (``T = F f(L/L₀)`` where ``L > L₀``, else 0)
  are force elements with paths of their own (read as a muscle's), in ``model.forces``
  (:mod:`mbjax.opensim.model.osim_path_forces`; generalized force ``Q = -(∂L/∂q)ᵀ T``).  A
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
  function (``model.path_functions``, :mod:`mbjax.muscles.path_functions`; read and
  refused as :mod:`mbjax.opensim.model.osim_path_functions` says), so lengths and moment arms are the
  function's and -∂L/∂q, as OpenSim computes them.
* Force elements (``CoordinateLimitForce``, ``SpringGeneralizedForce``, ``ExpressionBasedCoordinateForce``,
  ``PointToPointSpring``, ``BushingForce``, ``HuntCrossleyForce``, ``PathSpring``, ``Ligament``) go into ``model.forces`` (:mod:`mbjax.forces`,
  read by :mod:`mbjax.opensim.model.osim_forces`); :func:`mbjax.forces.model_forces` gives their generalized force.
  ``CoordinateActuator`` (an idle actuator without controls) is recorded by name
  (:data:`RECORDED_FORCES`).
* Wrap objects (``WrapCylinder``, ``WrapSphere``, ``WrapEllipsoid``, ``WrapTorus``, owned by a body,
  ground or an offset frame) and each path's ``PathWrapSet`` are read into
  ``MusclePaths.wraps`` (:mod:`mbjax.wrapping`) and applied as OpenSim applies them; only wrap
  objects some path uses are kept.  ``ignore_wrapping=True`` is the explicit choice of
  straight-line paths (warned, and recorded in ``OsimInfo.wrapping_ignored``).  An unknown
  ``<method>`` or a reversed ``<range>`` of a ``PathWrap`` is refused (OpenSim refuses the method).  ``wrapping="smooth"`` reads the same objects
  into the smooth option instead (:mod:`mbjax.wrapping.smooth_path`).

* Forces and constraints mbjax does not model (ElasticFoundationForce contact, the deprecated
  ``Delp1990Muscle_Deprecated``, ``Millard2012AccelerationMuscle`` (fibre mass), any other muscle or
  actuator class such as ``RigidTendonMuscle``, ``DeGrooteFregly2016Muscle`` or ``McKibbenActuator``,
  constraints other than couplers and point-on-line) are refused by name unless listed in
  ``ignore_forces`` / ``ignore_constraints`` (see :func:`load_osim`); a name there that matches no
  element of the file is warned.
  ``Schutte1993Muscle_Deprecated`` is modelled, and ``ignore_forces=("Schutte1993Muscle_Deprecated",)``
  still leaves it out explicitly (path kept, zero tension, kind ``"Schutte1993Muscle_Deprecated
  (ignored)"``).  The ContactGeometrySet is
  read only for the geometry a HuntCrossleyForce names.  Sets that change no quantity mbjax
  computes from the model are not read: ControllerSet (mbjax takes excitations as inputs),
  ProbeSet, ComponentSet; their objects, and any element of ``<Model>``, of a ``<Body>`` or of a
  path force (and its curve objects) that OpenSim does not define for its class (``<FooSet>``, a
  misspelt ``<max_isometric_forse>``: OpenSim's default stays in force), are listed in one warning
  per file naming each (line, element, muscle).  OpenSim reads the first ``<Model>`` child of a
  name only: a second set (``<ConstraintSet>`` ...) is refused, naming its objects; a second other
  property (``<gravity>``) is in that warning.  Descriptions, units and visuals (geometry, display
  preferences) are not read and not warned.  A duplicate name within a set (joints, forces, markers,
  constraints, ...) is refused: OpenSim renames the second, which breaks the references to it.
  A body without mass or inertia and without massive bodies beyond it is warned, with the
  coordinates whose mass matrix it makes singular.  ``<OpenSimDocument>`` without an integer
  ``Version`` attribute is refused (OpenSim requires it).

* Bodies: inertias are used as given, as OpenSim does; physically impossible ones (not positive
  semidefinite, or principal moments violating the triangle inequality, e.g. MoBL's clavicle and
  scapula) get one warning per file naming them.  A body with ``|mass| <= SimTK::SignificantReal``
  and a non-zero inertia gets zero inertia (``Body::getInertia``).  A duplicate body name is
  refused (OpenSim renames the second and frees it with a FreeJoint).
* Coordinates: a non-finite ``default_value`` is refused; a ``clamped`` coordinate whose default
  is not in ``(min - SqrtEps, max + SqrtEps)`` is refused, as
  ``Coordinate::extendFinalizeFromProperties`` refuses it; an unclamped (or locked) one outside
  is warned.  A range with ``max < min`` is refused, clamped or not.  A bool property
  (``clamped``, ``locked``, ...) other than true/false (or 1/0) is refused.
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
from typing import Any

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ..._builder import ModelBuilder
from ..._model import GROUND
from ...forces.base import with_force_elements
from ...maps.constant import Constant
from ...muscles.path_functions import with_path_functions
from ...muscles.paths import build_paths, with_muscles
from ...muscles.schutte1993 import curve_parameters
from .osim_actuators import default_records
from .osim_bodies import _BodiesMixin
from .osim_couplers import _Coords, _CouplersMixin
from .osim_classes import MUSCLE_TYPES, OPTIONAL_PATH_FORCES, PATH_SPRING_FORCES, RECORDED_FORCES
from .osim_force_set import _ForceSetMixin
from .osim_forces import applies_force, read_force_elements
from .osim_info import OsimInfo, OsimScaling
from .osim_joints import _JointsMixin
from .osim_motion import angular_velocity_joints, coordinate_joints, coordinate_order, motion_types
from .osim_path_forces import read_path_forces, with_path_force_wrapping
from .osim_path_functions import warn_unused
from .osim_paths import _PathsMixin
from .osim_structure import _StructureMixin
from .osim_wrap_objects import _WrapObjectsMixin
from .osim_xml import _Doc, _floats


class _Loader(_StructureMixin, _CouplersMixin, _JointsMixin, _BodiesMixin, _WrapObjectsMixin, _PathsMixin,
              _ForceSetMixin):
    """One ``.osim`` file read into a :class:`~mbjax.Model`: the state shared by the readers it is
    assembled from (:mod:`.osim_structure`, :mod:`.osim_couplers`, :mod:`.osim_joints`,
    :mod:`.osim_bodies`, :mod:`.osim_wrap_objects`, :mod:`.osim_paths`, :mod:`.osim_force_set`)."""

    def __init__(self, path, ignore_wrapping: bool, couplings=None, ignore_forces=(), ignore_constraints=(),
                 prior_defaults=()):
        self.couplings = dict(couplings or {})
        #: the ``<defaults>`` elements of the documents OpenSim reads before this model, oldest first
        self.prior_defaults = tuple(prior_defaults or ())
        self.ignore_forces = _class_names("ignore_forces", ignore_forces,
                                          tuple(t for t in MUSCLE_TYPES
                                                if t not in OPTIONAL_PATH_FORCES + PATH_SPRING_FORCES)
                                          + RECORDED_FORCES)
        #: muscle name -> {curve property: PPData} of the Schutte1993Muscle_Deprecated muscles
        self._schutte_curves: dict[str, dict] = {}
        self._muscle_sources: dict[str, str] = {}
        self.ignore_constraints = _class_names("ignore_constraints", ignore_constraints,
                                               ("CoordinateCouplerConstraint",))
        self.ignored: list[tuple[str, str]] = []
        #: (element, points, path wraps) of the PATH_SPRING_FORCES, built into force elements
        self._path_springs: list = []
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
        #: elements of the file that are not used ("line N <tag> in <owner>"), warned once
        self.unused: list[str] = []
        #: references and names OpenSim 4.6 refuses that mbjax reads as meant (listed with the unused elements)
        self._opensim_refuses: list[str] = []
        #: coordinates whose default is outside their range (unclamped, so OpenSim loads them), warned once
        self._default_outside: list[str] = []
        #: rotational coordinates whose <range> looks like degrees, warned once
        self._degree_ranges: list[str] = []
        #: OpenSim body -> mass, for the massless-terminal-body check
        self._masses: dict[str, float] = {}
        self.doc = _Doc(path)
        self.ignore_wrapping = ignore_wrapping
        root = self.doc.root
        if root.tag != "OpenSimDocument":
            raise ValueError(f"{path}: root element is <{root.tag}>, expected <OpenSimDocument>")
        version = root.get("Version")
        if version is None or not version.strip().isdigit():
            # XMLDocument::updateDocumentVersion requires it: OpenSim cannot read the file without it
            raise self.doc.error(root, "the Version attribute of <OpenSimDocument> is "
                                 + ("missing" if version is None else f"not an integer ({version!r})")
                                 + ": OpenSim needs it to read the file; write the version the file was saved "
                                 'in (e.g. Version="40000" for a 4.x file, "30000" for 3.x)')
        self.version = int(version)
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
        self._warn_massless_terminal()
        model = eqx.tree_at(lambda m: m.inertia, model, jnp.asarray(inertia))
        self._wrap_objects()
        muscles, kinds, params, recorded, wrapped, path_wraps = self._forces(model)
        info = self._info(indep, recorded, wrapped if self.ignore_wrapping else (), model.body_names)
        self._warn_loaded()
        if self.ignored:
            warnings.warn(f"{doc.path}: {len(self.ignored)} element(s) not modelled, as asked by ignore_forces / "
                          "ignore_constraints (paths of ignored muscles are kept, with zero tension): "
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
        # the model with its OpenSim information: a force on a Ball/Free angle acts on the joint's speed
        stacks, dropped = read_force_elements(self, model.replace(osim=info), self._force_elements)
        stacks += read_path_forces(self, model, self._path_springs)
        if dropped:
            warnings.warn(f"{doc.path}: {len(dropped)} force element(s) on locked coordinates left out (the lock "
                          "absorbs their force): " + ", ".join(f"{t} {n!r}" for t, n in dropped), stacklevel=3)
        if stacks:
            model = with_force_elements(model, *stacks)
        return model.replace(osim=info)

    def _warn_loaded(self):
        """One warning each for the unused elements, the defaults outside their range and the
        ``ignore_forces`` / ``ignore_constraints`` names that match no element of the file."""
        path = self.doc.path
        self.unused += self.doc.unused
        if self._opensim_refuses:
            warnings.warn(f"{path}: {len(self._opensim_refuses)} reference(s) or name(s) that OpenSim 4.6 refuses "
                          "(fix them before loading the file in OpenSim); mbjax reads them as meant: "
                          + "; ".join(self._opensim_refuses), stacklevel=4)
        if self.unused:
            warnings.warn(f"{path}: {len(self.unused)} element(s) not used (unknown to OpenSim's model, or not "
                          "modelled by mbjax): " + "; ".join(self.unused), stacklevel=4)
        if self._default_outside:
            warnings.warn(f"{path}: {len(self._default_outside)} coordinate(s) with a <default_value> outside their "
                          "<range> (not clamped, so OpenSim loads them; the default pose is outside the range): "
                          + "; ".join(self._default_outside), stacklevel=4)
        if self._degree_ranges:
            warnings.warn(f"{path}: the <range> of rotational coordinate(s) " + "; ".join(self._degree_ranges)
                          + " looks like degrees: OpenSim reads a rotational range in radians; convert it "
                          "(degrees * pi / 180)", stacklevel=4)
        for arg, names, holder in (("ignore_forces", self.ignore_forces, "ForceSet"),
                                   ("ignore_constraints", self.ignore_constraints, "ConstraintSet")):
            classes = {el.tag for s in self.model.findall(holder)
                       for el in (s.find("objects") if s.find("objects") is not None else [])}
            unmatched = [n for n in names if n not in classes]
            if unmatched:
                warnings.warn(f"{path}: {arg} names {unmatched}, which no element of the file has (check the "
                              f"spelling; the classes of its {holder} are {sorted(classes)})", stacklevel=4)

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
        opensim_types = motion_types(self.doc.path)  # OpenSim 4.x's, from the joints (a 3.x element is ignored)
        kind = {c: opensim_types.get(c, info[c]["motion_type"]) for c in info}
        return OsimInfo(
            default=jnp.asarray([info[c]["default"] for c in indep], dtype=float),
            lower=jnp.asarray([info[c]["range"][0] for c in indep], dtype=float),
            upper=jnp.asarray([info[c]["range"][1] for c in indep], dtype=float),
            clamped=tuple(info[c]["clamped"] for c in indep),
            source=self.doc.path,
            version=self.version,
            roles=tuple((c, self.coords.role(c)) for c in self.coords.order),
            motion_types=tuple(kind[c] for c in indep),
            coordinate_set_order=coordinate_order(self.doc.path),
            coordinate_joints=tuple(coordinate_joints(self.doc.path).items()),
            recorded_forces=tuple(recorded),
            wrapping_ignored=tuple(wrapped),
            ignored=tuple(self.ignored),
            eliminated=self.eliminated,
            assembled=self.assembled,
            scaling=self._scaling(body_names) if body_names else None,
            actuators=self._actuators,
            actuator_defaults=default_records(self.model.findall("defaults")[:1]),
            other_names=tuple(others),
            other_motion_types=tuple(kind[c] for c in others),
            other_maps=tuple(self._coordinate_map(c) for c in others) or None,
            disabled_forces=tuple(el.get("name") for fs in self.model.iter("ForceSet")
                                  for objs in fs.findall("objects") for el in objs
                                  if not applies_force(el, self.doc)),
            speed_joints=angular_velocity_joints(self.doc.path),
        )

    def _coordinate_map(self, name):
        """A coordinate that is not in ``q`` as a single joint map of ``q``; None for one a
        ``PointOnLineConstraint`` eliminates (its loop is solved once, inside the joint maps)."""
        if name in dict(self.eliminated):
            return None
        if self.coords.role(name) == "locked":
            return Constant(float(self.coords.info[name]["default"]))
        return self.coords.inner_of(self.doc, name)


def load_osim(path, ignore_wrapping: bool = False, couplings=None, ignore_forces=(), ignore_constraints=(),
              independent_coordinates=None, wrapping: str = "opensim", prior_defaults=()):
    """Load an OpenSim ``.osim`` model (3.x or 4.x XML) as an mbjax :class:`~mbjax.Model`.

    Muscle paths go to ``model.muscles`` (those of a ``FunctionBasedPath`` to
    ``model.path_functions``), coordinate metadata to ``model.osim``.
    See the module docstring for the mapping and what is refused.  ``couplings`` (advanced) maps a
    coordinate name to an :class:`~mbjax.maps.Affine` of independent coordinates that replaces
    (or adds) its coupler: the multi-coordinate rhythms OpenSim's couplers cannot express.

    ``ignore_forces`` / ``ignore_constraints``: OpenSim class names (e.g. ``("HuntCrossleyForce",
    "BushingForce")``, ``("PointOnLineConstraint",)``) of elements mbjax does not model, loaded
    anyway without them: the explicit opt-out, warned and listed in ``OsimInfo.ignored``.  An ignored
    force that has a ``GeometryPath`` (``Delp1990Muscle_Deprecated``, ``Millard2012AccelerationMuscle``, or
    ``Schutte1993Muscle_Deprecated``, which is otherwise modelled) keeps its path (lengths, moment
    arms), with zero tension (kind ``"<class> (ignored)"``).  Kinematics, path geometry and the
    mass matrix do not depend on the ignored elements; forward dynamics and, for constraints, the
    set of reachable poses do.

    ``PointOnLineConstraint`` (each two equations) is eliminated, not ignored
    (:mod:`mbjax.opensim.model.osim_point_on_line`): the file is loaded once with every coordinate independent
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

    ``prior_defaults``: the ``<defaults>`` elements (``xml.etree`` elements) of documents OpenSim reads
    before this model in the same run, oldest first, e.g. a tool's setup file (the OpenSim tools from a
    setup pass theirs). OpenSim's default objects are process-wide, so a muscle or actuator that leaves
    a property out takes the value of the latest default object of its class: the model's own first
    ``<defaults>`` block, then these.
    """
    from ...wrapping.smooth_path import WRAPPINGS, with_wrapping

    if wrapping not in WRAPPINGS:
        raise ValueError(f"load_osim: wrapping must be one of {WRAPPINGS}, got {wrapping!r}")
    kwargs = dict(ignore_wrapping=ignore_wrapping, couplings=couplings, ignore_forces=ignore_forces,
                  ignore_constraints=ignore_constraints, prior_defaults=_defaults_elements(prior_defaults))
    loader = _Loader(path, **kwargs)
    model = loader.build()
    if not loader.point_on_line:
        if independent_coordinates is not None:
            raise ValueError(f"{loader.doc.path}: independent_coordinates is for PointOnLineConstraint "
                             "elimination, and the file has no enforced PointOnLineConstraint")
        return with_path_force_wrapping(with_wrapping(model, wrapping, loader.doc.path), wrapping, loader.doc.path)
    from .osim_point_on_line import eliminate

    model = with_wrapping(eliminate(path, loader, model, kwargs, independent_coordinates), wrapping, loader.doc.path)
    return with_path_force_wrapping(model, wrapping, loader.doc.path)


def _defaults_elements(prior) -> tuple:
    """``prior_defaults`` checked: ``<defaults>`` elements only."""
    out = tuple(prior or ())
    for d in out:
        if getattr(d, "tag", None) != "defaults":
            raise TypeError(f"load_osim: prior_defaults must hold <defaults> XML elements, got {d!r}")
    return out


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
    return model.osim.default
