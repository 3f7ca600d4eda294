"""The run-time rules every kinematics call fuses into one check (:func:`mbjax._checks.all_of`).

``q`` finite; each revolute joint axis a unit vector, each joint frame a rigid transform
(:mod:`mbjax._body_rules`); and each joint map's parameters (its array leaves: coefficients, knots,
slopes, a :class:`~mbjax.maps.FunctionMap`'s ``params``) free of NaN, and free of inf except range
ends and padding (``lower``, ``upper``, knots and breaks, where ``±inf`` means "unbounded").  A
model's maps are checked when built; a map changed afterwards (``eqx.tree_at``, a fit step) is
checked here, naming its body.  A user :class:`~mbjax.maps.FunctionMap` is also checked where it is
evaluated (:func:`user_map_values`): NaN or inf in its value or derivatives at ``q`` names the body.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from . import _body_rules, _checks
from ._model import Model

#: map fields where ±inf is a legal value (an unbounded range end, padding of a stack): NaN only is refused
_INF_ALLOWED = ("lower", "upper", "knots", "knots1", "knots2", "breaks")


def check_vector(model: Model, x, name: str = "q"):
    """``x`` as a finite real array of shape ``(nq,)``: shape and dtype at trace time (``ValueError`` naming
    the argument, ``nq`` and the coordinates), NaN/inf at run time while checks are on (:mod:`mbjax._checks`)."""
    return _checks.vector(x, name, model.n_coordinates, "nq", _checks.coordinates_context(model))


def map_rules(model: Model, where: str) -> list:
    """Rules of :func:`mbjax._checks.all_of`: per joint map, parameters free of NaN (and of inf outside
    range ends and padding), one message per map naming its body, family and coordinates."""
    rules = []
    for fi, family in enumerate(model.maps):
        n = family.n_maps
        bodies = model.topology.map_bodies[fi]
        leaves = jax.tree_util.tree_flatten_with_path(eqx.filter(family, eqx.is_inexact_array))[0]
        bad = None
        for path, leaf in leaves:
            if leaf is None or not jnp.size(leaf):
                continue
            field = getattr(path[-1], "name", "") if path else ""
            b = jnp.isnan(leaf) if field in _INF_ALLOWED else ~jnp.isfinite(leaf)
            b = jnp.any(jnp.reshape(b, (n, -1)), axis=1) if leaf.ndim and leaf.shape[0] == n else \
                jnp.broadcast_to(jnp.any(b), (n,))
            bad = b if bad is None else bad | b
        if bad is not None:
            rules.append((bad, [f"{where}: the joint map of body {model.body_names[b]!r} ({type(family).__name__} "
                                f"of {c}) has parameters that are NaN or inf{_body_rules.CHANGED}"
                                for b, c in zip(bodies, family.coordinates)]))
    return rules


def axis_rules(model: Model, where: str) -> list:
    """Rules of :func:`mbjax._checks.all_of`: every revolute joint's axis a unit vector (edited?), every
    prismatic one finite (its length is a scale: OpenSim's scaling multiplies it); every joint frame a
    rigid transform; every joint map's parameters finite (:func:`map_rules`); the shapes at trace time."""
    _checks.as_array(model.axis, f"{where}: model.axis", (model.n_bodies, 3), ("nb", 3), " (one joint axis per body)")
    if not model.n_bodies:
        return []
    norm2 = jnp.sum(model.axis * model.axis, -1)
    bad = ~jnp.where(jnp.asarray(model.topology.is_revolute()), jnp.abs(norm2 - 1.0) <= 1e-4, jnp.isfinite(norm2))
    return ([(bad, [f"{where}: the joint axis of body {b!r} is not a unit vector (changed after loading? "
                    "eqx.tree_at); normalize it" for b in model.body_names])]
            + _body_rules.joint_frame_rules(model, where) + map_rules(model, where))


def check_pose(model: Model, q, where: str, rules=()):
    """:func:`check_vector` of ``q`` with the joint axes, frames, maps and ``rules`` in one fused run-time check."""
    ctx = _checks.coordinates_context(model)
    q = _checks.as_array(q, "q", (model.n_coordinates,), ("nq",), ctx)
    return _checks.all_of(q, [_checks.not_finite(q, "q", ctx), *axis_rules(model, where), *rules])


def user_map_values(model: Model, family, bodies, values):
    """``values = (f, g, h)`` of a :class:`~mbjax.maps.FunctionMap` family (map axis first, batch last)
    unchanged; a run-time error (checks on) naming the body when the user's function gave NaN or inf
    in its value, gradient or Hessian (its parameters are finite: :func:`map_rules`); ``bodies`` the
    family's bodies (``model.topology.map_bodies``)."""
    if type(family).__name__ != "FunctionMap" or not _checks.checks_enabled():
        return values
    f, g, h = values
    n = f.shape[0]
    bad = (~jnp.isfinite(f) | jnp.any(~jnp.isfinite(jnp.reshape(g, (n, -1) + f.shape[1:])), axis=1)
           | jnp.any(~jnp.isfinite(jnp.reshape(h, (n, -1) + f.shape[1:])), axis=1))
    return _checks.all_of(values, [(bad, [f"the joint map of body {model.body_names[b]!r} (FunctionMap of {c}) "
                                          "returned NaN or inf (its value or derivatives) at this q: the "
                                          "function is not defined there (a square root or logarithm of a "
                                          "negative number?)" for b, c in zip(bodies, family.coordinates)])])
