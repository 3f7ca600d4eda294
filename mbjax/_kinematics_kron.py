"""The literal Kronecker-product pose derivatives of Ehsani Eq. 74, 75 and 89: a test oracle for
the closed-form einsum path of :func:`mbjax.pose_derivatives` (``mbjax.reference``)."""

from __future__ import annotations

import jax.numpy as jnp

from . import _kron
from ._kinematics import body_poses, joint_matrices, joint_transforms_unchecked as joint_transforms, joint_values
from ._model import Model
from ._spatial import inverse_transform


def pose_derivatives_kron(model: Model, q, method: str = "recursive"):
    """B_i, ∂B_i/∂q, ∂²B_i/∂q² in the paper's layout, built literally with Kronecker products.

    ``method="recursive"``: Eq. 74 for D_i and Eq. 89 for D'_i.  ``method="closed"``: Eq. 75
    (Σ_j W_jiᵀ ⊗ ∇f_j with W_ji of Eq. 76) for D_i, Eq. 89 for D'_i.  Python loops over bodies:
    this is a test oracle, not a fast path.  Returns lists ``B``, ``D``, ``Dpp`` over bodies.

    Eq. 88 as printed writes W_iiᵀ for the factor (Âᵢᵀ ᵖʳᵢA₄ᵀ) of Eq. 86; the latter is used.
    """
    top = model.topology
    nq = top.n_coordinates
    jv = joint_values(model, q)
    local = joint_transforms(model, jv.value)
    poses = body_poses(model, q)
    a_hat = joint_matrices(model)
    dtype = poses.dtype
    eye_nq = jnp.eye(nq, dtype=dtype)
    u = _kron.commutation_matrix(nq, nq, dtype)
    grad = [jv.gradient[i].reshape(nq, 1) for i in range(top.n_bodies)]
    vec_h = [jv.hessian[i].reshape(nq * nq, 1) for i in range(top.n_bodies)]
    b_list, d_list, dd_list = [], [], []
    for i in range(top.n_bodies):
        p = top.parents[i]
        b_i = poses[i].T
        w_ii_t = a_hat[i].T @ poses[i].T  # W_iiᵀ = Âᵢᵀ ⁰ᵢA₄ᵀ
        local_t = local[i].T  # ᵖʳ⁽ⁱ⁾ᵢA₄ᵀ
        if method == "recursive":
            d_i = jnp.kron(w_ii_t, grad[i])
            if p >= 0:
                d_i = d_i + jnp.kron(local_t, eye_nq) @ d_list[p]
        elif method == "closed":
            d_i = jnp.zeros((4 * nq, 4), dtype)
            for j in top.ancestors(i) + (i,):
                t_ji = inverse_transform(poses[j]) @ poses[i]  # ʲᵢA₄
                w_ji = poses[j] @ a_hat[j] @ t_ji  # Eq. 76
                d_i = d_i + jnp.kron(w_ji.T, grad[j])
        else:
            raise ValueError(f"method must be 'recursive' or 'closed', got {method!r}")
        # Eq. 89
        dd_i = jnp.kron(a_hat[i].T, u) @ jnp.kron(d_i, grad[i]) + jnp.kron(w_ii_t, vec_h[i])
        if p >= 0:
            factor = a_hat[i].T @ local_t  # Âᵢᵀ ᵖʳᵢA₄ᵀ (Eq. 86)
            dd_i = dd_i + jnp.kron(factor, jnp.kron(eye_nq, grad[i])) @ d_list[p]
            dd_i = dd_i + jnp.kron(local_t, jnp.eye(nq * nq, dtype=dtype)) @ dd_list[p]
        b_list.append(b_i)
        d_list.append(d_i)
        dd_list.append(dd_i)
    return b_list, d_list, dd_list
