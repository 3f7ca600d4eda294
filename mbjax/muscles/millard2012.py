"""Millard et al. (2013) ``Millard2012EquilibriumMuscle`` curves, as OpenSim 4.6 builds them.

Each curve is a segmented quintic Bézier spline (:mod:`mbjax.muscles._bezier`) built from the
OpenSim curve properties by ``SmoothSegmentedFunctionFactory``:

* :func:`active_force_length_curve` (``ActiveForceLengthCurve`` →
  ``createFiberActiveForceLengthCurve(x0, x1, 1, x3, ylow, dydx, curviness=1)``, 5 segments);
* :func:`fiber_force_length_curve` (``FiberForceLengthCurve`` → ``createFiberForceLengthCurve``,
  2 segments; the optional stiffnesses and curviness default to 2/(e1 - e0), 0.2 and 0.75);
* :func:`tendon_force_length_curve` (``TendonForceLengthCurve`` → ``createTendonForceLengthCurve``,
  2 segments; optional stiffness 1.375/e0, toe force 2/3, curviness 0.5);
* :func:`force_velocity_curve` and :func:`force_velocity_inverse_curve` (4 segments each; the
  inverse swaps the control points' roles, so it is *not* the exact inverse of the forward curve
  when OpenSim gives it different slopes at ±vmax).

Parameter dicts use OpenSim's property names under the curve's element name, e.g.
``"ActiveForceLengthCurve.min_norm_active_fiber_length"`` (see :mod:`mbjax.muscles.parameters`).
"""

from __future__ import annotations

import jax.numpy as jnp

from ._bezier import Segmented, corner_control_points, scale_curviness

FAL = "ActiveForceLengthCurve."
FPE = "FiberForceLengthCurve."
FSE = "TendonForceLengthCurve."
FV = "ForceVelocityCurve."


def _stack(points):
    return jnp.stack([p[0] for p in points]), jnp.stack([p[1] for p in points])


def active_force_length_curve(x0, x1, x3, dydx, ylow, x2=1.0, curviness=1.0) -> Segmented:
    """``createFiberActiveForceLengthCurve(x0, x1, x2, x3, ylow, dydx, curviness)``.

    x0 = ``min_norm_active_fiber_length``, x1 = ``transition_norm_fiber_length``, x3 =
    ``max_norm_active_fiber_length``, dydx = ``shallow_ascending_slope``, ylow = ``minimum_value``;
    OpenSim's ``ActiveForceLengthCurve`` passes x2 = 1 and curviness = 1.
    """
    c = scale_curviness(curviness)
    x_delta = 0.05 * x2
    xs = x2 - x_delta
    y0, dydx0 = 0.0, 0.0
    y1 = 1.0 - dydx * (xs - x1)
    dydx01 = 1.25 * (y1 - y0) / (x1 - x0)
    x01 = x0 + 0.5 * (x1 - x0)
    y01 = y0 + 0.5 * (y1 - y0)
    x1s = x1 + 0.5 * (xs - x1)
    y1s = y1 + 0.5 * (1.0 - y1)
    dydx1s = dydx
    y2, dydx2, y3, dydx3 = 1.0, 0.0, 0.0, 0.0
    x23 = (x2 + x_delta) + 0.5 * (x3 - (x2 + x_delta))
    y23 = y2 + 0.5 * (y3 - y2)
    dydx23 = (y3 - y2) / ((x3 - x_delta) - (x2 + x_delta))
    px, py = _stack([
        corner_control_points(x0, ylow, dydx0, x01, y01, dydx01, c),
        corner_control_points(x01, y01, dydx01, x1s, y1s, dydx1s, c),
        corner_control_points(x1s, y1s, dydx1s, x2, y2, dydx2, c),
        corner_control_points(x2, y2, dydx2, x23, y23, dydx23, c),
        corner_control_points(x23, y23, dydx23, x3, ylow, dydx3, c),
    ])
    return Segmented(px, py, x0, x3, ylow, ylow, 0.0, 0.0)


