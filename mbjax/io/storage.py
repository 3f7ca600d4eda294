"""Minimal writer of OpenSim Storage files (.sto / .mot, version 1, tab-separated)."""

from __future__ import annotations

import numpy as np


def write_storage(path, times, data, labels, *, name: str = "states", in_degrees: bool = False) -> str:
    """Write ``times (T,)`` and ``data (T, k)`` with column ``labels`` (k names, ``time`` added)
    in OpenSim's Storage format (header ``name``, ``version=1``, ``nRows``, ``nColumns``,
    ``inDegrees``, ``endheader``); returns ``path``."""
    times = np.asarray(times, float).reshape(-1)
    data = np.asarray(data, float).reshape(times.shape[0], -1)
    if data.shape[1] != len(labels):
        raise ValueError(f"{data.shape[1]} data columns but {len(labels)} labels")
    with open(path, "w") as fh:
        fh.write(f"{name}\nversion=1\nnRows={times.shape[0]}\nnColumns={data.shape[1] + 1}\n")
        fh.write(f"inDegrees={'yes' if in_degrees else 'no'}\nendheader\n")
        fh.write("\t".join(["time", *labels]) + "\n")
        for t, row in zip(times, data):
            fh.write("\t".join(repr(float(v)) for v in (t, *row)) + "\n")
    return str(path)
