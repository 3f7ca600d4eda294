"""Dynamics (Ehsani Eq. 124-198) against the autodiff Lagrangian, the literal Kronecker path and hand derivations."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax import _dynamics as dyn
from mbjax.maps import FunctionMap
from _trees import random_poses, random_tree


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


TOL = 1e-10


@jax.jit
def _mng(model, q, qd):
    """M, N q̇, G and q̈ at zero applied force, one compiled call per model."""
    return (mbjax.mass_matrix(model, q), mbjax.bias_forces(model, q, qd), mbjax.gravity_forces(model, q),
            mbjax.forward_dynamics(model, q, qd))


@jax.jit
def _all_routes(model, q, qd, qdd):
    """Every quantity by every route, in one compiled call per model."""
    dm = jax.jacfwd(lambda x: mbjax.mass_matrix(model, x))(q)  # dm[i, j, k] = ∂M_ij/∂q_k
    return dict(
        m=mbjax.mass_matrix(model, q),
        n=mbjax.bias_forces(model, q, qd),
        g=mbjax.gravity_forces(model, q),
        tau=mbjax.inverse_dynamics(model, q, qd, qdd),
        tau_ext=mbjax.inverse_dynamics(model, q, qd, qdd, external=jnp.arange(1.0, 1.0 + q.shape[0])),
        m_lag=dyn.mass_matrix_lagrangian(model, q),
        n_lag=dyn.bias_forces_lagrangian(model, q, qd),
        g_lag=dyn.gravity_forces_lagrangian(model, q),
        tau_lag=dyn.inverse_dynamics_lagrangian(model, q, qd, qdd),
        dm=dm,
    )


@pytest.fixture(scope="module", params=[0])
def case(request):
    seed = request.param
    nq = 3
    model = random_tree(seed, n_bodies=6, n_coordinates=nq, chain_depth=5, zero_inertia_fraction=0.4)
    assert np.any(np.asarray(model.mass) == 0)  # zero-inertia bodies present
    q, qd, qdd = (random_poses(seed * 7 + k, 1, nq)[0] for k in range(3))
    qd = 3.0 * qd
    return model, q, qd, qdd, _all_routes(model, q, qd, qdd)


def test_mass_matrix_vs_kinetic_energy_hessian(case):
    *_, r = case
    assert rel(r["m"], r["m_lag"]) < TOL
    np.testing.assert_allclose(r["m"], r["m"].T, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(np.asarray(r["m"])) > 0)


def test_bias_forces_vs_lagrangian_and_christoffel(case):
    _, _, qd, _, r = case
    assert rel(r["n"], r["n_lag"]) < TOL
    # Christoffel symbols of the first kind: c_ijk = ½(∂M_ij/∂q_k + ∂M_ik/∂q_j - ∂M_jk/∂q_i)
    dm = r["dm"]
    c = 0.5 * (dm + jnp.transpose(dm, (0, 2, 1)) - jnp.transpose(dm, (2, 0, 1)))
    assert rel(r["n"], jnp.einsum("ijk,j,k->i", c, qd, qd)) < TOL


def test_gravity_vs_potential_gradient(case):
    *_, r = case
    assert rel(r["g"], r["g_lag"]) < TOL


def test_kronecker_twins_equal_fast_path():
    """Eq. 145, the N derived from Eq. 126's 2nd part, and Eq. 187, literally, = the fast path."""
    model = random_tree(4, n_bodies=4, n_coordinates=2, chain_depth=4)
    q, qd = random_poses(8, 1, 2)[0], 2.0 * random_poses(9, 1, 2)[0]

    @jax.jit
    def both(model, q, qd):
        derivs = mbjax.reference.pose_derivatives_kron(model, q)
        ref = mbjax.reference
        kron = (ref.mass_matrix_kron(model, q, derivs), ref.bias_forces_kron(model, q, qd, derivs),
                ref.gravity_forces_kron(model, q, derivs))
        fast = (mbjax.mass_matrix(model, q), mbjax.bias_forces(model, q, qd), mbjax.gravity_forces(model, q))
        return kron, fast

    kron, fast = both(model, q, qd)
    for a, b in zip(kron, fast):
        assert rel(a, b) < TOL


def test_inverse_and_forward_dynamics(case):
    model, q, qd, qdd, r = case
    assert rel(r["tau"], r["tau_lag"]) < TOL
    assert rel(r["tau"], r["m"] @ qdd + r["n"] - r["g"]) < TOL
    assert rel(jax.jit(mbjax.forward_dynamics)(model, q, qd, r["tau"]), qdd) < 1e-9
    assert rel(r["tau_ext"], r["tau"] - jnp.arange(1.0, 1.0 + q.shape[0])) < TOL


