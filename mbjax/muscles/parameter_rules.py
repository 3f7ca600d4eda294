"""The values a Hill muscle's parameters may take, checked once when the muscles are built.

OpenSim 4.6 refuses most of these in ``finalizeFromProperties`` (``Thelen2003Muscle``,
``Millard2012EquilibriumMuscle``, ``MuscleFixedWidthPennationModel``,
``MuscleFirstOrderActivationDynamicModel``, ``TendonForceLengthCurve``); the rules marked *mbjax*
are values OpenSim accepts but for which the muscle's equations have no answer (a tendon of zero
slack length has no strain, a negative maximum force pulls the wrong way), so a force computed
from them would be NaN or wrong without a word.  Every parameter must be finite: a NaN in a file
is not "use the default".

:func:`check_hill_parameters` runs on the parameters as read (float64), *with OpenSim's defaults
filled in* for the absent ones, once per model (in :func:`~mbjax.muscles.paths.build_paths`), not
at every pose.  A model's arrays can still change afterwards (``eqx.tree_at``, a fit step), so
:func:`parameter_rules` states the same rules on the arrays, for the one fused run-time check of
the muscle functions; the stored arrays hold the defaults of the absent values
(:func:`given_or_default`), so that a NaN there is never "use the default".
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import jax.numpy as jnp
import numpy as np

from .parameters import (HILL_KINDS, held_mask, holds_value, MILLARD, MILLARD_DEFAULTS, MUSCLE_DEFAULTS, SCHUTTE, THELEN,
                         THELEN_DEFAULTS, check_parameter_shapes)
from .schutte1993 import SCHUTTE_DEFAULTS

_SIGNIFICANT_REAL = float(np.finfo(float).eps ** 0.875)  # SimTK::SignificantReal
_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))  # SimTK::SqrtEps

_ALL = HILL_KINDS
_HALF_PI = math.pi / 2

#: (property, classes it applies to, test on the values, what it must be, who refuses)
RULES: tuple[tuple[str, tuple[str, ...], Callable[[float], bool], str, str], ...] = (
    ("max_isometric_force", _ALL, lambda v: v >= 0, ">= 0", "mbjax"),
    ("optimal_fiber_length", _ALL, lambda v: v > 0, "> 0", "OpenSim"),
    ("tendon_slack_length", _ALL, lambda v: v > 0, "> 0", "mbjax"),
    ("pennation_angle_at_optimal", _ALL, lambda v: (v >= 0) & (v <= _HALF_PI - _SIGNIFICANT_REAL),
     "in [0, pi/2) rad", "OpenSim"),
    ("max_contraction_velocity", _ALL, lambda v: v > 0, "> 0", "mbjax"),
    ("maximum_pennation_angle", (THELEN, MILLARD), lambda v: (v >= 0) & (v <= _HALF_PI),
     "in [0, pi/2] rad", "OpenSim"),
    # Thelen2003Muscle::extendFinalizeFromProperties
    ("FmaxTendonStrain", (THELEN,), lambda v: v > 0, "> 0", "OpenSim"),
    ("FmaxMuscleStrain", (THELEN,), lambda v: v > 0, "> 0", "OpenSim"),
    ("KshapeActive", (THELEN,), lambda v: v > 0, "> 0", "OpenSim"),
    ("KshapePassive", (THELEN,), lambda v: v > 0, "> 0", "OpenSim"),
    ("Af", (THELEN,), lambda v: v > 0, "> 0", "OpenSim"),
    ("Flen", (THELEN,), lambda v: v > 1, "> 1", "OpenSim"),
    ("minimum_activation", (THELEN,), lambda v: v >= 0.01, ">= 0.01", "OpenSim"),
    # MuscleFirstOrderActivationDynamicModel::extendFinalizeFromProperties
    ("activation_time_constant", (THELEN, MILLARD), lambda v: v >= _SIGNIFICANT_REAL, "> 0", "OpenSim"),
    ("deactivation_time_constant", (THELEN, MILLARD), lambda v: v >= _SIGNIFICANT_REAL, "> 0", "OpenSim"),
    ("minimum_activation", (THELEN, MILLARD), lambda v: (v >= 0) & (v <= 1 - _SIGNIFICANT_REAL),
     "in [0, 1)", "OpenSim"),
    # Millard2012EquilibriumMuscle::extendFinalizeFromProperties and its curves
    ("fiber_damping", (MILLARD,), lambda v: v >= 0, ">= 0", "mbjax"),
    ("ForceVelocityCurve.concentric_slope_near_vmax", (MILLARD,), lambda v: v >= _SQRT_EPS,
     ">= sqrt(eps)", "OpenSim"),
    ("ForceVelocityCurve.eccentric_slope_near_vmax", (MILLARD,), lambda v: v >= _SQRT_EPS,
     ">= sqrt(eps)", "OpenSim"),
    ("ForceVelocityCurve.max_eccentric_velocity_force_multiplier", (MILLARD,), lambda v: v > 1, "> 1",
     "OpenSim"),
    ("TendonForceLengthCurve.strain_at_one_norm_force", (MILLARD,), lambda v: v > 0, "> 0", "OpenSim"),
    ("TendonForceLengthCurve.stiffness_at_one_norm_force", (MILLARD,), lambda v: v > 1000 * _SIGNIFICANT_REAL,
     "> 0", "OpenSim"),
    ("TendonForceLengthCurve.norm_force_at_toe_end", (MILLARD,), lambda v: (v > 1000 * _SIGNIFICANT_REAL) & (v <= 1),
     "in (0, 1]", "OpenSim"),
    ("TendonForceLengthCurve.curviness", (MILLARD,), lambda v: (v >= 0) & (v <= 1), "in [0, 1]", "OpenSim"),
    ("FiberForceLengthCurve.curviness", (MILLARD,), lambda v: (v >= 0) & (v <= 1), "in [0, 1]", "OpenSim"),
    # Schutte1993Muscle_Deprecated: its activation ODE divides by time_scale
    ("time_scale", (SCHUTTE,), lambda v: v > 0, "> 0", "mbjax"),
)

#: ``FiberForceLengthCurve`` / ``TendonForceLengthCurve::ensureCurveUpToDate``: all set or none
OPTIONAL_CURVE_PROPERTIES = {
    "FiberForceLengthCurve": ("stiffness_at_low_force", "stiffness_at_one_norm_force", "curviness"),
    "TendonForceLengthCurve": ("stiffness_at_one_norm_force", "norm_force_at_toe_end", "curviness"),
}

#: properties read as numbers from a muscle element (a value that does not parse is refused)
NUMERIC_PROPERTIES = frozenset(
    {r[0] for r in RULES}
    | {"default_activation", "default_fiber_length", "min_control", "max_control", "activation1",
       "activation2", "damping", "fv_linear_extrap_threshold",
       "ActiveForceLengthCurve.min_norm_active_fiber_length",
       "ActiveForceLengthCurve.transition_norm_fiber_length",
       "ActiveForceLengthCurve.max_norm_active_fiber_length",
       "ActiveForceLengthCurve.shallow_ascending_slope", "ActiveForceLengthCurve.minimum_value",
       "ForceVelocityCurve.concentric_slope_at_vmax", "ForceVelocityCurve.isometric_slope",
       "ForceVelocityCurve.eccentric_slope_at_vmax", "ForceVelocityCurve.concentric_curviness",
       "ForceVelocityCurve.eccentric_curviness", "FiberForceLengthCurve.strain_at_zero_force",
       "FiberForceLengthCurve.strain_at_one_norm_force", "FiberForceLengthCurve.stiffness_at_low_force",
       "FiberForceLengthCurve.stiffness_at_one_norm_force"}
)


def _filled(kind: str, given: Mapping[str, float]) -> dict[str, float]:
    """One muscle's parameters: OpenSim's defaults of its class, overridden by the given values."""
    defaults = {THELEN: THELEN_DEFAULTS, MILLARD: MILLARD_DEFAULTS, SCHUTTE: SCHUTTE_DEFAULTS}[kind]
    out = {**defaults, **MUSCLE_DEFAULTS}
    out.update({k: float(v) for k, v in given.items() if not math.isnan(float(v))})
    return out


def parameter_problems(names, kinds, parameters: Mapping[str, Mapping[str, float]]) -> list[tuple[str, str]]:
    """``(muscle, problem)`` for every Hill parameter outside its allowed values (defaults filled).

    ``parameters`` maps a muscle name to its given properties (absent or NaN: OpenSim's default),
    checked in float64 as written.  Path-only muscles (kinds marked ``(ignored)``) and plain paths
    are not checked.
    """
    problems = []
    for name, kind in zip(names, kinds):
        if kind not in HILL_KINDS:
            continue
        values = _filled(kind, parameters.get(name, {}))
        for key, classes, ok, requirement, who in RULES:
            v = values.get(key)
            if kind not in classes or v is None:
                continue
            if not (math.isfinite(v) and bool(ok(v))):
                why = "OpenSim 4.6 refuses it too" if who == "OpenSim" else "the muscle's equations have no answer there"
                must = requirement if math.isfinite(v) else f"finite and {requirement}"
                problems.append((name, f"{key} = {v!r} must be {must} ({why})"))
        inverse_flen = 1 / max(values.get("Flen", 1.0), 1e-300)  # Flen <= 0 is refused above
        if kind == THELEN and not values["fv_linear_extrap_threshold"] > inverse_flen:
            problems.append((name, f"fv_linear_extrap_threshold = {values['fv_linear_extrap_threshold']!r} must be "
                                   f"> 1/Flen = {inverse_flen!r} (OpenSim 4.6 refuses it too)"))
        if kind == MILLARD:
            problems += [(name, p) for p in _millard_curve_problems(values)]
            for curve, optional in OPTIONAL_CURVE_PROPERTIES.items():
                given = [p for p in optional if f"{curve}.{p}" in values]
                if 0 < len(given) < len(optional):
                    problems.append((name, f"{curve}: {', '.join(given)} given without "
                                           f"{', '.join(p for p in optional if p not in given)}; the optional "
                                           "properties are all given or none (OpenSim 4.6 refuses it too)"))
        ruled = {r[0] for r in RULES} | {"min_control", "max_control"}
        for key, v in values.items():  # the other numbers must be finite too
            if key in NUMERIC_PROPERTIES and key not in ruled and not math.isfinite(v):
                problems.append((name, f"{key} = {v!r} must be finite"))
    return problems


def _millard_curve_problems(v: Mapping[str, float]) -> list[str]:
    """The orderings between Millard curve properties that ``SmoothSegmentedFunctionFactory``
    requires when OpenSim 4.6 builds the active-force-length and force-velocity curves."""
    afl, fv = "ActiveForceLengthCurve.", "ForceVelocityCurve."
    x0, x1 = v[afl + "min_norm_active_fiber_length"], v[afl + "transition_norm_fiber_length"]
    x3, slope = v[afl + "max_norm_active_fiber_length"], v[afl + "shallow_ascending_slope"]
    fmax = v[fv + "max_eccentric_velocity_force_multiplier"]
    checks = (
        (x0 >= 0, f"{afl}min_norm_active_fiber_length = {x0!r} must be >= 0"),
        (x1 > x0 + _SQRT_EPS, f"{afl}min_norm_active_fiber_length = {x0!r} must be below "
                              f"transition_norm_fiber_length = {x1!r}"),
        (x1 < 1 - _SQRT_EPS, f"{afl}transition_norm_fiber_length = {x1!r} must be < 1"),
        (x3 > 1 + _SQRT_EPS, f"{afl}max_norm_active_fiber_length = {x3!r} must be > 1"),
        (not x1 < 1 or 0 <= slope < 1 / (1 - x1), f"{afl}shallow_ascending_slope = {slope!r} must be in "
                                                   "[0, 1/(1 - transition_norm_fiber_length))"),
        (v[afl + "minimum_value"] >= 0, f"{afl}minimum_value = {v[afl + 'minimum_value']!r} must be >= 0"),
        (0 <= v[fv + "concentric_slope_at_vmax"] < 1,
         f"{fv}concentric_slope_at_vmax = {v[fv + 'concentric_slope_at_vmax']!r} must be in [0, 1)"),
        (v[fv + "concentric_slope_near_vmax"] <= 1,
         f"{fv}concentric_slope_near_vmax = {v[fv + 'concentric_slope_near_vmax']!r} must be <= 1"),
        (not fmax > 1 or 0 <= v[fv + "eccentric_slope_at_vmax"] < fmax - 1,
         f"{fv}eccentric_slope_at_vmax = {v[fv + 'eccentric_slope_at_vmax']!r} must be in [0, "
         "max_eccentric_velocity_force_multiplier - 1)"),
        (not fmax > 1 or v[fv + "eccentric_slope_at_vmax"] <= v[fv + "eccentric_slope_near_vmax"] < fmax - 1,
         f"{fv}eccentric_slope_near_vmax = {v[fv + 'eccentric_slope_near_vmax']!r} must be in "
         "[eccentric_slope_at_vmax, max_eccentric_velocity_force_multiplier - 1)"),
    )
    return [f"{why} (OpenSim 4.6 refuses it too)" for ok, why in checks if not ok]


def check_hill_parameters(paths, given: Mapping[str, Mapping[str, float]],
                          sources: Mapping[str, str] | None = None) -> None:
    """Raise ``ValueError`` naming every muscle and parameter outside its allowed values.

    ``paths`` supplies the names and classes, ``given`` each muscle's properties as read.

    ``sources`` maps a muscle name to where it was read (``file:line: <Thelen2003Muscle ...>``).
    """
    problems = parameter_problems(paths.names, paths.kinds, given)
    if not problems:
        return
    sources = dict(sources or {})
    lines = [f"{sources.get(m, f'muscle {m!r}')}: {p}" for m, p in problems]
    head = f"{len(problems)} muscle parameter(s) outside the values the muscle model is defined for:\n  "
    raise ValueError(head + "\n  ".join(lines))


def given_or_default(names, kinds, parameters: Mapping[str, Mapping[str, float]], keys) -> dict[str, np.ndarray]:
    """Per key in ``keys``, the ``(nm,)`` values the muscles are built with: the given value, else
    its class's OpenSim default, else NaN (a property the class does not have, or an optional curve
    property OpenSim computes from the others)."""
    rows = {k: np.full(len(names), np.nan) for k in keys}
    for m, (name, kind) in enumerate(zip(names, kinds)):
        given = {k: float(v) for k, v in parameters.get(name, {}).items()}
        values = _filled(kind, given) if kind in HILL_KINDS else given
        for k in keys:
            rows[k][m] = values.get(k, np.nan)
    return rows


def parameter_rules(paths, where: str) -> list:
    """:data:`RULES` on the built arrays, as ``(bad (nm,), messages)`` conditions of
    :func:`mbjax._checks.all_of`: a value outside its range, or NaN where the class has a value."""
    check_parameter_shapes(paths, where)
    out = []
    for key, classes, ok, requirement, who in RULES:
        v = paths.parameters.get(key)
        if v is None:
            continue
        applies = np.asarray([k in classes for k in paths.kinds], bool)
        required = np.asarray([holds_value(k, key) for k in paths.kinds], bool)
        if not applies.any():
            continue
        v = jnp.asarray(v)
        bad = applies & jnp.where(jnp.isnan(v), jnp.asarray(required), ~ok(v) | jnp.isinf(v))
        out.append((bad, [f"{where}: muscle {name!r}: {key} must be finite and {requirement}: was the model "
                          "changed after loading (eqx.tree_at, a fit step)?" for name in paths.names]))
    ruled = {r[0] for r in RULES} | {"min_control", "max_control"}
    for key in sorted(NUMERIC_PROPERTIES - ruled):  # the other numbers a class holds: finite
        v = paths.parameters.get(key)
        held = held_mask(paths, key)
        if v is None or jnp.ndim(v) != 1 or not held.any():
            continue
        bad = jnp.asarray(held) & ~jnp.isfinite(jnp.asarray(v))
        out.append((bad, [f"{where}: muscle {name!r}: {key} must be finite: was the model changed after loading "
                          "(eqx.tree_at, a fit step)?" for name in paths.names]))
    return out
