"""``wrap_torus`` against live OpenSim 4.6 (``WrapTorus`` in a ``GeometryPath``).

One model, built once: per configuration two bodies on ``FreeJoint``s carry path points 1 and 2
(their translations place the points anywhere in ground) and one ``PathActuator`` wraps over its
own ``WrapTorus`` on ground, rotated (``xyz_body_rotation``) and translated, with quadrant "all",
+-x, +-y, +-z; every configuration comes twice, the second with a second ``PathWrap`` over a
far-away cylinder (OpenSim's ``singleWrap`` false, so the torus's inner cylinder adjusts its
tangent points).  Point pairs per configuration: random pairs around the torus, segments grazing
the tube (wrap on/off within 1e-7 of the tube radius), segments through the hole, long segments,
end points inside the tube (``wrapped`` without a path), lines passing near the torus axis, and
pairs on which OpenSim's lmdif stops far (> 1e-7 m) from the root of its residual (selected here
by a few Newton steps from the stopped iterate).  OpenSim's ``getLength`` must equal
``|p1 - r1| + length + |r2 - p2|`` (``|p1 - p2|`` without a wrap) to 1e-9 m, OpenSim's current
path must hold two wrap points exactly when ``WrapLine.wraps``, and those must equal r1, r2.  The
end points enter ``wrap_torus`` transformed by the torus's own ``getTransform()`` (what
``wrapLine`` receives).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mbjax.wrapping.torus import _circle_resid, _direction, _solve_u, wrap_torus

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim")

#: (quadrant name, wrap_axis, wrap_sign)
QUADRANTS = [("all", 0, 0), ("+x", 0, 1), ("-x", 0, -1), ("y", 1, 1), ("-y", 1, -1), ("z", 2, 1),
             ("-z", 2, -1)]
N_POSES = 210  # 7 blocks of 30
TOL = 1e-9


def _configs():
    rng = np.random.default_rng(21)
    out = []
    for double in (False, True):
        for name, axis, sign in QUADRANTS:
            ro = float(rng.uniform(0.05, 0.15))
            out.append(dict(quadrant=name, axis=axis, sign=sign, double=double, outer=ro,
                            inner=float(rng.uniform(0.15, 0.45) * ro),
                            rot=rng.uniform(-1.2, 1.2, 3), trans=rng.uniform(-0.3, 0.3, 3)))
    return out


def _build(configs):
    model = osim.Model()
    model.setName("wrap_torus_check")
    ground = model.getGround()
    far = osim.WrapCylinder()
    far.setName("far_cylinder")
    far.set_radius(0.01)
    far.set_length(0.1)
    far.set_translation(osim.Vec3(100.0, 100.0, 100.0))
    ground.addWrapObject(far)
    joints, acts = [], []
    for k, cfg in enumerate(configs):
        torus = osim.WrapTorus()
        torus.setName(f"torus{k}")
        torus.set_inner_radius(cfg["inner"])
        torus.set_outer_radius(cfg["outer"])
        torus.set_xyz_body_rotation(osim.Vec3(*cfg["rot"]))
        torus.set_translation(osim.Vec3(*cfg["trans"]))
        torus.set_quadrant(cfg["quadrant"])
        ground.addWrapObject(torus)
        act = osim.PathActuator()
        act.setName(f"act{k}")
        js = []
        for e in range(2):
            body = osim.Body(f"b{k}_{e}", 1.0, osim.Vec3(0), osim.Inertia(0.1, 0.1, 0.1))
            joint = osim.FreeJoint(f"j{k}_{e}", ground, body)
            model.addBody(body)
            model.addJoint(joint)
            act.addNewPathPoint(f"act{k}_p{e}", body, osim.Vec3(0))
            js.append(joint)
        model.addForce(act)
        act.updGeometryPath().addPathWrap(torus)
        if cfg["double"]:
            act.updGeometryPath().addPathWrap(far)
        joints.append(js)
        acts.append(act)
    model.updDisplayHints().disableVisualization()
    state = model.initSystem()
    return model, state, joints, acts


@jax.jit
def _lmdif_gap(p1, p2, ro):
    """|u_lmdif - root| of the first pass (u along the unit direction, metres), by Newton steps
    from OpenSim's stopped iterate (case selection only)."""
    def one(a, b, r):
        n = _direction(a, b)
        u = _solve_u(a, n, r)
        f = lambda v: _circle_resid(v, a, n, r)  # noqa: E731
        v = u
        for _ in range(8):
            v = v - f(v) / jax.grad(f)(v)
        return jnp.abs(v - u)
    return jax.vmap(one, (0, 0, None))(p1, p2, ro)


