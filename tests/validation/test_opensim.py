"""mbjax vs OpenSim itself (marker ``validation``; needs ``pip install opensim``, 4.6 used here).

Body transforms, muscle lengths and moment arms of arm26 and MoBL (wrap sets removed in a
temporary copy, since mbjax does not model wrapping yet) over pose grids.  Moment arms are
compared with central differences of OpenSim's ``getLength`` along the coupler-constraint manifold
(OpenSim's ``computeMomentArm`` is wrong for coupled coordinates, opensim-core #3805), and with
``computeMomentArm`` itself for arm26 (no couplers).  Function evaluation is compared with
OpenSim's own SimmSpline / GCVSpline / PiecewiseLinearFunction / PolynomialFunction /
MultivariatePolynomialFunction objects; a synthetic model (``tests/_osim_models.py``) checks
chains of couplers, a coupler with two independent coordinates (MultivariatePolynomialFunction),
GCVSpline and NaturalCubicSpline (which OpenSim 4.x reads as a SimmSpline) transform axes, a
body-owned offset frame and a moving path point on it.

Files as OpenSim reads them (``tests/test_osim_trust.py`` has the same rules without OpenSim): a
``TransformAxis`` without a function, ``ConditionalPathPoint`` ranges at and just beyond their
(1e-5-widened) ends in a synthetic model and in MoBL, MovingPathPoints beyond their coordinate's
range (OpenSim clamps the coordinate), clamped coordinate defaults, collinear axes, impossible and
massless inertias.
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

from mbjax.io import load_osim  # noqa: E402
from mbjax.maps import MultivariatePolynomial  # noqa: E402
from mbjax.maps.gcv_spline import pp_gcv_spline  # noqa: E402
from mbjax.maps.piecewise import pp_piecewise_linear, pp_polynomial  # noqa: E402
from mbjax.maps.simm_spline import pp_simm_spline  # noqa: E402
from mbjax.opensim.opensim_reference import OpenSimReference  # noqa: E402
from mbjax.muscles import moment_arms, muscle_lengths  # noqa: E402
from _osim_models import (  # noqa: E402
    ARM26,
    COND_HI,
    COND_LO,
    CONDITIONAL_MODEL,
    COUPLE_A,
    COUPLE_B,
    COUPLED_CONDITIONAL_MODEL,
    FUNCTIONLESS_AXIS_MODEL,
    MOBL,
    MOVING_MODEL,
    conditional_boundary_poses,
    strip_wrapping,
    write_coupled_model,
    write_model,
)


class OpenSimOracle(OpenSimReference):
    """:class:`mbjax.opensim.opensim_reference.OpenSimReference` plus all-coordinate moment arms."""

    def fd_moment_arms(self, names, q):
        out = np.array([self.moment_arms(names, q, c) for c in names])
        self.set(names, q)
        return out


def _poses(model, n, seed, span=0.8):
    """Random poses inside the coordinate ranges (shrunk) around the defaults."""
    info = model.osim
    lo = np.maximum(np.asarray(info.lower), -3.0)
    hi = np.minimum(np.asarray(info.upper), 3.0)
    mid = 0.5 * (lo + hi)
    rng = np.random.default_rng(seed)
    return mid + span * 0.5 * (hi - lo) * rng.uniform(-1, 1, size=(n, lo.size))


def _compare(src, tmp_path, n_poses, seed, check_computed_moment_arm=False):
    path = src if src.startswith(str(tmp_path)) else strip_wrapping(src, str(tmp_path / os.path.basename(src)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(path)
    oracle = OpenSimOracle(path)
    names = model.coordinate_names
    index = {n: i for i, n in enumerate(model.muscle_names)}
    order = [index[n] for n in oracle.muscle_names()]
    lengths = jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))
    arms = jax.jit(jax.vmap(moment_arms, in_axes=(None, 0)))
    qs = _poses(model, n_poses, seed)
    ml = np.asarray(lengths(model, jnp.asarray(qs)))[:, order]
    mr = np.asarray(arms(model, jnp.asarray(qs)))[:, :, order]
    worst = dict(pose=0.0, length=0.0, arm=0.0, arm_cma=0.0)
    from mbjax import body_poses

    for q, l_mb, r_mb in zip(qs, ml, mr):
        l_os = oracle.lengths(names, q)
        worst["length"] = max(worst["length"], np.abs(l_os - l_mb).max())
        poses = np.asarray(body_poses(model, jnp.asarray(q)))
        for b in oracle.model.getBodySet():
            r, p = oracle.body_pose(b.getName())
            t = poses[model.body_index(b.getName())]
            worst["pose"] = max(worst["pose"], np.abs(t[:3, :3] - r).max(), np.abs(t[:3, 3] - p).max())
        r_fd = oracle.fd_moment_arms(names, q)
        worst["arm"] = max(worst["arm"], np.abs(r_fd - r_mb).max())
        if check_computed_moment_arm:
            for k, c in enumerate(names):
                cma = oracle.compute_moment_arm(names, q, c)
                worst["arm_cma"] = max(worst["arm_cma"], np.abs(cma - r_mb[k]).max())
    return worst


def test_arm26_matches_opensim(tmp_path):
    worst = _compare(ARM26, tmp_path, 12, 0, check_computed_moment_arm=True)
    print("arm26 worst errors", worst)
    assert worst["pose"] < 1e-12
    assert worst["length"] < 1e-12
    assert worst["arm"] < 1e-10  # Richardson central differences of OpenSim's lengths
    assert worst["arm_cma"] < 1e-9


@pytest.mark.skipif(not os.path.exists(MOBL), reason=f"MoBL model not found at {MOBL} (non-commercial, not vendored)")
def test_mobl_matches_opensim(tmp_path):
    worst = _compare(MOBL, tmp_path, 6, 1)
    print("MoBL worst errors", worst)
    assert worst["pose"] < 1e-12
    assert worst["length"] < 1e-12
    assert worst["arm"] < 1e-10


def _osim_spline(cls, x, y):
    f = cls()
    for a, b in zip(x, y):
        f.addPoint(float(a), float(b))
    return f


def _osim_eval(f, xs):
    out = []
    for v in xs:
        arg = osim.Vector(1, float(v))
        out.append([f.calcValue(arg), f.calcDerivative(osim.StdVectorInt([0]), arg),
                    f.calcDerivative(osim.StdVectorInt([0, 0]), arg)])
    return np.array(out).T


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_functions_match_opensim(n):
    rng = np.random.default_rng(n)
    x = np.sort(rng.uniform(-2, 2, n))
    y = rng.normal(size=n)
    xs = np.linspace(-3, 3, 57)
    xs = xs[np.min(np.abs(xs[:, None] - x[None]), axis=1) > 1e-6]  # PL derivative is one-sided at knots
    for cls, pp in ((osim.SimmSpline, pp_simm_spline), (osim.PiecewiseLinearFunction, pp_piecewise_linear)):
        ref = _osim_eval(_osim_spline(cls, x, y), xs)
        mine = np.array(pp(x, y)(xs))
        assert np.abs(mine - ref).max() < 1e-12
    c = rng.normal(size=4)
    ref = _osim_eval(osim.PolynomialFunction(osim.Vector(list(c))), xs)
    assert np.abs(np.array(pp_polynomial(c)(xs)) - ref).max() < 1e-12


def test_multivariate_polynomial_matches_opensim():
    f = osim.MultivariatePolynomialFunction()
    f.setDimension(3)
    f.setOrder(2)
    rng = np.random.default_rng(0)
    coef = rng.normal(size=10)
    f.setCoefficients(osim.Vector(list(coef)))
    mp = MultivariatePolynomial(["a", "b", "c"], coef, 2)
    for pt in rng.normal(size=(5, 3)):
        ref = f.calcValue(osim.Vector(list(pt)))
        assert abs(float(mp.local(jnp.asarray(pt)[None])[0][0]) - ref) < 1e-12


def _load_xml_function(tmp_path, xml):
    path = tmp_path / "function.xml"
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40600">' + xml
                    + "</OpenSimDocument>")
    return osim.Function.makeObjectFromFile(str(path))


@pytest.mark.parametrize("half_order", [1, 2, 3, 4])
def test_gcv_spline_matches_opensim(tmp_path, half_order):
    """GCVSpline (error variance 0) inside and outside its knots, value and two derivatives."""
    rng = np.random.default_rng(half_order)
    worst = 0.0
    for n in (2 * half_order, 9, 25):
        x = np.linspace(-2, 2, n) + rng.uniform(-0.3, 0.3, n) * 4 / (n - 1)
        y = np.sin(1.3 * x) + 0.2 * x**2 + 0.01 * rng.normal(size=n)
        nums = lambda v: " ".join(repr(float(t)) for t in v)  # noqa: E731
        f = osim.GCVSpline.safeDownCast(_load_xml_function(
            tmp_path, f"<GCVSpline><half_order>{half_order}</half_order><error_variance>0</error_variance>"
            f"<x>{nums(x)}</x><y>{nums(y)}</y></GCVSpline>"))
        xs = np.linspace(-2.6, 2.6, 105)
        ref = _osim_eval(f, xs)
        mine = np.array(pp_gcv_spline(x, y, half_order)(xs))
        worst = max(worst, (np.abs(mine - ref).max(axis=1) / np.maximum(np.abs(ref).max(axis=1), 1.0)).max())
    print(f"GCVSpline half order {half_order}: worst relative difference {worst:.1e}")
    assert worst < 1e-12


def test_coupled_model_matches_opensim(tmp_path):
    """Chained couplers, a two-coordinate coupler, GCVSpline axes, an offset frame: vs OpenSim."""
    path = write_coupled_model(tmp_path)
    worst = _compare(path, tmp_path, 8, 3)
    print("coupled model worst errors", worst)
    assert worst["pose"] < 1e-12
    assert worst["length"] < 1e-12
    assert worst["arm"] < 1e-10


# ---------------------------------------------------------------------------------------------
# files as OpenSim reads them
# ---------------------------------------------------------------------------------------------


def _opensim_loads(path) -> bool:
    try:
        osim.Model(str(path)).initSystem()
    except Exception:  # OpenSim raises a generic std::exception wrapper
        return False
    return True


def test_functionless_transform_axis_matches_opensim(tmp_path):
    """A TransformAxis with no function (one naming a coordinate, one naming none) is Constant(0)."""
    from mbjax import body_poses

    path = write_model(tmp_path, FUNCTIONLESS_AXIS_MODEL, "functionless.osim")
    model = load_osim(path)
    oracle = OpenSimOracle(path)
    st = osim.CustomJoint.safeDownCast(oracle.model.getJointSet().get("cj")).getSpatialTransform()
    assert st.getTransformAxis(1).getFunction().getConcreteClassName() == "Constant"  # rotation2 (names b)
    assert st.getTransformAxis(3).getFunction().getConcreteClassName() == "Constant"  # translation1
    poses = jax.jit(body_poses)
    qs = np.vstack([np.asarray(model.osim.default), np.random.default_rng(5).uniform(-1.9, 1.9, (16, 3))])
    worst = 0.0
    for q in qs:
        oracle.set(model.coordinate_names, q)
        mine = np.asarray(poses(model, jnp.asarray(q)))
        for name in ("link", "tip"):
            r, p = oracle.body_pose(name)
            t = mine[model.body_index(name)]
            worst = max(worst, np.abs(t[:3, :3] - r).max(), np.abs(t[:3, 3] - p).max())
    print(f"function-less TransformAxis: worst body transform difference {worst:.1e}")
    assert worst <= 1e-14


def _conditional_points(oracle):
    """(coordinate, range min, range max) of every ConditionalPathPoint, from OpenSim's objects."""
    out = []
    for m in oracle.muscles.values():
        pset = m.getGeometryPath().getPathPointSet()
        for i in range(pset.getSize()):
            c = osim.ConditionalPathPoint.safeDownCast(pset.get(i))
            if c is not None:
                out.append((c.getCoordinate().getName(), c.get_range(0), c.get_range(1)))
    return out


