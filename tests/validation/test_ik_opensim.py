"""mbjax inverse kinematics and data files vs OpenSim 4.6 itself (marker ``validation``).

* The OpenSim arm26 IK tutorial (tests/data/opensim_models/arm26_ik: its marker file and setup, the
  shipped arm26 model): OpenSim's ``InverseKinematicsTool`` is run live on the same setup, all 121
  frames, with its accuracy tightened from the tutorial's 1e-5 to **1e-10**; coordinates and the
  per-frame marker RMS / max errors it reports are compared with ``mbjax.analysis.ik``.  mbjax's solution is
  also checked to be a minimum of the IK objective by a Newton step computed with autodiff.
* Model markers vs ``Marker::getLocationInGround``.
* Files written by mbjax are read by OpenSim (``Storage``, ``TimeSeriesTable``,
  ``TimeSeriesTableVec3``/``TRCFileAdapter``), and OpenSim's IK run on a ``.trc`` written by mbjax from
  known poses recovers those poses (units and marker layout as OpenSim reads them).
"""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.analysis.ik import IKResult  # noqa: E402
from mbjax.io import (  # noqa: E402
    MarkerData,
    Table,
    coordinates_from_table,
    load_markers,
    read_storage,
    read_trc,
    write_storage,
    write_trc,
)
from mbjax.models import arm26_path  # noqa: E402
from mbjax.opensim.tools.ik import write_ik_motion  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "opensim_models", "arm26_ik")
SETUP = os.path.join(DATA, "arm26_Setup_InverseKinematics.xml")
ACCURACY = 1e-10


@pytest.fixture(scope="module")
def arm():
    model = mbjax.models.arm26()
    return model, load_markers(arm26_path(), model)


def _opensim_ik(tmp, marker_file, accuracy=ACCURACY, time_range=None):
    """OpenSim's InverseKinematicsTool on the tutorial setup with the shipped arm26 model."""
    tool = osim.InverseKinematicsTool(SETUP)
    model = osim.Model(arm26_path())  # kept alive while the tool runs (the tool does not own it)
    tool.setModel(model)
    tool.set_accuracy(accuracy)
    tool.setMarkerDataFileName(str(marker_file))
    if time_range is not None:
        tool.setStartTime(time_range[0])
        tool.setEndTime(time_range[1])
    tool.setResultsDir(str(tmp))
    tool.setOutputMotionFileName(str(tmp / "ik.mot"))
    assert tool.run()
    return read_storage(tmp / "ik.mot"), read_storage(tmp / f"{tool.getName()}_ik_marker_errors.sto")


def _opensim_solver(marker_file, names, accuracy=ACCURACY):
    """OpenSim's InverseKinematicsSolver (what the tool runs) frame by frame, in full precision:
    coordinates ``(T, 2)`` and marker errors ``(T, nm)`` in ``names`` order."""
    model = osim.Model(arm26_path())
    state = model.initSystem()
    weights = osim.SetMarkerWeights()
    for n in names:
        weights.cloneAndAppend(osim.MarkerWeight(n, 1.0))
    ref = osim.MarkersReference(str(marker_file), weights)
    solver = osim.InverseKinematicsSolver(model, ref, osim.SimTKArrayCoordinateReference(), float("inf"))
    solver.setAccuracy(accuracy)
    times = list(ref.getMarkerTable().getIndependentColumn())
    state.setTime(times[0])
    solver.assemble(state)
    coords = model.getCoordinateSet()
    q, err = [], []
    for t in times:
        state.setTime(t)
        solver.track(state)
        q.append([coords.get(i).getValue(state) for i in range(coords.getSize())])
        err.append([solver.computeCurrentMarkerError(n) for n in names])
    return np.array(times), np.array(q), np.array(err)


