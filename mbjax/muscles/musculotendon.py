"""Musculotendon mechanics of Thelen2003Muscle, Millard2012EquilibriumMuscle and
Schutte1993Muscle_Deprecated; ``muscle_forces``.

``Schutte1993Muscle_Deprecated`` (:mod:`mbjax.muscles.schutte1993`) has its own relations: its
state given the fibre length is ``computeActuation``'s, its equilibrium is ``computeIsometricForce``'s
static one (by default where OpenSim's iteration stops, as ``equilibrateMuscles`` leaves it;
``equilibrium="exact"`` polishes it to machine precision), and it has no rigid-tendon mode (refused
by name).  ``PathActuator`` tension is control · optimal_force (:mod:`mbjax.muscles.by_class`).
The rest of this docstring is about the two current classes.

For each muscle (path length L, lengthening speed V = -Rᵀq̇, activation a) the fibre state is

* **rigid tendon** (``ignore_tendon_compliance``; Millard's ``calcMuscleLengthInfo`` /
  ``calcFiberVelocityInfo`` / ``calcMuscleDynamicsInfo``): ℓ = max(ℓ_min, √(h² + (L - ℓ_s)²)),
  ℓ̇ = V cos α; f_V = 1 and ℓ̇ = 0 when the fibre is clamped at ℓ_min (or the tendon would be
  shorter than slack); F = F_o (a f_L f_V + f_PE + β ℓ̇/(v_max ℓ_o)), floored at 0, tendon force
  F cos α.  OpenSim refuses the flag for Thelen2003Muscle; here it is allowed and uses the same
  formulas with the Thelen curves (and no damping).
* **compliant tendon**: the fibre length ℓ is the equilibrium of OpenSim's
  ``computeInitialFiberEquilibrium`` (Thelen ``initMuscleState``, Millard
  ``computeFiberEquilibrium`` → ``estimateMuscleFiberState``): F(ℓ, ℓ̇) cos α = F_o f_T(ℓ_T/ℓ_s),
  ℓ_T = L - ℓ cos α.

  - Thelen: the fibre velocity comes from OpenSim's stiffness-sharing heuristic
    ℓ̇_T = K_M/(K_M + K_T) V, ℓ̇ = (V - ℓ̇_T) cos α (K_M the fibre stiffness along the tendon,
    K_T the tendon stiffness; ℓ̇_T = V when the tendon is slack).
  - Millard: the equilibrium is the *static* one, ℓ̇ = 0 (f_V = 1, no damping force) whatever
    the path speed, as in OpenSim 4.6: ``computeInitialFiberEquilibrium`` calls
    ``computeFiberEquilibrium(s, solveForVelocity=false)``, which passes a path speed of 0, and
    ``estimateMuscleFiberState`` then skips the velocity sharing (``staticSolution``; even
    ``solveForVelocity=true`` reaches it as ``staticSolution=true``).  The path speed only enters
    through the fibre velocity reported from the state (below).

  It is solved with OpenSim's own iteration (Newton on ℓ with the fibre velocity of the previous
  iterate, step halving until the force error drops, ℓ ≥ ℓ_min), run to machine precision instead
  of OpenSim's 1e-8 F_o (whatever ``equilibrium`` says: the two differ within OpenSim's tolerance),
  then one Newton step of the coupled (ℓ, ℓ̇) system written with the converged point held
  constant, so forward and reverse derivatives are the implicit-function ones.  Then, as OpenSim does from the state, the reported quantities follow from ℓ alone: f_T
  from the tendon length, and the fibre velocity from the force balance (Thelen ``calcdlceN`` of
  a f_L f_V = f_T/cos α - f_PE; Millard undamped: the inverse force-velocity curve; damped: Newton
  on a f_L f_V(v) + f_PE + β v = f_T / cos α, ``calcDampedNormFiberVelocity``).

All outputs are SI: forces in N, lengths in m, velocities in m/s.
"""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np

