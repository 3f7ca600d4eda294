"""Ehsani §4-4 A, Fig. 14-15: shoulder moment arms of the group leaders, mbjax vs OpenSim.

Leaders (Table 5): LAT1, PECM3, DELT1, PECM1, SUBSC, DELT2.  Fig. 14: moment arm about the
elevation angle vs elevation (0-180°, 1° steps); Fig. 15: moment arm about axial rotation vs
elevation; plane of elevation and axial rotation at 0.  The MoBL/Holzbaur model is read at run
time (never copied), wrap objects removed (straight paths), as in :mod:`mbjax.models.shoulder`.

OpenSim (if installed) is evaluated on the *same* trimmed file.  Its moment arms are central
differences of ``GeometryPath.getLength`` along the coupler manifold (``computeMomentArm`` is wrong
for coupled coordinates, opensim-core #3805; its error is printed too).  Significant figures of
agreement = -log10(|R_mbjax - R_osim| / |R_osim|) (paper: 8).

Then the same sweeps with the de Groot & Brand (2001) rhythm, in the abduction plane
(elv_angle = 0) and the flexion plane (elv_angle = 90°): the plane-of-elevation dependence that
Holzbaur's single-coordinate couplers dropped.

Run: ``.venv/bin/python experiments/shoulder_moment_arms.py [--quick]``; writes
``outputs/shoulder_moment_arms/*.png|csv``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

jax.config.update("jax_enable_x64", True)

from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.models.shoulder import LEADERS, shoulder_model, trimmed_osim  # noqa: E402
from mbjax.muscles import moment_arms_batched  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "outputs", "shoulder_moment_arms")


def sig_figs(a, b, floor=1e-4):
    mask = np.abs(b) > floor
    rel = np.abs(a[mask] - b[mask]) / np.abs(b[mask])
    return -np.log10(np.maximum(rel, 1e-17))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5° steps instead of 1°")
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    step = 5.0 if args.quick else 1.0
    elev = np.deg2rad(np.arange(0.0, 180.0 + 1e-9, step))
    elev[-1] = min(elev[-1], 3.14159265)  # the model's range ends at 3.14159265
    models = {r: shoulder_model(r) for r in ("holzbaur", "degroot_brand")}
    names = models["holzbaur"].coordinate_names
    idx = [models["holzbaur"].muscle_names.index(m) for m in LEADERS]
    sweep = moment_arms_batched  # batch-last kernel, 64 poses at a time (compiled once)

    def poses(plane):
        q = np.zeros((elev.size, 3))
        q[:, 0] = plane
        q[:, 1] = elev
        return q

    t0 = time.perf_counter()
    r_h = np.asarray(sweep(models["holzbaur"], jnp.asarray(poses(0.0))))[:, :, idx]
    t_mbjax = time.perf_counter() - t0
    r_dg0 = np.asarray(sweep(models["degroot_brand"], jnp.asarray(poses(0.0))))[:, :, idx]
    r_h90 = np.asarray(sweep(models["holzbaur"], jnp.asarray(poses(np.pi / 2))))[:, :, idx]
    r_dg90 = np.asarray(sweep(models["degroot_brand"], jnp.asarray(poses(np.pi / 2))))[:, :, idx]
    print(f"mbjax: {elev.size} poses x 14 muscles x 3 coordinates (incl. compile) in {t_mbjax:.2f} s")

    # OpenSim overlay
    r_os = {}
    try:
        import opensim  # noqa: F401

        have_osim = True
    except ImportError:
        have_osim = False
        print("opensim is not installed: no overlay (pip install opensim)")
    if have_osim:
        path = trimmed_osim(out=os.path.join(OUT, "_shoulder_trimmed.osim"))
        try:
            sys.stdout.flush()
            oracle = OpenSimReference(path)
            for wrt in ("shoulder_elv", "shoulder_rot"):
                fd, cma = [], []
                for q in tqdm(poses(0.0), desc=f"OpenSim d/d{wrt}"):
                    fd.append(oracle.moment_arms(list(names), q, wrt, LEADERS))
                    cma.append(oracle.compute_moment_arm(list(names), q, wrt, LEADERS))
                r_os[wrt] = (np.array(fd), np.array(cma))
        finally:
            os.remove(path)

    # figures and CSV
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []
    for fig_no, wrt in ((14, "shoulder_elv"), (15, "shoulder_rot")):
        k = names.index(wrt)
        if wrt in r_os:  # overlay and, below it, the difference mbjax - OpenSim per muscle
            fig, (ax, dax) = plt.subplots(2, 1, figsize=(7, 7), sharex=True, gridspec_kw=dict(height_ratios=[2, 1]))
        else:
            fig, ax = plt.subplots(figsize=(7, 5))
        for j, m in enumerate(LEADERS):
            line, = ax.plot(np.rad2deg(elev), 100 * r_h[:, k, j], "-", label=f"{m} mbjax")
            if wrt in r_os:
                ax.plot(np.rad2deg(elev), 100 * r_os[wrt][0][:, j], "--", color=line.get_color(), lw=2.5, alpha=0.5)
                dax.plot(np.rad2deg(elev), r_h[:, k, j] - r_os[wrt][0][:, j], "-", color=line.get_color(), lw=1)
        if wrt in r_os:
            dax.axhline(0.0, color="0.6", lw=0.6)
            dax.set_ylabel("mbjax − OpenSim (m)")
            dax.set_xlabel("elevation angle (deg)")
        ax.set_xlabel("elevation angle (deg)")
        ax.set_ylabel(f"moment arm about {wrt} (cm)")
        ax.set_title(f"Fig. {fig_no}: mbjax (solid) vs OpenSim (dashed)" if r_os else f"Fig. {fig_no}: mbjax")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(OUT, f"fig{fig_no}_{wrt}.png"), dpi=120)
        plt.close(fig)
        for i, e in enumerate(elev):
            for j, m in enumerate(LEADERS):
                row = dict(figure=fig_no, wrt=wrt, elevation_deg=np.rad2deg(e), muscle=m, mbjax=r_h[i, k, j],
                           degroot_brand_plane0=r_dg0[i, k, j], holzbaur_plane90=r_h90[i, k, j],
                           degroot_brand_plane90=r_dg90[i, k, j])
                if wrt in r_os:
                    row.update(opensim_fd=r_os[wrt][0][i, j], opensim_computeMomentArm=r_os[wrt][1][i, j])
                rows.append(row)
        if wrt in r_os:
            s = sig_figs(r_h[:, k, :], r_os[wrt][0])
            err = np.abs(r_h[:, k, :] - r_os[wrt][0]).max()
            err_cma = np.abs(r_h[:, k, :] - r_os[wrt][1]).max()
            print(f"Fig. {fig_no} ({wrt}): max |mbjax - OpenSim d(getLength)| = {err:.2e} m; significant figures "
                  f"median {np.median(s):.1f}, min {s.min():.1f} (paper: 8; limited by OpenSim's central "
                  f"differences); max |mbjax - computeMomentArm| = {err_cma:.2e} m")
    with open(os.path.join(OUT, "moment_arms.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=sorted({k for r in rows for k in r}, key=lambda s: (s != "figure", s)))
        w.writeheader()
        w.writerows(rows)

    # de Groot & Brand
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, (plane, rh, rd) in zip(axes, ((0.0, r_h, r_dg0), (90.0, r_h90, r_dg90))):
        k = names.index("shoulder_elv")
        for j, m in enumerate(LEADERS):
            line, = ax.plot(np.rad2deg(elev), 100 * rh[:, k, j], "-", label=f"{m} Holzbaur")
            ax.plot(np.rad2deg(elev), 100 * rd[:, k, j], ":", color=line.get_color(), lw=2)
        ax.set_title(f"plane of elevation {plane:.0f}°: Holzbaur (solid) vs de Groot & Brand (dotted)", fontsize=9)
        ax.set_xlabel("elevation angle (deg)")
        ax.set_ylabel("moment arm about shoulder_elv (cm)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "degroot_brand_rhythm.png"), dpi=120)
    plt.close(fig)
    for plane, rh, rd in ((0, r_h, r_dg0), (90, r_h90, r_dg90)):
        d = np.abs(rh - rd).max(axis=(0, 1))
        print(f"de Groot & Brand vs Holzbaur rhythm, plane {plane}°: max |ΔR| per leader (mm): "
              + ", ".join(f"{m} {1000 * v:.2f}" for m, v in zip(LEADERS, d)))
    print(f"outputs in {OUT}")


if __name__ == "__main__":
    main()
