"""OpenSim's JointReaction analysis from setup files (mbjax.opensim.tools.jr), without OpenSim.

Independent references:

* the double pendulum shipped as an OpenSim model (two point masses on pins, child frames offset
  from the bodies): forward dynamics and both joints' reactions in closed form (point-mass
  Newton-Euler), for a quadratic motion the splines reproduce exactly and actuator torques read
  from a forces file at other times than the states (linear interpolation);
* Gait2354 (54 muscles with moving and conditional path points, pelvis residuals, coordinate
  reserves, both ground reactions) with made-up muscle forces: q̈ satisfies the recursive
  Newton-Euler inverse dynamics with OpenSim's unit-force moment arms; the muscles' body loads
  equal the GMLAV body wrenches (Ehsani Eq. 155-160, another path implementation); the reactions
  equal Blajer's dense λ (jacfwd D, E) with all loads applied; the free pelvis joint transmits
  nothing (no coordinate actuator on it); child and parent reactions obey Newton's third law;
* arm26 with its wrap surfaces: the virtual work of the muscles' body loads (wrap tangent points
  included) equals the gradient of OpenSim's cross-body path length.

OpenSim 4.6's own AnalyzeTool is the reference in tests/validation/test_jr_opensim.py.
"""

from __future__ import annotations

import pathlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import jr_tool
from mbjax.io import Table, read_storage, write_storage
from mbjax.reactions import joint_reactions_dense

WALK = pathlib.Path(mbjax.models.model_path("gait2354")).parent / "gait2354_walk"

# --------------------------------------------------------------------------------------------
# the double pendulum: closed form
# --------------------------------------------------------------------------------------------

L = 0.5  # rod length: each mass sits 0.5 m below its pin (child frame at (0, 0.5, 0) in the rod)
P0 = np.array([0.0, 1.1, 0.0])  # pin1's parent frame (ground_offset)
A, B, C = np.array([0.3, -0.2]), np.array([0.5, 0.8]), np.array([-0.4, 0.3])  # q = A + B t + C t²


def _tau(t):
    return np.stack([3.0 + 2.0 * np.sin(3.0 * t), -1.0 + np.cos(2.0 * t)], -1)


FORCE_SET = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <ForceSet name="pendulum_actuators">
    <objects>
      <CoordinateActuator name="tau1"><coordinate>q1</coordinate><optimal_force>50</optimal_force></CoordinateActuator>
      <CoordinateActuator name="tau2"><coordinate>q2</coordinate><optimal_force>50</optimal_force></CoordinateActuator>
    </objects>
    <groups />
  </ForceSet>
</OpenSimDocument>
"""


def _setup_text(**kw):
    p = dict(model=mbjax.models.model_path("double_pendulum"), coords="pendulum_q.sto", forces="pendulum_force.sto",
             joints="pin1 pin2 pin2 pin1", on="child child parent parent", frames="ground child rod1 parent",
             t0="0.1", t1="0.9", step="2", results="results",
             force_set="<force_set_files>actuators.xml</force_set_files>",
             extra="", analysis_extra="", on_flag="true")
    p.update(kw)
    forces = f"<forces_file>{p['forces']}</forces_file>" if p["forces"] is not None else ""
    return f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <AnalyzeTool name="pendulum">
    <model_file>{p['model']}</model_file>
    <replace_force_set>false</replace_force_set>
    {p['force_set']}
    <results_directory>{p['results']}</results_directory>
    <output_precision>16</output_precision>
    <initial_time>{p['t0']}</initial_time>
    <final_time>{p['t1']}</final_time>
    <AnalysisSet name="Analyses">
      <objects>
        <JointReaction name="JointReaction">
          <on>{p['on_flag']}</on>
          <start_time>{p['t0']}</start_time>
          <end_time>{p['t1']}</end_time>
          <step_interval>{p['step']}</step_interval>
          <in_degrees>true</in_degrees>
          {forces}
          <joint_names>{p['joints']}</joint_names>
          <apply_on_bodies>{p['on']}</apply_on_bodies>
          <express_in_frame>{p['frames']}</express_in_frame>
          {p['analysis_extra']}
        </JointReaction>
      </objects>
      <groups />
    </AnalysisSet>
    <external_loads_file />
    <coordinates_file>{p['coords']}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>
    {p['extra']}
  </AnalyzeTool>
</OpenSimDocument>
"""


