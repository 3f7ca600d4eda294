"""Path functions (:func:`mbjax.fit_path_functions`): fit quality, and lengths / moment arms through
the fitted polynomials vs the exact paths vs OpenSim's ``getLength`` / ``computeMomentArm`` loop.

Run: ``.venv/bin/python benchmarks/bench_path_functions.py [--model arm26|NAME|FILE.osim] [--samples N]
[--poses P] [--osim-poses K] [--repeats R] [--quick] [--device cpu|gpu] [--float32]``

1. ``fitted, report = mbjax.fit_path_functions(model, n_samples=N)``: wall time (exact sweep incl. its
   compile, then the least-squares fits), the report's per-path table (errors on its own test poses)
   and a summary (paths meeting the tolerance, worst length RMS / max, moment-arm RMS / max).
2. P held-out poses: a Latin hypercube over the same coordinate ranges with another seed.
   ``jax.jit(jax.vmap(f, in_axes=(None, 0)))`` for f = ``mbjax.moment_arms`` and ``mbjax.muscle_lengths``
   on the fitted model and on the exact one, each compiled by its first call (the "first call s"
   column: trace + compile + run), then timed in interleaved rounds (:func:`_timing.interleaved`:
   best and median, so a change of machine load shows in all routes alike).
3. OpenSim 4.6 in the same run on the first K of those poses: the model's ``.osim`` file, per pose
   ``Coordinate.setValue`` of mbjax's independent coordinates (``model.coordinate_names``),
   ``assemble`` where the file has constraints (couplers move the dependent coordinates),
   ``realizePosition``, then every path's ``getLength`` and ``computeMomentArm(state, c)`` for every
   coordinate c: the loop OpenSim users run.  µs per pose and the ratios OpenSim / fitted,
   OpenSim / exact, exact / fitted.
4. max |fitted − exact| length and moment arm on the P poses (and max |OpenSim − exact| as a check of
   the exact reference); per-path errors go to ``benchmarks/out/path_functions_<model>.csv``.
5. For paths that miss the tolerance (at most ``--diagnose`` of them, worst first): 1-D sweeps of the
   exact path through the held-out pose where the fitted length is worst, one per spanned coordinate
   (P points over its range, re-using the compiled exact programs): the largest length jump not
   explained by the moment arms (|ΔL + ½(r_i + r_{i+1})Δq|; a smooth path gives ~Δq³, a conditional
   path point or a wrap that switches gives a step) and the largest moment-arm step between
   neighbouring points (a kink: a wrap engaging, a via point switching).
"""

from __future__ import annotations

import csv
import os
import time
import warnings

import numpy as np

from _timing import device_setup, interleaved  # sets the platform before jax starts

ARGS = device_setup(
    description=__doc__.splitlines()[0],
    extra=lambda ap: (
        ap.add_argument("--model", default="arm26",
                        help="a model shipped with mbjax (mbjax.models.load(NAME), default arm26) or an .osim file"),
        ap.add_argument("--samples", type=int, default=None, help="fit_path_functions n_samples (default 2000)"),
        ap.add_argument("--poses", type=int, default=None, help="held-out poses timed and compared (default 256)"),
        ap.add_argument("--osim-poses", type=int, default=None, help="poses OpenSim loops over (default: all --poses)"),
        ap.add_argument("--repeats", type=int, default=None, help="interleaved timing rounds (default 10)"),
        ap.add_argument("--seed", type=int, default=1, help="seed of the held-out poses (the fit uses 0)"),
        ap.add_argument("--diagnose", type=int, default=6,
                        help="at most this many missed paths get 1-D jump/kink sweeps (0: none)"),
        ap.add_argument("--csv", default=None, help="per-path CSV (default benchmarks/out/path_functions_<model>.csv)"),
    ),
)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.muscles.path_fitting import _coordinate_ranges, _latin_hypercube  # noqa: E402
from mbjax.muscles.path_functions import with_path_functions  # noqa: E402
from mbjax.muscles.paths import get_paths  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load_model(spec):
    """``(model, osim_file, label, load_s)`` for a shipped name or an .osim path."""
    t0 = time.perf_counter()
    if os.path.isfile(spec):
        model, path = load_osim(spec), spec
        label = os.path.splitext(os.path.basename(spec))[0]
    else:
        model, path, label = mbjax.models.load(spec), mbjax.models.model_path(spec), spec
    return model, path, label, time.perf_counter() - t0


