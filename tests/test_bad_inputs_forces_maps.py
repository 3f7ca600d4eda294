"""Bad inputs to the force elements (mbjax.forces) and the joint maps (mbjax.maps).

Each test feeds one public name the mistakes a user makes (NaN, wrong shapes, body indices out of
range, bounds the wrong way round, expressions that do not parse) and asserts a clear error naming
the element and the parameter (negative stiffness, damping or rest length: a warning, as OpenSim
accepts them); the valid twin is checked against a closed form or autodiff.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.forces import (
    BushingForce,
    CoordinateLimitForce,
    CoordinateSpring,
    CoordinateValues,
    ExpressionBasedCoordinateForce,
    PointActuator,
    PointToPointSpring,
    SpringGeneralizedForce,
    TorqueActuator,
    actuator_matrix,
    body_fixed_xyz,
    compile_expression,
    smooth_step,
)
from mbjax.maps import (
    AbstractJointMap,
    Affine,
    BicubicSpline,
    Composed,
    ComposedPolynomial,
    Constant,
    Fourier,
    FunctionMap,
    LinearCombination,
    MultivariatePolynomial,
    PiecewisePolynomial,
    Polynomial,
)
from mbjax.maps.piecewise import PPData, pp_linear, pp_polynomial

jax.config.update("jax_enable_x64", True)


def _model():
    """Two bodies: ``a`` turns about z by ``x`` at the origin, ``c`` (child of ``a``) by ``y``."""
    b = mbjax.ModelBuilder(["x", "y"])
    b.add_body("a", axis=[0, 0, 1], map="x", mass=1.0, com=(0, -0.1, 0), inertia=np.eye(3) * 0.01)
    b.add_body("c", parent="a", axis=[0, 0, 1], map="y", mass=1.0, com=(0, -0.1, 0), inertia=np.eye(3) * 0.01)
    return b.build()


M = _model()
Q, QD = jnp.array([0.4, -0.3]), jnp.array([0.7, 0.2])
EYE = jnp.broadcast_to(jnp.eye(4), (1, 4, 4))


# ------------------------------------------------------------------------------------------------
# force elements
# ------------------------------------------------------------------------------------------------


def _bushing(**kw):
    args = dict(x_b1f=EYE, x_b2m=EYE, stiffness=jnp.zeros((1, 6)).at[0, 2].set(3.0),
                damping=jnp.zeros((1, 6)).at[0, 2].set(0.5), body1=(-1,), body2=(0,), element_names=("bush",))
    args.update(kw)
    return BushingForce(**args)


def test_bushing_force_refuses_bad_parameters_and_bodies():
    with pytest.warns(UserWarning, match=r"BushingForce 'bush': stiffness is negative \(\[-1.0.*kept as OpenSim keeps it"):
        _bushing(stiffness=-jnp.ones((1, 6)))  # OpenSim accepts it: warned, not refused
    with pytest.raises(ValueError, match=r"BushingForce 'bush': damping must be finite"):
        _bushing(damping=jnp.full((1, 6), jnp.nan))
    with pytest.raises(ValueError, match=r"BushingForce: stiffness must have shape \(1, 6\) .*got \(1, 3\)"):
        _bushing(stiffness=jnp.ones((1, 3)))
    with pytest.raises(ValueError, match=r"x_b1f \(frame F in body 1\) must have shape \(1, 4, 4\).*got \(1, 3, 3\)"):
        _bushing(x_b1f=jnp.ones((1, 3, 3)))
    with pytest.raises(ValueError, match=r"BushingForce 'bush': x_b2m .* must be a homogeneous transform"):
        _bushing(x_b2m=jnp.ones((1, 4, 4)))
    with pytest.raises(ValueError, match=r"BushingForce 'bush': body2 index -3 is out of range"):
        _bushing(body2=(-3,))
    with pytest.raises(ValueError, match=r"body1 and body2 are the same body"):
        _bushing(body1=(0,))
    with pytest.raises(TypeError, match=r"BushingForce 'bush': body2 must be a body index \(int, -1 = ground\)"):
        _bushing(body2=("a",))
    with pytest.raises(ValueError, match=r"body1 must hold one body index per element"):
        _bushing(body1=(-1, 0))
    far = _bushing(body2=(5,))  # the model is known only at evaluation: refused there, by name
    with pytest.raises(ValueError, match=r"BushingForce 'bush': body2 index 5 is out of range: use -1 \(ground\) to 1"):
        far.generalized_force(M, Q, QD)
    # valid: body a turns by x about z at the origin, so the bushing's θz = x and p = 0: Q_x = -k x - c ẋ
    got = np.asarray(_bushing().generalized_force(M, Q, QD))
    np.testing.assert_allclose(got, [-3.0 * 0.4 - 0.5 * 0.7, 0.0], rtol=1e-13, atol=1e-15)


def test_body_fixed_xyz_refuses_other_shapes_nan_and_non_rotations():
    for bad in (jnp.ones(3), jnp.ones((3, 4)), jnp.ones((2, 2))):
        with pytest.raises(ValueError, match=r"body_fixed_xyz: rot must have shape \(\.\.\., 3, 3\)"):
            body_fixed_xyz(bad)
    with pytest.raises(RuntimeError, match=r"body_fixed_xyz: rot contains NaN or inf"):
        body_fixed_xyz(jnp.eye(3).at[0, 1].set(jnp.nan))
    with pytest.raises(RuntimeError, match=r"body_fixed_xyz: rot is not a rotation matrix"):
        body_fixed_xyz(2.0 * jnp.eye(3))
    with pytest.raises(TypeError, match=r"body_fixed_xyz: rot must be an array of rotation matrices"):
        body_fixed_xyz("R")
    # valid: angles of Rx(a) Ry(b) Rz(c), built here by hand
    a, b, c = 0.3, -0.5, 1.1
    rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    np.testing.assert_allclose(body_fixed_xyz(jnp.asarray(rx @ ry @ rz)), [a, b, c], atol=1e-14)


def _limit(**kw):
    args = dict(names=["lim"], coordinates=["x"], rotational=np.array([False]), upper_stiffness=[5.0],
                upper_limit=[0.5], lower_stiffness=[4.0], lower_limit=[-0.5], damping=[0.2], transition=[0.1])
    args.update(kw)
    return CoordinateLimitForce.from_opensim(M, **args)


def test_coordinate_limit_force_refuses_zero_stiffness_crossed_limits_and_nan():
    with pytest.raises(ValueError, match=r"CoordinateLimitForce 'lim': k_up \(upper_stiffness; OpenSim divides by it\) "
                                         r"must be > 0, got 0.0"):
        _limit(upper_stiffness=[0.0])
    with pytest.warns(UserWarning, match=r"CoordinateLimitForce 'lim': damping is negative \(-1.0\)"):
        _limit(damping=[-1.0])
    with pytest.raises(ValueError, match=r"CoordinateLimitForce 'lim': width \(transition\) must be > 0"):
        _limit(transition=[0.0])
    with pytest.raises(ValueError, match=r"CoordinateLimitForce 'lim': q_up \(upper_limit\) must be finite"):
        _limit(upper_limit=[np.nan])
    with pytest.raises(ValueError, match=r"lower_limit 0.6 is above upper_limit 0.5 .*wrong way round"):
        _limit(lower_limit=[0.6])
    with pytest.raises(ValueError, match=r"CoordinateLimitForce: upper_stiffness must have shape \(1,\)"):
        _limit(upper_stiffness=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"rotational must be booleans of shape \(1,\)"):
        _limit(rotational=np.array([1.0]))
    with pytest.raises(ValueError, match=r"unknown coordinate 'knee'"):
        _limit(coordinates=["knee"])
    with pytest.raises(TypeError, match=r"CoordinateLimitForce: damping must be real"):
        _limit(damping=["stiff"])
    # valid: beyond q_up + transition the law is -k_up (q - q_up) - c q̇ (OpenSim's formula)
    f = _limit().generalized_force(M, jnp.array([0.8, 0.0]), jnp.array([0.3, 0.0]))
    np.testing.assert_allclose(f, [-5.0 * 0.3 - 0.2 * 0.3, 0.0], rtol=1e-13)
    assert float(_limit().generalized_force(M, Q.at[0].set(0.1), QD)[0]) == 0.0  # inside the limits


def test_smooth_step_refuses_reversed_ends_and_nan():
    with pytest.raises(ValueError, match=r"smooth_step: need x1 > x0 .* got x0 = 1.0, x1 = 0.0"):
        smooth_step(0.5, 1.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match=r"smooth_step: need x1 > x0"):
        smooth_step(0.5, 0.5, 0.5, 0.0, 1.0)  # was a ZeroDivisionError
    with pytest.raises(RuntimeError, match=r"smooth_step: x contains NaN or inf"):
        smooth_step(jnp.nan, 0.0, 1.0, 0.0, 1.0)
    with pytest.raises(RuntimeError, match=r"smooth_step: need x1 > x0"):
        jax.jit(smooth_step)(0.5, 1.0, 0.0, 0.0, 1.0)  # traced ends: refused at run time
    with pytest.raises(ValueError, match=r"smooth_step: x, x0, x1, y0, y1 must broadcast together"):
        smooth_step(jnp.ones(3), 0.0, jnp.ones(2), 0.0, 1.0)
    with pytest.raises(TypeError, match=r"smooth_step: y1 must be a real number"):
        smooth_step(0.5, 0.0, 1.0, 0.0, "one")
    # valid: the quintic s³(10 - 15s + 6s²) by hand at s = 0.3, and the ends
    s = 0.3
    np.testing.assert_allclose(smooth_step(2.0 + 4.0 * s, 2.0, 6.0, 1.0, 3.0), 1.0 + 2.0 * s**3 * (10 - 15 * s + 6 * s**2),
                               rtol=1e-14)
    assert float(smooth_step(1.0, 2.0, 6.0, 1.0, 3.0)) == 1.0 and float(smooth_step(7.0, 2.0, 6.0, 1.0, 3.0)) == 3.0


def test_coordinate_values_refuses_non_coordinates_and_short_q():
    with pytest.raises(TypeError, match=r"CoordinateValues.of: coordinates\[0\] must be a coordinate name"):
        CoordinateValues.of(M, [3])
    with pytest.raises(TypeError, match=r"CoordinateValues.of: coordinates must be a list of names"):
        CoordinateValues.of(M, "x")
    with pytest.raises(ValueError, match=r"unknown coordinate 'z'"):
        CoordinateValues.of(M, ["z"])
    cv = CoordinateValues.of(M, ["y", "x", Affine(["x", "y"], [2.0, -1.0], 0.5)])
    with pytest.raises(ValueError, match=r"CoordinateValues: q must be the model's coordinate vector \(nq,\) with nq >= 2"):
        cv(jnp.ones(1))  # was a silent clamped gather
    # valid: the names pick q's entries, the map is evaluated on q
    np.testing.assert_allclose(cv(Q), [-0.3, 0.4, 0.5 + 2 * 0.4 + 0.3], rtol=1e-15)


def _sgf(**kw):
    args = dict(names=["s"], coordinates=["y"], stiffness=[3.0], rest_length=[0.1], viscosity=[0.2])
    args.update(kw)
    return SpringGeneralizedForce.create(M, **args)


def test_spring_generalized_force_refuses_negative_nan_and_other_lengths():
    with pytest.warns(UserWarning, match=r"SpringGeneralizedForce 's': stiffness is negative \(-3.0\)"):
        _sgf(stiffness=[-3.0])
    with pytest.warns(UserWarning, match=r"SpringGeneralizedForce 's': viscosity is negative"):
        _sgf(viscosity=[-0.1])
    with pytest.raises(ValueError, match=r"SpringGeneralizedForce 's': rest_length must be finite"):
        _sgf(rest_length=[np.inf])
    with pytest.raises(ValueError, match=r"SpringGeneralizedForce: stiffness must have shape \(1,\) .*got \(2,\)"):
        _sgf(stiffness=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"1 element names \('s',\) but 2 coordinates"):
        _sgf(coordinates=["x", "y"])
    with pytest.raises(TypeError, match=r"SpringGeneralizedForce: stiffness must be real numbers"):
        _sgf(stiffness=["a"])
    got = _sgf().generalized_force(M, Q, QD)
    np.testing.assert_allclose(got, [0.0, -3.0 * (-0.3 - 0.1) - 0.2 * 0.2], rtol=1e-14)


def test_expression_based_coordinate_force_refuses_bad_expressions():
    with pytest.raises(ValueError, match=r"ExpressionBasedCoordinateForce 'e': compile_expression: expression 'q\+'"):
        ExpressionBasedCoordinateForce.create(M, ["e"], ["x"], ["q +"])
    with pytest.raises(ValueError, match=r"'e': compile_expression: .*unknown variable 'theta'"):
        ExpressionBasedCoordinateForce.create(M, ["e"], ["x"], ["-10*theta"])
    with pytest.raises(TypeError, match=r"ExpressionBasedCoordinateForce 'e': the expression must be a string"):
        ExpressionBasedCoordinateForce.create(M, ["e"], ["x"], [2.0])
    with pytest.raises(TypeError, match=r"expressions must be a list of strings"):
        ExpressionBasedCoordinateForce.create(M, ["e"], ["x"], "q")
    with pytest.raises(ValueError, match=r"1 element names \('e',\) but 2 coordinates"):
        ExpressionBasedCoordinateForce.create(M, ["e"], ["x", "y"], ["q"])
    f = ExpressionBasedCoordinateForce.create(M, ["e"], ["x"], ["-2*q^3 - 0.5*qdot"])
    np.testing.assert_allclose(f.generalized_force(M, Q, QD), [-2 * 0.4**3 - 0.5 * 0.7, 0.0], rtol=1e-14)


def test_compile_expression_refuses_parse_errors_and_missing_variables():
    for text, msg in (("", "empty expression"), ("(q", r"expected '\)'"), ("q)", r"unexpected '\)'"),
                      ("1..2", r"unexpected '.2'"), ("sin(q, q)", "sin takes 1 argument"), ("q $ 2", "unexpected character"),
                      ("foo(q)", "unknown function 'foo'"), ("q*x", "unknown variable 'x'")):
        with pytest.raises(ValueError, match=rf"compile_expression: .*{msg}"):
            compile_expression(text)
    with pytest.raises(TypeError, match=r"compile_expression: text must be a string"):
        compile_expression(["q"])
    with pytest.raises(TypeError, match=r"compile_expression: variables must be a sequence of names"):
        compile_expression("q", variables="q")
    fn = compile_expression("q*qdot + 1")
    with pytest.raises(TypeError, match=r"compile_expression: expression 'q\*qdot\+1': missing value\(s\) for \['qdot'\]"):
        fn(q=1.0)  # was a bare KeyError
    with pytest.raises(TypeError, match=r"unknown variable\(s\) \['z'\]"):
        fn(q=1.0, qdot=2.0, z=3.0)
    np.testing.assert_allclose(fn(q=jnp.asarray(1.5), qdot=jnp.asarray(-2.0)), 1.5 * -2.0 + 1, rtol=1e-15)


def _p2p(**kw):
    args = dict(point1=jnp.array([[1.0, 0.0, 0.0]]), point2=jnp.array([[1.0, 0.0, 0.0]]), stiffness=jnp.array([4.0]),
                rest_length=jnp.array([0.1]), body1=(-1,), body2=(0,), element_names=("p2p",))
    args.update(kw)
    return PointToPointSpring(**args)


def test_point_to_point_spring_refuses_bad_parameters_and_bodies():
    with pytest.warns(UserWarning, match=r"PointToPointSpring 'p2p': stiffness is negative \(-4.0\)"):
        _p2p(stiffness=jnp.array([-4.0]))
    with pytest.warns(UserWarning, match=r"PointToPointSpring 'p2p': rest_length is negative"):
        _p2p(rest_length=jnp.array([-0.1]))
    with pytest.raises(ValueError, match=r"PointToPointSpring 'p2p': point2 must be finite"):
        _p2p(point2=jnp.array([[1.0, jnp.nan, 0.0]]))
    with pytest.raises(ValueError, match=r"PointToPointSpring: point1 must have shape \(1, 3\) .*got \(1, 2\)"):
        _p2p(point1=jnp.ones((1, 2)))
    with pytest.raises(ValueError, match=r"PointToPointSpring: point2 must have shape \(1, 3\) .*got \(2, 3\)"):
        _p2p(point2=jnp.ones((2, 3)))
    with pytest.raises(ValueError, match=r"PointToPointSpring 'p2p': body2 index 7 is out of range: use -1 \(ground\) to 1"):
        _p2p(body2=(7,)).generalized_force(M, Q, QD)
    # valid: ground (1,0,0) to body a's (1,0,0) turned by x: ℓ = 2 sin(x/2), Q_x = -k (ℓ - ℓ0) cos(x/2)
    x = 0.4
    ell = 2 * np.sin(x / 2)
    np.testing.assert_allclose(_p2p().generalized_force(M, Q, QD), [-4.0 * (ell - 0.1) * np.cos(x / 2), 0.0],
                               rtol=1e-13, atol=1e-15)


class _Twice(CoordinateSpring):
    """A user's element whose law returns the wrong number of forces."""

    def element_coordinates(self, model, q):
        return q[:1]

    def law(self, b, bdot):
        return jnp.concatenate([-b, -b])


