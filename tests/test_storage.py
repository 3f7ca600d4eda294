"""OpenSim data files: .mot/.sto (Storage and TimeSeriesTable headers) and .trc read/write.

References: the OpenSim tutorial's own files (written by OpenSim: their header numbers, units and
degree flags are checked against the values printed in them), exact round trips, and hand-written
malformed files whose errors must name the line and column.  OpenSim itself reads our files back in
tests/validation/test_ik_opensim.py.
"""

import glob
import os
import sys
import warnings

import numpy as np
import pytest

import mbjax
from mbjax.io import (
    MarkerData,
    Table,
    coordinates_from_table,
    read_storage,
    read_trc,
    table_from_coordinates,
    write_storage,
    write_trc,
)

sys.path.insert(0, os.path.dirname(__file__))
from _data_file_variants import READS, REFUSED, STORAGE  # noqa: E402

OPENSIM_MODELS = os.environ.get("OPENSIM_MODELS_DIR", "")
DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models", "arm26_ik")
TRC = os.path.join(DATA, "arm26_elbow_flex.trc")
MOT = os.path.join(DATA, "arm26_InverseKinematics.mot")


@pytest.fixture(scope="module")
def arm26():
    return mbjax.models.arm26()


def test_read_opensim_mot_in_degrees(arm26):
    t = read_storage(MOT)
    assert t.in_degrees and t.labels == ("r_shoulder_elev", "r_elbow_flex")
    assert t.data.shape == (121, 2) and t.metadata["name"] == "Coordinates" and t.metadata["nRows"] == "121"
    # first and last rows as printed in the file
    np.testing.assert_array_equal(t.data[0], [-0.03394423, -0.05440752])
    assert t.time[-1] == 1.0 and t.data[-1, 1] == 90.17066638
    q = coordinates_from_table(arm26, t)
    np.testing.assert_allclose(q[-1], np.array([-0.03549721, 90.17066638]) * np.pi / 180, rtol=1e-15)


def test_read_opensim_trc_in_mm():
    d = read_trc(TRC)
    assert d.names == ("r_acromion", "r_humerus_epicondyle", "r_radius_styloid")
    assert d.units == "mm" and d.rate == 120.0 and d.positions.shape == (121, 3, 3)
    # first data row as printed in the file, converted to metres
    np.testing.assert_allclose(d.positions[0, 0], np.array([-13.05452443, 839.50547557, 169.5054756]) * 1e-3,
                               rtol=1e-15)
    np.testing.assert_allclose(d.time[1], 0.008333333)
    assert d.frame[0] == 1 and d.frame[-1] == 121


@pytest.mark.parametrize("fmt", ["storage", "table"])
def test_storage_round_trip_exact(tmp_path, fmt):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(7, 3)) * 10.0 ** rng.integers(-12, 12, size=(7, 3))
    data[2, 1] = np.nan
    t = Table(np.linspace(0, 0.6, 7), ("a", "/jointset/j/b/value", "c"), data, True, {"name": "trial", "k": "v"})
    p = tmp_path / f"x.{'mot' if fmt == 'storage' else 'sto'}"
    write_storage(p, t, format=fmt)
    back = read_storage(p)
    np.testing.assert_array_equal(back.time, t.time)
    np.testing.assert_array_equal(back.data, t.data)  # bit-exact, NaN included
    assert back.labels == t.labels and back.in_degrees and back.metadata["k"] == "v"
    assert back.metadata["version"] == ("1" if fmt == "storage" else "3")


def test_coordinates_from_table_paths_and_degrees(arm26):
    q = np.array([[0.1, 1.2], [-0.3, 0.4]])
    # OpenSim 4 labels (full paths), plus a speed column and an unknown coordinate that are ignored
    labels = ("/jointset/r_elbow/r_elbow_flex/value", "/jointset/r_shoulder/r_shoulder_elev/value",
              "/jointset/r_elbow/r_elbow_flex/speed", "other")
    deg = np.rad2deg(q[:, ::-1])
    t = Table(np.array([0.0, 0.1]), labels, np.c_[deg, np.ones((2, 2)) * 99.0], True)
    np.testing.assert_allclose(coordinates_from_table(arm26, t), q, rtol=1e-15)
    rad = Table(t.time, labels, np.c_[q[:, ::-1], np.ones((2, 2))], False)
    np.testing.assert_array_equal(coordinates_from_table(arm26, rad), q)
    short = Table(t.time, ("r_elbow_flex",), q[:, 1:], False)
    with pytest.raises(ValueError, match="r_shoulder_elev"):
        coordinates_from_table(arm26, short)
    filled = coordinates_from_table(arm26, short, missing="default")
    np.testing.assert_array_equal(filled, np.c_[np.zeros(2), q[:, 1]])  # arm26 defaults are 0
    back = table_from_coordinates(arm26, t.time, q)
    assert back.in_degrees and back.labels == arm26.coordinate_names
    np.testing.assert_allclose(coordinates_from_table(arm26, back), q, rtol=1e-15)


