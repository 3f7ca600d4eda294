"""The de Groot & Brand shoulder rhythm recovered from noisy segment orientations.

Truth: the MoBL shoulder with de Groot & Brand (2001)'s rhythm (``shoulder_model("degroot_brand")``):
the clavicle and scapula angles are two-coordinate affine maps of the humerus elevation and plane
of elevation, f = a·shoulder_elv + b·elv_angle, five for the clavicle/scapula rotations and five
for MoBL's "unrot" phantom rotations (their negatives in the published model, so the humerus
orientation does not change with the rhythm).  Data: the ground orientations of clavicle, scapula
and humerus at N poses over elevation 0.1-2.2 rad and plane of elevation -0.3-1.6 rad (a
motion-capture sweep), each rotated by Gaussian noise of σ degrees about a random axis.
Fitted from the Holzbaur rhythm's slopes (no plane-of-elevation terms): all 20 coefficients (the
``slope`` leaf of the model's affine map family) by Levenberg-Marquardt on the orientation
residuals r = vee(skew(R_measᵀ R(q; θ))) (the rotation-vector error to first order), with
:func:`mbjax.analysis.identify.identifiability` for the rank, the singular values and standard errors.
The unrot coefficients are identified by the humerus orientation alone.  A noise-free run must
recover the truth to ≤ 1e-6 relative.

    .venv/bin/python experiments/identify_rhythm.py [--poses N] [--sigma DEG] [--out DIR]

Needs the MoBL model (``MBJAX_SHARED_DATA``, see the README's "Data").  Writes ``rhythm.png``
(true, start and fitted coefficients with standard errors; the scapula's upward rotation vs
elevation: data, start, fit) and ``coefficients.csv``.
"""

from __future__ import annotations

import argparse
import csv
import os

import jax

jax.config.update("jax_enable_x64", True)

import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import mbjax  # noqa: E402
from mbjax.analysis import identify as idf  # noqa: E402
from mbjax.maps.affine import Affine  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "outputs", "identify_rhythm")
BODIES = ("clavicle", "scapula", "humerus")


def affine_family(model) -> int:
    """Index of the model's affine map family (the rhythm's maps)."""
    idx = [k for k, f in enumerate(model.maps) if isinstance(f, Affine)]
    if len(idx) != 1:
        raise ValueError(f"expected one affine map family, found {len(idx)}")
    return idx[0]


def orientations(model, qs):
    """Ground rotations ``(N, 3, 3, 3)`` of clavicle, scapula and humerus at poses ``qs (N, 3)``."""
    idx = np.asarray([model.body_index(b) for b in BODIES])
    return jax.vmap(lambda q: mbjax.body_poses(model, q)[idx, :3, :3])(qs)


class OrientationResiduals(eqx.Module):
    """r = vee(skew(R_measᵀ R(q; θ))) per body and pose: the rotation error to first order."""

    qs: jnp.ndarray
    measured: jnp.ndarray  # (N, 3, 3, 3)

    def __call__(self, model):
        R = orientations(model, self.qs)
        E = jnp.einsum("nbji,nbjk->nbik", self.measured, R)
        return 0.5 * jnp.stack([E[..., 2, 1] - E[..., 1, 2], E[..., 0, 2] - E[..., 2, 0],
                                E[..., 1, 0] - E[..., 0, 1]], -1).reshape(-1)


def sweep(n, seed=0):
    """Poses over the motion-capture range: (elv_angle, shoulder_elv, shoulder_rot)."""
    rng = np.random.default_rng(seed)
    return jnp.asarray(np.stack([rng.uniform(-0.3, 1.6, n), rng.uniform(0.1, 2.2, n), rng.uniform(-0.5, 0.5, n)], 1))


def noisy(R, sigma_deg, seed=1):
    """Each rotation turned by a random axis-angle of σ degrees per component."""
    rng = np.random.default_rng(seed)
    w = np.radians(sigma_deg) * rng.normal(size=R.shape[:-2] + (3,))
    th = np.linalg.norm(w, axis=-1, keepdims=True)[..., None]
    K = np.zeros(R.shape)
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    K = K - np.swapaxes(K, -1, -2)
    Kn = K / np.where(th > 0, th, 1.0)
    noise = np.eye(3) + np.sin(th) * Kn + (1 - np.cos(th)) * Kn @ Kn
    return np.asarray(R) @ noise


