"""Hill-type muscle parameters: OpenSim's property names and defaults, filled per muscle class.

``load_osim`` stores every scalar property of a muscle element in ``MusclePaths.parameters``
(``(nm,)`` arrays, NaN where the file leaves a property out), the curve properties of a
``Millard2012EquilibriumMuscle`` under ``"<CurveElement>.<property>"`` (e.g.
``"TendonForceLengthCurve.strain_at_one_norm_force"``) and the flags ``ignore_tendon_compliance``
and ``ignore_activation_dynamics`` as 0/1.  :func:`hill_parameters` replaces each NaN by the
OpenSim 4.6 default of the muscle's class (``Muscle``, ``Thelen2003Muscle``,
``Millard2012EquilibriumMuscle`` and its curve objects; the optional Millard curve properties by
the formulas of ``FiberForceLengthCurve`` / ``TendonForceLengthCurve::ensureCurveUpToDate``;
``Schutte1993Muscle_Deprecated``'s scalars and, when no muscle's file gave them, its default
curves as padded arrays, see :mod:`mbjax.muscles.schutte1993`), with ``jnp.where`` so the given
parameters stay differentiable leaves.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .._model import Model
from .path_set import MusclePaths, get_paths
from .schutte1993 import CURVES as SCHUTTE_CURVES
from .schutte1993 import PASSIVE_GIVEN, SCHUTTE, SCHUTTE_DEFAULTS, curve_parameters

THELEN = "Thelen2003Muscle"
MILLARD = "Millard2012EquilibriumMuscle"

#: ``Muscle::constructProperties``
MUSCLE_DEFAULTS = {
    "max_isometric_force": 1000.0,
    "optimal_fiber_length": 0.1,
    "tendon_slack_length": 0.2,
    "pennation_angle_at_optimal": 0.0,
    "max_contraction_velocity": 10.0,
    "ignore_tendon_compliance": 0.0,
    "ignore_activation_dynamics": 0.0,
}

#: ``Thelen2003Muscle::constructProperties``
THELEN_DEFAULTS = {
    "FmaxTendonStrain": 0.04,
    "FmaxMuscleStrain": 0.6,
    "KshapeActive": 0.45,
    "KshapePassive": 5.0,
    "Af": 0.25,
    "Flen": 1.4,
    "fv_linear_extrap_threshold": 0.95,
    "maximum_pennation_angle": math.acos(0.1),
    "activation_time_constant": 0.015,
    "deactivation_time_constant": 0.050,
    "minimum_activation": 0.01,
}

#: ``Millard2012EquilibriumMuscle::constructProperties`` and its curves' ``constructProperties``
MILLARD_DEFAULTS = {
    "fiber_damping": 0.1,
    "activation_time_constant": 0.010,
    "deactivation_time_constant": 0.040,
    "minimum_activation": 0.01,
    "maximum_pennation_angle": math.acos(0.1),
    "ActiveForceLengthCurve.min_norm_active_fiber_length": 0.47 - 0.0259,
    "ActiveForceLengthCurve.transition_norm_fiber_length": 0.73,
    "ActiveForceLengthCurve.max_norm_active_fiber_length": 1.8123,
    "ActiveForceLengthCurve.shallow_ascending_slope": 0.8616,
    "ActiveForceLengthCurve.minimum_value": 0.1,
    "ForceVelocityCurve.concentric_slope_at_vmax": 0.0,
    "ForceVelocityCurve.concentric_slope_near_vmax": 0.25,
    "ForceVelocityCurve.isometric_slope": 5.0,
    "ForceVelocityCurve.eccentric_slope_at_vmax": 0.0,
    "ForceVelocityCurve.eccentric_slope_near_vmax": 0.15,
    "ForceVelocityCurve.max_eccentric_velocity_force_multiplier": 1.4,
    "ForceVelocityCurve.concentric_curviness": 0.6,
    "ForceVelocityCurve.eccentric_curviness": 0.9,
    "FiberForceLengthCurve.strain_at_zero_force": 0.0,
    "FiberForceLengthCurve.strain_at_one_norm_force": 0.7,
    "TendonForceLengthCurve.strain_at_one_norm_force": 0.049,
}

#: optional Millard curve properties, computed from others when absent
_MILLARD_OPTIONAL = (
    "FiberForceLengthCurve.stiffness_at_low_force",
    "FiberForceLengthCurve.stiffness_at_one_norm_force",
    "FiberForceLengthCurve.curviness",
    "TendonForceLengthCurve.stiffness_at_one_norm_force",
    "TendonForceLengthCurve.norm_force_at_toe_end",
    "TendonForceLengthCurve.curviness",
)

#: muscle classes with activation and fibre-length states (``muscle_forces``, simulation)
HILL_KINDS = (THELEN, MILLARD, SCHUTTE)


def _paths(obj):
    return obj if isinstance(obj, MusclePaths) else get_paths(obj)


#: each class's defaults (the keys whose values every muscle of that class holds once built)
_CLASS_DEFAULTS = {THELEN: THELEN_DEFAULTS, MILLARD: MILLARD_DEFAULTS, SCHUTTE: SCHUTTE_DEFAULTS}


def holds_value(kind: str, key: str) -> bool:
    """Whether every muscle of class ``kind`` holds a value of ``key`` once built (given or default)."""
    return key in MUSCLE_DEFAULTS or key in _CLASS_DEFAULTS.get(kind, {})


def held_mask(paths, key: str) -> np.ndarray:
    """Static ``(nm,)``: the rows whose Hill class holds a value of ``key`` (PathActuators hold none)."""
    return np.asarray([k in HILL_KINDS and holds_value(k, key) for k in paths.kinds], bool)


def hill_core_parameters(paths) -> tuple:
    """Every per-muscle number ``(nm,)`` a muscle's class holds (0 on the other rows, a PathActuator's
    among them): the values a NaN or inf of which (checks off) makes the muscle's state NaN."""
    p, out = hill_parameters(paths), []
    for key, v in p.items():
        held = held_mask(paths, key)
        if jnp.ndim(v) == 1 and held.any() and key not in ("min_control", "max_control"):
            out.append(jnp.where(jnp.asarray(held), v, 0.0))
    return tuple(out)


