"""One policy for bad inputs: no silent wrong answers.

Every public entry point passes its array arguments through the helpers here, so a bad input is
refused in one place with one kind of message.

**Trace time (always on, free).**  Shapes and dtypes are static, so they are checked when the
function is called or traced: a wrong shape or a non-real dtype (complex, bool, strings) raises
``ValueError`` naming the argument and the expected shape with its dimension names, e.g.
``qd must have shape (nq,) = (2,) for coordinates ('shoulder', 'elbow'), got (1,)``.  Nothing
broadcasts silently: a ``tau`` of shape ``(1,)`` for a 2-coordinate model is refused.

**Run time (values, behind a switch).**  Values are only known when the program runs, so they are
checked with ``eqx.error_if``: NaN or inf in a coordinate, velocity, acceleration, force, point or
pose; a pose whose last row is not ``[0, 0, 0, 1]``; a singular mass matrix in
:func:`mbjax.forward_dynamics`; a muscle path left with fewer than two active points.  Eagerly the
error is raised at the call (``equinox.EquinoxRuntimeError``, a ``RuntimeError``, whose first line is
the check's message); under ``equinox.filter_jit`` the same; under plain ``jax.jit`` it is raised when
the compiled program runs as ``jax.errors.JaxRuntimeError`` (``INTERNAL: CpuCallback error calling
callback: Traceback ...``, also a ``RuntimeError``) with the message further down its text: compile
with ``eqx.filter_jit`` for a readable error (equinox cannot rewrite JAX's own exception).  These checks cost a reduction and a host callback per argument; turn them off for speed
once inputs are known to be good::

    with mbjax.config.checks(False):          # context manager (restores the previous setting)
        fast = jax.jit(jax.vmap(mbjax.moment_arms, in_axes=(None, 0)))
        r = fast(model, qs)
    mbjax.config.set_checks(False)            # or globally; MBJAX_CHECKS=0 in the environment at import

The switch is read when a function is *traced*: a function jitted while checks were on keeps
them (and vice versa), so set it before the first call of a jitted function.  With checks off a
NaN input propagates as NaN (IEEE semantics); never as a plausible finite number that the checks
would have refused (grad-safe norms and ``where`` guards are written to keep a NaN, e.g. a NaN
coordinate's muscle lengths, a NaN muscle parameter's force, a NaN ligament end's energy).
"""

from __future__ import annotations

import contextlib
import os
from typing import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from ._name_lists import name_list


def _message_first() -> None:
    """Put a failed check's own message first in the error an eager call raises.

    Equinox formats that error from a module-level template that opens with its debugging banner
    ("Above is the stack outside of JIT ...") and buries the message in the middle; mbjax's messages
    name the argument, coordinate or muscle, so they lead, and equinox's debugging hints follow.
    The template is equinox's private name: if it is gone, equinox's own format stays.
    """
    try:
        from equinox import _jit
    except ImportError:  # pragma: no cover - equinox moved its module
        return
    template = getattr(_jit, "_on_error_msg", None)
    if isinstance(template, str) and "{msg}" in template and "{stack}" in template:
        _jit._on_error_msg = ("{msg}\n\n(raised by a run-time check inside a compiled program; "
                              "EQX_ON_ERROR=breakpoint stops there, JAX_DISABLE_JIT=1 runs it eagerly; "
                              "see https://docs.kidger.site/equinox/api/debug/; the stack below was recorded "
                              "when the program was compiled, so its first lines may name an earlier call of the "
                              "same function: the traceback above names this one){stack}")


_message_first()

_ENABLED = [os.environ.get("MBJAX_CHECKS", "1").strip().lower() not in ("0", "false", "off", "no")]


def checks_enabled() -> bool:
    """Whether run-time value checks (``eqx.error_if``) are traced into public functions."""
    return _ENABLED[0]


def _flag(enabled) -> bool:
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"checks: enabled must be True or False, got {enabled!r} (a string such as 'false' "
                        "would read as True)")
    return bool(enabled)


