"""One warning per eager call for a pose far outside the coordinate ranges, naming the public function."""

from __future__ import annotations

import contextlib
import functools
import warnings

import jax

from .._checks import checks_enabled
from .._ranges import CoordinateRangeWarning, warn_far_outside_ranges


@contextlib.contextmanager
def pose_warning(model, q, where: str):
    """Warn (:class:`CoordinateRangeWarning`, naming ``where``) when a concrete ``q`` lies far outside the
    model's coordinate ranges, and keep the public functions called inside the block from warning again.
    Under ``jit``/``vmap`` (a traced ``q``) or with checks off it does nothing."""
    info = getattr(model, "osim", None)
    ranges = (getattr(info, "lower", None), getattr(info, "upper", None))
    if not checks_enabled() or any(isinstance(x, jax.core.Tracer) for x in (q, *ranges)):
        yield  # traced (a pose, or ranges of a model being differentiated): nothing to warn about now
        return
    warn_far_outside_ranges(model, q, where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoordinateRangeWarning)
        yield


def warns_for_pose(fn):
    """``fn(model, q, ...)`` inside :func:`pose_warning` (named after ``fn``)."""

    @functools.wraps(fn)
    def public(model, q, *args, **kwargs):
        with pose_warning(model, q, fn.__name__):
            return fn(model, q, *args, **kwargs)

    return public
