"""Four-bar and five-bar linkages (Ehsani §4-3): joint-map kinematics vs an absolute-coordinate analysis."""

import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.constraints import absolute
from mbjax.models.fivebar import FIVEBAR_TRAJECTORY, fivebar, fivebar_chain
from mbjax.models.fourbar import FOURBAR_RANGE, FOURBAR_TRAJECTORY, fourbar, fourbar_chain
from mbjax.models.linkage_compare import agreement, drive, linkage_comparison

TIMES4 = np.linspace(0.05, 3.95, 7)
TIMES5 = np.linspace(0.05, 2.95, 7)


def test_fourbar_exact_methods_match_absolute():
    # implicit == projection to 1e-12 is checked in test_constraints.py; the experiment runs all methods
    q, vm, am, va, aa = linkage_comparison(fourbar("projection"), fourbar_chain(), TIMES4, FOURBAR_TRAJECTORY)
    assert np.all((q >= FOURBAR_RANGE[0]) & (q <= FOURBAR_RANGE[1]))
    # >= 10 significant figures (the done-when bar); the paper reports 7 for its pre-model
    assert agreement(vm, va).min() > 11
    assert agreement(am, aa).min() > 10


def test_fourbar_premodel_matches_absolute():
    # the seed's route: sweep with step 0.01, natural cubic splines, closed-form kinematics
    q, vm, am, va, aa = linkage_comparison(fourbar("premodel"), fourbar_chain(), TIMES4, FOURBAR_TRAJECTORY)
    assert agreement(vm, va).min() > 7
    assert agreement(am, aa).min() > 4  # H of a spline: O(step²), worse near the range ends


@pytest.mark.extended
def test_fivebar_methods_match_absolute():
    res = {}
    for method in ("projection", "molecule"):
        q, vm, am, va, aa = linkage_comparison(fivebar(method, step=1e-4), fivebar_chain(), TIMES5, FIVEBAR_TRAJECTORY)
        res[method] = (agreement(vm, va).min(), agreement(am, aa).min())
    assert res["projection"][0] > 11 and res["projection"][1] > 10
    assert res["molecule"][0] > 6 and res["molecule"][1] > 5  # paper: 6 significant figures


def test_absolute_analysis_is_consistent():
    # velocity/acceleration of the absolute route against finite differences of its own positions
    chain = fivebar_chain()
    t = jnp.array([0.8, 0.8 + 1e-5, 0.8 - 1e-5])
    q, qd, qdd = drive(t, FIVEBAR_TRAJECTORY)
    guess = absolute.position(chain, q[0], chain.from_joint_angles(jnp.array([np.pi / 2, 0.0, -1.2327, -1.8523])))
    states = absolute.trajectory(chain, q, qd, qdd, guess)
    fd_v = (states.p[1] - states.p[2]) / 2e-5
    fd_a = (states.pd[1] - states.pd[2]) / 2e-5
    np.testing.assert_allclose(states.pd[0], fd_v, atol=1e-8)
    np.testing.assert_allclose(states.pdd[0], fd_a, atol=1e-6)
    with pytest.raises(ValueError, match="dof"):
        absolute.PlanarChain([1.0, 1.0, 1.0], [0.5, 0.5, 0.5], 1.0, np.zeros((2, 9)))