def recover(truth, start, qs, measured, sigma_rad=None, max_steps=50, progress=True):
    """Fit the rhythm's slopes of ``start`` to ``measured`` orientations; returns (fitted, report, info)."""
    k = affine_family(truth)
    where = lambda m: m.maps[k].slope  # noqa: E731
    residuals = OrientationResiduals(qs, jnp.asarray(measured))
    fitted, report = idf.fit(start, residuals, where, method="levenberg_marquardt", max_steps=max_steps,
                             progress=progress)
    info = idf.identifiability(fitted, residuals, where, sigma=sigma_rad)
    return fitted, report, info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--poses", type=int, default=200)
    ap.add_argument("--sigma", type=float, default=1.0, help="orientation noise, degrees")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from mbjax.models.shoulder import shoulder_model

    truth = shoulder_model("degroot_brand")
    k = affine_family(truth)
    # start: Holzbaur's elevation slopes, no plane-of-elevation terms (same map layout)
    slope0 = np.asarray(truth.maps[k].slope).copy()
    slope0[:, 1] = 0.0
    start = eqx.tree_at(lambda m: m.maps[k].slope, truth, jnp.asarray(slope0))
    qs = sweep(args.poses)
    R_true = orientations(truth, qs)
    names = [f"{c}:{'a·elv' if j == 0 else 'b·plane'}" for c in _map_names(truth, k) for j in range(2)]
    print(f"de Groot & Brand rhythm from {args.poses} poses of clavicle, scapula and humerus orientations; "
          f"fitting {len(names)} coefficients (Holzbaur start: {int(np.sum(slope0 == 0))} zero)")

    fit0, rep0, _ = recover(truth, start, qs, R_true, progress=False)
    t = np.asarray(truth.maps[k].slope).ravel()
    rel0 = np.abs(np.asarray(fit0.maps[k].slope).ravel() - t) / np.abs(t)
    print(f"noise-free: {rep0}\n  max relative error {rel0.max():.2e} (target ≤ 1e-6)")

    sig = np.radians(args.sigma)
    fitted, rep, info = recover(truth, start, qs, noisy(R_true, args.sigma), sigma_rad=sig, max_steps=150)
    est, se = np.asarray(fitted.maps[k].slope).ravel(), np.asarray(info.standard_errors)
    z = np.abs(est - t) / se
    print(f"σ = {args.sigma}°: {rep}; rank {info.rank} of {len(names)}, singular values "
          f"{info.singular_values.max():.3g} … {info.singular_values.min():.3g}")
    print(f"{'coefficient':<28}{'true':>9}{'start':>9}{'fitted':>11}{'± SE':>9}{'|err|/SE':>9}")
    rows = []
    for n, tv, sv, ev, e, zz in zip(names, t, slope0.ravel(), est, se, z):
        print(f"{n:<28}{tv:9.4f}{sv:9.4f}{ev:11.5f}{e:9.4f}{zz:9.2f}")
        rows.append([n, tv, sv, ev, e])
    print(f"within 3 SE: {int(np.sum(z < 3))} of {len(z)}; unidentifiable: {info.unidentifiable or 'none'}")
    with open(os.path.join(args.out, "coefficients.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["coefficient", "true", "start", "fitted", "standard error"])
        w.writerows(rows)
    weakest = np.argsort(se)[-2:]
    print(f"least determined: {names[weakest[1]]} and {names[weakest[0]]} (SE {se[weakest[1]]:.3f}, "
          f"{se[weakest[0]]:.3f}): adjacent rotations about nearly parallel axes trade off")
    _plot(args, truth, start, fitted, k, names, t, slope0.ravel(), est, se)


def _map_names(model, k):
    """Each row of the affine family named by the regressed angle whose coefficients it holds in the
    published model (``Cy`` ... ``Sz``; ``-Cy`` ... for the unrot phantoms, which hold the negatives)."""
    import json

    from mbjax.models.shoulder import DEGROOT_PATH

    with open(DEGROOT_PATH) as fh:
        coef = json.load(fh)["coefficients"]
    table = {angle: np.array([float(c["Hz"]), float(c["Hy"])]) for angle, c in coef.items()}
    out = []
    for row in np.asarray(model.maps[k].slope):
        name = next((a for a, v in table.items() if np.allclose(row, v)), None)
        name = name or next((f"-{a} (unrot)" for a, v in table.items() if np.allclose(row, -v)), "?")
        out.append(name)
    return out


def _plot(args, truth, start, fitted, k, names, t, s0, est, se):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(14, 5))
    x = np.arange(len(t))
    ax[0].plot(x, t, "ks", label="true (de Groot & Brand)")
    ax[0].plot(x, s0, "x", color="C1", label="start (Holzbaur slopes)")
    ax[0].errorbar(x, est, yerr=3 * se, fmt="o", color="C0", ms=4, capsize=2, label="fitted ± 3 SE")
    ax[0].set_xticks(x, names, rotation=90, fontsize=7)
    ax[0].set(ylabel="coefficient (rad/rad)", title=f"rhythm coefficients, σ = {args.sigma}° orientation noise")
    ax[0].legend(fontsize=8)
    # the scapula's rotation about its upward-rotation row vs elevation, at one plane of elevation
    elv = np.linspace(0.1, 2.2, 50)
    grid = jnp.asarray(np.stack([np.full(50, 0.8), elv, np.zeros(50)], 1))
    sc = truth.body_index("scapula")
    for model, style, label in ((truth, "k-", "true"), (start, "--", "start"), (fitted, "-", "fitted")):
        R = jax.vmap(lambda q: mbjax.body_poses(model, q)[sc, :3, :3])(grid)
        angle = np.degrees(np.arctan2(np.asarray(R)[:, 1, 0], np.asarray(R)[:, 0, 0]))
        ax[1].plot(np.degrees(elv), angle, style, label=label)
    ax[1].set(xlabel="shoulder elevation (deg), plane of elevation 46°",
              ylabel="scapula rotation about ground z (deg)", title="scapula orientation vs elevation")
    ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "rhythm.png"), dpi=120)
    print(f"wrote {args.out}/rhythm.png and coefficients.csv")


if __name__ == "__main__":
    main()
