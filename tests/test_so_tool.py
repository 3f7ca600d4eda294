"""Static optimization from OpenSim setup files (mbjax.so_tool) on the arm26 tutorial's own files.

Independent references:

* the states: a motion quadratic in time, which OpenSim's natural quintic splines reproduce
  exactly, so q̇ and q̈ (spline of the speeds) are known in closed form;
* the optimum: the KKT conditions of min Σ a² s.t. R F(a) = τ, checked by hand at every frame
  (stationarity with the multipliers recovered by least squares on the free activations);
* the files: what was written reads back, with OpenSim's names and time grid.

OpenSim 4.6's own AnalyzeTool run of the same setup is the reference in
tests/validation/test_so_opensim.py.
"""

from __future__ import annotations

import os
import pathlib

import jax
import numpy as np
import pytest

import mbjax
from mbjax.io import Table, read_storage
from mbjax.forces import PointActuator, TorqueActuator
from mbjax.so_tool import Reserve, read_reserves, read_so_setup, states_trajectory, static_optimization_from_setup

DATA = pathlib.Path(__file__).parent / "data" / "opensim_models" / "arm26_so"
SETUP = DATA / "arm26_Setup_StaticOptimization.xml"


def test_read_tutorial_setup():
    s = read_so_setup(SETUP)
    assert s.name == "arm26" and os.path.basename(s.model_file) == "arm26.osim"
    assert s.coordinates_file == str(DATA / "arm26_InverseKinematics.mot")
    assert s.time_range == (0.0, 1.0) and s.lowpass_cutoff == 6.0
    assert s.activation_exponent == 2.0 and s.use_muscle_physiology and s.use_model_force_set
    assert s.force_set_files == () and s.results_directory == str(DATA / "PhysiologicalResults")


def test_states_are_opensims_splines_on_a_quadratic_motion():
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 31)
    a, b, c = np.array([0.2, 1.0]), np.array([0.5, -0.4]), np.array([-1.2, 2.0])
    q = a + np.outer(t, b) + np.outer(t ** 2, c)
    table = Table(t, tuple(model.coordinate_names), q, False, {})
    tt, qs, qds, qdds = states_trajectory(model, table, -1.0, (0.1, 0.4))
    sel = (t >= 0.1 - 1e-12) & (t <= 0.4 + 1e-12)
    np.testing.assert_allclose(tt, t[sel], rtol=0, atol=0)
    np.testing.assert_allclose(qs, q[sel], rtol=0, atol=1e-14)
    np.testing.assert_allclose(qds, b + 2 * np.outer(tt, c), rtol=0, atol=1e-11)
    np.testing.assert_allclose(qdds, np.broadcast_to(2 * c, qdds.shape), rtol=0, atol=1e-8)


def test_tutorial_setup_runs_writes_and_satisfies_kkt(tmp_path):
    """The tutorial's setup file (6 Hz filter, 121 frames) on arm26 with straight paths (its wrapped
    run, against OpenSim itself, is in tests/validation/test_so_opensim.py)."""
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    res = static_optimization_from_setup(SETUP, model, results_directory=tmp_path, progress=False)
    # OpenSim's frames: the padded, filtered grid from its last row at or before 0 s (-2e-7 s) to 1 s
    assert res.time.shape == (121,) and res.time[0] < 0 < res.time[1] and abs(res.time[0]) < 1e-6
    assert res.labels == tuple(model.muscle_names) and np.asarray(res.result.converged).all()
    R = np.asarray(jax.vmap(lambda q: mbjax.muscles.opensim_moment_arms(model, q))(res.q))
    tau = np.einsum("tqm,tm->tq", R, res.forces)
    np.testing.assert_allclose(tau, res.tau, rtol=0, atol=1e-9 * max(1.0, np.abs(res.tau).max()))
    # KKT of min Σ a² with 0.01 <= a <= 1: free activations have 2 a = -(R f)ᵀ λ for one λ per frame
    f_opt = res.forces / res.activations
    for k in range(0, 121, 20):
        a = res.activations[k]
        free = (a > 0.01 + 1e-9) & (a < 1 - 1e-9)
        A = R[k] * f_opt[k]
        lam, *_ = np.linalg.lstsq(-A[:, free].T, 2 * a[free], rcond=None)
        np.testing.assert_allclose(-A[:, free].T @ lam, 2 * a[free], rtol=0, atol=1e-8)
        bound = ~free  # at the lower bound the gradient must point into the box
        assert np.all(2 * a[bound] + A[:, bound].T @ lam >= -1e-8)
    act = read_storage(tmp_path / "arm26_StaticOptimization_activation.sto")
    force = read_storage(tmp_path / "arm26_StaticOptimization_force.sto")
    assert act.labels == res.labels and force.labels == res.labels
    np.testing.assert_allclose(act.data, res.activations, rtol=1e-12, atol=0)
    np.testing.assert_allclose(force.time, res.time, rtol=0, atol=1e-15)


