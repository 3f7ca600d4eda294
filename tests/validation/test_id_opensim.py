"""mbjax inverse dynamics with external loads vs OpenSim 4.6 itself (marker ``validation``).

* OpenSim's ``InverseDynamicsTool`` is run live on the Gait2354 walking setup of
  tests/data/opensim_models/gait2354_id (6 Hz coordinate filter, both ground reactions, Muscles
  excluded, 0.55-0.85 s: 19 frames) and compared with :func:`mbjax.opensim.inverse_dynamics_from_setup` on
  the same file (OpenSim's output written with 17 digits): the same times and all 23 generalized
  forces to 1e-9, in the same column order (OpenSim 4.6's multibody tree order).
* The building blocks at full precision: ``GCVSpline`` (degrees 3 and 5, inside and outside the
  data), ``Storage::pad`` + ``Storage::lowpassIIR`` (padded, resampled grid and filtered data), and
  ``ExternalForce::getForceAtTime`` / ``getPointAtTime`` / ``getTorqueAtTime``.
* OpenSim 3's load-kinematics elements of an ExternalLoads file change nothing in OpenSim 4.6's
  tool's output (mbjax ignores them too, naming them).
* The coordinate orders of every model file (tests, arm26, OpenSim's library) and of random
  topologies: CoordinateSet order and multibody tree order read from the XML alone, as OpenSim 4.6
  orders them.
* The stored result of an older OpenSim (``OutputReference/.../inverse_dynamics.sto``) is compared
  for the report only (it differs by up to ~20 N / N·m; printed, loosely bounded).
* Velocity terms of a ``CustomJoint`` whose one coordinate drives several rotation axes (generated
  two-link models, tests/_two_link_muscles.py): mbjax's equal the Lagrangian of OpenSim's own mass
  matrix; OpenSim's miss it where the coordinate drives both rotation2 and rotation3, and equal it
  with rotation1 and one other rotation, or one rotation and a translation.
"""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import read_external_loads, read_storage  # noqa: E402
from mbjax.io.signal import NaturalSpline, lowpass_storage  # noqa: E402
from mbjax.models import arm26_path  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "opensim_models", "gait2354_id")
SETUP = os.path.join(DATA, "subject01_Setup_InverseDynamics.xml")
MODEL = os.path.join(os.path.dirname(DATA), "gait2354_ik", "subject01_simbody_ik.osim")
sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """OpenSim's tool and mbjax on the same setup file."""
    out = tmp_path_factory.mktemp("id")
    cwd = os.getcwd()
    os.chdir(DATA)  # OpenSim opens <model_file> relative to the working directory
    osim.IO.SetPrecision(17)  # full doubles in OpenSim's output (default: 8 decimals)
    osim.IO.SetScientific(True)
    try:
        tool = osim.InverseDynamicsTool(SETUP)
        tool.setResultsDir(str(out / "opensim"))
        assert tool.run()
    finally:
        os.chdir(cwd)
        osim.IO.SetPrecision(8)
        osim.IO.SetScientific(False)
    ours = mbjax.opensim.inverse_dynamics_from_setup(SETUP, output_file=out / "mbjax" / "inverse_dynamics.sto")
    written = read_storage(out / "mbjax" / "inverse_dynamics.sto")
    return read_storage(out / "opensim" / "inverse_dynamics.sto"), ours, written


