"""wrap_cylinder / wrap_torus against live OpenSim 4.6: GeometryPath lengths of a 2-point
PathActuator over a WrapCylinder / WrapTorus fixed to ground (rotated and translated).

Each end point sits at the origin of a body on a FreeJoint, so the translation coordinates place
it anywhere.  With one PathWrap OpenSim's ``singleWrap`` is True (no tangent adjustment); a second
PathWrap on a cylinder 100 m away (never touched) makes it False.  The reference length is
``path.getLength``; ours is |p1 - r1| + surface + |r2 - p2| (|p1 - p2| without a wrap).
"""

import jax
import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim")

from mbjax.wrapping.cylinder import wrap_cylinder  # noqa: E402
from mbjax.wrapping.torus import wrap_torus  # noqa: E402

ROT, TRANS = np.array([0.3, -0.2, 0.5]), np.array([0.01, 0.02, -0.03])
QUADRANTS = {"all": (0, 0), "+x": (0, 1), "-x": (0, -1), "-y": (1, -1), "+z": (2, 1)}


def _rot_xyz(a):
    """SimTK body-fixed XYZ rotation (WrapObject xyz_body_rotation)."""
    cx, sx, cy, sy, cz, sz = np.cos(a[0]), np.sin(a[0]), np.cos(a[1]), np.sin(a[1]), np.cos(a[2]), np.sin(a[2])
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rx @ ry @ rz


def _opensim_lengths(kind, quadrant, dims, second, g1, g2):
    m = osim.Model()
    ground = m.getGround()
    bodies = []
    for i in range(2):
        b = osim.Body(f"b{i}", 1.0, osim.Vec3(0), osim.Inertia(0.01, 0.01, 0.01))
        m.addBody(b)
        m.addJoint(osim.FreeJoint(f"j{i}", ground, b))
        bodies.append(b)
    if kind == "cylinder":
        w = osim.WrapCylinder()
        w.set_radius(dims[0])
        w.set_length(dims[1])
    else:
        w = osim.WrapTorus()
        w.set_inner_radius(dims[0])
        w.set_outer_radius(dims[1])
    w.setName("w0")
    w.set_quadrant(quadrant)
    w.set_xyz_body_rotation(osim.Vec3(*ROT))
    w.set_translation(osim.Vec3(*TRANS))
    ground.addWrapObject(w)
    act = osim.PathActuator()
    act.setName("act")
    act.addNewPathPoint("p1", bodies[0], osim.Vec3(0))
    act.addNewPathPoint("p2", bodies[1], osim.Vec3(0))
    m.addForce(act)
    path = act.updGeometryPath()
    path.addPathWrap(w)
    if second:
        far = osim.WrapCylinder()
        far.setName("far")
        far.set_radius(0.01)
        far.set_length(0.1)
        far.set_translation(osim.Vec3(100.0, 100.0, 0.0))
        ground.addWrapObject(far)
        path.addPathWrap(far)
    m.updDisplayHints().disableVisualization()
    s = m.initSystem()
    cs = m.getCoordinateSet()
    coords = [[cs.get(f"j{i}_coord_{3 + k}") for k in range(3)] for i in range(2)]
    out = np.empty(len(g1))
    for n, pts in enumerate(zip(g1, g2)):
        for i in range(2):
            for k in range(3):
                coords[i][k].setValue(s, float(pts[i][k]), False)
        m.realizePosition(s)
        out[n] = act.getGeometryPath().getLength(s)
    return out


def _ours(fn, q1, q2, dims, axis, sign, single):
    w = jax.jit(jax.vmap(fn, (0, 0, None, None, None, None, None)))(q1, q2, *dims, axis, sign, single)
    wrapped = (np.linalg.norm(q1 - np.asarray(w.r1), axis=1) + np.asarray(w.length)
               + np.linalg.norm(np.asarray(w.r2) - q2, axis=1))
    return np.where(np.asarray(w.wraps), wrapped, np.linalg.norm(q1 - q2, axis=1)), w