def test_reserves_are_read_and_other_actuators_refused(tmp_path):
    good = tmp_path / "reserves.xml"
    good.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r">
      <defaults><CoordinateActuator name="default"><optimal_force>1000</optimal_force></CoordinateActuator>
      </defaults><objects>
      <PointActuator name="FX"><body>pelvis</body><point>-0.07 0 0</point><force_is_global>true</force_is_global>
        <optimal_force>4</optimal_force></PointActuator>
      <CoordinateActuator name="elbow_reserve"><coordinate>r_elbow_flex</coordinate>
        <optimal_force>10</optimal_force><min_control>-5</min_control><max_control>5</max_control>
      </CoordinateActuator>
      <CoordinateActuator name="off"><isDisabled>true</isDisabled><coordinate>r_shoulder_elev</coordinate>
      </CoordinateActuator>
      <CoordinateActuator name="shoulder_reserve"><coordinate>r_shoulder_elev</coordinate></CoordinateActuator>
      <TorqueActuator name="MZ"><bodyA>pelvis</bodyA><bodyB>ground</bodyB><optimal_force>2</optimal_force>
      </TorqueActuator></objects></ForceSet></OpenSimDocument>""")
    # file order; the <defaults> optimal force; the disabled one left out; OpenSim's property defaults
    assert read_reserves(good) == (
        PointActuator("FX", "pelvis", (-0.07, 0.0, 0.0), (1.0, 0.0, 0.0), False, True, 4.0),
        Reserve("elbow_reserve", "r_elbow_flex", 10.0, -5.0, 5.0),
        Reserve("shoulder_reserve", "r_shoulder_elev", 1000.0),
        TorqueActuator("MZ", "pelvis", "ground", (0.0, 0.0, 1.0), True, 2.0))
    bad = tmp_path / "residuals.xml"
    bad.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>
      <McKibbenActuator name="FX"><body>pelvis</body></McKibbenActuator></objects></ForceSet></OpenSimDocument>""")
    with pytest.raises(NotImplementedError, match=r"residuals.xml.*McKibbenActuator.*FX"):
        read_reserves(bad)
    bad.write_text("""<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>
      <PointActuator name="FX"><body>pelvis</body><point>0 1</point></PointActuator></objects></ForceSet>
      </OpenSimDocument>""")
    with pytest.raises(ValueError, match=r"residuals.xml:2.*<point> must be three numbers"):
        read_reserves(bad)


def test_reserve_carries_what_muscles_cannot(tmp_path):
    """With a strong elbow reserve and muscles limited, the reserve takes the rest: R F + τ_r = τ."""
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 31)
    q = np.stack([0.1 + 0.0 * t, 0.5 + 1.5 * t ** 2], 1)
    from mbjax.so_tool import static_optimization_motion

    res = static_optimization_motion(model, Table(t, tuple(model.coordinate_names), q, False, {}),
                                     reserves=(Reserve("elbow", "r_elbow_flex", 1.0),), progress=False)
    assert res.labels[-1] == "elbow" and res.activations.shape == (31, 7)
    R = np.asarray(jax.vmap(lambda x: mbjax.muscles.opensim_moment_arms(model, x))(res.q))
    tau = np.einsum("tqm,tm->tq", R, res.forces[:, :6])
    tau[:, 1] += res.forces[:, 6]
    np.testing.assert_allclose(tau, res.tau, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.forces[:, 6], res.activations[:, 6] * 1.0, rtol=0, atol=0)


def test_second_motion_of_the_same_length_does_not_trace_again(monkeypatch):
    """Compile once, run many: a second motion (new values, same frame count) reuses the program."""
    from mbjax import so_tool
    from mbjax.so_tool import static_optimization_motion

    traces = []
    inner = so_tool.static_optimization_trajectory

    def counting(*a, **k):
        traces.append(1)
        return inner(*a, **k)

    monkeypatch.setattr(so_tool, "static_optimization_trajectory", counting)
    model = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.linspace(0.0, 0.5, 21)
    names = tuple(model.coordinate_names)
    first = static_optimization_motion(model, Table(t, names, np.stack([0.1 + 0 * t, 0.5 + t], 1), False, {}),
                                       progress=False)
    second = static_optimization_motion(model, Table(t, names, np.stack([0.2 + t, 1.0 - t], 1), False, {}),
                                        progress=False)
    assert len(traces) == 1
    assert not np.allclose(first.activations, second.activations)


def test_nan_in_the_model_is_reported_not_returned():
    """The solver is traced without run-time checks (so it can be cached on disk): a path point
    made NaN must still stop the run with a message naming the frames, not return NaN activations."""
    import equinox as eqx

    from mbjax.so_tool import static_optimization_motion

    model = mbjax.models.load("arm26", ignore_wrapping=True)
    paths = model.extras["muscles"]
    bad = eqx.tree_at(lambda p: p.location, paths, paths.location.at[2, 0, 0].set(np.nan))
    model = eqx.tree_at(lambda m: m.extras, model, {**model.extras, "muscles": bad})
    t = np.linspace(0.0, 0.5, 11)
    table = Table(t, tuple(model.coordinate_names), np.stack([0.1 + 0 * t, 0.5 + t], 1), False, {})
    with pytest.raises(ValueError, match=r"NaN or inf at 11 of 11 frames \(first at t = 0 s\)"):
        static_optimization_motion(model, table, progress=False)
