"""Bad .osim inputs that OpenSim 4.6 refuses (or loads differently) and mbjax read silently: each is
now refused naming the file, line and element, or loaded with a warning naming the item; each
fix's valid twin loads quietly.  Small generated 4.x models and edited copies of the shipped arm26
and gait10dof18musc models; OpenSim cross-checks where it is installed."""

from __future__ import annotations


import pytest

import mbjax
from mbjax.io import load_osim
from _osim_text import line_of, opensim_refuses, quietly, write_text  # noqa: E402

ARM26 = open(mbjax.models.model_path("arm26")).read()
GAIT10 = open(mbjax.models.model_path("gait10dof18musc")).read()

_BODY = ('<Body name="{n}"><mass>{m}</mass><mass_center>0.01 -0.2 0.02</mass_center>'
         '<inertia>0.02 0.025 0.03 0.001 0.002 0.003</inertia></Body>')
_COORD = '<Coordinate name="{c}"><default_value>0.0</default_value><range>-2 2</range></Coordinate>'
_POF = ('<PhysicalOffsetFrame name="{n}"><socket_parent>{p}</socket_parent><translation>{t}</translation>'
        '<orientation>0 0 0</orientation></PhysicalOffsetFrame>')


def _joint(name, parent, child, coord, parent_t="0 -0.4 0"):
    return (f'<PinJoint name="{name}"><socket_parent_frame>{parent}_off</socket_parent_frame>'
            f'<socket_child_frame>{child}_off</socket_child_frame><coordinates>{_COORD.format(c=coord)}'
            '</coordinates><frames>'
            + _POF.format(n=f"{parent}_off", p="/ground" if parent == "ground" else f"/bodyset/{parent}", t=parent_t)
            + _POF.format(n=f"{child}_off", p=f"/bodyset/{child}", t="0 0.2 0") + '</frames></PinJoint>')


def _model(forces="", a="A", b="B"):
    """A 4.x model: ground -> A (j1) -> B (j2), one element a line (errors name their lines)."""
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" ?>', '<OpenSimDocument Version="40000"><Model name="gen">',
        '<Ground name="ground"></Ground><gravity>0 -9.80665 0</gravity>',
        '<BodySet name="bodyset"><objects>', _BODY.format(n=a, m=1.0), _BODY.format(n=b, m=0.5),
        '</objects></BodySet>', '<JointSet name="jointset"><objects>',
        _joint("j1", "ground", a, "j1_c0", parent_t="0 1 0"), _joint("j2", a, b, "j2_c0"), '</objects></JointSet>',
        f'<ForceSet name="forceset"><objects>\n{forces}\n</objects></ForceSet>',
        '</Model></OpenSimDocument>'])


_ELBOW = '<CustomJoint name="r_elbow"'
_GROUND_BODY = '<Body name="ground"'
_HAMSTRINGS = '<Millard2012EquilibriumMuscle name="hamstrings_r"'
_TRI_WRAP = '<PathWrap name="TRIlong-wrap-cylinder1"'
_P2 = '<PathPoint name="p2"'


def _write(tmp_path, text, name="m.osim"):
    return write_text(tmp_path, text, name)


_line, _quiet = line_of, quietly


def _opensim_refuses(path):
    """Whether OpenSim 4.6 refuses the file (skipped where it is not installed)."""
    return opensim_refuses(path, realize=False)


def _point(name, frame, extra="", tag="PathPoint"):
    return (f'<{tag} name="{name}"><socket_parent_frame>{frame}</socket_parent_frame>'
            f'<location>0 -0.05 0</location>{extra}</{tag}>')


def _actuator(points, name="act"):
    return (f'<PathActuator name="{name}"><GeometryPath name="path"><PathPointSet><objects>{points}</objects>'
            '</PathPointSet></GeometryPath><optimal_force>10</optimal_force></PathActuator>')


_TWO_POINTS = _point("p1", "/bodyset/A") + _point("p2", "/bodyset/B")


