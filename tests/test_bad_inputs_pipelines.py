"""Bad inputs of the ID / SO / JR pipelines and their setup files: time ranges past the data,
disabled muscles, unknown or invalid setup elements, duplicated or non-finite columns, missing
files; each refused or warned naming the file, element or column."""

import os
import re
import shutil
import warnings

import numpy as np
import pytest

import mbjax
from mbjax.opensim.tools.id import coordinate_trajectory, inverse_dynamics_from_setup, read_coordinates, read_id_setup
from mbjax.io import read_external_loads, read_storage, write_storage
from mbjax.opensim.tools.jr import actuator_forces
from mbjax.models import arm26_path
from mbjax.opensim.tools.so import read_so_setup, static_optimization_from_setup, static_optimization_motion
from _cli_run import run_cli

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
ARM_SO = os.path.join(DATA, "arm26_so")
GAIT_ID = os.path.join(DATA, "gait2354_id")
ARM = mbjax.io.load_osim(arm26_path(), ignore_wrapping=True)


def _copy(tmp_path, folder):
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), tmp_path / f)
    return tmp_path


def _edit(path, old, new, out=None):
    text = open(path).read()
    assert re.search(old, text), old
    out = out or path
    with open(out, "w") as f:
        f.write(re.sub(old, new, text, count=1, flags=re.S))
    return out


def _short_motion(tmp_path, rows=12):
    """The arm26 tutorial's first ``rows`` rows (120 Hz) as a coordinates file."""
    table = read_storage(os.path.join(ARM_SO, "arm26_InverseKinematics.mot"))
    path = tmp_path / "short.mot"
    write_storage(path, table._replace(time=table.time[:rows], data=table.data[:rows]))
    return path


# ----------------------------------------------------------------------------------------------
# coordinates: time ranges and columns
# ----------------------------------------------------------------------------------------------


def test_time_range_past_the_coordinates_is_clipped_with_a_warning(tmp_path):
    path = _short_motion(tmp_path)
    table = read_coordinates(tmp_path / "setup.xml", str(path))
    with pytest.warns(UserWarning, match=r"short\.mot: .*time range \[0\.05, 2\.5\] s goes past the file's times "
                                         r"\[0, 0\.0916667\] s: clipped"):
        t, *_ = coordinate_trajectory(ARM, table, 6.0, (0.05, 2.5))
    assert t[-1] <= table.time[-1] + 1e-9 and t[0] <= 0.05
    with warnings.catch_warnings():  # a range inside the data: no warning, same frames as before
        warnings.simplefilter("error")
        t2, *_ = coordinate_trajectory(ARM, table, 6.0, (0.05, float(table.time[-1])))
    np.testing.assert_array_equal(t, t2)
    with pytest.raises(ValueError, match=r"short\.mot: the time range \[1\.7, 1\.75\] s does not overlap the "
                                         r"file's times \[0, 0\.0916667\] s"):
        coordinate_trajectory(ARM, table, 6.0, (1.7, 1.75))


def test_coordinates_nan_duplicate_and_short_name_the_file(tmp_path):
    path = _short_motion(tmp_path)
    table = read_coordinates(tmp_path / "setup.xml", str(path))
    data = np.array(table.data)
    data[4, 1] = np.nan
    with pytest.raises(ValueError, match=r"short\.mot: column 'r_elbow_flex' holds NaN or inf at row 5 \(time 0\.0333"):
        coordinate_trajectory(ARM, table._replace(data=data))
    dup = table._replace(labels=("r_shoulder_elev", "r_shoulder_elev"))
    with pytest.raises(ValueError, match=r"short\.mot: columns \['r_shoulder_elev'\] appear more than once"):
        coordinate_trajectory(ARM, dup)
    with pytest.raises(ValueError, match=r"coordinates file .*short\.mot: the degree-5 splines need at least 6 rows"):
        coordinate_trajectory(ARM, table._replace(time=table.time[:4], data=table.data[:4]))