def _cylinder_points(n, seed):
    """Random pairs around the cylinder (some inside) plus segments just touching it."""
    rng = np.random.default_rng(seed)
    rad, ang, z = rng.uniform(0.045, 0.25, (2, n)), rng.uniform(-np.pi, np.pi, (2, n)), rng.uniform(-0.25, 0.25, (2, n))
    p = np.stack([rad * np.cos(ang), rad * np.sin(ang), z], -1)
    # touching: the segment's closest approach to the axis is r (1 +- eps)
    m = 40
    eps = np.repeat([-1e-6, -1e-9, 1e-9, 1e-6, 1e-3], m // 5)
    phi, zz, half = rng.uniform(-np.pi, np.pi, m), rng.uniform(-0.1, 0.1, (2, m)), rng.uniform(0.08, 0.2, m)
    c = 0.05 * (1 + eps)[:, None] * np.stack([np.cos(phi), np.sin(phi), 0 * phi], -1)
    t = np.stack([-np.sin(phi), np.cos(phi), 0 * phi], -1) * half[:, None]
    a, b = c + t, c - t
    a[:, 2], b[:, 2] = zz
    return np.concatenate([p[0], a]), np.concatenate([p[1], b])


@pytest.mark.parametrize("second", [False, True], ids=["single_wrap", "two_pathwraps"])
def test_cylinder_matches_opensim(second):
    r, length = 0.05, 0.3
    q1, q2 = _cylinder_points(400, 0)
    rm = _rot_xyz(ROT)
    g1, g2 = q1 @ rm.T + TRANS, q2 @ rm.T + TRANS
    q1, q2 = (g1 - TRANS) @ rm, (g2 - TRANS) @ rm  # what OpenSim sees, rounding included
    worst = 0.0
    for quad, (axis, sign) in QUADRANTS.items():
        ref = _opensim_lengths("cylinder", quad, (r, length), second, g1, g2)
        got, w = _ours(wrap_cylinder, q1, q2, (r, length), axis, sign, not second)
        err = np.abs(got - ref)
        worst = max(worst, err.max())
        assert err.max() <= 1e-9, (quad, err.max(), np.argmax(err))
        assert int(np.sum(np.asarray(w.wraps))) > 50
    print(f"cylinder max |length - OpenSim| ({'two' if second else 'one'} PathWrap): {worst:.2e} m")


@pytest.mark.extended
@pytest.mark.parametrize("second", [False, True], ids=["single_wrap", "two_pathwraps"])
def test_torus_matches_opensim(second):
    """Agreement limited by OpenSim's lmdif (ftol = xtol = 1e-4, forward-difference Jacobian) in
    findClosestPoint: most poses agree to rounding, a few percent of lmdif runs stop early or on
    another root of the residual."""
    ri, ro = 0.03, 0.1
    rng = np.random.default_rng(1)
    rad, ang, z = rng.uniform(0, 0.2, (2, 400)), rng.uniform(-np.pi, np.pi, (2, 400)), rng.uniform(-0.2, 0.2, (2, 400))
    q = np.stack([rad * np.cos(ang), rad * np.sin(ang), z], -1)
    rm = _rot_xyz(ROT)
    g1, g2 = q[0] @ rm.T + TRANS, q[1] @ rm.T + TRANS
    q1, q2 = (g1 - TRANS) @ rm, (g2 - TRANS) @ rm
    for quad in ("all", "+x", "-y"):
        axis, sign = QUADRANTS[quad]
        ref = _opensim_lengths("torus", quad, (ri, ro), second, g1, g2)
        got, w = _ours(wrap_torus, q1, q2, (ri, ro), axis, sign, not second)
        err = np.abs(got - ref)
        wraps = np.asarray(w.wraps)
        print(f"torus {quad}: median {np.median(err[wraps]):.1e}, 95% {np.quantile(err, 0.95):.1e}, "
              f"max {err.max():.1e} m, {np.mean(err > 1e-6):.1%} over 1e-6 ({wraps.sum()} wraps)")
        assert wraps.sum() > 50
        assert np.median(err[wraps]) <= 1e-12
        assert np.quantile(err, 0.95) <= 1e-9
        assert np.mean(err > 1e-6) <= 0.02
