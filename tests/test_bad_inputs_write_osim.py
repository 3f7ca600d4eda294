"""Bad input to mbjax.io.write_osim: what load_osim would refuse is refused before anything is
written, changed wrap objects and coordinate ranges are written, and changed values the writer
does not write are named in a warning."""

from __future__ import annotations

import os
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_markers, load_osim, write_osim

jax.config.update("jax_enable_x64", True)

ARM26 = mbjax.models.model_path("arm26")


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_osim(path, **kw)


@pytest.fixture(scope="module")
def arm():
    return _load(ARM26, ignore_wrapping=True)


@pytest.fixture(scope="module")
def wrapped():
    return _load(ARM26)  # loading is quick; nothing here evaluates (compiles) the wrapped paths


def _muscles(model, where, value):
    p = eqx.tree_at(where, model.muscles, value)
    return model.replace(muscles=p)


def _wraps(model, where, value):
    p = model.muscles
    return _muscles(model, lambda q: q.wraps, eqx.tree_at(where, p.wraps, value))


def _info(model, where, value):
    return model.replace(osim=eqx.tree_at(where, model.osim, value))


def _write_quietly(model, path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the valid twin: no warning either
        return write_osim(model, path)


def test_valid_model_writes_without_warning(arm, tmp_path):
    out = _write_quietly(arm, tmp_path / "same.osim")
    back = _load(out, ignore_wrapping=True)
    np.testing.assert_array_equal(back.mass, arm.mass)


@pytest.mark.parametrize("key, value, match", [
    ("max_isometric_force", -1.0, "max_isometric_force must be finite and >= 0"),
    ("max_isometric_force", np.nan, "max_isometric_force must be finite and >= 0"),
    ("optimal_fiber_length", 0.0, "optimal_fiber_length must be finite and > 0"),
    ("tendon_slack_length", np.nan, "tendon_slack_length must be finite and > 0"),
    ("pennation_angle_at_optimal", 2.0, r"pennation_angle_at_optimal must be finite and in \[0, pi/2\)"),
    ("Af", -0.5, "Af must be finite and > 0"),
])
def test_muscle_parameter_load_osim_refuses_is_not_written(arm, tmp_path, key, value, match):
    p = arm.muscles
    bad = _muscles(arm, lambda q: q.parameters[key], p.parameters[key].at[2].set(value))
    out = tmp_path / "bad.osim"
    with pytest.raises(ValueError, match=rf"nothing written(.|\n)*muscle {p.names[2]!r}: {match}"):
        write_osim(bad, out)
    assert not out.exists()


def test_non_finite_path_point_is_refused_naming_muscle_and_point(arm, tmp_path):
    p = arm.muscles
    bad = _muscles(arm, lambda q: q.location, p.location.at[1, 0, 2].set(jnp.nan))
    with pytest.raises(ValueError, match=rf"muscle {p.names[1]!r}: path point {p.point_names[1][0]!r} has location "
                                         r"\[.*nan\]: not finite"):
        write_osim(bad, tmp_path / "bad.osim")
    assert not (tmp_path / "bad.osim").exists()


def test_asymmetric_inertia_is_refused(arm, tmp_path):
    bad = eqx.tree_at(lambda m: m.inertia, arm, arm.inertia.at[1, 0, 1].set(0.01))
    with pytest.raises(ValueError, match=r"<Body name='r_humerus'>: body 'r_humerus' has an inertia that is not "
                                         "symmetric"):
        write_osim(bad, tmp_path / "bad.osim")
    assert not (tmp_path / "bad.osim").exists()


def test_non_finite_inertia_is_refused(arm, tmp_path):
    bad = eqx.tree_at(lambda m: m.inertia, arm, arm.inertia.at[2, 1, 1].set(jnp.nan))
    with pytest.raises(ValueError, match=r"<Body name='r_ulna_radius_hand'>: <inertia> would be \[.*nan.*\]: not finite"):
        write_osim(bad, tmp_path / "bad.osim")


def test_changed_wrap_dimensions_are_written(wrapped, tmp_path):
    w = wrapped.muscles.wraps
    k = w.kinds.index("WrapCylinder")
    e = w.kinds.index("WrapEllipsoid")
    dims = w.dimensions.at[k, 0].set(0.021).at[e].multiply(1.1)
    rot = w.rotation.at[e].set(w.rotation[e] @ jnp.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    model = _wraps(wrapped, lambda x: (x.dimensions, x.translation, x.rotation),
                   (dims, w.translation.at[k, 1].add(0.01), rot))
    back = _load(_write_quietly(model, tmp_path / "wraps.osim")).muscles.wraps
    assert back.names == w.names
    np.testing.assert_array_equal(back.dimensions, dims)
    np.testing.assert_allclose(back.translation, w.translation.at[k, 1].add(0.01), rtol=0, atol=1e-15)
    np.testing.assert_allclose(back.rotation, rot, rtol=0, atol=1e-14)


@pytest.mark.parametrize("value, match", [(np.nan, "dimensions must be a finite 3-vector"),
                                          (-0.01, "dimensions must be positive")])
def test_bad_wrap_dimensions_are_refused_naming_the_object(wrapped, tmp_path, value, match):
    w = wrapped.muscles.wraps
    k = w.kinds.index("WrapCylinder")
    bad = _wraps(wrapped, lambda x: x.dimensions, w.dimensions.at[k, 0].set(value))
    with pytest.raises(ValueError, match=rf"nothing written(.|\n)*wrap object {w.names[k]!r}(.|\n)*{match}"):
        write_osim(bad, tmp_path / "bad.osim")
    assert not (tmp_path / "bad.osim").exists()


def test_changed_coordinate_default_and_range_are_written(arm, tmp_path):
    info = arm.osim
    model = _info(arm, lambda i: (i.default, i.lower), (info.default.at[0].set(0.2), info.lower.at[0].set(-0.1)))
    back = _load(_write_quietly(model, tmp_path / "ranges.osim"), ignore_wrapping=True).osim
    np.testing.assert_array_equal(back.default, model.osim.default)
    np.testing.assert_array_equal(back.lower, model.osim.lower)
    np.testing.assert_array_equal(back.upper, info.upper)


@pytest.mark.parametrize("lower", [np.nan, 5.0])
def test_bad_coordinate_range_is_refused(arm, tmp_path, lower):
    info = arm.osim
    bad = _info(arm, lambda i: i.lower, info.lower.at[0].set(lower))
    with pytest.raises(ValueError, match=r"<Coordinate name='r_shoulder_elev'>: coordinate 'r_shoulder_elev' would "
                                         r"have .*<range> \[(nan|5\.0), "):
        write_osim(bad, tmp_path / "bad.osim")
    assert not (tmp_path / "bad.osim").exists()


def test_muscle_property_the_element_leaves_out_is_written(tmp_path):
    import re

    text = open(ARM26).read()
    start = text.index('<Thelen2003Muscle name="TRIlong">')
    end = text.index("</Thelen2003Muscle>", start)
    src = tmp_path / "no_af.osim"
    src.write_text(text[:start] + re.sub(r"<Af>[^<]*</Af>", "", text[start:end]) + text[end:])
    arm = _load(str(src), ignore_wrapping=True)
    p = arm.muscles
    m = p.names.index("TRIlong")
    model = _muscles(arm, lambda q: q.parameters["Af"], p.parameters["Af"].at[m].set(0.5))
    back = _load(_write_quietly(model, tmp_path / "af.osim"), ignore_wrapping=True)
    np.testing.assert_array_equal(back.muscles.parameters["Af"], model.muscles.parameters["Af"])


@pytest.mark.parametrize("change, match", [
    (lambda m: eqx.tree_at(lambda x: x.offset, m, m.offset.at[1, 0, 3].add(0.01)),
     r"joint offsets \(model.offset\) of the bodies 'r_humerus'"),
    (lambda m: eqx.tree_at(lambda x: x.axis, m, m.axis.at[1].set(jnp.array([0.0, 1.0, 0.0]))),
     r"joint axes \(model.axis\) of the bodies 'r_humerus'"),
])
def test_changed_values_not_written_are_named_in_a_warning(arm, tmp_path, change, match):
    with pytest.warns(UserWarning, match=rf"does not write; the file keeps its own values there: {match}"):
        out = write_osim(change(arm), tmp_path / "changed.osim")
    assert os.path.exists(out)


def test_changed_mass_of_a_joint_step_is_named_in_a_warning(tmp_path):
    gait = _load(os.path.join(mbjax.models.pipeline_path("gait2354_walk"), "subject01_simbody.osim"),
                 ignore_wrapping=True)
    i = next(i for i, n in enumerate(gait.body_names) if "/" in n)  # a massless step of a multi-dof joint
    changed = eqx.tree_at(lambda m: m.mass, gait, gait.mass.at[i].set(1.0))
    with pytest.warns(UserWarning, match=rf"masses \(model.mass\) of the bodies {gait.body_names[i]!r}, which are steps"):
        write_osim(changed, tmp_path / "changed.osim")


def test_changed_gravity_is_written(arm, tmp_path):
    changed = eqx.tree_at(lambda m: m.gravity, arm, arm.gravity * 2)
    back = _load(_write_quietly(changed, tmp_path / "g.osim"), ignore_wrapping=True)
    np.testing.assert_array_equal(back.gravity, changed.gravity)
    bad = eqx.tree_at(lambda m: m.gravity, arm, arm.gravity.at[1].set(jnp.nan))
    with pytest.raises(ValueError, match=r"<gravity> would be \[0.0, nan, 0.0\]: not finite"):
        write_osim(bad, tmp_path / "bad.osim")


def test_wrong_argument_types_are_refused(arm, tmp_path):
    with pytest.raises(TypeError, match="model must be an mbjax.Model"):
        write_osim(ARM26, tmp_path / "x.osim")
    with pytest.raises(TypeError, match="markers must be mbjax.Markers"):
        write_osim(arm, tmp_path / "x.osim", markers={"r_acromion": [0, 0, 0]})
    markers = load_markers(ARM26, arm)
    wrong = mbjax.Markers(markers.names, (5,) * len(markers.names), markers.offset)
    with pytest.raises(ValueError, match=r"markers .* are on no body of the model, which has 3"):
        write_osim(arm, tmp_path / "x.osim", markers=wrong)
    assert not (tmp_path / "x.osim").exists()


def test_file_with_colon_tags_is_written(tmp_path):
    """OpenSim tags such as ``HuntCrossleyForce::ContactParametersSet`` (not XML namespaces)."""
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from _contact_models import CONTACT_MODEL

    src = tmp_path / "contact.osim"
    src.write_text(CONTACT_MODEL)
    model = _load(str(src))
    changed = eqx.tree_at(lambda m: m.mass, model, model.mass * 1.5)
    out = _write_quietly(changed, tmp_path / "out.osim")
    assert "HuntCrossleyForce::ContactParametersSet" in open(out).read()
    np.testing.assert_array_equal(_load(out).mass, changed.mass)


def test_unbounded_control_is_written_back(tmp_path):
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from _muscle_parameter_variants import ARM26 as TEXT, set_property

    src = tmp_path / "inf.osim"
    src.write_text(set_property(TEXT, "TRIlat", "max_control", "Inf"))
    model = _load(str(src), ignore_wrapping=True)
    back = _load(_write_quietly(model, tmp_path / "out.osim"), ignore_wrapping=True)
    np.testing.assert_array_equal(back.muscles.parameters["max_control"],
                                  model.muscles.parameters["max_control"])
    assert np.isinf(model.muscles.parameters["max_control"]).any()


def test_source_of_another_model_is_refused(arm, tmp_path):
    gait = os.path.join(mbjax.models.pipeline_path("gait2354_walk"), "subject01_simbody.osim")
    with pytest.raises(ValueError, match=r"the model does not match .*subject01_simbody.osim: bodies \['base', "):
        write_osim(arm, tmp_path / "x.osim", source=gait)
    with pytest.raises(TypeError, match="path must be a file name"):
        write_osim(arm, None)
    assert not (tmp_path / "x.osim").exists()
