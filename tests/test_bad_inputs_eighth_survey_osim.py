"""Bad .osim inputs of the eighth outside survey: files OpenSim 4.6 refuses (or reads differently)
that mbjax read silently.  Each is now refused naming the file, line and element, read as OpenSim
reads it, or loaded with a warning naming the item; each fix's valid twin loads quietly.  Small
generated 4.x models (a pin pendulum with a second joint of any kind); whether OpenSim 4.6 refuses
the same file is checked live where it is installed (``_opensim_refuses``)."""

from __future__ import annotations

import numpy as np
import pytest

from mbjax.io import load_osim
from _osim_text import line_of, opensim_refuses, quietly, write_text  # noqa: E402

_BODY = ('<Body name="{n}"><mass>{m}</mass><mass_center>0.02 -0.2 0.01</mass_center>'
         '<inertia>0.02 0.015 0.03 0.001 -0.002 0.0015</inertia></Body>')
_POF = ('<PhysicalOffsetFrame name="{n}"><socket_parent>{p}</socket_parent><translation>{t}</translation>'
        '<orientation>{o}</orientation></PhysicalOffsetFrame>')


def _coords(names, values):
    return "".join(f'<Coordinate name="{c}"><default_value>{v}</default_value><range>-2 2</range></Coordinate>'
                   for c, v in zip(names, values))


def pendulum(forces="", joint="BallJoint", coords=("q2", "q3", "q4"), values=(0.1, -0.3, 0.5),
             parent_socket="/bodyset/rod1", frames_extra="", actuators=""):
    """A 4.x model: ground -(PinJoint q1)-> rod1 -(``joint`` with ``coords``)-> rod2, one element a line."""
    pin = ('<PinJoint name="pin1"><socket_parent_frame>ground_off</socket_parent_frame>'
           f'<socket_child_frame>rod1_off</socket_child_frame><coordinates>{_coords(["q1"], [0.3])}</coordinates>'
           '<frames>' + _POF.format(n="ground_off", p="/ground", t="0 1.1 0", o="0 0 0")
           + _POF.format(n="rod1_off", p="/bodyset/rod1", t="0 0.5 0", o="0 0 0") + '</frames></PinJoint>')
    second = (f'<{joint} name="j2"><socket_parent_frame>rod1_b</socket_parent_frame>'
              f'<socket_child_frame>rod2_off</socket_child_frame><coordinates>{_coords(coords, values)}</coordinates>'
              '<frames>\n' + frames_extra
              + _POF.format(n="rod1_b", p=parent_socket, t="0 -0.5 0.05", o="0.1 0.2 0.3") + '\n'
              + _POF.format(n="rod2_off", p="/bodyset/rod2", t="0 0.5 0", o="0 0 0") + f'\n</frames></{joint}>')
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" ?>', '<OpenSimDocument Version="40000"><Model name="gen">',
        '<Ground name="ground"></Ground><gravity>0 -9.80665 0</gravity>',
        '<BodySet name="bodyset"><objects>', _BODY.format(n="rod1", m=1.0), _BODY.format(n="rod2", m=1.3),
        '</objects></BodySet>', '<JointSet name="jointset"><objects>', pin, second, '</objects></JointSet>',
        f'<ForceSet name="forceset"><objects>\n{forces}\n</objects></ForceSet>',
        '</Model></OpenSimDocument>'])


def _opensim_refuses(path):
    """Whether OpenSim 4.6 refuses the file (skipped where it is not installed)."""
    return opensim_refuses(path, realize=True)


# -- expressions: functions OpenSim 4.6's Lepton refuses ------------------------------------------------------

def _ebcf(expr, coordinate="q1"):
    return (f'<ExpressionBasedCoordinateForce name="f"><coordinate>{coordinate}</coordinate>'
            f'<expression>{expr}</expression></ExpressionBasedCoordinateForce>')


