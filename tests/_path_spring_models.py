"""A small 4.x model with OpenSim ``Ligament`` and ``PathSpring`` forces, for tests/test_path_springs.py
and tests/validation/test_path_springs_opensim.py: ground -> A (pin ``a``) -> B (pin ``b``), a
``WrapCylinder`` at the joint between A and B that two of the paths wrap, a conditional point, a
file curve and OpenSim's default curve."""

from __future__ import annotations

_POF = ('<PhysicalOffsetFrame name="{n}"><socket_parent>{p}</socket_parent><translation>{t}</translation>'
        '<orientation>0 0 0</orientation></PhysicalOffsetFrame>')


def _pin(name, coord, parent, parent_path, child, parent_t):
    return (f'<PinJoint name="{name}"><socket_parent_frame>{parent}_off</socket_parent_frame>'
            f'<socket_child_frame>{child}_off</socket_child_frame><coordinates><Coordinate name="{coord}">'
            '<default_value>0.1</default_value><range>-2 2</range></Coordinate></coordinates><frames>'
            + _POF.format(n=f"{parent}_off", p=parent_path, t=parent_t)
            + _POF.format(n=f"{child}_off", p=f"/bodyset/{child}", t="0 0 0") + "</frames></PinJoint>")


def _point(name, body, loc):
    frame = "/ground" if body == "ground" else f"/bodyset/{body}"
    return f'<PathPoint name="{name}"><socket_parent_frame>{frame}</socket_parent_frame><location>{loc}</location></PathPoint>'


def _path(points, wrap=""):
    wraps = (f'<PathWrapSet><objects><PathWrap name="pw"><wrap_object>{wrap}</wrap_object><method>hybrid</method>'
             '</PathWrap></objects><groups /></PathWrapSet>') if wrap else ""
    return f'<GeometryPath name="geometrypath"><PathPointSet><objects>{points}</objects><groups /></PathPointSet>{wraps}</GeometryPath>'


#: the file's force-length curve of ``lig`` (knots of a SimmSpline)
CURVE_X = (0.0, 1.0, 1.05, 1.1, 1.2, 1.5)
CURVE_Y = (0.0, 0.0, 0.05, 0.15, 0.4, 1.2)

LIGAMENT = ('<Ligament name="lig">{applies}' + _path(_point("l1", "A", "0.03 -0.25 0") + _point("l2", "B", "0.03 -0.12 0"), "cyl")
            + '<resting_length>{rest}</resting_length><pcsa_force>{pcsa}</pcsa_force>'
            f'<SimmSpline name="force_length_curve"><x>{" ".join(map(str, CURVE_X))}</x>'
            f'<y>{" ".join(map(str, CURVE_Y))}</y></SimmSpline></Ligament>')
LIGAMENT_DEFAULT_CURVE = (
    '<Ligament name="lig2">' + _path(
        _point("m1", "ground", "-0.05 -0.1 0")
        + '<ConditionalPathPoint name="m2"><socket_parent_frame>/bodyset/A</socket_parent_frame><location>-0.02 -0.3 0'
          '</location><socket_coordinate>/jointset/j2/b</socket_coordinate><range>-0.5 0.5</range></ConditionalPathPoint>'
        + _point("m3", "B", "-0.03 -0.1 0"))
    + '<resting_length>0.4</resting_length><pcsa_force>300</pcsa_force></Ligament>')
PATH_SPRING = ('<PathSpring name="ps">' + _path(_point("s1", "A", "0.02 -0.1 0") + _point("s2", "B", "0.02 -0.2 0"))
               + '<resting_length>{rest}</resting_length><stiffness>{stiffness}</stiffness>'
               '<dissipation>{dissipation}</dissipation></PathSpring>')
PATH_SPRING_WRAPPED = ('<PathSpring name="ps_wrap">' + _path(_point("w1", "A", "-0.03 -0.25 0")
                                                             + _point("w2", "B", "-0.03 -0.12 0"), "cyl")
                       + '<resting_length>0.2</resting_length><stiffness>300</stiffness><dissipation>0.3</dissipation>'
                       '</PathSpring>')


def forces(applies="", rest="0.26", pcsa="500", ps_rest="0.45", stiffness="800", dissipation="0.7") -> str:
    """The four path forces, with ``lig``'s and ``ps``'s properties as given (text, for bad values)."""
    return "\n".join([LIGAMENT.format(applies=applies, rest=rest, pcsa=pcsa), LIGAMENT_DEFAULT_CURVE,
                      PATH_SPRING.format(rest=ps_rest, stiffness=stiffness, dissipation=dissipation),
                      PATH_SPRING_WRAPPED])


def model_text(force_set: str | None = None) -> str:
    """The model with ``force_set`` (default :func:`forces`) as its ForceSet's objects."""
    force_set = forces() if force_set is None else force_set
    body = ('<Body name="{n}"><mass>{m}</mass><mass_center>0.01 -0.2 0.02</mass_center>'
            '<inertia>0.02 0.005 0.02 0 0 0</inertia>{w}</Body>')
    cyl = ('<WrapObjectSet name="wrapobjectset"><objects><WrapCylinder name="cyl"><xyz_body_rotation>0 0 0'
           '</xyz_body_rotation><translation>0 -0.4 0</translation><quadrant>all</quadrant><radius>0.025</radius>'
           '<length>0.2</length></WrapCylinder></objects><groups /></WrapObjectSet>')
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" ?>', '<OpenSimDocument Version="40000"><Model name="springs">',
        '<Ground name="ground" /><gravity>0 -9.80665 0</gravity>',
        '<BodySet name="bodyset"><objects>', body.format(n="A", m=1.0, w=cyl), body.format(n="B", m=0.5, w=""),
        '</objects></BodySet>', '<JointSet name="jointset"><objects>',
        _pin("j1", "a", "ground", "/ground", "A", "0 0 0"), _pin("j2", "b", "A", "/bodyset/A", "B", "0 -0.4 0"),
        '</objects></JointSet>', f'<ForceSet name="forceset"><objects>\n{force_set}\n</objects></ForceSet>',
        '</Model></OpenSimDocument>'])
