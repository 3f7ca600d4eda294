"""Marker data, scale setups, scaling measurements, fits, written models and coordinate tables: slips
of units and arguments are refused or warned about by name; valid input reads as before."""

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.analysis.identify as idf
import mbjax.io
from mbjax.io.coordinate_tables import coordinates_from_table, table_from_coordinates
from mbjax.models import model_path


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.load("arm26", ignore_wrapping=True)
    return model, mbjax.io.load_markers(model_path("arm26"), model)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


# --- .trc files --------------------------------------------------------------------------------

def _trc(tmp_path, pos=None, time=None, rate=120.0, units="mm", name="m.trc"):
    rng = np.random.default_rng(0)
    time = np.arange(11) / 120.0 if time is None else time
    pos = (np.array([[0.1, 1.4, 0.2], [0.2, 1.0, 0.3]]) + 0.01 * rng.standard_normal((len(time), 2, 3))
           if pos is None else pos)
    path = str(tmp_path / name)
    mbjax.io.write_trc(path, mbjax.io.MarkerData(time, ("A", "B"), pos, rate=rate), units=units)
    return path, pos


def test_trc_valid_reads_silently(tmp_path):
    path, pos = _trc(tmp_path)
    d = _quiet(mbjax.io.read_trc, path)
    np.testing.assert_allclose(d.positions, pos, rtol=1e-12)


def test_trc_millimetres_labelled_metres_warns(tmp_path):
    path, _ = _trc(tmp_path)
    text = open(path).read().replace("\tmm\t", "\tm\t", 1)
    open(path, "w").write(text)
    with pytest.warns(UserWarning, match=r"m\.trc: marker 'A' Y is 14\d\d.* m .*Units 'm'.*look like millimetres"):
        mbjax.io.read_trc(path)


def test_trc_marker_at_origin_in_some_frames_warns(tmp_path):
    _, pos = _trc(tmp_path)
    pos[3:5, 1] = 0.0
    path, _ = _trc(tmp_path, pos=pos, name="zeros.trc")
    with pytest.warns(UserWarning, match=r"zeros\.trc: marker\(s\) 'B' \(2 of 11 frames\) sit exactly at \(0, 0, 0\)"
                      r".*reads \(0, 0, 0\) as a position \(as OpenSim does\)"):
        d = mbjax.io.read_trc(path)
    assert np.all(d.positions[3:5, 1] == 0.0)  # read as OpenSim reads it


def test_trc_times_in_milliseconds_warn(tmp_path):
    path, _ = _trc(tmp_path, time=np.arange(11) / 0.12, name="ms.trc")
    with pytest.warns(UserWarning, match=r"ms\.trc: the time column steps by 8\.33333 s .*DataRate is 120 Hz.*"
                      "milliseconds"):
        mbjax.io.read_trc(path)
    # times rounded to 3 decimals at 60 Hz (as OpenSim's example files) are no disagreement
    path, _ = _trc(tmp_path, time=np.round(np.arange(11) / 60.0, 3), rate=60.0, name="round.trc")
    _quiet(mbjax.io.read_trc, path)


# --- scale setup and scale_model mass ---------------------------------------------------------

def test_scale_setup_mass_in_grams_warns_by_line(tmp_path):
    import os
    import re

    setup = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk", "subject01_Setup_Scale.xml")
    src = open(setup).read()
    assert _quiet(mbjax.io.read_scale_setup, setup).mass == pytest.approx(72.6)
    path = tmp_path / "Setup_Scale.xml"
    path.write_text(re.sub(r"<mass>[^<]*</mass>", "<mass>72600</mass>", src, count=1))
    line = src[:src.index("<mass>")].count("\n") + 1
    with pytest.warns(UserWarning, match=rf"Setup_Scale\.xml:{line}: .*subject mass 72600 kg is implausible.*grams"):
        assert mbjax.io.read_scale_setup(str(path)).mass == 72600.0