@pytest.mark.parametrize("expr", ["floor(q)", "ceil(q)*2", "select(q, 1, 2)", "atan2(q, 1)"])
def test_expression_functions_opensim_refuses_are_refused(tmp_path, expr):
    text = pendulum(_ebcf(expr), joint="PinJoint", coords=("q2",), values=(0.1,))
    path = write_text(tmp_path, text)
    fn = expr.split("(")[0]
    with pytest.raises(NotImplementedError, match=rf"model.osim:{line_of(text, '<ExpressionBased')}: "
                                                  rf"<ExpressionBasedCoordinateForce name='f'>.*function '{fn}' is "
                                                  "not in OpenSim 4.6's Lepton"):
        load_osim(path)


@pytest.mark.parametrize("expr", ["step(q)", "delta(q)", "min(q,1)", "max(q,1)", "abs(q)", "square(q)", "cube(q)",
                                  "recip(q+3)", "sqrt(q+2)", "log(q+2)", "sinh(q)", "tanh(q)", "asin(q/9)",
                                  "erf(q)", "erfc(q)", "sec(q)", "csc(q+1)", "q^-1", "q^0.5", "-q^2", "1e-3*q",
                                  "1E2*q"])
def test_expression_functions_opensim_reads_still_load(tmp_path, expr):
    quietly(load_osim, write_text(tmp_path, pendulum(_ebcf(expr), joint="PinJoint", coords=("q2",),
                                                     values=(0.1,))))


# -- references OpenSim cannot connect ----------------------------------------------------------------------

_NESTED = ('<PhysicalOffsetFrame name="a"><socket_parent>/bodyset/rod1</socket_parent>'
           '<translation>0 -0.5 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>\n')


def test_joint_offset_frame_with_bare_sibling_parent_is_refused(tmp_path):
    text = pendulum(joint="PinJoint", coords=("q2",), values=(0.1,), parent_socket="a", frames_extra=_NESTED)
    path = write_text(tmp_path, text)
    line = line_of(text, '<PhysicalOffsetFrame name="rod1_b"')
    with pytest.raises(ValueError, match=rf"model.osim:{line}: "
                                         r"<PhysicalOffsetFrame name='rod1_b'>.*bare frame name.*\.\./a"):
        load_osim(path)
    assert _opensim_refuses(path)
    twin = write_text(tmp_path, pendulum(joint="PinJoint", coords=("q2",), values=(0.1,), parent_socket="../a",
                                         frames_extra=_NESTED), "twin.osim")
    quietly(load_osim, twin)


def _moving_point_model(sockets):
    mp = ('<MovingPathPoint name="mp"><socket_parent_frame>/bodyset/rod1</socket_parent_frame><x_location>'
          '<SimmSpline><x>-1 0 1</x><y>0.05 0.08 0.02</y></SimmSpline></x_location>'
          + "".join(f'<socket_{c}_coordinate>/jointset/j2/q2</socket_{c}_coordinate>' for c in sockets)
          + '</MovingPathPoint>')
    act = ('<PathActuator name="act"><GeometryPath name="path"><PathPointSet><objects>'
           '<PathPoint name="p0"><socket_parent_frame>/ground</socket_parent_frame><location>0.05 1 0.02</location>'
           f'</PathPoint>\n{mp}\n<PathPoint name="p2"><socket_parent_frame>/bodyset/rod2</socket_parent_frame>'
           '<location>0 0.1 0</location></PathPoint></objects></PathPointSet></GeometryPath>'
           '<optimal_force>10</optimal_force></PathActuator>')
    return pendulum(act, joint="PinJoint", coords=("q2",), values=(0.1,))


@pytest.mark.parametrize("sockets", ["x", "xy"])
def test_moving_path_point_without_all_three_coordinate_sockets_is_refused(tmp_path, sockets):
    text = _moving_point_model(sockets)
    path = write_text(tmp_path, text)
    with pytest.raises(ValueError, match=rf"model.osim:{line_of(text, '<MovingPathPoint')}: <MovingPathPoint "
                                         r"name='mp'>.*no (<socket_y_coordinate>, )?<socket_z_coordinate>.*all three"):
        load_osim(path)
    assert _opensim_refuses(path)


