"""OpenSim 4.6's ``Schutte1993Muscle_Deprecated`` (Schutte 1993, SIMM's "dynamic muscle model").

States (``ActivationFiberLengthMuscle_Deprecated``): activation a and fibre length ℓ.  Properties:
``time_scale`` t_s, ``activation1``, ``activation2``, ``damping`` β and three per-muscle OpenSim
functions of normalized arguments (usually ``SimmSpline``; any 1-D OpenSim function the importer
reads): ``tendon_force_length_curve`` f_T(ε), ``active_force_length_curve`` f_L(ℓ̃),
``passive_force_length_curve`` f_P(ℓ̃).  The functions here reproduce, per muscle:

* :func:`pennation_angle` ``ActivationFiberLengthMuscle_Deprecated::calcPennation``:
  asin(ℓ_o sin α_o / ℓ), 0 when that ratio is ≤ 0 (or ℓ < ε), π/2 when ≥ 1;
* :func:`tendon_force` ``Schutte1993Muscle_Deprecated::calcTendonForce``: f_T of the strain
  ε = (ℓ̃_T - ℓ̃_s)/ℓ̃_s (lengths over ℓ_o), 0 for ε < 0;
* :func:`passive_force` ``calcNonzeroPassiveForce`` (velocity term 0, as every caller passes):
  the curve f_P(ℓ̃) when the file gives ``passive_force_length_curve``, else (the property at its
  default value) exp(8(ℓ̃ - 1))/exp(4);
* :func:`norm_fiber_velocity` ``calcFiberVelocity``: the inverse force-velocity relation with
  damping (k_v = 0.15, slope 0.13, F_max 1.4 hard-coded), in units of ℓ_o / t_s;
* :func:`activation_rate` ``computeActuation``'s activation derivative:
  (u - a)(activation1 u + activation2) / t_s when u ≥ a, else (u - a) activation2 / t_s (no clamp
  of a, no minimum activation);
* :func:`compute_actuation` ``Schutte1993Muscle_Deprecated::computeActuation``: tendon force
  F_o f_T, fibre velocity (the fibre-length derivative) from ``calcFiberVelocity`` of the
  velocity-dependent force max(0, f_T/cos α - f_P) with the active force max(0, f_L), including
  the α = 90° branch (``EQUAL_WITHIN_ERROR(cos α, 0)``, ROUNDOFF_ERROR = 2e-13; a stiff-tendon
  velocity whose ``h`` mixes a normalized length with ℓ_s as OpenSim's code does), and ȧ;
* :func:`opensim_isometric_fiber_length` ``computeIsometricForce`` (what ``equilibrateMuscles``
  runs for this class, from ``computeInitialFiberEquilibrium``): OpenSim's own iteration, branch
  for branch (static equilibrium F_o f_T = F_o (max(0, a f_L) + max(0, f_P)) cos α, at most 100
  steps, stopping at |error| ≤ 0.01 N; secant steps after a sign change, else stiffness steps
  with a minimum tendon stiffness and at most ℓ_o/2; the tendon never shorter than slack), and
  :func:`isometric_fiber_length`, what :func:`mbjax.muscle_forces` and
  :func:`mbjax.initial_fiber_lengths` use: by default (``equilibrium="opensim"``) that very point,
  the fibre length OpenSim's ``equilibrateMuscles`` leaves in the state, whose force error may be
  up to 0.01 N; with ``equilibrium="exact"`` the same point polished by Newton to machine precision.
  Either way its derivatives are the implicit-function ones of the static equilibrium.

The curves are stored per muscle in ``MusclePaths.parameters`` as padded piecewise-polynomial
arrays (``"<curve>.breaks" (nm, P-1)``, ``"<curve>.anchors" (nm, P)``, ``"<curve>.coef" (nm, P, D)``,
see :func:`curve_parameters`; array leaves, so differentiable in the coefficients) and evaluated
with :class:`~mbjax.maps.PiecewisePolynomial`'s Horner evaluation of OpenSim's ``SimmSpline``; one
compiled program serves every muscle.  ``"passive_force_length_curve.given"`` (0/1) says whether
the file gave the passive curve.  Defaults (absent properties) are those of
``Schutte1993Muscle_Deprecated::constructProperties``.

OpenSim refuses ``ignore_tendon_compliance`` and ``ignore_activation_dynamics`` for this class
(``ActivationFiberLengthMuscle_Deprecated::extendAddToSystem``), so does ``load_osim``; there is no
rigid-tendon mode, and static optimization refuses it by name.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..maps.piecewise import PiecewisePolynomial
from ..maps.simm_spline import pp_simm_spline
from .muscle_state import MuscleState

SCHUTTE = "Schutte1993Muscle_Deprecated"

#: ``Schutte1993Muscle_Deprecated::constructProperties`` (scalars)
SCHUTTE_DEFAULTS = {
    "time_scale": 0.1,
    "activation1": 7.667,
    "activation2": 1.459854,
    "damping": 0.1,
}

#: ``Schutte1993Muscle_Deprecated::constructProperties``: the default SimmSpline knots
DEFAULT_CURVES = {
    "tendon_force_length_curve": (
        [-10.0, -0.002, -0.001, 0.0, 0.00131, 0.00281, 0.00431, 0.00581, 0.00731, 0.00881, 0.0103, 0.0118, 0.0123,
         9.2, 9.201, 9.202, 20.0],
        [0.0, 0.0, 0.0, 0.0, 0.0108, 0.0257, 0.0435, 0.0652, 0.0915, 0.123, 0.161, 0.208, 0.227, 345.0, 345.0,
         345.0, 345.0]),
    "active_force_length_curve": (
        [-5.307692, -4.307692, -1.923077, -0.884615, -0.269231, 0.230769, 0.461538, 0.52725, 0.62875, 0.71875,
         0.86125, 1.045, 1.2175, 1.43875, 1.5, 1.615385, 2.0, 2.961538, 3.692308, 5.461538, 9.901902],
        [0.012188, 0.021899, 0.036466, 0.052493, 0.075312, 0.114158, 0.157859, 0.226667, 0.636667, 0.856667, 0.95,
         0.993333, 0.77, 0.246667, 0.193821, 0.133252, 0.072683, 0.044417, 0.036341, 0.021899, 0.007332]),
    "passive_force_length_curve": (
        [-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0],
        [0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0]),
}
CURVES = tuple(DEFAULT_CURVES)
PASSIVE_GIVEN = "passive_force_length_curve.given"
_PARTS = ("breaks", "anchors", "coef")

#: SimmMacros.h ROUNDOFF_ERROR (EQUAL_WITHIN_ERROR)
ROUNDOFF_ERROR = 2e-13
#: ``computeIsometricForce``: MAX_ITERATIONS, ERROR_LIMIT (N)
MAX_ITERATIONS = 100
ERROR_LIMIT = 0.01
#: ``computeIsometricForce``'s minimum tendon stiffness constants
TENDON_ELASTIC_MODULUS = 1200.0
TENDON_MAX_STRESS = 32.0
#: Newton steps that polish OpenSim's isometric fibre length to machine precision
POLISH_STEPS = 4


# ------------------------------------------------------------------------------------------------
# curves: padded piecewise-polynomial arrays in MusclePaths.parameters
# ------------------------------------------------------------------------------------------------


def curve_parameters(curves_by_muscle, dtype=float) -> dict:
    """Padded arrays of every muscle's three curves.

    ``curves_by_muscle``: one dict per muscle mapping a curve name (:data:`CURVES`) to a
    :class:`~mbjax.maps.piecewise.PPData` (the file's function) or leaving it out (the default
    SimmSpline).  Returns ``{"<curve>.breaks" | ".anchors" | ".coef": array, PASSIVE_GIVEN: (nm,)}``.
    """
    out = {}
    defaults = {c: pp_simm_spline(*DEFAULT_CURVES[c]) for c in CURVES}
    for c in CURVES:
        pps = [m.get(c) or defaults[c] for m in curves_by_muscle]
        npc = max(p.anchors.size for p in pps)
        deg = max(p.coef.shape[1] for p in pps)
        breaks = np.full((len(pps), npc - 1), np.inf)
        anchors = np.zeros((len(pps), npc))
        coef = np.zeros((len(pps), npc, deg))
        for k, p in enumerate(pps):
            breaks[k, :p.breaks.size] = p.breaks
            anchors[k, :p.anchors.size] = p.anchors
            coef[k, :p.coef.shape[0], :p.coef.shape[1]] = p.coef
        out[f"{c}.breaks"] = jnp.asarray(breaks, dtype)
        out[f"{c}.anchors"] = jnp.asarray(anchors, dtype)
        out[f"{c}.coef"] = jnp.asarray(coef, dtype)
    out[PASSIVE_GIVEN] = jnp.asarray([float(m.get("passive_force_length_curve") is not None)
                                      for m in curves_by_muscle], dtype)
    return out


def curve(p, name: str, x):
    """Value of one muscle's curve ``name`` at scalar ``x`` (OpenSim ``Function::calcValue``);
    ``p`` holds that muscle's ``"<name>.breaks"``, ``".anchors"``, ``".coef"``."""
    b, a, c = (p[f"{name}.{k}"] for k in _PARTS)
    pp = PiecewisePolynomial(None, _stacked=(b[None], a[None], c[None], ((),), ("",)))
    return pp.evaluate(jnp.reshape(x, (1,)))[0][0]


