"""OpenSim's ``Ligament`` and ``PathSpring`` as force elements (:mod:`mbjax.forces.path_force`):
the tension laws by hand, the generalized force against ``-Tᵀ ∂L/∂q`` by autodiff of the path
length, the lengthening speed against finite differences, ``appliesForce`` and bad properties
refused by name; they enter ``model_forces`` and the ID tool's force elements.  OpenSim itself:
tests/validation/test_path_springs_opensim.py."""

from __future__ import annotations

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.forces import Ligament, PathSpring, model_forces
from mbjax.io import load_osim
from mbjax.maps.piecewise import PiecewisePolynomial
from mbjax.maps.simm_spline import pp_simm_spline
from mbjax.opensim.tools.id.motion import _force_elements_applied, inverse_dynamics_frames
from _osim_text import line_of, replace_once, write_text
from _path_spring_models import CURVE_X, CURVE_Y, forces, model_text

jax.config.update("jax_enable_x64", True)


def _load(tmp_path, text=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(write_text(tmp_path, model_text() if text is None else text), **kw)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The model with straight paths (no wrap pass to compile)."""
    return _load(tmp_path_factory.mktemp("springs"), ignore_wrapping=True)


def _stack(model, cls):
    (e,) = [e for e in model.forces.elements if isinstance(e, cls)]
    return e


def test_loaded_as_force_elements_not_muscles(straight):
    assert straight.muscles is None and straight.osim.ignored == ()
    lig, ps = _stack(straight, Ligament), _stack(straight, PathSpring)
    assert lig.names == ("lig", "lig2") and ps.names == ("ps", "ps_wrap")
    np.testing.assert_array_equal(lig.resting_length, [0.26, 0.4])
    np.testing.assert_array_equal(lig.pcsa_force, [500.0, 300.0])
    np.testing.assert_array_equal(ps.stiffness, [800.0, 300.0])
    np.testing.assert_array_equal(ps.dissipation, [0.7, 0.3])
    assert lig.paths.cond_coord[1][1] == straight.coordinate_index("b")  # the conditional point reads b


def test_ligament_tension_law_by_hand(straight):
    """T = F f(L/L₀) for L > L₀ (a SimmSpline passes through its knots), 0 for L <= L₀; lig2 has
    OpenSim's default curve (2 at 1.6 and beyond up to its last knot)."""
    lig = _stack(straight, Ligament)
    rest, pcsa = np.asarray(lig.resting_length), np.asarray(lig.pcsa_force)
    for x, y in zip(CURVE_X[2:], CURVE_Y[2:]):
        t = lig.tension(jnp.asarray([x * rest[0], 1.6 * rest[1]]), jnp.zeros(2))
        np.testing.assert_allclose(t, [pcsa[0] * y, pcsa[1] * 2.0], rtol=1e-12)
    t = lig.tension(jnp.asarray([rest[0], 0.9 * rest[1]]), jnp.asarray([5.0, -5.0]))
    np.testing.assert_array_equal(t, [0.0, 0.0])
    mid = 1.025  # between knots: the file's SimmSpline, as OpenSim evaluates it
    expect = pcsa[0] * float(PiecewisePolynomial("x", pp_simm_spline(CURVE_X, CURVE_Y)).evaluate(jnp.asarray([mid]))[0][0])
    np.testing.assert_allclose(lig.tension(jnp.asarray([mid * rest[0], rest[1]]), jnp.zeros(2))[0], expect, rtol=1e-12)
    assert 0 < expect < pcsa[0] * 0.05


def test_path_spring_tension_law_by_hand(straight):
    """T = k max(L - L₀, 0) (1 + c L̇), not clamped at 0 (fast shortening pushes, as in OpenSim)."""
    ps = _stack(straight, PathSpring)
    k, rest, c = (np.asarray(a) for a in (ps.stiffness, ps.resting_length, ps.dissipation))
    length, speed = rest + np.array([0.01, 0.03]), np.array([0.4, -1.0 / c[1] - 2.0])
    t = np.asarray(ps.tension(jnp.asarray(length), jnp.asarray(speed)))
    np.testing.assert_allclose(t, k * (length - rest) * (1 + c * speed), rtol=1e-13)
    assert t[1] < 0
    np.testing.assert_array_equal(ps.tension(jnp.asarray(rest - 0.01), jnp.asarray([3.0, -3.0])), [0.0, 0.0])


def test_generalized_force_is_minus_tension_times_length_gradient(straight):
    """Q = -(∂L/∂q)ᵀ T with ∂L/∂q by jax.jacfwd of the path length, at a pose where every element
    pulls and one where some are slack; model_forces is the sum over the stacks.  (Wrapped paths:
    the generalized force against OpenSim's, tests/validation/test_path_springs_opensim.py.)"""
    qd = jnp.asarray([0.7, -1.3])
    for k, q in enumerate((jnp.asarray([0.4, -0.3]), jnp.asarray([0.4, 1.2]))):
        total = jnp.zeros(2)
        for e in straight.forces.elements:
            grad = jax.jit(jax.jacfwd(lambda x, e=e: e.lengths(straight, x)))(q)  # (n, nq)
            t = e.tension(e.lengths(straight, q), grad @ qd)
            assert np.all(np.asarray(t) != 0) if k == 0 else np.any(np.asarray(t) == 0), (e.names, t)
            np.testing.assert_allclose(e.generalized_force(straight, q, qd), -grad.T @ t, rtol=1e-10, atol=1e-12)
            total = total + e.generalized_force(straight, q, qd)
        np.testing.assert_allclose(model_forces(straight, q, qd), total, rtol=1e-12)


def test_lengthening_speed_is_the_finite_difference_of_the_length(straight):
    ps = _stack(straight, PathSpring)
    q, qd = jnp.asarray([-0.3, 0.6]), jnp.asarray([1.1, -0.8])
    _, speed, _ = ps.kinematics(straight, q, qd)
    h = 1e-6
    fd = (ps.lengths(straight, q + h * qd) - ps.lengths(straight, q - h * qd)) / (2 * h)
    np.testing.assert_allclose(speed, fd, rtol=1e-7, atol=1e-10)
    # the dissipation term: the tension at speed minus the one at rest is k s c L̇
    length = ps.lengths(straight, q)
    t = ps.tensions(straight, q, qd) - ps.tensions(straight, q, jnp.zeros(2))
    expect = ps.stiffness * jnp.maximum(length - ps.resting_length, 0) * ps.dissipation * fd
    np.testing.assert_allclose(t, expect, rtol=1e-7)


def test_jit_and_vmap_over_poses(straight):
    f = jax.jit(jax.vmap(model_forces, in_axes=(None, 0, 0)))
    q = jnp.asarray([[0.1, 0.2], [0.5, -0.4], [-0.6, 1.0]])
    out = f(straight, q, -q)
    for k in range(3):
        np.testing.assert_allclose(out[k], model_forces(straight, q[k], -q[k]), rtol=1e-12)


def test_inverse_dynamics_subtracts_them(straight):
    """The ID tool's force elements (forces_to_exclude=Muscles) include the path forces."""
    q = np.array([[0.3, 0.8], [-0.2, 1.1]])
    qd, qdd = np.array([[0.5, -0.4], [1.0, 0.3]]), np.array([[1.0, 2.0], [-1.0, 0.5]])
    on = inverse_dynamics_frames(straight, q, qd, qdd, forces=True)
    off = inverse_dynamics_frames(straight, q, qd, qdd, forces=False)
    q_el = np.stack([np.asarray(model_forces(straight, a, b)) for a, b in zip(q, qd)])
    assert np.abs(q_el).max() > 0.5
    np.testing.assert_allclose(on, off - q_el, rtol=1e-10, atol=1e-10)
    assert _force_elements_applied(straight, ("Muscles",)) is True  # the ID tool's default keeps them
    assert _force_elements_applied(straight, ("All",)) is False
    with pytest.raises(NotImplementedError, match="single force element 'lig'"):
        _force_elements_applied(straight, ("lig",))


def test_applies_force_false_is_skipped(tmp_path):
    m = _load(tmp_path, model_text(forces(applies="<appliesForce>false</appliesForce>")), ignore_wrapping=True)
    assert _stack(m, Ligament).names == ("lig2",)
    assert "lig" in m.osim.disabled_forces and "lig" not in m.forces.names


def test_ignore_forces_leaves_them_out(tmp_path):
    with pytest.warns(UserWarning, match=r"4 element\(s\) not modelled, as asked by ignore_forces"):
        m = load_osim(write_text(tmp_path, model_text()), ignore_forces=("Ligament", "PathSpring"),
                      ignore_wrapping=True)
    assert m.forces is None and len(m.osim.ignored) == 4


@pytest.mark.parametrize("field, value, message", [
    ("rest", "nan", r"Ligament 'lig': <resting_length> must be finite and > 0, got nan"),
    ("rest", "-0.2", r"Ligament 'lig': <resting_length> must be finite and > 0, got -0.2"),
    ("rest", "0", r"Ligament 'lig': <resting_length> must be finite and > 0, got 0.0"),
    ("pcsa", "-5", r"Ligament 'lig': <pcsa_force> must be finite and >= 0, got -5.0"),
    ("pcsa", "1,5", r"Ligament 'lig': <pcsa_force> must be a number, got '1,5'"),
    ("stiffness", "-1", r"PathSpring 'ps': <stiffness> must be finite and >= 0, got -1.0"),
    ("stiffness", "inf", r"PathSpring 'ps': <stiffness> must be finite and >= 0, got inf"),
    ("dissipation", "nan", r"PathSpring 'ps': <dissipation> must be finite, got nan"),
    ("ps_rest", "-0.1", r"PathSpring 'ps': <resting_length> must be finite and > 0, got -0.1"),
])
def test_bad_property_refused_by_name(tmp_path, field, value, message):
    text = model_text(forces(**{field: value}))
    tag = {"rest": "<resting_length>", "pcsa": "<pcsa_force>", "stiffness": "<stiffness>",
           "dissipation": "<dissipation>", "ps_rest": "<resting_length>"}[field]
    start = text.index('<PathSpring name="ps">' if field in ("stiffness", "dissipation", "ps_rest") else '<Ligament name="lig">')
    line = line_of(text[start:], tag) + text[:start].count("\n")
    with pytest.raises(ValueError, match=rf"model.osim:{line}: .*{message}"):
        _load(tmp_path, text, ignore_wrapping=True)


def test_missing_path_spring_property_refused_and_misspelt_one_named(tmp_path):
    text = replace_once(model_text(), "<stiffness>800</stiffness>", "<stifness>800</stifness>")
    with pytest.raises(ValueError, match=r"PathSpring 'ps': <stiffness> is missing \(OpenSim's default is NaN"):
        _load(tmp_path, text, ignore_wrapping=True)
    text = replace_once(model_text(), "<pcsa_force>300</pcsa_force>", "<pcsa_forse>300</pcsa_forse>")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m = load_osim(write_text(tmp_path, text), ignore_wrapping=True)
    note = re.escape("<pcsa_forse> in <Ligament name='lig2'> (not a property of Ligament")
    assert any(re.search(note, str(w.message)) for w in rec), [str(w.message) for w in rec]
    np.testing.assert_array_equal(_stack(m, Ligament).pcsa_force, [500.0, 0.0])  # OpenSim's default stays


def test_function_based_path_refused_by_name(tmp_path):
    text = replace_once(model_text(), '<PathSpring name="ps"><GeometryPath name="geometrypath">',
                        '<PathSpring name="ps"><FunctionBasedPath name="path" /><GeometryPath name="geometrypath">')
    with pytest.raises(NotImplementedError, match=r"PathSpring with a <FunctionBasedPath> is not modelled"):
        _load(tmp_path, text, ignore_wrapping=True)


def test_element_checks_its_parameters(straight):
    ps = _stack(straight, PathSpring)
    with pytest.raises(ValueError, match=r"PathSpring 'ps_wrap': stiffness must be >= 0, got -3.0"):
        PathSpring(paths=ps.paths, element_names=ps.names, resting_length=ps.resting_length,
                   stiffness=jnp.asarray([1.0, -3.0]), dissipation=ps.dissipation)
    lig = _stack(straight, Ligament)
    with pytest.raises(ValueError, match=r"force_length_curve must be a PiecewisePolynomial stack of 2"):
        Ligament(paths=lig.paths, element_names=lig.names, resting_length=lig.resting_length,
                 pcsa_force=lig.pcsa_force, force_length_curve=PiecewisePolynomial("x", pp_simm_spline(CURVE_X, CURVE_Y)))


def test_smooth_wrapping_reaches_the_path_forces(tmp_path):
    m = _load(tmp_path, wrapping="smooth")
    assert {e.paths.wraps.wrapping for e in m.forces.elements} == {"smooth"}
    assert {e.paths.wraps.wrapping for e in _load(tmp_path).forces.elements} == {"opensim"}
