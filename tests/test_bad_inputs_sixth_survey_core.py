"""A sixth outside survey's findings in the core: pose dtypes (energies, object arrays, range_violations),
pose_derivatives' order, models without coordinates, body parameters and joint frames edited into a
model, ModelBuilder arguments, a spline's coordinate, quintic knots, IK data and static optimization
on a model without muscles."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax._ranges import RUNTIME_ERRORS
from mbjax.maps import NaturalCubicSpline

jax.config.update("jax_enable_x64", True)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ARM = mbjax.models.load("arm26", ignore_wrapping=True)
Q = np.array([0.3, 1.2])
Z = np.zeros(2)
BAD_Q = np.array([0.3, None], dtype=object)  # a table column with a gap


def _two_links():
    b = mbjax.ModelBuilder(["hip", "knee"])
    b.add_body("thigh", axis=[0, 0, 1], map="hip", mass=1.3, com=[0, -0.35, 0], inertia=np.diag([.05, .01, .05]))
    b.add_body("shank", parent="thigh", axis=[0, 0, 1], map="knee", translation=[0, -0.7, 0], mass=0.9,
               com=[0, -0.25, 0], inertia=np.diag([.03, .01, .03]))
    return b.build()


TWO = _two_links()
Q2 = jnp.array([0.1, 0.4])


# -- pose dtypes -------------------------------------------------------------------------------------

def test_energies_promote_integer_and_mixed_dtype_poses():
    ke = float(mbjax.kinetic_energy(TWO, np.array([0.0, 1.0]), np.array([1.0, 0.0])))
    assert float(mbjax.kinetic_energy(TWO, np.array([0, 1]), np.array([1.0, 0.0]))) == pytest.approx(ke)  # was a jvp error
    assert float(mbjax.kinetic_energy(TWO, np.array([0.0, 1.0]), np.array([1, 0]))) == pytest.approx(ke)
    q32 = np.array([0.0, 1.0], np.float32)
    assert float(mbjax.kinetic_energy(TWO, q32, np.array([1.0, 0.0]))) == pytest.approx(ke, rel=1e-6)
    total = mbjax.total_energy(TWO, np.array([0, 1]), np.array([1, 0]))
    assert total.dtype == jnp.float64 and np.isfinite(total)


def test_energies_promote_in_float32():
    jax.config.update("jax_enable_x64", False)
    try:
        model = _two_links()
        ke = mbjax.kinetic_energy(model, np.array([0, 1]), np.ones(2, np.float32))
        assert ke.dtype == jnp.float32 and np.isfinite(ke)
        half = mbjax.total_energy(model, np.array([0.0, 1.0], np.float16), np.ones(2))
        assert half.dtype == jnp.float32 and np.isfinite(half)
    finally:
        jax.config.update("jax_enable_x64", True)


@pytest.mark.parametrize("call", [
    lambda q: mbjax.mass_matrix(ARM, q),
    lambda q: mbjax.body_poses(ARM, q),
    lambda q: mbjax.pose_derivatives(ARM, q),
    lambda q: mbjax.muscle_lengths(ARM, q),
    lambda q: mbjax.potential_energy(ARM, q),
    lambda q: mbjax.kinetic_energy(TWO, q, Z),
])
def test_an_object_pose_is_refused_naming_q_and_its_dtype(call):
    with pytest.raises(ValueError, match=r"q must be a real \(integer or floating\) array, got dtype object"):
        call(BAD_Q)  # was JAX's "Error interpreting argument to stage"


def test_an_object_velocity_is_refused_naming_qd():
    with pytest.raises(ValueError, match=r"inverse_dynamics: qd must be a real .* got dtype object"):
        mbjax.inverse_dynamics(TWO, Q2, BAD_Q, Z)


@pytest.mark.parametrize("q, got", [({"r_elbow_flex": 1.0}, "got dict"), (np.array([True, False]), "got dtype bool"),
                                    (np.array([1j, 0]), "got dtype complex128"), (BAD_Q, "got dtype object")])
def test_range_violations_refuses_what_the_core_functions_refuse(q, got):
    with pytest.raises(ValueError, match=r"range_violations: q must be a real \(integer or floating\) array .*"
                                         r"r_elbow_flex.*" + got):
        mbjax.range_violations(ARM, q)
    assert mbjax.range_violations(ARM, np.array([0, 1])) == []


# -- pose_derivatives' order -----------------------------------------------------------------------

@pytest.mark.parametrize("order", [1.5, 0, 3, True])
def test_pose_derivatives_order_must_be_1_or_2(order):
    with pytest.raises(ValueError, match=r"pose_derivatives: order must be 1 or 2"):
        mbjax.pose_derivatives(TWO, Q2, order=order)


def test_pose_derivatives_orders_1_and_2():
    assert mbjax.pose_derivatives(TWO, Q2, order=1).dd_pose is None
    assert mbjax.pose_derivatives(TWO, Q2, order=2).dd_pose.shape == (2, 4, 4, 2, 2)


# -- a model without coordinates -------------------------------------------------------------------

def test_a_model_without_coordinates_is_refused_at_build():
    b = mbjax.ModelBuilder([])
    b.add_body("x", axis=[0, 0, 1], map=None, mass=1, com=[0, 0, 0], inertia=np.eye(3) * .01)
    with pytest.raises(ValueError, match=r"a model needs at least one coordinate: bodies \('x',\) have none"):
        b.build()  # was accepted, then mass_matrix crashed in a gather


# -- body parameters and joint frames edited into a model ------------------------------------------

@pytest.mark.parametrize("field, value, expect", [
    ("mass", jnp.ones(3), r"model.mass must have shape \(nb,\) = \(2,\) for bodies \('thigh', 'shank'\)"),
    ("mass", jnp.float64(1.0), r"model.mass must have shape \(nb,\) = \(2,\)"),
    ("com", jnp.zeros((2, 2)), r"model.com must have shape \(nb, 3\) = \(2, 3\)"),
    ("inertia", jnp.zeros((2, 3)), r"model.inertia must have shape \(nb, 3, 3\) = \(2, 3, 3\)"),
    ("offset", jnp.zeros((2, 3, 4)), r"model.offset must have shape \(nb, 4, 4\) = \(2, 4, 4\)"),
])
def test_body_parameters_of_the_wrong_shape_are_refused_by_name(field, value, expect):
    for edit in (lambda: eqx.tree_at(lambda m: getattr(m, field), TWO, value), lambda: TWO.replace(**{field: value})):
        with pytest.raises(ValueError, match=expect + r".*changed after loading\? eqx.tree_at"):
            mbjax.mass_matrix(edit(), Q2)  # was numpy's or JAX's broadcasting and index errors


def test_complex_body_parameters_are_refused():
    cm = eqx.tree_at(lambda m: m.mass, TWO, TWO.mass + 5j)
    for call in (lambda: mbjax.mass_matrix(cm, Q2), lambda: mbjax.inverse_dynamics(cm, Q2, Q2, Q2),
                 lambda: mbjax.forward_dynamics(cm, Q2, Q2)):
        with pytest.raises(ValueError, match=r"model.mass must be a real \(integer or floating\) array, got dtype "
                                             r"complex128"):
            call()  # was the imaginary part dropped without a word
    with pytest.raises(ValueError, match=r"model.inertia must be a real .* complex"):
        mbjax.mass_matrix(TWO.replace(inertia=TWO.inertia * (1 + 0j)), Q2)


def test_gravity_given_as_a_list():
    g = np.asarray(mbjax.gravity_forces(TWO, Q2))
    np.testing.assert_allclose(mbjax.gravity_forces(TWO.replace(gravity=[0.0, 0.0, -9.81]), Q2), g)  # was isfinite's crash
    with pytest.raises(TypeError, match=r"gravity_forces: model.gravity must be an array of shape \(3,\).*got list"):
        mbjax.gravity_forces(eqx.tree_at(lambda m: m.gravity, TWO, [0.0, 0.0, -9.81]), Q2)


@pytest.mark.parametrize("edit", [
    lambda o: o.at[1, 0, 3].set(jnp.nan),
    lambda o: o.at[1, :3, :3].multiply(2.0),  # no longer a rotation
    lambda o: o.at[1, :3, 0].multiply(-1.0),  # a reflection
    lambda o: o.at[1, 3, 3].set(0.0),
])
def test_joint_frames_edited_into_a_model_are_checked(edit):
    bad = eqx.tree_at(lambda m: m.offset, TWO, edit(TWO.offset))
    frame = r"the joint frame \(model.offset\) of body 'shank' is not a finite rigid transform"
    with pytest.raises(RUNTIME_ERRORS, match=r"mass_matrix: " + frame):
        mbjax.mass_matrix(bad, Q2)  # was NaN or 4 times the inertia, without a word
    with pytest.raises(RUNTIME_ERRORS, match=r"body_poses: " + frame):
        mbjax.body_poses(bad, Q2)


def test_a_rigid_joint_frame_edit_passes():
    c, s = np.cos(0.3), np.sin(0.3)
    turned = TWO.offset.at[1, :3, :3].set(jnp.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])).at[1, :3, 3].add(0.1)
    assert np.all(np.isfinite(mbjax.inverse_dynamics(eqx.tree_at(lambda m: m.offset, TWO, turned), Q2, Q2, Q2)))


# -- ModelBuilder arguments ------------------------------------------------------------------------

def _add(**kw):
    b = mbjax.ModelBuilder(["a"])
    args = dict(axis=[0, 0, 1], map="a", mass=1.0, com=[0, 0, 0], inertia=np.eye(3) * .01)
    b.add_body("x", **{**args, **kw})
    return b


@pytest.mark.parametrize("kw, expect", [
    (dict(mass=[1.0, 2.0]), r"body 'x': mass must be a number, got \[1.0, 2.0\]"),
    (dict(mass="1"), r"body 'x': mass must be a number"),
    (dict(axis="z"), r"body 'x': axis must be a finite 3-vector \(real numbers\), got 'z'"),
    (dict(com=["a", 0, 0]), r"body 'x': com must be a finite 3-vector"),
])
def test_builder_arguments_of_the_wrong_type_name_the_body_and_argument(kw, expect):
    with pytest.raises(ValueError, match=expect):
        _add(**kw)


def test_builder_parent_none_is_refused_naming_the_choices():
    with pytest.raises(TypeError, match=r"body 'x': parent must be 'ground', the name of a body added before, or "
                                        r"its index, got None"):
        _add(parent=None)
    assert _add(parent="ground").build().topology.parents == (-1,)
    assert _add(parent=-1).build().topology.parents == (-1,)


def test_builder_coordinates_as_one_string_are_refused():
    with pytest.raises(TypeError, match=r"coordinates must be a sequence of names, got the string 'hip'"):
        mbjax.ModelBuilder("hip")  # was the coordinates 'h', 'i', 'p'
    assert mbjax.ModelBuilder(["hip"]).coordinates == ("hip",)


# -- a spline's coordinate, quintic knots, IK data ---------------------------------------------------

def test_spline_fit_coordinate_must_be_a_name():
    x = np.linspace(-1, 1, 5)
    with pytest.raises(ValueError, match=r"NaturalCubicSpline: the coordinate must be a name \(str\).*got int 0"):
        NaturalCubicSpline.fit(0, x, np.zeros(5))  # was "'int' object is not iterable"
    assert NaturalCubicSpline.fit("a", x, np.zeros(5)).coordinates == (("a",),)


@pytest.mark.parametrize("field", ["ts", "q", "qd", "qdd"])
def test_quintic_knot_values_must_be_finite(field):
    args = dict(ts=jnp.array([0.0, 1.0]), q=jnp.zeros((2, 2)), qd=jnp.zeros((2, 2)), qdd=jnp.zeros((2, 2)))
    args[field] = args[field].at[0].set(jnp.nan)
    with pytest.raises(ValueError, match=rf"QuinticHermite: knot values must be finite: {field} holds NaN or inf"):
        mbjax.analysis.control.QuinticHermite(**args)
    mbjax.analysis.control.QuinticHermite(jnp.array([0.0, 1.0]), jnp.zeros((2, 2)))


def test_ik_data_must_be_marker_data():
    markers = mbjax.Markers(("m1",), (0,), np.zeros((1, 3)))
    with pytest.raises(TypeError, match=r"IK: data must be a MarkerData .*got ndarray"):
        mbjax.inverse_kinematics(ARM, markers, np.zeros((3, 1, 3)))  # was an AttributeError


# -- static optimization without muscles -----------------------------------------------------------

def test_static_optimization_without_muscles():
    with pytest.raises(ValueError, match=r"static optimization: the model has no muscles and no reserves or "
                                         r"actuators were given"):
        mbjax.static_optimization(TWO, Q2, Z, Z)
    r = mbjax.static_optimization(TWO, Q2, Z, Z, reserves=100.0)  # reserves alone; was "too many values to unpack"
    assert r.activations.shape == (0,)
    np.testing.assert_allclose(r.reserve_torques, mbjax.inverse_dynamics(TWO, Q2, Z, Z), rtol=1e-6)
