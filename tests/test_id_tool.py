"""Inverse dynamics with external loads (mbjax.opensim.tools.id, mbjax.opensim.external_loads, mbjax.io.signal).

Independent references:

* the signal steps: the natural spline of degree 2m-1 in its other closed form,
  ``Σ c_i |x - x_i|^(2m-1) + polynomial of degree m-1`` with ``Σ c_i x_i^k = 0`` (k < m) (inside the
  data and as the degree m-1 continuation outside); the IIR filter against ``scipy.signal.butter``
  and ``lfilter``/``lfiltic``; the pad against its formula on small arrays;
* loads: generalized forces by finite differences of the virtual work on body poses, frames
  converted by hand;
* the whole setup-file pipeline on a small OpenSim model with quadratic coordinates and loads
  linear in time, which OpenSim's splines reproduce exactly: τ equals the load-free inverse
  dynamics at the exact q, q̇, q̈ (itself checked against the autodiff Lagrangian in
  test_dynamics.py) minus the finite-difference generalized forces.

OpenSim's own tool, spline and filter are the references in tests/validation/test_id_opensim.py.
"""

from __future__ import annotations

import math
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import signal as sps

import mbjax
from mbjax.opensim.tools.id import coordinate_trajectory, inverse_dynamics_from_setup, inverse_dynamics_frames, read_id_setup
from mbjax.io import Table, load_osim, read_external_loads, read_storage, write_storage
from mbjax.io.signal import NaturalSpline, butterworth3, lowpass_iir, lowpass_storage, pad, resample

sys.path.insert(0, os.path.dirname(__file__))
from _data_file_variants import LEGACY_LOADS  # noqa: E402

MODEL = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="walker">
    <gravity>0 -9.80665 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="trunk">
          <mass>10</mass>
          <mass_center>0.01 0.2 0.02</mass_center>
          <inertia>0.3 0.1 0.25 0.01 0.02 -0.01</inertia>
          <components>
            <PhysicalOffsetFrame name="hip">
              <socket_parent>..</socket_parent>
              <translation>0.05 -0.4 0.1</translation>
              <orientation>0.3 -0.2 0.5</orientation>
            </PhysicalOffsetFrame>
          </components>
        </Body>
        <Body name="foot">
          <mass>1.2</mass>
          <mass_center>0.05 -0.02 0.01</mass_center>
          <inertia>0.002 0.005 0.004 0 0.0005 0</inertia>
        </Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        <PlanarJoint name="ground_trunk">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/trunk</socket_child_frame>
          <coordinates>
            <Coordinate name="rz"><range>-3 3</range></Coordinate>
            <Coordinate name="tx"><range>-3 3</range></Coordinate>
            <Coordinate name="ty"><default_value>0.9</default_value><range>-3 3</range></Coordinate>
          </coordinates>
        </PlanarJoint>
        <PinJoint name="ankle">
          <socket_parent_frame>/bodyset/trunk/hip</socket_parent_frame>
          <socket_child_frame>/bodyset/foot</socket_child_frame>
          <coordinates><Coordinate name="ankle"><range>-3 3</range></Coordinate></coordinates>
        </PinJoint>
      </objects>
    </JointSet>
  </Model>
</OpenSimDocument>
"""

#: coordinates q(t) = a + b t + c t² (rz, ankle in degrees in the file; tx, ty in metres)
Q_COEF = np.array([[5.0, -20.0, 30.0], [0.1, 1.2, -0.4], [0.9, 0.05, -0.3], [-10.0, 40.0, -25.0]])
ROTATIONAL = np.array([True, False, False, True])
TIMES = np.round(np.arange(31) / 60.0, 8)  # 0 .. 0.5 s, 8 decimals as OpenSim writes them

LOADS_XML = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="20302">
  <ExternalLoads name="loads">
    <objects>
      <ExternalForce name="grf">
        <isDisabled> false </isDisabled>
        <applied_to_body> foot </applied_to_body>
        <force_expressed_in_body> ground </force_expressed_in_body>
        <point_expressed_in_body> ground </point_expressed_in_body>
        <force_identifier> g_v </force_identifier>
        <point_identifier> g_p </point_identifier>
        <torque_identifier> g_t </torque_identifier>
        <data_source_name> Unassigned </data_source_name>
      </ExternalForce>
      <ExternalForce name="push">
        <isDisabled> false </isDisabled>
        <applied_to_body> trunk </applied_to_body>
        <force_expressed_in_body> foot </force_expressed_in_body>
        <point_expressed_in_body> trunk </point_expressed_in_body>
        <force_identifier> b_v </force_identifier>
        <point_identifier> b_p </point_identifier>
        <torque_identifier> b_t </torque_identifier>
      </ExternalForce>
      <ExternalForce name="off">
        <isDisabled> true </isDisabled>
        <applied_to_body> nowhere </applied_to_body>
        <force_identifier> g_v </force_identifier>
      </ExternalForce>
    </objects>
    <groups />
    <datafile> loads.mot </datafile>
  </ExternalLoads>
</OpenSimDocument>
"""