@pytest.mark.parametrize("units", ["mm", "m", "cm"])
def test_trc_round_trip_missing_markers(tmp_path, units):
    rng = np.random.default_rng(1)
    pos = rng.normal(size=(5, 3, 3))
    pos[1, 2] = np.nan  # a marker missing in one frame
    pos[4, 0] = np.nan
    d = MarkerData(np.arange(5) / 100.0, ("m1", "m 2", "m3"), pos, rate=100.0)
    p = tmp_path / "x.trc"
    write_trc(p, d, units=units)
    back = read_trc(p)
    assert back.units == units and back.names == d.names and back.rate == 100.0
    np.testing.assert_array_equal(np.isnan(back.positions), np.isnan(pos))
    np.testing.assert_allclose(back.positions, pos, rtol=1e-15, atol=1e-17)
    np.testing.assert_array_equal(back.time, d.time)


@pytest.mark.parametrize("name", sorted(READS))
def test_trc_variants_opensim_reads(tmp_path, name):
    """Layouts TRCFileAdapter reads: same markers and values (hand-written in the file), NaN where a
    marker has an empty component."""
    text, values, units = READS[name]
    p = tmp_path / f"{name}.trc"
    p.write_bytes(text.encode())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = read_trc(p)
    assert d.names == ("a", "b") and d.units == units and d.rate == 100.0
    scale = {"mm": 1e-3, "millimeters": 1e-3, "m": 1.0}[units]
    np.testing.assert_array_equal(d.time, [0.0, 0.01])
    np.testing.assert_allclose(d.positions, np.array(values) * scale, rtol=1e-15)
    np.testing.assert_array_equal(np.isnan(d.positions), np.isnan(np.array(values, dtype=float)))
    said = " ".join(str(w.message) for w in caught)
    if name == "numframes_disagrees":
        assert "NumFrames=7 but the file has 2 data rows" in said
    elif name == "extra_component_labels":
        assert "['X3', 'Y3', 'Z3'] name no marker" in said
    else:
        assert not caught, said
    if name == "empty_frame_number":
        assert d.frame[0] == 1 and np.isnan(d.frame[1])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_trc_variants_refused_name_file_and_line(tmp_path, name):
    text, pattern = REFUSED[name]
    p = tmp_path / f"{name}.trc"
    p.write_text(text)
    with pytest.raises(ValueError, match=pattern):
        read_trc(p)


@pytest.mark.parametrize("name", sorted(STORAGE))
def test_storage_whitespace_variants(tmp_path, name):
    """Tab and space layouts OpenSim 4.6 reads (values hand-written in the file); an empty field of a
    tab-separated version=3 file is NaN, with a warning naming line and column."""
    text, values = STORAGE[name]
    p = tmp_path / name
    p.write_bytes(text.encode())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = read_storage(p)
    assert t.labels == ("a", "b")
    np.testing.assert_array_equal(t.time, [0.0, 0.1])
    np.testing.assert_array_equal(t.data, values)
    said = " ".join(str(w.message) for w in caught)
    if name == "v3_empty_field.sto":
        assert "1 empty field(s) read as NaN" in said and "line 7 column 2 ('a')" in said
    else:
        assert not caught, said


def test_trc_missing_last_marker_written_as_opensim_reads_it(tmp_path):
    """write_trc ends every field with a tab, so a missing last marker keeps its three empty fields."""
    pos = np.array([[[1.0, 2, 3], [np.nan] * 3]])
    write_trc(tmp_path / "x.trc", MarkerData(np.zeros(1), ("a", "b"), pos, rate=100.0), units="m")
    row = (tmp_path / "x.trc").read_text().split("\n")[6]
    assert row == "1\t0.0\t1.0\t2.0\t3.0\t\t\t\t"
    back = read_trc(tmp_path / "x.trc")
    np.testing.assert_array_equal(back.positions, pos)


