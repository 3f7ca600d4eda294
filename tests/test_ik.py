"""Marker-based inverse kinematics (mbjax.analysis.ik) on arm26.

References: known poses (markers generated from them are recovered), and SciPy's bounded
trust-region least squares (``scipy.optimize.least_squares``, method ``trf``) solving the same weighted
objective frame by frame: an independent solver (and an independent bound treatment) for bounds,
weights, locks, coordinate tasks and missing markers.  Every IK call here has 3 markers and 24 frames,
so one compilation serves the whole file.  OpenSim's own IK tool is the reference in
tests/validation/test_ik_opensim.py.
"""

import os
import re
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import least_squares

import mbjax
from mbjax.analysis.ik import CoordinateTask, inverse_kinematics
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.io import MarkerData, load_markers, read_storage, read_trc, write_trc
from mbjax.models import arm26_path

sys.path.insert(0, os.path.dirname(__file__))

T = 24
SETUP = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "arm26_ik",
                     "arm26_Setup_InverseKinematics.xml")


@pytest.fixture(scope="module")
def arm():
    model = mbjax.models.arm26()
    markers = load_markers(arm26_path(), model)
    pos = jax.jit(jax.vmap(lambda q: mbjax.marker_positions(model, markers, q)))
    one = jax.jit(lambda q: mbjax.marker_positions(model, markers, q))
    jac = jax.jit(jax.jacfwd(lambda q: mbjax.marker_positions(model, markers, q)))
    return model, markers, pos, one, jac


def _motion(shoulder=(0.2, 0.9), elbow=(0.3, 1.8)):
    s = np.linspace(0.0, 1.0, T)
    return np.stack([shoulder[0] + (shoulder[1] - shoulder[0]) * s ** 2,
                     elbow[0] + (elbow[1] - elbow[0]) * np.sin(0.5 * np.pi * s)], axis=1)


def _scipy(arm, x, w, q_start, lo=None, hi=None, wc=(0.0, 0.0), qref=(0.0, 0.0), free=(True, True), q_fix=None):
    """Frame-by-frame reference: SciPy 'trf' on [√(w/Σw) (r(q) - x); √wc (q - qref)] over the free q."""
    one, jac = arm[3], arm[4]
    free = np.asarray(free)
    q_fix = np.zeros(2) if q_fix is None else np.asarray(q_fix, float)
    lo = np.full(2, -np.inf) if lo is None else np.asarray(lo, float)
    hi = np.full(2, np.inf) if hi is None else np.asarray(hi, float)
    out = []
    for k in range(x.shape[0]):
        ok = np.isfinite(x[k]).all(axis=1)
        wk = np.asarray(w, float)[ok]
        sw = np.sqrt(wk / wk.sum())[:, None]  # OpenSim's marker term: a weighted mean (Simbody's Markers goal)

        def full(z):
            q = q_fix.copy()
            q[free] = z
            return q

        def fun(z):
            q = full(z)
            qr = np.asarray(qref, float)
            qr = qr[k] if qr.ndim == 2 else qr
            return np.r_[(sw * (np.asarray(one(q))[ok] - x[k][ok])).ravel(), np.sqrt(wc) * (q - qr)]

        def jf(z):
            q = full(z)
            jm = (sw[:, :, None] * np.asarray(jac(q))[ok]).reshape(-1, 2)
            return np.r_[jm, np.diag(np.sqrt(np.broadcast_to(wc, 2)))][:, free]

        z0 = np.clip(np.asarray(q_start, float)[free], lo[free] + 1e-9, hi[free] - 1e-9)
        r = least_squares(fun, z0, jac=jf, bounds=(lo[free], hi[free]), method="trf", xtol=1e-15, ftol=1e-15,
                          gtol=1e-15)
        out.append(full(r.x))
        q_start = full(r.x)
    return np.asarray(out)


def test_recovers_known_poses_through_a_trc_file(arm, tmp_path):
    model, markers, pos = arm[:3]
    q = _motion()
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(q)), rate=120.0)
    write_trc(tmp_path / "m.trc", d, units="mm")
    r = inverse_kinematics(model, markers, read_trc(tmp_path / "m.trc"))
    assert r.converged.all() and r.marker_names == markers.names
    np.testing.assert_allclose(r.q, q, atol=1e-8)
    assert r.rms.max() < 1e-9 and r.max.max() < 1e-9 and r.marker_errors.shape == (T, 3)


