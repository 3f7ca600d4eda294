"""Files and tool arguments a user gets wrong (setups, .osim files, writers, ``run_setups``, the
CLI's exit statuses): each refused or warned by name, as OpenSim reads or refuses the same input."""

import os
import re
import shutil
import warnings

import numpy as np
import pytest

import mbjax
from mbjax.cli import Failure, UsageError, run_setups
from mbjax.opensim.tools.id import inverse_dynamics_from_setup, inverse_dynamics_motion
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.io import (MarkerData, Table, load_markers, load_osim, read_storage, read_trc, write_osim, write_storage,
                      write_trc)
from mbjax.models import arm26_path, model_path
from mbjax.opensim import inverse_kinematics_from_setup
from mbjax.opensim.tools.so import static_optimization_from_setup, static_optimization_motion
from _cli_run import run_cli

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
IK_SETUP = os.path.join(DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
SO_SETUP = os.path.join(DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = load_osim(arm26_path(), ignore_wrapping=True)
    DP = mbjax.models.load("double_pendulum")
ARM_TEXT = open(arm26_path()).read()
DP_TEXT = open(model_path("double_pendulum")).read()


def _write(tmp_path, text, name="m.osim"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _sub(text, old, new, count=1):
    assert old in text, old
    return text.replace(old, new, count)


def _ik_setup(tmp_path, old=None, new=None):
    shutil.copy(os.path.join(DATA, "arm26_ik", "arm26_elbow_flex.trc"), tmp_path)
    text = _sub(open(IK_SETUP).read(), "<model_file> arm26.osim </model_file>",
                f"<model_file>{arm26_path()}</model_file>")
    if old is not None:
        text = _sub(text, old, new)
    return _write(tmp_path, text, "ik.xml")


def _main(capsys, *args):
    rc, _, err = run_cli(capsys, *args)
    return rc, err


# ---- IK setup: a marker task given twice -----------------------------------------------------------

def test_duplicate_ik_marker_task_warns_and_keeps_the_first_as_opensim(tmp_path):
    setup = _ik_setup(tmp_path, '<IKMarkerTask name="r_humerus_epicondyle">', '<IKMarkerTask name="r_acromion">')
    text = open(setup).read()
    for weight in ("2", "0.5"):  # the first r_acromion task: 2, the second: 0.5
        text = _sub(text, "<weight>       1.00000000 </weight>", f"<weight>{weight}</weight>")
    open(setup, "w").write(text)
    with pytest.warns(UserWarning, match=r"ik\.xml:\d+: <IKMarkerTask name='r_acromion'>: a second applied "
                      r"<IKMarkerTask> for marker 'r_acromion' \(weight 0\.5\); OpenSim uses the first one "
                      r"\(line \d+, weight 2\)"):
        s = read_ik_setup(setup)
    assert s.marker_weights == {"r_acromion": 2.0, "r_radius_styloid": 1.0}


# ---- .osim files OpenSim refuses or reads differently --------------------------------------------

def test_locked_dependent_coordinate_of_a_coupler_refused(tmp_path):
    text = _sub(DP_TEXT, '<ConstraintSet name="constraintset">\n\t\t\t<objects />',
                '<ConstraintSet name="constraintset">\n\t\t\t<objects><CoordinateCouplerConstraint name="cc">'
                '<coupled_coordinates_function><LinearFunction><coefficients>0.5 -0.1</coefficients>'
                '</LinearFunction></coupled_coordinates_function><independent_coordinate_names>q1'
                '</independent_coordinate_names><dependent_coordinate_name>q2</dependent_coordinate_name>'
                '</CoordinateCouplerConstraint></objects>')
    valid = _write(tmp_path, text, "ok.osim")
    assert dict(load_osim(valid).osim.roles)["q2"] == "dependent"
    locked = text.split('<Coordinate name="q2">', 1)
    locked[1] = _sub(locked[1], "<locked>false</locked>", "<locked>true</locked>")
    with pytest.raises(NotImplementedError, match=r"<CoordinateCouplerConstraint name='cc'>: coordinate 'q2' is "
                       r"locked and the dependent coordinate of this coupler: OpenSim holds it .* unlock 'q2'"):
        load_osim(_write(tmp_path, '<Coordinate name="q2">'.join(locked)))


def test_transform_axis_naming_another_joints_coordinate_refused(tmp_path):
    elbow = ARM_TEXT.split('<CustomJoint name="r_elbow">', 1)
    elbow[1] = _sub(elbow[1], "<coordinates>r_elbow_flex</coordinates>", "<coordinates>r_shoulder_elev</coordinates>")
    with pytest.raises(ValueError, match=r"<TransformAxis name='rotation1'>: joint 'r_elbow': TransformAxis "
                       r"rotation1 names coordinate 'r_shoulder_elev', which is not one of this joint's "
                       r"coordinates \['r_elbow_flex'\] \(OpenSim refuses it\)"):
        load_osim(_write(tmp_path, '<CustomJoint name="r_elbow">'.join(elbow)), ignore_wrapping=True)


def test_wrap_cylinder_of_negative_length_refused(tmp_path):
    text = _sub(ARM_TEXT, "<length>0.05</length>", "<length>-0.05</length>")
    with pytest.raises(ValueError, match=r"<WrapCylinder name='TRI'>: WrapCylinder 'TRI': <length> is -0\.05, "
                       r"below zero \(OpenSim refuses it\)"):
        load_osim(_write(tmp_path, text), ignore_wrapping=True)


def test_4x_file_labelled_as_3x_names_the_version(tmp_path):
    text = _sub(DP_TEXT, 'Version="40000"', 'Version="30000"')
    with pytest.raises(ValueError, match=r'<OpenSimDocument>: Version="30000" is a 3\.x document .* the joints are '
                       r"in the model's <JointSet> \(the 4\.x layout\): set the Version attribute"):
        load_osim(_write(tmp_path, text))


def test_undeclared_latin1_osim_read_as_opensim_reads_it_with_a_warning(tmp_path):
    raw = _sub(DP_TEXT, "<Model ", "<!-- Gr\xfc\xdfe -->\n<Model ").encode("latin-1")
    path = tmp_path / "latin1.osim"
    path.write_bytes(raw)
    with pytest.warns(UserWarning, match=r"latin1\.osim:3: the file is not UTF-8 \(byte 0xfc\); read as Latin-1"):
        m = load_osim(str(path))
    assert m.coordinate_names == DP.coordinate_names
    np.testing.assert_array_equal(np.asarray(m.offset), np.asarray(DP.offset))
    path.write_bytes(raw.replace(b"<Model ", b"<Model <", 1))  # broken XML is still named as such
    with pytest.raises(ValueError, match=r"malformed XML: .*the file is not UTF-8: byte 0xfc on line 3"):
        load_osim(str(path))


def test_write_osim_with_another_models_markers_names_marker_and_body(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        markers = load_markers(arm26_path(), ARM)
    with pytest.raises(ValueError, match=r"write_osim: marker 'r_acromion' refers to body index 0, which in this "
                       r"model is 'rod1/pin1/q1', .* were the markers made for another model\?"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            write_osim(DP, str(tmp_path / "x.osim"), markers=markers)


# ---- IK / ID / SO from setups and their arguments ------------------------------------------------

def test_ik_from_setup_with_a_model_name_or_another_model(tmp_path):
    setup = _ik_setup(tmp_path)
    with pytest.raises(TypeError, match=r"inverse_kinematics_from_setup: model must be an mbjax Model .* got str"):
        inverse_kinematics_from_setup(setup, "arm26")
    with pytest.raises(ValueError, match=r"ik\.xml: the model passed does not match the setup's <model_file>: .*3 "
                       r"marker\(s\) on bodies the model lacks: 'r_acromion' \(body 'base'\)"):
        inverse_kinematics_from_setup(setup, DP)


def test_from_setup_keywords_the_setup_gives_refused():
    with pytest.raises(TypeError, match=r"static_optimization_from_setup: exponent= \(<activation_exponent>\) is set "
                       r"by the setup file"):
        static_optimization_from_setup(SO_SETUP, ARM, write=False, exponent=3)
    with pytest.raises(TypeError, match=r"inverse_dynamics_from_setup: time_range= \(<time_range>\) is set by"):
        inverse_dynamics_from_setup(SO_SETUP, ARM, write=False, time_range=(0, 1))
    with pytest.raises(TypeError, match=r"inverse_kinematics_from_setup: coordinate_data= \(<coordinate_file>\) is set"):
        inverse_kinematics_from_setup(SO_SETUP, ARM, coordinate_data=None)
    with pytest.raises(TypeError, match=r"from_setup: model must be an mbjax Model"):
        static_optimization_from_setup(SO_SETUP, "arm26", write=False)


@pytest.mark.parametrize("fn", [inverse_dynamics_motion, static_optimization_motion])
@pytest.mark.parametrize("bad", [0.5, "0 1", (0.0, 1.0, 2.0)])
def test_tool_time_range_must_be_a_pair(fn, bad):
    table = Table(np.array([0.0, 0.1]), ("r_shoulder_elev",), np.zeros((2, 1)), False)
    with pytest.raises(TypeError, match=rf"{fn.__name__}: time_range must be \(start, end\) in seconds, got"):
        fn(ARM, table, time_range=bad)


# ---- run_setups and the CLI's exit statuses --------------------------------------------------------

def test_run_setups_arguments(tmp_path):
    with pytest.raises(UsageError, match=r"run_setups: no setup files given"):
        run_setups([], quiet=True)
    with pytest.raises(Failure, match=rf"SETUP {re.escape(str(tmp_path))}/none\.xml: no such file"):
        run_setups(str(tmp_path / "none.xml"), quiet=True)  # one path: a one-item list, not its characters
    with pytest.raises(UsageError, match=r"unknown model 'nope'"):  # before the setups are read
        run_setups([str(tmp_path / "none.xml")], model="nope", quiet=True)
    with pytest.raises(TypeError, match=r"run_setups: setups must be a list of setup file paths, got 3"):
        run_setups(3)


def test_run_refuses_an_unsupported_second_setup_before_the_first_runs(tmp_path, capsys):
    ik = _ik_setup(tmp_path)
    so = _write(tmp_path, _sub(open(SO_SETUP).read(), "<use_model_force_set> true", "<use_model_force_set> false"),
                "so.xml")
    rc, err = _main(capsys, "run", ik, so, "--model", "arm26", "--quiet")
    assert rc == 1 and "so.xml: <use_model_force_set> false" in err, err
    assert not (tmp_path / "arm26_InverseKinematics.mot").exists()


def test_cli_setup_directory_exits_1_as_a_missing_setup(tmp_path, capsys):
    rc, err = _main(capsys, "ik", str(tmp_path))
    assert rc == 1 and "is a directory, expected an OpenSim setup .xml file" in err
    rc, err = _main(capsys, "ik", str(tmp_path / "none.xml"))
    assert rc == 1 and "no such file" in err


# ---- writers refuse what does not read back ------------------------------------------------------

T3 = np.array([0.0, 0.1, 0.2])


@pytest.mark.parametrize("meta, msg", [
    ({"comment": "line1\nendheader\nfoo"}, r"metadata key 'comment' .* would not read back"),
    ({"a=b": "1"}, r"metadata key 'a=b' .* would not read back"),
    ({"description": "x=1"}, r"metadata\['description'\] = 'x=1' would not read back"),
])
def test_write_storage_refuses_metadata_that_would_not_read_back(tmp_path, meta, msg):
    with pytest.raises(ValueError, match=rf"write_storage: .*m\.mot: {msg}"):
        write_storage(str(tmp_path / "m.mot"), Table(T3, ("a",), np.zeros((3, 1)), False, meta))


def test_write_storage_metadata_that_reads_back_still_written(tmp_path):
    path = str(tmp_path / "m.mot")
    write_storage(path, Table(T3, ("a",), np.zeros((3, 1)), False, {"description": "two\nlines", "k": "v w"}))
    meta = read_storage(path).metadata
    assert meta["description"] == "two\nlines" and meta["k"] == "v w"


def test_write_storage_refuses_inf_naming_column_and_row(tmp_path):
    data = np.zeros((3, 2))
    data[1, 1] = -np.inf
    with pytest.raises(ValueError, match=r"write_storage: .*x\.sto: column 'b' is -inf at row 2 \(time 0\.1\)"):
        write_storage(str(tmp_path / "x.sto"), Table(T3, ("a", "b"), data, False))
    data[1, 1] = np.nan  # NaN (a missing value) is still written
    write_storage(str(tmp_path / "x.sto"), Table(T3, ("a", "b"), data, False))
    assert np.isnan(read_storage(str(tmp_path / "x.sto")).data[1, 1])


def test_write_trc_refuses_duplicate_marker_names(tmp_path):
    with pytest.raises(ValueError, match=r"write_trc: .*dup\.trc: duplicate marker names \['A'\]"):
        write_trc(str(tmp_path / "dup.trc"), MarkerData(T3, ("A", "A"), np.zeros((3, 2, 3))))
    write_trc(str(tmp_path / "ok.trc"), MarkerData(T3, ("A", "B"), np.zeros((3, 2, 3))))
    assert read_trc(str(tmp_path / "ok.trc")).names == ("A", "B")
