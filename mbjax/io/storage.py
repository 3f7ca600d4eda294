"""OpenSim data files: ``.mot``/``.sto`` tables and ``.trc`` marker trajectories (NumPy, host side).

Two table formats are read and written (both open in OpenSim 4.6):

* **Storage** (``OpenSim::Storage``, what the IK tool writes as ``.mot``)::

      Coordinates            <- a name line (optional in files read)
      version=1
      nRows=121
      nColumns=3
      inDegrees=yes
      endheader
      time  r_shoulder_elev  r_elbow_flex
      0.0   -0.034           -0.054

* **TimeSeriesTable** (``OpenSim::STOFileAdapter``, format ``version=3``): ``key=value`` metadata,
  ``DataType=double``, ``version=3``, ``OpenSimVersion=...``, ``endheader``, then the same columns.

Anything before ``endheader`` of the form ``key=value`` goes into :attr:`Table.metadata`; other header
lines (the Storage name and free text) are kept in ``metadata["name"]`` / ``metadata["description"]``.
``inDegrees`` is read as OpenSim reads it (``yes``/``no``; absent = ``no``, ``Storage``'s default).

``.trc`` (``OpenSim::TRCFileAdapter``): tab-separated; a ``PathFileType`` line, a metadata key line
and a value line (``DataRate``, ``Units`` ...), the marker-name line ``Frame# Time m1 (tab) (tab) m2``,
the ``X1 Y1 Z1`` line, then rows ``frame time x y z ...``.  A marker with any empty component is
missing (NaN), as in ``TRCFileAdapter``.  Positions are converted **explicitly to metres** from the
file's ``Units`` (``mm``, ``cm``, ``m``); :attr:`MarkerData.units` keeps the file's unit.

Malformed input raises ``ValueError`` naming the file, the 1-based line and, for a bad number, the
1-based column and its label.
"""

from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np

#: metres per unit of a .trc ``Units`` field
TRC_UNITS = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}


class Table(NamedTuple):
    """A ``.mot``/``.sto`` table: ``time (T,)``, data column ``labels`` (without the time column),
    ``data (T, n)``, ``in_degrees`` and the header ``metadata`` (strings)."""

    time: np.ndarray
    labels: tuple[str, ...]
    data: np.ndarray
    in_degrees: bool = False
    metadata: dict | None = None

    def column(self, label: str) -> np.ndarray:
        """One data column by label."""
        try:
            return self.data[:, self.labels.index(label)]
        except ValueError:
            raise KeyError(f"no column {label!r}; columns are {self.labels}") from None


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


def _err(path, line: int, msg: str) -> ValueError:
    return ValueError(f"{path}:{line}: {msg}")


def _number(path, line: int, col: int, label: str, tok: str) -> float:
    try:
        return float(tok)
    except ValueError:
        raise _err(path, line, f"column {col} ({label!r}): cannot read {tok!r} as a number") from None


def _fast_rows(rows: list[str], ncol: int):
    """``(len(rows), ncol)`` floats of whitespace-separated data rows parsed in one C call
    (``np.loadtxt``), or None when any row is not exactly ``ncol`` numbers: the careful per-line
    parser then reads the file again and names the offending line and column."""
    if not rows:
        return None
    try:
        arr = np.loadtxt(rows, dtype=float, comments=None, ndmin=2)
    except ValueError:
        return None
    return arr if arr.shape == (len(rows), ncol) else None


def _read_lines(path) -> list[str]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    with open(path, newline=None) as fh:
        return fh.read().split("\n")


# --------------------------------------------------------------------------------------------
# .mot / .sto
# --------------------------------------------------------------------------------------------


