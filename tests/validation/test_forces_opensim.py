"""mbjax's force elements (:mod:`mbjax.forces`) vs OpenSim 4.6's own forces at random states.

OpenSim's generalized force of a set of elements is read off ``InverseDynamicsSolver`` (which
ignores constraints): ``Q_u = τ(all forces off) - τ(only these on)`` at the same ``(q, u)`` and
``u̇ = 0`` (gravity and velocity terms cancel).  mbjax's ``Q_q`` is compared through virtual
power: with ``q̇ = N u`` (Simbody's ``N``, columns read off ``State.getQDot``) and the
coordinates mbjax eliminated (``c = g(q)``, OpenSim's ``q`` as functions of mbjax's), ``Q_u =
Nᵀ J_gᵀ``-adjoint, i.e. ``Q_q = Gᵀ Q_u`` with ``G = ∂u/∂q̇`` (identity rows for mbjax's
coordinates, ``∇g`` rows for coupled ones; ``N⁻¹`` where ``u`` is not ``q̇``).

* A synthetic model (tests/_force_models.py) with every modelled kind, including elements on a
  coupled coordinate (acting through the coupler's map): CoordinateLimitForce (inside, in the
  transition and beyond both limits), SpringGeneralizedForce, ExpressionBasedCoordinateForce,
  PointToPointSpring, BushingForce (offset frames, all six stiffnesses and dampings).
* OpenSim's WalkerModel (PlanarJoint + pins, four CoordinateLimitForces; its HuntCrossleyForces
  opted out), states reaching past the coordinate ranges.
* HuntCrossleyForce (contact): a synthetic model (tests/_contact_models.py: several spheres on a
  floor, mixed contact parameters, a sphere-sphere pair, a half space on a moving body) at states
  where spheres penetrate 1-10 mm and slide, including Simbody's stop at a contact with ``f <= 0``;
  and the library models WalkerModel, DynamicJumperModel and ToyLandingModel (copies without their
  coordinate couplers and locks, so every OpenSim coordinate is one of mbjax's) with the root
  lowered until the deepest sphere penetrates 1-10 mm.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _contact_models import CONTACT_MODEL, contact_state  # noqa: E402
from _force_models import COUPLED_LIMIT_MODEL, COUPLER, FORCE_MODEL, KINDS  # noqa: E402

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim")

MIRROR = "/work/.mirror/opensim-org+opensim-models/repo"
ROOT = os.environ.get("OPENSIM_MODELS_DIR", "")


def _vec(v):
    return np.array([v.get(i) for i in range(v.size())])


class _OpenSim:
    """OpenSim's per-kind generalized forces in its u, and the q/u bookkeeping."""

    def __init__(self, path):
        self.model = osim.Model(path)
        self.state = self.model.initSystem()
        self.cs = self.model.getCoordinateSet()
        self.names = [self.cs.get(i).getName() for i in range(self.cs.getSize())]
        self.forces = [self.model.getForceSet().get(i) for i in range(self.model.getForceSet().getSize())]
        self.solver = osim.InverseDynamicsSolver(self.model)
        s = self.state
        nq = s.getNQ()
        self.qindex = {}
        for n in self.names:  # which entry of Q each coordinate is
            q0 = _vec(s.getQ())
            c = self.cs.get(n)
            c.setValue(s, c.getValue(s) + 0.125, False)
            self.qindex[n] = int(np.argmax(np.abs(_vec(s.getQ()) - q0)))
            c.setValue(s, c.getValue(s) - 0.125, False)
        self.nq, self.nu = nq, s.getNU()

    def set_q(self, values: dict):
        q = _vec(self.state.getQ())
        for n, v in values.items():
            q[self.qindex[n]] = v
        self.state.setQ(osim.Vector(q.tolist()))

    def qdot_of(self, u):
        self.state.setU(osim.Vector(list(map(float, u))))
        self.model.realizeVelocity(self.state)
        return _vec(self.state.getQDot())

    def n_matrix(self):
        return np.stack([self.qdot_of(e) for e in np.eye(self.nu)], axis=1)

    def q_u(self, u, kinds):
        """Generalized force in u of the forces whose class is in ``kinds``."""
        self.state.setU(osim.Vector(list(map(float, u))))
        udot = osim.Vector(self.nu, 0.0)

        def tau(on):
            for f in self.forces:
                f.setAppliesForce(self.state, f.getConcreteClassName() in on)
            return _vec(self.solver.solve(self.state, udot))

        return tau(()) - tau(kinds)


