"""OpenSim's PointActuator / TorqueActuator as generalized forces (mbjax.forces.body_actuators).

Independent route: the power of actuator k at unit control, B_k(q)·q̇, equals the power of its
load on the bodies' velocities, F·v_point and T·(ω_A - ω_B), with v and ω taken from forward-mode
derivatives of the body poses along q̇ (jax.jvp of body_poses), not from the body Jacobians that
generalized_forces uses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.forces import PointActuator, TorqueActuator, actuator_matrix

jax.config.update("jax_enable_x64", True)

ACTUATORS = (
    PointActuator("P_body", "r_ulna_radius_hand", (0.01, -0.2, 0.03), (0.3, 1.0, -0.2), False, False, 3.0),
    PointActuator("P_global_force", "r_humerus", (-0.02, -0.1, 0.0), (0.0, 2.0, 0.0), False, True, 4.0),
    PointActuator("P_global_point", "r_ulna_radius_hand", (0.1, 0.3, 0.05), (1.0, 0.0, 1.0), True, True, 2.0),
    TorqueActuator("T_global", "r_humerus", "ground", (0.0, 0.0, 3.0), True, 2.0),
    TorqueActuator("T_pair_local", "r_ulna_radius_hand", "r_humerus", (0.2, 0.1, 1.0), False, 5.0),
)


def _power(model, a, q, qd):
    """Power of actuator ``a`` at control 1 from pose derivatives (module docstring)."""
    poses, dposes = jax.jvp(lambda x: mbjax.body_poses(model, x), (q,), (qd,))
    idx = {n: i for i, n in enumerate(model.body_names)}

    def omega(b):
        if b is None or b == "ground":
            return jnp.zeros(3)
        R, dR = poses[idx[b], :3, :3], dposes[idx[b], :3, :3]
        W = dR @ R.T
        return jnp.array([W[2, 1], W[0, 2], W[1, 0]])

    if isinstance(a, PointActuator):
        i = idx[a.body]
        R, o, dR, do = poses[i, :3, :3], poses[i, :3, 3], dposes[i, :3, :3], dposes[i, :3, 3]
        p = R.T @ (jnp.asarray(a.point) - o) if a.point_is_global else jnp.asarray(a.point)
        d = jnp.asarray(a.direction) / jnp.linalg.norm(jnp.asarray(a.direction))
        f = a.optimal_force * (d if a.force_is_global else R @ d)
        return f @ (dR @ p + do)
    axis = jnp.asarray(a.axis) / jnp.linalg.norm(jnp.asarray(a.axis))
    T = a.optimal_force * (axis if a.torque_is_global else poses[idx[a.body_a], :3, :3] @ axis)
    return T @ (omega(a.body_a) - omega(a.body_b))


def test_columns_do_the_power_of_their_loads():
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = jnp.asarray(rng.uniform(-1.0, 1.0, model.n_coordinates))
        qd = jnp.asarray(rng.normal(size=model.n_coordinates))
        B = actuator_matrix(model, ACTUATORS, q)
        assert B.shape == (model.n_coordinates, len(ACTUATORS))
        ours = np.asarray(B.T @ qd)
        theirs = np.array([float(_power(model, a, q, qd)) for a in ACTUATORS])
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    # vmapped over frames, float32 runs
    qs = jnp.asarray(rng.uniform(-1.0, 1.0, (4, model.n_coordinates)))
    Bs = jax.vmap(lambda x: actuator_matrix(model, ACTUATORS, x))(qs)
    np.testing.assert_allclose(Bs[2], actuator_matrix(model, ACTUATORS, qs[2]), rtol=1e-14, atol=1e-14)
    B32 = actuator_matrix(model, ACTUATORS, qs[0].astype(jnp.float32))
    np.testing.assert_allclose(B32, Bs[0], rtol=1e-4, atol=1e-4)


def test_bad_actuators_are_named():
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    q = jnp.zeros(model.n_coordinates)
    with pytest.raises(ValueError, match="PointActuator 'FX': body 'pelvis'"):
        actuator_matrix(model, (PointActuator("FX", "pelvis"),), q)
    with pytest.raises(ValueError, match="TorqueActuator 'MZ' axis: needs a finite non-zero"):
        actuator_matrix(model, (TorqueActuator("MZ", "r_humerus", axis=(0.0, 0.0, 0.0)),), q)


@pytest.mark.extended
def test_gait2354_residuals_equal_the_body_wrench_route():
    """The pipeline's six pelvis residuals on Gait2354 (prismatic pelvis translations, spline-coupled
    knees): the closed form equals the unit loads through the body-wrench recursion
    (:meth:`mbjax.ExternalLoads.generalized_forces`, a second algorithm) and the loads' power."""
    import os
    import warnings

    from mbjax.forces.body_actuators import _loads
    from mbjax.opensim.tools.so import read_reserves

    folder = mbjax.models.pipeline_path("gait2354_walk")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(os.path.join(folder, "subject01_simbody.osim"))
    body = tuple(r for r in read_reserves(os.path.join(folder, "gait2354_CMC_Actuators.xml"))
                 if isinstance(r, (PointActuator, TorqueActuator)))
    assert len(body) == 6
    loads, owner = _loads(model, body)
    rng = np.random.default_rng(5)
    lo, hi = (np.asarray(x) for x in (model.osim.lower, model.osim.upper))
    qs = jnp.asarray(rng.uniform(np.maximum(lo, -1.0), np.minimum(hi, 1.0), (3, model.n_coordinates)))
    B = jax.jit(jax.vmap(lambda x: actuator_matrix(model, body, x)))(qs)

    def by_wrenches(q):
        cols = []
        for k in range(len(body)):
            m = jnp.asarray(owner == k, q.dtype)[:, None]
            one = mbjax.ExternalLoads(loads.bodies, loads.points, loads.forces * m, loads.torques * m,
                                      point_frames=loads.point_frames, force_frames=loads.force_frames)
            cols.append(one.generalized_forces(model, q))
        return jnp.stack(cols, 1)

    ref = jax.jit(jax.vmap(by_wrenches))(qs)
    np.testing.assert_allclose(B, ref, rtol=1e-12, atol=1e-12 * float(jnp.abs(ref).max()))
    qd = jnp.asarray(rng.normal(size=model.n_coordinates))
    np.testing.assert_allclose(B[0].T @ qd, [float(_power(model, a, qs[0], qd)) for a in body],
                               rtol=1e-11, atol=1e-11)
