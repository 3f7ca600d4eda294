"""Moment-arm throughput: mbjax (batched, jit) vs OpenSim's ``computeMomentArm`` loop.

All 14 shoulder muscles (MoBL/Holzbaur, :mod:`mbjax.models.shoulder`) x the 3 shoulder
coordinates, on the 181-pose elevation grid and on N random poses (default 100 000).  Prints model
load time, compile time, mbjax time per pose (fast path :func:`moment_arms_batched`, i.e. the
:func:`moment_arms` kernel with the poses as the last axis in chunks of ``--batch-size``; also
``jax.vmap(moment_arms)``, the previous joint-space fast path, the Eq. 193 block form and a float32
row), OpenSim's time per pose on the same model file (if installed; a subsample of poses, 14 x 3
``computeMomentArm`` calls per pose) and the ratio.  Target (issue 5): >= 1000x per pose, load +
compile <= 30 s.  Times are the best of several calls (the machine may be shared).

Run: ``.venv/bin/python benchmarks/moment_arms.py [--random N] [--osim-poses M] [--batch-size B]``
"""

from __future__ import annotations

import argparse
import os
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

from mbjax.models.shoulder import shoulder_model, trimmed_osim  # noqa: E402
from mbjax.muscles import moment_arms, moment_arms_batched, moment_arms_block  # noqa: E402
from mbjax.muscles.moment_arms import _moment_arms_joint_space  # noqa: E402


def timed(fn, *args, repeat=10):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--random", type=int, default=100_000)
    ap.add_argument("--osim-poses", type=int, default=200)
    ap.add_argument("--chunk", type=int, default=25_000, help="poses per call")
    ap.add_argument("--batch-size", type=int, default=64, help="poses per kernel step inside a call")
    args = ap.parse_args(argv)

    t = time.perf_counter()
    model = shoulder_model("holzbaur")
    t_load = time.perf_counter() - t
    nm, nq = len(model.muscle_names), model.n_coordinates
    grid = np.zeros((181, 3))
    grid[:, 1] = np.deg2rad(np.arange(181.0))
    grid[-1, 1] = 3.14159265
    rng = np.random.default_rng(0)
    rand = np.stack([rng.uniform(-1.5, 2.0, args.random), rng.uniform(0, 3.1, args.random),
                     rng.uniform(-1.5, 1.5, args.random)], 1)

    fast = jax.jit(lambda m, q: moment_arms_batched(m, q, args.batch_size))
    vmapped = jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))
    previous = jax.jit(jax.vmap(_moment_arms_joint_space, in_axes=(None, 0)))
    block = jax.jit(jax.vmap(moment_arms_block, in_axes=(None, 0)))
    t = time.perf_counter()
    jax.block_until_ready(fast(model, jnp.asarray(grid)))
    t_compile = time.perf_counter() - t
    print(f"model: {nm} muscles x {nq} coordinates, {model.n_bodies} bodies")
    print(f"load {t_load:.2f} s, first call (compile + run, 181 poses) {t_compile:.2f} s, "
          f"total {t_load + t_compile:.2f} s (target <= 30 s)")
    t_grid = timed(fast, model, jnp.asarray(grid))
    others = {}
    for name, fn in (("vmap(moment_arms)", vmapped), ("previous joint-space path", previous),
                     ("block form (Eq. 193)", block)):
        jax.block_until_ready(fn(model, jnp.asarray(grid)))
        others[name] = timed(fn, model, jnp.asarray(grid))
    print(f"181-pose grid: fast path {1e6 * t_grid / 181:.2f} us/pose, "
          + ", ".join(f"{k} {1e6 * v / 181:.2f} us/pose" for k, v in others.items()))
    diff = jnp.max(jnp.abs(fast(model, jnp.asarray(grid)) - previous(model, jnp.asarray(grid))))
    print(f"  max |fast - previous| on the grid: {float(diff):.1e} m")
    chunk = min(args.chunk, args.random)

    def per_pose_random(fn, mdl, dtype=jnp.float64, sweeps=2):
        jax.block_until_ready(fn(mdl, jnp.asarray(rand[:chunk], dtype)))  # compile for the chunk shape
        best = np.inf
        for _ in range(sweeps):  # best sweep over all poses
            t = time.perf_counter()
            for s in range(0, args.random - chunk + 1, chunk):
                jax.block_until_ready(fn(mdl, jnp.asarray(rand[s:s + chunk], dtype)))
            best = min(best, time.perf_counter() - t)
        return best

    n_done = (args.random // chunk) * chunk
    t_rand = per_pose_random(fast, model)
    per_pose = t_rand / n_done
    print(f"{n_done} random poses: {t_rand:.2f} s, {1e6 * per_pose:.2f} us/pose")
    t_vmap = per_pose_random(vmapped, model, sweeps=1)
    print(f"  jax.vmap(moment_arms), {chunk} poses per call: {1e6 * t_vmap / n_done:.2f} us/pose")
    model32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, model)
    t32 = per_pose_random(fast, model32, jnp.float32)
    r32 = fast(model32, jnp.asarray(rand[:1000], jnp.float32))
    r64 = fast(model, jnp.asarray(rand[:1000]))
    err32 = float(jnp.max(jnp.abs(r32 - r64)))
    print(f"  float32: {1e6 * t32 / n_done:.2f} us/pose (max |R32 - R64| {err32:.1e} m)")

    try:
        import opensim as osim
    except ImportError:
        print("opensim not installed: no OpenSim timing (pip install opensim)")
        return
    path = trimmed_osim(out=os.path.join("/tmp", f"mbjax_bench_shoulder_{os.getpid()}.osim"))
    try:
        om = osim.Model(path)
        state = om.initSystem()
        cs = om.getCoordinateSet()
        coords = [cs.get(n) for n in model.coordinate_names]
        muscles = [om.getMuscles().get(i) for i in range(om.getMuscles().getSize())]
        n = min(args.osim_poses, args.random)
        t = time.perf_counter()
        for q in rand[:n]:
            for c, v in zip(coords, q):
                c.setValue(state, float(v), False)
            om.assemble(state)  # satisfy the coupler constraints, as OpenSim users do
            for c in coords:
                for m in muscles:
                    m.computeMomentArm(state, c)
        t_os = (time.perf_counter() - t) / n
    finally:
        os.remove(path)
    print(f"OpenSim computeMomentArm loop: {1e6 * t_os:.0f} us/pose ({n} poses)")
    print(f"ratio OpenSim / mbjax per pose: {t_os / per_pose:.0f}x (target >= 1000x)")


if __name__ == "__main__":
    main()
