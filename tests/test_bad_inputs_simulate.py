"""Bad input to forward simulation: simulate, simulate_muscles, muscle_vector_field and the
excitation signals refuse it by name (shapes when traced, never broadcast; values in one fused
run-time check, or at construction where they are concrete); each valid twin still works."""

import re
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import _simulate_muscles
from mbjax._simulate import DynamicsField
from mbjax.muscles.fiber_dynamics import tendon_kinds

JIT_ERROR = (RuntimeError, ValueError)


def _arm():
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=2.0,
               com=[0, -0.15, 0], inertia=np.diag([0.01, 0.002, 0.01]))
    b.add_body("forearm", parent="upper_arm", joint="revolute", axis=[0, 0, 1], translation=[0.01, -0.3, 0.02],
               map="elbow", mass=1.2, com=[0, -0.12, 0], inertia=np.diag([0.01, 0.002, 0.01]))
    return b.build()


def _pendulum():
    b = mbjax.ModelBuilder(["th"], gravity=[0, -9.81, 0])
    b.add_body("bob", axis=[0, 0, 1], map="th", mass=1.7, com=[0, -0.8, 0])
    return b.build()


ARM = _arm()
Z = jnp.zeros(2)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM26 = mbjax.models.load("arm26", ignore_wrapping=True)
NM = 6
Q, A = jnp.asarray([0.3, 0.8]), jnp.full(NM, 0.5)
MUSCLES = r"for muscles \('TRIlong', 'TRIlat'"


def _sim(**kw):
    return mbjax.simulate(ARM, kw.pop("q0", Z), kw.pop("qd0", Z), kw.pop("t0", 0.0), kw.pop("t1", 0.02), **kw)


# ------------------------------------------------------------------------------------------------
# simulate
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["controls", "forces"])
@pytest.mark.parametrize("out", [1.0, jnp.ones(1), jnp.ones(3), jnp.ones((2, 2))])
def test_simulate_controls_are_not_broadcast(kind, out):
    shape = re.escape(str(jnp.shape(out)))
    with pytest.raises(ValueError, match=rf"simulate: {kind}\(t, q, qd\) must return generalized forces of shape "
                                         rf"\(nq,\) = \(2,\) for coordinates \('shoulder', 'elbow'\), got {shape}"):
        _sim(**{kind: lambda t, q, qd: out})
    with pytest.raises(TypeError, match=rf"simulate: {kind}\(t, q, qd\) must return generalized forces .* got NoneType"):
        _sim(**{kind: lambda t, q, qd: None})
    with pytest.raises(TypeError, match=rf"simulate: {kind} must be a callable, got ArrayImpl"):
        _sim(**{kind: jnp.ones(2)})


class _Push(eqx.Module):
    """A constant torque (an eqx.Module: one compiled solve for the calls below)."""

    tau: jnp.ndarray

    def __call__(self, t, q, qd):
        return self.tau


PUSH = jnp.array([0.3, -0.2])
VALID = dict(saveat=jnp.array([0.0, 0.01, 0.02]), dt0=1e-3, max_steps=1000)


def test_simulate_valid_controls_unchanged():
    # the valid twin: one torque per coordinate; a 1-coordinate model takes a scalar as its (1,)
    a = _sim(controls=_Push(PUSH), **VALID)
    qdd = mbjax.forward_dynamics(ARM, Z, Z, PUSH)
    np.testing.assert_allclose(np.asarray(a.ys[1][1]), np.asarray(qdd) * 0.01, rtol=1e-2)
    pend, y = _pendulum(), (jnp.array([0.4]), jnp.array([0.1]))
    scalar = DynamicsField(controls=lambda t, q, qd: 2.0 * q[0])(0.0, y, pend)
    vector = DynamicsField(forces=lambda t, q, qd: 2.0 * q)(0.0, y, pend)
    np.testing.assert_array_equal(np.asarray(scalar[1]), np.asarray(vector[1]))
    assert scalar[1].shape == (1,)