def test_ik_matches_opensim_on_tutorial(arm, tmp_path):
    model, markers = arm
    r = mbjax.opensim.inverse_kinematics_from_setup(SETUP, model=model, markers=markers, accuracy=ACCURACY)
    assert r.q.shape == (121, 2) and r.converged.all()
    # 1. OpenSim's solver in full precision
    t_os, q_os, e_os = _opensim_solver(os.path.join(DATA, "arm26_elbow_flex.trc"), r.marker_names)
    np.testing.assert_array_equal(r.time, t_os)
    dq = np.abs(r.q - q_os).max()
    de = np.abs(r.marker_errors - e_os).max()
    rms_os = np.sqrt(np.mean(e_os ** 2, axis=1))
    print(f"\nIK vs OpenSim InverseKinematicsSolver (accuracy {ACCURACY:g}): max |dq| = {dq:.2e} rad, "
          f"max |d marker error| = {de:.2e} m, max |d RMS| = {np.abs(r.rms - rms_os).max():.2e} m; "
          f"marker RMS up to {r.rms.max():.3e} m (OpenSim {rms_os.max():.3e} m)")
    assert dq < 1e-8 and de < 1e-9
    # 2. OpenSim's InverseKinematicsTool on the same setup, through its output files
    mot, err = _opensim_ik(tmp_path, os.path.join(DATA, "arm26_elbow_flex.trc"))
    np.testing.assert_allclose(r.time, mot.time, atol=1e-8)  # OpenSim prints times with 8 decimals
    dq_file = np.abs(r.q - coordinates_from_table(model, mot)).max()
    d_rms = np.abs(r.rms - err.column("marker_error_RMS")).max()
    d_max = np.abs(r.max - err.column("marker_error_max")).max()
    print(f"IK vs OpenSim InverseKinematicsTool files: max |dq| = {dq_file:.2e} rad, max |d RMS| = {d_rms:.2e} m, "
          f"max |d max| = {d_max:.2e} m")
    assert dq_file < 1e-8  # the .mot holds degrees with 8 decimals (1.7e-10 rad)
    assert d_rms < 6e-9 and d_max < 6e-9  # the .sto holds metres with 8 decimals (5e-9 m)
    np.testing.assert_allclose(err.column("total_squared_error"), np.nansum(r.marker_errors ** 2, axis=1),
                               atol=6e-9)
    # mbjax's solution is a minimum of the objective: a Newton step from it is below 1e-9 rad
    x = read_trc(os.path.join(DATA, "arm26_elbow_flex.trc")).positions

    def obj(q, xk):
        return 0.5 * jnp.sum((mbjax.marker_positions(model, markers, q) - xk) ** 2)

    grad = jax.jit(jax.vmap(jax.grad(obj)))
    hess = jax.jit(jax.vmap(jax.hessian(obj)))

    def newton_step(q):
        h = np.asarray(hess(q, x))
        assert np.all(np.linalg.eigvalsh(h) > 0)
        return np.abs(np.linalg.solve(h, np.asarray(grad(q, x))[..., None])).max()

    step, step_os = newton_step(r.q), newton_step(q_os)
    print(f"Newton step to the optimum: mbjax {step:.2e} rad, OpenSim {step_os:.2e} rad")
    assert step < 1e-9
    # the tutorial's reference output (an older OpenSim, accuracy 1e-5) agrees to its accuracy
    ref = coordinates_from_table(model, read_storage(os.path.join(DATA, "arm26_InverseKinematics.mot")))
    assert np.abs(ref - r.q).max() < 2e-4


def test_markers_match_opensim(arm):
    model, markers = arm
    om = osim.Model(arm26_path())
    s = om.initSystem()
    qs = np.array([[0.0, 0.0], [0.7, 1.3], [-1.2, 2.2], [2.5, 0.4]])
    ms = om.getMarkerSet()
    pos = jax.jit(jax.vmap(lambda q: mbjax.marker_positions(model, markers, q)))(qs)
    for q, p in zip(qs, np.asarray(pos)):
        for i, c in enumerate(model.coordinate_names):
            om.getCoordinateSet().get(c).setValue(s, q[i], False)
        om.realizePosition(s)
        ref = np.array([[ms.get(n).getLocationInGround(s)[k] for k in range(3)] for n in markers.names])
        np.testing.assert_allclose(p, ref, atol=1e-14)


