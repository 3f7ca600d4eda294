"""``Schutte1993Muscle_Deprecated`` without OpenSim (its comparison with OpenSim 4.6 is
tests/validation/test_schutte_opensim.py).

* the importer's per-muscle curves (padded piecewise-polynomial arrays) interpolate the file's
  SimmSpline knots (and the class defaults where the file leaves a curve out);
* forward-mode derivatives of the tendon force, fibre velocity and isometric equilibrium equal
  central finite differences (parameters included: the curves are array leaves);
* the polished equilibrium (``equilibrium="exact"``) has a residual at rounding; the default one is
  OpenSim's: ``initial_fiber_lengths`` and ``muscle_forces`` equal the fibre lengths and tendon
  forces OpenSim 4.6's ``equilibrateMuscles`` gives for this model (values recorded from OpenSim,
  compared live in tests/validation/test_schutte_opensim.py), with the exact equilibrium's
  derivatives;
* refusals by name: the two ``ignore_*`` flags, rigid tendons, static optimization; the
  ``ignore_forces`` opt-out keeps the paths with zero tension; float32 runs.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from mbjax.muscles import hill_parameters, state_from_fiber_length
from mbjax.muscles import schutte1993 as sch
from mbjax.muscles.fiber_dynamics import state_from_states

PATH = os.path.join(os.path.dirname(__file__), "data", "schutte1993", "schutte_wrist.osim")


@pytest.fixture(scope="module")
def model():
    return load_osim(PATH)


def _per_muscle(model):
    return {k: v for k, v in hill_parameters(model).items()}


def test_curves_interpolate_the_knots(model):
    paths = model.muscles
    assert set(paths.kinds) == {sch.SCHUTTE}
    p = _per_muscle(model)
    np.testing.assert_array_equal(p[sch.PASSIVE_GIVEN], [1, 1, 0, 1, 0])  # ECRB, DEF: exponential default
    np.testing.assert_allclose(p["damping"], [0.05, 0.05, 0.05, 0.05, 0.1])  # DEF: class default
    np.testing.assert_allclose(p["time_scale"], 0.1)
    root = ET.parse(PATH).getroot()
    knots = {}
    for m, name in enumerate(paths.names):
        el = next(e for e in root.iter(sch.SCHUTTE) if e.get("name") == name)
        for c in sch.CURVES:
            f = next((g for g in el if g.get("name") == c), None)
            xy = ([float(v) for v in f.findtext("x").split()], [float(v) for v in f.findtext("y").split()]) \
                if f is not None else sch.DEFAULT_CURVES[c]
            knots[m, c] = xy
    width = max(len(x) for x, _ in knots.values())
    xs = np.zeros((len(paths.names), len(sch.CURVES), width))
    ys = np.full_like(xs, np.nan)
    for (m, c), (x, y) in knots.items():
        k = sch.CURVES.index(c)
        xs[m, k, :len(x)], ys[m, k, :len(y)] = x, y

    @jax.jit
    def values(p, xs):
        def one(pm, xm):
            return jnp.stack([jax.vmap(lambda x: sch.curve(pm, c, x))(xm[k]) for k, c in enumerate(sch.CURVES)])
        return jax.vmap(one)(p, xs)

    got = np.asarray(values(p, jnp.asarray(xs)))
    ok = np.isfinite(ys)
    np.testing.assert_allclose(got[ok], ys[ok], rtol=0, atol=1e-12)


def test_derivatives_equilibrium_and_float32(model):
    p = _per_muscle(model)
    m = 1  # FCU: pennated, file curves
    pm = {k: v[m] for k, v in p.items()}
    ofl = float(pm["optimal_fiber_length"])
    x0 = jnp.asarray([1.08 * ofl, 0.297, 0.02, 0.6, float(pm["max_isometric_force"]), ofl, float(pm["damping"])])

    def f(x):
        """tendon force, fibre velocity, isometric fibre length and its residual as functions of
        (ℓ, L, V, a, F_o, ℓ_o, β)"""
        q = dict(pm, max_isometric_force=x[4], optimal_fiber_length=x[5], damping=x[6])
        act = sch.compute_actuation(q, x[0], x[1], x[2], x[3])
        lce = sch.isometric_fiber_length(q, x[1], x[3], equilibrium="exact")
        lce_os = sch.isometric_fiber_length(q, x[1], x[3])  # OpenSim's point, the same derivatives
        return jnp.stack([act["tendon_force"], act["fiber_velocity"], lce, sch.isometric_residual(q, lce, x[1], x[3]),
                          lce_os])

    h = 1e-6 * jnp.maximum(jnp.abs(x0), 1e-3)

    @jax.jit
    def run(x0):
        jac, val = jax.jacfwd(lambda x: (lambda y: (y, y))(f(x)), has_aux=True)(x0)
        # gradient with respect to the curves (array leaves): the active curve's coefficients
        g = jax.grad(lambda c: sch.compute_actuation(dict(pm, **{"active_force_length_curve.coef": c}),
                                                     x0[0], x0[1], x0[2], x0[3])["fiber_velocity"])(
            pm["active_force_length_curve.coef"])
        return val, jac, g

    val, jac, g = (np.asarray(v) for v in run(x0))
    fj = jax.jit(f)
    fd = np.stack([(np.asarray(fj(x0.at[k].add(h[k]))) - np.asarray(fj(x0.at[k].add(-h[k])))) / (2 * h[k])
                   for k in range(x0.size)], axis=1)
    assert abs(val[3]) < 1e-9 * float(pm["max_isometric_force"])  # polished equilibrium
    assert val[0] > 0 and val[1] != 0
    rows = [0, 1, 2]
    scale = np.maximum(np.abs(jac[rows]), np.abs(jac[rows]).max(axis=1, keepdims=True) * 1e-6)
    np.testing.assert_array_less(np.abs(jac[rows] - fd[rows]) / scale, 1e-5)
    assert val[4] != val[2]
    np.testing.assert_allclose(jac[4], jac[2], rtol=1e-2, atol=1e-6 * np.abs(jac[2]).max())
    assert np.count_nonzero(g) > 0 and np.all(np.isfinite(g))

    # float32: the model's parameters and the inputs in float32 run through state_from_fiber_length
    m32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if eqx.is_inexact_array(x) else x, model)
    args = [jnp.full((len(model.muscle_names),), x0[k], jnp.float32) for k in range(4)]
    f32 = jax.jit(lambda mm, *a: state_from_fiber_length(mm, *a).tendon_force)(m32, *args)
    assert f32.dtype == jnp.float32
    np.testing.assert_allclose(f32[m], val[0], rtol=1e-4)


#: OpenSim 4.6's equilibrateMuscles on this model at rest (q̇ = 0): (q, activations), fibre lengths
#: (m) and tendon forces (N) of FCR, FCU, ECRB, ECU_pre-surgery, DEF
OPENSIM_EQUILIBRIA = [
    ((0.0, 0.0), (0.5, 0.5, 0.5, 0.5, 0.5),
     (0.06133899370055007, 0.05144710007672474, 0.05743153044197744, 0.06396412495936554, 0.060121720995129954),
     (29.704520162157664, 50.20380620473409, 62.46588976545171, 58.29918083562299, 41.24245218123404)),
    ((0.6, -0.3), (0.9, 0.2, 0.7, 0.05, 1.0),
     (0.062218301373161054, 0.06153811275687498, 0.06121050817897488, 0.05466998355041552, 0.06587369482111843),
     (53.60948758161025, 17.399682976700163, 87.69626441014874, 5.586083521751834, 79.6808827896773)),
    ((-0.9, 0.5), (0.3, 0.8, 0.1, 0.6, 0.4),
     (0.06375600331213267, 0.021333280861798944, 0.05823277698987122, 0.057962629774310354, 0.05339460511103745),
     (17.88608283634021, 0.2746155741841462, 14.282260054638636, 68.72677911015349, 31.199406487022618)),
]


def test_equilibrium_is_opensims_by_default(model):
    """``initial_fiber_lengths`` and ``muscle_forces`` give OpenSim's equilibrated state (its
    iteration stopped at 0.01 N), ``equilibrium="exact"`` the root (the derivatives of both:
    test_derivatives_equilibrium_and_float32)."""
    p = _per_muscle(model)

    @jax.jit
    def run(q, a):
        z = jnp.zeros(2)
        lce = mbjax.initial_fiber_lengths(model, q, z, a)
        L = mbjax.muscle_lengths(model, q)
        exact = jax.vmap(lambda pm, x, b: sch.isometric_fiber_length(pm, x, b, "exact"))(p, L, a)
        res = jax.vmap(sch.isometric_residual)(p, exact, L, a)
        return lce, exact, mbjax.muscle_forces(model, q, z, a), res

    moved = 0.0
    for q, a, lce_os, force_os in OPENSIM_EQUILIBRIA:
        lce, exact, f, res = run(jnp.asarray(q), jnp.asarray(a))
        np.testing.assert_allclose(lce, lce_os, rtol=1e-12, atol=0)
        np.testing.assert_allclose(f, force_os, rtol=1e-12, atol=0)
        assert np.all(np.abs(res) <= 1e-9 * np.asarray(p["max_isometric_force"]))
        moved = max(moved, float(np.max(np.abs(np.asarray(exact) - lce_os))))
    assert moved > 1e-7  # the root is not OpenSim's point
    with pytest.raises(ValueError, match=r"initial_fiber_lengths: equilibrium must be one of \('opensim', 'exact'\)"):
        mbjax.initial_fiber_lengths(model, jnp.zeros(2), jnp.zeros(2), jnp.full(5, 0.5), equilibrium="polished")
    with pytest.raises(ValueError, match="muscle_forces: equilibrium must be one of"):
        mbjax.muscle_forces(model, jnp.zeros(2), jnp.zeros(2), jnp.full(5, 0.5), equilibrium=True)


def test_refusals_and_opt_out(model, tmp_path):
    text = open(PATH).read()
    bad = tmp_path / "rigid.osim"
    bad.write_text(text.replace("<time_scale>", "<ignore_tendon_compliance>true</ignore_tendon_compliance><time_scale>", 1))
    with pytest.raises(NotImplementedError, match="Schutte1993Muscle_Deprecated with ignore_tendon_compliance"):
        load_osim(bad)
    nm = len(model.muscle_names)
    z = jnp.ones(nm)
    with pytest.raises(NotImplementedError, match="Schutte1993Muscle_Deprecated has no rigid-tendon mode"):
        eqx.filter_jit(state_from_states)(model, 0.06 * z, 0.3 * z, 0 * z, 0.5 * z, tendons="rigid")
    with pytest.raises(NotImplementedError, match="static optimization: the Schutte1993Muscle_Deprecated muscles"):
        mbjax.analysis.sharing.muscle_force_coefficients(model, jnp.zeros(2), jnp.zeros(2))
    with pytest.warns(UserWarning, match="not modelled, as asked by ignore_forces"):
        ignored = load_osim(PATH, ignore_forces=("Schutte1993Muscle_Deprecated",))
    assert ignored.muscle_names == model.muscle_names
    assert all(k == "Schutte1993Muscle_Deprecated (ignored)" for k in ignored.muscles.kinds)
    assert len(ignored.osim.ignored) == nm
    with pytest.raises(ValueError, match="cannot be ignored"):
        load_osim(PATH, ignore_forces=("Thelen2003Muscle",))
