"""OpenSim's pipelines on their own files: markers → IK (→ ID) → static optimization, mbjax vs
OpenSim 4.6's tools on the same setup files, in one run.

* IK: ``arm26_Setup_InverseKinematics.xml`` (121 frames, 3 markers); mbjax
  :func:`mbjax.opensim.inverse_kinematics_from_setup` (batched Gauss-Newton, warm-started chunks) vs
  ``opensim.InverseKinematicsTool(setup).run()``.
* SO: ``arm26_Setup_StaticOptimization.xml`` (121 frames, 6 muscles, 6 Hz filter) on arm26 with its
  wrap objects (``--straight``: without); mbjax :func:`mbjax.opensim.static_optimization_from_setup` vs
  ``opensim.AnalyzeTool(setup).run()``.
* Command (``--case command``): the Gait2354 cycle as a user runs it, one command for the trial:
  ``mbjax run IK.xml ID.xml SO.xml`` in a new process (import, model load, tracing, compilation,
  solving, writing: wall time) with an empty compilation cache, then again with the cache it
  filled, against a new Python process that imports ``opensim`` and runs its three tools on the
  same files.
* Gait (``--case gait``): the shipped Gait2354 walking pipeline (``mbjax.models.pipeline_path``), one
  gait cycle 0.4-1.6 s: its IK setup (73 frames, 39 markers), its ID setup (ground reactions, 6 Hz),
  and the static-optimization setup with the pipeline's 6 pelvis residuals and 17 reserves
  (76 frames, 54 muscles), each vs the OpenSim tool on the same file.

JAX runs with :func:`mbjax.config.single_threaded_matmuls` (Eigen's products on the calling thread:
faster for these loops of small products on few cores); ``--eigen-threads`` keeps XLA's default.
For mbjax, *cold* is the first call in a fresh process (tracing and XLA compilation included) and
*warm* the best of ``--repeat`` further calls on the same files (compiled programs reused).  The
ratio is OpenSim's time over mbjax's.  Writes nothing into the repository (a temporary folder).

    .venv/bin/python benchmarks/pipeline.py [--case arm26|gait|all] [--straight] [--repeat N] [--device cpu|gpu]
        [--eigen-threads]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import shutil
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from _timing import device_setup  # noqa: E402


def _extra(ap):
    ap.add_argument("--straight", action="store_true", help="arm26 without its wrap objects")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--case", choices=("arm26", "gait", "command", "all"), default="all",
                    help="the arm26 tutorial (IK + SO), the Gait2354 gait cycle (IK + ID + SO), the Gait2354 "
                         "cycle as one command per tool chain (`mbjax run` vs OpenSim's three tools in a fresh "
                         "process), or all")
    ap.add_argument("--no-cached-cold", action="store_true",
                    help="skip the gait case's cold run with the persistent compilation cache (two child processes)")
    ap.add_argument("--cache-child", metavar="DIR", help=argparse.SUPPRESS)
    ap.add_argument("--eigen-threads", action="store_true",
                    help="keep XLA:CPU's multi-threaded Eigen products (default here: "
                         "mbjax.config.single_threaded_matmuls(), faster for these per-frame loops)")


args = device_setup(__doc__.splitlines()[0], _extra)

import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from mbjax.opensim.model.osim_markers import load_markers  # noqa: E402

if not args.eigen_threads:
    mbjax.config.single_threaded_matmuls()  # before any JAX computation (module docstring of mbjax.cpu_threads)

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "opensim_models"
sys.path.insert(0, str(ROOT / "tests"))
from _osim_models import strip_wrapping  # noqa: E402


def _setup_copy(src: pathlib.Path, dst: pathlib.Path, model_file: str, subs=()):
    text = src.read_text()
    import re

    text = re.sub(r"<model_file>.*?</model_file>", f"<model_file>{model_file}</model_file>", text)
    for old, new in subs:
        text = text.replace(old, new)
    dst.write_text(text)
    return dst


def _time(fn, repeat):
    t0 = time.perf_counter()
    out = fn()
    cold = time.perf_counter() - t0
    warm = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm = min(warm, time.perf_counter() - t0)
    return cold, warm, out


def _table(title, rows):
    print(f"\n{title}\n{'step':8s} {'mbjax cold (s)':>15s} {'mbjax warm (s)':>15s} {'OpenSim (s)':>12s} "
          f"{'warm ratio':>11s} {'cold ratio':>11s}")
    for name, cold, warm, ref_t in rows:
        print(f"{name:8s} {cold:15.3f} {warm:15.4f} {ref_t:12.3f} {ref_t / warm:10.1f}x {ref_t / cold:10.2f}x")


def _opensim():
    try:
        import opensim as osim
    except ImportError:
        return None
    return osim


def arm26(tmp):
    model_file = mbjax.models.model_path("arm26")
    if args.straight:
        model_file = strip_wrapping(model_file, str(tmp / "arm26_straight.osim"))
    ik_setup = _setup_copy(DATA / "arm26_ik" / "arm26_Setup_InverseKinematics.xml", tmp / "ik.xml", model_file)
    ik_text = ik_setup.read_text()
    import re

    ik_text = re.sub(r"<marker_file>.*?</marker_file>",
                     f"<marker_file>{DATA / 'arm26_ik' / 'arm26_elbow_flex.trc'}</marker_file>", ik_text)
    ik_text = re.sub(r"<output_motion_file>.*?</output_motion_file>",
                     f"<output_motion_file>{tmp / 'ik_opensim.mot'}</output_motion_file>", ik_text)
    ik_setup.write_text(ik_text)
    so_setup = _setup_copy(DATA / "arm26_so" / "arm26_Setup_StaticOptimization.xml", tmp / "so.xml", model_file, (
        ("<coordinates_file> arm26_InverseKinematics.mot </coordinates_file>",
         f"<coordinates_file>{DATA / 'arm26_so' / 'arm26_InverseKinematics.mot'}</coordinates_file>"),
        ("<results_directory> PhysiologicalResults </results_directory>",
         f"<results_directory>{tmp / 'so_opensim'}</results_directory>")))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = mbjax.io.load_osim(model_file)
        markers = load_markers(model_file, model)
        load = time.perf_counter() - t0
    print(f"arm26 ({'straight paths' if args.straight else 'with wrap objects'}), model load {load:.2f} s")
    ik_cold, ik_warm, ik = _time(lambda: mbjax.opensim.inverse_kinematics_from_setup(
        ik_setup, model, markers, progress=False), args.repeat)
    so_cold, so_warm, so = _time(lambda: mbjax.opensim.static_optimization_from_setup(
        so_setup, model, write=False, progress=False), args.repeat)
    print(f"IK: {ik.time.size} frames, marker RMS max {np.nanmax(ik.rms) * 1e3:.2f} mm; "
          f"SO: {so.time.size} frames, converged {bool(np.asarray(so.result.converged).all())}")
    osim = _opensim()
    os_ik = os_so = float("nan")
    if osim is not None:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            t0 = time.perf_counter()
            osim.InverseKinematicsTool(str(ik_setup)).run()
            os_ik = time.perf_counter() - t0
            t0 = time.perf_counter()
            osim.AnalyzeTool(str(so_setup)).run()
            os_so = time.perf_counter() - t0
        finally:
            os.chdir(cwd)
        ref = mbjax.io.read_storage(tmp / "so_opensim" / "arm26_StaticOptimization_activation.sto")
        cols = [list(ref.labels).index(m) for m in so.labels]
        print(f"SO activations vs OpenSim's (its default criterion 1e-4): max |Δa| "
              f"{np.abs(so.activations - ref.data[:, cols]).max():.1e}")
    _table("arm26 tutorial", [("IK", ik_cold, ik_warm, os_ik), ("SO", so_cold, so_warm, os_so),
                              ("IK + SO", ik_cold + so_cold, ik_warm + so_warm, os_ik + os_so)])


def _gait_setups(tmp):
    folder = tmp / "gait2354_walk"
    shutil.copytree(mbjax.models.pipeline_path("gait2354_walk"), folder)
    return folder, tuple(folder / f"subject01_Setup_{n}.xml" for n in ("IK", "InverseDynamics", "StaticOptimization"))


def _cache_child(tmp, cache):
    """A fresh process with the persistent compilation cache at ``cache``: the three cold calls."""
    mbjax.config.enable_compilation_cache(cache)
    folder, (ik_setup, id_setup, so_setup) = _gait_setups(tmp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(folder / "subject01_simbody.osim")
        markers = load_markers(folder / "subject01_simbody.osim", model)
    out = {}
    tools = mbjax.opensim
    for name, fn in (("IK", lambda: tools.inverse_kinematics_from_setup(ik_setup, model, markers, progress=False)),
                     ("ID", lambda: tools.inverse_dynamics_from_setup(id_setup, model, write=False)),
                     ("SO", lambda: tools.static_optimization_from_setup(so_setup, model, write=False, progress=False))):
        t0 = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - t0
    print("CACHED_COLD " + json.dumps(out), flush=True)


def _cached_cold(tmp):
    """Cold times (s) of IK, ID, SO in a new process whose compiled programs come from the
    persistent cache a first child process wrote (:func:`mbjax.config.enable_compilation_cache`)."""
    cache = tmp / "xla_cache"
    times = None
    for _ in range(2):  # the first child compiles and writes, the second reads back
        proc = subprocess.run([sys.executable, __file__, "--cache-child", str(cache)], capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"cached-cold child failed:\n{proc.stderr[-2000:]}")
        line = [x for x in proc.stdout.splitlines() if x.startswith("CACHED_COLD ")][-1]
        times = json.loads(line[len("CACHED_COLD "):])
    return times


def gait(tmp):
    """OpenSim's Gait2354 walking pipeline (shipped): IK, ID and SO of one gait cycle, 0.4-1.6 s."""
    folder, (ik_setup, id_setup, so_setup) = _gait_setups(tmp)
    # OpenSim's IK would overwrite the coordinates file that both ID runs read: write it aside
    text = ik_setup.read_text()
    assert "<output_motion_file>subject01_walk1_ik.mot</output_motion_file>" in text
    ik_setup.write_text(text.replace("<output_motion_file>subject01_walk1_ik.mot</output_motion_file>",
                                     "<output_motion_file>ik_opensim.mot</output_motion_file>"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = mbjax.io.load_osim(folder / "subject01_simbody.osim")
        markers = load_markers(folder / "subject01_simbody.osim", model)
        load = time.perf_counter() - t0
    print(f"\nGait2354 walking trial (23 coordinates, 54 muscles, 39 markers), model load {load:.2f} s")
    ik_cold, ik_warm, ik = _time(lambda: mbjax.opensim.inverse_kinematics_from_setup(
        ik_setup, model, markers, progress=False), args.repeat)
    id_cold, id_warm, idr = _time(lambda: mbjax.opensim.inverse_dynamics_from_setup(id_setup, model, write=False),
                                  args.repeat)
    so_cold, so_warm, so = _time(lambda: mbjax.opensim.static_optimization_from_setup(
        so_setup, model, write=False, progress=False), args.repeat)
    print(f"IK: {ik.time.size} frames, marker RMS max {np.nanmax(ik.rms) * 1e3:.1f} mm; ID: {idr.time.size} frames; "
          f"SO: {so.time.size} frames (54 muscles + 23 residual/reserve actuators), converged "
          f"{bool(np.asarray(so.result.converged).all())}")
    osim = _opensim()
    os_ik = os_id = os_so = float("nan")
    if osim is not None:
        cwd = os.getcwd()
        os.chdir(folder)  # OpenSim opens the setups' relative paths from the working directory
        try:
            t0 = time.perf_counter()
            osim.InverseKinematicsTool(str(ik_setup)).run()
            os_ik = time.perf_counter() - t0
            t0 = time.perf_counter()
            osim.InverseDynamicsTool(str(id_setup)).run()
            os_id = time.perf_counter() - t0
            t0 = time.perf_counter()
            osim.AnalyzeTool(str(so_setup)).run()
            os_so = time.perf_counter() - t0
        finally:
            os.chdir(cwd)
        # both IK tools stop at the setup's <accuracy> (1e-5): their distance to the optimum solved tight
        tight = mbjax.opensim.inverse_kinematics_from_setup(ik_setup, model, markers, progress=False,
                                                            rtol=1e-12, atol=1e-12)
        q_os = mbjax.io.coordinates_from_table(model, mbjax.io.read_storage(folder / "ik_opensim.mot"))
        print(f"IK at the setup's accuracy {mbjax.opensim.read_ik_setup(ik_setup).accuracy:g}: max |q - q_optimum| "
              f"mbjax {np.abs(ik.q - tight.q).max():.1e}, OpenSim {np.abs(q_os - tight.q).max():.1e} "
              f"(median {np.median(np.abs(q_os - tight.q)):.1e}) rad or m; mbjax {int(ik.steps.sum())} LM steps "
              f"({int(tight.steps.sum())} to 1e-12)")
        ref = mbjax.io.read_storage(folder / "ResultsInverseDynamics" / "inverse_dynamics.sto")
        d_id = max(np.abs(idr.tau[:, idr.labels.index(c)] - ref.column(c)).max() for c in ref.labels)
        ref = mbjax.io.read_storage(folder / "ResultsStaticOptimization"
                                    / "subject01_walk1_StaticOptimization_activation.sto")
        da = np.abs(so.activations - ref.data[:, [list(ref.labels).index(m) for m in so.labels]])
        print(f"ID vs OpenSim's: max |Δτ| {d_id:.1e}; SO activations vs OpenSim's (its default criterion 1e-4): "
              f"median |Δa| {np.median(da):.1e}, max {da.max():.1e}")
    _table("Gait2354 gait cycle", [
        ("IK", ik_cold, ik_warm, os_ik), ("ID", id_cold, id_warm, os_id), ("SO", so_cold, so_warm, os_so),
        ("total", ik_cold + id_cold + so_cold, ik_warm + id_warm + so_warm, os_ik + os_id + os_so)])
    if not args.no_cached_cold:
        c = _cached_cold(tmp)
        c["total"] = c["IK"] + c["ID"] + c["SO"]
        refs = {"IK": os_ik, "ID": os_id, "SO": os_so, "total": os_ik + os_id + os_so}
        print("\ncold in a new process with the persistent compilation cache (mbjax.config.enable_compilation_cache; "
              "tracing still runs, XLA compilation is read back)")
        for k in ("IK", "ID", "SO", "total"):
            print(f"{k:8s} {c[k]:15.3f} s   OpenSim {refs[k]:8.3f} s   ratio {refs[k] / c[k]:6.2f}x")


_OPENSIM_TOOLS = """
import os, sys, time
t0 = time.perf_counter()
import opensim as osim
os.chdir(sys.argv[1])
osim.InverseKinematicsTool("subject01_Setup_IK.xml").run()
osim.InverseDynamicsTool("subject01_Setup_InverseDynamics.xml").run()
osim.AnalyzeTool("subject01_Setup_StaticOptimization.xml").run()
print("OPENSIM_IN_PROCESS", time.perf_counter() - t0)
"""


def command(tmp):
    """One trial's IK → ID → SO as commands: `mbjax run` (empty, then filled compilation cache) vs
    OpenSim's three tools in one new process; wall times of whole processes, the same files."""
    results = {}
    cache = tmp / "command_cache"
    for label in ("mbjax run, empty cache", "mbjax run, filled cache"):
        folder = tmp / label.replace(" ", "_").replace(",", "")
        shutil.copytree(mbjax.models.pipeline_path("gait2354_walk"), folder)
        (folder / "subject01_walk1_ik.mot").unlink()  # ID and SO read what this run's IK writes
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "mbjax.cli", "run", "--quiet", "subject01_Setup_IK.xml",
                               "subject01_Setup_InverseDynamics.xml", "subject01_Setup_StaticOptimization.xml"],
                              cwd=folder, capture_output=True, text=True, timeout=1800,
                              env={**os.environ, "MBJAX_CACHE_DIR": str(cache)})
        results[label] = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"mbjax run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    folder = tmp / "opensim_command"
    shutil.copytree(mbjax.models.pipeline_path("gait2354_walk"), folder)
    text = (folder / "subject01_Setup_IK.xml").read_text()  # keep the shipped IK file the other two read
    (folder / "subject01_Setup_IK.xml").write_text(text.replace(
        "<output_motion_file>subject01_walk1_ik.mot</output_motion_file>", "<output_motion_file>ik_opensim.mot</output_motion_file>"))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _OPENSIM_TOOLS, str(folder)], capture_output=True, text=True,
                          timeout=1800)
    opensim_wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"OpenSim's tools did not run ({proc.stderr.strip()[-300:]}); no ratio")
        opensim_wall = float("nan")
    print("\nGait2354 gait cycle, one command for IK + ID + SO (wall time of the whole process)")
    for label, t in results.items():
        print(f"{label:28s} {t:8.1f} s   OpenSim's three tools {opensim_wall:8.1f} s   ratio {opensim_wall / t:6.2f}x")


def main():
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="mbjax_pipeline_"))
    if args.cache_child:
        _cache_child(tmp, args.cache_child)
        return
    print(f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} "
          f"({'XLA default Eigen threads' if args.eigen_threads else 'mbjax.config.single_threaded_matmuls(); --eigen-threads: XLA default'})")
    if args.case in ("arm26", "all"):
        arm26(tmp)
    if args.case in ("gait", "all"):
        gait(tmp)
    if args.case in ("command", "all"):
        command(tmp)
    print("\nratio = OpenSim time / mbjax time (above 1: mbjax faster); cold = first call, compilation included")


if __name__ == "__main__":
    main()