@pytest.mark.parametrize("kw, err, match", [
    ({"q0": jnp.zeros(2, complex)}, TypeError, r"simulate: q0 must be a real \(integer or floating\) array, got dtype complex"),
    ({"q0": "ab"}, TypeError, r"simulate: q0 must be a real array of shape \(nq,\) = \(2,\), got str"),
    ({"qd0": None}, TypeError, r"simulate: qd0 must be a real array of shape \(nq,\) = \(2,\), got NoneType"),
    ({"qd0": jnp.zeros(3)}, ValueError, r"q0 and qd0 must have shape \(2,\), got \(2,\) and \(3,\) for coordinates"),
    ({"t0": "0"}, TypeError, r"simulate: t0 must be a real number, got str"),
    ({"t1": None}, TypeError, r"simulate: t1 must be a real number, got NoneType"),
    ({"dt0": -0.01}, ValueError, r"simulate: dt0 \(the first step\) must be a finite number > 0 or None, got -0.01"),
    ({"dt0": 0.0}, ValueError, r"simulate: dt0 .* got 0.0"),
    ({"dt0": np.nan}, ValueError, r"simulate: dt0 .* got nan"),
    ({"rtol": -1e-6}, ValueError, r"simulate: rtol must be finite and >= 0, got -1e-06"),
    ({"atol": np.nan}, ValueError, r"simulate: atol must be finite and >= 0, got nan"),
    ({"max_steps": 0}, ValueError, r"simulate: max_steps must be a positive integer or None, got 0"),
    ({"max_steps": 10.5}, ValueError, r"simulate: max_steps must be a positive integer or None, got 10.5"),
    ({"solver": "tsit5"}, TypeError, r"simulate: solver must be a diffrax solver such as diffrax.Tsit5\(\), got 'tsit5'"),
    ({"saveat": jnp.zeros(0)}, ValueError, r"simulate: saveat holds no times; pass None"),
    ({"saveat": ["a", "b"]}, TypeError, r"simulate: saveat must be an array of times, a diffrax.SaveAt or None"),
    ({"saveat": jnp.zeros(2, complex)}, TypeError, r"simulate: saveat times must be real, got dtype complex"),
])
def test_simulate_refuses_bad_arguments_by_name(kw, err, match):
    with pytest.raises(err, match=match):
        _sim(**kw)


def test_simulate_refuses_a_model_that_is_not_one():
    with pytest.raises(TypeError, match=r"simulate: model must be an mbjax Model \(the first argument; .*\), got NoneType"):
        mbjax.simulate(None, Z, Z, 0.0, 0.1)


def test_simulate_valid_options_unchanged():
    base = _sim(controls=_Push(PUSH), **VALID)
    # integer times, a NumPy integer max_steps (was traced by the compiled solve), atol 0: the same solve
    same = _sim(controls=_Push(PUSH), saveat=[0, 0.01, 0.02], dt0=1e-3, max_steps=np.int64(1000), rtol=1e-8, atol=0.0)
    np.testing.assert_allclose(np.asarray(same.ys[0]), np.asarray(base.ys[0]), atol=1e-9)


# ------------------------------------------------------------------------------------------------
# excitation signals
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("times, values, match", [
    ([0.0, 1.0, 0.5], np.zeros((3, 2)), r"times must be strictly increasing \(sorted, no repeats\), got times\[1\] = "
                                         r"1.0 and times\[2\] = 0.5"),
    ([0.0, 1.0, 1.0], np.zeros((3, 2)), r"times must be strictly increasing .* times\[2\] = 1.0"),
    ([0.0, np.nan], np.zeros((2, 2)), r"times must be finite"),
    ([0.0, 1.0], np.array([[0.1, np.nan], [0.2, 0.3]]), r"values must be finite, got NaN or inf at index \(0, 1\)"),
    ([0.0, 1.0], np.array([[0.1, 0.2], [1.5, 0.3]]), r"values must be excitations in \[0, 1\], got 1.5 at index \(1, 0\)"),
    ([0.0, 1.0], np.array([[0.1, 0.2], [-0.1, 0.3]]), r"values must be excitations in \[0, 1\], got -0.1"),
    ([0.0, 1.0], np.zeros((3, 2)), r"values must have one row per knot time, shape \(n, nm\) = \(2, nm\), got shape \(3, 2\)"),
    ([0.0, 1.0], np.zeros(2), r"values must have shape \(n, nm\) = \(2, nm\), one row per knot time, got shape \(2,\)"),
    (np.zeros((2, 1)), np.zeros((2, 2)), r"times must be a 1-D array \(n,\) of knot times, got shape \(2, 1\)"),
    ([0.0], np.zeros((1, 2)), r"needs at least 2 knots, got 1 \(use ConstantExcitation"),
    (np.zeros(0), np.zeros((0, 2)), r"needs at least 2 knots, got 0"),
])
def test_piecewise_linear_excitation_refuses_bad_knots(times, values, match):
    with pytest.raises(ValueError, match="PiecewiseLinearExcitation: " + match):
        mbjax.PiecewiseLinearExcitation(jnp.asarray(times), jnp.asarray(values))


