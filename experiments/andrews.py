"""Andrews' squeezer (Ehsani §4-4 B, Fig. 17-18): empirical one-coordinate ODE vs the stabilized DAE.

Run: ``.venv/bin/python experiments/andrews.py [--quick]``; writes PNG + CSV into
``outputs/andrews/`` and prints the headline numbers next to the paper's:

* Fig. 17: the dependent joint variables vs q = β over one crank period with their Fourier fits
  (fit residuals per harmonic count).
* Fig. 18: q and q̇ over time from the seed's start (q = -0.0620 rad, q̇ = 0, 0.05 s), empirical ODE
  (exact implicit maps and Fourier maps) vs the index-1 DAE with Baumgarte stabilization; RMS
  difference over 1000 points (paper: 1e-4 rad, 3e-3 rad/s).
* Energy/accuracy table from the Test Set's consistent start to t = 0.03: error against the
  published solution, energy balance T + V_spring - mom·β, DAE constraint drift, wall time.
"""

import argparse
import csv
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import diffrax  # noqa: E402
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

import mbjax  # noqa: E402
from mbjax.models import andrews as A  # noqa: E402
from mbjax.models import andrews_dae as D  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "andrews")
REF_Q = np.array([0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1, -0.5347301163226948,
                  0.5244099658805304, 0.5347301163226948, 0.1048080741042263e1])
REF_QD = np.array([0.1139920302151208e4, -0.1424379294994111e4, 0.1103291221937134e2, 0.1929337464421385e2,
                   0.5735699284790808, -0.1929337464421385e2, 0.3231791658026955])


def energy(tree, q, qd):
    """T + V_spring - mom·β (conserved: the drive torque is constant)."""
    p = A.PARAMS
    d = mbjax.point_positions(tree, q, "K3", jnp.array([p["sd"], -p["sc"], 0.0]))
    length = jnp.sqrt((d[0] - p["xc"]) ** 2 + (d[1] - p["yc"]) ** 2)
    return mbjax.kinetic_energy(tree, q, qd) + 0.5 * p["c0"] * (length - p["l0"]) ** 2 - p["mom"] * q[0]


@eqx.filter_jit
def _run(field, model, y0, t1, ts, tol):
    return mbjax.simulate(model, y0, jnp.zeros_like(y0), 0.0, t1, vector_field=field, saveat=ts, rtol=tol, atol=tol,
                          solver=diffrax.Tsit5())


def solve(kind, models, q0_beta, t1, ts, tol):
    """One solve (compiled once per formulation and number of saved times: t1, tol, start are dynamic)."""
    if kind == "dae":
        q0, _ = A.full_state(models["implicit"], q0_beta, 0.0)
        field, n, model, y0 = D.dae_vector_field(alpha=1e3, beta=1e3), 7, models["tree"], jnp.asarray(q0)
    else:
        model = models[kind]
        field, n, y0 = A.reduced_vector_field(), 1, jnp.array([q0_beta])
    args = (field, model, y0, jnp.asarray(t1), ts, jnp.asarray(tol))
    jax.block_until_ready(_run(*args))  # compile (first call per formulation only)
    wall = np.inf
    for _ in range(3):  # best of 3 (wall time excludes compilation)
        t0 = time.perf_counter()
        sol = jax.block_until_ready(_run(*args))
        wall = min(wall, time.perf_counter() - t0)
    q, qd = sol.ys
    if n == 1:
        q, qd = jax.vmap(lambda b, bd: A.full_state(model, b, bd))(q[:, 0], qd[:, 0])
    return np.asarray(q), np.asarray(qd), wall, int(sol.stats["num_steps"])


