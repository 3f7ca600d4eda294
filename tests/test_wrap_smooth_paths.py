"""Smooth wrapping of whole models (mbjax.wrapping.smooth_path): load_osim(wrapping="smooth") and
smooth_wrapping(model), checked against independent references.

* where OpenSim's path is the shortest path (one cylinder with both ends at one axial height, on
  the quadrant's side; one sphere) the smooth lengths equal the OpenSim-exact default's;
* a path with wraps in disjoint ranges equals the sum of the one-segment closed forms
  (tests/test_wrap_smooth.py checks those against a minimisation and OpenSim's sphere);
* moment arms equal −jacrev = −jacfwd = central differences of the lengths, check_grads in both modes;
* one-sided slopes meet across the start of contact (C¹);
* two surfaces on one piece chain through the first one's tangent points, under jax.grad;
* ellipsoids: equal semi-axes equal the sphere's closed form, moment arms equal −jacrev and central
  differences; arm26 (two ellipsoids, two cylinders) loads smooth, its ellipsoid quadrants named in a warning;
* tori are refused by name, an unknown ``wrapping=`` lists the choices.
OpenSim 4.6 itself and Rajagopal2016: tests/validation/test_wrap_smooth_opensim.py.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import mbjax
from mbjax.io import load_osim
from mbjax.muscles import PathPoint, opensim_moment_arms, with_muscles
from mbjax._kinematics import forward_pass
from mbjax.muscles.geometry import path_geometry, wrap_frames
from mbjax.muscles.paths import build_paths, get_paths
from mbjax.wrapping import PathWrap, WrapObject, smooth_wrapping, with_wrapping
from mbjax.wrapping.objects import xyz_body_fixed
from mbjax.wrapping.smooth_path import smooth_wrap_paths
from mbjax.wrapping.smooth import cylinder_geodesic, cylinder_geodesic_length, sphere_geodesic, sphere_geodesic_length

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import ARM26, needs_arm26  # noqa: E402

R, A, C = 0.05, 0.3, 0.2


def _hinge(kind="WrapCylinder", h=0.0, quadrant="all", z1=0.0):
    """A link on a pin about z; the surface sits on the hinge and turns with the link; the path runs
    from ground (A, 0, z1) to the link's (C, 0, h)."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    dims = (R, 0.5, 0.0) if kind == "WrapCylinder" else (R, 0.0, 0.0)
    obj = WrapObject("w", kind, "link", dims, np.eye(3), (0.0, 0.0, 0.0), quadrant)
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [A, 0.0, z1]), PathPoint("link", [C, 0.0, h])]},
                        wrap_objects=[obj], path_wraps={"m": [PathWrap("w")]})
    return with_muscles(model, paths)


def _finger():
    """Two pins (θ1 at the origin, θ2 at (0.3, 0, 0) on link 1), a cylinder on joint 1 (tilted) and a
    sphere on joint 2.  ``split``: via point on link 1, the cylinder wraps points 1-2 and the sphere
    2-3 (disjoint ranges); ``chain``: origin to insertion, both wraps on one segment."""
    b = mbjax.ModelBuilder(["t1", "t2"])
    b.add_body("l1", joint="revolute", axis=[0, 0, 1], map="t1", mass=1.0, inertia=np.eye(3) * 0.01)
    b.add_body("l2", parent="l1", joint="revolute", axis=[0, 0, 1], map="t2", translation=[0.3, 0.0, 0.0],
               mass=0.5, inertia=np.eye(3) * 0.01)
    model = b.build()
    cyl = WrapObject("cyl", "WrapCylinder", "l1", (0.04, 0.2, 0.0), xyz_body_fixed((0.15, -0.1, 0.0)),
                     (0.0, 0.0, 0.005), "-y")
    sph = WrapObject("sph", "WrapSphere", "l2", (0.03, 0.0, 0.0), np.eye(3), (0.0, 0.0, 0.0))
    paths = build_paths(
        model.body_names, model.coordinate_names,
        {"split": [PathPoint("ground", [-0.2, -0.06, 0.01]), PathPoint("l1", [0.15, -0.05, 0.0]),
                   PathPoint("l2", [0.15, -0.03, 0.01])],
         "chain": [PathPoint("ground", [-0.2, -0.07, -0.01]), PathPoint("l2", [0.18, -0.035, 0.02])]},
        wrap_objects=[cyl, sph],
        path_wraps={"split": [PathWrap("cyl", range=(1, 2)), PathWrap("sph", range=(2, 3))],
                    "chain": [PathWrap("cyl"), PathWrap("sph")]})
    return with_muscles(model, paths)


