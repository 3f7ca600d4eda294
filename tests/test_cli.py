"""The ``mbjax moment-arms`` command: CSV content vs the library, sharding over 4 host devices."""

import csv
import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from mbjax._data import shared_data

ARM26 = shared_data("osim", "arm26.osim")
pytestmark = pytest.mark.skipif(not os.path.exists(ARM26), reason=f"{ARM26} not found")


def _run(args, devices=None, cwd=None):
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    return subprocess.run(
        [sys.executable, "-m", "mbjax.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


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
    rows = list(csv.reader(open(out)))
    header, data = rows[0], np.asarray(rows[1:], dtype=float)
    assert data.shape[0] == 7 and png.exists()
    assert np.allclose(data[:, 1], np.deg2rad(np.arange(0, 91, 15)), atol=1e-15)
    # independent check: central differences of the library's lengths
    import warnings

    from mbjax.io import load_osim
    from mbjax.muscles import muscle_lengths

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(ARM26, ignore_wrapping=True)
    col = header.index("R[BIClong,r_elbow_flex]")
    lcol = header.index("L[BIClong]")
    m = model.muscle_names.index("BIClong")
    q = jnp.asarray(data[3, :2])
    h = 1e-6
    dq = jnp.asarray([0.0, h])
    fd = -(muscle_lengths(model, q + dq)[m] - muscle_lengths(model, q - dq)[m]) / (2 * h)
    assert abs(data[3, col] - fd) < 1e-8
    assert abs(data[3, lcol] - muscle_lengths(model, q)[m]) < 1e-15


def test_errors_are_reported(tmp_path):
    res = _run(["moment-arms", ARM26, "--vary", "knee=0:1:0.1", "--ignore-wrapping", "--out", str(tmp_path / "x.csv")])
    assert res.returncode != 0 and "unknown coordinate 'knee'" in res.stderr
    res = _run(["moment-arms", ARM26, "--out", str(tmp_path / "x.csv")])
    assert res.returncode == 2 and "ignore_wrapping=True" in res.stderr


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
    assert np.allclose(data[:, 1], np.deg2rad(np.arange(91)), atol=1e-15)  # in order
    import warnings

    import jax

    from mbjax import moment_arms, muscle_lengths
    from mbjax.io import load_osim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(ARM26, ignore_wrapping=True)
    q = jnp.asarray(data[:, :2])
    arms = jax.vmap(moment_arms, in_axes=(None, 0))(model, q)
    lengths = jax.vmap(muscle_lengths, in_axes=(None, 0))(model, q)
    m = model.muscle_names.index("TRIlong")
    assert np.max(np.abs(data[:, header.index("R[TRIlong,r_elbow_flex]")] - arms[:, 1, m])) <= 1e-14
    assert np.max(np.abs(data[:, header.index("L[TRIlong]")] - lengths[:, m])) <= 1e-14
