"""Benchmark: joint reactions vs inverse dynamics, both vmapped over poses, in one run.

Run: ``.venv/bin/python benchmarks/reactions.py [--quick] [--device gpu] [--float32]``.
``jax.vmap(mbjax.joint_reactions)`` (one Newton-Euler pass, batch-last kernel: full wrenches,
components and constraint parts at every joint) against ``jax.vmap(mbjax.inverse_dynamics)``
on the same poses (target: reactions ≤ 3x inverse dynamics), and the dense oracle
(``mbjax.reactions.joint_reactions_dense``: Eq. 2.10 with D, E by jacfwd over 6 n_j augmented
coordinates) on fewer poses.  Models: the URDF 7-dof chain and 20-dof tree of
``benchmarks/dynamics.py`` (every body massive, revolute joints), a random tree with
zero-inertia chains and nonlinear maps (``tests/_trees.py``), and the seven-segment planar
human of Blajer & Czaplicki.  The last column is the largest difference to the dense oracle.
"""

import os
import sys

import numpy as np

from _timing import device_setup, timed  # noqa: E402  (sets the platform before jax starts)

ARGS = device_setup(__doc__.splitlines()[0])

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import mbjax  # noqa: E402
from mbjax import reactions as rx  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402
from mbjax.models import planar_human as ph  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from _trees import random_tree, urdf_tree  # noqa: E402


def models():
    yield "7-dof chain (URDF)", load_urdf(urdf_tree(7, 0, True))
    yield "20-dof tree (URDF)", load_urdf(urdf_tree(20, 1, False))
    yield "tree, 0-inertia chains", random_tree(3, n_bodies=16, n_coordinates=8, chain_depth=8, zero_inertia_fraction=0.35)
    yield "planar human (9 dof)", ph.planar_human()


def main():
    args = ARGS
    n_poses = 1024 if args.quick else 8192
    n_dense = 64 if args.quick else 256
    repeat = 3 if args.quick else 5
    dtype = np.float32 if args.float32 else np.float64
    print(f"joint reactions on {jax.devices()[0].platform}, {n_poses} poses (dense oracle {n_dense}), "
          f"{np.dtype(dtype).name}")
    print(f"{'model':<24}{'nj':>4}{'ID µs':>9}{'reactions µs':>14}{'react/ID':>10}{'dense µs':>10}"
          f"{'dense/react':>12}{'compile s':>10}{'max |diff|':>12}")
    for label, model in models():
        if args.float32:
            model = jax.tree.map(lambda a: a.astype(jnp.float32) if isinstance(a, jax.Array) and
                                 jnp.issubdtype(a.dtype, jnp.floating) else a, model)
        spec = rx.reaction_spec(model)
        nq = model.n_coordinates
        rng = np.random.default_rng(0)
        q, qd, qdd = (jnp.asarray(rng.uniform(-1, 1, (n_poses, nq)).astype(dtype)) for _ in range(3))
        inv = jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)))
        fast = jax.jit(jax.vmap(lambda m, a, b, c: rx.joint_reactions(m, a, b, c, spec), in_axes=(None, 0, 0, 0)))
        dense = jax.jit(jax.vmap(lambda m, a, b, c: rx.joint_reactions_dense(m, a, b, c, spec), in_axes=(None, 0, 0, 0)))
        _, t_id = timed(inv, model, q, qd, qdd, repeat=repeat)
        c_fast, t_fast = timed(fast, model, q, qd, qdd, repeat=repeat)
        small = (q[:n_dense], qd[:n_dense], qdd[:n_dense])
        _, t_dense = timed(dense, model, *small, repeat=repeat)
        a, b = fast(model, *small), dense(model, *small)
        diff = float(jnp.max(jnp.abs(a.local - b.local)))
        us_id, us_fast, us_dense = 1e6 * t_id / n_poses, 1e6 * t_fast / n_poses, 1e6 * t_dense / n_dense
        print(f"{label:<24}{spec.n_joints:>4}{us_id:>9.2f}{us_fast:>14.2f}{us_fast / us_id:>10.2f}"
              f"{us_dense:>10.1f}{us_dense / us_fast:>12.0f}{c_fast:>10.1f}{diff:>12.1e}")


if __name__ == "__main__":
    main()
