"""URDF import: ``load_urdf(path) -> Model`` (fixed-base trees).

Supported: ``<link>`` with ``<inertial>`` (origin xyz/rpy, mass, inertia ixx..izz about the
inertial origin), ``<joint>`` of type ``revolute``, ``continuous``, ``prismatic`` and ``fixed``,
``<mimic joint= multiplier= offset=>`` (an :class:`mbjax.maps.Affine` map of the mimicked
joint's coordinate).  The root link is welded to the ground.  Each moving joint becomes one
body of the model (named after its child link) with offset ``Trans(xyz) Rot(rpy)`` and its axis
in the child link frame; coordinates are named after the non-mimic moving joints.  ``fixed``
joints are merged into the parent (``fixed="merge"``, inertia combined by the parallel-axis
theorem) or kept as zero-dof bodies with a constant map (``fixed="body"``).  Limits, dynamics,
visual and collision elements are ignored.  ``floating`` and ``planar`` joints are not supported.

Malformed files raise ``ValueError`` naming the file and the element.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np

from .._builder import ModelBuilder
from .._model import GROUND, Model
from ..maps import Affine, Constant

SUPPORTED = ("revolute", "continuous", "prismatic", "fixed")


class _Err:
    def __init__(self, path):
        self.path = path

    def __call__(self, element: str, msg: str):
        return ValueError(f"{self.path}: {element}: {msg}")


def _floats(err, text, n, element, attr, default=None):
    if text is None:
        if default is None:
            raise err(element, f"missing attribute {attr!r}")
        return np.asarray(default, dtype=float)
    try:
        vals = np.asarray([float(v) for v in text.split()], dtype=float)
    except ValueError:
        raise err(element, f"attribute {attr}={text!r} is not a list of numbers") from None
    if vals.shape != (n,) or not np.all(np.isfinite(vals)):
        raise err(element, f"attribute {attr}={text!r} must hold {n} finite number(s)")
    return vals


def _rpy_float64(rpy) -> np.ndarray:
    """:func:`mbjax._spatial.rpy_matrix` in NumPy float64, ``Rz(yaw) Ry(pitch) Rx(roll)``.

    Files are parsed in float64 and the model is cast once when it is used, so a rotated joint
    origin is a proper rotation to float64 rounding even with JAX's float32 default.
    """
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, cr, -sr], [0.0, sr, cr]])
    ry = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    rz = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    return rz @ ry @ rx


def _origin(err, node, element):
    o = node.find("origin") if node is not None else None
    if o is None:
        return np.eye(4)
    xyz = _floats(err, o.get("xyz"), 3, element + "/origin", "xyz", (0, 0, 0))
    rpy = _floats(err, o.get("rpy"), 3, element + "/origin", "rpy", (0, 0, 0))
    t = np.eye(4)
    t[:3, :3] = _rpy_float64(rpy)  # parsed in float64 whatever jax_enable_x64 says
    t[:3, 3] = xyz
    return t


def _inertial(err, link):
    """(mass, com, inertia about com) in the link frame."""
    name = f"link {link.get('name')!r}"
    node = link.find("inertial")
    if node is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    t = _origin(err, node, name + "/inertial")
    m_node = node.find("mass")
    mass = 0.0 if m_node is None else float(_floats(err, m_node.get("value"), 1, name + "/inertial/mass", "value")[0])
    i_node = node.find("inertia")
    ii = np.zeros((3, 3))
    if i_node is not None:
        vals = {k: float(_floats(err, i_node.get(k), 1, name + "/inertial/inertia", k, (0.0,))[0])
                for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        ii = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                       [vals["ixy"], vals["iyy"], vals["iyz"]],
                       [vals["ixz"], vals["iyz"], vals["izz"]]])
    if mass < 0:
        raise err(name + "/inertial/mass", f"negative mass {mass}")
    eig = np.linalg.eigvalsh(ii)
    scale = max(1e-300, float(np.max(np.abs(ii))) if ii.any() else 1.0)
    if eig.min() < -1e-12 * scale or (ii.any() and np.sort(eig)[:2].sum() < np.sort(eig)[2] - 1e-9 * scale):
        raise err(name + "/inertial/inertia", f"inertia tensor is not physical (eigenvalues {eig})")
    r = t[:3, :3]
    return mass, t[:3, 3], r @ ii @ r.T


def _combine(m1, c1, i1, m2, c2, i2):
    """Sum of two rigid bodies' (mass, com, inertia about com), all in one frame."""
    m = m1 + m2
    if m == 0:
        return 0.0, np.zeros(3), i1 + i2
    c = (m1 * c1 + m2 * c2) / m

    def shift(mass, com, inertia):
        d = com - c
        return inertia + mass * (d @ d * np.eye(3) - np.outer(d, d))

    return m, c, shift(m1, c1, i1) + shift(m2, c2, i2)