# ------------------------------------------------------------------------------------------------
# one muscle, scalar parameters p
# ------------------------------------------------------------------------------------------------


def pennation_angle(fiber_length, optimal_fiber_length, pennation_angle_at_optimal):
    """``ActivationFiberLengthMuscle_Deprecated::calcPennation``."""
    eps = jnp.finfo(jnp.result_type(fiber_length, float)).eps
    short = fiber_length < eps
    value = optimal_fiber_length * jnp.sin(pennation_angle_at_optimal) / jnp.where(short, 1.0, fiber_length)
    inside = (value > 0.0) & (value < 1.0)
    angle = jnp.where(value >= 1.0, jnp.pi / 2, jnp.where(inside, jnp.arcsin(jnp.where(inside, value, 0.0)), 0.0))
    return jnp.where(short | jnp.isnan(value), 0.0, angle)


def tendon_force(p, norm_tendon_length):
    """``calcTendonForce``: f_T((ℓ̃_T - ℓ̃_s)/ℓ̃_s), 0 below slack (normalized by F_o)."""
    rest = p["tendon_slack_length"] / p["optimal_fiber_length"]
    strain = (norm_tendon_length - rest) / rest
    return jnp.where(strain < 0.0, 0.0, curve(p, "tendon_force_length_curve", strain))


