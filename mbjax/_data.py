"""Where the project's reference data live (a ``shared/data`` folder; never shipped in the wheel).

The folder holds files mbjax may not redistribute (the MoBL-ARMS model, SimTK non-commercial
licence) and published numbers the tests compare with.  Search order:

1. ``$MBJAX_SHARED_DATA`` (point it at the folder that holds ``osim/MOBL_ARMS_fixed_41-ignoreTendonCompl.osim``);
2. in a source checkout (a directory with ``pyproject.toml`` above the package), the nearest
   ``shared/data`` beside the checkout or one of its parents.

No machine-specific fallback: when neither exists, :func:`shared_data` still returns the path it
would use, and callers that need an absent file raise (or, in tests, skip) naming that path and
``MBJAX_SHARED_DATA``.
"""

from __future__ import annotations

import os
import pathlib

ENV = "MBJAX_SHARED_DATA"


def _checkout_candidates() -> list[pathlib.Path]:
    pkg = pathlib.Path(__file__).resolve().parent
    checkout = pkg.parent
    if not (checkout / "pyproject.toml").is_file():  # an installed wheel: no checkout to look beside
        return []
    return [p / "shared" / "data" for p in checkout.parents]


def shared_data_dir() -> pathlib.Path:
    """The shared data folder: ``$MBJAX_SHARED_DATA`` or a ``shared/data`` beside the source checkout."""
    if os.environ.get(ENV):
        return pathlib.Path(os.environ[ENV])
    candidates = _checkout_candidates()
    for c in candidates:
        if c.is_dir():
            return c
    return candidates[0] if candidates else pathlib.Path("shared") / "data"


def shared_data(*parts: str) -> str:
    """Path (as ``str``) of a file under the shared data folder (it may not exist)."""
    return str(shared_data_dir().joinpath(*parts))


def missing_reason(path: str) -> str:
    """The skip / error reason for an absent shared file."""
    return f"{path} not found (set {ENV} to the folder holding the project's shared data)"