def _poses(cfg, rng, n):
    """End points in the torus frame, in 7 blocks (see the module docstring)."""
    ro, ri = cfg["outer"], cfg["inner"]
    k = n // 7

    def circle(m):
        phi = rng.uniform(-np.pi, np.pi, m)
        er = np.stack([np.cos(phi), np.sin(phi), 0 * phi], -1)
        et = np.stack([-np.sin(phi), np.cos(phi), 0 * phi], -1)
        return ro * er, er, et

    # 0: random pairs around the torus (some ends inside the tube)
    box = np.array([2.0 * ro, 2.0 * ro, 1.5 * ro])
    p1 = [rng.uniform(-1, 1, (k, 3)) * box]
    p2 = [rng.uniform(-1, 1, (k, 3)) * box]
    # 1: grazing the tube: closest approach to the tube centre ri (1 +- 1e-7..1e-2), direction
    # along the circle's tangent tilted in the tube's cross-section
    c, er, et = circle(k)
    psi = rng.uniform(-np.pi, np.pi, k)
    ez = np.array([0.0, 0.0, 1.0])
    o = np.cos(psi)[:, None] * er + np.sin(psi)[:, None] * ez
    d = et + rng.uniform(-0.3, 0.3, (k, 1)) * (np.sin(psi)[:, None] * er - np.cos(psi)[:, None] * ez)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    gap = 1.0 + rng.choice([-1.0, 1.0], k) * 10.0 ** rng.uniform(-7, -2, k)
    mid = c + ri * gap[:, None] * o
    reach = rng.uniform(0.3, 1.0, (k, 2)) * ro
    p1.append(mid - reach[:, :1] * d)
    p2.append(mid + reach[:, 1:] * d)
    # 2: through the hole, one end above and one below the torus plane
    a = rng.uniform(-np.pi, np.pi, k)
    b = a + rng.uniform(-0.5, 0.5, k)
    rho = (ro - ri * rng.uniform(0.3, 1.6, (2, k)))
    h = rng.uniform(0.5, 2.0, (2, k)) * ri
    p1.append(np.stack([rho[0] * np.cos(a), rho[0] * np.sin(a), h[0]], -1))
    p2.append(np.stack([rho[1] * np.cos(b), rho[1] * np.sin(b), -h[1]], -1))
    # 3: long segments (0.5-2 m) passing within 2 ro of the torus centre
    d = rng.normal(size=(k, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    mid = rng.uniform(-1, 1, (k, 3)) * box
    reach = rng.uniform(0.25, 1.0, (k, 2))
    p1.append(mid - reach[:, :1] * d)
    p2.append(mid + reach[:, 1:] * d)
    # 4: one end inside the tube
    c, er, et = circle(k)
    inside = c + ri * rng.uniform(0.0, 0.9, (k, 1)) * np.stack([er[:, 0], er[:, 1], rng.uniform(-1, 1, k)], -1) / np.sqrt(2)
    far = rng.uniform(-1, 1, (k, 3)) * box * 1.5
    swap = rng.uniform(size=k) < 0.5
    p1.append(np.where(swap[:, None], far, inside))
    p2.append(np.where(swap[:, None], inside, far))
    # 5: lines passing within 1e-4..0.3 ro of the torus axis, steep or shallow
    d = rng.normal(size=(k, 3))
    d[: k // 2, 2] *= 10.0
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q = np.stack([rng.normal(size=k), rng.normal(size=k), rng.uniform(-1, 1, k) * ro], -1)
    q[:, :2] *= (ro * 10.0 ** rng.uniform(-4, -0.5, k) / np.linalg.norm(q[:, :2], axis=1))[:, None]
    reach = rng.uniform(0.5, 3.0, (k, 2)) * ro
    p1.append(q - reach[:, :1] * d)
    p2.append(q + reach[:, 1:] * d)
    # 6 (and the rest): pairs on which lmdif stops > 1e-7 m from the residual's root
    m = n - 6 * k
    cand1 = rng.uniform(-1, 1, (40 * m, 3)) * box * 1.5
    cand2 = rng.uniform(-1, 1, (40 * m, 3)) * box * 1.5
    gap = np.asarray(_lmdif_gap(cand1, cand2, ro))
    pick = np.argsort(-np.where(np.isfinite(gap), gap, 0.0))[:m]
    assert gap[pick].min() > 1e-7
    p1.append(cand1[pick])
    p2.append(cand2[pick])
    return np.concatenate(p1), np.concatenate(p2)


def _rot_xyz(a):
    """Body-fixed X-Y-Z rotation (Simbody ``setRotationToBodyFixedXYZ``): Rx(a0) Ry(a1) Rz(a2)."""
    cx, cy, cz = np.cos(a)
    sx, sy, sz = np.sin(a)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rx @ ry @ rz


def opensim_reference():
    """(configs, q1, q2 in each torus frame, OpenSim lengths, wrapped, tangent points (ground),
    rotations, translations) for the whole sample; shared with the report script."""
    configs = _configs()
    model, state, joints, acts = _build(configs)
    rng = np.random.default_rng(17)
    nc = len(configs)
    rot = np.stack([_rot_xyz(c["rot"]) for c in configs])
    trans = np.stack([c["trans"] for c in configs])
    local = [_poses(c, rng, N_POSES) for c in configs]
    p1g = np.einsum("cij,pcj->pci", rot, np.stack([p[0] for p in local], 1)) + trans
    p2g = np.einsum("cij,pcj->pci", rot, np.stack([p[1] for p in local], 1)) + trans
    lengths = np.zeros((N_POSES, nc))
    wrapped = np.zeros((N_POSES, nc), bool)
    g1, g2, t1, t2 = (np.zeros((N_POSES, nc, 3)) for _ in range(4))
    for p in range(N_POSES):
        for c, js in enumerate(joints):
            for e, pts in enumerate((p1g, p2g)):
                for i in range(3):
                    js[e].getCoordinate(3 + i).setValue(state, float(pts[p, c, i]), False)
        model.realizePosition(state)
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
    np.testing.assert_allclose(g1, p1g, atol=1e-14)
    np.testing.assert_allclose(g2, p2g, atol=1e-14)
    xforms = [model.getGround().getWrapObject(f"torus{c}").getTransform() for c in range(nc)]
    mats = [[[x.R().get(i, j) for j in range(3)] for i in range(3)] for x in xforms]
    np.testing.assert_allclose(mats, rot, rtol=0, atol=1e-15)

    def to_torus(g):
        return np.array([[xforms[c].shiftBaseStationToFrame(osim.Vec3(*g[p, c])).to_numpy()
                          for c in range(nc)] for p in range(len(g))])

    return configs, to_torus(g1), to_torus(g2), lengths, wrapped, t1, t2, rot, trans


def ours(fn, configs, q1, q2):
    """(lengths, WrapLine) of ``fn`` (wrap_torus or another implementation) on the sample."""
    ri = jnp.asarray([c["inner"] for c in configs])  # device arrays: a host array is no constant of a JVP rule
    ro = jnp.asarray([c["outer"] for c in configs])
    axis = np.array([c["axis"] for c in configs])
    sign = np.array([c["sign"] for c in configs])
    single = np.array([not c["double"] for c in configs])

    @jax.jit
    def total(q1, q2):
        def one(a, b, ri, ro, ax, sg, sw):
            w = fn(a, b, ri, ro, ax, sg, sw)
            wl = jnp.linalg.norm(a - w.r1) + w.length + jnp.linalg.norm(w.r2 - b)
            return jnp.where(w.wraps, wl, jnp.linalg.norm(a - b)), w
        over_cfg = jax.vmap(one, in_axes=(0, 0, 0, 0, 0, 0, 0))
        return jax.vmap(over_cfg, in_axes=(0, 0, None, None, None, None, None))(q1, q2, ri, ro, axis, sign, single)

    return jax.device_get(total(jnp.asarray(q1), jnp.asarray(q2)))


def test_wrap_torus_matches_opensim():
    configs, q1, q2, lengths, wrapped, t1, t2, rot, trans = opensim_reference()
    length_jax, w = ours(wrap_torus, configs, q1, q2)
    err = np.abs(length_jax - lengths)
    r1g = np.einsum("cij,pcj->pci", rot, w.r1) + trans
    r2g = np.einsum("cij,pcj->pci", rot, w.r2) + trans
    err_r = max(np.abs(r1g - t1)[wrapped].max(), np.abs(r2g - t2)[wrapped].max())
    found_no_path = (w.code > 0) & ~w.has_path
    print(f"\n{err.size} pairs, {int(wrapped.sum())} wrapped, {int(found_no_path.sum())} closest point "
          f"found but no inner-cylinder path: max |L - OpenSim| = {err.max():.2e} m (wrapped "
          f"{err[wrapped].max():.2e} m), max |r - OpenSim| = {err_r:.2e} m")
    np.testing.assert_array_equal(w.wraps, wrapped)
    assert wrapped.sum() > err.size // 4 and (~wrapped).sum() > err.size // 10
    assert found_no_path.sum() > 20 and (w.code == 0).sum() > 20  # both ways of not wrapping
    assert err.max() <= TOL, np.unravel_index(np.argmax(err), err.shape)
    assert err_r <= TOL
