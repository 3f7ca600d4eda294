"""OpenSim ``.mot``/``.sto`` tables (NumPy, host side).

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
lines (the Storage name and free text) are kept in ``metadata["name"]`` / ``metadata["description"]``;
``metadata["source_file"]`` is the path the table was read from (for messages; never written back).
``inDegrees`` is read as OpenSim reads it (``yes``/``no`` in any case; absent = ``no``, ``Storage``'s default);
other values (``true``, ``1``, ...) are refused, as OpenSim would read them as radians.
The first column must be labelled ``time`` and no label may repeat; times must be finite and
increase (a repeated time is refused in files OpenSim reads as a ``TimeSeriesTable``, warned about
in ``Storage`` files, where OpenSim's RRA and CMC write one); the writers refuse what the readers do.
Column labels are split as OpenSim splits them: at any whitespace in ``version=1`` files with
``nRows``/``nColumns`` (``Storage``'s own reader), at tabs otherwise (``STOFileAdapter``, empty labels
dropped, an empty data field read as NaN with a warning).

Malformed input raises ``ValueError`` naming the file, the 1-based line and, for a bad number, the
1-based column and its label.  Numbers are ASCII decimal or exponent notation, or NaN; an infinite
data cell (``inf``, or a number past the double range) is refused, as OpenSim's two readers read it as
different values.

``.trc`` marker files are read and written by :mod:`~mbjax.io.trc`, coordinates converted to and from
tables by :mod:`~mbjax.io.coordinate_tables`, output paths checked by :mod:`~mbjax.io.output_paths`;
their names are importable from here too.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ._table_text import _check_times, _data_line, _err, _number, _read_lines
from .coordinate_tables import _rotational, coordinates_from_table, table_from_coordinates
from .output_paths import OutputPathError, cannot_write, prepare_output
from .arguments import require_folder
from .table import Table
from .trc import TRC_KEYS, TRC_UNIT_NAMES, TRC_UNITS, MarkerData, read_trc, write_trc

#: this module's names and the ones it re-exports (``_rotational`` for the tools that import it here)
__all__ = ["MarkerData", "OutputPathError", "TRC_KEYS", "TRC_UNITS", "TRC_UNIT_NAMES", "Table", "cannot_write",
           "coordinates_from_table", "prepare_output", "read_storage", "read_trc", "table_from_coordinates",
           "write_storage", "write_trc", "_rotational"]


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


# --------------------------------------------------------------------------------------------
# .mot / .sto
# --------------------------------------------------------------------------------------------


#: the metadata key :func:`read_storage` sets to the file it read (never written to a file)
SOURCE_KEY = "source_file"


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
    in_degrees = _in_degrees(path, meta, meta_line)
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
    inf = np.argwhere(np.isinf(arr[:, 1:]))
    if inf.size:  # OpenSim reads such a cell as NaN (TimeSeriesTable) or 0 / the largest double (Storage)
        k, c = (int(v) for v in inf[0])
        raise _err(path, _data_line(lines, i + 1, k), f"column {c + 2} ({labels[c + 1]!r}) is "
                   f"{float(arr[k, c + 1])} ({len(inf)} infinite value(s) in the file; a number past the double range "
                   "reads as one): OpenSim's readers do not agree on its value; give NaN for a missing value or a "
                   "finite number")
    meta[SOURCE_KEY] = str(path)  # for messages about the table's values; not written back
    return Table(arr[:, 0], tuple(labels[1:]), arr[:, 1:], in_degrees, meta)


def _in_degrees(path, meta, meta_line) -> bool:
    """The header's ``inDegrees`` as OpenSim 4.6 reads it: ``yes`` (any case) is degrees, ``no`` or no
    line radians.  OpenSim reads every other value (``y`` aside) as radians, ``true`` included, so
    such a value is refused by name rather than given a meaning the file's author may not have meant."""
    deg = meta.get("inDegrees", "no").strip()
    if deg.lower() in ("yes", "no"):
        return deg.lower() == "yes"
    reads = "degrees" if deg.lower() == "y" else "radians"
    raise _err(path, meta_line["inDegrees"], f"inDegrees={meta['inDegrees']!r}, expected yes or no: OpenSim 4.6 "
               f"would read this file as {reads} (it reads yes or y, in any case, as degrees and any other value as "
               "radians); write inDegrees=yes (values in degrees) or inDegrees=no (radians)")


def _check_labels(where, labels, refuse: bool = False):
    """OpenSim's rules for the label line: the first column is ``time`` (``STOFileAdapter`` refuses
    another label; ``Storage`` reads the first column as time whatever its label), and each label is
    used once (OpenSim's tools would use one of two equal labels and never the other, save an
    ``ExternalForce`` identifier, which takes its columns by position).  A file that breaks them is
    read with a warning naming the labels (OpenSim reads it too; a tool that looks a coordinate up by
    a duplicated label refuses it there); a writer (``refuse``) never writes one."""
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
        problems.append(f"duplicate column label(s) {shown}: a tool that looks a column up by this label (a "
                        "coordinate's) refuses it, and an ExternalForce identifier takes the columns by position, "
                        "as OpenSim does; give each column its own label")
    for problem in problems:
        if refuse:
            raise ValueError(f"{where}: {problem}")
        warnings.warn(f"{where}: {problem}", stacklevel=4)


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