def true_or_false(value, name: str) -> bool:
    """``value`` as a bool; ``TypeError`` naming ``name`` for anything but True/False (a string
    such as 'no' would read as True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} (a string such as 'no' would read as True)")
    return bool(value)


def set_checks(enabled: bool) -> None:
    """Turn run-time value checks on or off globally (read at trace time; shape checks stay on)."""
    _ENABLED[0] = _flag(enabled)


@contextlib.contextmanager
def checks(enabled: bool = True):
    """Context manager: run-time value checks on (``True``) or off (``False``) inside the block."""
    old = _ENABLED[0]
    _ENABLED[0] = _flag(enabled)
    try:
        yield
    finally:
        _ENABLED[0] = old


def _fmt(shape: Sequence) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def as_array(x, name: str, shape: Sequence[int | None], dims: Sequence[str | int], context: str = ""):
    """``x`` as a real (integer or floating) array of ``shape``; ``None`` entries match any size.

    ``dims`` names each axis (``("nq",)``, ``("npts", 3)``) for the message; ``context`` is
    appended (e.g. the coordinate names).  Raises ``ValueError`` at trace time.
    """
    if x is None:
        raise ValueError(f"{name} must be a real array of shape {_fmt(dims)}{context}, got None")
    if isinstance(x, np.ndarray) and x.dtype.kind not in "biufc":  # object or strings: JAX's message is obscure
        raise ValueError(f"{name} must be a real (integer or floating) array, got dtype {x.dtype}")
    try:
        arr = jnp.asarray(x)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a real array of shape {_fmt(dims)}, got {type(x).__name__}: {err}") from None
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise ValueError(f"{name} must be a real (integer or floating) array, got dtype {arr.dtype}")
    ok = arr.ndim == len(shape) and all(s is None or a == s for a, s in zip(arr.shape, shape))
    if not ok:
        named = _fmt(dims)
        concrete = _fmt(["*" if s is None else s for s in shape])
        expect = named if named == concrete else f"{named} = {concrete}"
        raise ValueError(f"{name} must have shape {expect}{context}, got {tuple(arr.shape)}")
    return arr


def broadcasts_to(shape, target) -> bool:
    """Whether an array of ``shape`` broadcasts to exactly ``target`` (no new or larger axes): the
    rule for per-element parameters given as one number, one per trailing axis, or one per element."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


def real_array(x, not_array: str, not_real: str, show_value: bool = False):
    """``x`` as a real (integer or floating) JAX array; else ``TypeError``: ``not_array`` and the
    type (and, with ``show_value``, the value) when it is no array at all, ``not_real`` and the dtype
    when it is complex, a string or an object array.  Trace-time only (no shape rule)."""
    try:
        arr = jnp.asarray(x)
    except (TypeError, ValueError):
        raise TypeError(f"{not_array}, got {type(x).__name__}" + (f": {x!r}" if show_value else "")) from None
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{not_real}, got dtype {arr.dtype}")
    return arr


def derivative_order(order, where: str) -> int:
    """``order`` as the int 1 or 2 (first or also second derivatives); anything else refused naming ``where``."""
    if isinstance(order, (int, np.integer)) and not isinstance(order, (bool, np.bool_)) and order in (1, 2):
        return int(order)
    got = f"an array of dtype {order.dtype} (give a Python int)" if hasattr(order, "dtype") else repr(order)
    raise ValueError(f"{where}: order must be 1 or 2 (first, or first and second derivatives), got {got}")


