"""OpenSim 4's coordinate motion types (``Coordinate::getMotionType``) from an ``.osim`` file.

OpenSim 4 writes no ``<motion_type>`` and ignores the 3.x one: a joint sets its coordinates' types.
``CustomJoint::constructCoordinates``: for each of its coordinates, over the ``SpatialTransform`` axes in
order (``rotation1..3`` then ``translation1..3``), an axis using the coordinate through a
``LinearFunction`` of slope exactly ±1 makes it rotational / translational (a later such axis wins);
any other function makes it coupled unless already typed; unused: undefined.  ``PinJoint``,
``UniversalJoint``, ``GimbalJoint``, ``BallJoint``, ``EllipsoidJoint`` and ``ScapulothoracicJoint``
coordinates are rotational, ``SliderJoint`` translational, ``PlanarJoint`` (rz, tx, ty) and
``FreeJoint`` (3 rotations, 3 translations) by position.  ``SimbodyEngine::convertDegreesToRadians``
converts only rotational coordinates, so :func:`mbjax.io.coordinates_from_table` uses these types.

The two orders OpenSim's tools write coordinates in, from the XML too: :func:`coordinate_order` (the
``CoordinateSet``: the IK ``.mot``) and :func:`tree_order` (the multibody tree order of Simbody's
speeds: the ID tool's generalized forces).
"""

from __future__ import annotations

import functools
import os

from .osim_older_documents import JOINT_OFFSETS_VERSION, JOINTSET_VERSION, rename_sockets
from .osim_xml import _Doc, _coordinate_elements, _function_element, _has_function, _text

_FIXED = {"PinJoint": "R", "SliderJoint": "T", "UniversalJoint": "RR", "GimbalJoint": "RRR", "BallJoint": "RRR",
          "EllipsoidJoint": "RRR", "ScapulothoracicJoint": "RRRR", "PlanarJoint": "RTT", "FreeJoint": "RRRTTT"}
_NAMES = {"R": "rotational", "T": "translational"}
_AXES = ("rotation1", "rotation2", "rotation3", "translation1", "translation2", "translation3")


def _joints(root):
    model = root.find("Model")
    js = model.find("JointSet") if model is not None else None
    if js is not None and js.find("objects") is not None:  # 4.x
        yield from js.find("objects")
    bs = model.find("BodySet") if model is not None else None
    for b in (bs.find("objects") if bs is not None and bs.find("objects") is not None else []):
        holder = b.find("Joint")  # 3.x: joints inside bodies
        if holder is not None:
            yield from holder


def motion_types(path) -> dict[str, str]:
    """Coordinate name -> ``"rotational"``, ``"translational"``, ``"coupled"`` or ``"undefined"``.

    Parsed once per file version (cached on the path and its modification time and size): the
    tools read it for every coordinates table they convert."""
    st = os.stat(path)
    return dict(_motion_types_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=32)
def _motion_types_cached(path, mtime_ns, size) -> dict[str, str]:
    doc = _Doc(path)
    out: dict[str, str] = {}
    for j in _joints(doc.root):
        coords = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag in _FIXED:
            for c, t in zip(coords, _FIXED[j.tag]):
                out[c] = _NAMES[t]
            continue
        st = j.find("SpatialTransform")
        if st is None:
            continue
        axes = {ta.get("name"): ta for ta in st if ta.tag == "TransformAxis"}
        for c in coords:
            mt = "undefined"
            for k, name in enumerate(_AXES):
                ta = axes.get(name)
                if ta is None or c not in (_text(ta, "coordinates", "") or "").split() or not _has_function(ta):
                    continue
                try:
                    f = _function_element(doc, ta)
                except NotImplementedError:
                    f = None
                slope = None
                if f is not None and f.tag == "LinearFunction":
                    coef = (_text(f, "coefficients", "") or "").split()
                    slope = float(coef[0]) if coef else 1.0  # OpenSim's default coefficients: 1 0
                if slope in (1.0, -1.0):
                    mt = "rotational" if k < 3 else "translational"
                elif mt == "undefined":
                    mt = "coupled"
            out[c] = mt
    return out


def coordinate_order(path) -> tuple[str, ...]:
    """Every coordinate in OpenSim 4's ``CoordinateSet`` order (what its IK tool writes): joints in
    file order, a ``CustomJoint``'s coordinates in order of first use by its axes ``rotation1..3``,
    ``translation1..3`` (``CustomJoint::constructCoordinates`` reorders them so), the ones no axis
    uses after those; other joints' coordinates as listed."""
    st = os.stat(path)
    return _coordinate_order_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _coordinate_order_cached(path, mtime_ns, size) -> tuple[str, ...]:
    doc = _Doc(path)
    return tuple(c for j in _joints(doc.root) for c in _joint_coordinates(j))


