"""Data files refused or warned about by name: ``.mot``/``.sto`` times that do not increase (a
repeated time in a ``Storage`` file is warned about, as OpenSim's RRA and CMC write one), a first
column not labelled ``time`` and duplicate column labels (warned: OpenSim reads them), writers given times the readers refuse, a
``.trc`` without data rows or with an infinite coordinate."""

import os
import re
import warnings

import numpy as np
import pytest

from mbjax.io import read_storage, read_trc, write_storage, write_trc
from mbjax.io.storage import MarkerData, Table
from mbjax.models import model_path

DATA = os.path.join(os.path.dirname(model_path("gait2354")), "gait2354_walk")
MOT = os.path.join(DATA, "subject01_walk1_ik.mot")
TRC = os.path.join(DATA, "subject01_static.trc")


def _mot(tmp_path, edit=None, labels=None, name="short.mot", v3=False):
    """The shipped IK motion cut to 4 rows (line 12 holds row 1), rows and labels edited."""
    lines = open(MOT).read().split("\n")
    end = lines.index("endheader")
    head, lab, rows = lines[:end + 1], lines[end + 1].split("\t"), lines[end + 2:end + 6]
    rows = [r.split() for r in rows]
    if edit:
        edit(rows)
    if labels:
        labels(lab)
    head = [h.replace("nRows=73", "nRows=4") for h in head]
    if v3:
        head = ["version=3", "inDegrees=yes", "DataType=double", "endheader"]
    p = tmp_path / name
    p.write_text("\n".join(head + ["\t".join(lab)] + ["\t".join(r) for r in rows]) + "\n")
    return p, len(head) + 2  # the line of row 1


