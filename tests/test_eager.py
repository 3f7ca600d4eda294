"""Eager calls of the public dynamics functions compile once and agree with their independent twins."""

import jax
import jax.numpy as jnp
import numpy as np

import mbjax
from mbjax import _dynamics


def _arm(m2=1.2):
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper_arm", axis=[0, 0, 1], map="shoulder", mass=2.0, com=[0, -0.15, 0],
               inertia=np.diag([0.012, 0.002, 0.012]))
    b.add_body("forearm", parent="upper_arm", axis=np.array([1.0, 0.0, 1.0]) / np.sqrt(2.0), translation=[0, -0.3, 0], map="elbow", mass=m2,
               com=[0, -0.12, 0.01], inertia=np.diag([0.006, 0.001, 0.006]))
    return b.build()


def _counting(monkeypatch, name):
    calls = []
    kernel = getattr(_dynamics, name)

    def counted(*a, **k):
        calls.append(1)
        return kernel(*a, **k)

    monkeypatch.setattr(_dynamics, name, counted)
    return calls


def test_eager_mass_matrix_traces_once_for_new_poses_and_parameters(monkeypatch):
    """Three eager calls (new q, a list, new masses): the kernel is traced at most once.

    The plain (unwrapped) function traces it on every eager call, which is what made eager use slow.
    """
    calls = _counting(monkeypatch, "_mass_matrix_kernel")
    m_a, m_b = _arm(1.2), _arm(0.7)
    out = [mbjax.mass_matrix(m_a, jnp.array([0.3, 0.9])), mbjax.mass_matrix(m_a, [-0.4, 1.5]),
           mbjax.mass_matrix(m_b, np.array([0.1, 0.2]))]
    assert len(calls) <= 1  # 0 when an earlier test compiled this structure already
    kron = jax.jit(mbjax.reference.mass_matrix_kron)
    for m, q, got in zip((m_a, m_a, m_b), ([0.3, 0.9], [-0.4, 1.5], [0.1, 0.2]), out):
        np.testing.assert_allclose(got, kron(m, jnp.asarray(q)), atol=1e-13)
    plain = mbjax.mass_matrix.__wrapped_eager__
    calls.clear()
    plain(m_a, jnp.array([0.3, 0.9]))
    plain(m_a, jnp.array([0.5, 0.9]))
    assert len(calls) == 2


def test_wrapped_functions_under_vmap_and_jit():
    """The wrapper is a nested jit: vmap still meets the batch-last rule; forward(inverse(q̈)) = q̈."""
    model = _arm()
    qs = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (5, 2)))
    qds = jnp.asarray(np.random.default_rng(1).uniform(-1, 1, (5, 2)))

    @jax.jit
    def roundtrip(q, qd, qdd):
        tau = jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0))(model, q, qd, qdd)
        return jax.vmap(mbjax.forward_dynamics, in_axes=(None, 0, 0, 0))(model, q, qd, tau)

    np.testing.assert_allclose(roundtrip(qs, qds, qds[::-1]), qds[::-1], atol=1e-11)


def test_eager_muscle_functions_trace_the_muscle_kernel_once(monkeypatch, tmp_path):
    """Eager ``muscle_forces`` / ``muscle_state`` / ``equilibrium_fiber_length`` at new poses, speeds and
    activations: the per-class muscle kernel is traced at most once (op-by-op dispatch took ~1 s per
    call), the answers equal one jitted, vmapped program's, and a compliant Thelen tendon is in
    equilibrium (tendon force = fibre force along the tendon) at each call."""
    from _two_link_muscles import muscle, two_link
    from mbjax.io import load_osim
    from mbjax.muscles import musculotendon

    path = tmp_path / "two_link.osim"
    path.write_text(two_link(muscle("Thelen2003Muscle", "m1"), muscle("Thelen2003Muscle", "m2", a="0.02 -0.04 0")))
    model = load_osim(str(path))
    calls, kernel = [], musculotendon.by_class
    monkeypatch.setattr(musculotendon, "by_class", lambda *a, **k: (calls.append(1), kernel(*a, **k))[1])
    rng = np.random.default_rng(3)
    qs, qds, acts = rng.uniform(-0.5, 1.0, (3, 2)), rng.uniform(-1, 1, (3, 2)), rng.uniform(0.05, 1, (3, 2))
    eager = [mbjax.muscle_state(model, q, qd, a) for q, qd, a in zip(qs, qds, acts)]
    forces = [mbjax.muscle_forces(model, q, qd, a) for q, qd, a in zip(qs, qds, acts)]
    assert len(calls) <= 1  # 0 when an earlier test compiled this structure
    batched = jax.jit(jax.vmap(lambda q, qd, a: mbjax.muscle_state(model, q, qd, a)))(*map(jnp.asarray, (qs, qds, acts)))
    for k, (state, force) in enumerate(zip(eager, forces)):
        np.testing.assert_allclose(state.tendon_force, batched.tendon_force[k], rtol=1e-13)
        np.testing.assert_allclose(force, state.tendon_force, rtol=0, atol=0)
        along = state.fiber_force * np.cos(np.asarray(state.pennation_angle))
        np.testing.assert_allclose(state.tendon_force, along, rtol=1e-8)
        lengths = mbjax.muscle_lengths(model, qs[k])
        np.testing.assert_allclose(mbjax.equilibrium_fiber_length(model, lengths, -(mbjax.moment_arms(model, qs[k]).T @ qds[k]), acts[k]),
                                   state.fiber_length, rtol=1e-13)
    assert len(calls) <= 1
