"""Ligament wrench throughput (TPSM-1/3/4 vs MBM) and time to reach 5 % and 1 % error.

Synthetic ACL (``mbjax.ligaments.synthetic_acl``), l0 = 27 mm (partially slack), c = 100 MPa.
Throughput: ``jax.jit(jax.vmap(ligament_wrench))`` over a batch of femur poses, float64.  Error:
Eq. 16 on force and moment magnitudes (the larger of the two) against the adaptive reference.
Time to reach an error: the per-pose time of the coarsest mesh from which the error stays below
the threshold (MBM meshes are extended beyond 360 triangles until they get there).

    .venv/bin/python benchmarks/ligaments.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from _timing import timed  # noqa: E402
from mbjax.ligaments import (  # noqa: E402
    discretize,
    gauss_rule,
    ligament_wrench,
    multibundle_fibres,
    reference_wrench,
    synthetic_acl,
    triangulate,
)

METHODS = ("TPSM-1", "TPSM-3", "TPSM-4", "MBM")


def fibres_for(lig, mesh, method):
    if method == "MBM":
        return multibundle_fibres(lig, mesh)
    return discretize(lig, mesh, gauss_rule(int(method[-1])))


def throughput(fib, batch, repeats):
    rng = np.random.default_rng(0)
    poses = np.tile(np.eye(4), (batch, 1, 1))
    poses[:, :3, 3] += rng.normal(scale=2e-4, size=(batch, 3))
    poses = jnp.asarray(poses)
    f = jax.jit(jax.vmap(lambda pb: ligament_wrench(fib, jnp.eye(4), pb)))
    return batch / timed(f, poses, repeat=repeats)[1]  # evaluations per second


def main(quick: bool):
    batch, repeats = (256, 3) if quick else (256, 9)  # larger batches fall out of cache (measured)
    lig, _ = synthetic_acl(free_length=0.027)
    poly = np.asarray(lig.domain)
    eye = jnp.eye(4)
    t0 = time.perf_counter()
    ref, est, _ = reference_wrench(lig, triangulate(poly, 30), eye, eye, tol=1e-7 if quick else 1e-9)
    print(f"reference: |F| = {np.linalg.norm(ref[3:]):.4f} N, |M| = {np.linalg.norm(ref[:3]):.5f} N·m, "
          f"error estimate {est / np.linalg.norm(ref):.1e} relative ({time.perf_counter() - t0:.1f} s)")
    f_ref, m_ref = np.linalg.norm(ref[3:]), np.linalg.norm(ref[:3])
    sizes = [30, 60, 90, 180, 360]
    extra = [720, 1440] if quick else [720, 1440, 2880, 5760]
    table = {m: [] for m in METHODS}
    print(f"\nbatched wrench evaluations per second (vmap over {batch} poses, jit, float64, best of {repeats}):")
    print(f"{'triangles':>9} " + " ".join(f"{m:>22}" for m in METHODS))
    for n in sizes + extra:
        mesh = triangulate(poly, n)
        row = []
        for m in METHODS:
            if n in extra and m != "MBM":
                continue
            fib = fibres_for(lig, mesh, m)
            w = np.asarray(ligament_wrench(fib, eye, eye))
            err = 100 * max(abs(np.linalg.norm(w[3:]) - f_ref) / f_ref, abs(np.linalg.norm(w[:3]) - m_ref) / m_ref)
            eps = throughput(fib, batch, repeats)
            table[m].append((mesh.n_triangles, fib.n_fibres, eps, err))
            row.append(f"{eps / 1e6:7.3f} M/s ({fib.n_fibres:5d} fib, {err:6.2g}%)")
        print(f"{mesh.n_triangles:>9} " + " ".join(f"{r:>22}" for r in row))
    print("\ntime per evaluation to reach an error (coarsest mesh from which max(e_F, e_M) stays below):")
    for thr in (5.0, 1.0):
        res = {}
        for m in METHODS:
            rows = table[m]
            errs = np.array([r[3] for r in rows])
            ok = [i for i in range(len(rows)) if np.all(errs[i:] < thr)]
            res[m] = None if not ok else (rows[ok[0]][0], 1.0 / rows[ok[0]][2])
        parts = []
        for m in METHODS:
            parts.append(f"{m}: " + ("not reached" if res[m] is None else f"{res[m][1] * 1e9:.0f} ns ({res[m][0]} tri)"))
        print(f"  < {thr:g} %: " + "; ".join(parts))
        if res["MBM"] is not None:
            ratios = [f"MBM/{m} = {res['MBM'][1] / res[m][1]:.1f}x" for m in METHODS[:3] if res[m] is not None]
            print("           ratios: " + ", ".join(ratios))
        else:
            print(f"           MBM did not reach {thr:g} % up to {table['MBM'][-1][0]} triangles")
    print("paper (Matlab, single evaluations): MBM needs 2-3x the TPSM time at the same accuracy")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