#: loads linear in time, value = a + b t per column (natural cubic splines reproduce them exactly)
LOAD_LABELS = [f"{p}{a}" for p in ("g_v", "g_p", "g_t", "b_v", "b_p", "b_t") for a in "xyz"]
LOAD_COEF = np.array([[20.0, 40.0], [600.0, -300.0], [-15.0, 10.0], [0.3, 0.2], [0.0, 0.0], [0.05, -0.1],
                      [1.0, 2.0], [-3.0, 4.0], [0.5, 5.0], [5.0, -8.0], [-12.0, 6.0], [7.0, 3.0],
                      [0.1, 0.0], [-0.2, 0.1], [0.05, 0.05], [0.4, -1.0], [0.3, 0.2], [-0.6, 0.8]])

SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <InverseDynamicsTool name="walk">
    <results_directory> results </results_directory>
    <model_file> walker.osim </model_file>
    <time_range> {t0} {t1} </time_range>
    <forces_to_exclude> Muscles </forces_to_exclude>
    <external_loads_file> loads.xml </external_loads_file>
    <coordinates_file> walk.mot </coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates> {fc} </lowpass_cutoff_frequency_for_coordinates>
    <output_gen_force_file> walk_id.sto </output_gen_force_file>
  </InverseDynamicsTool>
