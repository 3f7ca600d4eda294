"""OpenSim import: function evaluation, joint conventions, couplers, paths and error messages.

OpenSim itself is the oracle in ``tests/validation/test_opensim.py``; here the references are
SciPy, hand formulas and autodiff.
"""

import re
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.interpolate import CubicSpline, make_interp_spline

import mbjax
from mbjax.muscles.paths import get_paths
from mbjax.io import load_osim
from mbjax.maps import ComposedPolynomial, LinearCombination, MultivariatePolynomial, PiecewisePolynomial
from mbjax.maps.gcv_spline import pp_gcv_spline
from mbjax.maps.piecewise import pp_linear, pp_piecewise_linear, pp_polynomial
from mbjax.maps.simm_spline import pp_natural_spline, pp_simm_spline
from mbjax.muscles import moment_arms, moment_arms_autodiff, muscle_lengths

from _osim_models import (
    ARM26,
    CHAIN_X,
    CHAIN_Y,
    COUPLED_MODEL,
    GCV_X,
    GCV_Y,
    MOBL,
    MULTI_COEF,
    needs_arm26,
    needs_mobl,
    write_coupled_model,
)


# ---------------------------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------------------------


def test_natural_spline_matches_scipy():
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-2, 2, 7))
    y = rng.normal(size=7)
    xs = np.linspace(x[0], x[-1], 101)
    ref = CubicSpline(x, y, bc_type="natural")
    f, g, h = pp_natural_spline(x, y)(xs)
    assert np.abs(f - ref(xs)).max() < 1e-12
    assert np.abs(g - ref(xs, 1)).max() < 1e-12
    assert np.abs(h - ref(xs, 2)).max() < 1e-11
    # linear continuation outside the knots with the end slopes
    f_out, g_out, h_out = pp_natural_spline(x, y)(np.array([x[0] - 1.0, x[-1] + 1.0]))
    assert np.allclose(f_out, [y[0] - ref(x[0], 1), y[-1] + ref(x[-1], 1)], atol=1e-12)
    assert np.allclose(h_out, 0.0)


def test_simm_spline_properties():
    """FMM spline: interpolates, C² inside, reproduces any cubic exactly (its end conditions)."""
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(-2, 2, 6))
    cubic = np.poly1d(rng.normal(size=4))
    pp = pp_simm_spline(x, cubic(x))
    xs = np.linspace(x[0], x[-1], 77)
    f, g, h = pp(xs)
    assert np.abs(f - cubic(xs)).max() < 1e-12
    assert np.abs(g - cubic.deriv()(xs)).max() < 1e-11
    assert np.abs(h - cubic.deriv(2)(xs)).max() < 1e-10
    # two knots: the straight line
    f2, g2, _ = pp_simm_spline([0.0, 2.0], [1.0, 5.0])(np.array([-1.0, 1.0, 3.0]))
    assert np.allclose(f2, [-1.0, 3.0, 7.0]) and np.allclose(g2, 2.0)


@pytest.mark.parametrize("half_order", [1, 2, 3, 4])
def test_gcv_spline_is_the_natural_interpolating_spline(half_order):
    """GCVSpline (error variance 0) vs SciPy's interpolating B-spline with natural end conditions.

    Degree 2m-1, derivatives m … 2m-2 zero at both ends; outside the knots the polynomial of degree
    m-1 continuing it (C^{m-1} at the end knots, m-th derivative zero).
    """
    m = half_order
    rng = np.random.default_rng(m)
    x = np.linspace(-2, 2, 11) + rng.uniform(-0.1, 0.1, 11)
    y = np.sin(1.3 * x) + 0.05 * rng.normal(size=11)
    bc = None if m == 1 else ([(r, 0.0) for r in range(m, 2 * m - 1)],) * 2
    ref = make_interp_spline(x, y, k=2 * m - 1, bc_type=bc)
    pp = pp_gcv_spline(x, y, m)
    xs = np.linspace(x[0], x[-1], 301)
    f, g, h = pp(xs)
    assert np.abs(f - ref(xs)).max() < 1e-12
    assert np.abs(g - ref(xs, 1)).max() < 1e-11
    if m > 1:
        assert np.abs(h - ref(xs, 2)).max() < 1e-10
    # continuation: Taylor polynomial of degree m-1 at the end knots
    for end, outside in ((x[0], x[0] - 0.7), (x[-1], x[-1] + 0.7)):
        d = outside - end
        got = pp(np.array(outside))
        for r in (0, 1):  # value and slope of the continuation
            taylor = sum(ref(end, r + j) * d**j / np.prod(np.arange(1, j + 1)) for j in range(m - r))
            assert abs(got[r] - taylor) < 1e-10