def test_id_tool_matches_opensim(results):
    theirs, ours, written = results
    assert ours.time.shape == (19,) and set(theirs.labels) == set(ours.labels)
    np.testing.assert_array_equal(ours.time, theirs.time)  # 0.549999699999... (OpenSim's resampled grid)
    diff = np.array([np.max(np.abs(ours.tau[:, ours.labels.index(lab)] - theirs.column(lab))) for lab in theirs.labels])
    scale = np.max(np.abs(theirs.data))
    print(f"\nID vs OpenSim 4.6 InverseDynamicsTool: max |Δτ| = {diff.max():.2e} (largest |τ| {scale:.0f}), "
          f"worst column {theirs.labels[int(np.argmax(diff))]}")
    assert diff.max() <= 1e-9
    # the file mbjax wrote holds the same numbers, labels in the same order (OpenSim 4.6's multibody tree
    # order, not the model's: both hips, then the lumbar joint, then the knees) and header as OpenSim's
    assert written.labels == theirs.labels and written.metadata["name"] == theirs.metadata["name"]
    assert written.labels != ours.labels  # IDResult keeps the model's order
    np.testing.assert_array_equal(written.data, ours.tau[:, [ours.labels.index(lab) for lab in written.labels]])


def test_load_kinematics_elements_are_ignored_as_opensim_ignores_them(results, tmp_path):
    """OpenSim 3's ``<external_loads_model_kinematics_file>`` and ``<lowpass_cutoff_frequency_for_load_kinematics>``
    in the ground-reaction file: OpenSim 4.6's tool gives the same forces as without them (it ignores
    both; ExternalLoads has no such property), and mbjax names both in its warning."""
    import shutil

    theirs, _, _ = results
    for name in os.listdir(DATA):
        shutil.copy(os.path.join(DATA, name), tmp_path / name)
    grf = tmp_path / "subject01_walk1_grf.xml"
    text = grf.read_text()
    assert text.count("<datafile>") == 1
    grf.write_text(text.replace("<datafile>", "<external_loads_model_kinematics_file> subject01_walk1_ik.mot "
                                "</external_loads_model_kinematics_file><lowpass_cutoff_frequency_for_load_kinematics> 2 "
                                "</lowpass_cutoff_frequency_for_load_kinematics><datafile>"))
    setup = tmp_path / "setup.xml"
    setup.write_text((tmp_path / "subject01_Setup_InverseDynamics.xml").read_text().replace(
        "../gait2354_ik/subject01_simbody_ik.osim", MODEL))
    loads = osim.ExternalLoads(str(grf), True)
    assert [loads.getPropertyByIndex(i).getName() for i in range(loads.getNumProperties())] == [
        "components", "objects", "groups", "datafile"]  # no load-kinematics property
    cwd = os.getcwd()
    os.chdir(tmp_path)
    osim.IO.SetPrecision(17)
    osim.IO.SetScientific(True)
    try:
        assert osim.InverseDynamicsTool(str(setup)).run()
    finally:
        os.chdir(cwd)
        osim.IO.SetPrecision(8)
        osim.IO.SetScientific(False)
    again = read_storage(tmp_path / "ResultsInverseDynamics" / "inverse_dynamics.sto")
    assert again.labels == theirs.labels
    np.testing.assert_array_equal(again.data, theirs.data)
    with pytest.warns(UserWarning, match=r"<external_loads_model_kinematics_file> 'subject01_walk1_ik\.mot'; .*"
                                         r"<lowpass_cutoff_frequency_for_load_kinematics> 2 Hz: ignored, as OpenSim 4 "
                                         r"ignores them"):
        read_external_loads(grf)


def _opensim_orders(path):
    """OpenSim 4.6's CoordinateSet order and multibody tree order of the model file ``path``."""
    model = osim.Model(str(path))
    model.initSystem()
    cs = model.getCoordinateSet()
    tree = model.getCoordinateNamesInMultibodyTreeOrder()
    return [cs.get(i).getName() for i in range(cs.getSize())], [tree.getElt(i) for i in range(tree.size())]


def _model_files():
    here = os.path.dirname(os.path.dirname(__file__))
    files = sorted(glob.glob(os.path.join(here, "data", "**", "*.osim"), recursive=True)) + [arm26_path()]
    root = os.environ.get("OPENSIM_MODELS_DIR", "")
    if root:
        files += sorted(glob.glob(os.path.join(root, "Models", "**", "*.osim"), recursive=True))
    return files