def passive_force(p, norm_fiber_length):
    """``calcNonzeroPassiveForce(ℓ̃, 0)``: the file's curve, or exp(8(ℓ̃ - 1))/exp(4) by default."""
    exponential = jnp.exp(8.0 * (norm_fiber_length - 1.0)) / jnp.exp(4.0)
    spline = curve(p, "passive_force_length_curve", norm_fiber_length)
    return jnp.where(p[PASSIVE_GIVEN] > 0.5, spline, exponential)


def active_force(p, norm_fiber_length):
    """``calcActiveForce``: f_L(ℓ̃) as the curve gives it (``computeActuation`` floors it at 0)."""
    return curve(p, "active_force_length_curve", norm_fiber_length)


def _sqrt(x):
    pos = x > 0.0
    return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def norm_fiber_velocity(activation, active, velocity_dependent_force, damping):
    """``calcFiberVelocity``: normalized fibre velocity (units of ℓ_o / t_s)."""
    kv, slope_k, fmax = 0.15, 0.13, 1.4
    af = activation * active
    f = velocity_dependent_force
    linear = f / damping
    c1 = kv * (f - af) / damping
    b1 = -kv * (f / kv + af + damping) / damping
    shortening = (-b1 - _sqrt(b1 * b1 - 4 * c1)) / 2.0
    c2 = -(slope_k * kv / (damping * (kv + 1))) * (f - af)
    b2 = -(f / damping - fmax * af / damping - slope_k * kv / (kv + 1))
    lengthening = (-b2 + _sqrt(b2 * b2 - 4 * c2)) / 2.0
    return jnp.where(f < -damping, linear, jnp.where(f < af, shortening, lengthening))


