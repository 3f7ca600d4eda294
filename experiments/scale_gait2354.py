"""OpenSim's Gait2354 subject scaled by least squares from the static trial, next to OpenSim's ScaleTool.

OpenSim (``Pipelines/Gait2354_Simbody/subject01_Setup_Scale.xml``): one factor per measurement from
marker-pair distances (torso, pelvis, thigh, shank, foot; manual femur 1.14724 and tibia 0.988523
after them), mass distribution preserved at 72.6 kg, then IK of the averaged static frames and every
(non-fixed) marker moved onto its measurement (``MarkerPlacer``).  mbjax
(:func:`mbjax.analysis.identify.fit_static_scale`): the same generic model, scale marker set, IK weights and
coordinate tasks, but the factors (one per body group and side: pelvis, torso, femur, tibia+talus,
calcn+toes) fitted jointly with the static pose by Levenberg-Marquardt on OpenSim's IK objective of
the static frame, started from OpenSim's measurement factors; then the same marker placement.

Compared:

1. the factors (mbjax's measurement factors equal OpenSim's applied scale set to its 6 digits);
2. the static frame before marker placement: OpenSim's scaled-only model after IK vs mbjax's fit
   (marker RMS, unweighted and with the setup's weights, the quantity both minimise);
3. held out: IK of the walking trial (``subject01_Setup_IK.xml``: 0.4-1.6 s, its weights and tasks)
   with OpenSim's final ``subject01_simbody.osim`` (the pipeline's reference, an older OpenSim), with
   the final model of OpenSim 4.6's own ScaleTool run on the same setup (when ``opensim`` is
   installed) and with mbjax's final model (scaled + markers placed), all by
   :func:`mbjax.inverse_kinematics` (validated against OpenSim's IK), and by OpenSim's own
   InverseKinematicsTool for the reference and mbjax's written model.

    .venv/bin/python experiments/scale_gait2354.py [--out DIR] [--stride K]

Writes ``scale.png`` (factors; per-marker static errors; walking IK RMS per frame), ``factors.csv``,
``static_marker_errors.csv``, and ``subject01_mbjax.osim`` (:func:`mbjax.io.write_osim`).
"""

from __future__ import annotations

import argparse
import csv
import os
import time
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import mbjax  # noqa: E402
import mbjax.models as mm  # noqa: E402
from mbjax.analysis import identify as idf  # noqa: E402
from mbjax.analysis.ik import inverse_kinematics  # noqa: E402
from mbjax.opensim.tools.ik import read_ik_setup  # noqa: E402
from mbjax.io import load_marker_set, load_markers, load_osim, read_scale_setup, read_trc, write_osim  # noqa: E402
from mbjax.io.storage import MarkerData  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "scale_gait2354")
PIPE = mm.pipeline_path("gait2354_walk")
#: one factor per group (OpenSim's measurements, left and right apart)
GROUPS = {"pelvis": ("pelvis",), "torso": ("torso",), "femur_r": ("femur_r",), "femur_l": ("femur_l",),
          "shank_r": ("tibia_r", "talus_r"), "shank_l": ("tibia_l", "talus_l"),
          "foot_r": ("calcn_r", "toes_r"), "foot_l": ("calcn_l", "toes_l")}


def opensim_factors(model, markers, setup):
    """OpenSim's ModelScaler factors (measurements, then manual scales, as the setup orders them)."""
    data = read_trc(setup.scaler_marker_file)
    out = {}
    for step in setup.scaling_order:
        if step == "measurements":
            for m in setup.measurements:
                f = idf.measurement_factor(model, markers, data, m.pairs, setup.scaler_time_range, name=m.name)
                out.update({b: f for b in m.bodies})
        elif step == "manualScale":
            out.update(setup.manual)
    return {k: v for k, v in out.items() if k in model.body_names}


def applied_factors():
    import re

    txt = open(f"{PIPE}/reference/subject01_scaleSet_applied.xml").read()
    return {seg: float(sc.split()[0]) for sc, seg in re.findall(r"<scales>(.*?)</scales>\s*<segment>(.*?)</segment>", txt)}


def weighted_rms(err, w):
    return float(np.sqrt(np.sum(w * err**2) / np.sum(w)))


