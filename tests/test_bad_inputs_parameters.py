"""Parameters changed after loading (``eqx.tree_at``, a fit step) are checked where they are used.

Files and ``ModelBuilder`` refuse unphysical bodies, muscles and paths when a model is made; these
tests change a loaded model's arrays afterwards and expect the functions that use them to refuse
them by name, eagerly and under ``jit``/``vmap``, instead of returning a number.  Reference: the
same calls on the unchanged model return finite values (they are not refused for another reason).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax

jax.config.update("jax_enable_x64", True)

ARM = mbjax.io.load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True)
WRAPPED = mbjax.models.load("arm26")
Q = jnp.array([0.3, 0.8])
A = jnp.full(6, 0.5)


def _body(field, body, value):
    return eqx.tree_at(lambda m: getattr(m, field), ARM, getattr(ARM, field).at[body].set(value))


BODIES = {
    "negative mass": (_body("mass", 1, -2.0), r"body 'r_humerus' has a mass that is NaN, inf or < 0"),
    "NaN mass": (_body("mass", 1, jnp.nan), r"body 'r_humerus' has a mass that is NaN, inf or < 0"),
    "NaN centre of mass": (_body("com", 2, jnp.array([0.0, jnp.nan, 0.0])),
                           r"body 'r_ulna_radius_hand' has a centre of mass that is not finite"),
    "NaN inertia": (_body("inertia", 2, jnp.diag(jnp.array([jnp.nan, 0.01, 0.01]))),
                    r"body 'r_ulna_radius_hand' has an inertia that is not finite or not symmetric"),
    "asymmetric": (_body("inertia", 2, jnp.diag(jnp.array([0.02, 0.01, 0.015])).at[0, 1].set(0.001)),
                   r"body 'r_ulna_radius_hand' has an inertia that is not finite or not symmetric"),
}

DYNAMICS = {
    "mass_matrix": lambda m, q: mbjax.mass_matrix(m, q),
    "inverse_dynamics": lambda m, q: mbjax.inverse_dynamics(m, q, q, q),
    "forward_dynamics": lambda m, q: mbjax.forward_dynamics(m, q, q, q),
    "gravity_forces": lambda m, q: mbjax.gravity_forces(m, q),
}


@pytest.mark.parametrize("case, function", [(case, sorted(DYNAMICS)[k % len(DYNAMICS)])
                                             for k, case in enumerate(sorted(BODIES))]
                         + [("negative mass", f) for f in sorted(DYNAMICS)])
def test_unphysical_body_parameters_are_refused_by_the_dynamics(case, function):
    model, message = BODIES[case]
    f = DYNAMICS[function]
    assert np.all(np.isfinite(np.asarray(f(ARM, Q))))
    with pytest.raises(Exception, match=rf"{function}: {message}"):
        f(model, Q)


def test_body_parameters_are_checked_under_jit_and_vmap():
    model, message = BODIES["negative mass"]
    batched = jax.jit(jax.vmap(lambda m, q: mbjax.inverse_dynamics(m, q, q, q), in_axes=(None, 0)))
    assert np.all(np.isfinite(np.asarray(batched(ARM, jnp.stack([Q, Q + 0.1])))))
    with pytest.raises(Exception, match=message):
        batched(model, jnp.stack([Q, Q + 0.1]))


def _muscle(key, value):
    p = ARM.muscles.parameters
    return eqx.tree_at(lambda m: m.muscles.parameters[key], ARM, p[key].at[0].set(value))


@pytest.mark.parametrize("key, value, requirement", [
    ("max_isometric_force", jnp.nan, ">= 0"),  # NaN is not "use OpenSim's default" once built
    ("max_isometric_force", -100.0, ">= 0"),
    ("optimal_fiber_length", 0.0, "> 0"),
    ("optimal_fiber_length", -0.1, "> 0"),
    ("tendon_slack_length", jnp.nan, "> 0"),
    ("tendon_slack_length", 0.0, "> 0"),
    ("pennation_angle_at_optimal", 2.0, r"in \[0, pi/2\) rad"),
    ("max_contraction_velocity", 0.0, "> 0"),
    ("FmaxTendonStrain", 0.0, "> 0"),
    ("deactivation_time_constant", jnp.nan, "> 0"),
])
def test_muscle_parameters_are_checked_at_call_time(key, value, requirement):
    model = _muscle(key, value)
    message = rf"muscle 'TRIlong': {key} must be finite and {requirement}"
    assert np.all(np.isfinite(np.asarray(mbjax.muscle_forces(ARM, Q, 0 * Q, A))))
    with pytest.raises(Exception, match=message):
        mbjax.muscle_forces(model, Q, 0 * Q, A)


def test_muscle_parameters_are_checked_under_jit_and_vmap():
    model = _muscle("optimal_fiber_length", -0.1)
    batched = jax.jit(jax.vmap(mbjax.muscle_forces, in_axes=(None, 0, 0, None)))
    assert np.all(np.isfinite(np.asarray(batched(ARM, Q[None], 0 * Q[None], A))))
    with pytest.raises(Exception, match=r"muscle 'TRIlong': optimal_fiber_length must be finite and > 0"):
        batched(model, Q[None], 0 * Q[None], A)


def test_activation_time_constant_is_checked_by_the_activation_derivative():
    model = _muscle("activation_time_constant", 0.0)
    assert np.all(np.isfinite(np.asarray(mbjax.activation_derivative(A, A, ARM))))
    with pytest.raises(Exception, match=r"muscle 'TRIlong': activation_time_constant must be finite and > 0"):
        mbjax.activation_derivative(A, A, model)


def test_initial_fiber_lengths_checks_what_muscle_forces_checks():
    with pytest.raises(Exception, match=r"initial_fiber_lengths: muscle 'TRIlong': optimal_fiber_length"):
        mbjax.initial_fiber_lengths(_muscle("optimal_fiber_length", -0.1), Q, 0 * Q, A)
    with pytest.raises(Exception, match=r"initial_fiber_lengths: activation must be in \[0, 1\]"):
        mbjax.initial_fiber_lengths(ARM, Q, 0 * Q, A.at[0].set(1.5))


def test_a_nan_path_point_is_refused_not_skipped():
    paths = ARM.muscles
    model = eqx.tree_at(lambda m: m.muscles.location, ARM, paths.location.at[0, 0, 0].set(jnp.nan))
    for f in (mbjax.muscle_lengths, mbjax.moment_arms):
        with pytest.raises(Exception, match=r"muscle 'TRIlong' has a path point that is not finite"):
            f(model, Q)


@pytest.mark.parametrize("field, value", [("translation", jnp.nan), ("rotation", 2.0)])
def test_a_wrap_objects_placement_is_checked(field, value):
    wraps = WRAPPED.muscles.wraps
    arr = getattr(wraps, field)
    arr = arr.at[0, 0].set(value) if field == "translation" else arr.at[0].multiply(value)
    model = eqx.tree_at(lambda m: getattr(m.muscles.wraps, field), WRAPPED, arr)
    with pytest.raises(Exception, match=rf"wrap object {wraps.names[0]!r} .* translation that is not finite or a "
                                        "rotation that is not a finite proper rotation matrix"):
        mbjax.muscle_lengths(model, Q)


@pytest.mark.parametrize("flag", ["false", "off", 0, None])
def test_the_checks_switch_takes_booleans_only(flag):
    with pytest.raises(TypeError, match=r"enabled must be True or False"):
        mbjax.config.set_checks(flag)
    with pytest.raises(TypeError, match=r"enabled must be True or False"):
        with mbjax.config.checks(flag):
            pass
    assert mbjax.config.checks_enabled()


# static optimization on arrays: nothing broadcast, bad values refused by name

def test_static_optimization_refuses_wrong_shapes_and_values():
    from mbjax.analysis.sharing import static_optimization, static_optimization_trajectory

    qd = jnp.zeros(2)
    good = static_optimization(ARM, Q, qd, qd, tau=jnp.array([1.0, 0.5]))
    assert np.all(np.isfinite(np.asarray(good.activations)))
    for kwargs, message in [
        (dict(tau=jnp.ones(1)), r"tau must have shape \(nq,\) = \(2,\)"),
        (dict(tau=jnp.ones(3)), r"tau must have shape \(nq,\) = \(2,\)"),
        (dict(reserves=jnp.ones(3)), r"reserves must be a scalar or have shape \(nq,\) = \(2,\)"),
        (dict(reserves=-1.0), r"reserves \(optimal forces\) must be finite and >= 0"),
        (dict(initial_guess=jnp.ones(3)), r"initial_guess must have shape \(nm,\) = \(6,\)"),
        (dict(tau=jnp.array([jnp.nan, 0.5])), r"static optimization: tau contains NaN or inf"),
    ]:
        with pytest.raises(Exception, match=message):
            static_optimization(ARM, Q, qd, qd, **{"tau": jnp.array([1.0, 0.5]), **kwargs})
    qs = jnp.stack([Q, Q + 0.05, Q + 0.1])
    z = jnp.zeros_like(qs)
    for kwargs, message in [
        (dict(taus=jnp.ones((3, 1))), r"taus must have shape \(3, 2\)"),
        (dict(lengths=jnp.ones((3, 5))), r"lengths must have shape \(3, 6\)"),
        (dict(moment_arms=jnp.ones((3, 6, 2)), lengths=jnp.ones((3, 6))), r"moment_arms must have shape \(3, 2, 6\)"),
        (dict(initial_guess=jnp.ones((2, 6))), r"initial_guess must have shape \(nm,\) = \(6,\) or \(T, nm\)"),
        (dict(taus=jnp.ones((3, 2)).at[1, 0].set(jnp.nan)), r"static optimization: tau contains NaN or inf"),
    ]:
        with pytest.raises(Exception, match=message):
            static_optimization_trajectory(ARM, qs, z, z, **kwargs)
    with pytest.raises(ValueError, match=r"no frames"):
        static_optimization_trajectory(ARM, qs[:0], z[:0], z[:0])


def test_joint_reactions_take_external_loads_only_and_check_them():
    qd = jnp.zeros(2)
    loads = mbjax.ExternalLoads("r_ulna_radius_hand", jnp.zeros(3), jnp.array([0.0, -10.0, 0.0]))
    ok = mbjax.joint_reactions(ARM, Q, qd, qd, external=loads)
    assert np.all(np.isfinite(np.asarray(ok.force)))
    with pytest.raises(TypeError, match=r"joint_reactions: external must be mbjax.ExternalLoads .* got ArrayImpl"):
        mbjax.joint_reactions(ARM, Q, qd, qd, external=jnp.ones(2))
    bad = mbjax.ExternalLoads("r_ulna_radius_hand", jnp.zeros(3), jnp.array([0.0, jnp.nan, 0.0]))
    with pytest.raises(Exception, match=r"joint_reactions: external.forces contains NaN or inf"):
        mbjax.joint_reactions(ARM, Q, qd, qd, external=bad)
    framed = mbjax.ExternalLoads(["r_ulna_radius_hand"], jnp.zeros((4, 1, 3)), jnp.ones((4, 1, 3)))
    with pytest.raises(ValueError, match=r"external.points must have shape \(1, 3\) for one pose, got \(4, 1, 3\)"):
        mbjax.joint_reactions(ARM, Q, qd, qd, external=framed)
