"""OpenSim files as OpenSim reads them: edge inputs the importer accepts, widens, warns about or refuses.

Each test writes the bad or edge file itself.  The rules follow opensim-core 4.6 (cited per test);
``tests/validation/test_opensim.py`` checks the same files against live OpenSim.
"""

import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.opensim.model.osim_paths import CONDITIONAL_RANGE_TOLERANCE
from mbjax.muscles import muscle_lengths

from _osim_models import (
    COND_HI,
    COND_LO,
    CONDITIONAL_MODEL,
    COUPLE_A,
    COUPLE_B,
    COUPLED_CONDITIONAL_MODEL,
    FUNCTIONLESS_AXIS_MODEL,
    MOBL,
    conditional_boundary_poses,
    needs_mobl,
    write_model,
)


def _rot(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


# ---------------------------------------------------------------------------------------------
# TransformAxis without a function: OpenSim 4.x's TransformAxis::constructProperties gives the
# function property the default Constant(0), whatever coordinates the axis names
# ---------------------------------------------------------------------------------------------


def test_functionless_transform_axis_is_constant_zero(tmp_path):
    model = load_osim(write_model(tmp_path, FUNCTIONLESS_AXIS_MODEL, "functionless.osim"))
    assert model.coordinate_names == ("a", "b", "c")
    rng = np.random.default_rng(0)
    for q in rng.uniform(-1.5, 1.5, size=(4, 3)):
        a, b, c = q
        poses = np.asarray(mbjax.body_poses(model, jnp.asarray(q)))
        # X_FM = Trans(0.1 b + 0.02 along y) · Rot(r1, a); rotation2 (names b, no function) and
        # translation1 (no function) are zero; the pin adds Rot(z, c)
        link = poses[model.body_index("link")]
        assert np.abs(link[:3, :3] - _rot([0.6, 0, 0.8], a)).max() < 1e-15
        assert np.abs(link[:3, 3] - [0.0, 0.1 * b + 0.02, 0.0]).max() < 1e-15
        tip = poses[model.body_index("tip")]
        assert np.abs(tip[:3, :3] - _rot([0.6, 0, 0.8], a) @ _rot([0, 0, 1], c)).max() < 1e-15


def test_functionless_transform_axis_with_two_coordinates_loads(tmp_path):
    """OpenSim 4.6 loads it too (the default Constant(0) ignores the coordinates)."""
    text = FUNCTIONLESS_AXIS_MODEL.replace(
        '<TransformAxis name="rotation2"><coordinates>b</coordinates>',
        '<TransformAxis name="rotation2"><coordinates>a b</coordinates>')
    model = load_osim(write_model(tmp_path, text, "two.osim"))
    q = jnp.asarray([0.4, -0.3, 0.2])
    link = np.asarray(mbjax.body_poses(model, q))[model.body_index("link")]
    assert np.abs(link[:3, :3] - _rot([0.6, 0, 0.8], 0.4)).max() < 1e-15


def test_unknown_function_is_still_refused(tmp_path):
    text = FUNCTIONLESS_AXIS_MODEL.replace(
        '<TransformAxis name="rotation2"><coordinates>b</coordinates><axis>0 1 0</axis></TransformAxis>',
        '<TransformAxis name="rotation2"><coordinates>b</coordinates><axis>0 1 0</axis>'
        '<StepFunction name="function" /></TransformAxis>')
    with pytest.raises(NotImplementedError, match=r"TransformAxis name='rotation2'>: expected exactly one function"):
        load_osim(write_model(tmp_path, text, "step.osim"))


@pytest.mark.parametrize(
    "edit, pair",
    [
        # rotation3 is left out, so it is z (OpenSim's default), collinear with rotation1 = z
        (("<axis>0.6 0 0.8</axis>", "<axis>0 0 1</axis>"), "rotation1 and rotation3"),
        # as written, not normalised: |(1e-6, 0, 0) x (0, 1, 0)| < 1e-5
        (("<axis>0.6 0 0.8</axis>", "<axis>0.000001 0 0</axis>"), "rotation1 and rotation2"),
        (("<coordinates></coordinates><axis>1 0 0</axis>", "<coordinates></coordinates><axis>0 1 0</axis>"),
         "translation1 and translation2"),
    ],
)
def test_collinear_custom_joint_axes_are_refused(tmp_path, edit, pair):
    """CustomJoint::extendFinalizeFromProperties: |a_i x a_k| < 1e-5 for two axes of a triple."""
    path = write_model(tmp_path, FUNCTIONLESS_AXIS_MODEL.replace(*edit), "collinear.osim")
    with pytest.raises(ValueError, match=rf"collinear.osim:\d+: <SpatialTransform>: {pair} axes .* are collinear"):
        load_osim(path)


# ---------------------------------------------------------------------------------------------
# ConditionalPathPoint: active on [range0 - 1e-5, range1 + 1e-5] (ConditionalPathPoint::isActive)
# ---------------------------------------------------------------------------------------------


def _conditional_length(q, with_point: bool):
    """Hand reference: origin in ground, points on the link rotated by Rot(z, q)."""
    r = _rot([0, 0, 1], q)
    pts = [np.array([0.1, 0.05, 0.0])]
    if with_point:
        pts.append(r @ [0.06, -0.08, 0.02])
    pts.append(r @ [0.0, -0.2, 0.0])
    return sum(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:]))