def test_scale_model_mass_in_grams_warns(arm):
    model, _ = arm
    factors = {n: 1.1 for n in idf.segment_names(model)}
    with pytest.warns(UserWarning, match=r"scale_model: mass=72600 kg is implausible .*grams"):
        idf.scale_model(model, factors, mass=72600.0)
    scaled = _quiet(idf.scale_model, model, factors, mass=72.6)
    np.testing.assert_allclose(float(jnp.sum(scaled.mass)), 72.6, rtol=1e-12)


# --- measurement_factor --------------------------------------------------------------------------

def _trial(model, markers, stretch=1.05):
    x = np.asarray(mbjax.marker_positions(model, markers, model.osim.default)) * stretch
    time = np.arange(50) / 10.0
    return mbjax.io.MarkerData(time, markers.names, np.broadcast_to(x, (50,) + x.shape).copy())


def test_measurement_factor_takes_one_pair(arm):
    model, markers = arm
    data = _trial(model, markers)
    pair = ("r_acromion", "r_radius_styloid")
    one = _quiet(idf.measurement_factor, model, markers, data, pair, (1.0, 2.0))
    assert one == pytest.approx(1.05, rel=1e-12)
    assert one == idf.measurement_factor(model, markers, data, (pair,), (1.0, 2.0))
    with pytest.raises(ValueError, match=r"measurement 'arm': each marker pair must be two marker names"):
        idf.measurement_factor(model, markers, data, (("r_acromion", "r_radius_styloid", "r_humerus_epicondyle"),),
                               (1.0, 2.0), name="arm")


def test_measurement_factor_time_range_outside_the_trial_refused(arm):
    model, markers = arm
    data = _trial(model, markers)
    with pytest.raises(ValueError, match=r"time_range \(50, 60\) lies outside the data's times 0 to 4\.9"):
        idf.measurement_factor(model, markers, data, [("r_acromion", "r_radius_styloid")], (50.0, 60.0))
    with pytest.raises(ValueError, match=r"time_range start 2 is past its end 1"):
        idf.measurement_factor(model, markers, data, [("r_acromion", "r_radius_styloid")], (2.0, 1.0))


def test_measurement_factor_of_millimetre_data_warns(arm):
    model, markers = arm
    data = _trial(model, markers, stretch=1050.0)
    with pytest.warns(UserWarning, match=r"measurement 'arm': implausible scale factor 1050 .*look like millimetres"):
        idf.measurement_factor(model, markers, data, [("r_acromion", "r_radius_styloid")], (1.0, 2.0), name="arm")


# --- place_markers ----------------------------------------------------------------------------------

def test_place_markers_refuses_unknown_names(arm):
    model, markers = arm
    q = np.zeros(len(model.coordinate_names))
    x = np.asarray(mbjax.marker_positions(model, markers, q))
    with pytest.raises(ValueError, match=r"place_markers: movable holds marker\(s\) \['NoSuch'\] that are not in "
                       r"`markers`; markers are \('r_acromion'"):
        idf.place_markers(model, markers, q, x, markers.names, ["NoSuch"])
    with pytest.raises(ValueError, match=r"place_markers: names holds marker\(s\) \['NoSuch'\]"):
        idf.place_markers(model, markers, q, x[:1], ["NoSuch"])
    placed = _quiet(idf.place_markers, model, markers, q, x + 0.01, markers.names, "r_acromion")
    assert not np.allclose(np.asarray(placed.offset[0]), np.asarray(markers.offset[0]))
    np.testing.assert_array_equal(np.asarray(placed.offset[1:]), np.asarray(markers.offset[1:]))


# --- fit ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pendulum():
    b = mbjax.ModelBuilder(["shoulder", "elbow"], gravity=[0, -9.81, 0])
    b.add_body("upper", axis=[0, 0, 1], map="shoulder", mass=2.0, com=[0, -0.15, 0], inertia=np.diag([.01, .002, .01]))
    b.add_body("fore", parent="upper", axis=[0, 0, 1], translation=[0, -0.3, 0], map="elbow", mass=1.2,
               com=[0, -0.12, 0], inertia=np.diag([.006, .001, .006]))
    truth = b.build()
    q, qd, qdd = np.random.default_rng(0).uniform(-1.5, 1.5, (3, 20, 2))
    tau = jax.vmap(mbjax.inverse_dynamics, (None, 0, 0, 0))(truth, q, qd, qdd)
    start = eqx.tree_at(lambda m: m.mass, truth, jnp.array([1.0, 1.0]))
    return start, idf.torque_residuals(q, qd, qdd, tau)


