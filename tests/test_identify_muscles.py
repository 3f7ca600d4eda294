"""Isometric torque-angle data term: arm26's optimal fibre and tendon slack
lengths from the elbow torques of each muscle activated alone.

The residual Jacobian (through the compliant tendons' equilibrium solve, implicit-function
derivatives) is checked against central differences; a noise-free fit from a start 20 % off must
recover all 12 lengths to ≤ 1e-6 relative (experiments/identify_muscles.py runs the noisy case).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import numpy as np
import pytest

import mbjax
from mbjax.analysis import identify as idf

WHERE = lambda m: (m.muscles.parameters["optimal_fiber_length"],  # noqa: E731
                   m.muscles.parameters["tendon_slack_length"])


def _problem():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        truth = mbjax.models.arm26(ignore_wrapping=True)
    nm = len(truth.muscle_names)
    poses = np.array([[np.deg2rad(20.0), np.deg2rad(e)] for e in (0.0, 40.0, 80.0, 120.0)])
    q = np.repeat(poses, nm, axis=0)
    act = np.tile(np.eye(nm), (len(poses), 1))
    return truth, q, act


def test_isometric_residual_jacobian_equals_central_differences():
    truth, q, act = _problem()
    res = idf.isometric_torque_residuals(q[:6], act[:6], np.zeros((6, 2)))
    lopt = WHERE(truth)[0]

    def r(x):
        return res(eqx.tree_at(lambda m: WHERE(m)[0], truth, x))

    value_and_jac = jax.jit(lambda x: (r(x), jax.jacfwd(r)(x)))  # one program for both
    jac = np.asarray(value_and_jac(lopt)[1])
    rj = lambda x: value_and_jac(x)[0]  # noqa: E731

    def central(h):
        return np.stack([(np.asarray(rj(lopt.at[k].add(h))) - np.asarray(rj(lopt.at[k].add(-h)))) / (2 * h)
                         for k in range(lopt.size)], 1)

    fd = (4 * central(5e-6) - central(1e-5)) / 3  # Richardson: O(h⁴); h well above the solve's tolerance
    assert np.abs(jac).max() > 1.0  # the torques do depend on the lengths
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-6 * np.abs(jac).max())


@pytest.mark.extended  # a 30 s fit; its residual's Jacobian is checked against differences in CI, and notebook 09 fits
def test_noise_free_isometric_fit_recovers_fibre_and_tendon_lengths():
    truth, q, act = _problem()
    predict = eqx.filter_jit(lambda res, m: res.predict(m))  # compiled whole, not op by op
    tau = np.asarray(predict(idf.isometric_torque_residuals(q, act, np.zeros_like(q)), truth))
    rng = np.random.default_rng(1)
    start = eqx.tree_at(WHERE, truth, tuple(x * (1 + 0.2 * rng.choice([-1, 1], x.shape)) for x in WHERE(truth)))
    fitted, report = idf.fit(start, idf.isometric_torque_residuals(q, act, tau), WHERE, method="levenberg_marquardt",
                             parametrization=idf.Positive(), max_steps=100, progress=False)
    true_vals = np.concatenate([np.asarray(x) for x in WHERE(truth)])
    est = np.concatenate([np.asarray(x) for x in WHERE(fitted)])
    assert report.converged
    np.testing.assert_allclose(est, true_vals, rtol=1e-6)
