"""Every OpenSim coordinate of an imported model (its ``model.osim``), as a function of its
generalized coordinates ``q``.

An imported model's ``q`` holds the independent coordinates only (:func:`mbjax.io.load_osim`): a coupled
coordinate is its coupler's function of ``q`` and a locked one is held at its default.  OpenSim's
tools still read and write every coordinate (an IK motion file holds them all; a
``CoordinateActuator`` may act on a coupled or locked one), so this module gives

* :func:`coordinate_names`: all coordinates in the model file's order, and their motion types;
* :func:`coordinate_values`: c(q), every coordinate's value (the coupler maps evaluated);
* :func:`coordinate_jacobian`: ∂c/∂q ``(n_all, nq)``.  The generalized force of a unit force on
  coordinate c_k is row k of it (virtual work: δW = F δc_k = F ∂c_k/∂q δq); a locked
  coordinate's row is zero (its force goes into the lock, as OpenSim's constraint absorbs it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _info(model):
    info = getattr(model, "osim", None)
    if info is None:
        raise ValueError("the model was not imported from an OpenSim file (no model.osim): "
                         "it has no coordinates beyond q")
    return info


def coordinate_names(model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(names, motion_types)`` of every OpenSim coordinate, in the model file's order; the motion
    types OpenSim 4 derives from the joints (:mod:`mbjax.opensim.model.osim_motion`, read at load)."""
    info = _info(model)
    kinds = dict(zip(tuple(model.coordinate_names), info.motion_types))
    kinds.update(zip(info.other_names, info.other_motion_types))
    names = tuple(n for n, _ in info.roles)
    return names, tuple(kinds[n] for n in names)


def coordinate_values(model, q, names=None):
    """c(q): the values ``(n,)`` at ``q (nq,)`` of the OpenSim coordinates ``names`` (default: every
    one, in file order)."""
    info = _info(model)
    q = jnp.asarray(q)
    q_names = list(model.coordinate_names)
    if q.shape != (len(q_names),):
        raise ValueError(f"coordinate_values: q must have shape ({len(q_names)},), got {q.shape}")
    other = dict(zip(info.other_names, info.other_maps or ()))
    out = []
    for name in (names if names is not None else [n for n, _ in info.roles]):
        if name in other:
            m = other[name]
            if m is None:
                raise NotImplementedError(f"coordinate {name!r} is eliminated by a PointOnLineConstraint: its value "
                                          "as a function of q is not available outside the kinematics")
            idx = np.asarray([q_names.index(c) for c in m.coordinates[0]], dtype=np.int32)
            out.append(m.value(q[idx][None, :])[0].astype(q.dtype))
        elif name in q_names:
            out.append(q[q_names.index(name)])
        else:
            raise ValueError(f"coordinate_values: {name!r} is not a coordinate of the model")
    return jnp.stack(out)


def coordinate_jacobian(model, q):
    """∂c/∂q ``(n_all, nq)`` at ``q`` (module docstring): identity rows for the coordinates in
    ``q``, the coupler's gradient for a coupled one, zeros for a locked one."""
    return jax.jacfwd(lambda x: coordinate_values(model, x))(jnp.asarray(q))