</OpenSimDocument>
"""


def _q_exact(t):
    """(q, q̇, q̈) of the quadratic coordinates in radians / metres."""
    t = np.asarray(t)[:, None]
    a, b, c = Q_COEF.T
    scale = np.where(ROTATIONAL, np.pi / 180.0, 1.0)
    return (a + b * t + c * t**2) * scale, (b + 2 * c * t) * scale, np.broadcast_to(2 * c * scale, (t.shape[0], 4))


def _write_case(tmp_path, t0=0.1, t1=0.4, fc=-1):
    (tmp_path / "walker.osim").write_text(MODEL)
    (tmp_path / "loads.xml").write_text(LOADS_XML)
    a, b, c = Q_COEF.T
    q_file = a + b * TIMES[:, None] + c * TIMES[:, None] ** 2
    write_storage(tmp_path / "walk.mot", Table(TIMES, ("rz", "tx", "ty", "ankle"), q_file, True, {"name": "walk"}),
                  format="storage")
    lt = np.round(np.arange(0, 601) / 1000.0, 4)  # 1 kHz, 0 .. 0.6 s
    data = LOAD_COEF[:, 0] + LOAD_COEF[:, 1] * lt[:, None]
    write_storage(tmp_path / "loads.mot", Table(lt, tuple(LOAD_LABELS), data, False, {"name": "loads"}),
                  format="storage")
    (tmp_path / "setup.xml").write_text(SETUP.format(t0=t0, t1=t1, fc=fc))
    return tmp_path / "setup.xml"


@pytest.fixture(scope="module")
def walker(tmp_path_factory):
    d = tmp_path_factory.mktemp("walker")
    (d / "walker.osim").write_text(MODEL)
    return load_osim(d / "walker.osim")


# --------------------------------------------------------------------------------------------
# finite-difference virtual work (the independent generalized force)
# --------------------------------------------------------------------------------------------


def _poses(model):
    return jax.jit(lambda q: mbjax.body_poses(model, q))


def _fd_generalized_force(model, poses, q, body, point_body, force_world, torque_world, h=1e-6):
    """Q_i = F·∂p/∂q_i + T·∂θ/∂q_i with p = R r + o for the fixed body point r, by central differences."""
    b = model.body_index(body)
    out = np.zeros(q.shape[0])
    pose0 = np.asarray(poses(q))[b]
    for i in range(q.shape[0]):
        e = np.zeros_like(q)
        e[i] = h
        pp, pm = np.asarray(poses(q + e))[b], np.asarray(poses(q - e))[b]
        dp = ((pp[:3, :3] - pm[:3, :3]) @ point_body + pp[:3, 3] - pm[:3, 3]) / (2 * h)
        w = (pp[:3, :3] - pm[:3, :3]) / (2 * h) @ pose0[:3, :3].T  # [δθ]× per unit q_i
        dtheta = np.array([w[2, 1], w[0, 2], w[1, 0]])
        out[i] = force_world @ dp + torque_world @ dtheta
    return out


def _frame(poses_q, model, name):
    if name == "ground":
        return np.eye(4)
    return poses_q[model.body_index(name)]


def _expected_q(model, poses, q, loads_file, t):
    """Σ over the file's forces of the finite-difference Q, frames converted by hand (OpenSim's rules)."""
    total = np.zeros(q.shape[0])
    pq = np.asarray(poses(q))
    col = {lab: k for k, lab in enumerate(LOAD_LABELS)}
    value = lambda lab: LOAD_COEF[col[lab], 0] + LOAD_COEF[col[lab], 1] * t  # noqa: E731
    for f in loads_file.forces:
        fr = _frame(pq, model, f.force_expressed_in_body)[:3, :3]
        force = fr @ np.array([value(c) for c in f.force_columns])
        torque = fr @ np.array([value(c) for c in f.torque_columns])
        pf = _frame(pq, model, f.point_expressed_in_body)
        p_world = pf[:3, :3] @ np.array([value(c) for c in f.point_columns]) + pf[:3, 3]
        body = pq[model.body_index(f.applied_to_body)]
        r = body[:3, :3].T @ (p_world - body[:3, 3])
        total += _fd_generalized_force(model, poses, q, f.applied_to_body, r, force, torque)
    return total


# --------------------------------------------------------------------------------------------
# signal processing
# --------------------------------------------------------------------------------------------


def _polyharmonic(x, y, m, t, nu):
    """The natural spline of degree 2m-1 as Σ c_i |x - x_i|^(2m-1) + Σ_k a_k x^k (k < m),
    Σ_i c_i x_i^k = 0: its nu-th derivative at t (an independent construction)."""
    d = 2 * m - 1
    n = x.shape[0]
    a = np.zeros((n + m, n + m))
    a[:n, :n] = np.abs(x[:, None] - x[None]) ** d
    a[:n, n:] = x[:, None] ** np.arange(m)
    a[n:, :n] = (x[:, None] ** np.arange(m)).T
    coef = np.linalg.solve(a, np.r_[y, np.zeros(m)])
    c, p = coef[:n], coef[n:]
    s = t[:, None] - x[None]
    kernel = math.factorial(d) / math.factorial(d - nu) * np.abs(s) ** (d - nu) * np.sign(s) ** nu
    poly = sum(p[k] * math.factorial(k) / math.factorial(k - nu) * t ** (k - nu) for k in range(nu, m))
    return kernel @ c + poly


@pytest.mark.parametrize("degree", [3, 5])
def test_natural_spline_is_the_polyharmonic_interpolant(degree):
    rng = np.random.default_rng(degree)
    x = np.sort(rng.uniform(0.0, 2.0, 14))
    y = np.sin(3 * x) + 0.1 * rng.standard_normal(14)
    spline = NaturalSpline(x, np.stack([y, 2 * y], 1), degree)
    t = np.linspace(-0.6, 2.6, 301)  # inside and on both sides
    for nu in range(3):
        ref = _polyharmonic(x, y, (degree + 1) // 2, t, nu)
        np.testing.assert_allclose(spline(t, nu)[:, 0], ref, atol=1e-8 * np.abs(ref).max())
        np.testing.assert_allclose(spline(t, nu)[:, 1], 2 * ref, atol=2e-8 * np.abs(ref).max())
    np.testing.assert_allclose(spline(x)[:, 0], y, atol=1e-12)


def test_pad_is_opensims_odd_reflection():
    y = np.array([0.0, 1.0, 4.0, 9.0])
    np.testing.assert_array_equal(pad(y, 2), [-4.0, -1.0, 0.0, 1.0, 4.0, 9.0, 14.0, 17.0])
    # a pad longer than the signal (Signal::Pad's rounds): length and the odd symmetry about both ends
    p = pad(np.array([1.0, 3.0, 2.0]), 5)
    assert p.shape == (13,)
    np.testing.assert_array_equal(p[5:8], [1.0, 3.0, 2.0])
    np.testing.assert_array_equal(p[:5][::-1], 2 * 1.0 - p[6:11])


def test_lowpass_iir_is_a_forward_backward_butterworth():
    dt, fc = 1 / 120.0, 6.0
    b, a = butterworth3(dt, fc)
    bs, as_ = sps.butter(3, fc, fs=1 / dt)
    np.testing.assert_allclose(b, bs, rtol=1e-12)
    np.testing.assert_allclose(a, as_, rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.standard_normal(200))

    def one_pass(s):  # outputs 0..2 = inputs (OpenSim's start-up), lfilter from there
        zi = sps.lfiltic(bs, as_, y=s[2::-1], x=s[2::-1])
        return np.r_[s[:3], sps.lfilter(bs, as_, s[3:], zi=zi)[0]]

    ref = one_pass(one_pass(x)[::-1])[::-1]
    np.testing.assert_allclose(lowpass_iir(x, dt, fc), ref, atol=1e-10)
    np.testing.assert_allclose(lowpass_iir(np.stack([x, -x], 1), dt, fc)[:, 1], -ref, atol=1e-10)
    with pytest.warns(UserWarning, match="0.49"):
        butterworth3(dt, 70.0)


def test_resample_and_storage_filter_grid():
    t = np.round(np.arange(13) / 60.0, 8)  # 8-decimal times: not uniform to machine epsilon
    y = 1.0 + 2.0 * t - t**2
    ts, ys, dt = resample(t, y, float(np.min(np.diff(t))))
    np.testing.assert_allclose(np.diff(ts), dt, rtol=1e-9)
    assert ts[0] == t[0] and ts[-1] <= t[-1]
    np.testing.assert_allclose(ys, 1.0 + 2.0 * ts - ts**2, atol=1e-12)  # quadratics are reproduced
    tp, yp = lowpass_storage(t, y, 6.0)
    n = t.shape[0] // 2
    assert tp[0] == pytest.approx(2 * t[0] - t[n], abs=1e-15)  # padded before, then resampled from there
    assert yp.shape == tp.shape


# --------------------------------------------------------------------------------------------
# loads
# --------------------------------------------------------------------------------------------


def test_external_loads_file_reads_and_interpolates(tmp_path, walker):
    _write_case(tmp_path)
    lf = read_external_loads(tmp_path / "loads.xml")
    assert [f.name for f in lf.forces] == ["grf", "push"]  # "off" is disabled
    assert lf.forces[0].force_columns == ("g_vx", "g_vy", "g_vz") and lf.forces[1].point_expressed_in_body == "trunk"
    t = np.array([0.1, 0.12345, 0.3999])
    loads = lf.at(t, walker)
    assert loads.forces.shape == (3, 2, 3)
    col = {lab: k for k, lab in enumerate(LOAD_LABELS)}
    for j, cols in enumerate(("g_v", "b_v")):
        ref = [LOAD_COEF[col[cols + a], 0] + LOAD_COEF[col[cols + a], 1] * t for a in "xyz"]
        np.testing.assert_allclose(np.asarray(loads.forces[:, j]), np.stack(ref, 1), rtol=1e-12)
    assert loads.point_frames == ("ground", "trunk") and loads.force_frames == ("ground", "foot")


def test_padded_length_is_a_quarter_octave():
    from mbjax.opensim.tools.id import padded_length

    lengths = [padded_length(n) for n in range(1, 2049)]
    for n, p in zip(range(1, 2049), lengths):
        assert p >= n and (n <= 8 or p < 1.25 * n)  # under 25 % padding past 8 frames
    for k in range(3, 11):  # four programs per octave (2^k, 2^(k+1)]
        assert len({p for n, p in zip(range(1, 2049), lengths) if 2 ** k < n <= 2 ** (k + 1)}) == 4


@pytest.mark.parametrize("span", [(0.4, 1.6), (0.0, 0.05), (2.45, 2.5), (-0.01, 2.51)])
def test_external_loads_windowed_spline_equals_whole_file(span):
    """``at`` fits the ground reactions only near the times asked for; the oracle is the natural
    cubic spline through all 1501 rows of the shipped Gait2354 file (ends and outside included)."""
    folder = mbjax.models.pipeline_path("gait2354_walk")
    lf = read_external_loads(f"{folder}/subject01_walk1_grf.xml")
    t = np.linspace(*span, 73)
    loads = lf.at(t)
    table = lf.table
    whole = NaturalSpline(np.asarray(table.time, float), table.data, 3)(t)
    for j, f in enumerate(lf.forces):
        for cols, got in ((f.force_columns, loads.forces), (f.point_columns, loads.points),
                          (f.torque_columns, loads.torques)):
            ref = whole[:, [table.labels.index(c) for c in cols]]
            scale = np.abs(table.data[:, [table.labels.index(c) for c in cols]]).max()
            np.testing.assert_allclose(np.asarray(got[:, j]), ref, rtol=0, atol=1e-13 * scale)


def test_external_loads_resolved_and_generalized_forces(tmp_path, walker):
    """Frames converted by hand; Q by finite differences of the virtual work on the body poses."""
    _write_case(tmp_path)
    lf = read_external_loads(tmp_path / "loads.xml")
    t = 0.2345
    loads = jax.tree_util.tree_map(lambda a: a[0], lf.at([t], walker))  # one frame
    poses = _poses(walker)
    q = np.array([0.3, 0.1, 0.9, -0.4])
    pq = np.asarray(poses(q))
    res = jax.jit(lambda x: loads.resolved(walker, x))(q)
    foot = pq[walker.body_index("foot")]
    col = {lab: k for k, lab in enumerate(LOAD_LABELS)}
    v = lambda p: np.array([LOAD_COEF[col[p + a], 0] + LOAD_COEF[col[p + a], 1] * t for a in "xyz"])  # noqa: E731
    # grf: point in ground -> foot frame, force in ground; push: point in trunk, force/torque in foot axes
    np.testing.assert_allclose(np.asarray(res.points), np.stack([foot[:3, :3].T @ (v("g_p") - foot[:3, 3]), v("b_p")]),
                               atol=1e-13)
    np.testing.assert_allclose(np.asarray(res.forces), np.stack([v("g_v"), foot[:3, :3] @ v("b_v")]), atol=1e-12)
    np.testing.assert_allclose(np.asarray(res.torques), np.stack([v("g_t"), foot[:3, :3] @ v("b_t")]), atol=1e-12)
    got = jax.jit(lambda x: loads.generalized_forces(walker, x))(q)
    np.testing.assert_allclose(np.asarray(got), _expected_q(walker, poses, q, lf, t), atol=1e-6)


def test_joint_reactions_resolve_load_frames(walker):
    q, qd, qdd = jnp.array([0.3, 0.1, 0.9, -0.4]), jnp.array([1.0, -0.5, 0.3, 2.0]), jnp.array([-3.0, 1.0, 0.5, 4.0])
    loads = mbjax.ExternalLoads("foot", jnp.array([0.2, 0.01, 0.05]), jnp.array([30.0, 700.0, -20.0]),
                                jnp.array([1.0, -2.0, 3.0]), point_frames="ground", force_frames="trunk")
    a = mbjax.joint_reactions(walker, q, qd, qdd, "foot", loads)
    b = mbjax.joint_reactions(walker, q, qd, qdd, "foot", loads.resolved(walker, q))
    np.testing.assert_allclose(np.asarray(a.local), np.asarray(b.local), atol=1e-10)


# --------------------------------------------------------------------------------------------
# the tool
# --------------------------------------------------------------------------------------------


def test_setup_pipeline_against_exact_motion_and_virtual_work(tmp_path, walker):
    setup = _write_case(tmp_path)
    s = read_id_setup(setup)
    assert s.time_range == (0.1, 0.4) and s.lowpass_cutoff == -1 and s.forces_to_exclude == ("Muscles",)
    assert s.output_file == str(tmp_path / "results" / "walk_id.sto")
    r = inverse_dynamics_from_setup(setup, walker)
    # frames: file rows from the last at or before 0.1 s to the last at or before 0.4 s (Storage::findIndex)
    np.testing.assert_array_equal(r.time, TIMES[(TIMES >= TIMES[TIMES <= 0.1][-1]) & (TIMES <= 0.4)])
    q, qd, qdd = _q_exact(r.time)
    np.testing.assert_allclose(r.q, q, atol=1e-12)
    np.testing.assert_allclose(r.qd, qd, atol=1e-10)
    np.testing.assert_allclose(r.qdd, qdd, atol=1e-8)
    poses = _poses(walker)
    # the same compiled program without loads (zero arrays), at the exact q, q̇, q̈, minus the FD virtual work
    free = inverse_dynamics_frames(walker, q, qd, qdd, jax.tree_util.tree_map(jnp.zeros_like, r.loads))
    lf = read_external_loads(tmp_path / "loads.xml")
    expected = free - np.stack([_expected_q(walker, poses, q[k], lf, t) for k, t in enumerate(r.time)])
    np.testing.assert_allclose(r.tau, expected, atol=2e-6)
    assert r.labels == ("rz_moment", "tx_force", "ty_force", "ankle_moment")
    out = read_storage(s.output_file)  # written as OpenSim writes it
    assert out.labels == r.labels and out.metadata["name"] == "Inverse Dynamics Generalized Forces"
    np.testing.assert_array_equal(out.data, r.tau)


def _joints_swapped(text: str) -> str:
    """The walker with its two joints listed child first (the ankle before the trunk's joint)."""
    a, b = text.index("<PlanarJoint"), text.index("</PlanarJoint>") + len("</PlanarJoint>")
    c, d = text.index("<PinJoint"), text.index("</PinJoint>") + len("</PinJoint>")
    return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]


