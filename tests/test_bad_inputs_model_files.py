"""Bad ``.osim`` files: refused by name (file, line, element) or warned, never read silently wrong.

Inputs are the shipped models (4.x double pendulum, 3.x arm26) copied to ``tmp_path`` and edited.
"""

import os
import re
import warnings

import pytest

from mbjax.io import load_osim
from mbjax.opensim.model.osim_summary import summarize_osim
from _osim_text import replace_once as _sub, write_text as _write

DATA = os.path.join(os.path.dirname(__file__), "..", "mbjax", "models", "data")
PENDULUM = open(os.path.join(DATA, "double_pendulum.osim")).read()
ARM26 = open(os.path.join(DATA, "arm26.osim")).read()


def _no_warnings_load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_osim(path, **kwargs)


def test_good_files_load_without_new_warnings(tmp_path):
    _no_warnings_load(_write(tmp_path, PENDULUM))


def test_duplicate_names_are_refused_naming_both(tmp_path):
    arm = _sub(ARM26, '<Thelen2003Muscle name="TRIlat">', '<Thelen2003Muscle name="TRIlong">')
    with pytest.raises(ValueError, match=r"model\.osim:1146: <Thelen2003Muscle name='TRIlong'>: duplicate name "
                                         r"'TRIlong' in the ForceSet: also the name of <Thelen2003Muscle> at line 1047"):
        load_osim(_write(tmp_path, arm), ignore_wrapping=True)
    pend = _sub(PENDULUM, '<PinJoint name="pin2">', '<PinJoint name="pin1">')
    with pytest.raises(ValueError, match=r":266: <PinJoint name='pin1'>: duplicate name 'pin1' in the JointSet.*line 204"):
        load_osim(_write(tmp_path, pend))
    pend = _sub(PENDULUM, '<CoordinateActuator name="Torq2">', '<CoordinateActuator name="Torq1">')
    with pytest.raises(ValueError, match="duplicate name 'Torq1' in the ForceSet"):
        load_osim(_write(tmp_path, pend))
    marker = '<Marker name="m"><socket_parent_frame>/bodyset/rod1</socket_parent_frame><location>0 0 0</location></Marker>'
    pend = _sub(PENDULUM, '<MarkerSet name="markerset">\n\t\t\t<objects />',
                f'<MarkerSet name="markerset">\n\t\t\t<objects>{marker}{marker}</objects>')
    with pytest.raises(ValueError, match="<Marker name='m'>: duplicate name 'm' in the MarkerSet"):
        load_osim(_write(tmp_path, pend))


def test_duplicate_joint_names_in_a_3x_file_are_refused(tmp_path):
    arm = _sub(ARM26, '<CustomJoint name="r_elbow">', '<CustomJoint name="r_shoulder">')
    with pytest.raises(ValueError, match=r"<CustomJoint name='r_shoulder'>: duplicate joint name 'r_shoulder'"):
        load_osim(_write(tmp_path, arm), ignore_wrapping=True)


def test_unused_elements_are_listed_in_one_warning(tmp_path):
    pend = _sub(PENDULUM, "<BodySet", "<FooSetting>1</FooSetting><FooSet name='x'><objects><Body name='z'/></objects>"
                "</FooSet><BodySet")
    pend = _sub(pend, "<mass>1</mass>", "<FooProperty>2</FooProperty><mass>1</mass>")
    pend = _sub(pend, '<ControllerSet name="controllerset">\n\t\t\t<objects />',
                '<ControllerSet name="controllerset">\n\t\t\t<objects><PrescribedController name="pc"/></objects>')
    with pytest.warns(UserWarning) as record:
        load_osim(_write(tmp_path, pend))
    msgs = [str(w.message) for w in record if "not used" in str(w.message)]
    assert len(msgs) == 1
    msg = msgs[0]
    assert "model.osim: 4 element(s) not used" in msg
    assert re.search(r"line \d+ <FooSetting> in <Model>", msg) and re.search(r"line \d+ <FooSet> in <Model>", msg)
    assert re.search(r"line \d+ <FooProperty> in <Body name='rod1'>", msg)
    assert re.search(r"line \d+ <PrescribedController name='pc'> in the ControllerSet", msg)


def test_unused_elements_of_a_3x_file_are_warned(tmp_path):
    arm = _sub(ARM26, "<mass>1.864572</mass>", "<FooProp>1</FooProp><mass>1.864572</mass>")
    with pytest.warns(UserWarning, match=r"1 element\(s\) not used.*<FooProp> in <Body name='r_humerus'>"):
        load_osim(_write(tmp_path, arm), ignore_wrapping=True)


@pytest.mark.parametrize("flag, text", [("locked", "yes"), ("clamped", "maybe")])
def test_coordinate_flags_must_be_true_or_false(tmp_path, flag, text):
    pend = _sub(PENDULUM, f"<{flag}>false</{flag}>", f"<{flag}>{text}</{flag}>")
    with pytest.raises(ValueError, match=rf"model\.osim:211: <Coordinate name='q1'>: <{flag}> must be true or false, "
                                         rf"got '{text}'"):
        load_osim(_write(tmp_path, pend))


