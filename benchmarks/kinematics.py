"""Kinematics benchmark: body kinematics vs Pinocchio, closed-form pose derivatives vs autodiff.

Run: ``.venv/bin/python benchmarks/kinematics.py [--quick] [--device gpu] [--float32]``.  All
ratios come from one run.

(i) ``jax.vmap(mbjax.body_kinematics)`` (poses, velocities, accelerations of every body by the
forward recursion) on a 10-body × 10-coordinate random tree (target ≤ 20 µs/pose) and on the
20-dof URDF of ``benchmarks/dynamics.py``, with Pinocchio's ``forwardKinematics(q, v, a)`` timed per
call in the same run (target: mbjax per pose ≤ Pinocchio per call) and compared (max |diff|).
(ii) the full tensors T, ∂T/∂q, ∂²T/∂q² (``pose_derivatives``, Eq. 75/89 closed form) vs autodiff
(``jacfwd`` + ``hessian`` of ``body_poses``) at 10 and 30 bodies (target ≥ 100× at 30 bodies).
"""

from __future__ import annotations

import os
import sys

import numpy as np

from _timing import device_setup, timed  # sets the platform before jax starts

ARGS = device_setup()

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import mbjax  # noqa: E402
from _trees import random_poses, random_tree, urdf_tree  # noqa: E402
from dynamics import pin_order, pinocchio_model, time_pinocchio  # noqa: E402


def cast(model, dtype):
    return jax.tree.map(lambda a: a.astype(dtype) if eqx.is_inexact_array(a) else a, model)


def body_kinematics_table(n_poses, repeat, dtype):
    print(f"(i) jax.vmap(body_kinematics), {n_poses} poses, {np.dtype(dtype).name}")
    print(f"{'model':<22}{'mbjax µs/pose':>14}{'pin µs/call':>12}{'pin/mbjax':>10}{'compile s':>10}{'max |diff|':>11}")
    fn = jax.jit(jax.vmap(mbjax.body_kinematics, in_axes=(None, 0, 0, 0)))
    cases = [("10 bodies x 10 coords", cast(random_tree(10, n_bodies=10, n_coordinates=10, chain_depth=10), dtype), None)]
    xml = urdf_tree(20, 1, False)
    cases.append(("20-dof URDF tree", cast(mbjax.io.load_urdf(xml), dtype), xml))
    for label, model, xml in cases:
        nq = model.n_coordinates
        rng = np.random.default_rng(0)
        q, qd, qdd = (jnp.asarray(rng.uniform(-1, 1, (n_poses, nq)).astype(dtype)) for _ in range(3))
        compile_s, best = timed(fn, model, q, qd, qdd, repeat=repeat)
        ours = 1e6 * best / n_poses
        pin_us, diff = float("nan"), float("nan")
        pmodel = pinocchio_model(xml) if xml is not None else None
        if pmodel is not None:
            import pinocchio as pin

            data = pmodel.createData()
            order = pin_order(pmodel, model.coordinate_names)
            to_pin = lambda x: _scatter(x, order, pmodel.nq)
            pq, pqd, pqdd = (np.stack([to_pin(x) for x in np.asarray(a[:256])]) for a in (q, qd, qdd))
            pin_us = 1e6 * time_pinocchio(
                lambda k: [pin.forwardKinematics(pmodel, data, pq[i % 256], pqd[i % 256], pqdd[i % 256]) for i in range(k)],
                2000 if ARGS.quick else 20000,
            )
            mine = fn(model, q[:16], qd[:16], qdd[:16])
            names = model.body_names
            worst = 0.0
            for i in range(16):
                pin.forwardKinematics(pmodel, data, pq[i], pqd[i], pqdd[i])
                for j in range(1, pmodel.njoints):
                    link = "l" + pmodel.names[j][1:]  # joint j<k> moves link l<k>
                    b = names.index(link)
                    omf = data.oMi[j]
                    v = pin.getVelocity(pmodel, data, j, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
                    a = pin.getClassicalAcceleration(pmodel, data, j, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
                    ref = np.concatenate([omf.translation, v.angular, v.linear, a.angular, a.linear])
                    got = np.concatenate([np.asarray(mine.pose[i, b, :3, 3]), np.asarray(mine.velocity[i, b]),
                                          np.asarray(mine.acceleration[i, b])])
                    worst = max(worst, float(np.max(np.abs(got - ref))))
            diff = worst
        print(f"{label:<22}{ours:>14.3f}{pin_us:>12.3f}{pin_us / ours:>10.2f}{compile_s:>10.2f}{diff:>11.1e}")


def _scatter(x, order, n):
    out = np.zeros(n)
    out[order] = x
    return out


def pose_derivative_table(n_poses, n_autodiff, repeat, dtype):
    print(f"(ii) T, ∂T/∂q, ∂²T/∂q² for 10 coordinates, {np.dtype(dtype).name}: closed form vs autodiff")
    print(f"{'bodies':>6}{'closed µs/pose':>16}{'autodiff µs/pose':>18}{'ratio':>8}{'compile s':>11}")
    for nb in (10, 30):
        model = cast(random_tree(nb, n_bodies=nb, n_coordinates=10, chain_depth=min(nb, 12), nonlinear=False,
                                 zero_inertia_fraction=0.2), dtype)
        qs = random_poses(1, n_poses, 10).astype(dtype)

        def autodiff_one(m, q):
            f = lambda x: mbjax.body_poses(m, x)
            return jax.jacfwd(f)(q), jax.hessian(f)(q)

        fast = eqx.filter_jit(jax.vmap(mbjax.pose_derivatives, in_axes=(None, 0)))
        auto = eqx.filter_jit(lambda m, qs: jax.lax.map(lambda q: autodiff_one(m, q), qs, batch_size=64))
        c_fast, t_fast = timed(fast, model, qs, repeat=repeat)
        _, t_auto = timed(auto, model, qs[:n_autodiff], repeat=1)
        pf, pa = 1e6 * t_fast / n_poses, 1e6 * t_auto / n_autodiff
        print(f"{nb:>6}{pf:>16.2f}{pa:>18.2f}{pa / pf:>8.1f}{c_fast:>11.2f}", flush=True)


if __name__ == "__main__":
    dtype = np.float32 if ARGS.float32 else np.float64
    body_kinematics_table(1024 if ARGS.quick else 8192, 3 if ARGS.quick else 7, dtype)
    pose_derivative_table(512 if ARGS.quick else 4096, 64 if ARGS.quick else 256, 2 if ARGS.quick else 3, dtype)