def test_storage_reads_the_cut_file(tmp_path):
    p, _ = _mot(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = read_storage(p)
    assert t.time.shape == (4,) and t.labels[0] == "pelvis_tilt"


def test_storage_decreasing_time_refused_by_line_and_row(tmp_path):
    p, first = _mot(tmp_path, edit=lambda r: r[2].__setitem__(0, "0.3"))
    with pytest.raises(ValueError, match=rf"short\.mot:{first + 2}: time 0\.3 at row 3 does not increase from "
                       r"row 2's 0\.41"):
        read_storage(p)


def test_storage_nan_time_refused_by_line_and_row(tmp_path):
    p, first = _mot(tmp_path, edit=lambda r: r[1].__setitem__(0, "nan"))
    with pytest.raises(ValueError, match=rf"short\.mot:{first + 1}: time nan at row 2 is not a finite number"):
        read_storage(p)


def test_storage_repeated_time_warned_in_a_storage_file(tmp_path):
    p, first = _mot(tmp_path, edit=lambda r: r[3].__setitem__(0, r[2][0]))
    with pytest.warns(UserWarning, match=rf"short\.mot: 1 row\(s\) repeat the previous row's time.*row 4 "
                      rf"\(line {first + 3}\) time 0\.4333"):
        t = read_storage(p)
    assert t.time.shape == (4,)


def test_storage_repeated_time_refused_in_a_table_file(tmp_path):
    p, first = _mot(tmp_path, edit=lambda r: r[3].__setitem__(0, r[2][0]), name="v3.sto", v3=True)
    with pytest.raises(ValueError, match=rf"v3\.sto:{first + 3}: time 0\.4333+ at row 4 repeats row 3's"):
        read_storage(p)


def test_storage_first_column_not_time_warned_by_label(tmp_path):
    p, first = _mot(tmp_path, labels=lambda lab: lab.__setitem__(0, "Time"))
    with pytest.warns(UserWarning, match=rf"short\.mot:{first - 1}: the first column label is 'Time', expected 'time'"):
        read_storage(p)


def test_storage_time_column_not_first_warned(tmp_path):
    def swap(lab):
        lab[0], lab[2] = lab[2], lab[0]
    p, first = _mot(tmp_path, labels=swap)
    with pytest.warns(UserWarning, match=rf"short\.mot:{first - 1}: column 3 is labelled 'time' but OpenSim reads "
                       r"the first column \('pelvis_list'\) as time"):
        read_storage(p)


def test_storage_duplicate_labels_warned_by_label(tmp_path):
    p, first = _mot(tmp_path, labels=lambda lab: lab.__setitem__(5, "knee_angle_r"))
    with pytest.warns(UserWarning, match=rf"short\.mot:{first - 1}: duplicate column label\(s\) 'knee_angle_r' "
                       r"\(columns 6, \d+\)"):
        read_storage(p)


@pytest.mark.parametrize("time, match", [([0.0, float("nan"), 0.2], r"time nan at row 2 is not a finite number"),
                                         ([0.0, 0.2, 0.1], r"time 0\.1 at row 3 does not increase from row 2's 0\.2")])
def test_write_storage_refuses_bad_times(tmp_path, time, match):
    table = Table(np.array(time), ("a",), np.zeros((3, 1)))
    for name in ("out.mot", "out.sto"):
        with pytest.raises(ValueError, match=re.escape(str(tmp_path / name)) + ": " + match):
            write_storage(tmp_path / name, table)
        assert not (tmp_path / name).exists()


def test_write_storage_refuses_duplicate_labels(tmp_path):
    table = Table(np.arange(3.0), ("a", "a"), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"out\.sto: duplicate column label\(s\) 'a'"):
        write_storage(tmp_path / "out.sto", table)


def _trc(tmp_path, rows=3, edit=None, name="short.trc"):
    """The shipped static trial cut to ``rows`` frames (line 7 holds frame 1), rows edited."""
    lines = open(TRC).read().split("\n")
    head, data = lines[:6], [r.split("\t") for r in lines[6:6 + rows]]
    head[2] = head[2].replace("300", str(rows))
    if edit:
        edit(data)
    p = tmp_path / name
    p.write_text("\n".join(head + ["\t".join(r) for r in data]) + "\n")
    return p


def test_trc_without_data_rows_refused_by_file(tmp_path):
    p = _trc(tmp_path, rows=0)
    with pytest.raises(ValueError, match=r"short\.trc:\d+: no data rows"):
        read_trc(p)


@pytest.mark.parametrize("text", ["inf", "-inf"])
def test_trc_infinite_coordinate_refused_by_marker_and_frame(tmp_path, text):
    p = _trc(tmp_path, edit=lambda d: d[1].__setitem__(6, text))
    with pytest.raises(ValueError, match=rf"short\.trc:8: marker 'L\.ASIS' Y is {text} at frame 2 \(time 0\.017\)"):
        read_trc(p)


def test_trc_infinite_time_refused(tmp_path):
    p = _trc(tmp_path, edit=lambda d: d[2].__setitem__(1, "inf"))
    with pytest.raises(ValueError, match=r"short\.trc:9: time inf \(frame 3\) is not a finite number"):
        read_trc(p)


@pytest.mark.parametrize("time, match", [([0.0, 0.2, 0.1], r"time 0\.1 at row 3 does not increase from row 2's 0\.2"),
                                         ([0.0, 0.1, 0.1], r"time 0\.1 at row 3 repeats row 2's"),
                                         ([0.0, float("nan"), 0.2], r"time nan at row 2 is not a finite number")])
def test_write_trc_refuses_times_read_trc_refuses(tmp_path, time, match):
    m = MarkerData(np.array(time), ("a",), np.zeros((3, 1, 3)), "m", 100.0)
    with pytest.raises(ValueError, match=r"out\.trc: " + match):
        write_trc(tmp_path / "out.trc", m)
    assert not (tmp_path / "out.trc").exists()


def test_write_trc_refuses_an_infinite_position(tmp_path):
    pos = np.zeros((2, 2, 3))
    pos[1, 1, 2] = np.inf
    with pytest.raises(ValueError, match=r"out\.trc: marker 'b' Z is inf at row 2 \(time 0\.01\)"):
        write_trc(tmp_path / "out.trc", MarkerData(np.array([0.0, 0.01]), ("a", "b"), pos, "m", 100.0))
