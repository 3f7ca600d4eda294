"""A map that leaves its fitted range is named: joint, coordinate, value and range.

Independent check: the host-side diagnostic (``mbjax.range_violations``) lists a map exactly when
the compiled map with policy ``"nan"`` returns NaN for it (the compiled ``range_guard`` decides).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.maps import Affine, BicubicSpline, Composed, Fourier, NaturalCubicSpline, Polynomial


def _model(policy="error"):
    """Four bodies on three coordinates: a spline, a Fourier map, a bicubic map and a composed spline."""
    x = np.linspace(-1.0, 1.0, 9)
    b = mbjax.ModelBuilder(["a", "b", "c"], gravity=[0, -9.81, 0])
    b.add_body("upper", axis=[0, 0, 1], map=NaturalCubicSpline("a", x, np.sin(x), policy), mass=1.0,
               com=[0, -0.1, 0], inertia=np.eye(3) * 0.01)
    b.add_body("lower", parent="upper", axis=[0, 0, 1], translation=[0, -0.3, 0],
               map=Fourier("b", 0.1, [0.5], [0.2], 1.1, policy, -0.5, 2.0), mass=1.0, com=[0, -0.1, 0],
               inertia=np.eye(3) * 0.01)
    b.add_body("hand", parent="lower", axis=[1, 0, 0], translation=[0, -0.3, 0],
               map=BicubicSpline(("b", "c"), x, x * 2 + 1, np.outer(np.sin(x), np.cos(x)), policy), mass=0.5,
               com=[0, -0.05, 0], inertia=np.eye(3) * 0.001)
    inner = Affine(("a", "c"), [0.5, 0.5], 0.0)
    b.add_body("finger", parent="hand", axis=[0, 1, 0], translation=[0, -0.1, 0],
               map=Composed(NaturalCubicSpline("u", x, x**2, policy), inner), mass=0.1, com=[0, -0.02, 0],
               inertia=np.eye(3) * 1e-4)
    return b.build()


def test_eager_call_names_joint_coordinate_value_and_range():
    model = _model()
    q = jnp.asarray([1.25, 0.3, 2.0])  # a outside [-1, 1] (upper); u = (a + c)/2 = 1.625 outside (finger)
    with pytest.raises(mbjax.MapRangeError) as info:
        mbjax.body_poses(model, q)
    text = str(info.value)
    assert "joint 'upper' (NaturalCubicSpline map of a): a = 1.25 outside the fitted range [-1, 1]" in text
    assert "joint 'finger' (Composed map of a, c): u[0] (affine in a, c) = 1.625 outside the fitted range [-1, 1]" in text
    with pytest.raises(mbjax.MapRangeError, match=r"joint 'lower' \(Fourier map of b\): b = 2.5 .*\[-0.5, 2\]"):
        mbjax.mass_matrix(model, jnp.asarray([0.0, 2.5, 2.0]))  # the eager-compiled dynamics path
    with pytest.raises(mbjax.MapRangeError, match=r"joint 'hand' \(BicubicSpline map of b, c\): c = 3.5 .*\[-1, 3\]"):
        mbjax.pose_derivatives(model, jnp.asarray([0.0, 0.5, 3.5]))


def test_under_jit_the_message_points_to_the_diagnostic():
    model = _model()
    with pytest.raises(Exception, match="range_violations"):
        jax.block_until_ready(jax.jit(mbjax.body_poses)(model, jnp.asarray([1.25, 0.3, 0.0])))


def test_diagnostic_agrees_with_the_compiled_guard():
    model, model_nan = _model("error"), _model("nan")
    rng = np.random.default_rng(3)
    qs = rng.uniform([-1.3, -0.8, -1.3], [1.3, 2.3, 3.3], size=(300, 3))
    qs[:5] = [[-1, -0.5, -1], [1, 2, 3], [1 + 1e-13, 2, 3], [0, 0, 1], [-1 - 1e-9, 0, 1]]  # ends and slack
    f = np.asarray(jax.jit(jax.vmap(mbjax.joint_variables, in_axes=(None, 0)))(model_nan, jnp.asarray(qs)))
    bodies = model.body_names
    listed = {(v.pose, v.joint) for v in mbjax.range_violations(model, qs)}
    nan = {(p, bodies[i]) for p, i in zip(*np.nonzero(np.isnan(f)))}
    assert listed == nan and len(nan) > 100
    assert mbjax.range_violations(model, qs[3]) == []


def test_policies_other_than_error_are_not_listed():
    model = _model("clamp")
    assert mbjax.range_violations(model, jnp.asarray([5.0, 5.0, 5.0])) == []
    np.testing.assert_array_equal(np.isfinite(mbjax.body_poses(model, jnp.asarray([5.0, 5.0, 5.0]))), True)


def test_polynomial_box_is_named():
    x = np.linspace(-1, 1, 5)
    poly = Polynomial(("a", "b"), [[1, 0], [0, 1]], [0.5, -0.2], "error", [-1, 0], [1, 2])
    b = mbjax.ModelBuilder(["a", "b"])
    b.add_body("one", axis=[0, 0, 1], map=poly, mass=1.0, com=[0, 0, 0], inertia=np.eye(3))
    b.add_body("two", parent="one", axis=[0, 0, 1], map=NaturalCubicSpline("b", x, x), mass=1.0,
               com=[0, 0, 0], inertia=np.eye(3))
    v = mbjax.range_violations(b.build(), jnp.asarray([0.0, -1.25]))
    assert [(e.joint, e.quantity, e.value, e.lower, e.upper) for e in v] == [
        ("one", "b", -1.25, 0.0, 2.0), ("two", "b", -1.25, -1.0, 1.0)]