def _boundary_lengths(model, oracle, points, base):
    """Worst |L_mbjax - L_OpenSim| over the boundary poses of each conditional point's coordinate."""
    names = model.coordinate_names
    index = {n: i for i, n in enumerate(model.muscle_names)}
    order = [index[n] for n in oracle.muscle_names()]
    qs = []
    for coord, lo, hi in points:
        for v in conditional_boundary_poses(lo, hi):  # setValue does not clamp (checked below)
            q = np.array(base, dtype=float)
            q[names.index(coord)] = v
            qs.append(q)
    lengths = np.asarray(jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(np.array(qs))))
    worst = 0.0
    for q, mine in zip(qs, lengths[:, order]):
        ref = oracle.lengths(names, q)
        for k, n in enumerate(names):  # the pose OpenSim holds is the pose asked for
            assert oracle.coords[n].getValue(oracle.state) == q[k]
        worst = max(worst, np.abs(ref - mine).max())
    return worst, len(qs)


def test_conditional_boundaries_match_opensim(tmp_path):
    """Poses at the bare range ends, between them and the 1e-5-widened ends, at the widened ends
    exactly, and one double beyond (where the length jumps by millimetres)."""
    path = write_model(tmp_path, CONDITIONAL_MODEL, "conditional.osim")
    model = load_osim(path)
    oracle = OpenSimOracle(path)
    points = _conditional_points(oracle)
    assert points == [("theta", COND_LO, COND_HI)]
    worst, n = _boundary_lengths(model, oracle, points, [0.0])
    print(f"conditional path point: worst length difference {worst:.1e} m over {n} boundary poses")
    assert worst <= 1e-12
    lo = COND_LO - 1e-5
    jump = oracle.lengths(["theta"], [lo]) - oracle.lengths(["theta"], [np.nextafter(lo, -np.inf)])
    assert abs(jump[0]) > 1e-3  # the poses discriminate: the point switches between them


