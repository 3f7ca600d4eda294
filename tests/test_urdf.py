"""URDF import (mbjax.io.load_urdf) on hand-written files whose dynamics are derived by hand."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_urdf

M1, M2, L1, L2, G = 1.3, 0.9, 0.7, 0.5, 9.81

DOUBLE = f"""<?xml version="1.0"?>
<robot name="double">
  <link name="base"/>
  <link name="mount"><inertial><mass value="5"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="link1"><inertial><origin xyz="0 -{L1} 0" rpy="0 0 0"/><mass value="{M1}"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="link2"/>
  <link name="bob2"><inertial><origin xyz="0 0 0"/><mass value="{M2}"/>
    <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="weld" type="fixed"><parent link="base"/><child link="mount"/><origin xyz="0.1 0.2 0.3"/></joint>
  <joint name="shoulder" type="continuous"><parent link="mount"/><child link="link1"/><axis xyz="0 0 1"/></joint>
  <joint name="elbow" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 -{L1} 0"/><axis xyz="0 0 2"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="tip" type="fixed"><parent link="link2"/><child link="bob2"/><origin xyz="0 -{L2} 0"/></joint>
</robot>"""


def _write(tmp_path, text, name="robot.urdf"):
    p = tmp_path / name
    p.write_text(text)
    return p


@jax.jit
def _mg(model, q, qd):
    return mbjax.mass_matrix(model, q), mbjax.bias_forces(model, q, qd), mbjax.gravity_forces(model, q)


def test_double_pendulum_with_fixed_links(tmp_path):
    model = load_urdf(_write(tmp_path, DOUBLE), gravity=[0, -G, 0])
    assert model.coordinate_names == ("shoulder", "elbow")
    assert model.body_names == ("link1", "link2")
    t1, t2, w1, w2 = 0.4, -1.1, 2.0, -0.7
    m, n, g = _mg(model, jnp.array([t1, t2]), jnp.array([w1, w2]))
    c2 = np.cos(t2)
    m_ref = [[(M1 + M2) * L1**2 + M2 * L2**2 + 2 * M2 * L1 * L2 * c2, M2 * L2**2 + M2 * L1 * L2 * c2],
             [M2 * L2**2 + M2 * L1 * L2 * c2, M2 * L2**2]]
    h = M2 * L1 * L2 * np.sin(t2)
    g_ref = [-(M1 + M2) * G * L1 * np.sin(t1) - M2 * G * L2 * np.sin(t1 + t2), -M2 * G * L2 * np.sin(t1 + t2)]
    np.testing.assert_allclose(m, m_ref, rtol=1e-13)
    np.testing.assert_allclose(n, [-h * (2 * w1 * w2 + w2**2), h * w1**2], rtol=1e-13)
    np.testing.assert_allclose(g, g_ref, rtol=1e-13)
    # fixed joints kept as zero-dof bodies give the same dynamics
    body = load_urdf(_write(tmp_path, DOUBLE), gravity=[0, -G, 0], fixed="body")
    assert body.body_names == ("mount", "link1", "link2", "bob2")
    mb, nb, gb = _mg(body, jnp.array([t1, t2]), jnp.array([w1, w2]))
    np.testing.assert_allclose(mb, m, rtol=1e-13)
    np.testing.assert_allclose(gb, g, rtol=1e-13)


def test_inertial_rpy_prismatic_and_mimic(tmp_path):
    a, b, c, m = 0.02, 0.05, 0.04, 2.0
    text = f"""<robot name="r">
      <link name="base"/>
      <link name="slider"><inertial><mass value="{m}"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="wheel"><inertial><origin xyz="0 0.1 0" rpy="0 0 1.5707963267948966"/><mass value="{m}"/>
        <inertia ixx="{a}" iyy="{b}" izz="{c}" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="follower"><inertial><origin xyz="0 0 0"/><mass value="1"/><inertia ixx="0.015" iyy="0.015" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="x" type="prismatic"><parent link="base"/><child link="slider"/><axis xyz="1 0 0"/></joint>
      <joint name="spin" type="revolute"><parent link="slider"/><child link="wheel"/><axis xyz="1 0 0"/></joint>
      <joint name="copy" type="revolute"><parent link="wheel"/><child link="follower"/><axis xyz="0 0 1"/>
        <mimic joint="spin" multiplier="2" offset="0.1"/></joint>
    </robot>"""
    model = load_urdf(_write(tmp_path, text), gravity=[-G, 0, 0])
    assert model.coordinate_names == ("x", "spin")
    q = jnp.array([0.3, 0.8])
    f = mbjax.joint_values(model, q).value
    np.testing.assert_allclose(f[2], 2 * 0.8 + 0.1, rtol=1e-15)
    mm, _, g = _mg(model, q, jnp.zeros(2))
    # translation: all three masses; G along the axis
    np.testing.assert_allclose(mm[0, 0], 2 * m + 1, rtol=1e-13)
    np.testing.assert_allclose(g[0], -(2 * m + 1) * G, rtol=1e-13)
    # spin about x: inertia rotated by yaw 90° has I_xx = b; offset 0.1 from the axis; follower I_zz
    # turns with ω_f = ω_spin x̂ + 2 ω_spin ẑ_f (ẑ_f ⟂ x̂), so it adds 0.015 + 4 * 0.03
    np.testing.assert_allclose(mm[1, 1], b + m * 0.1**2 + 0.015 + 4 * 0.03, rtol=1e-12)


@pytest.mark.parametrize(
    "body, match",
    [
        ('<joint name="j" type="revolute"><parent link="nope"/><child link="a"/></joint>', "joint 'j'.*parent link 'nope'"),
        ('<joint name="j" type="floating"><parent link="base"/><child link="a"/></joint>', "joint 'j'.*floating"),
        ('<joint name="j" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 zero 0"/></joint>',
         "joint 'j'/origin.*not a list of numbers"),
        ('<joint name="j" type="revolute"><parent link="base"/><child link="a"/></joint>'
         '<joint name="k" type="revolute"><parent link="a"/><child link="base"/></joint>', "cycle"),
    ],
)
def test_malformed_files_name_file_and_element(tmp_path, body, match):
    text = f'<robot name="r"><link name="base"/><link name="a"/>{body}</robot>'
    path = _write(tmp_path, text, "bad.urdf")
    with pytest.raises(ValueError, match="bad.urdf.*" + match):
        load_urdf(path)


def test_bad_inertia_named(tmp_path):
    text = """<robot name="r"><link name="base"/><link name="a"><inertial><mass value="1"/>
      <inertia ixx="1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j" type="revolute"><parent link="base"/><child link="a"/></joint></robot>"""
    with pytest.raises(ValueError, match="bad.urdf: link 'a'/inertial/inertia"):
        load_urdf(_write(tmp_path, text, "bad.urdf"))


def test_urdf_model_simulates_with_energy_conserved(tmp_path):
    model = load_urdf(_write(tmp_path, DOUBLE), gravity=[0, -G, 0])
    q0, qd0 = jnp.array([1.0, -0.5]), jnp.array([0.0, 0.0])
    sol = mbjax.simulate(model, q0, qd0, 0.0, 0.5, saveat=jnp.array([0.5]), rtol=1e-11, atol=1e-11)
    e = jax.vmap(mbjax.total_energy, in_axes=(None, 0, 0))
    e0, e1 = mbjax.total_energy(model, q0, qd0), e(model, *sol.ys)[0]
    assert abs(float(e1 - e0)) < 1e-8 * abs(float(e0))
