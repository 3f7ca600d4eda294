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
The first column must be labelled ``time`` and no label may repeat; times must be finite and
increase (a repeated time is refused in files OpenSim reads as a ``TimeSeriesTable``, warned about
in ``Storage`` files, where OpenSim's RRA and CMC write one); the writers refuse what the readers do.
Column labels are split as OpenSim splits them: at any whitespace in ``version=1`` files with
``nRows``/``nColumns`` (``Storage``'s own reader), at tabs otherwise (``STOFileAdapter``, empty labels
dropped, an empty data field read as NaN with a warning).

``.trc`` (``OpenSim::TRCFileAdapter``): a ``PathFileType`` line, the 8 metadata keys ``DataRate ...
OrigNumFrames`` and their values, the marker-name line ``Frame# Time m1 (tab) (tab) m2``, the
``X1 Y1 Z1`` line, then at least one row ``frame time x y z ...``.  Read as ``TRCFileAdapter`` reads
it: fields are split at tabs and stripped of spaces, empty fields are dropped from the header lines
(double tabs and padded values read), one trailing tab on a row is dropped, each row must then hold
exactly ``2 + 3 * NumMarkers`` fields (a short row is refused, never read as missing markers), and a
marker with any empty component (or ``NaN``) is missing (NaN); an infinite coordinate is refused.
``NumFrames`` disagreeing with the rows and component labels beyond the markers are warned about
(OpenSim ignores both).  Where OpenSim reads
silently what mbjax refuses (a number it cannot parse becomes NaN, rows after an empty line are
dropped), the error names the line.  Positions are converted **explicitly to metres** from the
file's ``Units`` (``mm``, ``cm``, ``m`` and the spellings OpenSim's ``Units`` reads);
:attr:`MarkerData.units` keeps the file's unit.

Malformed input raises ``ValueError`` naming the file, the 1-based line and, for a bad number, the
1-based column and its label.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import NamedTuple

import numpy as np

#: metres per unit of a .trc ``Units`` field
TRC_UNITS = {"mm": 1e-3, "cm": 1e-2, "m": 1.0}
#: the ``Units`` spellings OpenSim's ``Units`` class reads, by unit
TRC_UNIT_NAMES = {n: u for u, names in {"mm": ("mm", "MM", "millimeters", "MILLIMETERS"),
                                        "cm": ("cm", "CM", "centimeters", "CENTIMETERS"),
                                        "m": ("m", "M", "meters", "METERS")}.items() for n in names}
#: the metadata keys ``TRCFileAdapter`` requires on line 2, in order
TRC_KEYS = ("DataRate", "CameraRate", "NumFrames", "NumMarkers", "Units", "OrigDataRate",
            "OrigDataStartFrame", "OrigNumFrames")


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
    n_col = _header_count(path, meta, meta_line, "nColumns")
    n_row = _header_count(path, meta, meta_line, "nRows")
    # OpenSim reads version<=1 files with nRows/nColumns with Storage's own parser (labels split at
    # any whitespace), others with STOFileAdapter (labels split at tabs, empty labels dropped)
    legacy = _version(meta) <= 1 and bool(n_row or n_col)
    if legacy or "\t" not in lines[i]:
        labels = lines[i].split()
    else:
        labels = [t for t in (s.strip() for s in lines[i].split("\t")) if t]
    label_line = i + 1
    _check_labels(f"{path}:{label_line}", labels)
    if n_col is not None and n_col != len(labels):
        raise _err(path, label_line, f"{len(labels)} column labels but the header says nColumns={n_col} "
                   f"(line {meta_line['nColumns']})")
    rows = _fast_rows([s for s in lines[i + 1:] if s.strip()], len(labels))
    if rows is None:
        rows = _storage_rows(path, lines, i, labels, label_line, tabs=not legacy)
    if n_row is not None and n_row != len(rows):
        raise _err(path, meta_line["nRows"], f"header says nRows={n_row} but the file has {len(rows)} rows")
    arr = np.asarray(rows, dtype=float).reshape(len(rows), len(labels))
    _check_times(path, arr[:, 0], lambda k: _data_line(lines, i + 1, k), repeats_refused=not legacy)
    return Table(arr[:, 0], tuple(labels[1:]), arr[:, 1:], in_degrees, meta)


