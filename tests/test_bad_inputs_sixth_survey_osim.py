"""Bad .osim (and ExternalLoads) inputs of the sixth survey: each is refused naming the problem and
where, or loaded as OpenSim 4.6 loads it with a warning naming the item; each fix's valid twin loads
quietly.  Small generated models and arm26 (straight paths); OpenSim cross-checks where installed."""

from __future__ import annotations


import numpy as np
import pytest

import mbjax
from mbjax.io import load_markers, load_osim, read_external_loads
from _osim_text import line_of, quietly, write_text  # noqa: E402

ARM26 = open(mbjax.models.model_path("arm26")).read()

_BODY = ('<Body name="{n}"><mass>{m}</mass><mass_center>0.01 -0.2 0.02</mass_center>'
         '<inertia>0.02 0.025 0.03 0.001 0.002 0.003</inertia></Body>')
_COORD = '<Coordinate name="{c}"><default_value>0.0</default_value><range>-2 2</range></Coordinate>'
_POF = ('<PhysicalOffsetFrame name="{n}"><socket_parent>{p}</socket_parent><translation>{t}</translation>'
        '<orientation>{o}</orientation></PhysicalOffsetFrame>')


def _joint(name, parent, child, coords="", kind="PinJoint", parent_t="0 -0.4 0"):
    return (f'<{kind} name="{name}"><socket_parent_frame>{parent}_off</socket_parent_frame>'
            f'<socket_child_frame>{child}_off</socket_child_frame><coordinates>{coords}</coordinates><frames>'
            + _POF.format(n=f"{parent}_off", p="/ground" if parent == "ground" else f"/bodyset/{parent}",
                          t=parent_t, o="0.1 0.2 0.3")
            + _POF.format(n=f"{child}_off", p=f"/bodyset/{child}", t="0 0.2 0", o="0 0 0")
            + f'</frames></{kind}>')


def _model(joints=None, constraints="", forces="", markers="", components="", version=40000):
    """A 4.x model: ground -> A (j1) -> B (j2), one element a line (errors name their lines)."""
    joints = joints if joints is not None else [
        _joint("j1", "ground", "A", _COORD.format(c="j1_c0"), parent_t="0 1 0"),
        _joint("j2", "A", "B", _COORD.format(c="j2_c0"))]
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" ?>', f'<OpenSimDocument Version="{version}"><Model name="gen">',
        '<Ground name="ground"></Ground><gravity>0 -9.80665 0</gravity>',
        f'<components>{components}</components>' if components else "",
        '<BodySet name="bodyset"><objects>', _BODY.format(n="A", m=1.0), _BODY.format(n="B", m=0.5),
        '</objects></BodySet>', '<JointSet name="jointset"><objects>', *joints, '</objects></JointSet>',
        f'<ConstraintSet name="constraintset"><objects>{constraints}</objects></ConstraintSet>',
        f'<ForceSet name="forceset"><objects>\n{forces}\n</objects></ForceSet>',
        f'<MarkerSet name="markerset"><objects>\n{markers}\n</objects></MarkerSet>',
        '</Model></OpenSimDocument>'])


def _write(tmp_path, text, name="m.osim"):
    return write_text(tmp_path, text, name)


_line, _quiet = line_of, quietly


def _arm26():
    return ARM26


def _arm26_model():
    with pytest.warns(UserWarning, match="wrapping ignored"):
        return mbjax.models.arm26(ignore_wrapping=True)


# -- <isDisabled> in a document of Version >= 30509: ignored, as OpenSim ignores it ------------------------

_COUPLER = ('\n<CoordinateCouplerConstraint name="cc"><isDisabled>true</isDisabled><coupled_coordinates_function>'
            '<LinearFunction><coefficients>0.5 0.1</coefficients></LinearFunction></coupled_coordinates_function>'
            '<independent_coordinate_names>j1_c0</independent_coordinate_names>'
            '<dependent_coordinate_name>j2_c0</dependent_coordinate_name></CoordinateCouplerConstraint>\n')
_SPRING = ('<SpringGeneralizedForce name="s"><isDisabled>true</isDisabled><coordinate>j1_c0</coordinate>'
           '<stiffness>10</stiffness><rest_length>0</rest_length><viscosity>1</viscosity></SpringGeneralizedForce>')


