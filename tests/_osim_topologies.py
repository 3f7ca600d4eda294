"""OpenSim models of unusual topology for the multibody-tree-order tests: joints listed in any order,
massless inner bodies, mixed joint classes, a reversed joint and a loop-closing joint."""

from __future__ import annotations

import numpy as np

#: coordinates of each joint class written
_COORDS = {"PinJoint": 1, "SliderJoint": 1, "UniversalJoint": 2, "GimbalJoint": 3, "BallJoint": 3, "WeldJoint": 0,
           "PlanarJoint": 3, "FreeJoint": 6, "CustomJoint": 2}
_LINEAR = '<LinearFunction name="function"><coefficients>1 0</coefficients></LinearFunction>'


def _joint(cls, name, parent, child):
    coords = "".join(f'<Coordinate name="{name}_c{i}"><range>-3 3</range></Coordinate>' for i in range(_COORDS[cls]))
    p = "/ground" if parent == "ground" else f"/bodyset/{parent}"
    axes = ""
    if cls == "CustomJoint":  # c1 on rotation1, c0 on rotation2: OpenSim reorders them by first use
        axes = ("<SpatialTransform>"
                f'<TransformAxis name="rotation1"><coordinates>{name}_c1</coordinates><axis>1 0 0</axis>{_LINEAR}'
                "</TransformAxis>"
                f'<TransformAxis name="rotation2"><coordinates>{name}_c0</coordinates><axis>0 1 0</axis>{_LINEAR}'
                "</TransformAxis>"
                + "".join(f'<TransformAxis name="{a}"><axis>{v}</axis></TransformAxis>'
                          for a, v in (("rotation3", "0 0 1"), ("translation1", "1 0 0"), ("translation2", "0 1 0"),
                                       ("translation3", "0 0 1")))
                + "</SpatialTransform>")
    return (f'<{cls} name="{name}"><socket_parent_frame>{name}_p</socket_parent_frame>'
            f"<socket_child_frame>{name}_c</socket_child_frame>"
            + (f"<coordinates>{coords}</coordinates>" if coords else "")
            + f'<frames><PhysicalOffsetFrame name="{name}_p"><socket_parent>{p}</socket_parent>'
            "<translation>0 0.1 0</translation></PhysicalOffsetFrame>"
            f'<PhysicalOffsetFrame name="{name}_c"><socket_parent>/bodyset/{child}</socket_parent>'
            f"</PhysicalOffsetFrame></frames>{axes}</{cls}>")


def osim_text(bodies, joints) -> str:
    """An .osim document: ``bodies`` ``[(name, mass)]`` in BodySet order, ``joints`` ``[(class, name,
    parent body or "ground", child body)]`` in JointSet order."""
    body_xml = "".join(f'<Body name="{b}"><mass>{m}</mass><mass_center>0 0 0</mass_center>'
                       "<inertia>0.1 0.1 0.1 0 0 0</inertia></Body>" for b, m in bodies)
    return ('<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="m">'
            f'<gravity>0 -9.8 0</gravity><Ground name="ground"/><BodySet><objects>{body_xml}</objects></BodySet>'
            f"<JointSet><objects>{''.join(_joint(*j) for j in joints)}</objects></JointSet></Model></OpenSimDocument>")


def random_topology(seed: int) -> str:
    """A random tree (joints and bodies in shuffled order, some massless inner bodies, mixed joint
    classes); for seeds ≡ 1 (mod 3) also a reversed joint (a body that is only a parent, joined to a
    body of the tree), for seeds ≡ 3 (mod 5) a loop-closing joint."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 10))
    names = [f"b{i}" for i in range(n)]
    parent = {names[0]: "ground"}
    for i in range(1, n):
        parent[names[i]] = (str(rng.choice(["ground"] + names[:i])) if rng.random() < 0.3
                            else names[int(rng.integers(max(0, i - 3), i))])
    has_children = {b: any(parent[c] == b for c in names) for b in names}
    classes = list(_COORDS)
    joints = [(str(rng.choice(classes, p=[.3, .05, .1, .1, .05, .1, .05, .05, .2])), f"j_{b}", parent[b], b)
              for b in names]
    mass = {b: 0.0 if has_children[b] and rng.random() < 0.35 else float(rng.uniform(0.5, 5)) for b in names}
    if seed % 3 == 1:
        mass["rev"] = 1.0
        joints.append(("PinJoint", "j_rev", "rev", str(rng.choice(names))))
    if seed % 5 == 3 and n > 2:
        joints.append(("PinJoint", "j_loop", names[1], names[-1]))
    bodies = list(mass.items())
    return osim_text([bodies[k] for k in rng.permutation(len(bodies))], [joints[k] for k in rng.permutation(len(joints))])
