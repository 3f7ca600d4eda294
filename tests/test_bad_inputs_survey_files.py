"""Bad input files an outside survey found read silently or refused obscurely: unknown muscle
properties, a second ``<ConstraintSet>``, ``mbjax info`` on files ``load_osim`` refuses, and a UTF-8
byte order mark on text tables.

Inputs are the shipped models (3.x arm26, 4.x double pendulum, gait2354) and the arm26 marker file
of tests/data, copied to ``tmp_path`` and edited.
"""

import glob
import os
import re
import warnings

import numpy as np
import pytest

import mbjax.models
from mbjax import cli
from mbjax.io import load_osim, read_storage, read_trc, write_storage
from mbjax.opensim.model.osim_classes import CURVE_PROPERTIES, MUSCLE_TYPES, PATH_FORCE_FUNCTIONS, PATH_FORCE_PROPERTIES
from mbjax.opensim.model.osim_summary import _parse, summarize_osim
from mbjax.io.table import Table
from _osim_text import replace_once as _sub, write_text as _write

DATA = os.path.dirname(mbjax.models.model_path("arm26"))
ARM26 = open(mbjax.models.model_path("arm26")).read()
PENDULUM = open(os.path.join(DATA, "double_pendulum.osim")).read()
TRC = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "arm26_ik", "arm26_elbow_flex.trc")
#: ``Muscle::constructProperties``: OpenSim's default maximum isometric force
OPENSIM_DEFAULT_MAX_ISOMETRIC_FORCE = 1000.0


def _load(path, **kwargs):
    """``load_osim`` and the "not used" warnings it gives (others, such as ignored wrapping, dropped)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_osim(path, ignore_wrapping=True, **kwargs)
    return model, [str(w.message) for w in caught if "not used" in str(w.message)]


def _line_of(text, needle):
    return text[:text.index(needle)].count("\n") + 1


# -- unknown muscle properties ------------------------------------------------------------------

@pytest.mark.parametrize("extra", ["<fooparam>1</fooparam>", "<optimal_fibre_length>0.2</optimal_fibre_length>"])
def test_load_osim_warns_an_unknown_tag_in_a_thelen_muscle(tmp_path, extra):
    """A tag that is no property of Thelen2003Muscle is named with file, line and muscle (as in a <Body>)."""
    anchor = "<max_isometric_force>798.52</max_isometric_force>"
    text = _sub(ARM26, anchor, anchor + "\n" + extra)
    tag = re.match(r"<(\w+)>", extra).group(1)
    _, warned = _load(_write(tmp_path, text))
    line = _line_of(text, extra)
    assert len(warned) == 1, warned
    assert re.search(rf"model\.osim: 1 element\(s\) not used .*line {line} <{tag}> in "
                     r"<Thelen2003Muscle name='TRIlong'> \(not a property of Thelen2003Muscle", warned[0])


def test_load_osim_warns_a_misspelt_max_isometric_force_and_the_default_is_used(tmp_path):
    """``<max_isometric_forse>`` leaves OpenSim's default in force: warned by name; the valid twin reads 798.52."""
    text = _sub(ARM26, "<max_isometric_force>798.52</max_isometric_force>",
                "<max_isometric_forse>798.52</max_isometric_forse>")
    model, warned = _load(_write(tmp_path, text))
    assert len(warned) == 1 and "<max_isometric_forse> in <Thelen2003Muscle name='TRIlong'>" in warned[0]
    paths = model.muscles
    k = paths.names.index("TRIlong")
    assert float(paths.parameters["max_isometric_force"][k]) == OPENSIM_DEFAULT_MAX_ISOMETRIC_FORCE
    good, warned = _load(_write(tmp_path, ARM26, "good.osim"))
    assert warned == []
    assert float(good.muscles.parameters["max_isometric_force"][k]) == 798.52  # the file's value


def test_load_osim_warns_an_unknown_property_of_a_millard_curve(tmp_path):
    """A misspelt property inside a Millard muscle's curve object (``<minimun_value>``) is named with
    muscle and curve; the same muscle with its curve spelt right loads without the warning."""
    start = ARM26.index('<Thelen2003Muscle name="BRA">')
    end = ARM26.index("</Thelen2003Muscle>", start) + len("</Thelen2003Muscle>")
    bra = ARM26[start:end].replace("Thelen2003Muscle", "Millard2012EquilibriumMuscle")
    for tag in ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen"):
        bra = re.sub(rf"\s*<{tag}>[^<]*</{tag}>", "", bra)
    head = '<Millard2012EquilibriumMuscle name="BRA">'
    good = ARM26[:start] + bra.replace(head, head + "<ActiveForceLengthCurve><minimum_value>0.1</minimum_value>"
                                               "</ActiveForceLengthCurve>") + ARM26[end:]
    _, warned = _load(_write(tmp_path, good, "good.osim"))
    assert warned == []
    bad = _sub(good, "<minimum_value>0.1</minimum_value>", "<minimun_value>0.1</minimun_value>")
    _, warned = _load(_write(tmp_path, bad))
    assert len(warned) == 1 and re.search(
        rf"line {_line_of(bad, '<minimun_value>')} <minimun_value> in <Millard2012EquilibriumMuscle name='BRA'>"
        r"/<ActiveForceLengthCurve> \(not a property of ActiveForceLengthCurve", warned[0])