from .._eager import compiled_when_eager
from .._model import require_model
from . import millard2012 as mil
from . import schutte1993 as sch
from . import thelen2003 as th
from .._checks import all_of, as_array, coordinates_context, in_unit_interval, names_context, not_finite, vector
from .geometry import muscle_lengths
from .moment_arms import moment_arms
from .by_class import by_class
from .parameters import MILLARD, SCHUTTE, THELEN, hill_core_parameters
from .length_warning import warn_implausible
from .muscle_state import MuscleState
from .parameter_rules import parameter_rules
from .paths import get_paths
from .pose_warning import pose_warning
from .pennation import SIGNIFICANT_REAL, height, minimum_fiber_length, pennation_angle, rigid_fiber_length, significant_real

SQRT_EPS = float(np.sqrt(np.finfo(np.float64).eps))

#: iterations of OpenSim's equilibrium loop (it stops earlier once the force error is at rounding)
OUTER_ITERATIONS = 60


# ------------------------------------------------------------------------------------------------
# one muscle, scalar parameters p (a dict of scalars)
# ------------------------------------------------------------------------------------------------


class _Family:
    """The curves of one muscle (Thelen closed forms or Millard Bézier splines) with derivatives."""

    def __init__(self, kind, p):
        if kind == SCHUTTE:
            raise NotImplementedError(
                f"{SCHUTTE}: this computation (a rigid-tendon state, or the Thelen/Millard curves it needs) "
                "is not defined for the deprecated Schutte muscle; it has an elastic tendon only "
                "(mbjax.muscles.schutte1993)")
        self.kind, self.p = kind, p
        if kind == MILLARD:
            self.c = mil.curves(p)
            self.beta = jnp.where(mil.use_damping(p), p["fiber_damping"], 0.0)
            pen_min = minimum_fiber_length(p["optimal_fiber_length"], p["pennation_angle_at_optimal"],
                                           p["maximum_pennation_angle"])
            self.lmin = mil.minimum_fiber_length(p, pen_min)
        else:
            self.beta = 0.0
            self.lmin = minimum_fiber_length(p["optimal_fiber_length"], p["pennation_angle_at_optimal"],
                                             p["maximum_pennation_angle"])

    def _vd(self, f, x):
        return jax.jvp(f, (x,), (jnp.ones_like(x),))

    def fal(self, x):
        if self.kind == MILLARD:
            return self.c["fal"].value_and_derivative(x)
        return self._vd(lambda z: th.active_force_length(z, self.p["KshapeActive"]), x)

    def fpe(self, x):
        if self.kind == MILLARD:
            return self.c["fpe"].value_and_derivative(x)
        return self._vd(lambda z: th.passive_force_length(z, self.p["FmaxMuscleStrain"], self.p["KshapePassive"]), x)

    def fse(self, x):
        if self.kind == MILLARD:
            return self.c["fse"].value_and_derivative(x)
        return self._vd(lambda z: th.tendon_force_length(z, self.p["FmaxTendonStrain"]), x)

    def fv(self, a, fal, v):
        """Force-velocity multiplier at normalized velocity v (Thelen: ``calcfvInv``)."""
        if self.kind == MILLARD:
            return self.c["fv"](v)
        p = self.p
        return th.force_velocity_multiplier(a, fal, v, p["Af"], p["Flen"], p["fv_linear_extrap_threshold"])

    def geometry(self, lce, L):
        p = self.p
        phi = pennation_angle(lce, p["optimal_fiber_length"], p["pennation_angle_at_optimal"],
                              p["maximum_pennation_angle"])
        cos, sin = jnp.cos(phi), jnp.sin(phi)
        h = height(p["optimal_fiber_length"], p["pennation_angle_at_optimal"])
        # a fibre of zero pennation has ℓ_min = h / sin α_max = 0: at ℓ = 0 (a path shorter than its
        # tendon's slack length, e.g. gait2392's gem_r) OpenSim reports ℓ = 0 and dα/dℓ = 0, not 0/0
        pos = lce > 0
        safe = jnp.where(pos, lce, 1.0)
        hl = jnp.where(pos, h / safe, 0.0)
        dphi = jnp.where(pos, (-hl / safe) / jnp.sqrt(jnp.maximum(1.0 - hl * hl, 1e-300)), 0.0)  # calc_DPennationAngle_DfiberLength
        return phi, cos, sin, L - lce * cos, dphi


