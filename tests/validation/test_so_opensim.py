"""``mbjax.opensim.tools.so`` vs OpenSim 4.6's own AnalyzeTool on the arm26 static-optimization tutorial.

The tutorial's setup file runs in OpenSim (``AnalyzeTool(setup).run()``) and in mbjax, on the
shipped arm26 *with* its wrap objects, the 6 Hz filter and the 121 frames of the tutorial.  Only
OpenSim's optimizer settings are changed in OpenSim's copy: ``optimizer_convergence_criterion``
1e-10 (default 1e-4) and ``output_precision`` 16 (default 8), so the comparison measures the
formulation, not IPOPT's stopping rule or the file's digits.

The ``_StaticOptimization_controls.xml`` (a ``ControlSet``) each writes is read back by OpenSim's
``ControlSet``: mbjax's nodes are its activations to the bit, the same times, class defaults and
values (to the activations' agreement) as OpenSim's own file; and mbjax's writer reproduces
OpenSim's file byte for byte from its nodes.

The stored ``PhysiologicalResults`` of the tutorial came from an older OpenSim and the tutorial's
own copy of arm26: mbjax is reported against them too (printed, with a loose bound).

A gait trial (tests/data/opensim_models/gait2354_so: the scaled Gait2354 subject with 54 muscles,
the pipeline's 6 pelvis residuals, PointActuator and TorqueActuator, and 17 coordinate reserves,
both ground reactions, 19 frames) runs the same way.  There OpenSim's IPOPT ends every frame with
"Restoration failed" at convergence criterion 1e-10 and an acceleration-constraint violation of
~1e-3 rad/s² at the toes (4.4 at one frame), so its activations are not the optimum to 1e-6.  The test checks
(1) the formulation: OpenSim's own solution, evaluated in mbjax's problem (M, τ with the ground
reactions, unit-force moment arms, f_opt, the residuals' columns), has the very constraint
violation ‖M⁻¹(R F + B x - τ)‖ that OpenSim reports for it, at every frame; (2) optimality:
mbjax's solution meets the constraints to 1e-8 and costs no more than OpenSim's wherever
OpenSim's is feasible; (3) the activations agree except where OpenSim stopped early.
"""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import re  # noqa: E402

import jax  # noqa: E402

import mbjax  # noqa: E402
from mbjax.forces import actuator_matrix  # noqa: E402
from mbjax.io import read_storage  # noqa: E402
from mbjax.muscles import opensim_moment_arms  # noqa: E402
from mbjax.analysis.sharing import muscle_force_coefficients  # noqa: E402
from mbjax.opensim.tools.so import Reserve, static_optimization_from_setup  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _opensim_tools import run_analyze_tool  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "opensim_models" / "arm26_so"
GAIT = DATA.parent / "gait2354_so"


def _rewritten_setup(source, substitutions, tmp_path):
    """A copy of an OpenSim setup file in ``tmp_path`` with each ``(old, new)`` text replaced (each
    ``old`` must be there)."""
    text = source.read_text()
    for old, new in substitutions:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "setup.xml"
    path.write_text(text)
    return path


def _opensim_setup(tmp_path):
    return _rewritten_setup(DATA / "arm26_Setup_StaticOptimization.xml", (
        ("<model_file> arm26.osim </model_file>", f"<model_file>{mbjax.models.model_path('arm26')}</model_file>"),
        ("<coordinates_file> arm26_InverseKinematics.mot </coordinates_file>",
         f"<coordinates_file>{DATA / 'arm26_InverseKinematics.mot'}</coordinates_file>"),
        ("<results_directory> PhysiologicalResults </results_directory>",
         f"<results_directory>{tmp_path / 'opensim'}</results_directory>"),
        ("<output_precision> 8 </output_precision>", "<output_precision> 16 </output_precision>"),
        ("<use_muscle_physiology> true </use_muscle_physiology>",
         "<use_muscle_physiology> true </use_muscle_physiology>"
         "<optimizer_convergence_criterion> 1e-10 </optimizer_convergence_criterion>"
         "<optimizer_max_iterations> 1000 </optimizer_max_iterations>")), tmp_path)


