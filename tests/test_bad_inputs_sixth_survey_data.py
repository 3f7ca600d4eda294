"""Data files (.trc, .mot/.sto, native model files) and coordinate tables: numbers OpenSim cannot read,
infinite cells, rates, shapes and types given to the writers are refused or warned about by file, line,
column, marker or coordinate; the valid twins read and write quietly."""

import warnings

import numpy as np
import pytest

import mbjax
from mbjax.io import MarkerData, Table, read_storage, read_trc, write_storage, write_trc
from mbjax.io.coordinate_tables import coordinates_from_table, table_from_coordinates

MOT = "\n".join(["Coordinates", "version=1", "nRows=3", "nColumns=3", "inDegrees=yes", "endheader",
                 "time\ta\tb", "0.0\t1.5\t-2", "0.01\tVALUE\t3e-1", "0.02\t4\t5", ""])


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args, **kw)


def _mot(tmp_path, value, name="u.mot"):
    path = tmp_path / name
    path.write_text(MOT.replace("VALUE", value), encoding="utf-8")
    return str(path)


def _trc_text(rates="100\t100", value="839.5"):
    rows = [f"{k + 1}\t{k / 100:g}\t1.0\t{value if k == 1 else '2.0'}\t3.0\t" for k in range(3)]
    return "\n".join(["PathFileType\t4\t(X/Y/Z)\tm.trc",
                      "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\t"
                      "OrigNumFrames", f"{rates}\t3\t1\tmm\t100\t1\t3", "Frame#\tTime\tm1\t\t",
                      "\t\tX1\tY1\tZ1\t", ""] + rows) + "\n"


def _trc(tmp_path, **kw):
    path = tmp_path / "m.trc"
    path.write_text(_trc_text(**kw), encoding="utf-8")
    return str(path)


# --- numbers by Python's float() rules --------------------------------------------------------

@pytest.mark.parametrize("tok", ["1_0", "\uff10.5", "\u0661.5"])
def test_storage_number_python_only_refused(tmp_path, tok):
    path = _mot(tmp_path, tok)
    with pytest.raises(ValueError, match=r"u\.mot:9: column 2 \('a'\): cannot read .* as a number"):
        read_storage(path)


@pytest.mark.parametrize("tok", ["1_0", "\uff10.5", "\u0661.5"])
def test_trc_number_python_only_refused(tmp_path, tok):
    path = _trc(tmp_path, value=tok)
    with pytest.raises(ValueError, match=r"m\.trc:8: column 4 \('m1 Y'\): cannot read .* as a number"):
        read_trc(path)


@pytest.mark.parametrize("tok", ["1.5", "-.5", "1e-3", "+2E+02", "NaN", "-nan"])
def test_ascii_numbers_still_read(tmp_path, tok):
    table = _quiet(read_storage, _mot(tmp_path, tok))
    assert np.isnan(table.data[1, 0]) or table.data[1, 0] == float(tok)
    markers = _quiet(read_trc, _trc(tmp_path, value=tok))
    assert np.isnan(markers.positions[1, 0, 1]) or markers.positions[1, 0, 1] == float(tok) * 1e-3


# --- infinite cells in .mot/.sto ---------------------------------------------------------------

@pytest.mark.parametrize("tok", ["inf", "Infinity", "-inf", "1e400"])
def test_storage_infinite_cell_refused(tmp_path, tok):
    path = _mot(tmp_path, tok)
    with pytest.raises(ValueError, match=r"u\.mot:9: column 2 \('a'\) is -?inf .*give NaN for a missing value"):
        read_storage(path)


# --- write_storage arguments ----------------------------------------------------------------------

def _table(**kw):
    fields = dict(time=np.array([0.0, 0.01, 0.02]), labels=("a", "b"), data=np.ones((3, 2)), in_degrees=True,
                  metadata={})
    fields.update(kw)
    return Table(**fields)


def test_write_storage_in_degrees_must_be_bool(tmp_path):
    with pytest.raises(ValueError, match=r"write_storage: .*x\.mot: in_degrees must be a bool, got 'no'"):
        write_storage(str(tmp_path / "x.mot"), _table(in_degrees="no"))
    _quiet(write_storage, str(tmp_path / "x.mot"), _table(in_degrees=np.bool_(False)))
    assert read_storage(str(tmp_path / "x.mot")).in_degrees is False


def test_write_storage_label_not_string(tmp_path):
    with pytest.raises(ValueError, match=r"write_storage: .*x\.mot: column label 1 is not a string"):
        write_storage(str(tmp_path / "x.mot"), _table(labels=(1, 2)))


def test_table_shape_messages():
    """The shapes write_storage needs are checked when the Table is built (one label per column, one time
    per row)."""
    with pytest.raises(ValueError, match=r"Table: 1 labels for 2 data columns"):
        _table(labels=("a",))
    with pytest.raises(ValueError, match=r"Table: time has 2 entries but data has 3 rows"):
        _table(time=np.array([0.0, 0.01]))


def test_write_storage_complex_refused(tmp_path):
    data = np.ones((3, 2), complex)
    data[1, 1] += 1j
    with pytest.raises(ValueError, match=r"write_storage: .*x\.sto: column 'b' has complex values"):
        write_storage(str(tmp_path / "x.sto"), _table(data=data))
    _quiet(write_storage, str(tmp_path / "x.sto"), _table())
    assert np.array_equal(read_storage(str(tmp_path / "x.sto")).data, np.ones((3, 2)))


