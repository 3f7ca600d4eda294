"""Identification refuses options and arrays it cannot use, by name, before any step: negative or NaN
tolerances, Huber thresholds and weights, all-zero weights, weights that do not broadcast to the
residuals, data whose coordinates disagree between arrays, parametrization indices that select
nothing or do not index the leaf, identifiability's rtol/sigma; ``scale_model`` under ``jax.jit``
checks traced factors and mass at run time."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf
import mbjax.models


def _arm():
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", joint="revolute", axis=[0, 0, 1], map="shoulder", mass=2.0, com=[0, -0.15, 0],
               inertia=np.diag([0.01, 0.002, 0.01]))
    b.add_body("forearm", parent="upper_arm", joint="revolute", axis=[0, 0, 1], translation=[0.01, -0.3, 0.02],
               map="elbow", mass=1.2, com=[0, -0.12, 0], inertia=np.diag([0.01, 0.002, 0.01]))
    return b.build()


ARM = _arm()
RNG = np.random.default_rng(0)
Q, QD, QDD = (RNG.normal(size=(20, 2)) for _ in range(3))
TAU = np.asarray(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0))(ARM, Q, QD, QDD))
START = eqx.tree_at(lambda m: m.mass, ARM, ARM.mass * 1.3)
TERM = idf.torque_residuals(Q, QD, QDD, TAU)
MASS = lambda m: m.mass  # noqa: E731


def _fit(objective=TERM, where=MASS, **kw):
    return idf.fit(START, objective, where, progress=False, **kw)


@pytest.mark.parametrize("kw,match", [
    (dict(tol=-1.0), r"fit: tol must be a finite number >= 0 .*got -1.0"),
    (dict(tol=float("nan")), r"fit: tol must be a finite number >= 0 .*got nan"),
    (dict(max_steps=-1), r"fit: max_steps must be an integer >= 0, got -1"),
    (dict(method="adam", learning_rate=-0.1), r"fit: learning_rate must be a finite number > 0, got -0.1"),
])
def test_fit_options_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        _fit(**kw)


def test_fit_refuses_non_callables():
    with pytest.raises(TypeError, match="`objective` must be a function"):
        _fit(objective=5)
    with pytest.raises(TypeError, match="`where` must be a function .* got str 'mass'"):
        _fit(where="mass")
    with pytest.raises(TypeError, match="parametrization must be None, a Parametrization .* got 'positive'"):
        _fit(parametrization="positive")


@pytest.mark.parametrize("kw,match", [
    (dict(huber=-1.0), r"torque_residuals: huber must be a finite number > 0 .*got -1.0"),
    (dict(huber=0.0), r"torque_residuals: huber must be a finite number > 0"),
    (dict(weights=np.zeros((20, 2))), r"torque_residuals: weights are all zero: nothing to fit"),
    (dict(weights=-np.ones(2)), r"torque_residuals: weights must be >= 0, got -1.0 at index \(0,\)"),
    (dict(weights=np.full(2, np.nan)), r"torque_residuals: weights holds NaN"),
    (dict(weights=np.ones(20)), r"weights has shape \(20,\), which does not broadcast to the residuals \(N, nq\) = "
                                r"\(20, 2\).*weights\[:, None\]"),
    (dict(weights=np.ones((20, 2, 1))), r"weights has shape \(20, 2, 1\), which does not broadcast"),
])
def test_torque_weights_and_huber_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        idf.torque_residuals(Q, QD, QDD, TAU, **kw)


def test_weights_and_huber_valid_twin():
    w = np.ones((20, 2))
    w[:5] = 0.0  # zero weight on some samples: dropped, fine
    fitted, report = _fit(idf.torque_residuals(Q, QD, QDD, TAU, weights=w))
    assert report.converged
    np.testing.assert_allclose(np.asarray(fitted.mass), np.asarray(ARM.mass), rtol=1e-5)
    r = idf.torque_residuals(Q, QD, QDD, TAU, weights=np.array([1.0, 2.0]), huber=0.5)(START)
    assert r.shape == (40,)
    r_sample = idf.torque_residuals(Q, QD, QDD, TAU, weights=np.ones((20, 1)))(START)
    np.testing.assert_array_equal(np.asarray(r_sample), np.asarray(TERM(START)))


def test_other_builders_check_weights_and_coordinates():
    with pytest.raises(ValueError, match=r"moment_arms_measured has shape \(20, 3, 2\), q \(20, 2\).*nq = 2"):
        idf.moment_arm_residuals(Q, np.ones((20, 3, 2)))
    with pytest.raises(ValueError, match=r"moment_arm_residuals: huber must be a finite number > 0"):
        idf.moment_arm_residuals(Q, np.ones((20, 2, 4)), huber=float("nan"))
    with pytest.raises(ValueError, match=r"muscle_length_residuals: weights are all zero"):
        idf.muscle_length_residuals(Q, np.ones((20, 4)), weights=0.0)
    with pytest.raises(ValueError, match=r"tau has shape \(20, 3\), q \(20, 2\): both \(N, nq\)"):
        idf.isometric_torque_residuals(Q, np.ones((20, 4)), np.ones((20, 3)))
    with pytest.raises(ValueError, match=r"marker_residuals: weights has shape \(2,\).*\(N, nk, 3\) = \(20, 4, 3\)"):
        idf.marker_residuals(np.ones((20, 4, 3)), weights=np.ones(2))
    # valid twins
    idf.moment_arm_residuals(Q, np.ones((20, 2, 4)), weights=np.ones(4), huber=0.1)
    idf.isometric_torque_residuals(Q, np.ones((20, 4)), np.ones((20, 2)), weights=np.ones((20, 1)))


def test_trajectory_shapes_and_segments():
    ts = np.linspace(0, 1, 21)
    q = RNG.normal(size=(21, 2))
    with pytest.raises(ValueError, match=r"trajectory_residuals: q0 has shape \(3,\), q_meas \(21, 2\): q0 must be "
                                         r"\(nq,\) = \(2,\)"):
        idf.trajectory_residuals(ts, q, np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match=r"qd_meas has shape \(21, 3\), q_meas \(21, 2\)"):
        idf.trajectory_residuals(ts, q, np.zeros(2), np.zeros(2), qd_meas=np.ones((21, 3)))
    with pytest.raises(ValueError, match=r"\(N, 2 nq\) \(q then qd\) = \(21, 4\)"):
        idf.trajectory_residuals(ts, q, np.zeros(2), np.zeros(2), qd_meas=q, weights=np.ones(2))
    for k in (0, -2, 2.0):
        with pytest.raises(ValueError, match=rf"multiple_shooting: n_segments must be an integer from 1 to 20 .*got {k}"):
            idf.multiple_shooting(ts, q, k)
    with pytest.raises(ValueError, match=r"multiple_shooting: weights has shape \(21, 2\).*\(K, n, nq\) .* = \(2, 10, 2\)"):
        idf.multiple_shooting(ts, q, 2, weights=np.ones((21, 2)))
    # valid twins
    idf.trajectory_residuals(ts, q, np.zeros(2), np.zeros(2), qd_meas=q, weights=np.ones(4))
    ms = idf.multiple_shooting(ts, q, 2, weights=np.ones(2))
    assert ms.ts.shape == (2, 11)


@pytest.mark.parametrize("par,match", [
    (idf.Identity(index=5), r"Identity: index 5 does not index mass of shape \(2,\)"),
    (idf.Identity(index=[]), r"Identity: index \[\] selects no entries of mass"),
    (idf.Identity(index=[0, 0]), r"Identity: index \[0, 0\] selects some entries of mass more than once"),
    (idf.Symmetric(), r"Symmetric parametrizes stacks of square matrices .*mass has shape \(2,\)"),
    (idf.PhysicalInertia(), r"PhysicalInertia parametrizes \(mass \(nb,\), com \(nb, 3\), inertia \(nb, 3, 3\)\) "
                            r"together.*got leaves of shapes \[\(2,\)\]"),
])
def test_parametrization_selection_refused(par, match):
    with pytest.raises(ValueError, match=match):
        _fit(parametrization=par, max_steps=2)


def test_positive_start_named():
    bad = eqx.tree_at(lambda m: m.mass, ARM, ARM.mass.at[1].set(jnp.nan))
    with pytest.raises(ValueError, match=r"Positive: the starting values must be finite and > 0, got mass\[forearm\] = nan"):
        idf.fit(bad, TERM, MASS, parametrization=idf.Positive(), progress=False)
    fitted, report = _fit(parametrization=idf.Positive(index=[1]))
    assert report.converged


def test_marker_set_shapes():
    with pytest.raises(ValueError, match=r"marker_set: offsets must have shape \(nk, 3\) = \(1, 3\).*got \(2, 3\)"):
        idf.marker_set(ARM, ["forearm"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"marker_set: scales must have shape \(nb,\) = \(2,\).*got \(5,\)"):
        idf.marker_set(ARM, ["forearm"], np.zeros((1, 3)), scales=np.ones(5))
    assert idf.marker_set(ARM, ["forearm"], np.zeros((1, 3))).offsets.shape == (1, 3)


@pytest.mark.parametrize("kw,match", [
    (dict(rtol=float("nan")), r"identifiability: rtol must be a finite number >= 0 .*got nan"),
    (dict(rtol=-1.0), r"identifiability: rtol must be a finite number >= 0"),
    (dict(sigma=float("inf")), r"identifiability: sigma must be one finite number >= 0 .*got inf"),
    (dict(sigma=-0.1), r"identifiability: sigma must be one finite number >= 0"),
    (dict(sigma=np.ones(40)), r"identifiability: sigma must be one finite number >= 0 .*got shape \(40,\)"),
])
def test_identifiability_options_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        idf.identifiability(ARM, TERM, MASS, **kw)


def test_identifiability_refuses_a_loss_and_valid_twin():
    with pytest.raises(ValueError, match="identifiability: `residuals` returned a scalar"):
        idf.identifiability(ARM, lambda m: jnp.sum(m.mass), MASS)
    ident = idf.identifiability(ARM, TERM, MASS, sigma=0.1, rtol=0.0)
    assert ident.rank == 2 and np.all(np.isfinite(ident.standard_errors))


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # wrapping ignored, as asked
    OSIM = mbjax.models.load("arm26", ignore_wrapping=True)
NAMES = idf.segment_names(OSIM)


def test_scale_model_under_jit():
    s = np.full(len(NAMES), 1.1)
    ref = idf.scale_model(OSIM, s, mass=70.0)
    got = jax.jit(lambda s, m: idf.scale_model(OSIM, s, mass=m))(s, 70.0)
    np.testing.assert_array_equal(np.asarray(got.mass), np.asarray(ref.mass))
    np.testing.assert_array_equal(np.asarray(got.offset), np.asarray(ref.offset))
    with pytest.raises(Exception, match=r"scale_model: mass must be the subject's total mass, a finite number > 0"):
        jax.block_until_ready(jax.jit(lambda m: idf.scale_model(OSIM, s, mass=m).mass)(-5.0))
    with pytest.raises(Exception, match=r"scale factor of body 'r_humerus' must be positive and finite"):
        jax.block_until_ready(jax.jit(lambda s: idf.scale_model(OSIM, s).offset)(np.where(np.arange(len(s)) == 1, -1.0, s)))
    with pytest.raises(ValueError, match=r"scale_model: mass must be the subject's total mass, one number \(kg\), got shape \(1,\)"):
        idf.scale_model(OSIM, s, mass=np.array([70.0]))


def test_place_markers_shapes_and_nan():
    mk = mbjax.Markers(("a", "b"), (0, 1), np.zeros((2, 3)))
    q = np.zeros(2)
    with pytest.raises(ValueError, match=r"place_markers: measured must have shape \(k, 3\) = \(2, 3\).*got \(1, 3\)"):
        idf.place_markers(ARM, mk, q, np.ones((1, 3)), ["a", "b"])
    x = np.ones((2, 3))
    x[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"place_markers: measured positions of \['b'\] hold NaN"):
        idf.place_markers(ARM, mk, q, x, ["a", "b"])
    placed = idf.place_markers(ARM, mk, q, x, ["a", "b"], movable=["a"])  # b is not moved: its NaN is unused
    assert np.all(np.isfinite(np.asarray(placed.offset)))