def test_opensim_reads_written_files(arm, tmp_path):
    model, markers = arm
    rng = np.random.default_rng(3)
    data = rng.normal(size=(6, 2)) * 10.0 ** rng.integers(-8, 8, size=(6, 2))
    t = Table(np.linspace(0.0, 0.05, 6), model.coordinate_names, data, True, {"name": "trial"})
    for fmt, name in (("storage", "a.mot"), ("table", "b.sto")):
        write_storage(tmp_path / name, t, format=fmt)
        st = osim.Storage(str(tmp_path / name))
        assert st.getSize() == 6 and st.isInDegrees()
        labels = st.getColumnLabels()
        assert [labels.get(i) for i in range(labels.getSize())] == ["time", *model.coordinate_names]
        for k in range(6):
            row = st.getStateVector(k)
            assert row.getTime() == t.time[k]
            np.testing.assert_array_equal([row.getData().get(j) for j in range(2)], data[k])
        tab = osim.TimeSeriesTable(str(tmp_path / name))
        np.testing.assert_array_equal(tab.getMatrix().to_numpy(), data)
        assert tab.getTableMetaDataAsString("inDegrees") == "yes"
    # .trc with a missing marker, in mm
    pos = rng.normal(size=(4, 3, 3))
    pos[2, 1] = np.nan
    write_trc(tmp_path / "m.trc", MarkerData(np.arange(4) / 100.0, markers.names, pos, rate=100.0), units="mm")
    tv = osim.TimeSeriesTableVec3(str(tmp_path / "m.trc"))
    assert tv.getTableMetaDataAsString("Units") == "mm" and tv.getNumRows() == 4
    assert list(tv.getColumnLabels()) == list(markers.names)
    for k in range(4):
        row = tv.getRowAtIndex(k)
        got = np.array([[row[m][a] for a in range(3)] for m in range(3)])
        np.testing.assert_allclose(got, pos[k] * 1e3, rtol=1e-15)
    assert list(tv.getIndependentColumn()) == list(np.arange(4) / 100.0)


def test_opensim_ik_on_written_trc_recovers_poses(arm, tmp_path):
    model, markers = arm
    s = np.linspace(0.0, 1.0, 9)
    q = np.stack([0.1 + 0.6 * s, 0.2 + 1.5 * s ** 2], axis=1)
    x = np.asarray(jax.jit(jax.vmap(lambda qk: mbjax.marker_positions(model, markers, qk)))(q))
    write_trc(tmp_path / "known.trc", MarkerData(np.arange(9) / 120.0, markers.names, x,
                                                 rate=120.0), units="mm")
    mot, err = _opensim_ik(tmp_path, tmp_path / "known.trc", time_range=(0.0, 8 / 120.0))
    q_os = coordinates_from_table(model, mot)
    assert q_os.shape == (9, 2)
    np.testing.assert_allclose(q_os, q, atol=1e-8)
    assert err.column("marker_error_max").max() < 1e-9


def test_motion_types_match_opensim(tmp_path):
    """mbjax.opensim.model.osim_motion (which coordinates are converted from degrees) vs Coordinate::getMotionType."""
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from _osim_models import write_coupled_model

    from mbjax.opensim.model.osim_motion import motion_types
    from mbjax.opensim.model.osim_summary import summarize_osim

    names = {0: "undefined", 1: "rotational", 2: "translational", 3: "coupled"}
    for path in (arm26_path(), write_coupled_model(tmp_path)):
        model = osim.Model(path)  # kept alive while its coordinate set is read
        cs = model.getCoordinateSet()
        ours = motion_types(path)
        theirs = {cs.get(i).getName(): names[int(cs.get(i).getMotionType())] for i in range(cs.getSize())}
        assert ours == theirs, path
        summary = {c.name: c.motion_type for c in summarize_osim(path).coordinates}  # `mbjax info`'s
        assert summary == theirs, path