def test_conditional_range_is_widened_like_opensim(tmp_path):
    model = load_osim(write_model(tmp_path, CONDITIONAL_MODEL, "conditional.osim"))
    paths = model.muscles
    # the stored range is OpenSim's effective one, as the very doubles OpenSim compares with
    assert float(paths.cond_range[0, 1, 0]) == COND_LO - CONDITIONAL_RANGE_TOLERANCE
    assert float(paths.cond_range[0, 1, 1]) == COND_HI + CONDITIONAL_RANGE_TOLERANCE
    lo, hi = COND_LO - 1e-5, COND_HI + 1e-5
    for q in conditional_boundary_poses(COND_LO, COND_HI):
        active = lo <= q <= hi
        got = float(muscle_lengths(model, jnp.asarray([q]))[0])
        assert abs(got - _conditional_length(q, active)) < 1e-15, q
    # the widened ends are active, the next doubles beyond them are not: the length jumps (≈ 8 mm)
    at = float(muscle_lengths(model, jnp.asarray([lo]))[0])
    beyond = float(muscle_lengths(model, jnp.asarray([np.nextafter(lo, -np.inf)]))[0])
    assert abs(at - beyond) > 1e-3


def test_conditional_point_on_a_coupled_coordinate(tmp_path):
    """The point reads phi = A·theta + B (a coupler's dependent coordinate, not in q) through its
    coupler map: lengths, batched lengths, the reference path's active set and moment arms agree
    with the hand model at poses on both sides of both (widened) range ends."""
    from mbjax.muscles import moment_arms
    from mbjax.muscles.paths import _active

    model = load_osim(write_model(tmp_path, COUPLED_CONDITIONAL_MODEL, "coupled_conditional.osim"))
    assert model.coordinate_names == ("theta",)
    lo, hi = COND_LO - CONDITIONAL_RANGE_TOLERANCE, COND_HI + CONDITIONAL_RANGE_TOLERANCE
    phis = np.array([lo - 2e-6, lo + 2e-6, COND_LO, 0.5 * (COND_LO + COND_HI), hi - 2e-6, hi + 2e-6, 1.2, -1.0])
    thetas = (phis - COUPLE_B) / COUPLE_A
    active = [lo <= COUPLE_A * t + COUPLE_B <= hi for t in thetas]
    assert active == [False, True, True, True, True, False, False, False]
    hand = np.array([_conditional_length(t, a) for t, a in zip(thetas, active)])
    batched = np.asarray(jax.vmap(muscle_lengths, in_axes=(None, 0))(model, jnp.asarray(thetas[:, None])))[:, 0]
    np.testing.assert_allclose(batched, hand, rtol=0, atol=1e-15)
    for t, a, length in zip(thetas, active, hand):
        q = jnp.asarray([t])
        assert abs(float(muscle_lengths(model, q)[0]) - length) < 1e-15
        assert bool(_active(model.muscles, q)[0, 1]) == a
        h = 1e-6  # central difference of the hand length on the same branch
        arm = -(_conditional_length(t + h, a) - _conditional_length(t - h, a)) / (2 * h)
        assert abs(float(moment_arms(model, q)[0, 0]) - arm) < 1e-8


def test_reversed_conditional_ranges(tmp_path):
    """OpenSim accepts min > max: active where [min - 1e-5, max + 1e-5] is non-empty, else never."""
    never = CONDITIONAL_MODEL.replace(f"<range>{COND_LO!r} {COND_HI!r}</range>", "<range>0.3 0.2</range>")
    with pytest.warns(UserWarning, match=r"never.osim: 1 ConditionalPathPoint\(s\) left out.*: m/cond"):
        model = load_osim(write_model(tmp_path, never, "never.osim"))
    assert model.muscles.point_names[0][:2] == ("origin", "insertion")
    q = 0.25
    assert abs(float(muscle_lengths(model, jnp.asarray([q]))[0]) - _conditional_length(q, False)) < 1e-15
    narrow = CONDITIONAL_MODEL.replace(f"<range>{COND_LO!r} {COND_HI!r}</range>", "<range>0.3 0.29999</range>")
    model = load_osim(write_model(tmp_path, narrow, "narrow.osim"))
    assert tuple(np.asarray(model.muscles.cond_range[0, 1])) == (0.3 - 1e-5, 0.29999 + 1e-5)


