"""Wrapped paths of whole OpenSim models equal OpenSim 4.6's (marker ``validation``).

arm26 (cylinders, ellipsoids), the full MoBL (cylinders, ellipsoids, spheres, tori) and
Rajagopal2016 (cylinders; needs ``OPENSIM_MODELS_DIR``) are loaded *with* their wraps.  Path
lengths are compared with OpenSim's ``getLength`` at random poses over the coordinate ranges and
at poses where a wrap starts or stops touching (found by bisection along lines between random
poses, then probed just either side).  Moment arms (``-∂L/∂q``, forward-mode through the wrap
pass) are compared with Richardson differences of OpenSim's lengths where the path is smooth
across the stencil.

Tolerance on lengths: 1e-9 m for every surface kind.  The cylinder and sphere are closed form up
to the cylinder's tangency restarts; the ellipsoid's and torus' iterations (OpenSim's tangent
search, Eberly projections, MINPACK ``lmdif``) are reproduced step for step, with OpenSim's own
stopping tests, so mbjax stops where OpenSim stops (measured: arm26 1.4e-15 m, full MoBL 8.8e-14 m
over 32 random poses).  Moment arms vs differences of OpenSim's lengths keep a looser bound for
ellipsoid muscles (:data:`MOMENT_ARM_TOLERANCE`): OpenSim's stopped iterations put a small
non-smooth part into its lengths, which differences see.
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

from mbjax.io import load_osim  # noqa: E402
from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.muscles import moment_arms, muscle_lengths  # noqa: E402
from mbjax.muscles.paths import get_paths  # noqa: E402
from _osim_models import ARM26, MOBL, RAJAGOPAL  # noqa: E402

#: agreement asked of every path length (m)
LENGTH_TOLERANCE = 1e-9
#: class of each muscle for the moment-arm check, by the hardest surface kind on its path (m)
MOMENT_ARM_TOLERANCE = {"WrapCylinder": 1e-9, "WrapSphere": 1e-9, "WrapEllipsoid": 1e-6, "WrapTorus": 1e-4}


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(path)


def _tolerances(model):
    paths = get_paths(model)
    tol = np.full(paths.n_muscles, 1e-9)
    w = paths.wraps
    for row, m in enumerate(w.muscles):
        kinds = [w.kinds[o] for o, u in zip(w.obj[row], w.used[row]) if u]
        tol[m] = max(MOMENT_ARM_TOLERANCE[k] for k in kinds)
    return tol


def _poses(model, n, seed):
    info = model.osim
    lo = np.maximum(np.asarray(info.lower), -3.0)
    hi = np.minimum(np.asarray(info.upper), 3.0)
    rng = np.random.default_rng(seed)
    return lo + (hi - lo) * rng.uniform(0.02, 0.98, size=(n, lo.size))


def _wrap_flags(model, oracle):
    """Which wrap objects have a path on their surface in OpenSim, for each wrapped muscle at pose
    ``q`` (a hashable tuple per pose): the ``PathWrapPoint`` s of ``GeometryPath.getCurrentPath``
    with a positive ``getWrapLength`` (OpenSim keeps tangent points with no arc between them on a
    path for a while; mbjax's ``wrapped_paths(...).surface > 0`` does not count those either).

    OpenSim's flags, not mbjax's: 0.2 ms a pose and no second compiled wrap pass (mbjax's flags
    cost a 20 s compile).  Measured on the lines of :func:`_transitions`: the same poses as with
    mbjax's flags, to 7e-13."""
    names = model.coordinate_names
    wrapped = [model.muscle_names[m] for m in np.asarray(get_paths(model).wraps.muscles)]

    def flags(q):
        oracle.set(names, q)
        out = []
        for m in wrapped:
            force = oracle.paths[m]  # muscles, path actuators, springs and ligaments
            geometry = force.getGeometryPath() if hasattr(force, "getGeometryPath") else force.getPath()
            cp = osim.GeometryPath.safeDownCast(geometry).getCurrentPath(oracle.state)
            points = (osim.PathWrapPoint.safeDownCast(cp.get(i)) for i in range(cp.getSize()))
            out.append(tuple(sorted({p.getWrapObject().getName() for p in points
                                     if p is not None and p.getWrapLength(oracle.state) > 0})))
        return tuple(out)

    return flags


def _transitions(path, model, n_lines, seed, steps=24, rounds=9):
    """Poses just before and after a wrap switches on or off, along lines between random poses.

    Each refinement round evaluates ``steps`` poses in the bracketing interval (a ``steps``-ary
    search: 9 rounds of 24 narrow it by 23⁹ ≈ 2e12)."""
    flags = _wrap_flags(model, OpenSimReference(path))
    ends = _poses(model, 2 * n_lines, seed)
    out = []
    t = np.linspace(0.0, 1.0, steps)
    for a, b in zip(ends[::2], ends[1::2]):
        f = [flags(a + x * (b - a)) for x in t]
        for k in [k for k in range(steps - 1) if f[k + 1] != f[k]][:2]:
            lo, hi = t[k], t[k + 1]
            f_lo = f[k]
            for _ in range(rounds):
                s = np.linspace(lo, hi, steps)
                j = next(j for j in range(1, steps) if flags(a + s[j] * (b - a)) != f_lo)
                lo, hi = s[j - 1], s[j]
            out += [a + (lo - 1e-7) * (b - a), a + (hi + 1e-7) * (b - a)]
    return np.asarray(out)


def _check_lengths(path, model, qs):
    """``|L_mbjax - L_OpenSim|`` per (pose, muscle) and the tolerance of each: ``LENGTH_TOLERANCE``,
    or, where the length itself is ill-conditioned, 4× its change when q moves by ~1e-13 rad.

    A few wrap configurations are chaotic (a cylinder's tangency restarts that never converge and
    stop at OpenSim's 100: MoBL TMIN at one random pose, a 26 m non-physical path, moves by 1.7e-9 m
    when q moves by 1e-13), so no second implementation can agree to 1e-9 m there; everywhere
    else the rounding spread is ~1e-16 relative and the tolerance stays 1e-9 m.
    """
    oracle = OpenSimReference(path)
    names = model.coordinate_names
    mnames = model.muscle_names
    lengths = jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))
    l_mb = np.asarray(lengths(model, jnp.asarray(qs)))
    rng = np.random.default_rng(7)
    spread = np.max([np.abs(np.asarray(lengths(model, jnp.asarray(qs + 1e-13 * rng.choice([-1.0, 1.0], qs.shape))))
                            - l_mb) for _ in range(2)], axis=0)
    l_os = np.array([oracle.lengths(names, q, mnames) for q in qs])
    err = np.abs(l_mb - l_os)
    tol = np.maximum(LENGTH_TOLERANCE, 4.0 * spread)
    widened = np.argwhere(tol > LENGTH_TOLERANCE)
    if len(widened):
        print("ill-conditioned lengths (tolerance widened): " + ", ".join(
            f"pose {k} {mnames[m]} L={l_mb[k, m]:.3g} m tol {tol[k, m]:.2g}" for k, m in widened))
    bad = np.argwhere(err > tol)
    worst = {}
    for m, name in enumerate(mnames):
        worst[name] = float(err[:, m].max())
    return err, tol, bad, worst


