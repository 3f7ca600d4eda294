"""Execute every notebook in ``notebooks/`` in place, so the repository stores their outputs and figures.

Run: ``.venv/bin/python tools/refresh_notebooks.py [NAME ...]`` (all notebooks by default).  The test
suite executes the same notebooks (``pytest --nbmake notebooks``) without writing them back.
"""

from __future__ import annotations

import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]


def refresh(path: pathlib.Path, timeout: int = 1800) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    if argv:
        paths = [p for p in paths if any(a in p.name for a in argv)]
    for k, path in enumerate(paths, 1):
        print(f"[{k}/{len(paths)}] {path.name} ...", flush=True)
        print(f"    done in {refresh(path):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