def _equilibrium_terms(fam: _Family, lce, v, L, V, a):
    """Force error and the heuristic fibre velocity at (ℓ, v) (OpenSim's ferrFunc, partialsFunc,
    velocityFunc); v is the normalized fibre velocity.  Millard at V = 0 (as its equilibrium is
    solved, ``equilibrium_speed``) is OpenSim's ``staticSolution``: the new velocity is 0."""
    p = fam.p
    fiso, ofl, tsl = p["max_isometric_force"], p["optimal_fiber_length"], p["tendon_slack_length"]
    phi, cos, sin, tl, dphi = fam.geometry(lce, L)
    fal, dfal = fam.fal(lce / ofl)
    fpe, dfpe = fam.fpe(lce / ofl)
    fse, dfse = fam.fse(tl / tsl)
    fv = fam.fv(a, fal, v)
    fm = fiso * (a * fal * fv + fpe + fam.beta * v)
    ferr = fm * cos - fse * fiso
    dfm = fiso * (a * fv * dfal + dfpe) / ofl
    dfmat = dfm * cos + fm * (-sin * dphi)
    if fam.kind == MILLARD:
        dfmat_at = dfmat / (cos - lce * sin * dphi)
    else:
        dfmat_at = dfmat * cos
    dft_dtl = dfse * fiso / tsl
    dft_dlce = dft_dtl * (lce * sin * dphi - cos)
    ksum = dfmat_at + dft_dtl
    share = (jnp.abs(ksum) > SIGNIFICANT_REAL) & (tl > tsl)
    dtl = jnp.where(share, dfmat_at / jnp.where(share, ksum, 1.0) * V, V)
    v_new = (V - dtl) * cos / (p["max_contraction_velocity"] * ofl)
    if fam.kind == MILLARD:
        v_new = jnp.where(jnp.abs(V) < SIGNIFICANT_REAL, 0.0, v_new)
    return ferr, dfmat - dft_dlce, v_new


def _opensim_iteration(fam: _Family, L, V, a):
    """OpenSim's equilibrium loop (``initMuscleState`` / ``estimateMuscleFiberState``) run to
    rounding: returns (ℓ, v, |force error|).

    OpenSim's nested loops (Newton steps on ℓ, each halved until the force error drops or the
    step factor reaches √ε; then the partials and the fibre velocity are updated at the accepted ℓ
    with the previous velocity) are folded into one ``while_loop`` that evaluates the muscle once
    per pass: a pass either accepts its trial ℓ (and takes the new velocity and slope from the same
    evaluation, as OpenSim's ``partialsFunc``/``velocityFunc`` would) or halves the step.
    """
    p = fam.p
    fiso = p["max_isometric_force"]
    tol = 4.0 * np.finfo(np.float64).eps * fiso
    lce0 = rigid_fiber_length(L, 1.01 * p["tendon_slack_length"], p["optimal_fiber_length"],
                              p["pennation_angle_at_optimal"], p["maximum_pennation_angle"])
    lce0 = jnp.maximum(lce0, fam.lmin)
    # fv = 1 (v = 0) first, then the velocity estimate, then the error with it
    _, _, v0 = _equilibrium_terms(fam, lce0, jnp.zeros_like(L), L, V, a)
    ferr0, dferr0, _ = _equilibrium_terms(fam, lce0, v0, L, V, a)
    max_passes = OUTER_ITERATIONS * 4

    def cond(s):
        it, passes, h, lce_prev, v, ferr_prev, dferr = s
        return (jnp.abs(ferr_prev) > tol) & (it < OUTER_ITERATIONS) & (passes < max_passes)

    def body(s):
        it, passes, h, lce_prev, v, ferr_prev, dferr = s
        delta = -h * ferr_prev / jnp.where(dferr == 0, 1.0, dferr)
        big = jnp.abs(delta) > SIGNIFICANT_REAL
        lce = jnp.where(big, lce_prev + delta, lce_prev - jnp.sign(delta) * SQRT_EPS)
        h_used = jnp.where(big, h, 0.0)
        lce = jnp.maximum(lce, fam.lmin)
        ferr, dferr_new, v_new = _equilibrium_terms(fam, lce, v, L, V, a)
        accept = (jnp.abs(ferr) < jnp.abs(ferr_prev)) | (h_used <= SQRT_EPS)
        pick = lambda x, y: jnp.where(accept, x, y)  # noqa: E731
        return (it + accept.astype(int), passes + 1, pick(jnp.ones_like(h), 0.5 * h_used), pick(lce, lce_prev),
                pick(v_new, v), pick(ferr, ferr_prev), pick(dferr_new, dferr))

    init = (0, 0, jnp.ones_like(L), lce0, v0, ferr0, dferr0)
    _, _, _, lce, v, ferr, _ = jax.lax.while_loop(cond, body, init)
    return lce, v, jnp.abs(ferr)