def test_generalized_forces_vs_virtual_work():
    """Q·δq equals F·δp + T·δω (virtual displacement Eq. 46; δω from Ṙ Rᵀ by jvp of the poses)."""
    model = random_tree(5, n_bodies=6, n_coordinates=3, nonlinear=False)
    q = random_poses(1, 1, 3)[0]
    rng = np.random.default_rng(0)
    bodies = ["b1", "b4", "b5", "b4"]
    pts, frc, trq = (jnp.asarray(rng.normal(size=(4, 3))) for _ in range(3))
    dq = jnp.asarray(rng.normal(size=3))

    @jax.jit
    def routes(model, q, dq):
        qf = mbjax.generalized_forces(model, q, bodies, pts, frc, trq)
        poses, dposes = jax.jvp(lambda x: mbjax.body_poses(model, x), (q,), (dq,))
        work = 0.0
        for b, p, f, t in zip(bodies, pts, frc, trq):
            i = model.body_index(b)
            w = dposes[i, :3, :3] @ poses[i, :3, :3].T
            dw = jnp.stack([w[2, 1], w[0, 2], w[1, 0]])
            work += f @ mbjax.reference.virtual_displacement(model, q, dq, b, p) + t @ dw
        return qf @ dq, work

    a, b = routes(model, q, dq)
    assert abs(float(a - b)) < 1e-12 * (1 + abs(float(b)))
    # single application without the leading axis
    one = mbjax.generalized_forces(model, q, "b1", pts[0], frc[0])
    np.testing.assert_allclose(one, mbjax.generalized_forces(model, q, ["b1"], pts[:1], frc[:1]), atol=1e-15)
    with pytest.raises(ValueError, match="shape"):
        mbjax.generalized_forces(model, q, ["b1", "b2"], pts[:1], frc[:1])


# ---------------------------------------------------------------------------------------------
# hand-derived cases
# ---------------------------------------------------------------------------------------------


def test_pendulum_hand_derived():
    m, l, g = 1.7, 0.8, 9.81
    b = mbjax.ModelBuilder(["th"], gravity=[0, -g, 0])
    b.add_body("bob", axis=[0, 0, 1], map="th", mass=m, com=[0, -l, 0])
    model = b.build()
    th, thd = 0.7, -1.3
    q, qd = jnp.array([th]), jnp.array([thd])
    mm, n, gg, acc = _mng(model, q, qd)
    np.testing.assert_allclose(mm, [[m * l**2]], rtol=1e-14)
    np.testing.assert_allclose(n, [0.0], atol=1e-14)
    np.testing.assert_allclose(gg, [-m * g * l * np.sin(th)], rtol=1e-14)
    np.testing.assert_allclose(acc, [-g / l * np.sin(th)], rtol=1e-13)


def test_double_pendulum_hand_derived():
    m1, m2, l1, l2, g = 1.3, 0.9, 0.7, 0.5, 9.81
    b = mbjax.ModelBuilder(["t1", "t2"], gravity=[0, -g, 0])
    b.add_body("upper", axis=[0, 0, 1], map="t1", mass=m1, com=[0, -l1, 0])
    b.add_body("lower", parent="upper", axis=[0, 0, 1], map="t2", translation=[0, -l1, 0], mass=m2, com=[0, -l2, 0])
    model = b.build()
    t1, t2, w1, w2 = 0.4, -1.1, 2.0, -0.7
    q, qd = jnp.array([t1, t2]), jnp.array([w1, w2])
    c2 = np.cos(t2)
    m_ref = np.array([
        [(m1 + m2) * l1**2 + m2 * l2**2 + 2 * m2 * l1 * l2 * c2, m2 * l2**2 + m2 * l1 * l2 * c2],
        [m2 * l2**2 + m2 * l1 * l2 * c2, m2 * l2**2],
    ])
    h = m2 * l1 * l2 * np.sin(t2)
    n_ref = np.array([-h * (2 * w1 * w2 + w2**2), h * w1**2])
    g_ref = np.array([
        -(m1 + m2) * g * l1 * np.sin(t1) - m2 * g * l2 * np.sin(t1 + t2),
        -m2 * g * l2 * np.sin(t1 + t2),
    ])
    mm, n, gg, _ = _mng(model, q, qd)
    np.testing.assert_allclose(mm, m_ref, rtol=1e-13)
    np.testing.assert_allclose(n, n_ref, rtol=1e-13)
    np.testing.assert_allclose(gg, g_ref, rtol=1e-13)


def _slider_x(p, x):
    r, length = p[0], p[1]
    return r * jnp.cos(x[0]) + jnp.sqrt(length**2 - (r * jnp.sin(x[0])) ** 2)


