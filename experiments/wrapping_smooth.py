"""Figure: smooth wrapping vs OpenSim's through a contact transition.

arm26's TRIlat wraps over the ``TRI`` cylinder at the elbow (quadrant ``all``), swept over
``r_elbow_flex`` with the shoulder at 0: the path is straight at small flexion and starts touching
the cylinder part-way.  The model is the shipped arm26 with its two ellipsoid path wraps removed
(TRIlat never used them; without them the smooth model compiles in seconds, where its ellipsoid
shooting takes about a minute), loaded twice: OpenSim's algorithm
(mbjax's exact port, equal to OpenSim 4.6 to 1e-15 m, see the README) and ``wrapping="smooth"``.
Lengths by ``muscle_lengths``, moment arms ``-∂L/∂q`` by ``moment_arms`` (forward mode), and the
smooth moment arm also by reverse mode (``jax.grad``), which OpenSim's wrap pass does not allow
on multi-wrap models.  Printed: the largest length difference where both paths are straight, and
where both wrap (OpenSim slides its cylinder tangent points onto a plane through an apex, so its
path is the shortest one only when both ends sit at one axial height; here they do not), and the
one-sided slopes at the contact.

Run: ``.venv/bin/python experiments/wrapping_smooth.py``; writes
``outputs/wrapping_smooth/{wrapping_smooth.png,wrapping_smooth.csv}``.
"""

from __future__ import annotations

import csv
import os
import re
import tempfile
import warnings

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.models import arm26_path  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "outputs", "wrapping_smooth")
MUSCLE, COORD = "TRIlat", "r_elbow_flex"


def _arm26_cylinders_only() -> str:
    """arm26 without its ellipsoid path wraps (TRIlong's TRIlonghh, BIClong's BIClonghh)."""
    text = open(arm26_path()).read()
    text = re.sub(r"<PathWrap[^>]*>\s*<wrap_object>(TRIlonghh|BIClonghh)</wrap_object>.*?</PathWrap>", "", text,
                  flags=re.S)
    path = os.path.join(tempfile.mkdtemp(), "arm26_cylinders.osim")
    with open(path, "w") as fh:
        fh.write(text)
    return path


def main():
    os.makedirs(OUT, exist_ok=True)
    path = _arm26_cylinders_only()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opensim = load_osim(path)
        smooth = load_osim(path, wrapping="smooth")
    k, c = opensim.muscle_names.index(MUSCLE), opensim.coordinate_names.index(COORD)
    flex = np.linspace(0.0, 2.2, 441)
    qs = np.zeros((len(flex), opensim.n_coordinates))
    qs[:, c] = flex
    qs = jnp.asarray(qs)
    lengths = jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))
    arms = jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))
    l_os, l_sm = np.asarray(lengths(opensim, qs))[:, k], np.asarray(lengths(smooth, qs))[:, k]
    r_os, r_sm = np.asarray(arms(opensim, qs))[:, c, k], np.asarray(arms(smooth, qs))[:, c, k]
    r_rev = -np.asarray(jax.jit(jax.vmap(jax.grad(lambda q: mbjax.muscle_lengths(smooth, q)[k])))(qs))[:, c]
    # straight-line length: the same model without wrapping
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        straight = load_osim(path, ignore_wrapping=True)
    l_st = np.asarray(lengths(straight, qs))[:, k]
    wraps_os, wraps_sm = l_os > l_st + 1e-12, l_sm > l_st + 1e-12
    both_straight, both_wrap = ~wraps_os & ~wraps_sm, wraps_os & wraps_sm
    d = np.abs(l_sm - l_os)
    print(f"{MUSCLE} over {COORD} in [0, 2.2] rad, {len(flex)} poses")
    print(f"  max |L_smooth - L_opensim| where both are straight: {d[both_straight].max():.1e} m")
    print(f"  max |L_smooth - L_opensim| where both wrap:         {d[both_wrap].max():.1e} m "
          "(OpenSim's apex-plane tangent points; the smooth path is the geodesic)")
    print(f"  max |R_smooth - R_opensim| where both wrap:         {np.abs(r_sm - r_os)[both_wrap].max():.1e} m")
    print(f"  smooth moment arm, forward vs reverse mode: {np.abs(r_sm - r_rev).max():.1e} m")
    onset_sm = flex[np.argmax(wraps_sm)] if wraps_sm.any() else np.nan
    onset_os = flex[np.argmax(wraps_os)] if wraps_os.any() else np.nan
    print(f"  contact starts at {onset_sm:.4f} rad (smooth), {onset_os:.4f} rad (OpenSim)")
    if wraps_sm.any():
        f = jax.jit(lambda t: mbjax.muscle_lengths(smooth, qs[0].at[c].set(t))[k])
        g = jax.jit(lambda t: mbjax.muscle_lengths(opensim, qs[0].at[c].set(t))[k])
        lo, hi = float(flex[np.argmax(wraps_sm)] - 0.01), float(flex[np.argmax(wraps_sm)])
        s_of = jax.jit(lambda t: mbjax.muscle_lengths(straight, qs[0].at[c].set(t))[k])
        for _ in range(50):  # bisect the smooth contact
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if float(f(mid)) - float(s_of(mid)) < 1e-15 else (lo, mid)
        t0, h = 0.5 * (lo + hi), 1e-5
        for name, fn in (("smooth", f), ("OpenSim", g)):
            left = (float(fn(t0)) - float(fn(t0 - h))) / h
            right = (float(fn(t0 + h)) - float(fn(t0))) / h
            print(f"  {name:8s} one-sided slopes at {t0:.6f} rad (h = 1e-5): {left:.8f}, {right:.8f} m/rad")
    with open(os.path.join(OUT, "wrapping_smooth.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["r_elbow_flex", "L_opensim", "L_smooth", "L_straight", "R_opensim", "R_smooth", "R_smooth_rev"])
        for row in zip(flex, l_os, l_sm, l_st, r_os, r_sm, r_rev):
            w.writerow([f"{v:.17g}" for v in row])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(7, 8.5), sharex=True)
    ax[0].plot(flex, l_os, label="OpenSim's algorithm (default)", lw=2.5, alpha=0.6)
    ax[0].plot(flex, l_sm, "--", label='wrapping="smooth"')
    ax[0].plot(flex, l_st, ":", color="gray", label="straight line")
    ax[0].set_ylabel("length (m)")
    ax[0].legend()
    ax[1].plot(flex, r_os, lw=2.5, alpha=0.6, label="OpenSim's algorithm")
    ax[1].plot(flex, r_sm, "--", label="smooth (forward mode)")
    ax[1].plot(flex[::20], r_rev[::20], "k.", label="smooth (reverse mode)")
    ax[1].set_ylabel(f"moment arm about {COORD} (m)")
    ax[1].legend()
    ax[2].semilogy(flex, np.maximum(d, 1e-17), label="|ΔL| (m)")
    ax[2].semilogy(flex, np.maximum(np.abs(r_sm - r_os), 1e-17), label="|ΔR| (m)")
    ax[2].set_ylabel("|smooth − OpenSim|")
    ax[2].set_xlabel(f"{COORD} (rad)")
    ax[2].legend()
    for a in ax:
        if np.isfinite(onset_sm):
            a.axvline(onset_sm, color="k", lw=0.6, alpha=0.5)
    fig.suptitle(f"arm26 {MUSCLE} over the TRI cylinder: smooth vs OpenSim wrapping")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "wrapping_smooth.png"), dpi=120)
    print(f"wrote {OUT}/wrapping_smooth.png")


if __name__ == "__main__":
    main()