def test_piecewise_linear_excitation_valid_and_traced():
    with pytest.raises(TypeError, match=r"PiecewiseLinearExcitation: values must be a real array, got NoneType"):
        mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 1.0]), None)
    e = mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 1.0, 3.0]), jnp.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]]))
    np.testing.assert_allclose(np.asarray(e(0.25)), [0.25, 0.75])
    np.testing.assert_allclose(np.asarray(e(2.0)), [0.75, 0.25])
    np.testing.assert_allclose(np.asarray(e(9.0)), [0.5, 0.5])  # constant after the last knot
    # traced knots (built inside jit/vmap) are checked for shape only
    u = jax.vmap(lambda v: mbjax.PiecewiseLinearExcitation(jnp.array([0.0, 1.0]), v)(0.5))(jnp.ones((3, 2, 2)) * 0.4)
    np.testing.assert_allclose(np.asarray(u), 0.4)


@pytest.mark.parametrize("values, match", [
    (0.3, r"values must be a 1-D array \(nm,\), one excitation per muscle, got shape \(\)"),
    (np.zeros((2, 2)), r"values must be a 1-D array .* got shape \(2, 2\)"),
    ([0.1, np.nan], r"values must be finite, got NaN or inf at index \(1,\)"),
    ([0.1, 1.2], r"values must be excitations in \[0, 1\], got 1.2 at index \(1,\)"),
])
def test_constant_excitation_refuses_bad_values(values, match):
    with pytest.raises(ValueError, match="ConstantExcitation: " + match):
        mbjax.ConstantExcitation(jnp.asarray(values))
    np.testing.assert_array_equal(np.asarray(mbjax.ConstantExcitation(jnp.array([0.0, 1.0]))(3.0)), [0.0, 1.0])


# ------------------------------------------------------------------------------------------------
# muscle_vector_field
# ------------------------------------------------------------------------------------------------


def _state():
    lce = mbjax.initial_fiber_lengths(ARM26, Q, Z, A)
    return mbjax.MuscleSimState(Q, Z, A, lce)


STATE = _state()


@pytest.mark.parametrize("exc, got", [(A[:3], r"\(3,\)"), (0.5, r"\(\)"), (lambda t: jnp.ones(3) * 0.5, r"\(3,\)"),
                                      (jnp.ones((6, 1)) * 0.5, r"\(6, 1\)")])
def test_muscle_vector_field_refuses_other_excitation_shapes(exc, got):
    with pytest.raises(ValueError, match=rf"muscle_vector_field: excitations(\(t\))? must have shape \(nm,\) = \(6,\) "
                                         rf"{MUSCLES}.*\), got {got}"):
        mbjax.muscle_vector_field(ARM26, 0.0, STATE, exc)


def test_muscle_vector_field_refuses_bad_state_and_time_shapes():
    with pytest.raises(TypeError, match=r"muscle_vector_field: state must be a MuscleSimState \(q, qd, activation, "
                                        r"fiber_length\), got tuple of length 3"):
        mbjax.muscle_vector_field(ARM26, 0.0, tuple(STATE)[:3], A)
    with pytest.raises(TypeError, match=r"state must be a MuscleSimState .* got ArrayImpl"):
        mbjax.muscle_vector_field(ARM26, 0.0, jnp.zeros(16), A)
    with pytest.raises(ValueError, match=r"state.fiber_length must have shape \(nm,\) = \(6,\), got \(6, 1\)"):
        mbjax.muscle_vector_field(ARM26, 0.0, STATE._replace(fiber_length=STATE.fiber_length[:, None]), A)
    with pytest.raises(ValueError, match=r"muscle_vector_field: t must have shape \(\), got \(2,\)"):
        mbjax.muscle_vector_field(ARM26, jnp.zeros(2), STATE, A)
    with pytest.raises(ValueError, match=r"muscle_vector_field: the model has no muscles"):
        mbjax.muscle_vector_field(ARM, 0.0, mbjax.MuscleSimState(Z, Z, jnp.zeros(0), jnp.zeros(0)), jnp.zeros(0))


BAD_VALUES = [
    (lambda s: (s._replace(q=s.q.at[1].set(jnp.nan)), A, 0.0), r"state.q contains NaN or inf for coordinates"),
    (lambda s: (s._replace(qd=s.qd.at[0].set(jnp.inf)), A, 0.0), r"state.qd contains NaN or inf"),
    (lambda s: (s._replace(activation=A.at[2].set(jnp.nan)), A, 0.0), rf"state.activation contains NaN or inf {MUSCLES}"),
    (lambda s: (s._replace(activation=A.at[2].set(1.5)), A, 0.0), rf"state.activation must be in \[0, 1\] {MUSCLES}"),
    (lambda s: (s._replace(fiber_length=-s.fiber_length), A, 0.0), rf"state.fiber_length must be >= 0 \(m\) {MUSCLES}"),
    (lambda s: (s, A.at[0].set(jnp.nan), 0.0), rf"excitations contains NaN or inf {MUSCLES}"),
    (lambda s: (s, A.at[0].set(1.2), 0.0), rf"excitations must be in \[0, 1\] {MUSCLES}"),
    (lambda s: (s, A.at[0].set(-0.1), 0.0), r"excitations must be in \[0, 1\]"),
    (lambda s: (s, A, jnp.nan), r"t contains NaN or inf"),
]


