"""Run-time rules on a model's body parameters, for parameters changed after loading.

``ModelBuilder`` refuses unphysical bodies and files are checked when read (:mod:`mbjax._inertia`); a
model changed afterwards (``eqx.tree_at``, a fit step) is checked here, at call time, by the
dynamics functions: one fused check (:func:`mbjax._checks.all_of`) per call, whatever the batch.
Checked: a finite mass >= 0, a finite centre of mass, a finite symmetric inertia.  Not checked
here: the inertia's positive semidefiniteness and the triangle inequality of its principal moments.
OpenSim's library models do not always satisfy them (``WalkerModel``: a file with them loads with
a warning naming the bodies, as OpenSim uses them as given), and identification in the standard
inertial parameters ends with unobservable moments anywhere (``mbjax.identify``: the torques do not
see them); a singular or indefinite mass matrix is refused by ``forward_dynamics``.
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _checks
from ._model import Model

#: the hint every message ends with
CHANGED = " (changed after loading? eqx.tree_at or a fit step)"


def body_rules(model: Model, where: str) -> list:
    """``(bad, message)`` rules of :func:`mbjax._checks.all_of`: per body, a finite mass >= 0, a
    finite centre of mass, a finite symmetric inertia; a finite gravity."""
    names = model.body_names
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
