"""Hill-type muscle mechanics vs OpenSim 4.6 itself (marker ``validation``).

arm26 (Thelen2003Muscle, compliant tendons), MoBL (Millard2012EquilibriumMuscle, rigid tendons)
and OpenSim's gait2392 in its Thelen2003 and Millard2012 variants (compliant tendons), wrap sets
removed in temporary copies: this file is about the muscle mechanics, the wrapped paths have their
own validation (``test_wrapping_opensim.py``).  At random
poses, coordinate speeds (dependent coordinates' speeds from OpenSim's coupler functions) and
activations, OpenSim's ``equilibrateMuscles`` state is compared with ``musculotendon_state``:

* rigid tendons and "given the fibre-length state" (elastic tendons): tendon force, fibre length
  and velocity, active and passive fibre force to 1e-12 relative (OpenSim is exact there);
* the compliant equilibrium itself: OpenSim stops its Newton loop at |F_M cos α - F_T| <
  1e-8 F_o (hard-coded in ``Thelen2003Muscle::computeInitialFiberEquilibrium`` and
  ``Millard2012EquilibriumMuscle::computeFiberEquilibrium``, not settable; Millard's is the
  static equilibrium, f_V = 1, whatever the path speed),
  mbjax solves to rounding, so agreement is bounded by that tolerance (force to 1e-8 F_o,
  fibre length to the same error divided by the muscle-tendon stiffness).

Curves: OpenSim's ActiveForceLengthCurve, FiberForceLengthCurve, TendonForceLengthCurve,
ForceVelocityCurve and ForceVelocityInverseCurve objects over their whole domain plus the linear
extrapolation beyond it, value and slope.
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
from mbjax.muscles import millard2012 as mil  # noqa: E402
from mbjax.muscles import moment_arms, muscle_lengths, musculotendon_state, state_from_fiber_length  # noqa: E402
from mbjax.models import model_path  # noqa: E402
from mbjax.muscles.parameters import MILLARD, THELEN, kind_mask  # noqa: E402
from _osim_models import ARM26, MOBL, needs_arm26, needs_mobl, strip_wrapping  # noqa: E402

FIELDS = (("tendon_force", "getTendonForce"), ("fiber_length", "getFiberLength"),
          ("fiber_velocity", "getFiberVelocity"), ("active_fiber_force", "getActiveFiberForce"),
          ("passive_fiber_force", "getPassiveFiberForce"))


def _frames(src, tmp_path, n, seed):
    path = strip_wrapping(src, str(tmp_path / os.path.basename(src)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(path)
    ref = OpenSimReference(path)
    names = list(model.muscle_names)
    hill = [i for i, m in enumerate(names) if m in ref.muscles]
    info = model.osim
    lo, hi = np.maximum(np.asarray(info.lower), -3.0), np.minimum(np.asarray(info.upper), 3.0)
    rng = np.random.default_rng(seed)
    cn = list(model.coordinate_names)
    out = {k: [] for k in ("q", "qd", "a", "getLength", "getLengtheningSpeed") + tuple(f for _, f in FIELDS)}
    for _ in range(n):
        q = 0.5 * (lo + hi) + 0.35 * (hi - lo) * rng.uniform(-1, 1, lo.size)
        qd = rng.uniform(-1.5, 1.5, lo.size)
        act = rng.uniform(0.02, 1.0, len(names))
        ref.set(cn, q)
        speeds = {c: 0.0 for c in ref.coords}
        speeds.update(zip(cn, qd))
        for _ in ref.couplers:  # chains of couplers: repeated passes
            for indep, dep, fn, scale in ref.couplers:
                x = osim.Vector([ref.coords[c].getValue(ref.state) for c in indep])
                speeds[dep] = scale * sum(fn.calcDerivative(osim.StdVectorInt([k]), x) * speeds[c]
                                          for k, c in enumerate(indep))
        for c, v in speeds.items():
            ref.coords[c].setSpeedValue(ref.state, float(v))
        for i in hill:
            ref.muscles[names[i]].setActivation(ref.state, float(act[i]))
        ref.model.realizeVelocity(ref.state)
        ref.model.equilibrateMuscles(ref.state)
        ref.model.realizeDynamics(ref.state)
        for key, val in (("q", q), ("qd", qd), ("a", act)):
            out[key].append(val)
        for _, f in (("L", "getLength"), ("V", "getLengtheningSpeed")) + FIELDS:
            out[f].append([getattr(ref.muscles[m], f)(ref.state) if m in ref.muscles else 0.0 for m in names])
    return model, np.asarray(hill), {k: np.asarray(v) for k, v in out.items()}


def _rel(ours, ref):
    ours, ref = np.asarray(ours), np.asarray(ref)
    return np.abs(ours - ref) / np.maximum(np.abs(ref), 1e-6 * np.max(np.abs(ref)))


def _check_path_kinematics(model, d, hill):
    L = jax.vmap(muscle_lengths, in_axes=(None, 0))(model, jnp.asarray(d["q"]))
    R = jax.vmap(moment_arms, in_axes=(None, 0))(model, jnp.asarray(d["q"]))
    V = -jnp.einsum("fqm,fq->fm", R, jnp.asarray(d["qd"]))
    np.testing.assert_allclose(np.asarray(L)[:, hill], d["getLength"][:, hill], rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(V)[:, hill], d["getLengtheningSpeed"][:, hill], rtol=0, atol=1e-9)


def _check_compliant(model, hill, d, given_tol=None):
    """Given OpenSim's fibre-length state: exact (``given_tol`` per field where OpenSim itself
    iterates); the equilibrium itself: bounded by OpenSim's 1e-8 F_o stopping test (Thelen
    ``initMuscleState``, Millard ``estimateMuscleFiberState``)."""
    given_tol = given_tol or {}
    _check_path_kinematics(model, d, hill)
    L, V, a = (jnp.asarray(d[k]) for k in ("getLength", "getLengtheningSpeed", "a"))
    given = jax.jit(jax.vmap(lambda l, *x: state_from_fiber_length(model, l, *x)))(
        jnp.asarray(d["getFiberLength"]), L, V, a)
    prm = model.muscles.parameters
    fiso = np.asarray(prm["max_isometric_force"])
    vscale = np.asarray(prm["max_contraction_velocity"] * prm["optimal_fiber_length"])
    # forces relative to F_o, lengths to l_o, velocities to v_max l_o: a fibre barely moving,
    # barely loaded or at its minimum length (0 for gait2392's intobl_l) has
    # large relative but rounding-level absolute differences (e.g. -3.8433468776e-4 m/s, 3.6e-14 v_max l_o)
    for ours, f in FIELDS:
        scale = {"fiber_length": np.asarray(prm["optimal_fiber_length"]), "fiber_velocity": vscale}.get(ours, fiso)
        err = np.abs(np.asarray(getattr(given, ours)) - d[f])[:, hill] / np.broadcast_to(scale, d[f].shape)[:, hill]
        assert err.max() < given_tol.get(ours, 1e-12), (ours, err.max())
    state = jax.jit(jax.vmap(lambda *x: musculotendon_state(model, *x)))(L, V, a)
    # OpenSim stops when its force error, evaluated with the fibre velocity of the *previous*
    # iterate, is below 1e-8 F_o; with the velocity updated at its final fibre length the error
    # of its state can be larger (9e-7 F_o for gait2392's glut_max2_r at one pose).  mbjax solves
    # to rounding, so the tendon forces differ by OpenSim's own residual, not more.
    r_os = np.abs(_opensim_residual(model, d["getFiberLength"], L, V, a))[:, hill]
    dF = np.abs(np.asarray(state.tendon_force) - d["getTendonForce"])[:, hill] / fiso[hill]
    free = np.asarray(state.normalized_fiber_length)[:, hill] * lopt_of(model)[hill] > 1.0001 * _lmin(model)[hill]
    assert np.all(r_os[free] < 1e-5), r_os[free].max()
    assert np.all(dF <= np.maximum(1e-8, 1.1 * np.where(free, r_os, 0.0))), (dF.max(), r_os[dF.argmax() // dF.shape[1]])
    assert np.mean(dF < 1e-8) > 0.95  # most muscles: within OpenSim's nominal tolerance
    bound = np.maximum(1e-8, 1.1 * np.where(free, r_os, 0.0))  # per muscle and pose, in units of F_o
    lopt = lopt_of(model)
    assert np.all(np.abs(np.asarray(state.fiber_length) - d["getFiberLength"])[:, hill] / lopt[hill] <= bound)
    dv = np.abs(np.asarray(state.fiber_velocity) - d["getFiberVelocity"])[:, hill] / vscale[hill]
    assert np.all(dv <= 10 * bound)
    # active and passive force relative to F_o: a nearly unloaded fibre's 1e-8 F_o error is large
    # relative to its own tiny force, not to the muscle
    for ours, f in (("active_fiber_force", "getActiveFiberForce"), ("passive_fiber_force", "getPassiveFiberForce")):
        assert np.all(np.abs(np.asarray(getattr(state, ours)) - d[f])[:, hill] / fiso[hill] <= 10 * bound), ours


def lopt_of(model):
    return np.asarray(model.muscles.parameters["optimal_fiber_length"])


def _lmin(model):
    """Each muscle's minimum fibre length (m), as the equilibrium clamps it."""
    from mbjax.muscles.musculotendon import _Family
    from mbjax.muscles.paths import get_paths
    from mbjax.muscles.parameters import hill_parameters

    params = hill_parameters(get_paths(model))
    out = np.zeros(len(model.muscle_names))
    for kind in (THELEN, MILLARD):
        idx = np.nonzero(kind_mask(model, kind))[0]
        if idx.size:
            out[idx] = np.asarray(jax.vmap(lambda pp: _Family(kind, pp).lmin)({k: v[idx] for k, v in params.items()}))
    return out


