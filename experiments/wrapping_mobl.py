"""Figures: MoBL-ARMS muscles wrapped over each surface kind, mbjax vs OpenSim 4.6.

One muscle per surface kind of the full MoBL-ARMS model (loaded *with* its wrap objects), each
swept over the coordinate it moves most, the other coordinates at the file's defaults:

* TRIlat over the ``TRI`` cylinder, about ``elbow_flexion``;
* SUBSC over the ``SUBSCAP`` ellipsoid, about ``shoulder_rot``;
* LAT2 over two cylinders and the ``LAT_TMAJ2hh`` sphere, about ``shoulder_elv``;
* ECU over the ``ECU`` torus, about ``deviation``.

mbjax: path length ``muscle_lengths`` and moment arm ``-∂L/∂q`` by forward-mode autodiff through
the wrap pass (one ``jax.jvp`` per sweep).  OpenSim: ``GeometryPath.getLength`` and Richardson
differences of it (h = 1e-3 rad, O(h⁴)), skipped where the stencil leaves the range.  Figure 1:
length and moment arm overlaid, with |difference| panels (log scale).  Figure 2: the wrapped TRIlat
and ECU paths in 3-D at a few poses (path points in path order, tangent points marked).

Without ``opensim`` installed only mbjax's curves are drawn.  Run:
``.venv/bin/python experiments/wrapping_mobl.py [--quick]``; writes
``outputs/wrapping_mobl/{wrapping_mobl.png,wrapping_mobl_3d.png,wrapping_mobl.csv}``.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

jax.config.update("jax_enable_x64", True)

from mbjax._kinematics import forward_pass  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.models.shoulder import _source  # noqa: E402
from mbjax.muscles import muscle_lengths  # noqa: E402
from mbjax.muscles.geometry import path_geometry, wrapped_paths  # noqa: E402
from mbjax.muscles.paths import get_paths  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "outputs", "wrapping_mobl")
#: (muscle, driving coordinate, surface kind shown)
SWEEPS = (
    ("TRIlat", "elbow_flexion", "cylinder"),
    ("SUBSC", "shoulder_rot", "ellipsoid"),
    ("LAT2", "shoulder_elv", "sphere (+2 cylinders)"),
    ("ECU", "deviation", "torus"),
)


def _opensim(path):
    try:
        from mbjax.opensim.opensim_reference import OpenSimReference

        return OpenSimReference(path)
    except ImportError:
        return None


def length_and_arm_sweeper(model):
    """One compiled function for every sweep: ``(qs (B, nq), e (nq,))`` -> lengths and ``-∂L/∂q · e`` ``(B, nm)``."""

    def length_and_arm(q, e):
        length, dl = jax.jvp(lambda v: muscle_lengths(model, v), (q,), (e,))
        return length, -dl

    return jax.jit(jax.vmap(length_and_arm, (0, None)))


def sweep(model, sweeper, oracle, muscle, coord, n):
    """Length and moment arm of ``muscle`` along ``coord`` (mbjax, and OpenSim when given)."""
    info = model.osim
    names = model.coordinate_names
    k = names.index(coord)
    lo, hi = float(info.lower[k]), float(info.upper[k])
    x = np.linspace(lo + 0.01 * (hi - lo), hi - 0.01 * (hi - lo), n)
    qs = np.tile(np.asarray(info.default), (n, 1))
    qs[:, k] = x
    m = model.muscle_names.index(muscle)
    e = jnp.zeros(len(names)).at[k].set(1.0)
    lengths, arms = (np.asarray(a)[:, m] for a in sweeper(jnp.asarray(qs), e))
    out = {"x": x, "L": lengths, "R": arms}
    if oracle is not None:
        out["L_os"] = np.array([oracle.lengths(names, q, [muscle])[0] for q in qs])
        h = 1e-3
        inside = (x - 2 * h >= lo) & (x + 2 * h <= hi)
        out["R_os"] = np.array([oracle.moment_arms(names, q, coord, [muscle], h)[0] if ok else np.nan
                                for q, ok in zip(qs, inside)])
    return out


def wrapped_paths_at(model, qs):
    """The wrap pass at poses ``qs (B, nq)``: points ``(B, nw, N, 3)``, active and order keys ``(B, nw, N)``."""

    def one(q):
        kin = forward_pass(model, q)
        w = wrapped_paths(model, q, kin, path_geometry(model, q, kin))
        return w.points, w.active, w.order

    return [np.asarray(a) for a in jax.jit(jax.vmap(one))(jnp.asarray(qs))]


def ordered_path(model, muscle, points, active, order):
    """One pose's wrapped path of ``muscle`` in path order, and which of its points are tangent points."""
    row = list(np.asarray(get_paths(model).wraps.muscles)).index(model.muscle_names.index(muscle))
    n_points = get_paths(model).n_points
    idx = np.nonzero(active[row])[0]
    idx = idx[np.argsort(order[row][idx])]
    return points[row][idx], idx >= n_points


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="15 poses per sweep instead of 61")
    args = ap.parse_args(argv)
    os.makedirs(OUT, exist_ok=True)
    path = _source(None)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(path)
    print(f"MoBL-ARMS loaded with {len(get_paths(model).wraps.kinds)} wrap objects in {time.perf_counter() - t0:.1f} s")
    oracle = _opensim(path)
    if oracle is None:
        print("opensim not installed: mbjax curves only")
    n = 15 if args.quick else 61
    results = {}
    sweeper = length_and_arm_sweeper(model)
    for muscle, coord, kind in tqdm(SWEEPS, desc="sweeps (the first one compiles)"):
        results[muscle] = sweep(model, sweeper, oracle, muscle, coord, n)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, len(SWEEPS), figsize=(4.2 * len(SWEEPS), 9), sharex="col")
    rows = []
    print("moment arms: OpenSim's are Richardson differences (±2 mrad); where that stencil crosses a wrap\n"
          "switch or an ellipsoid's stopped iteration, |ΔR| is the differences' error, hence the median too")
    print(f"{'muscle':8s} {'surface':22s} {'max |ΔL| (m)':>14s} {'median |ΔR| (m)':>16s} {'max |ΔR| (m)':>14s}")
    for j, (muscle, coord, kind) in enumerate(SWEEPS):
        r = results[muscle]
        deg = np.rad2deg(r["x"])
        ax[0, j].plot(deg, r["L"], "-", color="C0", label="mbjax")
        ax[1, j].plot(deg, 100 * r["R"], "-", color="C0", label="mbjax −∂L/∂q (autodiff)")
        dl = dr = mr = np.nan
        if "L_os" in r:
            ax[0, j].plot(deg, r["L_os"], "o", mfc="none", color="C3", ms=4, label="OpenSim 4.6")
            ax[1, j].plot(deg, 100 * r["R_os"], "o", mfc="none", color="C3", ms=4, label="OpenSim (differences)")
            el = np.abs(r["L"] - r["L_os"])
            er = np.abs(r["R"] - r["R_os"])
            ax[2, j].semilogy(deg, np.maximum(el, 1e-18), "-", color="C0", label="|ΔL| (m)")
            ax[2, j].semilogy(deg, np.maximum(er, 1e-18), "--", color="C2", label="|ΔR| (m)")
            dl, dr, mr = float(el.max()), float(np.nanmax(er)), float(np.nanmedian(er))
        print(f"{muscle:8s} {kind:22s} {dl:14.3g} {mr:16.3g} {dr:14.3g}")
        ax[0, j].set_title(f"{muscle}: {kind}")
        ax[0, j].set_ylabel("length (m)")
        ax[1, j].set_ylabel(f"moment arm about {coord} (cm)")
        ax[2, j].set_ylabel("|mbjax − OpenSim|")
        ax[2, j].set_xlabel(f"{coord} (°)")
        for a in ax[:, j]:
            a.grid(alpha=0.3)
        for i, x in enumerate(r["x"]):
            rows.append([muscle, coord, x, r["L"][i], r["R"][i], r.get("L_os", [np.nan] * n)[i],
                         r.get("R_os", [np.nan] * n)[i]])
    ax[0, 0].legend(fontsize=8)
    ax[1, 0].legend(fontsize=8)
    ax[2, 0].legend(fontsize=8)
    fig.suptitle("MoBL-ARMS with its wrap objects: mbjax vs OpenSim 4.6")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "wrapping_mobl.png"), dpi=110)
    with open(os.path.join(OUT, "wrapping_mobl.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["muscle", "coordinate", "q_rad", "L_mbjax_m", "R_mbjax_m", "L_opensim_m", "R_opensim_m"])
        w.writerows(rows)

    fig = plt.figure(figsize=(10, 5))
    info = model.osim
    shown = (("TRIlat", "elbow_flexion"), ("ECU", "deviation"))
    qs, labels = [], []
    for muscle, coord in shown:
        k = model.coordinate_names.index(coord)
        lo, hi = float(info.lower[k]), float(info.upper[k])
        for x in np.linspace(lo, hi, 4):
            q = np.asarray(info.default, dtype=float).copy()
            q[k] = x
            qs.append(q)
            labels.append(f"{coord} = {np.rad2deg(x):.0f}°")
    points, active, order = wrapped_paths_at(model, np.array(qs))
    for j, (muscle, coord) in enumerate(shown):
        a3 = fig.add_subplot(1, 2, j + 1, projection="3d")
        for i in range(4):
            b = 4 * j + i
            pts, tangent = ordered_path(model, muscle, points[b], active[b], order[b])
            c = plt.cm.viridis(i / 3)
            a3.plot(*pts.T, "-", color=c, label=labels[b])
            a3.plot(*pts[tangent].T, "o", color=c, ms=4)
        a3.set_title(f"{muscle}: path, tangent points (dots)")
        a3.set_xlabel("x (m)")
        a3.set_ylabel("y (m)")
        a3.set_zlabel("z (m)")
        a3.set_box_aspect(np.ptp(np.array([a3.get_xlim(), a3.get_ylim(), a3.get_zlim()]), axis=1))  # equal scales
        a3.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "wrapping_mobl_3d.png"), dpi=110)
    print(f"wrote {OUT}/wrapping_mobl.png, wrapping_mobl_3d.png, wrapping_mobl.csv "
          f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
