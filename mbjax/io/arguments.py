"""Keyword arguments of the tool functions and writers checked up front: numbers, counts, name
lists and output folders, with errors naming the function, the argument and the value."""

from __future__ import annotations

import numbers
import os

from .._name_lists import name_list  # noqa: F401  (the one rule, re-exported for the tools)


def real_number(value, name: str, where: str) -> float:
    """``value`` as a float (a real 0-d array too); a string, bool or other non-number is refused
    naming ``where`` and ``name``."""
    if getattr(value, "ndim", None) == 0 and getattr(getattr(value, "dtype", None), "kind", None) in ("i", "u", "f"):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__} {value!r}"
                        + (f"; write {name}={value.strip()}" if isinstance(value, str) and _parses(value) else ""))
    return float(value)


def _parses(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def positive_int(value, name: str, where: str) -> int:
    """``value`` as an int >= 1; a bool, float, string or value < 1 is refused."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{where}: {name} must be a positive integer, got {value!r}")
    return int(value)


def require_folder(path, where: str) -> str:
    """``path`` as a string; its folder must exist (a writer does not make it), else an error naming it."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{where}: cannot write {path!r}: the folder {folder!r} does not exist; create "
                                "it first (os.makedirs) or give a path in an existing folder")
    return path
