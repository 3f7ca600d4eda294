"""Inverse kinematics refuses bad arguments, marker data and setup files by name, and never reports
a frame converged that is not a minimum."""

import os
import re
import shutil
import warnings

import jax
import numpy as np
import pytest

import mbjax
from mbjax.analysis.ik import frame_solver as ik
from mbjax.analysis.ik import CoordinateTask, inverse_kinematics
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.io import MarkerData, load_markers
from mbjax.models import arm26_path

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "arm26_ik")
SETUP = os.path.join(DATA, "arm26_Setup_InverseKinematics.xml")
with warnings.catch_warnings():  # wrapping left out, as asked
    warnings.simplefilter("ignore")
    ARM = mbjax.io.load_osim(arm26_path(), ignore_wrapping=True)
MARKERS = load_markers(arm26_path(), ARM)
T = 6


def _data():
    q = np.stack([np.linspace(0.2, 0.5, T), np.linspace(0.3, 1.2, T)], axis=1)
    x = np.asarray(jax.vmap(lambda qq: mbjax.marker_positions(ARM, MARKERS, qq))(q))
    return MarkerData(np.arange(T) / 100.0, tuple(MARKERS.names), x), q


def _setup(tmp_path, old, new):
    """The shipped arm26 IK setup (and its marker file) in ``tmp_path`` with ``old`` replaced by ``new``."""
    shutil.copy(os.path.join(DATA, "arm26_elbow_flex.trc"), tmp_path)
    text = open(SETUP).read()
    assert re.search(old, text)
    path = tmp_path / "setup.xml"
    path.write_text(re.sub(old, new, text, count=1))
    return path


@pytest.mark.parametrize("kw, msg", [
    (dict(atol=-1.0), r"atol must be a finite number >= 0, got -1.0"),
    (dict(rtol=-1.0), r"rtol must be a finite number >= 0, got -1.0"),
    (dict(rtol=float("nan")), r"rtol must be a finite number >= 0, got nan"),
    (dict(atol=-1.0, method="vmap"), r"atol must be"),
    (dict(rtol=0.0, atol=0.0), r"rtol and atol are both 0"),
    (dict(chunk=0), r"chunk .* must be a positive integer, got 0"),
    (dict(chunk=-3), r"chunk .* must be a positive integer, got -3"),
    (dict(max_steps=0), r"max_steps must be a positive integer, got 0"),
])
def test_solver_settings_refused_by_name(kw, msg):
    data, _ = _data()
    with pytest.raises(ValueError, match=msg):
        inverse_kinematics(ARM, MARKERS, data, **kw)


def test_a_frame_that_is_not_a_minimum_is_not_converged():
    """The convergence report checks the solution itself: a Gauss-Newton step from the true pose is
    within the tolerance, one from the default pose is not."""
    data, q = _data()
    fx = ik._Fixed(ARM.replace(muscles=None, forces=None, path_functions=None, osim=None), MARKERS, *(np.asarray(a, float) for a in (
        [1, 1], [0, 0], [0, 0], [-1, -1], [1, 1], [0, 0])))
    spec = ik._Spec("scan", 1e-9, 1e-9, 200)
    w = np.full(3, 1 / 3)
    for qk, expect in ((q[0], True), (np.zeros(2), False)):
        pos, jac = mbjax.markers.marker_positions_and_jacobian(ARM, MARKERS, qk)
        still = ik._stationary(spec, fx, qk, qk, pos, jac, data.positions[0], w, np.zeros(2), np.zeros(2, bool))
        assert bool(still) is expect


@pytest.mark.parametrize("change, msg", [
    (lambda d: d._replace(positions=d.positions[:, :, 0]), r"positions must have shape \(T, n_markers, 3\).*got \(6, 3\)"),
    (lambda d: d._replace(positions=d.positions[:, :, :2]), r"positions must have shape \(T, n_markers, 3\).*got \(6, 3, 2\)"),
    (lambda d: d._replace(time=d.time[:4]), r"positions hold 6 frames .* but time holds 4"),
    (lambda d: d._replace(names=d.names[:2]), r"positions hold 3 markers .* but names holds 2"),
    (lambda d: d._replace(names=(d.names[0], d.names[0], d.names[2])), r"names 'r_acromion' more than once"),
    (lambda d: d._replace(time=d.time[:0], positions=d.positions[:0]), r"marker data has no frames"),
])
def test_malformed_marker_data_refused_by_field(change, msg):
    data, _ = _data()
    with pytest.raises(ValueError, match=msg):
        inverse_kinematics(ARM, MARKERS, change(data))


