"""Bad inputs of the sixth survey around the command line and the setup files: tools that would
overwrite their own inputs, a full disk, contradictory moment-arms flags, setup elements given
twice, two tools in one setup, OpenSim's ``file=`` attribute, and ``python -m mbjax``."""

from __future__ import annotations

import os
import re
import runpy
import shutil
import sys
import warnings

import numpy as np
import pytest

import mbjax
from mbjax.io import Table, read_storage, write_storage
from _cli_run import run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "opensim_models")
IK_SETUP = "arm26_Setup_InverseKinematics.xml"


def _main(capsys, *args):
    return run_cli(capsys, *args, no_compile_cache=True)


def _arm26_ik(tmp_path):
    for f in (IK_SETUP, "arm26_elbow_flex.trc"):
        shutil.copy(os.path.join(DATA, "arm26_ik", f), tmp_path)
    shutil.copy(mbjax.models.model_path("arm26"), tmp_path / "arm26.osim")
    return tmp_path / IK_SETUP


def _gait(tmp_path):
    walk = tmp_path / "walk"
    shutil.copytree(mbjax.models.pipeline_path("gait2354_walk"), walk)
    return walk


def _digests(folder):
    return {p: open(os.path.join(folder, p), "rb").read() for p in sorted(os.listdir(folder))
            if os.path.isfile(os.path.join(folder, p))}


# --- the tools refuse to overwrite their own inputs, before computing --------------------------

@pytest.mark.parametrize("out, input_", [("arm26_elbow_flex.trc", "<marker_file>"), ("arm26.osim", "<model_file>"),
                                         (IK_SETUP, "the setup file")])
def test_ik_out_naming_an_input_refused(tmp_path, capsys, monkeypatch, out, input_):
    setup = _arm26_ik(tmp_path)
    before = _digests(tmp_path)
    monkeypatch.chdir(tmp_path)
    rc, _, err = _main(capsys, "ik", str(setup), "--out", out, "--quiet")
    assert rc == 2 and f"--out {out!r} is {input_}" in err and "an input of this run" in err, err
    assert _digests(tmp_path) == before


def test_ik_plot_same_as_out_refused(tmp_path, capsys):
    setup = _arm26_ik(tmp_path)
    same = str(tmp_path / "same.png")
    rc, _, err = _main(capsys, "ik", str(setup), "--out", same, "--plot", same, "--quiet")
    assert rc == 2 and "--plot" in err and "--out" in err and "are the same file" in err, err


def test_ik_setup_output_naming_its_marker_file_refused(tmp_path, capsys):
    setup = _arm26_ik(tmp_path)
    text = setup.read_text()
    setup.write_text(re.sub(r"<output_motion_file>[^<]*</output_motion_file>",
                            "<output_motion_file>arm26_elbow_flex.trc</output_motion_file>", text))
    before = _digests(tmp_path)
    rc, _, err = _main(capsys, "ik", str(setup), "--quiet")
    assert rc == 2 and "its <output_motion_file>" in err and "is <marker_file> of" in err, err
    rc, _, err = _main(capsys, "run", str(setup), "--quiet")
    assert rc == 2 and "<output_motion_file>" in err and "<marker_file>" in err, err
    with pytest.raises(ValueError, match=r"IK output motion file .*arm26_elbow_flex\.trc' is <marker_file> of"):
        mbjax.opensim.inverse_kinematics_from_setup(setup, mbjax.models.arm26(ignore_wrapping=True), write=True)
    assert _digests(tmp_path) == before


@pytest.mark.parametrize("out, input_", [("subject01_walk1_ik.mot", "<coordinates_file> of"),
                                         ("subject01_walk1_grf.mot", "the <datafile> of"),
                                         ("subject01_walk1_grf.xml", "<external_loads_file> of")])
def test_id_out_naming_an_input_refused(tmp_path, capsys, out, input_):
    walk = _gait(tmp_path)
    before = _digests(walk)
    rc, _, err = _main(capsys, "id", str(walk / "subject01_Setup_InverseDynamics.xml"), "--out", str(walk / out),
                       "--quiet")
    assert rc == 2 and f"{out}' is {input_}" in err, err
    with pytest.raises(ValueError, match=f"generalized-force output file .*{re.escape(out)}' is {input_}"):
        mbjax.opensim.inverse_dynamics_from_setup(walk / "subject01_Setup_InverseDynamics.xml",
                                                  output_file=walk / out)
    assert _digests(walk) == before


