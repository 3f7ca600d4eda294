"""OpenSim's ``Ligament`` and ``PathSpring`` (:mod:`mbjax.forces.path_force`) vs OpenSim 4.6 itself.

* A small model (tests/_path_spring_models.py: two pins, a ligament and a path spring that wrap a
  cylinder, a ligament with a conditional point and OpenSim's default curve, a straight path
  spring with dissipation): at random poses and speeds, each element's length, lengthening speed,
  tension and generalized force equal OpenSim's.  OpenSim's generalized force of one element is
  ``τ(no force) - τ(only it)`` of ``InverseDynamicsSolver`` at ``u̇ = 0`` (pins: ``u = q̇``).
* MoBL-ARMS (needs ``MBJAX_SHARED_DATA``): at poses where its four glenohumeral ligaments are
  stretched (wrapping their ellipsoids), inverse dynamics with every force but the muscles (the ID
  tool's default, ``forces_to_exclude=Muscles``) equals OpenSim's ``InverseDynamicsSolver`` with
  the same forces on, mapped to mbjax's coordinates through the couplers (``τ = Gᵀ τ_u`` with
  ``G = ∂c/∂q``, at zero speed so that ``u̇ = G q̈``).
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

from mbjax.forces import PathForce  # noqa: E402
from mbjax.io import load_osim  # noqa: E402
from mbjax.io.osim_coordinates import coordinate_jacobian, coordinate_values  # noqa: E402
from mbjax.opensim.tools.id.motion import inverse_dynamics_frames  # noqa: E402
from _osim_models import MOBL, needs_mobl  # noqa: E402
from _osim_text import write_text  # noqa: E402
from _path_spring_models import model_text  # noqa: E402

jax.config.update("jax_enable_x64", True)


def _vec(v):
    return np.array([v.get(i) for i in range(v.size())])


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(path, **kw)


def _path_force(f):
    return osim.Ligament.safeDownCast(f) or osim.PathSpring.safeDownCast(f)


def _opensim_element(model, state, solver, name, u):
    """OpenSim's (length, speed, tension, generalized force in u) of force ``name`` at ``state`` with speeds ``u``."""
    state.setU(osim.Vector(list(map(float, u))))
    udot = osim.Vector(state.getNU(), 0.0)
    fs = model.getForceSet()

    def tau(on):
        for i in range(fs.getSize()):
            fs.get(i).setAppliesForce(state, fs.get(i).getName() in on)
        return _vec(solver.solve(state, udot))

    q_u = tau(()) - tau((name,))
    model.realizeDynamics(state)
    f = _path_force(fs.get(name))
    path = f.getGeometryPath()
    return path.getLength(state), path.getLengtheningSpeed(state), f.getTension(state), q_u


def test_small_model_elements_match_opensim(tmp_path):
    path = write_text(tmp_path, model_text(), "springs.osim")
    ours = _load(path)
    straight = _load(path, ignore_wrapping=True)
    model = osim.Model(path)
    state = model.initSystem()
    solver = osim.InverseDynamicsSolver(model)
    coords = model.getCoordinateSet()
    assert [coords.get(i).getName() for i in range(coords.getSize())] == list(ours.coordinate_names)
    elements = [e for e in ours.forces.elements if isinstance(e, PathForce)]
    assert [n for e in elements for n in e.names] == ["lig", "lig2", "ps", "ps_wrap"]

    @jax.jit
    def mbjax_all(m, q, qd):
        return [(*e.kinematics(m, q, qd)[:2], e.tensions(m, q, qd), e.generalized_force(m, q, qd))
                for e in m.forces.elements]

    rng = np.random.default_rng(3)
    worst = dict(length=0.0, speed=0.0, tension=0.0, force=0.0)
    scale = dict(tension=0.0, force=0.0)
    wrapped, stretched = set(), set()
    for k in range(10):
        q = rng.uniform([-1.0, -1.3], [1.0, 1.3])
        qd = rng.uniform(-2.0, 2.0, 2)
        for j, v in enumerate(q):
            coords.get(j).setValue(state, float(v), False)
        res = mbjax_all(ours, jnp.asarray(q), jnp.asarray(qd))
        lengths_straight = np.concatenate([np.asarray(e.lengths(straight, jnp.asarray(q))) for e in straight.forces.elements])
        for e, (length, speed, tension, gen), flat in zip(elements, res, np.split(lengths_straight, [2])):
            for i, name in enumerate(e.names):
                ol, osp, ot, oq = _opensim_element(model, state, solver, name, qd)
                if abs(length[i] - flat[i]) > 1e-6:
                    wrapped.add(name)
                if ot > 0:
                    stretched.add(name)
                worst["length"] = max(worst["length"], abs(float(length[i]) - ol))
                worst["speed"] = max(worst["speed"], abs(float(speed[i]) - osp))
                worst["tension"] = max(worst["tension"], abs(float(tension[i]) - ot))
                scale["tension"] = max(scale["tension"], abs(ot))
            # the element's generalized force: one stack at a time in mbjax, one element at a time in OpenSim
            ref = sum(_opensim_element(model, state, solver, name, qd)[3] for name in e.names)
            worst["force"] = max(worst["force"], float(np.max(np.abs(np.asarray(gen) - ref))))
            scale["force"] = max(scale["force"], float(np.max(np.abs(ref))))
    print("path springs vs OpenSim, worst absolute differences:", worst, "largest values:", scale)
    assert wrapped >= {"lig", "ps_wrap"} and stretched == {"lig", "lig2", "ps", "ps_wrap"}, (wrapped, stretched)
    assert worst["length"] < 1e-12 and worst["speed"] < 1e-11
    assert worst["tension"] < 1e-9 * scale["tension"] and worst["force"] < 1e-9 * scale["force"], worst


