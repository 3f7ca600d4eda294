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

import mbjax.identify as idf
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
