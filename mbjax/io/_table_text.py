"""Helpers shared by the text data-file readers and writers (``.mot``/``.sto`` in
:mod:`~mbjax.io.storage`, ``.trc`` in :mod:`~mbjax.io.trc`): errors naming the file and line, numbers
read with their column named, the file's lines, the time-column checks."""

from __future__ import annotations

import os
import re
import warnings

import numpy as np


def _err(path, line: int, msg: str) -> ValueError:
    return ValueError(f"{path}:{line}: {msg}")


#: the numbers OpenSim's readers read: ASCII decimal or exponent notation, NaN and infinity spellings
#: (Python's ``float`` also reads ``1_0`` and non-ASCII digits, which OpenSim does not)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?i:nan|inf|infinity)")


def _number(path, line: int, col: int, label: str, tok: str) -> float:
    try:
        if not _NUMBER.fullmatch(tok):
            raise ValueError(tok)
        return float(tok)
    except ValueError:
        raise _err(path, line, f"column {col} ({label!r}): cannot read {tok!r} as a number (OpenSim reads ASCII "
                   "decimal or exponent notation, such as -0.5 or 1.5e-3)") from None


def _read_lines(path) -> list[str]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte order mark (some editors write one) dropped
    except UnicodeDecodeError as e:
        # lab software on Windows writes its own code page (marker names such as "Mäker"): every byte is
        # a Latin-1 character, which is what OpenSim's byte-wise reader reads too
        line = raw[:e.start].count(b"\n") + 1
        warnings.warn(f"{path}:{line}: the file is not UTF-8 (byte 0x{raw[e.start]:02x}); read as Latin-1 "
                      "(Windows-1252): check the names on that line", stacklevel=3)
        text = raw.decode("latin-1")
    if text.startswith("\xef\xbb\xbf"):  # a byte order mark decoded as Latin-1 once already
        text = text[3:]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


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


def _data_line(lines, start, k) -> int:
    """The 1-based line number of the ``k``-th (0-based) non-empty line from 0-based line ``start``."""
    seen = -1
    for i in range(start, len(lines)):
        if lines[i].strip():
            seen += 1
            if seen == k:
                return i + 1
    return len(lines)
