"""Five-bar linkage (Ehsani §4-3 B, Eq. 123, Table 2): Fig. 9 (|v|, |a| of p, projection vs absolute
coordinates), Fig. 10 (|∇f_3|, |∇f_4|, projection vs molecule) and Fig. 11 (the 4th joint's manifold
and a molecule step-size study).

Table 2: l0 = 3, l1 = 1, l2 = 1, l3 = 3, l4 = 3, lp = 2 (p on body 3, lp from its proximal pivot).
Drives q1(t), q2(t): piecewise cubic Hermite polynomials (``FIVEBAR_TRAJECTORY``; Fig. 8 missing).

    .venv/bin/python experiments/fivebar.py [--quick]

Writes ``outputs/fivebar/{fig9_point_p.png, fig10_gradients.png, fig11_manifold.png,
fig11_step_study.png, fivebar.csv, step_study.csv}``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mbjax.constraints import molecule_derivatives, projection_values, sweep  # noqa: E402
from mbjax.models.fivebar import FIVEBAR_LENGTHS, FIVEBAR_TRAJECTORY, fivebar, fivebar_chain  # noqa: E402
from mbjax.models.linkage_compare import agreement, linkage_comparison  # noqa: E402
from _linkage_plots import plot_point_kinematics  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "fivebar")
PAPER = {"v, a (projection vs absolute)": 6, "|∇f3|, |∇f4| (molecule vs projection)": 7}
MOLECULE_STEP = 1e-4


def main(quick: bool = False):
    os.makedirs(OUT, exist_ok=True)
    n_t = 61 if quick else 301
    times = np.linspace(0.0, FIVEBAR_TRAJECTORY[0][-1], n_t)
    print(f"five-bar, Table 2: {FIVEBAR_LENGTHS}")

    # Fig. 9: point p
    res = {}
    for method in tqdm(["projection", "implicit", "molecule"], desc="methods"):
        res[method] = linkage_comparison(fivebar(method, step=MOLECULE_STEP), fivebar_chain(), times, FIVEBAR_TRAJECTORY)
    q, vm, am, va, aa = res["projection"]
    plot_point_kinematics(times, res["projection"], ["q1 = θ1", "q2 = θ2"], "projection",
                          "Fig. 8 and 9: drives and |v|, |a| of point p", os.path.join(OUT, "fig9_point_p.png"))

    # Fig. 10: |∇f3|, |∇f4| along the trajectory, projection vs molecule
    con = fivebar("projection").constraint
    proj = jax.jit(jax.vmap(lambda qq: projection_values(con, qq)))(q)
    step = jnp.asarray(MOLECULE_STEP)
    mol = jax.jit(jax.vmap(lambda qq: molecule_derivatives(con, qq, step)))(q)
    gp = np.linalg.norm(np.asarray(proj[1]), axis=-1)  # (T, 2): |∇θ3|, |∇θ4|
    gm = np.linalg.norm(np.asarray(mol[1]), axis=-1)
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for j, name in enumerate(["|∇f3|", "|∇f4|"]):
        ax.plot(times, gp[:, j], lw=3, label=f"{name} projection")
        ax.plot(times, gm[:, j], "k--", lw=1.2, label=f"{name} molecule h={MOLECULE_STEP:g}")
    ax.set_xlabel("t")
    ax.legend(fontsize=8)
    ax.set_title("Fig. 10: gradient magnitudes of the 3rd and 4th joints")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig10_gradients.png"), dpi=120)
    plt.close(fig)
    grad_figs = -np.log10(np.max(np.abs(gm - gp) / np.abs(gp), axis=0))

    with open(os.path.join(OUT, "fivebar.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "q1", "q2", "|v| projection", "|v| absolute", "|a| projection", "|a| absolute",
                    "|grad f3| projection", "|grad f3| molecule", "|grad f4| projection", "|grad f4| molecule"])
        for i, t in enumerate(times):
            w.writerow([t, float(q[i, 0]), float(q[i, 1]), float(np.linalg.norm(vm[i])), float(np.linalg.norm(va[i])),
                        float(np.linalg.norm(am[i])), float(np.linalg.norm(aa[i])), gp[i, 0], gm[i, 0], gp[i, 1], gm[i, 1]])

    # Fig. 11: the manifold θ4(q1, q2) and a molecule step-size study
    n = 41 if quick else 121
    g1 = np.linspace(0.0, 2 * np.pi, n)
    g2 = np.linspace(-np.pi, np.pi, n)
    t0 = time.perf_counter()
    theta = sweep(con, [g1, g2])
    print(f"manifold: {n * n} solves in {time.perf_counter() - t0:.1f} s")
    mesh = jnp.asarray(np.stack(np.meshgrid(g1, g2, indexing="ij"), -1).reshape(-1, 2))
    _, grad_all, hess = (np.asarray(x) for x in jax.jit(jax.vmap(lambda qq: projection_values(con, qq)))(mesh))
    curv = np.linalg.norm(hess[:, 1].reshape(len(mesh), -1), axis=1)
    slope4 = np.linalg.norm(grad_all[:, 1], axis=1)
    # the most curved point, q = (0, 0), is a symmetric one where ∇f4 = 0 and central differences
    # are exact by symmetry: study the most curved point where ∇f4 is not small instead
    eligible = slope4 > 0.5 * slope4.max()
    worst = mesh[int(np.argmax(np.where(eligible, curv, -np.inf)))]
    mild = mesh[int(np.argmin(np.where(eligible, curv, np.inf)))]
    fig = plt.figure(figsize=(12, 4.5))
    a1 = fig.add_subplot(1, 2, 1, projection="3d")
    G1, G2 = np.meshgrid(g1, g2, indexing="ij")
    a1.plot_surface(G1, G2, theta[..., 1], cmap="viridis", linewidth=0)
    a1.set_xlabel("q1")
    a1.set_ylabel("q2")
    a1.set_zlabel("θ4")
    a1.set_title("Fig. 11: manifold of the 4th joint")
    a2 = fig.add_subplot(1, 2, 2)
    c = a2.contourf(G1, G2, np.log10(curv.reshape(n, n)), 30, cmap="magma")
    fig.colorbar(c, ax=a2, label="log10 ‖H_4‖")
    a2.plot(*worst, "c*", ms=12, label="most curved")
    a2.plot(*mild, "w^", ms=8, label="least curved")
    a2.legend(fontsize=8)
    a2.set_xlabel("q1")
    a2.set_ylabel("q2")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig11_manifold.png"), dpi=120)
    plt.close(fig)

    steps = np.logspace(-7, -1, 16 if quick else 37)  # h >~ 0.3 can jump to the other assembly branch (raises)
    study = {}
    for label, q0 in (("most curved", worst), ("least curved", mild)):
        f, g, h = projection_values(con, q0)
        eg, eh = [], []
        for s in tqdm(steps, desc=f"step study ({label})"):
            _, gmo, hmo = molecule_derivatives(con, q0, jnp.asarray(s))
            # relative to the largest entry of ∇f (H) of both joints: ∇f4 itself can vanish there
            eg.append(float(np.abs(gmo[1] - g[1]).max() / np.abs(g).max()))
            eh.append(float(np.abs(hmo[1] - h[1]).max() / np.abs(h).max()))
        study[label] = (np.array(eg), np.array(eh))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, (eg, eh) in study.items():
        ax.loglog(steps, eg, "o-", ms=3, label=f"∇f4, {label}")
        ax.loglog(steps, eh, "s--", ms=3, label=f"H4, {label}")
    ax.loglog(steps, steps**2, "k:", label="h²")
    ax.set_xlabel("molecule step h")
    ax.set_ylabel("relative error vs projection")
    ax.legend(fontsize=7)
    ax.set_title("Fig. 11b: molecule step-size study (4th joint)")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig11_step_study.png"), dpi=120)
    plt.close(fig)
    with open(os.path.join(OUT, "step_study.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["h", "grad err most curved", "hess err most curved", "grad err least curved", "hess err least curved"])
        for i, s in enumerate(steps):
            w.writerow([s, study["most curved"][0][i], study["most curved"][1][i],
                        study["least curved"][0][i], study["least curved"][1][i]])

    print("significant figures of agreement (min over the trajectory):")
    for method, (_, v1, a1_, v2, a2_) in res.items():
        print(f"  point p, {method:10s} vs absolute: v {agreement(v1, v2).min():5.1f}, a {agreement(a1_, a2_).min():5.1f}"
              f"   (paper, projection: {PAPER['v, a (projection vs absolute)']})")
    print(f"  |∇f3|, |∇f4| molecule (h={MOLECULE_STEP:g}) vs projection: {grad_figs[0]:.1f}, {grad_figs[1]:.1f}"
          f"   (paper: {PAPER['|∇f3|, |∇f4| (molecule vs projection)']})")
    print(f"  ‖H4‖ ranges {curv.min():.3g} .. {curv.max():.3g} over the grid (max at q = "
          f"{np.round(np.asarray(mesh[int(np.argmax(curv))]), 3)}); step study at q = {np.round(np.asarray(worst), 3)} "
          f"(‖H4‖ = {curv[int(np.argmax(np.where(eligible, curv, -np.inf)))]:.3g}) and {np.round(np.asarray(mild), 3)}")
    for label, (eg, eh) in study.items():
        ok7 = steps[eg < 1e-7]
        best = int(np.argmin(eg))
        print(f"  step study ({label}): best ∇f4 error {eg[best]:.1e} at h={steps[best]:.1e}; "
              f"7 figures need h <= {ok7.max() if ok7.size else float('nan'):.1e}; "
              f"best H4 error {eh.min():.1e} at h={steps[int(np.argmin(eh))]:.1e}")
    # slope of the truncation regime
    eg = study["most curved"][0]
    sel = (steps > 1e-3) & (steps < 3e-2)
    slope = np.polyfit(np.log(steps[sel]), np.log(eg[sel]), 1)[0]
    print(f"  truncation slope d log(err)/d log(h) on [1e-3, 3e-2] (most curved): {slope:.2f} (central differences: 2)")
    print(f"outputs in {os.path.abspath(OUT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