def test_muscle_control_bounds_bound_the_activations_as_in_opensim(tmp_path):
    """OpenSim's static optimization bounds each actuator by its controls: a muscle's <max_control>
    0.02 holds BIClong there, a <min_control> 0.2 keeps BRA above it (mbjax had [minimum_activation, 1]
    whatever the file said: activations up to 0.35 apart).  The tutorial's trial and program."""
    text = pathlib.Path(mbjax.models.model_path("arm26")).read_text()
    for name, tag, value in (("BIClong", "max_control", 0.02), ("BRA", "min_control", 0.2)):
        at = text.index("<max_isometric_force>", text.index(f'name="{name}"'))
        text = text[:at] + f"<{tag}>{value}</{tag}>" + text[at:]
    model_file = tmp_path / "arm26_controls.osim"
    model_file.write_text(text)
    setup = _opensim_setup(tmp_path)
    setup.write_text(setup.read_text().replace(str(mbjax.models.model_path("arm26")), str(model_file)))
    run_analyze_tool(setup, tmp_path)
    res = static_optimization_from_setup(setup, results_directory=tmp_path / "mbjax", progress=False)
    act = read_storage(tmp_path / "opensim" / "arm26_StaticOptimization_activation.sto")
    theirs = act.data[:, [list(act.labels).index(m) for m in res.labels]]
    k = {m: i for i, m in enumerate(res.labels)}
    assert np.all(np.abs(theirs[:, k["BIClong"]] - 0.02) < 1e-9) and np.all(theirs[:, k["BRA"]] >= 0.2 - 1e-9)
    assert np.asarray(res.result.converged).all()
    np.testing.assert_allclose(res.activations, theirs, rtol=0, atol=1e-6)


def test_tutorial_static_optimization_equals_opensim(tmp_path):
    setup = _opensim_setup(tmp_path)
    run_analyze_tool(setup, tmp_path)
    res = static_optimization_from_setup(setup, mbjax.models.load("arm26"), results_directory=tmp_path / "mbjax",
                                         progress=False)
    act = read_storage(tmp_path / "opensim" / "arm26_StaticOptimization_activation.sto")
    force = read_storage(tmp_path / "opensim" / "arm26_StaticOptimization_force.sto")
    cols = [list(act.labels).index(m) for m in res.labels]
    np.testing.assert_allclose(res.time, act.time, rtol=0, atol=1e-12)
    da = np.abs(res.activations - act.data[:, cols])
    df = np.abs(res.forces - force.data[:, cols])
    stored = read_storage(DATA / "arm26_StaticOptimization_activation_reference.sto")
    ds = np.abs(res.activations - stored.data[:, [list(stored.labels).index(m) for m in res.labels]])
    print(f"arm26 tutorial SO, {res.time.size} frames: vs OpenSim 4.6 max |Δa| {da.max():.1e} (median "
          f"{np.median(da):.1e}), max |ΔF| {df.max():.1e} N; vs the stored reference (older OpenSim, min "
          f"activation not enforced) max |Δa| {ds.max():.3f}, median {np.median(ds):.4f}")
    assert np.asarray(res.result.converged).all()
    assert da.max() < 1e-6
    assert df.max() < 1e-3
    assert ds.max() < 0.1  # a different OpenSim and model copy: same motion, same muscles, close
    name = "arm26_StaticOptimization_controls.xml"
    ours, theirs = _controls(tmp_path / "mbjax" / name), _controls(tmp_path / "opensim" / name)
    assert list(ours) == list(theirs) == list(res.labels)
    dc = 0.0
    for k, m in enumerate(res.labels):
        (t_ours, x_ours, bounds_ours), (t_theirs, x_theirs, bounds_theirs) = ours[m], theirs[m]
        np.testing.assert_array_equal(t_ours, res.time)  # OpenSim reads mbjax's nodes back to the bit
        np.testing.assert_array_equal(x_ours, res.activations[:, k])
        np.testing.assert_allclose(t_ours, t_theirs, rtol=0, atol=1e-12)
        assert bounds_ours == bounds_theirs
        dc = max(dc, float(np.abs(x_ours - x_theirs).max()))
    print(f"controls .xml read back by OpenSim's ControlSet: max |Δ| at the nodes vs OpenSim's own file {dc:.1e}")
    assert dc < 1e-6


