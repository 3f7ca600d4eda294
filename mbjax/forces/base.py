"""The force-element contract and the model's force set (``model.forces``).

A force element is an ``eqx.Module`` (array leaves: parameters; static: topology) that returns
its generalized force ``Q (nq,)`` on the model's coordinates; it enters Eq. 198 as part of
``Q_ext``.  Most OpenSim forces are *generalized-coordinate springs*: a few element coordinates
``b(q)`` (an OpenSim coordinate's value, a spring length, a bushing's six deflections) and a law
``f(b, ḃ)`` giving the generalized force on them.  Their generalized force on the model's ``q`` is
the virtual-work (chain-rule) projection ``Q = (∂b/∂q)ᵀ f(b, ḃ)`` with ``ḃ = (∂b/∂q) q̇`` (one
``jax.jvp`` and one ``jax.vjp`` of ``b``).  So an element on an OpenSim coordinate that the
importer eliminated (a coupled coordinate ``c = g(q)``) acts through its map:
``Q = f(g(q), ∇g·q̇) ∇g``, which is what OpenSim's coupler constraint transmits.

On an OpenSim model, a coordinate whose Simbody speed is not its rate, a rotation angle of a ``BallJoint``,
``FreeJoint`` or ``EllipsoidJoint`` (speeds u = ω_F = E(q) q̇), is OpenSim's element coordinate by its value
and *speed*: ``ḃ_k = (E q̇)_j`` and the force acts on that speed, ``Q = Eᵀ e_j f_k`` on the joint's three
angles (:attr:`CoordinateValues.speed_rows`), as OpenSim applies a mobility force.

Each element class holds a *stack* of ``n`` elements of one kind (vectorised, no per-element
Python loop).  :class:`ForceSet` is the tuple of stacks; :func:`model_forces` sums them.
"""

from __future__ import annotations

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import body_poses
from .._model import Model, angular_speed_joints, require_model
from .._spatial import xyz_angle_rate_matrix
from .. import _checks


class ForceElement(eqx.Module):
    """A stack of force elements of one kind: ``generalized_force(model, q, qd) -> (nq,)``."""

    @abc.abstractmethod
    def generalized_force(self, model: Model, q, qd):
        """Generalized force ``Q (nq,)`` of all elements of this stack."""

    @property
    def names(self) -> tuple[str, ...]:
        """Element names (one per element of the stack): the static ``element_names`` field."""
        return self.element_names

    def value_rules(self, model: Model, q) -> list:
        """Run-time rules ``(bad, message)`` of :func:`mbjax._checks.all_of` at ``q`` (none by default)."""
        del model, q
        return []


class CoordinateSpring(ForceElement):
    """An element acting on element coordinates ``b(q)`` with the law ``f(b, ḃ)`` (see module notes)."""

    @abc.abstractmethod
    def element_coordinates(self, model: Model, q):
        """``b(q)``, ``(m,)``."""

    @abc.abstractmethod
    def law(self, b, bdot):
        """Generalized force on the element coordinates, ``(m,)``."""

    def element_state(self, model: Model, q, qd):
        """``(b, ḃ)``: ḃ the OpenSim speed on a Ball/Free/Ellipsoid angle (module notes)."""
        b, bdot = jax.jvp(lambda x: self.element_coordinates(model, x), (q,), (qd,))
        for k, idx, j in self._speed_rows():
            bdot = bdot.at[k].set(xyz_angle_rate_matrix(q[idx[0]], q[idx[1]])[j] @ qd[np.asarray(idx)])
        return b, bdot

    def generalized_force(self, model: Model, q, qd):
        b, bdot = self.element_state(model, q, qd)
        _, pullback = jax.vjp(lambda x: self.element_coordinates(model, x), q)
        f = self.law(b, bdot)
        if jnp.shape(f) != b.shape:
            raise ValueError(f"{type(self).__name__}.law must return one force per element coordinate, shape "
                             f"{b.shape} (like element_coordinates), got {jnp.shape(f)}")
        f = jnp.asarray(f).astype(b.dtype)
        tau = pullback(f)[0]
        for k, idx, j in self._speed_rows():  # a mobility force on ω_F's component j: Eᵀ e_j f, not e_angle f
            row = xyz_angle_rate_matrix(q[idx[0]], q[idx[1]])[j]
            tau = tau.at[idx[j]].add(-f[k]).at[np.asarray(idx)].add(f[k] * row)
        return tau

    def _speed_rows(self):
        coords = getattr(self, "coordinates", None)
        return getattr(coords, "speed_rows", ()) if isinstance(coords, CoordinateValues) else ()