# -- joints and bodies ---------------------------------------------------------------------------------------

def test_custom_joint_coordinate_no_axis_uses_is_refused(tmp_path):
    anchor = '<Coordinate name="r_elbow_flex">'
    extra = '<Coordinate name="extra_c"><default_value>0.3</default_value><range>-1 1</range></Coordinate>'
    text = ARM26.replace(anchor, extra + anchor, 1)
    path = _write(tmp_path, text, "arm.osim")
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, _ELBOW)}: <CustomJoint "
                       r"name='r_elbow'>: joint 'r_elbow': coordinate\(s\) \['extra_c'\] used by no TransformAxis"):
        load_osim(path, ignore_wrapping=True)
    # the twin: the coordinate named by an axis (a constant function of it) loads
    at = text.index(_ELBOW)
    twin = text[:at] + text[at:].replace("<coordinates></coordinates>", "<coordinates>extra_c</coordinates>", 1)
    with pytest.warns(UserWarning, match="wrapping ignored"):
        assert "extra_c" in load_osim(_write(tmp_path, twin, "ok.osim"), ignore_wrapping=True).coordinate_names


def test_body_named_ground_is_refused_naming_the_clash(tmp_path):
    text = _model(b="ground")
    with pytest.raises(NotImplementedError, match=rf"m.osim:{_line(text, _GROUND_BODY)}: <Body "
                       r"name='ground'>: a Body named 'ground' .* rename the body"):
        load_osim(_write(tmp_path, text))
    assert "B" in _quiet(load_osim, _write(tmp_path, _model(), "ok.osim")).body_names


@pytest.mark.parametrize("mass", ["<mass></mass>", "<mass> </mass>", ""])
def test_empty_or_absent_mass_is_refused_by_body(tmp_path, mass):
    text = _model().replace("<mass>1.0</mass>", mass, 1)
    where = "<mass>" if mass else '<Body name="A">'
    with pytest.raises(ValueError, match=rf"m.osim:{_line(text, where)}: <{'mass' if mass else 'Body name=.A.'}>: "
                       rf"body 'A' has (an empty|no) <mass> \(OpenSim refuses it too"):
        load_osim(_write(tmp_path, text))
    assert _quiet(load_osim, _write(tmp_path, _model().replace("<mass>1.0</mass>", "<mass>2</mass>", 1), "ok.osim"))


def test_empty_mass_agrees_with_opensim(tmp_path):
    assert _opensim_refuses(_write(tmp_path, _model().replace("<mass>1.0</mass>", "<mass></mass>", 1)))


# -- functions -----------------------------------------------------------------------------------------------

_LINEAR = "<LinearFunction>\n\t\t\t\t\t\t\t\t\t\t\t<coefficients> 1 0</coefficients>"


def _elbow_function(new):
    at = ARM26.index('<CustomJoint name="r_elbow"')
    return ARM26[:at] + ARM26[at:].replace(_LINEAR + "\n\t\t\t\t\t\t\t\t\t\t</LinearFunction>", new, 1)


def test_gcv_spline_without_half_order_is_refused(tmp_path):
    gcv = '<GCVSpline name="f">{}<x>-1 0 1 2 3 4</x><y>-1 0 1 2 3 4</y></GCVSpline>'
    text = _elbow_function(gcv.format("<degree>4</degree>"))
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, '<GCVSpline')}: <GCVSpline name='f'>: GCVSpline "
                       r"without <half_order> \(OpenSim refuses it too"):
        load_osim(_write(tmp_path, text, "arm.osim"), ignore_wrapping=True)
    twin = _elbow_function(gcv.format("<half_order>3</half_order><degree>4</degree>"))
    with pytest.warns(UserWarning, match=rf"element\(s\) not used.*line {_line(twin, '<degree>')} <degree> in "
                      r"<GCVSpline name='f'> \(line \d+; not a property of GCVSpline"):
        load_osim(_write(tmp_path, twin, "ok.osim"), ignore_wrapping=True)