def opensim_loop(path, coord_names, path_names, qs):
    """OpenSim's lengths ``(K, nm)``, moment arms ``(K, nq, nm)``, per-pose seconds, load+init seconds
    and a note; None if OpenSim is not installed."""
    try:
        import opensim as osim
    except ImportError:
        return None
    osim.Logger.setLevelString("error")
    t0 = time.perf_counter()
    om = osim.Model(path)
    state = om.initSystem()
    init_s = time.perf_counter() - t0
    cs = om.getCoordinateSet()
    coords = [cs.get(n) for n in coord_names]
    fs = om.getForceSet()
    forces, missing = [], []
    for n in path_names:
        pa = osim.PathActuator.safeDownCast(fs.get(n)) if fs.contains(n) else None
        (forces.append((n, pa)) if pa is not None else missing.append(n))
    constraints = om.getConstraintSet()
    constrained = any(constraints.get(i).isEnforced(state) for i in range(constraints.getSize()))
    nq, nm = len(coords), len(path_names)
    lengths = np.full((len(qs), nm), np.nan)
    arms = np.full((len(qs), nq, nm), np.nan)
    cols = [path_names.index(n) for n, _ in forces]
    per_pose = []
    for i, q in enumerate(qs):
        t = time.perf_counter()
        for c, v in zip(coords, q):
            c.setValue(state, float(v), False)
        if constrained:
            om.assemble(state)  # the couplers' dependent coordinates follow, as OpenSim users do
        om.realizePosition(state)
        for k, (_, f) in zip(cols, forces):
            lengths[i, k] = f.getLength(state)
            for j, c in enumerate(coords):
                arms[i, j, k] = f.computeMomentArm(state, c)
        per_pose.append(time.perf_counter() - t)
    note = (f"{'setValue + assemble' if constrained else 'setValue'} + realizePosition + {len(forces)} getLength "
            f"+ {len(forces)}x{nq} computeMomentArm per pose")
    if missing:
        note += f"; not PathActuators in OpenSim, left out: {missing}"
    by_name = dict(forces)

    def length_at(q, name):
        """OpenSim's length of path ``name`` at pose ``q`` (for a central difference)."""
        for c, v in zip(coords, q):
            c.setValue(state, float(v), False)
        if constrained:
            om.assemble(state)
        om.realizePosition(state)
        return by_name[name].getLength(state)

    return lengths, arms, np.asarray(per_pose), init_s, note, length_at


def summary(report):
    fits = report.fits
    met = sum(f.meets_tolerance for f in fits)
    tol = report.tolerance
    out = [f"{met}/{len(fits)} paths meet the tolerance (length RMS {1e3 * tol.length_rms:g} mm, max "
           f"{1e3 * tol.length_max:g} mm, moment-arm RMS {1e3 * tol.moment_arm_rms:g} mm) on {report.n_test} test poses"]
    for label, key in (("length RMS", "length_rms"), ("length max", "length_max"),
                       ("moment-arm RMS", "moment_arm_rms"), ("moment-arm max", "moment_arm_max")):
        w = max(fits, key=lambda f: getattr(f, key))
        out.append(f"  worst {label:<15} {1e3 * getattr(w, key):9.4f} mm  ({w.muscle})")
    orders = np.array([f.order for f in fits])
    terms = np.array([f.coefficients.size for f in fits])
    dims = np.array([len(f.coordinates) for f in fits])
    out.append(f"  spanned coordinates {dims.min()}..{dims.max()} (mean {dims.mean():.1f}); order {orders.min()}..{orders.max()} "
               f"(mean {orders.mean():.1f}); terms per path {terms.min()}..{terms.max()}, {terms.sum()} in all")
    return "\n".join(out)