def test_is_disabled_in_a_4x_document_is_ignored_with_a_warning(tmp_path):
    text = _model(constraints=_COUPLER, forces=_SPRING)
    path = _write(tmp_path, text)
    with pytest.warns(UserWarning, match=rf"line {_line(text, '<isDisabled>')} <isDisabled> in "
                      r"<CoordinateCouplerConstraint name='cc'> \(OpenSim reads it only in documents older than "
                      r"Version 30509; in this Version 40000 document it is ignored") as rec:
        m = load_osim(path)
    assert any("<SpringGeneralizedForce name='s'>" in str(w.message) for w in rec)
    assert m.coordinate_names == ("j1_c0",)  # still coupled, as in OpenSim
    assert m.forces is not None and m.osim.disabled_forces == ()
    # the twin: an older document, where OpenSim converts it (the coupler and the spring are off)
    old = _quiet(load_osim, _write(tmp_path, text.replace('Version="40000"', 'Version="30508"'), "old.osim"))
    assert old.coordinate_names == ("j1_c0", "j2_c0") and old.osim.disabled_forces == ("s",)


def test_is_disabled_in_a_4x_document_agrees_with_opensim(tmp_path):
    opensim = pytest.importorskip("opensim")
    path = _write(tmp_path, _model(constraints=_COUPLER, forces=_SPRING))
    osm = opensim.Model(path)
    assert osm.getConstraintSet().get(0).get_isEnforced() and osm.getForceSet().get(0).get_appliesForce()
    with pytest.warns(UserWarning, match="isDisabled"):
        assert load_osim(path).coordinate_names == ("j1_c0",)


def test_is_disabled_of_an_external_force_in_a_4x_document_is_ignored(tmp_path):
    folder = mbjax.models.pipeline_path("gait2354_walk")
    src = open(f"{folder}/subject01_walk1_grf.xml").read().replace(
        "subject01_walk1_grf.mot", f"{folder}/subject01_walk1_grf.mot")
    text = src.replace('Version="20302"', 'Version="40000"').replace("<isDisabled> false", "<isDisabled> true", 1)
    path = _write(tmp_path, text, "grf.xml")
    with pytest.warns(UserWarning, match=rf"grf.xml:{_line(text, '<isDisabled> true')}: <isDisabled> in "
                      r"<ExternalForce name='right'> \(OpenSim reads it only in documents older than Version 30509"):
        loads = read_external_loads(path)
    assert [f.name for f in loads.forces] == ["right", "left"]
    old = _quiet(read_external_loads, _write(tmp_path, text.replace('Version="40000"', 'Version="20302"'), "o.xml"))
    assert [f.name for f in old.forces] == ["left"]


def test_is_disabled_of_an_actuator_in_a_4x_force_set_file_is_ignored(tmp_path):
    from mbjax.opensim.tools.so import read_reserves

    text = ('<?xml version="1.0"?><OpenSimDocument Version="40000"><ForceSet name="r"><objects>'
            '<CoordinateActuator name="res"><isDisabled>true</isDisabled><coordinate>r_elbow_flex</coordinate>'
            '</CoordinateActuator></objects></ForceSet></OpenSimDocument>')
    with pytest.warns(UserWarning, match=r"'res' \(<isDisabled>: not read in a document of Version 40000 >= 30509"):
        assert [r.name for r in read_reserves(_write(tmp_path, text, "fs.xml"))] == ["res"]  # OpenSim applies it
    old = text.replace('Version="40000"', 'Version="30000"')
    assert _quiet(read_reserves, _write(tmp_path, old, "old.xml")) == ()


# -- joints --------------------------------------------------------------------------------------------------

def test_weld_joint_with_a_coordinate_is_refused(tmp_path):
    joints = [_joint("j1", "ground", "A", _COORD.format(c="a"), kind="WeldJoint", parent_t="0 1 0"),
              _joint("j2", "A", "B", _COORD.format(c="j2_c0"))]
    text = _model(joints=joints)
    with pytest.raises(ValueError, match=rf"m.osim:{_line(text, '<WeldJoint')}: <WeldJoint name='j1'>: WeldJoint "
                       r"'j1' needs 0 coordinates, got \['a'\]"):
        load_osim(_write(tmp_path, text))
    joints[0] = _joint("j1", "ground", "A", "", kind="WeldJoint", parent_t="0 1 0")
    assert _quiet(load_osim, _write(tmp_path, _model(joints=joints), "ok.osim")).coordinate_names == ("j2_c0",)