def test_slider_crank_hand_derived():
    """Crank (inertia I) and slider (mass m) with a massless rod: x(θ) as a nonlinear prismatic map."""
    r, length, inertia, m = 0.1, 0.35, 0.02, 1.5
    b = mbjax.ModelBuilder(["theta"], gravity=[0, 0, -9.81])
    b.add_body("crank", axis=[0, 0, 1], map="theta", mass=0.5, inertia=[inertia / 2, inertia / 2, inertia])
    b.add_body("slider", joint="prismatic", axis=[1, 0, 0], map=FunctionMap(_slider_x, ["theta"], jnp.array([r, length])),
               mass=m, inertia=[1e-3, 1e-3, 1e-3])
    model = b.build()
    th, thd = 0.9, 4.0
    s, c = np.sin(th), np.cos(th)
    root = np.sqrt(length**2 - r**2 * s**2)
    xp = -r * s - r**2 * s * c / root
    xpp = -r * c - r**2 * (c**2 - s**2) / root - r**4 * s**2 * c**2 / root**3
    q, qd = jnp.array([th]), jnp.array([thd])
    mm, n, gg, _ = _mng(model, q, qd)
    np.testing.assert_allclose(mm, [[inertia + m * xp**2]], rtol=1e-13)
    np.testing.assert_allclose(n, [m * xp * xpp * thd**2], rtol=1e-12)
    np.testing.assert_allclose(gg, [0.0], atol=1e-14)


# ---------------------------------------------------------------------------------------------
# parameter gradients, batching, compile-once, float32
# ---------------------------------------------------------------------------------------------


def test_parameter_gradients_check_grads():
    """Masses, inertias and map coefficients (affine slopes): what ``check_grads`` (order 1, fwd and
    rev) checks, along the same kind of random directions, from one compiled program: forward mode
    vs central differences, reverse mode vs forward mode (⟨w, J v⟩ = ⟨Jᵀ w, v⟩)."""
    model = random_tree(7, n_bodies=5, n_coordinates=3, nonlinear=False)
    q, qd, qdd = (random_poses(20 + k, 1, 3)[0] for k in range(3))
    k = next(i for i, mp in enumerate(model.maps) if mp.slope.shape[1] > 1)

    def tau_of(mass, inertia, slope):
        mdl = eqx.tree_at(lambda m: (m.mass, m.inertia, m.maps[k].slope), model, (mass, inertia, slope))
        return mbjax.inverse_dynamics(mdl, q, qd, qdd)

    @jax.jit
    def probe(x, v, w):
        y, jv = jax.jvp(tau_of, x, v)
        return y, jv, jax.vjp(tau_of, *x)[1](w)

    x = (model.mass, model.inertia, model.maps[k].slope)
    rng = np.random.default_rng(0)
    # random directions leave the physical set (asymmetric inertias, negative masses of massless
    # bodies): the run-time parameter checks would refuse them, and they are about gradients here
    with mbjax.config.checks(False):
        _gradient_rounds(probe, x, rng)


def _gradient_rounds(probe, x, rng):
    for _ in range(2):
        v = tuple(jnp.asarray(rng.standard_normal(a.shape)) for a in x)
        w = jnp.asarray(rng.standard_normal(3))
        _, jv, jtw = probe(x, v, w)
        eps = 1e-4  # check_grads' step
        plus = probe(tuple(a + eps * d for a, d in zip(x, v)), v, w)[0]
        minus = probe(tuple(a - eps * d for a, d in zip(x, v)), v, w)[0]
        np.testing.assert_allclose(jv, (plus - minus) / (2 * eps), atol=1e-6, rtol=1e-6)
        np.testing.assert_allclose(sum(jnp.vdot(a, d) for a, d in zip(jtw, v)), jnp.vdot(w, jv), atol=1e-6, rtol=1e-6)


def _forward_dynamics_case():
    model = random_tree(7, n_bodies=5, n_coordinates=3, nonlinear=True)
    q, qd, tau = (random_poses(20 + k, 1, 3)[0] for k in range(3))

    def with_params(fd):
        def f(mass, com, inertia, q, qd, tau):
            mdl = eqx.tree_at(lambda m: (m.mass, m.com, m.inertia), model, (mass, com, inertia))
            return fd(mdl, q, qd, tau)
        return f

    rule = with_params(mbjax.forward_dynamics)
    args = (model.mass, model.com, model.inertia, q, qd, tau)
    return model, q, qd, rule, with_params, args