def read_storage(path) -> Table:
    """Read a ``.mot``/``.sto`` file (Storage or TimeSeriesTable format) as a :class:`Table`."""
    lines = _read_lines(path)
    end = next((i for i, s in enumerate(lines) if s.strip().lower() == "endheader"), None)
    if end is None:
        raise _err(path, len(lines), "no 'endheader' line: not an OpenSim .mot/.sto file")
    meta: dict[str, str] = {}
    meta_line: dict[str, int] = {}
    free = []
    for i, s in enumerate(lines[:end]):
        s = s.strip()
        if not s:
            continue
        if "=" in s:
            k, v = s.split("=", 1)
            meta[k.strip()] = v.strip()
            meta_line[k.strip()] = i + 1
        elif i == 0:
            meta["name"] = s
        else:
            free.append(s)
    if free:
        meta["description"] = "\n".join(free)
    dtype = meta.get("DataType", "double")
    if dtype != "double":
        raise _err(path, meta_line["DataType"], f"DataType={dtype} is not supported (only double)")
    deg = meta.get("inDegrees", "no").strip().lower()
    if deg not in ("yes", "no", "true", "false"):
        raise _err(path, meta_line["inDegrees"], f"inDegrees={meta['inDegrees']!r}, expected yes or no")
    in_degrees = deg in ("yes", "true")
    # column labels: first non-empty line after endheader
    i = end + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines):
        raise _err(path, end + 1, "no column-label line after 'endheader'")
    labels = lines[i].strip().split("\t") if "\t" in lines[i] else lines[i].split()
    labels = [s.strip() for s in labels]
    label_line = i + 1
    n_col = _header_count(path, meta, meta_line, "nColumns")
    if n_col is not None and n_col != len(labels):
        raise _err(path, label_line, f"{len(labels)} column labels but the header says nColumns={n_col} "
                   f"(line {meta_line['nColumns']})")
    rows = _fast_rows([s for s in lines[i + 1:] if s.strip()], len(labels))
    if rows is None:
        rows = _storage_rows(path, lines, i, labels, label_line)
    n_row = _header_count(path, meta, meta_line, "nRows")
    if n_row is not None and n_row != len(rows):
        raise _err(path, meta_line["nRows"], f"header says nRows={n_row} but the file has {len(rows)} rows")
    arr = np.asarray(rows, dtype=float).reshape(len(rows), len(labels))
    return Table(arr[:, 0], tuple(labels[1:]), arr[:, 1:], in_degrees, meta)


def _header_count(path, meta, meta_line, key):
    """The header's integer ``key`` (``nRows``/``nColumns``), ``None`` when absent; an error naming
    the line when it is not an integer."""
    if key not in meta:
        return None
    try:
        return int(meta[key])
    except ValueError:
        raise _err(path, meta_line[key], f"{key}={meta[key]!r} is not an integer") from None


def _storage_rows(path, lines, i, labels, label_line) -> list[list[float]]:
    """The data rows after the label line ``i``, one line at a time (errors name line and column)."""
    rows = []
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        if not s:
            continue
        toks = s.split()
        if len(toks) != len(labels):
            raise _err(path, j + 1, f"{len(toks)} values, expected {len(labels)} (one per column label on "
                       f"line {label_line})")
        rows.append([_number(path, j + 1, c + 1, labels[c], t) for c, t in enumerate(toks)])
    return rows


def _fmt(x: float) -> str:
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return repr(x)