# MoBL (every surface kind in one model): over a minute of compilation; CI compares each kind with OpenSim
# surface by surface (test_wrap_{cylinder,sphere,ellipsoid,torus}_opensim.py) and whole models here on
# arm26 and Rajagopal2016
@pytest.mark.parametrize("which", ["arm26", pytest.param("mobl", marks=pytest.mark.extended), "rajagopal"])
def test_wrapped_lengths_equal_opensim(which):
    path = {"arm26": ARM26, "mobl": MOBL, "rajagopal": RAJAGOPAL}[which]
    if which == "mobl":
        if not os.path.exists(MOBL):
            pytest.skip("MoBL not found")
    if which == "rajagopal" and not os.path.exists(RAJAGOPAL):
        pytest.skip("Rajagopal2016.osim not found: set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
    model = _load(path)
    assert get_paths(model).wraps is not None
    qs = _poses(model, {"arm26": 10, "mobl": 6}.get(which, 4), 0)  # MoBL: + 12 transition poses
    if which in ("arm26", "mobl"):  # contact transitions, found with OpenSim's flags (MoBL: 12 poses in 2 s)
        qs = np.concatenate([qs, _transitions(path, model, 3, 1)])
    err, tol, bad, worst = _check_lengths(path, model, qs)
    wrapped = np.asarray(get_paths(model).wraps.muscles)
    print(f"{which}: {len(qs)} poses, worst |ΔL| wrapped {err[:, wrapped].max():.3g} m, "
          f"unwrapped {np.delete(err, wrapped, axis=1).max() if err.shape[1] > len(wrapped) else 0:.3g} m")
    names = np.asarray(get_paths(model).names)
    assert not len(bad), "; ".join(f"pose {k} {names[m]}: {err[k, m]:.3g} > {tol[k, m]:g}" for k, m in bad[:10])


@pytest.mark.extended  # compile-heavy (wrapped arm26 moment arms by JVP, ~2 min); CI checks wrapped moment arms vs autodiff and differences in test_wrap_path.py
def test_arm26_wrapped_moment_arms_equal_opensim_differences():
    model = _load(ARM26)
    oracle = OpenSimReference(ARM26)
    names = model.coordinate_names
    mnames = model.muscle_names
    qs = _poses(model, 4, 2)
    r_mb = np.asarray(jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    worst = np.zeros(len(mnames))
    for q, r in zip(qs, r_mb):
        fd = np.array([oracle.moment_arms(names, q, c, mnames) for c in names])
        worst = np.maximum(worst, np.abs(fd - r).max(0))
    tol = _tolerances(model)
    print("arm26 wrapped moment arms vs OpenSim Richardson differences (m):", dict(zip(mnames, worst.round(12))))
    # closed-form surfaces: exact; ellipsoids: OpenSim's tangent search stops at a residual of
    # 1e-8, so its lengths carry a small non-smooth part that differences of them see
    assert np.all(worst[tol <= 1e-9] < 1e-7)
    assert np.all(worst[(tol > 1e-9) & (tol <= 1e-6)] < 1e-3)


def _cached_vs_latest_tangent_points(oracle, muscle):
    """Largest gap between a PathWrapPoint's ``getLocationInGround`` (cached) and its latest
    ``getLocation`` mapped to ground, on OpenSim's current path of ``muscle`` (m)."""
    state = oracle.state
    cp = osim.GeometryPath.safeDownCast(oracle.muscles[muscle].getPath()).getCurrentPath(state)
    gap = 0.0
    for i in range(cp.getSize()):
        p = cp.get(i)
        if osim.PathWrapPoint.safeDownCast(p) is None:
            continue
        x = p.getParentFrame().getTransformInGround(state)
        rot_p = x.xformFrameVecToBase(p.getLocation(state))
        latest = np.array([rot_p.get(j) + x.p().get(j) for j in range(3)])
        cached = np.array([p.getLocationInGround(state).get(j) for j in range(3)])
        gap = max(gap, float(np.linalg.norm(latest - cached)))
    return gap


def test_rajagopal_gastrocnemii_over_two_cylinders_equal_opensim():
    """gasmed/gaslat wrap over two cylinders: several passes of ``applyWrapObjects``, the
    cylinders' tangency restarts on, and OpenSim's cached ground positions of tangent points
    (straight segments from the first pass, surface lengths from the last; see
    :mod:`mbjax.wrapping.path`).  The poses must include some where the cache matters."""
    if not os.path.exists(RAJAGOPAL):
        pytest.skip("Rajagopal2016.osim not found: set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
    model = _load(RAJAGOPAL)
    muscles = ["gasmed_l", "gasmed_r", "gaslat_l", "gaslat_r"]
    cols = [model.muscle_names.index(m) for m in muscles]
    qs = _poses(model, 20, 5)
    l_mb = np.asarray(jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(qs)))[:, cols]
    oracle = OpenSimReference(RAJAGOPAL)
    names = model.coordinate_names
    l_os, gaps = [], []
    for q in qs:
        l_os.append(oracle.lengths(names, q, muscles))
        gaps.append([_cached_vs_latest_tangent_points(oracle, m) for m in muscles])
    err = np.abs(l_mb - np.array(l_os))
    gaps = np.array(gaps)
    print(f"gastrocnemii: worst |ΔL| {err.max():.3g} m over {len(qs)} poses; "
          f"{int((gaps > 1e-6).sum())} pose-muscles with cached tangent points off by up to {gaps.max():.3g} m")
    assert (gaps > 1e-4).sum() >= 2  # the cached-position rule is exercised, by more than a tolerance
    assert err.max() < 1e-9