def _central(f, x, eps=1e-6):
    """Central differences of ``f`` at ``x`` along each entry of ``x``, stacked last."""
    cols = [(f(x + eps * e.reshape(x.shape)) - f(x - eps * e.reshape(x.shape))) / (2 * eps) for e in np.eye(x.size)]
    return np.stack(cols, -1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.extended  # 24 s; trajectory gradients through forward dynamics are checked against differences in CI
def test_forward_dynamics_derivatives_by_inverse_dynamics():
    """q̈' = M⁻¹(τ' - ∂ID/∂x x') (the rule of ``forward_dynamics``): reverse mode equals autodiff
    through the composite-rigid-body M and its Cholesky solve (inertias along symmetric directions,
    the only physical ones: the two routes split an antisymmetric part differently); forward mode
    in q equals central differences (forward mode in the COM and second order: the extended twin).
    Both along random directions (wᵀJ, J dq): equal for a random direction only if equal."""
    model, q, qd, rule, with_params, args = _forward_dynamics_case()
    autodiff = with_params(lambda m, q, qd, tau: dyn._solve_qdd(m, q, qd, tau)[0])
    rev_argnums = (0, 2, 3, 4, 5)
    rng = np.random.default_rng(5)
    w, dq = jnp.asarray(rng.standard_normal(3)), jnp.asarray(rng.standard_normal(3))

    @jax.jit
    def reverse(*a):
        return [jax.grad(lambda *x: w @ f(*x), argnums=rev_argnums)(*a) for f in (rule, autodiff)]

    rev, rev_a = reverse(*args)
    sym = lambda j: j + jnp.swapaxes(j, -1, -2)  # noqa: E731
    for k, (g, a) in zip(rev_argnums, zip(rev, rev_a)):
        if k == 2:
            g, a = sym(g), sym(a)
        assert rel(g, a) < 1e-12, (k, rel(g, a))

    # forward mode in q; no applied force (tau=None) takes the same rule
    @jax.jit
    def value_and_tangent(qq):
        tangent = jax.jvp(lambda x: mbjax.forward_dynamics(model, x, qd), (qq,), (dq,))[1]
        return mbjax.forward_dynamics(model, qq, qd), tangent

    eps = 1e-6
    central = (value_and_tangent(q + eps * dq)[0] - value_and_tangent(q - eps * dq)[0]) / (2 * eps)
    assert rel(value_and_tangent(q)[1], central) < 1e-7


@pytest.mark.extended
def test_forward_dynamics_derivatives_in_com_and_second_order():
    """The rule's forward mode in the COM positions and its second order (forward over the rule's
    own reverse pass) equal central differences."""
    model, q, qd, rule, _, args = _forward_dynamics_case()
    fwd_com = jax.jit(jax.jacfwd(rule, argnums=1))(*args)
    fd_com = jax.jit(lambda c: rule(args[0], c, *args[2:]))
    assert rel(fwd_com, _central(fd_com, model.com)) < 1e-7
    w = jnp.asarray([0.3, -1.2, 0.7])
    grad_q = jax.jit(jax.grad(lambda qq: w @ rule(*args[:3], qq, *args[4:])))
    dq = jnp.asarray([0.5, 0.1, -0.4])
    hvp = jax.jit(lambda qq: jax.jvp(grad_q, (qq,), (dq,))[1])(q)
    eps = 1e-6
    assert rel(hvp, (grad_q(q + eps * dq) - grad_q(q - eps * dq)) / (2 * eps)) < 1e-6


_inverse_dynamics = jax.jit(mbjax.inverse_dynamics)  # float64, on one tree: one compile for the next two tests


def test_batched_compiles_once_and_matches_loop():
    model = random_tree(2, n_bodies=7, n_coordinates=3, nonlinear=False)
    qs, qds, qdds = (random_poses(30 + k, 5, 3) for k in range(3))
    fn = jax.jit(eqx.debug.assert_max_traces(jax.vmap(mbjax.inverse_dynamics, in_axes=(None, 0, 0, 0)), max_traces=1))
    out = fn(model, qs, qds, qdds)
    out2 = fn(model, qs + 0.1, qds, qdds)  # no retrace
    assert out2.shape == (5, 3)
    loop = jnp.stack([_inverse_dynamics(model, qs[k], qds[k], qdds[k]) for k in range(5)])
    assert rel(out, loop) < 1e-13


def test_float32_runs():
    model = random_tree(2, n_bodies=7, n_coordinates=3, nonlinear=False)
    m32 = jax.tree.map(lambda a: a.astype(jnp.float32) if eqx.is_inexact_array(a) else a, model)
    q, qd, qdd = (random_poses(40 + k, 1, 3)[0] for k in range(3))
    t32 = _inverse_dynamics(m32, q.astype(jnp.float32), qd.astype(jnp.float32), qdd.astype(jnp.float32))
    assert t32.dtype == jnp.float32
    assert rel(t32, _inverse_dynamics(model, q, qd, qdd)) < 1e-4