def activation_rate(excitation, activation, activation1, activation2, time_scale):
    """ȧ of ``computeActuation`` (elementwise)."""
    u, a = excitation, activation
    d = jnp.where(u >= a, (u - a) * (activation1 * u + activation2), (u - a) * activation2)
    return d / time_scale


def compute_actuation(p, fiber_length, length, speed, activation):
    """``computeActuation`` for one muscle: a dict of the tendon force (N), the normalized
    fibre velocity (ℓ_o / t_s), the fibre velocity ℓ̇ (m/s), the normalized tendon, passive and
    active (floored at 0) forces and cos α."""
    ofl, tsl = p["optimal_fiber_length"], p["tendon_slack_length"]
    alpha_o, ts = p["pennation_angle_at_optimal"], p["time_scale"]
    norm_fl = fiber_length / ofl
    ca = jnp.cos(pennation_angle(norm_fl, 1.0, alpha_o))
    norm_mtl = length / ofl
    norm_tl = norm_mtl - norm_fl * ca
    ft = tendon_force(p, norm_tl)
    fp = passive_force(p, norm_fl)
    fa = jnp.maximum(active_force(p, norm_fl), 0.0)
    # pennation at 90°: stiff-tendon approximation (OpenSim's h mixes ℓ̃ and ℓ_s; kept as written)
    vertical = jnp.abs(ca) <= ROUNDOFF_ERROR
    h = norm_mtl - tsl
    w = ofl * jnp.sin(alpha_o)
    new_fl = jnp.sqrt(h * h + w * w) / ofl
    new_ca = jnp.cos(pennation_angle(new_fl, 1.0, alpha_o))
    v_vertical = jnp.where(jnp.abs(ft) <= ROUNDOFF_ERROR, 0.0, speed * ts / ofl * new_ca)
    vdf = jnp.maximum(ft / jnp.where(vertical, 1.0, ca) - fp, 0.0)
    v = norm_fiber_velocity(activation, fa, vdf, p["damping"])
    vn = jnp.where(vertical, v_vertical, v)
    return dict(tendon_force=ft * p["max_isometric_force"], norm_fiber_velocity=vn,
                fiber_velocity=vn * ofl / ts, norm_tendon_force=ft, norm_passive_force=fp,
                norm_active_force=fa, cos_pennation=ca)


def muscle_state(p, fiber_length, length, speed, activation):
    """OpenSim's reported state of a Schutte muscle with fibre-length state ``fiber_length``
    (``computeActuation`` and ``ActivationFiberLengthMuscle_Deprecated::calcMuscleLengthInfo`` /
    ``calcFiberVelocityInfo`` / ``calcMuscleDynamicsInfo``): the fields of
    :class:`mbjax.muscles.MuscleState`.  ``force_velocity_multiplier`` (which OpenSim does not
    define for this class) is the active fibre force over F_o a max(0, f_L), 1 where that is 0."""
    fiso, ofl = p["max_isometric_force"], p["optimal_fiber_length"]
    act = compute_actuation(p, fiber_length, length, speed, activation)
    phi = pennation_angle(fiber_length, ofl, p["pennation_angle_at_optimal"])
    cos = jnp.cos(phi)
    norm_fl = fiber_length / ofl
    fal = active_force(p, norm_fl)
    fp = passive_force(p, norm_fl)
    ft = act["tendon_force"]
    safe_cos = jnp.where(jnp.abs(cos) > 0.0, cos, 1.0)
    fiber_force = jnp.where(jnp.abs(cos) > 0.0, ft / safe_cos, jnp.nan)
    passive = fp * fiso
    active = fiber_force - passive
    denom = fiso * activation * jnp.maximum(fal, 0.0)
    fv = jnp.where(denom > 0.0, active / jnp.where(denom > 0.0, denom, 1.0), 1.0)
    return MuscleState(ft, fiber_length, act["fiber_velocity"], norm_fl,
                       act["fiber_velocity"] / (ofl * p["max_contraction_velocity"]), phi,
                       length - fiber_length * cos, active, passive, fiber_force, fal, fp, fv,
                       act["norm_tendon_force"])