def _check_labels(where, labels, refuse: bool = False):
    """OpenSim's rules for the label line: the first column is ``time`` (``STOFileAdapter`` refuses
    another label; ``Storage`` reads the first column as time whatever its label), and each label is
    used once (OpenSim's tools would use one of two equal labels and never the other).  A file that
    breaks them is read with a warning naming the labels (OpenSim reads it too; a tool that uses a
    duplicated label refuses it there); a writer (``refuse``) never writes one."""
    problems = []
    if labels[0] != "time":
        later = [c + 1 for c, lab in enumerate(labels) if lab == "time"]
        if later:
            problems.append(f"column {later[0]} is labelled 'time' but OpenSim reads the first column "
                            f"({labels[0]!r}) as time: move the time column first")
        else:
            problems.append(f"the first column label is {labels[0]!r}, expected 'time': OpenSim reads the first "
                            "column as time (its newer reader refuses another label); label it 'time'")
    seen: dict[str, list[int]] = {}
    for c, lab in enumerate(labels):
        seen.setdefault(lab, []).append(c + 1)
    dup = {lab: cols for lab, cols in seen.items() if len(cols) > 1}
    if dup:
        shown = "; ".join(f"{lab!r} (columns {', '.join(map(str, cols))})" for lab, cols in dup.items())
        problems.append(f"duplicate column label(s) {shown}: a tool would use only one of the columns; "
                        "rename or remove the others")
    for problem in problems:
        if refuse:
            raise ValueError(f"{where}: {problem}")
        warnings.warn(f"{where}: {problem}", stacklevel=4)


def _check_times(path, time, line=None, repeats_refused=True):
    """Times must be finite and increase; ``line(k)`` is the file line of row ``k`` (0-based) where
    known.  A repeated time is refused where OpenSim refuses it (``TimeSeriesTable``), else warned
    about (``Storage`` reads it, and OpenSim's RRA and CMC write their last row twice)."""
    time = np.asarray(time, dtype=float)

    def at(k):
        return f"{path}:{line(k)}" if line is not None else f"{path}"

    bad = np.flatnonzero(~np.isfinite(time))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{at(k)}: time {float(time[k])!r} at row {k + 1} is not a finite number")
    d = np.diff(time)
    back = np.flatnonzero(d < 0)
    if back.size:
        k = int(back[0]) + 1
        raise ValueError(f"{at(k)}: time {float(time[k])!r} at row {k + 1} does not increase from row {k}'s "
                         f"{float(time[k - 1])!r}: times must increase (OpenSim's tools refuse the file too)")
    same = np.flatnonzero(d == 0) + 1
    if same.size and repeats_refused:
        k = int(same[0])
        raise ValueError(f"{at(k)}: time {float(time[k])!r} at row {k + 1} repeats row {k}'s: times must "
                         "increase strictly (OpenSim refuses the file too); remove the repeated row")
    if same.size:
        shown = ", ".join(f"row {int(k) + 1}{f' (line {line(int(k))})' if line else ''} time {float(time[k])!r}"
                          for k in same[:5])
        warnings.warn(f"{path}: {same.size} row(s) repeat the previous row's time, kept as OpenSim's Storage keeps "
                      f"them: {shown}{' ...' if same.size > 5 else ''}; OpenSim's tools and mbjax's need strictly "
                      "increasing times: remove the repeated rows", stacklevel=3)


def _header_count(path, meta, meta_line, key):
    """The header's integer ``key`` (``nRows``/``nColumns``), ``None`` when absent; an error naming
    the line when it is not an integer."""
    if key not in meta:
        return None
    try:
        return int(meta[key])
    except ValueError:
        raise _err(path, meta_line[key], f"{key}={meta[key]!r} is not an integer") from None


def _version(meta) -> int:
    """The header's ``version`` as OpenSim's ``atoi`` reads it (0 when absent)."""
    digits = ""
    for c in meta.get("version", "").strip():
        if not (c.isdigit() or (c in "+-" and not digits)):
            break
        digits += c
    try:
        return int(digits)
    except ValueError:
        return 0