class _Linear(CoordinateSpring):
    def element_coordinates(self, model, q):
        return q[:1] + 2.0 * q[1:]

    def law(self, b, bdot):
        return -5.0 * b


def test_coordinate_spring_refuses_a_law_of_another_shape():
    with pytest.raises(ValueError, match=r"_Twice.law must return one force per element coordinate, shape \(1,\) .*got \(2,\)"):
        _Twice().generalized_force(M, Q, QD)
    # valid: Q = (∂b/∂q)ᵀ f = -5 b (1, 2)
    b = 0.4 + 2 * -0.3
    np.testing.assert_allclose(_Linear().generalized_force(M, Q, QD), [-5 * b, -10 * b], rtol=1e-14)


def test_body_actuators_refuse_bad_points_forces_controls_and_poses():
    with pytest.raises(ValueError, match=r"PointActuator 'p' point: needs a finite 3-vector, got \[0.0, 1.0\]"):
        actuator_matrix(M, [PointActuator("p", "a", point=(0, 1))], Q)
    with pytest.raises(ValueError, match=r"PointActuator 'p' point: needs a finite 3-vector, got \[0.0, nan, 0.0\]"):
        actuator_matrix(M, [PointActuator("p", "a", point=(0, np.nan, 0))], Q)
    with pytest.raises(ValueError, match=r"PointActuator 'p': optimal_force must be finite and > 0, got nan"):
        actuator_matrix(M, [PointActuator("p", "a", optimal_force=np.nan)], Q)
    with pytest.raises(ValueError, match=r"PointActuator 'p': need min_control <= max_control, got \[1.0, -1.0\]"):
        actuator_matrix(M, [PointActuator("p", "a", min_control=1.0, max_control=-1.0)], Q)
    with pytest.raises(ValueError, match=r"PointActuator 'p': body 'hand' is not a body of the model \('a', 'c'\)"):
        actuator_matrix(M, [PointActuator("p", "hand")], Q)
    with pytest.raises(ValueError, match=r"TorqueActuator 't': body_a and body_b are both 'a'"):
        actuator_matrix(M, [TorqueActuator("t", "a", "a")], Q)
    with pytest.raises(ValueError, match=r"TorqueActuator 't': body_a None and body_b 'ground' name no body"):
        actuator_matrix(M, [TorqueActuator("t", None, "ground")], Q)  # was a silent column of zeros
    with pytest.raises(ValueError, match=r"TorqueActuator 't' axis: needs a finite non-zero 3-vector"):
        actuator_matrix(M, [TorqueActuator("t", "a", axis=(0, 0, 0))], Q)
    with pytest.raises(TypeError, match=r"actuator_matrix: actuators must be a list .* got a single PointActuator"):
        actuator_matrix(M, PointActuator("p", "a"), Q)
    with pytest.raises(TypeError, match=r"actuator_matrix: actuators\[1\] is not a PointActuator or TorqueActuator"):
        actuator_matrix(M, [PointActuator("p", "a"), "t"], Q)
    with pytest.raises(ValueError, match=r"actuator_matrix: q must have shape \(nq,\) = \(2,\) for coordinates \('x', 'y'\)"):
        actuator_matrix(M, [PointActuator("p", "a")], jnp.zeros(1))  # was a silent column of zeros
    with pytest.raises(RuntimeError, match=r"actuator_matrix: q contains NaN or inf"):
        actuator_matrix(M, [PointActuator("p", "a")], Q.at[1].set(jnp.nan))
    # valid at q = 0: a global x force F at a's point (0, -1, 0) has moment r × F = (0, 0, F) about the
    # joints' z axes: it loads x (a's joint) only; a global z torque T on c loads y, and x through c's chain
    acts = [PointActuator("p", "a", point=(0.0, -1.0, 0.0), direction=(2.0, 0.0, 0.0), force_is_global=True,
                          optimal_force=3.0), TorqueActuator("t", "c", axis=(0, 0, 1), optimal_force=2.0)]
    np.testing.assert_allclose(actuator_matrix(M, acts, jnp.zeros(2)), [[3.0, 2.0], [0.0, 2.0]], atol=1e-15)


