"""``wrap_sphere`` against live OpenSim 4.6 (``WrapSphere`` in a ``GeometryPath``).

One model, built once: per configuration two bodies on ``FreeJoint``s carry path points 1 and 2
(their translations place the points anywhere in ground) and one ``PathActuator`` wraps over its
own ``WrapSphere`` on ground, rotated (``xyz_body_rotation``) and translated, with quadrant
"all", +-x, +-y, +-z; every configuration comes twice, the second with a second ``PathWrap`` over a
far-away sphere (OpenSim's ``singleWrap`` false and 8 wrap iterations).  For many point pairs per
configuration (piercing segments near and far from the centre, wrap on/off within 1e-7 R, points
near the quadrant plane, segments longer than 1 m, far-side wraps, random pairs) OpenSim's
``getLength`` must equal ``|p1 - r1| + length + |r2 - p2|`` (``|p1 - p2|`` without a wrap),
OpenSim's current path must hold the two wrap points exactly when ``WrapLine.wraps``, and those
points and OpenSim's ``wrap_path_length`` must equal r1, r2 and ``length``.  The end points enter
``wrap_sphere`` transformed by the sphere's own ``getTransform()`` (what ``wrapLine`` receives).

A second model with three-point paths checks the codes themselves (WRAPPED vs MANDATORY vs
NO_WRAP) through OpenSim's choice of which segment wraps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping.sphere import wrap_sphere

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim")

#: (quadrant name, wrap_axis, wrap_sign)
QUADRANTS = [("all", 0, 0), ("+x", 0, 1), ("-x", 0, -1), ("y", 1, 1), ("-y", 1, -1), ("z", 2, 1),
             ("-z", 2, -1)]
N_POSES = 240


def _rot_xyz(a):
    """Body-fixed X-Y-Z rotation (Simbody ``setRotationToBodyFixedXYZ``): Rx(a0) Ry(a1) Rz(a2)."""
    cx, cy, cz = np.cos(a)
    sx, sy, sz = np.sin(a)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rx @ ry @ rz


def _configs():
    rng = np.random.default_rng(7)
    out = []
    for double in (False, True):
        for name, axis, sign in QUADRANTS:
            out.append(dict(quadrant=name, axis=axis, sign=sign, double=double,
                            radius=float(rng.uniform(0.04, 0.4)),
                            rot=rng.uniform(-1.2, 1.2, 3), trans=rng.uniform(-0.5, 0.5, 3)))
    return out


def _build(configs, n_points=2):
    """One model: per configuration ``n_points`` bodies on FreeJoints, one PathActuator through
    their origins, wrapping over its own sphere (and the far sphere when ``double``)."""
    model = osim.Model()
    model.setName("wrap_sphere_check")
    ground = model.getGround()
    far = osim.WrapSphere()
    far.setName("far_sphere")
    far.set_radius(0.01)
    far.set_translation(osim.Vec3(100.0, 100.0, 100.0))
    ground.addWrapObject(far)
    joints, acts = [], []
    for k, cfg in enumerate(configs):
        sphere = osim.WrapSphere()
        sphere.setName(f"sphere{k}")
        sphere.set_radius(cfg["radius"])
        sphere.set_xyz_body_rotation(osim.Vec3(*cfg["rot"]))
        sphere.set_translation(osim.Vec3(*cfg["trans"]))
        sphere.set_quadrant(cfg["quadrant"])
        ground.addWrapObject(sphere)
        act = osim.PathActuator()
        act.setName(f"act{k}")
        js = []
        for e in range(n_points):
            body = osim.Body(f"b{k}_{e}", 1.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
            joint = osim.FreeJoint(f"j{k}_{e}", ground, body)
            model.addBody(body)
            model.addJoint(joint)
            act.addNewPathPoint(f"act{k}_p{e}", body, osim.Vec3(0))
            js.append(joint)
        model.addForce(act)
        act.updGeometryPath().addPathWrap(sphere)
        if cfg["double"]:
            act.updGeometryPath().addPathWrap(far)
        joints.append(js)
        acts.append(act)
    state = model.initSystem()
    return model, state, joints, acts


def _place(model, state, joints, points):
    """Put path point e of actuator c at ``points[c, e]`` (ground) and realize positions."""
    for c, js in enumerate(joints):
        for e, joint in enumerate(js):
            for i in range(3):
                joint.getCoordinate(3 + i).setValue(state, float(points[c, e, i]), False)
    model.realizePosition(state)


def _poses(cfg, rng, n):
    """End points in the sphere frame covering every branch of ``wrapLine``.

    Blocks of ``n // 7``: p1 just outside the sphere on a shallow line (far-side wraps); wrap on/off (closest
    approach R (1 +- 1e-7..1e-3)); long segments (OpenSim's ``tt < 1`` m test); p1, then p2, within
    1e-3 R of the quadrant plane; both ends off the constrained side; random pairs; the rest
    segments piercing the sphere anywhere.
    """
    r, ax, sg = cfg["radius"], cfg["axis"], cfg["sign"]
    k = n // 7
    d = rng.normal(size=(n, 3))
    d[4 * k:5 * k, ax] = 0.0  # same-side block: the line parallel to the quadrant plane
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    o = rng.normal(size=(n, 3))
    o -= np.sum(o * d, axis=1, keepdims=True) * d
    o /= np.linalg.norm(o, axis=1, keepdims=True)
    o[4 * k:5 * k, ax] = -(sg if sg else 1) * np.abs(o[4 * k:5 * k, ax])
    frac = rng.uniform(0.0, 1.25, n)  # closest approach of the line / R
    frac[k:2 * k] = 1.0 + rng.choice([-1.0, 1.0], k) * 10.0 ** rng.uniform(-7, -3, k)
    reach = rng.uniform(1.05, 5.0, (n, 2)) * r
    # p1 just outside (|p1| = 1..1.25 R) on a shallow line: where the constrained quadrants go
    # round the far side
    frac[:k] = rng.uniform(0.5, 1.0, k)
    reach[:k, 0] = np.sqrt(rng.uniform(1.0, 1.25, k) ** 2 - frac[:k] ** 2) * r
    reach[2 * k:3 * k] = rng.uniform(0.5, 2.5, (k, 2))
    p1 = frac[:, None] * r * o - reach[:, :1] * d
    p2 = frac[:, None] * r * o + reach[:, 1:] * d
    p1[3 * k:3 * k + k // 2, ax] = rng.normal(0, 1e-3, k // 2) * r
    p2[3 * k + k // 2:4 * k, ax] = rng.normal(0, 1e-3, k - k // 2) * r
    p1[5 * k:6 * k] = rng.uniform(-3, 3, (k, 3)) * r
    p2[5 * k:6 * k] = rng.uniform(-3, 3, (k, 3)) * r
    return p1, p2


def test_wrap_sphere_matches_opensim():
    configs = _configs()
    model, state, joints, acts = _build(configs)
    rng = np.random.default_rng(11)
    nc = len(configs)
    rot = np.stack([_rot_xyz(c["rot"]) for c in configs])
    trans = np.stack([c["trans"] for c in configs])
    local = [_poses(c, rng, N_POSES) for c in configs]
    p1l = np.stack([p[0] for p in local], axis=1)  # (poses, configs, 3)
    p2l = np.stack([p[1] for p in local], axis=1)
    p1g = np.einsum("cij,pcj->pci", rot, p1l) + trans
    p2g = np.einsum("cij,pcj->pci", rot, p2l) + trans

    lengths = np.zeros((N_POSES, nc))
    wrapped = np.zeros((N_POSES, nc), bool)
    g1 = np.zeros((N_POSES, nc, 3))
    g2 = np.zeros((N_POSES, nc, 3))
    t1 = np.zeros((N_POSES, nc, 3))  # OpenSim's tangent points (ground), where it wraps
    t2 = np.zeros((N_POSES, nc, 3))
    arc = np.zeros((N_POSES, nc))  # OpenSim's wrap_path_length
    for p in range(N_POSES):
        _place(model, state, joints, np.stack([p1g[p], p2g[p]], axis=1))
        for c in range(nc):
            gp = acts[c].getGeometryPath()
            lengths[p, c] = gp.getLength(state)
            cur = gp.getCurrentPath(state)
            wrapped[p, c] = cur.getSize() == 4
            g1[p, c] = cur.get(0).getLocationInGround(state).to_numpy()
            g2[p, c] = cur.get(cur.getSize() - 1).getLocationInGround(state).to_numpy()
            if wrapped[p, c]:
                t1[p, c] = cur.get(1).getLocationInGround(state).to_numpy()
                t2[p, c] = cur.get(2).getLocationInGround(state).to_numpy()
                arc[p, c] = osim.PathWrapPoint.safeDownCast(cur.get(2)).getWrapLength(state)
    # FreeJoint translations place the points where we asked
    np.testing.assert_allclose(g1, p1g, atol=1e-14)
    np.testing.assert_allclose(g2, p2g, atol=1e-14)

    # OpenSim's own ground points, into each sphere frame by the sphere's own transform (the
    # inputs wrapLine sees, to the bit); our body-fixed XYZ reading of that transform is checked
    xforms = [model.getGround().getWrapObject(f"sphere{c}").getTransform() for c in range(nc)]
    mats = [[[x.R().get(i, j) for j in range(3)] for i in range(3)] for x in xforms]
    np.testing.assert_allclose(mats, rot, rtol=0, atol=1e-15)
    np.testing.assert_allclose([x.p().to_numpy() for x in xforms], trans, rtol=0, atol=0)

    def to_sphere(g):
        return np.array([[xforms[c].shiftBaseStationToFrame(osim.Vec3(*g[p, c])).to_numpy()
                          for c in range(nc)] for p in range(len(g))])

    q1, q2 = to_sphere(g1), to_sphere(g2)
    radius = np.array([c["radius"] for c in configs])
    axis = np.array([c["axis"] for c in configs])
    sign = np.array([c["sign"] for c in configs])
    single = np.array([not c["double"] for c in configs])

    @jax.jit
    def total(q1, q2):
        def one(a, b, r, ax, sg, sw):
            w = wrap_sphere(a, b, r, ax, sg, sw)
            wl = jnp.linalg.norm(a - w.r1) + w.length + jnp.linalg.norm(w.r2 - b)
            return jnp.where(w.wraps, wl, jnp.linalg.norm(a - b)), w
        over_cfg = jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0))
        return jax.vmap(over_cfg, in_axes=(0, 0, None, None, None, None))(
            q1, q2, radius, axis, sign, single)

    length_jax, w = jax.device_get(total(jnp.asarray(q1), jnp.asarray(q2)))
    # every code occurs, wraps both ways round (negative arc = OpenSim's far-side wrap)
    assert {0, 1, 2, 3} <= set(np.unique(w.code).tolist())
    assert w.wraps.sum() > N_POSES * nc // 4 and (w.length < 0).sum() >= 10
    np.testing.assert_array_equal(w.wraps, wrapped)

    # tangent points (OpenSim's are in ground)
    r1g = np.einsum("cij,pcj->pci", rot, w.r1) + trans
    r2g = np.einsum("cij,pcj->pci", rot, w.r2) + trans
    err_r = max(np.abs(r1g - t1)[wrapped].max(), np.abs(r2g - t2)[wrapped].max())
    # OpenSim's arc is acos(r1^ . r2^): for a short arc theta one ulp (eps/2) of that cosine near 1
    # moves it by R eps / (2 theta), so its round-off grows near wrap onset (~1e-9 m at theta ~ 1e-8)
    # while ours (atan2) stays exact.  Allowed: 4 such ulps on top of 1e-12 m.
    theta = np.abs(arc) / radius
    eps = np.finfo(float).eps
    tol = 1e-12 + 4.0 * radius * eps / np.maximum(theta, 1e-300)
    err_arc = np.abs(w.length - arc)
    err = np.abs(length_jax - lengths)
    well = theta > 1e-5
    print(f"\n{err.size} pairs, {int(wrapped.sum())} wrapped ({int((w.length < 0).sum())} far-side): "
          f"max |r_jax - r_opensim| = {err_r:.2e} m, max |arc| diff = {err_arc[wrapped].max():.2e} m, "
          f"max |L| diff = {err.max():.2e} m "
          f"(arcs > 1e-5 rad: {err[well | ~wrapped].max():.2e} m)")
    assert err_r <= 1e-12
    assert np.all(err_arc[wrapped] <= tol[wrapped])
    assert np.all(err <= np.where(wrapped, tol, 1e-12))
    assert err.max() <= 1e-9


def test_wrap_codes_choose_the_segment_like_opensim():
    """The codes, through OpenSim's choice of segment on a three-point path A-B-C.

    ``GeometryPath::applyWrapObjects`` wraps AB if its code is MANDATORY; otherwise it keeps the
    WRAPPED segment with the smaller length change, and a MANDATORY BC overrides.  Predicting from
    ``wrap_sphere``'s codes which segment OpenSim wraps (or none) checks WRAPPED vs MANDATORY vs
    NO_WRAP, which the length of a two-point path cannot tell apart.  A and C lie beyond the
    sphere from B, 0.3-2 m away, so both segments pierce it and OpenSim's metric ``tt < 1`` test
    decides either way.
    """
    rng = np.random.default_rng(5)
    configs = [dict(quadrant=q, axis=ax, sign=sg, double=False, radius=float(rng.uniform(0.1, 0.3)),
                    rot=rng.uniform(-1.2, 1.2, 3), trans=rng.uniform(-0.5, 0.5, 3))
               for q, ax, sg in QUADRANTS]
    model, state, joints, acts = _build(configs, n_points=3)
    nc, n = len(configs), 60
    rot = np.stack([_rot_xyz(c["rot"]) for c in configs])
    trans = np.stack([c["trans"] for c in configs])
    radius = np.array([c["radius"] for c in configs])
    u = rng.normal(size=(n, nc, 3, 3))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    dist = rng.uniform(0.3, 2.0, (n, nc, 3, 1))
    b = u[:, :, 1] * dist[:, :, 1]
    bhat = u[:, :, 1]
    # A and C: opposite B, off the axis through B by less than R
    a_c = -bhat[:, :, None] * dist[:, :, [0, 2]] + 0.7 * radius[None, :, None, None] * u[:, :, [0, 2]]
    local = np.stack([a_c[:, :, 0], b, a_c[:, :, 1]], axis=2)  # (n, nc, 3 points, 3)
    ground_pts = np.einsum("cij,pcej->pcei", rot, local) + trans[:, None]

    seg = np.full((n, nc), -1)
    lengths = np.zeros((n, nc))
    for p in range(n):
        _place(model, state, joints, ground_pts[p])
        for c in range(nc):
            gp = acts[c].getGeometryPath()
            lengths[p, c] = gp.getLength(state)
            cur = gp.getCurrentPath(state)
            for i in range(cur.getSize()):
                if cur.get(i).getWrapObject() is not None:
                    seg[p, c] = i - 1  # 0: after A, 1: after B
                    break

    axis = np.array([c["axis"] for c in configs])
    sign = np.array([c["sign"] for c in configs])

    @jax.jit
    def segments(a, b, r, ax, sg):
        def one(a, b, r, ax, sg):
            w = wrap_sphere(a, b, r, ax, sg, True)
            wrapped = jnp.linalg.norm(a - w.r1) + w.length + jnp.linalg.norm(w.r2 - b)
            return w.code, w.wraps, wrapped, jnp.linalg.norm(a - b)
        return jax.vmap(one)(a, b, r, ax, sg)

    # AB and BC of every path as one flat batch
    starts = np.concatenate([local[:, :, 0], local[:, :, 1]]).reshape(-1, 3)
    ends = np.concatenate([local[:, :, 1], local[:, :, 2]]).reshape(-1, 3)
    tile = lambda v: np.tile(v, 2 * n)  # noqa: E731
    out = jax.device_get(segments(starts, ends, tile(radius), tile(axis), tile(sign)))
    (c_ab, c_bc), (w_ab, w_bc), (l_ab, l_bc), (s_ab, s_bc) = (o.reshape(2, n, nc) for o in out)
    # OpenSim's applyWrapObjects, from our codes
    d_ab, d_bc = l_ab - s_ab, l_bc - s_bc
    pick_ab = (c_ab == 3) | ((c_ab == 2) & ~(c_bc == 3) & ~((c_bc == 2) & (d_bc < d_ab)))
    pick_bc = ~(c_ab == 3) & ((c_bc == 3) | ((c_bc == 2) & ~((c_ab == 2) & (d_ab <= d_bc))))
    pick_ab &= w_ab
    pick_bc &= w_bc
    expect = np.where(pick_ab, 0, np.where(pick_bc, 1, -1))
    codes = set(zip(c_ab.ravel().tolist(), c_bc.ravel().tolist()))
    assert {(2, 3), (3, 3), (2, 2)} <= codes and (0 in c_ab or 0 in c_bc)
    np.testing.assert_array_equal(seg, expect)
    total = np.where(expect == 0, l_ab + s_bc, np.where(expect == 1, s_ab + l_bc, s_ab + s_bc))
    err = np.abs(total - lengths)
    print(f"\nthree-point paths: {err.size}, codes (AB, BC) seen {sorted(codes)}, "
          f"max |L| diff = {err.max():.2e} m")
    assert err.max() <= 1e-9
