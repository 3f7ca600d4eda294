"""mbjax.static_optimization vs OpenSim's StaticOptimization analysis on arm26 (wrap-free copy).

OpenSim's analysis is run programmatically (``StaticOptimization.begin/step/end`` on states set
frame by frame, its states store written with :func:`mbjax.io.storage.write_storage`), with the
convergence criterion tightened from its default 1e-4 to 1e-8 (tighter ones make IPOPT's
restoration phase fail on some frames).  OpenSim's target accelerations are the derivatives of
the quintic GCV splines it fits to the speed columns (``GCVSplineSet(5, states).constructStorage(1)``);
the same accelerations are fed to mbjax so both solve the same problem.  Formulation notes:
OpenSim's Thelen2003Muscle raises ``min_control`` to ``minimum_activation`` (0.01), so mbjax gets
``activation_bounds=(0.01, 1)``; neither applies passive fibre force (override actuation).
"""

import os
import sys
import warnings

import jax
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.io.storage import Table, write_storage

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _osim_models import ARM26, needs_arm26, strip_wrapping  # noqa: E402

osim = pytest.importorskip("opensim")
pytestmark = pytest.mark.validation

T = 21


@pytest.fixture(scope="module")
def opensim_so(tmp_path_factory):
    d = tmp_path_factory.mktemp("so")
    path = strip_wrapping(ARM26, str(d / "arm26_nowrap.osim"))
    t = np.linspace(0.0, 1.0, T)
    w = np.pi
    qs = np.stack([0.3 + 0.2 * np.sin(w * t), 1.2 + 0.4 * np.sin(w * t + 0.3)], 1)
    qds = np.stack([0.2 * w * np.cos(w * t), 0.4 * w * np.cos(w * t + 0.3)], 1)
    model = osim.Model(path)
    model.initSystem()
    coords = [model.getCoordinateSet().get(i) for i in range(2)]
    labels = [c.getAbsolutePathString() + "/value" for c in coords] + [c.getAbsolutePathString() + "/speed"
                                                                        for c in coords]
    write_storage(str(d / "states.sto"), Table(t, tuple(labels), np.c_[qs, qds]), format="storage", name="states")
    store = osim.Storage(str(d / "states.sto"))
    so = osim.StaticOptimization()
    so.setModel(model)
    so.setConvergenceCriterion(1e-8)
    so.setMaxIterations(1000)
    s = model.initSystem()
    so.setStatesStore(store)
    muscles = [osim.Muscle.safeDownCast(model.getMuscles().get(k)) for k in range(6)]
    f_opt = []
    for i in range(T):
        s.setTime(float(t[i]))
        s.setQ(osim.Vector(list(qs[i])))
        s.setU(osim.Vector(list(qds[i])))
        model.realizeVelocity(s)
        f_opt.append([m.calcInextensibleTendonActiveFiberForce(s, 1.0) for m in muscles])
        if i == 0:
            so.begin(s)
        elif i == T - 1:
            so.end(s)
        else:
            so.step(s, i)
    act_store = so.getActivationStorage()
    acts = np.array([[act_store.getStateVector(r).getData().get(k) for k in range(6)]
                     for r in range(act_store.getSize())])
    deriv = osim.GCVSplineSet(5, store).constructStorage(1)
    qdds = []
    for i in range(T):
        arr = osim.ArrayDouble(0.0, 4)
        deriv.getDataAtTime(float(t[i]), 4, arr)
        qdds.append([arr.get(2), arr.get(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mb = load_osim(path)
    return mb, qs, qds, np.array(qdds), acts, np.array(f_opt)


@needs_arm26
def test_static_optimization_matches_opensim(opensim_so):
    model, qs, qds, qdds, acts, f_opt = opensim_so
    assert acts.shape == (T, 6)
    res = jax.jit(lambda q, qd, qdd: mbjax.static_optimization_trajectory(
        model, q, qd, qdd, activation_bounds=(0.01, 1.0)))(qs, qds, qdds)
    sharing_problem = mbjax.analysis.sharing.sharing_problem
    problems = jax.jit(jax.vmap(lambda q, qd, qdd: sharing_problem(model, q, qd, qdd)))(qs, qds, qdds)
    assert bool(np.all(res.converged))
    # the force per unit activation is OpenSim's calcInextensibleTendonActiveFiberForce(s, 1)
    # (Thelen's calcfvInv is iterated to 1e-6 in OpenSim)
    np.testing.assert_allclose(np.asarray(problems.f_opt), f_opt, rtol=1e-5)
    err = np.abs(np.asarray(res.activations) - acts).max()
    print(f"max |a_mbjax - a_OpenSim| = {err:.2e}")
    np.testing.assert_allclose(np.asarray(res.activations), acts, atol=1e-6)  # measured 6e-8
