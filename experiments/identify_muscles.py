"""arm26 optimal fibre and tendon slack lengths from isometric torque-angle curves.

OpenSim's arm26 (``mbjax.models.arm26(ignore_wrapping=True)``, Thelen2003 muscles with compliant tendons, straight
paths) is the truth.  Synthetic "stimulation" data: each of the six muscles activated alone
(a = 1, the others 0) at 12 elbow angles (0-130°) × 2 shoulder elevations; the joint torques
τ = R(q) F(q, 0, a) (``mbjax.moment_arms``, ``mbjax.muscle_forces`` at the equilibrium fibre
length) plus Gaussian noise σ_τ.  Fitted from a start 20 % off: the 12 lengths (log
parametrization, :class:`mbjax.analysis.identify.Positive`) by Levenberg-Marquardt
(:func:`mbjax.analysis.identify.isometric_torque_residuals`).  A noise-free run must recover them to
≤ 1e-6 relative.

    .venv/bin/python experiments/identify_muscles.py [--quick] [--out DIR]

Writes ``torque_angle.png`` and ``lengths.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from mbjax.analysis import identify as idf  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "identify_muscles")
WHERE = lambda m: (m.muscles.parameters["optimal_fiber_length"], m.muscles.parameters["tendon_slack_length"])  # noqa: E731


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one shoulder elevation")
    ap.add_argument("--sigma", type=float, default=0.1, help="torque noise, N·m")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    truth = mbjax.models.arm26(ignore_wrapping=True)  # straight paths (the wrap pass inside LM's Jacobian compiles for minutes)
    nm = len(truth.muscle_names)
    elbow = np.deg2rad(np.linspace(0, 130, 12))
    shoulder = np.deg2rad([20.0] if args.quick else [0.0, 45.0])
    poses = np.array([[s, e] for s in shoulder for e in elbow])
    q = np.repeat(poses, nm, axis=0)
    act = np.tile(np.eye(nm), (len(poses), 1))
    tau_true = np.asarray(idf.isometric_torque_residuals(q, act, np.zeros_like(q)).predict(truth))
    noise = np.random.default_rng(0).normal(0, args.sigma, tau_true.shape)
    true_vals = np.concatenate([np.asarray(x) for x in WHERE(truth)])
    rng = np.random.default_rng(1)
    start_vals = [x * (1 + 0.2 * rng.choice([-1, 1], x.shape)) for x in WHERE(truth)]
    start = eqx.tree_at(WHERE, truth, tuple(start_vals))
    print(f"arm26: {len(q)} isometric samples (6 muscles alone × {len(poses)} poses), |τ| up to {np.abs(tau_true).max():.1f} N·m, σ_τ = {args.sigma}")

    res0 = idf.isometric_torque_residuals(q, act, tau_true)
    fit0, rep0 = idf.fit(start, res0, WHERE, method="levenberg_marquardt", parametrization=idf.Positive(), max_steps=100, progress=False)
    est0 = np.concatenate([np.asarray(x) for x in WHERE(fit0)])
    print(f"noise-free: {rep0}\n  max relative error {np.max(np.abs(est0 - true_vals) / true_vals):.2e} (target ≤ 1e-6)")

    res = idf.isometric_torque_residuals(q, act, tau_true + noise)
    fitted, rep = idf.fit(start, res, WHERE, method="levenberg_marquardt", parametrization=idf.Positive(), max_steps=100)
    info = idf.identifiability(fitted, res, WHERE, sigma=args.sigma)
    est = np.concatenate([np.asarray(x) for x in WHERE(fitted)])
    names = [n.replace("muscles.parameters", "") for n in info.names]
    print(f"rank {info.rank} of {len(names)}")
    print(f"{'parameter':<38}{'true (mm)':>10}{'start':>10}{'fitted':>10}{'± SE':>8}{'|err|/SE':>9}")
    rows = []
    for n, tv, sv, ev, e in zip(names, true_vals, np.concatenate(start_vals), est, info.standard_errors):
        print(f"{n:<38}{tv * 1e3:10.3f}{sv * 1e3:10.3f}{ev * 1e3:10.3f}{e * 1e3:8.3f}{abs(ev - tv) / e:9.2f}")
        rows.append([n, tv, sv, ev, e])
    with open(os.path.join(args.out, "lengths.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["parameter", "true (m)", "start (m)", "fitted (m)", "standard error (m)"])
        w.writerows(rows)

    pred_fit = np.asarray(res.predict(fitted))
    pred_start = np.asarray(res.predict(start))
    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
    elbow_col = truth.coordinate_index("r_elbow_flex")
    sel = poses[:, 0] == shoulder[0]
    for k, ax in enumerate(axes.ravel()):
        rows_k = np.nonzero(act[:, k] == 1)[0][sel]
        x = np.rad2deg(q[rows_k, elbow_col])
        ax.plot(x, tau_true[rows_k, elbow_col] + noise[rows_k, elbow_col], "k.", label="measured")
        ax.plot(x, pred_start[rows_k, elbow_col], "--", color="C1", label="start")
        ax.plot(x, pred_fit[rows_k, elbow_col], "-", color="C0", label="fitted")
        ax.set(title=truth.muscle_names[k], xlabel="elbow flexion (deg)", ylabel="elbow torque (N·m)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"isometric elbow torque of each muscle alone, shoulder {np.rad2deg(shoulder[0]):.0f}°")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "torque_angle.png"), dpi=120)
    print(f"wrote {args.out}/torque_angle.png and lengths.csv")


if __name__ == "__main__":
    main()