def test_bounds_honoured(arm):
    model, markers, pos = arm[:3]
    q = _motion(elbow=(-0.4, 0.6))  # the elbow starts below its range [0, 2.269]
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(q)))
    free = inverse_kinematics(model, markers, d, bounds="clamped")  # arm26 clamps nothing (as OpenSim: free)
    np.testing.assert_allclose(free.q, q, atol=1e-8)
    r = inverse_kinematics(model, markers, d, bounds="all")
    info = model.osim
    lo, hi = np.asarray(info.lower), np.asarray(info.upper)
    assert (r.q >= lo).all() and (r.q <= hi).all() and r.converged.all()
    out = q[:, 1] < 0
    assert out.sum() > 3
    np.testing.assert_allclose(r.q[out, 1], 0.0, atol=1e-9)  # on the bound exactly
    ref = _scipy(arm, np.asarray(d.positions), np.ones(3), q[0], lo, hi)
    np.testing.assert_allclose(r.q, ref, atol=1e-7)
    assert r.rms[out].min() > 1e-4  # the bound costs marker error


def test_a_free_coordinate_far_outside_its_range_is_named(arm):
    model, markers, pos = arm[:3]
    q = _motion(elbow=(0.3, -2.9))  # the elbow (range [0, 2.269], not clamped) driven to -2.9 rad
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(q)))
    with pytest.warns(UserWarning, match=r"IK: coordinate\(s\) far outside their range.*r_elbow_flex reaches "
                      r"-2\.9.*range \[0, 2\.269\] \(first at t = 0\.1\d+ s\)") as rec:
        r = inverse_kinematics(model, markers, d)
    np.testing.assert_allclose(r.q, q, atol=1e-8)  # the markers were made there: the answer is right, and named
    assert not any("r_shoulder_elev" in str(w.message) for w in rec)
    first = np.argmax(q[:, 1] < -2.269)  # by the generating motion, independently of the solver
    assert f"t = {d.time[first]:.6g} s" in " ".join(str(w.message) for w in rec)
    import warnings as _w
    with _w.catch_warnings():
        _w.simplefilter("error")  # bounded: the solver keeps it in range, nothing to say
        inverse_kinematics(model, markers, d, bounds="all")


def test_weights_matter(arm):
    model, markers, pos = arm[:3]
    q = _motion()
    x = np.asarray(pos(q)) + np.array([[0.004, -0.003, 0.002], [-0.005, 0.006, 0.0], [0.003, 0.0, -0.007]])
    d = MarkerData(np.arange(T) / 120.0, markers.names, x)
    sols = []
    for w in ([1.0, 1.0, 1.0], [1.0, 10.0, 0.1]):
        r = inverse_kinematics(model, markers, d, dict(zip(markers.names, w)))
        np.testing.assert_allclose(r.q, _scipy(arm, x, w, q[0]), atol=1e-8)
        sols.append(r.q)
    assert np.abs(sols[0] - sols[1]).max() > 1e-3


def test_locked_coordinate_task_and_missing_markers(arm):
    model, markers, pos = arm[:3]
    q = _motion()
    x = np.asarray(pos(q)) + 0.003
    x[5:9, 2] = np.nan  # the wrist marker is lost for four frames
    d = MarkerData(np.arange(T) / 120.0, markers.names, x)
    r = inverse_kinematics(model, markers, d, locked={"r_shoulder_elev": 0.25},
                           coordinate_tasks={"r_elbow_flex": CoordinateTask(2e-4, "manual_value", 1.0)})
    assert (r.q[:, 0] == 0.25).all()
    np.testing.assert_array_equal(np.isnan(r.marker_errors), np.isnan(x).any(axis=2))
    ref = _scipy(arm, x, np.ones(3), [0.25, 0.0], wc=np.array([0.0, 2e-4]), qref=np.array([0.0, 1.0]),
                 free=(False, True), q_fix=[0.25, 0.0])
    np.testing.assert_allclose(r.q, ref, atol=1e-8)
    # OpenSim's IK tool divides by the markers in use (3), the missing wrist adding nothing
    rms = np.sqrt(np.nansum(r.marker_errors ** 2, axis=1) / 3)
    np.testing.assert_allclose(r.rms, rms, rtol=1e-12)
    np.testing.assert_allclose(r.max, np.nanmax(r.marker_errors, axis=1), rtol=1e-12)
    # the task pulls the elbow towards 1.0 rad: without it the solution differs
    with pytest.warns(UserWarning, match="do not determine 'r_elbow_flex'"):  # the wrist's lost frames
        plain = inverse_kinematics(model, markers, d, locked={"r_shoulder_elev": 0.25})
    assert np.all(np.abs(r.q[:, 1] - 1.0) <= np.abs(plain.q[:, 1] - 1.0) + 1e-12)


