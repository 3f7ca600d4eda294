"""Data and setup files of the OpenSim tools: infinite or absent time ranges give the coordinates'
own frames (not the filter's padding), columns no coordinate uses are neither filtered nor checked
and are named in a warning, tasks or elements out of place, NaN times, force-set files listed
twice, empty .trc header fields and external loads without forces: each refused or warned
naming the file, line, element or column."""

import os
import re
import shutil
import warnings

import numpy as np
import pytest

import mbjax
from mbjax.io import read_external_loads, read_storage, read_trc, write_storage
from mbjax.opensim.tools.id import coordinate_trajectory, inverse_dynamics_from_setup, read_coordinates, read_id_setup
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.opensim.tools.jr import read_jr_setup
from mbjax.opensim.tools.so import read_so_setup, states_trajectory

WALK = mbjax.models.pipeline_path("gait2354_walk")
ID_SETUP, IK_SETUP = "subject01_Setup_InverseDynamics.xml", "subject01_Setup_IK.xml"
SO_SETUP, MOT = "subject01_Setup_StaticOptimization.xml", "subject01_walk1_ik.mot"


@pytest.fixture(scope="module")
def walk_model():
    return mbjax.io.load_osim(os.path.join(WALK, "subject01_simbody.osim"), ignore_wrapping=True)


def _walk(tmp_path):
    folder = tmp_path / "walk"
    shutil.copytree(WALK, folder)
    return folder


def _edit(path, old, new):
    text = open(path, encoding="utf-8").read()
    assert re.search(old, text, flags=re.S), old
    with open(path, "w", encoding="utf-8") as f:
        f.write(re.sub(old, new, text, count=1, flags=re.S))
    return str(path)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def _data_times(folder):
    return np.asarray(read_storage(os.path.join(folder, MOT)).time, float)


# --- time ranges: infinite or absent bounds are the coordinates' own times --------------------