def fiber_force_length_curve(e_zero, e_iso, k_low, k_iso, curviness) -> Segmented:
    """``createFiberForceLengthCurve(eZero, eIso, kLow, kIso, curviness)`` (passive fibre)."""
    c = scale_curviness(curviness)
    x_zero, y_zero = 1.0 + e_zero, 0.0
    x_iso, y_iso = 1.0 + e_iso, 1.0
    delta_x = jnp.minimum(0.1 * (1.0 / k_iso), 0.1 * (x_iso - x_zero))
    x_low = x_zero + delta_x
    x_foot = x_zero + 0.5 * (x_low - x_zero)
    y_low = 0.0 + k_low * (x_low - x_foot)
    px, py = _stack([
        corner_control_points(x_zero, y_zero, 0.0, x_low, y_low, k_low, c),
        corner_control_points(x_low, y_low, k_low, x_iso, y_iso, k_iso, c),
    ])
    return Segmented(px, py, x_zero, x_iso, y_zero, y_iso, 0.0, k_iso)


def tendon_force_length_curve(e_iso, k_iso, f_toe, curviness) -> Segmented:
    """``createTendonForceLengthCurve(eIso, kIso, fToe, curviness)``."""
    c = scale_curviness(curviness)
    x0, y0, dydx0 = 1.0, 0.0, 0.0
    x_iso, y_iso = 1.0 + e_iso, 1.0
    y_toe = f_toe
    x_toe = (y_toe - 1.0) / k_iso + x_iso
    x_foot = 1.0 + (x_toe - 1.0) / 10.0
    y_foot = 0.0
    y_toe_mid = y_toe * 0.5
    x_toe_mid = (y_toe_mid - y_iso) / k_iso + x_iso
    dydx_toe_mid = (y_toe_mid - y_foot) / (x_toe_mid - x_foot)
    x_toe_ctrl = x_foot + 0.5 * (x_toe_mid - x_foot)
    y_toe_ctrl = y_foot + dydx_toe_mid * (x_toe_ctrl - x_foot)
    px, py = _stack([
        corner_control_points(x0, y0, dydx0, x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, c),
        corner_control_points(x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, x_toe, y_toe, k_iso, c),
    ])
    return Segmented(px, py, x0, x_toe, y0, y_toe, dydx0, k_iso)


def _fv_points(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e, conc_curviness, ecc_curviness):
    cc, ce = scale_curviness(conc_curviness), scale_curviness(ecc_curviness)
    xc, yc = -1.0, 0.0
    x_near_c = -0.9
    y_near_c = yc + 0.5 * dydx_near_c * (x_near_c - xc) + 0.5 * dydx_c * (x_near_c - xc)
    x_iso, y_iso = 0.0, 1.0
    xe, ye = 1.0, fmax_e
    x_near_e = 0.9
    y_near_e = ye + 0.5 * dydx_near_e * (x_near_e - xe) + 0.5 * dydx_e * (x_near_e - xe)
    return _stack([
        corner_control_points(xc, yc, dydx_c, x_near_c, y_near_c, dydx_near_c, cc),
        corner_control_points(x_near_c, y_near_c, dydx_near_c, x_iso, y_iso, dydx_iso, cc),
        corner_control_points(x_iso, y_iso, dydx_iso, x_near_e, y_near_e, dydx_near_e, ce),
        corner_control_points(x_near_e, y_near_e, dydx_near_e, xe, ye, dydx_e, ce),
    ])


def force_velocity_curve(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e,
                         conc_curviness=0.6, ecc_curviness=0.9) -> Segmented:
    """``createFiberForceVelocityCurve`` (argument order of OpenSim's factory)."""
    px, py = _fv_points(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e, conc_curviness, ecc_curviness)
    return Segmented(px, py, -1.0, 1.0, 0.0, fmax_e, dydx_c, dydx_e)