# ---------------------------------------------------------------------------------------------
# inertia, duplicate bodies, coordinate defaults, missing files
# ---------------------------------------------------------------------------------------------

_BAD_INERTIA = FUNCTIONLESS_AXIS_MODEL.replace(
    '<Body name="link"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia>',
    '<Body name="link"><mass>1</mass><mass_center>0 -0.1 0</mass_center><inertia>0.01 0.01 0.05 0 0 0</inertia>',
).replace("<inertia>0.003 0.003 0.002 0 0 0</inertia>", "<inertia>0.003 0.003 -0.002 0 0 0</inertia>")


def test_impossible_inertias_load_with_one_warning(tmp_path):
    """OpenSim 4.6 (a Simbody release build) uses such inertias as given: so does mbjax, and says so."""
    path = write_model(tmp_path, _BAD_INERTIA, "inertia.osim")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_osim(path)
    msgs = [str(w.message) for w in caught if "inertia" in str(w.message)]
    assert len(msgs) == 1, msgs
    assert re.search(r"inertia.osim: 2 body\(ies\).*link \(principal moments .* triangle inequality\); "
                     r"tip \(not positive semidefinite", msgs[0])
    assert float(model.inertia[model.body_index("link"), 2, 2]) == 0.05
    assert float(model.inertia[model.body_index("tip"), 2, 2]) == -0.002


def test_valid_inertias_do_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_osim(write_model(tmp_path, FUNCTIONLESS_AXIS_MODEL, "fine.osim"))


@needs_mobl
def test_mobl_clavicle_and_scapula_inertias_are_named_once():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_osim(MOBL, ignore_wrapping=True)
    msgs = [str(w.message) for w in caught if "inertia" in str(w.message)]
    assert len(msgs) == 1 and "2 body(ies)" in msgs[0]
    assert "clavicle (principal moments" in msgs[0] and "scapula (principal moments" in msgs[0]


def test_massless_body_inertia_is_zeroed(tmp_path):
    """Body::getInertia: |mass| <= SignificantReal with a non-zero inertia -> zero inertia."""
    text = FUNCTIONLESS_AXIS_MODEL.replace('<Body name="link"><mass>1</mass>', '<Body name="link"><mass>0</mass>')
    with pytest.warns(UserWarning, match=r"massless body\(ies\) with non-zero inertia, set to zero as OpenSim does: link"):
        model = load_osim(write_model(tmp_path, text, "massless.osim"))
    assert np.all(np.asarray(model.inertia[model.body_index("link")]) == 0.0)


def test_duplicate_body_is_refused_naming_both_lines(tmp_path):
    """(OpenSim 4.6 renames the second to 'link_0' and frees it with a FreeJoint; mbjax refuses.)"""
    text = FUNCTIONLESS_AXIS_MODEL.replace(
        '        <Body name="tip">',
        '        <Body name="link"><mass>2</mass></Body>\n        <Body name="tip">')
    path = write_model(tmp_path, text, "duplicate.osim")
    first = text.splitlines().index(next(s for s in text.splitlines() if '<Body name="link">' in s)) + 1
    with pytest.raises(ValueError, match=rf"duplicate.osim:{first + 1}: <Body name='link'>: duplicate body name "
                                         rf"'link': also defined at line {first}"):
        load_osim(path)


_PIN = FUNCTIONLESS_AXIS_MODEL.replace(
    '<Coordinate name="c"><default_value>0.1</default_value><range>-2 2</range></Coordinate>',
    '<Coordinate name="c"><default_value>DEFAULT</default_value><range>-1 1</range>CLAMPED</Coordinate>')


