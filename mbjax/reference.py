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

from ._dynamics import bias_forces_kron, gravity_forces_kron, mass_matrix_kron
from ._kinematics_kron import pose_derivatives_kron
from ._point_kinematics import virtual_displacement
from .reactions import joint_reactions_classical

__all__ = ["bias_forces_kron", "gravity_forces_kron", "joint_reactions_classical", "mass_matrix_kron",
           "pose_derivatives_kron", "virtual_displacement"]
