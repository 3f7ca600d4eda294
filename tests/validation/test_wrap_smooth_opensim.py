"""Smooth wrapping (mbjax.wrapping.smooth_path) against OpenSim 4.6 itself (marker ``validation``).

* One cylinder, ends at one axial height (the cross-section's plane, where OpenSim's tangent
  points are exact): ``GeometryPath.getLength`` of a 2-point PathActuator over a rotated,
  translated WrapCylinder equals the smooth geodesic to 1e-9 m, quadrant ``all`` and ``-y`` with
  both ends on the -y side.  Ends at different heights: OpenSim slides its tangent points onto a
  plane through an apex (not the geodesic's heights), so its lengths are longer; the gap is
  printed, not asserted.
* Rajagopal2016 (40 cylinders; needs ``OPENSIM_MODELS_DIR``) loads with ``wrapping="smooth"``,
  lengths and moment arms run batched over a handful of poses, reverse mode works, and the
  lengths stay within a centimetre of OpenSim's (printed per muscle: the gastrocnemii's two
  cylinders differ most, OpenSim's multi-pass and cached tangent points against one sequential
  pass, see the module docstring of mbjax.wrapping.smooth_path).
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.muscles.paths import get_paths  # noqa: E402
from mbjax.wrapping.smooth import cylinder_geodesic  # noqa: E402
from _osim_models import RAJAGOPAL, needs_rajagopal  # noqa: E402
from test_wrap_cylinder_opensim import ROT, TRANS, _opensim_lengths, _rot_xyz  # noqa: E402


def _pairs(n, seed, planar):
    rng = np.random.default_rng(seed)
    rad, ang = rng.uniform(0.06, 0.25, (2, n)), rng.uniform(-np.pi, np.pi, (2, n))
    z = rng.uniform(-0.1, 0.1, (2, n))
    if planar:
        z[1] = z[0]
    p = np.stack([rad * np.cos(ang), rad * np.sin(ang), z], -1)
    return p[0], p[1]


@pytest.mark.parametrize("quadrant", ["all", "-y"])
def test_cylinder_with_ends_at_one_height_equals_opensim(quadrant):
    r, length = 0.05, 0.5
    q1, q2 = _pairs(300, 0, planar=True)
    if quadrant == "-y":  # both ends on the allowed side: OpenSim's path is the shortest one there
        q1[:, 1], q2[:, 1] = -np.abs(q1[:, 1]), -np.abs(q2[:, 1])
    rm = _rot_xyz(ROT)
    g1, g2 = q1 @ rm.T + TRANS, q2 @ rm.T + TRANS
    ref = _opensim_lengths("cylinder", quadrant, (r, length), False, g1, g2)
    allowed = jnp.asarray([0.0, 0.0] if quadrant == "all" else [0.0, -1.0])
    geo = cylinder_geodesic((g1 - TRANS) @ rm, (g2 - TRANS) @ rm, r, allowed)
    err = np.abs(np.asarray(geo.length) - ref)
    assert int(np.sum(np.asarray(geo.wraps))) > 15
    print(f"cylinder ({quadrant}), ends at one height: max |smooth - OpenSim| {err.max():.1e} m")
    assert err.max() <= 1e-9
    if quadrant != "all":
        return
    # ends at different heights: OpenSim's apex-plane tangent points are not the geodesic's
    q1, q2 = _pairs(300, 1, planar=False)
    g1, g2 = q1 @ rm.T + TRANS, q2 @ rm.T + TRANS
    ref = _opensim_lengths("cylinder", "all", (r, length), False, g1, g2)
    geo = cylinder_geodesic((g1 - TRANS) @ rm, (g2 - TRANS) @ rm, r)
    gap = ref - np.asarray(geo.length)
    wraps = np.asarray(geo.wraps)
    print(f"ends at different heights: OpenSim - smooth over {wraps.sum()} wrapped segments: "
          f"median {np.median(gap[wraps]):.1e} m, max {gap[wraps].max():.1e} m, min {gap.min():.1e} m")
    assert gap.min() > -1e-9  # the geodesic is never longer than OpenSim's path


@needs_rajagopal
def test_rajagopal_loads_smooth_and_runs_batched():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(RAJAGOPAL, wrapping="smooth")
    assert get_paths(model).wraps.wrapping == "smooth"
    q0 = np.asarray(model.osim.default)
    rng = np.random.default_rng(0)
    qs = q0[None] + rng.normal(size=(4, len(q0))) * 0.15
    lengths = np.asarray(jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    arms = np.asarray(jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))(model, jnp.asarray(qs)))
    assert np.all(np.isfinite(lengths)) and np.all(np.isfinite(arms))
    grad = np.asarray(jax.jit(jax.grad(lambda q: jnp.sum(mbjax.muscle_lengths(model, q))))(jnp.asarray(qs[0])))
    np.testing.assert_allclose(grad, -arms[0].sum(axis=1), atol=1e-12)
    oracle = OpenSimReference(RAJAGOPAL)
    names = model.coordinate_names
    ref = np.array([oracle.lengths(names, q, model.muscle_names) for q in qs])
    err = np.abs(lengths - ref).max(axis=0)
    rows = np.asarray(get_paths(model).wraps.muscles)
    plain = np.setdiff1d(np.arange(len(model.muscle_names)), rows)
    worst = sorted(zip(err[rows], np.asarray(model.muscle_names)[rows]), reverse=True)[:6]
    print("Rajagopal2016 smooth vs OpenSim, worst wrapped muscles: "
          + ", ".join(f"{n} {e * 1e3:.2f} mm" for e, n in worst)
          + f"; unwrapped muscles max {err[plain].max():.1e} m")
    assert err[plain].max() < 1e-9
    assert err.max() < 0.02
