"""OpenSim 4.6 loads the .osim file mbjax.io.write_osim writes, and its path lengths, kinetic and
potential energies equal mbjax's for the fitted model (marker ``validation``).

The fitted model is the Gait2354 subject (54 muscles, 4.x file) and arm26 (3.x file, wrap objects
removed: straight paths) with new masses, centres of mass, inertias, path points and muscle
parameters (tests/test_osim_write.py's ``perturbed``).  At random poses and speeds: every path
length (OpenSim ``GeometryPath.getLength``), the kinetic energy ½ q̇ᵀ M q̇ (``calcKineticEnergy``;
it checks the whole mass matrix through random q̇) and the potential energy of gravity
(``calcPotentialEnergy`` with every force element switched off: masses and centres of mass), and each muscle's max isometric force, optimal fibre and tendon slack
lengths as OpenSim reads them.
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

import mbjax  # noqa: E402
from mbjax.io import load_osim, write_osim  # noqa: E402

from _osim_models import strip_wrapping  # noqa: E402
from test_osim_write import GAIT, perturbed  # noqa: E402

jax.config.update("jax_enable_x64", True)


@pytest.mark.parametrize("which", ["gait2354", "arm26"])
def test_opensim_reads_the_written_model(which, tmp_path):
    source = GAIT if which == "gait2354" else strip_wrapping(mbjax.models.model_path("arm26"),
                                                              str(tmp_path / "arm26_straight.osim"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = perturbed(load_osim(source))
    path = write_osim(fitted, tmp_path / "fitted.osim")
    model = osim.Model(str(path))
    for i in range(model.getForceSet().getSize()):  # potential energy of gravity alone (muscles store some)
        model.getForceSet().get(i).set_appliesForce(False)
    state = model.initSystem()
    coords = model.getCoordinateSet()
    names = list(fitted.coordinate_names)
    fs = model.getForceSet()
    muscles = list(fitted.muscles.names)
    paths = [osim.Muscle.safeDownCast(fs.get(m)) for m in muscles]
    p = fitted.muscles.parameters
    for k, mus in enumerate(paths):
        np.testing.assert_array_equal([mus.getMaxIsometricForce(), mus.getOptimalFiberLength(),
                                       mus.getTendonSlackLength()],
                                      [float(p[key][k]) for key in ("max_isometric_force", "optimal_fiber_length",
                                                                    "tendon_slack_length")])
    info = fitted.osim
    lo, hi = np.maximum(np.asarray(info.lower), -1.0), np.minimum(np.asarray(info.upper), 1.0)
    rng = np.random.default_rng(2)
    lengths = jax.jit(lambda q: mbjax.muscle_lengths(fitted, q))
    energies = jax.jit(lambda q, qd: (mbjax.kinetic_energy(fitted, q, qd), mbjax.potential_energy(fitted, q)))
    worst = np.zeros(3)
    for _ in range(5):
        q = rng.uniform(lo, hi)
        qd = rng.normal(size=q.shape)
        for n, v, w in zip(names, q, qd):
            coords.get(n).setValue(state, float(v), False)
            coords.get(n).setSpeedValue(state, float(w))
        model.realizeVelocity(state)
        ours_l = np.asarray(lengths(jnp.asarray(q)))
        theirs_l = np.array([m.getGeometryPath().getLength(state) for m in paths])
        ke, pe = (float(x) for x in energies(jnp.asarray(q), jnp.asarray(qd)))
        worst = np.maximum(worst, [np.abs(ours_l - theirs_l).max(), abs(ke - model.calcKineticEnergy(state)),
                                   abs(pe - model.calcPotentialEnergy(state))])
    print(f"\n{which}: written .osim in OpenSim 4.6 vs mbjax: lengths {worst[0]:.1e} m, kinetic energy "
          f"{worst[1]:.1e} J, potential energy {worst[2]:.1e} J")
    assert worst[0] < 1e-12
    assert worst[1] < 1e-10 and worst[2] < 1e-9
