"""Joint reaction forces (Blajer & Czaplicki 2005, Eq. 2.1-2.11).

:func:`joint_reactions` returns, per chosen joint (named by its child body), the *full
transmitted wrench* W_c the parent exerts on the child, moment about the joint point = the child
body frame origin (:class:`JointReactions`: world ``force``/``moment``/``point``, child-axes
``local`` [moment; force]), its components on an orthonormal basis Z_c of the joint's
prohibited relative motions (``components`` = -λ_c of Eq. 2.10, the paper's sign being the
opposite) and the constraint part Z_c Z_cᵀ W_c (``reaction``).  The component along the joint's
free motion is the actuation (joint torque / generalized force).  Prohibited directions: 5 for a
revolute joint (3 forces, 2 moments normal to the axis), 5 for a prismatic one (3 moments, 2
forces normal to the axis), 6 for a weld; a chain through zero-inertia bodies is one physical
joint (:func:`reaction_spec`).

Routes: ``resolved.py`` the fast O(n) path (one Newton-Euler pass, batch-last kernel);
``dense.py`` the literal Eq. 2.10 with D, E by ``jax.jacfwd`` over augmented coordinates (test
oracle, also Blajer's D, E and λ); ``classical.py`` Eq. 2.11 with C from rigid-body kinematics.

Conventions of other packages.  OpenSim's ``JointReaction`` analysis reports, per joint, the
force and moment transmitted by the joint *on the child* (``apply_on_bodies = child``) at the
joint's child frame, expressed in ``ground``/``child``/``parent`` — ``force``/``moment`` (ground
axes) or ``local`` (child axes) here, with the joint point = child body frame origin.
Pinocchio's ``rnea`` stores ``data.f[i]``, the spatial force transmitted from the parent to body
``i`` in the local joint frame, ordered [linear; angular]: ``local[:, 3:]`` and ``local[:, :3]``
here.  Both include the actuation component along the joint motion (``Sᵀ f = τ``);
``components`` removes it.
"""

from .classical import constraint_matrix as constraint_matrix
from .classical import joint_reactions_classical as joint_reactions_classical
from .dense import acceleration_bias as acceleration_bias
from .dense import applied_forces as applied_forces
from .dense import augmented_jacobians as augmented_jacobians
from .dense import blajer_matrices as blajer_matrices
from .dense import body_mass_matrix as body_mass_matrix
from .dense import joint_reactions_dense as joint_reactions_dense
from .dense import prohibited_directions as prohibited_directions
from .dense import resolved_multipliers as resolved_multipliers
from .dense import transmitted_multipliers as transmitted_multipliers
from .dense import velocity_jacobian as velocity_jacobian
from .resolved import joint_reactions as joint_reactions
from .spec import ExternalLoads as ExternalLoads
from .spec import JointReactions as JointReactions
from .spec import ReactionSpec as ReactionSpec
from .spec import model_fingerprint as model_fingerprint
from .spec import reaction_spec as reaction_spec

__all__ = ["ExternalLoads", "JointReactions", "ReactionSpec", "acceleration_bias", "applied_forces",
           "augmented_jacobians", "blajer_matrices", "body_mass_matrix", "constraint_matrix",
           "joint_reactions", "joint_reactions_classical", "joint_reactions_dense", "model_fingerprint",
           "prohibited_directions", "reaction_spec", "resolved_multipliers", "transmitted_multipliers",
           "velocity_jacobian"]
