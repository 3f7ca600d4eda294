"""Identification benchmark: cost of a trajectory-loss gradient through ``simulate``, and of a
Gauss-Newton step of the inertial fit.

Run: ``.venv/bin/python benchmarks/identify.py [--quick] [--device gpu] [--float32]``
(``MBJAX_BENCH_PARTS``: a comma list of ``chain``, ``shoulder``, ``gn``, ``floor``, default
``chain,shoulder,gn``; ``MBJAX_BENCH_ONLY=<route>``: one gradient route; ``MBJAX_BENCH_SKIP=<route>``:
leave one out).

(i) Two models swing for 1 s (Tsit5, rtol 1e-8, 101 saved samples); the loss is
½‖q(t_k) − q_meas(t_k)‖² over masses and joint damping coefficients: the 7-dof URDF chain of
``benchmarks/dynamics.py`` released from rest (7 masses + 7 dampings), and the shoulder with the
de Groot & Brand rhythm (clavicle and scapula angles as two-coordinate joint maps of the humerus
coordinates) swinging about a held posture (3 masses + 3 dampings; see :func:`shoulder_swing`).
Each model's table is followed by the agreement of the routes' gradients and by diffrax's floor:
the same solve of a cheap pendulum ODE with as many states, whose gradient / forward ratio is the
cost of diffrax's own machinery that any vector field adds to.  Timed interleaved (each route
compiled by a first call, then 3 × repeats rounds calling every route once in turn; best and median,
so a change of load hits all routes alike; a route that fails is reported and left out): one
forward simulation; ``jax.value_and_grad``
with ``diffrax.RecursiveCheckpointAdjoint`` (reverse mode through the stored steps; by default
binomial checkpointing sized for ``max_steps``, which recomputes forward steps; with
``checkpoints=512`` ≥ the number of steps every step is stored once) and with
``diffrax.BacksolveAdjoint`` (continuous adjoint, a backward solve) and with
``mbjax.DiscreteAdjoint`` (the same diffrax forward solve keeping its dense output, then a
hand-written reverse loop over the accepted steps: s − 1 vector-field VJPs per Tsit5 step);
``jax.jacfwd`` of the residuals with ``diffrax.ForwardMode`` (what Gauss-Newton uses).  Target:
gradient ≤ 5× forward.
(ii) One Gauss-Newton step of experiment (b) (7000 torque residuals × 70 standard parameters):
forward-mode Jacobian of the torque residuals plus the SVD solve, and the per-step wall time
inside :func:`mbjax.analysis.identify.fit`.
"""

import os
import sys
import time

import numpy as np

from _timing import device_setup, interleaved, timed  # noqa: E402

ARGS = device_setup()

import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import mbjax  # noqa: E402
from mbjax.analysis import identify as idf  # noqa: E402
from mbjax.io import load_urdf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "experiments"))
from _trees import urdf_tree  # noqa: E402


class HeldDamping(eqx.Module):
    """Q = τ_hold − c ⊙ q̇: a constant holding torque (the arm swings about a posture) plus damping."""

    tau: jnp.ndarray
    c: jnp.ndarray

    def __call__(self, t, q, qd):
        return self.tau - self.c * qd


def seven_dof_swing(dtype):
    """The 7-dof chain released from rest, damping 0.1 N·m·s; fitted: 7 masses + 7 dampings."""
    model = load_urdf(urdf_tree(7, 0, True))
    if dtype == jnp.float32:
        model = jax.tree.map(lambda a: a.astype(jnp.float32) if jnp.issubdtype(a.dtype, jnp.floating) else a, model)
    nq = model.n_coordinates
    q0 = jnp.asarray(np.linspace(0.3, -0.3, nq), dtype)
    damper = idf.ViscousDamping(jnp.full(nq, 0.1, dtype))
    params = (idf.Positive(), idf.Positive())
    return "7-dof chain", (model, damper), q0, jnp.zeros(nq, dtype), params


