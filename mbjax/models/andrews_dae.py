"""Andrews' squeezing mechanism as an index-1 DAE with Baumgarte stabilization: the baseline that
the reduced one-coordinate models of :mod:`mbjax.models.andrews` are compared with (Hairer &
Wanner, Solving ODE II §VII.7; the Test Set's seven angles, six loop multipliers)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._dynamics import inverse_dynamics, mass_matrix
from .._model import Model
from .andrews import applied_forces, constraints, generalized_rhs, test_set_mass_matrix, test_set_rhs

class DAEField(eqx.Module):
    """Index-1 DAE as an ODE in (q, q̇) ∈ R^7 × R^7 (Baumgarte stabilization).

    [M Gᵀ; G 0] [q̈; λ] = [f; -(Ġ q̇) - 2α G q̇ - β² g], G = ∂g/∂q: the Test Set's
    M q̈ = f - Gᵀ λ with the acceleration-level constraint g̈ + 2α ġ + β² g = 0.
    M and f = Q - N q̇ come from the tree (this library; the tree is diffrax's ``args``) or, with
    ``closed_form=True``, from the Test Set's hand-derived M(q), f(q, q̇) (the cheapest DAE
    right-hand side: plain trigonometry, the tree is not read); g from the Test Set.
    ``alpha``, ``beta`` are array leaves (new values do not recompile).
    """

    alpha: jnp.ndarray
    beta: jnp.ndarray
    closed_form: bool = eqx.field(static=True)

    def __init__(self, alpha=0.0, beta=0.0, closed_form: bool = False):
        self.alpha = jnp.asarray(alpha, dtype=float)
        self.beta = jnp.asarray(beta, dtype=float)
        self.closed_form = bool(closed_form)

    def __call__(self, t, y, tree):
        q, qd = y
        if self.closed_form:
            m, f = test_set_mass_matrix(q), test_set_rhs(q, qd)
        else:
            m = mass_matrix(tree, q)
            f = -inverse_dynamics(tree, q, qd, jnp.zeros_like(q), external=applied_forces(tree, q))
        g, gq = constraints(q), jax.jacfwd(constraints)(q)
        gdot = gq @ qd
        gamma = jax.jvp(lambda z: jax.jvp(constraints, (z,), (qd,))[1], (q,), (qd,))[1]
        n, nc = q.shape[0], g.shape[0]
        kkt = jnp.block([[m, gq.T], [gq, jnp.zeros((nc, nc), q.dtype)]])
        rhs = jnp.concatenate([f, -gamma - 2 * self.alpha * gdot - self.beta**2 * g])
        return qd, jnp.linalg.solve(kkt, rhs)[:n]


def dae_vector_field(tree: Model | None = None, alpha: float = 0.0, beta: float = 0.0,
                     closed_form: bool = False) -> DAEField:
    """:class:`DAEField` with Baumgarte ``alpha``, ``beta`` (``tree`` is unused: the solve passes it as ``args``)."""
    del tree
    return DAEField(alpha, beta, closed_form)


def multipliers(tree: Model, q, qd):
    """λ of the index-1 DAE at a state (checked against the Test Set's λ(0))."""
    m = mass_matrix(tree, q)
    f = generalized_rhs(tree, q, qd)
    gq = jax.jacfwd(constraints)(q)
    gamma = jax.jvp(lambda z: jax.jvp(constraints, (z,), (qd,))[1], (q,), (qd,))[1]
    kkt = jnp.block([[m, gq.T], [gq, jnp.zeros((6, 6), q.dtype)]])
    sol = jnp.linalg.solve(kkt, jnp.concatenate([f, -gamma]))
    return sol[:7], sol[7:]