def test_missing_coordinates_file_names_setup_and_element(tmp_path):
    _copy(tmp_path, GAIT_ID)
    setup = _edit(tmp_path / "subject01_Setup_InverseDynamics.xml", r"<coordinates_file>[^<]*</coordinates_file>",
                  "<coordinates_file>nowhere.mot</coordinates_file>")
    with pytest.raises(FileNotFoundError, match=r"subject01_Setup_InverseDynamics\.xml: <coordinates_file> "
                                                r".*nowhere\.mot: not found"):
        inverse_dynamics_from_setup(setup, write=False)
    _copy(tmp_path, ARM_SO)
    so = _edit(tmp_path / "arm26_Setup_StaticOptimization.xml", r"<coordinates_file>[^<]*</coordinates_file>",
               "<coordinates_file>nowhere.mot</coordinates_file>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FileNotFoundError, match=r"arm26_Setup_StaticOptimization\.xml: <coordinates_file> "
                                                    r".*nowhere\.mot: not found"):
            static_optimization_from_setup(so, write=False)


# ----------------------------------------------------------------------------------------------
# disabled muscles
# ----------------------------------------------------------------------------------------------


def _arm_without(tmp_path, how):
    src = open(arm26_path()).read()
    if how == "disabled":
        text = src.replace('<Thelen2003Muscle name="BIClong">',
                           '<Thelen2003Muscle name="BIClong"><appliesForce>false</appliesForce>', 1)
    else:
        text = re.sub(r'<Thelen2003Muscle name="BIClong">.*?</Thelen2003Muscle>', "", src, count=1, flags=re.S)
    path = tmp_path / f"arm26_{how}.osim"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.io.load_osim(path, ignore_wrapping=True)


def test_disabled_muscle_is_left_out_of_static_optimization(tmp_path):
    table = read_storage(_short_motion(tmp_path, 8))
    off = static_optimization_motion(_arm_without(tmp_path, "disabled"), table, progress=False)
    gone = static_optimization_motion(_arm_without(tmp_path, "removed"), table, progress=False)
    assert "BIClong" not in off.labels and off.labels == gone.labels
    np.testing.assert_allclose(off.activations, gone.activations, rtol=0, atol=1e-7)
    np.testing.assert_allclose(off.forces, gone.forces, rtol=0, atol=1e-5)


