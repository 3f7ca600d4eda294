"""``mbjax.analysis.sweep``: chunked, sharded and multi-process pose sweeps equal ``jax.vmap`` of the per-pose function.

The multi-process tests start two local CPU processes under ``jax.distributed`` (gloo collectives)
and the sharding test four host devices, each in a subprocess, since both must be set before JAX
starts its backends.
"""

import os
import socket
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.analysis import sweep as msweep
from mbjax.analysis.sweep import sweep_poses

ARM26 = mbjax.models.arm26_path()  # shipped in the wheel
needs_arm26 = pytest.mark.skipif(not os.path.exists(ARM26), reason=f"{ARM26} not found")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _arm26():
    from mbjax.io import load_osim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(ARM26, ignore_wrapping=True)


def _poses(model, n, seed=1):
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (n, model.n_coordinates))


def _reference(model, qs):
    q = jnp.asarray(qs)
    lengths = jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0))(model, q)
    arms = jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(model, q)
    return np.asarray(lengths), np.asarray(arms)


def lengths_and_arms(model, q):
    return {"L": mbjax.muscle_lengths(model, q), "R": mbjax.moment_arms(model, q)}


@needs_arm26
def test_single_process_chunks_match_vmap_and_compile_once():
    model = _arm26()
    qs = _poses(model, 1001)  # 4 chunks of 256, the last one padded
    traces = []

    def counted(m, q):
        traces.append(None)
        return lengths_and_arms(m, q)

    out = sweep_poses(counted, model, qs, chunk_size=256, progress=False)
    lengths, arms = _reference(model, qs)
    assert out["L"].shape == (1001, 6) and out["R"].shape == (1001, 2, 6)
    assert np.max(np.abs(out["L"] - lengths)) <= 1e-14
    assert np.max(np.abs(out["R"] - arms)) <= 1e-14
    assert len(traces) == 1  # one trace for all chunks, the padded last one included
    again = sweep_poses(counted, model, qs + 0.1, chunk_size=256, progress=False)
    assert len(traces) == 1  # same function, same chunk shape: compiled program reused
    assert np.max(np.abs(again["R"] - _reference(model, qs + 0.1)[1])) <= 1e-14
    # whole chunk in one vmap, a lone pose, no pose
    r = sweep_poses(mbjax.moment_arms, model, qs, batch_size=None, progress=False)
    assert np.max(np.abs(r - arms)) <= 1e-14
    # (equal to rounding, not bitwise: XLA may vectorise a batch of 1 differently)
    lone = sweep_poses(mbjax.moment_arms, model, qs[:1], progress=False)
    assert lone.shape == (1, 2, 6) and np.max(np.abs(lone - arms[:1])) <= 1e-14
    assert sweep_poses(mbjax.moment_arms, model, qs[:0], progress=False).shape == (0, 2, 6)
    with pytest.raises(ValueError, match="shape"):
        sweep_poses(mbjax.moment_arms, model, qs[0])


def test_defaults_depend_on_backend():
    cpu = jax.devices("cpu")[:1]
    assert msweep.default_chunk_size(cpu) == 4096 and msweep.default_batch_size(cpu) == 64

    class Gpu:
        platform = "gpu"

    assert msweep.default_chunk_size([Gpu(), Gpu()]) == 2 * 65536 and msweep.default_batch_size([Gpu()]) is None


_SHARDED = textwrap.dedent(
    """
    import sys, warnings
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import mbjax
    from mbjax.io import load_osim
    from mbjax.analysis.sweep import sweep_poses
    assert len(jax.local_devices()) == 4, jax.local_devices()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(sys.argv[1], ignore_wrapping=True)
    qs = np.random.default_rng(1).uniform(-1.0, 1.0, (1001, model.n_coordinates))
    ref = np.asarray(jax.vmap(mbjax.moment_arms, in_axes=(None, 0))(model, jnp.asarray(qs)))
    for chunk, batch in ((None, "auto"), (100, 8), (100, None)):  # 1001 poses on 4 devices: padded
        r = sweep_poses(mbjax.moment_arms, model, qs, chunk_size=chunk, batch_size=batch, progress=False)
        print("max error", chunk, batch, float(np.max(np.abs(r - ref))))
        assert r.shape == ref.shape and np.max(np.abs(r - ref)) <= 1e-14
    print("OK")
    """
)


