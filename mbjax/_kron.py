"""Literal Kronecker matrix calculus of Ehsani §2 (Eq. 1-37).

This is the *reference* path: it builds the paper's matrices exactly as printed (including the
commutation matrix and explicit Kronecker products) so that tests can check the fast einsum path
against the paper.  Nothing here is used on a hot path.

Layout (Definition 1, with the ERRATA's shape fix): for ``A`` of shape ``(m, n)`` and ``q`` of
length ``r``, ``∂A/∂q`` has shape ``(m·r, n)`` and element ``[i·r + l, k] = ∂A_ik/∂q_l``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def elementary(i: int, k: int, m: int, n: int, dtype=float):
    """Elementary matrix 𝓔_ik^{m×n}: zeros except a one at row ``i``, column ``k`` (Eq. 1)."""
    return jnp.zeros((m, n), dtype).at[i, k].set(1.0)


def commutation_matrix(m: int, n: int, dtype=float):
    """U_{m,n} = Σ_ik 𝓔_ik^{m×n} ⊗ 𝓔_ki^{n×m} (Eq. 2), shape ``(m·n, m·n)``.

    With row-major ``vec`` and ``A ∈ R^{m×n}`` it satisfies ``U_{m,n} vec(Aᵀ) = vec(A)`` (equivalently
    ``U_{n,m} vec(A) = vec(Aᵀ)``), and the commutative rule ``U_{s,r} (B ⊗ C) = C ⊗ B`` for ``B``
    (r×1), ``C`` (s×p) used in Theorem 3.
    """
    u = jnp.zeros((m * n, m * n), dtype)
    for i in range(m):
        for k in range(n):
            u = u + jnp.kron(elementary(i, k, m, n, dtype), elementary(k, i, n, m, dtype))
    return u


def from_jacobian(jac):
    """Definition-1 layout from a ``jacfwd`` array of shape ``(m, n, r)``: ``(m·r, n)``."""
    m, n, r = jac.shape
    return jnp.transpose(jac, (0, 2, 1)).reshape(m * r, n)


def to_jacobian(d, m: int, r: int):
    """Inverse of :func:`from_jacobian`: ``(m·r, n) -> (m, n, r)``."""
    n = d.shape[1]
    return jnp.transpose(d.reshape(m, r, n), (0, 2, 1))


def derivative(fn, q):
    """∂A/∂q of a matrix-valued ``fn(q)`` in the Definition-1 layout, by forward-mode autodiff."""
    a = fn(q)
    a2 = a.reshape(a.shape[0], -1) if a.ndim == 2 else a.reshape(-1, 1)
    jac = jax.jacfwd(lambda x: fn(x).reshape(a2.shape))(q)
    return from_jacobian(jac)


def derivative_literal(fn, q):
    """∂A/∂q = Σ_ik 𝓔_ik ⊗ ∂A_ik/∂q (Eq. 3), built element by element with Kronecker products."""
    a = fn(q)
    m, n = a.shape
    r = q.shape[0]
    jac = jax.jacfwd(fn)(q)  # (m, n, r)
    out = jnp.zeros((m * r, n), a.dtype)
    for i in range(m):
        for k in range(n):
            out = out + jnp.kron(elementary(i, k, m, n, a.dtype), jac[i, k][:, None])
    return out


def product_rule(a, da, b, db, r: int):
    """Theorem 1 (Eq. 4): ∂(AB)/∂q = (∂A/∂q) B + (A ⊗ I_r) ∂B/∂q."""
    return da @ b + jnp.kron(a, jnp.eye(r, dtype=a.dtype)) @ db


def scalar_rule(s, ds, a, da):
    """Theorem 2 (Eq. 11): ∂(sA)/∂q = A ⊗ ∂s/∂q + s ∂A/∂q, with ``ds`` of shape ``(r,)``."""
    return jnp.kron(a, ds.reshape(-1, 1)) + s * da


def kron_rule(a, da, c, dc, r: int):
    """Theorem 3 (Eq. 14): ∂(A⊗C)/∂q = (I_m ⊗ U_{s,r})(∂A/∂q ⊗ C) + A ⊗ ∂C/∂q."""
    m = a.shape[0]
    s = c.shape[0]
    left = jnp.kron(jnp.eye(m, dtype=a.dtype), commutation_matrix(s, r, a.dtype))
    return left @ jnp.kron(da, c) + jnp.kron(a, dc)


def differential_a(da, dq, m: int):
    """Theorem 4a (Eq. 27): dA = (I_m ⊗ dqᵀ) ∂A/∂q."""
    return jnp.kron(jnp.eye(m, dtype=da.dtype), dq.reshape(1, -1)) @ da


def differential_b(dat, dq, n: int):
    """Theorem 4b (Eq. 28): dA = (∂Aᵀ/∂q)ᵀ (I_n ⊗ dq), given ``dat = ∂Aᵀ/∂q``."""
    return dat.T @ jnp.kron(jnp.eye(n, dtype=dat.dtype), dq.reshape(-1, 1))
