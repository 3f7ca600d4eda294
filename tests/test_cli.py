"""The ``mbjax`` command: CSV content vs the library, sharding, and every bad command line it must refuse.

Each check feeds the bad input itself (an unparsable or infinite value, a directory as ``--out``,
``/dev/full``, a duplicate ``--vary``, a sweep in radians that was meant in degrees, 10⁹ poses) and
asserts the exit status (2 usage, 1 failure), that the message names the flag, and that no Python
traceback reaches the user.  Most run ``mbjax.cli.main`` in-process (no JAX start-up per case).
"""

import csv
import os
import re
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax import cli
from mbjax.models import arm26_path
from _cli_run import run_cli

ARM26 = arm26_path()  # shipped in the wheel: these tests never skip


def _run(args, devices=None, cwd=None, env_extra=None):
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "mbjax.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def _main(capsys, *args):
    """``mbjax ARGS`` in-process: (exit status, stdout, stderr); argparse's own exits included.
    The OpenSim tools run without the persistent compilation cache here (it would switch JAX's
    global cache on for the rest of the test process); ``test_tool_compile_cache`` runs it."""
    return run_cli(capsys, *args, no_compile_cache=True)


def _arm26_model():
    from mbjax.io import load_osim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(ARM26, ignore_wrapping=True)


# --------------------------------------------------------------------------------------------
# sweeps that succeed
# --------------------------------------------------------------------------------------------


def test_sweep_sharded_over_four_devices_matches_library(tmp_path):
    out = tmp_path / "arm.csv"
    png = tmp_path / "arm.png"
    res = _run(
        ["moment-arms", ARM26, "--vary", "r_elbow_flex=0:90:15", "--set", "r_shoulder_elev=20", "--degrees",
         "--ignore-wrapping", "--out", str(out), "--plot", str(png)],
        devices=4,
    )
    assert res.returncode == 0, res.stderr
    assert "on 4 device(s)" in res.stderr and "wrapping ignored" in res.stderr
    assert "warning: --" not in res.stderr  # inside the ranges: no range warning
    rows = list(csv.reader(open(out)))
    header, data = rows[0], np.asarray(rows[1:], dtype=float)
    assert data.shape[0] == 7 and png.exists()
    # --degrees: the coordinates are written in degrees and the header says so
    assert header[:2] == ["r_shoulder_elev (deg)", "r_elbow_flex (deg)"]
    np.testing.assert_allclose(data[:, 1], np.arange(0, 91, 15), atol=1e-12)
    np.testing.assert_allclose(data[:, 0], 20.0, atol=1e-12)
    # independent check: central differences of the library's lengths
    from mbjax.muscles import muscle_lengths

    model = _arm26_model()
    muscle_lengths = jax.jit(muscle_lengths)
    col = header.index("R[BIClong,r_elbow_flex] (m)")
    lcol = header.index("L[BIClong] (m)")
    m = model.muscle_names.index("BIClong")
    q = jnp.asarray(np.deg2rad(data[3, :2]))
    h = 1e-6
    dq = jnp.asarray([0.0, h])
    fd = -(muscle_lengths(model, q + dq)[m] - muscle_lengths(model, q - dq)[m]) / (2 * h)
    assert abs(data[3, col] - fd) < 1e-8
    assert abs(data[3, lcol] - muscle_lengths(model, q)[m]) < 1e-15


def test_radians_header_and_range_warning_in_process(tmp_path, capsys):
    """Without --degrees the CSV is in rad; a sweep a little past the file's range warns and runs."""
    out = tmp_path / "a.csv"
    rc, _, err = _main(capsys, "moment-arms", "arm26", "--ignore-wrapping", "--vary", "r_elbow_flex=2.0:2.5:0.25",
                       "--wrt", "r_shoulder_elev", "r_elbow_flex", "--muscles", "BIClong", "TRIlong",
                       "--quiet", "--out", str(out))
    assert rc == 0, err
    assert re.search(r"warning: --vary r_elbow_flex reaches 2\.5 rad, outside the range \[0, 2\.26893\] rad", err)
    rows = list(csv.reader(open(out)))
    header, data = rows[0], np.asarray(rows[1:], dtype=float)
    assert header == ["r_shoulder_elev (rad)", "r_elbow_flex (rad)", "L[BIClong] (m)", "L[TRIlong] (m)",
                      "R[BIClong,r_shoulder_elev] (m)", "R[BIClong,r_elbow_flex] (m)",
                      "R[TRIlong,r_shoulder_elev] (m)", "R[TRIlong,r_elbow_flex] (m)"]
    np.testing.assert_allclose(data[:, 1], [2.0, 2.25, 2.5], atol=1e-15)
    from mbjax import moment_arms

    model = _arm26_model()
    arms = jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, jnp.asarray(data[:, :2]))
    t = model.muscle_names.index("TRIlong")
    np.testing.assert_allclose(data[:, 6], arms[:, 0, t], atol=1e-15)


# --------------------------------------------------------------------------------------------
# errors name the flag, exit 2 for usage and 1 for failures, no tracebacks
# --------------------------------------------------------------------------------------------