def test_known_unused_muscle_properties_are_not_warned(tmp_path):
    """OpenSim properties mbjax has no use for (``appliesForce``, ``components``, ``default_fiber_length``,
    the legacy ``isDisabled``) are known, so not warned as unknown."""
    anchor = "<max_isometric_force>798.52</max_isometric_force>"
    text = _sub(ARM26, anchor, anchor + "<default_fiber_length>0.1</default_fiber_length><components />"
                "<isDisabled>false</isDisabled>")
    _, warned = _load(_write(tmp_path, text))
    assert warned == []


def test_every_path_force_property_of_the_shipped_models_is_known():
    """Every child of every path force in the shipped models (and the OpenSim models of tests/data) is a
    property OpenSim declares for its class: the loader warns none of them as unknown (a second
    route to the loader's check, on the XML alone)."""
    files = glob.glob(os.path.join(DATA, "**", "*.osim"), recursive=True)
    files += glob.glob(os.path.join(os.path.dirname(__file__), "data", "**", "*.osim"), recursive=True)
    seen = 0
    for f in files:
        for force in _parse(f).iter():  # OpenSim's tags such as <A::B> need a parser without namespaces
            if force.tag not in MUSCLE_TYPES or force.find("GeometryPath") is None:
                continue
            for c in force:
                seen += 1
                named_function = c.get("name") in PATH_FORCE_FUNCTIONS.get(force.tag, ())
                assert c.tag in PATH_FORCE_PROPERTIES[force.tag] or named_function, (f, force.tag, c.tag)
                for g in (c if c.tag in CURVE_PROPERTIES else ()):
                    assert g.tag in CURVE_PROPERTIES[c.tag], (f, c.tag, g.tag)
    assert seen > 1000


# -- a second set of the same name ----------------------------------------------------------------

_SECOND = ('</ForceSet>', '</ForceSet>\n<ConstraintSet><objects><WeldConstraint name="w"><isDisabled>false'
                          '</isDisabled></WeldConstraint></objects></ConstraintSet>')


def test_a_second_constraint_set_is_refused_by_name(tmp_path):
    """OpenSim reads only the first <ConstraintSet>: a second one (with a WeldConstraint the first set
    would have refused) is refused, naming it, its objects and the first set's line."""
    text = _sub(ARM26, *_SECOND)
    path = _write(tmp_path, text)
    first = _line_of(text, "<ConstraintSet")
    with pytest.raises(ValueError, match=rf"model\.osim:\d+: <ConstraintSet>: a second <ConstraintSet> \(the first "
                                         rf"is at line {first}\): OpenSim reads only the first and ignores this one "
                                         r"and its 1 object\(s\) \(WeldConstraint 'w'\); move its objects"):
        load_osim(path, ignore_wrapping=True)
    with pytest.warns(UserWarning, match=r"load_osim refuses this file \(1 problem\(s\)\): .*a second <ConstraintSet>"):
        assert len(summarize_osim(path).refusals) == 1


def test_a_second_gravity_is_warned_and_the_first_used(tmp_path):
    """A repeated property that is no set (a second <gravity>) is warned as not used; the first one is
    the model's gravity, as in OpenSim."""
    text = _sub(PENDULUM, "</gravity>", "</gravity>\n<gravity>0 0 -1</gravity>")
    first = [float(v) for v in re.search(r"<gravity>([^<]*)</gravity>", PENDULUM).group(1).split()]
    model, warned = _load(_write(tmp_path, text))
    assert len(warned) == 1 and re.search(r"<gravity> in <Model> \(a second <gravity> \(the first is at line \d+\): "
                                          "OpenSim reads only the first", warned[0])
    np.testing.assert_array_equal(np.asarray(model.gravity), first)


# -- mbjax info on files load_osim refuses -----------------------------------------------------------