class CoordinateValues(eqx.Module):
    """Values of ``n`` OpenSim coordinates as functions of the model's ``q``.

    An independent coordinate is ``q[index]``; an eliminated (coupled) one is its joint map
    (``maps[k]`` reading ``q[inputs[k]]``, for the entries ``dependent[k]``).  Locked coordinates
    are not represented (an element on one is dropped by the importer: the lock absorbs its force).
    ``maps`` is ``None`` when no coordinate is coupled (an empty tuple breaks diffrax's
    ``BacksolveAdjoint``; see :class:`mbjax.muscles.paths.MusclePaths`).  ``built_for``: the
    coordinate names of the model the indices refer to (``None``: unknown).  ``speed_rows``:
    ``(element k, (i0, i1, i2), j)`` for an element on angle j of a Ball/Free/Ellipsoid joint whose
    angles are ``q[i0], q[i1], q[i2]`` (module notes), from the model's ``osim.speed_joints``.
    """

    index: tuple[int, ...] = eqx.field(static=True)
    dependent: tuple[int, ...] = eqx.field(static=True)
    inputs: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    maps: tuple | None = None
    built_for: tuple[str, ...] | None = eqx.field(static=True, default=None)
    speed_rows: tuple[tuple[int, tuple[int, int, int], int], ...] = eqx.field(static=True, default=())

    def __call__(self, q):
        need = 1 + max(self.index + tuple(i for inp in self.inputs for i in inp), default=-1)
        if jnp.ndim(q) != 1 or jnp.shape(q)[0] < need:
            raise ValueError(f"CoordinateValues: q must be the model's coordinate vector (nq,) with nq >= {need} "
                             f"(it reads q[{need - 1}]), got shape {jnp.shape(q)}")
        out = q[np.asarray(self.index, dtype=np.int32)]
        for k, inp, m in zip(self.dependent, self.inputs, self.maps or ()):
            out = out.at[k].set(m.value(q[np.asarray(inp, dtype=np.int32)][None])[0].astype(q.dtype))
        return out

    @classmethod
    def one_each(cls, model: Model, coordinates) -> "CoordinateValues":
        """:meth:`of` for element constructors: a lone name is one element's coordinate."""
        return cls.of(model, (coordinates,) if isinstance(coordinates, str) else coordinates)

    @classmethod
    def of(cls, model: Model, coordinates) -> "CoordinateValues":
        """``coordinates``: names of the model's coordinates, or joint maps (single-map stacks) of them."""
        from ..maps import AbstractJointMap

        if isinstance(coordinates, (str, AbstractJointMap)):
            raise TypeError(f"CoordinateValues.of: coordinates must be a list of names or joint maps (one per "
                            f"element), got a single {type(coordinates).__name__} {coordinates!r:.60}")
        index, dependent, inputs, maps = [], [], [], []
        for k, c in enumerate(coordinates):
            if isinstance(c, str):
                index.append(model.coordinate_index(c))
                continue
            if not isinstance(c, AbstractJointMap) or c.n_maps != 1:
                raise TypeError(f"CoordinateValues.of: coordinates[{k}] must be a coordinate name or a single joint "
                                f"map of the model's coordinates, got {type(c).__name__} {c!r:.60}")
            index.append(0)
            dependent.append(k)
            inputs.append(tuple(model.coordinate_index(n) for n in c.coordinates[0]))
            maps.append(c)
        return cls(tuple(index), tuple(dependent), tuple(inputs), tuple(maps) or None, tuple(model.coordinate_names),
                   _speed_rows(model, coordinates))


def _speed_rows(model: Model, coordinates) -> tuple:
    """:attr:`CoordinateValues.speed_rows` of ``coordinates`` on an OpenSim model; an element on an angle
    of a joint whose other angles are not all in ``q`` (locked or coupled) is refused naming both."""
    joints = getattr(getattr(model, "osim", None), "speed_joints", None)
    rows = []
    for kind, joint, angles, idx, missing in angular_speed_joints(joints, model.coordinate_names):
        for k, c in enumerate(coordinates):
            if not isinstance(c, str) or c not in angles:
                continue
            if missing:
                raise NotImplementedError(f"a force on {c!r}, a rotation coordinate of the {kind} {joint!r}, whose "
                                          f"angles {list(missing)} are not in q (locked or coupled): OpenSim applies it "
                                          "on the joint's angular velocity, which mbjax maps only when all three are "
                                          "independent")
            rows.append((k, idx, angles.index(c)))
    return tuple(rows)