def test_moving_path_point_with_all_three_sockets_loads(tmp_path):
    path = write_text(tmp_path, _moving_point_model("xyz"))
    quietly(load_osim, path)
    assert not _opensim_refuses(path)


# -- property defaults OpenSim uses -------------------------------------------------------------------------

def _custom_joint(function):
    axes = (f'<TransformAxis name="rotation1"><coordinates>q2</coordinates><axis>0 0 1</axis>{function}'
            '</TransformAxis>'
            + "".join(f'<TransformAxis name="{n}"><coordinates></coordinates><axis>{a}</axis></TransformAxis>'
                      for n, a in (("rotation2", "1 0 0"), ("rotation3", "0 1 0"), ("translation1", "1 0 0"),
                                   ("translation2", "0 1 0"), ("translation3", "0 0 1"))))
    text = pendulum(joint="CustomJoint", coords=("q2",), values=(0.2,))
    return text.replace("</CustomJoint>", f"<SpatialTransform>{axes}</SpatialTransform></CustomJoint>")


def test_linear_function_without_coefficients_is_the_identity(tmp_path):
    """OpenSim's LinearFunction defaults its coefficients to ``1 0`` (checked live: the same body
    transforms as an explicit ``1 0``)."""
    import mbjax

    bare = quietly(load_osim, write_text(tmp_path, _custom_joint('<LinearFunction name="function"></LinearFunction>')))
    explicit = quietly(load_osim, write_text(tmp_path, _custom_joint(
        '<LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction>'), "explicit.osim"))
    q = np.array([0.3, -0.7])
    np.testing.assert_array_equal(np.asarray(mbjax.body_poses(bare, q)), np.asarray(mbjax.body_poses(explicit, q)))
    assert bare.osim.motion_types == explicit.osim.motion_types


# -- a disabled muscle ----------------------------------------------------------------------------------------

def _thelen(name, applies):
    return (f'<Thelen2003Muscle name="{name}"><appliesForce>{applies}</appliesForce><GeometryPath name="path">'
            '<PathPointSet><objects><PathPoint name="p0"><socket_parent_frame>/ground</socket_parent_frame>'
            '<location>0.05 1 0.02</location></PathPoint><PathPoint name="p1"><socket_parent_frame>/bodyset/rod2'
            '</socket_parent_frame><location>0 0.1 0</location></PathPoint></objects></PathPointSet></GeometryPath>'
            '<max_isometric_force>1000</max_isometric_force><optimal_fiber_length>0.6</optimal_fiber_length>'
            '<tendon_slack_length>0.5</tendon_slack_length></Thelen2003Muscle>')


def test_muscle_that_applies_no_force_is_left_out_with_a_warning(tmp_path):
    """OpenSim applies no force of a muscle with appliesForce false (its tools and forward dynamics
    skip it), so mbjax leaves it out of ``model.muscles``: ``muscle_forces``, ``moment_arms``
    and static optimization never see it."""
    import mbjax

    text = pendulum(_thelen("off", "false") + "\n" + _thelen("on", "true"), joint="PinJoint", coords=("q2",),
                    values=(0.1,))
    line = line_of(text, '<Thelen2003Muscle name="off"')
    with pytest.warns(UserWarning, match=rf"model.osim:{line}: "
                                         r"<Thelen2003Muscle name='off'>"):
        model = load_osim(write_text(tmp_path, text))
    assert model.muscle_names == ("on",)
    assert model.osim.disabled_forces == ("off",)
    forces = mbjax.muscle_forces(model, np.array([0.3, 0.1]), np.zeros(2), np.array([0.5]))
    assert np.shape(forces)[-1] == 1


# -- coordinate forces on joints whose speeds are angular velocities --------------------------------------------

_SGF = ('<SpringGeneralizedForce name="f"><coordinate>{c}</coordinate><stiffness>5</stiffness>'
        '<rest_length>0.1</rest_length><viscosity>0.3</viscosity></SpringGeneralizedForce>')


