"""Which force law each path of a model follows, and the dispatch that evaluates a law over the
muscles of each class (vmapped) and reassembles the ``(nm,)`` results.

* ``Thelen2003Muscle``, ``Millard2012EquilibriumMuscle`` and ``Schutte1993Muscle_Deprecated``: Hill
  muscles with activation and fibre-length states (:mod:`mbjax.muscles.musculotendon`,
  :mod:`mbjax.muscles.schutte1993`).
* ``PathActuator``: OpenSim's ``PathActuator::computeActuation``, tension = control ·
  ``optimal_force`` (default 1), no states and no physiology.  In the muscle functions its control is
  the value given for it in ``activation`` (so a control in [0, 1]); in a muscle-driven simulation it
  is its excitation, as OpenSim's control.  The fibre and tendon fields of its
  :class:`~mbjax.muscles.MuscleState` other than ``tendon_force`` are 0.
* A muscle that ``load_osim(..., ignore_forces=...)`` left out (kind ``"<class> (ignored)"``): zero
  tension, its path kept, the explicit opt-out.

A model with none of these (only ignored muscles, or paths built without a class) has no force to
compute: :func:`by_class` refuses it, naming the paths and their classes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .muscle_state import MuscleState
from .parameters import HILL_KINDS, MILLARD, SCHUTTE, THELEN, hill_parameters, kind_mask
from .path_set import get_paths

#: OpenSim's scalar actuator along a path: tension x · ``optimal_force``, no physiology
PATH_ACTUATOR = "PathActuator"


def path_actuator_properties(paths, dtype=float):
    """``(mask, optimal_force, min_control, max_control)``, ``(nm,)`` each: which paths are
    ``PathActuator`` s and their properties (OpenSim's defaults 1, -inf, +inf where the file
    leaves them out; meaningless on the other rows)."""
    mask = np.asarray([k == PATH_ACTUATOR for k in paths.kinds], bool)
    nm = len(paths.kinds)

    def get(key, default):
        v = paths.parameters.get(key)
        if v is None:
            return jnp.full((nm,), default, dtype)
        v = jnp.asarray(v, dtype)
        return jnp.where(jnp.isnan(v), default, v)

    return mask, get("optimal_force", 1.0), get("min_control", -jnp.inf), get("max_control", jnp.inf)


def tendon_kinds(flags) -> str:
    """'rigid', 'elastic' or 'both': which tendon models a group of muscles needs.

    Decided from the ``ignore_tendon_compliance`` values when they are concrete (a model closed
    over by ``jit``), so an all-rigid model never traces the equilibrium solver; 'both' (each
    muscle picks with ``jnp.where``) when they are traced.  The results are the same either way.
    """
    try:
        f = np.asarray(flags)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError):
        return "both"
    if np.all(f > 0.5):
        return "rigid"
    if np.all(f <= 0.5):
        return "elastic"
    return "both"


def _no_force_law(paths) -> NotImplementedError:
    listed = ", ".join(f"{n!r} ({k})" for n, k in list(zip(paths.names, paths.kinds))[:12])
    more = f" and {paths.n_muscles - 12} more" if paths.n_muscles > 12 else ""
    return NotImplementedError(
        f"no muscle whose force mbjax computes among the model's paths: {listed}{more}; the classes with a force "
        f"law are {THELEN}, {MILLARD}, {SCHUTTE} and {PATH_ACTUATOR} (a muscle loaded with ignore_forces keeps "
        "its path only, with zero tension)")


def by_class(model, fn, *per_muscle, control=None, per_tendon_mode=False):
    """Evaluate ``fn(kind, p, *args)`` vmapped over the muscles of each Hill class and reassemble
    ``(nm,)`` results; rows of other classes are 0.

    ``control``: for a :class:`MuscleState` result, the ``(nm,)`` controls whose ``PathActuator``
    rows give those rows' tension (control · optimal_force); None leaves them 0 (a caller that
    handles path actuators itself).  ``per_tendon_mode``: ``fn`` takes ``tendons=`` ('rigid',
    'elastic' or 'both', :func:`tendon_kinds` of each class's flags).  A model whose paths have no
    force law at all is refused, naming them (module docstring)."""
    paths = get_paths(model)
    nm = paths.n_muscles
    dtype = per_muscle[0].dtype
    if nm == 0:  # a model without muscles: every field empty, as muscle_lengths gives (0,)
        return MuscleState(*(jnp.zeros((0,), dtype) for _ in MuscleState._fields))
    params = hill_parameters(paths)
    out = None
    for kind in HILL_KINDS:
        idx = np.nonzero(kind_mask(paths, kind))[0]
        if idx.size == 0:
            continue
        p = {k: v[idx] for k, v in params.items()}
        if per_tendon_mode:
            mode = tendon_kinds(p["ignore_tendon_compliance"])
            part = jax.vmap(lambda pp, *args: fn(kind, pp, *args, tendons=mode))(p, *(x[idx] for x in per_muscle))
        else:
            part = jax.vmap(lambda pp, *args: fn(kind, pp, *args))(p, *(x[idx] for x in per_muscle))
        if out is None:
            out = jax.tree_util.tree_map(lambda x: jnp.zeros((nm,), dtype), part)
        out = jax.tree_util.tree_map(lambda o, x: o.at[idx].set(x.astype(dtype)), out, part)
    mask, optimal_force, _, _ = path_actuator_properties(paths, dtype)
    actuators = control is not None and mask.any()
    if out is None and not actuators:
        raise _no_force_law(paths)
    if actuators:
        if out is None:
            out = MuscleState(*(jnp.zeros((nm,), dtype) for _ in MuscleState._fields))
        tension = jnp.asarray(control, dtype) * optimal_force
        out = out._replace(tendon_force=jnp.where(jnp.asarray(mask), tension, out.tendon_force))
    return out
