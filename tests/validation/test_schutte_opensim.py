"""``Schutte1993Muscle_Deprecated`` vs OpenSim 4.6 itself (marker ``validation``).

The model is tests/data/schutte1993/schutte_wrist.osim: four of wrist.osim's Schutte muscles with
their own SimmSpline curves (ECRB without its passive curve, so OpenSim's exponential default is
used) and one with every default, on straight paths over two pin joints.  Excitations come from a
``PrescribedController`` of ``Sine`` functions, so each random state time gives new ones.

At random states (pose, speeds, time, activation in [0, 1] and fibre length in [0.5, 1.7] ℓ_o, so
tendons slack and stretched, fibres shortening and lengthening, u ≥ a and u < a all occur):

The last two states give two muscles a fibre shorter than the muscle width (pennation 90°, the
stiff-tendon velocity branch of ``computeActuation``).

* path length and lengthening speed (``getLength``, ``getLengtheningSpeed``), tendon force
  (``getActuation``), fibre velocity (``getFiberVelocity``) and both state derivatives
  (``computeStateVariableDerivatives``: activation, fiber_length) equal
  :func:`mbjax.muscles.fiber_dynamics.muscle_derivatives` to 1e-9 relative;
* ``equilibrateMuscles`` (``computeIsometricForce``): OpenSim's fibre length equals
  :func:`mbjax.muscles.schutte1993.opensim_isometric_fiber_length` (the same iteration), and so
  :func:`mbjax.initial_fiber_lengths` and :func:`mbjax.equilibrium_fiber_length` by default, to
  1e-12 relative, and the tendon force after it :func:`mbjax.muscle_forces`; its force error is the
  0.01 N OpenSim stops at, and the ``equilibrium="exact"`` root has a residual at rounding.

With ``OPENSIM_MODELS_DIR`` set (2 s): the library's own wrist.osim (25 Schutte muscles, as
written, its ConditionalPathPoints on coupled coordinates included; a muscle-mechanics check: the
path geometry is also test_opensim_library.py's), the same quantities for every muscle at random states,
and ``equilibrateMuscles``' fibre lengths and tendon forces at random poses and activations.

OpenSim's ``Muscle.getFiberLength`` is a cached ``MuscleLengthInfo`` that ``equilibrateMuscles``
does not refresh; the state variable is read instead.
"""

from __future__ import annotations

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.muscles import equilibrium_fiber_length, hill_parameters  # noqa: E402
from mbjax.muscles import schutte1993 as sch  # noqa: E402
from mbjax.muscles.fiber_dynamics import lengths_speeds_moment_arms, muscle_derivatives  # noqa: E402

PATH = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "schutte1993", "schutte_wrist.osim")
N_STATES = 12
TOL = 1e-9


def _sine_controlled(path, frequency, phase):
    """OpenSim's model at ``path`` with a Sine excitation per muscle (frequency(k), phase(k)):
    (model, muscle set, muscle names, initialised state)."""
    model = osim.Model(path)
    muscles = model.getMuscles()
    names = [muscles.get(i).getName() for i in range(muscles.getSize())]
    ctrl = osim.PrescribedController()
    for k, n in enumerate(names):
        ctrl.addActuator(muscles.get(n))
        ctrl.prescribeControlForActuator(n, osim.Sine(0.5, frequency(k), phase(k), 0.5))
    model.addController(ctrl)
    return model, muscles, names, model.initSystem()


def _muscle_outputs(model, s, muscles, names):
    """Every muscle's control, length, lengthening speed, actuation, fibre velocity and both state
    derivatives at state ``s`` (realized to dynamics here)."""
    model.realizeDynamics(s)
    model.computeStateVariableDerivatives(s)
    ms = [muscles.get(n) for n in names]
    return dict(u=[mu.getControl(s) for mu in ms], L=[mu.getLength(s) for mu in ms],
                V=[mu.getLengtheningSpeed(s) for mu in ms], force=[mu.getActuation(s) for mu in ms],
                fiber_velocity=[mu.getFiberVelocity(s) for mu in ms],
                adot=[mu.getStateVariableDerivativeValue(s, "activation") for mu in ms],
                ldot=[mu.getStateVariableDerivativeValue(s, "fiber_length") for mu in ms])


