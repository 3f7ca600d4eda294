"""OpenSim's ``SimmSpline`` (and ``NaturalCubicSpline``) as :class:`~mbjax.maps.piecewise.PiecewisePolynomial` data.

``SimmSpline``: SIMM's cubic spline (the Forsythe-Malcolm-Moler ``spline`` routine: end conditions
match the third derivative of the cubics through the first/last four knots; 2 knots = a line),
continued linearly with the end slopes ``b_0``/``b_{n-1}`` outside the knots.  OpenSim 4.x reads
the ``NaturalCubicSpline`` tag as an alias of ``SimmSpline`` and evaluates it with SIMM's end
conditions, so the importer does too; :func:`pp_natural_spline`, a true natural spline with the
same continuation, stays available and is tested against SciPy.  Coefficients are computed in
NumPy float64 with the published algorithm (rewritten here, not copied).
"""

from __future__ import annotations

import numpy as np

from .piecewise import PPData, check_knots, pp_from_cubic


def simm_spline_coefficients(x, y):
    """b, c, d of SIMM's cubic spline (FMM end conditions); y_k + b dx + c dx² + d dx³."""
    x, y = check_knots(x, y, "SimmSpline")
    n = x.size
    b = np.zeros(n)
    c = np.zeros(n)
    d = np.zeros(n)
    if n == 2:
        b[:] = (y[1] - y[0]) / (x[1] - x[0])
        return b, c, d
    nm1, nm2 = n - 1, n - 2
    # tridiagonal system: b = diagonal, d = off-diagonal, c = right-hand side
    d[0] = x[1] - x[0]
    c[1] = (y[1] - y[0]) / d[0]
    for i in range(1, nm1):
        d[i] = x[i + 1] - x[i]
        b[i] = 2.0 * (d[i - 1] + d[i])
        c[i + 1] = (y[i + 1] - y[i]) / d[i]
        c[i] = c[i + 1] - c[i]
    # end conditions: third derivatives from divided differences
    b[0] = -d[0]
    b[nm1] = -d[nm2]
    c[0] = 0.0
    c[nm1] = 0.0
    if n > 3:
        d1 = c[2] / (x[3] - x[1]) - c[1] / (x[2] - x[0])
        d2 = c[nm2] / (x[nm1] - x[n - 3]) - c[n - 3] / (x[nm2] - x[n - 4])
        c[0] = d1 * d[0] * d[0] / (x[3] - x[0])
        c[nm1] = -d2 * d[nm2] * d[nm2] / (x[nm1] - x[n - 4])
    for i in range(1, n):  # forward elimination
        t = d[i - 1] / b[i - 1]
        b[i] -= t * d[i - 1]
        c[i] -= t * c[i - 1]
    c[nm1] /= b[nm1]  # back substitution
    for i in range(nm2, -1, -1):
        c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
    b[nm1] = (y[nm1] - y[nm2]) / d[nm2] + d[nm2] * (c[nm2] + 2.0 * c[nm1])
    for i in range(nm1):
        b[i] = (y[i + 1] - y[i]) / d[i] - d[i] * (c[i + 1] + 2.0 * c[i])
        d[i] = (c[i + 1] - c[i]) / d[i]
        c[i] *= 3.0
    c[nm1] *= 3.0
    d[nm1] = d[nm2]
    return b, c, d


def natural_spline_coefficients(x, y):
    """b, c, d of the natural cubic spline (second derivative zero at both ends)."""
    x, y = check_knots(x, y, "NaturalCubicSpline")
    n = x.size
    h = np.diff(x)
    if n == 2:
        s = (y[1] - y[0]) / h[0]
        return np.full(2, s), np.zeros(2), np.zeros(2)
    # solve for second derivatives m (m_0 = m_{n-1} = 0)
    a = np.zeros((n, n))
    rhs = np.zeros(n)
    a[0, 0] = a[-1, -1] = 1.0
    for i in range(1, n - 1):
        a[i, i - 1] = h[i - 1]
        a[i, i] = 2.0 * (h[i - 1] + h[i])
        a[i, i + 1] = h[i]
        rhs[i] = 6.0 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    m = np.linalg.solve(a, rhs)
    b = np.zeros(n)
    c = m / 2.0
    d = np.zeros(n)
    b[:-1] = (y[1:] - y[:-1]) / h - h * (2.0 * m[:-1] + m[1:]) / 6.0
    d[:-1] = (m[1:] - m[:-1]) / (6.0 * h)
    b[-1] = b[-2] + 2.0 * c[-2] * h[-1] + 3.0 * d[-2] * h[-1] ** 2
    return b, c, d


def pp_simm_spline(x, y) -> PPData:
    x, y = check_knots(x, y, "SimmSpline")
    return PPData(*pp_from_cubic(x, y, *simm_spline_coefficients(x, y)))


def pp_natural_spline(x, y) -> PPData:
    x, y = check_knots(x, y, "NaturalCubicSpline")
    return PPData(*pp_from_cubic(x, y, *natural_spline_coefficients(x, y)))