def jump_sweeps(report, names, coord_names, lower, upper, qs, err_len, ma_exact, ml_exact, limit):
    """1-D sweeps of the exact paths of the missed paths (see the module docstring, item 5)."""
    missed = [f for f in report.fits if not f.meets_tolerance]
    if not missed or limit <= 0:
        return []
    tol = report.tolerance
    missed.sort(key=lambda f: -max(f.length_rms / tol.length_rms, f.length_max / tol.length_max,
                                   f.moment_arm_rms / tol.moment_arm_rms))
    n = qs.shape[0]
    rows = []
    t0 = time.perf_counter()
    for f in missed[:limit]:
        k = names.index(f.muscle)
        base = qs[int(np.argmax(err_len[:, k]))]
        for cname in f.coordinates:
            j = coord_names.index(cname)
            sweep = np.tile(base, (n, 1))
            sweep[:, j] = np.linspace(lower[j], upper[j], n)
            sj = jnp.asarray(sweep)
            L = np.asarray(ml_exact(sj))[:, k]
            r = np.asarray(ma_exact(sj))[:, j, k]
            dq = np.diff(sweep[:, j])
            defect = np.diff(L) + 0.5 * (r[1:] + r[:-1]) * dq
            step = np.abs(np.diff(r))
            i, s = int(np.argmax(np.abs(defect))), int(np.argmax(step))
            rows.append((f.muscle, cname, float(np.abs(defect[i])), float(sweep[i, j]), float(sweep[i + 1, j]),
                         float(step[s]), float(sweep[s, j]), float(np.median(step)), float(dq[0])))
    print(f"1-D sweeps of the exact paths ({n} points per coordinate, through the held-out pose where the fitted "
          f"length is worst; {time.perf_counter() - t0:.1f} s):")
    print(f"  {'path':<16}{'coordinate':<22}{'jump mm':>9}  {'at q in':<19}{'r step mm':>10}{'at q':>8}"
          f"{'median r step':>14}")
    for m, c, jmp, a, b, st, at, med, _ in rows:
        print(f"  {m:<16}{c:<22}{1e3 * jmp:9.4f}  [{a:7.3f},{b:7.3f}]  {1e3 * st:10.4f}{at:8.3f}{1e3 * med:14.4f}")
    print("  (jump: |ΔL + ½(r_i + r_{i+1})Δq| between neighbouring points, ~0 for a smooth path; r step: largest "
          "|Δr| between neighbours, vs the median one: a kink where it stands far above)")
    return rows


