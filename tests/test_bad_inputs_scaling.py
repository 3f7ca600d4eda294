"""Scaling and model writing refuse masses no subject has: ``scale_model(mass=...)`` outside
(0, inf), a ScaleTool ``<mass>`` that is NaN (and <= 0 other than OpenSim's -1 warns, keeping the
masses as OpenSim's ``Model::scale`` does, checked live in the validation twin), ``write_osim`` of a
negative body mass, and ``load_osim`` of one (file, line, body)."""

import os
import re
import warnings

import equinox as eqx
import numpy as np
import pytest

import mbjax.analysis.identify as idf
import mbjax.io
from mbjax.models import model_path

ARM = mbjax.io.load_osim(model_path("arm26"))
FACTORS = {n: 1.1 for n in idf.segment_names(ARM)}
SETUP = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk", "subject01_Setup_Scale.xml")


@pytest.mark.parametrize("mass", [-70.0, 0.0, float("nan"), float("inf")])
def test_scale_model_refuses_a_mass_no_subject_has(mass):
    with pytest.raises(ValueError, match=r"scale_model: mass must be .* > 0 \(kg\), got"):
        idf.scale_model(ARM, FACTORS, mass=mass)


def test_scale_model_mass_is_the_total():
    scaled = idf.scale_model(ARM, FACTORS, mass=70.0)
    np.testing.assert_allclose(float(np.sum(scaled.mass)), 70.0, rtol=1e-12)
    kept = idf.scale_model(ARM, FACTORS, mass=None)
    np.testing.assert_allclose(np.asarray(kept.mass), np.asarray(ARM.mass), rtol=1e-15)


def _setup_with_mass(tmp_path, text):
    src = open(SETUP).read()
    src = re.sub(r"<mass>[^<]*</mass>", f"<mass>{text}</mass>", src, count=1)
    path = tmp_path / os.path.basename(SETUP)
    path.write_text(src)
    return str(path), src[:src.index(f"<mass>{text}<")].count("\n") + 1


def test_scale_setup_mass():
    assert mbjax.io.read_scale_setup(SETUP).mass == pytest.approx(72.6)