@pytest.mark.parametrize(
    "default, clamped, refused",
    [
        ("nan", "", "<default_value> holds NaN"),
        ("nan", "<clamped>true</clamped>", "<default_value> holds NaN"),
        ("inf", "", "<default_value> must be finite, got inf"),
        ("1.5", "<clamped>true</clamped>", r"clamped coordinate 'c': <default_value> 1.5 is outside its <range>"),
        ("-1.0000001", "<clamped>true</clamped>", r"<default_value> -1.0000001 is outside"),  # beyond SqrtEps
        ("1.00000001", "<clamped>true</clamped>", None),  # within SimTK::SqrtEps of the range: OpenSim loads
        ("1.5", "", None),  # not clamped: OpenSim loads it
        ("1.5", "<locked>true</locked>", None),
    ],
)
def test_coordinate_default_value(tmp_path, default, clamped, refused):
    """Coordinate::extendFinalizeFromProperties: a clamped default must lie in (min - SqrtEps, max + SqrtEps)."""
    path = write_model(tmp_path, _PIN.replace("DEFAULT", default).replace("CLAMPED", clamped), "default.osim")
    if refused is None:
        model = load_osim(path)
        assert dict(model.osim.roles)["c"] in ("independent", "locked")
        return
    with pytest.raises(ValueError, match=rf"default.osim:\d+: <Coordinate name='c'>: .*{refused}"):
        load_osim(path)


def test_clamped_coordinate_with_reversed_range_is_refused(tmp_path):
    text = _PIN.replace("DEFAULT", "0").replace("CLAMPED", "<clamped>true</clamped>").replace(
        "<range>-1 1</range>", "<range>1 -1</range>")
    with pytest.raises(ValueError, match=r"<Coordinate name='c'>: clamped coordinate 'c': <range> 1 -1 has max < min"):
        load_osim(write_model(tmp_path, text, "reversed.osim"))


def test_missing_file_is_file_not_found(tmp_path):
    missing = str(tmp_path / "nowhere" / "model.osim")
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        load_osim(missing)


# ---------------------------------------------------------------------------------------------
# MovingPathPoint::getLocation evaluates its functions at the coordinate clamped to its range
# ---------------------------------------------------------------------------------------------


def test_moving_path_point_reads_its_coordinate_clamped(tmp_path):
    from mbjax.maps.simm_spline import pp_simm_spline
    from mbjax.muscles import moment_arms, moment_arms_autodiff

    from _osim_models import MOVING_MODEL

    model = load_osim(write_model(tmp_path, MOVING_MODEL, "moving.osim"))
    spline = pp_simm_spline([-1, 0, 1, 2], [-0.21, -0.2, -0.18, -0.19])
    for q in (-3.5, -3.0, np.nextafter(-3.0, -np.inf), 0.2, 3.0, np.nextafter(3.0, np.inf), 3.4):
        u = min(max(q, -3.0), 3.0)  # the location reads theta clamped to [-3, 3]; the link turns by theta
        r = _rot([0, 0, 1], q)
        pts = [np.array([0.1, 0.05, 0.0])]
        if COND_LO - 1e-5 <= q <= COND_HI + 1e-5:
            pts.append(r @ [0.06, -0.08, 0.02])
        pts.append(r @ [0.02 * u, float(spline(np.asarray(u))[0]), 0.01])
        ref = sum(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:]))
        assert abs(float(muscle_lengths(model, jnp.asarray([q]))[0]) - ref) < 1e-15, q
        arm = moment_arms(model, jnp.asarray([q]))
        assert abs(float(arm[0, 0] - moment_arms_autodiff(model, jnp.asarray([q]))[0, 0])) < 1e-15


def test_coordinate_without_range_gets_opensims_default(tmp_path):
    text = FUNCTIONLESS_AXIS_MODEL.replace(
        '<Coordinate name="c"><default_value>0.1</default_value><range>-2 2</range></Coordinate>',
        '<Coordinate name="c"><default_value>0.1</default_value></Coordinate>')
    model = load_osim(write_model(tmp_path, text, "norange.osim"))
    info = model.osim
    assert (float(info.lower[2]), float(info.upper[2])) == (-10.0, 10.0)  # Coordinate::constructProperties


@pytest.mark.parametrize("where", ["x", "y"])
def test_nan_in_a_function_is_refused_by_line(tmp_path, where):
    """A SimmSpline knot or value written as NaN (OpenSim reads it as a number; every pose would be
    NaN): refused naming the file, line and element."""
    from mbjax.models import model_path

    src = open(model_path("gait10dof18musc")).read()
    start = src.index('<SimmSpline name="function">')
    i = src.index(f"<{where}>", start) + len(f"<{where}>")
    j = src.index(" ", i + 1)
    bad = src[:i] + " nan" + src[j:]
    path = tmp_path / "nan_knot.osim"
    path.write_text(bad)
    line = bad[:start].count("\n") + 1
    with pytest.raises(ValueError, match=rf"nan_knot.osim:{line}: <SimmSpline name='function'>: <{where}> holds NaN"):
        load_osim(str(path))