def _opensim_residual(model, fiber_length, L, V, a):
    """Equilibrium force error (units of F_o) of a given fibre-length state, with the fibre velocity
    of OpenSim's stiffness-sharing heuristic iterated to its fixed point at that length (Thelen;
    Millard's equilibrium is static, ``equilibrium_speed`` 0, so its velocity is 0)."""
    from mbjax.muscles.musculotendon import _equilibrium_terms, _Family, equilibrium_speed
    from mbjax.muscles.paths import get_paths
    from mbjax.muscles.parameters import hill_parameters

    params = hill_parameters(get_paths(model))
    out = np.zeros(np.shape(fiber_length))
    for kind in (THELEN, MILLARD):
        idx = np.nonzero(kind_mask(model, kind))[0]
        if not idx.size:
            continue

        def res(pp, lce, L, V, a):
            a = jnp.clip(a, pp["minimum_activation"], 1.0)
            fam = _Family(kind, pp)
            V = equilibrium_speed(kind, V)
            v = jnp.zeros_like(L)
            for _ in range(4):
                _, _, v = _equilibrium_terms(fam, lce, v, L, V, a)
            return _equilibrium_terms(fam, lce, v, L, V, a)[0] / pp["max_isometric_force"]

        p = {k: v[idx] for k, v in params.items()}
        f = jax.jit(jax.vmap(jax.vmap(res), in_axes=(None, 0, 0, 0, 0)))
        out[:, idx] = np.asarray(f(p, jnp.asarray(fiber_length)[:, idx], *(jnp.asarray(x)[:, idx] for x in (L, V, a))))
    return out