def test_wrapping_error_names_the_flag(tmp_path, capsys, monkeypatch):
    """Raised through the CLI, the loader's ``ignore_wrapping=True`` hint becomes ``--ignore-wrapping`` (exit 2)."""
    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    # arm26 with one wrap surface mbjax does not model (OpenSim's WrapDoubleCylinderObst)
    with open(ARM26) as fh:
        text = fh.read()
    text = text.replace('<WrapCylinder name="TRI">', '<WrapDoubleCylinderObst name="TRI">', 1)
    head, _, tail = text.partition('<WrapDoubleCylinderObst name="TRI">')
    tail = tail.replace("</WrapCylinder>", "</WrapDoubleCylinderObst>", 1)
    bad = tmp_path / "arm26_obst.osim"
    bad.write_text(head + '<WrapDoubleCylinderObst name="TRI">' + tail)
    rc, _, err = _main(capsys, "moment-arms", str(bad), "--vary", "r_elbow_flex=0:1:0.1", "--out", str(tmp_path / "x.csv"))
    assert "WrapDoubleCylinderObst" in err, err
    assert rc in (1, 2), err
    assert "--ignore-wrapping" in err and "ignore_wrapping=True" not in err and err.count("\n") == 1
    # the rewrite applies to any library message carrying the keyword
    text, usage = cli._library_message(ValueError("x.osim: wraps. Pass ignore_wrapping=True to load"))
    assert usage and text == "x.osim: wraps. Pass --ignore-wrapping to load"


def test_smooth_wrapping_refusal_names_the_flags(tmp_path, capsys, monkeypatch):
    """``--wrapping smooth`` on arm26 with its TRIlonghh ellipsoid made a torus (the one surface the
    smooth option refuses): exit 2, the wrap named, the flags to use instead."""
    text = open(ARM26).read()
    text, n = re.subn(r'<WrapEllipsoid name="TRIlonghh">(.*?)<dimensions>[^<]*</dimensions>(.*?)</WrapEllipsoid>',
                      r'<WrapTorus name="TRIlonghh">\1<inner_radius>0.01</inner_radius>'
                      r'<outer_radius>0.04</outer_radius>\2</WrapTorus>', text, flags=re.S)
    assert n == 1
    path = tmp_path / "arm26_torus.osim"
    path.write_text(text)
    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", lambda *a, **k: pytest.fail("the sweep ran"))
    rc, _, err = _main(capsys, "moment-arms", str(path), "--wrapping", "smooth", "--vary", "r_elbow_flex=0:1:0.5",
                       "--out", str(tmp_path / "x.csv"))
    assert rc == 2 and "WrapTorus 'TRIlonghh'" in err, err
    assert "--wrapping opensim" in err and "--ignore-wrapping" in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "args, named",
    [
        (["--vary", "knee=0:1:0.1"], "--vary: unknown coordinate 'knee'"),
        (["--set", "r_elbow_flex=abc"], "--set r_elbow_flex=abc: 'abc' is not a number"),
        (["--set", "r_elbow_flex=inf"], "--set r_elbow_flex=inf: 'inf' is not a finite number"),
        (["--set", "r_elbow_flex=nan"], "'nan' is not a finite number"),
        (["--vary", "r_elbow_flex=0:1,5:0.1"], "--vary r_elbow_flex=0:1,5:0.1 (STOP): '1,5' is not a number"),
        (["--vary", "r_elbow_flex=0:inf:0.1"], "(STOP): 'inf' is not a finite number"),
        (["--vary", "r_elbow_flex=0:1:-0.1"], "STEP must move from START towards STOP"),
        (["--vary", "r_elbow_flex=0:1"], "expected START:STOP:STEP"),
        (["--set", "r_elbow_flex"], "--set expects COORD=..."),
        (["--vary", "r_elbow_flex=0:1:0.5", "--vary", "r_elbow_flex=0:2:1"], "--vary: coordinate 'r_elbow_flex' given twice"),
        (["--set", "r_elbow_flex=1", "--set", "r_elbow_flex=2"], "--set: coordinate 'r_elbow_flex' given twice"),
        (["--set", "r_elbow_flex=1", "--vary", "r_elbow_flex=0:1:0.5"], "given by both --set and --vary"),
        (["--vary", "r_elbow_flex=0:1:0.5", "--wrt", "elbow"], "--wrt: unknown coordinate 'elbow'"),
        (["--muscles", "BIC"], "--muscles: unknown muscles ['BIC']"),
        (["--chunk-size", "0"], "--chunk-size: must be a positive integer"),
        (["--random", "-3"], "--random: must be a positive integer"),
    ],
)
def test_usage_errors_name_their_flag(tmp_path, capsys, args, named):
    out = tmp_path / "x.csv"
    rc, _, err = _main(capsys, "moment-arms", "arm26", "--ignore-wrapping", *args, "--out", str(out))
    assert rc == 2, err
    assert named in err, err
    assert not out.exists()


def test_option_before_the_command_is_named(capsys):
    rc, _, err = _main(capsys, "--bogus")
    assert rc == 2 and "unrecognized option '--bogus' before the command" in err, err


def test_outputs_checked_before_the_sweep(tmp_path, capsys, monkeypatch):
    """A directory, a missing folder, an unknown image type: refused (2) before any sweep; nothing written."""
    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", lambda *a, **k: pytest.fail("the sweep ran before the output check"))
    base = ["moment-arms", "arm26", "--ignore-wrapping", "--vary", "r_elbow_flex=0:1:0.5"]
    cases = [
        (["--out", str(tmp_path)], f"--out {tmp_path}: is a directory"),
        (["--out", str(tmp_path / "no" / "x.csv")], "does not exist"),
        (["--out", str(tmp_path / "x.csv"), "--plot", str(tmp_path)], f"--plot {tmp_path}: is a directory"),
        (["--out", str(tmp_path / "x.csv"), "--plot", str(tmp_path / "x.xyz")], "--plot"),
        (["--out", str(tmp_path / "x.csv"), "--plot", str(tmp_path / "x.csv")], "same file"),
    ]
    for extra, named in cases:
        rc, _, err = _main(capsys, *base, *extra)
        assert rc == 2 and named in err, (extra, err)
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        rc, _, err = _main(capsys, *base, "--out", str(locked / "x.csv"))
        assert rc == 2 and "cannot be written: Permission denied" in err
    if os.path.isdir("/proc"):  # writable by its permission bits for root, yet no file can be made there
        rc, _, err = _main(capsys, *base, "--out", "/proc/mbjax_x.csv")
        assert rc == 2 and "--out /proc/mbjax_x.csv: cannot be written" in err, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "locked") == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_write_failure_is_one_line_exit_1(tmp_path, capsys):
    rc, _, err = _main(capsys, "moment-arms", "arm26", "--ignore-wrapping", "--quiet", "--out", "/dev/full")
    assert rc == 1 and "--out /dev/full: cannot write the CSV: No space left on device" in err, err