def test_coordinate_range_and_default(tmp_path):
    rng = "<range>-1.5707963300000001 1.5707963300000001</range>"
    pend = _sub(PENDULUM, rng, "<range>1.5 -1.5</range>")
    with pytest.raises(ValueError, match=r":211: <Coordinate name='q1'>: coordinate 'q1': <range> 1.5 -1.5 has max < min"):
        load_osim(_write(tmp_path, pend))
    pend = _sub(PENDULUM, "<default_value>-0.78539815999999996", "<default_value>2.5")
    with pytest.warns(UserWarning, match=r"outside their <range>.*q1 \(2.5 not in \[-1.5708, 1.5708\], line 211\)"):
        load_osim(_write(tmp_path, pend))
    pend = _sub(_sub(PENDULUM, "<default_value>-0.78539815999999996", "<default_value>2.5"),
                "<locked>false</locked>", "<locked>true</locked>")
    with pytest.warns(UserWarning, match=r"q1 \(locked at 2.5 not in"):
        load_osim(_write(tmp_path, pend))


def test_path_wrap_method_and_reversed_range_are_refused(tmp_path):
    arm = _sub(ARM26, "<method>hybrid</method>", "<method>bogus</method>")
    with pytest.raises(ValueError, match=r"model\.osim:1098: <PathWrap name='TRIlong-wrap-cylinder1'>: PathWrap "
                                         r"'TRIlong-wrap-cylinder1' of muscle 'TRIlong': unknown <method> 'bogus'; "
                                         r"valid methods are \('hybrid', 'midpoint', 'axial'\)"):
        load_osim(_write(tmp_path, arm))
    arm = _sub(ARM26, "<range> -1 -1</range>", "<range>3 1</range>")
    with pytest.raises(ValueError, match=r":1098: <PathWrap name='TRIlong-wrap-cylinder1'>: PathWrap "
                                         r"'TRIlong-wrap-cylinder1' of muscle 'TRIlong': <range> 3 1 is reversed"):
        load_osim(_write(tmp_path, arm))


def test_unmatched_ignore_names_are_warned(tmp_path):
    path = _write(tmp_path, PENDULUM)
    with pytest.warns(UserWarning, match=r"ignore_forces names \['HuntCrosleyForce'\], which no element of the file "
                                         r"has \(check the spelling; the classes of its ForceSet are "
                                         r"\['CoordinateActuator'\]\)"):
        load_osim(path, ignore_forces=("HuntCrosleyForce",))
    with pytest.warns(UserWarning, match=r"ignore_constraints names \['WeldConstraintt'\]"):
        load_osim(path, ignore_constraints=("WeldConstraintt",))


def test_massless_terminal_body_is_warned(tmp_path):
    text = PENDULUM.split('<Body name="rod2">')
    text[1] = _sub(text[1], "<mass>1</mass>", "<mass>0</mass>")
    with pytest.warns(UserWarning, match=r"mass matrix is singular.*body 'rod2' \(joint 'pin2', line 266: q2\)"):
        load_osim(_write(tmp_path, '<Body name="rod2">'.join(text)))


def test_missing_version_attribute_is_named(tmp_path):
    pend = _sub(PENDULUM, '<OpenSimDocument Version="40000">', "<OpenSimDocument>")
    with pytest.raises(ValueError, match=r"model\.osim:2: <OpenSimDocument>: the Version attribute of "
                                         r"<OpenSimDocument> is missing: OpenSim needs it"):
        load_osim(_write(tmp_path, pend))


@pytest.mark.parametrize("edit, why", [
    (("<mass>1.864572</mass>", "<mass>-1</mass>"), r":208: <Body name='r_humerus'>: mass must be finite and >= 0"),
    (('<Thelen2003Muscle name="TRIlat">', '<FooMuscle name="TRIlat">'),
     r":1146: <FooMuscle name='TRIlat'>: unsupported force"),
    (("<range>0 2.26892803</range>", "<range>2.26892803 0</range>"),
     r"<Coordinate name='r_elbow_flex'>: <range> 2.26893 0 has max < min"),
    (('<Thelen2003Muscle name="TRIlat">', '<Thelen2003Muscle name="TRIlong">'),
     r":1146: <Thelen2003Muscle name='TRIlong'>: duplicate name 'TRIlong' in the ForceSet \(also line 1047\)"),
])
def test_summary_warns_when_load_osim_refuses(tmp_path, edit, why):
    arm = _sub(ARM26, *edit)
    if "FooMuscle" in edit[1]:
        arm = _sub(arm, "</Thelen2003Muscle>\n\t\t\t\t<Thelen2003Muscle name=\"TRImed\">",
                   "</FooMuscle>\n\t\t\t\t<Thelen2003Muscle name=\"TRImed\">")
    path = _write(tmp_path, arm)
    with pytest.warns(UserWarning, match=r"model\.osim: load_osim refuses this file \(1 problem\(s\)\): .*" + why):
        s = summarize_osim(path)
    assert len(s.refusals) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert summarize_osim(os.path.join(DATA, "arm26.osim")).refusals == ()

