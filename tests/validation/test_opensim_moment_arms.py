"""OpenSim's unit-force moment arm (``Muscle.computeMomentArm``) explained, muscle by muscle.

The geometric R = −∂L/∂q (``mbjax.moment_arms``) and OpenSim's value differ on the MoBL shoulder
(12 mm about shoulder_elv, 0.2 mm about shoulder_rot).  ``mbjax.muscles.opensim_moment_arms``
states why (segments between two points of one body are skipped by ``GeometryPath::produceForces``,
which loses the motion of a MovingPathPoint relative to its body) and reproduces OpenSim's number
from that rule alone; both are compared here with OpenSim 4.6 itself.
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.muscles.opensim_moment_arms import opensim_moment_arms  # noqa: E402
from mbjax.muscles.paths import get_paths  # noqa: E402

from _osim_models import needs_mobl  # noqa: E402


def _unit_force_vs_opensim(model, ref, poses, geometric=False):
    """Worst |mbjax's unit-force rule − OpenSim's ``computeMomentArm``| and the largest gap between
    ``computeMomentArm`` and OpenSim's own −dL/dq (Richardson differences of its lengths), over
    ``poses`` and every independent coordinate (m); with ``geometric``, also the worst
    |``mbjax.moment_arms`` (−dL/dq of mbjax's lengths) − OpenSim's −dL/dq| (else None)."""
    names, muscles = list(model.coordinate_names), list(model.muscle_names)
    ours = np.asarray(jax.jit(jax.vmap(opensim_moment_arms, in_axes=(None, 0)))(model, poses))
    geo = np.asarray(jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))(model, poses)) if geometric else None
    worst_unit, gap, worst_geo = 0.0, 0.0, 0.0
    for p, q in enumerate(poses):
        for k, wrt in enumerate(names):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cma = ref.compute_moment_arm(names, q, wrt, muscles)
                fd = ref.moment_arms(names, q, wrt, muscles)
            worst_unit = max(worst_unit, float(np.abs(ours[p, k] - cma).max()))
            gap = max(gap, float(np.abs(fd - cma).max()))
            if geometric:
                worst_geo = max(worst_geo, float(np.abs(geo[p, k] - fd).max()))
    return worst_unit, gap, (worst_geo if geometric else None)


@needs_mobl
def test_shoulder_unit_force_moment_arms_equal_opensim():
    from mbjax.models.shoulder import shoulder_model, trimmed_osim

    model = shoulder_model()
    path = trimmed_osim()
    try:
        rng = np.random.default_rng(5)
        lo, hi = np.asarray(model.osim.lower), np.asarray(model.osim.upper)
        poses = lo + (hi - lo) * rng.uniform(0.1, 0.9, size=(4, 3))
        worst_unit, gap, worst_geo = _unit_force_vs_opensim(model, OpenSimReference(path), poses, geometric=True)
    finally:
        os.remove(path)
    print(f"unit-force rule vs computeMomentArm {worst_unit:.1e} m; geometric vs OpenSim's -dL/dq {worst_geo:.1e} m;"
          f" computeMomentArm vs -dL/dq up to {gap * 1e3:.1f} mm")
    assert gap > 1e-4  # the two notions do differ on this model
    assert worst_unit < 1e-9
    assert worst_geo < 1e-8  # Richardson differences of OpenSim's lengths: O(h^4) truncation


# ~18 s; CI: the tutorial's static optimization equals OpenSim's on wrapped arm26 with this rule
# (tests/validation/test_so_opensim.py) and the unwrapped unit-force rule above
@pytest.mark.extended
def test_wrapped_unit_force_moment_arms_equal_opensim():
    """arm26 with its wrap objects (2 cylinders, 2 ellipsoids; TRIlong wraps twice): OpenSim applies
    the tension at the tangent points, as fixed points of the wrap bodies, at their *latest*
    positions, in the directions of the *cached* first-pass ones.  mbjax's unit-force rule does the
    same and equals ``computeMomentArm``; the geometric −∂L/∂q differs by millimetres where the
    path wraps twice (multi-pass, cached tangent points) or over an ellipsoid."""
    model = mbjax.models.load("arm26")
    rng = np.random.default_rng(0)
    poses = np.stack([rng.uniform(-1.5, 3.0, 10), rng.uniform(0.0, 2.2, 10)], 1)
    worst_unit, gap, _ = _unit_force_vs_opensim(model, OpenSimReference(mbjax.models.model_path("arm26")), poses)
    print(f"arm26 wrapped: unit-force rule vs computeMomentArm {worst_unit:.1e} m; OpenSim's -dL/dq vs "
          f"computeMomentArm up to {gap * 1e3:.1f} mm")
    assert gap > 1e-3  # the notions differ over these wraps
    assert worst_unit < 1e-12


@needs_mobl
@pytest.mark.extended  # the wrapped shoulder's unit-force moment arms compile in ~1 min
def test_wrapped_shoulder_unit_force_moment_arms_about_coupled_coordinates_equal_opensim():
    """The MoBL shoulder *with* its 22 wrap objects (all four surface kinds) and its coordinate
    couplers: OpenSim's ``computeMomentArm`` about each independent coordinate projects the unit
    tension's generalized forces along the couplers; mbjax's unit-force rule through the frozen
    tangent points equals it (measured 1.4e-15 m), while OpenSim's own −dL/dq differs by up to
    16 mm (couplers, moving points, ellipsoid heuristics)."""
    from mbjax.io import load_osim
    from mbjax.models.shoulder import trimmed_osim

    path = trimmed_osim(strip_wrapping=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_osim(path)
        assert {"WrapCylinder", "WrapEllipsoid", "WrapSphere", "WrapTorus"} <= set(get_paths(model).wraps.kinds)
        assert any(role == "dependent" for _, role in model.osim.roles)
        lo, hi = np.asarray(model.osim.lower), np.asarray(model.osim.upper)
        poses = lo + (hi - lo) * np.random.default_rng(5).uniform(0.1, 0.9, size=(4, lo.size))
        worst_unit, gap, _ = _unit_force_vs_opensim(model, OpenSimReference(path), poses)
    finally:
        os.remove(path)
    print(f"wrapped shoulder: unit-force rule vs computeMomentArm {worst_unit:.1e} m; OpenSim's -dL/dq vs "
          f"computeMomentArm up to {gap * 1e3:.1f} mm")
    assert gap > 1e-3
    assert worst_unit < 1e-12