def main():
    n_samples = ARGS.samples or (500 if ARGS.quick else 2000)
    n_poses = ARGS.poses or (64 if ARGS.quick else 256)
    n_osim = min(ARGS.osim_poses or n_poses, n_poses)
    rounds = ARGS.repeats or (3 if ARGS.quick else 10)
    dtype = np.float32 if ARGS.float32 else np.float64

    model, osim_file, label, load_s = load_model(ARGS.model)
    exact = with_path_functions(model, None)
    names = list(get_paths(model).names)
    coord_names = list(model.coordinate_names)
    nq, nm = len(coord_names), len(names)
    print(f"path functions on {jax.devices()[0].platform} ({jax.devices()[0].device_kind}), {np.dtype(dtype).name}: "
          f"{label}, {nm} paths x {nq} coordinates (load {load_s:.1f} s)")

    # 1. the fit
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the report names the missed paths
        fitted, report = mbjax.fit_path_functions(model, n_samples=n_samples, progress=False)
    fit_wall = time.perf_counter() - t0
    print(f"\nfit_path_functions(n_samples={n_samples}): {fit_wall:.1f} s wall (exact sweep incl. compile "
          f"{report.sample_seconds:.1f} s, least squares {report.fit_seconds:.1f} s)")
    print(report)
    print(summary(report))

    # 2. held-out poses, mbjax routes
    lower, upper = _coordinate_ranges(model, None)
    qs = _latin_hypercube(n_poses, lower, upper, np.random.default_rng(ARGS.seed)).astype(dtype)
    qj = jnp.asarray(qs)
    ma = jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))
    ml = jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))
    ma_fit, ml_fit = (lambda q: ma(fitted, q)), (lambda q: ml(fitted, q))
    ma_exact, ml_exact = (lambda q: ma(exact, q)), (lambda q: ml(exact, q))
    print(f"\n{n_poses} held-out poses (Latin hypercube, seed {ARGS.seed}); jit(vmap(f)), {rounds} interleaved rounds")
    res = interleaved({"fitted moment_arms": (ma_fit, qj), "fitted muscle_lengths": (ml_fit, qj),
                       "exact moment_arms": (ma_exact, qj), "exact muscle_lengths": (ml_exact, qj)}, rounds=rounds)
    us = {k: 1e6 * v[1] / n_poses for k, v in res.items()}

    # 3. OpenSim on the same poses
    os_res = opensim_loop(osim_file, coord_names, names, qs[:n_osim].astype(np.float64))
    print(f"{'route':<44}{'first call s':>13}{'best µs/pose':>14}{'median µs/pose':>16}")
    for k, (first, best, med) in res.items():
        print(f"{'jit(vmap(' + k.split()[1] + ')), ' + k.split()[0]:<44}{first:>13.2f}{1e6 * best / n_poses:>14.2f}"
              f"{1e6 * med / n_poses:>16.2f}")
    t_os = None
    if os_res is not None:
        L_os, R_os, per_pose, init_s, note, os_length_at = os_res
        t_os = 1e6 * float(np.mean(per_pose))
        print(f"{'OpenSim getLength + computeMomentArm loop':<44}{init_s:>13.2f}{1e6 * per_pose.min():>14.0f}"
              f"{1e6 * np.median(per_pose):>16.0f}   (mean {t_os:.0f} µs/pose over {n_osim} poses; first call = "
              f"Model + initSystem)")
        print(f"  OpenSim: {note}")
    else:
        print("OpenSim not installed: no OpenSim timing")

    def both(kind):
        a, b = f"{kind} moment_arms", f"{kind} muscle_lengths"
        return us[a] + us[b] if a in us and b in us else float("nan")

    print("\nratios (best µs/pose; OpenSim: mean µs/pose of lengths + all moment arms):")
    for f in ("moment_arms", "muscle_lengths"):
        if f"fitted {f}" in us and f"exact {f}" in us:
            print(f"  {f:<16} exact / fitted = {us[f'exact {f}'] / us[f'fitted {f}']:10.1f}")
    print(f"  {'lengths + arms':<16} exact / fitted = {both('exact') / both('fitted'):10.1f}")
    if t_os is not None:
        print(f"  {'lengths + arms':<16} OpenSim / fitted = {t_os / both('fitted'):10.0f}    "
              f"OpenSim / exact = {t_os / both('exact'):8.1f}")
        if "fitted moment_arms" in us:
            print(f"  {'moment_arms':<16} OpenSim / fitted = {t_os / us['fitted moment_arms']:10.0f}    "
                  f"OpenSim / exact = {t_os / us['exact moment_arms']:8.1f}   (OpenSim's loop includes its lengths)")

    # 4. accuracy on the held-out poses
    L_fit, L_ex = np.asarray(ml_fit(qj), float), np.asarray(ml_exact(qj), float)
    R_fit, R_ex = np.asarray(ma_fit(qj), float), np.asarray(ma_exact(qj), float)
    err_len = np.abs(L_fit - L_ex)  # (P, nm)
    err_arm = np.abs(R_fit - R_ex)  # (P, nq, nm)
    kL = int(np.argmax(err_len.max(axis=0)))
    pj, jj, kk = np.unravel_index(int(np.argmax(err_arm)), err_arm.shape)
    print(f"\nheld-out accuracy ({n_poses} poses), fitted vs exact mbjax paths:")
    print(f"  max |ΔL| = {1e3 * err_len.max():.4f} mm ({names[kL]}); RMS over all paths {1e3 * np.sqrt(np.mean(err_len ** 2)):.4f} mm")
    print(f"  max |Δr| = {1e3 * err_arm.max():.4f} mm ({names[kk]} about {coord_names[jj]}); "
          f"RMS {1e3 * np.sqrt(np.mean(err_arm ** 2)):.4f} mm")
    if os_res is not None:
        dL = np.nanmax(np.abs(L_os - L_ex[:n_osim]))
        dR = np.nanmax(np.abs(R_os - R_ex[:n_osim]))
        print(f"  exact mbjax vs OpenSim on {n_osim} poses: max |ΔL| = {dL:.2e} m, max |Δr| = {dR:.2e} m")
        if dR > 1e-6:  # which one is -dL/dq where they differ most: a central difference of OpenSim's length
            p, j, k = np.unravel_index(int(np.nanargmax(np.abs(R_os - R_ex[:n_osim]))), R_os.shape)
            h = 1e-6
            qp, qm = qs[p].astype(np.float64), qs[p].astype(np.float64)
            qp[j] += h
            qm[j] -= h
            fd = -(os_length_at(qp, names[k]) - os_length_at(qm, names[k])) / (2 * h)
            print(f"    largest at {names[k]} about {coord_names[j]}, pose {p}: OpenSim computeMomentArm "
                  f"{1e3 * R_os[p, j, k]:.4f} mm, exact mbjax {1e3 * R_ex[p, j, k]:.4f} mm, "
                  f"-dL/dq by central difference of OpenSim's length {1e3 * fd:.4f} mm")
        dLf = np.nanmax(np.abs(L_os - L_fit[:n_osim]))
        dRf = np.nanmax(np.abs(R_os - R_fit[:n_osim]))
        print(f"  fitted vs OpenSim on {n_osim} poses:      max |ΔL| = {dLf:.2e} m, max |Δr| = {dRf:.2e} m")

    # 5. why paths miss
    sweeps = jump_sweeps(report, names, coord_names, lower, upper, qs, err_len, ma_exact, ml_exact, ARGS.diagnose)

    # CSV of the per-path errors
    out = ARGS.csv or os.path.join(HERE, "out", f"path_functions_{label}.csv")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    worst_jump = {}
    for m, c, jmp, *_rest in sweeps:
        if jmp > worst_jump.get(m, (-1.0, ""))[0]:
            worst_jump[m] = (jmp, c)
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["path", "coordinates", "order", "terms", "test_length_rms_m", "test_length_max_m",
                    "test_moment_arm_rms_m", "test_moment_arm_max_m", "meets_tolerance", "heldout_length_max_m",
                    "heldout_length_rms_m", "heldout_moment_arm_max_m", "heldout_moment_arm_rms_m",
                    "sweep_jump_max_m", "sweep_jump_coordinate"])
        for f in report.fits:
            k = names.index(f.muscle)
            jmp = worst_jump.get(f.muscle)
            w.writerow([f.muscle, " ".join(f.coordinates), f.order, f.coefficients.size, f"{f.length_rms:.6e}",
                        f"{f.length_max:.6e}", f"{f.moment_arm_rms:.6e}", f"{f.moment_arm_max:.6e}",
                        int(f.meets_tolerance), f"{err_len[:, k].max():.6e}",
                        f"{np.sqrt(np.mean(err_len[:, k] ** 2)):.6e}", f"{err_arm[:, :, k].max():.6e}",
                        f"{np.sqrt(np.mean(err_arm[:, :, k] ** 2)):.6e}",
                        "" if jmp is None else f"{jmp[0]:.6e}", "" if jmp is None else jmp[1]])
    print(f"\nper-path errors: {os.path.relpath(out)}")


if __name__ == "__main__":
    main()
