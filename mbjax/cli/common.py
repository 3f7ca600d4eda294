"""What every ``mbjax`` command shares: exit statuses, the usage and failure errors, argument
parsing helpers, output checks and the MODEL argument (a file, a shipped example or a built-in)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import warnings

import numpy as np

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


_KEYWORD_FLAGS = {"ignore_wrapping=True": "--ignore-wrapping", "wrapping='opensim'": "--wrapping opensim"}


class UsageError(Exception):
    """The command line is wrong (exit status 2)."""


class Failure(Exception):
    """The command line is right but the work failed (exit status 1)."""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("mbjax")
    except Exception:  # not installed (e.g. run from a checkout on PYTHONPATH)
        return "unknown (not installed)"


def _number(text: str, where: str) -> float:
    """A finite float, or a usage error naming ``where`` (the flag and its argument)."""
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{where}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise UsageError(f"{where}: {text.strip()!r} is not a finite number")
    return value


def _positive_number(text: str) -> float:
    """A finite positive float (argparse type: a bad value is a usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def _not_a_folder(path: str) -> str | None:
    """The nearest existing folder above ``path`` when it is a file (so ``path`` cannot be made), else None."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            return None
        parent = up
    return parent if parent and not os.path.isdir(parent) else None


def show_warnings_once():
    """A ``warnings.showwarning`` printing each message once, as ``mbjax: warning: ...`` without
    the source line that raised it."""
    import sys

    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if text not in seen:
            seen.add(text)
            print(f"mbjax: warning: {text}", file=sys.stderr, flush=True)

    return show


@contextlib.contextmanager
def warnings_once():
    """Within the block, each warning (its text and category) is shown once, however many places
    raise it, through whatever ``warnings.showwarning`` and filters were in force (``error``
    filters still raise; a recording ``catch_warnings`` still records the first)."""
    shown = warnings.showwarning
    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        key = (str(message), category)
        if key not in seen:
            seen.add(key)
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _parse_assign(text: str, flag: str):
    if "=" not in text:
        raise UsageError(f"{flag} expects COORD=..., got {text!r}")
    name, value = text.split("=", 1)
    if not name.strip():
        raise UsageError(f"{flag} {text!r}: missing coordinate name before '='")
    return name.strip(), value.strip()


def _grid_spec(name: str, spec: str):
    """``(start, stop, step, n)`` of ``--vary NAME=START:STOP:STEP`` in the typed units, n without allocating."""
    where = f"--vary {name}={spec}"
    parts = spec.split(":")
    if len(parts) != 3:
        raise UsageError(f"{where}: expected START:STOP:STEP")
    start, stop, step = (_number(p, f"{where} ({w})") for p, w in zip(parts, ("START", "STOP", "STEP")))
    if step == 0 or (stop - start) / step < 0:
        raise UsageError(f"{where}: STEP must move from START towards STOP")
    x = (stop - start) / step
    n = math.floor(x + 1e-9 + 1e-12 * x) + 1  # STOP included when on the grid up to rounding
    return start, stop, step, n


def _check_writable(path: str, flag: str):
    """Refuse an output path that cannot be written, before any work (nothing is created)."""
    if not path:
        raise UsageError(f"{flag}: empty file name")
    from ..io.output_paths import cannot_write

    if os.path.isdir(path):
        raise UsageError(f"{flag} {path}: is a directory, expected a file name")
    parent = os.path.dirname(os.path.abspath(path))
    blocked = _not_a_folder(path)
    if blocked is not None:
        raise UsageError(f"{flag} {path}: {blocked} is a file, not a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"{flag} {path}: directory {parent} does not exist")
    why = cannot_write(path)
    if why is not None:
        raise UsageError(f"{flag} {path}: cannot be written: {why}")


def _check_plot_format(path: str):
    from matplotlib.figure import Figure

    formats = Figure().canvas.get_supported_filetypes()
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in formats:
        raise UsageError(f"--plot {path}: unknown image format {ext!r}; use one of {', '.join(sorted(formats))}")


def _library_message(e: Exception) -> tuple[str, bool]:
    """The library's message with Python keywords replaced by their flags; whether one was replaced."""
    text, hit = str(e), False
    for kw, flag in _KEYWORD_FLAGS.items():
        if kw in text:
            text, hit = text.replace(kw, flag), True
    return text, hit


from ..models.opensim_examples import EXAMPLES as _EXAMPLES  # noqa: E402


BUILTIN = tuple(_EXAMPLES) + ("shoulder", "shoulder:degroot_brand")


def _osim_path(spec: str) -> str | None:
    """The ``.osim`` file a MODEL argument names (a shipped example by name, e.g. ``arm26``), or None for a built-in."""
    from ..models.opensim_examples import EXAMPLES, model_path

    if spec in EXAMPLES:
        return model_path(spec)
    if spec.startswith("shoulder") and not os.path.exists(spec):
        return None
    if os.path.isdir(spec):
        raise UsageError(f"MODEL {spec}: is a directory, expected an .osim file")
    if spec.endswith(".osim") or os.path.exists(spec):
        if not os.path.exists(spec):
            raise Failure(f"MODEL {spec}: no such file")
        return spec
    raise UsageError(f"unknown model {spec!r} (an .osim file, or one of {', '.join(BUILTIN)})")


def load_model(spec: str, ignore_wrapping: bool = False, wrapping: str = "opensim"):
    """A model from an ``.osim`` path or a built-in name; library errors name the CLI flags.
    ``wrapping``: OpenSim's algorithm or the smooth option (:func:`mbjax.io.load_osim`)."""
    path = _osim_path(spec)
    try:
        if path is None:
            from ..models.shoulder import RHYTHMS, shoulder_model

            rhythm = spec.split(":", 1)[1] if ":" in spec else "holzbaur"
            if spec not in ("shoulder", "shoulder:") and rhythm not in RHYTHMS:
                raise UsageError(f"unknown model {spec!r}; shoulder rhythms are {', '.join(RHYTHMS)}")
            return shoulder_model(rhythm)
        from ..opensim.model.osim import load_osim

        return load_osim(path, ignore_wrapping=ignore_wrapping, wrapping=wrapping)
    except (ValueError, NotImplementedError) as e:
        text, usage = _library_message(e)
        raise (UsageError if usage else Failure)(text) from None


def default_pose(model):
    info = model.osim
    if info is not None:
        return np.array(info.default, dtype=float)
    return np.zeros(model.n_coordinates)
