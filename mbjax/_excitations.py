"""Excitation signals u(t) ``(nm,)`` as ``eqx.Module`` objects (their numbers are dynamic leaves).

Passed as ``excitations`` to :func:`mbjax.simulate_muscles`: a new instance with new numbers (same
shapes) reuses the compiled solve.  Any callable ``t -> (nm,)`` works too (a plain function is a
static argument, hashed by identity).

* :class:`ConstantExcitation`: u(t) = u₀ (OpenSim: a ``PrescribedController`` with ``Constant``
  functions);
* :class:`PiecewiseLinearExcitation`: linear interpolation between knots, constant outside
  (OpenSim: ``PiecewiseLinearFunction`` controls).  Its kinks are where an adaptive solver should
  stop: pass the knots as ``jump_ts`` of a ``diffrax.PIDController`` for tight tolerances.

Both refuse bad numbers where they are built: shapes always, values (finite, excitations in
[0, 1], knot times strictly increasing) when they are concrete (not traced).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checks


def _real(x, name: str):
    """``x`` as a real array (refuses strings, None, complex and bool with a message naming ``name``)."""
    return _checks.real_array(x, f"{name} must be a real array", f"{name} must be a real (integer or floating) array",
                              show_value=True)


def _concrete(x):
    """NumPy copy of ``x``, or ``None`` when it is traced (values are then not checked)."""
    return None if isinstance(x, jax.core.Tracer) else np.asarray(x)


def _check_unit_interval(values, name: str):
    v = _concrete(values)
    if v is None:
        return
    bad = ~np.isfinite(v)
    if bad.any():
        raise ValueError(f"{name} must be finite, got NaN or inf at index {tuple(int(i) for i in np.argwhere(bad)[0])}")
    out = (v < 0) | (v > 1)
    if out.any():
        i = tuple(int(j) for j in np.argwhere(out)[0])
        raise ValueError(f"{name} must be excitations in [0, 1], got {v[i]} at index {i}")


class ConstantExcitation(eqx.Module):
    """u(t) = ``values`` ``(nm,)``, each in [0, 1]."""

    values: jnp.ndarray

    def __check_init__(self):
        v = _real(self.values, "ConstantExcitation: values")
        if v.ndim != 1:
            raise ValueError(f"ConstantExcitation: values must be a 1-D array (nm,), one excitation per muscle, "
                             f"got shape {v.shape}")
        _check_unit_interval(self.values, "ConstantExcitation: values")

    def __call__(self, t):
        return jnp.asarray(self.values)


class PiecewiseLinearExcitation(eqx.Module):
    """Linear interpolation of ``values`` ``(n, nm)`` (each in [0, 1]) at strictly increasing knot
    ``times`` ``(n,)``, n >= 2; constant before the first and after the last knot (a simulation
    running past them warns, naming the times)."""

    times: jnp.ndarray
    values: jnp.ndarray

    def __check_init__(self):
        who = "PiecewiseLinearExcitation"
        t = _real(self.times, f"{who}: times")
        v = _real(self.values, f"{who}: values")
        if t.ndim != 1:
            raise ValueError(f"{who}: times must be a 1-D array (n,) of knot times, got shape {t.shape}")
        if v.ndim != 2:
            raise ValueError(f"{who}: values must have shape (n, nm) = ({t.shape[0]}, nm), one row per knot time, "
                             f"got shape {v.shape}")
        if v.shape[0] != t.shape[0]:
            raise ValueError(f"{who}: values must have one row per knot time, shape (n, nm) = ({t.shape[0]}, nm), "
                             f"got shape {v.shape}")
        if t.shape[0] < 2:
            raise ValueError(f"{who}: needs at least 2 knots, got {t.shape[0]} (use ConstantExcitation for a "
                             "constant excitation)")
        tn = _concrete(self.times)
        if tn is not None:
            if not np.all(np.isfinite(tn)):
                raise ValueError(f"{who}: times must be finite, got {tn}")
            if np.any(np.diff(tn) <= 0):
                i = int(np.argmax(np.diff(tn) <= 0))
                raise ValueError(f"{who}: times must be strictly increasing (sorted, no repeats), got "
                                 f"times[{i}] = {tn[i]} and times[{i + 1}] = {tn[i + 1]}")
        _check_unit_interval(self.values, f"{who}: values")

    def __call__(self, t):
        return jax.vmap(lambda col: jnp.interp(t, self.times, col), in_axes=1)(jnp.asarray(self.values))


def warn_knots_outside(excitations, t0, t1, who: str) -> None:
    """Warn when a concrete :class:`PiecewiseLinearExcitation` has no knot interval inside ``[t0, t1]``:
    the signal is then held at one end's value the whole time (knots in another time base or unit?);
    and, naming the times, when ``[t0, t1]`` runs past its first or last knot (held constant there)."""
    if not isinstance(excitations, PiecewiseLinearExcitation):
        return
    times, a, b = (_concrete(x) for x in (excitations.times, t0, t1))
    if times is None or a is None or b is None or np.ndim(a) or np.ndim(b):
        return
    lo, hi = float(times[0]), float(times[-1])
    if float(b) <= lo or float(a) >= hi:
        held = "first" if float(b) <= lo else "last"
        warnings.warn(f"{who}: the PiecewiseLinearExcitation knots span [{lo:.6g}, {hi:.6g}] s, outside the simulated "
                      f"[{float(a):.6g}, {float(b):.6g}] s: the excitation is held at the {held} knot's values "
                      "throughout; check the knot times against t0 and t1", stacklevel=3)
    elif float(a) < lo or float(b) > hi:
        ends = [f"before {lo:.6g} s at the first knot's values" if float(a) < lo else "",
                f"after {hi:.6g} s at the last knot's values" if float(b) > hi else ""]
        warnings.warn(f"{who}: the simulated time [{float(a):.6g}, {float(b):.6g}] s leaves the "
                      f"PiecewiseLinearExcitation knots [{lo:.6g}, {hi:.6g}] s: the excitation is held constant "
                      f"{' and '.join(e for e in ends if e)}; add knots that cover the time span", stacklevel=3)