def test_body_child_of_two_joints_names_both_joints(tmp_path):
    joints = [_joint("j1", "ground", "A", _COORD.format(c="j1_c0"), parent_t="0 1 0"),
              _joint("j2", "A", "B", _COORD.format(c="j2_c0")),
              _joint("j3", "ground", "B", _COORD.format(c="j3_c0"))]
    text = _model(joints=joints)
    j2, j3 = _line(text, '<PinJoint name="j2"'), _line(text, '<PinJoint name="j3"')
    with pytest.raises(ValueError, match=rf"m.osim:{j3}: <PinJoint name='j3'>: body 'B' is the child of two joints, "
                       rf"<PinJoint name='j2'> \(line {j2}\) and <PinJoint name='j3'> \(line {j3}\): a closed loop"):
        load_osim(_write(tmp_path, text))


# -- muscles and paths ---------------------------------------------------------------------------------------

def test_moving_path_point_without_its_coordinate_is_refused(tmp_path):
    arm = _arm26()
    fixed = ('<PathPoint name="BICshort-P3">\n\t\t\t\t\t\t\t\t\t<location> 0.01117 -0.07576 -0.01101</location>\n'
             '\t\t\t\t\t\t\t\t\t<body>r_humerus</body>\n\t\t\t\t\t\t\t\t</PathPoint>')
    assert fixed in arm
    moving = ('<MovingPathPoint name="BICshort-P3"><body>r_humerus</body><x_location><SimmSpline><x>0 1 2</x>'
              '<y>0.01 0.02 0.03</y></SimmSpline></x_location>{}</MovingPathPoint>')
    text = arm.replace(fixed, moving.format(""))
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, '<MovingPathPoint')}: <MovingPathPoint "
                       r"name='BICshort-P3'>: MovingPathPoint 'BICshort-P3' of muscle 'BICshort' has <x_location> but "
                       r"no <x_coordinate>"):
        load_osim(_write(tmp_path, text, "arm.osim"), ignore_wrapping=True)
    twin = arm.replace(fixed, moving.format("<x_coordinate>r_elbow_flex</x_coordinate>"))
    with pytest.warns(UserWarning, match="wrapping ignored"):
        load_osim(_write(tmp_path, twin, "ok.osim"), ignore_wrapping=True)


def test_force_without_a_name_is_refused(tmp_path):
    text = _arm26().replace('<Thelen2003Muscle name="BICshort">', "<Thelen2003Muscle>")
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, '<Thelen2003Muscle>')}: <Thelen2003Muscle>: "
                       r"<Thelen2003Muscle> without a name attribute"):
        load_osim(_write(tmp_path, text, "arm.osim"), ignore_wrapping=True)


_PATH = ('<GeometryPath name="path"><PathPointSet><objects>'
         '<PathPoint name="p1"><socket_parent_frame>/bodyset/A</socket_parent_frame><location>0 -0.1 0</location>'
         '</PathPoint><PathPoint name="p2"><socket_parent_frame>{}</socket_parent_frame><location>0 -0.05 0'
         '</location></PathPoint></objects></PathPointSet></GeometryPath>')
_PASSIVE = ('<Ligament name="lig">' + _PATH.format("/bodyset/B") + '<resting_length>0.1</resting_length>'
            '<pcsa_force>100</pcsa_force></Ligament>\n<PathSpring name="ps">' + _PATH.format("/bodyset/B")
            + '<resting_length>0.1</resting_length><stiffness>1000</stiffness><dissipation>0</dissipation>'
            '</PathSpring>\n<PathActuator name="act">' + _PATH.format("/bodyset/B") + '<optimal_force>10'
            '</optimal_force></PathActuator>')


