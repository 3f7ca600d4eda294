"""Write schutte_wrist.osim: a two-pin-joint model with five Schutte1993Muscle_Deprecated muscles.

Four muscles (FCR, FCU, ECRB, ECU_pre-surgery) are copied from OpenSim's wrist.osim (opensim-models,
Models/WristModel/wrist.osim, Apache-2.0; see NOTICE) with their properties and SimmSpline curves as
written, on straight two- or three-point paths over a forearm (pin ``flexion`` about z) and a hand
(pin ``deviation`` about x).  ECRB is kept without its ``passive_force_length_curve`` (OpenSim then
uses its exponential default) and a fifth muscle ``DEF`` has no curves nor Schutte properties at all
(every default of ``Schutte1993Muscle_Deprecated::constructProperties``).

Run from the repository root: ``python tests/data/schutte1993/make_schutte_model.py WRIST_OSIM``.
"""

import math
import os
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = ("FCR", "FCU", "ECRB", "ECU_pre-surgery")
PROPS = ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length", "pennation_angle_at_optimal",
         "max_contraction_velocity", "time_scale", "activation1", "activation2", "damping")

SKELETON = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<Model name="schutte_wrist">
<gravity>0 -9.8066499999999994 0</gravity>
<length_units>meters</length_units>
<force_units>N</force_units>
<BodySet name="bodyset"><objects>
<Body name="forearm"><mass>1.2</mass><mass_center>0 0.12 0</mass_center><inertia>0.006 0.001 0.006 0 0 0</inertia></Body>
<Body name="hand"><mass>0.4</mass><mass_center>0 -0.05 0</mass_center><inertia>0.0005 0.0002 0.0005 0 0 0</inertia></Body>
</objects><groups /></BodySet>
<JointSet name="jointset"><objects>
<PinJoint name="elbow">
<socket_parent_frame>ground_offset</socket_parent_frame><socket_child_frame>forearm_offset</socket_child_frame>
<coordinates><Coordinate name="flexion"><default_value>0</default_value><range>-1.2 1.2</range></Coordinate></coordinates>
<frames>
<PhysicalOffsetFrame name="ground_offset"><socket_parent>/ground</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="forearm_offset"><socket_parent>/bodyset/forearm</socket_parent><translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
</frames>
</PinJoint>
<PinJoint name="wrist">
<socket_parent_frame>forearm_offset</socket_parent_frame><socket_child_frame>hand_offset</socket_child_frame>
<coordinates><Coordinate name="deviation"><default_value>0</default_value><range>-0.8 0.8</range></Coordinate></coordinates>
<frames>
<PhysicalOffsetFrame name="forearm_offset"><socket_parent>/bodyset/forearm</socket_parent><translation>0 0.25 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
<PhysicalOffsetFrame name="hand_offset"><socket_parent>/bodyset/hand</socket_parent><translation>0 0 0</translation><orientation>0 1.5707963267948966 0</orientation></PhysicalOffsetFrame>
</frames>
</PinJoint>
</objects><groups /></JointSet>
<ForceSet name="forceset"><objects>
</objects><groups /></ForceSet>
</Model>
</OpenSimDocument>
"""


def _path(points):
    pts = "".join(f'<PathPoint name="p{k}"><socket_parent_frame>{body}</socket_parent_frame>'
                  f'<location>{x} {y} {z}</location></PathPoint>' for k, (body, (x, y, z)) in enumerate(points))
    return ET.fromstring(f'<GeometryPath name="geometrypath"><PathPointSet><objects>{pts}</objects><groups />'
                         '</PathPointSet><PathWrapSet><objects /><groups /></PathWrapSet></GeometryPath>')


def main(wrist):
    src = {m.get("name"): m for m in ET.parse(wrist).iter("Schutte1993Muscle_Deprecated")}
    root = ET.fromstring(SKELETON)
    objects = root.find("Model/ForceSet/objects")
    side = {"FCR": 1, "FCU": 1, "ECRB": -1, "ECU_pre-surgery": -1, "DEF": 1}
    for k, name in enumerate(KEEP + ("DEF",)):
        el = ET.SubElement(objects, "Schutte1993Muscle_Deprecated", name=name)
        ET.SubElement(el, "min_control").text = "0.01"
        m = src.get(name)
        vals = {p: m.findtext(p).strip() for p in PROPS} if m is not None else {
            "max_isometric_force": "80", "optimal_fiber_length": "0.06", "tendon_slack_length": "0.2",
            "pennation_angle_at_optimal": "0.1"}
        lo, ts, pen = (float(vals[p]) for p in ("optimal_fiber_length", "tendon_slack_length",
                                                 "pennation_angle_at_optimal"))
        # origin on the forearm so that the path length at the default pose is about ℓ_o cos α_o + 1.01 ℓ_s
        length = lo * math.cos(pen) + 1.01 * ts
        s = side[name]
        offs = 0.004 * (k + 1)
        if k % 2 == 0:  # two points: forearm -> hand
            pts = [("/bodyset/forearm", (s * 0.012, 0.22 - length, offs)), ("/bodyset/hand", (s * 0.012, -0.03, offs))]
        else:  # three points: ground -> forearm via point -> hand
            pts = [("/ground", (s * 0.02, 0.22 - length, offs)),
                   ("/bodyset/forearm", (s * 0.015, 0.12, offs)), ("/bodyset/hand", (s * 0.012, -0.03, offs))]
        el.append(_path(pts))
        for p, v in vals.items():
            ET.SubElement(el, p).text = v
        if m is not None:
            for c in m:
                if c.tag == "SimmSpline" and not (name == "ECRB" and c.get("name") == "passive_force_length_curve"):
                    el.append(c)
    ET.indent(root)
    out = os.path.join(HERE, "schutte_wrist.osim")
    ET.ElementTree(root).write(out, encoding="UTF-8", xml_declaration=True)
    print(out)


if __name__ == "__main__":
    main(sys.argv[1])