@needs_arm26
def test_arm26_thelen_compliant(tmp_path):
    model, hill, d = _frames(ARM26, tmp_path, 6, 0)
    _check_compliant(model, hill, d)
    # relative to each quantity itself as well, on arm26 (every fibre loaded and moving at these poses)
    L, V, a = (jnp.asarray(d[k]) for k in ("getLength", "getLengtheningSpeed", "a"))
    given = jax.jit(jax.vmap(lambda l, *x: state_from_fiber_length(model, l, *x)))(
        jnp.asarray(d["getFiberLength"]), L, V, a)
    for ours, f in FIELDS:
        assert _rel(getattr(given, ours), d[f]).max() < 1e-12, ours
    state = jax.jit(jax.vmap(lambda *x: musculotendon_state(model, *x)))(L, V, a)
    assert _rel(state.active_fiber_force, d["getActiveFiberForce"]).max() < 1e-7
    assert _rel(state.passive_fiber_force, d["getPassiveFiberForce"]).max() < 1e-7


@pytest.mark.parametrize("name, kind", [
    # compliant Thelen muscles are compared with OpenSim in CI on arm26 (test_arm26_thelen_compliant), and
    # gait2392 in CI through its Millard twin below
    pytest.param("gait2392", THELEN, marks=pytest.mark.extended),
    # Millard: OpenSim 4.6's equilibrium is the static one (f_V = 1, no damping force) whatever the
    # path speed (``equilibrium_speed``); solving it with the velocity-sharing heuristic instead
    # gave tendon forces up to 0.3 F_o off
    ("gait2392_millard", MILLARD),
])
def test_gait2392_compliant(tmp_path, name, kind):
    """OpenSim's gait2392 in both muscle families (92 muscles, compliant tendons, 23 coordinates)."""
    model, hill, d = _frames(model_path(name), tmp_path, 4, 2)
    assert len(hill) == 92 and kind_mask(model, kind)[hill].all()
    given_tol = None
    if kind == MILLARD:
        # damped Millard (fiber_damping 0.1): OpenSim's calcDampedNormFiberVelocity stops its Newton
        # loop at a force error of 1e-10 F_o, i.e. a normalized velocity error of up to
        # 1e-10 / (a f_L f_V' + β) <= 1e-9; mbjax iterates to rounding
        from mbjax.muscles.paths import get_paths
        from mbjax.muscles.parameters import hill_parameters

        assert np.all(np.asarray(hill_parameters(get_paths(model))["fiber_damping"])[hill] >= 0.001)
        given_tol = {"fiber_velocity": 1e-9, "active_fiber_force": 1e-10, "passive_fiber_force": 1e-10}
    _check_compliant(model, hill, d, given_tol)