def test_gcv_spline_refusals(tmp_path):
    with pytest.raises(ValueError, match="at least 6 knots"):
        pp_gcv_spline([0, 1, 2, 3, 4], [0, 1, 0, 1, 0], 3)
    smoothing = COUPLED_MODEL.replace("<error_variance>0</error_variance>", "<error_variance>0.01</error_variance>")
    path = tmp_path / "smoothing.osim"
    path.write_text(smoothing)
    with pytest.raises(NotImplementedError, match=r"smoothing.osim:\d+: <GCVSpline name='function'>: GCVSpline with error_variance=0.01"):
        load_osim(str(path))


def test_coupled_model_chains_and_multi_coordinate_couplers(tmp_path):
    """d1 = GCV(a), d2 = 1.5 S(d1) (a chain, listed before its first link), m = P(a, b).

    Joint variables against a NumPy evaluation of the same functions (SciPy for the GCV spline),
    gradients and Hessians against autodiff, moment arms against -jacfwd(lengths).
    """
    model = load_osim(write_coupled_model(tmp_path))
    assert model.coordinate_names == ("a", "b", "c")
    assert dict(model.osim.roles) == dict(a="independent", b="independent", d1="dependent",
                                                     d2="dependent", m="dependent", c="independent")
    assert model.muscle_names == ("mus", "moving")  # "moving": MovingPathPoint on a rotated offset frame
    gcv = make_interp_spline(GCV_X, GCV_Y, k=5, bc_type=([(3, 0.0), (4, 0.0)],) * 2)
    rng = np.random.default_rng(0)
    jv_fn = eqx.filter_jit(mbjax.joint_values)
    for q in rng.uniform([-1.8, -1.2, -1.0], [1.8, 1.2, 1.0], size=(5, 3)):
        a, b, c = q
        d1 = gcv(a)
        d2 = 1.5 * pp_simm_spline(CHAIN_X, CHAIN_Y)(np.array(d1))[0]  # <NaturalCubicSpline> = SimmSpline in OpenSim
        mm = MULTI_COEF[0] + MULTI_COEF[1] * b + MULTI_COEF[2] * b**2 + MULTI_COEF[3] * a + MULTI_COEF[4] * a * b + MULTI_COEF[5] * a**2
        rot2 = pp_simm_spline([-3, -1, 0, 1, 3], [-2.5, -0.9, 0, 1.1, 2.4])(np.array(d1))[0]
        tr2 = pp_gcv_spline([-2, -1, 0, 1, 2], [-0.05, -0.02, 0, 0.03, 0.04], 2)(np.array(b))[0]
        expected = {"link/cj/translation1": 0.1 * d2 + 0.02, "link/cj/translation2": tr2,
                    "link/cj/rotation1": a, "link/cj/rotation2": rot2, "link": mm, "tip": c}
        jv = jv_fn(model, jnp.asarray(q))
        for name, value in expected.items():
            assert abs(float(jv.value[model.body_index(name)]) - value) < 1e-12, name
        f = lambda x: mbjax.joint_values(model, x).value  # noqa: E731
        assert jnp.max(jnp.abs(jax.jacfwd(f)(jnp.asarray(q)) - jv.gradient)) < 1e-12
        assert jnp.max(jnp.abs(jax.hessian(f)(jnp.asarray(q)) - jv.hessian)) < 1e-10
        r = moment_arms(model, jnp.asarray(q))
        assert jnp.max(jnp.abs(r - moment_arms_autodiff(model, jnp.asarray(q)))) < 1e-13


@pytest.mark.parametrize(
    "edit, error, match",
    [
        (("<independent_coordinate_names>a</independent_coordinate_names>",
          "<independent_coordinate_names>d2</independent_coordinate_names>"),
         ValueError, r"circular chain of coordinate couplers: d2 -> d1 -> d2|d1 -> d2 -> d1"),
        (("<independent_coordinate_names>a b</independent_coordinate_names>",
          "<independent_coordinate_names>a d1</independent_coordinate_names>"),
         NotImplementedError, r"MultivariatePolynomialFunction coupler of the dependent coordinate 'd1'"),
        (("<independent_coordinate_names>d1</independent_coordinate_names>",
          "<independent_coordinate_names>d1 b</independent_coordinate_names>"),
         ValueError, r"<CoordinateCouplerConstraint name='chain_second'>: a NaturalCubicSpline reads one coordinate"),
    ],
)
def test_coupler_errors_name_the_constraint(tmp_path, edit, error, match):
    path = tmp_path / "bad_coupler.osim"
    path.write_text(COUPLED_MODEL.replace(*edit))
    with pytest.raises(error, match=match):
        load_osim(str(path))


