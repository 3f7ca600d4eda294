"""Moment-arm throughput: ``jax.vmap(mbjax.moment_arms)`` vs OpenSim's ``computeMomentArm`` loop.

Run: ``.venv/bin/python benchmarks/moment_arms.py [--quick] [--device gpu] [--float32] [--poses N] [--compile]``
(``--compile``: trace / lower / XLA-compile seconds of the wrapped models only, :func:`compile_times`;
``--compile-cache DIR`` with it: the persistent compilation cache, run twice to time a cache read).

Models: the full MoBL-ARMS file (54 paths × 7 coordinates) with its 87 wrap objects (target:
≥ 1000× OpenSim, load + compile ≤ 10 s), the same file with its wrap objects removed (target:
≥ 5000× OpenSim per pose through plain vmap on CPU) and the 14-muscle × 3-coordinate
shoulder of the Ehsani experiment.  N random poses uniform in the file's coordinate ranges.
Routes, all in one run: the fast path ``jax.vmap(moment_arms)`` (batch-last kernel, cache-sized
chunks on CPU), ``moment_arms_batched`` with a memory chunk, the autodiff twin
``-jacfwd(muscle_lengths)`` and the Eq. 193 block form (test oracles, fewer poses).  OpenSim (if
installed) loads the same wrap-free file and loops ``computeMomentArm`` over every muscle and
coordinate of a pose subsample.  MoBL is read from the shared data folder (``MBJAX_SHARED_DATA``).
"""

from __future__ import annotations

import os
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

from _timing import device_setup, timed  # sets the platform before jax starts

ARGS = device_setup(extra=lambda ap: (ap.add_argument("--poses", type=int, default=None),
                                      ap.add_argument("--osim-poses", type=int, default=None),
                                      ap.add_argument("--compile", action="store_true",
                                                      help="only time trace, lowering and XLA compile of the wrapped models"),
                                      ap.add_argument("--compile-cache", metavar="DIR",
                                                      help="with --compile: JAX's persistent compilation cache in DIR "
                                                           "(mbjax.config.enable_compilation_cache); run twice, the second "
                                                           "run's compile column is the time to read the program back")))

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from mbjax.io import load_osim  # noqa: E402
from mbjax.models.shoulder import trimmed_osim  # noqa: E402
from mbjax.muscles import moment_arms, moment_arms_autodiff, moment_arms_batched, moment_arms_block  # noqa: E402


def strip_wrapping(src: str) -> str:
    """A copy of an .osim file without wrap objects on paths (OpenSim and mbjax read the same file)."""
    tree = ET.parse(src)
    for pws in tree.getroot().iter("PathWrapSet"):
        objs = pws.find("objects")
        if objs is not None:
            for w in list(objs):
                objs.remove(w)
    fd, out = tempfile.mkstemp(suffix="_nowrap.osim")
    os.close(fd)
    tree.write(out)
    return out


def mobl_path():
    from mbjax.models.shoulder import _source

    return _source(None)


def opensim_us_per_pose(path, names, qs):
    try:
        import opensim as osim
    except ImportError:
        return float("nan")
    om = osim.Model(path)
    state = om.initSystem()
    cs = om.getCoordinateSet()
    coords = [cs.get(n) for n in names]
    muscles = [om.getMuscles().get(i) for i in range(om.getMuscles().getSize())]
    t = time.perf_counter()
    for q in qs:
        for c, v in zip(coords, q):
            c.setValue(state, float(v), False)
        om.assemble(state)  # satisfy the coupler constraints, as OpenSim users do
        for c in coords:
            for m in muscles:
                m.computeMomentArm(state, c)
    return 1e6 * (time.perf_counter() - t) / len(qs)


