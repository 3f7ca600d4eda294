"""mbjax.forces.hunt_crossley against independent routes (no OpenSim needed).

* one sphere on the floor at a known depth and velocity: the generalized force is the hand-computed
  Hunt-Crossley force (Hertz ``4/3 k d √(R k d)`` with ``k = (E^(2/3))/2``, dissipation
  ``1 + 3/2 c v_n``, Stribeck friction) on the translations and its moment about the body origin
  on the rotations; friction opposes the slip; zero out of contact and when ``f ≤ 0``;
* virtual power: ``Qᵀq̇ = Σ F·(v₂ - v₁)`` with the contact points' velocities by central finite
  differences of body-fixed points (synthetic model, several contacts, rotated bodies);
* gradients are finite in and out of contact; float32 agrees with float64;
* other contact geometry is refused by name.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.forces import HuntCrossleyForce
from mbjax.forces.hunt_crossley import _all_poses

sys.path.insert(0, os.path.dirname(__file__))
from _contact_models import CONTACT_MODEL, _six_dof, contact_state  # noqa: E402

E, C, US, UD, UV, VT, R, X0 = 1e6, 0.8, 0.7, 0.4, 0.2, 0.1, 0.05, 0.1

ONE_SPHERE = f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><Model name="one">
  <Ground name="ground" />
  <BodySet name="bodyset"><objects>
    <Body name="b"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>0.01 0.01 0.01 0 0 0</inertia></Body>
  </objects></BodySet>
  <JointSet name="jointset"><objects>{_six_dof("free", "b", ("rx", "ry", "rz", "tx", "ty", "tz"))}</objects></JointSet>
  <ContactGeometrySet name="contactgeometryset"><objects>
    <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 0 0</location>
      <orientation>0 0 -1.5707963267948966</orientation></ContactHalfSpace>
    <ContactSphere name="s"><socket_frame>/bodyset/b</socket_frame><location>{X0} 0 0</location>
      <orientation>0 0 0</orientation><radius>{R}</radius></ContactSphere>
  </objects></ContactGeometrySet>
  <ForceSet name="forceset"><objects>
    <HuntCrossleyForce name="contact"><HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
      <HuntCrossleyForce::ContactParameters><geometry>floor s</geometry><stiffness>{E}</stiffness>
        <dissipation>{C}</dissipation><static_friction>{US}</static_friction><dynamic_friction>{UD}</dynamic_friction>
        <viscous_friction>{UV}</viscous_friction></HuntCrossleyForce::ContactParameters>
    </objects></HuntCrossleyForce::ContactParametersSet><transition_velocity>{VT}</transition_velocity></HuntCrossleyForce>
  </objects></ForceSet>
</Model></OpenSimDocument>
"""


def _load(tmp_path, text, name):
    p = os.path.join(str(tmp_path), name)
    with open(p, "w") as fh:
        fh.write(text)
    return mbjax.io.load_osim(p)


@pytest.fixture(scope="module")
def one(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("one"), ONE_SPHERE, "one.osim")


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return _load(tmp_path_factory.mktemp("syn"), CONTACT_MODEL, "contact.osim")


def _hand(depth, vel):
    """Force on the sphere by hand for the sphere's point velocity ``vel`` (floor at rest, normal +y)."""
    k = E ** (2 / 3) / 2  # both surfaces E: s1 = 1/2, k = E^(2/3) s1
    f = 4 / 3 * k * depth * np.sqrt(R * k * depth) * (1 + 1.5 * C * -vel[1])  # v = v_floor - v_sphere
    slip = np.array([vel[0], 0.0, vel[2]])
    vs = np.linalg.norm(slip)
    vr = vs / VT
    ff = f * (min(vr, 1) * (UD + 2 * (US - UD) / (1 + vr * vr)) + UV * vs)
    return np.array([0.0, f, 0.0]) - ff * slip / vs


@pytest.mark.parametrize("depth, vel", [(0.004, (0.3, -0.2, 0.05)), (0.001, (0.02, 0.4, -0.03)),
                                        (0.01, (-1.5, 0.1, 0.7))])
def test_one_sphere_matches_hand_computation(one, depth, vel):
    q = np.array([0, 0, 0, 0, R - depth, 0.0])
    qd = np.array([0, 0, 0, *vel])
    Q = np.asarray(mbjax.forces.model_forces(one, q, qd))
    force = _hand(depth, np.asarray(vel))
    np.testing.assert_allclose(Q[3:], force, rtol=1e-12, atol=0)
    point = np.array([X0, -depth / 2, 0.0])  # midway between the floor and the sphere's lowest point
    np.testing.assert_allclose(Q[:3], np.cross(point - q[3:], force), rtol=1e-12, atol=1e-12 * np.abs(force).max())
    slip = np.array([vel[0], 0, vel[2]])
    assert np.dot(Q[3:], slip) < 0  # friction opposes the slip
    assert force[1] > 0