@pytest.fixture(scope="module")
def reference():
    """OpenSim's values at random states, and mbjax's model."""
    model, muscles, names, s = _sine_controlled(PATH, lambda k: 3.0 + k, lambda k: 0.3 * k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mb = load_osim(PATH)
    assert list(mb.muscle_names) == names
    cs = model.getCoordinateSet()
    coords = [cs.get(i) for i in range(cs.getSize())]
    assert [c.getName() for c in coords] == list(mb.coordinate_names)
    ofl = np.asarray(hill_parameters(mb)["optimal_fiber_length"])
    width = ofl * np.sin(np.asarray(hill_parameters(mb)["pennation_angle_at_optimal"]))
    rng = np.random.default_rng(1993)
    keys = ("q", "qd", "a", "lce", "u", "L", "V", "force", "fiber_velocity", "adot", "ldot", "lce_eq", "force_eq")
    out = {k: [] for k in keys}
    for _ in range(N_STATES):
        q = np.array([rng.uniform(c.getRangeMin(), c.getRangeMax()) for c in coords])
        qd = rng.uniform(-2.0, 2.0, q.size)
        a = rng.uniform(0.0, 1.0, len(names))
        lce = ofl * rng.uniform(0.5, 1.7, len(names))
        if len(out["q"]) >= N_STATES - 2:  # fibres shorter than the muscle width: pennation 90°
            lce[:2] = 0.8 * width[:2]
        s.setTime(float(rng.uniform(0.0, 2.0)))
        for c, v, w in zip(coords, q, qd):
            c.setValue(s, float(v), False)
            c.setSpeedValue(s, float(w))
        for i, n in enumerate(names):
            mu = muscles.get(n)
            mu.setStateVariableValue(s, "activation", float(a[i]))
            mu.setStateVariableValue(s, "fiber_length", float(lce[i]))
        row = dict(q=q, qd=qd, a=a, lce=lce, **_muscle_outputs(model, s, muscles, names))
        model.equilibrateMuscles(s)
        row["lce_eq"] = [muscles.get(n).getStateVariableValue(s, "fiber_length") for n in names]
        model.realizeDynamics(s)
        row["force_eq"] = [muscles.get(n).getActuation(s) for n in names]
        for k in keys:
            out[k].append(np.asarray(row[k], float))
    return mb, {k: np.stack(v) for k, v in out.items()}, (model, names)


def _close(name, got, ref, scale, tol=TOL):
    got, ref = np.asarray(got), np.asarray(ref)
    err = np.max(np.abs(got - ref) / np.maximum(np.abs(ref), scale))
    print(f"{name}: max relative difference {err:.2e}")
    assert err <= tol, f"{name}: {err:.3e} > {tol:g}"


def test_state_derivatives_and_force(reference):
    mb, r, _ = reference

    @jax.jit
    def run(q, qd, a, lce, u):
        L, V, _ = lengths_speeds_moment_arms(mb, q, qd)
        d = muscle_derivatives(mb, q, qd, a, lce, u)
        return L, V, d.state.tendon_force, d.state.fiber_velocity, d.activation_rate, d.fiber_length_rate

    L, V, force, vel, adot, ldot = jax.vmap(run)(*(jnp.asarray(r[k]) for k in ("q", "qd", "a", "lce", "u")))
    p = hill_parameters(mb)
    fiso = np.asarray(p["max_isometric_force"])
    vscale = np.asarray(p["optimal_fiber_length"] / p["time_scale"])
    _close("path length", L, r["L"], 1e-3)
    _close("lengthening speed", V, r["V"], 1e-3)
    _close("tendon force", force, r["force"], 1e-3 * fiso)
    _close("fibre velocity", vel, r["fiber_velocity"], 1e-3 * vscale)
    _close("d(fiber_length)/dt", ldot, r["ldot"], 1e-3 * vscale)
    _close("d(activation)/dt", adot, r["adot"], 1e-3 / np.asarray(p["time_scale"]))
    # the states cover both branches of calcFiberVelocity and of the activation rate
    assert np.any(r["ldot"] > 0) and np.any(r["ldot"] < 0)
    assert np.any(r["u"] >= r["a"]) and np.any(r["u"] < r["a"])
    assert np.any(r["force"] == 0) and np.any(r["force"] > 0)


def test_equilibrate_muscles(reference):
    mb, r, _ = reference
    p = hill_parameters(mb)
    per = {k: v for k, v in p.items()}

    @jax.jit
    def run(q, qd, L, a):
        lce_os = jax.vmap(sch.opensim_isometric_fiber_length)(per, L, a)
        res_os = jax.vmap(sch.isometric_residual)(per, lce_os, L, a)
        lce = equilibrium_fiber_length(mb, L, jnp.zeros_like(L), a, equilibrium="exact")
        res = jax.vmap(sch.isometric_residual)(per, lce, L, a)
        public = (mbjax.initial_fiber_lengths(mb, q, qd, a), equilibrium_fiber_length(mb, L, jnp.zeros_like(L), a),
                  mbjax.muscle_forces(mb, q, qd, a))
        return lce_os, res_os, lce, res, public

    lce_os, res_os, lce, res, (initial, default, forces) = jax.vmap(run)(
        *(jnp.asarray(r[k]) for k in ("q", "qd", "L", "a")))
    _close("equilibrateMuscles fibre length (OpenSim's iteration)", lce_os, r["lce_eq"], 1e-3, 1e-12)
    _close("equilibrateMuscles fibre length (initial_fiber_lengths)", initial, r["lce_eq"], 1e-3, 1e-12)
    _close("equilibrateMuscles fibre length (equilibrium_fiber_length)", default, r["lce_eq"], 1e-3, 1e-12)
    fiso = np.asarray(p["max_isometric_force"])
    _close("tendon force after equilibrateMuscles (muscle_forces)", forces, r["force_eq"], 1e-3 * fiso, 1e-12)
    assert np.all(np.abs(res_os) <= sch.ERROR_LIMIT * (1 + 1e-9))
    print(f"exact equilibrium: max |F_T - F_M cos α| = {np.max(np.abs(res)):.2e} N "
          f"(OpenSim's {np.max(np.abs(res_os)):.2e} N), fibre length moved by at most "
          f"{np.max(np.abs(np.asarray(lce) - r['lce_eq']) / np.asarray(p['optimal_fiber_length'])):.2e} ℓ_o")
    assert np.all(np.abs(res) <= 1e-9 * fiso)


@pytest.mark.extended
def test_forward_simulation_matches_opensim(reference):
    """0.3 s of the muscle-driven model (Sine excitations) with OpenSim's ``Manager``
    (RungeKuttaMerson, accuracy 1e-10) and :func:`mbjax.simulate_muscles` (Tsit5, rtol 1e-11) from
    OpenSim's equilibrated state: joint angles, activations and fibre lengths at 0.1, 0.2, 0.3 s."""
    mb, _, (model, names) = reference
    s = model.initSystem()
    cs = model.getCoordinateSet()
    q0, qd0 = np.array([0.2, -0.1]), np.array([0.5, -0.3])
    a0 = np.array([0.2, 0.5, 0.3, 0.6, 0.4])
    for i in range(2):
        cs.get(i).setValue(s, float(q0[i]), False)
        cs.get(i).setSpeedValue(s, float(qd0[i]))
    muscles = model.getMuscles()
    for n, v in zip(names, a0):
        muscles.get(n).setStateVariableValue(s, "activation", float(v))
    model.equilibrateMuscles(s)
    lce0 = np.array([muscles.get(n).getStateVariableValue(s, "fiber_length") for n in names])
    t_save = np.array([0.1, 0.2, 0.3])
    manager = osim.Manager(model)
    manager.setIntegratorMethod(osim.Manager.IntegratorMethod_RungeKuttaMerson)
    manager.setIntegratorAccuracy(1e-10)
    manager.setRecordStatesTrajectory(False)
    manager.initialize(s)
    q_os, a_os, l_os = [], [], []
    for t in t_save:
        st = manager.integrate(float(t))
        q_os.append([cs.get(i).getValue(st) for i in range(2)])
        a_os.append([muscles.get(n).getStateVariableValue(st, "activation") for n in names])
        l_os.append([muscles.get(n).getStateVariableValue(st, "fiber_length") for n in names])
    q_os, a_os, l_os = map(np.array, (q_os, a_os, l_os))
    k = np.arange(len(names))

    def excitations(t):
        return 0.5 * jnp.sin((3.0 + k) * t + 0.3 * k) + 0.5

    sol = mbjax.simulate_muscles(mb, q0, qd0, 0.0, t_save[-1], excitations=excitations, activation0=a0,
                                 fiber_length0=lce0, saveat=t_save, rtol=1e-11, atol=1e-13)
    err_q = np.abs(np.asarray(sol.ys.q) - q_os).max()
    err_a = np.abs(np.asarray(sol.ys.activation) - a_os).max()
    err_l = np.abs(np.asarray(sol.ys.fiber_length) - l_os).max()
    print(f"0.3 s vs OpenSim RKM 1e-10: angles {err_q:.1e} rad (range {np.ptp(q_os, axis=0)} rad), activations "
          f"{err_a:.1e}, fibre lengths {err_l:.1e} m")
    assert err_q < 1e-7 and err_a < 1e-9 and err_l < 1e-8


ROOT = os.environ.get("OPENSIM_MODELS_DIR", "")
WRIST = os.path.join(ROOT, "Models", "WristModel", "wrist.osim")


@pytest.mark.skipif(not os.path.exists(WRIST), reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_wrist_library_model_matches_opensim(tmp_path):
    from _osim_models import strip_wrapping

    from mbjax.muscles import activation_derivative, muscle_lengths, state_from_fiber_length

    path = strip_wrapping(WRIST, str(tmp_path / "wrist.osim"))  # (it has no wrap objects today)
    model, muscles, names, s = _sine_controlled(path, lambda k: 1.0 + 0.5 * k, lambda k: 0.2 * k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mb = load_osim(path)
    assert set(mb.muscles.kinds) == {sch.SCHUTTE} and len(names) == 25
    order = [list(mb.muscle_names).index(n) for n in names]
    cs = model.getCoordinateSet()
    free = [c for c in mb.coordinate_names]
    p = hill_parameters(mb)
    ofl = np.asarray(p["optimal_fiber_length"])[order]
    rng = np.random.default_rng(25)
    rows = []
    for _ in range(6):
        q = np.array([rng.uniform(max(cs.get(c).getRangeMin(), -1.0), min(cs.get(c).getRangeMax(), 1.0)) for c in free])
        for c, v in zip(free, q):
            cs.get(c).setValue(s, float(v), False)
            cs.get(c).setSpeedValue(s, float(rng.uniform(-2, 2)))
        model.assemble(s)
        q = np.array([cs.get(c).getValue(s) for c in free])
        a = rng.uniform(0.0, 1.0, len(names))
        lce = ofl * rng.uniform(0.5, 1.7, len(names))
        s.setTime(float(rng.uniform(0, 3)))
        for i, n in enumerate(names):
            muscles.get(n).setStateVariableValue(s, "activation", float(a[i]))
            muscles.get(n).setStateVariableValue(s, "fiber_length", float(lce[i]))
        out = _muscle_outputs(model, s, muscles, names)
        rows.append([q, a, lce] + [np.array(out[k]) for k in ("u", "L", "V", "force", "fiber_velocity", "adot", "ldot")])
    q, a, lce, u, L, V, force, vel, adot, ldot = (np.stack(x) for x in zip(*rows))
    inv = np.argsort(order)  # OpenSim's order -> mbjax's

    @jax.jit
    def run(q, a, lce, u, L, V):
        st = state_from_fiber_length(mb, lce[inv], L[inv], V[inv], a[inv])
        return (muscle_lengths(mb, q)[jnp.asarray(order)], st.tendon_force[jnp.asarray(order)],
                st.fiber_velocity[jnp.asarray(order)], activation_derivative(u[inv], a[inv], mb)[jnp.asarray(order)])

    L_mb, force_mb, vel_mb, adot_mb = jax.vmap(run)(*(jnp.asarray(x) for x in (q, a, lce, u, L, V)))
    fiso = np.asarray(p["max_isometric_force"])[order]
    vscale = ofl / np.asarray(p["time_scale"])[order]
    _close("wrist: path length", L_mb, L, 1e-3)
    _close("wrist: tendon force", force_mb, force, 1e-3 * fiso)
    _close("wrist: fibre velocity", vel_mb, vel, 1e-3 * vscale)
    _close("wrist: d(fiber_length)/dt", vel_mb, ldot, 1e-3 * vscale)
    _close("wrist: d(activation)/dt", adot_mb, adot, 1e-2)


@pytest.mark.skipif(not os.path.exists(WRIST), reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_wrist_library_equilibrium_matches_opensim():
    """wrist.osim as written (25 Schutte muscles, couplers): OpenSim's ``equilibrateMuscles`` at its
    default pose and at random poses and activations; :func:`mbjax.initial_fiber_lengths` and
    :func:`mbjax.muscle_forces` (default ``equilibrium="opensim"``) give its fibre lengths and tendon
    forces; the ``"exact"`` root differs from them by OpenSim's stopping tolerance."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mb = load_osim(WRIST)
    model = osim.Model(WRIST)
    s = model.initSystem()
    cs, muscles = model.getCoordinateSet(), model.getMuscles()
    coords, names = list(mb.coordinate_names), list(mb.muscle_names)
    rng = np.random.default_rng(46)
    rows = []
    for k in range(5):
        if k:
            for c in coords:
                lo, hi = max(cs.get(c).getRangeMin(), -1.0), min(cs.get(c).getRangeMax(), 1.0)
                cs.get(c).setValue(s, float(rng.uniform(lo, hi)), False)
            model.assemble(s)
        a = np.full(len(names), 0.5) if k == 0 else rng.uniform(0.0, 1.0, len(names))
        for n, v in zip(names, a):
            muscles.get(n).setActivation(s, float(v))
        model.equilibrateMuscles(s)
        model.realizeDynamics(s)
        rows.append((np.array([cs.get(c).getValue(s) for c in coords]), a,
                     np.array([muscles.get(n).getStateVariableValue(s, "fiber_length") for n in names]),
                     np.array([muscles.get(n).getTendonForce(s) for n in names])))
    q, a, lce_os, force_os = (np.stack(x) for x in zip(*rows))

    @jax.jit
    def run(q, a):
        z = jnp.zeros_like(q)
        return (mbjax.initial_fiber_lengths(mb, q, z, a), mbjax.muscle_forces(mb, q, z, a),
                mbjax.muscle_forces(mb, q, z, a, equilibrium="exact"))

    lce, force, exact = jax.vmap(run)(jnp.asarray(q), jnp.asarray(a))
    fiso = np.asarray(hill_parameters(mb)["max_isometric_force"])
    _close("wrist: equilibrateMuscles fibre length", lce, lce_os, 1e-3, 1e-12)
    _close("wrist: tendon force after equilibrateMuscles", force, force_os, 1e-3 * fiso, 1e-12)
    gap = np.max(np.abs(np.asarray(exact) - force_os))
    print(f"wrist: the exact root's tendon forces differ from OpenSim's by up to {gap:.2e} N")
    assert 1e-6 < gap