@needs_mobl
@pytest.mark.extended  # ~100 s of MoBL compilation; in CI the same elements agree with OpenSim on a small wrapped
# model (test_small_model_elements_match_opensim) and through OpenSim's JointReaction (test_jr_opensim.py)
def test_mobl_inverse_dynamics_with_ligaments_matches_opensim():
    ours = _load(MOBL)
    ligaments = [e for e in ours.forces.elements if type(e).__name__ == "Ligament"]
    assert len(ligaments) == 1 and len(ligaments[0].names) == 4
    lig = ligaments[0]
    # poses where the ligaments are stretched: the most stretched of random poses over the ranges
    lo, hi = np.asarray(ours.osim.lower), np.asarray(ours.osim.upper)
    rng = np.random.default_rng(11)
    cand = rng.uniform(lo, hi, size=(48, lo.size))
    # the wrist stays at 0, inside its CoordinateLimitForce limits: OpenSim 4.6 calls deviation and
    # flexion Coupled coordinates (limits without degree units), mbjax rotational ones (per degree)
    cand[:, [ours.coordinate_index(n) for n in ("deviation", "flexion")]] = 0.0
    stretch = np.asarray(jax.jit(jax.vmap(lig.lengths, in_axes=(None, 0)))(ours, jnp.asarray(cand))) \
        / np.asarray(lig.resting_length)
    qs = cand[np.argsort(-stretch.max(axis=1))[:3]]
    qdd = rng.uniform(-3, 3, size=qs.shape)
    tension = np.asarray(jax.vmap(lig.tensions, in_axes=(None, 0, None))(ours, jnp.asarray(qs), jnp.zeros(lo.size)))
    assert np.all(tension.max(axis=1) > 1.0), tension
    tau = inverse_dynamics_frames(ours, qs, np.zeros_like(qs), qdd, forces=True)
    without = inverse_dynamics_frames(ours.replace(forces=None), qs, np.zeros_like(qs), qdd)

    model = osim.Model(MOBL)
    fs = model.getForceSet()
    for i in range(fs.getSize()):  # the ID tool's default: every force but the muscles
        f = fs.get(i)
        f.set_appliesForce(osim.Muscle.safeDownCast(f) is None and f.get_appliesForce())
    state = model.initSystem()
    solver = osim.InverseDynamicsSolver(model)
    cs = model.getCoordinateSet()
    names = [n for n, _ in ours.osim.roles]
    slot = {}  # each OpenSim coordinate's entry of u (MoBL's joints are CustomJoints: u = q̇)
    for n in names:
        c = cs.get(n)
        before, v = _vec(state.getQ()), c.getValue(state)
        c.setValue(state, v + 0.25, False)
        slot[n] = int(np.argmax(np.abs(_vec(state.getQ()) - before)))
        c.setValue(state, v, False)
    worst, largest, ligament_part = 0.0, 0.0, 0.0
    for q, a, t_ours, t_bare in zip(qs, qdd, tau, without):
        values = np.asarray(coordinate_values(ours, jnp.asarray(q)))
        g = np.zeros((state.getNU(), lo.size))
        g[[slot[n] for n in names]] = np.asarray(coordinate_jacobian(ours, jnp.asarray(q)))
        for n, v in zip(names, values):
            cs.get(n).setValue(state, float(v), False)
        state.setU(osim.Vector(state.getNU(), 0.0))
        ref = g.T @ _vec(solver.solve(state, osim.Vector(list(map(float, g @ a)))))
        worst = max(worst, float(np.max(np.abs(t_ours - ref))))
        largest = max(largest, float(np.max(np.abs(ref))))
        ligament_part = max(ligament_part, float(np.max(np.abs(t_ours - t_bare))))
    print(f"MoBL ID with ligaments vs OpenSim: worst {worst:.3e} N·m of largest {largest:.3e} "
          f"(force elements' share up to {ligament_part:.3e})")
    assert ligament_part > 1e-2
    assert worst < 1e-9 * largest
