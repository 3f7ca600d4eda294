"""Masses and joint damping of a two-link arm from an observed free swing.

Truth: a planar two-link arm (upper arm 2.0 kg, forearm 1.2 kg, fixed COMs and inertias) with
viscous joint damping Q = −c q̇ (c = 0.15, 0.08 N·m·s), released from rest at q0 = (1.0, −0.5) rad
and observed for 2 s at 100 Hz with Gaussian angle noise σ_q.  Fitted, from masses ×1.5 and
damping ×3: both masses and both damping coefficients (:class:`mbjax.analysis.identify.Positive`: log
parameters, no clipping) and the release angles (:class:`mbjax.analysis.identify.Identity`), by
Levenberg-Marquardt on single-shooting residuals through :func:`mbjax.simulate`
(``diffrax.ForwardMode`` Jacobians); the damping is the ``forces`` callable
:class:`mbjax.analysis.identify.ViscousDamping`, an ``eqx.Module`` whose coefficients are leaves of the
fitted tree ``(model, damping, (q0, q̇0))``.  Multiple shooting (4 segments) on the same data for
comparison.  A noise-free run must recover the truth to ≤ 1e-6 relative.

    .venv/bin/python experiments/identify_swing.py [--quick] [--out DIR]

Writes ``swing.png`` (observed, start and fitted trajectories) and ``parameters.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time

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

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "identify_swing")
WHERE = lambda t: (t[0].mass, t[1].c, t[2][0])  # noqa: E731
PARAMS = (idf.Positive(), idf.Positive(), idf.Identity())


def arm(m1=2.0, m2=1.2):
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", axis=[0, 0, 1], map="shoulder", mass=m1, com=[0, -0.15, 0], inertia=np.diag([0.012, 0.002, 0.012]))
    b.add_body("forearm", parent="upper_arm", axis=[0, 0, 1], map="elbow", translation=[0, -0.3, 0], mass=m2,
               com=[0, -0.12, 0], inertia=np.diag([0.006, 0.001, 0.006]))
    return b.build()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 s of data, no multiple shooting")
    ap.add_argument("--sigma", type=float, default=2e-3, help="angle noise, rad")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    truth = (arm(), idf.ViscousDamping(jnp.array([0.15, 0.08])), (jnp.array([1.0, -0.5]), jnp.zeros(2)))
    ts = jnp.linspace(0.0, 1.0 if args.quick else 2.0, 101 if args.quick else 201)
    q_true = np.asarray(mbjax.simulate(truth[0], *truth[2], ts[0], ts[-1], saveat=ts, forces=truth[1], rtol=1e-11, atol=1e-13).ys[0])
    noise = np.random.default_rng(0).normal(0, args.sigma, q_true.shape)
    start = (arm(3.0, 1.8), idf.ViscousDamping(jnp.array([0.45, 0.24])), (jnp.asarray(q_true[0] + noise[0]), jnp.zeros(2)))
    sel = idf.Selection(truth, WHERE, PARAMS)
    names = sel.names
    true_vals = np.concatenate([np.asarray(x).ravel() for x in WHERE(truth)])
    print(f"two-link free swing, {len(ts)} samples over {float(ts[-1]):.1f} s, σ_q = {args.sigma} rad; fitting {', '.join(names)}")

    def values(tree):
        return np.concatenate([np.asarray(x).ravel() for x in WHERE(tree)])

    # noise-free
    res0 = idf.trajectory_residuals(ts, q_true, *start[2], rtol=1e-11, atol=1e-13)
    fit0, rep0 = idf.fit(start, res0, WHERE, method="levenberg_marquardt", parametrization=PARAMS, max_steps=100, progress=False)
    rel0 = np.abs(values(fit0) - true_vals) / np.abs(true_vals)
    print(f"noise-free: {rep0}\n  max relative error {rel0.max():.2e} (target ≤ 1e-6)")

    # noisy, single shooting
    res = idf.trajectory_residuals(ts, q_true + noise, *start[2], rtol=1e-11, atol=1e-13)  # same program as above
    fitted, rep = idf.fit(start, res, WHERE, method="levenberg_marquardt", parametrization=PARAMS, max_steps=100)
    # standard errors in the natural parameters (Identity parametrization at the optimum)
    info = idf.identifiability(fitted, res, WHERE, sigma=args.sigma)
    est, se = values(fitted), info.standard_errors
    print(f"rank {info.rank} of {len(names)}; singular values {info.singular_values.max():.3g} … {info.singular_values.min():.3g}")
    print(f"{'parameter':<18}{'true':>10}{'start':>10}{'fitted':>12}{'± SE':>10}{'|err|/SE':>10}")
    rows = []
    for n, tv, sv, ev, e in zip(names, true_vals, values(start), est, se):
        print(f"{n:<18}{tv:10.4g}{sv:10.4g}{ev:12.6g}{e:10.2g}{abs(ev - tv) / e:10.2f}")
        rows.append([n, tv, sv, ev, e])

    ms_text = ""
    if not args.quick:
        ms = idf.multiple_shooting(ts, q_true + noise, 4, continuity_weight=10.0, rtol=1e-10, atol=1e-12)
        states = ms.initial_states()
        ms_start = (start[0], start[1], states)
        where_ms = lambda t: (t[0].mass, t[1].c, t[2][0], t[2][1])  # noqa: E731
        fit_ms, rep_ms = idf.fit(ms_start, ms, where_ms, method="levenberg_marquardt",
                                 parametrization=(idf.Positive(), idf.Positive(), idf.Identity(), idf.Identity()), max_steps=100)
        ms_vals = np.concatenate([np.asarray(fit_ms[0].mass), np.asarray(fit_ms[1].c)])
        ms_text = "multiple shooting (4 segments): " + ", ".join(f"{n} {v:.5g}" for n, v in zip(names[:4], ms_vals))
        print(ms_text, f"({rep_ms.steps} steps, {rep_ms.wall_s:.1f} s)")
        for r, v in zip(rows, ms_vals):
            r.append(v)

    with open(os.path.join(args.out, "parameters.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["parameter", "true", "start", "fitted", "standard error"] + (["multiple shooting"] if ms_text else []))
        w.writerows(rows)

    q_start = np.asarray(res.predict(start)[0])
    q_fit = np.asarray(res.predict(fitted)[0])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for j, ax in enumerate(axes):
        ax.plot(ts, q_true[:, j] + noise[:, j], ".", ms=2, color="k", label="observed")
        ax.plot(ts, q_start[:, j], "--", color="C1", label="start")
        ax.plot(ts, q_fit[:, j], "-", color="C0", label="fitted")
        ax.set(xlabel="t (s)", ylabel=f"q_{j} (rad)", title=truth[0].coordinate_names[j])
        ax.legend(fontsize=8)
    fig.suptitle("free swing: masses and damping by Levenberg-Marquardt through mbjax.simulate")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "swing.png"), dpi=120)
    print(f"wrote {args.out}/swing.png and parameters.csv")


if __name__ == "__main__":
    main()