GAIT = os.path.join(os.path.dirname(DATA), "gait2354_ik")


@pytest.mark.extended
def test_ik_matches_opensim_tool_on_gait2354(tmp_path):
    """Gait2354 subject01 walk (23 coordinates, 31 weighted markers, 4 coordinate tasks of weight
    1000; 7 frames): OpenSim's InverseKinematicsTool at accuracy 1e-10 vs mbjax, through its files."""
    path = os.path.join(GAIT, "subject01_simbody_ik.osim")
    trc = os.path.join(GAIT, "subject01_walk1_0.4-0.5s.trc")
    setup = mbjax.opensim.read_ik_setup(os.path.join(GAIT, "subject01_Setup_IK.xml"))
    model = mbjax.io.load_osim(path)
    r = mbjax.inverse_kinematics(model, load_markers(path, model), read_trc(trc), setup.marker_weights,
                                 setup.coordinate_tasks)
    tool = osim.InverseKinematicsTool(os.path.join(GAIT, "subject01_Setup_IK.xml"))
    om = osim.Model(path)  # kept alive while the tool runs
    tool.setModel(om)
    tool.set_accuracy(ACCURACY)
    tool.setMarkerDataFileName(trc)
    tool.setStartTime(0.4)
    tool.setEndTime(0.5)
    tool.setResultsDir(str(tmp_path))
    tool.setOutputMotionFileName(str(tmp_path / "ik.mot"))
    assert tool.run()
    mot = read_storage(tmp_path / "ik.mot")
    err = read_storage(tmp_path / f"{tool.getName()}_ik_marker_errors.sto")
    q_os = coordinates_from_table(model, mot)
    assert r.converged.all() and q_os.shape == r.q.shape == (7, 23)
    dq = np.abs(r.q - q_os).max()
    d_rms = np.abs(r.rms - err.column("marker_error_RMS")).max()
    d_max = np.abs(r.max - err.column("marker_error_max")).max()
    print(f"\nGait2354 IK vs OpenSim tool: max |dq| = {dq:.2e} (rad or m), max |d RMS| = {d_rms:.2e} m, "
          f"max |d max| = {d_max:.2e} m; marker RMS up to {r.rms.max():.3e} m")
    assert dq < 2e-8 and d_rms < 1e-8 and d_max < 1e-8


# --------------------------------------------------------------------------------------------
# the IK motion file mbjax writes: every coordinate, read back by OpenSim
# --------------------------------------------------------------------------------------------

OPENSIM_MODELS = os.environ.get("OPENSIM_MODELS_DIR", "")
LEG39_DIR = os.path.join(OPENSIM_MODELS, "Pipelines", "Leg39")
LEG39 = os.path.join(OPENSIM_MODELS, "Models", "Leg39", "leg39.osim")


def _opensim_poses_from_file(osim_path, motion_file, model):
    """OpenSim reads ``motion_file`` (Storage, degrees converted by the model's SimbodyEngine), sets
    every coordinate of each row in a state, and reports the row's body transforms and the largest
    constraint (coupler) error; also the CoordinateSet names and motion types."""
    om = osim.Model(osim_path)
    state = om.initSystem()
    st = osim.Storage(str(motion_file))
    om.getSimbodyEngine().convertDegreesToRadians(st)
    labels = st.getColumnLabels()
    labels = [labels.get(i) for i in range(1, labels.getSize())]
    cs = om.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    kinds = [int(cs.get(i).getMotionType()) for i in range(cs.getSize())]
    poses, qerr = [], []
    for k in range(st.getSize()):
        row = st.getStateVector(k).getData()
        for j, n in enumerate(labels):
            cs.get(n).setValue(state, row.get(j), False)
        om.realizePosition(state)
        qerr.append(np.abs(state.getQErr().to_numpy()).max() if state.getNQErr() else 0.0)
        frame = {}
        for b in om.getBodySet():
            x = b.getTransformInGround(state)
            frame[b.getName()] = (np.array([[x.R().get(r, c) for c in range(3)] for r in range(3)]),
                                  np.array([x.p().get(i) for i in range(3)]))
        poses.append(frame)
    return labels, names, kinds, poses, np.array(qerr)