def _controls(path):
    """OpenSim's ControlSet(path): per control its node times, node values and (is_model_control,
    extrapolate, default min and max, filter_on, use_steps, kp, kv, min and max node counts)."""
    cs = osim.ControlSet(str(path))
    out = {}
    for i in range(cs.getSize()):
        c = osim.ControlLinear.safeDownCast(cs.get(i))
        n = c.getNumParameters()
        out[c.getName()] = (np.array([c.getParameterTime(k) for k in range(n)]),
                            np.array([c.getParameterValue(k) for k in range(n)]),
                            (c.getIsModelControl(), c.getExtrapolate(), c.getDefaultParameterMin(),
                             c.getDefaultParameterMax(), c.getFilterOn(), c.getUseSteps(), c.getKp(), c.getKv(),
                             c.getControlMinValues().getSize(), c.getControlMaxValues().getSize()))
    return out


def test_columns_in_opensims_force_set_order(tmp_path):
    """A model whose own CoordinateActuator comes before its muscles in the ForceSet, and a force-set
    file whose reserves are listed elbow first (not in coordinate order): OpenSim writes the columns
    in ForceSet order (the model's, then the file's), not the multibody tree's; mbjax's three files
    the same, with OpenSim's values (arm26 with straight paths)."""
    from _osim_models import strip_wrapping

    text = pathlib.Path(strip_wrapping(mbjax.models.model_path("arm26"), str(tmp_path / "straight.osim"))).read_text()
    at = text.index("<objects>", text.index("<ForceSet")) + len("<objects>")
    model_file = tmp_path / "arm.osim"
    model_file.write_text(text[:at] + '<CoordinateActuator name="model_elbow"><coordinate>r_elbow_flex</coordinate>'
                          "<optimal_force>5</optimal_force></CoordinateActuator>" + text[at:])
    reserves = tmp_path / "reserves.xml"
    reserves.write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>'
                        + "".join(f'<CoordinateActuator name="{n}"><coordinate>{c}</coordinate><optimal_force>3'
                                  "</optimal_force></CoordinateActuator>"
                                  for n, c in (("elbow_res", "r_elbow_flex"), ("shoulder_res", "r_shoulder_elev")))
                        + "</objects></ForceSet></OpenSimDocument>")
    setup = _opensim_setup(tmp_path)
    setup.write_text(setup.read_text().replace(str(mbjax.models.model_path("arm26")), str(model_file)).replace(
        "<force_set_files> </force_set_files>", f"<force_set_files>{reserves}</force_set_files>").replace(
        "<final_time>       1.00000000 </final_time>", "<final_time> 0.3 </final_time>"))
    run_analyze_tool(setup, tmp_path)
    res = static_optimization_from_setup(setup, results_directory=tmp_path / "mbjax", progress=False)
    assert res.labels[6:] == ("model_elbow", "elbow_res", "shoulder_res")  # the result: muscles first
    order = ("model_elbow", "TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA", "elbow_res", "shoulder_res")
    for kind in ("activation", "force"):
        ours = read_storage(tmp_path / "mbjax" / f"arm26_StaticOptimization_{kind}.sto")
        theirs = read_storage(tmp_path / "opensim" / f"arm26_StaticOptimization_{kind}.sto")
        assert ours.labels[:9] == theirs.labels[:9] == order
        assert np.abs(ours.data[:, :9] - theirs.data[:, :9]).max() < (1e-6 if kind == "activation" else 1e-4)
    ours, theirs = (_controls(tmp_path / who / "arm26_StaticOptimization_controls.xml") for who in ("mbjax", "opensim"))
    assert list(ours) == list(theirs) == list(order)


def test_controls_file_is_opensims_text(tmp_path):
    """mbjax's writer given the nodes of OpenSim's own ``_StaticOptimization_controls.xml`` (the arm26
    tutorial, 121 frames) writes that file byte for byte."""
    import xml.etree.ElementTree as ET

    from mbjax.io import Table
    from mbjax.opensim.tools.so import controls_text

    setup = _opensim_setup(tmp_path)
    run_analyze_tool(setup, tmp_path)
    path = tmp_path / "opensim" / "arm26_StaticOptimization_controls.xml"
    objects = ET.parse(path).getroot().find("ControlSet/objects")
    time = np.array([float(n.findtext("t")) for n in objects[0].find("x_nodes")])
    values = np.array([[float(n.findtext("value")) for n in c.find("x_nodes")] for c in objects]).T
    assert values.shape == (121, 6)
    text = controls_text(Table(time, tuple(c.get("name") for c in objects), values, False))
    assert text == path.read_text()