ANGULAR_VELOCITY_FORCES = [
    ("BallJoint", ("q2", "q3", "q4"), _SGF.format(c="q3")),
    ("FreeJoint", ("q2", "q3", "q4", "x", "y", "z"), _ebcf("-2*q-0.1*qdot", "q3")),
    ("EllipsoidJoint", ("q2", "q3", "q4"), '<CoordinateLimitForce name="f"><coordinate>q2</coordinate><upper_stiffness>3'
                                           '</upper_stiffness><upper_limit>5</upper_limit><lower_stiffness>4'
                                           '</lower_stiffness><lower_limit>-5</lower_limit><damping>0.2</damping>'
                                           '<transition>2</transition></CoordinateLimitForce>')]


def angular_velocity_force_model(joint, coords, force):
    """The pendulum with ``force`` on an angle of its ``joint`` (OpenSim applies it on the angular velocity)."""
    text = pendulum(force, joint=joint, coords=coords, values=(0.1, -0.3, 0.5, 0, 0, 0)[:len(coords)])
    if joint == "EllipsoidJoint":
        text = text.replace("</EllipsoidJoint>", "<radii_x_y_z>0.1 0.2 0.3</radii_x_y_z></EllipsoidJoint>")
    return text


@pytest.mark.parametrize("joint, coords, force", ANGULAR_VELOCITY_FORCES)
def test_coordinate_force_on_an_angular_velocity_speed_loads(tmp_path, joint, coords, force):
    """OpenSim applies these on the mobility u (an angular-velocity component): read, and acting on that
    speed (equal to OpenSim's mobility forces in tests/validation/test_forces_opensim.py; the power check
    in tests/test_opensim_speeds.py)."""
    model = quietly(load_osim, write_text(tmp_path, angular_velocity_force_model(joint, coords, force)))
    assert model.forces is not None and model.forces.elements[0].coordinates.speed_rows


def test_coordinate_force_on_a_ball_angle_beside_a_locked_one_is_refused(tmp_path):
    """With another angle of the joint locked, OpenSim's angular-velocity speed has no map to q here:
    refused naming the joint and the locked angle, never a silent difference."""
    text = pendulum(_SGF.format(c="q3"))
    text = text.replace('<Coordinate name="q4"><default_value>0.5</default_value>',
                        '<Coordinate name="q4"><default_value>0.5</default_value><locked>true</locked>')
    assert "<locked>true</locked>" in text
    with pytest.raises(NotImplementedError, match=r"force on 'q3', a rotation coordinate of the BallJoint 'j2', whose "
                                                  r"angles \['q4'\] are not in q"):
        load_osim(write_text(tmp_path, text))


def test_coordinate_force_on_a_free_joint_translation_loads(tmp_path):
    """A FreeJoint's translation speeds are the coordinates' q̇: such a force is read."""
    text = pendulum(_SGF.format(c="x"), joint="FreeJoint", coords=("q2", "q3", "q4", "x", "y", "z"),
                    values=(0.1, -0.3, 0.5, 0, 0, 0))
    quietly(load_osim, write_text(tmp_path, text))


_CLF = ('<CoordinateLimitForce name="lim"><coordinate>q1</coordinate><upper_stiffness>2</upper_stiffness>'
        '<upper_limit>{up}</upper_limit><lower_stiffness>3</lower_stiffness><lower_limit>{low}</lower_limit>'
        '<damping>0.01</damping><transition>5</transition></CoordinateLimitForce>')


def test_limit_force_with_limits_the_wrong_way_round_is_refused_by_line(tmp_path):
    """OpenSim loads it and applies both limits' springs inside the gap; mbjax refuses it by file and line."""
    text = pendulum(_CLF.format(up=-20, low=30), joint="PinJoint", coords=("q2",), values=(0.1,))
    with pytest.raises(ValueError, match=rf"model.osim:{line_of(text, '<CoordinateLimitForce')}: .*'lim': "
                                         r"lower_limit 30 is above upper_limit -20.*swap the limits"):
        load_osim(write_text(tmp_path, text))
    quietly(load_osim, write_text(tmp_path, pendulum(_CLF.format(up=30, low=-20), joint="PinJoint", coords=("q2",),
                                                     values=(0.1,))))
