"""Where the project's reference data live (``shared/data`` beside the checkout; not shipped).

Search order: ``$MBJAX_SHARED_DATA``, ``<checkout>/../shared/data``, ``/work/shared/data``.  Callers
that need a file which is absent raise (or, in tests, skip) with the path they looked for.
"""

from __future__ import annotations

import os
import pathlib


def shared_data_dir() -> pathlib.Path:
    candidates = []
    if os.environ.get("MBJAX_SHARED_DATA"):
        candidates.append(pathlib.Path(os.environ["MBJAX_SHARED_DATA"]))
    candidates.append(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data")
    candidates.append(pathlib.Path("/work/shared/data"))
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[-1]


def shared_data(*parts: str) -> str:
    """Path (as ``str``) of a file under the shared data directory."""
    return str(shared_data_dir().joinpath(*parts))