def main(quick):
    os.makedirs(OUT, exist_ok=True)
    # ---- Fig. 17: Fourier pre-modelling ------------------------------------------------------
    fits = {}
    for k in tqdm((4, 8, 12) if not quick else (8, 12), desc="Fourier fits"):
        fits[k] = A.fourier_maps(k)
    betas, xs = fits[12][1]
    with open(os.path.join(OUT, "fourier_residuals.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["harmonics"] + list(A.DEPENDENT))
        for k, f in fits.items():
            w.writerow([k] + [f"{f[2][n]:.3e}" for n in A.DEPENDENT])
    print("Fourier fit max residual over one crank period (rad), step 0.01 rad as in the seed:")
    for k, f in fits.items():
        print(f"  K = {k:2d}: " + ", ".join(f"{n} {f[2][n]:.1e}" for n in A.DEPENDENT))
    # values (rows 0, 2) and the difference Fourier - loop solve under each (rows 1, 3): agreement is
    # visible, not hidden by two curves drawn on top of each other
    fig, axes = plt.subplots(4, 3, figsize=(11, 10), sharex=True, gridspec_kw=dict(height_ratios=[2, 1, 2, 1]))
    fm = fits[8][0]
    for i, (k, name) in enumerate(enumerate(A.DEPENDENT)):
        ax, dax = axes[2 * (i // 3), i % 3], axes[2 * (i // 3) + 1, i % 3]
        fitted = np.asarray(jax.vmap(lambda b: fm[name].local(jnp.reshape(b, (1, 1)))[0][0])(jnp.asarray(betas)))
        ax.plot(betas, xs[:, k], "k-", lw=2, label="loop solve (data)")
        ax.plot(betas, fitted, "r--", lw=1, label="Fourier, K = 8")
        ax.set_title(name + (" = Θ + β" if name == "psi" else ""))
        ax.set_ylabel(f"{name} (rad)")
        dax.plot(betas, fitted - xs[:, k], "r-", lw=1)
        dax.axhline(0.0, color="0.6", lw=0.6)
        dax.set_ylabel("Fourier − data (rad)", fontsize=8)
    axes[0, 0].legend()
    for ax in axes[3]:
        ax.set_xlabel("q = β (rad)")
    fig.suptitle("Fig. 17: joint variables of Andrews' squeezer vs the generalized coordinate")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig17_joint_variables.png"), dpi=120)
    np.savetxt(os.path.join(OUT, "fig17_samples.csv"), np.column_stack([betas, xs]), delimiter=",",
               header="beta," + ",".join(A.DEPENDENT), comments="")

    models = {"tree": A.andrews_tree()}
    models["implicit"], _ = A.andrews_reduced("implicit", fit=fits[12])
    models["fourier"], _ = A.andrews_reduced("fourier", fit=fits[8])

    # ---- Fig. 18: seed start, 0.05 s, 1000 points --------------------------------------------
    ts = jnp.linspace(0.0, A.SEED_T_END, 1000)
    res = {}
    for kind in tqdm(("implicit", "fourier", "dae"), desc="Fig. 18 solves"):
        res[kind] = solve(kind, models, A.SEED_Q0, A.SEED_T_END, ts, 1e-8)
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True, gridspec_kw=dict(height_ratios=[2, 2, 1, 1]))
    for kind, style in (("implicit", "k-"), ("fourier", "b:"), ("dae", "r--")):
        axes[0].plot(ts, res[kind][0][:, 0], style, label=kind)
        axes[1].plot(ts, res[kind][1][:, 0], style, label=kind)
    for kind, style in (("implicit", "k-"), ("fourier", "b:")):  # each empirical ODE minus the DAE
        axes[2].plot(ts, res[kind][0][:, 0] - res["dae"][0][:, 0], style, label=f"{kind} − dae")
        axes[3].plot(ts, res[kind][1][:, 0] - res["dae"][1][:, 0], style, label=f"{kind} − dae")
    for ax in axes[2:]:
        ax.axhline(0.0, color="0.6", lw=0.6)
    axes[0].set_ylabel("q = β (rad)")
    axes[1].set_ylabel("q̇ (rad/s)")
    axes[2].set_ylabel("Δq vs DAE (rad)")
    axes[3].set_ylabel("Δq̇ vs DAE (rad/s)")
    axes[3].set_xlabel("t (s)")
    axes[0].legend()
    axes[2].legend(fontsize=8)
    fig.suptitle("Fig. 18: empirical ODE vs index-1 DAE (Baumgarte), start q = -0.0620 rad")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig18_ode_vs_dae.png"), dpi=120)
    np.savetxt(os.path.join(OUT, "fig18_trajectories.csv"),
               np.column_stack([ts] + [res[k][i][:, 0] for k in ("implicit", "fourier", "dae") for i in (0, 1)]),
               delimiter=",", header="t,q_implicit,qd_implicit,q_fourier,qd_fourier,q_dae,qd_dae", comments="")
    print("RMS difference over 1000 points, seed start (q = -0.0620 rad, 0.05 s), rtol = atol = 1e-8:")
    for kind in ("implicit", "fourier"):
        rq = np.sqrt(np.mean((res[kind][0][:, 0] - res["dae"][0][:, 0]) ** 2))
        rqd = np.sqrt(np.mean((res[kind][1][:, 0] - res["dae"][1][:, 0]) ** 2))
        print(f"  ODE ({kind:8s}) vs DAE: q {rq:.1e} rad, q̇ {rqd:.1e} rad/s   (paper: 1e-4 rad, 3e-3 rad/s)")

    # ---- energy / accuracy table: Test Set start to 0.03 --------------------------------------
    tree = models["tree"]
    e_fn = jax.jit(jax.vmap(lambda q, qd: energy(tree, q, qd)))
    rows = []
    tols = (1e-6, 1e-8, 1e-10) if not quick else (1e-6, 1e-8)
    ts = jnp.linspace(0.0, A.T_END, 301)
    for tol in tqdm(tols, desc="accuracy table"):
        for kind in ("implicit", "fourier", "dae"):
            q, qd, wall, steps = solve(kind, models, A.Q0[0], A.T_END, ts, tol)
            e = np.asarray(e_fn(jnp.asarray(q), jnp.asarray(qd)))
            drift = np.max(np.abs(e - e[0])) / np.max(np.abs(e))
            g = float(np.max(np.abs(np.asarray(jax.vmap(A.constraints)(jnp.asarray(q))))))
            rows.append(dict(formulation=kind, rtol=tol, steps=steps, wall_ms=1e3 * wall,
                             err_q=float(np.max(np.abs(q[-1] - REF_Q))), err_qd=float(np.max(np.abs(qd[-1] - REF_QD))),
                             energy_drift=float(drift), constraint_drift=g))
    with open(os.path.join(OUT, "accuracy_table.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("Test Set start to t = 0.03 (errors vs the published PSIDE solution):")
    print(f"{'form':<10}{'rtol':>8}{'steps':>7}{'ms':>9}{'err q':>10}{'err qd':>10}{'E drift':>10}{'max|g|':>10}")
    for r in rows:
        print(f"{r['formulation']:<10}{r['rtol']:>8.0e}{r['steps']:>7}{r['wall_ms']:>9.1f}{r['err_q']:>10.1e}"
              f"{r['err_qd']:>10.1e}{r['energy_drift']:>10.1e}{r['constraint_drift']:>10.1e}")
    for tol in tols:
        by = {r["formulation"]: r for r in rows if r["rtol"] == tol}
        print(f"rtol {tol:.0e}: wall time DAE / ODE = {by['dae']['wall_ms'] / by['implicit']['wall_ms']:.2f} (implicit maps), "
              f"{by['dae']['wall_ms'] / by['fourier']['wall_ms']:.2f} (Fourier maps); paper: 4")
    print("(same rtol is not the same accuracy: benchmarks/andrews.py compares at equal error against the Test Set)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
