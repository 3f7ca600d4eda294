"""Run-time rules on a model's body parameters, for parameters changed after loading.

``ModelBuilder`` refuses unphysical bodies and files are checked when read (:mod:`mbjax._inertia`); a
model changed afterwards (``eqx.tree_at``, a fit step) is checked here, at call time, by the
dynamics functions: one fused check (:func:`mbjax._checks.all_of`) per call, whatever the batch.
Checked: a finite mass >= 0, a finite centre of mass, a finite symmetric inertia with moments
>= 0 on its diagonal.  Not checked here: positive semidefiniteness and the triangle inequality of
the principal moments, which OpenSim's library models do not always satisfy (``WalkerModel``): a file
with them loads with a warning naming the bodies (as OpenSim uses them as given), so a call must
not refuse them either.
"""

from __future__ import annotations

import jax.numpy as jnp

from . import _checks
from ._model import Model

#: the hint every message ends with
CHANGED = " (changed after loading? eqx.tree_at or a fit step)"


def body_rules(model: Model, where: str) -> list:
    """``(bad, message)`` rules of :func:`mbjax._checks.all_of`: per body, a finite mass >= 0, a
    finite centre of mass, a finite symmetric inertia with a diagonal >= 0; a finite gravity."""
    names = model.body_names
    dtype = jnp.result_type(model.mass)
    tol = 100 * _checks.dtype_eps(dtype)
    scale = jnp.max(jnp.abs(model.inertia), axis=(-2, -1))
    asymmetric = jnp.max(jnp.abs(model.inertia - jnp.swapaxes(model.inertia, -1, -2)), axis=(-2, -1)) > tol * scale
    unphysical = jnp.any(jnp.diagonal(model.inertia, axis1=-2, axis2=-1) < -tol * scale[..., None], axis=-1)
    bad_mass = ~jnp.isfinite(model.mass) | (model.mass < 0)
    bad_com = ~jnp.all(jnp.isfinite(model.com), axis=-1)
    bad_inertia = ~jnp.all(jnp.isfinite(model.inertia), axis=(-2, -1)) | asymmetric | unphysical
    rules = []
    for b, name in enumerate(names):
        rules.append((bad_mass[b], f"{where}: body {name!r} has a mass that is NaN, inf or < 0{CHANGED}"))
        rules.append((bad_com[b], f"{where}: body {name!r} has a centre of mass that is not finite{CHANGED}"))
        rules.append((bad_inertia[b], f"{where}: body {name!r} has an inertia that is not finite, not symmetric, "
                                      f"or with a negative moment on its diagonal{CHANGED}"))
    rules.append((~jnp.all(jnp.isfinite(model.gravity)), f"{where}: the model's gravity is not finite{CHANGED}"))
    return rules