@pytest.mark.extended  # another arm26 static optimization program (~25 s); the rule that leaves such muscles
# out is the model loader's, checked in CI by tests/test_bad_inputs_eighth_survey_osim.py
def test_muscle_that_applies_no_force_is_left_out_as_opensim_leaves_it_out(tmp_path):
    """arm26 with BRA's ``appliesForce`` false (written by OpenSim 4.6): OpenSim's static optimization
    has no BRA column and the other five muscles share the load; mbjax's the same (and it warns)."""
    model = osim.Model(str(mbjax.models.model_path("arm26")))
    model.getMuscles().get("BRA").set_appliesForce(False)
    path = tmp_path / "arm26_no_bra.osim"
    model.printToXML(str(path))
    setup = _opensim_setup(tmp_path)
    setup.write_text(setup.read_text().replace(str(mbjax.models.model_path("arm26")), str(path)))
    run_analyze_tool(setup, tmp_path)
    act = read_storage(tmp_path / "opensim" / "arm26_StaticOptimization_activation.sto")
    with pytest.warns(UserWarning, match="appliesForce false left out"):
        res = static_optimization_from_setup(setup, results_directory=tmp_path / "mbjax", progress=False)
    assert act.labels == res.labels == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort")
    assert np.abs(res.activations - act.data).max() < 1e-6


def _gait_setup(tmp_path):
    """The gait setup with absolute paths, 17 digits and OpenSim's tightest practical IPOPT settings."""
    ids = GAIT.parent / "gait2354_id"
    return _rewritten_setup(GAIT / "subject01_Setup_StaticOptimization.xml", (
        ("<model_file>subject01_simbody.osim</model_file>",
         f"<model_file>{GAIT / 'subject01_simbody.osim'}</model_file>"),
        ("<force_set_files>gait2354_CMC_Actuators.xml</force_set_files>",
         f"<force_set_files>{GAIT / 'gait2354_CMC_Actuators.xml'}</force_set_files>"),
        ("<external_loads_file>../gait2354_id/subject01_walk1_grf.xml</external_loads_file>",
         f"<external_loads_file>{ids / 'subject01_walk1_grf.xml'}</external_loads_file>"),
        ("<coordinates_file>../gait2354_id/subject01_walk1_ik.mot</coordinates_file>",
         f"<coordinates_file>{ids / 'subject01_walk1_ik.mot'}</coordinates_file>"),
        ("<results_directory>ResultsStaticOptimization</results_directory>",
         f"<results_directory>{tmp_path / 'opensim'}</results_directory>"),
        ("<output_precision>8</output_precision>", "<output_precision>16</output_precision>"),
        ("<use_muscle_physiology>true</use_muscle_physiology>",
         "<use_muscle_physiology>true</use_muscle_physiology>"
         "<optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion>"
         "<optimizer_max_iterations>1000</optimizer_max_iterations>")), tmp_path)


