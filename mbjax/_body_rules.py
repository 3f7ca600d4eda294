"""Run-time rules on a model's body parameters, for parameters changed after loading.

``ModelBuilder`` refuses unphysical bodies and files are checked when read (:mod:`mbjax._inertia`); a
model changed afterwards (``eqx.tree_at``, a fit step) is checked here, at call time, by the
dynamics functions: one fused check (:func:`mbjax._checks.all_of`) per call, whatever the batch.
Checked: a finite mass >= 0, a finite centre of mass, a finite symmetric inertia, each of its
shape and real; with the joint axes (every kinematics call), each joint frame (``model.offset``) a
finite rigid transform.  Not checked
here: the inertia's positive semidefiniteness and the triangle inequality of its principal moments.
OpenSim's library models do not always satisfy them (``WalkerModel``: a file with them loads with
a warning naming the bodies, as OpenSim uses them as given), and identification in the standard
inertial parameters ends with unobservable moments anywhere (``mbjax.analysis.identify``: the torques do not
see them); a singular or indefinite mass matrix is refused by ``forward_dynamics``.
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _checks
from ._model import Model

#: the hint every message ends with
CHANGED = " (changed after loading? eqx.tree_at or a fit step)"


def model_array(x, name: str, shape, dims, context: str = ""):
    """A model parameter as a real array of ``shape`` (trace time): a list, a complex array or a wrong shape
    set with ``eqx.tree_at`` or ``Model.replace`` is refused naming the field (``name``)."""
    if not hasattr(x, "dtype"):
        raise TypeError(f"{name} must be an array of shape {_checks._fmt(dims)}{context}, got {type(x).__name__} "
                        f"(give jnp.asarray(...)){CHANGED}")
    if not (jnp.issubdtype(x.dtype, jnp.floating) or jnp.issubdtype(x.dtype, jnp.integer)):
        raise ValueError(f"{name} must be a real (integer or floating) array, got dtype {x.dtype}{CHANGED}")
    return _checks.as_array(x, name, shape, dims, context + CHANGED)


def joint_frame_rules(model: Model, where: str) -> list:
    """Rules of :func:`mbjax._checks.all_of`: every joint frame (``model.offset``) a finite rigid transform
    [[R, p], [0, 0, 0, 1]] with R a proper rotation (to 1e-4, as the axis rule); the shape at trace time."""
    nb = model.n_bodies
    off = model_array(model.offset, f"{where}: model.offset", (nb, 4, 4), ("nb", 4, 4), " (one joint frame per body)")
    rot = off[:, :3, :3]
    gram = jnp.einsum("bki,bkj->bij", rot, rot) - jnp.eye(3, dtype=rot.dtype)
    det = jnp.einsum("bi,bi->b", jnp.cross(rot[:, :, 0], rot[:, :, 1]), rot[:, :, 2])
    row = off[:, 3] - jnp.asarray([0.0, 0.0, 0.0, 1.0], off.dtype)
    bad = (~jnp.all(jnp.isfinite(off), axis=(-2, -1)) | (jnp.max(jnp.abs(gram), axis=(-2, -1)) > 1e-4)
           | (det < 0) | (jnp.max(jnp.abs(row), axis=-1) > 1e-4))
    return [(bad, [f"{where}: the joint frame (model.offset) of body {b!r} is not a finite rigid transform "
                   f"[[R, p], [0, 0, 0, 1]] with R a proper rotation{CHANGED}" for b in model.body_names])]


def body_rules(model: Model, where: str) -> list:
    """``(bad, message)`` rules of :func:`mbjax._checks.all_of`: per body, a finite mass >= 0, a
    finite centre of mass, a finite symmetric inertia; a finite gravity.  Shapes and dtypes at trace time."""
    names = model.body_names
    nb, ctx = model.n_bodies, _checks.names_context("bodies", names)
    model_array(model.mass, f"{where}: model.mass", (nb,), ("nb",), ctx)
    model_array(model.com, f"{where}: model.com", (nb, 3), ("nb", 3), ctx)
    model_array(model.inertia, f"{where}: model.inertia", (nb, 3, 3), ("nb", 3, 3), ctx)
    dtype = jnp.result_type(model.mass)
    tol = 100 * _checks.dtype_eps(dtype)
    scale = jnp.max(jnp.abs(model.inertia), axis=(-2, -1))
    asymmetric = jnp.max(jnp.abs(model.inertia - jnp.swapaxes(model.inertia, -1, -2)), axis=(-2, -1)) > tol * scale
    bad_mass = ~jnp.isfinite(model.mass) | (model.mass < 0)
    bad_com = ~jnp.all(jnp.isfinite(model.com), axis=-1)
    bad_inertia = ~jnp.all(jnp.isfinite(model.inertia), axis=(-2, -1)) | asymmetric
    rules = [(bad_mass, [f"{where}: body {name!r} has a mass that is NaN, inf or < 0{CHANGED}" for name in names]),
             (bad_com, [f"{where}: body {name!r} has a centre of mass that is not finite{CHANGED}" for name in names]),
             (bad_inertia, [f"{where}: body {name!r} has an inertia that is not finite or not symmetric{CHANGED}"
                            for name in names])]
    return rules