def test_tree_order_of_a_topology_worked_by_hand(tmp_path):
    """Simbody's graph maker (what OpenSim 4.6 orders its speeds by) on a small tree, by hand: joints
    listed c, a, b, d, e; a, d on ground (level 1, in list order), then b (level 2), c (level 3);
    ``e`` hangs on d, but massless ``m`` on a pulls its heaviest child ``h`` in right after it."""
    from _osim_topologies import osim_text

    from mbjax.opensim.model.osim_motion import coordinate_order, tree_order

    path = tmp_path / "tree.osim"
    path.write_text(osim_text([("a", 1), ("b", 1), ("c", 1), ("d", 1), ("e", 1)],
                              [("PinJoint", "jc", "b", "c"), ("PinJoint", "ja", "ground", "a"),
                               ("CustomJoint", "jb", "a", "b"), ("SliderJoint", "jd", "ground", "d"),
                               ("PinJoint", "je", "d", "e")]))
    assert coordinate_order(path) == ("jc_c0", "ja_c0", "jb_c1", "jb_c0", "jd_c0", "je_c0")
    assert tree_order(path) == ("ja_c0", "jd_c0", "jb_c1", "jb_c0", "je_c0", "jc_c0")
    path.write_text(osim_text([("a", 1), ("m", 0), ("l", 1), ("h", 3), ("d", 1)],
                              [("PinJoint", "jd", "ground", "d"), ("PinJoint", "jl", "m", "l"),
                               ("PinJoint", "jh", "m", "h"), ("PinJoint", "ja", "ground", "a"),
                               ("PinJoint", "jm", "ground", "m")]))
    assert tree_order(path) == ("jd_c0", "ja_c0", "jm_c0", "jh_c0", "jl_c0")


