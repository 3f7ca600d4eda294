"""Identification benchmark: cost of a trajectory-loss gradient through ``simulate``, and of a
Gauss-Newton step of the inertial fit (issue 16, item 7).

Run: ``.venv/bin/python benchmarks/identify.py [--quick] [--device gpu] [--float32]``.

(i) The 7-dof URDF chain of ``benchmarks/dynamics.py`` swings freely for 1 s (Tsit5, rtol 1e-8,
101 saved samples); the loss is ½‖q(t_k) − q_meas(t_k)‖² over all 7 masses and 7 joint damping
coefficients.  Timed (best of repeats, compiled once): one forward simulation; ``jax.value_and_grad``
with ``diffrax.RecursiveCheckpointAdjoint`` (reverse mode through the stored steps; by default
binomial checkpointing sized for ``max_steps``, which recomputes forward steps; with
``checkpoints=512`` ≥ the number of steps every step is stored once) and with
``diffrax.BacksolveAdjoint`` (continuous adjoint, a backward solve); ``jax.jacfwd`` of the
residuals with ``diffrax.ForwardMode`` (what Gauss-Newton uses).  Target: gradient ≤ 5× forward.
(ii) One Gauss-Newton step of experiment (b) (7000 torque residuals × 70 standard parameters):
forward-mode Jacobian of the torque residuals plus the SVD solve, and the per-step wall time
inside :func:`mbjax.identify.fit`.
"""

import os
import sys
import time

import numpy as np

from _timing import device_setup, timed  # noqa: E402

ARGS = device_setup()

import diffrax  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import mbjax  # noqa: E402
from mbjax import identify as idf  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "experiments"))
from _trees import urdf_tree  # noqa: E402


def main():
    args = ARGS
    repeat = 2 if args.quick else 5
    dtype = jnp.float32 if args.float32 else jnp.float64
    model = load_urdf(urdf_tree(7, 0, True))
    if args.float32:
        model = jax.tree.map(lambda a: a.astype(jnp.float32) if jnp.issubdtype(a.dtype, jnp.floating) else a, model)
    nq = model.n_coordinates
    q0 = jnp.asarray(np.linspace(0.3, -0.3, nq), dtype)
    qd0 = jnp.zeros(nq, dtype)
    ts = jnp.linspace(0.0, 1.0, 101, dtype=dtype)
    damper = idf.ViscousDamping(jnp.full(nq, 0.1, dtype))
    tree = (model, damper)
    q_meas = mbjax.simulate(model, q0, qd0, 0.0, 1.0, saveat=ts, forces=damper).ys[0] + 0.01
    where = lambda t: (t[0].mass, t[1].c)  # noqa: E731
    print(f"(i) 7-dof chain, 1 s free swing, {len(ts)} samples, {jax.devices()[0].platform}, {jnp.dtype(dtype).name}")
    results = {}
    sol = mbjax.simulate(model, q0, qd0, 0.0, 1.0, saveat=ts, forces=damper)
    print(f"    accepted steps {int(sol.stats['num_accepted_steps'])}, rejected {int(sol.stats['num_rejected_steps'])}")

    def forward(tree):
        m, d = tree
        return mbjax.simulate(m, q0, qd0, 0.0, 1.0, saveat=ts, forces=d).ys[0]

    first, best = timed(jax.jit(forward), tree, repeat=repeat)
    results["forward simulate"] = (first, best)
    sel = idf.Selection(tree, where, idf.Positive())
    theta = sel.theta(tree)
    routes = (("grad, RecursiveCheckpointAdjoint", diffrax.RecursiveCheckpointAdjoint()),
              ("grad, RecursiveCheckpoint(checkpoints=512)", diffrax.RecursiveCheckpointAdjoint(checkpoints=512)),
              ("grad, BacksolveAdjoint", diffrax.BacksolveAdjoint()))
    only = os.environ.get("MBJAX_BENCH_ONLY")  # a substring of the route labels to time (and the forward)
    for label, adjoint in routes:
        if only and only not in label:
            continue
        term = idf.trajectory_residuals(ts, q_meas, q0, qd0, rtol=1e-8, atol=1e-10, adjoint=adjoint)
        vg = jax.jit(jax.value_and_grad(lambda th: 0.5 * jnp.sum(term(sel.apply(th, tree)) ** 2)))
        results[label] = timed(vg, theta, repeat=repeat)
    if not only:
        term = idf.trajectory_residuals(ts, q_meas, q0, qd0, rtol=1e-8, atol=1e-10, adjoint=diffrax.ForwardMode())
        jf = jax.jit(jax.jacfwd(lambda th: term(sel.apply(th, tree))))
        results[f"jacfwd ({theta.size} params), ForwardMode"] = timed(jf, theta, repeat=repeat)
    base = results["forward simulate"][1]
    print(f"    {'route':<42}{'ms':>10}{'× forward':>11}{'compile s':>11}")
    for k, (first, best) in results.items():
        print(f"    {k:<42}{best * 1e3:10.2f}{best / base:11.2f}{first - best:11.1f}")

    if only:
        return
    from identify_inertial import WHERE, fourier_trajectory, perturbed  # noqa: E402

    t = np.arange(0, 10.0, 0.01)
    q, qd, qdd = fourier_trajectory(nq, t)
    tau = jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(model, q, qd, qdd)
    res = idf.torque_residuals(q, qd, qdd, tau)
    start = perturbed(model)
    sel = idf.Selection(start, WHERE, idf.StandardInertial())
    th = sel.theta(start)

    @jax.jit
    def gn_step(th):
        r, jvp = jax.linearize(lambda x: res(sel.apply(x, start)), th)
        jac = jax.vmap(jvp, out_axes=1)(jnp.eye(th.size, dtype=th.dtype))
        return th - jnp.linalg.pinv(jac, rtol=1e-10) @ r

    first, best = timed(gn_step, th, repeat=repeat)
    _, rep = idf.fit(start, res, WHERE, method="gauss_newton", parametrization=idf.StandardInertial(), max_steps=6, progress=False)
    per_step = (rep.wall_s - rep.compile_s) / max(rep.steps, 1)
    print(f"(ii) Gauss-Newton step, {res.tau.size} residuals × {th.size} parameters: {best * 1e3:.1f} ms "
          f"(jacfwd + pinv, compile {first - best:.1f} s); inside fit: {per_step * 1e3:.1f} ms/step over {rep.steps} steps")


if __name__ == "__main__":
    main()