def test_fit_objective_returning_a_tuple_refused(pendulum):
    start, res = pendulum
    with pytest.raises(TypeError, match=r"fit: `objective` must return one array .*got a tuple"):
        idf.fit(start, lambda m: (res(m), 0.0), lambda m: m.mass, progress=False, max_steps=2)


def test_fit_under_jit_refused(pendulum):
    start, res = pendulum
    with pytest.raises(TypeError, match=r"fit: `tree` holds traced values.*cannot be called under jax\.jit"):
        jax.jit(lambda m: idf.fit(m, res, lambda t: t.mass, progress=False, max_steps=2)[0].mass)(start)
    fitted, _ = idf.fit(start, res, lambda t: t.mass, progress=False, max_steps=30)
    np.testing.assert_allclose(np.asarray(fitted.mass), [2.0, 1.2], rtol=1e-6)


# --- write_osim markers ---------------------------------------------------------------------------------

def test_write_osim_markers_of_another_model_warn(arm, tmp_path):
    model, markers = arm
    other = mbjax.Markers(("RASI", "LASI"), (0, 1), np.zeros((2, 3)))
    with pytest.warns(UserWarning, match=r"write_osim: none of the markers \['RASI', 'LASI'\] is in the file's "
                      r"MarkerSet \['r_acromion'.*another model"):
        mbjax.io.write_osim(model, str(tmp_path / "a.osim"), markers=other)
    with pytest.warns(UserWarning, match=r"write_osim: markers holds no markers"):
        mbjax.io.write_osim(model, str(tmp_path / "b.osim"), markers=mbjax.Markers((), (), np.zeros((0, 3))))
    _quiet(mbjax.io.write_osim, model, str(tmp_path / "c.osim"), markers=markers)


# --- coordinates_from_table ----------------------------------------------------------------------------

def test_coordinates_from_table_rotational_lone_name(arm):
    model, _ = arm
    q = np.tile(np.array([0.03, 1.2]), (3, 1))
    table = table_from_coordinates(model, np.arange(3) * 0.01, q, in_degrees=True)
    one = coordinates_from_table(model, table, rotational="r_elbow_flex")
    np.testing.assert_array_equal(one, coordinates_from_table(model, table, rotational=["r_elbow_flex"]))
    np.testing.assert_allclose(one[:, 1], 1.2, rtol=1e-12)
    with pytest.raises(ValueError, match=r"coordinates_from_table: rotational names unknown coordinate\(s\) "
                       r"\['r_elbow'\]; the model's coordinates are \('r_shoulder_elev', 'r_elbow_flex'\)"):
        coordinates_from_table(model, table, rotational=["r_elbow"])


def test_identifiability_tuple_and_jit_refused(pendulum):
    start, res = pendulum
    with pytest.raises(TypeError, match=r"identifiability: `residuals` must return one array .*got a tuple of 2"):
        idf.identifiability(start, lambda m: (res(m), 0.0), lambda m: m.mass)
    with pytest.raises(TypeError, match=r"identifiability: `tree` holds traced values.*call it outside"):
        jax.jit(lambda m: idf.identifiability(m, res, lambda t: t.mass).standard_errors)(start)
    assert np.all(np.isfinite(idf.identifiability(start, res, lambda m: m.mass).standard_errors))


def test_measurement_factor_time_range_of_text_refused(arm):
    model, markers = arm
    data = _trial(model, markers)
    with pytest.raises(TypeError, match=r"measurement_factor: time_range must be a number, got str 'a'"):
        idf.measurement_factor(model, markers, data, [("r_acromion", "r_radius_styloid")], ("a", "b"))
