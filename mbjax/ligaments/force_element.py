"""A ligament as a force element between two bodies of an mbjax ``Model``.

The ligament's fibres (TPSM-n or MBM, a :class:`FibreSet`) are fixed in body A (tibia, integration
side) and body B (femur).  Its wrench depends only on the two world poses; the generalized force is
``Q = J_Aᵀ W_A + J_Bᵀ W_B`` with the world twist Jacobians of ``body_jacobians`` (rows
``[ω; v at the world origin]``) and the wrenches ``[moment about the world origin; force]``, so that
``Qᵀ δq`` is the virtual work of the fibre forces.  ``Q`` enters Eq. 198 as part of ``Q_ext``.
The ligament stiffness is ``jax.jacfwd`` of the wrench with respect to a pose perturbation.
Body index ``-1`` (or the name ``"ground"``) is the fixed world frame.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._kinematics import body_jacobians, body_poses, check_vector
from .._model import GROUND, Model, require_model
from .._spatial import skew, transform
from .fibres import FibreSet, checked, energy, fibre_rules, wrench_jit


class LigamentForce(eqx.Module):
    """A discretised ligament from body ``body_a`` (fibre ends ``points_a``) to ``body_b``."""

    fibres: FibreSet
    body_a: int = eqx.field(static=True)
    body_b: int = eqx.field(static=True)

    def __check_init__(self):
        if not isinstance(self.fibres, FibreSet):
            raise TypeError(f"LigamentForce: fibres must be a FibreSet, got {type(self.fibres).__name__}")
        for side in ("body_a", "body_b"):
            b = getattr(self, side)
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < -1:
                raise ValueError(f"LigamentForce: {side} must be a body index >= 0 (or -1 = ground), got {b!r}; "
                                 "use LigamentForce.between(model, fibres, 'body_a', 'body_b') for body names")
        if self.body_a == self.body_b:
            raise ValueError("LigamentForce: a ligament needs two different bodies")

    @classmethod
    def between(cls, model: Model, fibres: FibreSet, body_a, body_b) -> "LigamentForce":
        """Attach ``fibres`` between bodies given by name (or ``"ground"``) or index."""

        def index(b):
            if isinstance(b, str):
                if b == GROUND:
                    return -1
                if b not in model.body_names:
                    raise ValueError(f"LigamentForce: body {b!r} not in the model's bodies {model.body_names}")
                return model.body_index(b)
            b = int(b)
            if not -1 <= b < model.n_bodies:
                raise ValueError(f"LigamentForce: body index {b} out of range [-1, {model.n_bodies})")
            return b

        a, b = index(body_a), index(body_b)
        if a == b:
            raise ValueError("LigamentForce: a ligament needs two different bodies")
        return cls(fibres, a, b)


def _pose(poses, i):
    return jnp.eye(4, dtype=poses.dtype) if i < 0 else poses[i]


def _checked(model: Model, q, element: LigamentForce, where: str):
    """``q`` and the element checked: bodies and shapes at trace time, then one fused run-time check
    of ``q`` and the fibres' values."""
    if not isinstance(element, LigamentForce):
        raise TypeError(f"{where}: element must be a LigamentForce, got {type(element).__name__}")
    nb = model.n_bodies
    for side, b in (("body_a", element.body_a), ("body_b", element.body_b)):
        if not -1 <= b < nb:
            raise ValueError(f"{where}: ligament {side} is body index {b}, but the model has {nb} bodies "
                             f"(indices 0..{nb - 1}, -1 = ground); build it with LigamentForce.between(model, ...)")
    name = " to ".join(repr(GROUND if b < 0 else model.body_names[b]) for b in (element.body_a, element.body_b))
    with _checks.checks(False):  # shape and dtype here; the values below, in one check
        q = check_vector(model, q)
    rules = [_checks.not_finite(q, "q", _checks.coordinates_context(model))]
    rules += fibre_rules(element.fibres, f"{where}: ligament from {name}")
    return _checks.all_of(q, rules)


