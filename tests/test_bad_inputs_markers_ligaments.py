"""Bad inputs to markers (``mbjax.Markers``, marker positions and Jacobians) and TPS ligaments:
clear errors naming the marker, body, ligament parameter or argument, never a silent wrong answer."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.ligaments as L
from mbjax.markers import Markers, marker_positions, marker_positions_and_jacobian

I4 = jnp.eye(4)
RUNTIME = (RuntimeError, jax.errors.JaxRuntimeError)


def _two_links():
    b = mbjax.ModelBuilder(["q1", "q2"], gravity=[0, 0, -9.81])
    b.add_body("upper", parent="ground", joint="revolute", axis=[0, 0, 1], map="q1", mass=1.0, inertia=[0.1] * 3)
    b.add_body("lower", parent="upper", joint="revolute", axis=[0, 0, 1], map="q2", mass=1.0, inertia=[0.1] * 3,
               offset=mbjax._spatial.transform(jnp.eye(3), jnp.array([1.0, 0.0, 0.0])))
    return b.build()


@pytest.fixture(scope="module")
def model():
    return _two_links()


# ------------------------------------------------------------------------------------------------ markers


def test_marker_body_index_out_of_range_named(model):
    q = jnp.zeros(2)
    good = Markers(["a", "b"], [1, -1], [[0.5, 0.0, 0.0], [0.0, 0.2, 0.0]])
    np.testing.assert_allclose(marker_positions(model, good, q), [[1.5, 0, 0], [0, 0.2, 0]], atol=1e-12)
    pos, jac = marker_positions_and_jacobian(model, good, q)
    np.testing.assert_allclose(pos, marker_positions(model, good, q), atol=1e-12)
    assert jac.shape == (2, 3, 2)
    bad = Markers(["a", "far"], [1, 5], np.zeros((2, 3)))  # no model at construction: refused at first use
    for fn in (marker_positions, lambda *a: marker_positions_and_jacobian(*a)[0]):
        with pytest.raises(ValueError, match=r"marker 'far' is on body index 5, but the model has 2 bodies"):
            fn(model, bad, q)
    with pytest.raises(ValueError, match=r"marker 'far' is on body index 5"):
        jax.jit(lambda z: marker_positions(model, bad, z))(q)


def test_marker_construction_refuses_bad_bodies_and_offsets():
    with pytest.raises(ValueError, match=r"marker 'b' has body index -2"):
        Markers(["a", "b"], [0, -2], np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"marker 'b' has body 1.5"):
        Markers(["a", "b"], [0, 1.5], np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"marker 'b' has body 'upper'.*on_bodies"):
        Markers(["a", "b"], [0, "upper"], np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"offset must have shape \(nm, 3\) = \(2, 3\).*got \(3, 2\)"):
        Markers(["a", "b"], [0, 1], np.zeros((3, 2)))  # was reshaped silently (rows scrambled)
    with pytest.raises(ValueError, match=r"offset of marker 'b' is not finite"):
        Markers(["a", "b"], [0, 1], [[0, 0, 0], [0, np.nan, 0]])
    with pytest.raises(TypeError, match="names must be a sequence"):
        Markers("ab", [0, 1], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="3 body indices for 2 markers"):
        Markers(["a", "b"], [0, 1, 1], np.zeros((2, 3)))
    ok = Markers(["a", "b"], [0, 1.0], np.arange(6.0))  # flat (3 nm,) offsets and whole floats still read
    assert ok.body == (0, 1) and ok.offset.shape == (2, 3)
    np.testing.assert_array_equal(ok.offset[1], [3.0, 4.0, 5.0])


def test_markers_on_bodies_names_marker(model):
    with pytest.raises(ValueError, match=r"marker 'm': unknown body 'nope'"):
        Markers.on_bodies(model, ["m"], ["nope"], np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"marker 'm': body index 9 out of range"):
        Markers.on_bodies(model, ["m"], [9], np.zeros((1, 3)))
    assert Markers.on_bodies(model, ["m", "g"], ["lower", "ground"], np.zeros((2, 3))).body == (1, -1)


def test_marker_offsets_changed_after_construction(model):
    mk = Markers(["a", "b"], [0, 1], np.ones((2, 3)) * 0.1)
    bad = eqx.tree_at(lambda m: m.offset, mk, mk.offset.at[1, 2].set(jnp.nan))
    q = jnp.zeros(2)
    for fn in (marker_positions, marker_positions_and_jacobian):
        with pytest.raises(RuntimeError, match=r"offset of marker 'b' contains NaN"):
            fn(model, bad, q)
    with pytest.raises(RUNTIME, match=r"offset of marker 'b' contains NaN"):
        jax.jit(lambda z: marker_positions(model, bad, z))(q)
    with mbjax.config.checks(False):  # switched off: NaN propagates, never a plausible number
        assert np.all(np.isnan(np.asarray(marker_positions(model, bad, q))[1]))


def test_marker_jacobian_checks_q(model):
    mk = Markers(["a"], [1], np.zeros((1, 3)))
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        marker_positions_and_jacobian(model, mk, jnp.zeros(3))
    with pytest.raises(RuntimeError, match="q contains NaN"):
        marker_positions_and_jacobian(model, mk, jnp.array([0.0, jnp.nan]))
    with pytest.raises(TypeError, match="markers must be an mbjax.Markers"):
        marker_positions(model, [0, 1], jnp.zeros(2))


# ------------------------------------------------------------------------------------------------ ligaments


def _ligament():
    lm = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0], [0.3, 0.6]]) * 0.01
    phi = L.fit_tps(lm, lm, 0.0, scale=1e-3)
    flat = L.fit_tps(lm, np.zeros(5), 0.0, scale=1e-3)
    dom = np.array([[0, 0], [1, 0], [1.2, 0.7], [0.4, 1.1], [-0.2, 0.5]]) * 0.01
    frame_b = mbjax._spatial.transform(jnp.eye(3), jnp.asarray([0.0, 0.0, 0.03]))
    lig = L.TPSMLigament(phi, flat, flat, I4, frame_b, jnp.asarray(dom), jnp.asarray(1e6), jnp.asarray(0.02))
    return lig, L.triangulate(dom, 8)


@pytest.fixture(scope="module")
def ligament():
    return _ligament()


@pytest.mark.parametrize("field, value, message", [
    ("stiffness", jnp.nan, "fibre stiffness is NaN, inf or < 0"),
    ("stiffness", -1.0, "fibre stiffness is NaN, inf or < 0"),
    ("free_length", 0.0, r"fibre free_length \(slack length\) is NaN, inf or <= 0"),
    ("free_length", jnp.nan, r"fibre free_length \(slack length\) is NaN, inf or <= 0"),
    ("points_a", jnp.nan, "fibre ends points_a contain NaN"),
    ("weight", jnp.inf, "fibre weight"),
])
def test_fibre_parameters_changed_after_construction(ligament, field, value, message):
    lig, mesh = ligament
    fib = L.discretize(lig, mesh, L.gauss_rule(3))
    w = L.ligament_wrench(fib, I4, I4)
    assert np.all(np.isfinite(w)) and abs(float(w[5])) > 0
    bad = eqx.tree_at(lambda f: getattr(f, field), fib, getattr(fib, field).at[0].set(value))
    with pytest.raises(RuntimeError, match="ligament_wrench: " + message):
        L.ligament_wrench(bad, I4, I4)
    with pytest.raises(RuntimeError, match="ligament_energy: " + message):
        L.ligament_energy(bad, I4, I4)
    with pytest.raises(RuntimeError, match="ligament_stiffness: " + message):
        L.ligament_stiffness(bad, I4, I4)


def test_ligament_force_checks_fibres_and_bodies(model):
    fib = L.FibreSet(jnp.zeros((2, 3)), jnp.ones((2, 3)), jnp.ones(2), jnp.ones(2), jnp.ones(2))
    el = L.LigamentForce.between(model, fib, "upper", "lower")
    q = jnp.array([0.1, 0.2])
    assert np.all(np.isfinite(L.ligament_generalized_forces(model, q, el)))
    bad = eqx.tree_at(lambda e: e.fibres.stiffness, el, jnp.array([1.0, jnp.nan]))
    for fn in (L.ligament_generalized_forces, L.ligament_potential, L.ligament_body_wrenches):
        with pytest.raises(RuntimeError, match=r"ligament from 'upper' to 'lower': fibre stiffness is NaN"):
            fn(model, q, bad)
    far = L.LigamentForce(fib, 0, 4)  # built without the model: refused at first use
    with pytest.raises(ValueError, match=r"body_b is body index 4, but the model has 2 bodies"):
        L.ligament_generalized_forces(model, q, far)
    with pytest.raises(ValueError, match=r"body_a must be a body index >= 0 \(or -1 = ground\), got -3"):
        L.LigamentForce(fib, -3, 0)
    with pytest.raises(ValueError, match=r"q must have shape \(nq,\) = \(2,\)"):
        L.ligament_potential(model, jnp.zeros(3), el)


@pytest.mark.parametrize("path, value, message", [
    (lambda l: l.stiffness, jnp.asarray(jnp.nan), r"TPSMLigament.stiffness is NaN, inf or < 0"),
    (lambda l: l.free_length, jnp.asarray(-0.01), r"TPSMLigament.free_length \(slack length\) is NaN"),
    (lambda l: l.phi.landmarks, None, r"TPSMLigament.phi: landmarks contains NaN"),
    (lambda l: l.gamma_a.scale, jnp.asarray(0.0), r"TPSMLigament.gamma_a: scale is NaN, inf or <= 0"),
    (lambda l: l.frame_b, None, r"TPSMLigament.frame_b contains NaN"),
])
def test_tpsm_parameters_changed_after_construction(ligament, path, value, message):
    lig, mesh = ligament
    if value is None:
        value = path(lig).at[0, 0].set(jnp.nan)
    bad = eqx.tree_at(path, lig, value)
    with pytest.raises(RuntimeError, match="fibres_at: " + message):
        L.discretize(bad, mesh, L.gauss_rule(1))
    with pytest.raises(RUNTIME, match="integrand: " + message):
        L.reference_wrench(bad, mesh, I4, I4, tol=1e-3, max_level=0)


def test_tps_nan_landmark_is_not_silently_dropped():
    lm = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0], [0.3, 0.6]])
    s = L.fit_tps(lm, np.array([0.0, 1.0, 2.0, 3.0, 0.5]), 0.0)
    np.testing.assert_allclose(s(jnp.asarray(lm[1])), [1.0], atol=1e-10)
    bad = eqx.tree_at(lambda t: t.landmarks, s, s.landmarks.at[4, 0].set(jnp.nan))  # its kernel term read as 0
    with pytest.raises(RuntimeError, match="thin-plate spline: landmarks contains NaN"):
        bad(jnp.asarray(lm[1]))
    with pytest.raises(RuntimeError, match="thin-plate spline: landmarks contains NaN"):
        bad.jacobian(jnp.asarray(lm[1]))
    with pytest.raises(RuntimeError, match="thin-plate spline: xy contains NaN"):
        s(jnp.array([jnp.nan, 0.0]))


def test_tpsm_point_shapes(ligament):
    lig, _ = ligament
    p, area = lig.point_a(jnp.zeros(2))
    assert p.shape == (3,) and float(area) > 0
    for fn in (lig.point_a, lig.point_b, lambda xy: lig.integrand(xy, I4, I4)):
        with pytest.raises(ValueError, match=r"xy must have shape \(2,\) \(one planar point"):
            fn(jnp.zeros((5, 2)))  # a batch: vmap it
    with pytest.raises(ValueError, match=r"weight must have shape \(N,\) = \(5,\)"):
        lig.fibres_at(jnp.zeros((5, 2)), jnp.ones(4))
    with pytest.raises(ValueError, match=r"xy must have shape \(N, 2\)"):
        lig.fibres_at(jnp.zeros((5, 3)), jnp.ones(5))


def test_tpsm_construction_refuses_bad_fields(ligament):
    lig, _ = ligament
    base = dict(phi=lig.phi, gamma_a=lig.gamma_a, gamma_b=lig.gamma_b, frame_a=I4, frame_b=lig.frame_b,
                domain=lig.domain, stiffness=1e6, free_length=0.02)
    with pytest.raises(ValueError, match=r"stiffness must be a number or a callable of \(x, y\), got shape \(3,\)"):
        L.TPSMLigament(**{**base, "stiffness": jnp.ones(3)})
    with pytest.raises(ValueError, match=r"stiffness must be finite and >= 0, got -1.0"):
        L.TPSMLigament(**{**base, "stiffness": -1.0})
    with pytest.raises(ValueError, match=r"frame_a must have shape \(4, 4\)"):
        L.TPSMLigament(**{**base, "frame_a": jnp.eye(3)})
    with pytest.raises(TypeError, match="gamma_a must be a ThinPlateSpline"):
        L.TPSMLigament(**{**base, "gamma_a": lambda xy: 0.0})
    two = L.TPSMLigament(**{**base, "stiffness": lambda xy: jnp.ones(2)})
    with pytest.raises(ValueError, match=r"stiffness must be one number per point.*returns shape \(2,\)"):
        two.fibres_at(jnp.zeros((5, 2)), jnp.ones(5))
    ok = L.TPSMLigament(**{**base, "stiffness": lambda xy: 1e6 + 0.0 * xy[0]})
    assert ok.fibres_at(jnp.zeros((5, 2)), jnp.ones(5)).stiffness.shape == (5,)


def test_fibre_set_shapes():
    a = jnp.zeros((2, 3))
    with pytest.raises(TypeError, match=r"stiffness must be an array.*jnp.full"):
        L.FibreSet(a, a + 1, jnp.ones(2), 1e6, jnp.ones(2))
    with pytest.raises(ValueError, match=r"points_a must have shape \(N, 3\)"):
        L.FibreSet(jnp.zeros((2, 2)), a, jnp.ones(2), jnp.ones(2), jnp.ones(2))
    with pytest.raises(ValueError, match=r"free_length must have shape \(2,\) for N = 2 fibres, got \(2, 1\)"):
        L.FibreSet(a, a + 1, jnp.ones(2), jnp.ones(2), jnp.ones((2, 1)))
    with pytest.raises(ValueError, match="transition_strain must be a finite number > 0"):
        L.FibreSet(a, a + 1, jnp.ones(2), jnp.ones(2), jnp.ones(2), "blankevoort", 0.0)


def test_fit_tps_settings():
    lm = np.array([[0, 0], [1, 0], [0, 1], [1, 1.0], [0.3, 0.6]])
    with pytest.raises(ValueError, match=r"lam must be a number or have shape \(n,\) = \(5,\)"):
        L.fit_tps(lm, lm, np.zeros(3))
    with pytest.raises(ValueError, match="scale must be finite and > 0, got 0.0"):
        L.fit_tps(lm, lm, 0.0, scale=0.0)
    with pytest.raises(ValueError, match="scale must be a number"):
        L.fit_tps(lm, lm, 0.0, scale=np.ones(2))
    with pytest.raises(ValueError, match=r"origin must have shape \(2,\)"):
        L.fit_tps(lm, lm, 0.0, origin=np.zeros(3))
    assert L.fit_tps(lm, lm, np.full(5, 0.1), scale=2.0, origin=np.zeros(2)).out_dim == 2


def test_quadrature_settings(ligament):
    lig, mesh = ligament
    one = lambda x: np.ones(len(x))  # noqa: E731
    with pytest.raises(ValueError, match="conical_rule: degree must be an integer >= 0, got nan"):
        L.conical_rule(float("nan"))
    with pytest.raises(ValueError, match="conical_rule: degree must be an integer >= 0, got 2.5"):
        L.conical_rule(2.5)
    with pytest.raises(ValueError, match="triangulate: n_triangles must be an integer >= 1"):
        L.triangulate(np.asarray(lig.domain), float("nan"))
    with pytest.raises(TypeError, match="discretize: rule must be a TriangleRule"):
        L.discretize(lig, mesh, 3)
    with pytest.raises(TypeError, match="mesh must be a Mesh"):
        L.check_mesh((mesh.vertices, mesh.triangles))
    with pytest.raises(ValueError, match="triangles must hold integer vertex indices"):
        L.check_mesh(L.Mesh(mesh.vertices, mesh.triangles + 0.5))
    for kw, message in (({"tol": 0.0}, "tol must be a finite number > 0"),
                        ({"tol": float("nan")}, "tol must be a finite number > 0"),
                        ({"max_level": -1}, "max_level must be an integer >= 0")):
        with pytest.raises(ValueError, match=message):
            L.adaptive_integrate(one, mesh, **kw)
    with pytest.raises(ValueError, match=r"fn must map points \(N, 2\) to values"):
        L.adaptive_integrate(lambda x: np.ones(3), mesh)
    area, _, _ = L.adaptive_integrate(one, mesh)
    np.testing.assert_allclose(area, [L.quadrature.polygon_area(np.asarray(lig.domain))], rtol=1e-10)