def test_model_file_errors(tmp_path, capsys):
    rc, _, err = _main(capsys, "moment-arms", str(tmp_path / "none.osim"), "--out", str(tmp_path / "x.csv"))
    assert rc == 1 and "no such file" in err
    rc, _, err = _main(capsys, "moment-arms", str(tmp_path), "--out", str(tmp_path / "x.csv"))
    assert rc == 2 and "is a directory" in err
    bad = tmp_path / "bad.osim"
    bad.write_text("<OpenSimDocument><Model>")
    rc, _, err = _main(capsys, "moment-arms", str(bad), "--out", str(tmp_path / "x.csv"))
    assert rc == 1 and "malformed XML" in err
    rc, _, err = _main(capsys, "info", str(bad))
    assert rc == 1 and "malformed XML" in err
    rc, _, err = _main(capsys, "moment-arms", "knee", "--out", str(tmp_path / "x.csv"))
    assert rc == 2 and "unknown model 'knee'" in err


def test_unexpected_error_is_one_line_and_traceback_on_request(tmp_path, capsys, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("XLA ran out of something")

    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", boom)
    args = ["moment-arms", "arm26", "--ignore-wrapping", "--out", str(tmp_path / "x.csv")]
    rc, _, err = _main(capsys, *args)
    assert rc == 1 and "unexpected RuntimeError: XLA ran out of something" in err and "MBJAX_TRACEBACK" in err
    monkeypatch.setenv("MBJAX_TRACEBACK", "1")
    assert cli.main(args) == 1
    assert "Traceback" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# ranges, size, version, help, info, plots
# --------------------------------------------------------------------------------------------


def test_forgotten_degrees_refused_far_outside_the_range(tmp_path, capsys, monkeypatch):
    """0:130 without --degrees is 130 rad on an elbow whose range is [0, 2.27] rad: refused, with the hint."""
    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", lambda *a, **k: pytest.fail("a refused sweep ran"))
    base = ["moment-arms", "arm26", "--ignore-wrapping", "--vary", "r_elbow_flex=0:130:1", "--out",
            str(tmp_path / "x.csv")]
    rc, _, err = _main(capsys, *base)
    assert rc == 2 and "reaches 130 rad" in err and "did you forget --degrees?" in err and "--allow-out-of-range" in err
    rc, _, err = _main(capsys, "moment-arms", "arm26", "--ignore-wrapping", "--set", "r_shoulder_elev=-20",
                       "--out", str(tmp_path / "x.csv"))
    assert rc == 2 and "--set r_shoulder_elev=-20 reaches -20 rad" in err
    # --allow-out-of-range passes the range check (a warning); the next check, the size guard, then speaks
    rc, _, err = _main(capsys, *base, "--allow-out-of-range", "--max-poses", "100")
    assert rc == 2 and "warning: --vary r_elbow_flex reaches 130 rad" in err and "makes 131 poses" in err


def test_size_guard_before_allocating(tmp_path, capsys, monkeypatch):
    """10⁹ poses (16 GB for the grid alone) is refused in milliseconds; nothing of that size is allocated."""
    monkeypatch.setattr(cli.moment_arms_sweep, "sweep", lambda *a, **k: pytest.fail("a refused sweep ran"))
    base = ["moment-arms", "arm26", "--ignore-wrapping", "--out", str(tmp_path / "x.csv")]
    rc, _, err = _main(capsys, *base, "--vary", "r_elbow_flex=0:2:2e-9")
    assert rc == 2 and "makes 1,000,000,001 poses" in err and "--max-poses" in err  # STOP on the grid
    rc, _, err = _main(capsys, *base, "--random", str(10**9))
    assert rc == 2 and "--random 1000000000 makes 1,000,000,000 poses" in err
    rc, _, err = _main(capsys, *base, "--vary", "r_elbow_flex=0:2:0.01", "--vary", "r_shoulder_elev=0:3:0.01",
                       "--max-poses", "10000")
    assert rc == 2 and "makes 60,501 poses" in err  # 201 x 301, the grid's size as a product


def test_version_and_exit_codes_documented(capsys):
    from importlib.metadata import version

    rc, out, _ = _main(capsys, "--version")
    assert rc == 0 and out.strip() == f"mbjax {version('mbjax')}"
    for sub in ([], ["moment-arms"], ["info"]):
        rc, out, _ = _main(capsys, *sub, "--help")
        assert rc == 0 and "exit status:" in out
        assert re.search(r"^\s+1\s+failure", out, re.M) and re.search(r"^\s+2\s+usage error", out, re.M)
    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    assert "exit status" in readme and "`2`" in readme and "`1`" in readme
    rc, _, err = _main(capsys, "moment-arms", "arm26", "--bogus", "--out", "x.csv")
    assert rc == 2 and "unrecognized arguments: --bogus" in err


def _xml_ranges(path):
    """Coordinate ranges straight from the file text (an independent reading)."""
    text = open(path).read()
    return {m.group(1): tuple(float(v) for v in m.group(2).split())
            for m in re.finditer(r'<Coordinate name="(\w+)">.*?<range>([^<]+)</range>', text, re.S)}


def test_info_arm26_lists_coordinates_bodies_muscles_wraps(capsys):
    import json

    rc, out, _ = _main(capsys, "info", "arm26", "--json")
    assert rc == 0
    info = json.loads(out)
    ranges = _xml_ranges(ARM26)
    assert [c["name"] for c in info["coordinates"]] == list(ranges) == ["r_shoulder_elev", "r_elbow_flex"]
    for c in info["coordinates"]:
        assert tuple(c["range"]) == ranges[c["name"]] and c["unit"] == "rad" and c["type"] == "rotational"
    assert [b["name"] for b in info["bodies"]] == ["ground", "base", "r_humerus", "r_ulna_radius_hand"]
    assert abs(info["bodies"][2]["mass"] - 1.864572) < 1e-15
    assert [m["name"] for m in info["muscles"]] == list(_arm26_model().muscle_names)
    assert {w["name"]: (w["class"], w["body"]) for w in info["wrap_objects"]} == {
        "TRIlongglen": ("WrapCylinder", "base"), "TRIlonghh": ("WrapEllipsoid", "r_humerus"),
        "BIClonghh": ("WrapEllipsoid", "r_humerus"), "TRI": ("WrapCylinder", "r_humerus")}
    assert next(m for m in info["muscles"] if m["name"] == "BIClong")["wrap_objects"] == ["BIClonghh"]
    rc, out, _ = _main(capsys, "info", "arm26")
    assert rc == 0 and "[0, 2.26893] rad = [0, 130] deg" in out and "wrap objects (4):" in out


OSIM4 = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="m">
 <Ground name="ground"/>
 <BodySet><objects>
  <Body name="a"><mass>2</mass>
   <WrapObjectSet><objects><WrapSphere name="ball"><socket_frame>/bodyset/a</socket_frame></WrapSphere></objects></WrapObjectSet>
  </Body>
  <Body name="b"><mass>1</mass></Body><Body name="c"><mass>0.5</mass></Body>
 </objects></BodySet>
 <JointSet><objects>
  <CustomJoint name="cj"><coordinates>
    <Coordinate name="flex"><range>-1 1</range></Coordinate>
    <Coordinate name="slide"><range>0 0.05</range></Coordinate></coordinates>
   <SpatialTransform>
    <TransformAxis name="rotation1"><coordinates>flex</coordinates></TransformAxis>
    <TransformAxis name="translation1"><coordinates>slide</coordinates></TransformAxis>
   </SpatialTransform></CustomJoint>
  <SliderJoint name="sj"><coordinates><Coordinate name="s2"><default_value>0.01</default_value></Coordinate></coordinates></SliderJoint>
  <PinJoint name="pj"><coordinates><Coordinate name="pin"><locked>true</locked></Coordinate></coordinates></PinJoint>
 </objects></JointSet>
</Model></OpenSimDocument>
"""


def test_info_opensim4_units_from_the_joints(tmp_path, capsys):
    """OpenSim 4 writes no <motion_type>: translation axes and slider joints are metres, the rest radians."""
    import json

    path = tmp_path / "m.osim"
    path.write_text(OSIM4)
    rc, out, _ = _main(capsys, "info", str(path), "--json")
    assert rc == 0
    coords = {c["name"]: c for c in json.loads(out)["coordinates"]}
    assert {n: c["unit"] for n, c in coords.items()} == {"flex": "rad", "slide": "m", "s2": "m", "pin": "rad"}
    assert coords["s2"]["range"] == [-10.0, 10.0] and coords["s2"]["default"] == 0.01  # OpenSim's default range
    assert coords["pin"]["locked"]
    rc, out, _ = _main(capsys, "info", str(path))
    assert "[0, 0.05] m" in out and "ball  WrapSphere on a" in out and "muscles (0):" in out


def test_info_motion_types_are_opensim4s(tmp_path, capsys):
    """``mbjax info`` reports OpenSim 4's motion types (the loader's and the tools' rule): a coordinate moved
    through a spline is coupled (its unit still rad: a rotation axis moves it), a unit-slope LinearFunction
    makes it rotational, and a 3.x ``<motion_type>`` element is ignored as OpenSim 4 ignores it."""
    import json

    from mbjax.opensim.model.osim_motion import motion_types

    text = OSIM4.replace(
        '<TransformAxis name="rotation1"><coordinates>flex</coordinates></TransformAxis>',
        '<TransformAxis name="rotation1"><coordinates>flex</coordinates><function><SimmSpline><x>-1 0 1</x>'
        '<y>-0.5 0 0.7</y></SimmSpline></function></TransformAxis>'
        '<TransformAxis name="rotation2"><coordinates>twist</coordinates><function><LinearFunction>'
        '<coefficients>1 0</coefficients></LinearFunction></function></TransformAxis>').replace(
        '<Coordinate name="slide">', '<Coordinate name="twist"><motion_type>translational</motion_type>'
        '<range>-1 1</range></Coordinate><Coordinate name="slide">')
    path = tmp_path / "m.osim"
    path.write_text(text)
    rc, out, _ = _main(capsys, "info", str(path), "--json")
    assert rc == 0
    coords = {c["name"]: (c["type"], c["unit"]) for c in json.loads(out)["coordinates"]}
    expected = motion_types(path)  # the loader's rule, checked live against OpenSim in tests/validation
    assert {n: t for n, (t, _) in coords.items() if n in expected} == expected
    assert coords["flex"] == ("coupled", "rad") and coords["twist"] == ("rotational", "rad")
    assert coords["s2"] == ("translational", "m") and coords["pin"] == ("rotational", "rad")


def test_plot_styles_are_distinct():
    styles = cli.curve_styles(20)
    assert len({(c, ls) for c, ls, _ in styles}) == 20  # colour x line style: no two of 20 curves alike
    assert all(a[0] != b[0] and a[1] != b[1] for a, b in zip(styles, styles[1:]))  # neighbours differ in both


def test_two_processes_split_the_sweep_and_process_0_writes(tmp_path):
    """``--distributed`` with two local CPU processes: same CSV as the library, written by process 0 only."""
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    out = tmp_path / "arm.csv"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    for k in ("XLA_FLAGS", "MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID"):
        env.pop(k, None)
    args = ["moment-arms", ARM26, "--vary", "r_elbow_flex=0:90:1", "--set", "r_shoulder_elev=20", "--degrees",
            "--ignore-wrapping", "--chunk-size", "16", "--out", str(out), "--plot", str(tmp_path / "arm.png"),
            "--distributed", "--coordinator", f"localhost:{port}", "--num-processes", "2"]
    procs = [subprocess.Popen([sys.executable, "-m", "mbjax.cli", *args, "--process-id", str(i)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    try:
        results = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], results
    err0, err1 = results[0][1], results[1][1]
    assert "91 poses" in err0 and "on 2 device(s) in 2 processes" in err0 and "wrapping ignored" in err0
    assert "poses x" not in err1 and "warning" not in err1  # process 1 neither reports nor writes
    rows = list(csv.reader(open(out)))
    header, data = rows[0], np.asarray(rows[1:], dtype=float)
    assert data.shape[0] == 91 and (tmp_path / "arm.png").exists()
    np.testing.assert_allclose(data[:, 1], np.arange(91), atol=1e-12)  # in order, in degrees
    from mbjax import moment_arms, muscle_lengths

    model = _arm26_model()
    q = jnp.asarray(np.deg2rad(data[:, :2]))
    arms = jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, q)
    lengths = jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, q)
    m = model.muscle_names.index("TRIlong")
    assert np.max(np.abs(data[:, header.index("R[TRIlong,r_elbow_flex] (m)")] - arms[:, 1, m])) <= 1e-12
    assert np.max(np.abs(data[:, header.index("L[TRIlong] (m)")] - lengths[:, m])) <= 1e-12


# --------------------------------------------------------------------------------------------
# mbjax ik|id|so SETUP.xml: OpenSim's setup files
# --------------------------------------------------------------------------------------------

OPENSIM_DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")


def test_so_setup_writes_opensims_files(tmp_path, capsys):
    """The arm26 tutorial's static-optimization setup with --model (a straight-path copy: the wrapped
    run against OpenSim is tests/validation/test_so_opensim.py): files as the library writes them."""
    from mbjax.io import read_storage
    from mbjax.opensim.tools.so import static_optimization_from_setup

    sys.path.insert(0, os.path.dirname(__file__))
    from _osim_models import strip_wrapping

    model_file = strip_wrapping(ARM26, str(tmp_path / "arm26_straight.osim"))
    setup = os.path.join(OPENSIM_DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
    code, out, err = _main(capsys, "so", setup, "--model", model_file, "--out", str(tmp_path / "so"),
                           "--plot", str(tmp_path / "so.png"))
    assert code == 0, err
    assert "121 frames" in out and "all frames converged" in out
    act = read_storage(tmp_path / "so" / "arm26_StaticOptimization_activation.sto")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from mbjax.io import load_osim

        ref = static_optimization_from_setup(setup, load_osim(model_file), write=False, progress=False)
    assert act.labels == ref.labels
    np.testing.assert_allclose(act.data, ref.activations, rtol=0, atol=1e-14)
    import xml.etree.ElementTree as ET  # and OpenSim's ControlSet of the activations (tests/test_so_tool.py)

    controls = ET.parse(tmp_path / "so" / "arm26_StaticOptimization_controls.xml").getroot()
    assert tuple(c.get("name") for c in controls.find("ControlSet/objects")) == ref.labels
    assert os.path.getsize(tmp_path / "so.png") > 10_000


def test_id_and_ik_setups(tmp_path, capsys):
    from mbjax.io import read_storage

    setup = os.path.join(OPENSIM_DATA, "gait2354_id", "subject01_Setup_InverseDynamics.xml")
    code, out, err = _main(capsys, "id", setup, "--out", str(tmp_path / "id.sto"))
    assert code == 0, err
    table = read_storage(tmp_path / "id.sto")
    assert table.labels[0] == "pelvis_tilt_moment" and np.all(np.isfinite(table.data))
    setup = os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
    code, out, err = _main(capsys, "ik", setup, "--model", "arm26", "--out", str(tmp_path / "ik.mot"))
    assert code == 0, err
    ik = read_storage(tmp_path / "ik.mot")
    ref = read_storage(os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_InverseKinematics.mot"))
    assert ik.in_degrees and ik.labels == ref.labels and ik.data.shape == ref.data.shape
    assert np.abs(ik.data - ref.data).max() < 0.5  # degrees; the close comparison is test_ik.py's


def test_tool_compile_cache(tmp_path):
    """``mbjax ik`` in two fresh processes sharing $MBJAX_CACHE_DIR: the first writes compiled and
    traced programs, the second reads them back (writes none) and writes the same motion as a run
    without either in this process."""
    from mbjax.io import read_storage

    setup = os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
    cache = tmp_path / "xla"
    env = {**os.environ, "MBJAX_CACHE_DIR": str(cache), "JAX_PLATFORMS": "cpu"}

    def run(out):
        proc = subprocess.run([sys.executable, "-m", "mbjax.cli", "ik", setup, "--model", "arm26", "--out",
                               str(tmp_path / out), "--quiet"], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        return read_storage(tmp_path / out).data, sorted(os.listdir(cache))

    programs = tmp_path / "xla-programs"  # the traced programs (mbjax.program_store), beside the cache
    first, entries = run("a.mot")
    assert entries, "the first run wrote no compiled program"
    kept = sorted(os.listdir(programs))
    assert [f for f in kept if f.endswith(".mbjaxprog")], f"IK's traced program was not kept: {kept}"
    second, entries2 = run("b.mot")
    assert entries2 == entries  # every program read back, none compiled and written again
    assert sorted(os.listdir(programs)) == kept  # and none traced and exported again
    np.testing.assert_array_equal(second, first)
    code = cli.main(["ik", setup, "--model", "arm26", "--out", str(tmp_path / "c.mot"), "--quiet",
                     "--no-compile-cache"])
    assert code == 0
    np.testing.assert_allclose(first, read_storage(tmp_path / "c.mot").data, rtol=0, atol=1e-12)


def test_compilation_cache_refuses_bad_folders(tmp_path, monkeypatch):
    from mbjax.compilation_cache import default_cache_dir, enable_compilation_cache

    before = jax.config.jax_compilation_cache_dir  # the test suite's own cache (tests/conftest.py)
    monkeypatch.setenv("MBJAX_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == str(tmp_path / "here")
    monkeypatch.delenv("MBJAX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == os.path.join(str(tmp_path / "xdg"), "mbjax", "xla")
    afile = tmp_path / "file"
    afile.write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        enable_compilation_cache(afile)
    with pytest.raises(ValueError, match="cannot create"):
        enable_compilation_cache(afile / "sub")
    with pytest.raises(ValueError, match="min_compile_time"):
        enable_compilation_cache(tmp_path / "ok", min_compile_time=-1.0)
    assert jax.config.jax_compilation_cache_dir == before  # refused calls leave JAX's config alone


def _pendulum_jr_setup(tmp_path, forces="force.sto"):
    """A JointReaction setup on the shipped double pendulum (its own CoordinateActuators Torq1, Torq2
    from a forces file) over a motion quadratic in time."""
    from mbjax.io import Table, write_storage
    from mbjax.models import model_path

    t = np.linspace(0.0, 1.0, 26)
    q = np.column_stack([0.3 + 0.5 * t - 0.4 * t ** 2, -0.2 + 0.8 * t + 0.3 * t ** 2])
    write_storage(tmp_path / "q.sto", Table(t, ("q1", "q2"), q, False, {"name": "Coordinates"}), format="storage")
    write_storage(tmp_path / "force.sto", Table(t, ("Torq1", "Torq2"), np.column_stack([2 + t, 1 - t]), False,
                                                {"name": "Static Optimization"}), format="storage")
    setup = tmp_path / "jr.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="pendulum">
  <model_file>{model_path("double_pendulum")}</model_file>
  <results_directory>results</results_directory>
  <initial_time>0.2</initial_time><final_time>0.8</final_time>
  <AnalysisSet name="Analyses"><objects><JointReaction name="JointReaction">
    <forces_file>{forces}</forces_file><joint_names>All</joint_names>
    <apply_on_bodies>child</apply_on_bodies><express_in_frame>child</express_in_frame>
  </JointReaction></objects></AnalysisSet>
  <coordinates_file>q.sto</coordinates_file>
</AnalyzeTool></OpenSimDocument>
""")
    return str(setup)


