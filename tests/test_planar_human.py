"""Seven-segment planar human (Blajer & Czaplicki Fig. 1, Eq. 3.1-3.3).

The reactions of the module come from the general code (``mbjax.joint_reactions`` and the
reaction oracles on the 3-D model); the hand-derived Eq. 3.3 and the planar kinematics of
Eq. 3.1 are the independent oracle.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
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
minimal = jax.jit(ph.minimal_dynamics)
MODEL = ph.planar_human(PAR)


def test_anthropometry_de_leva():
    """Mass fractions of de Leva (1996) Table 4 sum to 100 %; paired limbs doubled."""
    assert float(jnp.sum(PAR.mass)) == pytest.approx(70.0, rel=1e-12)
    assert float(PAR.mass[0]) == pytest.approx(0.4346 * 70)
    assert float(PAR.mass[1]) == pytest.approx(2 * 0.1416 * 70)
    assert float(PAR.c[1]) == pytest.approx(0.4095 * 0.4222)


def _planar_e(q, spec):
    """Blajer's E of the 3-D model (jacfwd over augmented coordinates) in the paper's layout:
    rows [x_Ci, y_Ci, θ_i] of segments 1..7, columns z = world x, y translations at each joint."""
    _, e = rx.blajer_matrices(MODEL, q, spec)
    e = e.reshape(MODEL.n_bodies, 6, spec.n_joints, 5)[2:]  # segments; per joint [t_x, t_y, t_z, r_b1, r_b2]
    rot = mbjax.body_poses(MODEL, q)[np.asarray(spec.joints), :3, :3]
    e_world = jnp.einsum("bkjt,jwt->bkjw", e[..., :3], rot)[..., :2]  # unit world translations
    return e_world[:, np.asarray([3, 4, 2])].reshape(21, -1)


def test_e_matrix_is_eq_3_2():
    """E at z1..z6 reproduces the block pattern of Eq. 3.2 (and E(1) = E(5..7) = 0)."""
    q, _, _ = _state(0)
    e = _planar_e(q, ph.spec((0, 1, 2)))
    e2 = np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    e3 = np.array([[1, 0, 1, 0, 0, 0], [0, 1, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0]])
    e4 = np.array([[1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0]])
    expected = np.zeros((21, 6))
    expected[3:6], expected[6:9], expected[9:12] = e2, e3, e4
    np.testing.assert_allclose(np.asarray(e), expected, atol=1e-14)


def test_ce_identity_cd_zero():
    """Eq. 2.6-2.7 on the model with every joint opened (C from rigid-body kinematics), and the
    D of the model = jacfwd of the planar Eq. 3.1."""
    q, _, _ = _state(1)
    spec = rx.reaction_spec(MODEL)
    c = rx.constraint_matrix(MODEL, q, spec)
    d, e = rx.blajer_matrices(MODEL, q, spec)
    np.testing.assert_allclose(c @ d, 0, atol=1e-13)
    np.testing.assert_allclose(c @ e, np.eye(c.shape[0]), atol=1e-13)
    d_planar = jax.jacfwd(lambda x: ph.body_coordinates(PAR, x))(q)
    d_model = d.reshape(MODEL.n_bodies, 6, 9)[2:][:, np.asarray([3, 4, 2])].reshape(21, 9)
    np.testing.assert_allclose(d_model, d_planar, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eq_3_3_reproduced(seed):
    """Eq. 2.10 (mbjax.joint_reactions, O(n)) = the analytic λ1..λ6 of Eq. 3.3 to 1e-12 relative;
    the dense jacfwd oracle of Eq. 2.10 too."""
    q, qd, qdd = _state(seed)
    force = jnp.asarray([150.0, 1200.0]) * (seed + 1)
    lam = resolved(PAR, q, qd, qdd, force)
    assert _rel(lam, eq33(PAR, q, qd, qdd, force)) < 1e-12
    dense = rx.joint_reactions_dense(MODEL, q, qd, qdd, ph.spec(), ph.loads(PAR, force))
    assert _rel(-dense.force[:, :2].reshape(-1), lam) < 1e-12


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

    coords = lambda s: ph.body_coordinates(PAR, ph.somersault_q(PAR, s))

    @jax.jit
    def frames(t):
        q, qd, qdd, force = jax.vmap(lambda s: ph.somersault(PAR, s))(t)
        acc = jax.vmap(jax.jacfwd(jax.jacfwd(coords)))(t)  # p̈ of Eq. 3.1 along the motion
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
