"""OpenSim's host-side signal processing for data files (NumPy/SciPy): splines, padding, filtering.

What OpenSim's tools do to recorded data before dynamics (``OpenSim::GCVSpline``, ``Signal``,
``Storage``), reproduced step by step:

* :class:`NaturalSpline`: ``GCVSpline(degree, n, x, y)`` with the default error variance 0, which
  Simbody's ``SplineFitter::fitFromErrorVariance`` fits with Woltring's GCVSPL at the smallest
  smoothing parameter it allows (``p·el = 1e-15``): the *natural interpolating spline* of odd
  degree ``2m - 1`` (knots at the samples, derivatives ``m .. 2m-2`` zero at both ends).  Outside
  the samples GCVSPL's ``SPLDER`` continues it as the degree ``m - 1`` polynomial (its Taylor
  polynomial at the end sample).  Degree 5 is used for coordinates, degree 3 for external loads.
* :func:`pad`: ``Signal::Pad``, odd reflection about the end samples.
* :func:`lowpass_iir`: ``Signal::LowpassIIR``, a 3rd-order Butterworth (bilinear transform, cut-off
  prewarped) run forward then backward, each pass started with its first three outputs equal to
  the inputs.
* :func:`resample`: ``Storage::resample``, the degree-5 natural spline sampled from the first time
  in steps of ``dt`` accumulated in floating point (``x += dt`` while ``x <= last``).
* :func:`lowpass_storage`: what ``InverseDynamicsTool`` does with
  ``lowpass_cutoff_frequency_for_coordinates``: ``Storage::pad(n/2)`` then ``Storage::lowpassIIR``
  (which resamples at the smallest time step first when the times are not uniform to machine
  epsilon).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.interpolate import make_interp_spline
from scipy.signal import lfilter

#: ``SimTK::Eps`` (double machine epsilon), OpenSim's test for uniform sampling
EPS = float(np.finfo(float).eps)
#: ``Storage::MAX_RESAMPLE_SIZE``
MAX_RESAMPLE_SIZE = 100000


class NaturalSpline:
    """Natural interpolating spline of odd ``degree`` through ``(x, y)`` (``OpenSim::GCVSpline``).

    ``y`` is ``(n,)`` or ``(n, k)`` (``k`` columns fitted at once).  ``spline(t, nu)`` is the
    ``nu``-th derivative at ``t`` (any shape), with the degree ``m - 1`` polynomial continuation
    outside ``[x[0], x[-1]]`` (``m = (degree + 1) / 2``), as GCVSPL evaluates it.
    """

    def __init__(self, x, y, degree: int = 5):
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        if degree < 1 or degree % 2 == 0:
            raise ValueError(f"NaturalSpline: degree must be a positive odd integer, got {degree}")
        if x.ndim != 1 or y.shape[:1] != x.shape:
            raise ValueError(f"NaturalSpline: x must be (n,) and y (n, ...), got {x.shape} and {y.shape}")
        if x.shape[0] < degree + 1:
            raise ValueError(f"NaturalSpline: degree {degree} needs at least {degree + 1} samples, got {x.shape[0]}")
        if not np.all(np.diff(x) > 0):
            k = int(np.argmax(~(np.diff(x) > 0)))
            raise ValueError(f"NaturalSpline: x must be strictly increasing (x[{k}] = {x[k]!r}, "
                             f"x[{k + 1}] = {x[k + 1]!r})")
        if not np.all(np.isfinite(y)):
            raise ValueError("NaturalSpline: y contains NaN or inf")
        self.degree = degree
        self.m = (degree + 1) // 2
        self.x = x
        bc = [(j, np.zeros(y.shape[1:])) for j in range(self.m, 2 * self.m - 1)] or None
        self._b = make_interp_spline(x, y, k=degree, bc_type=(bc, bc) if bc else None)
        # Taylor coefficients of the degree m-1 continuation at both ends: d^j/dx^j at the end
        self._ends = [np.stack([self._b(e, j) for j in range(self.m)]) for e in (x[0], x[-1])]

    def __call__(self, t, nu: int = 0):
        t = np.asarray(t, float)
        out = np.asarray(self._b(np.clip(t, self.x[0], self.x[-1]), nu))
        for side, end in ((t < self.x[0], self.x[0]), (t > self.x[-1], self.x[-1])):
            if not np.any(side):
                continue
            coef = self._ends[0 if end == self.x[0] else 1]
            h = (t[side] - end).reshape((-1,) + (1,) * (coef.ndim - 1))
            val = np.zeros((h.shape[0],) + coef.shape[1:])
            for j in range(nu, self.m):
                val = val + coef[j] * h ** (j - nu) / math.factorial(j - nu)
            out[side] = val
        return out


def pad(y, n: int):
    """``Signal::Pad``: ``n`` samples prepended and appended by odd reflection about the end
    samples (``2 y[0] - y[k]``); a pad longer than the signal is applied in rounds, as OpenSim does."""
    y = np.asarray(y, float)
    if n <= 0:
        return y
    size = y.shape[0]
    target = size + 2 * n
    if n >= size:
        p = size - 1
        while size < target:
            y = pad(y, p)
            size = y.shape[0]
            p = (target - size) // 2
            if p >= size:
                p = size - 1
        return y
    head = 2.0 * y[0] - y[n:0:-1]
    tail = 2.0 * y[-1] - y[-2:-2 - n:-1]
    return np.concatenate([head, y, tail])


def butterworth3(dt: float, fc: float):
    """Coefficients ``(b, a)`` of ``Signal::LowpassIIR``'s 3rd-order Butterworth section
    (``a[0] = 1``); ``fc >= fs/2`` is lowered to ``0.49 fs`` with a warning, as OpenSim does."""
    fs = 1.0 / dt
    if fc >= 0.5 * fs:
        warnings.warn(f"lowpass_iir: cut-off {fc} Hz is not below half the sampling frequency {fs} Hz; "
                      f"using 0.49 fs = {0.49 * fs} Hz as OpenSim does", stacklevel=3)
        fc = 0.49 * fs
    wa = math.tan(2 * math.pi * fc * dt / 2.0)
    wa2, wa3 = wa * wa, wa * wa * wa
    den = (wa + 1) * (wa * wa + wa + 1.0)
    b = np.array([wa3, 3 * wa3, 3 * wa3, wa3]) / den
    a = np.array([den, 3 * wa3 + 2 * wa2 - 2 * wa - 3, 3 * wa3 - 2 * wa2 - 2 * wa + 3,
                  (wa - 1) * (wa2 - wa + 1)]) / den
    return b, a


def _pass(b, a, x):
    """y[i] = b·x[i-3..i] - a[1:]·y[i-3..i-1] for i >= 3, y[0..2] = x[0..2] (OpenSim's start-up), as
    one ``scipy.signal.lfilter`` call from the state those three rows leave (equal to the row loop
    to rounding, in one vectorised call)."""
    x = np.asarray(x, float)
    y = np.array(x, float)
    if x.shape[0] > 3:
        past = x[2::-1]  # x[2], x[1], x[0]: the last inputs, and outputs, before row 3
        # transposed direct form II state: z[m] = Σ_{k > m} b[k] x[3+m-k] - a[k] y[3+m-k]
        zi = np.stack([sum((b[k] - a[k]) * past[k - m - 1] for k in range(m + 1, 4)) for m in range(3)])
        y[3:], _ = lfilter(b, a, x[3:], axis=0, zi=zi)
    return y


def lowpass_iir(y, dt: float, fc: float):
    """``Signal::LowpassIIR`` on each column of ``y (n,)`` or ``(n, k)`` sampled every ``dt``:
    the section of :func:`butterworth3` forward, then backward (zero phase)."""
    y = np.asarray(y, float)
    if y.shape[0] < 4:
        raise ValueError(f"lowpass_iir: needs at least 4 samples, got {y.shape[0]}")
    b, a = butterworth3(dt, fc)
    return _pass(b, a, _pass(b, a, y)[::-1])[::-1].copy()


def resample(time, y, dt: float, degree: int = 5):
    """``Storage::resample``: the natural spline of ``degree`` through every column sampled at
    ``t = time[0], time[0] + dt, ...`` (``dt`` accumulated) while ``t <= time[-1]``.  Returns
    ``(t, y_t, dt)``; ``dt`` is raised to ``span / MAX_RESAMPLE_SIZE`` when it would give more samples."""
    time = np.asarray(time, float)
    if time.shape[0] <= 1:
        return time, np.asarray(y, float), dt
    if (time[-1] - time[0]) / dt > MAX_RESAMPLE_SIZE:
        dt = (time[-1] - time[0]) / MAX_RESAMPLE_SIZE
    spline = NaturalSpline(time, y, degree)
    ts = []
    t = float(time[0])
    while t <= time[-1]:
        ts.append(t)
        t += dt
    ts = np.asarray(ts)
    return ts, spline(ts), dt


def lowpass_storage(time, y, fc: float):
    """``Storage::pad(n/2)`` then ``Storage::lowpassIIR(fc)`` (the ID tool's coordinate filter).

    Returns the padded (and, for non-uniform times, resampled) ``(time, y)``: OpenSim keeps working
    on that grid, and its times are the ones the tool reports.
    """
    time = np.asarray(time, float)
    y = np.asarray(y, float)
    n = time.shape[0] // 2
    time, y = pad(time, n), pad(y, n)
    dts = np.diff(time)
    dtmin = float(np.min(dts)) if dts.size else math.inf
    if not dtmin >= EPS:
        raise ValueError(f"lowpass_storage: times must increase (smallest step {dtmin}); OpenSim cannot resample them")
    avg = (time[-1] - time[0]) / (time.shape[0] - 1)
    if avg - dtmin > EPS:
        time, y, dtmin = resample(time, y, dtmin, 5)
    return time, lowpass_iir(y, dtmin, fc)
