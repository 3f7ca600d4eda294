"""Dynamics benchmarks: batched inverse dynamics (closed form vs autodiff Lagrangian), Andrews ODE vs DAE.

Run: ``.venv/bin/python benchmarks/dynamics.py [--quick]``.  float64, CPU.
(i) ``jax.vmap(inverse_dynamics)`` over 4096 poses for a 7-dof chain and a 20-dof tree loaded from
URDF: µs/pose, compile time, ratio to the autodiff-Lagrangian route (M = ∂²T/∂q̇², N q̇, G = -∇V).
(ii) Andrews' squeezer to t = 0.03: the one-coordinate empirical ODE (exact implicit maps and
Fourier maps) vs the 7-angle index-1 DAE with Baumgarte stabilization, wall time per solve at
tolerances giving comparable accuracy against the Test Set's published solution (paper: ODE 4x
faster than the stabilized DAE).
"""

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from mbjax import _dynamics as dyn  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402
from _timing import timed  # noqa: E402


def chain7():
    rng = np.random.default_rng(0)
    names = [f"q{k}" for k in range(7)]
    b = mbjax.ModelBuilder(names, gravity=[0, 0, -9.81])
    parent = "ground"
    for k in range(7):
        axis = rng.normal(size=3)
        b.add_body(f"l{k}", parent=parent, axis=axis / np.linalg.norm(axis), map=names[k],
                   translation=[0, 0, 0.3] if k else [0, 0, 0], mass=2.0, com=[0.02, 0.01, 0.15],
                   inertia=np.diag([0.02, 0.02, 0.01]))
        parent = f"l{k}"
    return b.build()


def tree_urdf(n=20, seed=1):
    """A random 20-link URDF tree (revolute joints, inertial origins with rpy)."""
    rng = np.random.default_rng(seed)
    parts = ['<robot name="tree20"><link name="base"/>']
    for k in range(n):
        parts.append(
            f'<link name="l{k}"><inertial><origin xyz="{" ".join(map(str, rng.normal(size=3) * 0.05))}" '
            f'rpy="{" ".join(map(str, rng.normal(size=3)))}"/><mass value="{rng.uniform(0.5, 2)}"/>'
            '<inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial></link>'
        )
    for k in range(n):
        parent = "base" if k == 0 else f"l{int(rng.integers(max(0, k - 3), k))}"
        axis = rng.normal(size=3)
        parts.append(
            f'<joint name="j{k}" type="revolute"><parent link="{parent}"/><child link="l{k}"/>'
            f'<origin xyz="{" ".join(map(str, rng.normal(size=3) * 0.2))}" rpy="{" ".join(map(str, rng.normal(size=3)))}"/>'
            f'<axis xyz="{" ".join(map(str, axis / np.linalg.norm(axis)))}"/></joint>'
        )
    parts.append("</robot>")
    return load_urdf("".join(parts))




def bench_inverse_dynamics(n_poses, repeat):
    print(f"(i) batched inverse dynamics, {n_poses} poses, float64")
    print(f"{'model':<14}{'route':<22}{'compile s':>10}{'us/pose':>10}{'ratio':>8}")
    for label, model in (("7-dof chain", chain7()), ("20-dof URDF", tree_urdf())):
        nq = model.n_coordinates
        rng = np.random.default_rng(0)
        q, qd, qdd = (jnp.asarray(rng.uniform(-1, 1, (n_poses, nq))) for _ in range(3))
        fast = jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)))
        lag = jax.jit(jax.vmap(dyn.inverse_dynamics_lagrangian, in_axes=(None, 0, 0, 0)))
        err = float(jnp.max(jnp.abs(fast(model, q[:64], qd[:64], qdd[:64]) - lag(model, q[:64], qd[:64], qdd[:64]))))
        c1, t1 = timed(fast, model, q, qd, qdd, repeat=repeat)
        c2, t2 = timed(lag, model, q, qd, qdd, repeat=repeat)
        print(f"{label:<14}{'closed form (RNEA)':<22}{c1:>10.2f}{1e6 * t1 / n_poses:>10.2f}{1.0:>8.1f}")
        print(f"{label:<14}{'autodiff Lagrangian':<22}{c2:>10.2f}{1e6 * t2 / n_poses:>10.2f}{t2 / t1:>8.1f}")
        print(f"{'':<14}max |τ_fast - τ_lagrangian| = {err:.1e}")


def bench_andrews(repeat):
    import diffrax

    from mbjax.models import andrews as A

    ref_q = np.array([0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
                      0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1])
    print("(ii) Andrews' squeezer to t = 0.03 (Tsit5, PID); error = max |q(0.03) - Test Set| over the 7 angles")
    print(f"{'formulation':<34}{'rtol':>8}{'steps':>7}{'error':>10}{'ms/solve':>10}")
    fit = A.fourier_maps(12)
    tree = A.andrews_tree()
    rows = {}
    for tol in (1e-6, 1e-8, 1e-10):
        cases = []
        for kind in ("implicit", "fourier"):
            model, _ = A.andrews_reduced(kind, fit=fit)
            cases.append((f"ODE, q = beta, {kind} maps", model, A.reduced_vector_field(model), [A.Q0[0]], 1))
        cases.append(("DAE index 1 + Baumgarte (7 angles)", tree, A.dae_vector_field(tree, 1e3, 1e3), A.Q0, 7))
        for label, model, field, q0, n in cases:
            q0 = jnp.asarray(q0)
            run = jax.jit(lambda q0: mbjax.simulate(model, q0, jnp.zeros(n), 0.0, A.T_END, vector_field=field,
                                                    rtol=tol, atol=tol, solver=diffrax.Tsit5()))
            _, t = timed(run, q0, repeat=repeat)
            sol = run(q0)
            if n == 1:
                q, _ = A.full_state(model, sol.ys[0][-1, 0], sol.ys[1][-1, 0])
            else:
                q = sol.ys[0][-1]
            err = float(np.max(np.abs(np.asarray(q) - ref_q)))
            rows[(label, tol)] = t
            print(f"{label:<34}{tol:>8.0e}{int(sol.stats['num_steps']):>7}{err:>10.1e}{1e3 * t:>10.1f}")
    for tol in (1e-6, 1e-8, 1e-10):
        ratio = rows[("DAE index 1 + Baumgarte (7 angles)", tol)] / rows[("ODE, q = beta, implicit maps", tol)]
        ratio_f = rows[("DAE index 1 + Baumgarte (7 angles)", tol)] / rows[("ODE, q = beta, fourier maps", tol)]
        print(f"rtol {tol:.0e}: DAE / ODE wall time = {ratio:.2f} (implicit maps), {ratio_f:.2f} (Fourier maps); paper: 4")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bench_inverse_dynamics(512 if args.quick else 4096, 2 if args.quick else 5)
    bench_andrews(1 if args.quick else 3)