def test_reversed_time_ranges_refused_by_element(tmp_path):
    _copy(tmp_path, GAIT_ID)
    setup = _edit(tmp_path / "subject01_Setup_InverseDynamics.xml", r"<time_range>[^<]*</time_range>",
                  "<time_range>0.8 0.6</time_range>")
    with pytest.raises(ValueError, match=r"subject01_Setup_InverseDynamics\.xml:\d+: <time_range>: .*got '0\.8 0\.6'"):
        read_id_setup(setup)
    so = _edit(os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml"), r"<final_time>[^<]*</final_time>",
               "<final_time>-1</final_time>", tmp_path / "so.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"so\.xml:\d+: <final_time>: <final_time> -1 is before <initial_time> 0"):
            read_so_setup(so)


# ----------------------------------------------------------------------------------------------
# setup and external-loads elements
# ----------------------------------------------------------------------------------------------


def test_unknown_id_setup_elements_and_input_directory_warned(tmp_path):
    _copy(tmp_path, GAIT_ID)
    setup = _edit(tmp_path / "subject01_Setup_InverseDynamics.xml", r"<input_directory>[^<]*</input_directory>",
                  "<foo_bar>2</foo_bar><input_directory>/nonexistent/dir</input_directory>")
    with pytest.warns(UserWarning, match=r"not used by mbjax's inverse dynamics: .*:\d+: <foo_bar> \(not an "
                                         r"InverseDynamicsTool property\); .*<input_directory> '/nonexistent/dir', a "
                                         r"folder that does not exist"):
        read_id_setup(setup)
    with warnings.catch_warnings():  # the shipped setup: nothing to say
        warnings.simplefilter("error")
        read_id_setup(os.path.join(GAIT_ID, "subject01_Setup_InverseDynamics.xml"))


def test_external_loads_unknown_elements_and_repeated_times(tmp_path):
    _copy(tmp_path, GAIT_ID)
    grf = tmp_path / "subject01_walk1_grf.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_external_loads(grf)
    _edit(grf, r"<groups\s*/>", "<groups/><foo>1</foo>", tmp_path / "unk.xml")
    _edit(tmp_path / "unk.xml", r"<applied_to_body>", "<bar>0</bar><applied_to_body>")
    with pytest.warns(UserWarning, match=r"unk\.xml: not used by mbjax's external loads: .*unk\.xml:\d+: <foo> \(not "
                                         r"an ExternalLoads property\); .*unk\.xml:\d+: <bar> \(not an ExternalForce"):
        read_external_loads(tmp_path / "unk.xml")
    mot = tmp_path / "subject01_walk1_grf_0.45-0.95s.mot"
    table = read_storage(mot)
    time = np.array(table.time)
    time[11] = time[10]  # a repeated time: Storage reads it, the splines cannot use it
    write_storage(mot, table._replace(time=time), format="storage")
    with pytest.raises(ValueError, match=r"grf_0\.45-0\.95s\.mot \(datafile of .*subject01_walk1_grf\.xml\): time "
                                         r".* at row 12 does not increase from row 11"):
        read_external_loads(grf)


@pytest.mark.parametrize("tag,value,words", [
    ("optimizer_convergence_criterion", "-1", "must be a positive number, got '-1'"),
    ("optimizer_max_iterations", "0", "must be a positive integer, got '0'"),
    ("activation_exponent", "0", r"must be a finite number > 1 .*got '0'"),
    ("activation_exponent", "NaN", r"must be a finite number > 1 .*got 'NaN'"),
])
def test_invalid_so_settings_refused_by_element(tmp_path, tag, value, words):
    src = os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml")
    text = open(src).read()
    if f"<{tag}>" in text:
        path = _edit(src, rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", tmp_path / "so.xml")
    else:
        path = _edit(src, r"</StaticOptimization>", f"<{tag}>{value}</{tag}></StaticOptimization>", tmp_path / "so.xml")
    with pytest.raises(ValueError, match=rf"so\.xml:\d+: <{tag}>: {words}"):
        read_so_setup(path)


def test_output_precision_refused_and_unused_solver_settings_named(tmp_path):
    src = os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml")
    bad = _edit(src, r"<output_precision>[^<]*</output_precision>", "<output_precision>-3</output_precision>",
                tmp_path / "prec.xml")
    with pytest.raises(ValueError, match=r"prec\.xml:\d+: <output_precision>: must be a non-negative integer, "
                                         r"got '-3'"):
        read_so_setup(bad)
    path = _edit(src, r"</StaticOptimization>",
                 "<optimizer_convergence_criterion>1e-2</optimizer_convergence_criterion>"
                 "<optimizer_max_iterations>5</optimizer_max_iterations></StaticOptimization>", tmp_path / "so.xml")
    with pytest.warns(UserWarning, match=r"not used by mbjax's static optimization: "
                                         r".*<optimizer_convergence_criterion> 0\.01 \(mbjax solves each frame "
                                         r"to rounding.*<optimizer_max_iterations> 5"):
        read_so_setup(path)


# ----------------------------------------------------------------------------------------------
# joint reactions' forces file, float32
# ----------------------------------------------------------------------------------------------


def test_forces_file_with_a_duplicated_label_refused():
    names = tuple(ARM.muscle_names)
    labels = names + (names[0],)
    forces = mbjax.io.Table(np.arange(3) / 100.0, labels, np.ones((3, len(labels))), False, {"file": "so_force.sto"})
    with pytest.raises(ValueError, match=rf"JointReaction: the forces file so_force\.sto has more than one column "
                                         rf"labelled \['{names[0]}'\]"):
        actuator_forces(ARM, forces, np.arange(3) / 100.0, where="JointReaction")


def test_float32_is_warned_once_naming_the_tool(tmp_path, monkeypatch):
    import jax

    import mbjax.opensim.tools.id
    import mbjax.opensim.tools.id.motion

    monkeypatch.setattr(mbjax.opensim.tools.id.motion, "_FLOAT32_WARNED", set())
    table = read_storage(_short_motion(tmp_path, 8))
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.warns(UserWarning, match=r"inverse dynamics runs in float32 .*jax_enable_x64"):
            mbjax.opensim.tools.id.inverse_dynamics_motion(ARM, table)
        with warnings.catch_warnings(record=True) as again:
            warnings.simplefilter("always")
            mbjax.opensim.tools.id.inverse_dynamics_motion(ARM, table)  # once
        assert not [w for w in again if "runs in float32" in str(w.message)], [str(w.message) for w in again]
    finally:
        jax.config.update("jax_enable_x64", True)


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------


def _cli(capsys, *args):
    return run_cli(capsys, *args, traceback_ok=True)


def test_cli_bad_accuracy_and_output_under_a_file_are_usage_errors(tmp_path, capsys):
    setup = os.path.join(DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
    for value in ("-1", "nan"):
        rc, _, err = _cli(capsys, "ik", setup, "--accuracy", value, "--no-compile-cache")
        assert rc == 2 and "--accuracy: must be a positive finite number" in err, err
    (tmp_path / "NOTICE").write_text("a file")
    rc, _, err = _cli(capsys, "ik", setup, "--plot", str(tmp_path / "NOTICE" / "x.png"), "--no-compile-cache")
    assert rc == 2 and f"{tmp_path / 'NOTICE'} is a file, not a directory" in err, err
    so = os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml")
    rc, _, err = _cli(capsys, "so", so, "--out", str(tmp_path / "NOTICE" / "res"), "--no-compile-cache")
    assert rc == 2 and f"{tmp_path / 'NOTICE'} is a file, not a directory" in err, err


def test_cli_warns_once_without_source_lines(tmp_path, capsys):
    _copy(tmp_path, ARM_SO)
    shutil.copy(arm26_path(), tmp_path / "arm26.osim")
    setup = _edit(tmp_path / "arm26_Setup_StaticOptimization.xml", r"<coordinates_file>[^<]*</coordinates_file>",
                  "<foo_bar>1</foo_bar><coordinates_file>nowhere.mot</coordinates_file>")
    rc, _, err = _cli(capsys, "so", str(setup), "--model", "arm26", "--no-compile-cache")
    assert rc == 1 and "<coordinates_file> " in err and "nowhere.mot: not found" in err, err
    assert err.count("<foo_bar> (not an AnalyzeTool property)") == 1, err
    assert "warnings.warn" not in err and ".py:" not in err, err


def test_cli_run_checks_every_setups_files_before_the_first_runs(tmp_path, capsys):
    for name in ("arm26_Setup_InverseKinematics.xml", "arm26_elbow_flex.trc"):
        shutil.copy(os.path.join(DATA, "arm26_ik", name), tmp_path / name)
    shutil.copy(arm26_path(), tmp_path / "arm26.osim")
    ik = tmp_path / "arm26_Setup_InverseKinematics.xml"
    so = _edit(os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml"),
               r"<coordinates_file>[^<]*</coordinates_file>", "<coordinates_file>nowhere.mot</coordinates_file>",
               tmp_path / "so.xml")
    rc, _, err = _cli(capsys, "run", str(ik), str(so), "--no-compile-cache")
    assert rc == 1 and "so.xml: <coordinates_file>" in err and "nowhere.mot: not found" in err, err
    assert not (tmp_path / "arm26_InverseKinematics.mot").exists()
    # the IK's own output is what the SO reads: not missing; a time range past it is found when it is there
    so = _edit(os.path.join(ARM_SO, "arm26_Setup_StaticOptimization.xml"), r"<initial_time>[^<]*</initial_time>",
               "<initial_time>5</initial_time>", tmp_path / "so.xml")
    _edit(so, r"<final_time>[^<]*</final_time>", "<final_time>6</final_time>")
    shutil.copy(os.path.join(ARM_SO, "arm26_InverseKinematics.mot"), tmp_path / "arm26_InverseKinematics.mot")
    rc, _, err = _cli(capsys, "run", str(so), "--no-compile-cache")
    assert rc == 1 and re.search(r"time range \[5, 6\] s does not overlap the file's times \[0, 1\] s", err), err


def test_disabled_muscle_needs_no_forces_column_in_joint_reactions(tmp_path):
    model = _arm_without(tmp_path, "disabled")
    names = tuple(n for n in model.muscle_names if n != "BIClong")
    forces = mbjax.io.Table(np.arange(3) / 100.0, names, np.ones((3, len(names))), False, {})
    got, values = actuator_forces(model, forces, np.arange(3) / 100.0, where="JointReaction")
    assert got == names and values.shape == (3, len(names))
    with pytest.raises(ValueError, match=r"no column for the actuators \['BIClong'\]"):
        actuator_forces(ARM, forces, np.arange(3) / 100.0, where="JointReaction")
