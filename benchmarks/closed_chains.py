"""Per-pose cost of f, ∇f, H of a closed chain by projection, molecule and implicit differentiation.

Five-bar (2 coordinates, 2 dependent joints) and four-bar (1 coordinate, 3 joints), jitted and
vmapped over a batch of poses, float64.  Every method includes its Newton solve(s) (continuation
from the reference configuration for the centre; the molecule adds 8 neighbour solves for the
five-bar).  Also: ``mbjax.joint_values`` of the whole model (one shared solve per loop), and the
derivative step alone given a solved f (projection vs direct linear solve).

    .venv/bin/python benchmarks/closed_chains.py [--batch N] [--repeats R]
"""

from __future__ import annotations

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from mbjax.constraints import (  # noqa: E402
    direct_derivatives,
    implicit_values,
    molecule_derivatives,
    projection_derivatives,
    projection_values,
    solve,
)
from mbjax.models.fivebar import fivebar  # noqa: E402
from mbjax.models.fourbar import fourbar  # noqa: E402
from _timing import timed  # noqa: E402




def bench(name, linkage, qs, repeats):
    con = linkage.constraint
    n = qs.shape[0]
    step = jnp.asarray(1e-4)
    fs = jax.jit(jax.vmap(lambda q: solve(con, q)))(qs)
    cases = {
        "solve only": jax.jit(jax.vmap(lambda q: solve(con, q))),
        "projection (solve + Eq. 102-120)": jax.jit(jax.vmap(lambda q: projection_values(con, q))),
        "implicit (custom_jvp, jacfwd/hessian)": jax.jit(jax.vmap(lambda q: implicit_values(con, q))),
        "molecule (h = 1e-4)": jax.jit(jax.vmap(lambda q: molecule_derivatives(con, q, step))),
        "model joint_values (projection maps)": jax.jit(jax.vmap(lambda q: mbjax.joint_values(linkage.model, q))),
    }
    print(f"\n{name}: batch {n}, per-pose times (best of {repeats})")
    times = {}
    for label, fn in cases.items():
        times[label] = timed(fn, qs, repeat=repeats)[1] / n
        print(f"  {label:42s} {times[label] * 1e6:9.2f} µs")
    deriv = {
        "projection derivatives given f": jax.jit(jax.vmap(lambda f, q: projection_derivatives(con, f, q))),
        "direct linear solve given f": jax.jit(jax.vmap(lambda f, q: direct_derivatives(con, f, q))),
    }
    for label, fn in deriv.items():
        times[label] = timed(fn, fs, qs, repeat=repeats)[1] / n
        print(f"  {label:42s} {times[label] * 1e6:9.2f} µs")
    base = times["projection (solve + Eq. 102-120)"]
    print("  ratios to projection:")
    for label in ("implicit (custom_jvp, jacfwd/hessian)", "molecule (h = 1e-4)", "solve only",
                  "model joint_values (projection maps)"):
        print(f"    {label:40s} {times[label] / base:6.2f}x")
    print(f"    {'projection / direct (derivatives only)':40s} "
          f"{times['projection derivatives given f'] / times['direct linear solve given f']:6.2f}x")
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.batch
    q5 = jnp.asarray(np.stack([rng.uniform(0, 2 * np.pi, n), rng.uniform(-np.pi, np.pi, n)], 1))
    q4 = jnp.asarray(rng.uniform(-2.0, 2.0, (n, 1)))
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    bench("five-bar (nq = 2, m = 2)", fivebar("projection"), q5, args.repeats)
    bench("four-bar (nq = 1, m = 3)", fourbar("projection"), q4, args.repeats)


if __name__ == "__main__":
    main()
