"""Hill-type muscle mechanics vs OpenSim 4.6 itself (marker ``validation``).

arm26 (Thelen2003Muscle, compliant tendons) and MoBL (Millard2012EquilibriumMuscle, rigid
tendons), wrap sets removed in temporary copies (mbjax has no wrapping in this branch).  At random
poses, coordinate speeds (dependent coordinates' speeds from OpenSim's coupler functions) and
activations, OpenSim's ``equilibrateMuscles`` state is compared with ``musculotendon_state``:

* rigid tendons and "given the fibre-length state" (elastic tendons): tendon force, fibre length
  and velocity, active and passive fibre force to 1e-12 relative (OpenSim is exact there);
* the compliant equilibrium itself: OpenSim stops its Newton loop at |F_M cos α - F_T| <
  1e-8 F_o (hard-coded in ``Thelen2003Muscle::computeInitialFiberEquilibrium``, not settable),
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
from mbjax.io.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.muscles import millard2012 as mil  # noqa: E402
from mbjax.muscles import moment_arms, muscle_lengths, musculotendon_state, state_from_fiber_length  # noqa: E402
from mbjax.muscles.parameters import MILLARD, kind_mask  # noqa: E402
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
    info = model.extras["osim"]
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


@needs_arm26
def test_arm26_thelen_compliant(tmp_path):
    model, hill, d = _frames(ARM26, tmp_path, 6, 0)
    _check_path_kinematics(model, d, hill)
    L, V, a = (jnp.asarray(d[k]) for k in ("getLength", "getLengtheningSpeed", "a"))
    # 1. given OpenSim's fibre-length state: exact
    given = jax.jit(jax.vmap(lambda l, *x: state_from_fiber_length(model, l, *x)))(
        jnp.asarray(d["getFiberLength"]), L, V, a)
    for ours, f in FIELDS:
        assert _rel(getattr(given, ours), d[f])[:, hill].max() < 1e-12, ours
    # 2. the equilibrium: bounded by OpenSim's 1e-8 F_o tolerance
    state = jax.jit(jax.vmap(lambda *x: musculotendon_state(model, *x)))(L, V, a)
    fiso = np.asarray(model.extras["muscles"].parameters["max_isometric_force"])
    assert np.max(np.abs(np.asarray(state.tendon_force) - d["getTendonForce"]) / fiso) < 1e-8
    assert _rel(state.fiber_length, d["getFiberLength"]).max() < 1e-8
    prm = model.extras["muscles"].parameters
    vscale = np.asarray(prm["max_contraction_velocity"] * prm["optimal_fiber_length"])
    assert np.max(np.abs(np.asarray(state.fiber_velocity) - d["getFiberVelocity"]) / vscale) < 1e-7
    assert _rel(state.active_fiber_force, d["getActiveFiberForce"]).max() < 1e-7
    assert _rel(state.passive_fiber_force, d["getPassiveFiberForce"]).max() < 1e-7


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