def _check_metadata(path, meta) -> None:
    """Refuse metadata that would not read back: a key or value with a line break (it would end the
    header line early), a key holding ``=`` or empty, a name or description line read as ``key=value``
    or as ``endheader``."""
    for k, v in meta.items():
        k, v = str(k), str(v)
        if k in ("name", "description"):
            lines = v.split("\n") if k == "description" else [v]
            bad = next((s for s in lines if "=" in s or "\r" in s or s.strip().lower() == "endheader"), None)
            if bad is not None or (k == "name" and "\n" in v):
                raise ValueError(f"write_storage: {path}: metadata[{k!r}] = {v!r} would not read back: a header "
                                 "line holding '=', reading 'endheader' or breaking the name; remove it")
            continue
        if not k.strip() or "=" in k or any(c in k + v for c in "\n\r"):
            raise ValueError(f"write_storage: {path}: metadata key {k!r} (value {v!r}) would not read back: keys "
                             "must be non-empty without '=', keys and values without line breaks; remove them")


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
    path = require_folder(path, "write_storage")
    if format is None:
        format = "storage" if path.lower().endswith(".mot") else "table"
    if format not in ("storage", "table"):
        raise ValueError(f"format must be 'storage' or 'table', got {format!r}")
    if isinstance(table.labels, str):
        raise ValueError(f"write_storage: {path}: labels must be a tuple of column labels, got the string "
                         f"{table.labels!r}")
    labels = list(table.labels)
    for lab in labels:
        if not isinstance(lab, str):
            raise ValueError(f"write_storage: {path}: column label {lab!r} is not a string ({type(lab).__name__})")
        if not lab or any(c.isspace() for c in lab):
            raise ValueError(f"column label {lab!r} is empty or contains whitespace")
    if not isinstance(table.in_degrees, (bool, np.bool_)):
        raise ValueError(f"write_storage: {path}: in_degrees must be a bool, got {table.in_degrees!r}")
    if np.iscomplexobj(table.time) or np.iscomplexobj(table.data):
        imag = np.imag(np.asarray(table.data))
        who = [lab for c, lab in enumerate(labels) if imag.ndim == 2 and c < imag.shape[1] and imag[:, c].any()]
        raise ValueError(f"write_storage: {path}: {'column ' + repr(who[0]) + ' has' if who else 'time or data have'}"
                         " complex values: give real numbers")
    time = np.asarray(table.time, dtype=float).reshape(-1)
    data = np.asarray(table.data, dtype=float)
    if data.ndim != 2:
        raise ValueError(f"write_storage: {path}: data must be 2-D (T, n), got shape {data.shape}")
    if data.shape[1] != len(labels):
        raise ValueError(f"write_storage: {path}: {len(labels)} labels for {data.shape[1]} data columns (data has "
                         f"shape {data.shape}; labels exclude the time column)")
    if data.shape[0] != time.shape[0]:
        raise ValueError(f"write_storage: {path}: time has {time.shape[0]} entries but data has {data.shape[0]} rows "
                         f"(data shape {data.shape})")
    _check_labels(path, ["time"] + labels, refuse=True)
    _check_times(path, time, repeats_refused=format == "table")
    inf = np.argwhere(np.isinf(data))
    if inf.size:
        k, c = (int(v) for v in inf[0])
        raise ValueError(f"write_storage: {path}: column {labels[c]!r} is {float(data[k, c])} at row {k + 1} (time "
                         f"{float(time[k])!r}); OpenSim reads Inf back as NaN: give NaN for a missing value or a "
                         "finite number")
    meta = dict(table.metadata or {})
    skip = {"name", "description", "version", "nRows", "nColumns", "inDegrees", "DataType", "OpenSimVersion",
            SOURCE_KEY}
    if name:
        meta["name"] = name
    header = skip - {"name", "description"} if format == "storage" else skip
    _check_metadata(path, {k: v for k, v in meta.items() if k not in header})
    out = []
    if format == "storage":
        out.append(meta.get("name") or "mbjax")
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
    try:
        with open(path, "w") as fh:
            fh.write("\n".join(out) + "\n")
    except OSError as e:  # a full disk names no file: name it and what was written
        what = f"the OpenSim Storage {out[0]!r}" if format == "storage" else "the .sto table"
        raise type(e)(f"write_storage: cannot write {path!r} ({what}, {len(labels)} columns x {time.shape[0]} "
                      f"rows): {e.strerror or e}") from None