def test_written_columns_in_opensims_tree_order(tmp_path):
    """A model whose joints are listed child first: its coordinates (and IDResult's arrays) are in
    the file's order, the written .sto in OpenSim 4.6's multibody tree order (ground's joint first),
    each column holding its coordinate's force."""
    setup = _write_case(tmp_path)
    (tmp_path / "walker.osim").write_text(_joints_swapped(MODEL))
    r = inverse_dynamics_from_setup(setup)
    assert r.labels == ("ankle_moment", "rz_moment", "tx_force", "ty_force")
    out = read_storage(tmp_path / "results" / "walk_id.sto")
    assert out.labels == ("rz_moment", "tx_force", "ty_force", "ankle_moment")
    np.testing.assert_array_equal(out.data, r.tau[:, [1, 2, 3, 0]])
    assert r.table().labels == out.labels


def test_tree_order_of_a_model_whose_file_is_gone(tmp_path):
    """The columns' order is read from the model's file: when it is gone, the model's order, warned."""
    from mbjax.opensim.tools.id import tree_columns

    (tmp_path / "walker.osim").write_text(_joints_swapped(MODEL))
    model = load_osim(tmp_path / "walker.osim")
    assert tree_columns(model, "ID") == (1, 2, 3, 0)
    (tmp_path / "walker.osim").unlink()
    with pytest.warns(UserWarning, match=r"ID: the model's file .*walker\.osim: cannot read it again .* written in the "
                                         r"model's coordinate order, not in OpenSim 4\.6's multibody tree order"):
        assert tree_columns(model, "ID") is None
    assert tree_columns(model.replace(osim=None), "ID") is None  # no file (a model built in code): its own order