@pytest.mark.extended  # CI: tests/test_cli.py::test_sweep_sharded_over_four_devices_matches_library (four devices, equal to the library)
@needs_arm26
def test_single_process_sharded_over_four_host_devices(tmp_path):
    script = tmp_path / "sharded.py"
    script.write_text(_SHARDED)
    env = _env(devices=4)
    res = subprocess.run([sys.executable, str(script), ARM26], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr


_WORKER = textwrap.dedent(
    """
    import sys, warnings
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    from mbjax.analysis.sweep import initialize, sweep_poses
    assert initialize()  # from MBJAX_COORDINATOR, MBJAX_NUM_PROCESSES, MBJAX_PROCESS_ID
    import mbjax
    from mbjax.io import load_osim
    rank = jax.process_index()
    assert jax.process_count() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(sys.argv[1], ignore_wrapping=True)
    n = int(sys.argv[3])
    qs = np.random.default_rng(1).uniform(-1.0, 1.0, (n, model.n_coordinates))

    def lengths_and_arms(model, q):
        return {"L": mbjax.muscle_lengths(model, q), "R": mbjax.moment_arms(model, q)}

    out = sweep_poses(lengths_and_arms, model, qs, chunk_size=64, progress=rank == 0)
    lone = sweep_poses(mbjax.moment_arms, model, qs[:1], progress=False)  # process 1 has no pose
    np.savez(f"{sys.argv[2]}/out{rank}.npz", L=out["L"], R=out["R"], lone=lone)
    try:  # different poses on the two processes are refused everywhere
        sweep_poses(mbjax.moment_arms, model, qs + rank, progress=False)
    except ValueError as e:
        print("refused:", e)
    print("process", rank, "of", jax.process_count(), "devices", jax.device_count(), "done")
    """
)


def _env(devices=None, **extra):
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID", "XLA_FLAGS"):
        env.pop(k, None)
    if devices:
        env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_processes(argv, n_proc=2, devices=None, timeout=600, **popen):
    """Run ``argv`` as ``n_proc`` processes of one ``jax.distributed`` job on this machine."""
    port = _free_port()
    procs = []
    for i in range(n_proc):
        env = _env(devices, MBJAX_COORDINATOR=f"localhost:{port}", MBJAX_NUM_PROCESSES=str(n_proc),
                   MBJAX_PROCESS_ID=str(i))
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      **popen))
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


@needs_arm26
# CI: tests/test_cli.py::test_two_processes_split_the_sweep_and_process_0_writes (two processes, the
# library's CSV, written by process 0)
@pytest.mark.extended
@pytest.mark.parametrize("devices", [1, 2])
def test_two_processes_gather_in_order(tmp_path, devices):
    n = 301  # odd: process 1 gets 150 poses + 1 padding; chunks of 64 (3 per process, the last padded)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    results = _run_processes([sys.executable, str(script), ARM26, str(tmp_path), str(n)], devices=devices)
    for rank, (rc, out, err) in enumerate(results):
        assert rc == 0, f"process {rank}:\n{out}\n{err}"
        assert f"process {rank} of 2 devices {2 * devices} done" in out
        assert "refused: sweep_poses: qs differs between processes" in out
    model = _arm26()
    qs = _poses(model, n)
    lengths, arms = _reference(model, qs)
    for rank in range(2):
        got = np.load(tmp_path / f"out{rank}.npz")
        assert got["R"].shape == (n, 2, 6)
        assert np.max(np.abs(got["R"] - arms)) <= 1e-14  # every process holds all poses, in order
        assert np.max(np.abs(got["L"] - lengths)) <= 1e-14
        assert np.max(np.abs(got["lone"] - arms[:1])) <= 1e-14


def test_initialize_single_process_is_a_no_op(monkeypatch):
    calls = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda *a, **k: calls.append((a, k)))
    for k in ("MBJAX_COORDINATOR", "MBJAX_NUM_PROCESSES", "MBJAX_PROCESS_ID", "SLURM_JOB_ID", "SLURM_NTASKS",
              "SLURM_STEP_NODELIST", "SLURM_PROCID", "SLURM_LOCALID", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    assert msweep.initialize() is False
    assert msweep.initialize(num_processes=1) is False
    monkeypatch.setenv("MBJAX_NUM_PROCESSES", "1")
    assert msweep.initialize() is False
    monkeypatch.delenv("MBJAX_NUM_PROCESSES")
    slurm = {"SLURM_JOB_ID": "7", "SLURM_STEP_NODELIST": "node[01-02]", "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}
    for k, v in slurm.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("SLURM_NTASKS", "1")
    assert msweep.initialize() is False  # a one-task allocation
    assert calls == []
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert msweep.initialize() is True  # srun -n 4: JAX reads the SLURM settings itself
    assert calls == [((None, None, None), {"local_device_ids": None})]
    for k in slurm:
        monkeypatch.delenv(k)
    monkeypatch.setenv("MBJAX_COORDINATOR", "10.0.0.1:1234")
    monkeypatch.setenv("MBJAX_NUM_PROCESSES", "2")
    monkeypatch.setenv("MBJAX_PROCESS_ID", "1")
    assert msweep.initialize() is True
    assert calls[-1] == (("10.0.0.1:1234", 2, 1), {"local_device_ids": None})
    assert msweep.initialize(process_id=0) is True and calls[-1][0] == ("10.0.0.1:1234", 2, 0)  # argument wins
    monkeypatch.delenv("MBJAX_PROCESS_ID")
    with pytest.raises(ValueError, match="process_id not given"):
        msweep.initialize()
    with pytest.raises(ValueError, match=r"process_id must be in \[0, 2\)"):
        msweep.initialize(process_id=2)
    monkeypatch.setenv("MBJAX_PROCESS_ID", "one")
    with pytest.raises(ValueError, match="MBJAX_PROCESS_ID must be an integer"):
        msweep.initialize()