def force_velocity_inverse_curve(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e,
                                 conc_curviness=0.6, ecc_curviness=0.9) -> Segmented:
    """``createFiberForceVelocityInverseCurve``: the same control points with x and y swapped."""
    px, py = _fv_points(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e, conc_curviness, ecc_curviness)
    return Segmented(py, px, 0.0, fmax_e, -1.0, 1.0, 1.0 / dydx_c, 1.0 / dydx_e)


# ------------------------------------------------------------------------------------------------
# the curves of one muscle from its parameter dict (scalars), with the Millard model's
# finalizeFromProperties adjustments (damped vs classic Hill model)
# ------------------------------------------------------------------------------------------------


def use_damping(p):
    """OpenSim: ``fiber_damping`` below 0.001 (MIN_NONZERO_DAMPING_COEFFICIENT) means undamped."""
    return p["fiber_damping"] >= 0.001


def _classic(p):
    """The undamped ('classic Hill') model with an elastic tendon (OpenSim adjusts its curves)."""
    return (~use_damping(p)) & (p["ignore_tendon_compliance"] < 0.5)


def curves(p) -> dict:
    """The five curves of one Millard muscle as ``Millard2012EquilibriumMuscle::
    extendFinalizeFromProperties`` leaves them: the damped model (or a rigid tendon) sets the
    active-force-length ``minimum_value`` and the force-velocity slopes at ±vmax to 0 where they
    are positive; the classic model raises ``minimum_value`` to ≥ 0.1 and the slopes at ±vmax to
    ≥ half the slopes near vmax.  The inverse force-velocity curve always uses half the near-vmax
    slopes at ±vmax."""
    classic = _classic(p)
    ylow = p[FAL + "minimum_value"]
    ylow = jnp.where(classic, jnp.maximum(ylow, 0.1), jnp.minimum(ylow, 0.0))
    fal = active_force_length_curve(p[FAL + "min_norm_active_fiber_length"], p[FAL + "transition_norm_fiber_length"],
                                    p[FAL + "max_norm_active_fiber_length"], p[FAL + "shallow_ascending_slope"], ylow)
    fpe = fiber_force_length_curve(p[FPE + "strain_at_zero_force"], p[FPE + "strain_at_one_norm_force"],
                                   p[FPE + "stiffness_at_low_force"], p[FPE + "stiffness_at_one_norm_force"],
                                   p[FPE + "curviness"])
    fse = tendon_force_length_curve(p[FSE + "strain_at_one_norm_force"], p[FSE + "stiffness_at_one_norm_force"],
                                    p[FSE + "norm_force_at_toe_end"], p[FSE + "curviness"])
    near_c, near_e = p[FV + "concentric_slope_near_vmax"], p[FV + "eccentric_slope_near_vmax"]
    at_c, at_e = p[FV + "concentric_slope_at_vmax"], p[FV + "eccentric_slope_at_vmax"]
    at_c = jnp.where(classic, jnp.maximum(at_c, 0.5 * near_c), jnp.minimum(at_c, 0.0))
    at_e = jnp.where(classic, jnp.maximum(at_e, 0.5 * near_e), jnp.minimum(at_e, 0.0))
    iso, fmax = p[FV + "isometric_slope"], p[FV + "max_eccentric_velocity_force_multiplier"]
    cc, ce = p[FV + "concentric_curviness"], p[FV + "eccentric_curviness"]
    fv = force_velocity_curve(fmax, at_c, near_c, iso, at_e, near_e, cc, ce)
    fv_inv = force_velocity_inverse_curve(fmax, 0.5 * near_c, near_c, iso, 0.5 * near_e, near_e, cc, ce)
    return {"fal": fal, "fpe": fpe, "fse": fse, "fv": fv, "fv_inv": fv_inv}


def minimum_fiber_length(p, pennation_minimum):
    """``m_minimumFiberLength = max(SignificantReal, min_norm_active_fiber_length ℓ_o, pennation minimum)``."""
    return jnp.maximum(1e-14, jnp.maximum(p[FAL + "min_norm_active_fiber_length"] * p["optimal_fiber_length"],
                                          pennation_minimum))
