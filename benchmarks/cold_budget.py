"""Where a cold `mbjax run` spends its time, tool by tool, beside OpenSim's tools on the same files.

One trial per command, as a biomechanist runs it: each case is a copy of an OpenSim pipeline's
folder, and ``mbjax run SETUP...`` runs its setups in a new Python process, first with an empty
persistent compilation cache, then again (a fresh copy at the same place) with the caches the first
run filled: compiled programs and the tools' traced programs (:mod:`mbjax.program_store`), and once
more with an empty cache and XLA:CPU's default emitters (``MBJAX_XLA_DEFAULTS=1``: what
:mod:`mbjax.fast_compiles` saves).  Phases per tool,
from inside that process: *parse* (reading the model file), *trace* (Python tracing to jaxprs),
*lower* (jaxpr to StableHLO), *compile* (XLA, or reading the program back from the cache) from
JAX's own monitoring events (``jax.monitoring``), and *rest* (solving, filtering, writing files:
the tool's wall time minus the others).  *import* is ``import mbjax`` plus JAX.  OpenSim 4.6 runs
the same setup files in another new process (its import timed apart), each with its tool
(``InverseKinematicsTool``, ``InverseDynamicsTool``, ``AnalyzeTool``).

Cases: ``gait2354`` (the shipped Gait2354 walking trial: IK, ID, SO), ``arm26`` (the arm26 tutorial:
IK, SO with its wrap surfaces), ``rajagopal`` (Rajagopal2016's walking trial from
``$OPENSIM_MODELS_DIR/Pipelines/Rajagopal``: IK, ID; skipped without the library).

    .venv/bin/python benchmarks/cold_budget.py [--case gait2354|arm26|rajagopal|all]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data" / "opensim_models"
PHASES = ("parse", "trace", "lower", "compile", "rest")
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile"}


def _child(folder: str, setups: list[str]) -> None:
    """In a new process: ``mbjax run`` on ``setups`` in ``folder``, printing the phases as JSON."""
    t0 = time.perf_counter()
    import jax
    import mbjax  # noqa: F401
    from mbjax.cli import tools
    t_import = time.perf_counter() - t0
    spent = {k: 0.0 for k in PHASES}
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **_: spent.__setitem__(EVENTS[event], spent[EVENTS[event]] + secs) if event in EVENTS else None)
    load = tools.load_model

    def timed_load(*a, **k):  # reading the file; JAX work during it stays in its own phases
        t, before = time.perf_counter(), sum(spent[e] for e in EVENTS.values())
        try:
            return load(*a, **k)
        finally:
            spent["parse"] += time.perf_counter() - t - (sum(spent[e] for e in EVENTS.values()) - before)

    tools.load_model = timed_load
    rows = []
    for name in ("ik_command", "id_command", "so_command", "jr_command"):
        command = getattr(tools, name)

        def timed(args, _command=command, _name=name):
            before = dict(spent)
            t = time.perf_counter()
            status = _command(args)
            wall = time.perf_counter() - t
            row = {k: spent[k] - before[k] for k in PHASES if k != "rest"}
            row["rest"] = wall - sum(row.values())
            rows.append({"tool": _name.split("_")[0].upper(), "wall": wall, **row, "status": status})
            return status

        setattr(tools, name, timed)
    os.chdir(folder)
    status = tools.run_setups(setups, quiet=True)
    print("COLD_BUDGET " + json.dumps({"import": t_import, "status": status, "tools": rows}))


_OPENSIM = """
import os, sys, time, json
t0 = time.perf_counter()
import opensim as osim
t_import = time.perf_counter() - t0
out = []
for setup in sys.argv[1:]:
    os.chdir(os.path.dirname(os.path.abspath(setup)))
    kind = open(setup).read()
    tool = ("IK", osim.InverseKinematicsTool) if "<InverseKinematicsTool" in kind else \\
           ("ID", osim.InverseDynamicsTool) if "<InverseDynamicsTool" in kind else ("SO", osim.AnalyzeTool)
    t = time.perf_counter()
    tool[1](os.path.basename(setup)).run()
    out.append({"tool": tool[0], "wall": time.perf_counter() - t})