_BATCH = jax.jit(jax.vmap(mbjax.muscle_lengths, in_axes=(None, 0)))  # one cache: same model structure, one compile


def _lengths(model, qs):
    return np.asarray(_BATCH(model, jnp.asarray(qs)))


def _hinge_three():
    """The hinge with three muscles, each over its own surface on the hinge: cylinder (quadrant all),
    cylinder (+y: the long way round), sphere (ends at different heights)."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    objects = [WrapObject("c_all", "WrapCylinder", "link", (R, 0.5, 0.0)),
               WrapObject("c_py", "WrapCylinder", "link", (R, 0.5, 0.0), quadrant="+y"),
               WrapObject("s", "WrapSphere", "link", (R, 0.0, 0.0))]
    flat = [PathPoint("ground", [A, 0.0, 0.0]), PathPoint("link", [C, 0.0, 0.0])]
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"c_all": flat, "c_py": flat,
                         "s": [PathPoint("ground", [A, 0.0, -0.02]), PathPoint("link", [C, 0.0, 0.03])]},
                        wrap_objects=objects, path_wraps={n: [PathWrap(n)] for n in ("c_all", "c_py", "s")})
    return with_muscles(model, paths)


def test_single_wraps_equal_opensim_where_its_path_is_the_shortest():
    """One cylinder (ends at one axial height: OpenSim's tangent points are exact there; quadrant all
    and +y, the long way round) and one sphere (OpenSim's great circle): ≤ 1e-9 m over clear and
    wrapped poses."""
    thetas = np.linspace(1.65, 3.1, 12)[:, None]  # from clear (onset 2.72) to wrapped
    opensim = _hinge_three()
    smooth = smooth_wrapping(opensim)
    assert get_paths(smooth).wraps.wrapping == "smooth" and get_paths(opensim).wraps.wrapping == "opensim"
    got, ref = _lengths(smooth, thetas), _lengths(opensim, thetas)
    straight = np.sqrt(A**2 + C**2 - 2 * A * C * np.cos(thetas) + np.array([0.0, 0.0, 0.05]) ** 2)
    assert np.all(np.sum(got > straight + 1e-6, axis=0) >= 3)  # every muscle wraps at some poses
    assert np.abs(got - ref).max() <= 1e-9, np.abs(got - ref).max(axis=0)
    print(f"smooth vs OpenSim-exact where both are the shortest path: {np.abs(got - ref).max():.1e} m")
    # switching back gives the OpenSim-exact default, bit for bit (a static flag, same compiled program)
    np.testing.assert_array_equal(_lengths(with_wrapping(smooth, "opensim"), thetas), ref)


def test_disjoint_ranges_are_sums_of_segment_geodesics():
    model = smooth_wrapping(_finger())
    rng = np.random.default_rng(0)
    qs = rng.uniform(-0.2, 1.2, (6, 2))
    got = _lengths(model, qs)[:, 0]
    cyl_rot = xyz_body_fixed((0.15, -0.1, 0.0))
    for q, length in zip(qs, got):
        poses = np.asarray(mbjax.body_poses(model, jnp.asarray(q)))
        x0 = np.array([-0.2, -0.06, 0.01])
        x1 = poses[0, :3, :3] @ [0.15, -0.05, 0.0] + poses[0, :3, 3]
        x2 = poses[1, :3, :3] @ [0.15, -0.03, 0.01] + poses[1, :3, 3]
        rc, oc = poses[0, :3, :3] @ cyl_rot, poses[0, :3, :3] @ [0.0, 0.0, 0.005] + poses[0, :3, 3]
        a, b = rc.T @ (x0 - oc), rc.T @ (x1 - oc)
        # quadrant -y on this cylinder: the side is fixed by the ends' angles from -y (here both sides of it)
        side = 1 if np.arctan2(b[0], -b[1]) - np.arctan2(a[0], -a[1]) >= 0 else -1
        l1, _ = cylinder_geodesic_length(a, b, 0.04, side)
        l2, _ = sphere_geodesic_length(x1 - poses[1, :3, 3], x2 - poses[1, :3, 3], 0.03)
        assert abs(float(l1) + float(l2) - length) < 1e-12
    assert got.min() > 0


def test_moment_arms_are_minus_the_gradient_in_both_modes():
    model = smooth_wrapping(_finger())
    arms_of = jax.jit(lambda x: (mbjax.moment_arms(model, x), opensim_moment_arms(model, x)))
    rev_of = jax.jit(jax.jacrev(lambda x: mbjax.muscle_lengths(model, x)))  # moment_arms is forward mode
    qs = np.array([[0.55, 0.3], [1.05, 0.27], [0.7, 0.3]])  # both muscles over both surfaces, away from contact
    h = 1e-6
    steps = np.tile(h * np.eye(2), (3, 1))  # rows (pose, coordinate): 6, as in the test above (one compiled program)
    plus, minus = _lengths(model, np.repeat(qs, 2, 0) + steps), _lengths(model, np.repeat(qs, 2, 0) - steps)
    for q, fd in zip(jnp.asarray(qs), -((plus - minus) / (2 * h)).reshape(3, 2, -1)):
        arms, unit_force = (np.asarray(r) for r in arms_of(q))
        rev = -np.asarray(rev_of(q)).T
        np.testing.assert_allclose(arms, rev, atol=1e-13)
        np.testing.assert_allclose(arms, fd, atol=1e-8)
        assert np.all(np.abs(arms) > 1e-3)  # both muscles cross both joints
        # OpenSim's unit-force rule (static optimization, "opensim" moment arms) is the geometric one here
        np.testing.assert_allclose(unit_force, arms, atol=1e-13)


def test_tangent_points_pass_check_grads_in_both_modes():
    """The chaining reads the tangent points and arcs, not only lengths: their derivatives at random
    wrapped segments (both ends outside, away from contact), forward and reverse."""
    rng = np.random.default_rng(3)
    done = 0
    while done < 1:
        p1, p2 = rng.normal(size=3) * 0.15, rng.normal(size=3) * 0.15
        if min(np.hypot(*p1[:2]), np.hypot(*p2[:2]), np.linalg.norm(p1), np.linalg.norm(p2)) < 1.3 * R:
            continue
        cyl = cylinder_geodesic(p1, p2, R, jnp.asarray([0.0, -1.0]))
        sph = sphere_geodesic(p1, p2, R)
        if not (bool(cyl.wraps) and bool(sph.wraps)) or float(cyl.arc) < 1e-3 or float(sph.arc) < 1e-3:
            continue
        for fn in (cylinder_geodesic, sphere_geodesic):
            extra = (jnp.asarray([0.0, -1.0]),) if fn is cylinder_geodesic else ()

            @jax.jit
            def outputs(a, b, fn=fn, extra=extra):
                g = fn(a, b, R, *extra)
                return jnp.concatenate([g.t1, g.t2, g.arc[None], g.length[None]])

            check_grads(outputs, (jnp.asarray(p1), jnp.asarray(p2)), order=1, modes=("fwd", "rev"), eps=1e-6,
                        atol=1e-6, rtol=1e-6)
        done += 1


@pytest.mark.parametrize("kind", ["WrapCylinder", "WrapSphere"])
def test_c1_across_the_start_of_contact(kind):
    """θ crosses the pose where the segment starts to touch the surface (ends at different heights):
    the one-sided slopes meet, their gap shrinking with the step (first order)."""
    model = smooth_wrapping(_hinge(kind, h=0.05, z1=-0.02 if kind == "WrapSphere" else 0.0))
    # the length and its derivative (reverse mode) in one compiled program
    value_and_grad = jax.jit(jax.value_and_grad(lambda t: mbjax.muscle_lengths(model, jnp.reshape(t, (1,)))[0]))

    def length(t):
        return value_and_grad(t)[0]

    dz = 0.05 - (-0.02 if kind == "WrapSphere" else 0.0)

    def straight(t):
        return np.sqrt(A**2 + C**2 - 2 * A * C * np.cos(t) + dz**2)

    lo, hi = 2.0, 3.1
    assert abs(float(length(lo)) - straight(lo)) < 1e-14 and float(length(hi)) > straight(hi) + 1e-4
    for _ in range(45):  # bisect the contact
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if float(length(mid)) - straight(mid) < 1e-15 else (lo, mid)
    t0 = 0.5 * (lo + hi)
    gaps = []
    for d in (1e-3, 1e-4, 1e-5):
        left = (float(length(t0)) - float(length(t0 - d))) / d
        right = (float(length(t0 + d)) - float(length(t0))) / d
        gaps.append(abs(right - left))
    assert gaps[2] < 1e-5 and gaps[1] < 0.2 * gaps[0] and gaps[2] < 0.2 * gaps[1], gaps
    assert abs(float(value_and_grad(t0 - 1e-9)[1]) - float(value_and_grad(t0 + 1e-9)[1])) < 1e-7


def test_two_surfaces_on_one_piece_chain():
    """'chain': the cylinder's tangent points end the pieces the sphere then wraps (its gradient is
    checked in the moment-arm test above); refinement passes straighten the kink that leaves."""
    q = jnp.asarray([0.7, 0.3])
    smooth = smooth_wrapping(_finger())
    chain = smooth.muscle_names.index("chain")
    ws = get_paths(smooth).wraps
    rows, row = np.asarray(ws.muscles), list(ws.muscles).index(chain)

    def keep(name):  # the other wrap's slot switched off
        return dataclasses.replace(ws, used=tuple(tuple(u and ws.names[o] == name for o, u in zip(r, ur))
                                                   for r, ur in zip(ws.obj, ws.used)))

    @jax.jit
    def lengths(x):  # the chain's length: each surface alone, both after 0, 2, 5 passes; its chord; the default
        kin = forward_pass(smooth, x)
        geo = path_geometry(smooth, x, kin)
        args = (geo.world[rows], geo.active[rows], *wrap_frames(smooth, kin))
        out = [smooth_wrap_paths(keep("cyl"), *args).length[row], smooth_wrap_paths(keep("sph"), *args).length[row]]
        out += [smooth_wrap_paths(ws, *args, passes=n).length[row] for n in (0, 2, 5)]
        out += [jnp.linalg.norm(geo.world[chain, 1] - geo.world[chain, 0]), mbjax.muscle_lengths(smooth, x)[chain]]
        return jnp.stack(out)

    cyl, sph, sequential, both, converged, straight, default = (float(v) for v in lengths(q))
    assert abs(both - default) < 1e-15  # the default: 2 passes
    # the cylinder alone wraps the chord; the sphere misses the chord but obstructs the piece from
    # the cylinder's tangent point to the insertion, which it wraps only in the chain
    assert cyl > straight + 1e-2 and abs(sph - straight) < 1e-12, (cyl, sph, straight)
    assert both > cyl + 1e-3, (both, cyl)
    # refinement straightens the kink at the cylinder's T2: shorter, converged after two passes
    assert sequential > converged + 1e-7 and abs(both - converged) < 1e-7, (sequential, both, converged)


def _hinge_ellipsoid(radii):
    """The hinge with an ellipsoid (turned) on the link instead of the cylinder."""
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    obj = WrapObject("w", "WrapEllipsoid", "link", radii, xyz_body_fixed((0.3, -0.2, 0.1)), (0.0, 0.0, 0.0))
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [A, 0.0, -0.01]), PathPoint("link", [C, 0.0, 0.02])]},
                        wrap_objects=[obj], path_wraps={"m": [PathWrap("w")]})
    return with_muscles(model, paths)


@pytest.mark.extended  # 15 s; the sphere and ellipsoid paths are each checked against closed forms in CI
def test_ellipsoid_with_equal_semi_axes_is_the_sphere():
    thetas = np.linspace(2.3, 3.1, 9)[:, None]
    ell = _lengths(smooth_wrapping(_hinge_ellipsoid((R, R, R))), thetas)
    sph = _lengths(smooth_wrapping(_hinge("WrapSphere", h=0.02, z1=-0.01)), thetas)
    assert np.sum(ell[:, 0] > np.sqrt(A**2 + C**2 - 2 * A * C * np.cos(thetas[:, 0]) + 0.03**2) + 1e-4) >= 4
    np.testing.assert_allclose(ell, sph, rtol=0, atol=1e-9)


@pytest.mark.extended
def test_ellipsoid_moment_arms_are_minus_the_gradient():
    model = smooth_wrapping(_hinge_ellipsoid((0.06, 0.035, 0.045)))
    length = jax.jit(lambda t: mbjax.muscle_lengths(model, t)[0])
    arms = jax.jit(lambda t: mbjax.moment_arms(model, t)[:, 0])
    wrapped = 0
    for t in (2.6, 2.95, 3.1):
        q = jnp.asarray([t])
        straight = np.sqrt(A**2 + C**2 - 2 * A * C * np.cos(t) + 0.03**2)
        wrapped += float(length(q)) > straight + 1e-4
        fd = (float(length(q + 1e-6)) - float(length(q - 1e-6))) / 2e-6
        np.testing.assert_allclose(float(arms(q)[0]), -float(jax.jacrev(length)(q)[0]), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(float(arms(q)[0]), -fd, rtol=1e-6, atol=1e-9)
    assert wrapped >= 2


@needs_arm26
def test_arm26_loads_smooth_naming_the_quadrants_it_does_not_apply():
    with pytest.warns(UserWarning, match=r"arm26\.osim.*quadrant of 'TRIlonghh', 'BIClonghh' is not applied"):
        smooth = load_osim(ARM26, wrapping="smooth")
    assert mbjax.muscles.paths.get_paths(smooth).wraps.wrapping == "smooth"


@pytest.mark.extended  # compiles both wrap passes of arm26; the surfaces are checked one by one in CI
@needs_arm26
def test_arm26_loads_smooth_with_its_ellipsoids():
    with pytest.warns(UserWarning, match=r"arm26\.osim.*quadrant of 'TRIlonghh', 'BIClonghh' is not applied"):
        smooth = load_osim(ARM26, wrapping="smooth")
    exact = load_osim(ARM26)
    qs = np.array([[0.3, 0.4], [-0.2, 1.8]])
    ls, le = _lengths(smooth, qs), _lengths(exact, qs)
    assert np.isfinite(ls).all()
    # the muscles without an ellipsoid equal OpenSim's (one cylinder, on its quadrant's side, or
    # none) to OpenSim's apex-plane tangent points (a few micrometres; README, smooth wrapping)
    k = [smooth.muscle_names.index(n) for n in ("TRIlat", "TRImed", "BICshort", "BRA")]
    np.testing.assert_allclose(ls[:, k], le[:, k], atol=1e-5)
    # over the ellipsoids a taut cable without OpenSim's quadrants: millimetres from OpenSim
    assert np.abs(ls - le).max() < 0.02


@needs_arm26
def test_refusals_name_the_wrap_and_the_choices():
    with pytest.raises(ValueError, match=r"wrapping must be one of \('opensim', 'smooth'\), got 'geodesic'"):
        load_osim(ARM26, wrapping="geodesic")
    with pytest.raises(ValueError, match=r"one of \('opensim', 'smooth'\)"):
        with_wrapping(_hinge(), "exact")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        straight = load_osim(ARM26, wrapping="smooth", ignore_wrapping=True)  # straight lines: nothing to refuse
    assert get_paths(straight).wraps is None
    b = mbjax.ModelBuilder(["theta"])
    b.add_body("link", joint="revolute", axis=[0, 0, 1], map="theta", mass=1.0, inertia=np.eye(3) * 0.01)
    model = b.build()
    torus = WrapObject("ring", "WrapTorus", "link", (0.01, 0.05, 0.0))
    paths = build_paths(model.body_names, model.coordinate_names,
                        {"m": [PathPoint("ground", [A, 0.0, 0.0]), PathPoint("link", [C, 0.0, 0.0])]},
                        wrap_objects=[torus], path_wraps={"m": [PathWrap("ring")]})
    with pytest.raises(NotImplementedError, match=r"muscle 'm' over WrapTorus 'ring'.*"
                                                  r"wrapping='opensim'.*ignore_wrapping=True"):
        smooth_wrapping(with_muscles(model, paths))
    with pytest.warns(UserWarning, match="quadrant of 'w' is not applied"):
        smooth_wrapping(_hinge("WrapSphere", quadrant="-z"))


def test_gradients_are_finite_at_degenerate_end_points():
    """An end point at the sphere's centre or on the cylinder's axis (inside: the straight piece) must
    not put NaN into reverse-mode gradients (it would reach every muscle of a batched model)."""
    p1 = jnp.asarray([0.3, 0.02, 0.01])
    fns = [lambda a, b: sphere_geodesic(a, b, R).length, lambda a, b: cylinder_geodesic(a, b, R).length,
           lambda a, b: cylinder_geodesic(a, b, R, jnp.asarray([1.0, 0.0])).length,
           lambda a, b: sphere_geodesic_length(a, b, R)[0], lambda a, b: cylinder_geodesic_length(a, b, R)[0],
           lambda a, b: cylinder_geodesic_length(a, b, R, 1)[0]]

    def total(a, b):  # everything at once: a NaN anywhere shows in the sum's gradient
        return (sum(fn(a, b) for fn in fns) + jnp.sum(sphere_geodesic(a, b, R).t1)
                + jnp.sum(cylinder_geodesic(a, b, R).t2))

    grads = jax.jit(jax.grad(total, argnums=(0, 1)))
    for p2 in ([0.0, 0.0, 0.0], [0.0, 0.0, 0.05]):
        for args in ((p1, jnp.asarray(p2)), (jnp.asarray(p2), p1)):
            g = grads(*args)
            assert all(np.all(np.isfinite(np.asarray(x))) for x in g), (p2, g)
