"""First-order activation dynamics (OpenSim's ``MuscleFirstOrderActivationDynamicModel``).

ȧ = (u - a) / τ with a clamped to [a_min, 1] first, τ = τ_act (0.5 + 1.5 a) when u > a and
τ_deact / (0.5 + 1.5 a) otherwise (Thelen 2003 / Winters 1995), as both ``Thelen2003Muscle`` and
``Millard2012EquilibriumMuscle`` use it.  A muscle with ``ignore_activation_dynamics`` has
ȧ = 0 (its activation is the control).  ``Schutte1993Muscle_Deprecated`` has its own rate
(:func:`mbjax.muscles.schutte1993.activation_rate`: activation1, activation2, time_scale; no clamp).
"""

from __future__ import annotations

import jax.numpy as jnp

from .._model import Model
from .._checks import all_of, as_array, in_unit_interval, names_context, not_finite, real_array
from .parameter_rules import parameter_rules
from .parameters import SCHUTTE, hill_parameters, kind_mask
from .path_set import MusclePaths, get_paths
from .schutte1993 import activation_rate as schutte_activation_rate


def clamp_activation(activation, minimum_activation):
    """``clampActivation``: clamp(a_min, a, 1)."""
    return jnp.clip(activation, minimum_activation, 1.0)


def activation_rate(excitation, activation, activation_time_constant, deactivation_time_constant,
                    minimum_activation):
    """``MuscleFirstOrderActivationDynamicModel::calcDerivative`` (elementwise).

    ``excitation`` and ``activation`` have one shape; each parameter is a scalar or of that shape
    (nothing else broadcasts).  Time constants must be finite and positive, ``minimum_activation``
    in [0, 1), the excitation in [0, 1] (as :func:`activation_derivative`), everything finite (one
    fused run-time check while checks are on).
    """
    where = "activation_rate"
    args = {"excitation": excitation, "activation": activation,
            "activation_time_constant": activation_time_constant,
            "deactivation_time_constant": deactivation_time_constant, "minimum_activation": minimum_activation}
    arr = {k: real_array(v, f"{where}: {k} must be a real number or array",
                         f"{where}: {k} must be a real (integer or floating) array") for k, v in args.items()}
    shape = arr["excitation"].shape
    if arr["activation"].shape != shape:
        raise ValueError(f"{where}: excitation and activation must have one shape, got {shape} and "
                         f"{arr['activation'].shape}")
    for k in list(args)[2:]:
        if arr[k].ndim and arr[k].shape != shape:
            raise ValueError(f"{where}: {k} must be a scalar or have the shape of the activation {shape}, "
                             f"got {arr[k].shape}")
    taus = (arr["activation_time_constant"], arr["deactivation_time_constant"])
    a_min = arr["minimum_activation"]
    rules = [not_finite(arr[k], f"{where}: {k}") for k in args]
    rules += [(t <= 0, f"{where}: {k} must be positive (a time constant, s)")
              for k, t in zip(list(args)[2:4], taus)]
    rules.append(((a_min < 0) | (a_min >= 1), f"{where}: minimum_activation must lie in [0, 1)"))
    u = arr["excitation"]
    rules.append(((u < 0) | (u > 1), f"{where}: excitation must be in [0, 1] (an excitation above 1 would "
                  "drive the activation faster than any muscle can)"))
    excitation = all_of(arr["excitation"], rules)
    return _rate(excitation, arr["activation"], *taus, a_min)


def _rate(excitation, activation, activation_time_constant, deactivation_time_constant, minimum_activation):
    """:func:`activation_rate` without its checks (parameters of a validated model)."""
    a = clamp_activation(activation, minimum_activation)
    tau = jnp.where(excitation > a, activation_time_constant * (0.5 + 1.5 * a),
                    deactivation_time_constant / (0.5 + 1.5 * a))
    return (excitation - a) / tau


#: the entries of a parameter dict that the first-order activation dynamics reads
_DICT_KEYS = ("activation_time_constant", "deactivation_time_constant", "minimum_activation",
              "ignore_activation_dynamics")