@pytest.mark.parametrize("path", _model_files(), ids=os.path.basename)
def test_coordinate_orders_are_opensims(path):
    """The two orders OpenSim's tools write coordinates in, read from the XML alone
    (:mod:`mbjax.opensim.model.osim_motion`): ``CoordinateSet`` (the IK ``.mot``) and the multibody
    tree order (the ID ``.sto``), vs OpenSim 4.6 on every model of the tests' data, arm26 and, with
    ``OPENSIM_MODELS_DIR``, every model of OpenSim's library (21 of its 34 have a tree order that
    is not the CoordinateSet's)."""
    from mbjax.opensim.model.osim_motion import coordinate_order, tree_order

    theirs_set, theirs_tree = _opensim_orders(path)
    assert list(coordinate_order(path)) == theirs_set
    assert list(tree_order(path)) == theirs_tree


def test_tree_order_is_opensims_on_unusual_topologies(tmp_path):
    """Random trees (joints and bodies listed in shuffled order, massless inner bodies, Custom, Weld,
    Ball, Free, Planar joints ...), some with a reversed joint or a loop-closing joint: mbjax's
    tree order equals OpenSim's wherever OpenSim builds the model."""
    from _osim_topologies import random_topology

    from mbjax.opensim.model.osim_motion import coordinate_order, tree_order

    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("Off")
    compared, differs = 0, 0
    try:
        for seed in range(60):
            path = tmp_path / f"m{seed}.osim"
            path.write_text(random_topology(seed))
            try:
                theirs_set, theirs_tree = _opensim_orders(path)
            except Exception:  # a massless body at a branch's end: OpenSim refuses the model
                continue
            assert list(coordinate_order(path)) == theirs_set, seed
            assert list(tree_order(path)) == theirs_tree, seed
            compared += 1
            differs += theirs_tree != theirs_set
    finally:
        osim.Logger.setLevelString(level)
    print(f"\ntree order: {compared} random models compared with OpenSim, {differs} of them not in CoordinateSet order")
    assert compared >= 50 and differs >= 40


def test_stored_reference_for_the_record(results):
    """The OpenSim model library's stored ID result (an older OpenSim): reported, loosely bounded."""
    _, ours, _ = results
    ref = read_storage(os.path.join(DATA, "inverse_dynamics_reference_0.5-0.9s.sto"))
    rows = [int(np.argmin(np.abs(ref.time - t))) for t in ours.time]
    np.testing.assert_allclose(ref.time[rows], ours.time, atol=1e-6)
    diff = np.array([np.max(np.abs(ours.tau[:, ours.labels.index(lab)] - ref.column(lab)[rows])) for lab in ref.labels])
    print(f"\nID vs the stored OutputReference inverse_dynamics.sto (older OpenSim): max |Δτ| = {diff.max():.1f} "
          f"({ref.labels[int(np.argmax(diff))]}); median over columns {np.median(diff):.2f}")
    assert diff.max() < 40.0


def _gcvspline(degree, x, y):
    g = osim.GCVSpline()
    g.setDegree(degree)
    for xi, yi in zip(x, y):
        g.addPoint(float(xi), float(yi))
    return g


@pytest.mark.parametrize("degree", [3, 5])
def test_natural_spline_is_opensims_gcvspline(degree):
    rng = np.random.default_rng(degree)
    x = np.cumsum(rng.uniform(0.5, 1.5, 30))
    y = 50 * np.sin(x) + rng.standard_normal(30)
    g = _gcvspline(degree, x, y)
    ours = NaturalSpline(x, y, degree)
    t = np.linspace(x[0] - 3, x[-1] + 3, 200)
    for nu in range(3):
        ref = np.array([g.calcValue(osim.Vector(1, float(s))) if nu == 0 else
                        g.calcDerivative(osim.StdVectorInt([0] * nu), osim.Vector(1, float(s))) for s in t])
        print(f"\nGCVSpline degree {degree}, derivative {nu}: max |Δ| / max |f| = "
              f"{np.abs(ours(t, nu) - ref).max() / np.abs(ref).max():.1e}")
        np.testing.assert_allclose(ours(t, nu), ref, atol=1e-11 * np.abs(ref).max())


