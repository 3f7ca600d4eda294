"""Public functions that compile themselves when called eagerly.

Every public function takes one pose and is meant to run under ``jax.jit`` / ``jax.vmap``.  Called
eagerly (no outer transformation), JAX would dispatch its hundreds of small operations one by one
and compile each on first use: the first eager ``mass_matrix`` of a two-body model took 5-20 s and
every later call ~0.4 s.  :func:`compiled_when_eager` wraps such a function in
``equinox.filter_jit``: the first eager call traces and compiles the whole function once per model
structure, argument shapes and dtypes, later eager calls (new poses, new parameter values of the
same model) run the cached executable.  Under an outer ``jit``, ``vmap``, ``grad`` the wrapper is
one nested ``jit`` that XLA inlines, so the batch-last ``vmap`` rules behind the function
(:mod:`mbjax._batching`) apply unchanged.

Array-like arguments (lists, tuples of numbers, NumPy arrays, Python floats) are turned into JAX
arrays first, so a new value is a new input, not a new compilation; Python ints and strings stay
static (options such as ``order=2``, body indices and names), and so do NumPy integer and bool
scalars, taken as Python's.  Shape errors still raise at the call (during the trace).
"""

from __future__ import annotations

import functools
import inspect
import numbers

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._body_warnings import warn_implausible_bodies
from ._checks import checks_enabled
from ._model import require_model
from ._ranges import RUNTIME_ERRORS as _RUNTIME_ERRORS
from ._ranges import name_range_violation, warn_far_outside_ranges


def _as_input(x):
    if isinstance(x, (np.integer, np.bool_)):  # a NumPy int (np.argmax, np.where) or bool: an option, as Python's
        return x.item()
    if isinstance(x, np.ndarray) or (isinstance(x, numbers.Number) and not isinstance(x, numbers.Integral)):
        return jnp.asarray(x)
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, numbers.Number) for v in np.ravel(np.asarray(x, dtype=object))):
        return jnp.asarray(x)
    return x


def _refuse_non_numeric(fn, args, kwargs) -> None:
    """An object or string NumPy array (a column with gaps) refused naming the argument, before JAX sees it."""
    for key, value in [*enumerate(args), *kwargs.items()]:
        if isinstance(value, np.ndarray) and value.dtype.kind not in "biufc":
            if isinstance(key, int):
                params = list(inspect.signature(fn).parameters)[1:]
                key = params[key] if key < len(params) else f"argument {key + 2}"
            raise ValueError(f"{fn.__name__}: {key} must be a real (integer or floating) array, got dtype "
                             f"{value.dtype}")


def _bools(args, kwargs) -> tuple:
    """Where the static options are bools: ``True == 1`` and they hash alike, so without this a program
    compiled for ``order=1`` or body ``1`` would be reused for ``True`` without the trace that refuses it."""
    return (tuple(i for i, a in enumerate(args) if isinstance(a, bool)),
            tuple(sorted(k for k, v in kwargs.items() if isinstance(v, bool))))


def compiled_when_eager(fn, bodies: bool = False, judge=None, pose: bool = True):
    """``fn(model, *arrays, **options)`` compiled once per structure when called eagerly (``eqx.filter_jit``).

    ``pose``: the first array is the pose ``q`` (a pose far outside the ranges is warned about, a map's
    range error names its coordinates); False for functions of other quantities (muscle lengths).
    ``bodies``: the function reads the body parameters (dynamics), so an eager call also warns about
    implausible ones (:func:`mbjax._body_warnings.warn_implausible_bodies`).  ``judge(model, out)``: called
    with an eager call's result while checks are on (a warning naming what is implausible in it).

    The bad-input switch (:func:`mbjax.config.checks`) is read while tracing, so it is part of the cache
    key: a program compiled with checks off is never reused once they are back on.
    """

    def with_switch(checks_on, bools, model, *args, **kwargs):
        del checks_on, bools  # static: only select the cached program
        return fn(model, *args, **kwargs)

    jitted = eqx.filter_jit(with_switch)

    @functools.wraps(fn)
    def public(model, *args, **kwargs):
        require_model(model, fn.__name__)
        _refuse_non_numeric(fn, args, kwargs)
        args = tuple(_as_input(a) for a in args)
        checks_on = checks_enabled()
        if checks_on and args and pose:
            warn_far_outside_ranges(model, args[0], fn.__name__)
        if checks_on and bodies:
            warn_implausible_bodies(model, fn.__name__)
        kwargs = {k: _as_input(v) for k, v in kwargs.items()}
        try:
            out = jitted(checks_on, _bools(args, kwargs), model, *args, **kwargs)
        except _RUNTIME_ERRORS as e:
            if pose:
                name_range_violation(e, model, args)
            raise
        if checks_on and judge is not None:
            judge(model, out)
        return out

    public.__wrapped_eager__ = fn  # the plain function (tests, debugging)
    return public