def kind_mask(obj, kind: str) -> np.ndarray:
    """Static boolean mask ``(nm,)`` of the muscles of OpenSim class ``kind``."""
    return np.asarray([k == kind for k in _paths(obj).kinds], dtype=bool)


def check_parameter_shapes(paths: MusclePaths, where: str) -> None:
    """Refuse (``ValueError``, at trace time) a parameter array that is not one value per muscle:
    ``(nm,)`` (a curve's table: ``(nm, k)``), as an array edited into a model may be."""
    nm = paths.n_muscles
    per_muscle = set(MUSCLE_DEFAULTS) | set(THELEN_DEFAULTS) | set(MILLARD_DEFAULTS) | set(SCHUTTE_DEFAULTS)
    for key, v in paths.parameters.items():
        shape = tuple(jnp.shape(v))
        if shape[:1] != (nm,) or (key in per_muscle and len(shape) != 1):
            names = ", ".join(repr(n) for n in paths.names[:8]) + (", ..." if nm > 8 else "")
            raise ValueError(f"{where}: muscle parameter {key!r} must have shape (nm,) = ({nm},), one value per "
                             f"muscle ({names}), got {shape}: was the model changed after loading (eqx.tree_at)? "
                             "Give one value per muscle")


def hill_parameters(obj) -> dict:
    """Every Hill parameter of every muscle as an ``(nm,)`` array, OpenSim defaults filled in.

    ``obj`` is a model with muscles or its :class:`~mbjax.muscles.MusclePaths`.  Keys absent for a
    class (e.g. ``KshapeActive`` for a Millard muscle) are filled with that class's value where it
    has one and NaN elsewhere.
    """
    if not isinstance(obj, (MusclePaths, Model)):
        raise TypeError(f"hill_parameters: expected a model with muscles or its MusclePaths, got {type(obj).__name__}")
    paths = _paths(obj)
    check_parameter_shapes(paths, "hill_parameters")
    given = paths.parameters
    nm = paths.n_muscles
    dtype = paths.location.dtype
    thelen = jnp.asarray(kind_mask(paths, THELEN))
    millard = jnp.asarray(kind_mask(paths, MILLARD))
    schutte_rows = kind_mask(paths, SCHUTTE)
    schutte = jnp.asarray(schutte_rows)

    def get(key):
        v = given.get(key)
        return jnp.full((nm,), jnp.nan, dtype) if v is None else jnp.asarray(v, dtype)

    out = {}
    keys = set(MUSCLE_DEFAULTS) | set(THELEN_DEFAULTS) | set(MILLARD_DEFAULTS) | set(SCHUTTE_DEFAULTS)
    for key in sorted(keys):
        default = jnp.where(thelen, THELEN_DEFAULTS.get(key, jnp.nan),
                            jnp.where(millard, MILLARD_DEFAULTS.get(key, jnp.nan),
                                      jnp.where(schutte, SCHUTTE_DEFAULTS.get(key, jnp.nan), jnp.nan)))
        if key in MUSCLE_DEFAULTS:
            default = jnp.full((nm,), MUSCLE_DEFAULTS[key], dtype)
        if key not in given:
            out[key] = default.astype(dtype)
            continue
        # a built model holds a value wherever the muscle's class has one (the defaults filled in when
        # built): a NaN there was put there later and stays NaN (refused by the run-time check, or
        # propagated with checks off), never "use the default"
        holds = np.asarray([holds_value(k, key) for k in paths.kinds], bool)
        v = get(key)
        out[key] = jnp.where(jnp.asarray(holds) | ~jnp.isnan(v), v, default)
    # optional curve properties (FiberForceLengthCurve / TendonForceLengthCurve::ensureCurveUpToDate)
    e0 = out["FiberForceLengthCurve.strain_at_zero_force"]
    e1 = out["FiberForceLengthCurve.strain_at_one_norm_force"]
    et = out["TendonForceLengthCurve.strain_at_one_norm_force"]
    computed = {
        "FiberForceLengthCurve.stiffness_at_low_force": 0.2 + 0 * e1,
        "FiberForceLengthCurve.stiffness_at_one_norm_force": 2.0 / (e1 - e0),
        "FiberForceLengthCurve.curviness": 0.75 + 0 * e1,
        "TendonForceLengthCurve.stiffness_at_one_norm_force": 1.375 / et,
        "TendonForceLengthCurve.norm_force_at_toe_end": 2.0 / 3.0 + 0 * et,
        "TendonForceLengthCurve.curviness": 0.5 + 0 * et,
    }
    for key in _MILLARD_OPTIONAL:
        v = get(key)
        out[key] = jnp.where(jnp.isnan(v) & millard, computed[key], v)
    # Schutte curves: the defaults where no muscle's file gave them (build_paths without curves)
    if schutte_rows.any():
        missing = [f"{c}.{part}" for c in SCHUTTE_CURVES for part in ("breaks", "anchors", "coef")
                   if f"{c}.breaks" not in given]
        if missing or PASSIVE_GIVEN not in given:
            filled = curve_parameters([{}] * nm, dtype)
            for key in missing + ([] if PASSIVE_GIVEN in given else [PASSIVE_GIVEN]):
                out[key] = filled[key]
    # anything else the file gave (e.g. default_activation) passes through
    for key, v in given.items():
        out.setdefault(key, jnp.asarray(v, dtype))
    return out