def test_coordinate_filter_is_opensims():
    path = os.path.join(DATA, "subject01_walk1_ik.mot")
    s = osim.Storage(path)
    s.pad(s.getSize() // 2)
    s.lowpassIIR(6.0)
    times = osim.ArrayDouble()
    s.getTimeColumn(times)
    t_ref = np.array([times.get(i) for i in range(times.getSize())])
    ncol = s.getColumnLabels().getSize() - 1
    y_ref = np.array([[s.getStateVector(i).getData().get(j) for j in range(ncol)] for i in range(s.getSize())])
    table = read_storage(path)
    t, y = lowpass_storage(table.time, table.data, 6.0)
    np.testing.assert_array_equal(t, t_ref)  # padded, resampled at the smallest step: the same doubles
    print(f"\npad + lowpassIIR: max |Δ| / max |y| = {np.abs(y - y_ref).max() / np.abs(y_ref).max():.1e}")
    np.testing.assert_allclose(y, y_ref, atol=1e-11 * np.abs(y_ref).max())


def test_external_force_functions_are_opensims():
    xml = os.path.join(DATA, "subject01_walk1_grf.xml")
    model = osim.Model(MODEL)
    loads = osim.ExternalLoads(xml, True)
    model.addModelComponent(loads)
    model.initSystem()
    ours = read_external_loads(xml)
    t = np.linspace(0.5, 0.9, 41) + 1.234e-4  # between the samples
    at = ours.at(t)
    for k, f in enumerate(ours.forces):
        ef = loads.get(f.name)
        for name, arr in (("Force", at.forces), ("Point", at.points), ("Torque", at.torques)):
            ref = np.array([[getattr(ef, f"get{name}AtTime")(float(s)).get(i) for i in range(3)] for s in t])
            print(f"\n{f.name} {name}: max |Δ| = {np.abs(np.asarray(arr[:, k]) - ref).max():.1e} "
                  f"(max |value| {np.abs(ref).max():.3g})")
            np.testing.assert_allclose(np.asarray(arr[:, k]), ref, atol=1e-10 * max(1.0, np.abs(ref).max()))


def test_readme_example(results, monkeypatch, tmp_path):
    """The ID example of docs/how-to/opensim-models-and-pipelines.md runs (repository data paths) and its two routes agree with the tool."""
    import pathlib
    import re

    root = pathlib.Path(__file__).parents[2]
    text = (root / "docs" / "how-to" / "opensim-models-and-pipelines.md").read_text()
    code = re.search(r"## Inverse dynamics with external loads \(OpenSim's ID tool\)\n.*?```python\n(.*?)```", text,
                     re.S).group(1)
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(code.replace('"tests/data/', f'"{root}/tests/data/'), "opensim-models-and-pipelines.md", "exec"), ns)
    np.testing.assert_allclose(ns["tau"], results[1].tau, atol=1e-12)
    np.testing.assert_allclose(ns["result"].tau, results[1].tau, atol=1e-12)
    assert (tmp_path / "walk_id.sto").exists()


@pytest.mark.parametrize("joint, coords", [("BallJoint", ("q2", "q3", "q4")),
                                           ("FreeJoint", ("q2", "q3", "q4", "x", "y", "z"))])