def test_piecewise_linear_and_polynomial_by_hand():
    f, g, h = pp_piecewise_linear([0.0, 1.0, 3.0], [0.0, 2.0, 1.0])(np.array([-1.0, 0.5, 2.0, 4.0]))
    assert np.allclose(f, [-2.0, 1.0, 1.5, 0.5]) and np.allclose(g, [2.0, 2.0, -0.5, -0.5])
    f, g, h = pp_polynomial([2.0, -1.0, 3.0])(np.array([1.5]))  # 2x² - x + 3
    assert np.allclose([f[0], g[0], h[0]], [2 * 2.25 - 1.5 + 3, 4 * 1.5 - 1, 4.0])


def test_families_closed_form_vs_autodiff():
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(-1, 1, 5))
    maps = [
        PiecewisePolynomial("a", pp_simm_spline(x, rng.normal(size=5))),
        PiecewisePolynomial("b", pp_piecewise_linear(x, rng.normal(size=5))),
        PiecewisePolynomial("a", pp_linear(2.0, 0.5)),
    ]
    fam = PiecewisePolynomial.stack(maps)
    pts = jnp.asarray(rng.uniform(-1.5, 1.5, size=(3, 1)))
    f, g, h = fam.local(pts)
    for k in range(3):
        single = lambda z, k=k: fam.evaluate(jnp.full((3,), z))[0][k]
        assert abs(jax.grad(single)(pts[k, 0]) - g[k, 0]) < 1e-12
        assert abs(jax.grad(jax.grad(single))(pts[k, 0]) - h[k, 0, 0]) < 1e-11
    comp = ComposedPolynomial(
        PiecewisePolynomial("u", pp_simm_spline(x, rng.normal(size=5))),
        PiecewisePolynomial("a", pp_polynomial([0.3, -0.2, 0.1])),
    )
    f, g, h = comp.local(pts[:1])
    val = lambda z: comp.local(jnp.reshape(z, (1, 1)))[0][0]
    assert abs(jax.grad(val)(pts[0, 0]) - g[0, 0]) < 1e-12
    assert abs(jax.hessian(val)(pts[0, 0]) - h[0, 0, 0]) < 1e-11
    mp = MultivariatePolynomial(["a", "b"], rng.normal(size=6), 2)
    z = jnp.asarray([[0.3, -0.7]])
    f, g, h = mp.local(z)
    val = lambda v: mp.local(v[None])[0][0]
    assert jnp.max(jnp.abs(jax.grad(val)(z[0]) - g[0])) < 1e-12
    assert jnp.max(jnp.abs(jax.hessian(val)(z[0]) - h[0])) < 1e-12
    # a rotation-weighted sum of maps of different coordinates (MovingPathPoint on an offset frame)
    lc = LinearCombination([comp, PiecewisePolynomial("b", pp_simm_spline(x, rng.normal(size=5))), mp],
                           [0.3, -1.2, 0.7], 0.05)
    assert lc.coordinates == (("a", "b"),)
    z = jnp.asarray([[0.2, -0.4]])
    f, g, h = lc.local(z)
    val = lambda v: lc.local(v[None])[0][0]
    assert jnp.max(jnp.abs(jax.grad(val)(z[0]) - g[0])) < 1e-12
    assert jnp.max(jnp.abs(jax.hessian(val)(z[0]) - h[0])) < 1e-11
    # term order 1, y, y², x, xy, x² (OpenSim's)
    c = np.arange(1.0, 7.0)
    mp = MultivariatePolynomial(["x", "y"], c, 2)
    xv, yv = 0.3, 0.7
    expected = 1 + 2 * yv + 3 * yv**2 + 4 * xv + 5 * xv * yv + 6 * xv**2
    assert abs(float(mp.local(jnp.asarray([[xv, yv]]))[0][0]) - expected) < 1e-14


# ---------------------------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------------------------


@needs_arm26
def test_arm26_loads_with_wraps_or_straight_when_asked():
    wrapped = load_osim(ARM26)
    assert get_paths(wrapped).wraps.wraps_of(0) == ("TRI", "TRIlonghh", "TRIlongglen")
    with pytest.warns(UserWarning, match="wrapping ignored"):
        model = load_osim(ARM26, ignore_wrapping=True)
    assert model.coordinate_names == ("r_shoulder_elev", "r_elbow_flex")
    assert model.muscle_names == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")
    paths = model.muscles
    assert paths.kinds[0] == "Thelen2003Muscle"
    assert float(paths.parameters["max_isometric_force"][0]) == 798.52
    assert model.osim.wrapping_ignored == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BRA")


