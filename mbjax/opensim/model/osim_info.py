"""What an imported model keeps of its OpenSim file (``model.osim``): the coordinates'
defaults, ranges and roles, the file's provenance, and how OpenSim's scaling acts on the joint
offsets."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax.numpy as jnp


class OsimInfo(eqx.Module):
    """What the importer knows about the OpenSim coordinates (``model.osim``).

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
    #: (:mod:`mbjax.opensim.model.osim_point_on_line`): which constraints, how they were chosen, assembled default
    eliminated: tuple[tuple[str, str], ...] = eqx.field(static=True, default=())
    #: (coordinate, value): the assembled default of those dependent coordinates (the independent
    #: ones keep their file defaults, in ``default``)
    assembled: tuple[tuple[str, float], ...] = eqx.field(static=True, default=())
    #: the model's enabled scalar actuators (``CoordinateActuator``, ``PointActuator``,
    #: ``TorqueActuator`` records of :mod:`mbjax.forces.body_actuators`, file order), read as
    #: OpenSim reads them (:mod:`mbjax.opensim.model.osim_actuators`); disabled ones are left out
    actuators: tuple = eqx.field(static=True, default=())
    #: the file's actuator ``<defaults>`` (:func:`mbjax.opensim.model.osim_actuators.default_records`), which
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
    #: the ForceSet objects the file disables (``appliesForce`` false, 3.x ``isDisabled`` true), in
    #: file order: OpenSim's tools apply no force of them
    disabled_forces: tuple[str, ...] = eqx.field(static=True, default=())
    #: ``(joint class, joint name, (c0, c1, c2))`` of the Ball, Free and Ellipsoid joints, whose rotation
    #: coordinates' speeds are the angular velocity ω_F = E(c0, c1) ċ (:mod:`mbjax.opensim.model.osim_speeds`)
    speed_joints: tuple = eqx.field(static=True, default=())
    #: every coordinate in OpenSim 4's ``CoordinateSet`` order (what its IK tool writes) and
    #: ``(coordinate, joint)`` of each (:mod:`mbjax.opensim.model.osim_motion`), read at load so the
    #: model's tables do not depend on its file afterwards
    coordinate_set_order: tuple[str, ...] = eqx.field(static=True, default=())
    coordinate_joints: tuple[tuple[str, str], ...] = eqx.field(static=True, default=())


class OsimScaling(eqx.Module):
    """The joint offsets of an imported model as OpenSim's uniform scaling sees them
    (``OsimInfo.scaling``, used by :func:`mbjax.analysis.identify.scale_model` and :func:`mbjax.io.write_osim`).

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