def test_mobility_forces_of_angular_velocity_joints_are_opensims(tmp_path, joint, coords):
    """A Ball/Free joint's rotation speeds are ω_F: the ID tool's forces there are OpenSim's mobility
    forces (``InverseDynamicsSolver`` at the same state), not the generalized forces of the angles' q̇."""
    import sys
    import warnings

    import jax
    import jax.numpy as jnp

    from mbjax._spatial import xyz_angle_rate_matrix
    from mbjax.opensim.tools.id.mobility import mobility_forces

    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from test_bad_inputs_eighth_survey_osim import pendulum

    path = tmp_path / "model.osim"
    path.write_text(pendulum("", joint=joint, coords=coords, values=(0.1, -0.3, 0.5, 0.0, 0.0, 0.0)[:len(coords)]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(str(path))
    assert model.coordinate_names == ("q1",) + coords
    om = osim.Model(str(path))
    s = om.initSystem()
    cs = om.getCoordinateSet()
    solver = osim.InverseDynamicsSolver(om)
    rng = np.random.default_rng(3)
    rot = [1, 2, 3]  # the rotation coordinates in mbjax's q
    uindex = {}
    for n in model.coordinate_names:  # which entry of U (and of the solver's output) each coordinate is
        u0 = np.array([s.getU().get(i) for i in range(s.getNU())])
        cs.get(n).setSpeedValue(s, 0.25)
        uindex[n] = int(np.argmax(np.abs(np.array([s.getU().get(i) for i in range(s.getNU())]) - u0)))
        cs.get(n).setSpeedValue(s, 0.0)
    worst, moved = 0.0, 0.0
    for _ in range(5):
        q, qd, qdd = (rng.uniform(-1, 1, len(model.coordinate_names)) for _ in range(3))
        e = xyz_angle_rate_matrix(q[1], q[2], np)
        h = 1e-6  # Ė q̇ by central differences of E along q̇
        e_dot = (xyz_angle_rate_matrix(q[1] + h * qd[1], q[2] + h * qd[2], np)
                 - xyz_angle_rate_matrix(q[1] - h * qd[1], q[2] - h * qd[2], np)) / (2 * h)
        u, udot = qd.copy(), qdd.copy()
        u[rot], udot[rot] = e @ qd[rot], e @ qdd[rot] + e_dot @ qd[rot]
        for n, v in zip(model.coordinate_names, q):
            cs.get(n).setValue(s, float(v), False)
        uu, ud = np.zeros(s.getNU()), np.zeros(s.getNU())
        for k, n in enumerate(model.coordinate_names):
            uu[uindex[n]], ud[uindex[n]] = u[k], udot[k]
        s.setU(osim.Vector(uu.tolist()))
        tau_os = np.array([solver.solve(s, osim.Vector(ud.tolist())).get(uindex[n]) for n in model.coordinate_names])
        tau = np.asarray(jax.jit(mbjax.inverse_dynamics)(model, jnp.asarray(q), jnp.asarray(qd), jnp.asarray(qdd)))
        ours = mobility_forces(model, q[None], tau[None], "test")[0]
        worst = max(worst, float(np.max(np.abs(ours - tau_os))) / float(np.max(np.abs(tau_os))))
        moved = max(moved, float(np.max(np.abs(tau - tau_os))) / float(np.max(np.abs(tau_os))))
    print(f"\n{joint}: max relative |mobility forces - OpenSim| {worst:.1e}; q̇-space forces differ by {moved:.1e}")
    assert moved > 1e-3  # the two spaces differ at these poses
    assert worst < 1e-8


_ID_SETUP = """<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><InverseDynamicsTool name="t">
<results_directory>{results}</results_directory><model_file>{model}</model_file><time_range>0.1 0.9</time_range>
<forces_to_exclude>Muscles</forces_to_exclude><external_loads_file></external_loads_file>
<coordinates_file>{motion}</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>{cutoff}</lowpass_cutoff_frequency_for_coordinates>
<output_gen_force_file>id.sto</output_gen_force_file></InverseDynamicsTool></OpenSimDocument>"""


@pytest.mark.parametrize("joint, coords, cutoff", [("BallJoint", ("q2", "q3", "q4"), -1),
                                                   ("FreeJoint", ("q2", "q3", "q4", "x", "y", "z"), 6)])
def test_id_tool_takes_the_angle_rates_as_angular_velocity_as_opensims(tmp_path, joint, coords, cutoff):
    """OpenSim's ID tool puts the time derivatives of a Ball/Free joint's angle columns into Simbody's
    speeds there (the angular velocity ω_F) as they are: mbjax's tool does the same (and says so), and
    its file equals OpenSim's; the dynamics of the angles themselves (rates as q̇) differ markedly."""
    import sys
    import warnings

    import jax

    from mbjax.io import Table, write_storage
    from mbjax.opensim.tools.id.mobility import mobility_forces

    sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
    from test_bad_inputs_eighth_survey_osim import pendulum

    model_path = tmp_path / "model.osim"
    model_path.write_text(pendulum("", joint=joint, coords=coords, values=(0.1, -0.3, 0.5, 0.0, 0.0, 0.0)[:len(coords)]))
    t = np.linspace(0.0, 1.0, 51)
    angles = [0.3 + 0.4 * np.sin(2.0 * t), 0.1 + 0.5 * np.sin(3.0 * t + 0.2), -0.3 + 0.6 * t ** 2, 0.5 * np.cos(2.5 * t),
              0.1 * t, 0.05 * np.sin(t), -0.02 * t ** 2]
    names = ("q1",) + coords
    motion = tmp_path / "motion.mot"
    write_storage(motion, Table(t, names, np.stack(angles[:len(names)], 1), in_degrees=False), name="motion")
    for who in ("opensim", "mbjax"):
        (tmp_path / who).mkdir()
        (tmp_path / f"{who}.xml").write_text(_ID_SETUP.format(results=tmp_path / who, model=model_path, motion=motion,
                                                              cutoff=cutoff))
    osim.InverseDynamicsTool(str(tmp_path / "opensim.xml")).run()
    with pytest.warns(UserWarning, match=rf"takes the time derivatives of the angles of {joint} 'j2'"):
        mbjax.opensim.inverse_dynamics_from_setup(str(tmp_path / "mbjax.xml"))
    theirs, ours = read_storage(tmp_path / "opensim" / "id.sto"), read_storage(tmp_path / "mbjax" / "id.sto")
    assert theirs.labels == ours.labels
    scale = np.abs(theirs.data).max()
    diff = np.abs(ours.data - theirs.data).max() / scale
    print(f"\n{joint}: mbjax's ID tool vs OpenSim's, max relative difference {diff:.1e}")
    assert diff < 1e-8
    if cutoff < 0:  # the same frames with the file's rates taken as the angles' q̇: not OpenSim's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = mbjax.io.load_osim(str(model_path))
        spline = NaturalSpline(t, np.stack(angles[:len(names)], 1), 5)
        tq = ours.time
        q, qd, qdd = spline(tq), spline(tq, 1), spline(tq, 2)
        tau = jax.jit(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)))(model, q, qd, qdd)
        moved = np.abs(mobility_forces(model, q, np.asarray(tau), "test") - theirs.data).max() / scale
        print(f"{joint}: the angles' own dynamics differ from OpenSim's tool by {moved:.1e}")
        assert moved > 1e-2