def _storage_rows(path, lines, i, labels, label_line, tabs=False) -> list[list[float]]:
    """The data rows after the label line ``i``, one line at a time (errors name line and column).

    Values are whitespace-separated; with ``tabs`` (files OpenSim reads with ``STOFileAdapter``) a
    row of tab-separated fields may leave fields empty, which OpenSim reads as NaN (warned here)."""
    rows = []
    empty = []
    for j in range(i + 1, len(lines)):
        s = lines[j].strip()
        if not s:
            continue
        toks = s.split()
        if len(toks) != len(labels) and tabs:
            fields = lines[j].split("\t")
            if fields[-1] == "":
                fields.pop()
            fields = [f.strip() for f in fields]
            if len(fields) == len(labels) and fields[0]:
                empty += [(j + 1, c + 1, labels[c]) for c, f in enumerate(fields) if not f]
                toks = [f or "nan" for f in fields]
        if len(toks) != len(labels):
            raise _err(path, j + 1, f"{len(toks)} values, expected {len(labels)} (one per column label on "
                       f"line {label_line})")
        rows.append([_number(path, j + 1, c + 1, labels[c], t) for c, t in enumerate(toks)])
    if empty:
        shown = ", ".join(f"line {ln} column {c} ({lab!r})" for ln, c, lab in empty[:5])
        warnings.warn(f"{path}: {len(empty)} empty field(s) read as NaN, as OpenSim reads them: {shown}"
                      + (" ..." if len(empty) > 5 else ""), stacklevel=3)
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
    _check_labels(path, ["time"] + labels, refuse=True)
    _check_times(path, time, repeats_refused=format == "table")
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


def table_from_coordinates(model, time, q, in_degrees: bool = True, name: str = "Coordinates",
                           every_coordinate: bool = True) -> Table:
    """A :class:`Table` of coordinates ``q (T, nq)`` labelled by coordinate name, rotational ones in
    degrees when ``in_degrees``, as OpenSim's IK tool writes its ``.mot``.

    For an imported OpenSim model with ``every_coordinate``, the columns are every coordinate of the
    model in its ``CoordinateSet`` (file) order, as the IK tool writes them: coupled coordinates
    from their coupler functions of ``q``, locked ones at their locked value
    (:mod:`mbjax.io.osim_coordinates`); OpenSim reading the file back gets the full pose."""
    q = np.asarray(q, dtype=float)
    info = model.extras.get("osim") if hasattr(model, "extras") else None
    if in_degrees and info is None:
        raise ValueError("in_degrees needs OpenSim motion types (model.extras['osim'])")
    if every_coordinate and info is not None and hasattr(info, "other_names"):
        import jax

        from .osim_coordinates import coordinate_names, coordinate_values

        labels, kinds = coordinate_names(model)
        skipped = [n for n, m in zip(info.other_names, info.other_maps or ()) if m is None]
        if skipped:  # eliminated by a PointOnLineConstraint: not written, named
            warnings.warn(f"coordinates {skipped} (eliminated by a PointOnLineConstraint) are not written: "
                          "OpenSim reading the file assembles them from the constraint", stacklevel=2)
            keep = [i for i, n in enumerate(labels) if n not in skipped]
            labels, kinds = tuple(labels[i] for i in keep), tuple(kinds[i] for i in keep)
        values = np.asarray(jax.vmap(lambda x: coordinate_values(model, x, labels))(q.reshape(-1, q.shape[-1])))
        rot = np.array([k == "rotational" for k in kinds])
        order = _coordinate_set_order(info.source, labels)
        labels, values, rot = tuple(labels[i] for i in order), values[:, order], rot[order]
    else:
        labels, values = tuple(model.coordinate_names), q
        rot = _rotational(model) if in_degrees else None
    if in_degrees:
        values = np.where(rot, np.rad2deg(values), values)
    return Table(np.asarray(time, dtype=float), tuple(labels), values, in_degrees, {"name": name})


