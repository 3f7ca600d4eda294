"""Data and setup files read differently from OpenSim or named too vaguely: ``inDegrees`` values
OpenSim 4.6 reads as radians, a label repeated among an ExternalForce's columns (taken by position,
as OpenSim takes them), a folder in ``<output_gen_force_file>``, ``run_setups``' documented errors
(``Failure`` / ``UsageError``, the original chained; each warning once) and IK coordinate tasks naming
no coordinate or an unknown ``<value_type>``: each read as OpenSim reads it or refused naming the
file, line, element or column."""

import os
import re
import shutil
import warnings

import numpy as np
import pytest

from mbjax.cli import Failure, UsageError, run_setups
from mbjax.io import read_external_loads, read_storage
from mbjax.io.output_paths import OutputPathError
from mbjax.models import arm26_path, model_path
from mbjax.opensim import inverse_kinematics_from_setup
from mbjax.opensim.tools.id import read_coordinates, read_id_setup
from mbjax.opensim.scale_setup import read_scale_setup
from mbjax.opensim.tools.ik import read_ik_setup

from _osim_text import line_of, quietly, replace_once, write_text
from _cli_run import run_cli

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
IK_SETUP = os.path.join(DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
SO_SETUP = os.path.join(DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
ARM_MOT = os.path.join(DATA, "arm26_so", "arm26_InverseKinematics.mot")


def _main(capsys, *args):
    rc, _, err = run_cli(capsys, *args)
    return rc, err


# --- inDegrees: only yes / no, as OpenSim reads them ---------------------------------------------

def _mot(value, version=1):
    if version == 1:
        head = f"trial\nversion=1\nnRows=2\nnColumns=2\ninDegrees={value}\nendheader\n"
    else:
        head = f"inDegrees={value}\nDataType=double\nversion=3\nOpenSimVersion=4.6\nendheader\n"
    return head + "time\ta\n0\t1\n0.1\t2\n"


@pytest.mark.parametrize("version, name, line", [(1, "c.mot", 5), (3, "c.sto", 1)])
@pytest.mark.parametrize("value", ["true", "True", "TRUE", "false", "1"])
def test_indegrees_true_or_false_refused_as_opensim_reads_radians(tmp_path, version, name, line, value):
    path = write_text(tmp_path, _mot(value, version), name)
    with pytest.raises(ValueError, match=rf"{re.escape(path)}:{line}: inDegrees='{value}', expected yes or no: "
                                         r"OpenSim 4\.6 would read this file as radians .*write inDegrees=yes "
                                         r"\(values in degrees\) or inDegrees=no"):
        read_storage(path)


def test_indegrees_y_refused_saying_opensim_reads_degrees(tmp_path):
    path = write_text(tmp_path, _mot("y"), "y.mot")
    with pytest.raises(ValueError, match=r"y\.mot:5: inDegrees='y', expected yes or no: OpenSim 4\.6 would read "
                                         r"this file as degrees"):
        read_storage(path)


@pytest.mark.parametrize("value, degrees", [("yes", True), ("Yes", True), ("YES ", True), ("no", False),
                                            ("NO", False)])
def test_indegrees_yes_and_no_in_any_case_read(tmp_path, value, degrees):
    for version, name in ((1, "c.mot"), (3, "c.sto")):
        assert quietly(read_storage, write_text(tmp_path, _mot(value, version), name)).in_degrees is degrees


def test_indegrees_true_refused_by_the_tools_readers(tmp_path):
    coords = write_text(tmp_path, _mot("true"), "coords.mot")
    with pytest.raises(ValueError, match=r"coords\.mot:5: inDegrees='true'.*as radians"):
        read_coordinates(str(tmp_path / "setup.xml"), coords)
    write_text(tmp_path, _grf(["f_px", "f_py"], indegrees="true"), "grf.mot")
    with pytest.raises(ValueError, match=r"grf\.mot:5: inDegrees='true'.*as radians"):
        read_external_loads(write_text(tmp_path, LOADS, "loads.xml"))


# --- ExternalForce identifiers: columns taken by position ----------------------------------------

LOADS = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <ExternalLoads name="loads">
    <objects>
      <ExternalForce name="right">
        <applied_to_body>r_humerus</applied_to_body>
        <force_expressed_in_body>ground</force_expressed_in_body>
        <point_expressed_in_body>ground</point_expressed_in_body>
        <force_identifier>f_v</force_identifier>
        <point_identifier>f_p</point_identifier>
      </ExternalForce>
    </objects>
    <datafile>grf.mot</datafile>
  </ExternalLoads>
</OpenSimDocument>
"""


def _grf(point_labels, indegrees="no"):
    labels = ["time", "f_vx", "f_vy", "f_vz", point_labels[0], point_labels[1], "f_pz"]
    rows = [[k * 0.01, 10 + k, 700 - k, -5.0, 0.1 * k, -0.0075 + 0.001 * k, 0.2] for k in range(6)]
    return (f"grf\nversion=1\nnRows={len(rows)}\nnColumns={len(labels)}\ninDegrees={indegrees}\nendheader\n"
            + "\t".join(labels) + "\n" + "".join("\t".join(f"{v:.6g}" for v in r) + "\n" for r in rows))


def test_duplicated_label_among_a_forces_columns_read_by_position_as_opensim(tmp_path):
    write_text(tmp_path, _grf(["f_px", "f_py"]), "grf.mot")
    xml = write_text(tmp_path, LOADS, "loads.xml")
    t = np.array([0.012, 0.03])
    good = quietly(read_external_loads, xml).at(t)
    write_text(tmp_path, _grf(["f_px", "f_px"]), "grf.mot")  # the py column labelled px
    with pytest.warns(UserWarning) as record:
        loads = read_external_loads(xml)
    text = [str(w.message) for w in record]
    assert any(re.search(r"grf\.mot:7: duplicate column label\(s\) 'f_px' \(columns 5, 6\): a tool that looks a "
                         r"column up by this label \(a coordinate's\) refuses it, and an ExternalForce identifier "
                         r"takes the columns by position, as OpenSim does", m) for m in text), text
    assert not any("would use only one of the columns" in m for m in text), text
    force_line = line_of(LOADS, '<ExternalForce name="right">')
    assert any(re.search(rf"grf\.mot: {re.escape(xml)}:{force_line}: <ExternalForce name='right'>: "
                         r"<point_identifier> 'f_p' matches the columns 5 \('f_px'\), 6 \('f_px'\), 7 \('f_pz'\), "
                         r"a label repeated among them; they are read as x, y, z by position, as OpenSim", m)
               for m in text), text
    assert loads.forces[0].point_columns == ("f_px", "f_px", "f_pz")
    assert loads.forces[0].point_index == (3, 4, 5)
    got = loads.at(t)
    np.testing.assert_array_equal(got.points, good.points)  # y from column 6 (py's data), not px's again
    np.testing.assert_array_equal(got.forces, good.forces)
    assert not np.allclose(got.points[:, 0, 1], got.points[:, 0, 0])


# --- <output_gen_force_file>: a folder dropped with a warning, a folder name refused ---------------

def _id_setup(tmp_path, out="inverse_dynamics.sto", results="results", coords="coords.mot", model=None,
              name="id.xml"):
    text = f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000">
  <InverseDynamicsTool name="arm">
    <results_directory>{results}</results_directory>
    <model_file>{model or arm26_path()}</model_file>
    <time_range>0 0.5</time_range>
    <forces_to_exclude>Muscles</forces_to_exclude>
    <coordinates_file>{coords}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
    <output_gen_force_file>{out}</output_gen_force_file>
  </InverseDynamicsTool>
</OpenSimDocument>
"""
    if coords == "coords.mot":
        shutil.copy(ARM_MOT, tmp_path / "coords.mot")
    return write_text(tmp_path, text, name), text


@pytest.mark.parametrize("out", ["sub/dir/inverse_dynamics.sto", "sub\\inverse_dynamics"])
def test_folder_in_output_gen_force_file_dropped_with_a_warning(tmp_path, out):
    path, text = _id_setup(tmp_path, out)
    line = line_of(text, "<output_gen_force_file>")
    folder = out[:max(out.rfind("/"), out.rfind("\\")) + 1]
    written = str(tmp_path / "results" / "inverse_dynamics.sto")
    with pytest.warns(UserWarning, match=rf"{re.escape(path)}:{line}: <output_gen_force_file>: {re.escape(repr(out))} "
                                         rf"names the folder {re.escape(repr(folder))}, where only a file name is "
                                         rf"expected: OpenSim ignores the folder, .*output file is {re.escape(written)}"):
        setup = read_id_setup(path)
    assert setup.output_file == written
    assert quietly(read_id_setup, _id_setup(tmp_path, "inverse_dynamics.sto")[0]).output_file == written


@pytest.mark.parametrize("out", [".", "..", "sub/", "sub/."])
def test_folder_as_output_gen_force_file_refused_before_any_work(tmp_path, capsys, out):
    path, text = _id_setup(tmp_path, out, model=str(tmp_path / "no_model.osim"))
    line = line_of(text, "<output_gen_force_file>")
    message = (rf"{re.escape(path)}:{line}: <output_gen_force_file>: {re.escape(repr(out))} names a folder, not a "
               r"file \(OpenSim 4\.6 would write a hidden file '\.sto' into <results_directory>\); give a file name")
    with pytest.raises(ValueError, match=message):
        read_id_setup(path)
    with pytest.raises(Failure, match=message):  # before the (missing) model is looked for
        run_setups([path], quiet=True)
    rc, err = _main(capsys, "id", path, "--quiet")
    assert rc == 1 and re.search(message, err), err
    assert not (tmp_path / "results").exists()


# --- run_setups: Failure / UsageError, the original error chained; the CLI's statuses --------------

def _so_setup(tmp_path):
    text = open(SO_SETUP).read()
    assert re.search(r"<use_model_force_set>\s*true", text)
    return write_text(tmp_path, re.sub(r"<use_model_force_set>\s*true", "<use_model_force_set> false", text, count=1),
                      "so.xml")


def _family_cases(tmp_path):
    """``(setup, original error class, Failure or UsageError, exit status, message)``, each found
    before a model is built, and one (an unwritable results folder) after."""
    cut = _id_setup(tmp_path, name="cut.xml")[0]
    text = open(cut).read()
    write_text(tmp_path, replace_once(text, "<time_range>0 0.5</time_range>", "<time_range>0.5</time_range>"), "cut.xml")
    missing, _ = _id_setup(tmp_path, coords="none.mot", name="missing.xml")
    same, _ = _id_setup(tmp_path, out="coords.mot", results=".", name="same.xml")
    (tmp_path / "afile").write_text("x")
    blocked, _ = _id_setup(tmp_path, results="afile/sub", name="blocked.xml")
    return [(cut, ValueError, Failure, 1, r"cut\.xml:\d+: <time_range>: <time_range> must hold two numbers"),
            (_so_setup(tmp_path), NotImplementedError, Failure, 1, r"so\.xml: <use_model_force_set> false"),
            (missing, FileNotFoundError, Failure, 1, r"missing\.xml: <coordinates_file> .*none\.mot: not found"),
            (same, OutputPathError, UsageError, 2, r"same\.xml: its <results_directory>/<output_gen_force_file> "
                                                   r".*coords\.mot.* is <coordinates_file>"),
            (blocked, OutputPathError, UsageError, 2, r"blocked\.xml: cannot create the folder .*afile/sub")]


def test_run_setups_raises_the_documented_errors_and_the_cli_keeps_its_statuses(tmp_path, capsys):
    for setup, original, documented, status, message in _family_cases(tmp_path):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(documented, match=message) as info:
                run_setups([setup], quiet=True)
        assert isinstance(info.value.__cause__, original), (setup, repr(info.value.__cause__))
        assert str(info.value) == str(info.value.__cause__)
        rc, err = _main(capsys, "run", setup, "--quiet")
        assert rc == status and re.search(message, err), (setup, rc, err)


@pytest.mark.parametrize("task", ["", "<IKCoordinateTask name='nope'><apply>true</apply></IKCoordinateTask>"])
def test_run_setups_shows_each_warning_once(tmp_path, task):
    setup = _ik_setup(tmp_path, "<constraint_weight> infinity </constraint_weight>",
                      "<constraint_weight> 20 </constraint_weight>", task=task)
    text = replace_once(open(setup).read(), "<time_range>       0.00000000       1.00000000 </time_range>",
                        "<time_range> 0 0.02 </time_range>")
    write_text(tmp_path, text, "ik.xml")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")  # every warning raised reaches the display: each shown once
        if task:
            with pytest.raises(Failure, match="no coordinate 'nope'"):
                run_setups([setup], quiet=True)
        else:
            assert run_setups([setup], quiet=True, compile_cache=False) == 0
    shown = [str(w.message) for w in record if "<constraint_weight> 20" in str(w.message)]
    assert len(shown) == 1, shown
    assert len({str(w.message) for w in record}) == len(record), [str(w.message) for w in record]


# --- IK coordinate tasks: the file, the line, the allowed values, before the model is built --------

def _ik_setup(tmp_path, old=None, new=None, task="<IKCoordinateTask name='nope'><apply>true</apply>"
                                                 "<weight>1</weight></IKCoordinateTask>"):
    shutil.copy(os.path.join(DATA, "arm26_ik", "arm26_elbow_flex.trc"), tmp_path)
    text = replace_once(open(IK_SETUP).read(), "<model_file> arm26.osim </model_file>",
                        f"<model_file>{arm26_path()}</model_file>")
    text = replace_once(text, "</objects>", f"{task}\n      </objects>")
    if old is not None:
        text = replace_once(text, old, new)
    return write_text(tmp_path, text, "ik.xml")


@pytest.mark.parametrize("value_type", ["manual", "Manual_Value", "from file"])
def test_unknown_value_type_refused_by_the_setup_reader(tmp_path, value_type):
    task = (f"<IKCoordinateTask name='r_elbow_flex'><apply>true</apply><weight>1</weight>"
            f"<value_type>{value_type}</value_type></IKCoordinateTask>")
    path = _ik_setup(tmp_path, task=task)
    line = line_of(open(path).read(), "<IKCoordinateTask")
    with pytest.raises(ValueError, match=rf"ik\.xml:{line}: <IKCoordinateTask name='r_elbow_flex'>: <value_type> "
                                         rf"'{value_type}' is not a value type of an IKCoordinateTask; give one of "
                                         r"default_value, manual_value, from_file"):
        read_ik_setup(path)


def test_coordinate_task_naming_no_coordinate_refused_before_the_model_is_built(tmp_path, capsys, monkeypatch):
    path = _ik_setup(tmp_path)
    line = line_of(open(path).read(), "<IKCoordinateTask")
    message = (rf"{re.escape(path)}:{line}: <IKCoordinateTask name='nope'>: no coordinate 'nope' in the model "
               rf"{re.escape(arm26_path())}; its coordinates are \('r_shoulder_elev', 'r_elbow_flex'\)")
    import mbjax.opensim.model.osim as osim_module

    def built(*args, **kwargs):
        raise AssertionError("the model was built")

    monkeypatch.setattr(osim_module, "load_osim", built)
    with pytest.raises(ValueError, match=message):
        inverse_kinematics_from_setup(path)
    with pytest.raises(Failure, match=message):
        run_setups([path], quiet=True)
    rc, err = _main(capsys, "ik", path, "--quiet")
    assert rc == 1 and re.search(message, err), err


def test_unknown_value_type_refused_by_the_scale_setup_reader(tmp_path):
    folder = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk")
    text = open(os.path.join(folder, "subject01_Setup_Scale.xml")).read()
    text = replace_once(text, "<value_type> default_value </value_type>", "<value_type> manual </value_type>")
    line = line_of(text, '<IKCoordinateTask name="subtalar_angle_r">')
    path = write_text(tmp_path, text, "scale.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=rf"scale\.xml:{line}: <IKCoordinateTask name='subtalar_angle_r'>: "
                                             r"<value_type> 'manual' is not a value type of an IKCoordinateTask; "
                                             r"give one of default_value, manual_value, from_file"):
            read_scale_setup(path)