def test_unknown_child_of_a_function_is_listed_as_not_used(tmp_path):
    text = _elbow_function(_LINEAR + "<slope>2</slope></LinearFunction>")
    with pytest.warns(UserWarning, match=rf"arm.osim: 1 element\(s\) not used.*line {_line(text, '<slope>')} <slope> "
                      r"in <LinearFunction> \(line \d+; not a property of LinearFunction"):
        load_osim(_write(tmp_path, text, "arm.osim"), ignore_wrapping=True)


def test_gcv_spline_without_half_order_agrees_with_opensim(tmp_path):
    gcv = '<GCVSpline name="f"><x>-1 0 1 2 3 4</x><y>-1 0 1 2 3 4</y></GCVSpline>'
    assert _opensim_refuses(_write(tmp_path, _elbow_function(gcv), "arm.osim"))


# -- muscles -------------------------------------------------------------------------------------------------

_AFL = '<ActiveForceLengthCurve name="hamstrings_r_ActiveForceLengthCurve">'


@pytest.mark.parametrize("edit, message", [
    ((_AFL, _AFL + "<min_norm_active_fiber_length>1.2</min_norm_active_fiber_length>"),
     r"ActiveForceLengthCurve.min_norm_active_fiber_length = 1.2 must be below transition_norm_fiber_length = 0.73"),
    ((_AFL, _AFL + "<max_norm_active_fiber_length>0.9</max_norm_active_fiber_length>"),
     r"ActiveForceLengthCurve.max_norm_active_fiber_length = 0.9 must be > 1"),
    (("<concentric_slope_near_vmax>0.25</concentric_slope_near_vmax>",
      "<concentric_slope_near_vmax>2</concentric_slope_near_vmax>"),
     r"ForceVelocityCurve.concentric_slope_near_vmax = 2.0 must be <= 1"),
])
def test_millard_curve_orderings_opensim_refuses_are_refused(tmp_path, edit, message):
    assert edit[0] in GAIT10
    text = GAIT10.replace(*edit, 1)
    with pytest.raises(ValueError, match=rf"gait.osim:{_line(text, _HAMSTRINGS)}"
                       rf": <Millard2012EquilibriumMuscle name='hamstrings_r'>: {message} \(OpenSim 4.6 refuses it too\)"):
        load_osim(_write(tmp_path, text, "gait.osim"))


def test_millard_curve_twin_loads():
    from mbjax.muscles.parameter_rules import MILLARD, parameter_problems

    ok = {"ActiveForceLengthCurve.min_norm_active_fiber_length": 0.0,
          "ForceVelocityCurve.concentric_slope_near_vmax": 1.0}
    assert parameter_problems(["m"], [MILLARD], {"m": ok}) == []


_THELEN = ('<Thelen2003Muscle name="th"><GeometryPath name="path"><PathPointSet><objects>' + _TWO_POINTS
           + '</objects></PathPointSet></GeometryPath><max_isometric_force>100</max_isometric_force>'
           '<optimal_fiber_length>0.1</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>'
           '{}</Thelen2003Muscle>')


def test_thelen_minimum_activation_above_min_control_is_refused(tmp_path):
    text = _model(_THELEN.format("<minimum_activation>0.3</minimum_activation>"))
    with pytest.raises(ValueError, match=rf"m.osim:{_line(text, '<Thelen2003Muscle')}: <Thelen2003Muscle name='th'>: "
                       r"muscle 'th': min_control 0.01 \(the default\) is below minimum_activation 0.3 \(OpenSim 4.6 "
                       r"refuses it too"):
        load_osim(_write(tmp_path, text))
    twin = _model(_THELEN.format("<min_control>0.3</min_control><minimum_activation>0.3</minimum_activation>"))
    assert _quiet(load_osim, _write(tmp_path, twin, "ok.osim")).muscle_names == ("th",)


