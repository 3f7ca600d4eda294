"""Setup files, coordinate tables and IK arguments a user gets wrong: each refused or warned by name
(file, line, element), one rule per check shared by the tools, and the CLI's exit status as its
table documents it."""

import os
import pathlib
import re
import shutil
import warnings

import jax
import numpy as np
import pytest

import mbjax
import mbjax.cli as cli
from mbjax.opensim.tools.id import read_id_setup
from mbjax.analysis.ik import inverse_kinematics
from mbjax.opensim.tools.ik import read_ik_setup
from mbjax.io import MarkerData, Table, coordinates_from_table, load_markers, read_scale_setup, read_storage
from mbjax.opensim.tools.jr import read_jr_setup
from mbjax.models import arm26_path, model_path, pipeline_path
from mbjax.opensim import inverse_kinematics_from_setup
from mbjax.opensim.tools.so import read_so_setup
from _cli_run import run_cli

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
IK_SETUP = os.path.join(DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
SO_SETUP = os.path.join(DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
ID_SETUP = os.path.join(pipeline_path("gait2354_walk"), "subject01_Setup_InverseDynamics.xml")
SCALE_SETUP = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk", "subject01_Setup_Scale.xml")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = mbjax.io.load_osim(arm26_path(), ignore_wrapping=True)
MARKERS = load_markers(arm26_path(), ARM)


def _copy(src, tmp_path, old=None, new=None, name="setup.xml", count=1):
    """``src`` in ``tmp_path`` as ``name`` with the first ``count`` matches of ``old`` replaced (0: all)."""
    with open(src) as f:
        text = f.read()
    if old is not None:
        assert re.search(old, text), old
        text = re.sub(old, new, text, count=count)
    path = tmp_path / name
    path.write_text(text)
    return path


def _ik_setup(tmp_path, old=None, new=None, count=1):
    shutil.copy(os.path.join(DATA, "arm26_ik", "arm26_elbow_flex.trc"), tmp_path)
    return _copy(IK_SETUP, tmp_path, old, new, count=count)


def _line(path, text):
    with open(path) as f:
        return next(i for i, s in enumerate(f.read().splitlines(), 1) if text in s)


# ---- coordinates_from_table: degrees labelled as radians, the tools' one rule ----------------------

def _elbow_table(in_degrees, scale=1.0, metadata=None):
    t = np.linspace(0.0, 1.0, 11)
    deg = np.stack([np.linspace(0.0, 20.0, 11), np.linspace(10.0, 120.0, 11) * scale], axis=1)  # degrees
    return Table(t, ("r_shoulder_elev", "r_elbow_flex"), deg, in_degrees, metadata), deg


def test_coordinates_from_table_warns_degrees_read_as_radians():
    table, deg = _elbow_table(False, metadata={"file": "trial.mot"})
    with pytest.warns(UserWarning, match=r"coordinates_from_table: coordinates file trial\.mot: rotational "
                                         r"coordinate\(s\) beyond two turns: .*r_elbow_flex reaches 120 rad\. Is the "
                                         r"file in degrees\?"):
        q = coordinates_from_table(ARM, table)
    np.testing.assert_array_equal(q, deg)  # still computed: the user may mean it
    good, _ = _elbow_table(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = coordinates_from_table(ARM, good)
    np.testing.assert_allclose(q, deg * np.pi / 180.0, rtol=1e-15)  # the valid twin, in radians


def test_coordinates_from_table_warns_values_far_outside_the_range():
    table, _ = _elbow_table(True, scale=1000.0)  # degrees x 1000: thousands of radians
    with pytest.warns(UserWarning, match=r"coordinates table 'Coordinates': coordinate\(s\) far outside their "
                                         r"range .*r_elbow_flex reaches 2094, range \[0, 2\.269\]"):
        coordinates_from_table(ARM, table._replace(metadata={"name": "Coordinates"}))


def test_coordinates_from_table_file_without_inDegrees_line(tmp_path):
    """A ``.mot`` with no ``inDegrees`` line is read as radians (OpenSim's default): degrees in it warn."""
    src = os.path.join(DATA, "arm26_so", "arm26_InverseKinematics.mot")
    with open(src) as f:
        text = f.read()
    assert "inDegrees=yes\n" in text
    (tmp_path / "no_flag.mot").write_text(text.replace("inDegrees=yes\n", ""))
    with pytest.warns(UserWarning, match=r"coordinates file .*no_flag\.mot: rotational coordinate\(s\) beyond two "
                                         r"turns: r_elbow_flex reaches .* rad"):
        coordinates_from_table(ARM, read_storage(tmp_path / "no_flag.mot"))


# ---- ScaleTool <scales> ----------------------------------------------------------------------------

@pytest.mark.parametrize("scales, msg", [
    ("-1 -1 -1", r"<scales> of segment 'femur_r' must be positive, got '-1 -1 -1' \(a negative factor mirrors"),
    ("0 0 0", r"<scales> of segment 'femur_r' must be positive"),
    ("nan nan nan", r"<scales> of segment 'femur_r' must be three finite factors, got 'nan nan nan'"),
    ("inf inf inf", r"<scales> of segment 'femur_r' must be three finite factors"),
    ("1.1 1.1", r"<scales> of segment 'femur_r' must be three finite factors, got '1.1 1.1'"),
])
def test_read_scale_setup_refuses_mirroring_or_non_finite_scales(tmp_path, scales, msg):
    path = _copy(SCALE_SETUP, tmp_path, r"<scales>[^<]*</scales>", f"<scales> {scales} </scales>")
    line = _line(path, f"<scales> {scales} </scales>")
    with pytest.raises(ValueError, match=rf"setup\.xml:{line}: <scales>: {msg}"):
        read_scale_setup(path)


def test_read_scale_setup_valid_scales_and_non_uniform_still_named(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = read_scale_setup(_copy(SCALE_SETUP, tmp_path))
    assert s.manual["femur_r"] == 1.14724
    path = _copy(SCALE_SETUP, tmp_path, r"<scales>[^<]*</scales>", "<scales> 1.1 1.2 1.3 </scales>")
    with pytest.raises(NotImplementedError, match=r"only uniform manual scales are supported"):
        read_scale_setup(path)


# ---- IK setups: unknown tags inside tasks, tasks all switched off, time ranges ---------------------

@pytest.mark.parametrize("old, new, tag", [(r"<apply>([^<]*)</apply>", r"<aply>\1</aply>", "aply"),
                                           (r"<weight>([^<]*)</weight>", r"<wieght>\1</wieght>", "wieght")])
def test_read_ik_setup_names_unknown_tags_inside_tasks(tmp_path, old, new, tag):
    path = _ik_setup(tmp_path, old, new)
    line = _line(path, f"<{tag}>")
    with pytest.warns(UserWarning, match=rf"setup\.xml: not used by mbjax's inverse kinematics: .*setup\.xml:{line}: "
                                         rf"<{tag}> in <IKMarkerTask name='r_acromion'>"):
        read_ik_setup(path)


def test_read_ik_setup_top_level_misspelling_still_named_with_its_line(tmp_path):
    path = _ik_setup(tmp_path, r"<accuracy>([^<]*)</accuracy>", r"<acuracy>\1</acuracy>")
    with pytest.warns(UserWarning, match=rf"setup\.xml:{_line(path, '<acuracy>')}: <acuracy>"):
        read_ik_setup(path)
    with warnings.catch_warnings():  # the shipped setup: nothing to name
        warnings.simplefilter("error")
        s = read_ik_setup(_ik_setup(tmp_path))
    assert set(s.marker_weights) == {"r_acromion", "r_humerus_epicondyle", "r_radius_styloid"}


def test_inverse_kinematics_from_setup_every_marker_task_switched_off(tmp_path):
    path = _ik_setup(tmp_path, r"<apply> true </apply>", "<apply> false </apply>", count=0)
    with pytest.raises(ValueError, match=r"setup\.xml: no marker to track: every <IKMarkerTask> is switched off "
                                         r"\(<apply> false: 'r_acromion', 'r_humerus_epicondyle', 'r_radius_styloid'\)"):
        inverse_kinematics_from_setup(path, ARM, MARKERS)


def test_inverse_kinematics_from_setup_time_range_past_the_data_warns(tmp_path):
    """``<time_range> 0.95 2`` on data ending at 1 s: clipped with the ID tool's warning (same rule);
    the frames equal those of ``0.95 1``, which passes silently."""
    path = _ik_setup(tmp_path, r"<time_range>[^<]*</time_range>", "<time_range> 0.95 2 </time_range>")
    with pytest.warns(UserWarning, match=r"setup\.xml: marker file .*arm26_elbow_flex\.trc: InverseKinematicsTool's "
                                         r"time range \[0\.95, 2\] s goes past the file's times \[0, 1\] s: clipped"):
        r = inverse_kinematics_from_setup(path, ARM, MARKERS, max_steps=50)
    exact = _ik_setup(tmp_path, r"<time_range>[^<]*</time_range>", "<time_range> 0.95 1 </time_range>")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ok = inverse_kinematics_from_setup(exact, ARM, MARKERS, max_steps=50)
    trc = mbjax.io.read_trc(os.path.join(DATA, "arm26_ik", "arm26_elbow_flex.trc"))
    np.testing.assert_array_equal(r.time, trc.time[trc.time >= 0.95 - 1e-9])  # 7 frames, from the file
    np.testing.assert_array_equal(r.q, ok.q)


def test_inverse_kinematics_from_setup_time_range_outside_the_data_refused(tmp_path):
    path = _ik_setup(tmp_path, r"<time_range>[^<]*</time_range>", "<time_range> 5 6 </time_range>")
    with pytest.raises(ValueError, match=r"time range \[5, 6\] s does not overlap the file's times \[0, 1\] s"):
        inverse_kinematics_from_setup(path, ARM, MARKERS)


@pytest.mark.parametrize("reader, src", [(read_ik_setup, IK_SETUP), (read_id_setup, ID_SETUP)])
@pytest.mark.parametrize("value, msg", [("0.5 abc", r"<time_range> must hold two numbers, got '0.5 abc'"),
                                        ("nan 1", r"<time_range> must hold two numbers, got 'nan 1'"),
                                        ("0.9 0.5", r"<time_range> is reversed: its start 0.9 is after its end 0.5")])
def test_ik_and_id_time_range_read_by_one_rule(tmp_path, reader, src, value, msg):
    """``read_ik_setup`` and ``read_id_setup`` parse ``<time_range>`` alike (one reader)."""
    path = _copy(src, tmp_path, r"<time_range>[^<]*</time_range>", f"<time_range>{value}</time_range>")
    with pytest.raises(ValueError, match=rf"setup\.xml:{_line(path, '<time_range>')}: <time_range>: {msg}"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader(path)


# ---- low-pass cut-offs checked when a setup is read --------------------------------------------------

JR_SETUP = """<?xml version="1.0"?>
<OpenSimDocument Version="40000"><AnalyzeTool name="a">
<lowpass_cutoff_frequency_for_coordinates>{fc}</lowpass_cutoff_frequency_for_coordinates>
<AnalysisSet><objects><JointReaction name="jr"/></objects></AnalysisSet></AnalyzeTool></OpenSimDocument>
"""


def _cutoff_setup(tmp_path, tool, fc):
    if tool == "jr":
        path = tmp_path / "setup.xml"
        path.write_text(JR_SETUP.format(fc=fc))
        return path
    src = {"id": ID_SETUP, "so": SO_SETUP}[tool]
    return _copy(src, tmp_path, r"<lowpass_cutoff_frequency_for_coordinates>[^<]*<",
                 f"<lowpass_cutoff_frequency_for_coordinates>{fc}<")


READERS = {"id": read_id_setup, "so": read_so_setup, "jr": read_jr_setup}


@pytest.mark.parametrize("tool", ["id", "so", "jr"])
@pytest.mark.parametrize("fc, msg", [("NaN", r"must be a finite frequency \(Hz\), or -1 for no filtering; got 'NaN'"),
                                     ("inf", r"must be a finite frequency"),
                                     ("0", r"0 Hz would remove the whole motion")])
def test_setup_readers_refuse_a_bad_lowpass_cutoff(tmp_path, tool, fc, msg):
    path = _cutoff_setup(tmp_path, tool, fc)
    line = _line(path, "<lowpass_cutoff_frequency_for_coordinates>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=rf"setup\.xml:{line}: <lowpass_cutoff_frequency_for_coordinates>: "
                                             rf"<lowpass_cutoff_frequency_for_coordinates> {msg}"):
            READERS[tool](path)
        for good in ("6", "-1"):  # the valid twins, read as numbers
            assert READERS[tool](_cutoff_setup(tmp_path, tool, good)).lowpass_cutoff == float(good)


def _main(capsys, *args):
    return run_cli(capsys, *args)


def test_run_checks_every_setup_before_the_first_runs(tmp_path, capsys):
    """``mbjax run IK.xml SO.xml`` with a NaN cut-off in the SO setup: refused naming its file, line and
    element before the IK runs (no motion written)."""
    ik = _ik_setup(tmp_path)
    so = _copy(SO_SETUP, tmp_path, r"<lowpass_cutoff_frequency_for_coordinates>[^<]*<",
               "<lowpass_cutoff_frequency_for_coordinates>NaN<", name="so.xml")
    rc, out, err = _main(capsys, "run", str(ik), str(so), "--model", "arm26", "--quiet")
    line = _line(so, "<lowpass_cutoff_frequency_for_coordinates>")
    assert rc == 1 and re.search(rf"so\.xml:{line}: <lowpass_cutoff_frequency_for_coordinates>: .*finite", err), err
    assert not (tmp_path / "arm26_InverseKinematics.mot").exists()


def test_cli_wrong_tool_setup_has_one_exit_status(tmp_path, capsys):
    """A setup of another tool is a file the command cannot run: exit 1 (the table's "failure: a
    setup file that cannot be read or run") from ``mbjax id`` and from ``mbjax run`` alike."""
    ik = _ik_setup(tmp_path)
    rc_id, _, err_id = _main(capsys, "id", str(ik), "--no-compile-cache")
    assert "InverseDynamicsTool" in err_id
    rc_run, _, err_run = _main(capsys, "run", str(_copy(SCALE_SETUP, tmp_path, name="scale.xml")))
    assert "<ScaleTool> is not a tool mbjax runs" in err_run
    assert rc_id == rc_run == 1
    rc, out, _ = _main(capsys, "--help")
    assert "setup of another tool" in out


# ---- inverse_kinematics arguments ----------------------------------------------------------------

def _data(T=6):
    q = np.stack([np.linspace(0.2, 0.5, T), np.linspace(0.3, 1.2, T)], axis=1)
    x = np.asarray(jax.vmap(lambda qq: mbjax.marker_positions(ARM, MARKERS, qq))(q))
    return MarkerData(np.arange(T) / 100.0, tuple(MARKERS.names), x), q


@pytest.mark.parametrize("weights, cls, msg", [
    ([1.0, 1.0, 1.0], TypeError, r"IK: weights must be a dict marker name -> weight .*got list \[1\.0, 1\.0, 1\.0\]"),
    ((1.0, 2.0), TypeError, r"weights must be a dict marker name -> weight .*got tuple"),
    (np.ones(3), TypeError, r"weights must be a dict .*got ndarray"),
    ({}, ValueError, r"IK: weights is empty: no marker task to track"),
])
def test_inverse_kinematics_refuses_weights_that_are_not_a_mapping(weights, cls, msg):
    data, _ = _data()
    with pytest.raises(cls, match=msg):
        inverse_kinematics(ARM, MARKERS, data, weights)


def test_inverse_kinematics_array_in_millimetres_says_convert_to_metres():
    data, q = _data()
    mm = data._replace(positions=data.positions * 1000.0)  # built by hand, Units stays 'm'
    with pytest.raises(ValueError, match=r"not in metres\. An array you built: MarkerData\.positions must be in "
                                         r"metres \(they look like 'mm': multiply them by 0\.001\)"):
        inverse_kinematics(ARM, MARKERS, mm, {n: 1.0 for n in MARKERS.names})
    r = inverse_kinematics(ARM, MARKERS, data, {n: 1.0 for n in MARKERS.names})  # the valid twin, in metres
    assert r.converged.all()
    np.testing.assert_allclose(r.q, q, atol=1e-6)  # the pose the markers were made from


def test_run_checks_the_ik_time_range_against_the_marker_file_first(tmp_path, capsys):
    """An IK setup whose ``<time_range>`` misses its marker data is refused by ``check_plan`` (the
    same rule as the IK step itself and the ID tool), before any step runs."""
    ik = _ik_setup(tmp_path, r"<time_range>[^<]*</time_range>", "<time_range> 5 6 </time_range>")
    with pytest.raises(ValueError, match=r"setup\.xml: marker file .*arm26_elbow_flex\.trc: the time range \[5, 6\] "
                                         r"s does not overlap the file's times \[0, 1\] s"):
        cli.tools.check_plan([(str(ik), "ik")], model="arm26")
    rc, _, err = _main(capsys, "run", str(ik), "--model", "arm26", "--quiet")
    assert rc == 1 and "does not overlap" in err and not (tmp_path / "arm26_InverseKinematics.mot").exists()
    cli.tools.check_plan([(str(_ik_setup(tmp_path)), "ik")], model="arm26")  # the shipped range: passes


def test_setup_of_another_tool_names_the_tool_it_holds_and_its_command(tmp_path):
    with pytest.raises(ValueError, match=r"setup\.xml: no <InverseDynamicsTool>: it holds <InverseKinematicsTool> "
                                         r"\(run it with `mbjax ik`\)"):
        read_id_setup(_ik_setup(tmp_path))
    with pytest.raises(ValueError, match=r"setup\.xml: no <InverseKinematicsTool>: it holds <AnalyzeTool> \(run it "
                                         r"with `mbjax so or jr`\)"):
        read_ik_setup(_copy(SO_SETUP, tmp_path))
    (tmp_path / "empty.xml").write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"/>')
    with pytest.raises(ValueError, match=r"empty\.xml: no <InverseKinematicsTool>: it holds no tool$"):
        read_ik_setup(tmp_path / "empty.xml")


@pytest.mark.skipif(not os.path.isdir(os.path.join(os.environ.get("OPENSIM_MODELS_DIR", ""), "Pipelines")),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_full_body_trc_in_millimetres_under_units_m_says_millimetres(tmp_path):
    """Gait10dof18musc's walking markers (millimetres) under ``Units m``: IK refuses them and advises
    millimetres (×0.001), the unit of the file's numbers; the spread at the best pose alone (~30x: the
    model contorted towards the data) suggested centimetres, which leaves the data 10x too large."""
    folder = pathlib.Path(os.environ["OPENSIM_MODELS_DIR"]) / "Pipelines" / "Gait10dof18musc" / "OutputReference"
    lines = (folder / "ExperimentalData" / "subject01_walk.trc").read_text().splitlines(keepends=True)
    header = lines[2].split("\t")
    assert header[4] == "mm"
    lines[2] = "\t".join(header[:4] + ["m"] + header[5:])
    trc = tmp_path / "walk_units_m.trc"
    trc.write_text("".join(lines))
    setup = (folder / "IK" / "walk_Setup_IK.xml").read_text()
    for old, new in (("../subject01.osim", str(folder / "subject01.osim")),
                     ("../ExperimentalData/subject01_walk.trc", str(trc)),
                     ("<time_range> 0 2.5</time_range>", "<time_range> 0.5 0.7 </time_range>")):
        assert old in setup, old
        setup = setup.replace(old, new)
    (tmp_path / "setup.xml").write_text(setup)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's notes and the reader's own units warning
        with pytest.raises(ValueError, match=r"they look like 'mm'\): fix its Units header"):
            inverse_kinematics_from_setup(str(tmp_path / "setup.xml"))
