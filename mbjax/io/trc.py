"""``.trc`` marker trajectories (NumPy, host side).

``.trc`` (``OpenSim::TRCFileAdapter``): a ``PathFileType`` line, the 8 metadata keys ``DataRate ...
OrigNumFrames`` and their values, the marker-name line ``Frame# Time m1 (tab) (tab) m2``, the
``X1 Y1 Z1`` line, then at least one row ``frame time x y z ...``.  Read as ``TRCFileAdapter`` reads
it: fields are split at tabs and stripped of spaces, empty fields are dropped from the header lines
(double tabs and padded values read), one trailing tab on a row is dropped, each row must then hold
exactly ``2 + 3 * NumMarkers`` fields (a short row is refused, never read as missing markers), and a
marker with any empty component (or ``NaN``) is missing (NaN); an infinite coordinate is refused.
``NumFrames`` disagreeing with the rows and component labels beyond the markers are warned about
(OpenSim ignores both); ``DataRate`` and ``CameraRate`` must be positive numbers.  Where OpenSim reads
silently what mbjax refuses (a number it cannot parse becomes NaN, rows after an empty line are
dropped), the error names the line.  Positions are converted **explicitly to metres** from the
file's ``Units`` (``mm``, ``cm``, ``m`` and the spellings OpenSim's ``Units`` reads);
:attr:`MarkerData.units` keeps the file's unit.

Malformed input raises ``ValueError`` naming the file, the 1-based line and, for a bad number, the
1-based column and its label.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np

from ._table_text import _check_times, _data_line, _err, _number, _read_lines
from .arguments import require_folder

#: metres per unit of a .trc ``Units`` field
TRC_UNITS = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}
#: the ``Units`` spellings OpenSim's ``Units`` class reads, by unit
TRC_UNIT_NAMES = {n: u for u, names in {"mm": ("mm", "MM", "millimeters", "MILLIMETERS"),
                                        "cm": ("cm", "CM", "centimeters", "CENTIMETERS"),
                                        "m": ("m", "M", "meters", "METERS")}.items() for n in names}
#: the metadata keys ``TRCFileAdapter`` requires on line 2, in order
TRC_KEYS = ("DataRate", "CameraRate", "NumFrames", "NumMarkers", "Units", "OrigDataRate",
            "OrigDataStartFrame", "OrigNumFrames")


class MarkerData(NamedTuple):
    """Marker trajectories: ``time (T,)``, ``names``, ``positions (T, nm, 3)`` in **metres** (NaN where
    a marker is missing), the file's ``units``, ``rate`` (``DataRate``, Hz), ``frame`` numbers and the
    header ``metadata``."""

    time: np.ndarray
    names: tuple[str, ...]
    positions: np.ndarray
    units: str = "m"
    rate: float = float("nan")
    frame: np.ndarray | None = None
    metadata: dict | None = None


def _trc_fields(line: str) -> list[str]:
    """A .trc line's tab-separated fields as ``TRCFileAdapter`` splits them: each field stripped of
    whitespace, one trailing delimiter dropped (``a<tab>b<tab>`` has two fields), ``[]`` for ``""``."""
    toks = line.split("\t")
    if toks[-1] == "":
        toks.pop()
    return [t.strip() for t in toks]


def _trc_units(path, units: str) -> float:
    try:
        return TRC_UNITS[TRC_UNIT_NAMES.get(units, units)]
    except KeyError:
        raise _err(path, 3, f"Units={units!r} is not supported; known units {sorted(TRC_UNIT_NAMES)}") from None


def read_trc(path) -> MarkerData:
    """Read a ``.trc`` marker file; positions in metres (see the module docstring)."""
    lines = _read_lines(path)
    head = lines[0].replace("\t", " ").split() if lines else []
    if len(lines) < 5 or not head or head[0] != "PathFileType":
        raise _err(path, 1, "not a .trc file (first line must start with 'PathFileType')")
    keys = [k for k in _trc_fields(lines[1]) if k]
    if keys != list(TRC_KEYS):
        raise _err(path, 2, f"header keys {keys}; OpenSim's TRCFileAdapter needs exactly {list(TRC_KEYS)} "
                   "(tab-separated, in this order)")
    raw = _trc_fields(lines[2])
    vals = [v for v in raw if v]
    if len(keys) != len(vals):
        empty = [k for k, v in zip(keys, raw) if not v]
        hint = "; give mm, cm or m" if empty[:1] == ["Units"] else ""
        raise _err(path, 3, (f"{empty[0]} (field {keys.index(empty[0]) + 1}) is empty{hint}" if empty
                             and len(raw) >= len(keys) else f"{len(vals)} header values for the {len(keys)} header "
                             f"keys {keys} on line 2"))
    meta = dict(zip(keys, vals))
    _warn_header_numbers(path, meta)
    meta["header"] = lines[0].strip()
    units = meta["Units"]
    scale = _trc_units(path, units)
    try:
        nm = int(meta["NumMarkers"])
    except ValueError:
        raise _err(path, 3, f"NumMarkers={meta['NumMarkers']!r} is not an integer") from None
    labels = [s for s in _trc_fields(lines[3]) if s]
    if labels[:2] != ["Frame#", "Time"]:
        raise _err(path, 4, "expected 'Frame#<tab>Time<tab>marker names...'")
    names = labels[2:]
    if len(names) != nm:
        raise _err(path, 4, f"{len(names)} marker names but the header says NumMarkers={nm}")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(path, 4, f"duplicate marker names {dup}")
    xyz = [s for s in _trc_fields(lines[4]) if s]
    for m in range(nm):
        for a, c in enumerate("XYZ"):
            want = f"{c}{m + 1}"
            got = xyz[3 * m + a] if 3 * m + a < len(xyz) else None
            if got != want:
                raise _err(path, 5, f"component label {3 * m + a + 1} is {got!r}, expected {want!r} "
                           f"(marker {names[m]!r})")
    if len(xyz) > 3 * nm:
        warnings.warn(f"{path}:5: component labels {xyz[3 * nm:]} name no marker on line 4; "
                      "they are ignored (as OpenSim does)", stacklevel=2)
    width = 2 + 3 * nm
    frames, times, rows = _trc_rows(path, lines, 5, names, width)
    if len(times) == 0:
        raise _err(path, len(lines), "no data rows after the header: the file holds no marker frames")
    t = np.asarray(times, dtype=float)
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        k = int(bad[0])
        raise _err(path, _data_line(lines, 5, k), f"time {float(t[k])!r} (frame {frames[k]:g}) is not a finite "
                   "number")
    back = np.flatnonzero(~(np.diff(t) > 0))
    if back.size:  # TRCFileAdapter's TimeSeriesTable refuses it too (validateRow)
        k = int(back[0]) + 1
        raise _err(path, _data_line(lines, 5, k), f"time {float(t[k])!r} (frame {frames[k]:g}) does not increase from the "
                   f"previous row's {float(t[k - 1])!r}: times must increase strictly (OpenSim refuses the file too)")
    pos = np.asarray(rows, dtype=float).reshape(len(rows), nm, 3) * scale
    inf = np.argwhere(np.isinf(pos))
    if inf.size:  # NaN or an empty field is a missing marker; inf is no position at all
        k, m, a = (int(v) for v in inf[0])
        raise _err(path, _data_line(lines, 5, k), f"marker {names[m]!r} {'XYZ'[a]} is {float(rows[k][3 * m + a])} at "
                   f"frame {frames[k]:g} (time {float(t[k])!r}) ({len(inf)} infinite value(s) in the file): fix the "
                   "value, or leave the marker's three fields empty (or NaN) where it is missing")
    n_frames = meta.get("NumFrames")
    if n_frames.isdigit() and int(n_frames) != len(rows):
        warnings.warn(f"{path}:3: header says NumFrames={n_frames} but the file has {len(rows)} data rows; "
                      f"all {len(rows)} rows are read (as OpenSim does)", stacklevel=2)
    rates = {}
    for key in ("DataRate", "CameraRate"):  # OpenSim's MarkerData refuses a CameraRate it cannot read
        try:
            value = _number(path, 3, TRC_KEYS.index(key) + 1, key, meta[key])
        except ValueError:
            raise _err(path, 3, f"{key}={meta[key]!r} is not a number") from None
        if not (np.isfinite(value) and value > 0):
            raise _err(path, 3, f"{key}={meta[key]!r}: a rate must be a positive number of frames per second")
        rates[key] = value
    rate = rates["DataRate"]
    _warn_implausible(path, tuple(names), t, pos, rate, units)
    return MarkerData(np.asarray(times, dtype=float), tuple(names), pos, units, rate,
                      np.asarray(frames, dtype=float), meta)


def _warn_header_numbers(path, meta) -> None:
    """Warn naming the header values besides the rates and NumMarkers that are not numbers (OpenSim's
    TRCFileAdapter keeps them as text and reads nothing from them; nor does mbjax)."""
    bad = []
    for key in ("NumFrames", "OrigDataRate", "OrigDataStartFrame", "OrigNumFrames"):
        try:
            float(meta[key])
        except ValueError:
            bad.append(f"{key}={meta[key]!r}")
    if bad:
        warnings.warn(f"{path}:3: header value(s) {', '.join(bad)} are not numbers; not used (as OpenSim uses none "
                      "of them): fix them, or the program that wrote the file", stacklevel=3)


def _warn_implausible(path, names, t, pos, rate, units):
    """Warn about values read as given that look like a slip: positions of millimetres labelled metres,
    a marker at exactly (0, 0, 0) in some frames only (an exporter's gap), times off the ``DataRate``."""
    finite = np.isfinite(pos)
    far = np.abs(np.where(finite, pos, 0.0))
    if far.size and far.max() > 50.0:
        k, m, a = np.unravel_index(int(np.argmax(far)), far.shape)
        warnings.warn(f"{path}: marker {names[m]!r} {'XYZ'[a]} is {pos[k, m, a]:g} m at time {t[k]:g} (Units "
                      f"{units!r}): implausibly far from the origin for a lab; the values look like millimetres (or "
                      "centimetres): fix the Units field on line 3", stacklevel=3)
    zero = np.all(pos == 0.0, axis=2) & np.all(finite, axis=2)
    gaps = [f"{names[m]!r} ({int(zero[:, m].sum())} of {len(t)} frames)" for m in range(len(names))
            if zero[:, m].any() and not zero[:, m].all()]
    if gaps:
        warnings.warn(f"{path}: marker(s) {', '.join(gaps)} sit exactly at (0, 0, 0) in some frames and elsewhere "
                      "in the others, as some exporters write a missing marker; mbjax reads (0, 0, 0) as a "
                      "position (as OpenSim does): leave the three fields empty (or NaN) where a marker is missing",
                      stacklevel=3)
    median = _off_rate(t, rate)
    if median is not None:
        warnings.warn(f"{path}: the time column steps by {median:g} s (a rate of {1 / median:g} Hz) but the "
                      f"header's DataRate is {rate:g} Hz; check that the times are in seconds (not "
                      "milliseconds) and the DataRate on line 3", stacklevel=3)


def _off_rate(t, rate):
    """The time column's median step where it contradicts ``rate`` (both the median and the mean step
    more than 1 % off ``1 / rate``), else None: the rule :func:`read_trc` and :func:`write_trc` warn by."""
    if len(t) > 1 and np.isfinite(rate) and rate > 0:
        step = np.diff(t)
        median, mean = float(np.median(step)), float((t[-1] - t[0]) / (len(t) - 1))
        if abs(median * rate - 1) > 0.01 and abs(mean * rate - 1) > 0.01:
            return median
    return None


def _trc_rows(path, lines, start, names, width):
    """Frame numbers, times and ``(T, 3 nm)`` positions of the data lines from 0-based line ``start``.

    As ``TRCFileAdapter``: blank lines (or lines of empty fields) before the data are skipped, a row
    must hold exactly ``width`` fields, a marker with any empty component is missing (NaN), an empty
    frame number is allowed (NaN; OpenSim does not read it).  Stricter than OpenSim, which reads
    unparsable numbers as NaN and stops silently at the first blank line: those raise here."""
    nm = len(names)
    k = start
    while k < len(lines) and not any(_trc_fields(lines[k])):
        k += 1
    end = k
    while end < len(lines) and lines[end].strip():
        end += 1
    extra = next((j for j in range(end, len(lines)) if lines[j].strip()), None)
    if extra is not None:
        raise _err(path, extra + 1, f"data after the empty line {end + 1} (OpenSim stops reading at an "
                   "empty line); remove the empty line or the rows after it")
    if k < end and not _trc_fields(lines[k])[0]:
        raise _err(path, k + 1, "first data row has no frame number (OpenSim would skip this row)")
    fields = [_trc_fields(lines[j]) for j in range(k, end)]
    for j, toks in enumerate(fields):
        if len(toks) != width:
            ln = k + j + 1
            if len(toks) < width:
                more = (" (a missing marker is three empty fields; at the end of a row they need a closing "
                        "tab, as OpenSim drops one trailing tab)" if len(toks) >= width - 3 else "")
                more += " (fields must be separated by tabs)" if len(toks) == 1 and " " in toks[0] else ""
                raise _err(path, ln, f"{len(toks)} fields, expected {width} (Frame#, Time, 3 per marker for "
                           f"{nm} markers){more}")
            cols = f"column {width + 1}" if len(toks) == width + 1 else f"columns {width + 1}-{len(toks)}"
            raise _err(path, ln, f"{len(toks)} fields, expected {width}: {cols} {toks[width:]} not under a "
                       "marker name on line 4")
    if not fields:
        return np.zeros(0), np.zeros(0), np.zeros((0, 3 * nm))
    arr = None
    text = "".join(lines[k:end])  # float() reads '1_0' and non-ASCII digits: the careful parser refuses them
    if all(all(t) for t in fields) and text.isascii() and "_" not in text:
        try:
            arr = np.array(fields, dtype=float)
        except ValueError:
            arr = None
    if arr is not None:
        return arr[:, 0], arr[:, 1], arr[:, 2:]
    frames, times, rows = [], [], []
    for j, toks in enumerate(fields):
        ln = k + j + 1
        frames.append(_number(path, ln, 1, "Frame#", toks[0]) if toks[0] else float("nan"))
        if not toks[1]:
            raise _err(path, ln, "column 2 ('Time') is empty")
        times.append(_number(path, ln, 2, "Time", toks[1]))
        row = np.full(3 * nm, np.nan)
        for m in range(nm):
            comp = toks[2 + 3 * m: 5 + 3 * m]
            if all(comp):
                for a in range(3):
                    row[3 * m + a] = _number(path, ln, 3 + 3 * m + a, f"{names[m]} {'XYZ'[a]}", comp[a])
        rows.append(row)
    return np.asarray(frames), np.asarray(times), np.asarray(rows).reshape(len(rows), 3 * nm)


def write_trc(path, markers: MarkerData, units: str = "mm") -> None:
    """Write :class:`MarkerData` (positions in metres) as ``.trc`` in ``units``; NaN = empty fields.

    Every field ends in a tab, as ``TRCFileAdapter`` writes, so a missing last marker keeps its three
    empty fields when OpenSim reads the file back."""
    path = require_folder(path, "write_trc")
    if units not in TRC_UNITS:
        raise ValueError(f"units must be one of {sorted(TRC_UNITS)}, got {units!r}")
    names = list(markers.names)
    if np.iscomplexobj(markers.time) or np.iscomplexobj(markers.positions):
        imag = np.abs(np.imag(np.asarray(markers.positions)))
        who = [n for m, n in enumerate(names) if imag.ndim == 3 and m < imag.shape[1] and imag[:, m].any()]
        raise ValueError(f"write_trc: {path}: {'marker ' + repr(who[0]) + ' has' if who else 'time or positions have'}"
                         " complex values: give real positions (in metres) and times")
    time = np.asarray(markers.time, dtype=float).reshape(-1)
    pos = np.asarray(markers.positions, dtype=float)
    if pos.ndim != 3 or pos.shape[2] != 3:
        raise ValueError(f"write_trc: {path}: positions must have shape (T, nm, 3), got {pos.shape}")
    if pos.shape[1] != len(names):
        raise ValueError(f"write_trc: {path}: {len(names)} names for {pos.shape[1]} markers (positions have shape "
                         f"{pos.shape}): give one name per marker")
    if pos.shape[0] != time.shape[0]:
        raise ValueError(f"write_trc: {path}: time has {time.shape[0]} entries but positions have {pos.shape[0]} "
                         f"frames (positions shape {pos.shape}): give one time per frame")
    if time.shape[0] == 0:
        raise ValueError(f"write_trc: {path}: no frames to write (read_trc and OpenSim refuse a .trc file without "
                         "data rows)")
    for n in names:
        if not n or "\t" in n or "\n" in n or n != n.strip():
            raise ValueError(f"marker name {n!r} is empty, contains a tab/newline or starts/ends with a space")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"write_trc: {path}: duplicate marker names {dup} (read_trc and OpenSim refuse them): "
                         "rename or drop the repeated markers")
    _check_times(path, time)  # read_trc refuses what does not increase strictly, as TRCFileAdapter does
    inf = np.argwhere(np.isinf(pos))
    if inf.size:
        k, m, a = (int(v) for v in inf[0])
        raise ValueError(f"{path}: marker {names[m]!r} {'XYZ'[a]} is {float(pos[k, m, a])} at row {k + 1} (time "
                         f"{float(time[k])!r}): give NaN where a marker is missing")
    rate = markers.rate
    if rate is not None and np.isfinite(rate) and not rate > 0:
        raise ValueError(f"write_trc: {path}: rate={rate!r}: the DataRate must be a positive number of frames per "
                         "second (read_trc refuses another)")
    if rate is None or not np.isfinite(rate):
        rate = 1.0 / float(np.median(np.diff(time))) if time.shape[0] > 1 else 1.0
    median = _off_rate(time, rate)
    if median is not None:
        warnings.warn(f"write_trc: {path}: the time column steps by {median:g} s (a rate of {1 / median:g} Hz) but "
                      f"the DataRate written is {rate:g} Hz (read_trc warns about the file): give the rate of the "
                      "times", stacklevel=2)
    elif time.shape[0] > 1 and np.max(np.abs(np.diff(time) * rate - 1)) > 0.5:
        step = np.diff(time)
        k = int(np.argmax(np.abs(step * rate - 1)))
        warnings.warn(f"write_trc: {path}: the times are not uniform: the step from time {float(time[k])!r} to "
                      f"{float(time[k + 1])!r} is {float(step[k]):g} s but the DataRate written is {rate:g} Hz (a "
                      f"step of {1 / rate:g} s; steps run from {float(step.min()):g} to {float(step.max()):g} s); "
                      "OpenSim's tools read frames by their times, check for dropped frames", stacklevel=2)
    frame = np.arange(1, time.shape[0] + 1)
    if markers.frame is not None and np.all(np.isfinite(markers.frame)):
        frame = np.asarray(markers.frame)
    with np.errstate(over="ignore"):
        scaled = pos / TRC_UNITS[units]
    over = np.argwhere(np.isinf(scaled))  # finite metres past the float range in the file's unit
    if over.size:
        k, m, a = (int(v) for v in over[0])
        raise ValueError(f"write_trc: {path}: marker {names[m]!r} {'XYZ'[a]} is {float(pos[k, m, a])!r} m at row "
                         f"{k + 1} (time {float(time[k])!r}): not a finite number in {units}; give positions in metres")
    out = [f"PathFileType\t4\t(X/Y/Z)\t{os.path.basename(path)}",
           "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames",
           f"{rate:g}\t{rate:g}\t{time.shape[0]}\t{len(names)}\t{units}\t{rate:g}\t{int(frame[0]) if len(frame) else 1}"
           f"\t{time.shape[0]}",
           "\t".join(["Frame#", "Time"] + [f"{n}\t\t" for n in names]),
           "\t".join(["", ""] + [f"X{k}\tY{k}\tZ{k}" for k in range(1, len(names) + 1)]),
           ""]
    for f, t, row in zip(frame, time, scaled):
        cells = [str(int(f)), repr(float(t))]
        for p in row:
            cells += ["", "", ""] if not np.all(np.isfinite(p)) else [repr(float(v)) for v in p]
        out.append("\t".join(cells) + "\t")
    try:
        with open(path, "w") as fh:
            fh.write("\n".join(out) + "\n")
    except OSError as e:  # a full disk names no file: name it and what was written
        raise type(e)(f"write_trc: cannot write {path!r} (the .trc marker file of {len(names)} markers): "
                      f"{e.strerror or e}") from None