# ------------------------------------------------------------------------------------------------
# joint maps
# ------------------------------------------------------------------------------------------------


def test_abstract_joint_map_call_refuses_wrong_shaped_and_nan_inputs():
    m = Affine(["x", "y"], [1.0, 2.0], 0.5)
    assert isinstance(m, AbstractJointMap)
    for bad in (jnp.ones(3), jnp.ones(1), jnp.ones((2, 2)), jnp.asarray(1.0)):
        with pytest.raises(ValueError, match=r"Affine: x must have shape \(2,\) or \(n_maps, k\) = \(1, 2\) "
                                             r"\(the local inputs \('x', 'y'\)\)"):
            m(bad)
    with pytest.raises(RuntimeError, match=r"Affine: x contains NaN or inf \(coordinates \('x', 'y'\)\)"):
        m(jnp.array([1.0, jnp.nan]))
    with pytest.raises(TypeError, match=r"Affine: x must be real"):
        m(jnp.array([1.0 + 1j, 2.0]))
    stack = Affine.stack([m, Affine("y", [3.0])])
    with pytest.raises(ValueError, match=r"x must have shape \(n_maps, k\) = \(2, 2\)"):
        stack(jnp.ones(2))  # a stack of two needs one row per map
    f, g, h = m(jnp.array([0.3, -0.2]))
    np.testing.assert_allclose([f, *g], [0.5 + 0.3 - 0.4, 1.0, 2.0], rtol=1e-15)
    assert np.all(np.asarray(h) == 0.0)