def test_frames_whose_markers_leave_a_coordinate_free_are_not_converged(arm):
    """Without the wrist marker (frames 5-8) nothing fixes the elbow: the marker Jacobian's elbow
    column is zero there (jacfwd), and those frames, only those, are reported as not converged."""
    model, markers, pos, _, jac = arm
    q = _motion()
    x = np.asarray(pos(q)) + 0.003
    x[5:9, 2] = np.nan
    j = np.asarray(jac(jnp.asarray(q[6])))  # (markers, 3, nq)
    assert np.abs(j[:2, :, 1]).max() == 0.0 and np.abs(j[2, :, 1]).max() > 0.01
    d = MarkerData(np.arange(T) / 120.0, markers.names, x)
    with pytest.warns(UserWarning, match=r"at 4 of 24 frame\(s\) \(first at t = 0.0416667 s\).*'r_elbow_flex'"):
        r = inverse_kinematics(model, markers, d)
    expected = np.ones(T, bool)
    expected[5:9] = False
    np.testing.assert_array_equal(r.converged, expected)


def test_a_coordinate_no_task_determines_is_named_and_held(arm):
    """Only the shoulder's markers weighted: the elbow is determined in no frame (the setup's choice,
    as in OpenSim): named in a warning, held at the default pose, every frame converged."""
    model, markers, pos = arm[:3]
    q = _motion()
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(q)))
    weights = {"r_acromion": 1.0, "r_humerus_epicondyle": 1.0, "r_radius_styloid": 0.0}
    with pytest.warns(UserWarning, match=r"no marker or coordinate task determines 'r_elbow_flex' in any frame"):
        r = inverse_kinematics(model, markers, d, weights=weights)
    assert r.converged.all()
    np.testing.assert_array_equal(r.q[:, 1], np.asarray(model.osim.default)[1])
    np.testing.assert_allclose(r.q[:, 0], q[:, 0], atol=1e-7)


@pytest.mark.parametrize("written, read, looks", [("mm", "m", "mm"), ("m", "mm", "m"), ("cm", "mm", "cm")])
def test_marker_units_that_do_not_match_the_values_are_refused(arm, tmp_path, written, read, looks):
    """A .trc whose Units header does not say what its numbers are (mm data under ``Units m``: the
    pose cannot stretch the model, so IK alone returns a pose with a huge error) is refused, naming
    the unit the values look like; the right header passes."""
    model, markers, pos = arm[:3]
    x = np.asarray(pos(_motion()))
    scale = {"mm": 1e3, "cm": 1e2, "m": 1.0}[written]
    path = tmp_path / "arm.trc"
    write_trc(path, MarkerData(np.arange(T) / 120.0, markers.names, x), units=written)
    text = path.read_text().replace(f"\t{written}\t", f"\t{read}\t", 1)
    path.write_text(text)
    d = read_trc(path)
    assert d.units == read and np.allclose(d.positions * {"mm": 1e3, "cm": 1e2, "m": 1.0}[read], x * scale)
    with pytest.raises(ValueError, match=rf"Units='{read}'.*look like '{looks}'"):
        inverse_kinematics(model, markers, d)
    ok = inverse_kinematics(model, markers, MarkerData(d.time, d.names, x, written))  # the values in metres
    assert ok.converged.all()


def _elbow_reference(t):
    return 1.2 - 3.0 * t + 40.0 * t ** 2  # radians


def test_coordinate_task_from_file(arm):
    """``from_file`` tasks track a coordinate table (degrees in the file) sampled at half the marker
    rate.  OpenSim's reference is the natural quintic spline through the rows, which is the
    quadratic itself when the rows lie on one (its 3rd and 4th derivatives are 0), so the reference at
    the frames between the rows is known exactly; straight lines between the rows miss it by 2.8e-3 rad."""
    model, markers, pos = arm[:3]
    q = _motion()
    x = np.asarray(pos(q)) + 0.003
    t = np.arange(T) / 120.0
    d = MarkerData(t, markers.names, x)
    ref_t = np.arange(0, T + 1, 2) / 120.0  # every other frame: the odd frames lie between the rows
    ref = np.stack([0.5 + 0.0 * ref_t, _elbow_reference(ref_t)], axis=1)
    table = mbjax.io.Table(ref_t, ("r_shoulder_elev", "r_elbow_flex"), np.rad2deg(ref), True)
    r = inverse_kinematics(model, markers, d, coordinate_tasks={"r_elbow_flex": CoordinateTask(1e-3, "from_file")},
                           coordinate_data=table)
    qref = np.stack([0.5 + 0.0 * t, _elbow_reference(t)], axis=1)
    expected = _scipy(arm, x, np.ones(3), q[0], wc=np.array([0.0, 1e-3]), qref=qref)
    np.testing.assert_allclose(r.q, expected, atol=1e-8)
    lines = _scipy(arm, x[1:2], np.ones(3), q[1], wc=np.array([0.0, 1e-3]),
                   qref=np.interp(t[1:2], ref_t, ref[:, 1]) * np.array([0.0, 1.0]))
    assert np.abs(lines[0, 1] - expected[1, 1]) > 1e-6  # the test tells the two apart


