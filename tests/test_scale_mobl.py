"""MoBL arm scale factors and marker offsets from a noise-free synthetic reaching trial
(experiments/scale_mobl.py).

The truth is made by ``scale_kinematics``/``scale_markers`` (checked against OpenSim's Model::scale in
tests/validation/test_scaling_opensim.py); the fit must give back every parameter the identifiability
analysis calls identifiable to ≤ 1e-6 relative and the scaled offsets ``s·o`` (what the data see of the
hand, the last body) to ≤ 1e-6, and name exactly the unidentifiable directions: the four phantom bodies'
factors (no marker, no joint translation in their frames) and the hand's factor with its markers' offsets.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import jax
import numpy as np
import pytest

from _osim_models import needs_mobl

jax.config.update("jax_enable_x64", True)

SPEC = importlib.util.spec_from_file_location(
    "scale_mobl", pathlib.Path(__file__).resolve().parents[1] / "experiments" / "scale_mobl.py")


@needs_mobl
@pytest.mark.extended  # a minute of compilation; CI recovers scale factors noise-free in test_static_scaling.py and
# names unidentifiable directions in test_identify.py
def test_mobl_factors_and_offsets_recovered_noise_free():
    exp = importlib.util.module_from_spec(SPEC)
    sys.modules["scale_mobl"] = exp  # equinox modules (dataclasses) look their module up
    SPEC.loader.exec_module(exp)
    model, markers, segs, truth, clean, start = exp.problem(12)
    fitted, report, info = exp.recover(model, markers, segs, clean, start, sigma=1e-3)
    assert report.converged
    p_err, o_err = exp.check_noise_free(info, fitted, truth, model, markers, segs)
    assert p_err <= 1e-6 and o_err <= 1e-6, (p_err, o_err)
    n_par = len(exp.theta(truth))
    assert info.rank == n_par - 5
    combos = info.unidentifiable
    assert sorted(c for c in combos if "offset" not in c) == sorted(
        f"log_s[{b}]" for b in ("clavphant", "scapphant", "humphant", "humphant1"))
    (hand,) = [c for c in combos if "offset" in c]
    assert hand.startswith("log_s[hand]") and all("hand_" in t for t in hand.split(" + ")[1:])
    identifiable = {n for n, ok in zip(info.names, info.identifiable) if ok}
    for b in ("clavicle", "scapula", "humerus", "ulna", "radius", "proximal_row"):
        assert f"log_s[{b}]" in identifiable
    assert np.all(np.isfinite(info.standard_errors[[info.names.index(f"log_s[{b}]") for b in ("humerus", "radius")]]))
