"""Segmented quintic Bézier curves, as OpenSim's ``SmoothSegmentedFunction`` builds and evaluates them.

OpenSim (``SegmentedQuinticBezierToolkit.cpp``, ``SmoothSegmentedFunction.cpp``) stores a curve
as ``n`` quintic Bézier segments ``(x(u), y(u))``, ``u ∈ [0, 1]``, each with six control points,
built by :func:`corner_control_points` (``calcQuinticBezierCornerControlPoints``): the two end
points, the intersection (corner) of their tangent lines and a ``curviness`` that pulls the
inner control points towards the corner.  Outside ``[x0, x1]`` the curve is the linear
extrapolation ``y0 + dydx0 (x - x0)`` / ``y1 + dydx1 (x - x1)``.

To evaluate ``y(x)`` OpenSim picks the segment with ``x ∈ [X_i0, X_i5)`` (``calcIndex``) and
inverts ``x(u)`` by Newton iterations started from a spline fit to a tolerance of 100 ε on x
(``calcU``).  Here ``x(u)`` (increasing on every segment these curves build) is tabulated at 33
values of u, the bracketing interval is interpolated linearly, and 3 clamped Newton steps plus
a final one reach machine precision (Newton converges quadratically; the tests check the
inversion residual over each curve's whole domain).  No loops: this compiles and vectorizes well.  The last Newton step is written with the
converged ``u`` held constant, so its derivative is the implicit one,
``du = (dx - ∂x/∂p dp) / x'(u)``, and derivatives with respect to ``x`` and to the curve
parameters are exact.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: √ε, OpenSim's ``rootEPS`` in ``calcQuinticBezierCornerControlPoints``
_ROOT_EPS = 1.4901161193847656e-08

#: Bernstein coefficients of a quintic
_BINOM = (1.0, 5.0, 10.0, 10.0, 5.0, 1.0)


def scale_curviness(curviness):
    """``SmoothSegmentedFunctionFactory::scaleCurviness``: c = 0.1 + 0.8 curviness."""
    return 0.1 + 0.8 * curviness


def corner_control_points(x0, y0, dydx0, x1, y1, dydx1, c):
    """``calcQuinticBezierCornerControlPoints``: the 6 x and 6 y control points of one segment.

    The corner is the intersection of the lines through (x0, y0) and (x1, y1) with slopes dydx0 and
    dydx1 (the mid-point in x when the slopes differ by no more than √ε); the inner points lie at
    fraction ``c`` (already scaled) of the way to the corner, each repeated twice.
    """
    parallel = jnp.abs(dydx0 - dydx1) <= _ROOT_EPS
    den = jnp.where(parallel, 1.0, dydx0 - dydx1)
    xc = jnp.where(parallel, 0.5 * (x1 + x0), (y1 - y0 - x1 * dydx1 + x0 * dydx0) / den)
    yc = (xc - x1) * dydx1 + y1
    x0m = x0 + c * (xc - x0)
    y0m = y0 + c * (yc - y0)
    x1m = x1 + c * (xc - x1)
    y1m = y1 + c * (yc - y1)
    px = jnp.stack(jnp.broadcast_arrays(x0, x0m, x0m, x1m, x1m, x1), -1)
    py = jnp.stack(jnp.broadcast_arrays(y0, y0m, y0m, y1m, y1m, y1), -1)
    return px, py


def bezier(u, p):
    """Quintic Bézier value Σ C(5,k) u^k (1-u)^(5-k) p_k; ``p`` has 6 entries on its last axis."""
    v = 1.0 - u
    terms = [_BINOM[k] * u**k * v ** (5 - k) * p[..., k] for k in range(6)]
    return sum(terms)


def bezier_du(u, p):
    """d/du of :func:`bezier`: 5 Σ B⁴_k(u) (p_{k+1} - p_k)."""
    v = 1.0 - u
    d = p[..., 1:] - p[..., :-1]
    b4 = (1.0, 4.0, 6.0, 4.0, 1.0)
    return 5.0 * sum(b4[k] * u**k * v ** (4 - k) * d[..., k] for k in range(5))


#: table of u for the starting guess of the inversion of x(u)
_TABLE = 32


def _solve_u(x, px):
    """u ∈ [0, 1] with x(u) = x on one segment (x already inside it); see the module docstring."""
    import numpy as np

    grid = jnp.asarray(np.linspace(0.0, 1.0, _TABLE + 1), x.dtype)
    xs = bezier(grid, px[..., None, :]) if px.ndim > 1 else bezier(grid, px[None, :].repeat(_TABLE + 1, 0))
    k = jnp.clip(jnp.sum(xs[1:-1] <= x), 0, _TABLE - 1)
    x_lo, x_hi = xs[k], xs[k + 1]
    span = jnp.where(x_hi > x_lo, x_hi - x_lo, 1.0)
    u = (k + jnp.clip((x - x_lo) / span, 0.0, 1.0)) / _TABLE
    for _ in range(3):
        d = bezier_du(u, px)
        d = jnp.where(d == 0, 1.0, d)
        u = jnp.clip(u - (bezier(u, px) - x) / d, 0.0, 1.0)
    u0 = jax.lax.stop_gradient(u)
    d0 = jax.lax.stop_gradient(bezier_du(u0, px))
    d0 = jnp.where(d0 == 0, 1.0, d0)
    return u0 - (bezier(u0, px) - x) / d0


class Segmented:
    """A segmented curve: control points ``px, py (n, 6)`` and the extrapolation data.

    Plain container (not a pytree leaf holder); built inside traced functions from parameters.
    """

    def __init__(self, px, py, x0, x1, y0, y1, dydx0, dydx1):
        self.px, self.py = px, py
        self.x0, self.x1, self.y0, self.y1, self.dydx0, self.dydx1 = x0, x1, y0, y1, dydx0, dydx1

    def value_and_derivative(self, x):
        """(y, dy/dx) at scalar ``x`` (OpenSim's ``calcValueAndFirstDerivative``)."""
        return evaluate(self, x)

    def __call__(self, x):
        return evaluate(self, x)[0]


def _clip(x, lo, hi):
    """Clip with the full derivative at the ends (``jnp.clip`` halves it at ties)."""
    return jnp.where(x < lo, lo, jnp.where(x > hi, hi, x))


def evaluate(curve: Segmented, x):
    """``calcSelectedDerivatives`` for orders 0 and 1 at a scalar ``x``: (y, dy/dx)."""
    px, py = curve.px, curve.py
    n = px.shape[0]
    xin = _clip(x, curve.x0, curve.x1)
    inside = (xin >= px[:, 0]) & (xin < px[:, 5])
    idx = jnp.where(jnp.any(inside), jnp.argmax(inside), n - 1)  # x == x1 -> last segment
    sx, sy = px[idx], py[idx]
    xs = _clip(xin, sx[0], sx[5])
    u = _solve_u(xs, sx)
    y_in = bezier(u, sy)
    dx = bezier_du(u, sx)
    dy_in = bezier_du(u, sy) / jnp.where(dx == 0, 1.0, dx)
    below, above = x < curve.x0, x > curve.x1
    y = jnp.where(below, curve.y0 + curve.dydx0 * (x - curve.x0),
                  jnp.where(above, curve.y1 + curve.dydx1 * (x - curve.x1), y_in))
    dy = jnp.where(below, curve.dydx0, jnp.where(above, curve.dydx1, dy_in))
    return y, dy
