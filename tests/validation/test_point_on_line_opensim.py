"""PointOnLineConstraint elimination (mbjax.opensim.model.osim_point_on_line) against OpenSim 4.6 itself, on
OpenSim's BouncingBlock model (tests/data/opensim_models/bouncing_block/bouncing_block.osim).

* the constraint residual mbjax builds equals Simbody's position errors (``State.getQErr`` after
  ``realizePosition``), signs included, at random unassembled poses of all 8 coordinates;
* at random independent poses, OpenSim given mbjax's full solved coordinates reports zero position
  errors, and every body's transform in ground equals mbjax's;
* on the file as written and on a variant with a tilted line and points off the bodies' origins
  (where Simbody's choice of perpendiculars matters);
* OpenSim's own assembly of the default pose (``initSystem``) equals mbjax's solve with the
  independent coordinates set to OpenSim's assembled values.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.opensim.model.osim_point_on_line import dependent_values, errors, point_on_line_loop  # noqa: E402

PATH = os.path.join(os.path.dirname(__file__), "..", "data", "opensim_models", "bouncing_block",
                    "bouncing_block.osim")


# the library's file (line along an axis, points at the bodies' origins) in the extended group; its variant,
# which generalises both, in CI
@pytest.fixture(scope="module", params=[pytest.param("as written", marks=pytest.mark.extended), "variant"])
def both(request, tmp_path_factory):
    """mbjax's and OpenSim's model of bouncing_block.osim, or of its variant with a tilted line and
    points off the bodies' origins (tests/test_osim_point_on_line.py)."""
    from test_osim_point_on_line import variant_text

    path = PATH
    if request.param == "variant":
        path = str(tmp_path_factory.mktemp("pol") / "bouncing_block_variant.osim")
        with open(PATH) as fh, open(path, "w") as out:
            out.write(variant_text(fh.read()))
    model = load_osim(path)
    om = osim.Model(path)
    state = om.initSystem()
    return model, om, state


def _set(om, state, values: dict):
    cs = om.getCoordinateSet()
    for i in range(cs.getSize()):
        c = cs.get(i)
        c.setValue(state, float(values[c.getName()]), False)
    om.realizePosition(state)


def _qerr(state):
    e = state.getQErr()
    return np.array([e.get(i) for i in range(e.size())])


def _random_independent(model, n, seed):
    from test_osim_point_on_line import _poses

    return _poses(model, n, seed)


def test_residual_is_simbodys_position_error(both):
    model, om, state = both
    loop = point_on_line_loop(model)
    pre = loop.params["model"]
    fn = loop.fn
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(4):
        qf = rng.uniform(-1.0, 1.0, size=pre.n_coordinates)
        _set(om, state, dict(zip(pre.coordinate_names, qf)))
        ours = np.asarray(errors(loop.params, jnp.asarray(qf), fn.line, fn.follower))
        theirs = _qerr(state)
        assert np.max(np.abs(theirs)) > 0.1  # unassembled
        worst = max(worst, float(np.max(np.abs(ours - theirs))))
    print(f"\nresidual vs Simbody QErr: max |diff| {worst:.2e}")
    assert worst < 1e-12


def test_solved_poses_satisfy_opensims_constraints(both):
    model, om, state = both
    worst_err = worst_pose = 0.0
    for q in _random_independent(model, 4, seed=4):
        values = dict(zip(model.coordinate_names, q))
        values.update({c: float(v) for c, v in dependent_values(model, jnp.asarray(q)).items()})
        _set(om, state, values)
        worst_err = max(worst_err, float(np.max(np.abs(_qerr(state)))))
        poses = np.asarray(mbjax.body_poses(model, jnp.asarray(q)))
        bs = om.getBodySet()
        for i in range(bs.getSize()):
            b = bs.get(i)
            t = b.getTransformInGround(state)
            r = np.array([[t.R().get(a, c) for c in range(3)] for a in range(3)])
            p = np.array([t.p().get(a) for a in range(3)])
            mine = poses[model.body_index(b.getName())]
            worst_pose = max(worst_pose, float(np.max(np.abs(mine[:3, :3] - r))),
                             float(np.max(np.abs(mine[:3, 3] - p))))
    print(f"\nOpenSim QErr at mbjax's solved poses: max {worst_err:.2e}; body transforms max |diff| {worst_pose:.2e}")
    assert worst_err < 1e-12
    assert worst_pose < 1e-9


def test_default_assembly_matches_opensims(both):
    model, _, _ = both
    om = osim.Model(model.osim.source)
    state = om.initSystem()  # assembles the default pose (the file's xTranslation violates it)
    cs = om.getCoordinateSet()
    theirs = {cs.get(i).getName(): cs.get(i).getValue(state) for i in range(cs.getSize())}
    q = jnp.asarray([theirs[c] for c in model.coordinate_names])
    ours = {c: float(v) for c, v in dependent_values(model, q).items()}
    diff = max(abs(ours[c] - theirs[c]) for c in ours)
    moved = max(abs(theirs[c] - v) for c, v in zip(model.coordinate_names, np.asarray(model.osim.default)))
    assembled = dict(model.osim.assembled)
    print(f"\nOpenSim's assembled default vs mbjax's solve at OpenSim's independent values: max |diff| {diff:.2e} "
          f"(OpenSim moved the independent coordinates by up to {moved:.2e}); mbjax assembled {assembled}")
    assert diff < 1e-8  # OpenSim's assembler accuracy, not a rounding floor
    if "variant" not in model.osim.source:
        assert abs(theirs["xTranslation"]) < 1e-8 and abs(assembled["xTranslation"]) < 1e-14
