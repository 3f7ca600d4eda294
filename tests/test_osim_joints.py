"""OpenSim's fixed joint types (Gimbal, Ball, Free, Planar, Ellipsoid, Universal) against transforms
computed by hand from Simbody's mobilizer definitions (independent of the loader's chains):

* Gimbal / Ball / Free rotations: ``R = Rx(q0) Ry(q1) Rz(q2)`` (X-Y-Z body-fixed; OpenSim sets
  ``useEulerAngles``), Free translation ``p = (q3, q4, q5)`` in the parent frame F;
* Planar: ``R = Rz(q0)``, ``p = (q1, q2, 0)`` in F;
* Universal: ``R = Rx(q0) Ry(q1)``;
* Ellipsoid: the Ball rotation and ``p = (a z_x, b z_y, c z_z)`` with ``z`` the third column of R.

Each joint sits between offset frames (parent: translated and rotated; child: rotated), so the
body's ground transform is ``X_PF · X_FM(q) · X_BC⁻¹``.  The same files are compared with OpenSim
in ``tests/validation/test_opensim_library.py``'s twin below (validation group).
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax import body_poses
from mbjax.io import load_osim

JOINTS = {  # type: (coordinate names, extra properties)
    "GimbalJoint": (["r1", "r2", "r3"], ""),
    "BallJoint": (["r1", "r2", "r3"], ""),
    "FreeJoint": (["r1", "r2", "r3", "t1", "t2", "t3"], ""),
    "PlanarJoint": (["rz", "tx", "ty"], ""),
    "UniversalJoint": (["r1", "r2"], ""),
    "EllipsoidJoint": (["r1", "r2", "r3"], "<radii_x_y_z>0.3 0.2 0.1</radii_x_y_z>"),
}
PF_T, PF_O = np.array([0.1, -0.2, 0.05]), np.array([0.3, -0.1, 0.2])
CF_O = np.array([-0.2, 0.15, 0.1])


def _model_text(joint):
    names, extra = JOINTS[joint]
    coords = "".join(f'<Coordinate name="{n}"><range>-3 3</range></Coordinate>' for n in names)
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m"><gravity>0 -9.80665 0</gravity><Ground name="ground" />
<BodySet name="bodyset"><objects>
  <Body name="b"><mass>1.3</mass><mass_center>0.01 -0.1 0.02</mass_center><inertia>0.02 0.015 0.01 0.001 0 0.002</inertia></Body>
</objects></BodySet>
<JointSet name="jointset"><objects>
  <{joint} name="j">
    <socket_parent_frame>ground_offset</socket_parent_frame><socket_child_frame>b_offset</socket_child_frame>
    <coordinates>{coords}</coordinates>{extra}
    <frames>
      <PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent>
        <translation>{' '.join(repr(float(v)) for v in PF_T)}</translation><orientation>{' '.join(repr(float(v)) for v in PF_O)}</orientation></PhysicalOffsetFrame>
      <PhysicalOffsetFrame name="b_offset"><socket_parent>/bodyset/b</socket_parent>
        <translation>0 0 0</translation><orientation>{' '.join(repr(float(v)) for v in CF_O)}</orientation></PhysicalOffsetFrame>
    </frames>
  </{joint}>
</objects></JointSet></Model></OpenSimDocument>
"""


def write_joint_model(directory, joint) -> str:
    path = os.path.join(str(directory), f"{joint}.osim")
    with open(path, "w") as fh:
        fh.write(_model_text(joint))
    return path


def _r(axis, a):
    c, s = np.cos(a), np.sin(a)
    return {0: np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            1: np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            2: np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


def _xyz(a):
    return _r(0, a[0]) @ _r(1, a[1]) @ _r(2, a[2])


def _tf(r, p):
    t = np.eye(4)
    t[:3, :3], t[:3, 3] = r, p
    return t


def hand_transform(joint, q):
    """Ground transform of body b from Simbody's mobilizer definition."""
    q = np.asarray(q, float)
    if joint in ("GimbalJoint", "BallJoint"):
        x_fm = _tf(_xyz(q), np.zeros(3))
    elif joint == "FreeJoint":
        x_fm = _tf(_xyz(q[:3]), q[3:])
    elif joint == "PlanarJoint":
        x_fm = _tf(_r(2, q[0]), [q[1], q[2], 0.0])
    elif joint == "UniversalJoint":
        x_fm = _tf(_r(0, q[0]) @ _r(1, q[1]), np.zeros(3))
    else:  # EllipsoidJoint
        r = _xyz(q)
        x_fm = _tf(r, np.array([0.3, 0.2, 0.1]) * r[:, 2])
    x_pf = _tf(_xyz(PF_O), PF_T)
    x_bc = _tf(_xyz(CF_O), np.zeros(3))
    return x_pf @ x_fm @ np.linalg.inv(x_bc)


def _poses(n, nq, seed=0):
    return np.random.default_rng(seed).uniform(-1.4, 1.4, size=(n, nq))


@pytest.mark.parametrize("joint", sorted(JOINTS))
def test_joint_transform_equals_hand_computed(tmp_path, joint):
    model = load_osim(write_joint_model(tmp_path, joint))
    names = JOINTS[joint][0]
    assert model.coordinate_names == tuple(names)
    qs = _poses(4, len(names))
    poses = np.asarray(jax.vmap(body_poses, in_axes=(None, 0))(model, jnp.asarray(qs)))
    for q, t in zip(qs, poses):
        np.testing.assert_allclose(t[model.body_index("b")], hand_transform(joint, q), atol=1e-13, rtol=0)


def test_refused_joints_are_named(tmp_path):
    path = os.path.join(str(tmp_path), "scap.osim")
    with open(path, "w") as fh:
        fh.write(_model_text("GimbalJoint").replace("GimbalJoint", "ConstantCurvatureJoint"))
    with pytest.raises(NotImplementedError, match="ConstantCurvatureJoint .* is not supported"):
        load_osim(path)


def test_opt_outs_are_explicit(tmp_path):
    """Contact forces and non-coupler constraints are refused by name unless opted out, and the
    opt-out is warned and recorded."""
    text = _model_text("FreeJoint").replace("</JointSet>", """</JointSet>
<ConstraintSet name="constraintset"><objects><WeldConstraint name="weld"><isEnforced>true</isEnforced>
  <socket_frame1>/ground</socket_frame1><socket_frame2>/bodyset/b</socket_frame2></WeldConstraint></objects></ConstraintSet>
<ForceSet name="forceset"><objects><ElasticFoundationForce name="contact" /></objects></ForceSet>""")
    path = os.path.join(str(tmp_path), "free.osim")
    with open(path, "w") as fh:
        fh.write(text)
    with pytest.raises(NotImplementedError, match="WeldConstraint name='weld'.*ignore_constraints"):
        load_osim(path)
    with pytest.raises(NotImplementedError, match="ElasticFoundationForce name='contact'.*ignore_forces"):
        load_osim(path, ignore_constraints=("WeldConstraint",))
    with pytest.warns(UserWarning, match="not modelled"):
        model = load_osim(path, ignore_constraints=("WeldConstraint",),
                          ignore_forces=("ElasticFoundationForce",))
    assert model.osim.ignored == (("WeldConstraint", "weld"), ("ElasticFoundationForce", "contact"))
    with pytest.raises(ValueError, match="cannot be ignored"):
        load_osim(path, ignore_forces=("Thelen2003Muscle",))