def equilibrium_speed(kind, V):
    """The path lengthening speed OpenSim's compliant-tendon equilibrium of a muscle of this family
    is solved with: V for Thelen2003Muscle; 0 for Millard2012EquilibriumMuscle, whose
    ``computeInitialFiberEquilibrium`` finds the static equilibrium (f_V = 1, no damping force,
    see the module docstring)."""
    return jnp.zeros_like(V) if kind == MILLARD else V


def equilibrium_state(fam: _Family, L, V, a):
    """(ℓ, v) of OpenSim's compliant-tendon equilibrium, differentiable (see module docstring);
    V is the path speed the equilibrium is solved with (``equilibrium_speed``)."""
    frozen = _Family(fam.kind, jax.lax.stop_gradient(fam.p))
    consts = jax.lax.stop_gradient((L, V, a))
    lce, v, _ = _opensim_iteration(frozen, *consts)
    x = jax.lax.stop_gradient(jnp.stack([lce, v]))

    def residual(x, fam=fam, L=L, V=V, a=a):
        ferr, _, v_new = _equilibrium_terms(fam, x[0], x[1], L, V, a)
        return jnp.stack([ferr / fam.p["max_isometric_force"], x[1] - v_new])

    def newton_step(x, res):
        jac = jax.jacfwd(res)(x)
        det = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
        ok = jnp.abs(det) > 1e-300
        r = res(x)
        step = jnp.stack([jac[1, 1] * r[0] - jac[0, 1] * r[1], -jac[1, 0] * r[0] + jac[0, 0] * r[1]])
        return jac, ok, x - jnp.where(ok, step / jnp.where(ok, det, 1.0), 0.0)

    # OpenSim's iteration can stall short of machine precision (Newton with the previous iterate's
    # fibre velocity and step halving: |F error| ~ 4e-3 N left on arm26's TRIlong at full elbow
    # extension), and implicit-function derivatives taken there are off by the distance to the
    # root (2.6e-7 relative in dℓ/dℓ_o, 5.6e-6 in the tendon force's).  Two exact Newton steps of
    # the coupled (ℓ, ℓ̇) system on the held-constant point first (values move by that distance,
    # ~1e-8 m there, 0 where the iteration converged).
    frozen_residual = lambda y: residual(y, frozen, *consts)  # noqa: E731
    for _ in range(2):
        y = newton_step(x, frozen_residual)[2]
        x = jax.lax.stop_gradient(jnp.stack([jnp.maximum(y[0], fam.lmin), y[1]]))
        x = jnp.where(jnp.all(jnp.isfinite(x)), x, jax.lax.stop_gradient(jnp.stack([lce, v])))

    jac = jax.lax.stop_gradient(jax.jacfwd(residual)(x))
    det = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
    ok = jnp.abs(det) > 1e-300
    det = jnp.where(ok, det, 1.0)
    r = residual(x)
    step = jnp.stack([jac[1, 1] * r[0] - jac[0, 1] * r[1], -jac[1, 0] * r[0] + jac[0, 0] * r[1]]) / det
    y = x - jnp.where(ok, step, 0.0)
    at_bound = x[0] <= fam.lmin
    return jnp.where(at_bound, jnp.maximum(y[0], fam.lmin), y[0]), y[1]