def _pendulum_files(tmp_path, **kw):
    """The double pendulum's coordinates (quadratic in time, radians), the forces file (the pin
    torques every 0.03 s, not on the states' 0.02 s grid, shared by the model's own
    CoordinateActuators and those of a force-set file, plus one column that is no actuator), the
    force set and the setup; returns the setup's path."""
    t = np.linspace(0.0, 1.0, 51)
    q = A + np.outer(t, B) + np.outer(t ** 2, C)
    write_storage(tmp_path / "pendulum_q.sto", Table(t, ("q1", "q2"), q, False, {"name": "Coordinates"}),
                  format="storage")
    tf = np.arange(0.0, 1.0 + 1e-9, 0.03)
    write_storage(tmp_path / "pendulum_force.sto",  # the model's own Torq1, Torq2 and the force set's tau1, tau2
                  Table(tf, ("Torq1", "Torq2", "tau1", "tau2", "not_an_actuator"),
                        np.column_stack([0.25 * _tau(tf), 0.75 * _tau(tf), tf]), False,
                        {"name": "Static Optimization"}), format="storage")
    (tmp_path / "actuators.xml").write_text(FORCE_SET)
    setup = tmp_path / "setup.xml"
    setup.write_text(_setup_text(**kw))
    return setup


def _rz(th):
    c, s = np.cos(th), np.sin(th)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _pendulum_closed_form(t, tau, g):
    """q̈ and the reactions of the point-mass double pendulum at times ``t`` with pin torques ``tau``."""
    out = []
    for tk, (t1, t2) in zip(t, tau):
        q = A + B * tk + C * tk ** 2
        qd = B + 2 * C * tk
        th1, th12 = q[0], q[0] + q[1]
        u = lambda th: np.array([np.sin(th), -np.cos(th), 0.0])  # noqa: E731  Rz(th) (0, -1, 0)
        du = lambda th: np.array([np.cos(th), np.sin(th), 0.0])  # noqa: E731
        p1 = P0 + L * u(th1)
        p2 = p1 + L * u(th12)
        J1 = np.column_stack([L * du(th1), np.zeros(3)])
        J2 = np.column_stack([L * du(th1) + L * du(th12), L * du(th12)])
        b1 = -L * u(th1) * qd[0] ** 2  # J̇ q̇
        b2 = b1 - L * u(th12) * (qd[0] + qd[1]) ** 2
        M = J1.T @ J1 + J2.T @ J2  # unit masses
        rhs = np.array([t1, t2]) + J1.T @ g + J2.T @ g - J1.T @ b1 - J2.T @ b2
        qdd = np.linalg.solve(M, rhs)
        a1, a2 = J1 @ qdd + b1, J2 @ qdd + b2
        F2 = a2 - g  # what pin2 exerts on rod2 (m = 1)
        M2 = np.cross(p2 - p1, F2)  # about pin2 (at p1)
        F1 = a1 - g + F2
        M1 = np.cross(p1 - P0, a1 - g) + np.cross(p2 - P0, F2)  # about pin1 (P0)
        R1, R2 = _rz(th1), _rz(th12)
        out.append((qdd, [np.r_[F1, M1, P0],  # pin1 on rod1 in ground
                          np.r_[R2.T @ F2, R2.T @ M2, R2.T @ (p1 - p2)],  # pin2 on rod2 in rod2
                          np.r_[-R1.T @ F2, -R1.T @ M2, np.zeros(3)],  # pin2 on rod1 in rod1 (parent frame = rod1)
                          np.r_[-F1, -M1, P0]]))  # pin1 on ground in ground
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