def compile_times():
    """``--compile``: seconds to trace, lower and compile ``jit(vmap(f))`` for the wrapped models
    (arm26 with its 4 wrap objects, the full MoBL), f = ``muscle_lengths`` and ``moment_arms``,
    then µs/pose of the compiled program (best of 3).  Process CPU seconds in brackets (the machine
    is shared: wall time is noisy, CPU time much less so)."""
    from mbjax import models, muscle_lengths
    from mbjax.config import enable_compilation_cache

    if ARGS.compile_cache:
        import mbjax

        print(f"persistent compilation cache: {enable_compilation_cache(ARGS.compile_cache, min_compile_time=0.0)}; "
              "run-time checks off (JAX does not cache programs with host callbacks)")
        mbjax.config.set_checks(False)
    n = ARGS.poses or 64
    print(f"compile times on {jax.devices()[0].platform}, jit(vmap(f)) over {n} poses, float64")
    print(f"{'model':<12}{'function':<16}{'load s':>8}{'trace s':>16}{'lower s':>9}{'compile s':>18}{'µs/pose':>11}")
    for label in ("arm26", "MoBL"):
        for name, f in (("muscle_lengths", muscle_lengths), ("moment_arms", moment_arms)):
            t0 = time.perf_counter()
            model = models.arm26() if label == "arm26" else load_osim(mobl_path())
            load_s = time.perf_counter() - t0
            info = model.osim
            lo, hi = np.asarray(info.lower), np.asarray(info.upper)
            qs = jnp.asarray(lo + (hi - lo) * np.random.default_rng(0).uniform(size=(n, model.n_coordinates)))
            fn = jax.jit(jax.vmap(f, in_axes=(None, 0)))
            w, c = time.perf_counter(), time.process_time()
            traced = fn.trace(model, qs)
            tw, tc = time.perf_counter() - w, time.process_time() - c
            w = time.perf_counter()
            lowered = traced.lower()
            lw = time.perf_counter() - w
            w, c = time.perf_counter(), time.process_time()
            compiled = lowered.compile()
            cw, cc = time.perf_counter() - w, time.process_time() - c
            compiled(model, qs).block_until_ready()
            best = min(_run_once(compiled, model, qs) for _ in range(3))
            print(f"{label:<12}{name:<16}{load_s:>8.2f}{tw:>8.2f} ({tc:5.2f}){lw:>9.2f}{cw:>9.2f} ({cc:6.2f}){1e6 * best / n:>11.0f}",
                  flush=True)


def _run_once(compiled, model, qs):
    t = time.perf_counter()
    compiled(model, qs).block_until_ready()
    return time.perf_counter() - t


def main():
    if ARGS.compile:
        return compile_times()
    n = ARGS.poses or (4096 if ARGS.quick else 65536)
    n_osim = ARGS.osim_poses or (20 if ARGS.quick else 100)
    dtype = np.float32 if ARGS.float32 else np.float64
    src = mobl_path()
    full = strip_wrapping(src)
    shoulder = trimmed_osim(out=tempfile.mkstemp(suffix="_shoulder.osim")[1])
    print(f"moment arms on {jax.devices()[0].platform}, {n} random poses, {np.dtype(dtype).name}")
    print(f"{'model':<28}{'route':<30}{'µs/pose':>10}{'OpenSim/mbjax':>14}{'compile s':>10}{'max |diff| m':>13}")
    try:
        for label, path in (("MoBL full, wrapped", src), ("MoBL full, wrap-free", full), ("MoBL shoulder", shoulder)):
            wrapped = path == src
            t0 = time.perf_counter()
            model = load_osim(path)
            load_s = time.perf_counter() - t0
            if ARGS.float32:
                model = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, model)
            info = model.osim
            lo, hi = np.asarray(info.lower), np.asarray(info.upper)
            rng = np.random.default_rng(0)
            n_m = max(n // 16, 256) if wrapped else n  # the wrap pass costs more per pose
            qs = (lo + (hi - lo) * rng.uniform(size=(n_m, model.n_coordinates))).astype(dtype)
            label = f"{label} ({len(model.muscle_names)}x{model.n_coordinates})"
            t_os = opensim_us_per_pose(path, model.coordinate_names, qs[:n_osim].astype(np.float64))
            fast = jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))
            chunked = jax.jit(lambda m, q: moment_arms_batched(m, q, 16384))
            auto = jax.jit(jax.vmap(moment_arms_autodiff, in_axes=(None, 0)))
            block = jax.jit(jax.vmap(moment_arms_block, in_axes=(None, 0)))
            qj = jnp.asarray(qs)
            m_small = min(n_m, 256 if wrapped else 1024)
            ref = np.asarray(auto(model, qj[:m_small]))
            rows = [("jax.vmap(moment_arms)", fast, qj), ("moment_arms_batched(16384)", chunked, qj),
                    ("autodiff -jacfwd(L) (oracle)", auto, qj[:m_small]), ("Eq. 193 block (oracle)", block, qj[:m_small])]
            if wrapped:  # the block form and the memory chunker add nothing new here
                rows = [rows[0], rows[2]]
            for name, fn, x in rows:
                compile_s, best = timed(fn, model, x, repeat=2 if ARGS.quick else 5)
                us = 1e6 * best / x.shape[0]
                diff = float(np.max(np.abs(np.asarray(fn(model, qj[:m_small])) - ref)))
                extra = f" (+ load {load_s:.1f} s)" if name.startswith("jax.vmap") else ""
                print(f"{label:<28}{name:<30}{us:>10.3f}{t_os / us:>14.0f}{compile_s:>10.2f}{diff:>13.1e}{extra}", flush=True)
            print(f"{label:<28}{'OpenSim computeMomentArm':<30}{t_os:>10.0f}{'1':>14}")
    finally:
        os.remove(full)
        os.remove(shoulder)
    print("targets: jax.vmap(moment_arms) >= 5000x OpenSim on the wrap-free full MoBL, "
          ">= 1000x with wrapping and load + compile <= 10 s, CPU")


if __name__ == "__main__":
    main()