def _joint_coordinates(j) -> list[str]:
    """A joint's coordinates in OpenSim's order (a ``CustomJoint``'s reordered by first use)."""
    coords = [c.get("name") for c in _coordinate_elements(j)]
    st = j.find("SpatialTransform") if j.tag not in _FIXED else None
    if st is not None:
        axes = {ta.get("name"): ta for ta in st if ta.tag == "TransformAxis"}
        used = []
        for name in _AXES:
            ta = axes.get(name)
            for c in ((_text(ta, "coordinates", "") or "").split() if ta is not None else ()):
                if c in coords and c not in used:
                    used.append(c)
        coords = used + [c for c in coords if c not in used]
    return coords


def tree_order(path) -> tuple[str, ...]:
    """Every coordinate in OpenSim 4.6's multibody tree order (``Model::getCoordinatesInMultibodyTreeOrder``:
    the order of Simbody's speeds, in which its ``InverseDynamicsTool`` writes the generalized forces).

    The mobilized bodies come in the order Simbody's ``MultibodyGraphMaker`` (``generateGraph``) adds
    them, :func:`_mobilizer_order`; each one's coordinates in the joint's own order (as
    :func:`coordinate_order` gives them).  Joints in the file's order: a tree grown breadth first
    from ground, so that (Gait2354) both hips come before the lumbar joint and the knees after it."""
    st = os.stat(path)
    return _tree_order_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _tree_order_cached(path, mtime_ns, size) -> tuple[str, ...]:
    doc = _Doc(path)
    joints, bodies, masses = _joint_bodies(doc)
    edges = [(j.tag, parent, child) for j, parent, child in joints]
    order = _mobilizer_order(bodies, masses, edges)
    return tuple(c for k in order if k < len(joints) for c in _joint_coordinates(joints[k][0]))


#: ``Joint::numCoordinates`` of a default object of each class: what ``Model::createMultibodyTree`` registers
#: with the graph maker (a default ``CustomJoint`` has none, so it counts as a weld there)
_GRAPH_MOBILITIES = {"WeldJoint": 0, "CustomJoint": 0, "PinJoint": 1, "SliderJoint": 1, "UniversalJoint": 2,
                     "GimbalJoint": 3, "BallJoint": 3, "EllipsoidJoint": 3, "PlanarJoint": 3, "FreeJoint": 6,
                     "ScapulothoracicJoint": 4, "ConstantCurvatureJoint": 3}
#: joint classes the graph maker closes a loop with by a constraint (``MultibodyGraphMaker::initialize``);
#: any other loop joint mobilizes a new slave body
_LOOP_CONSTRAINT_JOINTS = ("WeldJoint", "FreeJoint")


def _mass(body) -> float:
    try:
        return float(_text(body, "mass", "nan"))
    except ValueError:
        return float("nan")  # OpenSim's default Body mass