def run(stride: int = 1, progress: bool = True):
    """Everything the experiment reports (a dict), without plotting or writing."""
    setup = read_scale_setup(f"{PIPE}/subject01_Setup_Scale.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generic = mm.load("gait2354")
        final_opensim = load_osim(f"{PIPE}/subject01_simbody.osim")
    markers, fixed = load_marker_set(f"{PIPE}/gait2354_Scale_MarkerSet.xml", generic)
    static = read_trc(setup.placer_marker_file)
    os_factors = opensim_factors(generic, markers, setup)
    applied = applied_factors()
    six = all(float(f"{v:.6g}") == applied[k] for k, v in os_factors.items())
    if progress:
        print(f"OpenSim's measurement factors recomputed by mbjax, equal to subject01_scaleSet_applied.xml's "
              f"6 digits: {six}")
    t0 = time.perf_counter()
    res = idf.fit_static_scale(generic, markers, static, GROUPS, weights=setup.marker_weights,
                               coordinate_tasks=setup.coordinate_tasks, time_range=setup.placer_time_range,
                               mass=setup.mass, factors0={g: os_factors[b[0]] for g, b in GROUPS.items()},
                               progress=False)
    fit_s = time.perf_counter() - t0
    ident = idf.identifiability(res.tree, res.objective, lambda t: t.log_s)
    # OpenSim's scaled-only model, IK of the same static frame
    scaled_os = idf.scale_model(generic, os_factors, mass=setup.mass)
    markers_os = idf.scale_markers(generic, markers, os_factors)
    frame = MarkerData(np.zeros(1), res.marker_names, res.measured[None])
    ik_os = inverse_kinematics(scaled_os, markers_os, frame, weights=setup.marker_weights,
                               coordinate_tasks=setup.coordinate_tasks, progress=False)
    w = np.array([setup.marker_weights[n] for n in res.marker_names])
    err_os = ik_os.marker_errors[0]
    # marker placement (all markers of the scale set are non-fixed), then the held-out walking trial
    movable = [n for n, f in zip(markers.names, fixed) if not f]
    placed = idf.place_markers(res.scaled, res.markers, res.q, res.measured, res.marker_names, movable)
    ik_setup = read_ik_setup(f"{PIPE}/subject01_Setup_IK.xml")
    walk = read_trc(ik_setup.marker_file)
    i0, i1 = idf.scaling.frame_range(walk.time, *ik_setup.time_range)
    sel = np.arange(i0, i1 + 1)[::stride]
    walk = walk._replace(time=walk.time[sel], positions=walk.positions[sel])
    finals = [("OpenSim", final_opensim, load_markers(f"{PIPE}/subject01_simbody.osim", final_opensim))]
    tool46 = opensim_scale_tool()
    if tool46 is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m46 = load_osim(tool46)
        finals.append(("OpenSim 4.6", m46, load_markers(tool46, m46)))
    finals.append(("mbjax", res.scaled, placed))
    walk_ik = {}
    for label, model, mk in finals:
        t = time.perf_counter()
        walk_ik[label] = inverse_kinematics(model, mk, walk, weights=ik_setup.marker_weights,
                                            coordinate_tasks=ik_setup.coordinate_tasks, progress=False)
        if progress:
            r = walk_ik[label].rms
            print(f"walking IK ({len(sel)} frames) with {label}'s final model: marker RMS mean {1e3 * r.mean():.2f} mm, "
                  f"max {1e3 * r.max():.2f} mm ({time.perf_counter() - t:.1f} s)")
    # the static frame after marker placement, both final models (IK with the MarkerPlacer's tasks)
    static_final = {}
    for label, model, mk in finals:
        static_final[label] = inverse_kinematics(model, mk, frame, weights=setup.marker_weights,
                                                 coordinate_tasks=setup.coordinate_tasks, progress=False).rms[0]
    return dict(setup=setup, generic=generic, markers=markers, placed=placed, res=res, fit_s=fit_s, ident=ident,
                os_factors=os_factors, applied=applied, six_digits=six, ik_os=ik_os, err_os=err_os, w=w,
                walk_ik=walk_ik, static_final=static_final)


def opensim_scale_tool():
    """OpenSim 4.6's own ScaleTool on the pipeline's setup (in a temporary folder): the path of its
    final (scaled, markers placed) model, or None without opensim."""
    try:
        import opensim as osim
    except ImportError:
        return None
    import shutil
    import tempfile

    out = tempfile.mkdtemp(prefix="scale_tool_")
    for f in ("subject01_Setup_Scale.xml", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc"):
        shutil.copy(os.path.join(PIPE, f), out)
    shutil.copy(mm.model_path("gait2354"), out)
    if not osim.ScaleTool(os.path.join(out, "subject01_Setup_Scale.xml")).run():
        raise RuntimeError("OpenSim's ScaleTool failed")
    return os.path.join(out, "subject01_simbody.osim")


def opensim_walking_ik(models: dict, out: str) -> dict:
    """OpenSim's own InverseKinematicsTool (the pipeline's IK setup) on each ``.osim`` of ``models``
    (label -> path): the per-frame marker RMS it reports (``report_errors``), or {} without opensim."""
    try:
        import opensim as osim
    except ImportError:
        return {}
    from mbjax.io import read_storage

    rms = {}
    for label, path in models.items():
        where = os.path.join(out, f"opensim_ik_{label}")
        os.makedirs(where, exist_ok=True)
        tool = osim.InverseKinematicsTool(f"{PIPE}/subject01_Setup_IK.xml")
        model = osim.Model(path)
        model.initSystem()
        tool.setModel(model)
        tool.setMarkerDataFileName(f"{PIPE}/subject01_walk1.trc")
        tool.setResultsDir(where)
        tool.setOutputMotionFileName(os.path.join(where, "ik.mot"))
        tool.set_report_errors(True)
        tool.run()
        rms[label] = read_storage(os.path.join(where, "subject01_ik_marker_errors.sto")).column("marker_error_RMS")
    return rms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--stride", type=int, default=1, help="use every K-th walking frame")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    r = run(args.stride)
    res, w = r["res"], r["w"]
    print(f"fit: {res.report} ({r['fit_s']:.1f} s with the start IK)")
    print(f"identifiability of the {len(GROUPS)} log-factors: rank {r['ident'].rank}, singular values "
          f"{r['ident'].singular_values.max():.3g} … {r['ident'].singular_values.min():.3g}; unidentifiable: "
          f"{r['ident'].unidentifiable or 'none'}")
    print(f"{'body':<10}{'OpenSim':>10}{'mbjax':>10}{'± SE':>8}")
    se = dict(zip(GROUPS, r["ident"].standard_errors))
    rows = []
    for g, bodies in GROUPS.items():
        for b in bodies:
            f_os, f_mb = r["os_factors"][b], res.factors[b]
            print(f"{b:<10}{f_os:10.5f}{f_mb:10.5f}{f_mb * se[g]:8.4f}")
            rows.append([b, g, f_os, r["applied"][b], f_mb, f_mb * se[g]])
    print("static frame before marker placement (the objective both minimise):")
    print(f"  OpenSim scaled-only + IK: RMS {1e3 * r['ik_os'].rms[0]:.2f} mm, weighted {1e3 * weighted_rms(r['err_os'], w):.2f} mm")
    print(f"  mbjax fitted factors + pose: RMS {1e3 * res.rms:.2f} mm, weighted {1e3 * weighted_rms(res.errors, w):.2f} mm")
    walk = r["walk_ik"]
    print("held-out walking IK marker RMS (mean over frames): "
          + ", ".join(f"{k} {1e3 * v.rms.mean():.2f} mm" for k, v in walk.items()))
    with open(os.path.join(args.out, "factors.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["body", "group", "opensim_measurement", "opensim_applied_file", "mbjax_fitted", "mbjax_se"])
        out.writerows(rows)
    with open(os.path.join(args.out, "static_marker_errors.csv"), "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["marker", "weight", "opensim_scaled_only_ik_m", "mbjax_fit_m"])
        out.writerows([[n, wi, a, b] for n, wi, a, b in zip(res.marker_names, w, r["err_os"], res.errors)])
    print("static frame after marker placement, IK marker RMS: "
          + ", ".join(f"{k} {1e3 * v:.3f} mm" for k, v in r["static_final"].items()))
    path = write_osim(res.scaled, os.path.join(args.out, "subject01_mbjax.osim"), markers=r["placed"])
    print(f"wrote {path}")
    theirs = opensim_walking_ik({"OpenSim": f"{PIPE}/subject01_simbody.osim", "mbjax": path}, args.out)
    for label, v in theirs.items():
        print(f"OpenSim's own IK tool, walking trial, {label}'s final model: marker RMS mean {1e3 * v.mean():.2f} mm, "
              f"max {1e3 * v.max():.2f} mm")
    _plot(args, r, rows)


def _plot(args, r, rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res, w = r["res"], r["w"]
    fig, ax = plt.subplots(1, 3, figsize=(18, 5), gridspec_kw=dict(width_ratios=[1, 2, 1.2]))
    x = np.arange(len(rows))
    ax[0].bar(x - 0.2, [row[2] for row in rows], 0.4, label="OpenSim (marker pairs, manual femur/tibia)")
    ax[0].bar(x + 0.2, [row[4] for row in rows], 0.4, yerr=[3 * row[5] for row in rows], capsize=2,
              label="mbjax (fitted, ± 3 SE)")
    ax[0].set_xticks(x, [row[0] for row in rows], rotation=90)
    ax[0].set(ylim=(0.8, 1.3), ylabel="scale factor", title="per-body scale factors")
    ax[0].legend(fontsize=8)
    k = np.arange(len(res.marker_names))
    ax[1].bar(k - 0.2, 1e3 * r["err_os"], 0.4, label=f"OpenSim scaled-only + IK (RMS {1e3 * r['ik_os'].rms[0]:.1f} mm)")
    ax[1].bar(k + 0.2, 1e3 * res.errors, 0.4, label=f"mbjax fit (RMS {1e3 * res.rms:.1f} mm)")
    ax[1].set_xticks(k, [f"{n}{'*' if wi > 1 else ''}" for n, wi in zip(res.marker_names, w)], rotation=90, fontsize=7)
    ax[1].set(ylabel="marker error (mm)", title="static frame before marker placement (* weight 1000)")
    ax[1].legend(fontsize=8)
    for label, ik in r["walk_ik"].items():
        ax[2].plot(ik.time, 1e3 * ik.rms, label=f"{label} final model (mean {1e3 * ik.rms.mean():.2f} mm)")
    ax[2].set(xlabel="time (s)", ylabel="marker RMS (mm)", title="held out: walking trial IK")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "scale.png"), dpi=120)
    print(f"wrote {args.out}/scale.png, factors.csv, static_marker_errors.csv")


if __name__ == "__main__":
    main()