@pytest.mark.parametrize("kw, msg", [
    (dict(q0=np.zeros(5)), r"q0 must have shape \(2,\) for coordinates .*got \(5,\)"),
    (dict(q0=np.array([np.nan, 0.0])), r"q0 holds NaN or inf for 'r_shoulder_elev'"),
    (dict(locked={"r_elbow_flex": float("nan")}), r"locked coordinate 'r_elbow_flex': value must be finite"),
    (dict(locked={"r_elbow_flex": "bent"}), r"locked coordinate 'r_elbow_flex': value must be a number"),
    (dict(weights={"r_acromion": "heavy"}), r"IK marker task 'r_acromion': weight must be a number, got 'heavy'"),
    (dict(weights={"foo": 1}), r"no weighted marker is in both .*'foo' \(not in the model or the marker data\)"),
    (dict(coordinate_tasks={"r_elbow_flex": "heavy"}), r"coordinate task 'r_elbow_flex': weight must be a number"),
    (dict(coordinate_tasks={"r_elbow_flex": CoordinateTask("x")}), r"coordinate task 'r_elbow_flex': weight must be"),
    (dict(coordinate_tasks={"r_elbow_flex": CoordinateTask(1.0, "manual_value", float("nan"))}),
     r"coordinate task 'r_elbow_flex': manual_value must be finite"),
])
def test_bad_starts_locks_and_weights_refused_by_name(kw, msg):
    data, _ = _data()
    with pytest.raises(ValueError, match=msg):
        inverse_kinematics(ARM, MARKERS, data, **kw)


def test_weighted_marker_empty_in_every_frame_is_named():
    data, q = _data()
    x = np.array(data.positions)
    x[:, 0] = np.nan  # r_acromion never present
    with pytest.warns(UserWarning, match=r"marker\(s\) 'r_acromion' have weight > 0 but no data in any frame"):
        inverse_kinematics(ARM, MARKERS, data._replace(positions=x), {n: 1.0 for n in MARKERS.names})


@pytest.mark.parametrize("old, new, msg", [
    (r"<time_range>[^<]*</time_range>", "<time_range>0.5 abc</time_range>",
     r"setup.xml:\d+: <time_range>: <time_range> must hold two numbers, got '0.5 abc'"),
    (r"<time_range>[^<]*</time_range>", "<time_range>0.55 0.5</time_range>",
     r"setup.xml:\d+: <time_range>: <time_range> is reversed: its start 0.55 is after its end 0.5"),
    (r"<weight>[^<]*</weight>", "<weight>heavy</weight>",
     r"setup.xml:\d+: <IKMarkerTask name='r_acromion'>: <weight> must be a number, got 'heavy'"),
    (r"<weight>[^<]*</weight>", "<weight>nan</weight>",
     r"setup.xml:\d+: <IKMarkerTask name='r_acromion'>: <weight> must be a finite number >= 0, got 'nan'"),
    (r"<IKMarkerTask name=\"r_acromion\">", "<IKCoordinateTask><weight>1</weight></IKCoordinateTask><IKMarkerTask "
     "name=\"r_acromion\">", r"setup.xml:\d+: <IKCoordinateTask>: an <IKCoordinateTask> without a name"),
])
def test_setup_values_refused_naming_file_line_and_element(tmp_path, old, new, msg):
    with pytest.raises(ValueError, match=msg):
        read_ik_setup(_setup(tmp_path, old, new))


def test_setup_marker_task_without_name_is_named(tmp_path):
    path = _setup(tmp_path, r"<IKMarkerTask name=\"r_acromion\">", "<IKMarkerTask>")
    with pytest.warns(UserWarning, match=r"setup.xml:\d+: <IKMarkerTask>: an <IKMarkerTask> without a name tracks no "
                                         r"marker; ignored"):
        s = read_ik_setup(path)
    assert set(s.marker_weights) == {"r_humerus_epicondyle", "r_radius_styloid"}


@pytest.mark.parametrize("tag", ["marker_file", "coordinate_file"])
def test_setup_missing_data_file_named_before_the_model_is_loaded(tmp_path, tag):
    """The setup's model (arm26.osim, not beside the copy) is not loaded: the missing file is named first."""
    path = _setup(tmp_path, rf"<{tag}>[^<]*</{tag}>", f"<{tag}>nope.sto</{tag}>")
    with pytest.raises(FileNotFoundError, match=rf"setup.xml: <{tag}> .*nope.sto: not found"):
        mbjax.opensim.inverse_kinematics_from_setup(path)


def test_setup_accuracy_refused_naming_the_element(tmp_path):
    path = _setup(tmp_path, r"<accuracy>[^<]*</accuracy>", "<accuracy>-1</accuracy>")
    with pytest.raises(ValueError, match=r"setup.xml: the IK accuracy must be a positive number, got -1.0 "
                                         r"\(<accuracy> in the file\)"):
        mbjax.opensim.inverse_kinematics_from_setup(path, ARM, MARKERS)