def test_double_pendulum_equals_closed_form(tmp_path):
    setup = _pendulum_files(tmp_path)
    with pytest.warns(UserWarning, match="not_an_actuator"):
        res = mbjax.opensim.joint_reactions_from_setup(setup, progress=False)
    # rows 5..45 of the 0.02 s grid: the first, the last and the even ones between (Analysis::proceed)
    np.testing.assert_allclose(res.time, np.r_[0.1, np.arange(6, 45, 2) * 0.02, 0.9], rtol=0, atol=1e-12)
    assert res.labels[:9] == tuple(f"pin1_on_rod1_in_ground_{c}" for c in jr_tool.motion._COMPONENTS)
    assert [k.label for k in res.keys] == ["pin1_on_rod1_in_ground", "pin2_on_rod2_in_rod2", "pin2_on_rod1_in_rod1",
                                           "pin1_on_ground_in_ground"]
    tf = np.arange(0.0, 1.0 + 1e-9, 0.03)
    tau = np.stack([np.interp(res.time, tf, _tau(tf)[:, k]) for k in range(2)], -1)  # the file, linear in t
    assert res.actuator_names == ("Torq1", "Torq2", "tau1", "tau2")
    np.testing.assert_allclose(res.forces, np.column_stack([0.25 * tau, 0.75 * tau]), rtol=0, atol=1e-13)
    model = mbjax.io.load_osim(mbjax.models.model_path("double_pendulum"))
    qdd, loads = _pendulum_closed_form(res.time, tau, np.asarray(model.gravity))
    np.testing.assert_allclose(res.qdd, qdd, rtol=0, atol=1e-11)
    np.testing.assert_allclose(res.loads, loads, rtol=0, atol=1e-11)
    # a pin transmits its actuator's torque about its axis (the actuation is part of the reaction)
    np.testing.assert_allclose(res.loads[:, 0, 5], tau[:, 0], rtol=0, atol=1e-11)
    np.testing.assert_allclose(res.loads[:, 1, 5], tau[:, 1], rtol=0, atol=1e-11)
    # the file, as OpenSim writes it
    out = tmp_path / "results" / "pendulum_JointReaction_ReactionLoads.sto"
    table = read_storage(out)
    assert table.labels == res.labels and not table.in_degrees
    np.testing.assert_array_equal(table.data, res.loads.reshape(res.time.size, -1))
    head = out.read_text().split("endheader")[0].splitlines()
    assert head[0] == "Joint Reaction Loads" and "inDegrees=no" in head
    assert "Units are S.I. units (seconds, meters, Newtons, ...)" in head


def test_storage_rows_at_is_opensims_interpolation():
    t = np.array([0.0, 1.0, 3.0])
    y = np.array([[0.0, 10.0], [1.0, 20.0], [5.0, 0.0]])
    got = jr_tool.storage_rows_at(t, y, [-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0])
    expect = np.array([[-1.0, 0.0], [0.0, 10.0], [0.5, 15.0], [1.0, 20.0], [3.0, 10.0], [5.0, 0.0], [7.0, -10.0]])
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-15)  # extrapolated past both ends, linearly
    np.testing.assert_array_equal(jr_tool.storage_rows_at([2.0], [[4.0]], [0.0, 5.0]), [[4.0], [4.0]])


