"""OpenSim model scaling (``mbjax.analysis.identify.scale_model``) against OpenSim's own output for the
Gait2354 pipeline (``Pipelines/Gait2354_Simbody`` of opensim-models, packaged in
``mbjax.models.pipeline_path("gait2354_walk")``).

The scale factors come from the static trial as OpenSim's ``ModelScaler`` computes them (marker-pair
distances averaged over the setup's time range, over the scale marker set's distances at the default
pose; the manual femur/tibia factors after them): they equal ``subject01_scaleSet_applied.xml``, which
OpenSim wrote with 6 significant digits.  ``subject01_scaledOnly.osim`` was also written with 6
significant digits, by an older OpenSim that did not rescale inertias when preserving the mass
distribution (OpenSim 4.6's ``Model::scale`` multiplies them by s², as mbjax does; the exact 4.6
behaviour is checked against OpenSim itself in tests/validation/test_scaling_opensim.py).  So every
joint frame, centre of mass, path point, marker, inertia (÷ s²) and muscle length here must round to
the reference's 6 digits, and poses, path lengths and the mass matrix agree to that precision.
"""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.models as mm
from mbjax.analysis.identify import scale_markers, scale_model, segment_names
from mbjax.analysis.identify.scaling import frame_range, measurement_factor
from mbjax.io import load_marker_set, load_markers, load_osim, read_trc

jax.config.update("jax_enable_x64", True)

PIPE = mm.pipeline_path("gait2354_walk")
SUBJECT_MASS = 72.6  # subject01_Setup_Scale.xml <mass>


def setup_factors(model, markers):
    """The ScaleTool setup's factors: measurements, then the manual scales (scaling_order)."""
    data = read_trc(f"{PIPE}/subject01_static.trc")
    ms = ET.parse(f"{PIPE}/subject01_Setup_Scale.xml").getroot().find(".//ModelScaler")
    assert ms.find("scaling_order").text.split() == ["measurements", "manualScale"]
    time_range = [float(v) for v in ms.find("time_range").text.split()]
    out = {}
    for meas in ms.find("MeasurementSet/objects"):
        pairs = [tuple(p.find("markers").text.split()) for p in meas.find("MarkerPairSet/objects")]
        f = measurement_factor(model, markers, data, pairs, time_range)
        for bs in meas.find("BodyScaleSet/objects"):
            assert bs.find("axes").text.split() == ["X", "Y", "Z"]
            out[bs.get("name")] = f
    for sc in ms.find("ScaleSet/objects"):
        out[sc.find("segment").text.strip()] = float(sc.find("scales").text.split()[0])
    return {k: v for k, v in out.items() if k in model.body_names}  # the setup names the 2392's patellae


def applied_factors():
    txt = open(f"{PIPE}/reference/subject01_scaleSet_applied.xml").read()
    return {seg: float(sc.split()[0]) for sc, seg in re.findall(r"<scales>(.*?)</scales>\s*<segment>(.*?)</segment>", txt)
            if seg != "ground"}


@pytest.fixture(scope="module")
def case():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generic = mm.load("gait2354")
        ref = load_osim(f"{PIPE}/reference/subject01_scaledOnly.osim")
    markers, fixed = load_marker_set(f"{PIPE}/gait2354_Scale_MarkerSet.xml", generic)
    factors = setup_factors(generic, markers)
    scaled = scale_model(generic, factors, mass=SUBJECT_MASS)
    return generic, ref, markers, factors, scaled


def sig6(x):
    """``x`` rounded to 6 significant digits (as the reference file was written)."""
    x = np.asarray(x, float)
    return np.vectorize(lambda v: float(f"{v:.6g}"))(x)


def assert_6_digits(ours, ref):
    ours, ref = np.asarray(ours, float), np.asarray(ref, float)
    # each number rounds to the reference's 6 digits (a tie in the 7th digit may round either way)
    bad = (sig6(ours) != ref) & (np.abs(ours - ref) > 0.5e-5 * np.abs(ref) * (1 + 1e-9))
    assert not bad.any(), (ours[bad], ref[bad])


def test_frame_range_is_opensims():
    t = np.arange(10) / 60
    assert frame_range(t, 1 / 60, 3 / 60) == (1, 3)
    assert frame_range(t, 0.02, 0.04) == (1, 3)  # last frame at or before start, first at or after end
    assert frame_range(np.round(t, 3), 0.5, 0.5) == (9, 9)


def test_factors_match_opensims_applied_scale_set(case):
    generic, ref, markers, factors, scaled = case
    applied = applied_factors()
    assert set(applied) == set(segment_names(generic)) == set(factors)
    for k, v in factors.items():
        assert float(f"{v:.6g}") == applied[k], (k, v, applied[k])