_LINEAR = "<LinearFunction><coefficients>1 0</coefficients></LinearFunction>"
_POLY = "<PolynomialFunction><coefficients>0.1 -0.3 0.5 0.2</coefficients></PolynomialFunction>"
_PWL = "<PiecewiseLinearFunction><x>-1.5 0 0.7 2</x><y>-0.2 0 0.15 0.02</y></PiecewiseLinearFunction>"
_ELBOWS = {  # rotation1-3 (axis, function of q2 or None), translation1's function; whether OpenSim is off
    "rotation1-3 of q2, oblique axes": ((("0 0 1", _LINEAR), ("0.3 1 0.2", _POLY), ("1 0.5 0.4", _PWL)), None, True),
    "rotation1-3 of q2, orthogonal axes": ((("0 0 1", _LINEAR), ("0 1 0", _POLY), ("1 0 0", _PWL)), None, True),
    "rotation2 and rotation3 of q2": ((("0 1 0", None), ("0.3 1 0.2", _POLY), ("1 0.5 0.4", _PWL)), None, True),
    "rotation1 and rotation2 of q2": ((("0.2 0.1 1", _POLY), ("1 0.5 0.4", _PWL), ("0 1 0", None)), None, False),
    "rotation1 and rotation3 of q2": ((("0.2 0.1 1", _POLY), ("0 1 0", None), ("1 0.5 0.4", _PWL)), None, False),
    "one rotation and a translation of q2": ((("0 0 1", _POLY), ("1 0 0", None), ("0 1 0", None)), _POLY, False),
}


