"""Static optimization throughput on arm26: mbjax (optax ALM + KKT polish, batched) vs a SciPy SLSQP
loop on the same per-frame problems, and OpenSim's StaticOptimization analysis (IPOPT).

1000 frames of a smooth shoulder/elbow motion (0.5 Hz, feasible without reserves).  The per-frame
problems (moment arms, F_opt, inverse-dynamics torque) are built once with ``vmap``; timed:

* ``solve vmap``: ``jax.vmap(solve_problem)`` over all frames (cold starts, least-norm guess);
* ``solve scan``: ``solve_trajectory(warm_start=True)`` (``lax.scan``, each frame from the last);
* ``end to end``: ``static_optimization_trajectory`` (problem building + scan);
* ``SLSQP``: ``scipy.optimize.minimize(method='SLSQP', ftol=1e-12)`` per frame with analytic
  gradients, warm-started from the previous frame, on the same A, b;
* ``OpenSim``: ``StaticOptimization.begin/step/end`` (convergence 1e-8) on the first 100 frames
  (``--no-opensim`` to skip), wrap-free arm26 as here.

    .venv/bin/python benchmarks/sharing.py [--quick] [--device cpu|gpu] [--float32] [--wrapping]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(__file__))
from _timing import device_setup, timed  # noqa: E402


def _extra(ap):
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--wrapping", action="store_true", help="arm26 with its wrap objects (long compile)")
    ap.add_argument("--no-opensim", action="store_true")


args = device_setup(__doc__.splitlines()[0], _extra)

import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

import mbjax  # noqa: E402
from mbjax.analysis.sharing import sharing_problem, solve_problem, solve_trajectory  # noqa: E402


def motion(T, dtype):
    t = np.linspace(0.0, 2.0, T)
    w = np.pi
    qs = np.stack([0.3 + 0.2 * np.sin(w * t), 1.2 + 0.4 * np.sin(w * t + 0.3)], 1)
    qds = np.stack([0.2 * w * np.cos(w * t), 0.4 * w * np.cos(w * t + 0.3)], 1)
    qdds = np.stack([-0.2 * w * w * np.sin(w * t), -0.4 * w * w * np.sin(w * t + 0.3)], 1)
    return t, qs.astype(dtype), qds.astype(dtype), qdds.astype(dtype)


def slsqp_loop(A, b):
    x = np.clip(np.linalg.lstsq(A[0], b[0], rcond=None)[0], 0, 1)
    out = np.empty((A.shape[0], A.shape[2]))
    for k in range(A.shape[0]):
        r = minimize(lambda x: x @ x, x, jac=lambda x: 2 * x, method="SLSQP", bounds=[(0.0, 1.0)] * A.shape[2],
                     constraints=[dict(type="eq", fun=lambda x, k=k: A[k] @ x - b[k], jac=lambda x, k=k: A[k])],
                     options=dict(ftol=1e-12, maxiter=500))
        out[k] = x = r.x
    return out


def opensim_time(n, t, qs, qds):
    import opensim as osim

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests"))
    from _osim_models import ARM26, strip_wrapping

    from mbjax.io.storage import Table, write_storage

    d = tempfile.mkdtemp()
    path = ARM26 if args.wrapping else strip_wrapping(ARM26, os.path.join(d, "arm26.osim"))
    model = osim.Model(path)
    model.initSystem()
    coords = [model.getCoordinateSet().get(i) for i in range(2)]
    labels = [c.getAbsolutePathString() + s for s in ("/value", "/speed") for c in coords]  # q0 q1 u0 u1
    sto = os.path.join(d, "s.sto")
    write_storage(sto, Table(t[:n], tuple(labels), np.c_[qs[:n], qds[:n]]), format="storage", name="states")
    store = osim.Storage(sto)
    so = osim.StaticOptimization()
    so.setModel(model)
    so.setConvergenceCriterion(1e-8)
    s = model.initSystem()
    so.setStatesStore(store)
    t0 = time.perf_counter()
    for i in range(n):
        s.setTime(float(t[i]))
        s.setQ(osim.Vector(list(map(float, qs[i]))))
        s.setU(osim.Vector(list(map(float, qds[i]))))
        model.realizeVelocity(s)
        so.begin(s) if i == 0 else so.step(s, i)
    return (time.perf_counter() - t0) / n


def main():
    dtype = np.float32 if args.float32 else np.float64
    T = 200 if args.quick else args.frames
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.arm26(ignore_wrapping=not args.wrapping)
    t, qs, qds, qdds = motion(T, dtype)
    build = eqx.filter_jit(jax.vmap(sharing_problem, in_axes=(None, 0, 0, 0)))
    c_build, t_build = timed(build, model, qs, qds, qdds)
    problems = build(model, qs, qds, qdds)
    vm = jax.jit(jax.vmap(solve_problem))
    sc = jax.jit(lambda pr: solve_trajectory(pr, warm_start=True))
    e2e = eqx.filter_jit(mbjax.static_optimization_trajectory)
    c_vm, t_vm = timed(vm, problems)
    c_sc, t_sc = timed(sc, problems)
    c_e2e, t_e2e = timed(e2e, model, qs, qds, qdds)
    r_vm, r_sc = vm(problems), sc(problems)
    A = np.asarray(problems.moment_arms * problems.f_opt[:, None, :], np.float64)
    b = np.asarray(problems.tau, np.float64)
    n_sl = T if not args.quick else 100
    t0 = time.perf_counter()
    a_sl = slsqp_loop(A[:n_sl], b[:n_sl])
    t_sl = (time.perf_counter() - t0) / n_sl
    agree = np.abs(np.asarray(r_vm.activations[:n_sl]) - a_sl).max()
    print(f"arm26 ({'with' if args.wrapping else 'without'} wrapping), {T} frames, {np.dtype(dtype).name}, "
          f"device {jax.devices()[0].platform}")
    print(f"converged: vmap {bool(np.all(r_vm.converged))}, scan {bool(np.all(r_sc.converged))}; "
          f"max |a_vmap - a_scan| = {np.abs(np.asarray(r_vm.activations - r_sc.activations)).max():.1e}; "
          f"max |a - a_SLSQP| = {agree:.1e}; max |residual| = {np.abs(np.asarray(r_vm.residual)).max():.1e} N·m")
    print(f"mean ALM passes vmap {float(np.mean(r_vm.iterations)):.1f}, scan {float(np.mean(r_sc.iterations)):.1f}; "
          f"polish steps max {int(np.max(r_vm.polish_iterations))}")
    rows = [("build problems (vmap)", t_build, c_build), ("solve vmap", t_vm, c_vm), ("solve scan (warm)", t_sc, c_sc),
            ("end to end (build + scan)", t_e2e, c_e2e)]
    print(f"{'route':28s} {'µs/frame':>10s} {'SLSQP / this':>13s} {'compile s':>10s}")
    for name, tb, cb in rows:
        print(f"{name:28s} {1e6 * tb / T:10.2f} {t_sl / (tb / T):13.0f} {cb - tb:10.1f}")
    print(f"{'SciPy SLSQP loop (solve only)':28s} {1e6 * t_sl:10.1f} {1:13d}")
    if not args.no_opensim:
        try:
            t_os = opensim_time(min(100, T), t, qs, qds)
            print(f"{'OpenSim StaticOptimization':28s} {1e6 * t_os:10.1f} {t_sl / t_os:13.2f}   "
                  f"(OpenSim / end-to-end: {t_os / (t_e2e / T):.0f}x)")
        except ImportError:
            print("OpenSim not installed")


if __name__ == "__main__":
    main()
