"""OpenSim's MINPACK ``lmdif_C`` (``OpenSim/Common/Lmdif.cpp``) for one residual in one unknown.

OpenSim's copy is Steve Moshier's C translation of MINPACK ``lmdif`` with OpenSim's own changes,
all of which are kept here:

* the forward-difference Jacobian uses a *constant absolute* step ``h = 1e-5``
  (``fdjac2``: "dkb - changed to equal TvdB solver code"); ``epsfcn`` is ignored;
* the Jacobian's function evaluations are not counted in ``nfev`` (so ``maxfev`` counts the
  starting point and the trial points only);
* the first step bound is ``delta = factor * |diag x0|``, replaced by ``factor`` when
  ``|delta| <= 1e-4`` (MINPACK: only when it is 0);
* ``MACHEP = 1.2e-16`` and ``DWARF = 1e-38`` (MINPACK: the double's 2.2e-16 and 2.2e-308).

With m = n = 1 the QR factorisation with pivoting (``qrfac``), ``qrsolv``'s Givens rotation and
the Levenberg-Marquardt parameter search (``lmpar``) collapse to scalar formulas; they are
written out below in OpenSim's operation order (``enorm`` of one number is ``sqrt(x*x)`` in its
middle range and ``|x|`` outside it), with every test, constant and termination code (``info``
1-8), so that the iterate where OpenSim stops is reproduced to the last bit wherever XLA's
elementary operations round as the C ones do (IEEE +, -, *, /, sqrt: they do; no FMA is formed).

Derivatives: JAX's forward mode through the loops gives the derivative of the stopped iterate
(every step taken, its branch decisions held), which is the derivative of what is computed, also
where lmdif stops away from a root (e.g. on ``ftol`` with F(x*) != 0).  The one square root that
can be taken of 0 in value (``sqrt(par)``, par = 0 on a Gauss-Newton step) has a zero derivative
there (:func:`_sqrt`).  The loops are ``while_loop`` s: reverse mode needs a transposable rule
around them (:mod:`mbjax.wrapping._jacobian_rule`).
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

#: ``Lmdif.cpp``'s ``MACHEP`` and ``DWARF`` (not the double's epsilon / tiny)
MACHEP = 1.2e-16
DWARF = 1.0e-38
#: ``enorm``'s ``rdwarf`` / ``rgiant``
RDWARF = 3.834e-20
RGIANT = 1.304e19
#: ``fdjac2``'s constant forward-difference step (OpenSim's change)
FDJAC_STEP = 1e-5
#: ``lmpar``'s iteration limit
LMPAR_MAXIT = 10


def rounded(p):
    """``p`` unchanged, but as a separately rounded value: XLA's CPU backend otherwise contracts a
    product feeding an addition into one fused multiply-add (one rounding instead of C's two).
    The select on ``isnan`` cannot be simplified away and stops the contraction.  Applied to a
    square root it also stops ``x / sqrt(y)`` from becoming ``x * rsqrt(y)``."""
    return jnp.where(jnp.isnan(p), jnp.nan, p)


def opaque(c, like):
    """The constant ``c`` as a run-time value (NaN where ``like`` is NaN): XLA rewrites division by
    a compile-time constant as multiplication by its rounded reciprocal, which is not C's
    correctly rounded ``x / c`` (e.g. for c = 0.1 or 1e-5)."""
    return jnp.where(jnp.isnan(like), jnp.nan, jnp.asarray(c, jnp.result_type(like)))


def div(a, b):
    """C's ``a / b``, correctly rounded and rounded on its own: a Python-number ``b`` is made
    :func:`opaque`, a run-time ``b`` :func:`rounded` (no ``x * rsqrt``, no ``a / (b / c)`` rewrite),
    and the quotient is :func:`rounded` (XLA rewrites ``(a / b) / c`` as ``a / (b * c)`` and
    ``a * (b / c)`` as ``(a * b) / c``, each with a different rounding)."""
    b = opaque(b, a) if isinstance(b, (int, float)) else rounded(b)
    return rounded(a / b)


def _sqrt(x):
    """``sqrt(x)``, same value (NaN for x < 0), with derivative 0 at x = 0 instead of 0 / 0."""
    zero = x == 0.0
    return jnp.where(zero, x, jnp.sqrt(jnp.where(zero, 1.0, x)))


def _enorm1(v):
    """``enorm(1, &v)``: sqrt(v*v) for rdwarf < |v| < rgiant, |v| otherwise (NaN stays NaN)."""
    a = jnp.abs(v)
    mid = (a > RDWARF) & (a < RGIANT)
    return rounded(jnp.where(mid, jnp.sqrt(a * a), a))


def _dmax1(a, b):
    return jnp.where(a >= b, a, b)


def _dmin1(a, b):
    return jnp.where(a <= b, a, b)


def _qrsolv1(r, d, qtb):
    """``qrsolv`` for n = 1: (x, sdiag) solving r x = qtb, d x = 0 in the least-squares sense."""
    zero = jnp.zeros_like(r)
    small = jnp.abs(r) < jnp.abs(d)
    ratio = div(jnp.where(small, r, d), jnp.where(small, d, r))  # cotan or tan
    c1 = div(opaque(0.5, ratio), jnp.sqrt(0.25 + rounded(0.25 * ratio * ratio)))
    c2 = c1 * ratio
    sin = jnp.where(small, c1, c2)
    cos = jnp.where(small, c2, c1)
    rot = d != 0.0  # (when d == 0 the Givens step is skipped: sdiag = r, wa = qtb)
    sdiag = jnp.where(rot, rounded(cos * r) + rounded(sin * d), r)
    wa = jnp.where(rot, rounded(cos * qtb) + rounded(sin * zero), qtb)
    x = jnp.where(sdiag == 0.0, zero, div(wa - zero, jnp.where(sdiag == 0.0, 1.0, sdiag)))
    return x, sdiag


def _lmpar1(r, diag, qtb, delta, par):
    """``lmpar`` for n = 1: (par, x) with x the (undamped or damped) step before negation."""
    zero = jnp.zeros_like(r)
    nsing = r != 0.0
    x_gn = jnp.where(nsing, div(qtb, jnp.where(nsing, r, 1.0)), zero)
    wa2 = diag * x_gn
    dxnorm = _enorm1(wa2)
    fp = dxnorm - delta
    gauss_newton = fp <= 0.1 * delta

    # lower bound parl (0 for a singular r), upper bound paru
    w = div(rounded(diag * div(wa2, dxnorm)) - zero, r)
    t = _enorm1(w)
    parl = jnp.where(nsing, div(div(div(fp, delta), t), t), zero)
    gnorm = _enorm1(div(zero + rounded(r * qtb), diag))
    paru = div(gnorm, delta)
    paru = jnp.where(paru == 0.0, div(opaque(DWARF, delta), _dmin1(delta, opaque(0.1, delta))), paru)
    par = _dmax1(par, parl)
    par = _dmin1(par, paru)
    par = jnp.where(par == 0.0, div(gnorm, dxnorm), par)

    def body(st):
        it, par, parl, paru, fp, _, _ = st
        it = it + 1
        par = jnp.where(par == 0.0, _dmax1(jnp.asarray(DWARF, r.dtype), 0.001 * paru), par)
        x, sdiag = _qrsolv1(r, rounded(_sqrt(par)) * diag, qtb)
        wa2 = diag * x
        dxnorm = _enorm1(wa2)
        fp_old = fp
        fp = dxnorm - delta
        stop = (jnp.abs(fp) <= 0.1 * delta) | ((parl == 0.0) & (fp <= fp_old) & (fp_old < 0.0)) | (
            it == LMPAR_MAXIT)
        w = div(rounded(diag * div(wa2, dxnorm)), sdiag)
        t = _enorm1(w)
        parc = div(div(div(fp, delta), t), t)
        parl_n = jnp.where(fp > 0.0, _dmax1(parl, par), parl)
        paru_n = jnp.where(fp < 0.0, _dmin1(paru, par), paru)
        par_n = _dmax1(parl_n, par + parc)
        return (it, jnp.where(stop, par, par_n), jnp.where(stop, parl, parl_n), jnp.where(stop, paru, paru_n),
                fp, x, stop)

    st0 = (jnp.zeros((), jnp.int32), par, parl, paru, fp, x_gn, gauss_newton)
    _, par_it, _, _, _, x_it, _ = lax.while_loop(lambda s: ~s[6], body, st0)
    return jnp.where(gauss_newton, zero, par_it), jnp.where(gauss_newton, x_gn, x_it)


def lmdif1(fcn, x0, ftol, xtol, gtol, maxfev, factor):
    """OpenSim's ``lmdif_C(fcn, m=1, n=1, x0, ftol, xtol, gtol, maxfev, epsfcn, diag, mode=1,
    factor, ...)``: minimise ``fcn(x)**2`` from ``x0``.

    ``fcn`` maps a scalar to a scalar (traceable).  Returns ``(x, info, nfev)``: the final
    estimate, MINPACK's termination code (1 ftol, 2 xtol, 3 both, 4 gtol, 5 maxfev, 6-8 the
    ``MACHEP`` versions; 0 never) and the number of counted ``fcn`` calls.  ``epsfcn`` is absent
    because OpenSim's ``fdjac2`` ignores it (constant step :data:`FDJAC_STEP`).
    """
    x0 = jnp.asarray(x0)
    dtype = x0.dtype
    zero = jnp.zeros((), dtype)
    one = jnp.ones((), dtype)
    f0 = fcn(x0)
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    # (x, f, fnorm, r, qtf, acnorm, diag, delta, par, xnorm, gnorm, iter, nfev, info, new_jac)
    st0 = (x0, f0, _enorm1(f0), zero, zero, zero, zero, zero, zero, zero, zero, i32(1), i32(1), i32(0),
           jnp.asarray(True))

    def body(st):
        x, f, fnorm, r, qtf, acnorm, diag, delta, par, xnorm, gnorm, it, nfev, info, new_jac = st
        # ---- outer loop head (after a successful step): Jacobian, qrfac, scaling, qtf, gnorm
        xh = rounded(x + FDJAC_STEP)  # (rounded: no folding of x + h into the constants of fcn)
        jac = div(fcn(xh) - f, FDJAC_STEP)
        an = _enorm1(jac)
        ajn = jnp.where(jac < 0.0, -an, an)
        hh = jnp.where(an == 0.0, jac, div(jac, jnp.where(an == 0.0, 1.0, ajn)) + 1.0)  # Householder a
        r_n = -ajn
        first = it == 1
        diag0 = jnp.where(an == 0.0, one, an)
        xnorm0 = _enorm1(diag0 * x)
        delta0 = factor * xnorm0
        delta0 = jnp.where(jnp.abs(delta0) <= 1e-4, factor, delta0)
        diag_n = jnp.where(first, diag0, diag)
        xnorm_n = jnp.where(first, xnorm0, xnorm)
        delta_n = jnp.where(first, delta0, delta)
        hs = jnp.where(hh != 0.0, hh, 1.0)
        s = zero + rounded(hh * f)
        qtf_n = jnp.where(hh != 0.0, f + rounded(hh * div(-s, hs)), f)
        g = div(zero + rounded(r_n * div(qtf_n, jnp.where(fnorm != 0.0, fnorm, 1.0))), jnp.where(an != 0.0, an, 1.0))
        gnorm_n = jnp.where((fnorm != 0.0) & (an != 0.0), _dmax1(zero, jnp.abs(g)), zero)
        stop4 = gnorm_n <= gtol
        diag_n = _dmax1(diag_n, an)
        r, qtf, acnorm = (jnp.where(new_jac, a, b) for a, b in ((r_n, r), (qtf_n, qtf), (an, acnorm)))
        diag, xnorm, delta, gnorm = (jnp.where(new_jac, a, b) for a, b in
                                     ((diag_n, diag), (xnorm_n, xnorm), (delta_n, delta), (gnorm_n, gnorm)))
        info4 = new_jac & stop4

        # ---- inner loop: Levenberg-Marquardt parameter, trial step, ratio, step bound
        par, step = _lmpar1(r, diag, qtf, delta, par)
        p = -step
        x_try = x + p
        pnorm = _enorm1(diag * p)
        delta = jnp.where(it == 1, _dmin1(delta, pnorm), delta)
        f1 = fcn(x_try)
        nfev_n = nfev + 1
        fnorm1 = _enorm1(f1)
        ratio_f = div(fnorm1, fnorm)
        actred = jnp.where(0.1 * fnorm1 < fnorm, one - rounded(ratio_f * ratio_f), -one)
        temp1 = div(_enorm1(zero + rounded(r * p)), fnorm)
        temp2 = div(rounded(_sqrt(par)) * pnorm, fnorm)
        t11, t22 = rounded(temp1 * temp1), rounded(temp2 * temp2)
        prered = t11 + div(t22, 0.5)
        dirder = -(t11 + t22)
        ratio = jnp.where(prered != 0.0, div(actred, jnp.where(prered != 0.0, prered, 1.0)), zero)
        shrink = ratio <= 0.25
        # (opaque constants: ``par / tmp`` must stay a division when tmp is 0.5 or 0.1)
        tmp = jnp.where(actred >= 0.0, opaque(0.5, par), div(0.5 * dirder, dirder + rounded(0.5 * actred)))
        tmp = jnp.where((0.1 * fnorm1 >= fnorm) | (tmp < 0.1), opaque(0.1, par), tmp)
        grow = (par == 0.0) | (ratio >= 0.75)
        delta_s = jnp.where(shrink, tmp * _dmin1(delta, div(pnorm, 0.1)), jnp.where(grow, div(pnorm, 0.5), delta))
        par_s = jnp.where(shrink, div(par, tmp), jnp.where(grow, 0.5 * par, par))
        ok = ratio >= 1e-4
        x_s = jnp.where(ok, x_try, x)
        f_s = jnp.where(ok, f1, f)
        xnorm_s = jnp.where(ok, _enorm1(diag * x_try), xnorm)
        fnorm_s = jnp.where(ok, fnorm1, fnorm)
        it_s = jnp.where(ok, it + 1, it)
        conv_f = (jnp.abs(actred) <= ftol) & (prered <= ftol) & (0.5 * ratio <= 1.0)
        conv_x = delta_s <= xtol * xnorm_s
        info_s = jnp.where(conv_x, jnp.where(conv_f, 3, 2), jnp.where(conv_f, 1, 0))
        info_t = jnp.where(gnorm <= MACHEP, 8, jnp.where(delta_s <= MACHEP * xnorm_s, 7, jnp.where(
            (jnp.abs(actred) <= MACHEP) & (prered <= MACHEP) & (0.5 * ratio <= 1.0), 6,
            jnp.where(nfev_n >= maxfev, 5, 0))))
        info_s = jnp.where(info_s != 0, info_s, info_t).astype(jnp.int32)

        keep = lambda a, b: jnp.where(info4, a, b)  # noqa: E731  (gtol stop: no step taken)
        return (keep(x, x_s), keep(f, f_s), keep(fnorm, fnorm_s), r, qtf, acnorm, diag, keep(delta, delta_s),
                keep(par, par_s), keep(xnorm, xnorm_s), gnorm, keep(it, it_s), keep(nfev, nfev_n),
                keep(i32(4), info_s), ok)

    out = lax.while_loop(lambda st: st[13] == 0, body, st0)
    return out[0], out[13], out[12]