def test_filtered_coordinates_use_opensims_grid(tmp_path, walker):
    _write_case(tmp_path, fc=6)
    table = read_storage(tmp_path / "walk.mot")
    t, q, qd, qdd = coordinate_trajectory(walker, table, 6.0, (0.1, 0.4))
    tp, _ = lowpass_storage(table.time, table.data, 6.0)
    a = np.searchsorted(tp, 0.1, side="right") - 1
    np.testing.assert_array_equal(t, tp[a: np.searchsorted(tp, 0.4, side="right")])
    assert t[0] <= 0.1 < t[1]
    np.testing.assert_allclose(qd, np.gradient(q, t, axis=0), atol=0.05 * np.abs(qd).max())  # consistent derivative


def test_missing_coordinate_column_uses_default(walker):
    table = Table(TIMES, ("rz", "tx", "ankle"), np.zeros((TIMES.shape[0], 3)), False)
    with pytest.warns(UserWarning, match="ty"):
        _, q, qd, _ = coordinate_trajectory(walker, table)
    np.testing.assert_array_equal(q[:, 2], 0.9)
    np.testing.assert_array_equal(qd[:, 2], 0.0)


@pytest.mark.parametrize("kin, cut, named", [
    ("walk.mot", "6", ("external_loads_model_kinematics_file> 'walk.mot'", "lowpass_cutoff_frequency_for_load_kinematics> 6 Hz")),
    ("walk.mot", "-1", ("external_loads_model_kinematics_file> 'walk.mot'", "lowpass_cutoff_frequency_for_load_kinematics> -1 Hz")),
    ("", "6", ("lowpass_cutoff_frequency_for_load_kinematics> 6 Hz",)),
    ("walk.mot", None, ("external_loads_model_kinematics_file> 'walk.mot'",)),
    ("Unassigned", "-1", ()),
])
def test_load_kinematics_elements_named_as_ignored(tmp_path, kin, cut, named):
    """OpenSim 3's load-kinematics file and its cut-off, which OpenSim 4's ExternalLoads has no property
    for: each given is named (file, line, element, value) in one warning; the loads are the same."""
    _write_case(tmp_path)
    plain = read_external_loads(tmp_path / "loads.xml")
    extra = (f"<external_loads_model_kinematics_file> {kin} </external_loads_model_kinematics_file>"
             + ("" if cut is None else f"<lowpass_cutoff_frequency_for_load_kinematics> {cut} "
                                       "</lowpass_cutoff_frequency_for_load_kinematics>"))
    (tmp_path / "loads.xml").write_text(LOADS_XML.replace("<datafile>", extra + "<datafile>"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lf = read_external_loads(tmp_path / "loads.xml")
    said = [str(w.message) for w in caught if "OpenSim 4 ignores" in str(w.message)]
    if not named:
        assert not said
        return
    assert len(said) == 1 and said[0].startswith(f"{tmp_path / 'loads.xml'}:")
    for part in named:
        assert part in said[0]
    assert ("lowpass" in said[0]) == any("lowpass" in p for p in named)
    assert lf.forces == plain.forces


def _loads_xml(body="foot", fid="g_v", pid="g_p", tid="g_t", fexp="ground", datafile="loads.mot", version="20302"):
    return (LOADS_XML.replace("<applied_to_body> foot </applied_to_body>",
                              f"<applied_to_body> {body} </applied_to_body>")
            .replace("<force_identifier> g_v </force_identifier>", f"<force_identifier>{fid}</force_identifier>", 1)
            .replace("<point_identifier> g_p </point_identifier>", f"<point_identifier>{pid}</point_identifier>")
            .replace("<torque_identifier> g_t </torque_identifier>", f"<torque_identifier>{tid}</torque_identifier>")
            .replace("<force_expressed_in_body> ground </force_expressed_in_body>",
                     f"<force_expressed_in_body> {fexp} </force_expressed_in_body>", 1)
            .replace("<datafile> loads.mot </datafile>", f"<datafile> {datafile} </datafile>")
            .replace('Version="20302"', f'Version="{version}"'))


@pytest.mark.parametrize("kwargs, match", [
    ({"fid": "g_"}, r"bad.xml:5: <ExternalForce name='grf'>: <force_identifier> 'g_' matches 9 column"),
    ({"pid": "nope"}, r"<point_identifier> 'nope' matches 0 column"),
    ({"fid": "Unassigned"}, r"specifies a point but applies no force"),
    ({"fid": "", "pid": "", "tid": ""}, r"applies neither a force nor a torque"),
    ({"datafile": "missing.mot"}, r"<datafile> 'missing.mot' not found"),
    ({"version": "20200"}, r"Version 20200"),
])
def test_bad_external_loads_files(tmp_path, kwargs, match):
    _write_case(tmp_path)
    (tmp_path / "bad.xml").write_text(_loads_xml(**kwargs))
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        read_external_loads(tmp_path / "bad.xml")


@pytest.mark.parametrize("kwargs, match", [
    ({"body": "tibia"}, r"<ExternalForce name='grf'>: <applied_to_body> 'tibia' is not a body"),
    ({"fexp": "tibia"}, r"<force_expressed_in_body> 'tibia' is not a body .*OpenSim would warn and use ground"),
    ({"body": "ground"}, r"<applied_to_body> is ground"),
])
def test_unknown_bodies_name_file_and_force(tmp_path, walker, kwargs, match):
    _write_case(tmp_path)
    (tmp_path / "bad.xml").write_text(_loads_xml(**kwargs))
    with pytest.raises(ValueError, match=match):
        read_external_loads(tmp_path / "bad.xml").at([0.1], walker)


def test_bad_setup_and_data(tmp_path, walker):
    setup = _write_case(tmp_path)
    (tmp_path / "s2.xml").write_text(setup.read_text().replace("<time_range> 0.1 0.4 </time_range>",
                                                               "<time_range> 0.1 </time_range>"))
    with pytest.raises(ValueError, match=r"s2.xml:\d+: <time_range>.*two numbers"):
        read_id_setup(tmp_path / "s2.xml")
    (tmp_path / "s3.xml").write_text("<OpenSimDocument><InverseKinematicsTool/></OpenSimDocument>")
    with pytest.raises(ValueError, match="no <InverseDynamicsTool>"):
        read_id_setup(tmp_path / "s3.xml")
    with pytest.raises(ValueError, match="lowpass_cutoff 0 Hz"):
        coordinate_trajectory(walker, read_storage(tmp_path / "walk.mot"), 0.0)
    with pytest.raises(ValueError, match="does not overlap"):
        coordinate_trajectory(walker, read_storage(tmp_path / "walk.mot"), -1, (2.0, 3.0))
    data = read_storage(tmp_path / "loads.mot")
    data.data[5, 0] = np.nan
    write_storage(tmp_path / "loads.mot", data, format="storage")
    with pytest.raises(ValueError, match=r"columns \('g_vx', 'g_vy', 'g_vz'\).*NaN"):
        read_external_loads(tmp_path / "loads.xml").at([0.1], walker)


def test_force_elements_and_excluded_forces(tmp_path):
    """A model SpringGeneralizedForce applies unless 'All' is excluded: τ changes by -Q = k (q - q0) + c q̇;
    forces mbjax does not compute (muscles, ligaments) must be excluded."""
    from types import SimpleNamespace

    from mbjax.opensim.tools.id import inverse_dynamics_motion
    from mbjax.opensim.tools.id.motion import _force_elements_applied

    spring = ("<ForceSet name=\"forceset\"><objects><SpringGeneralizedForce name=\"spring\"><coordinate>ankle"
              "</coordinate><stiffness>30</stiffness><rest_length>0.2</rest_length><viscosity>1.5</viscosity>"
              "</SpringGeneralizedForce></objects></ForceSet>\n  </Model>")
    (tmp_path / "sprung.osim").write_text(MODEL.replace("  </Model>", spring))
    model = load_osim(tmp_path / "sprung.osim")
    table = Table(TIMES, ("rz", "tx", "ty", "ankle"), np.stack([_q_exact(TIMES)[0][:, i] for i in range(4)], 1), False)
    on = inverse_dynamics_motion(model, table, forces_to_exclude=("Muscles",), chunk=32)
    off = inverse_dynamics_motion(model, table, forces_to_exclude=("all",), chunk=32)
    delta = on.tau - off.tau
    np.testing.assert_allclose(delta[:, 3], 30 * (on.q[:, 3] - 0.2) + 1.5 * on.qd[:, 3], atol=1e-9)
    np.testing.assert_allclose(delta[:, :3], 0.0, atol=1e-9)
    with pytest.raises(NotImplementedError, match="single force element 'spring'"):
        _force_elements_applied(model, ("spring",))
    stub = model.replace(muscles=SimpleNamespace(names=("vas", "acl", "act"),
                                                  kinds=("Thelen2003Muscle", "Delp1990Muscle_Deprecated (ignored)",
                                                         "PathActuator")))
    with pytest.raises(NotImplementedError, match=r"\['acl'\] \(\['Delp1990Muscle_Deprecated \(ignored\)'\]\)"):
        _force_elements_applied(stub, ("Muscles",))
    assert _force_elements_applied(stub, ("Muscles", "acl")) is True
    assert _force_elements_applied(stub, ("ALL",)) is False
    with pytest.warns(UserWarning, match="no force named 'gastroc'"):
        with pytest.raises(NotImplementedError, match="vas"):
            _force_elements_applied(stub, ("gastroc", "acl"))


def test_results_folder_made_and_checked_before_computing(tmp_path, walker, monkeypatch):
    """A results_directory that does not exist is made (nested, as OpenSim's tool makes it); one that
    cannot be made fails before anything is computed, naming the setup file and the path."""
    setup = _write_case(tmp_path)
    nested = tmp_path / "n.xml"
    nested.write_text(setup.read_text().replace("<results_directory> results </results_directory>",
                                                "<results_directory> out/a/b </results_directory>"))
    r = inverse_dynamics_from_setup(nested, walker)
    np.testing.assert_array_equal(read_storage(tmp_path / "out" / "a" / "b" / "walk_id.sto").data, r.tau)
    import mbjax.opensim.tools.id.setup

    monkeypatch.setattr(mbjax.opensim.tools.id.setup, "inverse_dynamics_motion", lambda *a, **k: pytest.fail("computed first"))
    (tmp_path / "blocker").write_text("")
    bad = tmp_path / "bad.xml"
    bad.write_text(setup.read_text().replace("<results_directory> results </results_directory>",
                                             "<results_directory> blocker/sub </results_directory>"))
    with pytest.raises(OSError, match=r"bad\.xml: cannot create the folder .*blocker.* generalized-force output"):
        inverse_dynamics_from_setup(bad, walker)
    (tmp_path / "results").mkdir()
    with pytest.raises(OSError, match=r"bad\.xml: the generalized-force output file .*results' is a folder"):
        inverse_dynamics_from_setup(bad, walker, output_file=tmp_path / "results")


def test_legacy_prescribed_force_loads_refused_by_name(tmp_path):
    """A 2.x ExternalLoads of PrescribedForce objects (OpenSim 4.6 refuses it too: see
    tests/validation/test_data_files_opensim.py): the error names each element, its line and why."""
    p = tmp_path / "legacy.xml"
    p.write_text(LEGACY_LOADS)
    with pytest.raises(ValueError, match=r"legacy\.xml:5: <PrescribedForce name='right'>: 2 unsupported element\(s\) "
                                         r"in <ExternalLoads>: <PrescribedForce name='right'> \(line 5\), "
                                         r"<PrescribedForce name='left'> \(line 11\): a legacy force set of "
                                         r"PrescribedForce"):
        read_external_loads(p)
    mixed = tmp_path / "mixed.xml"
    mixed.write_text(LEGACY_LOADS.replace("PrescribedForce name=\"left\"", "PointActuator name=\"left\"")
                     .replace("</PrescribedForce>\n    </objects>", "</PointActuator>\n    </objects>"))
    with pytest.raises(ValueError, match=r"<PointActuator name='left'> \(line 11\): ExternalLoads holds only"):
        read_external_loads(mixed)


@pytest.mark.skipif(not os.path.isdir(os.path.join(os.environ.get("OPENSIM_MODELS_DIR", ""), "Pipelines")),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_gait2392_legacy_foot_floor_loads_refused_by_name():
    path = os.path.join(os.environ["OPENSIM_MODELS_DIR"], "Pipelines", "Gait2392_Simbody", "foot_floor_loads.xml")
    with pytest.raises(ValueError, match=r"foot_floor_loads\.xml:\d+: .*<PrescribedForce name='ExternalForce_1'> "
                                         r"\(line \d+\), <PrescribedForce name='ExternalForce_2'> .*legacy"):
        read_external_loads(path)