def _body_wrenches(model: Model, q, element: LigamentForce):
    poses = body_poses(model, q)
    w_b = wrench_jit(element.fibres, _pose(poses, element.body_a), _pose(poses, element.body_b))
    return -w_b, w_b


def ligament_body_wrenches(model: Model, q, element: LigamentForce):
    """World wrenches ``(W_A, W_B)``, each ``[moment about world origin; force]`` (6,)."""
    require_model(model, "ligament_body_wrenches")
    q = _checked(model, q, element, "ligament_body_wrenches")
    with _checks.checks(False):  # checked above
        return _body_wrenches(model, q, element)


def ligament_generalized_forces(model: Model, q, element: LigamentForce):
    """``Q = J_Aᵀ W_A + J_Bᵀ W_B`` (nq,): the ligament's contribution to the right side of Eq. 198."""
    require_model(model, "ligament_generalized_forces")
    q = _checked(model, q, element, "ligament_generalized_forces")
    with _checks.checks(False):  # checked above
        w_a, w_b = _body_wrenches(model, q, element)
        jac = body_jacobians(model, q)
    out = jnp.zeros(model.n_coordinates, dtype=w_a.dtype)
    if element.body_a >= 0:
        out = out + jac[element.body_a].T @ w_a
    if element.body_b >= 0:
        out = out + jac[element.body_b].T @ w_b
    return out


def ligament_potential(model: Model, q, element: LigamentForce):
    """Elastic energy (J) at ``q``; ``-∇_q`` of it equals ``ligament_generalized_forces``."""
    require_model(model, "ligament_potential")
    q = _checked(model, q, element, "ligament_potential")
    with _checks.checks(False):  # checked above
        poses = body_poses(model, q)
    return energy(element.fibres, _pose(poses, element.body_a), _pose(poses, element.body_b))


def twist_perturbation(xi):
    """``exp`` of a world twist ``ξ = [ω; v]`` ``(6,)`` as a 4x4 transform (applied on the left of a
    pose); NaN/inf raise at run time (checks on)."""
    xi = _checks.as_array(xi, "twist_perturbation: xi", (6,), (6,), " (a twist [ω; v]; jax.vmap for several)")
    xi = _checks.finite(xi.astype(jnp.result_type(xi, float)), "twist_perturbation: xi")
    return _twist(xi)


def _twist(xi):
    """:func:`twist_perturbation` unchecked."""
    rot = jax.scipy.linalg.expm(skew(xi[:3]))
    return transform(rot, xi[3:])


def ligament_stiffness(fibres: FibreSet, pose_a, pose_b):
    """6x6 ``∂W_B/∂ξ_B``: the change of the wrench on B for a world twist displacement of B.

    Computed by ``jax.jacfwd`` through the whole fibre sum (the MBM gives it fibre by fibre; here it
    comes free for TPSM).  The negative is the usual (tangent) stiffness matrix.
    """
    pose_a, pose_b, _ = checked(fibres, pose_a, pose_b, "ligament_stiffness")

    def w(xi):
        return wrench_jit(fibres, pose_a, _twist(xi) @ pose_b)

    return jax.jacfwd(w)(jnp.zeros(6, dtype=jnp.result_type(pose_b)))


def generalized_stiffness(model: Model, q, element: LigamentForce):
    """``K = -∂Q/∂q`` (nq, nq) by ``jax.jacfwd`` of the generalized forces."""
    if not isinstance(model, Model):
        raise TypeError(f"generalized_stiffness(model, q, element): model must be an mbjax Model, got "
                        f"{type(model).__name__}")
    if not isinstance(element, LigamentForce):
        raise TypeError(f"generalized_stiffness: element must be a LigamentForce, got {type(element).__name__}")
    q = _checks.real_array(q, "generalized_stiffness: q must be a real array of shape (nq,)",
                           "generalized_stiffness: q must be real")
    q = q.astype(jnp.result_type(q, float))  # integer coordinates: jacfwd needs floats
    return -jax.jacfwd(ligament_generalized_forces, argnums=1)(model, q, element)
