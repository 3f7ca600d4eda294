"""Output files checked before a tool computes: the folder made, the file tried for writing."""

from __future__ import annotations

import os


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