def shoulder_swing(dtype):
    """The 3-coordinate shoulder (de Groot & Brand rhythm: clavicle and scapula as two-coordinate
    maps of the humerus angles), phantom inertia removed, held at (elv_angle, shoulder_elv,
    shoulder_rot) = (0.6, 0.9, -0.2) rad by the gravity torque there, released at (0.5, 1.2, -0.1)
    with q̇0 = (0.5, 0, 0.5) rad/s and damping 0.3 N·m·s: it swings about the held posture, well
    inside MoBL's coordinate ranges.  Fitted: the masses of clavicle, scapula, humerus + 3 dampings."""
    from mbjax.models import shoulder

    if not os.path.isfile(shoulder.MOBL_PATH):
        return None
    model = shoulder.without_phantom_inertia(shoulder.shoulder_model("degroot_brand"))
    model = jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a, model)
    held = jnp.asarray([0.6, 0.9, -0.2], dtype)
    zero = jnp.zeros(3, dtype)
    tau = mbjax.inverse_dynamics(model, held, zero, zero)  # holds `held` against gravity
    forces = HeldDamping(tau, jnp.full(3, 0.3, dtype))
    real = [i for i, name in enumerate(model.body_names) if "phant" not in name and float(model.mass[i]) > 0]
    params = (idf.Positive(index=real), idf.Positive())
    q0 = jnp.asarray([0.5, 1.2, -0.1], dtype)
    qd0 = jnp.asarray([0.5, 0.0, 0.5], dtype)
    return "shoulder (de Groot & Brand rhythm)", (model, forces), q0, qd0, params


def gradient_routes(case, ts, repeat, only, skip=None):
    """Part (i) for one model: forward solve vs the gradient routes, one table."""
    label, tree, q0, qd0, params = case
    model, forces = tree
    where = lambda t: (t[0].mass, t[1].c)  # noqa: E731
    sol = mbjax.simulate(model, q0, qd0, 0.0, 1.0, saveat=ts, forces=forces)
    q_meas = sol.ys[0] + 0.01
    q_all = np.asarray(sol.ys[0])
    print(f"(i) {label}, 1 s swing, {len(ts)} samples, {jax.devices()[0].platform}, {ts.dtype.name}: "
          f"accepted steps {int(sol.stats['num_accepted_steps'])}, rejected {int(sol.stats['num_rejected_steps'])}; "
          f"q ranges over [{', '.join(f'{a:.2f}..{b:.2f}' for a, b in zip(q_all.min(0), q_all.max(0)))}] rad")
    grads = {}

    def forward(tree):
        m, d = tree
        return mbjax.simulate(m, q0, qd0, 0.0, 1.0, saveat=ts, forces=d).ys[0]

    sel = idf.Selection(tree, where, params)
    theta = sel.theta(tree)
    fns = {"forward simulate": (jax.jit(lambda th: forward(sel.apply(th, tree))), theta)}
    routes = (("grad, RecursiveCheckpointAdjoint", diffrax.RecursiveCheckpointAdjoint()),
              ("grad, RecursiveCheckpoint(checkpoints=512)", diffrax.RecursiveCheckpointAdjoint(checkpoints=512)),
              ("grad, BacksolveAdjoint", diffrax.BacksolveAdjoint()),
              ("grad, mbjax.DiscreteAdjoint()", mbjax.DiscreteAdjoint()))
    for name, adjoint in routes:
        if (only and only not in name) or (skip and skip in name):
            continue
        term = idf.trajectory_residuals(ts, q_meas, q0, qd0, rtol=1e-8, atol=1e-10, adjoint=adjoint)
        fns[name] = (jax.jit(jax.value_and_grad(lambda th, term=term: 0.5 * jnp.sum(term(sel.apply(th, tree)) ** 2))),
                     theta)
    if not only:
        term = idf.trajectory_residuals(ts, q_meas, q0, qd0, rtol=1e-8, atol=1e-10, adjoint=diffrax.ForwardMode())
        jf = jax.jit(jax.jacfwd(lambda th: term(sel.apply(th, tree))))
        fns[f"jacfwd ({theta.size} params), ForwardMode"] = (jf, theta)
    results = interleaved(fns, rounds=3 * repeat)
    for name, (fn, th) in fns.items():
        if name.startswith("grad"):
            grads[name] = np.asarray(fn(th)[1])
        elif name.startswith("jacfwd"):
            grads["Jᵀr (forward mode)"] = np.asarray(fn(th).T @ term(sel.apply(th, tree)))
    base = results["forward simulate"][1]
    print(f"    {'route':<42}{'best ms':>10}{'× forward':>11}{'median ×':>10}{'compile s':>11}")
    for k, (first, best, median) in results.items():
        print(f"    {k:<42}{best * 1e3:10.2f}{best / base:11.2f}{median / results['forward simulate'][2]:10.2f}"
              f"{first - best:11.1f}")
    # the routes compute one gradient: their spread is the solver tolerance's, not a bug's
    ref = np.asarray(grads.pop(next(iter(grads))))
    for k, g in grads.items():
        print(f"    gradient, {k} vs the first route: max rel. difference "
              f"{np.max(np.abs(g - ref)) / np.max(np.abs(ref)):.1e}")