def test_ligament_and_path_spring_are_force_elements(tmp_path):
    """Not muscles and not left out: force elements with paths of their own (model.forces), loaded
    without a warning; ``ignore_forces`` still leaves them out, by name."""
    text = _model(forces=_PASSIVE)
    path = _write(tmp_path, text)
    m = _quiet(load_osim, path)
    assert m.muscle_names == ("act",)
    assert m.osim.ignored == ()
    assert m.forces.names == ("lig", "ps")
    assert [type(e).__name__ for e in m.forces.elements] == ["Ligament", "PathSpring"]
    with pytest.warns(UserWarning, match=r"2 element\(s\) not modelled, as asked by ignore_forces"):
        m = load_osim(path, ignore_forces=("Ligament", "PathSpring"))
    assert m.forces is None
    assert m.muscle_names == ("act",) and len(m.osim.ignored) == 2


# -- markers -------------------------------------------------------------------------------------------------

def test_marker_fixed_other_than_true_or_false_is_refused(tmp_path):
    arm = _arm26()
    anchor = '<Marker name="r_acromion">'
    at = arm.index(anchor)
    text = arm[:at] + arm[at:].replace("<fixed>false</fixed>", "<fixed>maybe</fixed>", 1)
    model = _arm26_model()
    with pytest.raises(ValueError, match=rf"arm.osim:{_line(text, anchor)}: <Marker name='r_acromion'>: <fixed> must "
                       r"be true or false, got 'maybe'"):
        load_markers(_write(tmp_path, text, "arm.osim"), model)
    twin = text.replace("<fixed>maybe</fixed>", "<fixed>TRUE</fixed>")
    assert _quiet(load_markers, _write(tmp_path, twin, "ok.osim"), model).names[0] == "r_acromion"


def test_marker_with_both_body_and_socket_is_refused(tmp_path):
    arm = _arm26()
    both = "<body>base</body><socket_parent_frame>/bodyset/r_humerus</socket_parent_frame>"
    at = arm.index('<Marker name="r_acromion">')
    text = arm[:at] + arm[at:].replace("<body>base</body>", both, 1)
    with pytest.raises(ValueError, match=r"<Marker name='r_acromion'>: marker 'r_acromion' names two frames, <body> "
                       r"'base' and <socket_parent_frame> '/bodyset/r_humerus': keep one"):
        load_markers(_write(tmp_path, text, "arm.osim"), _arm26_model())


# -- offset frames in the model's <components> ---------------------------------------------------------------

_MODEL_FRAMES = (_POF.format(n="pof2", p="/pof", t="0.03 0.01 -0.02", o="0 0.4 -0.1")  # a chain, child listed first
                 + _POF.format(n="pof", p="/bodyset/B", t="0.01 -0.1 0.02", o="0.3 -0.2 0.5"))
_ON_FRAMES = ('<Marker name="mk"><socket_parent_frame>/pof2</socket_parent_frame><location>0.02 0.03 0.04</location>'
              '</Marker>')


def test_offset_frames_of_the_model_hold_markers_and_path_points(tmp_path):
    """Frames in the Model's <components> (a chain, the child listed first) place markers and path
    points as OpenSim places them: the same points in body B's frame (mbjax body frames are OpenSim's)."""
    from mbjax.muscles.paths import get_paths

    forces = '<PathActuator name="act">' + _PATH.format("/pof2") + "</PathActuator>"
    path = _write(tmp_path, _model(components=_MODEL_FRAMES, forces=forces, markers=_ON_FRAMES))
    model = _quiet(load_osim, path)
    markers = _quiet(load_markers, path, model)
    paths = get_paths(model)
    assert markers.body[0] == model.body_index("B") == paths.body[0][1]
    mine = np.asarray(markers.offset[0]), np.asarray(paths.location[0, 1])
    opensim = pytest.importorskip("opensim")
    osm = opensim.Model(path)
    state = osm.initSystem()
    frame, body = osm.getComponent("/pof2"), osm.getBodySet().get("B")
    for x, loc in zip(mine, ((0.02, 0.03, 0.04), (0.0, -0.05, 0.0))):
        ref = opensim.PhysicalFrame.safeDownCast(frame).findStationLocationInAnotherFrame(
            state, opensim.Vec3(*loc), body)
        np.testing.assert_allclose(x, [ref.get(k) for k in range(3)], atol=1e-14)
