"""The rhythm experiment, noise-free: the 20 coefficients of de Groot & Brand's two-coordinate
shoulder rhythm recovered from clavicle, scapula and humerus orientations to ≤ 1e-6 relative, from
Holzbaur's slopes (plane-of-elevation terms zero); the orientation residual Jacobian has full rank.
(The truth is the published coefficients, not the code's output; experiments/identify_rhythm.py
adds noise and standard errors.)"""

from __future__ import annotations

import importlib.util
import pathlib

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from _osim_models import needs_mobl

jax.config.update("jax_enable_x64", True)

SPEC = importlib.util.spec_from_file_location(
    "identify_rhythm", pathlib.Path(__file__).resolve().parents[1] / "experiments" / "identify_rhythm.py")


@needs_mobl
def test_rhythm_recovered_noise_free():
    exp = importlib.util.module_from_spec(SPEC)
    SPEC.loader.exec_module(exp)
    from mbjax.models.shoulder import shoulder_model

    truth = shoulder_model("degroot_brand")
    k = exp.affine_family(truth)
    slope0 = np.asarray(truth.maps[k].slope).copy()
    slope0[:, 1] = 0.0
    start = eqx.tree_at(lambda m: m.maps[k].slope, truth, jnp.asarray(slope0))
    qs = exp.sweep(40)
    fitted, report, info = exp.recover(truth, start, qs, exp.orientations(truth, qs), progress=False)
    t = np.asarray(truth.maps[k].slope)
    assert report.converged
    np.testing.assert_allclose(np.asarray(fitted.maps[k].slope), t, rtol=1e-6)
    assert info.rank == t.size and not info.unidentifiable
    assert sorted(exp._map_names(truth, k)) == sorted(["Cy", "Cz", "Sx", "Sy", "Sz", "-Cy (unrot)", "-Cz (unrot)",
                                                        "-Sx (unrot)", "-Sy (unrot)", "-Sz (unrot)"])
