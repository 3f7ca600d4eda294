"""OpenSim 4.6's own ScaleTool on the Gait2354 pipeline's scale setup (marker ``validation``), against
mbjax's pieces of it.

The tool runs on copies of ``subject01_Setup_Scale.xml``, the generic ``gait2354_simbody.osim``, the
scale marker set and the static trial.  Then:

* ``read_scale_setup`` + ``measurement_factor`` (marker-pair factors) + ``scale_model`` /
  ``scale_markers`` equal the tool's ``subject01_scaledOnly.osim`` (written by 4.6 with every digit):
  joint frames, centres of mass, inertias, masses, path points, tendon slack lengths, markers and body
  poses to 1e-12 relative (the factors enter every one of them);
* ``place_markers`` at the tool's static pose (``subject01_static_output.mot``, printed with 8 decimals)
  on the averaged static frames (``average_frames``) equals the tool's ``subject01_simbody.osim``
  markers to 2e-8 m (the pose's printed rounding, 5e-9 rad, times lever arms up to ~1.5 m);
* ``mbjax.inverse_kinematics`` of the averaged frame with the MarkerPlacer's tasks on the scaled model
  reaches an IK objective at most the tool's pose's, and within 1e-3 of it (measured: 4.03107e-4 vs
  4.03238e-4; the MarkerPlacer's assembly stops at its accuracy on a flat objective, the poses differ
  by up to 0.01 rad in the weakly determined lumbar bending and rotation).
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
import mbjax.models as mm  # noqa: E402
from mbjax.analysis.identify import measurement_factor, place_markers, scale_markers, scale_model  # noqa: E402
from mbjax.analysis.identify import average_frames  # noqa: E402
from mbjax.analysis.ik import inverse_kinematics  # noqa: E402
from mbjax.io import load_marker_set, load_markers, load_osim, read_scale_setup, read_storage, read_trc  # noqa: E402
from mbjax.io.storage import MarkerData  # noqa: E402

jax.config.update("jax_enable_x64", True)
PIPE = mm.pipeline_path("gait2354_walk")


@pytest.fixture(scope="module")
def tool_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale_tool")
    for f in ("subject01_Setup_Scale.xml", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc"):
        shutil.copy(os.path.join(PIPE, f), out)
    shutil.copy(mm.model_path("gait2354"), out)  # the setup's generic model_file
    assert osim.ScaleTool(str(out / "subject01_Setup_Scale.xml")).run()
    return out


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b))))


def test_mbjax_scaling_equals_opensims_scale_tool(tool_run):
    out = tool_run
    setup = read_scale_setup(out / "subject01_Setup_Scale.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generic = load_osim(setup.model_file)
        theirs = load_osim(out / "subject01_scaledOnly.osim")
    markers, _ = load_marker_set(setup.marker_set_file, generic)
    data = read_trc(setup.scaler_marker_file)
    factors = {}
    for step in setup.scaling_order:
        if step == "measurements":
            for m in setup.measurements:
                f = measurement_factor(generic, markers, data, m.pairs, setup.scaler_time_range)
                factors.update({b: f for b in m.bodies})
        else:
            factors.update(setup.manual)
    factors = {k: v for k, v in factors.items() if k in generic.body_names}
    ours = scale_model(generic, factors, mass=setup.mass)
    assert ours.body_names == theirs.body_names
    for a, b in ((ours.offset[:, :3, 3], theirs.offset[:, :3, 3]), (ours.com, theirs.com),
                 (ours.inertia, theirs.inertia), (ours.mass, theirs.mass),
                 (ours.muscles.location, theirs.muscles.location),
                 (ours.muscles.parameters["tendon_slack_length"],
                  theirs.muscles.parameters["tendon_slack_length"]),
                 (ours.muscles.parameters["optimal_fiber_length"],
                  theirs.muscles.parameters["optimal_fiber_length"])):
        assert rel(a, b) < 1e-12
    ours_markers = scale_markers(generic, markers, factors)
    their_markers = load_markers(out / "subject01_scaledOnly.osim", theirs)
    assert ours_markers.names == their_markers.names
    assert rel(ours_markers.offset, their_markers.offset) < 1e-12
    q = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 0.5, (3, ours.n_coordinates)))
    pose = jax.vmap(mbjax.body_poses, (None, 0))
    assert rel(pose(ours, q), pose(theirs, q)) < 1e-12

    # the MarkerPlacer: the tool's static pose, the averaged static frames, every marker moved
    table = read_storage(out / "subject01_static_output.mot")
    assert not table.in_degrees
    q46 = np.array([table.column(next(lb for lb in table.labels if lb.endswith(f"/{c}/value")))[0]
                    for c in ours.coordinate_names])
    static = read_trc(setup.placer_marker_file)
    x = average_frames(static, setup.placer_time_range, setup.max_marker_movement)  # -1: no check
    names = [n for n in static.names if n in ours_markers.names]
    measured = x[[static.names.index(n) for n in names]]
    placed = place_markers(ours, ours_markers, q46, measured, names)
    final = load_markers(out / "subject01_simbody.osim", load_osim(out / "subject01_simbody.osim"))
    assert final.names == placed.names
    assert np.abs(np.asarray(placed.offset) - np.asarray(final.offset)).max() < 2e-8
    ik = inverse_kinematics(ours, ours_markers, MarkerData(np.zeros(1), tuple(names), measured[None]),
                            weights=setup.marker_weights, coordinate_tasks=setup.coordinate_tasks, progress=False)
    w = np.array([setup.marker_weights[n] for n in names])
    wc = np.array([setup.coordinate_tasks[c].weight if c in setup.coordinate_tasks else 0.0
                   for c in ours.coordinate_names])  # all tasks here have target 0 (default or manual value)
    tracked = ours_markers.select(names)

    def objective(qq):  # OpenSim's IK objective (see mbjax.analysis.ik)
        e = np.asarray(mbjax.marker_positions(ours, tracked, jnp.asarray(qq))) - measured
        return np.sum(w * np.sum(e**2, 1)) / w.sum() + np.sum(wc * np.asarray(qq) ** 2)

    assert all(t.value == 0.0 for t in setup.coordinate_tasks.values())
    assert objective(ik.q[0]) <= objective(q46) < objective(ik.q[0]) * (1 + 1e-3)


def test_max_marker_movement_warned_as_opensims_marker_placer(tmp_path):
    """The MarkerPlacer's ``<max_marker_movement>`` 0.3 (the static trial's mm) over 1.0-1.2 s:
    OpenSim 4.6's ScaleTool logs each marker moving more (the largest of its X, Y and Z spans) and
    runs on; mbjax's ``average_frames`` given the setup's value names the same markers with the same
    movements, prefixed by the setup file and line."""
    import re

    for f in ("subject01_Setup_Scale.xml", "gait2354_Scale_MarkerSet.xml", "subject01_static.trc"):
        shutil.copy(os.path.join(PIPE, f), tmp_path)
    shutil.copy(mm.model_path("gait2354"), tmp_path)
    setup = tmp_path / "subject01_Setup_Scale.xml"
    text = setup.read_text()
    for old, new in (("<max_marker_movement>      -1.00000000 </max_marker_movement>",
                      "<max_marker_movement> 0.3 </max_marker_movement>"),
                     ("<time_range>       1.00000000       1.01000000 </time_range>", "<time_range> 1 1.2 </time_range>")):
        assert text.count(old) == 1
        text = text.replace(old, new)
    setup.write_text(text)
    log = osim.StringLogSink()
    osim.Logger.addSink(log)
    try:
        assert osim.ScaleTool(str(setup)).run()  # a warning, not an error
    finally:
        osim.Logger.removeSink(log)
    theirs = {m: float(v) for m, v in re.findall(r"Movement of marker (\S+) in \S+ is (\S+) \(threshold = 0.3\)",
                                                 log.getString())}
    s = read_scale_setup(setup)
    with pytest.warns(UserWarning) as said:
        average_frames(read_trc(s.placer_marker_file), s.placer_time_range, s.max_marker_movement,
                       s.max_marker_movement_where)
    [message] = [str(w.message) for w in said if w.category is UserWarning]
    assert message.startswith(f"{setup}:{text[:text.index('<max_marker_movement>')].count(chr(10)) + 1}: "
                              "<max_marker_movement>: ")
    ours = {m: float(v) for m, v in re.findall(r"'([^']+)' (\S+) mm", message)}
    print(f"\nmax_marker_movement 0.3 mm: OpenSim names {len(theirs)} markers, mbjax {len(ours)}; largest relative "
          f"difference {max(abs(ours[m] / theirs[m] - 1) for m in theirs):.1e}")
    assert 5 < len(theirs) < 45 and set(ours) == set(theirs)
    assert all(abs(ours[m] / theirs[m] - 1) < 1e-5 for m in theirs)  # mbjax prints 6 digits