def _compare(path, model, draw_q, dependent, kinds_list, n_states=6, seed=0, **load):
    """Max relative error per kind over random states; ``dependent(name, q_dict) -> (value, grad dict)``."""
    os_ = _OpenSim(path)
    names = model.coordinate_names
    rng = np.random.default_rng(seed)
    elements = model.forces.elements

    @jax.jit
    def all_kinds(m, q, qd):  # one compile for every kind
        return {type(e).__name__: jax.vmap(e.generalized_force, in_axes=(None, 0, 0))(m, q, qd) for e in elements}

    qs, qds, refs = [], [], {k: [] for k in kinds_list}
    for _ in range(n_states):
        q = draw_q(rng)
        values = dict(zip(names, q))
        grads = {}
        for n in os_.names:
            if n in values:
                continue
            v, g = dependent(n, values)
            values[n], grads[n] = v, g
        os_.set_q({n: values[n] for n in os_.names})
        n_mat = os_.n_matrix()
        # mbjax q̇ → OpenSim q̇ (G) → u (N⁻¹)
        gq = np.zeros((os_.nq, len(names)))
        for j, n in enumerate(names):
            gq[os_.qindex[n], j] = 1.0
        for n, g in grads.items():
            for j, m in enumerate(names):
                gq[os_.qindex[n], j] = g.get(m, 0.0)
        g_u = np.linalg.solve(n_mat, gq)  # u = G_u q̇
        qd = rng.uniform(-2, 2, len(names))
        u = g_u @ qd
        qs.append(q)
        qds.append(qd)
        for k in kinds_list:
            refs[k].append(g_u.T @ os_.q_u(u, (k,)))
    out = {}
    ours = all_kinds(model, jnp.asarray(np.array(qs)), jnp.asarray(np.array(qds)))
    for k in kinds_list:
        mine = np.asarray(ours[k])
        ref = np.array(refs[k])
        active = np.max(np.abs(ref), axis=1) > 0
        assert active.sum() >= len(ref) // 2, f"{k}: OpenSim's force is zero at most states (not exercised)"
        scale = np.max(np.abs(ref))  # relative to the element's largest generalized force
        out[k] = float(np.max(np.abs(mine - ref)) / scale)
    return out


def _write(tmp_path, text, name):
    p = os.path.join(str(tmp_path), name)
    with open(p, "w") as fh:
        fh.write(text)
    return p


def test_synthetic_elements_match_opensim(tmp_path):
    path = _write(tmp_path, FORCE_MODEL, "forces.osim")
    model = mbjax.io.load_osim(path)
    assert model.coordinate_names == ("pin", "slide", "r1", "t1")
    spans = np.array([1.3, 0.25, 0.8, 0.3])  # pin limits -40/30 deg ± 10, slide ±0.1 ± 0.05, cdep ±20 deg ± 8

    def dependent(name, values):
        assert name == "cdep"
        r = values["r1"]
        a, b, c = COUPLER
        return a * r * r + b * r + c, {"r1": 2 * a * r + b}

    err = _compare(path, model, lambda rng: rng.uniform(-1, 1, 4) * spans, dependent, KINDS, n_states=8)
    print("synthetic model, max relative error per kind vs OpenSim:", err)
    for k, e in err.items():
        assert e < 1e-9, (k, e)


def test_limit_force_on_a_coupled_coordinate_matches_opensim(tmp_path):
    """A coordinate OpenSim types *coupled* (moved through a non-unit function) takes its limits as written."""
    path = _write(tmp_path, COUPLED_LIMIT_MODEL, "coupled_limits.osim")
    model = mbjax.io.load_osim(path)
    assert model.coordinate_names == ("p", "w")
    err = _compare(path, model, lambda rng: rng.uniform(-1, 1, 2) * np.array([0.6, 0.5]), None,
                   ("CoordinateLimitForce",), n_states=10)
    print("coupled coordinate limit force, max relative error vs OpenSim:", err)
    assert err["CoordinateLimitForce"] < 1e-9