@needs_mobl
@pytest.mark.extended
def test_mobl_millard_rigid(tmp_path):
    model, hill, d = _frames(MOBL, tmp_path, 4, 1)
    assert kind_mask(model, MILLARD)[hill].all()
    _check_path_kinematics(model, d, hill)
    L, V, a = (jnp.asarray(d[k]) for k in ("getLength", "getLengtheningSpeed", "a"))
    state = jax.jit(jax.vmap(lambda *x: musculotendon_state(model, *x)))(L, V, a)
    for ours, f in FIELDS:
        assert _rel(np.asarray(getattr(state, ours))[:, hill], d[f][:, hill]).max() < 1e-10, ours


def test_path_actuator_tension_matches_opensim(tmp_path):
    """A ``PathActuator`` beside a Thelen muscle (tests/_two_link_muscles.py): with its control set
    in OpenSim (``Model::setControls``), OpenSim's actuation equals :func:`mbjax.muscle_forces` given
    that control as the path actuator's activation (control · optimal_force, default 1)."""
    import mbjax
    from _two_link_muscles import muscle, path_actuator, two_link

    path = str(tmp_path / "two_link.osim")
    with open(path, "w") as f:
        f.write(two_link(muscle("Thelen2003Muscle", "m1"), path_actuator("pa", 10), path_actuator("unit")))
    model = load_osim(path)
    names = list(model.muscle_names)
    om = osim.Model(path)
    s = om.initSystem()
    cs, forces, actuators = om.getCoordinateSet(), om.getForceSet(), om.getActuators()
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, a = rng.uniform(-1.0, 1.5, 2), rng.uniform(0.02, 1.0, 3)
        for c, v in zip(model.coordinate_names, q):
            cs.get(c).setValue(s, float(v), False)
        om.realizeVelocity(s)
        controls = om.updControls(s)
        for i in range(actuators.getSize()):
            controls.set(i, float(a[names.index(actuators.get(i).getName())]))
        om.setControls(s, controls)
        osim.Muscle.safeDownCast(forces.get("m1")).setActivation(s, float(a[0]))
        om.equilibrateMuscles(s)
        om.realizeDynamics(s)
        ref = np.array([osim.ScalarActuator.safeDownCast(forces.get(n)).getActuation(s) for n in names])
        ours = np.asarray(mbjax.muscle_forces(model, jnp.asarray(q), jnp.zeros(2), jnp.asarray(a)))
        np.testing.assert_allclose(ours[1:], ref[1:], rtol=1e-15)
        np.testing.assert_allclose(ours[0], ref[0], rtol=1e-8)  # the Thelen equilibrium: OpenSim's tolerance
        assert ref[1] == 10 * a[1] and ref[2] == a[2]


