"""Benchmark: joint reactions in resolved form (Eq. 2.10) vs the classical formula (Eq. 2.11).

Per-frame times, vmapped over frames, float64, all from one run:
(a) the paper's planar seven-segment human (p ∈ R²¹, 12 joint constraints): Eq. 2.10 with
    z at hip/knee/ankle (the paper's use), Eq. 2.10 at all six joints, Eq. 2.11 (all joints, it
    cannot open a subset);
(b) 3-D random trees (identity-and-affine maps, every body massive, nq = nb): the generic
    ``mbjax.joint_reactions`` (full wrenches + components), the literal Eq. 2.10
    (``resolved_multipliers``) and Eq. 2.11 (``joint_reactions_classical``).

    .venv/bin/python benchmarks/reactions.py [--frames 2048]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from _trees import random_poses, random_tree  # noqa: E402

from mbjax import reactions as rx  # noqa: E402
from mbjax.models import planar_human as ph  # noqa: E402
from _timing import timed  # noqa: E402




def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2048)
    args = parser.parse_args()
    n = args.frames
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}, float64, {n} frames (vmap)")

    par = ph.default_parameters()
    x = random_poses(0, 3 * n, 9)
    q, qd, qdd = x[:n], x[n : 2 * n], x[2 * n :]
    force = jnp.tile(jnp.asarray([100.0, 1500.0]), (n, 1))
    tau = jnp.zeros((n, 6))
    cases = {
        "Eq. 2.10, z at H,K,A (6 λ)": jax.jit(jax.vmap(lambda a, b, c, f: ph.reactions_resolved(par, a, b, c, f))),
        "Eq. 2.10, all joints (12 λ)": jax.jit(
            jax.vmap(lambda a, b, c, f: ph.reactions_resolved(par, a, b, c, f, joints=tuple(range(6))))
        ),
        "Eq. 2.11 classical (12 λ)": jax.jit(jax.vmap(lambda a, b, c, f: ph.reactions_classical(par, a, b, f, tau[0]))),
        "Eq. 3.3 analytic (6 λ)": jax.jit(jax.vmap(lambda a, b, c, f: ph.reactions_eq33(par, a, b, c, f))),
    }
    print("\n(a) planar seven-segment human")
    print(f"{'route':<30} {'µs/frame':>10} {'compile s':>10}")
    base = None
    for name, fn in cases.items():
        c, t = timed(fn, q, qd, qdd, force)
        base = t if base is None else base
        print(f"{name:<30} {1e6 * t / n:>10.2f} {c:>10.1f}   ratio to first {t / base:5.2f}")

    print("\n(b) 3-D random trees, every joint opened (m = 5 nb)")
    print(f"{'nb':>3} {'joint_reactions µs':>19} {'Eq.2.10 literal µs':>19} {'Eq.2.11 µs':>11} "
          f"{'2.11 / 2.10':>11} {'2.11 / joint_reactions':>23}")
    for nb in (4, 8, 12):
        model = random_tree(nb, n_bodies=nb, n_coordinates=nb, zero_inertia_fraction=0.0, nonlinear=False)
        spec = rx.reaction_spec(model)
        m = max(n // 4, 64)
        x = random_poses(1, 3 * m, nb)
        a, b, c = x[:m], x[m : 2 * m], x[2 * m :]
        fast = eqx.filter_jit(jax.vmap(lambda qq, vv, aa: rx.joint_reactions(model, qq, vv, aa, spec).local))
        lit = eqx.filter_jit(jax.vmap(lambda qq, vv, aa: rx.resolved_multipliers(model, qq, vv, aa, spec)))
        cla = eqx.filter_jit(jax.vmap(lambda qq, vv, aa: rx.joint_reactions_classical(model, qq, vv, spec)))
        _, t_fast = timed(fast, a, b, c)
        _, t_lit = timed(lit, a, b, c)
        _, t_cla = timed(cla, a, b, c)
        print(f"{nb:>3} {1e6 * t_fast / m:>19.2f} {1e6 * t_lit / m:>19.2f} {1e6 * t_cla / m:>11.2f} "
              f"{t_cla / t_lit:>11.2f} {t_cla / t_fast:>23.2f}")


if __name__ == "__main__":
    main()
