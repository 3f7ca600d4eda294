"""OpenSim 4.6's ``Model::scale`` keeps the masses for a subject mass <= 0 (what mbjax's
``read_scale_setup`` does, with a warning) and rescales to the total for a mass > 0 (what
``scale_model(mass=...)`` does)."""

import numpy as np
import pytest

import mbjax.analysis.identify as idf
import mbjax.io
from mbjax.models import model_path

osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")


def _opensim_masses(final_mass):
    model = osim.Model(model_path("arm26"))
    state = model.initSystem()
    scales = osim.ScaleSet()
    for body in ("r_humerus", "r_ulna_radius_hand"):
        s = osim.Scale()
        s.setSegmentName(body)
        s.setScaleFactors(osim.Vec3(1.1))
        s.setApply(True)
        scales.cloneAndAppend(s)
    model.scale(state, scales, True, final_mass)
    return np.asarray([model.getBodySet().get(b).getMass() for b in ("r_humerus", "r_ulna_radius_hand")])


@pytest.mark.parametrize("final_mass", [-72.6, 0.0, -1.0])
def test_opensim_keeps_masses_for_a_non_positive_subject_mass(final_mass):
    arm = mbjax.io.load_osim(model_path("arm26"))
    np.testing.assert_allclose(_opensim_masses(final_mass), np.asarray(arm.mass)[1:3], rtol=1e-12)


def test_opensim_rescales_to_a_positive_subject_mass_as_scale_model_does():
    arm = mbjax.io.load_osim(model_path("arm26"))
    ours = idf.scale_model(arm, {n: 1.1 for n in idf.segment_names(arm)}, mass=5.0)
    np.testing.assert_allclose(np.asarray(ours.mass)[1:3], _opensim_masses(5.0), rtol=1e-10)