def test_from_file_reference_needs_six_rows_and_finite_values(arm):
    """OpenSim's GCVSplineSet of degree 5 needs 6 rows (its IK tool fails with fewer); a NaN in
    the tracked column would spread over the spline: both refused naming the file and coordinate."""
    model, markers, pos = arm[:3]
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(_motion())))
    task = {"r_elbow_flex": CoordinateTask(1.0, "from_file")}
    ref_t = np.arange(5) / 20.0
    table = mbjax.io.Table(ref_t, ("r_elbow_flex",), np.rad2deg(_elbow_reference(ref_t))[:, None], True,
                           {"source_file": "ref.mot"})
    with pytest.raises(ValueError, match=r"coordinate task 'r_elbow_flex': the coordinates file ref\.mot has 5 "
                                         r"row\(s\); OpenSim .* quintic spline .* needs 6 rows or more"):
        inverse_kinematics(model, markers, d, coordinate_tasks=task, coordinate_data=table)
    ref_t = np.arange(8) / 40.0
    y = np.rad2deg(_elbow_reference(ref_t))
    y[3] = np.nan
    table = mbjax.io.Table(ref_t, ("r_elbow_flex",), y[:, None], True, {"source_file": "ref.mot"})
    with pytest.warns(UserWarning, match="read as NaN"), \
            pytest.raises(ValueError, match=r"ref\.mot: column 'r_elbow_flex' holds NaN or inf at row 4 \(time 0\.075 s\)"):
        inverse_kinematics(model, markers, d, coordinate_tasks=task, coordinate_data=table)


def test_setup_reads_the_coordinate_file_in_degrees_whatever_its_header(arm, tmp_path, monkeypatch):
    """OpenSim's InverseKinematicsTool converts the coordinate file's rotational columns from degrees
    without looking at ``inDegrees`` (``SimbodyEngine::convertDegreesToRadians``): a file marked
    ``inDegrees=no`` reaches the solver as degrees, with a warning naming it; one marked yes, silently."""
    model, markers = arm[:2]
    seen = []
    monkeypatch.setattr(mbjax.opensim.tools.ik, "inverse_kinematics",
                        lambda *a, coordinate_data=None, **k: seen.append(coordinate_data))
    task = ('<IKCoordinateTask name="r_elbow_flex"><apply>true</apply><weight>1</weight>'
            '<value_type>from_file</value_type></IKCoordinateTask>')
    rows = "".join(f"{v / 100:.2f}\t{20 + v:.1f}\n" for v in range(8))
    for flag in ("yes", "no"):
        (tmp_path / f"ref_{flag}.mot").write_text(f"ref\nversion=1\nnRows=8\nnColumns=2\ninDegrees={flag}\n"
                                                   f"endheader\ntime\tr_elbow_flex\n{rows}")
        text = _setup_with_output(tmp_path, "ik.mot").read_text()
        text = text.replace("</objects>", task + "</objects>").replace(
            "<coordinate_file> Unassigned </coordinate_file>", f"<coordinate_file>ref_{flag}.mot</coordinate_file>")
        (tmp_path / f"setup_{flag}.xml").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mbjax.opensim.inverse_kinematics_from_setup(tmp_path / "setup_yes.xml", model, markers)
    with pytest.warns(UserWarning, match=r"setup_no\.xml: <coordinate_file> .*ref_no\.mot is not marked inDegrees=yes, "
                                         r"but OpenSim's InverseKinematicsTool converts"):
        mbjax.opensim.inverse_kinematics_from_setup(tmp_path / "setup_no.xml", model, markers)
    assert seen[0].in_degrees and seen[1].in_degrees
    np.testing.assert_array_equal(seen[0].data, seen[1].data)


@pytest.mark.extended
def test_vmap_method(arm):
    """Every frame in parallel from its own start (a second compilation: extended group)."""
    model, markers, pos = arm[:3]
    q = _motion()
    d = MarkerData(np.arange(T) / 120.0, markers.names, np.asarray(pos(q)) + 0.002)
    scan = inverse_kinematics(model, markers, d)
    par = inverse_kinematics(model, markers, d, method="vmap", q0=q + 0.05)
    assert par.converged.all()
    np.testing.assert_allclose(par.q, scan.q, atol=1e-8)


def test_chunks_and_progress(arm, capsys):
    model, markers, pos = arm[:3]
    q = _motion()
    x = np.asarray(pos(q)) + 0.002
    d = MarkerData(np.arange(T) / 120.0, markers.names, x)
    scan = inverse_kinematics(model, markers, d)
    # two chunks of 24 frames: the same compiled chunk, one progress line each
    d2 = MarkerData(np.arange(2 * T) / 120.0, markers.names, np.concatenate([x, x[::-1]]))
    r2 = inverse_kinematics(model, markers, d2, chunk=T, progress=True)
    np.testing.assert_allclose(r2.q[:T], scan.q, atol=1e-8)
    np.testing.assert_allclose(r2.q[T:], scan.q[::-1], atol=1e-8)
    lines = [s for s in capsys.readouterr().out.splitlines() if s.startswith("IK:")]
    assert len(lines) == 2 and lines[1].startswith(f"IK: {2 * T}/{2 * T} frames")