@pytest.mark.parametrize("bad, match", BAD_VALUES)
def test_muscle_vector_field_refuses_bad_values(bad, match):
    state, exc, t = bad(STATE)
    with pytest.raises(RuntimeError, match="muscle_vector_field: " + match):
        mbjax.muscle_vector_field(ARM26, t, state, exc)


def test_muscle_vector_field_values_checked_under_jit_and_switch():
    field = jax.jit(lambda s, u: mbjax.muscle_vector_field(ARM26, 0.0, s, u))
    with pytest.raises(JIT_ERROR, match=r"muscle_vector_field: excitations must be in \[0, 1\]"):
        jax.block_until_ready(field(STATE, A.at[1].set(2.0)))
    d = field(STATE, A)
    # the valid twin: the field simulate_muscles integrates, evaluated directly
    ref = _simulate_muscles.MuscleDrivenField(mbjax.ConstantExcitation(A), None, tendon_kinds(ARM26))(0.0, STATE, ARM26)
    for x, y in zip(d, ref):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-12)
    eager = mbjax.muscle_vector_field(ARM26, 0.0, STATE, mbjax.ConstantExcitation(A))
    np.testing.assert_allclose(np.asarray(eager.qd), np.asarray(ref.qd), rtol=1e-12, atol=1e-12)
    with mbjax.config.checks(False):  # checks off: no error, the value propagates
        out = mbjax.muscle_vector_field(ARM26, 0.0, STATE._replace(q=Q.at[0].set(jnp.nan)), A)
    assert not np.all(np.isfinite(np.asarray(out.qd)))


# ------------------------------------------------------------------------------------------------
# simulate_muscles
# ------------------------------------------------------------------------------------------------


def test_simulate_muscles_refuses_broadcast_excitations_and_forces():
    l0 = STATE.fiber_length
    with pytest.raises(ValueError, match=rf"simulate_muscles: excitations must have shape \(nm,\) = \(6,\) {MUSCLES}"
                                         r".*got \(\)"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=0.3, fiber_length0=l0)
    with pytest.raises(ValueError, match=r"simulate_muscles: excitations\(t\) must have shape \(nm,\) = \(6,\) .*got \(1,\)"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=lambda t: jnp.full(1, 0.3), fiber_length0=l0)
    with pytest.raises(ValueError, match=r"simulate_muscles: forces\(t, q, qd\) must return generalized forces of "
                                         r"shape \(nq,\) = \(2,\) .*got \(\)"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=A, fiber_length0=l0, forces=lambda t, q, qd: 1.0)
    with pytest.raises(ValueError, match=r"simulate_muscles: dt0 .* got -0.001"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=A, dt0=-1e-3)
    with pytest.raises(TypeError, match=r"simulate_muscles: activation0 must be a real array of shape \(nm,\) = \(6,\), "
                                        r"got 'x'"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=A, activation0="x")
    with pytest.raises(TypeError, match=r"simulate_muscles: excitations must be a callable t -> \(nm,\) or an array"):
        mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 0.01, excitations=None)
    with pytest.raises(ValueError, match=r"simulate_muscles: the model has no muscles; use mbjax.simulate"):
        mbjax.simulate_muscles(ARM, Z, Z, 0.0, 0.01, excitations=jnp.zeros(0))


def test_simulate_muscles_checks_initial_values_once():
    l0 = STATE.fiber_length
    run = lambda a0, u, l0=l0: mbjax.simulate_muscles(ARM26, Q, Z, 0.0, 1e-3, excitations=u, activation0=a0,  # noqa: E731
                                                       fiber_length0=l0, saveat=diffrax.SaveAt(t1=True))
    with pytest.raises(RuntimeError, match=rf"simulate_muscles: activation0 must be in \[0, 1\] {MUSCLES}"):
        run(A.at[0].set(1.5), A)
    with pytest.raises(RuntimeError, match=rf"simulate_muscles: excitations\(t0\) must be in \[0, 1\] {MUSCLES}"):
        run(A, A.at[3].set(4.0))
    with pytest.raises(RuntimeError, match=r"simulate_muscles: fiber_length0 must be >= 0"):
        run(A, A, -l0)
    with pytest.raises(RuntimeError, match=r"simulate_muscles: initial activation is not finite"):
        run(A.at[0].set(jnp.nan), A)
    # the valid twin: from the equilibrium at a = u the activations stay put
    sol = run(A, A)
    np.testing.assert_allclose(np.asarray(sol.ys.activation[-1]), np.asarray(A), atol=1e-12)