def _check_poses(model, q, poses):
    body = jax.jit(jax.vmap(lambda x: mbjax.body_poses(model, x)))
    ours = np.asarray(body(jnp.asarray(q)))
    worst = 0.0
    for k, frame in enumerate(poses):
        for name, (r, p) in frame.items():
            t = ours[k, model.body_index(name)]
            worst = max(worst, np.abs(t[:3, :3] - r).max(), np.abs(t[:3, 3] - p).max())
    return worst


def test_opensim_reads_full_pose_of_coupled_and_locked_model(tmp_path):
    """tests/_ik_models.py (a locked, two coupled, one independent coordinate): the file's columns are
    OpenSim's CoordinateSet, and OpenSim's model set to the file's values has mbjax's body poses
    with the couplers satisfied."""
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from _ik_models import write_model

    path = write_model(tmp_path)
    model = mbjax.io.load_osim(path)
    flex = np.array([[0.4], [-0.7], [1.1]])
    res = IKResult(np.array([0.0, 0.01, 0.02]), flex, ("flex",), (), np.zeros((3, 0)), *np.zeros((2, 3)),
                            np.ones(3, bool), np.zeros(3, int))
    write_ik_motion(tmp_path / "ik.mot", model, res)
    labels, names, kinds, poses, qerr = _opensim_poses_from_file(path, tmp_path / "ik.mot", model)
    assert labels == names == ["tilt", "flex", "slide", "knee"]
    assert qerr.max() < 1e-14
    assert _check_poses(model, flex, poses) < 1e-14


