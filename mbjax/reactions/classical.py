"""Classical joint reactions λ = (C M⁻¹ Cᵀ)⁻¹ C (M⁻¹ h - γ) (Blajer & Czaplicki Eq. 2.11).

C = ∂Φ/∂p is built independently of the augmented coordinates, from rigid-body relative velocities
(:func:`constraint_matrix`); M, h, γ in body coordinates come from :mod:`.dense`.  It needs every
joint opened and an invertible M.  A test oracle, not a fast path.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._checks import real_array
from .._model import Model
from .._spatial import skew
from .dense import _frames, _poses, acceleration_bias, applied_forces, body_mass_matrix, prohibited_directions
from .spec import as_spec, spec_jit


@spec_jit
def constraint_matrix(model: Model, q, joints=None, rows: str = "all"):
    """C = ∂Φ/∂p (Eq. 2.1) built from rigid-body kinematics, independently of g(q, z).

    Row block of joint c: ż_c = Z_cᵀ [R_cᵀ(ω_c - ω_P); R_cᵀ(v_c(o_c) - v_P(o_c))], the relative
    twist of the child w.r.t. its physical parent P at the joint point o_c, with v_b(x) =
    v_Cb + ω_b × (x - x_Cb).  Requires the physical parent to be ground or a massive body when
    ``rows="massive"``.
    """
    spec = as_spec(model, joints)
    q = jnp.asarray(q)
    rot, xc = _frames(model, q, jnp.zeros((0, 6), q.dtype), ())
    poses = _poses(model, q)
    zs = prohibited_directions(model, q, spec)
    nb = model.n_bodies
    dtype = rot.dtype
    blocks = []
    for (c, p), z in zip(zip(spec.joints, spec.parents), zs):
        o = poses[c, :3, 3]
        rc = rot[c]
        row = jnp.zeros((6, nb, 6), dtype)
        # child: ω_c and v_Cc + ω_c × (o - x_Cc) = v_Cc - (o - x_Cc)~ ω_c
        row = row.at[:3, c, :3].add(rc.T)
        row = row.at[3:, c, 3:].add(rc.T)
        row = row.at[3:, c, :3].add(-rc.T @ skew(o - xc[c]))
        if p >= 0:
            row = row.at[:3, p, :3].add(-rc.T)
            row = row.at[3:, p, 3:].add(-rc.T)
            row = row.at[3:, p, :3].add(rc.T @ skew(o - xc[p]))
        blocks.append(jnp.einsum("km,mbn->kbn", z.T, row))
    c_mat = jnp.concatenate(blocks, 0)
    if rows == "massive":
        for c, p, chain in zip(spec.joints, spec.parents, spec.chains):
            for b in (c, p):
                if b >= 0 and b not in spec.massive:
                    raise ValueError(
                        f"constraint_matrix(rows='massive'): joint at body {model.body_names[c]!r} "
                        f"connects the zero-mass body {model.body_names[b]!r}"
                    )
        c_mat = c_mat[:, np.asarray(spec.massive)]
    return c_mat.reshape(c_mat.shape[0], -1)


def joint_reactions_classical(model: Model, q, qd, joints=None, external=None):
    """Classical λ = (C M⁻¹ Cᵀ)⁻¹ C (M⁻¹ h - γ) (Eq. 2.11), flat ``(m,)``, paper sign.

    Uses the rows of the massive bodies only (M must be invertible).  ``h`` must then contain
    every applied load, actuation included (the formula is forward dynamics: no q̈).  Raises if
    the joints do not open every constraint ([D E] must be square: 6 n_massive = nq + m).
    """
    if not isinstance(model, Model):
        raise TypeError(f"joint_reactions_classical(model, q, qd, ...): model must be an mbjax.Model, got "
                        f"{type(model).__name__}")
    for x, name in ((q, "q"), (qd, "qd")):
        real_array(x, f"joint_reactions_classical: {name} must be a real array of shape (nq,) = "
                      f"({model.n_coordinates},)", f"joint_reactions_classical: {name} must be real")
    _require_invertible_body_inertias(model)
    return _joint_reactions_classical(model, q, qd, joints, external)


def _require_invertible_body_inertias(model: Model) -> None:
    """Eq. 2.11 inverts each massive body's 6x6 mass matrix: refuse, by body name, a body with mass whose
    inertia about its centre of mass is singular (a point mass), where the formula would give NaN
    (skipped for traced parameters)."""
    try:
        mass, about_com = np.asarray(model.mass, float), np.asarray(model.inertia, float)  # Model.inertia: about the COM
    except (TypeError, jax.errors.TracerArrayConversionError):
        return
    bad = [name for name, m, i in zip(model.body_names, mass, about_com)
           if m > 0 and np.linalg.eigvalsh(0.5 * (i + i.T))[0] <= 1e-12 * max(np.abs(i).max(), m)]
    if bad:
        raise ValueError(f"joint_reactions_classical: bodies {bad} have mass but a singular inertia about their "
                         "centre of mass (point masses): Eq. 2.11 inverts each body's 6x6 mass matrix; "
                         "mbjax.joint_reactions needs no inversion and answers for such models")


@spec_jit
def _joint_reactions_classical(model: Model, q, qd, joints=None, external=None):
    """:func:`joint_reactions_classical` under ``eqx.filter_jit``."""
    spec = as_spec(model, joints)
    q, qd = jnp.asarray(q), jnp.asarray(qd)
    n = 6 * len(spec.massive)
    m = sum(spec.n_components)
    if n != model.n_coordinates + m:
        raise ValueError(
            f"joint_reactions_classical: 6 x {len(spec.massive)} massive bodies = {n} body "
            f"coordinates but nq + m = {model.n_coordinates} + {m}; Eq. 2.11 needs every joint "
            "opened (choose all physical joints, no coupling across joints)"
        )
    keep = np.asarray(spec.massive)
    c_mat = constraint_matrix(model, q, spec, rows="massive")
    big_m = jax.scipy.linalg.block_diag(*body_mass_matrix(model, q)[keep])
    h = applied_forces(model, q, qd, external)[keep].reshape(-1)
    gamma = acceleration_bias(model, q, qd)[keep].reshape(-1)
    m_inv_ct = jnp.linalg.solve(big_m, c_mat.T)
    rhs = c_mat @ (jnp.linalg.solve(big_m, h) - gamma)
    return jnp.linalg.solve(c_mat @ m_inv_ct, rhs)
