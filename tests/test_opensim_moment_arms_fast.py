"""The fast path of OpenSim's unit-force moment arms for models without wrap objects,
R_geometric + ∂(same-body segment lengths)/∂q, equals the reference rule it replaces,
−∂/∂q of the cross-body segment lengths (forward-mode through the whole kinematics), on models
with and without MovingPathPoints next to a point of their own body.  (Both are compared with
OpenSim 4.6's computeMomentArm in tests/validation/test_opensim_moment_arms.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import mbjax
from mbjax.muscles.opensim_moment_arms import (cross_body_lengths, opensim_moment_arms,
                                               opensim_moment_arms_and_lengths, same_body_lengths)

from _osim_models import needs_mobl

jax.config.update("jax_enable_x64", True)


def _check(model, n=6, seed=0):
    info = model.osim
    rng = np.random.default_rng(seed)
    qs = jnp.asarray(rng.uniform(np.maximum(info.lower, -1.5), np.minimum(info.upper, 1.5), (n, model.n_coordinates)))
    rows = np.array([0, len(model.muscle_names) - 1])  # the subset the fast path differentiates: those rows

    @jax.jit
    def everything(qs):  # one compiled program for all the values compared below
        return dict(
            reference=jax.vmap(lambda x: -jax.jacfwd(lambda y: cross_body_lengths(model, y))(x).T)(qs),
            fast=opensim_moment_arms_and_lengths(model, qs),
            one=opensim_moment_arms(model, qs[1]),
            cross=jax.vmap(lambda x: cross_body_lengths(model, x))(qs),
            same=jax.vmap(lambda x: same_body_lengths(model, x))(qs),
            same_rows=same_body_lengths(model, qs[0], rows),
            geometric=jax.vmap(lambda x: mbjax.moment_arms(model, x))(qs))

    v = jax.device_get(everything(qs))
    reference, (R, L) = v["reference"], v["fast"]
    np.testing.assert_allclose(R, reference, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v["one"], reference[1], rtol=0, atol=1e-12)
    # the lengths split into cross-body and same-body segments
    np.testing.assert_allclose(v["cross"] + v["same"], L, rtol=1e-12)
    np.testing.assert_array_equal(v["same_rows"], v["same"][0, rows])
    return float(np.abs(R - v["geometric"]).max())


def test_fast_path_equals_cross_body_rule_gait():
    gap = _check(mbjax.models.load("gait2354"))
    assert gap < 1e-12  # its moving points have no same-body neighbour: OpenSim's R is the geometric one


@needs_mobl
def test_fast_path_equals_cross_body_rule_shoulder():
    from mbjax.models.shoulder import shoulder_model

    gap = _check(shoulder_model(), n=4)
    assert gap > 1e-4  # DELT2's moving point next to a point of its own body: the correction matters