def _state_from_fiber_length(fam: _Family, lce, L, V, a):
    """OpenSim's length, velocity and dynamics info of an elastic-tendon muscle whose fibre length
    state is ``lce`` (Thelen2003Muscle / Millard2012EquilibriumMuscle ``calc*Info``)."""
    p = fam.p
    fiso, ofl, tsl = p["max_isometric_force"], p["optimal_fiber_length"], p["tendon_slack_length"]
    vmax = p["max_contraction_velocity"]
    lce_state = lce
    lce = jnp.maximum(lce, fam.lmin)
    phi, cos, sin, tl, _ = fam.geometry(lce, L)
    fal, _ = fam.fal(lce / ofl)
    fpe, _ = fam.fpe(lce / ofl)
    fse, _ = fam.fse(tl / tsl)
    if fam.kind == THELEN:
        afalfv = fse / cos - fpe
        fv = afalfv / (a * fal)
        vn = th.norm_fiber_velocity(a, fal, afalfv, p["Af"], p["Flen"], p["fv_linear_extrap_threshold"])
        clamped = (lce_state <= fam.lmin) & (vn <= 0)
    else:
        damped = mil.use_damping(p)
        # undamped: fv from the force balance, velocity from the inverse curve
        fv_u = (fse / cos - fpe) / (a * fal)
        vn_u = fam.c["fv_inv"](fv_u)
        # damped: Newton on a fal fv(v) + fpe + beta v = fse / cos (calcDampedNormFiberVelocity)
        beta = jnp.where(damped, fam.beta, 1.0)
        fv0 = (fse / jnp.maximum(cos, 0.01) - fpe) / (jnp.maximum(a, 0.01) * jnp.maximum(fal, 0.01))
        v0 = jnp.clip(fam.c["fv_inv"](fv0), -1.0, 1.0)

        def newton(_, v):
            f, df = fam.c["fv"].value_and_derivative(v)
            err = (a * fal * f + fpe + beta * v) * cos - fse
            return v - err / ((a * fal * df + beta) * cos)

        vn_d = jax.lax.fori_loop(0, 20, newton, jax.lax.stop_gradient(v0))
        vn_d = jax.lax.stop_gradient(vn_d)
        f, df = fam.c["fv"].value_and_derivative(vn_d)
        vn_d = vn_d - ((a * fal * f + fpe + beta * vn_d) * cos - fse) / ((a * fal * df + beta) * cos)
        vn = jnp.where(damped, vn_d, vn_u)
        fv = jnp.where(damped, fam.c["fv"](vn_d), fv_u)
        clamped = ((lce <= fam.lmin) & (vn <= 0)) | (lce_state < fam.lmin)
    vn = jnp.where(clamped, 0.0, vn)
    fv = jnp.where(clamped, 1.0, fv)
    active = jnp.where(clamped, 0.0, fiso * a * fal * fv)
    damping = jnp.where(clamped, 0.0, fiso * fam.beta * vn)
    passive = fiso * fpe + damping
    if fam.kind == MILLARD:
        passive = jnp.where(clamped, 0.0, passive)
    fm = jnp.where(clamped, 0.0, active + fiso * fpe + damping)
    return MuscleState(fse * fiso, lce, vn * vmax * ofl, lce / ofl, vn, phi, tl, active, passive, fm,
                       fal, fpe, fv, fse)