def test_frames_the_tracking_solver_misses_are_solved_by_the_fallback(arm, monkeypatch):
    """Frames 0, 5, 6 and the last are made to fail the tracking solver: each is solved again by the
    optimistix fallback (its own program) from its own start, the frames after it go on from that
    solution, and every frame ends at the minimum the undisturbed run finds (independent: the
    same problem without failures, and the known poses the markers come from)."""
    from mbjax.analysis.ik import frame_solver

    model, markers, pos = arm[:3]
    q = _motion()
    x = np.asarray(pos(q))
    d = MarkerData(np.arange(T) / 120.0, markers.names, x)
    plain = inverse_kinematics(model, markers, d)
    bad = jnp.asarray(x[[0, 5, 6, T - 1]].sum(axis=(1, 2)))  # a number of each frame's markers
    tracking, fallback = frame_solver._solve_tracking, frame_solver._solve_fallback
    calls = []

    def failing(spec, fx, u0, xk, wk, qref, curv):
        u, ok, steps, curv = tracking(spec, fx, u0, xk, wk, qref, curv)
        return u, ok & ~jnp.any(jnp.abs(jnp.sum(xk) - bad) < 1e-12), steps, curv

    def counted(*args):
        calls.append(1)
        return fallback(*args)

    monkeypatch.setattr(frame_solver, "_solve_tracking", failing)
    monkeypatch.setattr(frame_solver, "_solve_fallback", counted)
    r = inverse_kinematics(model, markers, d, chunk=T - 1)  # a chunk size of its own: traced with the patch
    assert len(calls) == 4 and r.converged.all()
    np.testing.assert_allclose(r.q, plain.q, atol=1e-8)
    np.testing.assert_allclose(r.q, q, atol=1e-8)


def test_ik_setup_reader(tmp_path):
    s = read_ik_setup(SETUP)
    assert s.marker_weights == {"r_acromion": 1.0, "r_humerus_epicondyle": 1.0, "r_radius_styloid": 1.0}
    assert s.accuracy == 1e-5 and s.time_range == (0.0, 1.0) and s.constraint_weight == np.inf
    assert s.marker_file.endswith("arm26_elbow_flex.trc") and os.path.isabs(s.marker_file)
    assert s.coordinate_file is None and s.coordinate_tasks == {}
    p = tmp_path / "setup.xml"
    p.write_text("""<OpenSimDocument Version="40000"><InverseKinematicsTool name="t">
      <IKTaskSet><objects>
        <IKMarkerTask name="a"><apply>true</apply><weight>20</weight></IKMarkerTask>
        <IKMarkerTask name="b"><apply>false</apply><weight>5</weight></IKMarkerTask>
        <IKCoordinateTask name="c"><apply>true</apply><weight>3</weight><value_type>manual_value</value_type>
          <value>0.5</value></IKCoordinateTask>
        <IKCoordinateTask name="d"><weight>1</weight><value_type>default_value</value_type></IKCoordinateTask>
      </objects></IKTaskSet><marker_file>m.trc</marker_file><time_range>0.1 0.2</time_range>
    </InverseKinematicsTool></OpenSimDocument>""")
    s = read_ik_setup(p)
    assert s.marker_weights == {"a": 20.0} and s.time_range == (0.1, 0.2)
    assert s.coordinate_tasks == {"c": CoordinateTask(3.0, "manual_value", 0.5), "d": CoordinateTask(1.0)}
    assert s.marker_file == str(tmp_path / "m.trc")


