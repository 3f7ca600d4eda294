"""Dynamics and body kinematics against Pinocchio, run live on the same URDF (validation group).

Pinocchio's ``rnea``, ``crba``, ``aba`` and ``forwardKinematics(q, v, a)`` are an independent
C++ implementation of the same rigid-body quantities; mbjax reads the URDF with its own importer.
"""

import jax
import numpy as np
import pytest

import mbjax

pin = pytest.importorskip("pinocchio", reason="pip install pin (the validation extra) for these checks")
pytestmark = pytest.mark.validation

from _trees import urdf_tree


@pytest.fixture(scope="module", params=[(7, 0, True), (12, 1, False)], ids=["chain7", "tree12"])
def pair(request):
    xml = urdf_tree(*request.param)
    model = mbjax.io.load_urdf(xml)
    pmodel = pin.buildModelFromXML(xml)
    pmodel.gravity.linear = np.asarray(model.gravity)
    order = np.asarray([pmodel.joints[pmodel.getJointId(n)].idx_q for n in model.coordinate_names])
    return model, pmodel, order


def _states(model, n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.5, 1.5, (n, model.n_coordinates)) for _ in range(3)]


def _to_pin(x, order, nq):
    out = np.zeros(nq)
    out[order] = x
    return out


def test_inverse_and_forward_dynamics_and_mass_matrix(pair):
    model, pmodel, order = pair
    data = pmodel.createData()
    q, qd, qdd = _states(model)
    tau = jax.jit(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0)))(model, q, qd, qdd)
    mass = jax.jit(jax.vmap(mbjax.mass_matrix, (None, 0)))(model, q)
    acc = jax.jit(jax.vmap(mbjax.forward_dynamics, (None, 0, 0, 0)))(model, q, qd, qdd)
    for i in range(q.shape[0]):
        pq, pv, pa = (_to_pin(x[i], order, pmodel.nq) for x in (q, qd, qdd))
        np.testing.assert_allclose(tau[i], pin.rnea(pmodel, data, pq, pv, pa)[order], atol=1e-11)
        m = pin.crba(pmodel, data, pq)
        m = np.triu(m) + np.triu(m, 1).T
        np.testing.assert_allclose(mass[i], m[np.ix_(order, order)], atol=1e-12)
        np.testing.assert_allclose(acc[i], pin.aba(pmodel, data, pq, pv, pa)[order], atol=1e-9)


def test_body_kinematics(pair):
    model, pmodel, order = pair
    data = pmodel.createData()
    q, qd, qdd = _states(model, seed=1)
    bk = jax.jit(jax.vmap(mbjax.body_kinematics, (None, 0, 0, 0)))(model, q, qd, qdd)
    frame = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    for i in range(q.shape[0]):
        pin.forwardKinematics(pmodel, data, *(_to_pin(x[i], order, pmodel.nq) for x in (q, qd, qdd)))
        for j in range(1, pmodel.njoints):
            b = model.body_index("l" + pmodel.names[j][1:])  # joint j<k> moves link l<k>
            pose = data.oMi[j]
            v = pin.getVelocity(pmodel, data, j, frame)
            a = pin.getClassicalAcceleration(pmodel, data, j, frame)
            np.testing.assert_allclose(bk.pose[i, b, :3, :3], pose.rotation, atol=1e-13)
            np.testing.assert_allclose(bk.pose[i, b, :3, 3], pose.translation, atol=1e-13)
            np.testing.assert_allclose(bk.velocity[i, b], np.concatenate([v.angular, v.linear]), atol=1e-12)
            np.testing.assert_allclose(bk.acceleration[i, b], np.concatenate([a.angular, a.linear]), atol=1e-11)