def count(x, where: str, name: str, low: int = 0, extra: str = "") -> int:
    """``x`` as a Python int ``>= low`` (a number of terms, a degree, a batch size); a bool, a float (even
    2.0) or an array is refused naming ``where`` and ``name`` (``extra``: the other values allowed)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < low:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(low, f"an integer >= {low}")
        raise ValueError(f"{where}: {name} must be {rule}{extra}, got {x!r}")
    return int(x)


def require(x, bad, message: str):
    """``eqx.error_if(x, bad, message)`` when checks are on, else ``x`` unchanged."""
    if not _ENABLED[0]:
        return x
    return eqx.error_if(x, bad, message)


def not_finite(x, name: str, context: str = ""):
    """The rule ``(bad, message)`` of :func:`all_of` that ``x`` holds no NaN or inf."""
    return ~jnp.isfinite(x), f"{name} contains NaN or inf{context}"


def finite(x, name: str, context: str = ""):
    """``x`` unchanged; raises at run time (``eqx.error_if``) if it holds NaN or inf (checks on)."""
    if not _ENABLED[0] or not jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact):
        return x
    bad, message = not_finite(x, name, context)
    return eqx.error_if(x, jnp.any(bad), message)


def vector(x, name: str, n: int, dim: str, context: str = ""):
    """A finite real vector of shape ``(n,)`` (dimension name ``dim``)."""
    return finite(as_array(x, name, (n,), (dim,), context), name, context)


def points(x, name: str = "points"):
    """Body-frame points ``(3,)`` or ``(npts, 3)``, finite; returns ``(pts (npts, 3), single)``."""
    arr = jnp.asarray(x)
    if arr.ndim == 1:
        arr = as_array(arr, name, (3,), (3,))
        return finite(arr, name)[None], True
    return finite(as_array(arr, name, (None, 3), ("npts", 3)), name), False


def pose(x, name: str):
    """A homogeneous transform ``(4, 4)``: finite, last row ``[0, 0, 0, 1]`` (run time)."""
    arr = as_array(x, name, (4, 4), (4, 4), " (a homogeneous transform [[R, p], [0, 0, 0, 1]])")
    if not _ENABLED[0] or not jnp.issubdtype(arr.dtype, jnp.inexact):
        return arr
    eps = 100 * jnp.finfo(arr.dtype).eps
    row = jnp.asarray([0.0, 0.0, 0.0, 1.0], arr.dtype)
    bad = ~jnp.all(jnp.isfinite(arr)) | jnp.any(jnp.abs(arr[3] - row) > eps)
    return eqx.error_if(arr, bad, f"{name} must be a finite homogeneous transform with last row [0, 0, 0, 1]")


def all_of(x, conditions):
    """``x`` unchanged; one fused run-time check (checks on) over ``(bad, message)`` pairs: raises
    the message of the first ``bad`` that holds.  One host callback whatever the number of rules,
    so a batched call pays for one check, not one per argument.  A message may be a list, one per
    entry of its ``bad``'s first axis (e.g. per muscle)."""
    if not _ENABLED[0] or not conditions:
        return x
    bads, messages = [], []
    for b, m in conditions:
        if isinstance(m, (list, tuple)):  # a message per entry of b's first axis
            bads.append(jnp.reshape(jnp.asarray(b), (len(m), -1)).any(axis=1))
            messages.extend(m)
        else:
            bads.append(jnp.any(b)[None])
            messages.append(m)
    bads = jnp.concatenate(bads)
    return eqx.branched_error_if(x, *_first_failure(bads), messages)


def _first_failure(bads):
    """``(any rule fails, index of the first failing rule)`` of the rules ``bads`` (one entry each), both
    free of ``vmap``'s batch axis.  Equinox would reduce a batched index with a maximum, which has no
    value on an empty batch (``vmap`` over 0 poses); the index here is the first rule that fails in any
    pose, found with ``unvmap_any`` alone (one per bit of the index), whose value on an empty batch is
    False."""
    n = bads.shape[0]
    first = jnp.where(jnp.any(bads), jnp.argmax(bads), n)  # per pose: its first failing rule, or n
    index = jnp.zeros((), first.dtype)
    for bit in reversed(range(max(n - 1, 0).bit_length())):  # the least ``first`` over the batch
        step = index + (1 << bit)
        index = jnp.where(eqx.internal.unvmap_any(first < step), index, step)
    return eqx.internal.unvmap_any(first < n), jnp.minimum(index, n - 1)


names = name_list  # the one rule for name lists (mbjax._name_lists)


def in_unit_interval(x, name: str, names: Sequence[str], context: str = ""):
    """The rule ``(bad, messages)`` of :func:`all_of` that ``x (n,)`` lies in [0, 1], a message per entry
    naming it (``names``: one per entry, e.g. the muscles)."""
    bad = (x < 0) | (x > 1)
    if jnp.shape(x) != (len(names),):  # a shape error is raised elsewhere: one message here
        return bad, f"{name} must be in [0, 1]{context}"
    return bad, [f"{name} must be in [0, 1]{context}: {n!r} is outside" for n in names]


def names_context(kind: str, names: Sequence[str], limit: int = 8) -> str:
    """`` for muscles ('a', 'b', ...)`` with at most ``limit`` names shown."""
    shown = ", ".join(repr(n) for n in names[:limit]) + (f", ... ({len(names)} in all)" if len(names) > limit else "")
    return f" for {kind} ({shown})"


def coordinates_context(model) -> str:
    return f" for coordinates {model.coordinate_names}"


def dtype_eps(dtype) -> float:
    """Machine epsilon of a floating dtype (float64 for integers): tolerances follow the dtype."""
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype if np.issubdtype(dtype, np.floating) else np.float64).eps)