# ------------------------------------------------------------------------------------------------
# computeIsometricForce (equilibrateMuscles)
# ------------------------------------------------------------------------------------------------


def opensim_isometric_fiber_length(p, length, activation):
    """``computeIsometricForce(s, a)``: the fibre length OpenSim's ``equilibrateMuscles`` leaves in
    the state, by OpenSim's own iteration (see the module docstring).  Not differentiable in a
    useful sense (a stopped iteration); :func:`isometric_fiber_length` is."""
    fiso, ofl, tsl = p["max_isometric_force"], p["optimal_fiber_length"], p["tendon_slack_length"]
    alpha_o = p["pennation_angle_at_optimal"]
    L, a = length, activation
    width = ofl * jnp.sin(alpha_o)

    def clamp_slack(lf, cos, tl):
        """the tendon is never shorter than slack: fibre length from the geometry then"""
        slack = tl < tsl
        cos_s = jnp.cos(jnp.arctan(width / (L - tsl)))
        return jnp.where(slack, (L - tsl) / cos_s, lf), jnp.where(slack, cos_s, cos), jnp.where(slack, tsl, tl)

    lf0 = ofl
    cos0 = jnp.cos(pennation_angle(lf0, ofl, alpha_o))
    tl0 = L - lf0 * cos0
    slack0 = tl0 < tsl
    lf0, cos0, tl0 = clamp_slack(lf0, cos0, tl0)
    lf0 = jnp.where(slack0, jnp.maximum(lf0, width), lf0)  # (only in the initial clamp)
    zero = jnp.zeros_like(L)

    def cond(s):
        i, lf, old_lf, cos, tl, err, done = s
        return (~done) & (i < MAX_ITERATIONS)

    def body(s):
        i, lf, old_lf, cos, tl, err, done = s
        norm = lf / ofl
        fal = active_force(p, norm)
        fp_raw = passive_force(p, norm)
        act = jnp.maximum(fal * a, 0.0)
        pas = jnp.maximum(fp_raw, 0.0)
        fiber_force = (act + pas) * fiso * cos
        strain = tl / tsl - 1.0
        ft_curve = curve(p, "tendon_force_length_curve", strain)
        ft = jnp.where(strain < 0.0, 0.0, ft_curve * fiso)
        old_err = jnp.where(i == 0, ft - fiber_force, err)
        err = ft - fiber_force
        converged = jnp.abs(err) <= ERROR_LIMIT
        sign_change = jnp.where(err >= 0, 1, -1) != jnp.where(old_err >= 0, 1, -1)
        # secant after a sign change
        percent = jnp.abs(err) / (jnp.abs(err) + jnp.abs(old_err))
        lf_secant = lf + percent * (old_lf - lf)
        # stiffness step
        kt = ft_curve * fiso / tsl
        kt_min = (act + pas) * TENDON_ELASTIC_MODULUS * fiso / (TENDON_MAX_STRESS * tsl)
        kt = jnp.where(kt < kt_min, kt_min, kt)
        km = fiso / ofl * (fal + fp_raw)
        dl = jnp.abs(err / (km / cos + kt))
        dl = jnp.where(jnp.abs(dl / ofl) > 0.5, 0.5 * ofl, dl)
        lf_step = jnp.where(err > 0.0, lf + dl, lf - dl)
        lf_new = jnp.where(sign_change, lf_secant, lf_step)
        cos_new = jnp.cos(pennation_angle(lf_new, ofl, alpha_o))
        tl_new = L - lf_new * cos_new
        lf_new, cos_new, tl_new = clamp_slack(lf_new, cos_new, tl_new)
        keep = lambda x, y: jnp.where(converged, x, y)  # noqa: E731
        return (i + 1, keep(lf, lf_new), keep(old_lf, lf), keep(cos, cos_new), keep(tl, tl_new), err, converged)

    init = (0, lf0, jnp.full_like(L, jnp.nan), cos0, tl0, zero, L < tsl)
    lf = jax.lax.while_loop(cond, body, init)[1]
    # a path shorter than the tendon's slack length: fibre length = muscle width, no force
    return jnp.where(L < tsl, width, lf)