@needs_arm26
def test_arm26_hand_checked_pose_and_moment_arms():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(ARM26, ignore_wrapping=True)
    q = jnp.asarray([0.4, 1.1])
    poses = eqx.filter_jit(mbjax.body_poses)(model, q)
    # by hand from the file: base at (0, 0.8, 0); humerus at base + (-0.017545, -0.007, 0.17),
    # rotated by 0.4 rad about its (normalised) axis (-0.05889802, 0.0023, 0.99826136)
    ax = np.array([-0.05889802, 0.0023, 0.99826136])
    ax /= np.linalg.norm(ax)
    k = np.array([[0, -ax[2], ax[1]], [ax[2], 0, -ax[0]], [-ax[1], ax[0], 0]])
    r = np.eye(3) + np.sin(0.4) * k + (1 - np.cos(0.4)) * k @ k
    hum = model.body_index("r_humerus")
    assert np.abs(np.asarray(poses[hum, :3, :3]) - r).max() < 1e-15
    assert np.abs(np.asarray(poses[hum, :3, 3]) - [-0.017545, 0.793, 0.17]).max() < 1e-15
    r = eqx.filter_jit(moment_arms)(model, q)
    assert jnp.max(jnp.abs(r - eqx.filter_jit(moment_arms_autodiff)(model, q))) < 1e-15


@needs_mobl
def test_mobl_couplers_become_maps():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(MOBL, ignore_wrapping=True)
    assert model.coordinate_names[:3] == ("elv_angle", "shoulder_elv", "shoulder_rot")
    roles = dict(model.osim.roles)
    assert roles["sternoclavicular_r2"] == "dependent"
    # 50 muscles; the file's 4 Ligaments are not muscles: force elements with paths of their own
    text = open(MOBL).read()
    ligaments = re.findall(r"<Ligament name=\"([^\"]+)\"", text)
    assert len(ligaments) == 4 and len(model.muscle_names) == text.count("<Millard") + text.count("<Thelen") + text.count("<Schutte") == 50
    (lig,) = [e for e in model.forces.elements if type(e).__name__ == "Ligament"]
    assert lig.names == tuple(ligaments) and not set(ligaments) & set(model.muscle_names)
    assert model.osim.ignored == ()
    # closed-form joint maps (couplers composed) vs autodiff
    q = model.osim.default + 0.1
    jv = eqx.filter_jit(mbjax.joint_values)(model, q)
    f = lambda x: mbjax.joint_values(model, x).value
    assert jnp.max(jnp.abs(eqx.filter_jit(jax.jacfwd(f))(q) - jv.gradient)) < 1e-13
    r = eqx.filter_jit(moment_arms)(model, q)
    r_ad = eqx.filter_jit(moment_arms_autodiff)(model, q)
    assert jnp.max(jnp.abs(r - r_ad)) < 1e-13


# ---------------------------------------------------------------------------------------------
# malformed files name the element and line
# ---------------------------------------------------------------------------------------------

TEMPLATE = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <Model name="tiny">
    <gravity>0 -9.81 0</gravity>
    <Ground name="ground" />
    <BodySet name="bodyset">
      <objects>
        <Body name="link">
          <mass>1</mass>
          <mass_center>0 -0.1 0</mass_center>
          <inertia>0.01 0.01 0.01 0 0 0</inertia>
        </Body>
      </objects>
    </BodySet>
    <JointSet name="jointset">
      <objects>
        JOINT
      </objects>
    </JointSet>
    <ForceSet name="forceset">
      <objects>
        FORCE
      </objects>
    </ForceSet>
  </Model>
