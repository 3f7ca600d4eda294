"""OpenSim ``FunctionBasedPath`` in and out of mbjax (mbjax.opensim.model.osim_path_functions, load_osim, write_osim).

Round trips: path functions written into a copy of the .osim (``write_osim``) or a
``Set_FunctionBasedPath_`` file (``write_path_functions``) and read back (``load_osim``,
``read_path_functions``, separate parsers) give the same coefficients bit for bit, so the same
lengths and moment arms; the muscles keep their Hill parameters.  Bad inputs are refused naming the
file, the muscle and the element.  OpenSim 4.6 reading the files:
tests/validation/test_path_functions_opensim.py.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

import jax
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim, read_path_functions, write_osim, write_path_functions
from mbjax.maps.multivariate import multivariate_exponents
from mbjax.muscles.path_functions import get_path_functions, with_path_functions

sys.path.insert(0, os.path.dirname(__file__))
from _osim_models import CONDITIONAL_MODEL, COUPLED_CONDITIONAL_MODEL, strip_wrapping, write_model  # noqa: E402

jax.config.update("jax_enable_x64", True)

COORDS = ("r_shoulder_elev", "r_elbow_flex")


def random_functions(model, seed=0, muscles=None):
    """``{muscle: (coordinates, order, coefficients)}``: plausible random polynomials (length about
    0.2-0.4 m over the arm's range), orders 3 and 4, one or both coordinates."""
    rng = np.random.default_rng(seed)
    out = {}
    for k, name in enumerate(muscles or model.muscles.names):
        coords = COORDS if k % 3 else COORDS[1:]
        order = 3 + k % 2
        c = rng.normal(scale=0.01, size=multivariate_exponents(len(coords), order).shape[0])
        c[0] = rng.uniform(0.25, 0.35)
        out[name] = (coords, order, c)
    return out


@pytest.fixture(scope="module")
def arm26():
    return mbjax.models.load("arm26")


@pytest.fixture(scope="module")
def arm26_functions(arm26, tmp_path_factory):
    """arm26 with a function for every muscle, and its .osim copy written by write_osim."""
    model = with_path_functions(arm26, random_functions(arm26))
    path = write_osim(model, tmp_path_factory.mktemp("pf") / "arm26_functions.osim")
    return model, path


def _poses(n=8, seed=1):
    return np.random.default_rng(seed).uniform([-0.5, 0.0], [2.0, 2.3], size=(n, 2))


def _same_functions(a, b):
    fa, fb = get_path_functions(a), get_path_functions(b)
    assert set(fa.names) == set(fb.names)
    for name in fa.names:
        ia, oa, ca = fa.function(name)
        ib, ob, cb = fb.function(name)
        assert (ia, oa) == (ib, ob), name
        np.testing.assert_array_equal(np.asarray(ca), np.asarray(cb), err_msg=name)


def test_write_osim_then_load_osim_is_the_same_model(arm26, arm26_functions):
    model, path = arm26_functions
    text = open(path).read()
    assert text.count('<FunctionBasedPath name="path">') == 6 and "<GeometryPath>" not in text
    back = load_osim(path)
    _same_functions(model, back)
    for key, value in model.muscles.parameters.items():  # the Hill parameters stay
        np.testing.assert_array_equal(np.asarray(back.muscles.parameters[key]), np.asarray(value),
                                      err_msg=key)
    assert back.muscles.kinds == arm26.muscles.kinds
    for q in _poses():
        np.testing.assert_array_equal(np.asarray(mbjax.muscle_lengths(back, q)),
                                      np.asarray(mbjax.muscle_lengths(model, q)))
        np.testing.assert_array_equal(np.asarray(mbjax.moment_arms(back, q)), np.asarray(mbjax.moment_arms(model, q)))
    # no path points: the placeholder rows are inactive, so nothing draws or loads a body
    _, active = mbjax.muscles.path_points(back, _poses()[0])
    assert not np.any(np.asarray(active))
    # writing the loaded model again (its source now has FunctionBasedPaths) gives the same file
    again = write_osim(back, os.path.join(os.path.dirname(path), "again.osim"))
    assert open(again).read() == text


def test_summary_names_function_based_paths(arm26_functions, capsys):
    from mbjax.cli import main
    from mbjax.opensim.model.osim_summary import summarize_osim

    _, path = arm26_functions
    muscles = summarize_osim(path).muscles
    assert [m.name for m in muscles] == ["TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA"]
    assert all(m.path == "FunctionBasedPath" and m.wrap_objects == () for m in muscles)
    assert main(["info", path]) == 0
    assert capsys.readouterr().out.count("FunctionBasedPath (a function of the coordinates)") == 6


def test_some_muscles_with_functions_others_geometric(tmp_path):
    """Straight-line arm26 (compiles in a second; the wrapped paths take half a minute)."""
    arm26 = load_osim(strip_wrapping(mbjax.models.model_path("arm26"), str(tmp_path / "straight.osim")))
    chosen = ["TRIlat", "BRA"]
    model = with_path_functions(arm26, random_functions(arm26, seed=2, muscles=chosen))
    back = load_osim(write_osim(model, tmp_path / "mixed.osim"))
    _same_functions(model, back)
    rows = [arm26.muscles.names.index(n) for n in chosen]
    others = [r for r in range(6) if r not in rows]
    for q in _poses(4):
        lb, la = np.asarray(mbjax.muscle_lengths(back, q)), np.asarray(mbjax.muscle_lengths(arm26, q))
        np.testing.assert_array_equal(lb, np.asarray(mbjax.muscle_lengths(model, q)))
        np.testing.assert_array_equal(lb[others], la[others])  # the geometry as before


def test_path_function_set_round_trip(arm26, arm26_functions, tmp_path):
    model, _ = arm26_functions
    path = write_path_functions(model, tmp_path / "set.xml")
    text = open(path).read()
    assert '<OpenSimDocument Version="40600">' in text and "<Set_FunctionBasedPath_>" in text
    assert '<FunctionBasedPath name="/forceset/BIClong">' in text
    functions = read_path_functions(path, arm26)
    assert set(functions) == set(arm26.muscles.names)
    back = with_path_functions(arm26, functions)
    _same_functions(model, back)
    q = _poses(1)[0]
    np.testing.assert_array_equal(np.asarray(mbjax.moment_arms(back, q)), np.asarray(mbjax.moment_arms(model, q)))


def test_opensim_4x_file_round_trip(tmp_path):
    """A 4.x file (one pin joint): the FunctionBasedPath replaces a 4.x ``<GeometryPath name="path">``."""
    model = load_osim(write_model(tmp_path, CONDITIONAL_MODEL, "pin.osim"))
    functions = {"m": (("theta",), 3, [0.3, -0.02, 0.004, 0.001])}
    model = with_path_functions(model, functions)
    back = load_osim(write_osim(model, tmp_path / "pin_function.osim"))
    _same_functions(model, back)
    for t in (-1.0, 0.2, 1.3):
        np.testing.assert_allclose(np.asarray(mbjax.muscle_lengths(back, np.array([t]))),
                                   [0.3 - 0.02 * t + 0.004 * t**2 + 0.001 * t**3], rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(mbjax.moment_arms(back, np.array([t])))[0],
                                   [0.02 - 0.008 * t - 0.003 * t**2], rtol=0, atol=1e-15)


# --------------------------------------------------------------------------------------------
# bad inputs: refused naming the file, the muscle and the element
# --------------------------------------------------------------------------------------------

def _variant(tmp_path, source, old, new, name="bad.osim", count=1):
    text = open(source).read()
    assert text.count(old) >= count, old
    return write_model(tmp_path, text.replace(old, new, count), name)


def _raises(fn, cls, *parts):
    with pytest.raises(cls) as info:
        fn()
    for part in parts:
        assert part in str(info.value), (part, str(info.value))
    return str(info.value)


def _tri_long(text):
    """The (first) FunctionBasedPath element of TRIlong in a written arm26 file."""
    start = text.index('<Thelen2003Muscle name="TRIlong">')
    a = text.index("<FunctionBasedPath", start)
    return text[a:text.index("</FunctionBasedPath>", a) + len("</FunctionBasedPath>")]


@pytest.mark.parametrize("case", ["length_type", "moment_arms", "speed", "unknown_coordinate", "other_joint",
                                  "relative_path", "dimension", "coefficient_count", "unknown_element", "both"])
def test_bad_function_based_path_in_model_file(arm26_functions, tmp_path, case):
    _, path = arm26_functions
    element = _tri_long(open(path).read())
    head = '<FunctionBasedPath name="path">'
    edits = {
        "length_type": ("MultivariatePolynomialFunction>", "PolynomialFunction>",
                        NotImplementedError, ["PolynomialFunction", "length_function"]),
        "moment_arms": (head, head + "<moment_arm_functions><Constant><value>0.01</value></Constant>"
                        "</moment_arm_functions>", NotImplementedError, ["moment_arm_functions"]),
        "speed": (head, head + "<lengthening_speed_function><Constant><value>0</value></Constant>"
                  "</lengthening_speed_function>", NotImplementedError, ["lengthening_speed_function"]),
        "unknown_coordinate": ("/jointset/r_elbow/r_elbow_flex", "/jointset/r_elbow/r_wrist",
                               ValueError, ["r_wrist", "coordinate_paths"]),
        "other_joint": ("/jointset/r_elbow/r_elbow_flex", "/jointset/r_shoulder/r_elbow_flex",
                        ValueError, ["r_elbow_flex", "r_shoulder", "r_elbow'"]),
        "relative_path": ("/jointset/r_elbow/r_elbow_flex", "r_elbow_flex",
                          NotImplementedError, ["/jointset/<joint>/<coordinate>", "coordinate_paths"]),
        "dimension": ("<dimension>1</dimension>", "<dimension>2</dimension>",
                      ValueError, ["<dimension> 2", "MultivariatePolynomialFunction"]),
        "coefficient_count": ("<coefficients>", "<coefficients>0.1 ",
                              ValueError, ["has 4 coefficients, got 5", "MultivariatePolynomialFunction"]),
        "unknown_element": (head, head + "<wobble>1</wobble>", NotImplementedError, ["<wobble>"]),
        "both": (head, "<GeometryPath><PathPointSet><objects/></PathPointSet></GeometryPath>" + head,
                 ValueError, ["GeometryPath", "FunctionBasedPath"]),
    }
    old, new, cls, parts = edits[case]
    edited = element.replace(old, new, -1 if case == "length_type" else 1)  # both tags of the function
    bad = _variant(tmp_path, path, element, edited)
    muscle = [] if case == "both" else ["'TRIlong'"]  # "both" names the muscle element itself
    _raises(lambda: load_osim(bad), cls, bad, "TRIlong", *muscle, *parts)


def test_function_of_a_locked_coordinate_is_refused(arm26_functions, tmp_path):
    _, path = arm26_functions
    text = open(path).read()
    k = text.index('<Coordinate name="r_shoulder_elev">')
    locked = text[:k] + text[k:].replace("<locked>false</locked>", "<locked>true</locked>", 1)
    bad = write_model(tmp_path, locked, "locked.osim")
    msg = _raises(lambda: load_osim(bad), NotImplementedError, bad, "r_shoulder_elev", "locked", "coordinate_paths")
    assert re.search(r"muscle '(TRIlat|TRImed|BIClong|BICshort)'", msg)


def test_function_of_a_coupled_coordinate_is_refused(tmp_path):
    geometry = re.search(r"<GeometryPath name=\"path\">.*?</GeometryPath>", COUPLED_CONDITIONAL_MODEL, re.S).group(0)
    function = ('<FunctionBasedPath name="path"><coordinate_paths>/jointset/pin/theta /jointset/pin2/phi'
                "</coordinate_paths><length_function><MultivariatePolynomialFunction><coefficients>0.3 0.01 0.02"
                "</coefficients><dimension>2</dimension><order>1</order></MultivariatePolynomialFunction>"
                "</length_function></FunctionBasedPath>")
    bad = write_model(tmp_path, COUPLED_CONDITIONAL_MODEL.replace(geometry, function), "coupled.osim")
    _raises(lambda: load_osim(bad), NotImplementedError, bad, "muscle 'm'", "'phi'", "coupled", "theta")


def test_visual_elements_are_warned(arm26_functions, tmp_path):
    _, path = arm26_functions
    element = _tri_long(open(path).read())
    head = '<FunctionBasedPath name="path">'
    good = _variant(tmp_path, path, element,
                    element.replace(head, head + "<Appearance><visible>true</visible></Appearance>"))
    with pytest.warns(UserWarning, match="TRIlong/Appearance"):
        load_osim(good)


def test_bad_path_function_sets(arm26, arm26_functions, tmp_path):
    model, _ = arm26_functions
    path = write_path_functions(model, tmp_path / "set.xml")
    cases = [
        ('"/forceset/BRA"', '"/forceset/FDS"', ValueError, ["'FDS'", "no path force"]),
        ('"/forceset/BRA"', '"BRA"', ValueError, ["'BRA'", "/forceset/<muscle>"]),
        ("<Set_FunctionBasedPath_>", "<Set_FunctionBasedPath_><defaults/>", NotImplementedError, ["<defaults>"]),
        ("<MultivariatePolynomialFunction>", "<LinearFunction>", NotImplementedError, ["LinearFunction"]),
    ]
    for k, (old, new, cls, parts) in enumerate(cases):
        text = open(path).read()
        if new == "<LinearFunction>":  # a whole, well-formed LinearFunction for BRA
            i = text.index('"/forceset/BRA"')
            a = text.index("<MultivariatePolynomialFunction>", i)
            b = text.index("</MultivariatePolynomialFunction>", i) + len("</MultivariatePolynomialFunction>")
            text = text[:a] + "<LinearFunction><coefficients>1 0</coefficients></LinearFunction>" + text[b:]
        else:
            text = text.replace(old, new, 1)
        bad = write_model(tmp_path, text, f"bad{k}.xml")
        _raises(lambda: read_path_functions(bad, arm26), cls, bad, *parts)
    with pytest.raises(ValueError, match="no path functions"):
        write_path_functions(arm26, tmp_path / "none.xml")
    # the set's coordinate paths are checked against the model's joints too
    text = open(path).read().replace("/jointset/r_elbow/r_elbow_flex", "/jointset/r_shoulder/r_elbow_flex", 1)
    bad = write_model(tmp_path, text, "joint.xml")
    _raises(lambda: read_path_functions(bad, arm26), ValueError, bad, "r_elbow_flex", "belongs to joint 'r_elbow'")


def test_writer_refuses_a_function_path_it_cannot_write(arm26_functions, tmp_path):
    """A model loaded with FunctionBasedPaths whose functions were removed has no path to write."""
    _, path = arm26_functions
    back = load_osim(path)
    with pytest.raises(ValueError, match="TRIlong.*no path function in the model"):
        write_osim(with_path_functions(back, None), tmp_path / "x.osim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = mbjax.models.load("arm26")
    other = with_path_functions(plain, {"TRIlong": (COORDS[1:], 1, [0.3, 0.01])})
    bare = other.replace(osim=None)
    with pytest.raises(ValueError, match="joint of coordinate 'r_elbow_flex' is not known"):
        write_path_functions(bare, tmp_path / "y.xml")
    out = write_path_functions(bare, tmp_path / "y.xml",
                               coordinate_paths={"r_elbow_flex": "/jointset/r_elbow/r_elbow_flex"})
    _same_functions(other, with_path_functions(plain, read_path_functions(out, plain)))