def frame_poses(model: Model, q, bodies, x_body_frame):
    """World poses ``(n, 4, 4)`` of frames fixed on ``bodies`` (static indices, ``-1`` = ground)."""
    poses = body_poses(model, q)
    poses = jnp.concatenate([poses, jnp.eye(4, dtype=poses.dtype)[None]], axis=0)
    idx = np.where(np.asarray(bodies) < 0, model.n_bodies, np.asarray(bodies)).astype(np.int32)
    return poses[idx] @ x_body_frame.astype(poses.dtype)


class ForceSet(eqx.Module):
    """The model's force elements (``model.forces``): a tuple of element stacks."""

    elements: tuple[ForceElement, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for e in self.elements for n in e.names)

    def generalized_force(self, model: Model, q, qd):
        out = jnp.zeros_like(q)
        for e in self.elements:  # one entry per element *kind*
            out = out + e.generalized_force(model, q, qd)
        return out


def check_built_for(model: Model, element: ForceElement, where: str):
    """Refuse an element whose coordinate indices were built for a model with other coordinates."""
    built_for = getattr(getattr(element, "coordinates", None), "built_for", None)
    if built_for is not None and tuple(built_for) != tuple(model.coordinate_names):
        raise ValueError(f"{where}: {type(element).__name__} {tuple(element.names)} was built for a model with "
                         f"coordinates {tuple(built_for)}, not this model's {tuple(model.coordinate_names)}; "
                         "build it with this model (its coordinate indices would act on other coordinates)")


def with_force_elements(model: Model, *elements: ForceElement) -> Model:
    """A copy of ``model`` whose force set also holds ``elements`` (stacks of one kind each)."""
    require_model(model, "with_force_elements")
    for e in elements:
        if e is not None and not isinstance(e, ForceElement):
            raise TypeError(f"with_force_elements: {type(e).__name__} {str(e)[:80]!r} is not a ForceElement "
                            "(mbjax.forces: CoordinateSpring, HuntCrossleyForce, ...)")
        if e is not None:
            check_built_for(model, e, "with_force_elements")
    old = model.forces if model.forces is not None else ForceSet()
    new = ForceSet(tuple(old.elements) + tuple(e for e in elements if e is not None))
    names = new.names
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"with_force_elements: force element name(s) {twice} occur more than once (the "
                         "same element given twice, or already in the model's forces); OpenSim refuses duplicate "
                         "names in a ForceSet: give each element once, under its own name")
    return model.replace(forces=new)


@eqx.filter_jit
def _model_forces(model: Model, q, qd):
    out, rules = jnp.zeros_like(q), []
    for e in model.forces.elements:
        part = e.generalized_force(model, q, qd)
        rules += e.value_rules(model, q)
        rules.append(_checks.not_finite(part, f"model_forces: the generalized force of {type(e).__name__} "
                                              f"{tuple(e.names)}", " at this state (a singular force law, such as 1/q "
                                              "at q = 0?); fix the element's law or keep the state away from it"))
        out = out + part
    return _checks.all_of(out, rules)


def model_forces(model: Model, q, qd):
    """Generalized force ``Q (nq,)`` of the model's force elements (``model.forces``) at ``(q, q̇)``.

    Zero for a model without any.  Add it to the right side of Eq. 198; for :func:`mbjax.simulate`
    pass ``forces=ModelForces(model)``.
    """
    require_model(model, "model_forces")
    ctx = _checks.coordinates_context(model)
    q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)
    if not jnp.issubdtype(q.dtype, jnp.inexact):
        q = q.astype(float)
    qd = _checks.as_array(qd, "qd", (model.n_coordinates,), ("nq",), ctx).astype(q.dtype)
    q = _checks.all_of(q, [_checks.not_finite(q, "model_forces: q", ctx),
                           _checks.not_finite(qd, "model_forces: qd", ctx)])
    fs = model.forces
    if fs is None:
        return jnp.zeros_like(q)
    for e in fs.elements:
        check_built_for(model, e, "model_forces")
    return _model_forces(model, q, qd)


class ModelForces(eqx.Module):
    """``forces(t, q, q̇)`` for :func:`mbjax.simulate`: the model's force elements.

    ``simulate(model, q0, qd0, t0, t1, forces=ModelForces(model))``.  The model's arrays are
    dynamic leaves: a new ``ModelForces`` of a model with new parameters does not recompile.
    """

    model: Model

    def __call__(self, t, q, qd):
        del t
        return model_forces(self.model, q, qd)