def test_setup_errors_name_what_is_wrong(tmp_path):
    setup = _pendulum_files(tmp_path)
    model = mbjax.io.load_osim(mbjax.models.model_path("double_pendulum"))

    def run(**kw):
        path = tmp_path / "bad.xml"
        path.write_text(_setup_text(**kw))
        return mbjax.opensim.joint_reactions_from_setup(path, model, write=False, progress=False)

    with pytest.raises(NotImplementedError, match="no <forces_file>"):
        run(forces=None)
    with pytest.raises(FileNotFoundError, match="nope.sto"):
        run(forces="nope.sto")
    # a forces file without an actuator's column: OpenSim would silently drop the whole file
    write_storage(tmp_path / "short.sto", Table(np.array([0.0, 1.0]), ("Torq1", "Torq2", "tau1"), np.zeros((2, 3)),
                                                False, {}), format="storage")
    with pytest.raises(ValueError, match="'tau2'"):
        run(forces="short.sto")
    with pytest.raises(ValueError, match="'bottom'"):
        run(on="bottom")
    with pytest.raises(ValueError, match="'nowhere'"):
        run(frames="nowhere")
    with pytest.raises(ValueError, match="'rod1_offset'"):  # a bare offset-frame name is no path (nor in OpenSim)
        run(frames="rod1_offset")
    key, = jr_tool.reaction_keys(model, "pin1", "child", "pin1/rod1_offset")  # the joint set's path
    assert key.label == "pin1_on_rod1_in_rod1_offset" and key.frame_body == "rod1"
    np.testing.assert_array_equal(key.frame_transform[:3, 3], [0.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="apply_on_bodies holds 2 entries"):
        run(on="child parent")
    with pytest.raises(ValueError, match="switched off"):
        run(on_flag="false")
    with pytest.raises(ValueError, match="step_interval"):
        run(step="0")
    with pytest.raises(NotImplementedError, match="states_file"):
        run(extra="<states_file>states.sto</states_file>")
    with pytest.raises(ValueError, match="pin3"):  # no joint left
        run(joints="pin3", on="child", frames="ground")
    with pytest.warns(UserWarning, match="'pin3'"):  # skipped, as OpenSim skips it
        res = run(joints="pin3 pin2", on="child", frames="ground")
    assert [k.joint for k in res.keys] == ["pin2"]
    write_storage(tmp_path / "late.sto", Table(np.array([0.2, 0.8]), ("Torq1", "Torq2", "tau1", "tau2"),
                                               np.ones((2, 4)), False, {}), format="storage")
    with pytest.warns(UserWarning, match="extrapolated"):  # the file covers 0.2-0.8 s, the states 0.1-0.9 s
        run(forces="late.sto")
    with pytest.warns(UserWarning, match="<bogus>"):
        run(analysis_extra="<bogus>1</bogus>")
    bad = tmp_path / "so_only.xml"
    bad.write_text(_setup_text().replace("JointReaction", "StaticOptimization"))
    with pytest.raises(ValueError, match="no <JointReaction>"):
        jr_tool.read_jr_setup(bad)
    s = jr_tool.read_jr_setup(setup)
    assert s.name == "pendulum" and s.analysis_name == "JointReaction" and s.step_interval == 2
    assert s.forces_file == str(tmp_path / "pendulum_force.sto") and s.time_range == (0.1, 0.9)
    assert s.joint_names == ("pin1", "pin2", "pin2", "pin1") and s.express_in_frame[2] == "rod1"


# --------------------------------------------------------------------------------------------
# Gait2354: made-up muscle forces, every check independent of the tool's route
# --------------------------------------------------------------------------------------------


def _gait_setup(tmp_path, model):
    """Gait2354's walk (6 Hz, 0.5-0.6 s) with made-up smooth muscle and actuator forces on every
    other state row, the SO file's recorded external-load columns, and a JointReaction setup."""
    from mbjax.opensim.tools.so import read_reserves, states_trajectory

    coords = read_storage(WALK / "subject01_walk1_ik.mot")
    t, _, _, _ = states_trajectory(model, coords, 6.0, (0.45, 0.65))
    tf = t[::2]
    acts = read_reserves(WALK / "gait2354_CMC_Actuators.xml")
    names = tuple(model.muscle_names) + tuple(a.name for a in acts)
    rng = np.random.default_rng(3)
    base, amp, w = rng.uniform(20, 400, len(names)), rng.uniform(0, 100, len(names)), rng.uniform(2, 9, len(names))
    data = base + amp * np.sin(np.outer(tf, w))
    data[:, len(model.muscle_names):] -= 200.0  # actuators of both signs
    rec = ("calcn_r_right_Fx", "calcn_l_left_pz")  # what an SO force file repeats of the ground reactions
    write_storage(tmp_path / "force.sto", Table(tf, names + rec, np.column_stack([data, np.ones((tf.size, 2))]),
                                                False, {"name": "Static Optimization"}), format="storage")
    setup = tmp_path / "gait_jr.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <AnalyzeTool name="subject01">
    <model_file>{WALK / 'subject01_simbody.osim'}</model_file>
    <force_set_files>{WALK / 'gait2354_CMC_Actuators.xml'}</force_set_files>
    <results_directory>{tmp_path}</results_directory>
    <initial_time>0.5</initial_time>
    <final_time>0.6</final_time>
    <AnalysisSet name="Analyses"><objects>
      <JointReaction name="JointReaction">
        <step_interval>1</step_interval>
        <forces_file>force.sto</forces_file>
        <joint_names>ground_pelvis hip_r knee_r knee_r ankle_l back</joint_names>
        <apply_on_bodies>child child child parent child child</apply_on_bodies>
        <express_in_frame>ground ground ground ground child pelvis</express_in_frame>
      </JointReaction>
    </objects></AnalysisSet>
    <external_loads_file>{WALK / 'subject01_walk1_grf.xml'}</external_loads_file>
    <coordinates_file>{WALK / 'subject01_walk1_ik.mot'}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
""")
    return setup, acts


@pytest.mark.extended  # a second formulation of what tests/validation/test_jr_opensim.py checks against OpenSim
def test_gait2354_reactions_are_the_subtree_balance(tmp_path):
    from mbjax.forces import CoordinateActuator, actuator_matrix
    from mbjax.opensim.external_loads import read_external_loads
    from mbjax.muscles import body_wrenches, opensim_moment_arms

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(WALK / "subject01_simbody.osim")
    setup, acts = _gait_setup(tmp_path, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the recorded ground-reaction columns are recognized, not warned
        res = mbjax.opensim.joint_reactions_from_setup(setup, model, write=False, progress=False)
    T, nm = res.time.size, len(model.muscle_names)
    assert T >= 6 and res.actuator_names[:nm] == tuple(model.muscle_names)
    F, x = res.forces[:, :nm], res.forces[:, nm:]
    ext = read_external_loads(WALK / "subject01_walk1_grf.xml").at(res.time, model)
    body = tuple(a for a in acts if not isinstance(a, CoordinateActuator))
    coord = [k for k, a in enumerate(acts) if isinstance(a, CoordinateActuator)]
    names = list(model.coordinate_names)

    # (1) q̈ solves M q̈ + N q̇ - G - Q_ext = R F + B x (recursive Newton-Euler, OpenSim's moment arms)
    @jax.jit
    def check(q, qd, qdd, loads, f, xb, xc):
        tau = mbjax.inverse_dynamics(model, q, qd, qdd, external=loads)
        R = opensim_moment_arms(model, q)
        Bb = actuator_matrix(model, body, q) / jnp.asarray([a.optimal_force for a in body])
        gen = R @ f + Bb @ xb
        return tau, gen.at[jnp.asarray([names.index(acts[k].coordinate) for k in coord])].add(xc)

    tau, gen = jax.vmap(check)(res.q, res.qd, res.qdd, ext, F, x[:, [acts.index(a) for a in body]], x[:, coord])
    np.testing.assert_allclose(tau, gen, rtol=0, atol=1e-9 * np.abs(gen).max())

    # (2) the muscles' body loads equal the GMLAV body wrenches (another path implementation)
    _, f_w, m_w = jr_tool.muscle_loads(model, jnp.asarray(res.q), jnp.asarray(F))
    rot = np.asarray(jax.vmap(lambda q: mbjax.body_poses(model, q))(res.q))[:, :, :3, :3]
    e, e_hat = jax.vmap(lambda q, f: body_wrenches(model, q, f))(res.q, F)
    np.testing.assert_allclose(np.einsum("tbai,tba->tbi", rot, f_w), e, rtol=0, atol=1e-9 * np.abs(e).max())
    np.testing.assert_allclose(np.einsum("tbai,tba->tbi", rot, m_w), e_hat, rtol=0, atol=1e-9 * np.abs(e_hat).max())

    # (3) the reactions are Blajer's dense λ with every load applied (muscles, ground, residuals)
    from mbjax.forces.body_actuators import _loads

    unit, owner = _loads(model, [a._replace(optimal_force=1.0) for a in body])
    xb = x[:, [acts.index(body[o]) for o in owner]]
    bodies = tuple(model.body_names) + ext.bodies + unit.bodies
    child = ["pelvis", "femur_r", "tibia_r", "talus_l", "torso"]
    spec = mbjax.reaction_spec(model, child)

    @jax.jit
    def dense(q, qd, qdd, fw, mw, ld, xk):
        ld = ld.resolved(model, q)
        act = mbjax.ExternalLoads(unit.bodies, unit.points, unit.forces * xk[:, None], unit.torques * xk[:, None],
                                  point_frames=unit.point_frames, force_frames=unit.force_frames).resolved(model, q)
        allx = mbjax.ExternalLoads(bodies, jnp.concatenate([jnp.zeros_like(fw), ld.points, act.points]),
                                   jnp.concatenate([fw, ld.forces, act.forces]),
                                   jnp.concatenate([mw, ld.torques, act.torques]))
        return joint_reactions_dense(model, q, qd, qdd, spec, external=allx)

    d = jax.vmap(dense)(res.q, res.qd, res.qdd, f_w, m_w, ext, xb)
    force, moment, point = (np.asarray(a) for a in (d.force, d.moment, d.point))
    scale_f, scale_m = np.abs(force).max(), np.abs(moment).max()
    # child frames of these joints sit at the body origins (checked), so the points coincide
    assert all(np.allclose(k.child_frame, np.eye(4)) for k in res.keys)
    by = {k.label: i for i, k in enumerate(res.keys)}
    for i, c in enumerate(child):
        key = next(k for k in res.keys if k.child == c and k.on_child)
        got = res.loads[:, by[key.label]]
        if key.frame == "ground":
            f_exp, m_exp, p_exp = force[:, i], moment[:, i], point[:, i]
        else:  # in a body frame
            Rf = np.asarray(jax.vmap(lambda q: mbjax.body_poses(model, q))(res.q))[:, model.body_index(key.frame_body)]
            f_exp = np.einsum("tba,tb->ta", Rf[:, :3, :3], force[:, i])
            m_exp = np.einsum("tba,tb->ta", Rf[:, :3, :3], moment[:, i])
            p_exp = np.einsum("tba,tb->ta", Rf[:, :3, :3], point[:, i] - Rf[:, :3, 3])
        np.testing.assert_allclose(got[:, :3], f_exp, rtol=0, atol=1e-9 * scale_f)
        np.testing.assert_allclose(got[:, 3:6], m_exp, rtol=0, atol=1e-9 * scale_m)
        np.testing.assert_allclose(got[:, 6:], p_exp, rtol=0, atol=1e-12)
    # (4) the free pelvis joint transmits nothing: no coordinate actuator acts on it
    pelvis = res.loads[:, by["ground_pelvis_on_pelvis_in_ground"], :6]
    assert np.abs(pelvis).max() < 1e-9 * scale_f
    # (5) Newton's third law at the knee, about the parent frame origin
    kc, kp = res.loads[:, by["knee_r_on_tibia_r_in_ground"]], res.loads[:, by["knee_r_on_femur_r_in_ground"]]
    np.testing.assert_allclose(kp[:, :3], -kc[:, :3], rtol=0, atol=1e-12 * scale_f)
    lever = kc[:, 6:] - kp[:, 6:]  # from the parent frame origin to the child frame origin (the knee translates)
    assert np.abs(lever).max() > 1e-3
    np.testing.assert_allclose(kp[:, 3:6], -(kc[:, 3:6] + np.cross(lever, kc[:, :3])), rtol=0, atol=1e-9 * scale_m)


@pytest.mark.extended
def test_wrapped_paths_body_loads_do_the_virtual_work_of_opensims_path():
    """arm26 over its cylinders and ellipsoid: Σ_b J_bᵀ W_b of the muscle body loads (tangent points
    on the wrap bodies) equals R F from the gradient of the cross-body length, frame by frame."""
    model = mbjax.models.load("arm26")
    q = jnp.asarray([[0.1, 0.3], [0.5, 1.2], [-0.3, 2.0], [1.0, 1.6]])
    F = jnp.asarray(np.random.default_rng(0).uniform(10.0, 300.0, (4, 6)))
    gen, f_w, m_w = jax.jit(lambda q, F: jr_tool.muscle_loads(model, q, F))(q, F)
    bodies = list(model.body_names)
    work = jax.vmap(lambda qk, f, m: mbjax.generalized_forces(model, qk, bodies, jnp.zeros_like(f), f, m))(q, f_w, m_w)
    np.testing.assert_allclose(work, gen, rtol=0, atol=1e-10 * np.abs(gen).max())
    assert np.abs(gen).max() > 1.0