def _joint_bodies(doc):
    """``([(joint element, parent, child)], bodies, masses)``: each joint's parent and child *bodies*
    (its frames' base frames; ``"ground"`` for the model's ground) by index into ``bodies``
    (``bodies[0]`` is ground), and each body's ``<mass>``."""
    root = doc.root
    version = (root.get("Version") or "").strip()
    version = int(version) if version.isdigit() else 40000
    rename_sockets(doc, version)
    model = root.find("Model")
    ground_el = model.find("Ground") if model is not None else None
    ground = ground_el.get("name", "ground") if ground_el is not None else "ground"
    bs = model.find("BodySet/objects") if model is not None else None
    body_els = [b for b in (bs if bs is not None else []) if b.tag == "Body"
                and not (version < JOINTSET_VERSION and b.get("name") == "ground")]  # 3.x: ground is a body
    bodies = [ground] + [b.get("name") for b in body_els]
    masses = [0.0] + [_mass(b) for b in body_els]
    index = {}
    for k, name in enumerate(bodies):
        index.setdefault(name, k)
    if version < JOINTSET_VERSION:
        index["ground"] = 0
    # offset frames: path -> (socket_parent, path of the frame's owner)
    owners = [(f"/jointset/{j.get('name')}", j) for j in (model.find("JointSet/objects") if model is not None
                                                           and model.find("JointSet/objects") is not None else [])]
    owners += [(f"/bodyset/{b.get('name')}", b) for b in body_els]
    owners += [(f"/{ground}", ground_el), ("", model)]
    frames, by_name = {}, {}
    for owner_path, owner in owners:
        for holder in ((owner.find("frames"), owner.find("components")) if owner is not None else ()):
            for fr in (holder if holder is not None else []):
                if fr.tag == "PhysicalOffsetFrame":
                    path = f"{owner_path}/{fr.get('name')}"
                    frames[path] = ((_text(fr, "socket_parent", "") or "").strip(), owner_path)
                    by_name.setdefault(fr.get("name"), path)

    def base(ref, at, seen=()):
        """The body index of the frame ``ref`` names, resolved from the component at path ``at``."""
        ref = ref.strip().rstrip("/")
        parts = [p for p in (ref if ref.startswith("/") else f"{at}/{ref}").split("/") if p]
        path = []
        for p in parts:
            if p == "..":
                path = path[:-1]
            elif p != ".":
                path.append(p)
        cands = ["/" + "/".join(path)]
        last = ref.split("/")[-1] if ref else ""
        cands += [f"{at}/{last}", f"/bodyset/{last}", f"/{last}"]
        if last in by_name:
            cands.append(by_name[last])
        for c in cands:
            if c in frames and c not in seen:
                parent, owner_path = frames[c]
                return base(parent, c, seen + (c,)) if parent not in ("..", "") else base(owner_path, "/")
            if c.startswith("/bodyset/") and c[len("/bodyset/"):] in index:
                return index[c[len("/bodyset/"):]]
            if c == f"/{ground}" or (c.count("/") == 1 and c[1:] in index):
                return index.get(c[1:], 0)
        return None

    out = []
    for j in _joints(root):
        if version < JOINTSET_VERSION:  # in its child body, naming the parent
            owner = next((b for b in body_els if b.find("Joint") is not None and j in list(b.find("Joint"))), None)
            parent = index.get((_text(j, "parent_body", "") or "").strip())
            child = index.get(owner.get("name")) if owner is not None else None
        else:
            at = f"/jointset/{j.get('name')}"
            pf = _text(j, "socket_parent_frame") or _text(j, "socket_parent_body") or ""
            cf = _text(j, "socket_child_frame") or _text(j, "socket_child_body") or ""
            if version < JOINT_OFFSETS_VERSION:  # OpenSim keeps the last name of each path
                pf, cf = pf.strip().split("/")[-1], cf.strip().split("/")[-1]
            parent, child = base(pf, at), base(cf, at)
        if parent is not None and child is not None:
            out.append((j, parent, child))
    return out, bodies, masses