def diffrax_floor(nq, ts, repeat):
    """The same solve (Tsit5, PID rtol 1e-8, ``ts`` saved) of a cheap damped-pendulum ODE with
    ``2 nq`` states: the gradient / forward ratio of diffrax's own machinery (step control, error
    estimate, checkpointing, interpolation at ``ts``), the floor under any vector field's ratio."""
    p0 = jnp.linspace(20.0, 40.0, nq, dtype=ts.dtype)
    y0 = jnp.concatenate([jnp.linspace(0.3, -0.3, nq, dtype=ts.dtype), jnp.zeros(nq, ts.dtype)])

    def field(t, y, p):
        return jnp.concatenate([y[nq:], -p * jnp.sin(y[:nq]) - 0.1 * y[nq:]])

    def solve(p, adjoint):
        return diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Tsit5(), ts[0], ts[-1], None, y0, args=p,
                                   saveat=diffrax.SaveAt(ts=ts), adjoint=adjoint, max_steps=100_000,
                                   stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10)).ys

    _, base = timed(jax.jit(lambda p: solve(p, diffrax.RecursiveCheckpointAdjoint())), p0, repeat=10 * repeat)
    row = []
    for name, adjoint in (("RecursiveCheckpoint", diffrax.RecursiveCheckpointAdjoint()),
                          ("Backsolve", diffrax.BacksolveAdjoint())):
        _, best = timed(jax.jit(jax.grad(lambda p: jnp.sum(solve(p, adjoint) ** 2))), p0, repeat=repeat)
        row.append(f"{name} {best / base:.1f}×")
    print(f"    diffrax's floor ({2 * nq}-state pendulum ODE, same solver and samples; forward "
          f"{base * 1e3:.2f} ms): gradient / forward = {', '.join(row)}")


def main():
    args = ARGS
    repeat = 2 if args.quick else 5
    dtype = jnp.float32 if args.float32 else jnp.float64
    ts = jnp.linspace(0.0, 1.0, 101, dtype=dtype)
    only = os.environ.get("MBJAX_BENCH_ONLY")  # a substring of the route labels to time (and the forward)
    which = os.environ.get("MBJAX_BENCH_PARTS", "chain,shoulder,gn").split(",")
    cases = [seven_dof_swing(dtype)] if "chain" in which else []
    if "shoulder" in which:
        case = shoulder_swing(dtype)
        if case is None:
            print("(i) shoulder: skipped, MoBL-ARMS not found (set MBJAX_SHARED_DATA; see README)")
        else:
            cases.append(case)
    for case in cases:
        gradient_routes(case, ts, repeat, only, os.environ.get("MBJAX_BENCH_SKIP"))
        diffrax_floor(case[2].shape[0], ts, repeat)
    if which == ["floor"]:
        diffrax_floor(7, ts, repeat)

    if only or "gn" not in which:
        return
    model = seven_dof_swing(dtype)[1][0]
    nq = model.n_coordinates
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
