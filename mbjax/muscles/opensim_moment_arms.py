"""Two notions of moment arm, and OpenSim's as its tools report it.

* **Geometric** (what :func:`mbjax.moment_arms` returns): R = −∂L/∂q, the change of path length
  with each independent coordinate (Ehsani Eq. 193/195; coupled coordinates eliminated, so the
  derivative runs along the constraint manifold).  Research codes (e.g. PredSim) use this.
* **Effective / unit-force** (OpenSim's ``Muscle.computeMomentArm``, ``MomentArmSolver``): apply a
  unit tension along the path, map the point forces to generalized forces g = Jᵀ F of the
  *unconstrained* tree (``GeometryPath::produceForces``), and read r_c = C_cᵀ g with C_c the speed
  direction that ``projectU`` returns when coordinate c is driven at unit speed.

Relation.  For coordinate couplers with one independent coordinate each (OpenSim's
``CoordinateCouplerConstraint`` as used in MoBL), C_c = ∂q_all/∂q_c, the tangent of the manifold, so
r_c = −dL/dq_c *if* g = −∂L/∂q_all.  Virtual work gives that for fixed points and wrap surfaces,
but ``produceForces`` applies forces only at points whose neighbour lies on **another** body; a
segment between two points of one body is skipped.  That is exact for fixed points (a rigid body
does not change the distance) and wrong for a ``MovingPathPoint`` next to a point of its own body:
the segment's length changes with the point's coordinate and OpenSim drops that change.  Hence, for
straight-line paths,

    r_OpenSim(q) = −∂/∂q Σ_{segments s between different bodies} ℓ_s(q)

(:func:`opensim_moment_arms`), equal to the geometric R except through such segments (MoBL's DELT2:
0.2 mm about shoulder_rot; with the couplers 12 mm about shoulder_elv, LAT2).  Tested against OpenSim
4.6's ``computeMomentArm`` in ``tests/validation/test_opensim_moment_arms.py``.  Use the geometric R
for dynamics (it is the generalized force a tension produces through the model's true kinematics:
M q̈ + N q̇ = G + R F); use this function to reproduce numbers from OpenSim's tools.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._kinematics import check_vector
from .._model import Model
from .paths import get_paths, path_state


def cross_body_lengths(model: Model, q) -> jnp.ndarray:
    """Σ of the path segments whose ends lie on different bodies, ``(nm,)`` (straight-line paths)."""
    paths = get_paths(model)
    if paths.wraps is not None:
        raise NotImplementedError(
            "opensim_moment_arms: models with wrap objects are not supported (OpenSim's unit-force "
            "moment arm equals the geometric one over wrap surfaces; moving points next to same-body "
            "points are the difference: see mbjax.muscles.opensim_moment_arms)"
        )
    st = path_state(model, q, derivatives=False)
    body = np.asarray(paths.body)  # (nm, P), static; -1 = ground
    nxt_body = jnp.take_along_axis(jnp.asarray(body), st.nxt, axis=1)
    cross = (jnp.asarray(body) != nxt_body) & st.seg
    return jnp.sum(jnp.where(cross, st.seg_len, 0.0), axis=1)


def opensim_moment_arms(model: Model, q) -> jnp.ndarray:
    """Moment arms ``(nq, nm)`` as OpenSim's ``Muscle.computeMomentArm`` reports them (see module doc)."""
    q = check_vector(model, q)
    return -jax.jacfwd(lambda x: cross_body_lengths(model, x))(q).T