# --- write_trc ------------------------------------------------------------------------------------

def _markers(n=5, rate=100.0, **kw):
    fields = dict(time=np.arange(n) / 100.0, names=("a", "b", "c"),
                  positions=np.random.default_rng(0).normal(size=(n, 3, 3)), rate=rate)
    fields.update(kw)
    return MarkerData(**fields)


def test_write_trc_rate_contradicting_times_warned(tmp_path):
    with pytest.warns(UserWarning, match=r"write_trc: .*g\.trc: the time column steps by 0\.01 s .*DataRate "
                                         r"written is 60 Hz"):
        write_trc(str(tmp_path / "g.trc"), _markers(rate=60.0))


def test_write_trc_nonuniform_times_warned(tmp_path):
    time = np.array([0, 0.01, 0.03, 0.04, 0.05])
    with pytest.warns(UserWarning, match=r"write_trc: .*g\.trc: the times are not uniform: the step from time "
                                         r"0\.01 to 0\.03 is 0\.02 s but the DataRate written is 100 Hz"):
        write_trc(str(tmp_path / "g.trc"), _markers(time=time))


def test_write_trc_valid_round_trip_quiet(tmp_path):
    markers = _markers()
    _quiet(write_trc, str(tmp_path / "g.trc"), markers)
    back = _quiet(read_trc, str(tmp_path / "g.trc"))
    assert back.rate == 100.0 and np.allclose(back.positions, markers.positions)


def test_write_trc_zero_frames_refused(tmp_path):
    with pytest.raises(ValueError, match=r"write_trc: .*p\.trc: no frames to write"):
        write_trc(str(tmp_path / "p.trc"), _markers(n=0))


def test_write_trc_overflow_in_mm_refused(tmp_path):
    markers = _markers()
    with pytest.raises(ValueError, match=r"write_trc: .*s\.trc: marker 'a' X is .* m at row 1 .*not a finite "
                                         r"number in mm"):
        write_trc(str(tmp_path / "s.trc"), markers._replace(positions=np.full((5, 3, 3), 1e306)))


def test_write_trc_shape_messages(tmp_path):
    path = str(tmp_path / "s.trc")
    with pytest.raises(ValueError, match=r"s\.trc: 2 names for 3 markers"):
        write_trc(path, _markers(names=("a", "b")))
    with pytest.raises(ValueError, match=r"s\.trc: time has 4 entries but positions have 5 frames"):
        write_trc(path, _markers(time=np.arange(4) / 100.0))


def test_write_trc_complex_and_rate_refused(tmp_path):
    markers = _markers()
    pos = markers.positions.astype(complex)
    pos[2, 1, 0] += 1j
    with pytest.raises(ValueError, match=r"write_trc: .*s\.trc: marker 'b' has complex values"):
        write_trc(str(tmp_path / "s.trc"), markers._replace(positions=pos))
    with pytest.raises(ValueError, match=r"write_trc: .*s\.trc: rate=0\.0: the DataRate must be a positive"):
        write_trc(str(tmp_path / "s.trc"), _markers(rate=0.0))


# --- .trc rates ---------------------------------------------------------------------------------

@pytest.mark.parametrize("rates, key", [("0\t100", "DataRate"), ("-120\t100", "DataRate"),
                                        ("100\t0", "CameraRate"), ("100\tabc", "CameraRate")])
def test_trc_rate_not_positive_refused(tmp_path, rates, key):
    path = _trc(tmp_path, rates=rates)
    with pytest.raises(ValueError, match=rf"m\.trc:3: {key}="):
        read_trc(path)


# --- coordinate tables -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mbjax.models.arm26(ignore_wrapping=True)


def test_coordinates_from_table_nan_warned(arm):
    table = Table(np.arange(3) * 0.1, ("r_shoulder_elev", "r_elbow_flex"), np.array([[np.nan, 1], [0, 1], [0, 1.0]]))
    with pytest.warns(UserWarning, match=r"coordinates_from_table: coordinate\(s\) read as NaN .*'r_shoulder_elev' "
                                         r"at 1 row\(s\): row 1 \(time 0\.0\)"):
        q = coordinates_from_table(arm, table)
    assert np.isnan(q[0, 0])
    _quiet(coordinates_from_table, arm, table._replace(data=np.nan_to_num(table.data)))


def test_table_from_coordinates_lengths(arm):
    with pytest.raises(ValueError, match=r"table_from_coordinates: time has shape \(2,\) and q has shape \(3, 2\)"):
        table_from_coordinates(arm, np.arange(2) * 0.1, np.ones((3, 2)))
    table = table_from_coordinates(arm, np.arange(3) * 0.1, np.ones((3, 2)))
    assert table.data.shape == (3, 2)


# --- native model files --------------------------------------------------------------------------

def test_load_model_truncated(arm, tmp_path):
    path = tmp_path / "m.eqx"
    mbjax.io.save_model(str(path), arm)
    raw = path.read_bytes()
    for cut, name in ((100, "a.eqx"), (len(raw) - 100, "b.eqx"), (14, "c.eqx")):
        (tmp_path / name).write_bytes(raw[:cut])
        with pytest.raises(ValueError, match=rf"load_model: .*{name[0]}\.eqx is damaged or truncated"):
            mbjax.io.load_model(str(tmp_path / name))
    assert mbjax.io.load_model(str(path)).coordinate_names == arm.coordinate_names
