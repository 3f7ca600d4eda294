"""Hill-type muscles without OpenSim: derivatives vs finite differences, vmap vs loop, the Thelen
force-velocity inverse, activation dynamics by hand, Bézier inversion residuals."""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))

import mbjax  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.muscles import _bezier, millard2012 as mil, thelen2003 as th  # noqa: E402
from _osim_models import write_coupled_model  # noqa: E402


@pytest.fixture(scope="module")
def coupled(tmp_path_factory):
    """One Thelen2003Muscle and one Millard2012EquilibriumMuscle (damped), both compliant."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(write_coupled_model(tmp_path_factory.mktemp("hill")))


def _scaled(model, s):
    paths = model.muscles
    prm = dict(paths.parameters)
    prm["tendon_slack_length"] = jnp.asarray([0.1, 0.08]) * s
    prm["optimal_fiber_length"] = jnp.asarray([0.06, 0.05]) * s
    import equinox as eqx
    return eqx.tree_at(lambda m: m.muscles.parameters, model, prm)


@pytest.mark.extended
def test_gradient_and_vmap(coupled):
    q0 = np.asarray(coupled.osim.default)
    rng = np.random.default_rng(3)
    qs = jnp.asarray(q0 + 0.2 * rng.uniform(-1, 1, (4, q0.size)))
    qds = jnp.asarray(rng.uniform(-1, 1, (4, q0.size)))
    acts = jnp.asarray(rng.uniform(0.1, 1, (4, 2)))

    def f(s, q, qd, a):
        return mbjax.muscle_forces(_scaled(coupled, s), q, qd, a)

    # one compiled function: forces and their forward derivative with respect to s
    both = jax.jit(jax.vmap(lambda s, *x: jax.jvp(lambda t: f(t, *x), (s,), (jnp.ones_like(s),)),
                            in_axes=(None, 0, 0, 0)))
    s = jnp.asarray(1.0)
    F, J = (np.asarray(v) for v in both(s, qs, qds, acts))
    assert np.all(np.isfinite(F)) and np.all(F > 0)
    # vmap == one frame at a time (same compiled function, batch of one)
    for k in range(2):
        np.testing.assert_allclose(np.asarray(both(s, qs[k:k + 1], qds[k:k + 1], acts[k:k + 1])[0])[0], F[k],
                                   rtol=1e-13)
    # d F / d s (tendon slack and optimal fibre lengths scaled together) vs central differences
    h = 1e-6
    fd = (np.asarray(both(s + h, qs, qds, acts)[0]) - np.asarray(both(s - h, qs, qds, acts)[0])) / (2 * h)
    np.testing.assert_allclose(J, fd, rtol=2e-6, atol=1e-6 * np.abs(F).max())


def test_thelen_force_velocity_inverse():
    a, fal, af, flen, thr = 0.6, 0.8, 0.25, 1.4, 0.95
    afl = a * fal
    forces = np.concatenate([np.linspace(-0.3, 0, 5), np.linspace(1e-3, afl, 20),
                             np.linspace(afl, thr * afl * flen, 20)[1:], np.linspace(thr * afl * flen, 2 * afl * flen, 5)])
    v = th.norm_fiber_velocity(a, fal, jnp.asarray(forces), af, flen, thr)
    assert np.all(np.diff(np.asarray(v)) >= 0) and np.all(np.diff(np.asarray(v))[np.diff(forces) > 0] > 0)  # monotone
    fv = th.force_velocity_multiplier(a, fal, v, af, flen, thr)
    np.testing.assert_allclose(np.asarray(fv), np.maximum(forces, 0) / afl, rtol=1e-12, atol=1e-14)
    # isometric: v = 0 at a f_L f_V = a f_L; maximum shortening v = -(0.25 + 0.75 a) at zero force
    assert abs(float(th.norm_fiber_velocity(a, fal, afl, af, flen, thr))) < 1e-15
    assert abs(float(th.norm_fiber_velocity(a, fal, 0.0, af, flen, thr)) + (0.25 + 0.75 * a)) < 1e-15


def test_activation_derivative_by_hand(coupled):
    # Thelen defaults: tau_act 0.015, tau_deact 0.05; Millard: 0.01, 0.04; both a_min 0.01
    u, a = jnp.asarray([1.0, 0.0]), jnp.asarray([0.5, 0.5])
    got = np.asarray(mbjax.activation_derivative(u, a, coupled))
    np.testing.assert_allclose(got, [0.5 / (0.015 * 1.25), -0.5 / (0.04 / 1.25)], rtol=1e-14)


@pytest.mark.parametrize("curve", [
    mil.active_force_length_curve(0.4327, 0.728, 1.595, 0.4613, 0.0),
    mil.fiber_force_length_curve(0.0, 0.7, 0.2, 2 / 0.7, 0.75),
    mil.tendon_force_length_curve(0.049, 1.375 / 0.049, 2 / 3, 0.5),
    mil.force_velocity_curve(1.4, 0.0, 0.25, 5.0, 0.0, 0.15),
])
def test_bezier_inversion_residual(curve):
    """x(u(x)) = x to rounding on every segment, and dy/dx equals the derivative of y(x)."""
    for seg in range(curve.px.shape[0]):
        px = curve.px[seg]
        xs = jnp.linspace(px[0], px[5], 257)
        u = jax.vmap(lambda x: _bezier._solve_u(x, px))(xs)
        assert np.max(np.abs(np.asarray(_bezier.bezier(u, px) - xs))) < 2e-15 * max(1.0, float(jnp.abs(px).max()))
    xs = jnp.linspace(curve.x0, curve.x1, 101)[1:-1]
    y, dy = jax.vmap(curve.value_and_derivative)(xs)
    np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(curve))(xs)), np.asarray(dy), rtol=1e-9, atol=1e-12)


def test_unpennated_fibre_shorter_than_its_tendon_is_zero_not_nan():
    """gait2392's gem_r (pennation 0, so ℓ_min = h / sin α_max = 0): a path shorter than the tendon's
    slack length leaves the fibre at ℓ = 0 with a slack tendon, as OpenSim reports (ℓ = 0, F_T = 0);
    the pennation derivative h/ℓ² was 0/0 and made every field NaN."""
    from mbjax.muscles import musculotendon_state

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.load("gait2392", ignore_wrapping=True)
    m = list(model.muscle_names).index("gem_r")
    prm = model.muscles.parameters
    assert float(prm["pennation_angle_at_optimal"][m]) == 0.0
    tsl = float(prm["tendon_slack_length"][m])
    nm = len(model.muscle_names)

    def tendon_force(length_m):
        L = jnp.full((nm,), 0.1).at[m].set(length_m)
        return musculotendon_state(model, L, jnp.zeros(nm), jnp.full((nm,), 0.5))

    state = jax.jit(tendon_force)(0.97 * tsl)
    assert all(np.all(np.isfinite(np.asarray(x))) for x in state)
    assert float(state.fiber_length[m]) == 0.0 and float(state.tendon_force[m]) == 0.0
    g = jax.jit(jax.grad(lambda x: tendon_force(x).tendon_force[m]))(0.97 * tsl)  # compiled: eager grad op by op took 15 s
    assert np.isfinite(float(g))