def _library_file(rel):
    if ROOT:
        p = os.path.join(ROOT, "Models", rel)
        return p if os.path.exists(p) else None
    if os.path.isdir(MIRROR):
        try:
            return subprocess.run(["git", "-C", MIRROR, "show", f"HEAD:Models/{rel}"], check=True,
                                  capture_output=True, text=True).stdout
        except (subprocess.CalledProcessError, OSError):
            return None
    return None


def test_walker_model_matches_opensim(tmp_path):
    src = _library_file("WalkerModel/WalkerModel.osim")
    if src is None:
        pytest.skip("OpenSim model library not available (set OPENSIM_MODELS_DIR)")
    path = src if os.path.exists(str(src)) and len(src) < 4096 else _write(tmp_path, src, "WalkerModel.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(path, ignore_forces=("HuntCrossleyForce",))
    assert model.forces.names == ("LKneeLimitTorque", "RKneeLimitTorque", "LHipLimitTorque",
                                            "RHipLimitTorque")
    lo = np.maximum(np.asarray(model.osim.lower), -2.0)
    hi = np.minimum(np.asarray(model.osim.upper), 2.0)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    err = _compare(path, model, lambda rng: mid + 1.2 * half * rng.uniform(-1, 1, lo.size),
                   lambda n, v: (_ for _ in ()).throw(KeyError(n)), ("CoordinateLimitForce",), n_states=6)
    print("WalkerModel, max relative error vs OpenSim:", err)
    for k, e in err.items():
        assert e < 1e-9, (k, e)


def _no_dependent(name, values):
    raise KeyError(name)


def _contact_element(model):
    return next(e for e in model.forces.elements if isinstance(e, mbjax.forces.HuntCrossleyForce))


def test_contact_model_matches_opensim(tmp_path):
    path = _write(tmp_path, CONTACT_MODEL, "contact.osim")
    model = mbjax.io.load_osim(path)
    el = _contact_element(model)
    rng = np.random.default_rng(11)
    stopped = sphere_sphere = moving_half_space = 0
    for _ in range(12):  # the states _compare draws (same seed): what they exercise
        q = contact_state(model, el, rng)
        qd = rng.uniform(-2, 2, q.size)
        depth = np.asarray(el.contacts(model, jnp.asarray(q))[0])
        inc = np.asarray(el.pair_forces(model, jnp.asarray(q), jnp.asarray(qd))[2])
        stopped += np.sum((depth > 0) & ~inc)
        kinds = [tuple(el.surface_kind[s] for s in p) for p in el.pairs]
        sphere_sphere += sum(i for i, k in zip(inc, kinds) if k == ("sphere", "sphere"))
        moving_half_space += sum(i for i, p in zip(inc, el.pairs) if el.surface_body[p[0]] >= 0)
    assert stopped and sphere_sphere and moving_half_space, (stopped, sphere_sphere, moving_half_space)
    err = _compare(path, model, lambda r: contact_state(model, el, r), _no_dependent, ("HuntCrossleyForce",),
                   n_states=12, seed=11)
    print("contact model, max relative error vs OpenSim:", err)
    assert err["HuntCrossleyForce"] < 1e-9, err


@pytest.mark.parametrize("rel, vertical", [
    # the walker and the jumper are the same element kinds on other models (extended group); CI compares
    # the toy lander's contact and test_contact_model_matches_opensim
    pytest.param("WalkerModel/WalkerModel.osim", "Pelvis_ty", marks=pytest.mark.extended),
    pytest.param("Jumper/DynamicJumperModel.osim", "pelvis_ty", marks=pytest.mark.extended),
    ("ToyLanding/ToyLandingModel.osim", "pelvis_ty")])
def test_library_contact_matches_opensim(tmp_path, rel, vertical):
    src = _library_file(rel)
    if src is None:
        pytest.skip("OpenSim model library not available (set OPENSIM_MODELS_DIR)")
    if os.path.exists(str(src)) and len(src) < 4096:
        with open(src) as fh:
            src = fh.read()
    # every OpenSim coordinate one of mbjax's (the contact force does not depend on the couplers)
    src = re.sub(r"(<ConstraintSet[^>]*>\s*<objects>).*?(</objects>)", r"\1\2", src, flags=re.S)
    path = _write(tmp_path, src.replace("<locked>true</locked>", "<locked>false</locked>"), os.path.basename(rel))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(path)
    el = _contact_element(model)
    iy = model.coordinate_names.index(vertical)
    lo = np.maximum(np.asarray(model.osim.lower), -1.0)
    hi = np.minimum(np.asarray(model.osim.upper), 1.0)
    q0 = np.asarray(model.osim.default)
    floor = np.array([el.surface_kind[a] == "halfspace" for a, _ in el.pairs])

    def draw(rng):
        q = q0 + 0.3 * rng.uniform(-1, 1, q0.size) * (hi - lo) / 2
        target = rng.uniform(0.001, 0.01)
        for _ in range(3):  # lower the root until the deepest sphere is `target` into the floor
            depth, normal = (np.asarray(x)[floor] for x in el.contacts(model, jnp.asarray(q))[:2])
            k = np.argmax(depth)
            q[iy] -= (target - depth[k]) / normal[k, 1]
        return q

    err = _compare(path, model, draw, _no_dependent, ("HuntCrossleyForce",), n_states=6)
    print(rel, "max relative error vs OpenSim:", err)
    assert err["HuntCrossleyForce"] < 1e-9, err


@pytest.mark.parametrize("case", [0, 1, 2], ids=["ball-spring", "free-expression", "ellipsoid-limit"])
def test_coordinate_forces_on_angular_velocity_speeds_are_opensims(tmp_path, case):
    """A SpringGeneralizedForce / ExpressionBasedCoordinateForce / CoordinateLimitForce on an angle of a
    Ball / Free / Ellipsoid joint: OpenSim applies it on the joint's speed there (ω_F), reads that speed
    as its q̇; mbjax's generalized force, mapped to those speeds (E⁻ᵀ Q), equals OpenSim's mobility forces
    (ID with the element on minus off) at random states."""
    from test_bad_inputs_eighth_survey_osim import ANGULAR_VELOCITY_FORCES, angular_velocity_force_model

    from mbjax._spatial import xyz_angle_rate_matrix
    from mbjax.opensim.tools.id.mobility import mobility_forces

    osim = pytest.importorskip("opensim")
    joint, coords, force = ANGULAR_VELOCITY_FORCES[case]
    path = tmp_path / "model.osim"
    path.write_text(angular_velocity_force_model(joint, coords, force))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.io.load_osim(str(path))
    om = osim.Model(str(path))
    s = om.initSystem()
    cs = om.getCoordinateSet()
    uindex = {}
    for n in model.coordinate_names:  # which entry of U each coordinate's speed is
        u0 = np.array([s.getU().get(i) for i in range(s.getNU())])
        cs.get(n).setSpeedValue(s, 0.25)
        uindex[n] = int(np.argmax(np.abs(np.array([s.getU().get(i) for i in range(s.getNU())]) - u0)))
        cs.get(n).setSpeedValue(s, 0.0)
    solver, element = osim.InverseDynamicsSolver(om), om.getForceSet().get("f")
    generalized = jax.jit(lambda q, qd: model.forces.generalized_force(model, q, qd))
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(4):
        q, u = rng.uniform(-1, 1, len(model.coordinate_names)), rng.uniform(-1, 1, len(model.coordinate_names))
        for n, v in zip(model.coordinate_names, q):
            cs.get(n).setValue(s, float(v), False)
        uu = np.zeros(s.getNU())
        for k, n in enumerate(model.coordinate_names):
            uu[uindex[n]] = u[k]
        s.setU(osim.Vector(uu.tolist()))
        tau = []
        for on in (True, False):
            element.setAppliesForce(s, on)
            om.realizeVelocity(s)
            solved = solver.solve(s, osim.Vector(s.getNU(), 0.0))
            tau.append(np.array([solved.get(uindex[n]) for n in model.coordinate_names]))
        element.setAppliesForce(s, True)
        theirs = tau[1] - tau[0]
        qd = u.copy()
        qd[1:4] = np.linalg.solve(xyz_angle_rate_matrix(q[1], q[2], np), u[1:4])  # u = E q̇ on the angles
        ours = mobility_forces(model, q[None], np.asarray(generalized(jnp.asarray(q), jnp.asarray(qd)))[None], "test")[0]
        worst = max(worst, float(np.abs(ours - theirs).max()) / float(np.abs(theirs).max()))
    print(f"\n{joint}: {force[1:30]}...: max relative difference {worst:.1e}")
    assert worst < 1e-12