def test_setup_accuracy_is_the_solver_tolerance(arm, tmp_path):
    """``inverse_kinematics_from_setup`` solves to the file's ``<accuracy>`` (1e-5 in the tutorial):
    fewer steps than at 1e-9, coordinates within that accuracy of the tight solution, whose own
    optimality is checked by a Newton step with autodiff's Hessian; explicit rtol/atol win."""
    model, markers = arm[:2]
    text = open(SETUP).read().replace("arm26_elbow_flex.trc", os.path.join(os.path.dirname(SETUP),
                                                                           "arm26_elbow_flex.trc"))
    text = re.sub(r"<time_range>.*?</time_range>", "<time_range> 0 0.19 </time_range>", text)  # 24 frames
    setup = tmp_path / "setup.xml"
    setup.write_text(text)
    assert read_ik_setup(setup).accuracy == 1e-5
    loose = mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, progress=False)
    tight = mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, progress=False,
                                                        accuracy=1e-12)  # -> 1e-9
    same = mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, progress=False, rtol=1e-9, atol=1e-9)
    assert loose.q.shape == (T, 2) and loose.converged.all() and tight.converged.all()
    np.testing.assert_array_equal(same.q, tight.q)
    assert loose.steps.sum() < tight.steps.sum()
    assert 0 < np.abs(loose.q - tight.q).max() < 1e-5
    x = read_trc(read_ik_setup(setup).marker_file).positions[:T]

    def obj(q, xk):
        return 0.5 * jnp.sum((mbjax.marker_positions(model, markers, q) - xk) ** 2)

    g = np.asarray(jax.vmap(jax.grad(obj))(tight.q, x))
    h = np.asarray(jax.vmap(jax.hessian(obj))(tight.q, x))
    assert np.abs(np.linalg.solve(h, g[..., None])).max() < 1e-8
    with pytest.raises(ValueError, match="accuracy must be a positive"):
        mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, accuracy=0.0)


def test_bad_inputs(arm):
    model, markers = arm[:2]
    d = MarkerData(np.zeros(1), ("x", "y"), np.zeros((1, 2, 3)))
    with pytest.raises(ValueError, match="no marker is in both"):
        inverse_kinematics(model, markers, d)
    d = MarkerData(np.zeros(1), markers.names, np.zeros((1, 3, 3)))
    with pytest.raises(ValueError, match="finite and >= 0"):
        inverse_kinematics(model, markers, d, {"r_acromion": -1.0})
    with pytest.raises(ValueError, match="not a coordinate"):
        inverse_kinematics(model, markers, d, locked=["knee"])
    with pytest.raises(ValueError, match="no such coordinate"):
        inverse_kinematics(model, markers, d, coordinate_tasks={"knee": 1.0})
    with pytest.raises(ValueError, match="method"):
        inverse_kinematics(model, markers, d, method="newton")


def test_markers_module_is_differentiable(arm):
    """Marker offsets are array leaves: d(position)/d(offset) is the body rotation (finite differences)."""
    model, markers = arm[:2]
    q = jnp.array([0.4, 1.1])
    f = lambda off: mbjax.marker_positions(model, mbjax.Markers(markers.names, markers.body, off), q)  # noqa: E731
    jac = jax.jit(jax.jacfwd(f))(markers.offset)
    poses = jax.jit(mbjax.body_poses)(model, q)
    for m, b in enumerate(markers.body):
        np.testing.assert_allclose(jac[m, :, m, :], poses[b, :3, :3], atol=1e-14)
    eps = 1e-6
    off = markers.offset.at[2, 1].add(eps)
    fd = (jax.jit(f)(off) - jax.jit(f)(markers.offset)) / eps
    np.testing.assert_allclose(fd[2], poses[markers.body[2], :3, 1], atol=1e-8)