</OpenSimDocument>
"""
PIN = """<PinJoint name="pin">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/link</socket_child_frame>
          <coordinates><Coordinate name="theta"><default_value>0.2</default_value>
            <range>-1 1</range></Coordinate></coordinates>
        </PinJoint>"""
MUSCLE = """<Thelen2003Muscle name="m">
          <max_isometric_force>100</max_isometric_force>
          <GeometryPath name="path"><PathPointSet><objects>
            <PathPoint name="p1"><socket_parent_frame>/ground</socket_parent_frame><location>0.1 0 0</location></PathPoint>
            POINT
          </objects></PathPointSet></GeometryPath>
        </Thelen2003Muscle>"""
POINT = """<PathPoint name="p2"><socket_parent_frame>/bodyset/link</socket_parent_frame><location>0 -0.2 0</location></PathPoint>"""


def _write(tmp_path, joint=PIN, force=MUSCLE.replace("POINT", POINT)):
    path = tmp_path / "tiny.osim"
    path.write_text(TEMPLATE.replace("JOINT", joint).replace("FORCE", force))
    return str(path)


def test_tiny_pin_model(tmp_path):
    model = load_osim(_write(tmp_path))
    assert model.coordinate_names == ("theta",)
    q = jnp.asarray([0.3])
    # L = |(-0.2 sin, -0.2 cos) ... | by hand: tip at (0.2 sinθ, -0.2 cosθ), origin (0.1, 0, 0)
    tip = np.array([0.2 * np.sin(0.3), -0.2 * np.cos(0.3)])
    assert abs(muscle_lengths(model, q)[0] - np.hypot(tip[0] - 0.1, tip[1])) < 1e-15
    assert float(model.osim.default[0]) == 0.2


@pytest.mark.parametrize(
    "joint, force, match",
    [
        (PIN.replace("PinJoint", "ConstantCurvatureJoint"), "", r"tiny.osim:17: <ConstantCurvatureJoint name='pin'>: ConstantCurvatureJoint .* is not supported"),
        (PIN, MUSCLE.replace("POINT", POINT.replace("/bodyset/link", "/bodyset/femur")), r"<PathPoint name='p2'>: cannot resolve frame"),
        (PIN, MUSCLE.replace("POINT", "<ViaPoint name='v'/>"), r"<ViaPoint name='v'>: unsupported path point"),
        (PIN, "<PrescribedForce name='pf'/>", r"<PrescribedForce name='pf'>: unsupported force"),
        (PIN, MUSCLE.replace("POINT", POINT.replace("<location>0 -0.2 0</location>", "<location>0 x 0</location>")), r"<location> must hold numbers"),
        (PIN.replace("<range>-1 1</range>", "<range>-1</range>"), "", r"<Coordinate name='theta'>: <range> must hold 2 numbers"),
    ],
)
def test_malformed_files_name_the_element(tmp_path, joint, force, match):
    with pytest.raises((ValueError, NotImplementedError), match=match):
        load_osim(_write(tmp_path, joint, force))


def test_unsupported_function_is_named(tmp_path):
    custom = """<CustomJoint name="cj">
          <socket_parent_frame>/ground</socket_parent_frame>
          <socket_child_frame>/bodyset/link</socket_child_frame>
          <coordinates><Coordinate name="theta" /></coordinates>
          <SpatialTransform>
            <TransformAxis name="rotation1"><coordinates>theta</coordinates><axis>0 0 1</axis>
              <StepFunction name="function"><start_time>0</start_time></StepFunction></TransformAxis>
          </SpatialTransform>
        </CustomJoint>"""
    with pytest.raises(NotImplementedError, match=r"TransformAxis name='rotation1'>: expected exactly one function"):
        load_osim(_write(tmp_path, custom))
    with pytest.raises(ValueError, match="malformed XML"):
        bad = tmp_path / "bad.osim"
        bad.write_text("<OpenSimDocument><Model>")
        load_osim(str(bad))


@needs_mobl
def test_shoulder_rhythms():
    from mbjax.models.shoulder import MUSCLES, shoulder_model

    holz = shoulder_model("holzbaur")
    dgb = shoulder_model("degroot_brand")
    assert holz.muscle_names == MUSCLES and dgb.coordinate_names == ("elv_angle", "shoulder_elv", "shoulder_rot")
    q = jnp.asarray([0.7, 1.2, -0.3])
    sc2 = holz.body_index("clavicle/sternoclavicular/rotation1")  # rotation about SC r2 axis
    f_h = eqx.filter_jit(mbjax.joint_values)(holz, q)
    f_d = eqx.filter_jit(mbjax.joint_values)(dgb, q)
    # Holzbaur's coupler (2-knot SimmSpline through (0, 0), (2.61799, -0.633555)) vs de Groot &
    # Brand's Cy = -0.242 Hz + 0.120 Hy (degroot_brand_2001.json), by hand
    assert abs(f_h.value[sc2] - (-0.633555 / 2.61799) * 1.2) < 1e-15
    assert abs(f_d.value[sc2] - (-0.242 * 1.2 + 0.120 * 0.7)) < 1e-15
    assert abs(f_d.gradient[sc2, 0] - 0.120) < 1e-15 and abs(f_h.gradient[sc2, 0]) == 0.0
    r = eqx.filter_jit(moment_arms)(dgb, q)
    assert jnp.max(jnp.abs(r - eqx.filter_jit(moment_arms_autodiff)(dgb, q))) < 1e-14
    with pytest.raises(ValueError, match="rhythm"):
        shoulder_model("inman")