def test_zero_out_of_contact_and_when_pulling(one):
    out = mbjax.forces.model_forces(one, np.array([0, 0, 0, 0, R + 1e-3, 0.0]), np.array([0, 0, 0, 1.0, -1, 0]))
    assert np.all(np.asarray(out) == 0)
    # separating fast: 1 + 3/2 c v_n <= 0 (v_n = -v_y); Simbody applies nothing (not even friction)
    pull = mbjax.forces.model_forces(one, np.array([0, 0, 0, 0, R - 0.003, 0.0]),
                                     np.array([0, 0, 0, 0.5, 1 / (1.5 * C) + 0.01, 0]))
    assert np.all(np.asarray(pull) == 0)


def test_virtual_power_by_finite_differences(synthetic):
    """Qᵀq̇ = Σ F·(v₂ - v₁): contact points as body-fixed points, their velocity by central differences."""
    el = synthetic.forces.elements[0]
    assert isinstance(el, HuntCrossleyForce) and el.element_names == ("ground_contact", "ball_contact")
    rng = np.random.default_rng(3)
    n_included = 0
    for _ in range(6):
        q = contact_state(synthetic, el, rng)
        qd = rng.uniform(-0.3, 0.3, q.size)
        F, p, inc = (np.asarray(x) for x in el.pair_forces(synthetic, jnp.asarray(q), jnp.asarray(qd)))
        n_included += inc.sum()
        poses = np.asarray(_all_poses(synthetic, jnp.asarray(q)))
        b = [[el.surface_body[s] for s in pair] for pair in el.pairs]

        def world(x, k, side):
            ps = np.asarray(_all_poses(synthetic, jnp.asarray(x)))
            pose0, pose = poses[b[k][side]], ps[b[k][side]]
            station = pose0[:3, :3].T @ (p[k] - pose0[:3, 3])
            return pose[:3, :3] @ station + pose[:3, 3]

        h = 1e-6
        power = 0.0
        for k in np.flatnonzero(inc):
            v = [(world(q + h * qd, k, s) - world(q - h * qd, k, s)) / (2 * h) for s in (0, 1)]
            power += F[k] @ (v[1] - v[0])
        Q = np.asarray(el.generalized_force(synthetic, jnp.asarray(q), jnp.asarray(qd)))
        assert abs(Q @ qd - power) <= 1e-7 * max(1.0, abs(power)), (Q @ qd, power)
    assert n_included >= 6


def test_gradients_finite_and_float32(synthetic):
    el = synthetic.forces.elements[0]
    rng = np.random.default_rng(5)
    q = contact_state(synthetic, el, rng)
    qd = rng.uniform(-0.3, 0.3, q.size)
    for x in (q, q + np.where(np.array(synthetic.coordinate_names) == "f_ty", 1.0, 0.0)):  # in / out of contact
        g = jax.grad(lambda a, b: jnp.sum(el.generalized_force(synthetic, a, b) ** 2), argnums=(0, 1))(
            jnp.asarray(x), jnp.asarray(qd))
        assert all(np.all(np.isfinite(np.asarray(a))) for a in g)
    gp = jax.grad(lambda e: jnp.sum(e.generalized_force(synthetic, jnp.asarray(q), jnp.asarray(qd))))(el)
    assert np.all(np.isfinite(np.asarray(gp.stiffness))) and np.any(np.asarray(gp.stiffness) != 0)
    Q64 = np.asarray(el.generalized_force(synthetic, jnp.asarray(q), jnp.asarray(qd)))
    m32 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                                 synthetic)
    Q32 = np.asarray(mbjax.forces.model_forces(m32, q.astype(np.float32), qd.astype(np.float32)))
    assert Q32.dtype == np.float32
    np.testing.assert_allclose(Q32, Q64, rtol=0, atol=2e-3 * np.abs(Q64).max())


def test_vmap_and_jit(synthetic):
    el = synthetic.forces.elements[0]
    rng = np.random.default_rng(7)
    qs = np.stack([contact_state(synthetic, el, rng) for _ in range(3)])
    qds = rng.uniform(-0.3, 0.3, qs.shape)
    batched = jax.jit(jax.vmap(el.generalized_force, in_axes=(None, 0, 0)))(synthetic, jnp.asarray(qs), jnp.asarray(qds))
    for k in range(3):
        np.testing.assert_allclose(np.asarray(batched[k]), np.asarray(
            el.generalized_force(synthetic, jnp.asarray(qs[k]), jnp.asarray(qds[k]))), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("tag", ["ContactMesh", "ContactEllipsoid"])
def test_other_geometry_refused(tmp_path, tag):
    text = ONE_SPHERE.replace('<ContactSphere name="s">', f'<{tag} name="s">').replace("</ContactSphere>",
                                                                                     f"</{tag}>")
    with pytest.raises(NotImplementedError, match=f"{tag}.*hunt_crossley.py"):
        _load(tmp_path, text, "bad.osim")


def test_unknown_geometry_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown contact geometry 'nowhere'"):
        _load(tmp_path, ONE_SPHERE.replace("<geometry>floor s", "<geometry>floor nowhere"), "bad.osim")