def _info(capsys, path, *extra):
    rc = cli.main(["info", path, *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err


def test_info_reports_a_missing_parent_body_as_load_osim_does(tmp_path, capsys):
    """3.x ``<parent_body>`` and 4.x ``<socket_parent_frame>`` naming no body: ``mbjax info`` lists the
    refusal (stderr warning, stdout section, JSON ``refusals``); ``load_osim`` refuses the same file."""
    path = _write(tmp_path, _sub(ARM26, "<parent_body>base</parent_body>", "<parent_body>scapula</parent_body>"))
    rc, out, err = _info(capsys, path)
    why = r"<CustomJoint name='r_shoulder'>: <parent_body> names 'scapula', which is no body of the file"
    assert rc == 0 and re.search(why, err)
    assert re.search(r"load_osim refuses this file \(1 problem\(s\)\):\n.*" + why, out)
    with pytest.raises(ValueError, match="<CustomJoint name='r_shoulder'>: unknown parent body 'scapula'"):
        load_osim(path, ignore_wrapping=True)
    pend = _write(tmp_path, _sub(PENDULUM, "<socket_parent_frame>/bodyset/rod1</socket_parent_frame>",
                                 "<socket_parent_frame>/bodyset/rod9</socket_parent_frame>"), "pend.osim")
    with pytest.warns(UserWarning, match=r"<PinJoint name='pin2'>: <socket_parent_frame> names '/bodyset/rod9', "
                                         "which is no frame of the file"):
        assert len(summarize_osim(pend).refusals) == 1
    with pytest.raises(ValueError, match="rod9"):
        load_osim(pend)
    import json
    rc, out, _ = _info(capsys, mbjax.models.model_path("arm26"), "--json")  # the valid twin: nothing refused
    assert rc == 0 and json.loads(out)["refusals"] == []
    rc, out, err = _info(capsys, mbjax.models.model_path("arm26"))
    assert "refuses" not in out + err and "checked: the XML only" in out


def test_info_reports_spline_knots_that_do_not_increase(tmp_path, capsys):
    """A SimmSpline of a joint whose x is not strictly increasing: reported by ``mbjax info`` with file,
    line and the two knots, refused by ``load_osim``."""
    text = open(os.path.join(DATA, "gait2354_simbody.osim")).read()
    old = "<x> -2.0944 -1.22173 -0.523599 -0.349066"
    bad = _sub(text, old, "<x> -2.0944 -0.523599 -1.22173 -0.349066")
    path = _write(tmp_path, bad)
    spline = bad.rfind("<SimmSpline", 0, bad.index("<x> -2.0944 -0.523599"))
    why = (rf"model\.osim:{bad[:spline].count(chr(10)) + 1}: <SimmSpline name='function'>: knots <x> must be "
           r"strictly increasing, got x\[1\] = -0.523599 then x\[2\] = -1.22173")
    rc, out, err = _info(capsys, path)
    assert rc == 0 and re.search(why, err) and re.search(why, out)
    with pytest.raises(ValueError, match="knots must be strictly increasing"):
        load_osim(path, ignore_wrapping=True)
    short = _write(tmp_path, _sub(text, old, "<x> -2.0944 -1.22173 -0.523599"), "short.osim")
    with pytest.warns(UserWarning, match=r"<SimmSpline name='function'>: <x> has 6 values but <y> has 7"):
        summarize_osim(short)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert summarize_osim(os.path.join(DATA, "gait2354_simbody.osim")).refusals == ()


# -- a UTF-8 byte order mark ----------------------------------------------------------------------

def test_read_trc_accepts_a_utf8_byte_order_mark(tmp_path):
    """A .trc file starting with a UTF-8 BOM reads as the same file without it."""
    path = tmp_path / "bom.trc"
    path.write_bytes(b"\xef\xbb\xbf" + open(TRC, "rb").read())
    with_bom, plain = read_trc(str(path)), read_trc(TRC)
    assert with_bom.names == plain.names
    np.testing.assert_array_equal(np.asarray(with_bom.positions), np.asarray(plain.positions))
    np.testing.assert_array_equal(np.asarray(with_bom.time), np.asarray(plain.time))


def test_read_storage_accepts_a_utf8_byte_order_mark(tmp_path):
    """A .sto file starting with a UTF-8 BOM reads as the same file without it (its first header
    line, ``version=1``, is not mistaken for ``\\ufeffversion``)."""
    plain = str(tmp_path / "plain.sto")
    write_storage(plain, Table(np.array([0.0, 0.1, 0.2]), ("a", "b"), np.arange(6.0).reshape(3, 2)))
    bom = tmp_path / "bom.sto"
    bom.write_bytes(b"\xef\xbb\xbf" + open(plain, "rb").read())
    a, b = read_storage(str(bom)), read_storage(plain)
    drop = lambda m: {k: v for k, v in m.items() if k != "source_file"}  # noqa: E731  (the path each was read from)
    assert a.labels == b.labels and drop(a.metadata) == drop(b.metadata)
    assert (a.metadata["source_file"], b.metadata["source_file"]) == (str(bom), plain)
    again = str(tmp_path / "again.sto")
    write_storage(again, a)  # the path it was read from is not written back as a header line
    assert "source_file" not in open(again).read()
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.time, b.time)


def test_osim_files_accept_a_utf8_byte_order_mark(tmp_path):
    """An .osim file starting with a UTF-8 BOM loads and summarizes as without it."""
    path = tmp_path / "bom.osim"
    path.write_bytes(b"\xef\xbb\xbf" + PENDULUM.encode())
    plain = os.path.join(DATA, "double_pendulum.osim")
    assert summarize_osim(str(path)).coordinates == summarize_osim(plain).coordinates
    assert load_osim(str(path)).coordinate_names == load_osim(plain).coordinate_names
