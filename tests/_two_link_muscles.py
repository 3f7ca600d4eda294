"""A small generated 4.x model for the tests of muscle and actuator classes and of joints: ground
-(q1)-> upper -(q2)-> lower, two pin joints about z (or an elbow ``CustomJoint`` of any spatial
transform), and path forces between the links, one element a line.

:func:`two_link` takes the ``ForceSet`` elements as text; :func:`muscle` and :func:`path_actuator`
write one element of a class with the properties the tests use; :func:`transform_axis` one
``TransformAxis`` of an elbow ``CustomJoint``."""

from __future__ import annotations

_BODY = ('<Body name="{n}"><mass>{m}</mass><mass_center>0.01 -0.15 0.005</mass_center>'
         '<inertia>0.012 0.002 0.011 0.0003 0.0001 0.0002</inertia></Body>')
_POF = ('<PhysicalOffsetFrame name="{n}"><socket_parent>{p}</socket_parent><translation>{t}</translation>'
        '<orientation>0 0 0</orientation></PhysicalOffsetFrame>')


def _pin(name, coord, parent, child, default):
    return (f'<PinJoint name="{name}"><socket_parent_frame>{parent[0]}</socket_parent_frame>'
            f'<socket_child_frame>{child[0]}</socket_child_frame><coordinates><Coordinate name="{coord}">'
            f'<default_value>{default}</default_value><range>-2 2.5</range></Coordinate></coordinates><frames>'
            + _POF.format(n=parent[0], p=parent[1], t=parent[2]) + _POF.format(n=child[0], p=child[1], t=child[2])
            + '</frames></PinJoint>')


def _path(a, b):
    return ('<GeometryPath name="path"><PathPointSet><objects>'
            f'<PathPoint name="a"><socket_parent_frame>/bodyset/upper</socket_parent_frame><location>{a}</location>'
            '</PathPoint>'
            f'<PathPoint name="b"><socket_parent_frame>/bodyset/lower</socket_parent_frame><location>{b}</location>'
            '</PathPoint></objects></PathPointSet></GeometryPath>')


def muscle(cls, name, a="0.03 -0.05 0", b="0.02 -0.08 0", extra=""):
    """A muscle element of class ``cls`` (Thelen's properties, which every Hill class reads)."""
    return (f'<{cls} name="{name}">{_path(a, b)}<max_isometric_force>500</max_isometric_force>'
            '<optimal_fiber_length>0.12</optimal_fiber_length><tendon_slack_length>0.2</tendon_slack_length>'
            f'<pennation_angle_at_optimal>0.1</pennation_angle_at_optimal>{extra}</{cls}>')


def path_actuator(name, optimal_force=None, a="-0.02 -0.1 0.01", b="-0.01 -0.05 0"):
    """A ``PathActuator`` (``optimal_force`` left out: OpenSim's default 1)."""
    force = "" if optimal_force is None else f"<optimal_force>{optimal_force}</optimal_force>"
    return f'<PathActuator name="{name}">{_path(a, b)}{force}</PathActuator>'


def transform_axis(name, axis, function=None):
    """A ``TransformAxis`` of the elbow: of ``q2`` through ``function`` (its XML), or of no coordinate."""
    if function is None:
        return f'<TransformAxis name="{name}"><coordinates></coordinates><axis>{axis}</axis></TransformAxis>'
    return f'<TransformAxis name="{name}"><coordinates>q2</coordinates><axis>{axis}</axis>{function}</TransformAxis>'


def two_link(*forces, elbow=None):
    """The model's text with ``forces`` (elements as text), each on a line of its own; ``elbow``: the
    six :func:`transform_axis` of a ``CustomJoint`` elbow (rotation1-3, translation1-3) instead of a pin."""
    joints = _pin("shoulder", "q1", ("ground_offset", "/ground", "0 1 0"), ("upper_offset", "/bodyset/upper", "0 0.05 0"),
                  0.2)
    second = _pin("elbow", "q2", ("upper_end", "/bodyset/upper", "0 -0.3 0"), ("lower_offset", "/bodyset/lower", "0 0.02 0"),
                  0.5)
    if elbow is not None:
        second = (second.replace("<PinJoint", "<CustomJoint").replace("</PinJoint>", "")
                  + "<SpatialTransform>" + "".join(elbow) + "</SpatialTransform></CustomJoint>")
    joints += "\n" + second
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8" ?>', '<OpenSimDocument Version="40000"><Model name="twolink">',
        '<Ground name="ground"></Ground><gravity>0 -9.80665 0</gravity>',
        '<BodySet name="bodyset"><objects>', _BODY.format(n="upper", m=2.0), _BODY.format(n="lower", m=1.2),
        '</objects></BodySet>', '<JointSet name="jointset"><objects>', joints, '</objects></JointSet>',
        '<ForceSet name="forceset"><objects>', *forces, '</objects></ForceSet>',
        '</Model></OpenSimDocument>'])