@pytest.mark.parametrize("case", list(_ELBOWS))
def test_custom_joint_velocity_terms_are_lagrangian_in_mbjax(tmp_path, case):
    """c(q, q̇) = τ(q, q̇, 0) - τ(q, 0, 0) (gravity off) against the Lagrangian of OpenSim's own mass
    matrix, ċ_i = (∂M_ij/∂q_k - ½ ∂M_jk/∂q_i) q̇_j q̇_k by central differences of ``calcM``: mbjax's
    equals it to the differences' error; OpenSim's misses it where one coordinate drives both the
    rotation2 and rotation3 axes of a ``CustomJoint`` (docs/validation.md, inverse dynamics).  The
    mass matrices themselves are equal."""
    import jax.numpy as jnp
    from _opensim_tools import OpenSimDynamics
    from _two_link_muscles import transform_axis, two_link

    rotations, translation, opensim_off = _ELBOWS[case]
    elbow = [transform_axis(f"rotation{k + 1}", axis, fn) for k, (axis, fn) in enumerate(rotations)]
    elbow += [transform_axis("translation1", "1 0 0", translation), transform_axis("translation2", "0 1 0"),
              transform_axis("translation3", "0 0 1")]
    path = tmp_path / "elbow.osim"
    path.write_text(two_link(elbow=elbow).replace("<gravity>0 -9.80665 0</gravity>", "<gravity>0 0 0</gravity>"))
    model = mbjax.io.load_osim(str(path))
    om = osim.Model(str(path))
    s = om.initSystem()
    n = s.getNU()
    assert n == 2 and list(model.coordinate_names) == ["q1", "q2"]
    dynamics = OpenSimDynamics(om, s)

    rng = np.random.default_rng(3)
    worst_mbjax, worst_opensim = 0.0, 0.0
    for _ in range(3):
        q, u = rng.uniform([-1.0, 0.2], [1.5, 1.8]), rng.normal(size=2)
        dM = dynamics.mass_derivatives(q)  # dM[k] = ∂M/∂q_k
        lagrangian = np.einsum("kij,j,k->i", dM, u, u) - 0.5 * np.einsum("ijk,j,k->i", dM, u, u)
        c_os = dynamics.velocity_terms(q, u)
        M = dynamics.mass(q)
        np.testing.assert_allclose(mbjax.mass_matrix(model, jnp.asarray(q)), M, rtol=0, atol=1e-14 * np.abs(M).max())
        zero = jnp.zeros(2)
        c_mb = np.asarray(mbjax.inverse_dynamics(model, jnp.asarray(q), jnp.asarray(u), zero)
                          - mbjax.inverse_dynamics(model, jnp.asarray(q), zero, zero))
        scale = np.abs(lagrangian).max()
        worst_mbjax = max(worst_mbjax, np.abs(c_mb - lagrangian).max() / scale)
        worst_opensim = max(worst_opensim, np.abs(c_os - lagrangian).max() / scale)
    print(f"{case}: |c - Lagrangian of OpenSim's M| / |c|: mbjax {worst_mbjax:.1e}, OpenSim {worst_opensim:.1e}")
    assert worst_mbjax < 1e-6
    assert (worst_opensim > 1e-3) if opensim_off else (worst_opensim < 1e-6)