def write_storage(path, table: Table, format: str | None = None, name: str | None = None) -> None:
    """Write a :class:`Table` as ``.mot``/``.sto``.

    ``format="storage"`` (default for ``.mot``) writes the ``OpenSim::Storage`` header
    (``version=1``, ``nRows``, ``nColumns``, ``inDegrees``); ``format="table"`` (default otherwise)
    the ``STOFileAdapter`` header (``version=3``).  Numbers are written with 17 significant digits
    (round trips are exact).  Labels must not contain whitespace.
    """
    path = os.fspath(path)
    if format is None:
        format = "storage" if path.lower().endswith(".mot") else "table"
    if format not in ("storage", "table"):
        raise ValueError(f"format must be 'storage' or 'table', got {format!r}")
    time = np.asarray(table.time, dtype=float).reshape(-1)
    data = np.asarray(table.data, dtype=float)
    labels = list(table.labels)
    if data.ndim != 2 or data.shape != (time.shape[0], len(labels)):
        raise ValueError(f"data must have shape (T, n) = ({time.shape[0]}, {len(labels)}), got {data.shape}")
    for lab in labels:
        if not lab or any(c.isspace() for c in lab):
            raise ValueError(f"column label {lab!r} is empty or contains whitespace")
    meta = dict(table.metadata or {})
    skip = {"name", "description", "version", "nRows", "nColumns", "inDegrees", "DataType", "OpenSimVersion"}
    out = []
    if format == "storage":
        out.append(name or meta.get("name") or "mbjax")
        out += ["version=1", f"nRows={time.shape[0]}", f"nColumns={len(labels) + 1}",
                f"inDegrees={'yes' if table.in_degrees else 'no'}"]
        out += [f"{k}={v}" for k, v in meta.items() if k not in skip]
        if meta.get("description"):
            out += ["", meta["description"]]
    else:
        out += [f"inDegrees={'yes' if table.in_degrees else 'no'}"]
        out += [f"{k}={v}" for k, v in meta.items() if k not in skip]
        out += ["DataType=double", "version=3", "OpenSimVersion=4.6"]
    out.append("endheader")
    out.append("\t".join(["time"] + labels))
    for t, row in zip(time, data):
        out.append("\t".join([_fmt(t)] + [_fmt(v) for v in row]))
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def coordinates_from_table(model, table: Table, missing: str = "error", rotational=None) -> np.ndarray:
    """The model's coordinates ``(T, nq)`` in radians / metres from a table.

    A column matches coordinate ``c`` when its label is ``c`` or a path ending in ``/c/value`` or
    ``/c`` (OpenSim 4 writes ``/jointset/r_shoulder/r_shoulder_elev/value``).  Rotational coordinates
    (OpenSim 4's motion types, :mod:`mbjax.io.osim_motion`, read from the model's ``.osim``; or the
    names in ``rotational``) are converted from degrees when ``table.in_degrees``, as
    ``SimbodyEngine::convertDegreesToRadians`` converts them.  A coordinate without a column raises
    (``missing="error"``) or takes its default value (``missing="default"``).  Extra columns (speeds, locked or coupled coordinates)
    are ignored.
    """
    names = model.coordinate_names
    info = model.extras.get("osim") if hasattr(model, "extras") else None
    if rotational is not None:
        rot = np.array([n in set(rotational) for n in names])
    elif info is not None:
        rot = _rotational(model)
    elif table.in_degrees:
        raise ValueError("table is in degrees but the model has no OpenSim motion types: pass rotational=[names]")
    else:
        rot = np.zeros(len(names), bool)
    default = np.asarray(info.default) if info is not None else np.zeros(len(names))
    index = {}
    for k, lab in enumerate(table.labels):
        parts = lab.strip("/").split("/")
        key = parts[-2] if len(parts) >= 2 and parts[-1] == "value" else parts[-1]
        if parts[-1] in ("speed", "acceleration") and len(parts) >= 2:
            continue
        index.setdefault(key, k)
    out = np.empty((table.data.shape[0], len(names)))
    lost = []
    for i, n in enumerate(names):
        if n in index:
            col = table.data[:, index[n]]
            out[:, i] = np.deg2rad(col) if (table.in_degrees and rot[i]) else col
        else:
            lost.append(n)
            out[:, i] = default[i]
    if lost and missing == "error":
        raise ValueError(f"table has no column for coordinate(s) {lost}; columns are {table.labels} "
                         "(missing='default' uses default values)")
    if missing not in ("error", "default"):
        raise ValueError(f"missing must be 'error' or 'default', got {missing!r}")
    return out


def _rotational(model) -> np.ndarray:
    """Which model coordinates OpenSim 4 treats as rotational (:mod:`mbjax.io.osim_motion`, from the
    model's source file; the loader's ``motion_types`` when the file is gone)."""
    info = model.extras["osim"]
    try:
        from .osim_motion import motion_types

        types = motion_types(info.source)
        return np.array([types.get(n, m) == "rotational" for n, m in zip(model.coordinate_names, info.motion_types)])
    except (OSError, ValueError):
        return np.array([m == "rotational" for m in info.motion_types])


def table_from_coordinates(model, time, q, in_degrees: bool = True, name: str = "Coordinates") -> Table:
    """A :class:`Table` of coordinates ``q (T, nq)`` labelled by coordinate name, rotational ones in
    degrees when ``in_degrees`` (as OpenSim's IK tool writes its ``.mot``)."""
    q = np.asarray(q, dtype=float)
    info = model.extras.get("osim")
    if in_degrees:
        if info is None:
            raise ValueError("in_degrees needs OpenSim motion types (model.extras['osim'])")
        q = np.where(_rotational(model), np.rad2deg(q), q)
    return Table(np.asarray(time, dtype=float), tuple(model.coordinate_names), q, in_degrees, {"name": name})


# --------------------------------------------------------------------------------------------
# .trc
# --------------------------------------------------------------------------------------------