def test_jr_setup_writes_opensims_file(tmp_path, capsys):
    from mbjax.io import read_storage
    from mbjax.opensim.tools.jr import joint_reactions_from_setup

    setup = _pendulum_jr_setup(tmp_path)
    code, out, err = _main(capsys, "jr", setup, "--out", str(tmp_path / "jr"), "--plot", str(tmp_path / "jr.png"))
    assert code == 0, err
    assert "2 joint reactions" in out and "wrote" in out
    table = read_storage(tmp_path / "jr" / "pendulum_JointReaction_ReactionLoads.sto")
    ref = joint_reactions_from_setup(setup, write=False, progress=False)
    assert table.labels == ref.labels and table.labels[0] == "pin1_on_rod1_in_rod1_fx"
    np.testing.assert_array_equal(table.data, ref.loads.reshape(ref.time.size, -1))
    assert os.path.getsize(tmp_path / "jr.png") > 10_000
    code, out, err = _main(capsys, "jr", setup, "--quiet")  # the setup's results_directory
    assert code == 0 and out == "" and os.path.exists(tmp_path / "results" / "pendulum_JointReaction_ReactionLoads.sto")


def test_jr_setup_errors(tmp_path, capsys):
    setup = _pendulum_jr_setup(tmp_path, forces="missing.sto")
    code, _, err = _main(capsys, "jr", setup)
    assert code == 1 and "missing.sto" in err
    (tmp_path / "file").write_text("x")
    code, _, err = _main(capsys, "jr", _pendulum_jr_setup(tmp_path), "--out", str(tmp_path / "file"))
    assert code == 2 and "--out" in err
    so = os.path.join(OPENSIM_DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
    code, _, err = _main(capsys, "jr", so, "--model", "arm26")
    assert code == 1 and "JointReaction" in err


def test_tool_setup_errors(tmp_path, capsys):
    missing = str(tmp_path / "nope.xml")
    code, _, err = _main(capsys, "so", missing)
    assert code == 1 and "nope.xml" in err and "Traceback" not in err
    setup = os.path.join(OPENSIM_DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml")
    (tmp_path / "file").write_text("x")
    code, _, err = _main(capsys, "so", setup, "--model", "arm26", "--out", str(tmp_path / "file"))
    assert code == 2 and "--out" in err
    code, _, err = _main(capsys, "id", setup, "--model", "arm26", "--plot", str(tmp_path / "x.txt"))
    assert code == 2 and "--plot" in err
    # an ID setup given to `so`: the wrong tool is named, exit 1 (the file is not what the command reads)
    ids = os.path.join(OPENSIM_DATA, "gait2354_id", "subject01_Setup_InverseDynamics.xml")
    code, _, err = _main(capsys, "so", ids)
    assert code == 1 and "AnalyzeTool" in err


def test_info_lists_point_on_line_constraints(capsys):
    """``mbjax info`` on OpenSim's BouncingBlock (XML only; its ``HuntCrossleyForce::ContactParametersSet``
    tag needs a parser without namespace processing) says how its constraints are handled."""
    import json

    path = os.path.join(OPENSIM_DATA, "bouncing_block", "bouncing_block.osim")
    rc, out, _ = _main(capsys, "info", path, "--json")
    assert rc == 0
    cons = json.loads(out)["constraints"]
    assert [(c["name"], c["class"], c["enforced"]) for c in cons] == [
        ("lock_block_to_y_axis", "PointOnLineConstraint", True), ("lock_foot_to_y_axis", "PointOnLineConstraint", True)]
    assert all("2 coordinates made dependent" in c["handling"] for c in cons)
    rc, out, _ = _main(capsys, "info", path)
    assert rc == 0 and "constraints (2):" in out and "a point of /bodyset/link2 on a line of /ground" in out


def test_ik_output_folder_made_or_refused_before_solving(tmp_path, capsys):
    """``mbjax ik`` makes the setup's output folder as OpenSim makes its results folder; an output
    that cannot be written (its folder is a file) is a usage error (exit 2) naming the setup and the
    path, raised before the solve (no motion written anywhere)."""
    src = os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_Setup_InverseKinematics.xml")
    text = open(src).read().replace("<marker_file> arm26_elbow_flex.trc </marker_file>",
                                    f"<marker_file>{os.path.join(OPENSIM_DATA, 'arm26_ik', 'arm26_elbow_flex.trc')}"
                                    "</marker_file>")
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    bad = tmp_path / "bad.xml"
    bad.write_text(text.replace("<output_motion_file> arm26_InverseKinematics.mot </output_motion_file>",
                                f"<output_motion_file>{blocker / 'ik.mot'}</output_motion_file>"))
    code, out, err = _main(capsys, "ik", str(bad), "--model", "arm26", "--quiet")
    assert code == 2 and "bad.xml" in err and "afile" in err, err
    good = tmp_path / "good.xml"
    good.write_text(text.replace("<output_motion_file> arm26_InverseKinematics.mot </output_motion_file>",
                                 f"<output_motion_file>{tmp_path / 'new' / 'deeper' / 'ik.mot'}</output_motion_file>"))
    code, out, err = _main(capsys, "ik", str(good), "--model", "arm26", "--quiet")
    assert code == 0, err
    assert (tmp_path / "new" / "deeper" / "ik.mot").is_file()
    # report_errors (OpenSim's default true): <name>_ik_marker_errors.sto in the results directory
    from mbjax.io import read_storage, read_trc

    errors = read_storage(tmp_path / "arm26_ik_marker_errors.sto")
    assert errors.labels == ("total_squared_error", "marker_error_RMS", "marker_error_max")
    total, rms, worst = errors.data.T
    n = len(read_trc(os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_elbow_flex.trc")).names)
    np.testing.assert_allclose(total, n * rms ** 2, rtol=1e-10)  # every marker present in this trial
    assert np.all(worst >= rms) and np.all(worst ** 2 <= total * (1 + 1e-12))


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs a folder where no file can be made")
@pytest.mark.parametrize("tool,setup,fn", [
    ("id", "gait2354_id/subject01_Setup_InverseDynamics.xml", "mbjax.opensim.tools.id.setup.inverse_dynamics_motion"),
    ("so", "arm26_so/arm26_Setup_StaticOptimization.xml", "mbjax.opensim.tools.so.setup.static_optimization_motion"),
    ("ik", "arm26_ik/arm26_Setup_InverseKinematics.xml", "mbjax.opensim.tools.ik.inverse_kinematics"),
])
def test_tool_outputs_checked_before_the_work(tmp_path, capsys, monkeypatch, tool, setup, fn):
    """--out, --plot and the setup's own outputs that cannot be written: usage errors (2) before
    anything is computed."""
    import importlib

    module, name = fn.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, lambda *a, **k: pytest.fail("computed first"))
    src = os.path.join(OPENSIM_DATA, setup)
    out = "/proc/mbjax_out" + ("" if tool == "so" else ".sto")
    rc, _, err = _main(capsys, tool, src, "--model", "arm26" if tool != "id" else "gait2354", "--out", out)
    assert rc == 2 and "/proc/mbjax_out" in err, err
    rc, _, err = _main(capsys, tool, src, "--model", "arm26" if tool != "id" else "gait2354", "--out",
                       str(tmp_path / ("o" if tool == "so" else "o.sto")), "--plot", "/proc/mbjax.png")
    assert rc == 2 and "--plot /proc/mbjax.png: cannot be written" in err, err
    # the setup's own output (its results_directory) where no file can be made
    text = open(src).read()
    for tag in ("results_directory", "output_motion_file", "output_gen_force_file"):
        text = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>/proc/mbjax_results</{tag}>", text)
    bad = tmp_path / os.path.basename(src)
    bad.write_text(text)
    for f in os.listdir(os.path.dirname(src)):  # the setup's data files beside it
        if f != os.path.basename(src):
            os.symlink(os.path.join(os.path.dirname(src), f), tmp_path / f)
    rc, _, err = _main(capsys, tool, str(bad), "--model", "arm26" if tool != "id" else "gait2354")
    assert rc == 2 and "/proc/mbjax_results" in err, err


def _chained_arm26_trial(tmp_path):
    """The arm26 tutorial's IK and static-optimization setups in one folder, the SO reading the IK's
    output (its own copy of the IK result left out) and both reading a straight-path arm26.osim."""
    import shutil

    sys.path.insert(0, os.path.dirname(__file__))
    from _osim_models import strip_wrapping

    for name in ("arm26_Setup_InverseKinematics.xml", "arm26_elbow_flex.trc"):
        shutil.copy(os.path.join(OPENSIM_DATA, "arm26_ik", name), tmp_path / name)
    shutil.copy(os.path.join(OPENSIM_DATA, "arm26_so", "arm26_Setup_StaticOptimization.xml"),
                tmp_path / "arm26_Setup_StaticOptimization.xml")
    strip_wrapping(ARM26, str(tmp_path / "arm26.osim"))
    return tmp_path / "arm26_Setup_InverseKinematics.xml", tmp_path / "arm26_Setup_StaticOptimization.xml"


def test_run_chains_setups_in_one_process(tmp_path, capsys, monkeypatch):
    """``mbjax run IK.xml SO.xml``: the SO reads the IK's output; the model file is read once; the
    results equal the two tools run one by one."""
    from mbjax.io import read_storage

    ik_setup, so_setup = _chained_arm26_trial(tmp_path)
    loads = []
    real = cli.load_model
    monkeypatch.setattr(cli.tools, "load_model", lambda *a, **k: loads.append(a) or real(*a, **k))
    code, out, err = _main(capsys, "run", str(ik_setup), str(so_setup), "--no-compile-cache")
    assert code == 0, err
    assert "[1/2]: ik" in out and "[2/2]: so" in out and "all frames converged" in out
    assert len(loads) == 1, loads
    ik = read_storage(tmp_path / "arm26_InverseKinematics.mot")
    act = read_storage(tmp_path / "PhysiologicalResults" / "arm26_StaticOptimization_activation.sto")
    assert (tmp_path / "PhysiologicalResults" / "arm26_StaticOptimization_controls.xml").is_file()
    # the same two tools one by one, into another folder
    one = tmp_path / "one_by_one"
    one.mkdir()
    code, _, err = _main(capsys, "ik", str(ik_setup), "--out", str(one / "arm26_InverseKinematics.mot"))
    assert code == 0, err
    np.testing.assert_array_equal(read_storage(one / "arm26_InverseKinematics.mot").data, ik.data)
    code, _, err = _main(capsys, "so", str(so_setup), "--out", str(one / "so"))
    assert code == 0, err
    ref = read_storage(one / "so" / "arm26_StaticOptimization_activation.sto")
    assert act.labels == ref.labels
    np.testing.assert_array_equal(act.data, ref.data)
    # and the SO did read the IK written in this run: OpenSim's IK of the same trial differs slightly
    opensim_ik = read_storage(os.path.join(OPENSIM_DATA, "arm26_ik", "arm26_InverseKinematics.mot"))
    assert np.abs(ik.data - opensim_ik.data).max() > 0


def test_run_refuses_what_it_cannot_run_before_any_work(tmp_path, capsys):
    """Every setup is read before the first runs: a ScaleTool, a non-XML file, a missing file and an
    AnalyzeTool without a runnable analysis are refused by name and nothing is written."""
    ik_setup, _ = _chained_arm26_trial(tmp_path)
    scale = tmp_path / "scale.xml"
    scale.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><ScaleTool name="s"/></OpenSimDocument>\n')
    kinematics = tmp_path / "analyze.xml"
    kinematics.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><AnalyzeTool name="a"><AnalysisSet>'
                          '<objects><Kinematics name="k"/></objects></AnalysisSet></AnalyzeTool></OpenSimDocument>\n')
    junk = tmp_path / "junk.xml"
    junk.write_text("not xml at all")
    for bad, words in ((scale, ["<ScaleTool> is not a tool mbjax runs"]),
                       (kinematics, ["no StaticOptimization or JointReaction", "Kinematics"]),
                       (junk, ["not an XML file"]),
                       (tmp_path / "missing.xml", ["no such file"])):
        code, out, err = _main(capsys, "run", str(ik_setup), str(bad))
        assert code in (1, 2) and all(w in err for w in words), (bad, err)
        assert str(bad) in err
        assert not (tmp_path / "arm26_InverseKinematics.mot").exists()


def test_run_names_switched_off_and_other_analyses(tmp_path, capsys):
    """An AnalyzeTool's analyses mbjax does not run, and those switched off, are named in a warning."""
    setup = tmp_path / "analyze.xml"
    setup.write_text('<?xml version="1.0"?>\n<OpenSimDocument Version="40000"><AnalyzeTool name="a"><AnalysisSet>'
                     '<objects><StaticOptimization name="so"><on>false</on></StaticOptimization>'
                     '<JointReaction name="jr"><on>true</on></JointReaction><Kinematics name="k"/></objects>'
                     '</AnalysisSet></AnalyzeTool></OpenSimDocument>\n')
    assert cli.tools_of_setup(str(setup)) == ("jr",)
    err = capsys.readouterr().err
    assert "switched off" in err and "StaticOptimization" in err and "Kinematics" in err
