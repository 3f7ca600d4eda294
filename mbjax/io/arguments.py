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


def time_range(value, where: str, name: str = "time_range"):
    """``value`` as ``(start, end)`` floats in seconds (None kept: the whole table); anything else
    (one number, a string, three values) is refused naming ``where`` and ``name``."""
    if value is None:
        return None
    try:
        pair = [real_number(v, name, where) for v in value] if not isinstance(value, (str, bytes)) else None
    except TypeError:
        pair = None
    if pair is None or len(pair) != 2:
        raise TypeError(f"{where}: {name} must be (start, end) in seconds, got {value!r}")
    return pair[0], pair[1]


def refuse_setup_keywords(function, kwargs, owned, instead: str) -> None:
    """Refuse keyword arguments of a ``*_from_setup`` function that its setup file sets (``owned``:
    keyword -> the setup element that gives it) with a ``TypeError`` naming both and the function
    to call ``instead``."""
    given = [k for k in kwargs if k in owned]
    if given:
        shown = ", ".join(f"{k}= ({owned[k]})" for k in given)
        raise TypeError(f"{function}: {shown} is set by the setup file, not by a keyword argument: edit the "
                        f"setup file, or call {instead} with the values")