def test_affine_refuses_nan_and_wrong_shapes():
    with pytest.raises(ValueError, match=r"Affine: slope must be finite \(no NaN or inf\), got nan"):
        Affine("x", np.nan)
    with pytest.raises(ValueError, match=r"Affine: offset must be finite"):
        Affine("x", 1.0, np.inf)
    with pytest.raises(ValueError, match=r"Affine: offset must be one number .*got shape \(2,\)"):
        Affine("x", 1.0, [1.0, 2.0])  # was a silent stack-of-two offset
    with pytest.raises(ValueError, match=r"Affine: 2 coordinate\(s\) \('x', 'y'\) need 2 slope\(s\)"):
        Affine(["x", "y"], [1.0])
    with pytest.raises(ValueError, match=r"Affine: no coordinates given \(a map reading none is a Constant\)"):
        Affine([], [])
    with pytest.raises(ValueError, match=r"Affine: offset must have shape \(2,\) \(one per map"):
        Affine((("x",), ("y",)), [[1.0], [2.0]], [0.0])
    f, g, _ = Affine("x", 2.0, 1.0)(jnp.array([0.25]))
    np.testing.assert_allclose([f, g[0]], [1.5, 2.0], rtol=1e-15)


def test_constant_refuses_nan_and_non_numbers():
    with pytest.raises(ValueError, match=r"Constant: value must be finite"):
        Constant(np.nan)
    with pytest.raises(TypeError, match=r"Constant: value must be a real number or array, got str"):
        Constant("0.5")
    with pytest.raises(ValueError, match=r"Constant: value must be a number .*got shape \(2, 2\)"):
        Constant(np.ones((2, 2)))
    f, g, h = Constant(0.7)(jnp.zeros(0))
    assert float(f) == 0.7 and g.shape == (0,) and h.shape == (0, 0)


