"""Numerical differentiation on a computational molecule (Ehsani §3-3, Fig. 2).

The constraint is solved at the molecule's centre ``q`` and at points stepped from it; central
differences give ∇f and H, mixed terms included:

    ∂f/∂q_k       ≈ [f(q + h_k e_k) - f(q - h_k e_k)] / (2 h_k)
    ∂²f/∂q_k²     ≈ [f(q + h_k e_k) - 2 f(q) + f(q - h_k e_k)] / h_k²
    ∂²f/∂q_k∂q_l  ≈ [f(++) - f(+-) - f(-+) + f(--)] / (4 h_k h_l)

The abscissae are the centre, ±h_k along every axis and the four diagonal points of every pair:
``1 + 2 n_q + 2 n_q (n_q - 1)`` points (9 for two coordinates; the seed says ten for its Fig. 2,
which is missing from the extracted text, so the exact stencil is not recoverable).  The
truncation error is O(h²); rounding of the solves adds O(ε/h) to ∇f and O(ε/h²) to H.
"""

from __future__ import annotations

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from ._constraint import LoopConstraint, checked_constraint, checked_f, checked_q, solve


def molecule_offsets(n_coordinates: int) -> np.ndarray:
    """Unit offsets of the molecule's abscissae, ``(n_points, n_q)``; row 0 is the centre."""
    if isinstance(n_coordinates, (bool, np.bool_)) or not isinstance(n_coordinates, (int, np.integer)) \
            or n_coordinates < 0:
        raise ValueError(f"molecule_offsets: n_coordinates must be an integer >= 0 (the number of coordinates "
                         f"q of the loop), got {n_coordinates!r}")
    nq = int(n_coordinates)
    rows = [np.zeros(nq)]
    for k in range(nq):
        for s in (1.0, -1.0):
            e = np.zeros(nq)
            e[k] = s
            rows.append(e)
    for k, l in itertools.combinations(range(nq), 2):
        for sk, sl in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
            e = np.zeros(nq)
            e[k], e[l] = sk, sl
            rows.append(e)
    return np.asarray(rows)


@eqx.filter_jit
def molecule_derivatives(constraint: LoopConstraint, q, step, f_centre=None, *, check: bool = True):
    """``(f, ∇f, H)`` at ``q`` from central differences of Newton solves on the molecule.

    ``step``: scalar or ``(n_q,)`` step h.  The centre is solved with continuation from the
    constraint's reference (or taken from ``f_centre``); the other abscissae by Newton from the
    centre's solution.  Shapes ``(m,)``, ``(m, n_q)``, ``(m, n_q, n_q)``.
    """
    checked_constraint(constraint, "molecule_derivatives")
    q = checked_q(constraint, q, "molecule_derivatives")
    if f_centre is not None:
        f_centre = checked_f(constraint, f_centre, "molecule_derivatives", "f_centre")
    nq = q.shape[0]
    h = jnp.asarray(step, q.dtype)
    if h.shape not in ((), (nq,)):
        raise ValueError(f"molecule_derivatives: step must be a scalar or have shape (n_q,) = ({nq},), got {h.shape}")
    h = jnp.broadcast_to(h, (nq,))
    # a zero, negative or non-finite step divides by zero in the central differences
    h = _checks.require(h, ~jnp.all(jnp.isfinite(h) & (h > 0)), "molecule_derivatives: step must be finite and > 0")
    f0 = solve(constraint, q, check=check) if f_centre is None else f_centre
    offs = jnp.asarray(molecule_offsets(nq), q.dtype)
    pts = q + offs[1:] * h
    fs = jax.vmap(lambda p: solve(constraint, p, guess=f0, check=check))(pts)  # (n_points - 1, m)
    fp = fs[0 : 2 * nq : 2]  # (nq, m): +h_k
    fm = fs[1 : 2 * nq : 2]
    grad = ((fp - fm) / (2 * h[:, None])).T
    diag = ((fp - 2 * f0 + fm) / (h[:, None] ** 2)).T  # (m, nq)
    m = f0.shape[0]
    hess = jnp.zeros((m, nq, nq), q.dtype)
    hess = hess.at[:, jnp.arange(nq), jnp.arange(nq)].set(diag)
    base = 2 * nq
    for c, (k, l) in enumerate(itertools.combinations(range(nq), 2)):
        fpp, fpm, fmp, fmm = (fs[base + 4 * c + i] for i in range(4))
        mixed = (fpp - fpm - fmp + fmm) / (4 * h[k] * h[l])
        hess = hess.at[:, k, l].set(mixed).at[:, l, k].set(mixed)
    return f0, grad, hess