def test_conditional_point_on_a_coupled_coordinate_matches_opensim(tmp_path):
    """wrist.osim's case: the point switches on phi, a coupler's dependent coordinate (not in q).
    Boundary poses of phi reached through theta; OpenSim's phi is its coupler's, set by the oracle."""
    path = write_model(tmp_path, COUPLED_CONDITIONAL_MODEL, "coupled_conditional.osim")
    model = load_osim(path)
    oracle = OpenSimOracle(path)
    assert _conditional_points(oracle) == [("phi", COND_LO, COND_HI)]
    thetas = (conditional_boundary_poses(COND_LO, COND_HI) - COUPLE_B) / COUPLE_A
    mine = np.asarray(jax.jit(jax.vmap(muscle_lengths, in_axes=(None, 0)))(model, jnp.asarray(thetas[:, None])))
    ref = np.array([oracle.lengths(["theta"], [t]) for t in thetas])
    worst = np.abs(mine - ref).max()
    print(f"conditional point on a coupled coordinate: worst length difference {worst:.1e} m over {len(thetas)} poses")
    assert worst <= 1e-12
    assert np.ptp(ref) > 1e-3  # the poses discriminate: the point switches between them
    for t in (thetas[-1], 2.5):  # moment arms inside and outside the range, away from the ends
        arm = float(moment_arms(model, jnp.asarray([t]))[0, 0])
        assert abs(arm - oracle.moment_arms(["theta"], [t], "theta")[0]) < 1e-8