def test_thelen_min_control_zero_of_an_old_document_is_dropped_as_opensim_drops_it():
    from mbjax.opensim.model.osim_older_documents import MIN_CONTROL_VERSION

    assert MIN_CONTROL_VERSION == 30513
    with pytest.warns(UserWarning, match="wrapping ignored"):  # arm26 (Version 20303) has <min_control>0
        assert len(load_osim(mbjax.models.model_path("arm26"), ignore_wrapping=True).muscle_names) == 6


def test_thelen_ignore_tendon_compliance_is_warned_by_muscle(tmp_path):
    text = _model(_THELEN.format("<ignore_tendon_compliance>true</ignore_tendon_compliance>"))
    with pytest.warns(UserWarning, match=rf"1 Thelen2003Muscle\(s\) with ignore_tendon_compliance=true, which OpenSim "
                      rf"4.6 refuses at initSystem.*m.osim:{_line(text, '<Thelen2003Muscle')}: <Thelen2003Muscle "
                      r"name='th'>"):
        load_osim(_write(tmp_path, text))


def test_thelen_options_agree_with_opensim(tmp_path):
    bad = _model(_THELEN.format("<minimum_activation>0.3</minimum_activation>"))
    rigid = _model(_THELEN.format("<ignore_tendon_compliance>true</ignore_tendon_compliance>"))
    assert _opensim_refuses(_write(tmp_path, bad)) and _opensim_refuses(_write(tmp_path, rigid, "r.osim"))


# -- force elements ------------------------------------------------------------------------------------------

def test_empty_expression_is_refused_by_name(tmp_path):
    force = ('<ExpressionBasedCoordinateForce name="ebf"><coordinate>j1_c0</coordinate><expression></expression>'
             '</ExpressionBasedCoordinateForce>')
    text = _model(force)
    with pytest.raises(ValueError, match=rf"m.osim:{_line(text, '<ExpressionBasedCoordinateForce')}: "
                       r"<ExpressionBasedCoordinateForce name='ebf'>: ExpressionBasedCoordinateForce 'ebf': "
                       r"<expression> is empty \(OpenSim refuses it too"):
        load_osim(_write(tmp_path, text))
    assert _quiet(load_osim, _write(tmp_path, _model(force.replace("<expression></expression>", "")), "ok.osim"))


# -- path wraps ----------------------------------------------------------------------------------------------

def _trilong_range(new):
    at = ARM26.index('<PathWrap name="TRIlong-wrap-cylinder1">')
    return ARM26[:at] + ARM26[at:].replace("<range> -1 -1</range>", f"<range>{new}</range>", 1)


def test_path_wrap_range_past_the_path_is_refused(tmp_path):
    text = _trilong_range("7 9")
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, _TRI_WRAP)}: "
                       r"<PathWrap name='TRIlong-wrap-cylinder1'>: PathWrap 'TRIlong-wrap-cylinder1' of muscle "
                       r"'TRIlong': <range> 7 9 runs past the path's 5 points"):
        load_osim(_write(tmp_path, text, "arm.osim"))


def test_path_wrap_range_starting_past_the_path_is_left_out_with_a_warning(tmp_path):
    text = _trilong_range("6 -1")
    with pytest.warns(UserWarning, match=rf"arm.osim:{_line(text, _TRI_WRAP)}: "
                      r"<PathWrap name='TRIlong-wrap-cylinder1'>: PathWrap 'TRIlong-wrap-cylinder1' of muscle "
                      r"'TRIlong': <range> 6 -1 starts past the path's 5 points.*left out"):
        load_osim(_write(tmp_path, text, "arm.osim"))


# -- references and names OpenSim refuses --------------------------------------------------------------------

def test_bare_name_socket_is_warned(tmp_path):
    text = _model(_actuator(_point("p1", "/bodyset/A") + _point("p2", "B")))
    with pytest.warns(UserWarning, match=rf"m.osim: 1 reference\(s\) or name\(s\) that OpenSim 4.6 refuses.*line "
                      rf"{_line(text, _P2)} <PathPoint name='p2'>: socket 'B' is a bare body "
                      r"name.*write the path /bodyset/B"):
        load_osim(_write(tmp_path, text))
    assert _quiet(load_osim, _write(tmp_path, _model(_actuator(_TWO_POINTS)), "ok.osim")).muscle_names == ("act",)


