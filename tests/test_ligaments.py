"""Triangle quadrature, TPSM, multibundle model and ligament force elements (TPS-ligament seed)."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.ligaments import (
    FibreSet,
    LigamentForce,
    Mesh,
    TPSMLigament,
    adaptive_integrate,
    check_mesh,
    conical_rule,
    discretize,
    fibre_energy_density,
    fibre_law,
    fit_tps,
    gauss_rule,
    generalized_stiffness,
    ligament_generalized_forces,
    ligament_potential,
    ligament_stiffness,
    ligament_wrench,
    multibundle_fibres,
    quadrature_points,
    reference_wrench,
    spatial_area,
    synthetic_acl,
    triangulate,
    twist_perturbation,
)
from mbjax.ligaments.quadrature import polygon_area


# ------------------------------------------------------------------ quadrature


def _monomial_exact(a, b):
    """∫_T r^a s^b dr ds = a! b! / (a + b + 2)!, normalised by the area 1/2."""
    return 2.0 * math.factorial(a) * math.factorial(b) / math.factorial(a + b + 2)


@pytest.mark.parametrize(
    "rule", [gauss_rule(1), gauss_rule(3), gauss_rule(4), gauss_rule(7), conical_rule(6), conical_rule(13)]
)
def test_rules_exact_to_their_degree(rule):
    assert abs(rule.weights.sum() - 1) < 1e-14
    r, s = rule.points.T
    for a in range(rule.degree + 2):
        for b in range(rule.degree + 2 - a):
            got = np.sum(rule.weights * r**a * s**b)
            if a + b <= rule.degree:
                assert abs(got - _monomial_exact(a, b)) < 1e-13, (rule.name, a, b)
    # the degree is sharp for the paper's rules: some monomial of degree + 1 is not integrated exactly
    if rule.name.startswith(("gauss", "radon")):
        d = rule.degree + 1
        errs = [abs(np.sum(rule.weights * r**a * s ** (d - a)) - _monomial_exact(a, d - a)) for a in range(d + 1)]
        assert max(errs) > 1e-6


def test_mesh_covers_polygon_exactly():
    lig, _ = synthetic_acl()
    poly = np.asarray(lig.domain)
    for n in (30, 90, 200):
        mesh = triangulate(poly, n)
        assert abs(mesh.n_triangles - n) <= 1
        xy, w = quadrature_points(mesh, gauss_rule(3))
        # area and first moments against the polygon's shoelace formulas (independent route)
        x, y = poly[:, 0], poly[:, 1]
        xn, yn = np.roll(x, -1), np.roll(y, -1)
        cr = x * yn - xn * y
        area = 0.5 * cr.sum()
        cx = ((x + xn) * cr).sum() / (6 * area)
        np.testing.assert_allclose(w.sum(), polygon_area(poly), rtol=1e-12)
        np.testing.assert_allclose((w * xy[:, 0]).sum() / w.sum(), cx, rtol=1e-10, atol=1e-15)
    # a non-convex (L-shaped) polygon
    ell = np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2.0]])
    mesh = triangulate(ell, 40)
    _, w = quadrature_points(mesh, gauss_rule(1))
    np.testing.assert_allclose(w.sum(), 3.0, rtol=1e-12)


def test_zero_area_triangles_raise():
    v = np.array([[0, 0], [1, 0], [0, 1], [2, 0.0]])
    with pytest.raises(ValueError, match="zero area"):
        check_mesh(Mesh(v, np.array([[0, 1, 2], [0, 1, 3]])))
    # clockwise triangles are reoriented, not rejected
    m = check_mesh(Mesh(v[:3], np.array([[0, 2, 1]])))
    xy, w = quadrature_points(m, gauss_rule(1))
    assert w[0] == pytest.approx(0.5)


def test_adaptive_integral_smooth_and_kinked():
    mesh = Mesh(np.array([[0, 0], [1, 0], [0, 1.0]]), np.array([[0, 1, 2]]))
    # ∫_T e^{x+y} = 1 (by hand: ∫_0^1 (e - e^x) dx)
    val, err, _ = adaptive_integrate(lambda p: np.exp(p.sum(1)), mesh, tol=1e-12)
    assert abs(val[0] - 1.0) < 1e-12 and err < 1e-10
    # kink like a slack fibre: ∫_T max(x - 1/3, 0)² = ∫_{1/3}^1 (x - 1/3)² (1 - x) dx = (2/3)^4 / 12
    exact = (2 / 3) ** 4 / 12
    val, err, n = adaptive_integrate(lambda p: np.maximum(p[:, 0] - 1 / 3, 0) ** 2, mesh, tol=1e-10)
    assert abs(val[0] - exact) < 1e-11
    assert abs(val[0] - exact) <= err + 1e-15  # the estimate bounds the true error


# ------------------------------------------------------------------ fibre laws


def test_blankevoort_law_c1_and_energy():
    eps = jnp.linspace(-0.05, 0.2, 101)
    c = 2.0
    f = fibre_law(eps, c, "blankevoort")
    assert np.all(np.asarray(f)[eps < 0] == 0)
    np.testing.assert_allclose(fibre_law(jnp.array(0.1), c, "blankevoort"), c * (0.1 - 0.03))
    d = jax.vmap(jax.grad(lambda e: fibre_law(e, c, "blankevoort")))
    e0 = 0.06
    np.testing.assert_allclose(d(jnp.array([e0 - 1e-9, e0 + 1e-9])), [c, c], rtol=1e-6)  # C¹
    np.testing.assert_allclose(fibre_law(jnp.array([e0 - 1e-12, e0 + 1e-12]), c, "blankevoort"), c * 0.03, rtol=1e-9)
    for law in ("quadratic", "blankevoort"):  # energy density derivative = l0 f (dε/dl = 1/l0)
        g = jax.vmap(jax.grad(lambda e: fibre_energy_density(e, c, 0.5, law)))(eps)
        np.testing.assert_allclose(g, 0.5 * fibre_law(eps, c, law), atol=1e-12)
    with pytest.raises(ValueError, match="not one of"):
        fibre_law(eps, c, "linear")


# ------------------------------------------------------------------ TPSM


def _parallel_ligament(offset=(0.0, 0.0, 0.03), l0=0.02, c=1e6):
    """Flat insertions, φ = identity, Γ = 0: all fibres parallel of length |offset| (hand-derived)."""
    lm = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0], [0.3, 0.6]]) * 0.01
    phi = fit_tps(lm, lm, 0.0, scale=1e-3)
    flat = fit_tps(lm, np.zeros(5), 0.0, scale=1e-3)
    dom = np.array([[0, 0], [1, 0], [1.2, 0.7], [0.4, 1.1], [-0.2, 0.5]]) * 0.01
    frame_b = mbjax._spatial.transform(jnp.eye(3), jnp.asarray(offset))
    return TPSMLigament(phi, flat, flat, jnp.eye(4), frame_b, jnp.asarray(dom), jnp.asarray(c), jnp.asarray(l0)), dom


def test_hand_derived_parallel_fibres():
    lig, dom = _parallel_ligament()
    area = polygon_area(dom)
    eps = (0.03 - 0.02) / 0.02
    f_exact = np.array([0, 0, -1.0]) * 1e6 * eps**2 * area  # on body B (femur): towards p, i.e. -z
    x, y = dom[:, 0], dom[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cr = x * yn - xn * y
    cen = np.array([((x + xn) * cr).sum(), ((y + yn) * cr).sum()]) / (6 * 0.5 * cr.sum())
    m_exact = np.cross(np.r_[cen, 0.03], f_exact)
    mesh = triangulate(dom, 20)
    I = jnp.eye(4)
    for k in (1, 3, 4):
        w = ligament_wrench(discretize(lig, mesh, gauss_rule(k)), I, I)
        np.testing.assert_allclose(w[3:], f_exact, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(w[:3], m_exact, rtol=1e-10, atol=1e-14)
    w = ligament_wrench(multibundle_fibres(lig, mesh), I, I)  # MBM: force exact, moment not
    np.testing.assert_allclose(w[3:], f_exact, rtol=1e-12, atol=1e-12)


def test_area_factor_gives_surface_area():
    """Σ TPSM weights (W_g A ‖r_x × r_y‖) vs the area of a very fine lifted triangulation."""
    lig, _ = synthetic_acl()
    poly = np.asarray(lig.domain)
    fib = discretize(lig, triangulate(poly, 40), gauss_rule(4))
    fine = float(spatial_area(lig, triangulate(poly, 3000)))
    assert abs(float(fib.weight.sum()) - fine) / fine < 2e-5
    assert float(fib.weight.sum()) > polygon_area(poly)  # curved surface


@pytest.fixture(scope="module")
def acl_reference():
    lig, _ = synthetic_acl(free_length=0.027)
    poly = np.asarray(lig.domain)
    mesh = triangulate(poly, 30)
    I = jnp.eye(4)
    ref, err, _ = reference_wrench(lig, mesh, I, I, tol=1e-7, max_level=7)
    return lig, poly, ref, err


def test_tpsm_wrench_vs_brute_force(acl_reference):
    """TPSM-n converges to the adaptive reference; and to a brute-force fine conical-rule sum."""
    lig, poly, ref, err = acl_reference
    I = jnp.eye(4)
    assert err < 1e-5 * np.linalg.norm(ref)
    brute = ligament_wrench(discretize(lig, triangulate(poly, 800), conical_rule(8)), I, I)
    np.testing.assert_allclose(brute, ref, rtol=1e-6, atol=1e-6 * np.linalg.norm(ref))
    errs = {}
    for k in (1, 3, 4):
        e = []
        for n in (30, 120):
            w = ligament_wrench(discretize(lig, triangulate(poly, n), gauss_rule(k)), I, I)
            e.append(np.linalg.norm(w - ref) / np.linalg.norm(ref))
        errs[k] = e
        assert e[1] < e[0]
    assert errs[1][1] < 0.02 and errs[3][1] < 2e-3 and errs[4][1] < 2e-3
    # MBM at its coarsest is clearly worse than TPSM-3 (seed §3.1)
    w = ligament_wrench(multibundle_fibres(lig, triangulate(poly, 30)), I, I)
    assert np.linalg.norm(w - ref) / np.linalg.norm(ref) > 3 * errs[3][0]
    # the centroid-placed MBM (Fig. 9) converges too
    w = ligament_wrench(multibundle_fibres(lig, triangulate(poly, 400), "centroids"), I, I)
    assert np.linalg.norm(w - ref) / np.linalg.norm(ref) < 0.05


# ------------------------------------------------------------------ force element


def _knee_model():
    coords = ["tx", "ty", "tz", "rx", "ry", "rz"]
    b = mbjax.ModelBuilder(coords, gravity=[0, 0, -9.81])
    b.add_body("femur", parent="ground", joint="revolute", map=None, mass=8.0, inertia=[0.1, 0.1, 0.02])
    prev = "ground"
    for name, joint, axis, c in [
        ("s1", "prismatic", [1, 0, 0], "tx"),
        ("s2", "prismatic", [0, 1, 0], "ty"),
        ("s3", "prismatic", [0, 0, 1], "tz"),
        ("s4", "revolute", [1, 0, 0], "rx"),
        ("s5", "revolute", [0, 1, 0], "ry"),
        ("tibia", "revolute", [0, 0, 1], "rz"),
    ]:
        b.add_body(name, parent=prev, joint=joint, axis=axis, map=c)
        prev = name
    return b.build()


@pytest.fixture(scope="module")
def knee():
    lig, _ = synthetic_acl(free_length=0.026)
    fib = discretize(lig, triangulate(np.asarray(lig.domain), 16), gauss_rule(3))
    model = _knee_model()
    return model, LigamentForce.between(model, fib, "tibia", "femur"), fib


def test_generalized_force_is_virtual_work(knee):
    model, el, fib = knee
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.normal(size=6) * np.array([2e-3, 2e-3, 2e-3, 0.05, 0.05, 0.05]))
    dq = jnp.asarray(rng.normal(size=6))
    from mbjax.ligaments import fibre_state

    @eqx.filter_jit
    def routes(model, q, dq, el):
        fib = el.fibres
        Q = ligament_generalized_forces(model, q, el)
        # independent route 1: Σ fibre forces · virtual displacements of the fibre ends (Eq. 46)
        poses = mbjax.body_poses(model, q)
        _, _, _, strain, s_hat = fibre_state(fib, poses[model.body_index("tibia")], poses[model.body_index("femur")])
        t = fibre_law(strain, fib.stiffness, fib.law) * fib.weight
        dp = mbjax.reference.virtual_displacement(model, q, dq, "tibia", fib.points_a)
        dqb = mbjax.reference.virtual_displacement(model, q, dq, "femur", fib.points_b)
        work = jnp.sum(t[:, None] * s_hat * (dqb - dp))
        # independent route 2: Q = -∂U/∂q of the elastic energy
        grad_u = jax.grad(ligament_potential, argnums=1)(model, q, el)
        return Q, work, grad_u, jnp.abs(t).max()

    Q, work, grad_u, tmax = routes(model, q, dq, el)
    assert float(tmax) > 0
    np.testing.assert_allclose(Q @ dq, work, rtol=1e-12)
    np.testing.assert_allclose(Q, -grad_u, rtol=1e-10, atol=1e-10)


def test_stiffness_from_jacfwd_vs_finite_differences(knee):
    model, el, fib = knee
    q = jnp.array([1e-3, -5e-4, 2e-3, 0.02, -0.03, 0.04])
    h = 1e-7
    steps = jnp.concatenate([h * jnp.eye(6), -h * jnp.eye(6)])

    @eqx.filter_jit
    def routes(model, q, el):
        fib = el.fibres
        poses = mbjax.body_poses(model, q)
        pa, pb = poses[model.body_index("tibia")], poses[model.body_index("femur")]
        k = ligament_stiffness(fib, pa, pb)
        w = jax.vmap(lambda x: ligament_wrench(fib, pa, twist_perturbation(x) @ pb))(steps)
        kq = generalized_stiffness(model, q, el)
        qq = jax.vmap(lambda d: ligament_generalized_forces(model, q + d, el))(steps)
        return k, (w[:6] - w[6:]).T / (2 * h), kq, -(qq[:6] - qq[6:]).T / (2 * h)

    k, fd, kq, fdq = routes(model, q, el)
    np.testing.assert_allclose(k, fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    np.testing.assert_allclose(kq, fdq, rtol=1e-6, atol=1e-6 * np.abs(fdq).max())
    # conservative force: K = Hessian of the energy is symmetric
    np.testing.assert_allclose(kq, kq.T, atol=1e-8 * np.abs(kq).max())


def test_jit_once_and_vmap_over_poses(knee):
    model, el, fib = knee
    qs = jnp.asarray(np.random.default_rng(1).normal(size=(5, 6)) * 1e-3)
    f = eqx.filter_jit(eqx.debug.assert_max_traces(ligament_generalized_forces, max_traces=1))
    batched = jax.vmap(f, in_axes=(None, 0, None))(model, qs, el)
    looped = np.stack([f(model, q, el) for q in qs])
    np.testing.assert_allclose(batched, looped, rtol=1e-12, atol=1e-9)
    f(model, qs[1] * 2, el)  # no retrace (the vmapped call traced a separate, batched function)


def test_bad_fibres_and_zero_length():
    pts = jnp.zeros((2, 3))
    with pytest.raises(ValueError, match="free lengths"):
        FibreSet(pts, pts, jnp.ones(2), jnp.ones(2), jnp.array([0.01, 0.0]))
    with pytest.raises(ValueError, match="law"):
        FibreSet(pts, pts, jnp.ones(2), jnp.ones(2), jnp.ones(2), law="linear")
    with pytest.raises(ValueError, match="rows"):
        FibreSet(pts, pts[:1], jnp.ones(2), jnp.ones(2), jnp.ones(2))
    # zero-length fibres (p = q) are slack: no force, no NaN, finite gradients
    fib = FibreSet(pts, pts, jnp.ones(2), jnp.ones(2), jnp.ones(2))
    I = jnp.eye(4)
    assert np.all(ligament_wrench(fib, I, I) == 0)
    g = jax.jacfwd(lambda x: ligament_wrench(fib, I, twist_perturbation(x) @ I))(jnp.zeros(6))
    assert np.all(np.isfinite(g))
    model = _knee_model()
    with pytest.raises(ValueError, match="not in the model"):
        LigamentForce.between(model, fib, "tibia", "patella")


def test_float32_runs():
    lig, _ = synthetic_acl()
    fib = discretize(lig, triangulate(np.asarray(lig.domain), 16), gauss_rule(1))
    fib32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, fib)
    w = ligament_wrench(fib32, jnp.eye(4, dtype=jnp.float32), jnp.eye(4, dtype=jnp.float32))
    assert w.dtype == jnp.float32 and np.all(np.isfinite(w))