def _rigid_state(fam: _Family, L, V, a):
    """Millard's rigid-tendon length, velocity and dynamics info (also used for Thelen muscles)."""
    p = fam.p
    fiso, ofl, tsl = p["max_isometric_force"], p["optimal_fiber_length"], p["tendon_slack_length"]
    vmax = p["max_contraction_velocity"]
    lce_path = rigid_fiber_length(L, tsl, ofl, p["pennation_angle_at_optimal"], p["maximum_pennation_angle"])
    lce = jnp.maximum(lce_path, fam.lmin)
    phi, cos, sin, tl, _ = fam.geometry(lce, L)
    fal, _ = fam.fal(lce / ofl)
    fpe, _ = fam.fpe(lce / ofl)
    # OpenSim's ℓ_T < ℓ_s - SignificantReal; ℓ_T = ℓ_s unless ℓ was raised (in float32 L - ℓ cos α rounds below)
    slack = (lce_path <= fam.lmin) & (tl < tsl - significant_real(tl.dtype))
    vn = jnp.where(slack, 0.0, V * cos / (ofl * vmax))
    clamped = ((lce <= fam.lmin) & (vn <= 0)) | (lce < fam.lmin)
    vn = jnp.where(clamped, 0.0, vn)
    if fam.kind == MILLARD:
        fv = fam.c["fv"](vn)
    else:
        fv = fam.fv(a, fal, vn)
    fv = jnp.where(slack | clamped, 1.0, fv)
    active = jnp.where(clamped, 0.0, fiso * a * fal * fv)
    p1 = jnp.where(clamped, 0.0, fiso * fpe)
    p2 = jnp.where(clamped, 0.0, fiso * fam.beta * vn)
    fm = active + p1 + p2
    negative = fm < 0
    p2 = jnp.where(negative, -active - p1, p2)
    fm = jnp.where(negative, 0.0, fm)
    return MuscleState(fm * cos, lce, vn * vmax * ofl, lce / ofl, vn, phi, tl, active, p1 + p2, fm,
                       fal, fpe, fv, fm * cos / fiso)


def _schutte_rigid_refused(p, state, tendons):
    """A Schutte muscle has no rigid-tendon mode: refused by name when that is known at trace time,
    NaN where a (traced) ``ignore_tendon_compliance`` flag asks for it."""
    if tendons == "rigid":
        raise NotImplementedError(f"{SCHUTTE} has no rigid-tendon mode (OpenSim refuses "
                                  "ignore_tendon_compliance for it)")
    rigid = p["ignore_tendon_compliance"] > 0.5
    return jax.tree_util.tree_map(lambda x: jnp.where(rigid, jnp.nan, x), state)


def _one_muscle(kind, p, L, V, a, tendons="both", equilibrium="opensim"):
    if kind == SCHUTTE:  # computeIsometricForce's equilibrium, then computeActuation's state there
        lce = sch.isometric_fiber_length(p, L, a, equilibrium)
        return _schutte_rigid_refused(p, sch.muscle_state(p, lce, L, V, a), tendons)
    fam = _Family(kind, p)
    a = jnp.clip(a, p["minimum_activation"], 1.0)
    if tendons != "elastic":
        rigid = _rigid_state(fam, L, V, a)
    if tendons != "rigid":
        lce, _ = equilibrium_state(fam, L, equilibrium_speed(kind, V), a)
        elastic = _state_from_fiber_length(fam, lce, L, V, a)
    if tendons == "rigid":
        return rigid
    if tendons == "elastic":
        return elastic
    use_rigid = p["ignore_tendon_compliance"] > 0.5
    return jax.tree_util.tree_map(lambda r, e: jnp.where(use_rigid, r, e), rigid, elastic)


def _one_muscle_given_fiber_length(kind, p, lce, L, V, a):
    if kind == SCHUTTE:
        return _schutte_rigid_refused(p, sch.muscle_state(p, lce, L, V, a), "elastic")
    fam = _Family(kind, p)
    a = jnp.clip(a, p["minimum_activation"], 1.0)
    return _state_from_fiber_length(fam, lce, L, V, a)


