"""Inertial parameters of a 7-dof arm from noisy joint torques.

The 7-dof URDF chain of ``benchmarks/dynamics.py`` (``tests/_trees.urdf_tree(7, 0, chain=True)``)
is the truth.  Exciting trajectories: per joint a 5-harmonic Fourier series (fundamental 0.1 Hz,
random coefficients, Swevers et al. 1997 form) sampled at 100 Hz for 10 s, with analytic q̇, q̈.
Torques from ``mbjax.inverse_dynamics`` plus Gaussian noise σ_τ.  Fitted: the 70 standard
inertial parameters (:class:`mbjax.analysis.identify.StandardInertial`; τ is linear in them) by
Gauss-Newton from a perturbed start; :func:`mbjax.analysis.identify.identifiability` gives the rank, the
base-parameter combinations (QR with column pivoting) and their standard errors σ²(J_BᵀJ_B)⁻¹.
A noise-free run must recover every base combination to ≤ 1e-6 relative.  Then a physically
consistent fit (:class:`mbjax.analysis.identify.PhysicalInertia`, Levenberg-Marquardt) of the noisy data.

    .venv/bin/python experiments/identify_inertial.py [--quick] [--out DIR]

Writes ``base_parameters.csv`` and ``torques.png`` (measured vs fitted torques, base-parameter
errors in units of their standard error).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from _trees import urdf_tree  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "identify_inertial")
WHERE = lambda m: (m.mass, m.com, m.inertia)  # noqa: E731


def fourier_trajectory(nq, t, seed=0, f0=0.1, harmonics=5, amplitude=0.6):
    """q, q̇, q̈ ``(N, nq)`` of q = q0 + Σ_k a_k/(kω) sin(kωt) − b_k/(kω) cos(kωt)."""
    rng = np.random.default_rng(seed)
    w = 2 * np.pi * f0
    k = np.arange(1, harmonics + 1)
    a = rng.normal(0, amplitude, (nq, harmonics)) / k
    b = rng.normal(0, amplitude, (nq, harmonics)) / k
    q0 = rng.uniform(-0.5, 0.5, nq)
    kw = k * w
    s, c = np.sin(np.outer(t, kw)), np.cos(np.outer(t, kw))  # (N, H)
    q = q0 + s @ (a / kw).T - c @ (b / kw).T
    qd = c @ a.T + s @ b.T
    qdd = -s @ (a * kw).T + c @ (b * kw).T
    return q, qd, qdd


def perturbed(model, seed=1, scale=0.3):
    rng = np.random.default_rng(seed)
    m = model.mass * (1 + scale * rng.uniform(-1, 1, model.mass.shape))
    c = model.com + 0.02 * rng.normal(size=model.com.shape)
    i = model.inertia * (1 + scale * rng.uniform(-1, 1, (model.n_bodies, 1, 1)))
    return eqx.tree_at(WHERE, model, (m, c, i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4 s of data instead of 10 s, no physical-consistency fit")
    ap.add_argument("--sigma", type=float, default=0.05, help="torque noise, N·m")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    truth = mbjax.io.load_urdf(urdf_tree(7, 0, True))
    nq = truth.n_coordinates
    t = np.arange(0, 4.0 if args.quick else 10.0, 0.01)
    q, qd, qdd = fourier_trajectory(nq, t)
    tau_true = np.asarray(jax.jit(jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0)))(truth, q, qd, qdd))
    noise = np.random.default_rng(2).normal(0, args.sigma, tau_true.shape)
    print(f"7-dof chain, {len(t)} samples × {nq} joints, |τ| up to {np.abs(tau_true).max():.2f} N·m, σ_τ = {args.sigma}")
    start = perturbed(truth)
    par = idf.StandardInertial()
    theta_true = np.asarray(idf.Selection(truth, WHERE, par).theta(truth))

    # 1) noise-free: every identifiable combination recovered
    res0 = idf.torque_residuals(q, qd, qdd, tau_true)
    fit0, rep0 = idf.fit(start, res0, WHERE, method="gauss_newton", parametrization=par, max_steps=10, progress=False)
    print("noise-free:", rep0)
    info0 = idf.identifiability(fit0, res0, WHERE, parametrization=par, sigma=args.sigma)
    b_true = info0.base_values(theta_true)
    rel0 = np.abs(info0.base_values() - b_true) / np.maximum(np.abs(b_true), 1e-12 * np.abs(b_true).max())
    print(f"  rank {info0.rank} of {len(info0.names)} standard parameters; base combinations recovered to "
          f"max relative error {rel0.max():.2e} (target ≤ 1e-6)")

    # 2) noisy torques
    res = idf.torque_residuals(q, qd, qdd, tau_true + noise)
    t0 = time.perf_counter()
    fitted, rep = idf.fit(start, res, WHERE, method="gauss_newton", parametrization=par, max_steps=10, progress=True)
    info = idf.identifiability(fitted, res, WHERE, parametrization=par, sigma=args.sigma)
    print(f"identifiability: {time.perf_counter() - t0:.2f} s with the fit")
    b_hat, se = info.base_values(), info.base_standard_errors
    b_true = info.base_values(theta_true)
    z = (b_hat - b_true) / se
    print(f"base parameters: {info.rank}; estimated σ from residuals {np.sqrt(2 * rep.final_loss / (res.tau.size - info.rank)):.4f}"
          f" (true {args.sigma}); |error|/SE: median {np.median(np.abs(z)):.2f}, max {np.abs(z).max():.2f}, "
          f"{np.mean(np.abs(z) < 2) * 100:.0f}% within 2 SE")
    print(f"{'base combination':<70}{'true':>12}{'estimate':>12}{'± SE':>10}")
    for name, bt, bh, e in zip(info.base_parameters, b_true, b_hat, se):
        short = name if len(name) < 68 else name[:65] + "..."
        print(f"{short:<70}{bt:12.5g}{bh:12.5g}{e:10.2g}")
    print("unidentifiable directions (first 5 of", len(info.dependent), "):")
    for s in info.unidentifiable[:5]:
        print("  ", s if len(s) < 110 else s[:107] + "...")
    with open(os.path.join(args.out, "base_parameters.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["base combination", "true", "estimate", "standard error", "noise-free estimate"])
        for row in zip(info.base_parameters, b_true, b_hat, se, info0.base_values()):
            w.writerow(row)

    # 3) physically consistent fit of the same noisy data
    phys_text = ""
    if not args.quick:
        fitp, repp = idf.fit(start, res, WHERE, method="levenberg_marquardt", parametrization=idf.PhysicalInertia(),
                             max_steps=200, progress=True)
        theta_p = np.asarray(idf.Selection(fitp, WHERE, par).theta(fitp))
        zp = (info.base_values(theta_p) - b_true) / se
        from mbjax._inertia import inertia_problems

        bad_ls = sum(bool(inertia_problems(n, float(m), i)) for n, m, i in zip(fitted.body_names, fitted.mass, np.asarray(fitted.inertia)))
        bad_p = sum(bool(inertia_problems(n, float(m), i)) for n, m, i in zip(fitp.body_names, fitp.mass, np.asarray(fitp.inertia)))
        phys_text = (f"PhysicalInertia + LM: loss {repp.final_loss:.5g} vs unconstrained {rep.final_loss:.5g}; "
                     f"base |error|/SE median {np.median(np.abs(zp)):.2f}; unphysical bodies: {bad_p} (unconstrained fit: {bad_ls})")
        print(phys_text)

    pred = np.asarray(res.predict(fitted))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for j in range(3):
        axes[0].plot(t, tau_true[:, j] + noise[:, j], ".", ms=1.5, alpha=0.4, color=f"C{j}")
        axes[0].plot(t, pred[:, j], "-", lw=1, color=f"C{j}", label=f"joint {j} fitted")
    axes[0].set(xlabel="t (s)", ylabel="τ (N·m)", title="measured (dots) vs fitted torques, joints 0-2")
    axes[0].legend(fontsize=7)
    axes[1].errorbar(np.arange(len(b_hat)), b_hat - b_true, yerr=2 * se, fmt="o", ms=3)
    axes[1].axhline(0, color="k", lw=0.5)
    axes[1].set(xlabel="base parameter", ylabel="estimate − truth (± 2 SE)", title=f"{info.rank} base parameters")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "torques.png"), dpi=120)
    print(f"wrote {args.out}/torques.png and base_parameters.csv")


if __name__ == "__main__":
    main()