def test_function_map_refuses_non_functions_vector_outputs_and_nan_params():
    with pytest.raises(TypeError, match=r"FunctionMap: fn must be a function fn\(params, x\)"):
        FunctionMap(3.0, "x")
    with pytest.raises(ValueError, match=r"FunctionMap: fn\(params, x\) must return a scalar for x of shape \(1,\)"):
        FunctionMap(lambda p, x: p * x, "x", 2.0)  # was jax.grad's "Gradient only defined for scalar-output"
    with pytest.raises(ValueError, match=r"FunctionMap: params must be finite"):
        FunctionMap(lambda p, x: p * x[0], "x", np.nan)
    m = FunctionMap(lambda p, x: p * jnp.sin(x[0]), "x", 2.0)
    f, g, h = m(jnp.array([0.3]))
    np.testing.assert_allclose([f, g[0], h[0, 0]], [2 * np.sin(0.3), 2 * np.cos(0.3), -2 * np.sin(0.3)], rtol=1e-14)


def test_fourier_refuses_nan_wrong_shapes_and_bad_ranges():
    with pytest.raises(ValueError, match=r"Fourier: a \(cosine coefficients\) must be finite"):
        Fourier("x", 0.0, [np.nan], [1.0], 1.0)
    with pytest.raises(ValueError, match=r"Fourier: a0 must be one number, got shape \(2,\)"):
        Fourier("x", [0.0, 1.0], [1.0], [1.0], 1.0)
    with pytest.raises(ValueError, match=r"Fourier: omega \(the base frequency\) must be > 0, got 0.0"):
        Fourier("x", 0.0, [1.0], [1.0], 0.0)
    with pytest.raises(ValueError, match=r"Fourier: cosine and sine coefficients must be 1-D of equal length"):
        Fourier("x", 0.0, [1.0, 2.0], [1.0], 1.0)
    with pytest.raises(ValueError, match=r"Fourier: need lower < upper, got lower \[2.0\], upper \[1.0\]"):
        Fourier("x", 0.0, [1.0], [1.0], 1.0, lower=2.0, upper=1.0)
    with pytest.raises(ValueError, match=r"Fourier: the range \[lower, upper\] holds NaN"):
        Fourier("x", 0.0, [1.0], [1.0], 1.0, lower=np.nan, upper=1.0)
    m = Fourier("x", 0.1, [0.5], [0.3], 1.3, "error", -2.0, 2.0)
    with pytest.raises(ValueError, match=r"Fourier: x must have shape \(1,\) or \(n_maps, k\) = \(1, 1\)"):
        m(jnp.array([0.5, 1.0]))
    f, g, h = m(jnp.array([0.5]))
    w, x = 1.3, 0.5
    np.testing.assert_allclose([f, g[0], h[0, 0]], [0.1 + 0.5 * np.cos(w * x) + 0.3 * np.sin(w * x),
                                                    w * (0.3 * np.cos(w * x) - 0.5 * np.sin(w * x)),
                                                    -w**2 * (0.5 * np.cos(w * x) + 0.3 * np.sin(w * x))], rtol=1e-14)