@pytest.mark.skipif(not (OPENSIM_MODELS and os.path.exists(LEG39)),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_leg39_ik_file_gives_opensim_the_full_pose(tmp_path):
    """Leg39's short swing IK setup run by mbjax (model from Models/Leg39, output into a folder that
    does not exist): the file has the 14 coordinates OpenSim's own IK tool writes, in its order, and
    OpenSim set to each row's values has mbjax's body poses with its couplers satisfied."""
    import warnings

    setup = os.path.join(LEG39_DIR, "leg39_swing_short_IK_Setup.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(LEG39)
    out = tmp_path / "results" / "ik" / "leg39_ik.mot"
    r = mbjax.opensim.inverse_kinematics_from_setup(setup, model, load_markers(LEG39, model), output_motion_file=out,
                                               progress=False)
    labels, names, kinds, poses, qerr = _opensim_poses_from_file(LEG39, out, model)
    assert len(labels) == 14 and labels == names
    # OpenSim's own IK tool on the same setup writes the same columns
    tool = osim.InverseKinematicsTool(setup)
    om = osim.Model(LEG39)
    tool.setModel(om)
    tool.setResultsDir(str(tmp_path))
    tool.setOutputMotionFileName(str(tmp_path / "opensim_ik.mot"))
    assert tool.run()
    theirs = read_storage(tmp_path / "opensim_ik.mot")
    ours = read_storage(out)
    assert ours.labels == theirs.labels and ours.in_degrees == theirs.in_degrees
    assert qerr.max() < 1e-12
    assert _check_poses(model, r.q, poses) < 1e-12


# --------------------------------------------------------------------------------------------
# the Gait2354 IK setup edited, run by OpenSim's tool and by mbjax (each in its own folder)
# --------------------------------------------------------------------------------------------


def _both_tools(tmp_path, edits, files=()):
    """The Gait2354 IK setup (0.4-0.5 s, accuracy 1e-10) with the text ``edits`` (pairs), beside
    ``files`` (name, text), run by OpenSim's InverseKinematicsTool and by
    ``inverse_kinematics_from_setup``: (mbjax's result, its errors file, OpenSim's motion, its errors
    file, mbjax's warnings)."""
    import shutil
    import warnings

    text = _read(os.path.join(GAIT, "subject01_Setup_IK.xml"))
    edits = (("<accuracy>1e-005</accuracy>", f"<accuracy>{ACCURACY:g}</accuracy>"),
             ("subject01_simbody.osim", "subject01_simbody_ik.osim"),
             ("subject01_walk1.trc", "subject01_walk1_0.4-0.5s.trc"),
             ("<time_range> 0.4 1.6</time_range>", "<time_range> 0.4 0.5</time_range>")) + tuple(edits)
    for a, b in edits:
        assert text.count(a) == 1, a
        text = text.replace(a, b)
    for who in ("osim", "mbjax"):
        folder = tmp_path / who
        folder.mkdir(parents=True)
        for f in ("subject01_simbody_ik.osim", "subject01_walk1_0.4-0.5s.trc"):
            shutil.copy(os.path.join(GAIT, f), folder)
        for name, body in files:
            (folder / name).write_text(body)
        (folder / "setup.xml").write_text(text)
    tool = osim.InverseKinematicsTool(str(tmp_path / "osim" / "setup.xml"))
    om = osim.Model(os.path.join(GAIT, "subject01_simbody_ik.osim"))  # kept alive while the tool runs
    tool.setModel(om)
    assert tool.run()
    with warnings.catch_warnings(record=True) as said:  # <constraint_weight> 20, among others
        warnings.simplefilter("always")
        r = mbjax.opensim.inverse_kinematics_from_setup(tmp_path / "mbjax" / "setup.xml", write=True, progress=False)
    errors = "subject01_ik_marker_errors.sto"
    return (r, read_storage(tmp_path / "mbjax" / errors), read_storage(tmp_path / "osim" / "subject01_walk1_ik.mot"),
            read_storage(tmp_path / "osim" / errors), [str(w.message) for w in said])


def _read(path):
    with open(path) as f:
        return f.read()


def _reference_mot(t, y, in_degrees=True):
    rows = "".join(f"{a:.8f}\t{b:.10f}\n" for a, b in zip(t, y))
    return (f"reference\nversion=1\nnRows={len(t)}\nnColumns=2\ninDegrees={'yes' if in_degrees else 'no'}\n"
            f"endheader\ntime\tknee_angle_r\n{rows}")


def test_ik_from_file_reference_is_opensims_quintic_spline(tmp_path):
    """An ``IKCoordinateTask`` ``from_file`` on knee_angle_r (weight 1000) with a 30 Hz reference for
    60 Hz markers: OpenSim's tool fits the file with ``GCVSplineSet(5, ...)``; between the
    reference's rows mbjax's knee angle equals OpenSim's, where straight lines between the rows are
    0.4 degrees off.  A file marked ``inDegrees=no`` is read as degrees all the same, as OpenSim
    reads it (warned)."""
    t = np.arange(0.3, 0.62, 1 / 30)
    knee = -40.0 + 25.0 * np.sin(9.0 * t) + 4.0 * np.cos(23.0 * t)  # degrees
    task = ('<IKCoordinateTask name="knee_angle_r"><apply>true</apply><weight>1000</weight>'
            '<value_type>from_file</value_type><value>0</value></IKCoordinateTask>\n')
    edits = (('<IKCoordinateTask name="subtalar_angle_r">', task + '<IKCoordinateTask name="subtalar_angle_r">'),
             ("<coordinate_file></coordinate_file>", "<coordinate_file>reference.mot</coordinate_file>"))
    r, _, mot, _, said = _both_tools(tmp_path / "deg", edits, [("reference.mot", _reference_mot(t, knee))])
    assert not [w for w in said if "inDegrees" in w]
    k = r.coordinate_names.index("knee_angle_r")
    ours, theirs = np.rad2deg(r.q[:, k]), mot.column("knee_angle_r")
    lines = np.interp(r.time, t, knee)
    print(f"\nfrom_file knee_angle_r: max |mbjax - OpenSim| = {np.abs(ours - theirs).max():.2e} deg; straight "
          f"lines between the rows would be {np.abs(lines - theirs).max():.2f} deg off")
    assert np.abs(ours - theirs).max() < 1e-6  # the .mot's 8 decimals and the accuracy 1e-10
    assert np.abs(lines - theirs).max() > 0.1
    model = mbjax.io.load_osim(os.path.join(GAIT, "subject01_simbody_ik.osim"))
    dq = np.abs(r.q - coordinates_from_table(model, mot)).max()  # every coordinate, radians or metres
    print(f"every coordinate: max |dq| = {dq:.2e}")
    assert dq < 2e-7
    # the same file marked inDegrees=no: OpenSim's IK tool still converts it from degrees
    r2, _, mot2, _, said = _both_tools(tmp_path / "rad", edits, [("reference.mot", _reference_mot(t, knee, False))])
    assert [w for w in said if re.search(r"<coordinate_file> .*reference\.mot is not marked inDegrees=yes", w)]
    assert np.abs(r2.q - r.q).max() == 0.0
    assert np.abs(np.rad2deg(r2.q[:, k]) - mot2.column("knee_angle_r")).max() < 1e-6


def test_ik_marker_rms_counts_missing_markers_as_opensim(tmp_path):
    """R.ASIS missing in two frames and Sternum tracked with weight 0: OpenSim's
    ``marker_error_RMS`` divides the squared errors of the markers present by all 31 markers in use
    (``getNumMarkersInUse``: the missing and the weight-0 ones included); so do mbjax's ``rms``
    and the errors file it writes."""
    lines = _read(os.path.join(GAIT, "subject01_walk1_0.4-0.5s.trc")).splitlines()
    for row in (7, 8):  # the frames at 0.417 and 0.433 s
        cells = lines[row].split("\t")
        cells[2:5] = ["", "", ""]
        lines[row] = "\t".join(cells)
    text = _read(os.path.join(GAIT, "subject01_Setup_IK.xml"))
    i = text.index('<IKMarkerTask name="Sternum">')
    sternum = text[i:text.index("</IKMarkerTask>", i)]
    edits = ((sternum, sternum.replace("<weight>1</weight>", "<weight>0</weight>")),)
    r, ours, _, theirs, _ = _both_tools(tmp_path, edits, [("subject01_walk1_0.4-0.5s.trc", "\n".join(lines) + "\n")])
    assert "R.ASIS" in r.marker_names and "Sternum" in r.marker_names and len(r.marker_names) == 31
    missing = np.isnan(r.marker_errors).any(axis=1)
    assert missing.tolist() == [False, True, True, False, False, False, False]
    rms_os = theirs.column("marker_error_RMS")
    nm = theirs.column("total_squared_error") / rms_os ** 2
    present_only = np.sqrt(np.nansum(r.marker_errors ** 2, axis=1) / (~np.isnan(r.marker_errors)).sum(axis=1))
    print(f"\nmarker_error_RMS with R.ASIS missing: max |mbjax - OpenSim| = {np.abs(r.rms - rms_os).max():.2e} m; "
          f"over the markers present it would be {np.abs(present_only - rms_os).max():.2e} m off")
    np.testing.assert_allclose(nm, 31, rtol=1e-4)  # OpenSim's divisor in every frame
    assert np.abs(r.rms - rms_os).max() < 1e-7
    assert np.abs(ours.column("marker_error_RMS") - rms_os).max() < 1e-7
    assert np.abs(present_only - rms_os)[missing].min() > 1e-4