def activation_derivative(excitation, activation, params):
    """ȧ ``(nm,)`` of every muscle; ``params`` is a model, its ``MusclePaths`` or a filled
    parameter dict (:func:`mbjax.muscles.hill_parameters`).  Zero where
    ``ignore_activation_dynamics``.

    ``excitation`` and ``activation`` are ``(nm,)`` (refused otherwise, never broadcast) and finite
    (a run-time check while :func:`mbjax.config.checks` is on), the excitation in [0, 1] (the same check,
    naming the muscle: an excitation above 1 would drive the activation faster than any muscle can,
    as simulation refuses it too).  As OpenSim, the activation is clamped to [a_min, 1] before the
    rate (an activation of 1.5 decays as an activation of 1 does).
    """
    if not isinstance(params, (dict, MusclePaths, Model)):
        raise TypeError("activation_derivative(excitation, activation, params): params must be an mbjax Model, its "
                        f"MusclePaths or a parameter dict (mbjax.muscles.hill_parameters), got {type(params).__name__}")
    if isinstance(params, dict):
        missing = [k for k in _DICT_KEYS if k not in params]
        if missing:
            raise ValueError(f"activation_derivative: the parameter dict lacks {missing}; it needs {list(_DICT_KEYS)} "
                             "(one (nm,) array each): pass mbjax.muscles.hill_parameters(model), or the model itself")
        shapes = {k: tuple(jnp.shape(params[k])) for k in _DICT_KEYS}
        if len(set(shapes.values())) != 1 or len(shapes["minimum_activation"]) != 1:
            raise ValueError(f"activation_derivative: the parameter dict's {list(_DICT_KEYS)} must be arrays of one "
                             f"shape (nm,), one value per muscle, got shapes {shapes}")
        nm = shapes["minimum_activation"][0]
        ctx, names = "", [f"muscle {k}" for k in range(nm)]
    else:
        paths = params if isinstance(params, MusclePaths) else get_paths(params)
        nm, ctx, names = paths.n_muscles, names_context("muscles", paths.names), paths.names
    u = as_array(excitation, "excitation", (nm,), ("nm",), ctx)
    a = as_array(activation, "activation", (nm,), ("nm",), ctx)
    if nm == 0:  # a model without muscles: no rate
        return jnp.zeros((0,), jnp.result_type(u, a, float))
    u = all_of(u, [not_finite(u, "excitation", ctx),
                   not_finite(a, "activation", ctx),
                   in_unit_interval(u, "activation_derivative: excitation", names),
                   *([] if isinstance(params, dict) else parameter_rules(paths, "activation_derivative"))])
    return activation_rate_of_muscles(u, a, params)


def activation_rate_of_muscles(excitation, activation, params):
    """:func:`activation_derivative` without its argument checks (for the simulation's vector field)."""
    p = params if isinstance(params, dict) and "minimum_activation" in params else hill_parameters(params)
    if isinstance(params, dict):
        schutte = jnp.isfinite(p["time_scale"]) if "time_scale" in p else jnp.zeros_like(p["minimum_activation"], bool)
    else:
        schutte = jnp.asarray(kind_mask(params, SCHUTTE))
    safe = lambda key, v: jnp.where(schutte, v, p[key])  # noqa: E731  (no NaN in the unused branch)
    rate = _rate(excitation, activation, safe("activation_time_constant", 1.0),
                 safe("deactivation_time_constant", 1.0), safe("minimum_activation", 0.0))
    s_rate = schutte_activation_rate(excitation, activation, jnp.where(schutte, p.get("activation1", 1.0), 1.0),
                                     jnp.where(schutte, p.get("activation2", 1.0), 1.0),
                                     jnp.where(schutte, p.get("time_scale", 1.0), 1.0))
    rate = jnp.where(schutte, s_rate, rate)
    return jnp.where(p["ignore_activation_dynamics"] > 0.5, 0.0, rate)