def isometric_residual(p, fiber_length, length, activation):
    """F_T - F_M cos α (N) of ``computeIsometricForce``'s static equilibrium at ``fiber_length``
    (tendon force from the tendon length; fibre force F_o (max(0, a f_L) + max(0, f_P)))."""
    fiso, ofl, tsl = p["max_isometric_force"], p["optimal_fiber_length"], p["tendon_slack_length"]
    cos = jnp.cos(pennation_angle(fiber_length, ofl, p["pennation_angle_at_optimal"]))
    norm = fiber_length / ofl
    act = jnp.maximum(active_force(p, norm) * activation, 0.0)
    pas = jnp.maximum(passive_force(p, norm), 0.0)
    strain = (length - fiber_length * cos) / tsl - 1.0
    ft = jnp.where(strain < 0.0, 0.0, curve(p, "tendon_force_length_curve", strain) * fiso)
    return ft - (act + pas) * fiso * cos


#: the equilibria :func:`isometric_fiber_length` gives: OpenSim's stopped iteration, or the root
EQUILIBRIA = ("opensim", "exact")


def isometric_fiber_length(p, length, activation, equilibrium: str = "opensim"):
    """The isometric fibre length of ``computeIsometricForce`` with implicit-function derivatives.

    ``equilibrium="opensim"`` (default): the value of :func:`opensim_isometric_fiber_length`,
    OpenSim's iteration stopped where OpenSim stops it (|F_T - F_M cos α| ≤ 0.01 N), so equal to the
    fibre length of OpenSim's ``equilibrateMuscles``; ``"exact"``: that point polished by Newton on
    :func:`isometric_residual` to machine precision.  A Newton step is taken only where it lowers
    |residual| (it keeps OpenSim's point where the equilibrium is degenerate, e.g. a slack tendon
    with a slack fibre).  The derivatives are -(∂r/∂θ)/(∂r/∂ℓ) of the residual r at the returned
    point, for both."""
    if not isinstance(equilibrium, str) or equilibrium not in EQUILIBRIA:
        raise ValueError(f"equilibrium must be one of {EQUILIBRIA}, got {equilibrium!r}")
    consts = jax.lax.stop_gradient((p, length, activation))
    x = jax.lax.stop_gradient(opensim_isometric_fiber_length(*consts))
    res = lambda lf, p=p, L=length, a=activation: isometric_residual(p, lf, L, a)  # noqa: E731
    frozen = lambda lf: isometric_residual(consts[0], lf, consts[1], consts[2])  # noqa: E731

    def newton(_, x):
        r, dr = jax.value_and_grad(frozen)(x)
        ok = jnp.isfinite(dr) & (dr != 0.0)
        y = x - jnp.where(ok, r / jnp.where(ok, dr, 1.0), 0.0)
        ry = frozen(y)
        better = jnp.isfinite(ry) & (jnp.abs(ry) < jnp.abs(r))
        return jnp.where(better, y, x)

    # a path shorter than the tendon's slack length: OpenSim's fixed answer (muscle width, no force)
    short = consts[1] < consts[0]["tendon_slack_length"]
    if equilibrium == "exact":
        x = jax.lax.stop_gradient(jnp.where(short, x, jax.lax.fori_loop(0, POLISH_STEPS, newton, x)))
    # implicit-function derivatives: the derivative part of a Newton step of the live residual at
    # the held point (its value is not taken: the point stays OpenSim's, or the polished root)
    dr = jax.lax.stop_gradient(jax.grad(frozen)(x))
    ok = jnp.isfinite(dr) & (dr != 0.0)
    step = res(x) / jnp.where(ok, dr, 1.0)
    return jnp.where(ok & ~short, x - (step - jax.lax.stop_gradient(step)), x)