def test_so_and_jr_setups_writing_their_inputs_refused(tmp_path):
    so = tmp_path / "so"
    shutil.copytree(os.path.join(DATA, "arm26_so"), so)
    shutil.copy(so / "arm26_InverseKinematics.mot", so / "arm26_StaticOptimization_activation.sto")
    text = (so / "arm26_Setup_StaticOptimization.xml").read_text()
    text = re.sub(r"<results_directory>[^<]*</results_directory>", "<results_directory>.</results_directory>", text)
    text = re.sub(r"<coordinates_file>[^<]*</coordinates_file>",
                  "<coordinates_file>arm26_StaticOptimization_activation.sto</coordinates_file>", text)
    (so / "bad.xml").write_text(text)
    with pytest.raises(ValueError, match=r"activation file .* is <coordinates_file> of .*bad\.xml"):
        mbjax.opensim.static_optimization_from_setup(so / "bad.xml", mbjax.models.arm26(ignore_wrapping=True))

    jr = tmp_path / "jr"
    jr.mkdir()
    t = np.linspace(0.0, 1.0, 11)
    write_storage(jr / "q.sto", Table(t, ("q1", "q2"), np.zeros((11, 2)), False, {"name": "Coordinates"}),
                  format="storage")
    write_storage(jr / "pendulum_JointReaction_ReactionLoads.sto",
                  Table(t, ("Torq1", "Torq2"), np.zeros((11, 2)), False, {"name": "forces"}), format="storage")
    (jr / "setup.xml").write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="pendulum">
  <model_file>{mbjax.models.model_path("double_pendulum")}</model_file><results_directory>.</results_directory>
  <initial_time>0</initial_time><final_time>1</final_time>
  <AnalysisSet name="Analyses"><objects><JointReaction name="JointReaction"><on>true</on>
    <forces_file>pendulum_JointReaction_ReactionLoads.sto</forces_file></JointReaction></objects></AnalysisSet>
  <coordinates_file>q.sto</coordinates_file></AnalyzeTool></OpenSimDocument>""")
    with pytest.raises(ValueError, match=r"joint reaction loads file .* is <forces_file> of .*setup\.xml"):
        mbjax.opensim.joint_reactions_from_setup(jr / "setup.xml")


def test_output_beside_the_inputs_still_prepared(tmp_path):
    """The valid twin: an output that is none of the inputs is prepared quietly."""
    from mbjax.io.output_paths import prepare_output

    setup = _arm26_ik(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = prepare_output(tmp_path / "new" / "ik.mot", setup, "IK motion file",
                             [("marker_file", str(tmp_path / "arm26_elbow_flex.trc"))])
    assert out == str(tmp_path / "new" / "ik.mot") and os.path.isdir(tmp_path / "new")


# --- a full disk names the file ------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_full_disk_names_the_file(tmp_path):
    table = Table(np.arange(3) * 0.1, ("a",), np.zeros((3, 1)), False, {"name": "Coordinates"})
    with pytest.raises(OSError, match=r"write_storage: cannot write '/dev/full' \(the OpenSim Storage 'Coordinates'.*"
                                      "No space left on device"):
        write_storage("/dev/full", table, format="storage")
    from mbjax.io import MarkerData, write_trc

    markers = MarkerData(np.arange(3) * 0.1, ("m",), np.zeros((3, 1, 3)), rate=10.0)
    with pytest.raises(OSError, match=r"write_trc: cannot write '/dev/full' \(the \.trc marker file"):
        write_trc("/dev/full", markers)
    write_storage(tmp_path / "ok.sto", table, format="storage")  # the valid twin
    assert read_storage(tmp_path / "ok.sto").labels == ("a",)


# --- moment-arms flags that contradict each other ------------------------------------------------

def test_moment_arms_contradictory_flags(tmp_path, capsys, monkeypatch):
    out = str(tmp_path / "x.csv")
    base = ["moment-arms", "arm26", "--ignore-wrapping", "--out", out]
    rc, _, err = _main(capsys, *base, "--random", "5", "--vary", "r_elbow_flex=0:1:0.5")
    assert rc == 2 and "--random 5 and --vary r_elbow_flex=0:1:0.5 cannot be combined" in err, err
    rc, _, err = _main(capsys, *base, "--wrapping", "smooth", "--vary", "r_elbow_flex=0:1:0.5")
    assert rc == 2 and "--wrapping smooth and --ignore-wrapping contradict" in err, err
    for k in ("MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
              "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_orte_hnp_uri", "PMIX_RANK"):
        monkeypatch.delenv(k, raising=False)
    rc, _, err = _main(capsys, *base, "--vary", "r_elbow_flex=0:1:0.5", "--process-id", "3")
    assert rc == 2 and "--process-id 3:" in err and "--coordinator, --num-processes not given" in err, err
    assert not os.path.exists(out)  # (valid sweeps: tests/test_cli.py)


# --- setup files: an element twice, two tools, file= ---------------------------------------------

def test_setup_element_given_twice_warns(tmp_path):
    from mbjax.opensim import read_id_setup
    from mbjax.opensim import read_ik_setup

    walk = _gait(tmp_path)
    setup = walk / "subject01_Setup_InverseDynamics.xml"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_id_setup(setup).time_range is not None  # the valid twin: quiet
    text = setup.read_text()
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if "<time_range>" in ln)
    lines.insert(k + 1, "<time_range> 0.5 0.7 </time_range>")
    setup.write_text("\n".join(lines))
    with pytest.warns(UserWarning, match=rf"<time_range> given twice in <InverseDynamicsTool.*\(lines {k + 1} and "
                                         rf"{k + 2}\): the first is used"):
        first = read_id_setup(setup).time_range
    assert first != (0.5, 0.7)
    ik = _arm26_ik(tmp_path)
    ik.write_text(ik.read_text().replace("<accuracy>", "<accuracy>1e-5</accuracy><accuracy>", 1))
    with pytest.warns(UserWarning, match="<accuracy> given twice in <InverseKinematicsTool"):
        read_ik_setup(ik)


def test_two_tools_in_one_setup_refused(tmp_path):
    from mbjax.opensim import read_id_setup
    from mbjax.opensim import read_so_setup

    walk = _gait(tmp_path)
    setup = walk / "subject01_Setup_InverseDynamics.xml"
    setup.write_text(setup.read_text().replace(
        "<InverseDynamicsTool", '<InverseDynamicsTool name="other"><time_range>0 1</time_range>'
        "</InverseDynamicsTool>\n<InverseDynamicsTool", 1))
    with pytest.raises(ValueError, match=r"subject01_Setup_InverseDynamics\.xml: 2 <InverseDynamicsTool> elements "
                                         r"\(lines \d+, \d+\): one tool per setup file"):
        read_id_setup(setup)
    so = walk / "subject01_Setup_StaticOptimization.xml"
    text = so.read_text()
    tool = text[text.index("<AnalyzeTool"):text.index("</AnalyzeTool>") + len("</AnalyzeTool>")]
    so.write_text(text.replace(tool, tool + "\n" + tool))
    with pytest.raises(ValueError, match=r"2 <AnalyzeTool> elements \(lines \d+, \d+\): one tool per setup file"):
        read_so_setup(so)


def test_file_attribute_read_as_opensim_reads_it(tmp_path):
    from mbjax.opensim import read_ik_setup
    from mbjax.io import read_external_loads

    setup = _arm26_ik(tmp_path)
    text = setup.read_text()
    start, end = text.index("<IKTaskSet"), text.index("</IKTaskSet>") + len("</IKTaskSet>")
    want = read_ik_setup(setup).marker_weights
    (tmp_path / "tasks.xml").write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="30000">'
                                        + text[start:end] + "</OpenSimDocument>")
    setup.write_text(text[:start] + '<IKTaskSet file="tasks.xml"/>' + text[end:])
    got = read_ik_setup(setup)
    assert got.marker_weights == want and len(want) == 3
    setup.write_text(text[:start] + '<IKTaskSet file="nowhere.xml"/>' + text[end:])
    with pytest.raises(ValueError, match=r"<IKTaskSet>: file='nowhere.xml': no such file"):
        read_ik_setup(setup)
    (tmp_path / "other.xml").write_text('<OpenSimDocument Version="30000"><ForceSet/></OpenSimDocument>')
    setup.write_text(text[:start] + '<IKTaskSet file="other.xml"/>' + text[end:])
    with pytest.raises(ValueError, match=r"<IKTaskSet>: file='other.xml' .* holds <ForceSet>, not <IKTaskSet>"):
        read_ik_setup(setup)

    # an ExternalLoads' object given by file=
    walk = _gait(tmp_path)
    grf = walk / "subject01_walk1_grf.xml"
    text = grf.read_text()
    start = text.index("<ExternalForce")
    end = text.index("</ExternalForce>") + len("</ExternalForce>")
    name = re.search(r'name="([^"]+)"', text[start:end]).group(1)
    model = mbjax.models.load("gait2354")
    t = np.array([0.6])
    want = read_external_loads(grf).at(t, model).bodies
    (walk / "force.xml").write_text('<OpenSimDocument Version="30000">' + text[start:end] + "</OpenSimDocument>")
    grf.write_text(text[:start] + f'<ExternalForce name="{name}" file="force.xml"/>' + text[end:])
    assert read_external_loads(grf).at(t, model).bodies == want


# --- python -m mbjax -----------------------------------------------------------------------------

def test_python_m_mbjax_runs_the_cli(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["mbjax", "--version"])
    with pytest.raises(SystemExit) as e:
        runpy.run_module("mbjax", run_name="__main__")
    assert e.value.code == 0 and capsys.readouterr().out.startswith("mbjax ")
