"""Joint reactions vs Pinocchio's recursive Newton-Euler (marker ``validation``; needs ``pin``).

``pin.rnea`` fills ``data.f[i]``, the spatial force transmitted from the parent to body ``i``
(about the joint frame origin, local joint frame axes, ordered [linear; angular]).  For a URDF
link the joint frame is the link frame, which is mbjax's body frame, so ``data.f[i]`` must equal
``mbjax.joint_reactions(...).local`` reordered ([moment; force] here).  The URDF tree mixes
unaligned revolute and prismatic joints, a massless link (a zero-inertia body in mbjax) and a
fixed joint (merged into its parent by both packages), with gravity and an external point load
(``fext`` in Pinocchio, in the local joint frame).
"""

from __future__ import annotations

import numpy as np
import pytest

import jax.numpy as jnp

pytestmark = pytest.mark.validation
pin = pytest.importorskip("pinocchio", reason="the validation group needs pinocchio (`pip install pin`)")

import mbjax  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402


def _vec(v):
    return " ".join(f"{x:.17g}" for x in v)


def urdf_tree(n: int, seed: int) -> str:
    """Links l0..l{n-1}, random parents among the last 3, mixed joint types; l2 is massless and
    a massive link ``tip`` is fixed to l{n-1}."""
    rng = np.random.default_rng(seed)
    parts = [f'<robot name="tree{n}"><link name="base"/>']
    for k in range(n):
        if k == 2:
            parts.append(f'<link name="l{k}"/>')
            continue
        d2 = rng.uniform(0.05, 0.4, size=3) ** 2  # a box: physical principal moments
        moments = np.asarray([d2[1] + d2[2], d2[0] + d2[2], d2[0] + d2[1]]) / 12.0
        parts.append(
            f'<link name="l{k}"><inertial><origin xyz="{_vec(rng.normal(size=3) * 0.05)}" '
            f'rpy="{_vec(rng.normal(size=3))}"/><mass value="{rng.uniform(0.5, 2):.17g}"/>'
            f'<inertia ixx="{moments[0]}" iyy="{moments[1]}" izz="{moments[2]}" ixy="0" ixz="0" iyz="0"/>'
            "</inertial></link>"
        )
    for k in range(n):
        parent = "base" if k == 0 else f"l{int(rng.integers(max(0, k - 3), k))}"
        axis = rng.normal(size=3)
        kind = "prismatic" if k % 3 == 1 else "revolute"
        parts.append(
            f'<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{_vec(rng.normal(size=3) * 0.2)}" rpy="{_vec(rng.normal(size=3))}"/>'
            f'<axis xyz="{_vec(axis / np.linalg.norm(axis))}"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>'
        )
    parts.append(
        '<link name="tip"><inertial><origin xyz="0.1 0 0"/><mass value="0.7"/>'
        '<inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        f'<joint name="fix" type="fixed"><parent link="l{n - 1}"/><child link="tip"/>'
        '<origin xyz="0.3 0.1 0" rpy="0.2 0 0.4"/></joint>'
    )
    parts.append("</robot>")
    return "".join(parts)


@pytest.mark.parametrize("n, seed", [(6, 0), (12, 1)])
def test_reactions_match_pinocchio_rnea(n, seed):
    xml = urdf_tree(n, seed)
    model = load_urdf(xml)
    pmodel = pin.buildModelFromXML(xml)
    pmodel.gravity.linear = np.asarray(model.gravity)
    data = pmodel.createData()
    assert float(model.mass[model.body_index("l2")]) == 0.0
    order = np.asarray([pmodel.joints[pmodel.getJointId(c)].idx_q for c in model.coordinate_names])
    rng = np.random.default_rng(seed)
    nq = model.n_coordinates
    # an external point load on the last link (body frame point, world force and torque)
    body = f"l{n - 1}"
    point, force, torque = rng.normal(size=3) * 0.2, rng.normal(size=3) * 5, rng.normal(size=3)
    loads = mbjax.ExternalLoads(body, jnp.asarray(point), jnp.asarray(force), jnp.asarray(torque))
    spec = mbjax.reaction_spec(model, list(model.body_names))  # every link, the massless one too
    for trial in range(3):
        q, qd, qdd = (rng.uniform(-1, 1, nq) for _ in range(3))
        out = mbjax.joint_reactions(model, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd), spec, loads)
        pq, pv, pa = (np.zeros(pmodel.nq) for _ in range(3))
        pq[order], pv[order], pa[order] = q, qd, qdd
        rot = np.asarray(mbjax.body_poses(model, jnp.asarray(q)))[model.body_index(body), :3, :3]
        fext = [pin.Force.Zero() for _ in range(pmodel.njoints)]
        f_loc = rot.T @ force
        fext[pmodel.getJointId(f"j{n - 1}")] = pin.Force(f_loc, np.cross(point, f_loc) + rot.T @ torque)
        tau = pin.rnea(pmodel, data, pq, pv, pa, fext)
        for k, name in enumerate(spec.names):
            jid = pmodel.getJointId("j" + name[1:])
            f = data.f[jid]
            ref = np.concatenate([f.angular, f.linear])
            np.testing.assert_allclose(np.asarray(out.local[k]), ref, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(ref).max()))
        # and the joint components along the motion are Pinocchio's τ
        tau_ref = tau[order]
        np.testing.assert_allclose(np.asarray(mbjax.inverse_dynamics(model, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd),
                                   external=mbjax.generalized_forces(model, jnp.asarray(q), body, jnp.asarray(point),
                                                                      jnp.asarray(force), jnp.asarray(torque)))),
                                   tau_ref, rtol=1e-10, atol=1e-9)