def test_scale_setup_minus_one_keeps_masses_silently(tmp_path):
    path, _ = _setup_with_mass(tmp_path, "-1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mbjax.io.read_scale_setup(path).mass is None


@pytest.mark.parametrize("text", ["-72.6", "0"])
def test_scale_setup_other_non_positive_mass_warns_by_line(tmp_path, text):
    path, line = _setup_with_mass(tmp_path, text)
    with pytest.warns(UserWarning, match=rf"Setup_Scale.xml:{line}: .*subject mass {float(text)} <= 0: the model's masses are kept"):
        assert mbjax.io.read_scale_setup(path).mass is None


@pytest.mark.parametrize("text", ["nan", "inf", "72.6 70"])
def test_scale_setup_non_finite_mass_refused_by_line(tmp_path, text):
    path, line = _setup_with_mass(tmp_path, text)
    with pytest.raises(ValueError, match=rf"Setup_Scale.xml:{line}: .*<mass> must be one finite number"):
        mbjax.io.read_scale_setup(path)


def test_write_osim_refuses_a_negative_mass(tmp_path):
    bad = eqx.tree_at(lambda m: m.mass, ARM, ARM.mass.at[1].set(-2.0))
    with pytest.raises(ValueError, match=r"arm26.osim:\d+: <Body name='r_humerus'>: body 'r_humerus' has mass -2.0 < 0"):
        mbjax.io.write_osim(bad, str(tmp_path / "neg.osim"))
    assert not (tmp_path / "neg.osim").exists()


@pytest.mark.parametrize("text", ["-2.0", "nan"])
def test_load_osim_refuses_a_negative_mass_by_line(tmp_path, text):
    src = open(model_path("arm26")).read()
    start = src.index('<Body name="r_humerus">')
    i = src.index("<mass>", start)
    j = src.index("</mass>", i)
    bad = src[:i] + f"<mass>{text}" + src[j:]
    path = tmp_path / "neg.osim"
    path.write_text(bad)
    line = bad[:i].count("\n") + 1
    if text == "nan":  # refused where every number list is read: named by its <Body> element
        line = bad[:start].count("\n") + 1
        why = "<Body name='r_humerus'>: <mass> holds NaN"
    else:
        why = "body 'r_humerus': mass must be finite and >= 0"
    with pytest.raises(ValueError, match=rf"neg.osim:{line}: .*{why}"):
        mbjax.io.load_osim(str(path))


def _setup_edit(tmp_path, old, new):
    """The shipped ScaleTool setup with the first ``old`` replaced by ``new``, and that line."""
    src = open(SETUP).read()
    assert old in src
    path = tmp_path / os.path.basename(SETUP)
    path.write_text(src.replace(old, new, 1))
    return str(path), src[:src.index(old)].count("\n") + 1


@pytest.mark.parametrize("old, new, why", [
    ("<apply> true </apply>", "<apply> maybe </apply>", r"<apply>: <apply> must be true or false, got 'maybe'"),
    ("measurements manualScale </scaling_order>", "measurments </scaling_order>",
     r"<scaling_order>: unknown scaling step\(s\) \['measurments'\]"),
    ("1.00000000       2.00000000 </time_range>", "2 1 </time_range>",
     r"<time_range>: .*start <= end, got '2 1'"),
    ("1.00000000       2.00000000 </time_range>", "1 2 3 </time_range>",
     r"<time_range>: .*two finite times.*got '1 2 3'"),
    ("<weight>       1.00000000 </weight>", "<weight> -1 </weight>", r"<weight>: <weight> must be one finite number >= 0"),
])
def test_scale_setup_bad_values_refused_by_element_and_line(tmp_path, old, new, why):
    path, line = _setup_edit(tmp_path, old, new)
    with pytest.raises(ValueError, match=rf"Setup_Scale.xml:{line}: {why}"):
        mbjax.io.read_scale_setup(path)


def test_scale_setup_unknown_element_warned_by_name(tmp_path):
    path, line = _setup_edit(tmp_path, "<notes>", "<foo_bar>1</foo_bar><notes>")
    with pytest.warns(UserWarning, match=rf"Setup_Scale.xml: not read by mbjax .*<foo_bar> in <ScaleTool> \(line {line}\)"):
        mbjax.io.read_scale_setup(path)


def test_scale_setup_reads_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = mbjax.io.read_scale_setup(SETUP)
    assert s.scaling_order == ("measurements", "manualScale") and s.scaler_time_range == (1.0, 2.0)


STATIC = os.path.join(os.path.dirname(SETUP), "subject01_static.trc")


@pytest.fixture(scope="module")
def gait():
    model = mbjax.io.load_osim(os.path.join(os.path.dirname(SETUP), "subject01_simbody.osim"))
    markers = mbjax.io.load_markers(os.path.join(os.path.dirname(SETUP), "subject01_simbody.osim"), model)
    return model, markers, mbjax.io.read_trc(STATIC)


def test_measurement_of_one_marker_twice_refused_by_name_and_pair(gait):
    model, markers, data = gait
    with pytest.raises(ValueError, match=r"measurement 'pelvis': pair \(R\.ASIS, R\.ASIS\) has no length .*same marker"):
        idf.measurement_factor(model, markers, data, [("R.ASIS", "R.ASIS")], (1.0, 2.0), name="pelvis")


def test_measurement_with_a_missing_frame_warns_and_averages_the_others(gait):
    model, markers, data = gait
    k = data.names.index("R.ASIS")
    pos = data.positions.copy()
    i = int(np.searchsorted(data.time, 1.5))
    pos[i, k] = np.nan
    pairs = [("R.ASIS", "L.ASIS")]
    with pytest.warns(UserWarning, match=r"measurement 'pelvis': marker\(s\) \['R\.ASIS'\] of pair \(R\.ASIS, L\.ASIS\) "
                      r"missing in 1 of \d+ frames"):
        f = idf.measurement_factor(model, markers, data._replace(positions=pos), pairs, (1.0, 2.0), name="pelvis")
    assert np.isfinite(f)
    kept = np.delete(np.arange(len(data.time)), i)
    ref = idf.measurement_factor(model, markers, data._replace(time=data.time[kept], positions=data.positions[kept]),
                                 pairs, (1.0, 2.0))
    np.testing.assert_allclose(f, ref, rtol=1e-12)
    pos[:, k] = np.nan
    with pytest.raises(ValueError, match=r"measurement 'pelvis': marker\(s\) \['R\.ASIS'\] .* missing in every frame"):
        idf.measurement_factor(model, markers, data._replace(positions=pos), pairs, (1.0, 2.0), name="pelvis")
