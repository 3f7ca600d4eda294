"""OpenSim's ``GCVSpline`` (``error_variance = 0``) as :class:`~mbjax.maps.piecewise.PiecewisePolynomial` data.

Woltring's natural interpolating spline of degree ``2·half_order - 1``, continued by the polynomial
of degree ``half_order - 1`` that OpenSim evaluates outside the knots.  A smoothing GCVSpline
(``error_variance > 0``, GCVSPL mode 3) is refused by the importer.
"""

from __future__ import annotations

import numpy as np

from .piecewise import PPData, check_knots


def gcv_spline_pieces(x, y, half_order: int):
    """Power-form pieces of OpenSim's ``GCVSpline`` with ``error_variance = 0``.

    Woltring's GCVSPL with a zero error variance returns the **interpolating natural spline** of
    degree ``2m - 1`` (``m = half_order``): a polynomial of degree ``2m - 1`` on every knot
    interval, ``C^{2m-2}`` at interior knots, derivatives ``m … 2m-2`` zero at both end knots,
    and a polynomial of degree ``m - 1`` outside ``[x_0, x_{n-1}]`` (its Taylor expansion at the
    end knot; OpenSim evaluates exactly this there).  OpenSim requires ``n >= 2m`` knots.

    The interpolation conditions are solved as one dense linear system in the interval-local
    variable ``s = (x - x_k) / h_k`` (well conditioned for any knot spacing), then rescaled to
    powers of ``x - x_k``.  Returns ``(b (n-1, 2m), left (m,), right (m,))``: piece coefficients
    and the Taylor coefficients of the two polynomial continuations.
    """
    x, y = check_knots(x, y, "GCVSpline")
    m = int(half_order)
    if not 1 <= m <= 4:
        raise ValueError(f"GCVSpline: half_order must be 1, 2, 3 or 4 (degree 1, 3, 5, 7), got {half_order}")
    n = x.size
    if n < 2 * m:
        raise ValueError(f"GCVSpline: degree {2 * m - 1} needs at least {2 * m} knots, got {n}")
    deg = 2 * m  # coefficients per piece
    nk = n - 1
    h = np.diff(x)

    def drow(r, s):
        """Row of d^r/ds^r of [1, s, …, s^{deg-1}] at s."""
        out = np.zeros(deg)
        for d in range(r, deg):
            out[d] = np.prod(np.arange(d - r + 1, d + 1)) * s ** (d - r)
        return out

    a = np.zeros((deg * nk, deg * nk))
    rhs = np.zeros(deg * nk)
    row = 0
    for k in range(nk):
        cols = slice(deg * k, deg * (k + 1))
        a[row, cols] = drow(0, 0.0)
        rhs[row] = y[k]
        a[row + 1, cols] = drow(0, 1.0)
        rhs[row + 1] = y[k + 1]
        row += 2
    for k in range(nk - 1):  # continuity of derivatives 1 … 2m-2 at knot k+1 (x-derivatives times h_k^r)
        for r in range(1, deg - 1):
            a[row, deg * k: deg * (k + 1)] = drow(r, 1.0)
            a[row, deg * (k + 1): deg * (k + 2)] = -drow(r, 0.0) * (h[k] / h[k + 1]) ** r
            row += 1
    for r in range(m, deg - 1):  # natural end conditions
        a[row, 0:deg] = drow(r, 0.0)
        a[row + 1, deg * (nk - 1):] = drow(r, 1.0)
        row += 2
    assert row == deg * nk
    coef_s = np.linalg.solve(a, rhs).reshape(nk, deg)
    b = coef_s / h[:, None] ** np.arange(deg)  # powers of (x - x_k)
    fact = np.array([float(np.prod(np.arange(1, r + 1))) for r in range(m)])
    left = b[0, :m].copy()
    right = np.array([drow(r, 1.0) @ coef_s[-1] / h[-1] ** r for r in range(m)]) / fact
    return b, left, right


def pp_gcv_spline(x, y, half_order: int = 3) -> PPData:
    """OpenSim ``GCVSpline`` (error variance 0): natural interpolating spline, see :func:`gcv_spline_pieces`."""
    x, y = check_knots(x, y, "GCVSpline")
    b, left, right = gcv_spline_pieces(x, y, half_order)
    n, deg = x.size, b.shape[1]
    coef = np.zeros((n + 1, deg))
    coef[0, : left.size] = left
    coef[1:n] = b
    coef[n, : right.size] = right
    anchors = np.concatenate([[x[0]], x[:-1], [x[-1]]])
    breaks = np.concatenate([x[:-1], [np.nextafter(x[-1], np.inf)]])
    return PPData(breaks, anchors, coef)