def _grid(lo, hi, n=801):
    return np.concatenate([np.linspace(lo, hi, n), [lo, hi]])


def _compare_curve(ours, theirs, xs, tol=1e-12):
    y, dy = jax.vmap(ours.value_and_derivative)(jnp.asarray(xs))
    y_ref = np.array([theirs.calcValue(float(x)) for x in xs])
    dy_ref = np.array([theirs.calcDerivative(float(x), 1) for x in xs])
    scale = max(1.0, np.max(np.abs(y_ref)))
    assert np.max(np.abs(np.asarray(y) - y_ref)) < tol * scale
    assert np.max(np.abs(np.asarray(dy) - dy_ref)) < 1e3 * tol * max(1.0, np.max(np.abs(dy_ref)))


@pytest.mark.parametrize("params", [(0.4327, 0.728, 1.595, 0.4613, 0.0), (0.4441, 0.73, 1.8123, 0.8616, 0.1)])
def test_active_force_length_curve(params):
    x0, x1, x3, slope, ylow = params
    _compare_curve(mil.active_force_length_curve(x0, x1, x3, slope, ylow),
                   osim.ActiveForceLengthCurve(x0, x1, x3, slope, ylow), _grid(0.0, 2.2))


@pytest.mark.parametrize("params", [(0.0, 0.6405, 0.0751, 6.3163, 0.6658), (0.1, 0.7, 0.2, 2 / 0.6, 0.75)])
def test_fiber_force_length_curve(params):
    _compare_curve(mil.fiber_force_length_curve(*params), osim.FiberForceLengthCurve(*params), _grid(0.8, 2.0))


@pytest.mark.parametrize("params", [(0.033, 37.393, 0.2255, 0.4504), (0.049, 1.375 / 0.049, 2 / 3, 0.5)])
def test_tendon_force_length_curve(params):
    _compare_curve(mil.tendon_force_length_curve(*params), osim.TendonForceLengthCurve(*params), _grid(0.95, 1.1))


