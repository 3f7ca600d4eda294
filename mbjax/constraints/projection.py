"""Analytical projection (Ehsani Eq. 101-120): ∇f and H of the joint variables of a closed chain.

Differentiating g(f(q), q) = 0 once gives Eq. 102, in Kronecker form (Definition 1 layout,
element ``[i·n_q + l]`` of an ``(m·n_q)`` vector is ``∂g_i/∂q_l``)

    Σ_j ḡ_j ⊗ ∇f_j = -∂G/∂q,                                  ḡ_j = ∂G/∂f_j   (Eq. 102-104)

solved by the projector recursion Eq. 110-119: backwards γ_{m+1} = I, σ_i = I - ḡ_i ḡ_iᵀ γ_{i+1} /
‖γ_{i+1} ḡ_i‖², γ_i = γ_{i+1} σ_i (γ_{i+1} is the orthogonal projector that annihilates
ḡ_{i+1..m}); forwards η⁽⁰⁾ = 0, ∇f_i = -(ḡ_iᵀ γ_{i+1} ⊗ I)(η⁽ⁱ⁻¹⁾ + ∂G/∂q)/‖γ_{i+1} ḡ_i‖²,
η⁽ⁱ⁾ = η⁽ⁱ⁻¹⁾ + ḡ_i ⊗ ∇f_i.

Differentiating Eq. 101 once more (the seed leaves Γ of Eq. 120 to the reader), with
𝐉 = [∂f/∂q ; I_{n_q}] of shape ``(m + n_q, n_q)`` and ∇²g_i the Hessian of g_i in (f, q):

    Σ_j ḡ_j ⊗ vec(H_j) = Γ,   Γ = -[vec(𝐉ᵀ ∇²g_1 𝐉); ...; vec(𝐉ᵀ ∇²g_m 𝐉)]          (Eq. 120)

i.e. Γ_i = -(∂²g_i/∂q² + Σ_jk ∂²g_i/∂f_j∂f_k ∇f_j ∇f_kᵀ + Σ_j (∇f_j ∂²g_i/∂f_j∂qᵀ + transpose));
the same recursion with I_{n_q²} gives vec(H_j).  Cross-checked in the tests against
:func:`direct_derivatives` (a linear solve) and against autodiff of the implicit solve.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .. import _checks
from ._constraint import LoopConstraint, checked_constraint, checked_f, checked_q, solve


def projectors(gbar):
    """γ_2..γ_{m+1} of Eq. 116-117 for the columns ḡ_j of ``gbar`` ``(m, m)``; returns ``(m, m, m)``, ``[i] = γ_{i+2}``.

    Entry ``i`` (0-based joint ``i``) is the projector γ_{i+1} (1-based) used for joint ``i``.
    """
    m = gbar.shape[1]
    eye = jnp.eye(m, dtype=gbar.dtype)
    gammas = [None] * m
    gamma = eye  # γ_{m+1}
    for i in range(m - 1, -1, -1):  # 1-based i+1 = m, ..., 1
        gammas[i] = gamma
        g = gbar[:, i]
        pg = gamma @ g
        sigma = eye - jnp.outer(g, g) @ gamma / jnp.dot(pg, pg)  # Eq. 116
        gamma = gamma @ sigma  # Eq. 117
    return jnp.stack(gammas)


def project(gbar, rhs, width: int):
    """Solve Σ_j ḡ_j ⊗ x_j = rhs (Eq. 102 / 120 form) for x_j ∈ R^width by Eq. 118-119, literally.

    ``rhs`` has length ``m·width`` (Definition-1 layout); returns ``(m, width)``.
    """
    m = gbar.shape[1]
    eye_w = jnp.eye(width, dtype=gbar.dtype)
    gammas = projectors(gbar)
    eta = jnp.zeros((m * width,), gbar.dtype)  # η⁽⁰⁾
    out = []
    for i in range(m):
        g = gbar[:, i]
        pg = gammas[i] @ g
        row = jnp.kron((g @ gammas[i])[None, :], eye_w)  # (ḡ_iᵀ γ_{i+1} ⊗ I)
        x = row @ (rhs - eta) / jnp.dot(pg, pg)  # Eq. 118 (rhs = -∂G/∂q there)
        eta = eta + jnp.kron(g, x)  # Eq. 119
        out.append(x)
    return jnp.stack(out)


def _second_derivatives(constraint: LoopConstraint, f, q):
    """Hessians of every g_i in z = (f, q): ``(m, m + n_q, m + n_q)``."""
    m = f.shape[0]
    fun = lambda z: constraint.residual(z[:m], z[m:])
    return jax.hessian(fun)(jnp.concatenate([f, q]))


def hessian_rhs(constraint: LoopConstraint, f, q, grad):
    """Γ of Eq. 120 as ``(m, n_q, n_q)`` (Γ_i = -𝐉ᵀ ∇²g_i 𝐉, see the module docstring).

    A building block of :func:`projection_derivatives`: shapes are checked here, values there.
    """
    checked_constraint(constraint, "hessian_rhs")
    f = checked_f(constraint, f, "hessian_rhs")
    q = checked_q(constraint, q, "hessian_rhs")
    m, nq = constraint.n_joints, constraint.n_coordinates
    grad = _checks.as_array(grad, "hessian_rhs: grad (∇f)", (m, nq), ("m", "n_q"), f" for joints {constraint.joints}")
    return _hessian_rhs(constraint, f, q, grad)


def _hessian_rhs(constraint: LoopConstraint, f, q, grad):
    nq = q.shape[0]
    jz = jnp.concatenate([grad, jnp.eye(nq, dtype=grad.dtype)], axis=0)
    hz = _second_derivatives(constraint, f, q)
    return -jnp.einsum("za,izw,wb->iab", jz, hz, jz)


def _solved(constraint: LoopConstraint, f, q, where: str):
    """Shape checks, then one fused run-time check: ``f``, ``q`` finite and ``g(f, q) ≈ 0``."""
    checked_constraint(constraint, where)
    f = checked_f(constraint, f, where)
    q = checked_q(constraint, q, where)
    dtype = jnp.result_type(f, q, float)
    f, q = f.astype(dtype), q.astype(dtype)
    res = jnp.max(jnp.abs(constraint.residual(f, q)))
    tol = max(1e3 * constraint.tol, 1e3 * float(jnp.finfo(dtype).eps)) * (1.0 + jnp.max(jnp.abs(f)))
    f = _checks.all_of(f, [
        _checks.not_finite(f, f"{where}: f", f" for joints {constraint.joints}"),
        _checks.not_finite(q, f"{where}: q", f" for coordinates {constraint.coordinates}"),
        (~(res <= tol), f"{where}: f does not solve g(f, q) = 0 at this q (the derivatives hold on the "
                        "constraint only): solve it first, e.g. mbjax.constraints.solve(constraint, q)"),
    ])
    return f, q


@eqx.filter_jit
def projection_derivatives(constraint: LoopConstraint, f, q):
    """∇f ``(m, n_q)`` and H ``(m, n_q, n_q)`` at a solved configuration by the projection method (Eq. 102-120)."""
    f, q = _solved(constraint, f, q, "projection_derivatives")
    return _projection_derivatives(constraint, f, q)


def _projection_derivatives(constraint: LoopConstraint, f, q):
    nq = q.shape[0]
    gbar = constraint.jacobian_f(f, q)  # columns ḡ_j
    dgdq = constraint.jacobian_q(f, q).reshape(-1)  # ∂G/∂q, [i·nq + l]
    grad = project(gbar, -dgdq, nq)  # Eq. 118
    gamma = _hessian_rhs(constraint, f, q, grad).reshape(-1)  # Γ, [i·nq² + vec]
    hess = project(gbar, gamma, nq * nq).reshape(-1, nq, nq)
    # vec(H) is column-stacking; H is symmetric, so row/column order does not matter
    return grad, 0.5 * (hess + jnp.swapaxes(hess, -1, -2))


@eqx.filter_jit
def direct_derivatives(constraint: LoopConstraint, f, q):
    """Reference: ∇f = -(∂G/∂f)⁻¹ ∂G/∂q and H_i from one linear solve with the same Γ (test oracle)."""
    f, q = _solved(constraint, f, q, "direct_derivatives")
    gf = constraint.jacobian_f(f, q)
    grad = -jnp.linalg.solve(gf, constraint.jacobian_q(f, q))
    gamma = _hessian_rhs(constraint, f, q, grad)
    nq = q.shape[0]
    hess = jnp.linalg.solve(gf, gamma.reshape(gf.shape[0], -1)).reshape(-1, nq, nq)
    return grad, hess


@eqx.filter_jit
def projection_values(constraint: LoopConstraint, q, guess=None):
    """Solve f(q) (checked) and return ``(f, ∇f, H)`` by the projection method."""
    checked_constraint(constraint, "projection_values")
    q = checked_q(constraint, q, "projection_values")
    f = solve(constraint, q, guess)
    grad, hess = _projection_derivatives(constraint, f, q)
    return f, grad, hess
