"""Seven-segment planar human (Blajer & Czaplicki Fig. 1, Eq. 3.1-3.3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax import reactions as rx
from mbjax.models import planar_human as ph

PAR = ph.default_parameters()


def _state(seed):
    rng = np.random.default_rng(seed)
    q = jnp.asarray(rng.normal(size=9))
    return q, jnp.asarray(rng.normal(size=9) * 2), jnp.asarray(rng.normal(size=9) * 5)


def _rel(a, b):
    return float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))


resolved = jax.jit(ph.reactions_resolved, static_argnames="joints")
eq33 = jax.jit(ph.reactions_eq33)
blajer = jax.jit(ph.blajer_matrices, static_argnames="joints")
minimal = jax.jit(ph.minimal_dynamics)


def test_anthropometry_de_leva():
    """Mass fractions of de Leva (1996) Table 4 sum to 100 %; paired limbs doubled."""
    assert float(jnp.sum(PAR.mass)) == pytest.approx(70.0, rel=1e-12)
    assert float(PAR.mass[0]) == pytest.approx(0.4346 * 70)
    assert float(PAR.mass[1]) == pytest.approx(2 * 0.1416 * 70)
    assert float(PAR.c[1]) == pytest.approx(0.4095 * 0.4222)


def test_e_matrix_is_eq_3_2():
    """E at z1..z6 reproduces the block pattern of Eq. 3.2 (and E(1) = E(5..7) = 0)."""
    q, _, _ = _state(0)
    _, e = blajer(PAR, q)
    e2 = np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    e3 = np.array([[1, 0, 1, 0, 0, 0], [0, 1, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0]])
    e4 = np.array([[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]])
    expected = np.zeros((21, 6))
    expected[3:6], expected[6:9], expected[9:12] = e2, e3, e4
    np.testing.assert_array_equal(np.asarray(e), expected)


def test_ce_identity_cd_zero():
    """Eq. 2.6-2.7 with C = ∂Φ/∂p from the implicit constraints (all 12 joint constraints)."""
    q, _, _ = _state(1)
    p = ph.body_coordinates(PAR, q)
    c = jax.jacfwd(lambda pp: ph.constraints(PAR, pp))(p)
    d, e = blajer(PAR, q, joints=tuple(range(6)))
    np.testing.assert_allclose(c @ d, 0, atol=1e-14)
    np.testing.assert_allclose(c @ e, np.eye(12), atol=1e-14)
    # Φ(g(q, z)) = z exactly
    z = jnp.asarray(np.random.default_rng(2).normal(size=12) * 0.1)
    np.testing.assert_allclose(ph.constraints(PAR, ph.body_coordinates(PAR, q, z)), z, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eq_3_3_reproduced(seed):
    """Eq. 2.10 (jacfwd D, E, JVP γ) = the analytic λ1..λ6 of Eq. 3.3 to 1e-12 relative."""
    q, qd, qdd = _state(seed)
    force = jnp.asarray([150.0, 1200.0]) * (seed + 1)
    lam = resolved(PAR, q, qd, qdd, force)
    assert _rel(lam, eq33(PAR, q, qd, qdd, force)) < 1e-12


def test_resolved_equals_classical_planar():
    """Eq. 2.10 with q̈ from Eq. 2.9 = Eq. 2.11 (forward dynamics with joint torques)."""
    q, qd, _ = _state(3)
    force = jnp.asarray([-80.0, 900.0])
    tau = jnp.asarray(np.random.default_rng(3).normal(size=6) * 40)
    qdd = minimal(PAR, q, qd, force, tau)
    lam = resolved(PAR, q, qd, qdd, force, tau, joints=tuple(range(6)))
    lam_c = jax.jit(ph.reactions_classical)(PAR, q, qd, force, tau)
    assert _rel(lam, lam_c) < 1e-10
    # muscle torque pairs do not enter the translational reactions
    assert _rel(lam[:6], resolved(PAR, q, qd, qdd, force)) < 1e-12


def test_mbjax_model_matches_paper():
    """The generic 3-D route on the Affine-map model (relative angles φ_child - φ_parent): world
    forces at thigh, shank, foot = -λ of Eq. 3.3; the trunk is a 3-dof zero-inertia chain."""
    model = ph.planar_human(PAR)
    spec = rx.reaction_spec(model)
    assert spec.names == ph.SEGMENTS and spec.kinds[0] == "chain" and spec.n_components[0] == 3
    q, qd, qdd = _state(4)
    force = jnp.asarray([120.0, 1500.0])
    loads = rx.ExternalLoads("foot", jnp.asarray([0.0, -PAR.l_contact, 0.0]), jnp.asarray([force[0], force[1], 0.0]))
    out = rx.joint_reactions(model, q, qd, qdd, spec, loads)
    lam33 = eq33(PAR, q, qd, qdd, force)
    assert _rel(-out.force[1:4, :2].reshape(-1), lam33) < 1e-12
    np.testing.assert_allclose(out.force[:, 2], 0, atol=1e-9)
    # joint points: the ankle of the planar module
    ankle = ph.body_coordinates(PAR, q)[9:11] - PAR.c[3] * jnp.stack([jnp.sin(q[5]), -jnp.cos(q[5])])
    np.testing.assert_allclose(out.point[3, :2], ankle, atol=1e-12)
    # planar motion: the out-of-plane reaction components of the trunk chain carry no force in z
    assert out.components[0].shape == (3,)


def test_somersault_smooth_and_consistent():
    """Flight: R = 0 and the COM is ballistic; support: R_y > 0 with its peak at t = 0."""

    @jax.jit
    def frames(t):
        q, qd, qdd, force = jax.vmap(lambda s: ph.somersault(PAR, s))(t)
        acc = jax.vmap(lambda a, b, c: ph.blajer_matrices(PAR, a)[0] @ c + ph.gamma(PAR, a, b))(q, qd, qdd)
        lam = jax.vmap(lambda a, b, c, f: ph.reactions_eq33(PAR, a, b, c, f))(q, qd, qdd, force)
        return qdd, force, acc, lam

    t = jnp.linspace(0.0, ph.DURATION, 9)  # includes t = T_s = 0.4 exactly
    qdd, force, acc, lam = frames(t)
    assert bool(jnp.all(jnp.isfinite(qdd)))
    flight = t >= ph.SUPPORT_TIME
    np.testing.assert_allclose(force[flight], 0, atol=1e-12)
    assert float(force[0, 1]) == pytest.approx(float(jnp.max(force[:, 1])))
    # whole-body Newton: Σ m a_C = R + m g at every frame
    total = jnp.einsum("i,tia->ta", PAR.mass, acc.reshape(-1, 7, 3)[..., :2])
    expected = force + jnp.sum(PAR.mass) * jnp.asarray([0.0, -PAR.gravity])
    np.testing.assert_allclose(total, expected, atol=1e-8)
    support = t < ph.SUPPORT_TIME
    assert bool(jnp.all(lam[support, 5] > lam[support, 1]))  # ankle > hip vertical: the drop
