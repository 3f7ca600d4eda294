"""The pipeline functions and files judge their arguments: numbers that are strings, chunk sizes,
lone names, external loads given as a path, bool tags in setup files, empty coordinate files,
unit mix-ups (radians labelled degrees, points in millimetres, ranges in degrees, percentages as
scale factors) and output folders that do not exist."""

import os
import re
import warnings

import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf
from mbjax.opensim.tools.id import coordinate_trajectory, inverse_dynamics_frames, inverse_dynamics_motion
from mbjax.opensim.tools.id.motion import external_loads_file
from mbjax.analysis.ik import inverse_kinematics
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.io import (MarkerData, load_markers, load_osim, read_external_loads, read_storage, save_model,
                      write_osim, write_storage, write_trc)
from mbjax.opensim.model.osim_couplers import _looks_like_degrees
from mbjax.io.table import Table
from mbjax.opensim.tools.jr import joint_reactions_motion
from mbjax.models import arm26_path, model_path
from mbjax.opensim.tools.so import static_optimization_motion

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
ARM = load_osim(arm26_path(), ignore_wrapping=True)
MOT = os.path.join(DATA, "arm26_so", "arm26_InverseKinematics.mot")
MOTION = read_storage(MOT)
GRF = os.path.join(DATA, "gait2354_id", "subject01_walk1_grf.xml")
IK_SETUP = os.path.join(DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")


def _copy(tmp_path, src, old, new, name=None):
    text = open(src).read()
    assert old in text
    path = tmp_path / (name or os.path.basename(src))
    path.write_text(text.replace(old, new, 1))
    return str(path)


# ---- numbers, counts and names of the tool functions ---------------------------------------------


@pytest.mark.parametrize("call, match", [
    (lambda: inverse_dynamics_motion(ARM, MOTION, lowpass_cutoff="6"),
     r"inverse_dynamics_motion: lowpass_cutoff must be a number, got str '6'; write lowpass_cutoff=6"),
    (lambda: static_optimization_motion(ARM, MOTION, lowpass_cutoff="6", progress=False),
     r"static_optimization_motion: lowpass_cutoff must be a number, got str"),
    (lambda: static_optimization_motion(ARM, MOTION, exponent="2", progress=False),
     r"static_optimization_motion: exponent must be a number, got str '2'"),
    (lambda: joint_reactions_motion(ARM, MOTION, MOTION, lowpass_cutoff="6", progress=False),
     r"lowpass_cutoff must be a number, got str '6'"),
    (lambda: coordinate_trajectory(ARM, MOTION, "6"), r"lowpass_cutoff must be a number, got str"),
    (lambda: inverse_dynamics_motion(ARM, MOTION, lowpass_cutoff=True), r"lowpass_cutoff must be a number, got bool"),
])
def test_numeric_keywords_refuse_non_numbers(call, match):
    with pytest.raises(TypeError, match=match):
        call()


@pytest.mark.parametrize("chunk", [0, -3, 2.5, "8", True])
def test_id_chunk_must_be_a_positive_integer(chunk):
    with pytest.raises(ValueError, match=r"inverse_dynamics_motion: chunk must be a positive integer, got"):
        inverse_dynamics_motion(ARM, MOTION, chunk=chunk)
    q = np.zeros((3, ARM.n_coordinates))
    with pytest.raises(ValueError, match=r"inverse_dynamics_frames: chunk must be a positive integer"):
        inverse_dynamics_frames(ARM, q, q, q, chunk=chunk)


def test_step_interval_text_refused():
    with pytest.raises(ValueError, match=r"step_interval must be a positive integer, got 'x'"):
        coordinate_trajectory(ARM, MOTION, step_interval="x")


def test_id_valid_call_and_lone_name_to_exclude():
    """A lone string is one name: 'Muscles' excludes the muscles (not 'M', 'u', ...), as the list does."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        one = inverse_dynamics_motion(ARM, MOTION, forces_to_exclude="Muscles", chunk=64, lowpass_cutoff=6)
    ref = inverse_dynamics_motion(ARM, MOTION, forces_to_exclude=["Muscles"], chunk=64, lowpass_cutoff=6.0)
    np.testing.assert_array_equal(one.tau, ref.tau)
    assert np.all(np.isfinite(ref.tau))


def test_ik_lone_locked_name():
    markers = load_markers(arm26_path(), ARM)
    q = np.array([[0.2, 0.4], [0.25, 0.5]])
    x = np.stack([np.asarray(mbjax.marker_positions(ARM, markers, qq)) for qq in q])
    data = MarkerData(np.array([0.0, 0.01]), tuple(markers.names), x)
    r = inverse_kinematics(ARM, markers, data, locked="r_shoulder_elev", method="vmap")
    assert np.allclose(r.q[:, 0], ARM.osim.default[0])


@pytest.mark.parametrize("call", [
    lambda: inverse_dynamics_motion(None, MOTION),
    lambda: static_optimization_motion("arm26", MOTION, progress=False),
    lambda: joint_reactions_motion(None, MOTION, MOTION, progress=False),
    lambda: inverse_kinematics(None, None, None),
    lambda: idf.scale_model(None, {}),
    lambda: idf.scale_markers(None, None, {}),
    lambda: idf.place_markers(None, None, None, None, ()),
])
def test_tool_functions_refuse_a_non_model(call):
    with pytest.raises(TypeError, match="mbjax Model"):
        call()


# ---- external loads given as a path -------------------------------------------------------------


def test_external_loads_path_is_read():
    loads = external_loads_file(GRF, "inverse_dynamics_motion")
    assert loads.path == GRF and len(loads.forces) == 2
    assert external_loads_file(loads, "x") is loads and external_loads_file(None, "x") is None
    # read, then judged against the model: the arm has no calcn_r (not an AttributeError on the string)
    with pytest.raises(ValueError, match="calcn_r"):
        inverse_dynamics_motion(ARM, MOTION, external_loads=GRF)


@pytest.mark.parametrize("call", [
    lambda: inverse_dynamics_motion(ARM, MOTION, external_loads={}),
    lambda: static_optimization_motion(ARM, MOTION, external_loads=[1], progress=False),
    lambda: joint_reactions_motion(ARM, MOTION, MOTION, external_loads=3.0, progress=False),
])
def test_external_loads_of_another_type_refused(call):
    with pytest.raises(TypeError, match=r"external_loads must be an ExternalLoadsFile .*the path of an ExternalLoads "
                                        r"\.xml, or None; got"):
        call()


# ---- bool tags and coordinate files in setup files -----------------------------------------------


@pytest.mark.parametrize("text", ["maybe", "yes", "2"])
def test_ik_apply_must_be_true_or_false(tmp_path, text):
    path = _copy(tmp_path, IK_SETUP, "<apply> true </apply>", f"<apply> {text} </apply>")
    with pytest.raises(ValueError, match=rf"arm26_Setup_InverseKinematics.xml:\d+: <apply>: <apply> must be true or "
                                         rf"false, got '{text}' \(in <IKMarkerTask name='r_acromion'>\)"):
        read_ik_setup(path)


@pytest.mark.parametrize("text, applied", [("FALSE", False), ("0", False), ("1", True), ("True", True)])
def test_ik_apply_reads_opensims_spellings(tmp_path, text, applied):
    path = _copy(tmp_path, IK_SETUP, "<apply> true </apply>", f"<apply> {text} </apply>")
    setup = read_ik_setup(path)
    assert ("r_acromion" in setup.marker_weights) == applied


def test_ik_report_errors_flag_checked(tmp_path):
    path = _copy(tmp_path, IK_SETUP, "<report_errors> true </report_errors>", "<report_errors> nope </report_errors>")
    with pytest.raises(ValueError, match=r"<report_errors> must be true or false, got 'nope'"):
        read_ik_setup(path)


def test_external_loads_flag_same_rule(tmp_path):
    src = open(GRF).read()
    text = re.sub(r"(<ExternalForce name=\"right\">)", r"\1<isDisabled>nope</isDisabled>", src, count=1)
    assert text != src
    for f in os.listdir(os.path.dirname(GRF)):
        if f.endswith(".mot"):
            (tmp_path / f).write_bytes(open(os.path.join(os.path.dirname(GRF), f), "rb").read())
    path = tmp_path / "grf.xml"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"grf.xml:\d+: <ExternalForce name='right'>: <isDisabled> must be true or "
                                         r"false, got 'nope'"):
        read_external_loads(str(path))
    path.write_text(text.replace("<isDisabled>nope", "<isDisabled>TRUE"))
    assert [f.name for f in read_external_loads(str(path)).forces] == ["left"]


def test_ik_from_file_task_without_coordinate_file(tmp_path):
    task = ("<IKCoordinateTask name=\"r_elbow_flex\"><apply>true</apply><weight>1</weight>"
            "<value_type>from_file</value_type></IKCoordinateTask>")
    path = _copy(tmp_path, IK_SETUP, "</objects>", task + "</objects>")
    with pytest.raises(ValueError, match=r"<IKCoordinateTask name='r_elbow_flex'>: <value_type> is from_file but the "
                                         r"setup's <coordinate_file> is empty"):
        read_ik_setup(path)
    ok = _copy(tmp_path, path, "from_file", "default_value", "ok.xml")
    assert read_ik_setup(ok).coordinate_tasks["r_elbow_flex"].value_type == "default_value"


def test_ik_from_file_task_without_coordinate_data_python():
    markers = load_markers(arm26_path(), ARM)
    x = np.asarray(mbjax.marker_positions(ARM, markers, np.array([0.2, 0.4])))[None]
    data = MarkerData(np.array([0.0]), tuple(markers.names), x)
    with pytest.raises(ValueError, match=r"coordinate task 'r_elbow_flex' has value_type 'from_file' but no "
                                         r"coordinate_data was given; pass coordinate_data"):
        inverse_kinematics(ARM, markers, data, coordinate_tasks={"r_elbow_flex": mbjax.analysis.ik.CoordinateTask(1.0, "from_file")})


# ---- unit mix-ups ---------------------------------------------------------------------------------


def _radians_labelled_degrees(tmp_path):
    table = read_storage(MOT)
    assert table.in_degrees
    data = np.array(table.data)
    rot = [k for k, lab in enumerate(table.labels) if lab in ARM.coordinate_names]
    data[:, rot] = np.radians(data[:, rot])
    path = str(tmp_path / "rad_as_deg.mot")
    write_storage(path, table._replace(data=data), format="storage")
    return path


def test_radians_labelled_degrees_warn(tmp_path):
    path = _radians_labelled_degrees(tmp_path)
    assert read_storage(path).in_degrees
    with pytest.warns(UserWarning, match=r"rad_as_deg.mot: the header says inDegrees=yes, but every rotational "
                                         r"coordinate stays within \+-2 pi .* look like radians: .*inDegrees=no"):
        mbjax.io.coordinates_from_table(ARM, read_storage(path))
    with pytest.warns(UserWarning, match=r"coordinates 'Coordinates': the header says inDegrees=yes"):
        coordinate_trajectory(ARM, read_storage(path))
    with warnings.catch_warnings():  # the trial in degrees: no such warning
        warnings.simplefilter("error", UserWarning)
        mbjax.io.coordinates_from_table(ARM, MOTION)
        coordinate_trajectory(ARM, MOTION)


def test_gait_trial_in_degrees_does_not_warn():
    model = load_osim(os.path.join(DATA, "gait2354_ik", "subject01_simbody_ik.osim"), ignore_wrapping=True)
    table = read_storage(os.path.join(DATA, "gait2354_id", "subject01_walk1_ik.mot"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mbjax.io.coordinates_from_table(model, table, missing="default")
    assert not [x for x in w if "look like radians" in str(x.message)]


def test_ground_reaction_points_in_millimetres_warn(tmp_path):
    src = read_external_loads(GRF)
    table = src.table
    data = np.array(table.data)
    cols = [k for k, lab in enumerate(table.labels) if "_p" in lab[-3:]]
    assert len(cols) == 6
    data[:, cols] *= 1000.0
    write_storage(str(tmp_path / os.path.basename(src.datafile)), table._replace(data=data), format="storage")
    xml = tmp_path / "grf.xml"
    xml.write_text(open(GRF).read())
    with pytest.warns(UserWarning, match=r"the point columns \['ground_force_px', 'ground_force_py', 'ground_force_pz'\] "
                                         r"of .*<ExternalForce name='right'> reach .* m from the origin of 'ground', far "
                                         r"beyond any gait lab: they look like millimetres"):
        read_external_loads(str(xml))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        read_external_loads(GRF)


def test_osim_range_in_degrees_warns(tmp_path):
    text = open(arm26_path()).read()
    new, n = re.subn(r"(<Coordinate name=\"r_elbow_flex\">.*?<range>)[^<]*(</range>)", r"\g<1>0 130\g<2>", text,
                     count=1, flags=re.S)
    assert n == 1
    path = tmp_path / "arm26.osim"
    path.write_text(new)
    with pytest.warns(UserWarning, match=r"arm26.osim: the <range> of rotational coordinate\(s\) r_elbow_flex \[0, 130\] "
                                         r"looks like degrees"):
        load_osim(str(path), ignore_wrapping=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        load_osim(arm26_path(), ignore_wrapping=True)
    assert not [x for x in w if "looks like degrees" in str(x.message)]
    # leg6dof9musc's knee_angle_pat_r, the unbounded sentinel and OpenSim's default range are radians
    for rng in ([-2.094, 10.0], [-99999.9, 99999.9], [-10.0, 10.0], [-np.pi, np.pi]):
        assert not _looks_like_degrees(rng)
    assert _looks_like_degrees([-90.0, 90.0])


def test_scale_factor_given_as_percentage_warns():
    with pytest.warns(UserWarning, match=r"scale_model: implausible scale factor\(s\) .*r_humerus=110.*'r_humerus' "
                                         r"look\(s\) like a percentage"):
        idf.scale_model(ARM, {"r_humerus": 110.0})
    with pytest.warns(UserWarning, match=r"implausible scale factor\(s\) .*r_ulna_radius_hand=0.05"):
        idf.scale_model(ARM, {"r_ulna_radius_hand": 0.05})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        idf.scale_model(ARM, {"r_humerus": 1.1})


def test_scale_setup_percentage_warns(tmp_path):
    setup = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk", "subject01_Setup_Scale.xml")
    text = open(setup).read()
    new, n = re.subn(r"<scales>[^<]*</scales>(\s*<segment> femur_r)", r"<scales> 114.7 114.7 114.7 </scales>\1", text,
                     count=1)
    assert n == 1
    path = tmp_path / os.path.basename(setup)
    path.write_text(new)
    with pytest.warns(UserWarning, match=r"implausible <scales> 114.7 for segment 'femur_r' .*looks like a percentage"):
        mbjax.io.read_scale_setup(str(path))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mbjax.io.read_scale_setup(setup)
    assert not [x for x in w if "implausible" in str(x.message)]


# ---- writers: the folder must exist -------------------------------------------------------------


@pytest.mark.parametrize("name, call", [
    ("write_osim", lambda p: write_osim(ARM, p)),
    ("write_storage", lambda p: write_storage(p, Table(np.arange(3.0), ("a",), np.zeros((3, 1))))),
    ("write_trc", lambda p: write_trc(p, MarkerData(np.arange(2.0), ("m",), np.zeros((2, 1, 3))))),
    ("save_model", lambda p: save_model(p, ARM)),
])
def test_writers_name_a_missing_folder(tmp_path, name, call):
    folder = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match=rf"{name}: cannot write .*: the folder '.*nope' does not exist"):
        call(str(folder / "a.out"))
    call(str(tmp_path / "a.out"))  # an existing folder
    assert os.path.exists(tmp_path / "a.out")


def test_short_still_clip_in_degrees_does_not_warn(tmp_path):
    """The arm trial's first 12 rows (0.09 s, elbow within 2 degrees) cannot be told from radians: no warning."""
    table = read_storage(MOT)
    short = table._replace(time=table.time[:12], data=table.data[:12])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mbjax.io.coordinates_from_table(ARM, short)
        coordinate_trajectory(ARM, short)
    assert not [x for x in w if "look like radians" in str(x.message)]


def test_id_no_filter_spellings_unchanged():
    """``None`` and ``-1`` both mean no filtering; a 0-d array is a number."""
    a = inverse_dynamics_motion(ARM, MOTION, lowpass_cutoff=None, chunk=64)
    b = inverse_dynamics_motion(ARM, MOTION, lowpass_cutoff=np.array(-1.0), chunk=64)
    np.testing.assert_array_equal(a.tau, b.tau)