def test_bicubic_spline_refuses_nan_values_bad_knots_and_shapes():
    x1, x2 = [0.0, 1.0, 2.0], [0.0, 1.0]
    with pytest.raises(ValueError, match=r"BicubicSpline: grid values must be finite"):
        BicubicSpline(["x", "y"], x1, x2, np.full((3, 2), np.nan))
    with pytest.raises(ValueError, match=r"BicubicSpline: knots x1 must be strictly increasing"):
        BicubicSpline(["x", "y"], [0.0, 2.0, 1.0], x2, np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"BicubicSpline: values must have shape \(len\(x1\), len\(x2\)\) = \(3, 2\)"):
        BicubicSpline(["x", "y"], x1, x2, np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"BicubicSpline reads exactly 2 coordinate"):
        BicubicSpline(["x"], x1, x2, np.ones((3, 2)))
    vals = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.3]])
    m = BicubicSpline(["x", "y"], x1, x2, vals)
    with pytest.raises(ValueError, match=r"BicubicSpline: x must have shape \(2,\)"):
        m(jnp.array([0.5]))
    # valid: an interpolant, exact at every node
    got = [float(m(jnp.array([a, b]))[0]) for a in x1 for b in x2]
    np.testing.assert_allclose(got, vals.ravel(), rtol=1e-13, atol=1e-14)


