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