def test_readme_example(monkeypatch, tmp_path):
    """The IK example of docs/how-to/opensim-models-and-pipelines.md runs (24 frames, 3 markers: the compilation above is reused)."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[1] / "docs" / "how-to" / "opensim-models-and-pipelines.md").read_text()
    code = re.search(r"## OpenSim data files and inverse kinematics\n.*?```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(code, "opensim-models-and-pipelines.md", "exec"), ns)
    np.testing.assert_allclose(ns["ik"].q, ns["q_true"], atol=1e-8)
    assert (tmp_path / "elbow_ik.mot").exists()


@pytest.mark.extended
def test_float32_runs(arm):
    """IK in float32 (JAX's default; a subprocess without x64) runs, converges and recovers poses to 1e-5."""
    import json
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import json, jax, numpy as np, mbjax
        from mbjax.io import MarkerData, load_markers
        assert not jax.config.jax_enable_x64
        model = mbjax.models.arm26()
        markers = load_markers(mbjax.models.arm26_path(), model)
        t = np.arange(10) / 120.0
        q = np.stack([0.2 + 2 * t, 0.3 + 6 * t], 1)
        x = np.asarray(jax.jit(jax.vmap(lambda qq: mbjax.marker_positions(model, markers, qq)))(q), float)
        r = mbjax.inverse_kinematics(model, markers, MarkerData(t, markers.names, x))
        print(json.dumps(dict(err=float(np.abs(r.q - q).max()), ok=bool(r.converged.all()))))
        """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["ok"] and got["err"] < 1e-5


def test_closed_form_marker_jacobian_equals_jacfwd():
    """The IK solvers' closed-form marker Jacobian against forward-mode autodiff, on a random tree
    with revolute and prismatic joints, coupled (affine) joint maps and a marker on ground; the nonlinear
    coupled maps of Gait2354 are covered by tests/validation/test_ik_opensim.py."""
    from _trees import random_tree

    from mbjax.markers import Markers, marker_positions_and_jacobian

    model = random_tree(seed=3, n_bodies=4, n_coordinates=3, nonlinear=False)  # prismatic, revolute, coupled maps
    rng = np.random.default_rng(0)
    mk = Markers([f"m{k}" for k in range(5)], [-1, 0, 1, 2, 3], rng.normal(size=(5, 3)) * 0.2)

    def both(q):
        ref = lambda z: mbjax.marker_positions(model, mk, z)  # noqa: E731
        return marker_positions_and_jacobian(model, mk, q), (ref(q), jax.jacfwd(ref)(q))

    (pos, jac), (pos_ref, jac_ref) = jax.jit(jax.vmap(both))(jnp.asarray(rng.uniform(-1.0, 1.0, size=(3, 3))))
    np.testing.assert_allclose(pos, pos_ref, atol=1e-14)
    np.testing.assert_allclose(jac, jac_ref, atol=1e-12)


# --------------------------------------------------------------------------------------------
# the IK motion file: every coordinate, OpenSim's order; output folders
# --------------------------------------------------------------------------------------------


def test_ik_motion_has_every_coordinate_in_opensims_order(tmp_path):
    """Locked at its locked value, coupled ones from their (linear) couplers, rotations in degrees,
    in OpenSim's CoordinateSet order: all values computed by hand in tests/_ik_models.py."""
    from _ik_models import COLUMNS, expected_columns, write_model

    from mbjax.analysis.ik import IKResult
    from mbjax.opensim.tools.ik import write_ik_motion
    from mbjax.io import coordinates_from_table, load_osim, read_storage

    model = load_osim(write_model(tmp_path))
    assert model.coordinate_names == ("flex",)
    flex = np.array([0.4, -0.7, 1.1])
    res = IKResult(np.array([0.0, 0.01, 0.02]), flex[:, None], ("flex",), (), np.zeros((3, 0)), *np.zeros((2, 3)),
                   np.ones(3, bool), np.zeros(3, int))
    write_ik_motion(tmp_path / "ik.mot", model, res)
    t = read_storage(tmp_path / "ik.mot")
    assert t.labels == COLUMNS and t.in_degrees and t.metadata["name"] == "Coordinates"
    assert t.metadata["version"] == "1" and t.metadata["nColumns"] == "5"
    np.testing.assert_allclose(t.data, expected_columns(flex), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(coordinates_from_table(model, t), flex[:, None], rtol=1e-14)


OPENSIM_MODELS = os.environ.get("OPENSIM_MODELS_DIR", "")
LEG39 = os.path.join(OPENSIM_MODELS, "Models", "Leg39", "leg39.osim")
#: Leg39's rotational coordinates (CustomJoint axes with slope-1 LinearFunctions; checked against
#: OpenSim in tests/validation/test_ik_opensim.py)
LEG39_ROTATIONAL = {"pelvis_tilt", "hip_angle_r", "knee_angle_r", "pat_angle_r", "ankle_angle_r", "subtalar_angle_r",
                    "mtp_angle_r"}


@pytest.mark.skipif(not (OPENSIM_MODELS and os.path.exists(LEG39)),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_leg39_ik_motion_has_every_coordinate(tmp_path):
    """Leg39 (6 of its 14 coordinates in q): the file has all 14 in the model file's order, locked ones
    at their <default_value>, each coupled one equal to its SimmSpline's knot value when knee_angle_r
    is at that knot (a spline interpolates its knots), read from the XML here."""
    import warnings
    import xml.etree.ElementTree as ET

    from mbjax.analysis.ik import IKResult
    from mbjax.opensim.tools.ik import write_ik_motion
    from mbjax.io import load_osim, read_storage

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(LEG39)
    root = ET.parse(LEG39).getroot()
    names = tuple(c.get("name") for c in root.iter("Coordinate"))
    assert len(names) == 14 and len(model.coordinate_names) == 6
    couplers = []
    for con in root.iter("CoordinateCouplerConstraint"):
        spline = con.find("coupled_coordinates_function/SimmSpline")
        x, y = (np.array(spline.findtext(k).split(), float) for k in ("x", "y"))
        assert con.findtext("independent_coordinate_names").strip() == "knee_angle_r"
        couplers.append((con.findtext("dependent_coordinate_name").strip(), x[len(x) // 2], y[len(x) // 2]))
    assert len(couplers) == 5
    rng = np.random.default_rng(3)
    q = rng.uniform(-0.3, 0.3, size=(len(couplers), 6))
    q[:, model.coordinate_names.index("knee_angle_r")] = [k for _, k, _ in couplers]
    n = len(couplers)
    res = IKResult(np.arange(n) * 0.01, q, model.coordinate_names, (), np.zeros((n, 0)), *np.zeros((2, n)),
                   np.ones(n, bool), np.zeros(n, int))
    write_ik_motion(tmp_path / "ik.mot", model, res)
    t = read_storage(tmp_path / "ik.mot")
    assert t.labels == names and t.in_degrees
    deg = lambda n, v: np.rad2deg(v) if n in LEG39_ROTATIONAL else v  # noqa: E731
    for i, c in enumerate(model.coordinate_names):
        np.testing.assert_allclose(t.column(c), deg(c, q[:, i]), rtol=1e-14)
    for c in root.iter("Coordinate"):
        if (c.findtext("locked") or "").strip() == "true":
            name = c.get("name")
            np.testing.assert_array_equal(t.column(name), deg(name, float(c.findtext("default_value"))))
    for k, (dep, _, value) in enumerate(couplers):
        np.testing.assert_allclose(t.column(dep)[k], deg(dep, value), rtol=1e-12, atol=1e-15)


def _setup_with_output(tmp_path, out):
    text = open(SETUP).read().replace("arm26_elbow_flex.trc", os.path.join(os.path.dirname(SETUP),
                                                                           "arm26_elbow_flex.trc"))
    text = re.sub(r"<time_range>.*?</time_range>", "<time_range> 0 0.19 </time_range>", text)  # 24 frames
    text = re.sub(r"<output_motion_file>.*?</output_motion_file>", f"<output_motion_file>{out}</output_motion_file>",
                  text)
    setup = tmp_path / "setup.xml"
    setup.write_text(text)
    return setup


def test_setup_writes_motion_into_a_new_folder(arm, tmp_path):
    """The output folder is made (relative to the setup file, as OpenSim resolves it); the file is the
    IK tool's (Storage, degrees)."""
    model, markers = arm[:2]
    setup = _setup_with_output(tmp_path, "results/new/ik.mot")
    r = mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, progress=False, write=True)
    t = read_storage(tmp_path / "results" / "new" / "ik.mot")
    assert t.labels == ("r_shoulder_elev", "r_elbow_flex") and t.in_degrees
    np.testing.assert_allclose(t.data, np.rad2deg(r.q), rtol=1e-15)
    other = tmp_path / "elsewhere" / "x.mot"
    mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, progress=False, output_motion_file=other)
    np.testing.assert_array_equal(read_storage(other).data, t.data)


def test_bad_output_path_fails_before_solving(arm, tmp_path, monkeypatch):
    model, markers = arm[:2]
    monkeypatch.setattr(mbjax.opensim.tools.ik, "inverse_kinematics", lambda *a, **k: pytest.fail("solved before the check"))
    (tmp_path / "file").write_text("")
    setup = _setup_with_output(tmp_path, "file/ik.mot")
    with pytest.raises(OSError, match=r"setup\.xml: cannot create the folder .*file.* for the IK output motion file"):
        mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, write=True)
    (tmp_path / "dir.mot").mkdir()
    setup = _setup_with_output(tmp_path, "dir.mot")
    with pytest.raises(OSError, match=r"setup\.xml: the IK output motion file .*dir\.mot' is a folder"):
        mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, write=True)
    setup = _setup_with_output(tmp_path, "")
    with pytest.raises(ValueError, match=r"setup\.xml: no <output_motion_file>"):
        mbjax.opensim.inverse_kinematics_from_setup(setup, model, markers, write=True)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_a_heavy_coordinate_task_leaves_the_marker_determined_coordinates_determined(dtype):
    """A weight-1000 coordinate task once set the null-space cut-off (100 eps of the largest
    eigenvalue): in float32 every marker-determined coordinate was called undetermined. The rank
    test is on the markers' normal matrix of the untasked coordinates; a zero marker column (a
    coordinate no marker moves) is still found, and its own task determines it."""
    from mbjax.analysis.ik.frame_solver import _Fixed
    from mbjax.analysis.ik import undetermined_coordinates
    rng = np.random.default_rng(0)
    nq = 4
    jac = 0.03 * rng.standard_normal((3, 3, nq))  # three markers, lever arms of a few cm
    jac[:, :, 3] = 0.0  # the last coordinate moves no marker
    assert np.linalg.matrix_rank(jac.reshape(-1, nq)[:, :3]) == 3  # the markers determine 0-2

    def loose(wc):
        z = jnp.zeros(nq, dtype)
        fx = _Fixed(None, None, jnp.ones(nq, dtype), z, z, z, z, jnp.asarray(wc, dtype))
        return np.asarray(undetermined_coordinates(fx, jnp.asarray(jac, dtype), jnp.ones(3, dtype)))

    np.testing.assert_array_equal(loose([1000.0, 0, 0, 0]), [False, False, False, True])
    np.testing.assert_array_equal(loose([0, 0, 0, 1e-3]), [False, False, False, False])
    np.testing.assert_array_equal(loose([0, 0, 0, 0]), [False, False, False, True])
