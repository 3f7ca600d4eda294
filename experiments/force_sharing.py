"""Muscle force sharing on arm26: a smooth shoulder/elbow motion, inverse dynamics, static optimization.

Run: ``.venv/bin/python experiments/force_sharing.py [--quick] [--wrapping] [--out DIR]``; writes
into ``outputs/force_sharing/``:

* ``motion.png``: q, q̇, q̈ and the inverse-dynamics torques τ (the torques the muscles must make);
* ``activations.png`` / ``forces.png``: per-muscle activation and tendon force over time;
* ``force_sharing.csv``: time, q, τ, activations, forces, residual per frame;

and prints the headline numbers (convergence, max residual, peak activation per muscle, time).
OpenSim's formulation (``mbjax.static_optimization``: F = a F_opt with rigid-tendon
f_L f_V cos α, Σ a², 0 ≤ a ≤ 1, no passive force); reserves are added only if a frame is
infeasible without them (reported).

:func:`force_sharing` (model, qs, qds, qdds) → (result, infeasibility report) is the hook other
experiments reuse (e.g. the shoulder, Fig. 21).
"""

import argparse
import csv
import os
import time
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "force_sharing")


def arm_motion(T: int, duration: float = 2.0):
    """Shoulder elevation 0.3 + 0.35 sin(πt) rad and elbow flexion 1.1 + 0.7 sin(πt + 0.4) rad
    (a 0.5 Hz reach), with their exact derivatives: ``t, qs, qds, qdds``."""
    t = np.linspace(0.0, duration, T)
    w = np.pi
    amp, off, ph = np.array([0.35, 0.7]), np.array([0.3, 1.1]), np.array([0.0, 0.4])
    arg = w * t[:, None] + ph
    return t, off + amp * np.sin(arg), amp * w * np.cos(arg), -amp * w * w * np.sin(arg)


def force_sharing(model, qs, qds, qdds, *, reserves=None, tol=1e-6, **kw):
    """Static optimization of a trajectory (warm-started scan) and its infeasibility report.

    ``kw`` goes to :func:`mbjax.static_optimization_trajectory` (``exponent``, ``weights``,
    ``activation_bounds``, ``passive_forces``, ...).  Returns ``(result, report)``; the report
    names frames/coordinates whose torque is not met within ``tol`` N·m.
    """
    fn = eqx.filter_jit(lambda m, a, b, c: mbjax.static_optimization_trajectory(m, a, b, c, reserves=reserves, **kw))
    res = jax.block_until_ready(fn(model, qs, qds, qdds))
    return res, mbjax.analysis.sharing.infeasibility_report(res, model, tol=tol)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100 frames instead of 400")
    ap.add_argument("--wrapping", action="store_true", help="arm26 with its wrap objects (slow compile)")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    T = 100 if args.quick else 400

    print(f"[1/4] loading arm26 ({'with' if args.wrapping else 'without'} wrapping)", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.arm26(ignore_wrapping=not args.wrapping)
    names = list(model.muscle_names) if model.muscle_names else [f"m{i}" for i in range(6)]
    coords = list(model.coordinate_names)
    t, qs, qds, qdds = arm_motion(T)

    print(f"[2/4] static optimization of {T} frames (compile + solve)", flush=True)
    t0 = time.perf_counter()
    res, report = force_sharing(model, qs, qds, qdds)
    wall = time.perf_counter() - t0
    if report:
        print(report)
        print("      re-solving with reserve actuators (optimal force 1 N·m)", flush=True)
        res, report = force_sharing(model, qs, qds, qdds, reserves=1.0)
    taus = np.asarray(jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)))(model, qs, qds, qdds))
    a, f = np.asarray(res.activations), np.asarray(res.forces)

    print("[3/4] figures", flush=True)
    fig, ax = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for j, c in enumerate(coords):
        ax[0, 0].plot(t, qs[:, j], label=c)
        ax[0, 1].plot(t, qds[:, j], label=c)
        ax[1, 0].plot(t, qdds[:, j], label=c)
        ax[1, 1].plot(t, taus[:, j], label=c)
    for axx, lab in zip(ax.flat, ("q (rad)", "q̇ (rad/s)", "q̈ (rad/s²)", "τ = ID (N·m)")):
        axx.set_ylabel(lab)
        axx.grid(alpha=0.3)
    ax[0, 0].legend()
    for axx in ax[1]:
        axx.set_xlabel("t (s)")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "motion.png"), dpi=120)
    for data, lab, fname in ((a, "activation", "activations.png"), (f, "tendon force (N)", "forces.png")):
        fig, axx = plt.subplots(figsize=(8, 4.5))
        for i, n in enumerate(names):
            axx.plot(t, data[:, i], label=n)
        axx.set_xlabel("t (s)")
        axx.set_ylabel(lab)
        axx.set_title(f"arm26 static optimization (Σa², OpenSim formulation): {lab}")
        axx.grid(alpha=0.3)
        axx.legend(ncol=3)
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, fname), dpi=120)
    plt.close("all")

    print("[4/4] CSV", flush=True)
    with open(os.path.join(args.out, "force_sharing.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["time", *[f"q_{c}" for c in coords], *[f"tau_{c}" for c in coords], *[f"a_{n}" for n in names],
                    *[f"F_{n}" for n in names], *[f"residual_{c}" for c in coords], "converged"])
        for k in range(T):
            w.writerow([t[k], *qs[k], *taus[k], *a[k], *f[k], *np.asarray(res.residual[k]), bool(res.converged[k])])

    print(f"\nframes {T}, converged {int(np.sum(res.converged))}/{T}, max |R F - τ| = "
          f"{np.abs(np.asarray(res.residual)).max():.2e} N·m, compile + solve {wall:.1f} s")
    print("peak activation: " + ", ".join(f"{n} {a[:, i].max():.3f}" for i, n in enumerate(names)))
    print("peak force (N):  " + ", ".join(f"{n} {f[:, i].max():.1f}" for i, n in enumerate(names)))
    print(f"outputs in {os.path.abspath(args.out)}")


if __name__ == "__main__":
    main()