def test_composed_refuses_non_maps_nan_and_wrong_offsets():
    outer = Polynomial("u", [2], [1.0])  # u²
    with pytest.raises(TypeError, match=r"Composed: outer must be a joint map \(mbjax.maps\), got int"):
        Composed(3, [[1.0]], coordinates=("x",))
    with pytest.raises(ValueError, match=r"Composed: matrix must be finite"):
        Composed(outer, [[np.nan, 1.0]], coordinates=("x", "y"))
    with pytest.raises(ValueError, match=r"Composed: offset must have shape \(outer variables 1,\), got \(2,\)"):
        Composed(outer, [[1.0, 1.0]], [1.0, 2.0], coordinates=("x", "y"))
    with pytest.raises(ValueError, match=r"Composed: matrix must have shape \(outer variables 1, coordinates 2\)"):
        Composed(outer, [[1.0, 1.0, 1.0]], coordinates=("x", "y"))
    m = Composed(outer, [[2.0]], [1.0], coordinates=("x",))  # (2x + 1)²
    f, g, h = m(jnp.array([0.3]))
    np.testing.assert_allclose([f, g[0], h[0, 0]], [1.6**2, 4 * 1.6, 8.0], rtol=1e-14)


def test_composed_polynomial_refuses_other_families():
    pp = PiecewisePolynomial("u", pp_polynomial([1.0, 0.0, 0.0]))  # u²
    with pytest.raises(TypeError, match=r"ComposedPolynomial: outer must be a PiecewisePolynomial, got int"):
        ComposedPolynomial(3, Affine("x", 2.0))
    with pytest.raises(TypeError, match=r"ComposedPolynomial: outer must be a PiecewisePolynomial, got Polynomial"):
        ComposedPolynomial(Polynomial("u", [2], [1.0]), Affine("x", 2.0))  # was an AttributeError on evaluation
    with pytest.raises(TypeError, match=r"ComposedPolynomial: inner must be a joint map \(mbjax.maps\), got str"):
        ComposedPolynomial(pp, "x")
    with pytest.raises(ValueError, match=r"ComposedPolynomial: 1 outer maps but 2 inner maps"):
        ComposedPolynomial(pp, Affine.stack([Affine("x", 1.0), Affine("y", 1.0)]))
    f, g, _ = ComposedPolynomial(pp, Affine("x", 2.0, 1.0))(jnp.array([0.3]))
    np.testing.assert_allclose([f, g[0]], [1.6**2, 4 * 1.6], rtol=1e-14)


def test_linear_combination_refuses_non_maps_and_weight_counts():
    t1, t2 = PiecewisePolynomial("x", pp_linear(2.0, 1.0)), PiecewisePolynomial("y", pp_linear(-1.0, 0.0))
    with pytest.raises(TypeError, match=r"LinearCombination: terms\[1\] must be a joint map \(mbjax.maps\), got int"):
        LinearCombination([t1, 3], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"LinearCombination: weights must have shape \(2,\) \(one per term\), got \(3,\)"):
        LinearCombination([t1, t2], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"LinearCombination: weights must be finite"):
        LinearCombination([t1, t2], [np.nan, 1.0])
    with pytest.raises(ValueError, match=r"LinearCombination: offset must be finite"):
        LinearCombination([t1, t2], [1.0, 1.0], np.inf)
    with pytest.raises(ValueError, match=r"LinearCombination: give one or more single"):
        LinearCombination([], [])
    f, g, _ = LinearCombination([t1, t2], [0.5, 3.0], 0.25)(jnp.array([0.4, -0.2]))
    np.testing.assert_allclose([f, *g], [0.25 + 0.5 * (2 * 0.4 + 1) + 3.0 * 0.2, 1.0, -3.0], rtol=1e-14)