@pytest.mark.parametrize("time_range", ["", "<time_range>-inf inf</time_range>"])
def test_id_without_a_finite_time_range_returns_the_coordinates_frames(tmp_path, walk_model, time_range):
    folder = _walk(tmp_path)
    setup = _edit(folder / ID_SETUP, r"<time_range>.*?</time_range>", time_range)
    s = read_id_setup(setup)
    assert s.time_range == (-np.inf, np.inf)
    with pytest.warns(UserWarning, match=r"subject01_walk1_ik\.mot: InverseDynamicsTool's time range \[-inf, inf\] "
                                         r"s \(infinite, or none given\): the file's times \[0\.4, 1\.6\] s are used"):
        result = inverse_dynamics_from_setup(setup, model=walk_model, write=False)
    times = _data_times(folder)  # the frames OpenSim gives for the data's own range
    assert result.time.shape == times.shape == (73,)
    np.testing.assert_allclose(result.time, times, atol=1e-6)
    table = read_coordinates(setup, s.coordinates_file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, *_ = coordinate_trajectory(walk_model, table, s.lowpass_cutoff, (0.4, 1.6))
    np.testing.assert_array_equal(result.time, t)


def test_id_infinite_time_range_unfiltered_is_quiet(tmp_path, walk_model):
    folder = _walk(tmp_path)
    table = read_coordinates(folder / ID_SETUP, str(folder / MOT))
    t, *_ = _quiet(coordinate_trajectory, walk_model, table, -1.0, (-np.inf, np.inf))
    np.testing.assert_array_equal(t, _data_times(folder))
    t, *_ = _quiet(coordinate_trajectory, walk_model, table, 6.0, None)  # None: the file's times
    np.testing.assert_allclose(t, _data_times(folder), atol=1e-6)


@pytest.mark.parametrize("reader, tool", [(read_so_setup, "StaticOptimization"), (read_jr_setup, "JointReaction")])
def test_analyze_tool_infinite_times_give_the_coordinates_frames(tmp_path, walk_model, reader, tool):
    folder = _walk(tmp_path)
    setup = folder / SO_SETUP
    _edit(setup, "<initial_time>0.4</initial_time>", "<initial_time>-inf</initial_time>")
    _edit(setup, "<final_time>1.6</final_time>", "<final_time>inf</final_time>")
    _edit(setup, r"<start_time>.*?</end_time>", "<start_time>-inf</start_time><end_time>inf</end_time>")
    if tool == "JointReaction":
        _edit(setup, r"<StaticOptimization name.*</StaticOptimization>",
              "<JointReaction name='JR'><on>true</on><start_time>-inf</start_time><end_time>inf</end_time>"
              "<step_interval>1</step_interval><in_degrees>true</in_degrees><joint_names>ALL</joint_names>"
              "<apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame></JointReaction>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = reader(setup)
    assert s.time_range == (-np.inf, np.inf)
    table = read_coordinates(setup, s.coordinates_file)
    with pytest.warns(UserWarning, match=r"subject01_walk1_ik\.mot: AnalyzeTool's time range \[-inf, inf\] s "
                                         r"\(infinite, or none given\): the file's times \[0\.4, 1\.6\] s are used"):
        t, *_ = states_trajectory(walk_model, table, s.lowpass_cutoff, s.time_range)
    times = _data_times(folder)
    assert t.shape == times.shape
    np.testing.assert_allclose(t, times, atol=1e-6)


# --- coordinates files: columns no coordinate uses -------------------------------------------

def _with_columns(folder, columns):
    table = read_storage(folder / MOT)
    extra = np.column_stack([v for _, v in columns])
    path = folder / "extra.mot"
    write_storage(path, table._replace(labels=table.labels + tuple(n for n, _ in columns),
                                       data=np.column_stack([table.data, extra])))
    return read_coordinates(folder / ID_SETUP, str(path))


def test_nan_in_an_unused_column_is_not_filtered_and_is_named(tmp_path, walk_model):
    folder = _walk(tmp_path)
    table = _with_columns(folder, [("foo", np.full(73, np.nan))])
    with pytest.warns(UserWarning, match=r"extra\.mot: columns \['foo'\] match no model coordinate: not used by "
                                         "InverseDynamicsTool"):
        t, q, *_ = coordinate_trajectory(walk_model, table, 6.0, (0.4, 1.6))
    assert t.shape == (73,) and np.isfinite(q).all()
    data = np.array(table.data)
    data[3, table.labels.index("knee_angle_r")] = np.nan  # a used column: named by file, column and time
    with pytest.warns(UserWarning, match="foo"), \
            pytest.raises(ValueError, match=r"extra\.mot: column 'knee_angle_r' holds NaN or inf at row 4 "
                                            r"\(time 0\.45 s\)"):
        coordinate_trajectory(walk_model, table._replace(data=data), 6.0, (0.4, 1.6))


def test_columns_matching_no_coordinate_are_listed_with_a_near_match(tmp_path, walk_model):
    folder = _walk(tmp_path)
    ones = np.ones(73)
    table = _with_columns(folder, [("knee_angle_R", ones), ("/jointset/knee_r/knee_angle_r/speed", ones),
                                   ("/jointset/hip_r/hip_flexion_r/value", ones)])
    with pytest.warns(UserWarning) as record:
        coordinate_trajectory(walk_model, table, -1.0, (0.4, 1.6), tool="InverseDynamicsTool")
    msg = " ".join(str(w.message) for w in record)
    assert "extra.mot: columns ['knee_angle_R', '/jointset/knee_r/knee_angle_r/speed', " in msg
    assert "'knee_angle_R' (did you mean 'knee_angle_r'?)" in msg
    assert "'/jointset/hip_r/hip_flexion_r/value' (did you mean 'hip_flexion_r'?)" in msg
    base = read_coordinates(folder / ID_SETUP, str(folder / MOT))
    _quiet(coordinate_trajectory, walk_model, base, -1.0, (0.4, 1.6))  # the file's own columns: no word


# --- IK setups: tasks out of <objects>, unknown elements --------------------------------------

def test_ik_tasks_outside_objects_refused_naming_the_task_set(tmp_path):
    folder = _walk(tmp_path)
    setup = folder / IK_SETUP
    text = open(setup, encoding="utf-8").read()
    text = re.sub(r"(<IKTaskSet[^>]*>)\s*<objects>", r"\1", text)
    text = re.sub(r"</objects>\s*(<groups\s*/>\s*)?</IKTaskSet>", r"\1</IKTaskSet>", text)
    setup.write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "given twice" warning for the tasks
        with pytest.raises(ValueError, match=r"subject01_Setup_IK\.xml:\d+: <IKTaskSet name='[^']+'>: its \d+ "
                                             r"task\(s\) \(the first <IKMarkerTask name='[^']+'> at line \d+\) sit "
                                             r"directly in <IKTaskSet>: put them inside <objects>"):
            read_ik_setup(setup)


def test_unknown_element_in_ik_task_set_is_warned(tmp_path):
    folder = _walk(tmp_path)
    setup = _edit(folder / IK_SETUP, r"(<IKTaskSet[^>]*>)", r"\1<foo>1</foo>")
    with pytest.warns(UserWarning, match=r"subject01_Setup_IK\.xml: not used by mbjax's inverse kinematics: .*"
                                         r"subject01_Setup_IK\.xml:\d+: <foo> in <IKTaskSet"):
        read_ik_setup(setup)


def test_element_beside_the_tool_is_warned(tmp_path):
    folder = _walk(tmp_path)
    setup = _edit(folder / ID_SETUP, r"</InverseDynamicsTool>", "</InverseDynamicsTool>\n<Junk/>")
    with pytest.warns(UserWarning, match=r"subject01_Setup_InverseDynamics\.xml: not used \(OpenSim reads only the "
                                         r"tool of an <OpenSimDocument>\): .*InverseDynamics\.xml:\d+: <Junk> beside "
                                         "<InverseDynamicsTool>"):
        read_id_setup(setup)


# --- AnalyzeTool setups: NaN times, a force-set file listed twice -----------------------------

@pytest.mark.parametrize("tag", ["initial_time", "final_time"])
def test_nan_analysis_time_refused_by_its_element(tmp_path, tag):
    folder = _walk(tmp_path)
    setup = _edit(folder / SO_SETUP, rf"<{tag}>[^<]*</{tag}>", f"<{tag}>NaN</{tag}>")
    with pytest.raises(ValueError, match=rf"StaticOptimization\.xml:\d+: <{tag}>: must be a time \(s\), got 'NaN'"):
        read_so_setup(setup)


def test_force_set_file_listed_twice_refused(tmp_path):
    folder = _walk(tmp_path)
    setup = _edit(folder / SO_SETUP, r"<force_set_files>gait2354_CMC_Actuators\.xml",
                  "<force_set_files>gait2354_CMC_Actuators.xml ./gait2354_CMC_Actuators.xml")
    with pytest.raises(ValueError, match=r"StaticOptimization\.xml:\d+: <force_set_files>: lists "
                                         r"'gait2354_CMC_Actuators\.xml' .* twice"):
        read_so_setup(setup)


def test_actuator_named_in_two_force_set_files_names_both(tmp_path, walk_model):
    from mbjax.opensim.tools.so import setup_force_sets

    folder = _walk(tmp_path)
    shutil.copy(folder / "gait2354_CMC_Actuators.xml", folder / "copy.xml")
    with pytest.raises(ValueError, match=r"StaticOptimization\.xml: <force_set_files>: an actuator named 'FX' is in "
                                         r".*gait2354_CMC_Actuators\.xml and in .*copy\.xml"):
        setup_force_sets(folder / SO_SETUP, walk_model, [str(folder / "gait2354_CMC_Actuators.xml"),
                                                         str(folder / "copy.xml")])


# --- .trc header values ------------------------------------------------------------------------

def _trc(tmp_path, values):
    rows = [f"{k + 1}\t{k / 100:g}\t1.0\t2.0\t3.0" for k in range(3)]
    path = tmp_path / "m.trc"
    path.write_text("\n".join(["PathFileType\t4\t(X/Y/Z)\tm.trc",
                               "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\t"
                               "OrigDataStartFrame\tOrigNumFrames", values, "Frame#\tTime\tm1\t\t",
                               "\t\tX1\tY1\tZ1", ""] + rows) + "\n", encoding="utf-8")
    return str(path)


def test_trc_empty_header_field_named(tmp_path):
    with pytest.raises(ValueError, match=r"m\.trc:3: Units \(field 5\) is empty; give mm, cm or m"):
        read_trc(_trc(tmp_path, "100\t100\t3\t1\t\t100\t1\t3"))
    with pytest.raises(ValueError, match=r"m\.trc:3: NumFrames \(field 3\) is empty"):
        read_trc(_trc(tmp_path, "100\t100\t\t1\tmm\t100\t1\t3"))


@pytest.mark.parametrize("values, bad", [("100\t100\tabc\t1\tmm\t100\t1\t3", "NumFrames='abc'"),
                                         ("100\t100\t3\t1\tmm\tabc\t1\t3", "OrigDataRate='abc'"),
                                         ("100\t100\t3\t1\tmm\t100\tx\ty", "OrigDataStartFrame='x', OrigNumFrames='y'")])
def test_trc_text_header_numbers_warned(tmp_path, values, bad):
    with pytest.warns(UserWarning, match=rf"m\.trc:3: header value\(s\) {re.escape(bad)} are not numbers"):
        markers = read_trc(_trc(tmp_path, values))
    assert markers.positions.shape == (3, 1, 3)
    _quiet(read_trc, _trc(tmp_path, "100\t100\t3\t1\tmm\t100\t1\t3"))


# --- external loads without forces ------------------------------------------------------------

def test_external_loads_without_forces_warned(tmp_path):
    folder = _walk(tmp_path)
    path = _edit(folder / "subject01_walk1_grf.xml", r"<objects>.*</objects>", "<objects />")
    with pytest.warns(UserWarning, match=r"subject01_walk1_grf\.xml:\d+: <ExternalLoads[^>]*>: holds no "
                                         r"<ExternalForce> .*none of the 18 columns of its <datafile> "
                                         r".*subject01_walk1_grf\.mot is used"):
        loads = read_external_loads(path)
    assert loads.forces == ()
    _quiet(read_external_loads, os.path.join(WALK, "subject01_walk1_grf.xml"))
