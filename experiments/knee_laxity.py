"""Anterior drawer (laxity) sweep of the synthetic ACL as an mbjax force element.

Femur-tibia model built with ``mbjax.ModelBuilder``: the femur is fixed; the tibia hangs from the
ground by a 6-dof chain of zero-inertia bodies (3 prismatic tx, ty, tz along the femur's x anterior,
y medial, z proximal axes, then 3 revolute rx, ry, rz about the same axes through the tibial
plateau centre).  The ACL (TPSM-3 on 90 triangles, and the MBM on the same mesh for comparison)
acts between femur and tibia; its generalized force is ``Q = Jᵀ W`` (``body_jacobians``).  With the
other five coordinates held, the external anterior force needed to hold an anterior tibial
translation ``tx`` is ``-Q_tx``; the anterior stiffness ``K_tx,tx = -∂Q_tx/∂tx`` comes from
``jax.jacfwd`` and is checked against finite differences of the curve.  Repeated at three flexion
angles (``ry``, a simplified rotation about a fixed transverse axis; real knees roll and glide).

    .venv/bin/python experiments/knee_laxity.py [--quick]

Writes ``outputs/knee_laxity/{laxity.csv, laxity.png}``.
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

import mbjax  # noqa: E402
from mbjax.ligaments import (  # noqa: E402
    LigamentForce,
    discretize,
    gauss_rule,
    generalized_stiffness,
    ligament_generalized_forces,
    multibundle_fibres,
    synthetic_acl,
    triangulate,
)

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "knee_laxity")


def knee_model():
    """Fixed femur + 6-dof tibia (3 prismatic, 3 revolute, zero-inertia intermediate bodies)."""
    coords = ["tx", "ty", "tz", "rx", "ry", "rz"]
    b = mbjax.ModelBuilder(coords, gravity=[0, 0, -9.81])
    b.add_body("femur", parent="ground", joint="revolute", map=None, mass=9.0, inertia=[0.15, 0.15, 0.03])
    prev = "ground"
    chain = [
        ("tib_tx", "prismatic", [1, 0, 0], "tx"),
        ("tib_ty", "prismatic", [0, 1, 0], "ty"),
        ("tib_tz", "prismatic", [0, 0, 1], "tz"),
        ("tib_rx", "revolute", [1, 0, 0], "rx"),
        ("tib_ry", "revolute", [0, 1, 0], "ry"),
        ("tibia", "revolute", [0, 0, 1], "rz"),
    ]
    for name, joint, axis, c in chain:
        kw = dict(mass=3.5, com=[0, 0, -0.18], inertia=[0.05, 0.05, 0.005]) if name == "tibia" else {}
        b.add_body(name, parent=prev, joint=joint, axis=axis, map=c, **kw)
        prev = name
    return b.build()


def run(quick: bool):
    os.makedirs(OUT, exist_ok=True)
    model = knee_model()
    lig, _ = synthetic_acl(free_length=0.030)  # l0 = 30 mm: about half the fibres slack at extension
    mesh = triangulate(np.asarray(lig.domain), 90)
    elements = {
        "TPSM-3": LigamentForce.between(model, discretize(lig, mesh, gauss_rule(3)), "tibia", "femur"),
        "MBM": LigamentForce.between(model, multibundle_fibres(lig, mesh), "tibia", "femur"),
    }
    n = 21 if quick else 61
    tx = np.linspace(-0.002, 0.008, n)
    flexions = np.deg2rad([0.0, 15.0, 30.0])
    rows = []
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for name, el in elements.items():
        q_fn = jax.jit(jax.vmap(ligament_generalized_forces, in_axes=(None, 0, None)))
        k_fn = jax.jit(jax.vmap(generalized_stiffness, in_axes=(None, 0, None)))
        for flex in flexions:
            qs = np.zeros((n, 6))
            qs[:, 0] = tx
            qs[:, 4] = flex
            qs = jnp.asarray(qs)
            t0 = time.perf_counter()
            Q = np.asarray(q_fn(model, qs, el))
            K = np.asarray(k_fn(model, qs, el))
            dt = time.perf_counter() - t0
            force = -Q[:, 0]
            stiff = K[:, 0, 0]
            fd = np.gradient(force, tx)
            inner = slice(2, -2)
            rel = np.max(np.abs(fd[inner] - stiff[inner])) / np.max(np.abs(stiff))
            deg = np.rad2deg(flex)
            print(
                f"{name:7s} flexion {deg:4.0f} deg: anterior force at tx = 5 mm: {np.interp(0.005, tx, force):8.1f} N, "
                f"stiffness {np.interp(0.005, tx, stiff) / 1e3:7.1f} N/mm; jacfwd vs FD of the curve: max rel diff "
                f"{rel:.1e} (FD of a {n}-point grid); {n} poses Q+K in {dt * 1e3:.0f} ms (incl. compile)"
            )
            for i in range(n):
                rows.append(dict(model=name, flexion_deg=deg, tx_mm=tx[i] * 1e3, anterior_force_N=force[i], stiffness_N_per_mm=stiff[i] / 1e3))
            ls = "-" if name == "TPSM-3" else "--"
            ax[0].plot(tx * 1e3, force, ls, label=f"{name}, {deg:.0f}°")
            ax[1].plot(tx * 1e3, stiff / 1e3, ls, label=f"{name}, {deg:.0f}°")
    # a full 6x6 generalized stiffness at one pose (what an MBM user rarely gets cheaply)
    q0 = jnp.array([0.003, 0, 0, 0, 0, 0.0])
    K = np.asarray(generalized_stiffness(model, q0, elements["TPSM-3"]))
    print("\n6x6 generalized stiffness K = -dQ/dq at tx = 3 mm (TPSM-3; units N/m, N, N·m):")
    with np.printoptions(precision=3, suppress=False, linewidth=140):
        print(K)
    print(f"symmetry |K - Kᵀ| / |K| = {np.abs(K - K.T).max() / np.abs(K).max():.1e} (conservative elastic force)")
    ax[0].set_xlabel("anterior tibial translation (mm)")
    ax[0].set_ylabel("ACL anterior restraining force (N)")
    ax[1].set_xlabel("anterior tibial translation (mm)")
    ax[1].set_ylabel("K_tx,tx from jax.jacfwd (N/mm)")
    for a in ax:
        a.legend(fontsize=7)
        a.grid(alpha=0.3)
    fig.suptitle("Anterior drawer of the synthetic ACL (l0 = 30 mm, c = 100 MPa)")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "laxity.png"), dpi=120)
    with open(os.path.join(OUT, "laxity.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"outputs in {os.path.normpath(OUT)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    run(ap.parse_args().quick)