def load_urdf(path, gravity=(0.0, 0.0, -9.81), fixed: str = "merge") -> Model:
    """Read a URDF file (or an XML string starting with ``<``) into a :class:`mbjax.Model`."""
    if fixed not in ("merge", "body"):
        raise ValueError(f"load_urdf: fixed must be 'merge' or 'body', got {fixed!r}")
    text_input = isinstance(path, str) and path.lstrip().startswith("<")
    label = "<urdf string>" if text_input else os.fspath(path)
    err = _Err(label)
    try:
        root = ET.fromstring(path) if text_input else ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ValueError(f"{label}: not well-formed XML: {e}") from None
    except OSError as e:
        raise ValueError(f"{label}: cannot read: {e}") from None
    if root.tag != "robot":
        raise err(f"<{root.tag}>", "root element must be <robot>")

    links = {}
    for link in root.findall("link"):
        name = link.get("name")
        if not name:
            raise err("<link>", "missing name")
        if name in links:
            raise err(f"link {name!r}", "duplicate link name")
        links[name] = _inertial(err, link)

    joints = {}
    children = {}
    parent_of = {}
    for j in root.findall("joint"):
        name = j.get("name")
        el = f"joint {name!r}"
        if not name:
            raise err("<joint>", "missing name")
        if name in joints:
            raise err(el, "duplicate joint name")
        jtype = j.get("type")
        if jtype not in SUPPORTED:
            raise err(el, f"joint type {jtype!r} is not supported (supported: {SUPPORTED})")
        p, c = j.find("parent"), j.find("child")
        if p is None or c is None or not p.get("link") or not c.get("link"):
            raise err(el, "needs <parent link=...> and <child link=...>")
        pl, cl = p.get("link"), c.get("link")
        for role, ln in (("parent", pl), ("child", cl)):
            if ln not in links:
                raise err(el, f"{role} link {ln!r} is not defined")
        if cl in parent_of:
            raise err(el, f"link {cl!r} already has parent joint {parent_of[cl][0]!r} (not a tree)")
        axis = _floats(err, (j.find("axis").get("xyz") if j.find("axis") is not None else None), 3, el + "/axis", "xyz", (1, 0, 0))
        if jtype != "fixed":
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise err(el + "/axis", "axis is zero")
            axis = axis / norm
        mimic = j.find("mimic")
        mimic_spec = None
        if mimic is not None and jtype != "fixed":
            target = mimic.get("joint")
            if not target:
                raise err(el + "/mimic", "missing joint attribute")
            mult = float(_floats(err, mimic.get("multiplier"), 1, el + "/mimic", "multiplier", (1.0,))[0])
            off = float(_floats(err, mimic.get("offset"), 1, el + "/mimic", "offset", (0.0,))[0])
            mimic_spec = (target, mult, off)
        joints[name] = dict(type=jtype, parent=pl, child=cl, origin=_origin(err, j, el), axis=axis, mimic=mimic_spec)
        parent_of[cl] = (name, pl)
        children.setdefault(pl, []).append(name)

    roots = [ln for ln in links if ln not in parent_of]
    if len(roots) != 1:
        if not roots:
            raise err("<robot>", "no root link: the joints form a cycle")
        raise err("<robot>", f"several root links {roots}: the links do not form one tree")
    # every link must be reachable from the root (a cycle elsewhere leaves links unreachable)
    order, stack = [], [roots[0]]
    seen = set()
    while stack:
        ln = stack.pop()
        if ln in seen:
            raise err(f"link {ln!r}", "reached twice: the joints form a cycle")
        seen.add(ln)
        for jn in reversed(children.get(ln, [])):
            order.append(jn)
            stack.append(joints[jn]["child"])
    if len(seen) != len(links):
        missing = sorted(set(links) - seen)
        raise err(f"link {missing[0]!r}", f"not connected to the root {roots[0]!r} (cycle among {missing})")

    moving = [jn for jn in order if joints[jn]["type"] != "fixed"]
    coords = [jn for jn in moving if joints[jn]["mimic"] is None]
    for jn in moving:
        mm = joints[jn]["mimic"]
        if mm is not None and mm[0] not in coords:
            raise err(f"joint {jn!r}/mimic", f"mimicked joint {mm[0]!r} is not a moving, non-mimic joint")

    # frames: each link maps to (body name or GROUND, transform link -> body frame)
    frame = {roots[0]: (GROUND, np.eye(4))}
    inertia_acc = {}  # body -> (mass, com, inertia) in body frame
    b = ModelBuilder(coords, gravity=gravity)
    body_specs = []

    def add_inertia(body, t_body_link, m, c, ii):
        r = t_body_link[:3, :3]
        c_b = r @ c + t_body_link[:3, 3]
        i_b = r @ ii @ r.T
        inertia_acc[body] = _combine(*inertia_acc.get(body, (0.0, np.zeros(3), np.zeros((3, 3)))), m, c_b, i_b)

    for jn in order:
        jd = joints[jn]
        pbody, t_pb = frame[jd["parent"]]
        offset = t_pb @ jd["origin"]
        child = jd["child"]
        if jd["type"] == "fixed" and fixed == "merge":
            frame[child] = (pbody, offset)
            continue
        jt = "prismatic" if jd["type"] == "prismatic" else "revolute"
        if jd["type"] == "fixed":
            jmap = Constant(0.0)
        elif jd["mimic"] is not None:
            target, mult, off = jd["mimic"]
            jmap = Affine(target, [mult], off)
        else:
            jmap = jn
        body_specs.append((child, pbody, jt, jd["axis"] if jd["type"] != "fixed" else np.array([0.0, 0, 1]), jmap, offset))
        frame[child] = (child, np.eye(4))
    for ln, (m, c, ii) in links.items():
        body, t = frame[ln]
        if body != GROUND:
            add_inertia(body, t, m, c, ii)
    for name, parent, jt, axis, jmap, offset in body_specs:
        m, c, ii = inertia_acc.get(name, (0.0, np.zeros(3), np.zeros((3, 3))))
        ii = 0.5 * (ii + ii.T)
        try:
            b.add_body(name, parent=parent, joint=jt, axis=axis, map=jmap, offset=offset, mass=m, com=c, inertia=ii)
        except ValueError as e:
            raise err(f"link {name!r}", str(e)) from None
    if not body_specs:
        raise err("<robot>", "no moving joint: nothing to simulate")
    return b.build()