def _coordinate_set_order(source, labels) -> list[int]:
    """Indices putting ``labels`` in OpenSim's ``CoordinateSet`` order (:func:`mbjax.io.osim_motion.
    coordinate_order`, read from the model's file); their own order when the file is gone."""
    from .osim_motion import coordinate_order

    try:
        order = coordinate_order(source)
    except (OSError, ValueError):
        return list(range(len(labels)))
    if sorted(order) != sorted(labels):
        return list(range(len(labels)))
    return [list(labels).index(n) for n in order]


class OutputPathError(OSError):
    """An output file a tool cannot write, found before it computes (the CLI's usage error, status 2)."""


def cannot_write(path) -> str | None:
    """Why the file ``path`` cannot be written, or None: a real trial (open for appending, then the
    file removed again if the trial made it), since permission bits do not tell (root, ``/proc``,
    read-only mounts, full disks)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return "is a folder"
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    finally:
        if not existed and os.path.exists(path):
            os.remove(path)
    return None


def prepare_output(path, setup=None, what: str = "output file") -> str:
    """Make ``path``'s folder (as OpenSim's tools make their results directory) and check that the
    file can be written there, before a tool computes anything; errors name ``setup`` and the path."""
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    where = f"{setup}: " if setup is not None else ""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"{where}cannot create the folder {folder!r} for the {what} {path!r}: "
                              f"{e.strerror or e}") from None
    if os.path.isdir(path):
        raise OutputPathError(f"{where}the {what} {path!r} is a folder")
    why = cannot_write(path)
    if why is not None:
        raise OutputPathError(f"{where}cannot write the {what} {path!r}: {why}")
    return path


# --------------------------------------------------------------------------------------------
# .trc
# --------------------------------------------------------------------------------------------


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
    vals = [v for v in _trc_fields(lines[2]) if v]
    if len(keys) != len(vals):
        raise _err(path, 3, f"{len(vals)} header values for {len(keys)} header keys on line 2")
    meta = dict(zip(keys, vals))
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
    try:
        rate = float(meta["DataRate"])
    except ValueError:
        raise _err(path, 3, f"DataRate={meta['DataRate']!r} is not a number") from None
    return MarkerData(np.asarray(times, dtype=float), tuple(names), pos, units, rate,
                      np.asarray(frames, dtype=float), meta)


def _data_line(lines, start, k) -> int:
    """The 1-based line number of the ``k``-th (0-based) non-empty line from 0-based line ``start``."""
    seen = -1
    for i in range(start, len(lines)):
        if lines[i].strip():
            seen += 1
            if seen == k:
                return i + 1
    return len(lines)


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
    if all(all(t) for t in fields):
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
    path = os.fspath(path)
    if units not in TRC_UNITS:
        raise ValueError(f"units must be one of {sorted(TRC_UNITS)}, got {units!r}")
    time = np.asarray(markers.time, dtype=float).reshape(-1)
    pos = np.asarray(markers.positions, dtype=float)
    names = list(markers.names)
    if pos.shape != (time.shape[0], len(names), 3):
        raise ValueError(f"positions must have shape (T, nm, 3) = ({time.shape[0]}, {len(names)}, 3), got {pos.shape}")
    for n in names:
        if not n or "\t" in n or "\n" in n or n != n.strip():
            raise ValueError(f"marker name {n!r} is empty, contains a tab/newline or starts/ends with a space")
    _check_times(path, time)  # read_trc refuses what does not increase strictly, as TRCFileAdapter does
    inf = np.argwhere(np.isinf(pos))
    if inf.size:
        k, m, a = (int(v) for v in inf[0])
        raise ValueError(f"{path}: marker {names[m]!r} {'XYZ'[a]} is {float(pos[k, m, a])} at row {k + 1} (time "
                         f"{float(time[k])!r}): give NaN where a marker is missing")
    rate = markers.rate
    if rate is None or not np.isfinite(rate):
        rate = 1.0 / float(np.median(np.diff(time))) if time.shape[0] > 1 else 1.0
    frame = np.arange(1, time.shape[0] + 1)
    if markers.frame is not None and np.all(np.isfinite(markers.frame)):
        frame = np.asarray(markers.frame)
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
        out.append("\t".join(cells) + "\t")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")