def _muscle_inputs(model, **arrays):
    """The per-muscle inputs as ``(nm,)`` arrays of one dtype: shapes checked when traced (named,
    nothing broadcast), values in one fused run-time check (:mod:`mbjax._checks`): finite, path
    lengths > 0, fibre lengths >= 0, activations in [0, 1] (OpenSim clamps an activation outside [a_min, 1]; a value
    outside [0, 1] handed to a force is a mistake, not a state)."""
    paths = get_paths(model)
    ctx = names_context("muscles", paths.names)
    out = {k: as_array(v, k, (paths.n_muscles,), ("nm",), ctx) for k, v in arrays.items()}
    dtype = jnp.result_type(*out.values(), float)
    out = {k: v.astype(dtype) for k, v in out.items()}
    if paths.n_muscles == 0:  # no muscle, nothing to check (the shapes are (0,))
        return tuple(out.values())
    rules = []
    for k, v in out.items():
        rules.append(not_finite(v, f"{k}", ctx))
        if k == "length":
            rules.append((v <= 0, f"length must be > 0 (m){ctx}"))
        if k == "fiber_length":  # 0 is a state OpenSim reports (a fibre collapsed to its minimum)
            rules.append((v < 0, f"fiber_length must be >= 0 (m){ctx}"))
        if k == "activation":
            rules.append(in_unit_interval(v, "activation", paths.names, ctx))
    rules += parameter_rules(paths, "muscle parameters")
    first = next(iter(out))
    out[first] = all_of(out[first], rules)
    return tuple(out.values())


def _nan_where_undefined(state, *inputs):
    """NaN in every field of a muscle whose inputs hold NaN or inf: with checks off a bad input
    propagates (the solvers' guards would otherwise return a plausible finite force)."""
    bad = ~jnp.all(jnp.isfinite(jnp.stack(inputs)), axis=0)
    return jax.tree_util.tree_map(lambda x: jnp.where(bad, jnp.nan, x), state)


def _check_equilibrium(equilibrium, where):
    if not isinstance(equilibrium, str) or equilibrium not in sch.EQUILIBRIA:
        raise ValueError(f"{where}: equilibrium must be one of {sch.EQUILIBRIA}, got {equilibrium!r}")


def musculotendon_state(model, length, speed, activation, equilibrium: str = "opensim") -> MuscleState:
    """Fibre and tendon state of every muscle from path lengths, lengthening speeds and activations
    ``(nm,)`` each (rigid tendons directly, compliant ones at OpenSim's equilibrium).

    ``equilibrium``: ``"opensim"`` (default) or ``"exact"``, as :func:`muscle_forces` says."""
    require_model(model, "musculotendon_state")
    return _state(model, length, speed, activation, "musculotendon_state", 4, equilibrium)


def _state(model, length, speed, activation, where, stacklevel, equilibrium="opensim"):
    """:func:`musculotendon_state`, warning as ``where`` about values in the wrong units (eager calls)."""
    _check_equilibrium(equilibrium, where)
    length, speed, activation = _muscle_inputs(model, length=length, speed=speed, activation=activation)
    warn_implausible(get_paths(model), where, length, speed, stacklevel)
    return _tendon_state(model, length, speed, activation, equilibrium=equilibrium)


def _tendon_state_of(model, length, speed, activation, equilibrium):
    """Every muscle's state from checked inputs, by class; compiled once per model structure when called
    eagerly (:func:`mbjax._eager.compiled_when_eager`), inlined under an outer ``jit``."""

    def one(kind, p, L, V, a, tendons="both"):
        return _one_muscle(kind, p, L, V, a, tendons, equilibrium)

    state = by_class(model, one, length, speed, activation, control=activation, per_tendon_mode=True)
    return _nan_where_undefined(state, length, speed, activation, *hill_core_parameters(get_paths(model)))


_tendon_state = compiled_when_eager(_tendon_state_of, pose=False)