def test_multivariate_polynomial_refuses_bad_order_counts_and_nan():
    with pytest.raises(ValueError, match=r"MultivariatePolynomial: coefficients must be finite"):
        MultivariatePolynomial(["x", "y"], [1.0, np.nan, 1.0], 1)
    for order in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match=r"MultivariatePolynomial: order must be a non-negative integer"):
            MultivariatePolynomial(["x", "y"], [1.0, 1.0, 1.0], order)
    with pytest.raises(ValueError, match=r"MultivariatePolynomial: .*dimension 2 and order 1 needs 3 coefficients, got 2"):
        MultivariatePolynomial(["x", "y"], [1.0, 1.0], 1)
    with pytest.raises(ValueError, match=r"MultivariatePolynomial: needs at least one coordinate"):
        MultivariatePolynomial([], [1.0], 1)
    m = MultivariatePolynomial(["x", "y"], [0.5, 2.0, -1.0], 1)  # OpenSim's order: 1, y, x
    with pytest.raises(ValueError, match=r"MultivariatePolynomial: x must have shape \(2,\)"):
        m(jnp.array([0.3]))
    f, g, _ = m(jnp.array([0.3, 0.7]))
    np.testing.assert_allclose([f, *g], [0.5 + 2.0 * 0.7 - 0.3, -1.0, 2.0], rtol=1e-15)


def test_piecewise_polynomial_refuses_missing_data_decreasing_breaks_and_nan():
    with pytest.raises(TypeError, match=r"PiecewisePolynomial: data must be a PPData .*got NoneType"):
        PiecewisePolynomial("u")
    with pytest.raises(ValueError, match=r"PiecewisePolynomial: coefficients must be finite"):
        PiecewisePolynomial("u", PPData([], [0.0], [[np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"PiecewisePolynomial: breaks must be increasing, got breaks\[0\]=1.0 > breaks\[1\]=0.0"):
        PiecewisePolynomial("u", PPData([1.0, 0.0], [0.0, 1.0, 2.0], np.ones((3, 2))))
    with pytest.raises(ValueError, match=r"PiecewisePolynomial: P pieces need breaks \(P-1,\), anchors \(P,\) and coefficients"):
        PiecewisePolynomial("u", PPData([0.0], [0.0], np.ones((3, 2))))  # was a silent wrong value
    with pytest.raises(ValueError, match=r"PiecewisePolynomial reads exactly 1 coordinate"):
        PiecewisePolynomial(["u", "v"], pp_linear(1.0, 0.0))
    m = PiecewisePolynomial("u", pp_linear(2.0, 1.0))
    with pytest.raises(ValueError, match=r"PiecewisePolynomial: x must have shape \(1,\)"):
        m(jnp.array([0.5, 1.0]))
    f, g, h = m(jnp.array([0.5]))
    np.testing.assert_allclose([f, g[0], h[0, 0]], [2.0, 2.0, 0.0], rtol=1e-15)


def test_polynomial_refuses_nan_fractional_exponents_and_crossed_bounds():
    with pytest.raises(ValueError, match=r"Polynomial: coefficients must be finite"):
        Polynomial("x", [0, 1], [1.0, np.nan])
    with pytest.raises(ValueError, match=r"Polynomial: exponents must be non-negative integers, got \[0.0, 1.5\]"):
        Polynomial("x", [0, 1.5], [1.0, 1.0])  # was silently x^1
    with pytest.raises(ValueError, match=r"Polynomial: exponents must be non-negative integers"):
        Polynomial("x", [0, -1], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"Polynomial: 2 terms need 2 coefficients, got shape \(3,\)"):
        Polynomial("x", [0, 1], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"Polynomial: need lower <= upper, got lower \[1.0\], upper \[0.0\]"):
        Polynomial("x", [0, 1], [1.0, 1.0], lower=1.0, upper=0.0)
    with pytest.raises(ValueError, match=r"Polynomial: lower must have shape \(2,\) \(one per coordinate"):
        Polynomial(["x", "y"], [[0, 1]], [1.0], lower=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Polynomial: the range \[lower, upper\] holds NaN"):
        Polynomial("x", [0, 1], [1.0, 1.0], lower=np.nan)
    m = Polynomial(["x", "y"], [[0, 0], [2, 1]], [1.0, 2.0])  # 1 + 2 x² y
    with pytest.raises(ValueError, match=r"Polynomial: x must have shape \(2,\)"):
        m(jnp.array([0.5]))
    f, g, h = m(jnp.array([0.5, -1.5]))
    x, y = 0.5, -1.5
    np.testing.assert_allclose([f, *g], [1 + 2 * x * x * y, 4 * x * y, 2 * x * x], rtol=1e-15)
    np.testing.assert_allclose(h, jax.hessian(lambda z: 1 + 2 * z[0] ** 2 * z[1])(jnp.array([x, y])), rtol=1e-15)