@pytest.mark.parametrize("params", [(0.0, 0.25, 5.0, 0.0, 0.15, 1.4, 0.6, 0.9), (0.1, 0.3, 4.0, 0.05, 0.2, 1.6, 0.3, 0.7)])
def test_force_velocity_curves(params):
    at_c, near_c, iso, at_e, near_e, fmax, cc, ce = params
    _compare_curve(mil.force_velocity_curve(fmax, at_c, near_c, iso, at_e, near_e, cc, ce),
                   osim.ForceVelocityCurve(*params), _grid(-1.3, 1.3))
    at_c, at_e = max(at_c, 0.05), max(at_e, 0.05)  # the inverse needs nonzero end slopes
    _compare_curve(mil.force_velocity_inverse_curve(fmax, at_c, near_c, iso, at_e, near_e, cc, ce),
                   osim.ForceVelocityInverseCurve(at_c, near_c, iso, at_e, near_e, fmax, cc, ce),
                   _grid(-0.1, fmax + 0.1))



# OpenSim's <defaults> objects are global to the process: a model read with them changes the defaults of
# every model read after it (a test beside it would see other muscles), so OpenSim reads these files in a
# process of its own
_OPENSIM_DEFAULTS_CHILD = """
import json, sys
import numpy as np
import opensim as osim
path, kind = sys.argv[1], sys.argv[2]
if len(sys.argv) > 4:  # a tool's setup file, read first as OpenSim's tools read it
    osim.AnalyzeTool(sys.argv[4], False)
om = osim.Model(path)
s = om.initSystem()
if kind == "actuator":
    print(json.dumps(osim.CoordinateActuator.safeDownCast(om.getForceSet().get("r1")).getOptimalForce()))
    sys.exit()
m1 = osim.Thelen2003Muscle.safeDownCast(om.getForceSet().get("m1"))
out = {"FmaxTendonStrain": m1.get_FmaxTendonStrain(), "Af": m1.get_Af(), "KshapeActive": m1.get_KshapeActive(),
       "frames": []}
for q, a in json.loads(sys.argv[3]):
    for i, v in enumerate(q):
        om.getCoordinateSet().get(i).setValue(s, float(v), False)
    om.realizeVelocity(s)
    m1.setActivation(s, float(a))
    om.equilibrateMuscles(s)
    om.realizeDynamics(s)
    out["frames"].append(m1.getActuation(s))
print(json.dumps(out))
"""


def _opensim_child(*args):
    import json
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _OPENSIM_DEFAULTS_CHILD, *map(str, args)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_model_defaults_object_of_a_muscle_class_is_opensims(tmp_path):
    """A model's ``<defaults>`` Thelen2003Muscle (3.x-era values) stands for what its muscle leaves out, in
    OpenSim 4.6 as in mbjax (tests/test_osim_defaults.py): tendon forces at equilibrium equal."""
    import json

    import mbjax
    from _two_link_muscles import muscle, two_link
    from test_osim_defaults import defaults_block, with_model_defaults

    path = tmp_path / "defaults.osim"
    path.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1")), defaults_block()))
    model = load_osim(str(path))
    assert model.coordinate_names == ("q1", "q2")  # OpenSim's CoordinateSet order, as the child sets them
    rng = np.random.default_rng(11)
    frames = [(rng.uniform(-0.5, 1.2, 2).tolist(), float(rng.uniform(0.05, 1.0))) for _ in range(3)]
    theirs = _opensim_child(path, "muscle", json.dumps(frames))
    assert theirs["FmaxTendonStrain"] == 0.033 and theirs["Af"] == 0.3
    for (q, a), ref in zip(frames, theirs["frames"]):
        ours = float(mbjax.muscle_forces(model, jnp.asarray(q), jnp.zeros(2), jnp.array([a]))[0])
        np.testing.assert_allclose(ours, ref, rtol=1e-8)  # the Thelen equilibrium: OpenSim's tolerance