@pytest.mark.extended  # ~35 s; CI: test_tutorial_static_optimization_equals_opensim and test_sharing_opensim.py
def test_gait_static_optimization_with_residuals_equals_opensim(tmp_path):
    setup = _gait_setup(tmp_path)
    sink = osim.StringLogSink()
    osim.Logger.addSink(sink)
    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("Info")  # the per-frame report is read from the log (another test may have silenced it)
    try:
        run_analyze_tool(setup, tmp_path)
    finally:
        osim.Logger.removeSink(sink)
        osim.Logger.setLevelString(level)
    log = sink.getString()
    reported = np.array([float(v) for v in re.findall(r"Constraint violation = ([0-9.eE+-]+)", log)])
    performance = np.array([float(v) for v in re.findall(r"Performance = ([0-9.eE+-]+)", log)])
    model = mbjax.io.load_osim(GAIT / "subject01_simbody.osim")
    res = static_optimization_from_setup(setup, model, results_directory=tmp_path / "mbjax", progress=False)
    act = read_storage(tmp_path / "opensim" / "subject01_walk1_StaticOptimization_activation.sto")
    force = read_storage(tmp_path / "opensim" / "subject01_walk1_StaticOptimization_force.sto")
    assert act.labels == res.labels and len(res.labels) == 54 + 6 + 17  # muscles, residuals, reserves
    np.testing.assert_allclose(res.time, act.time, rtol=0, atol=1e-12)
    T = res.time.size
    assert T == 19 and reported.shape == (T,) and performance.shape == (T,)

    # (1) OpenSim's solution in mbjax's problem has the violation OpenSim reports, frame by frame
    nm = len(res.muscle_names)
    body = tuple(r for r in res.reserves if not isinstance(r, Reserve))
    names = list(model.coordinate_names)
    x = act.data

    @jax.jit
    def pieces(q, qd):
        R = opensim_moment_arms(model, q)
        f_opt, _ = muscle_force_coefficients(model, q, qd, R=R)
        return R, f_opt, actuator_matrix(model, body, q), mbjax.mass_matrix(model, q)

    def columns(R, f_opt, B):  # ∂(generalized force)/∂(activation or control), (nq, nm + na)
        A = np.zeros((len(names), nm + len(res.reserves)))
        A[:, :nm] = R * f_opt[None, :]
        for j, r in enumerate(res.reserves):
            if isinstance(r, Reserve):
                A[names.index(r.coordinate), nm + j] = r.optimal_force
            else:
                A[:, nm + j] = B[:, body.index(r)]
        return A

    lo = np.concatenate([np.asarray(mbjax.muscles.parameters.hill_parameters(
        mbjax.muscles.paths.get_paths(model))["minimum_activation"]), [r.min_control for r in res.reserves]])
    hi = np.concatenate([np.ones(nm), [r.max_control for r in res.reserves]])
    ours_violation = np.empty(T)
    kkt = np.empty(T)
    for k in range(T):
        R, f_opt, B, M = (np.asarray(v) for v in pieces(res.q[k], res.qd[k]))
        A = columns(R, f_opt, B)
        ours_violation[k] = np.linalg.norm(np.linalg.solve(M, R @ (x[k, :nm] * f_opt) + A[:, nm:] @ x[k, nm:]
                                                           - res.tau[k]))
        # mbjax's optimum certified on its own (KKT of min Σ x² s.t. A x = τ - passive, lo <= x <= hi):
        # one λ with 2 x_j = (Aᵀλ)_j where x_j is free, and the bound's sign where it is not
        xk = res.activations[k]
        assert np.all(xk >= lo - 1e-9) and np.all(xk <= hi + 1e-9)
        free = (xk > lo + 1e-7) & (xk < hi - 1e-7)
        lam = np.linalg.lstsq(A[:, free].T, 2 * xk[free], rcond=None)[0]
        g = 2 * xk - A.T @ lam
        kkt[k] = max(np.abs(g[free]).max(), np.maximum(0, -g[xk <= lo + 1e-7]).max(initial=0),
                     np.maximum(0, g[xk >= hi - 1e-7]).max(initial=0))
    print(f"mbjax's KKT residual (stationarity, bound signs) at most {kkt.max():.1e}")
    assert kkt.max() < 1e-6
    dv = np.abs(ours_violation - reported)
    print(f"\ngait SO, {T} frames: OpenSim's reported constraint violation {reported.min():.1e}-{reported.max():.2f} "
          f"rad/s²; recomputed in mbjax's problem: max |Δ| {dv.max():.1e}")
    assert np.all(dv <= 1e-7 + 1e-6 * reported)

    # (2) mbjax: feasible to rounding, and no costlier than OpenSim wherever OpenSim is feasible
    assert np.asarray(res.result.converged).all()
    assert np.abs(np.asarray(res.result.residual)).max() < 1e-8
    objective = np.sum(res.activations ** 2, axis=1)
    np.testing.assert_allclose(objective, np.asarray(res.result.objective), rtol=1e-12)
    feasible = reported < 1e-4
    # how many frames OpenSim's IPOPT solves varies with the CPU (none on some machines): (1) above
    # and (3) below do not depend on it; this check covers the frames it did solve
    print(f"OpenSim met its constraints (violation < 1e-4) at {feasible.sum()} of {T} frames")
    assert np.all(objective[feasible] <= performance[feasible] * (1 + 1e-9))
    close = reported < 1e-2  # elsewhere OpenSim's is cheaper only by violating the constraints by ~1e-3
    assert np.all((objective - performance)[close] <= 1e-6 * performance[close])

    # (3) activations and forces: equal except where OpenSim stopped early
    da = np.abs(res.activations - act.data)
    df = np.abs(res.forces - force.data[:, [force.labels.index(n) for n in res.labels]])
    # the force file repeats the ground reactions as OpenSim records them (ExternalForce::getRecordValues)
    ext_labels, ext_values = res.external
    assert len(ext_labels) == 18 and set(force.labels) == set(res.labels) | set(ext_labels)
    ours_file = read_storage(tmp_path / "mbjax" / "subject01_walk1_StaticOptimization_force.sto")
    assert ours_file.labels == force.labels  # same columns, same order
    dx = np.abs(ext_values - force.data[:, [force.labels.index(n) for n in ext_labels]])
    assert dx.max() <= 1e-9 * max(1.0, np.abs(ext_values).max())
    print(f"mbjax cost below OpenSim's at its feasible frames by {performance[feasible] - objective[feasible]}; "
          f"|Δa| median {np.median(da):.1e}, max {da.max():.1e} ({res.labels[int(da.max(0).argmax())]}); "
          f"|ΔF| max {df.max():.1e} N")
    assert np.median(da) < 1e-6
    # where OpenSim's IPOPT met its constraints the two optima agree; elsewhere its activations are
    # not a solution ((1) shows they are what it reports; how many frames it solves, and how far it
    # stops from the optimum elsewhere, depends on the CPU: 0-19 frames, |Δa| up to 3e-2 seen), and
    # mbjax's is certified by its KKT conditions above
    # a frame can meet OpenSim's constraint test and still stop short of the optimum; the cost is
    # 2-strongly convex over a convex set, so ‖a − a*‖² ≤ f(a) − f(a*) for any feasible a: the gap to
    # mbjax's optimum is bounded by how much costlier OpenSim's point is (plus its 1e-4 infeasibility)
    gap = np.sum(da ** 2, axis=1)
    print(f"‖Δa‖² at OpenSim's feasible frames {gap[feasible]}; its excess cost {(performance - objective)[feasible]}")
    assert np.all(gap[feasible] <= np.maximum(performance - objective, 0.0)[feasible] + 1e-6)