def state_from_fiber_length(model, fiber_length, length, speed, activation) -> MuscleState:
    """OpenSim's muscle state for a given fibre-length state (elastic tendon): what
    ``Muscle::getTendonForce``, ``getFiberVelocity`` ... report for that state."""
    require_model(model, "state_from_fiber_length")
    args = _muscle_inputs(model, fiber_length=fiber_length, length=length, speed=speed, activation=activation)
    state = by_class(model, _one_muscle_given_fiber_length, *args, control=args[-1])
    return _nan_where_undefined(state, *args, *hill_core_parameters(get_paths(model)))


def equilibrium_fiber_length(model, length, speed, activation, equilibrium: str = "opensim"):
    """Equilibrium fibre length ``(nm,)`` (m) of OpenSim's ``computeInitialFiberEquilibrium``
    (the rigid-tendon fibre length where ``ignore_tendon_compliance``; 0 for a ``PathActuator``).

    ``equilibrium``: ``"opensim"`` (default) or ``"exact"``, as :func:`muscle_forces` says."""
    require_model(model, "equilibrium_fiber_length")
    return _state(model, length, speed, activation, "equilibrium_fiber_length", 4, equilibrium).fiber_length


def muscle_state(model, q, qd, activation, equilibrium: str = "opensim") -> MuscleState:
    """Fibre and tendon state at pose ``q``, velocity ``qd`` and activation ``(nm,)``:
    L from :func:`mbjax.muscle_lengths`, V = -Rᵀ q̇ with R from :func:`mbjax.moment_arms`.
    Called eagerly, a pose far outside the coordinate ranges is warned about (it looks like degrees).

    ``equilibrium``: ``"opensim"`` (default) or ``"exact"``, as :func:`muscle_forces` says."""
    require_model(model, "muscle_state")
    _check_equilibrium(equilibrium, "muscle_state")
    with pose_warning(model, q, "muscle_state"):
        return _muscle_state(model, q, qd, activation, "muscle_state", equilibrium)


def _muscle_state(model, q, qd, activation, where, equilibrium="opensim") -> MuscleState:
    length = muscle_lengths(model, q)
    qd = vector(qd, "qd", model.n_coordinates, "nq", coordinates_context(model))
    speed = -(moment_arms(model, q).T @ qd.astype(length.dtype))
    return _state(model, length, speed, activation, where, 5, equilibrium)


def muscle_forces(model, q, qd, activation, equilibrium: str = "opensim"):
    """Tendon forces ``(nm,)`` (N): rigid tendons directly, compliant tendons at their equilibrium
    fibre state.  Generalized muscle forces are ``moment_arms(model, q) @ muscle_forces(...)``.

    As OpenSim, a Thelen or Millard muscle's active force uses its activation clamped to
    [``minimum_activation``, 1]: below ``minimum_activation`` (a = 0 included) the force does not
    depend on the activation, and its derivative with respect to the activation is 0 there.  A
    ``PathActuator``'s entry of ``activation`` is its control: tension control · optimal_force, as
    OpenSim's ``PathActuator::computeActuation``.  A muscle loaded with ``ignore_forces`` has
    zero tension; a model with no muscle of a modelled class is refused, naming its paths
    (:mod:`mbjax.muscles.by_class`).

    ``equilibrium``: ``"opensim"`` (default), the equilibrium OpenSim's ``equilibrateMuscles`` leaves
    in the state, or ``"exact"``, solved to machine precision.  They differ for
    ``Schutte1993Muscle_Deprecated`` muscles, whose OpenSim iteration stops at a force error of
    0.01 N (:mod:`mbjax.muscles.schutte1993`); Thelen and Millard equilibria are solved to rounding
    either way (OpenSim stops at 1e-8 F_o).  Derivatives are the implicit-function ones in both."""
    require_model(model, "muscle_forces")
    _check_equilibrium(equilibrium, "muscle_forces")
    with pose_warning(model, q, "muscle_forces"):
        return _muscle_state(model, q, qd, activation, "muscle_forces", equilibrium).tendon_force

