"""Findings of the twelfth outside survey, each now answered or refused by name; checked against
independent values (a float64 NumPy solve of the same M q̈ = G, the valid poses' lengths unchanged)."""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.models import model_path


def test_float32_forward_dynamics_answers_a_well_conditioned_gait_model():
    """The singular-pivot test was relative to the largest diagonal entry (the pelvis's 70 kg), so a
    toe's 1e-4 kg·m² pivot looked singular in float32; each pivot is now judged against its own
    coordinate's M_ii (unit-free).  The float32 answer equals a float64 solve to float32 accuracy."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(model_path("gait2354"), ignore_wrapping=True)
    model = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, model)
    q = jnp.zeros(model.n_coordinates, jnp.float32)
    qdd = np.asarray(mbjax.forward_dynamics(model, q, jnp.zeros_like(q)))
    m = np.asarray(mbjax.mass_matrix(model, q), np.float64)
    g = np.asarray(mbjax.gravity_forces(model, q), np.float64)
    assert np.linalg.cond(m) < 1e7  # well conditioned: nothing singular to refuse
    ref = np.linalg.solve(m, g)
    assert qdd.dtype == np.float32
    np.testing.assert_allclose(qdd, ref, rtol=0, atol=1e-3 * np.abs(ref).max())


def test_a_nan_coordinate_with_checks_off_gives_nan_lengths_never_a_shorter_path():
    """With checks off a NaN input propagates (the checks' documented rule): a NaN shoulder angle made
    the humerus's path points NaN, and those segments were dropped as "coincident points", so BIClong
    came out 0.0169 m (0.39 m at a real pose); now NaN, the valid poses unchanged."""
    with pytest.warns(UserWarning, match="wrapping ignored"):
        arm = mbjax.models.load("arm26", ignore_wrapping=True)
    f = jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))
    good = jnp.array([[0.3, 1.0], [0.6, 0.4]])
    with mbjax.config.checks(False):
        lengths = np.asarray(f(arm, jnp.array([[np.nan, 1.0], [0.3, np.nan], [0.3, 1.0], [0.6, 0.4]])))
    assert np.isnan(lengths[:2]).all()
    np.testing.assert_array_equal(lengths[2:], np.asarray(f(arm, good)))  # checks on: the same numbers


def test_the_classical_reactions_oracle_refuses_point_masses_by_body():
    """Eq. 2.11 inverts every massive body's 6x6 mass matrix: OpenSim's double pendulum (point masses)
    gave NaN silently; now refused naming the bodies, and mbjax.joint_reactions (no inversion) answers,
    its Σ moment balance the inverse dynamics."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(model_path("double_pendulum"))
    q, qd = jnp.array([0.3, -0.2]), jnp.array([0.5, 1.0])
    with pytest.raises(ValueError, match=r"bodies \['rod1', 'rod2'\] have mass but a singular inertia"):
        mbjax.reference.joint_reactions_classical(model, q, qd)
    qdd = mbjax.forward_dynamics(model, q, qd)
    r = mbjax.joint_reactions(model, q, qd, qdd)
    assert all(np.isfinite(np.asarray(c)).all() for c in r.components)
