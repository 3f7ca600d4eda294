"""Thelen (2003) curves as OpenSim 4.6's ``Thelen2003Muscle`` evaluates them (closed form).

* :func:`active_force_length` ``calcfal``: exp(-(l̃ - 1)² / KshapeActive);
* :func:`passive_force_length` ``calcfpe``: (exp(KshapePassive (l̃ - 1)/FmaxMuscleStrain) - 1) /
  (exp(KshapePassive) - 1) for l̃ > 1, else 0;
* :func:`tendon_force_length` ``calcfse``: exponential toe to the exact toe strain
  ε_toe = 99 e0 e³/(166 e³ - 67) (OpenSim's, not the paper's rounded 0.609 e0), then linear with
  k_lin = 0.67/(e0 - ε_toe), toe force 0.33, k_toe = 3;
* :func:`norm_fiber_velocity` ``calcdlceN``: Thelen's Eq. 6 velocity of the force a·f_L·f_V, with
  OpenSim's linear extrapolation below 0 and above ``fv_linear_extrap_threshold``·Flen·a·f_L;
* :func:`force_velocity_multiplier` ``calcfvInv``: its inverse.  OpenSim inverts by Newton to a
  tolerance; here the exact inverse of each rational (or linear) piece is used, clipped at 0 as
  OpenSim does (``max(0, aFalFv / (a fal))``).
"""

from __future__ import annotations

import jax.numpy as jnp


def active_force_length(lce_n, kshape_active):
    """``Thelen2003Muscle::calcfal``."""
    return jnp.exp(-((lce_n - 1.0) ** 2) / kshape_active)


def passive_force_length(lce_n, fmax_muscle_strain, kshape_passive):
    """``Thelen2003Muscle::calcfpe`` (0 at and below optimal length)."""
    x = jnp.where(lce_n > 1.0, lce_n - 1.0, 0.0)
    f = (jnp.exp(kshape_passive * x / fmax_muscle_strain) - 1.0) / (jnp.exp(kshape_passive) - 1.0)
    return jnp.where(lce_n > 1.0, f, 0.0)


def tendon_force_length(tl_n, fmax_tendon_strain):
    """``Thelen2003Muscle::calcfse``."""
    x = tl_n - 1.0
    e0 = fmax_tendon_strain
    k_toe, f_toe = 3.0, 0.33
    t1 = jnp.exp(3.0)
    e_toe = (99.0 * e0 * t1) / (166.0 * t1 - 67.0)
    k_lin = 0.67 * 1.0 / (e0 - (99.0 * e0 * t1) / (166.0 * t1 - 67.0))
    xt = jnp.clip(x, 0.0, e_toe)
    toe = (f_toe / (jnp.exp(k_toe) - 1.0)) * (jnp.exp(k_toe * xt / e_toe) - 1.0)
    lin = k_lin * (x - e_toe) + f_toe
    return jnp.where(x > e_toe, lin, jnp.where(x > 0.0, toe, 0.0))


def _pieces(a, fal, af, flen, thresh):
    afl = a * fal
    k = 0.25 + 0.75 * a
    c = (2.0 + 2.0 / af) / (flen - 1.0)
    fm1 = thresh * afl * flen  # start of the eccentric extrapolation
    b1 = c * (afl * flen - fm1)
    v1 = k * (fm1 - afl) / b1
    s1 = k / b1 - (k * (fm1 - afl) / (b1 * b1)) * (-c)
    s0 = k / afl - (k * (0.0 - afl) / (afl * afl)) * (1.0 / af)  # slope at Fm = 0
    return afl, k, c, fm1, v1, s1, s0


def norm_fiber_velocity(a, fal, a_fal_fv, af, flen, thresh):
    """``Thelen2003Muscle::calcdlceN``: normalized fibre velocity (units of vmax·ℓ_o) of the force."""
    afl, k, c, fm1, v1, s1, s0 = _pieces(a, fal, af, flen, thresh)
    fm = a_fal_fv
    conc = k * (fm - afl) / (afl + jnp.where((fm <= afl) & (fm > 0.0), fm, 0.0) / af)
    ecc_b = c * (afl * flen - jnp.where(fm > afl, jnp.minimum(fm, fm1), afl))
    ecc = k * (fm - afl) / ecc_b
    inside = (fm > 0.0) & (fm < fm1)
    curve = jnp.where(fm <= afl, conc, ecc)
    lin = jnp.where(fm <= 0.0, -k + s0 * fm, v1 + s1 * (fm - fm1))
    return jnp.where(inside, curve, lin)


def force_velocity_multiplier(a, fal, dlce_n, af, flen, thresh):
    """``Thelen2003Muscle::calcfvInv`` in closed form: f_V with ``calcdlceN(a, fal, a fal f_V) = dlce_n``."""
    afl, k, c, fm1, v1, s1, s0 = _pieces(a, fal, af, flen, thresh)
    v = dlce_n
    conc = afl * (k + v) / (k - jnp.where(v <= 0.0, v, 0.0) / af)
    ecc = afl * (k + v * c * flen) / (k + jnp.where(v > 0.0, v, 0.0) * c)
    fm = jnp.where(v <= -k, (v + k) / s0,
                   jnp.where(v <= 0.0, conc, jnp.where(v < v1, ecc, fm1 + (v - v1) / s1)))
    return jnp.maximum(0.0, fm / afl)