print("OPENSIM_BUDGET " + json.dumps({"import": t_import, "tools": out}))
"""


def _tagged(stdout: str, tag: str) -> dict:
    for line in stdout.splitlines():
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    raise RuntimeError(f"no {tag} line in:\n{stdout[-2000:]}")


def _cases(tmp: pathlib.Path) -> dict:
    """name -> (a function copying the case's files into a folder and returning its setup paths)."""
    import mbjax.models

    def gait(folder):
        shutil.copytree(mbjax.models.pipeline_path("gait2354_walk"), folder)
        (folder / "subject01_walk1_ik.mot").unlink()  # ID and SO read what this run's IK writes
        return ["subject01_Setup_IK.xml", "subject01_Setup_InverseDynamics.xml",
                "subject01_Setup_StaticOptimization.xml"]

    def arm26(folder):
        folder.mkdir()
        shutil.copy(mbjax.models.model_path("arm26"), folder / "arm26.osim")
        for sub in ("arm26_ik", "arm26_so"):
            for f in (DATA / sub).iterdir():
                if f.suffix in (".xml", ".trc"):
                    shutil.copy(f, folder / f.name)
        return ["arm26_Setup_InverseKinematics.xml", "arm26_Setup_StaticOptimization.xml"]

    def rajagopal(folder):
        # the pipeline's scaled and adjusted models are not in the library: Rajagopal2016.osim with the
        # walking trial's own MarkerSet (tests/validation/test_pipelines_opensim.py), and ID reads IK's output
        lib = pathlib.Path(os.environ["OPENSIM_MODELS_DIR"])
        shutil.copytree(lib / "Pipelines" / "Rajagopal", folder)
        model = (lib / "Models" / "Rajagopal" / "Rajagopal2016.osim").read_text()
        markers = (folder / "Scale" / "markerset_walk_preScale.xml").read_text()
        markers = re.search(r"<MarkerSet\b.*</MarkerSet>", markers, re.S).group(0)
        markers = re.sub(r"<body>\s*(\S+)\s*</body>", r"<socket_parent_frame>/bodyset/\1</socket_parent_frame>", markers)
        model = re.sub(r"<MarkerSet\b.*?</MarkerSet>", lambda _: markers, model, count=1, flags=re.S)
        (folder / "Scale" / "subject_scaled_walk.osim").write_text(model)
        (folder / "CMC" / "walk" / "subject_walk_adjusted.osim").write_text(model)
        setup = folder / "ID" / "id_setup_walk.xml"
        setup.write_text(setup.read_text().replace("../RRA/walk/results_rra_2/rra_walk_2_Kinematics_q.sto",
                                                   "../IK/results_walk/ik_output_walk.mot"))
        for sub in ("IK", "ID"):  # OpenSim's IK writes no motion into a folder that is not there (and says nothing)
            (folder / sub / "results_walk").mkdir(exist_ok=True)
        return ["IK/ik_setup_walk.xml", "ID/id_setup_walk.xml"]

    cases = {"gait2354": gait, "arm26": arm26}
    if os.environ.get("OPENSIM_MODELS_DIR"):
        cases["rajagopal"] = rajagopal
    return cases


def _child_env(cache: pathlib.Path, extra: dict) -> dict:
    """This process's environment for a child run; with ``MBJAX_XLA_DEFAULTS`` also without the
    emitters' flag that ``import mbjax`` put into this process's ``XLA_FLAGS``."""
    from mbjax.fast_compiles import FLAG

    env = {**os.environ, "MBJAX_CACHE_DIR": str(cache), **extra}
    if extra.get("MBJAX_XLA_DEFAULTS") == "1":
        env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if f != FLAG)
    return env


def run_case(name, make, tmp: pathlib.Path) -> None:
    cache = tmp / f"{name}_cache"
    results = []
    # the last row: an empty cache again, with XLA:CPU's default emitters (mbjax/fast_compiles.py)
    for label, folder_cache, extra in (("empty cache", cache, {}), ("filled cache", cache, {}),
                                       ("XLA emitters", tmp / f"{name}_cache_xla", {"MBJAX_XLA_DEFAULTS": "1"})):
        folder = tmp / f"{name}_mbjax"  # the same trial run again: a fresh copy at the same place
        shutil.rmtree(folder, ignore_errors=True)
        setups = make(folder)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", str(folder), *setups], capture_output=True,
                              text=True, timeout=3000,
                              env=_child_env(folder_cache, extra))
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{name}: mbjax run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        results.append((label, wall, _tagged(proc.stdout, "COLD_BUDGET")))
    folder = tmp / f"{name}_opensim"
    setups = make(folder)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _OPENSIM, *[str(folder / s) for s in setups]], capture_output=True,
                          text=True, timeout=3000)
    os_wall = time.perf_counter() - t0
    ref = _tagged(proc.stdout, "OPENSIM_BUDGET") if proc.returncode == 0 else None
    if ref is None:
        print(f"{name}: OpenSim's tools did not run ({proc.stderr.strip()[-300:]}); no ratio")
    os_tool = {r["tool"]: r["wall"] for r in ref["tools"]} if ref else {}
    print(f"\n{name}: `mbjax run` {' '.join(setups)} (seconds; ratio = OpenSim / mbjax)")
    head = f"{'':14s} {'tool':5s} " + " ".join(f"{p:>8s}" for p in ("wall",) + PHASES) + f" {'OpenSim':>8s} {'ratio':>7s}"
    print(head)
    for label, wall, budget in results:
        print(f"{label:14s} {'import':5s} {budget['import']:8.2f}" + " " * 45 +
              (f" {ref['import']:8.2f} {ref['import'] / budget['import']:6.2f}x" if ref else ""))
        for row in budget["tools"]:
            o = os_tool.get(row["tool"], float("nan"))
            print(f"{label:14s} {row['tool']:5s} {row['wall']:8.2f} " + " ".join(f"{row[p]:8.2f}" for p in PHASES)
                  + f" {o:8.2f} {o / row['wall']:6.2f}x")
        os_total = os_wall if ref else float("nan")
        print(f"{label:14s} {'whole process':20s} {wall:8.2f} s   OpenSim's process {os_total:8.2f} s   "
              f"ratio {os_total / wall:6.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=("gait2354", "arm26", "rajagopal", "all"), default="all")
    ap.add_argument("--child", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(args.child[0], args.child[1:])
        return
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="mbjax_cold_"))
    print(f"{os.cpu_count()} CPUs; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}; files in {tmp}")
    for name, make in _cases(tmp).items():
        if args.case in (name, "all"):
            run_case(name, make, tmp)


if __name__ == "__main__":
    main()