@pytest.mark.skipif(not os.path.exists(MOBL), reason=f"MoBL model not found at {MOBL} (non-commercial, not vendored)")
def test_mobl_conditional_boundaries_match_opensim(tmp_path):
    """Every MoBL ConditionalPathPoint at and just beyond its range ends, other coordinates at default."""
    path = strip_wrapping(MOBL, str(tmp_path / "mobl.osim"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(path)
    oracle = OpenSimOracle(path)
    points = _conditional_points(oracle)
    assert len(points) == 11
    worst, n = _boundary_lengths(model, oracle, points, np.asarray(model.osim.default))
    print(f"MoBL conditional path points: worst length difference {worst:.1e} m over {n} boundary poses")
    assert n == 11 * 13
    assert worst <= 1e-12


_PIN_DEFAULT = FUNCTIONLESS_AXIS_MODEL.replace(
    '<Coordinate name="c"><default_value>0.1</default_value><range>-2 2</range></Coordinate>',
    '<Coordinate name="c"><default_value>DEFAULT</default_value><range>-1 1</range>CLAMPED</Coordinate>')


@pytest.mark.parametrize(
    "default, clamped",
    [("1.5", True), ("1.5", False), ("1.00000001", True), ("1.0000001", True), ("-1.00000001", True),
     ("-1.0000001", True), ("0.5", True), ("nan", True)],
)
def test_coordinate_defaults_refused_as_opensim_refuses(tmp_path, default, clamped):
    """Clamped default outside (min - SqrtEps, max + SqrtEps): both refuse; otherwise both load."""
    text = _PIN_DEFAULT.replace("DEFAULT", default).replace("CLAMPED", "<clamped>true</clamped>" if clamped else "")
    path = write_model(tmp_path, text, "default.osim")
    try:
        load_osim(path)
        mine = True
    except ValueError:
        mine = False
    assert mine == _opensim_loads(path)


def test_nonfinite_default_is_a_deliberate_refusal(tmp_path):
    """OpenSim 4.6 loads an unclamped NaN default (its default pose is NaN); mbjax refuses it."""
    path = write_model(tmp_path, _PIN_DEFAULT.replace("DEFAULT", "nan").replace("CLAMPED", ""), "nan.osim")
    assert _opensim_loads(path)
    with pytest.raises(ValueError, match="<default_value> holds NaN"):
        load_osim(path)


@pytest.mark.parametrize("axis", ["0 0 1", "0.000001 0 0", "0.001 0 0"])
def test_collinear_axes_refused_as_opensim_refuses(tmp_path, axis):
    path = write_model(tmp_path, FUNCTIONLESS_AXIS_MODEL.replace("<axis>0.6 0 0.8</axis>", f"<axis>{axis}</axis>"),
                       "axes.osim")
    try:
        load_osim(path)
        mine = True
    except ValueError:
        mine = False
    assert mine == _opensim_loads(path)


@pytest.mark.skipif(not os.path.exists(MOBL), reason=f"MoBL model not found at {MOBL} (non-commercial, not vendored)")
def test_mobl_inertias_are_opensims():
    """OpenSim uses MoBL's impossible clavicle and scapula inertias as given; so does mbjax."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(MOBL, ignore_wrapping=True)
    m = osim.Model(MOBL)
    for name in ("clavicle", "scapula"):
        inertia = m.getBodySet().get(name).getInertia()
        mom, prod = inertia.getMoments(), inertia.getProducts()
        ref = np.array([[mom[0], prod[0], prod[1]], [prod[0], mom[1], prod[2]], [prod[1], prod[2], mom[2]]])
        assert np.array_equal(np.asarray(model.inertia[model.body_index(name)]), ref)


def test_massless_inertia_zeroed_as_opensim_does(tmp_path):
    text = FUNCTIONLESS_AXIS_MODEL.replace('<Body name="link"><mass>1</mass>', '<Body name="link"><mass>1e-20</mass>')
    path = write_model(tmp_path, text, "massless.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_osim(path)
    opensim_model = osim.Model(path)  # kept alive: the body set belongs to it
    inertia = opensim_model.getBodySet().get("link").getInertia()
    assert [inertia.getMoments()[i] for i in range(3)] == [0.0, 0.0, 0.0]
    assert np.all(np.asarray(model.inertia[model.body_index("link")]) == 0.0)


def test_moving_path_point_beyond_range_matches_opensim(tmp_path):
    """MovingPathPoint::getLocation clamps its coordinate to the range: lengths at, just beyond and
    well beyond the range ends; moment arms (Richardson differences of OpenSim's lengths) away from them."""
    path = write_model(tmp_path, MOVING_MODEL, "moving.osim")
    model = load_osim(path)
    oracle = OpenSimOracle(path)
    qs = np.array([-3.6, -3.2, -3.0, np.nextafter(-3.0, -np.inf), -1.1, 0.5, 2.5, 3.0, np.nextafter(3.0, np.inf), 3.3])
    mine = np.asarray(jax.vmap(muscle_lengths, in_axes=(None, 0))(model, jnp.asarray(qs[:, None])))[:, 0]
    ref = np.array([oracle.lengths(["theta"], [q])[0] for q in qs])
    worst = np.abs(mine - ref).max()
    away = np.abs(np.abs(qs) - 3.0) > 0.01
    arms = np.asarray(jax.vmap(moment_arms, in_axes=(None, 0))(model, jnp.asarray(qs[away, None])))[:, 0, 0]
    ref_arms = np.array([oracle.fd_moment_arms(["theta"], [q])[0, 0] for q in qs[away]])
    worst_arm = np.abs(arms - ref_arms).max()
    print(f"MovingPathPoint beyond its coordinate range: worst length difference {worst:.1e} m, "
          f"moment arm {worst_arm:.1e} m")
    assert worst <= 1e-12
    assert worst_arm < 1e-10
