"""simulate: compile once, then rerun with new initial states, times and controller gains.

Run: ``.venv/bin/python benchmarks/simulate.py [--quick]``.  float64, CPU.  For a 7-dof chain
(Tsit5, PID, rtol = atol = 1e-8, 0.5 s, 50 saved times) prints the first call (trace + compile +
run), the following calls with a new (q0, q̇0), t1, saved times and controller gains (an
``eqx.Module`` PD controller), and the same calls with a fresh ``lambda`` controller each time
(what every call cost before the vector field became a module: a re-trace and recompile), plus
a vmapped batch of initial states.
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from _timing import timed  # noqa: E402


def chain(n=7):
    rng = np.random.default_rng(0)
    names = [f"q{k}" for k in range(n)]
    b = mbjax.ModelBuilder(names, gravity=[0, 0, -9.81])
    parent = "ground"
    for k in range(n):
        axis = rng.normal(size=3)
        b.add_body(f"l{k}", parent=parent, axis=axis / np.linalg.norm(axis), map=names[k],
                   translation=[0, 0, 0.3] if k else [0, 0, 0], mass=2.0, com=[0.02, 0.01, 0.15],
                   inertia=np.diag([0.02, 0.02, 0.01]))
        parent = f"l{k}"
    return b.build()


class PD(eqx.Module):
    kp: jnp.ndarray
    kd: jnp.ndarray

    def __call__(self, t, q, qd):
        return -self.kp * q - self.kd * qd


def wall(fn):
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - t0


def main(quick):
    model = chain()
    n = model.n_coordinates
    rng = np.random.default_rng(1)
    calls = 3 if quick else 6
    states = [(jnp.asarray(rng.uniform(-0.5, 0.5, n)), jnp.asarray(rng.uniform(-0.5, 0.5, n))) for _ in range(calls)]
    t1s = np.linspace(0.4, 0.5, calls)
    gains = [PD(jnp.full(n, 5.0 + k), jnp.full(n, 0.5)) for k in range(calls)]

    def run(k, controls):
        q0, qd0 = states[k]
        return mbjax.simulate(model, q0, qd0, 0.0, t1s[k], saveat=jnp.linspace(0.0, t1s[k], 50),
                              controls=controls, rtol=1e-8, atol=1e-8).ys

    print("7-dof chain, Tsit5, PID 1e-8, 0.5 s, 50 saved times; wall time per call (s)")
    print(f"{'call':<6}{'module controller':>20}{'fresh lambda':>16}")
    for k in range(calls):
        a = wall(lambda: run(k, gains[k]))
        kp, kd = gains[k].kp, gains[k].kd
        b = wall(lambda: run(k, lambda t, q, qd: -kp * q - kd * qd))
        print(f"{k:<6}{a:>20.3f}{b:>16.3f}")

    batch = 8 if quick else 64
    q0s = jnp.asarray(rng.uniform(-0.5, 0.5, (batch, n)))
    qd0s = jnp.asarray(rng.uniform(-0.5, 0.5, (batch, n)))
    ts = jnp.linspace(0.0, 0.5, 50)
    vm = jax.jit(jax.vmap(lambda q0, qd0: mbjax.simulate(model, q0, qd0, 0.0, 0.5, saveat=ts, controls=gains[0],
                                                         rtol=1e-8, atol=1e-8).ys))
    first, best = timed(vm, q0s, qd0s, repeat=2 if quick else 3)
    one_first, one = timed(lambda: run(0, gains[0]), repeat=2 if quick else 3)
    print(f"vmap over {batch} initial states: first call {first:.2f} s, then {best * 1e3:.1f} ms "
          f"({best / batch * 1e3:.2f} ms/state; one unbatched solve {one * 1e3:.1f} ms)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
