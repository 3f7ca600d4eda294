"""Dynamics benchmark: batched inverse dynamics, mass matrix and forward dynamics vs Pinocchio.

Run: ``.venv/bin/python benchmarks/dynamics.py [--quick] [--device gpu] [--float32]``.
``jax.vmap(mbjax.inverse_dynamics)`` (batch-last Newton-Euler kernel) over N poses of a 7-dof
chain and a 20-dof random tree, both URDF files that Pinocchio loads too; Pinocchio's C++
``rnea`` / ``crba`` / ``aba`` are timed per call in the same run (where ``pin`` is installed),
and the results are compared (max |τ_mbjax − τ_pinocchio|).  Target: mbjax µs/pose ≤
Pinocchio µs/call.  The autodiff-Lagrangian route is timed on fewer poses as a reference.
"""

import time

import numpy as np

from _timing import device_setup, timed  # noqa: E402  (sets the platform before jax starts)

ARGS = device_setup()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import os  # noqa: E402
import sys  # noqa: E402

import mbjax  # noqa: E402
from mbjax import _dynamics as dyn  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from _trees import urdf_tree  # noqa: E402


MODELS = {"7-dof chain": (7, 0, True), "20-dof tree": (20, 1, False)}


def pinocchio_model(xml: str):
    try:
        import pinocchio as pin
    except ImportError:
        return None
    model = pin.buildModelFromXML(xml)
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model


def pin_order(pmodel, names):
    """Index of each mbjax coordinate (joint name) in Pinocchio's q."""
    return np.asarray([pmodel.joints[pmodel.getJointId(n)].idx_q for n in names])


def time_pinocchio(fn, n_calls: int) -> float:
    """Best of 3 loops of ``n_calls`` calls: seconds per call."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn(n_calls)
        best = min(best, (time.perf_counter() - t0) / n_calls)
    return best


def main():
    args = ARGS
    n_poses = 1024 if args.quick else 8192
    repeat = 3 if args.quick else 7
    dtype = np.float32 if args.float32 else np.float64
    print(f"batched dynamics on {jax.devices()[0].platform}, {n_poses} poses, {np.dtype(dtype).name}")
    print(f"{'model':<13}{'quantity':<20}{'mbjax µs/pose':>14}{'pin µs/call':>12}{'pin/mbjax':>10}{'compile s':>10}{'max |diff|':>11}")
    for label, (n, seed, chain) in MODELS.items():
        xml = urdf_tree(n, seed, chain)
        model = load_urdf(xml)
        if args.float32:
            model = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx_is_float(a) else a, model)
        nq = model.n_coordinates
        rng = np.random.default_rng(0)
        q, qd, qdd = (rng.uniform(-1, 1, (n_poses, nq)).astype(dtype) for _ in range(3))
        pmodel = pinocchio_model(xml)
        routes = {
            "inverse dynamics": (jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0))), (q, qd, qdd)),
            "mass matrix": (jax.jit(jax.vmap(mbjax.mass_matrix, in_axes=(None, 0))), (q,)),
            "forward dynamics": (jax.jit(jax.vmap(mbjax.forward_dynamics, in_axes=(None, 0, 0, 0))), (q, qd, qdd)),
        }
        for name, (fn, xs) in routes.items():
            xs_j = tuple(jnp.asarray(x) for x in xs)
            compile_s, best = timed(fn, model, *xs_j, repeat=repeat)
            ours = 1e6 * best / n_poses
            pin_us, diff = float("nan"), float("nan")
            if pmodel is not None:
                import pinocchio as pin

                data = pmodel.createData()
                order = pin_order(pmodel, model.coordinate_names)

                def to_pin(x):
                    out = np.zeros(pmodel.nq)
                    out[order] = x
                    return out

                pq, pqd, pqdd = (np.stack([to_pin(x) for x in a[:256]]) for a in (q, qd, qdd))
                if name == "inverse dynamics":
                    call = lambda k: [pin.rnea(pmodel, data, pq[i % 256], pqd[i % 256], pqdd[i % 256]) for i in range(k)]
                    ref = np.stack([pin.rnea(pmodel, data, pq[i], pqd[i], pqdd[i])[order] for i in range(64)])
                elif name == "mass matrix":
                    call = lambda k: [pin.crba(pmodel, data, pq[i % 256]) for i in range(k)]
                    ref = []
                    for i in range(64):
                        mm = pin.crba(pmodel, data, pq[i])
                        mm = np.triu(mm) + np.triu(mm, 1).T
                        ref.append(mm[np.ix_(order, order)])
                    ref = np.stack(ref)
                else:
                    call = lambda k: [pin.aba(pmodel, data, pq[i % 256], pqd[i % 256], pqdd[i % 256]) for i in range(k)]
                    ref = np.stack([pin.aba(pmodel, data, pq[i], pqd[i], pqdd[i])[order] for i in range(64)])
                pin_us = 1e6 * time_pinocchio(call, 2000 if args.quick else 20000)
                mine = np.asarray(fn(model, *(x[:64] for x in xs_j)))
                diff = float(np.max(np.abs(mine - ref)))
            print(f"{label:<13}{name:<20}{ours:>14.3f}{pin_us:>12.3f}{pin_us / ours:>10.2f}{compile_s:>10.2f}{diff:>11.1e}")
        lag = jax.jit(jax.vmap(dyn.inverse_dynamics_lagrangian, in_axes=(None, 0, 0, 0)))
        m = min(n_poses, 256)
        _, t_lag = timed(lag, model, *(jnp.asarray(x[:m]) for x in (q, qd, qdd)), repeat=2)
        print(f"{label:<13}{'ID, autodiff Lagr.':<20}{1e6 * t_lag / m:>14.3f}")


def eqx_is_float(a):
    return isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.floating)


if __name__ == "__main__":
    main()