def _mobilizer_order(bodies, masses, joints) -> list[int]:
    """The joints (indices into ``joints``, ``(class, parent body, child body)``) in the order of the
    mobilized bodies Simbody's ``MultibodyGraphMaker::generateGraph`` makes of them: a body in no
    joint gets a free joint to ground (an index past ``joints``); the tree grows from ground level by
    level, over the joints in their order at each level, a branch that ends in a massless body
    (unless welded) extended through its heaviest child; a body not reached is joined to ground (a
    parent-only body first, else the one parent of most joints) and the growth goes on; a joint
    left over closes a loop (a slave body's mobilizer, at the end, unless it is a weld or free joint;
    OpenSim adds a free one's coordinates after all the others)."""
    nb = len(bodies)
    joints = list(joints)
    as_parent = [[] for _ in range(nb)]
    as_child = [[] for _ in range(nb)]
    for k, (_, p, c) in enumerate(joints):
        as_parent[p].append(k)
        as_child[c].append(k)
    level = [0] + [-1] * (nb - 1)
    mob_of = [-1] * len(joints)
    mobs: list[tuple[int, int, int]] = []  # (joint, level, outboard body)

    def in_tree(b):
        return level[b] >= 0

    def add_joint(cls, p, c):
        joints.append((cls, p, c))
        mob_of.append(-1)
        as_parent[p].append(len(joints) - 1)
        as_child[c].append(len(joints) - 1)

    def mobilities(k):
        cls = joints[k][0]
        return _GRAPH_MOBILITIES.get(cls, 6 if k >= nj_file else 1)

    def add_mobilizer(k):
        _, p, c = joints[k]
        out, inb = (c, p) if in_tree(p) else (p, c)
        level[out] = level[inb] + 1
        mob_of[k] = len(mobs)
        mobs.append((k, level[out], out))

    def heaviest(b, forward):
        best, most = -1, 0.0
        for k in (as_parent[b] if forward else as_child[b]):
            other = joints[k][2] if forward else joints[k][1]
            if mob_of[k] >= 0 or in_tree(other):
                continue
            if masses[other] > most:
                best, most = k, masses[other]
        return best

    def grow():
        added = set()
        lev = 1
        while True:
            any_added = False
            for k in range(len(joints)):
                if mob_of[k] >= 0:
                    any_added |= k in added and mobs[mob_of[k]][1] == lev
                    continue
                _, p, c = joints[k]
                if in_tree(p) == in_tree(c) or level[p if in_tree(p) else c] != lev - 1:
                    continue
                add_mobilizer(k)
                added.add(k)
                any_added = True
                if mobilities(k) == 0 or masses[mobs[-1][2]] > 0:
                    continue
                while True:  # a massless outboard body: extend the branch to a massful one
                    b = mobs[-1][2]
                    fwd, rev = heaviest(b, True), heaviest(b, False)
                    pick = (fwd if fwd >= 0 and masses[joints[fwd][2]] > 0
                            else rev if rev >= 0 and masses[joints[rev][1]] > 0 else None)
                    if pick is not None:
                        add_mobilizer(pick)
                        added.add(pick)
                        break
                    if fwd < 0 and rev < 0:
                        break  # OpenSim refuses the model (a terminal massless body)
                    add_mobilizer(fwd if fwd >= 0 else rev)
                    added.add(fwd if fwd >= 0 else rev)
            if not any_added:
                return
            lev += 1

    def new_base():
        parent_only, best, most = False, -1, -1
        for b in range(1, nb):
            if in_tree(b) or (parent_only and as_child[b]):
                continue
            if not parent_only and not as_child[b]:
                parent_only, best, most = True, b, len(as_parent[b])
            elif len(as_parent[b]) > most:
                best, most = b, len(as_parent[b])
        return best

    nj_file = len(joints)
    for b in range(1, nb):
        if not as_parent[b] and not as_child[b]:
            add_joint("FreeJoint", 0, b)
    while True:
        grow()
        b = new_base()
        if b < 0:
            break
        add_joint("FreeJoint", 0, b)
    for k in range(len(joints)):  # loops: a slave body for each joint left, unless a weld or free joint
        if mob_of[k] < 0 and joints[k][0] not in _LOOP_CONSTRAINT_JOINTS:
            mob_of[k] = len(mobs)
            mobs.append((k, level[joints[k][1]] + 1, -1))
    # a free joint left over is no constraint (``Model::extendConnectToModel``); its coordinates come last
    return [k for k, _, _ in mobs] + [k for k in range(len(joints)) if mob_of[k] < 0]


def coordinate_joints(path) -> dict[str, str]:
    """Coordinate name -> the name of the joint that holds it (every joint of the file)."""
    st = os.stat(path)
    return dict(_coordinate_joints_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=32)
def _coordinate_joints_cached(path, mtime_ns, size) -> tuple[tuple[str, str], ...]:
    doc = _Doc(path)
    return tuple((c.get("name"), j.get("name")) for j in _joints(doc.root) for c in _coordinate_elements(j))


#: joints whose Simbody mobilizer (OpenSim's ``useEulerAngles``) takes the angular velocity of the child
#: frame in the parent frame, ω_F, as the speeds of its first three coordinates (X-Y-Z body-fixed angles)
ANGULAR_VELOCITY_JOINTS = ("BallJoint", "FreeJoint", "EllipsoidJoint")


def angular_velocity_joints(path) -> tuple[tuple[str, str, tuple[str, str, str]], ...]:
    """``(joint class, joint name, (c0, c1, c2))`` of every joint of :data:`ANGULAR_VELOCITY_JOINTS`:
    its rotation coordinates, whose generalized speeds are u = ω_F = E(c0, c1) ċ, not ċ."""
    st = os.stat(path)
    return _angular_velocity_joints_cached(os.path.abspath(os.fspath(path)), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _angular_velocity_joints_cached(path, mtime_ns, size):
    doc = _Doc(path)
    out = []
    for j in _joints(doc.root):
        names = [c.get("name") for c in _coordinate_elements(j)]
        if j.tag in ANGULAR_VELOCITY_JOINTS and len(names) >= 3:
            out.append((j.tag, j.get("name"), tuple(names[:3])))
    return tuple(out)