def test_a_setup_files_defaults_apply_to_the_model_read_after_it_as_in_opensim(tmp_path):
    """OpenSim's tools read their setup file first, and its ``<defaults>`` change the process-wide default
    objects: a muscle of the model read next takes them for what it leaves out, the model's own
    ``<defaults>`` coming later (tests/test_osim_defaults.py; Gait2392's setup_static_optimization.xml
    carries such a block)."""
    import json

    import mbjax
    from _two_link_muscles import muscle, two_link
    from test_osim_defaults import defaults_block, with_model_defaults

    from mbjax.opensim.setup_xml import SetupFile

    path = tmp_path / "m.osim"
    path.write_text(with_model_defaults(two_link(muscle("Thelen2003Muscle", "m1")), defaults_block({"Af": 0.25})))
    setup = tmp_path / "setup.xml"
    setup.write_text('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><AnalyzeTool name="t">'
                     + defaults_block({"FmaxTendonStrain": 0.05, "Af": 0.4, "KshapeActive": 0.6})
                     + f"<model_file>{path}</model_file></AnalyzeTool></OpenSimDocument>")
    model = load_osim(str(path), prior_defaults=SetupFile(setup).defaults())
    rng = np.random.default_rng(12)
    frames = [(rng.uniform(-0.5, 1.2, 2).tolist(), float(rng.uniform(0.05, 1.0))) for _ in range(3)]
    theirs = _opensim_child(path, "muscle", json.dumps(frames), setup)
    assert (theirs["FmaxTendonStrain"], theirs["Af"], theirs["KshapeActive"]) == (0.05, 0.25, 0.6)
    for (q, a), ref in zip(frames, theirs["frames"]):
        ours = float(mbjax.muscle_forces(model, jnp.asarray(q), jnp.zeros(2), jnp.array([a]))[0])
        np.testing.assert_allclose(ours, ref, rtol=1e-8)
    without = _opensim_child(path, "muscle", json.dumps(frames[:1]))  # the same model read on its own
    assert without["FmaxTendonStrain"] == 0.04 and without["frames"][0] != theirs["frames"][0]


@pytest.mark.parametrize("where", ["model", "force set"])
def test_where_a_defaults_object_applies_is_opensims(tmp_path, where):
    """A CoordinateActuator's optimal force from a ``<defaults>`` object: the model's applies, the model's
    ``<ForceSet>``'s does not (OpenSim 4.6 reads the defaults of the document's top object only)."""
    import warnings

    from _two_link_muscles import two_link
    from test_osim_defaults import defaults_block, with_model_defaults

    ca = '<CoordinateActuator name="r1"><coordinate>q1</coordinate></CoordinateActuator>'
    block = defaults_block({"optimal_force": 300}, cls="CoordinateActuator")
    text = (with_model_defaults(two_link(ca), block) if where == "model"
            else two_link(ca).replace('<ForceSet name="forceset">', '<ForceSet name="forceset">' + block))
    path = tmp_path / "ca.osim"
    path.write_text(text)
    theirs = _opensim_child(path, "actuator")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = load_osim(str(path)).osim.actuators[0].optimal_force
    assert ours == theirs == (300.0 if where == "model" else 1.0)


def test_a_spring_takes_the_models_defaults_object_in_opensim(tmp_path):
    """What mbjax refuses (tests/test_osim_defaults.py): OpenSim does apply a ``<defaults>`` object to a
    SpringGeneralizedForce that leaves the property out."""
    import json
    import subprocess
    import sys

    from _two_link_muscles import two_link
    from test_osim_defaults import defaults_block, with_model_defaults

    spring = '<SpringGeneralizedForce name="s1"><coordinate>q1</coordinate><stiffness>2</stiffness></SpringGeneralizedForce>'
    path = tmp_path / "spring.osim"
    path.write_text(with_model_defaults(two_link(spring), defaults_block({"viscosity": 5}, cls="SpringGeneralizedForce")))
    code = ("import json, sys, opensim as osim\nm = osim.Model(sys.argv[1]); m.initSystem()\n"
            "print(json.dumps(osim.SpringGeneralizedForce.safeDownCast(m.getForceSet().get('s1')).getViscosity()))")
    run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.strip().splitlines()[-1]) == 5.0
