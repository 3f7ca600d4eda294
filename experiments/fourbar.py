"""Four-bar linkage (Ehsani §4-3 A, Eq. 121-122): Fig. 5 (pre-modelled joint variables) and Fig. 6
(|v|, |a| of point p along a Hermite trajectory, closed-form kinematics vs absolute coordinates).

Table 1 is missing from the seed; lengths are ``mbjax.models.fourbar.FOURBAR_LENGTHS`` (l0 = 2,
l1 = 3, l2 = 6, lcm2 = 3, l3 = 5.5), chosen so that q (CoM height of body 2) spans -2..2.  The
seed's route is pre-modelling (sweep with step 0.01 + natural cubic splines); the projection and
implicit methods are exact and shown alongside.

    .venv/bin/python experiments/fourbar.py [--quick]

Writes ``outputs/fourbar/{fig5_joint_variables.png, fig6_point_p.png, fourbar.csv}``.
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

import mbjax  # noqa: E402
from mbjax.constraints import sweep  # noqa: E402
from mbjax.models.fourbar import (  # noqa: E402
    FOURBAR_LENGTHS,
    FOURBAR_RANGE,
    FOURBAR_TRAJECTORY,
    fourbar,
    fourbar_chain,
)
from mbjax.models.linkage_compare import agreement, linkage_comparison  # noqa: E402
from _linkage_plots import plot_point_kinematics  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "fourbar")
PAPER_SIGFIGS = 7


def main(quick: bool = False):
    os.makedirs(OUT, exist_ok=True)
    n_t = 81 if quick else 401
    times = np.linspace(0.0, FOURBAR_TRAJECTORY[0][-1], n_t)
    print(f"four-bar lengths (Table 1 missing, ours): {FOURBAR_LENGTHS}; q range {FOURBAR_RANGE}")

    # Fig. 5: sweep with step 0.01 and the fitted splines (f, ∇f, H)
    t0 = time.perf_counter()
    pre = fourbar("premodel", premodel_step=0.01)
    print(f"pre-model (401 solves + 3 natural cubic splines): {time.perf_counter() - t0:.1f} s")
    con = pre.constraint
    grid = np.linspace(*FOURBAR_RANGE, 401)
    solved = sweep(con, [grid])
    fine = np.linspace(FOURBAR_RANGE[0], FOURBAR_RANGE[1] - 1e-9, 1201)
    jv = jax.jit(jax.vmap(mbjax.joint_values, in_axes=(None, 0)))
    spl = jv(pre.model, jnp.asarray(fine)[:, None])
    exact = jv(fourbar("projection").model, jnp.asarray(fine)[:, None])
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    names = ["f (rad)", "∇f (rad/unit)", "H (rad/unit²)"]
    for k, (a, arr_s, arr_e) in enumerate(zip(ax, spl, exact)):
        for j in range(3):
            ys = np.asarray(arr_s).reshape(len(fine), 3, -1)[:, j, 0]
            ye = np.asarray(arr_e).reshape(len(fine), 3, -1)[:, j, 0]
            a.plot(fine, ys, lw=2, label=f"θ{j + 1} spline")
            a.plot(fine, ye, "k:", lw=1)
            if k == 0:
                a.plot(grid[::20], solved[::20, j], "o", ms=3, color=a.lines[-2].get_color())
        a.set_xlabel("q (CoM height of body 2)")
        a.set_ylabel(names[k])
    ax[0].legend(fontsize=8)
    fig.suptitle("Fig. 5: four-bar joint variables, pre-model (solid) vs projection (dotted), solves (dots)")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "fig5_joint_variables.png"), dpi=120)
    plt.close(fig)
    interior = (fine > -1.9) & (fine < 1.9)
    for k, name in enumerate(["f", "∇f", "H"]):
        err = np.max(np.abs(np.asarray(spl[k]) - np.asarray(exact[k]))[interior])
        print(f"  pre-model vs projection, max |Δ{name}| on [-1.9, 1.9]: {err:.2e}")

    # Fig. 6: point p along the Hermite trajectory
    rows = {}
    for method in tqdm(["premodel", "projection", "implicit"], desc="methods"):
        lk = pre if method == "premodel" else fourbar(method)
        rows[method] = linkage_comparison(lk, fourbar_chain(), times, FOURBAR_TRAJECTORY)
    q, vm, am, va, aa = rows["premodel"]
    plot_point_kinematics(times, rows["premodel"], ["q"], "pre-model",
                          "Fig. 4 and 6: drive q(t) and |v|, |a| of point p", os.path.join(OUT, "fig6_point_p.png"))

    with open(os.path.join(OUT, "fourbar.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t", "q", "|v| premodel", "|v| projection", "|v| absolute", "|a| premodel", "|a| projection", "|a| absolute"])
        for i, t in enumerate(times):
            w.writerow([t, float(q[i, 0]), *(float(np.linalg.norm(rows[m][1][i])) for m in ("premodel", "projection")),
                        float(np.linalg.norm(va[i])), *(float(np.linalg.norm(rows[m][2][i])) for m in ("premodel", "projection")),
                        float(np.linalg.norm(aa[i]))])

    print(f"significant figures of agreement with the absolute-coordinate analysis (min over {n_t} instants):")
    print(f"  {'method':12s} {'v_p':>6s} {'a_p':>6s}   paper")
    for method, (_, v1, a1, v2, a2) in rows.items():
        print(f"  {method:12s} {agreement(v1, v2).min():6.1f} {agreement(a1, a2).min():6.1f}   {PAPER_SIGFIGS} (pre-model)")
    print(f"outputs in {os.path.abspath(OUT)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    main(parser.parse_args().quick)
