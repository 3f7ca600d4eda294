"""Reference twins: the slow, literal forms of the closed-form quantities, kept as oracles.

Each one computes what a fast function of the core computes, by a second route the tests compare
it with: the Kronecker-product formulas of Ehsani's paper as written (``*_kron``: Eq. 38-99 for the
pose derivatives, the mass matrix, the bias and gravity forces) and the classical joint reactions
of Blajer & Czaplicki's Eq. 2.11 with the matrix inversions it avoids (``joint_reactions_classical``).
``virtual_displacement`` (Eq. 46) is the core's ``point_velocity`` with a virtual displacement δq in
place of q̇: a second name for one computation, kept here for the papers' virtual-work checks.
Use them to check a model or an extension; use the core (``mbjax.mass_matrix``, ...) to compute.
"""

from __future__ import annotations

from . import _dynamics, _kinematics_kron
from ._dynamics import bias_forces_kron, mass_matrix_kron
from ._model import Model
from ._point_kinematics import virtual_displacement
from .reactions import joint_reactions_classical


def _model(model, where: str) -> None:
    if not isinstance(model, Model):
        raise TypeError(f"{where}(model, q, ...): model must be an mbjax.Model, got {type(model).__name__}")


def pose_derivatives_kron(model, q, method: str = "recursive"):
    """B_i, ∂B_i/∂q, ∂²B_i/∂q² per body, literally with Kronecker products (Eq. 74/75, 89);
    ``method`` ``"recursive"`` or ``"closed"``.  Returns lists ``B``, ``D``, ``Dpp`` over bodies."""
    _model(model, "pose_derivatives_kron")
    if method not in ("recursive", "closed"):
        raise ValueError(f"pose_derivatives_kron: method must be 'recursive' or 'closed', got {method!r}")
    return _kinematics_kron.pose_derivatives_kron(model, q, method)


def gravity_forces_kron(model, q, derivs=None):
    """G = Σ_i m_i ({ⁱr_cmᵀ | 1} ⊗ I_nq) D_i {g; 0} (Eq. 187, 197); ``derivs``: the ``(B, D, Dpp)``
    of :func:`pose_derivatives_kron` at ``q`` (computed when None)."""
    _model(model, "gravity_forces_kron")
    if derivs is not None:
        nb, nq = model.n_bodies, model.n_coordinates
        ok = isinstance(derivs, (tuple, list)) and len(derivs) == 3 and all(
            isinstance(x, (tuple, list)) and len(x) == nb for x in derivs)
        if not ok or any(tuple(getattr(d, "shape", ())) != (4 * nq, 4) for d in derivs[1]):
            raise ValueError(f"gravity_forces_kron: derivs must be (B, D, Dpp) of pose_derivatives_kron(model, q): "
                             f"three lists over the {nb} bodies, D_i of shape (4 nq, 4) = ({4 * nq}, 4); pass "
                             "derivs=None to compute them")
    return _dynamics.gravity_forces_kron(model, q, derivs)


__all__ = ["bias_forces_kron", "gravity_forces_kron", "joint_reactions_classical", "mass_matrix_kron",
           "pose_derivatives_kron", "virtual_displacement"]