def read_trc(path) -> MarkerData:
    """Read a ``.trc`` marker file; positions in metres (see the module docstring)."""
    lines = [s.rstrip("\r") for s in _read_lines(path)]
    if len(lines) < 5 or not lines[0].startswith("PathFileType"):
        raise _err(path, 1, "not a .trc file (first line must start with 'PathFileType')")
    keys = [k.strip() for k in lines[1].split("\t")]
    vals = [v.strip() for v in lines[2].split("\t")]
    while keys and not keys[-1]:
        keys.pop()
    while vals and not vals[-1]:
        vals.pop()
    if len(keys) != len(vals):
        raise _err(path, 3, f"{len(vals)} header values for {len(keys)} header keys on line 2")
    meta = dict(zip(keys, vals))
    units = meta.get("Units")
    if units is None:
        raise _err(path, 2, "no 'Units' header key")
    if units not in TRC_UNITS:
        raise _err(path, 3, f"Units={units!r} is not supported; known units {sorted(TRC_UNITS)}")
    scale = TRC_UNITS[units]
    head = lines[3].split("\t")
    if len(head) < 2 or head[0].strip() != "Frame#" or head[1].strip() != "Time":
        raise _err(path, 4, "expected 'Frame#<tab>Time<tab>marker names...'")
    names = [s.strip() for s in head[2:] if s.strip()]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise _err(path, 4, f"duplicate marker names {dup}")
    n_declared = meta.get("NumMarkers")
    if n_declared is not None and n_declared.isdigit() and int(n_declared) != len(names):
        raise _err(path, 4, f"{len(names)} marker names but the header says NumMarkers={n_declared}")
    nm = len(names)
    width = 2 + 3 * nm
    i = 5
    body = lines[i:]
    last = max((k for k, s in enumerate(body) if s.strip()), default=-1)
    first = next((k for k, s in enumerate(body) if s.strip()), 0)
    data = body[first: last + 1]
    # every field present (no missing marker, no empty line inside): one C call; else line by line
    fast = _fast_rows(data, width) if all(s.strip() for s in data) else None
    if fast is not None:
        frames, times, rows = fast[:, 0], fast[:, 1], fast[:, 2:]
    else:
        frames, times, rows = _trc_rows(path, body[: last + 1], i, names, width)
    pos = np.asarray(rows, dtype=float).reshape(len(rows), nm, 3) * scale
    n_frames = meta.get("NumFrames")
    if n_frames is not None and n_frames.isdigit() and int(n_frames) != len(rows):
        raise _err(path, 3, f"header says NumFrames={n_frames} but the file has {len(rows)} data rows")
    try:
        rate = float(meta.get("DataRate", "nan"))
    except ValueError:
        raise _err(path, 3, f"DataRate={meta['DataRate']!r} is not a number") from None
    return MarkerData(np.asarray(times), tuple(names), pos, units, rate, np.asarray(frames), meta)


def _trc_rows(path, body, i, names, width):
    """Frame numbers, times and ``(T, 3 nm)`` positions of the data lines ``body`` (starting after
    line ``i``), one line at a time: empty fields are missing markers (NaN); errors name the line."""
    nm = len(names)
    frames, times, rows = [], [], []
    for k, s in enumerate(body):
        ln = i + k + 1
        if not s.strip():
            if not rows:
                continue
            raise _err(path, ln, "empty line inside the data")
        toks = s.split("\t")
        while len(toks) > width and not toks[-1].strip():
            toks.pop()
        if len(toks) > width:
            raise _err(path, ln, f"{len(toks)} fields, expected at most {width} (Frame#, Time, 3 per marker)")
        toks += [""] * (width - len(toks))
        if not toks[0].strip() or not toks[1].strip():
            raise _err(path, ln, "missing frame number or time")
        frames.append(_number(path, ln, 1, "Frame#", toks[0]))
        times.append(_number(path, ln, 2, "Time", toks[1]))
        row = np.full(3 * nm, np.nan)
        for m in range(nm):
            comp = toks[2 + 3 * m: 5 + 3 * m]
            if all(c.strip() for c in comp):
                for a in range(3):
                    col = 3 + 3 * m + a
                    row[3 * m + a] = _number(path, ln, col, f"{names[m]} {'XYZ'[a]}", comp[a])
        rows.append(row)
    return frames, times, rows


def write_trc(path, markers: MarkerData, units: str = "mm") -> None:
    """Write :class:`MarkerData` (positions in metres) as ``.trc`` in ``units``; NaN = empty fields."""
    path = os.fspath(path)
    if units not in TRC_UNITS:
        raise ValueError(f"units must be one of {sorted(TRC_UNITS)}, got {units!r}")
    time = np.asarray(markers.time, dtype=float).reshape(-1)
    pos = np.asarray(markers.positions, dtype=float)
    names = list(markers.names)
    if pos.shape != (time.shape[0], len(names), 3):
        raise ValueError(f"positions must have shape (T, nm, 3) = ({time.shape[0]}, {len(names)}, 3), got {pos.shape}")
    for n in names:
        if not n or "\t" in n or "\n" in n:
            raise ValueError(f"marker name {n!r} is empty or contains a tab/newline")
    rate = markers.rate
    if rate is None or not np.isfinite(rate):
        rate = 1.0 / float(np.median(np.diff(time))) if time.shape[0] > 1 else 1.0
    frame = markers.frame if markers.frame is not None else np.arange(1, time.shape[0] + 1)
    scaled = pos / TRC_UNITS[units]
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
        out.append("\t".join(cells))
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")