def test_reserve_actuators_on_a_ball_joint_drive_its_angular_velocity_as_opensims(tmp_path):
    """``CoordinateActuator`` s on a ``BallJoint`` 's angles drive Simbody's speeds there, the angular
    velocity ω_F = E q̇ (not the angles' q̇): static optimization with one reserve per coordinate (so one
    solution, B x = τ) gives OpenSim 4.6's controls, which the q̇-space columns miss by ~E."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from _ball_pipeline import STATIC_OPTIMIZATION, analyze_setup, write_ball_pipeline

    model, motion = write_ball_pipeline(tmp_path)
    setup = tmp_path / "setup.xml"
    analyze_setup(setup, model, motion, tmp_path / "opensim", STATIC_OPTIMIZATION)
    run_analyze_tool(setup, tmp_path)
    theirs = read_storage(tmp_path / "opensim" / "ball_StaticOptimization_activation.sto")
    with pytest.warns(UserWarning, match="takes the time derivatives of the angles of BallJoint 'j2'"):
        res = static_optimization_from_setup(setup, results_directory=tmp_path / "mbjax", progress=False)
    cols = [list(theirs.labels).index(n) for n in res.labels]
    np.testing.assert_allclose(res.time, theirs.time, rtol=0, atol=1e-12)
    diff = np.abs(res.activations - theirs.data[:, cols])
    scale = np.abs(theirs.data[:, cols]).max()
    print(f"\nBall-joint reserves, {res.time.size} frames: max |Δx| {diff.max():.1e} of {scale:.2f}")
    assert diff.max() < 1e-6 * scale
