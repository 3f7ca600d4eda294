"""Benchmark: closed-form pose derivatives vs the literal Kronecker path vs autodiff.

For a 10-body and a 30-body tree with 10 coordinates, batched over poses in float64, prints the
per-pose time of (a) the fast closed-form ∂T/∂q, ∂²T/∂q² (einsum path), (b) the literal Kronecker
reference (Eq. 74/89; fewer poses, it is a test oracle), (c) autodiff (``jacfwd`` + ``hessian`` of
``body_poses``), the ratios and the jit compile times.  All numbers come from one run.

    .venv/bin/python benchmarks/kinematics.py [--poses 4096]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx
import jax.numpy as jnp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import mbjax  # noqa: E402
from _trees import random_poses, random_tree  # noqa: E402
from _timing import timed  # noqa: E402




def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--poses", type=int, default=4096)
    parser.add_argument("--kron-poses", type=int, default=16)
    parser.add_argument("--autodiff-poses", type=int, default=256,
                        help="autodiff is timed on fewer poses (per-pose times are compared)")
    args = parser.parse_args()
    nq = 10
    print(f"JAX {jax.__version__} on {jax.devices()[0].platform}, float64, {args.poses} poses")
    print(f"{'bodies':>6} {'closed µs/pose':>15} {'kron µs/pose':>13} {'autodiff µs/pose':>17} "
          f"{'autodiff/closed':>15} {'kron/closed':>12} {'compile closed s':>17} {'compile autodiff s':>19}")
    for nb in (10, 30):
        model = random_tree(nb, n_bodies=nb, n_coordinates=nq, chain_depth=min(nb, 12),
                            nonlinear=False, zero_inertia_fraction=0.2)
        qs = random_poses(1, args.poses, nq)

        def batched(one, chunk):
            # vmapped in chunks (lax.map with batch_size) so autodiff's large intermediates fit in memory
            return eqx.filter_jit(lambda m, qs: jax.lax.map(lambda q: one(m, q), qs, batch_size=chunk))

        def autodiff_one(m, q):
            f = lambda x: mbjax.body_poses(m, x)
            return jax.jacfwd(f)(q), jax.hessian(f)(q)

        fast = batched(mbjax.pose_derivatives, 64)  # 64-pose chunks stay in cache (1.5x faster than 512)
        auto = batched(autodiff_one, 64)
        kron = batched(lambda m, q: mbjax.pose_derivatives_kron(m, q)[2], 8)

        c_fast, t_fast = timed(fast, model, qs)
        print(f"  [{nb} bodies] closed form: compile {c_fast:.1f} s, {1e6 * t_fast / args.poses:.2f} µs/pose", flush=True)
        c_auto, t_auto = timed(auto, model, qs[: args.autodiff_poses], repeat=1)
        print(f"  [{nb} bodies] autodiff: compile {c_auto:.1f} s, {1e6 * t_auto / args.autodiff_poses:.2f} µs/pose", flush=True)
        c_kron, t_kron = timed(kron, model, qs[: args.kron_poses], repeat=1)
        per = lambda t, n: 1e6 * t / n
        pf, pa, pk = per(t_fast, args.poses), per(t_auto, args.autodiff_poses), per(t_kron, args.kron_poses)
        print(f"{nb:>6} {pf:>15.2f} {pk:>13.1f} {pa:>17.2f} {pa / pf:>15.1f} {pk / pf:>12.1f} "
              f"{c_fast:>17.2f} {c_auto:>19.2f}")
    print("target: closed form >= 3x faster than autodiff at 30 bodies, compile < 20 s")


if __name__ == "__main__":
    main()