@pytest.mark.skipif(not (OPENSIM_MODELS and os.path.isdir(os.path.join(OPENSIM_MODELS, "Pipelines"))),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_every_pipeline_trc_reads():
    """Every .trc under opensim-models/Pipelines: the header's marker and frame counts, and the first
    data row split by hand, converted from the file's units."""
    files = sorted(glob.glob(os.path.join(OPENSIM_MODELS, "Pipelines", "**", "*.trc"), recursive=True))
    assert any("motion_capture_walk" in f for f in files)
    for f in files:
        lines = open(f).read().split("\n")
        head = dict(zip([k for k in lines[1].split("\t") if k.strip()],
                        [v.strip() for v in lines[2].split("\t") if v.strip()]))
        d = read_trc(f)
        assert d.positions.shape == (int(head["NumFrames"]), int(head["NumMarkers"]), 3), f
        first = next(s for s in lines[5:] if s.strip("\t\n "))
        vals = [float(v) for v in first.split("\t")[1:] if v.strip()]
        assert d.time[0] == vals[0], f
        scale = {"mm": 1e-3, "m": 1.0}[head["Units"]]
        np.testing.assert_allclose(d.positions[0].reshape(-1), np.array(vals[1:]) * scale, rtol=1e-15, err_msg=f)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_malformed_storage_errors_name_line_and_column(tmp_path):
    head = "trial\nversion=1\nnRows=2\nnColumns=3\ninDegrees=no\nendheader\ntime\ta\tb\n"
    p = _write(tmp_path, "bad.mot", head + "0\t1\t2\n0.1\t1\tx7\n")
    with pytest.raises(ValueError, match=r"bad\.mot:9: column 3 \('b'\): cannot read 'x7'"):
        read_storage(p)
    p = _write(tmp_path, "short.mot", head + "0\t1\t2\n0.1\t1\n")
    with pytest.raises(ValueError, match=r"short\.mot:9: 2 values, expected 3"):
        read_storage(p)
    p = _write(tmp_path, "rows.mot", head + "0\t1\t2\n")
    with pytest.raises(ValueError, match=r"rows\.mot:3: header says nRows=2 but the file has 1 rows"):
        read_storage(p)
    p = _write(tmp_path, "cols.mot", head.replace("nColumns=3", "nColumns=4") + "0\t1\t2\n0\t1\t2\n")
    with pytest.raises(ValueError, match=r"cols\.mot:7: 3 column labels but the header says nColumns=4"):
        read_storage(p)
    p = _write(tmp_path, "noend.sto", "version=3\ntime\ta\n0\t1\n")
    with pytest.raises(ValueError, match=r"noend\.sto:\d+: no 'endheader'"):
        read_storage(p)
    p = _write(tmp_path, "deg.sto", "inDegrees=maybe\nendheader\ntime\ta\n0\t1\n")
    with pytest.raises(ValueError, match=r"deg\.sto:1: inDegrees='maybe'"):
        read_storage(p)
    with pytest.raises(FileNotFoundError):
        read_storage(tmp_path / "none.sto")


def test_write_refuses_bad_tables(tmp_path):
    with pytest.raises(ValueError, match="whitespace"):
        write_storage(tmp_path / "a.sto", Table(np.zeros(1), ("a b",), np.zeros((1, 1))))
    with pytest.raises(ValueError, match="shape"):
        write_storage(tmp_path / "a.sto", Table(np.zeros(2), ("a",), np.zeros((1, 1))))
    with pytest.raises(ValueError, match="units"):
        write_trc(tmp_path / "a.trc", MarkerData(np.zeros(1), ("a",), np.zeros((1, 1, 3))), units="in")


def test_opensim4_motion_types_decide_degree_conversion(tmp_path):
    """OpenSim 4 files have no <motion_type>: CustomJoint axes decide (CustomJoint::constructCoordinates),
    and only rotational coordinates are converted from degrees (convertDegreesToRadians)."""
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    from _osim_models import write_coupled_model

    from mbjax.opensim.model.osim_motion import motion_types

    path = write_coupled_model(tmp_path)
    # a: rotation1, LinearFunction slope 1; m: rotation3 slope 1; d1: SimmSpline; d2: slope 0.1;
    # b: GCVSpline on translation2; c: PinJoint
    assert motion_types(path) == {"a": "rotational", "b": "coupled", "d1": "coupled", "d2": "coupled",
                                  "m": "rotational", "c": "rotational"}
    model = mbjax.io.load_osim(path)
    names = model.coordinate_names
    deg = np.array([[10.0, 20.0, 30.0][: len(names)]])
    t = Table(np.zeros(1), names, deg, True)
    q = coordinates_from_table(model, t)
    for i, n in enumerate(names):
        assert q[0, i] == (np.deg2rad(deg[0, i]) if n in ("a", "m", "c") else deg[0, i]), n