def test_name_with_a_space_is_warned(tmp_path):
    text = _model(_actuator(_TWO_POINTS, name="a ct"))
    with pytest.warns(UserWarning, match=rf"line {_line(text, '<PathActuator')} <PathActuator name='a ct'>: name "
                      r"'a ct' holds ' ', which OpenSim refuses"):
        load_osim(_write(tmp_path, text))


_CPP = '<range>-1 1</range>'


@pytest.mark.parametrize("reference, message", [
    ("<socket_coordinate>j2_c0</socket_coordinate>", r"<socket_coordinate> 'j2_c0' is a bare coordinate name"),
    ("<coordinate>/jointset/j2/j2_c0</coordinate>", r"<coordinate> '/jointset/j2/j2_c0' is the 3.x tag"),
])
def test_conditional_path_point_reference_opensim_refuses_is_warned(tmp_path, reference, message):
    cpp = _point("c", "/bodyset/B", reference + _CPP, tag="ConditionalPathPoint")
    text = _model(_actuator(_TWO_POINTS + cpp))
    with pytest.warns(UserWarning, match=rf"OpenSim 4.6 refuses.*line {_line(text, '<ConditionalPathPoint')} "
                      rf"<ConditionalPathPoint name='c'>: {message}"):
        load_osim(_write(tmp_path, text))
    twin = _model(_actuator(_TWO_POINTS + _point("c", "/bodyset/B", "<socket_coordinate>/jointset/j2/j2_c0"
                                                 "</socket_coordinate>" + _CPP, tag="ConditionalPathPoint")))
    _quiet(load_osim, _write(tmp_path, twin, "ok.osim"))


def _mpp(y_coordinate):
    spline = "<SimmSpline><x>-1 0 1</x><y>0.01 0.02 0.04</y></SimmSpline>"
    return ('<MovingPathPoint name="mp"><socket_parent_frame>/bodyset/B</socket_parent_frame>'
            f'<x_location>{spline}</x_location><y_location>{spline}</y_location>'
            '<socket_x_coordinate>/jointset/j2/j2_c0</socket_x_coordinate>'
            f'<socket_y_coordinate>{y_coordinate}</socket_y_coordinate>'
            '<socket_z_coordinate>/jointset/j2/j2_c0</socket_z_coordinate></MovingPathPoint>')


def test_moving_path_point_of_two_coordinates_is_refused(tmp_path):
    text = _model(_actuator(_TWO_POINTS + _mpp("/jointset/j1/j1_c0")))
    with pytest.raises(ValueError, match=rf"m.osim:{_line(text, '<MovingPathPoint')}: <MovingPathPoint name='mp'>: "
                       r"MovingPathPoint 'mp' of muscle 'act' reads more than one coordinate \(x: 'j2_c0', y: "
                       r"'j1_c0'\); OpenSim refuses it too"):
        load_osim(_write(tmp_path, text))
    _quiet(load_osim, _write(tmp_path, _model(_actuator(_TWO_POINTS + _mpp("/jointset/j2/j2_c0"))), "ok.osim"))


def test_references_and_names_agree_with_opensim(tmp_path):
    cases = [_model(_actuator(_point("p1", "/bodyset/A") + _point("p2", "B"))),
             _model(_actuator(_TWO_POINTS, name="a ct")),
             _model(_actuator(_TWO_POINTS + _mpp("/jointset/j1/j1_c0")))]
    assert all(_opensim_refuses(_write(tmp_path, t, f"c{k}.osim")) for k, t in enumerate(cases))
    assert not _opensim_refuses(_write(tmp_path, _model(_actuator(_TWO_POINTS)), "ok.osim"))