def test_scaled_model_matches_opensims_scaled_only(case):
    generic, ref, markers, factors, scaled = case
    assert scaled.body_names == ref.body_names
    assert_6_digits(scaled.offset[:, :3, 3], ref.offset[:, :3, 3])
    np.testing.assert_array_equal(scaled.offset[:, :3, :3], ref.offset[:, :3, :3])
    assert_6_digits(scaled.com, ref.com)
    np.testing.assert_allclose(scaled.mass, ref.mass, rtol=1e-14)
    assert float(scaled.mass.sum()) == pytest.approx(SUBJECT_MASS, rel=1e-14)
    # the reference's OpenSim kept inertia × mass factor only; 4.6 (and mbjax) also scale by s²
    s = np.array([factors.get(n, 1.0) for n in scaled.body_names])
    assert_6_digits(scaled.inertia / (s**2)[:, None, None], ref.inertia)
    p, pr = scaled.muscles, ref.muscles
    assert p.names == pr.names
    assert_6_digits(p.location, pr.location)
    for key in ("optimal_fiber_length", "tendon_slack_length", "max_isometric_force"):
        assert_6_digits(p.parameters[key], pr.parameters[key])
    ref_markers = load_markers(f"{PIPE}/reference/subject01_scaledOnly.osim", ref)
    ours = scale_markers(generic, markers, factors)
    assert ours.names == ref_markers.names and ours.body == ref_markers.body
    assert_6_digits(ours.offset, ref_markers.offset)


def test_scaled_kinematics_and_dynamics_match_reference(case):
    generic, ref, markers, factors, scaled = case
    s = jnp.asarray([factors.get(n, 1.0) for n in scaled.body_names])
    ref = eqx_inertia(ref, ref.inertia * (s**2)[:, None, None])  # 4.6's inertia rule, see the module docstring
    q = jnp.asarray(np.random.default_rng(0).uniform(-0.6, 0.6, (4, scaled.n_coordinates)))
    for fn, tol in ((mbjax.body_poses, 2e-6), (mbjax.muscle_lengths, 5e-6), (mbjax.mass_matrix, 2e-5)):
        a = jax.vmap(fn, (None, 0))(scaled, q)
        b = jax.vmap(fn, (None, 0))(ref, q)
        assert float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b))) < tol, fn.__name__


def eqx_inertia(model, inertia):
    import equinox as eqx

    return eqx.tree_at(lambda m: m.inertia, model, inertia)


def test_unit_factors_change_nothing(case):
    generic = case[0]
    same = scale_model(generic, {})
    for a, b in zip(jax.tree_util.tree_leaves(same), jax.tree_util.tree_leaves(generic)):
        np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)


def test_scaling_is_differentiable_and_jits(case):
    generic, ref, markers, factors, scaled = case
    names = segment_names(generic)
    s0 = jnp.asarray([factors[n] for n in names])
    q = jnp.asarray(np.random.default_rng(1).uniform(-0.4, 0.4, generic.n_coordinates))

    def f(s):
        m = scale_model(generic, s, mass=SUBJECT_MASS)
        mk = scale_markers(generic, markers, s)
        return jnp.concatenate([mbjax.marker_positions(m, mk, q).ravel(), mbjax.muscle_lengths(m, q),
                                m.muscles.parameters["tendon_slack_length"],
                                jnp.diag(mbjax.mass_matrix(m, q))])

    jac = jax.jit(jax.jacfwd(f))(s0)
    h = 1e-6
    fd = jnp.stack([(f(s0.at[k].add(h)) - f(s0.at[k].add(-h))) / (2 * h) for k in range(len(names))], 1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


def test_bad_factors_raise(case):
    generic = case[0]
    with pytest.raises(ValueError, match="unknown body"):
        scale_model(generic, {"femur": 1.1})
    with pytest.raises(ValueError, match="positive"):
        scale_model(generic, {"femur_r": 0.0})
    with pytest.raises(ValueError, match="positive"):
        scale_model(generic, {"femur_r": -1.0})
    with pytest.raises(ValueError, match="shape"):
        scale_model(generic, jnp.ones(3))
    with pytest.raises(ValueError, match="ground"):
        scale_model(generic, {"ground": 2.0})
    with pytest.raises(ValueError, match="not loaded from an .osim"):
        scale_model(_plain(), {})


def _plain():
    from mbjax._builder import ModelBuilder
    from mbjax.maps.constant import Constant

    b = ModelBuilder(("q",))
    b.add_body("a", parent="ground", joint="revolute", axis=[0, 0, 1], map=Constant(0.0), mass=1.0)
    return b.build()


def test_written_scaled_model_reads_back(case, tmp_path):
    """write_osim of the scaled model (joint frames, knee translation splines in a MultiplierFunction,
    moving points, markers added from the scale marker set) loads back as the same model."""
    from mbjax.io import write_osim

    generic, ref, markers, factors, scaled = case
    ours = scale_markers(generic, markers, factors)
    out = write_osim(scaled, tmp_path / "scaled.osim", markers=ours)
    back = load_osim(out)
    back_markers = load_markers(out, back)
    assert back_markers.names == ours.names
    np.testing.assert_allclose(back_markers.offset, ours.offset, rtol=0, atol=1e-17)
    q = jnp.asarray(np.random.default_rng(3).uniform(-0.6, 0.6, (3, scaled.n_coordinates)))
    for fn in (mbjax.body_poses, mbjax.muscle_lengths, mbjax.mass_matrix):
        a, b = jax.vmap(fn, (None, 0))(scaled, q), jax.vmap(fn, (None, 0))(back, q)
        assert float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b))) < 1e-14, fn.__name__
    for key in ("optimal_fiber_length", "tendon_slack_length"):
        np.testing.assert_array_equal(back.muscles.parameters[key], scaled.muscles.parameters[key])
    np.testing.assert_array_equal(back.osim.scaling.factors, 1.0)  # factors are relative to the source
