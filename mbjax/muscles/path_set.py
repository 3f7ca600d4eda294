"""The path set of a model's muscles: path points and :class:`MusclePaths`, padded and index based.

All muscles are stored in one :class:`MusclePaths` module (points ``(nm, P, 3)``, body indices and
activity tables as static tuples), so lengths and moment arms of every muscle are evaluated by one
vectorised kernel; :mod:`mbjax.muscles.paths` builds it and evaluates it.  The model carries it
in ``model.muscles``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._model import Model
from ..maps._base import AbstractJointMap


@dataclasses.dataclass(frozen=True)
class PathPoint:
    """A point fixed in ``body`` (a body name or ``"ground"``) at ``location`` (body frame, m)."""

    body: str
    location: Sequence[float]
    name: str = ""


@dataclasses.dataclass(frozen=True)
class ConditionalPathPoint(PathPoint):
    """A fixed point that is part of the path only while ``coordinate ∈ [range[0], range[1]]``.

    ``coordinate_map``: for a coordinate that is not one of the model's ``q`` (a coupled
    coordinate), a single joint map of ``q`` whose value is that coordinate (``None``: the
    coordinate is read from ``q``).
    """

    coordinate: str = ""
    range: tuple[float, float] = (-np.inf, np.inf)
    coordinate_map: Any = None


@dataclasses.dataclass(frozen=True)
class MovingPathPoint(PathPoint):
    """A point whose body-frame location components are joint maps of the coordinates.

    ``functions`` is a 3-tuple; entry ``c`` is a single (unstacked) joint map giving component
    ``c`` of the location, or ``None`` to keep ``location[c]``.
    """

    functions: tuple[Any, Any, Any] = (None, None, None)

    def __post_init__(self):
        where = f"MovingPathPoint {self.name or 'unnamed'!r} on {self.body!r}"
        fns = self.functions
        if isinstance(fns, (str, bytes)) or not isinstance(fns, (tuple, list)) or len(fns) != 3:
            raise ValueError(f"{where}: functions must be a 3-tuple (x, y, z), each a single joint map or None "
                             f"(keep location[c]), got {fns!r}"[:300])
        for c, fn in enumerate(fns):
            if fn is not None and (not isinstance(fn, AbstractJointMap) or fn.n_maps != 1):
                raise ValueError(f"{where}: functions[{c}] must be a single (unstacked) joint map of the "
                                 f"coordinates (mbjax.maps) or None, got {type(fn).__name__}")


class MusclePaths(eqx.Module):
    """All musculotendon paths of a model, padded to ``P`` points per muscle.

    Array leaves (differentiable): ``location (nm, P, 3)`` (body frame), ``cond_range (nm, P, 2)``,
    the stacked ``moving_maps`` and per-muscle ``parameters`` (dict of ``(nm,)`` arrays, e.g. the
    OpenSim muscle properties).  Static: names, kinds, body indices (``-1`` = ground), validity,
    conditional-coordinate indices and the slots that moving maps fill.

    ``moving_maps`` and ``cond_maps`` are ``None``, not ``()``, when a model has no such maps: an
    empty-tuple node makes diffrax's ``BacksolveAdjoint`` fail on any vector field whose ``args``
    carry the model (``equinox.tree_at`` swaps it for a marker type that ``lax.stop_gradient``
    rejects: diffrax 0.7, equinox 0.13).
    """

    location: jnp.ndarray
    cond_range: jnp.ndarray
    moving_maps: tuple[AbstractJointMap, ...] | None
    parameters: dict[str, jnp.ndarray]
    names: tuple[str, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    body: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    valid: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    cond_coord: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    #: per moving-map family: ((muscle, point, component), ...) in stack order
    moving_slots: tuple[tuple[tuple[int, int, int], ...], ...] = eqx.field(static=True)
    #: per moving-map family: positions of each map's local inputs in q (padded)
    moving_inputs: tuple[tuple[tuple[int, ...], ...], ...] = eqx.field(static=True)
    point_names: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    #: wrap objects and path wraps (:class:`mbjax.wrapping.path.MuscleWraps`), None without wrapping
    wraps: Any = None
    #: stacked joint maps giving the coordinates conditional points read that are not in ``q``;
    #: ``cond_coord`` indexes ``[q; their values]`` (see :func:`condition_values`)
    cond_maps: tuple[AbstractJointMap, ...] | None = None
    #: per condition-map family: positions of each map's local inputs in q (padded)
    cond_inputs: tuple[tuple[tuple[int, ...], ...], ...] = eqx.field(static=True, default=())

    def __check_init__(self):
        nm, npt = len(self.names), (len(self.body[0]) if self.body else 0)
        shapes = {"location": (self.location, (nm, npt, 3)), "cond_range": (self.cond_range, (nm, npt, 2))}
        for what, (x, expect) in shapes.items():
            if jnp.shape(x) != expect:
                raise ValueError(f"MusclePaths: {what} must have shape {expect} for {nm} muscles of {npt} point "
                                 f"slots, got {jnp.shape(x)} (build it with mbjax.muscles.build_paths)")
        for k, v in self.parameters.items():
            if jnp.shape(v)[:1] != (nm,):
                raise ValueError(f"MusclePaths: parameters[{k!r}] must have one row per muscle ({nm},), got shape "
                                 f"{jnp.shape(v)}")
        for what, rows in (("kinds", self.kinds), ("body", self.body), ("valid", self.valid),
                           ("cond_coord", self.cond_coord), ("point_names", self.point_names)):
            if len(rows) != nm or (what != "kinds" and any(len(r) != npt for r in rows)):
                raise ValueError(f"MusclePaths: {what} must hold one entry per muscle ({nm})"
                                 + ("" if what == "kinds" else f", each of {npt} point slots")
                                 + " (build it with mbjax.muscles.build_paths)")

    @property
    def n_muscles(self) -> int:
        return len(self.names)

    @property
    def n_points(self) -> int:
        return len(self.body[0]) if self.body else 0

    def attachment_sequences(self) -> tuple[tuple[int, ...], ...]:
        """Γ_k (Definition 2): bodies the path touches, in path order, consecutive repeats merged.

        Ground is reported as ``-1`` (the seed's "0").
        """
        out = []
        for bodies, valid in zip(self.body, self.valid):
            seq: list[int] = []
            for b, v in zip(bodies, valid):
                if v and (not seq or seq[-1] != b):
                    seq.append(b)
            out.append(tuple(seq))
        return tuple(out)

    def membership(self) -> tuple[tuple[int, ...], ...]:
        """Λ_i-style padded table: for each muscle the distinct non-ground bodies of Γ_k (Eq. 195).

        Padded with ``-1`` to the widest muscle; shape ``(nm, G)``.
        """
        rows = []
        for seq in self.attachment_sequences():
            uniq = []
            for b in seq:
                if b >= 0 and b not in uniq:
                    uniq.append(b)
            rows.append(uniq)
        width = max([len(r) for r in rows] + [1])
        return tuple(tuple(r + [-1] * (width - len(r))) for r in rows)


def empty_paths() -> MusclePaths:
    """The path set of a model without muscles: ``nm = 0`` (quantities over it are empty arrays)."""
    return MusclePaths(
        location=jnp.zeros((0, 0, 3)),
        cond_range=jnp.zeros((0, 0, 2)),
        moving_maps=None,
        parameters={},
        names=(),
        kinds=(),
        body=(),
        valid=(),
        cond_coord=(),
        moving_slots=(),
        moving_inputs=(),
        point_names=(),
    )


def get_paths(model: Model) -> MusclePaths:
    """The model's :class:`MusclePaths`; a model without muscles has the empty set (``nm = 0``), so
    ``muscle_lengths`` is ``(0,)`` and ``moment_arms`` ``(nq, 0)`` (OpenSim's double pendulum)."""
    paths = model.muscles
    if paths is None:
        return empty_paths()
    if not isinstance(paths, MusclePaths):
        raise ValueError(
            f"model.muscles must be a MusclePaths (use with_muscles()), got {type(paths).__name__}"
        )
    return paths
