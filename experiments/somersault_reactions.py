"""Hip, knee and ankle reactions during a synthetic back somersault (Blajer & Czaplicki Fig. 2).

The measured somersault of the paper is not available (ERRATA): a smooth synthetic motion of the
seven-segment planar human (de Leva 1996 anthropometry, 70 kg) is used: 0.4 s of support on the
trampoline bed with R_y = A cos²(πt/0.8 s) (peak ≈ 5 body weights, take-off speed 6 m/s) and
R_x from a small backward drift, then flight with R = 0 and a ballistic centre of mass while the
body rotates backward through 2π in a pike.  Reactions λ1..λ6 (force the leg exerts on the
proximal segment, the paper's sign) come from Eq. 2.10 in its O(n) form (``mbjax.joint_reactions``
on the equivalent 3-D model, vmapped over frames), and are cross-checked at every frame against
the analytic Eq. 3.3 and against the dense Eq. 2.10 oracle (D, E by jacfwd over augmented
coordinates, ``mbjax.reactions.joint_reactions_dense``).

    .venv/bin/python experiments/somersault_reactions.py [--quick]

Writes ``outputs/somersault_reactions/{reactions.csv, reactions.png}``.
"""

from __future__ import annotations

import argparse
import os

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mbjax import reactions as rx  # noqa: E402
from mbjax.models import planar_human as ph  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "somersault_reactions")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer frames")
    args = parser.parse_args()
    n_frames = 81 if args.quick else 401
    chunk = 81 if args.quick else 100
    os.makedirs(OUT, exist_ok=True)

    par = ph.default_parameters()
    model = ph.planar_human(par)
    spec = ph.spec((0, 1, 2))  # hip, knee, ankle: children thigh, shank, foot

    def frame(t):
        q, qd, qdd, force = ph.somersault(par, t)
        lam = ph.reactions_resolved(par, q, qd, qdd, force)  # mbjax.joint_reactions, O(n)
        lam33 = ph.reactions_eq33(par, q, qd, qdd, force)
        out = rx.joint_reactions_dense(model, q, qd, qdd, spec, ph.loads(par, force))
        lam_dense = -out.force[:, :2].reshape(-1)
        return force, lam, lam33, lam_dense

    batched = jax.jit(jax.vmap(frame))
    times = np.linspace(0.0, ph.DURATION, n_frames)
    results = []
    for start in tqdm(range(0, n_frames, chunk), desc="frames", unit="chunk"):
        results.append(jax.device_get(batched(jnp.asarray(times[start : start + chunk]))))
    force, lam, lam33, lam_model = (np.concatenate([r[k] for r in results]) for k in range(4))

    scale = float(np.max(np.abs(lam)))
    err33 = float(np.max(np.abs(lam - lam33))) / scale
    err_model = float(np.max(np.abs(lam - lam_model))) / scale

    header = "t,R_x,R_y,hip_x,hip_y,knee_x,knee_y,ankle_x,ankle_y"
    np.savetxt(os.path.join(OUT, "reactions.csv"), np.column_stack([times, force, lam]), delimiter=",",
               header=header, comments="")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    weight = float(jnp.sum(par.mass)) * par.gravity
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    names = ("hip (λ1, λ2)", "knee (λ3, λ4)", "ankle (λ5, λ6)")
    for k, (name, style) in enumerate(zip(names, ("-", "--", ":"))):
        axes[0].plot(times, lam[:, 2 * k] / weight, style, label=name)
        axes[1].plot(times, lam[:, 2 * k + 1] / weight, style, label=name)
    for ax, label in zip(axes, ("horizontal reaction [BW]", "vertical reaction [BW]")):
        ax.axvspan(0.0, ph.SUPPORT_TIME, color="0.9", zorder=0)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].plot(times, force[:, 1] / weight, color="0.5", lw=0.8, label="trampoline R_y")
    axes[1].legend(loc="upper right")
    axes[1].set_xlabel("time [s] (support phase shaded)")
    axes[0].set_title("Leg joint reactions, synthetic back somersault\n(Blajer & Czaplicki 2005, Fig. 2 style)")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "reactions.png"), dpi=130)

    support = times < ph.SUPPORT_TIME
    peak = {j: float(np.max(lam[support, 2 * k + 1])) / weight for k, j in enumerate(("hip", "knee", "ankle"))}
    flight = ~support
    print(f"frames: {n_frames}; body weight {weight:.1f} N")
    print(f"peak R_y during support: {float(np.max(force[:, 1])) / weight:.2f} BW")
    print("peak vertical reaction in support [BW]: "
          + ", ".join(f"{j} {v:.2f}" for j, v in peak.items()))
    print(f"drop ankle -> hip in support: {peak['ankle'] - peak['hip']:.2f} BW "
          f"({100 * (1 - peak['hip'] / peak['ankle']):.0f} %)   paper: 'a significant drop of the "
          "vertical reaction from the ankle to hip level' during 0-0.4 s (Fig. 2, no numbers given)")
    print(f"max |reaction| in flight: {float(np.max(np.abs(lam[flight]))) / weight:.2f} BW "
          "(paper: joints most loaded in the support phase)")
    print(f"Eq. 2.10 (mbjax.joint_reactions) vs analytic Eq. 3.3: max rel. diff {err33:.1e}; vs the dense "
          f"jacfwd Eq. 2.10 oracle: {err_model:.1e}")
    print(f"wrote {os.path.relpath(OUT)}/reactions.csv and reactions.png")


if __name__ == "__main__":
    main()
