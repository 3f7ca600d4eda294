"""Compiled programs kept on disk between Python sessions (JAX's persistent compilation cache).

mbjax compiles once per model structure and argument shapes, but a fresh Python process (a new
notebook kernel, each ``mbjax ik|id|so`` command) compiles again, seconds per OpenSim tool.  :func:`enable_compilation_cache` points JAX's persistent cache at a folder, so
a later process with the same model structure, shapes, JAX version and machine reads the compiled
executables back instead of running XLA again (measured in ``benchmarks/pipeline.py``'s
``cold, cached`` column).  Tracing (Python) still runs; results are identical, because the cache
key is a hash of the lowered program, the compile options, the JAX/jaxlib versions and the device.

The command line enables it by default (``--no-compile-cache`` to switch off); in Python it is an
explicit call, since it changes JAX's global configuration::

    import mbjax
    mbjax.config.enable_compilation_cache()            # ~/.cache/mbjax/xla, or $MBJAX_CACHE_DIR

It takes effect from the next compilation on, also when called late.  A program whose compilation took less than
``min_compile_time`` seconds is not written (reading it back would gain nothing).  Programs with
host callbacks (``eqx.error_if`` run-time checks, ``mbjax.config.checks(True)``) are never cached by JAX;
the OpenSim tools trace their solvers with checks off after validating inputs, so they are.
"""

from __future__ import annotations

import math
import os

import numpy as np

DEFAULT_MAX_BYTES = 2 * 1024 ** 3


def default_cache_dir() -> str:
    """``$MBJAX_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/mbjax/xla`` (``~/.cache/mbjax/xla``)."""
    env = os.environ.get("MBJAX_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mbjax", "xla")


def enable_compilation_cache(path: str | os.PathLike | None = None, *, min_compile_time: float = 0.2,
                             max_bytes: int = DEFAULT_MAX_BYTES, programs: bool = True) -> str:
    """Keep compiled programs in ``path`` (default :func:`default_cache_dir`) across sessions.

    ``min_compile_time``: seconds a compilation must take to be written; ``max_bytes``: the folder's
    size cap (JAX evicts the least recently used entries beyond it; ``-1``: no cap); ``programs``:
    also keep the OpenSim tools' traced programs in ``<path>-programs``
    (:mod:`mbjax.program_store`), so a new process neither traces nor compiles them again.  Returns
    the folder.  Raises ``ValueError`` for a path that exists and is not a folder, or that cannot be
    created or written.
    """
    import jax

    from .program_store import writable_folder

    _check_options(path, min_compile_time, max_bytes, programs)
    # every check before the first setting changes: a refused call leaves the process as it was
    folder = writable_folder(path if path is not None else default_cache_dir(), "compilation cache")
    if programs:
        writable_folder(folder + "-programs", "program store")
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", int(max_bytes))
    # JAX decides whether to use the cache at the first compilation of the process; a call after
    # that one would otherwise be ignored without a word
    from jax.experimental.compilation_cache import compilation_cache as _cc

    _cc.reset_cache()
    if programs:
        from .program_store import enable_program_store

        enable_program_store(folder + "-programs")
    return folder


def _check_options(path, min_compile_time, max_bytes, programs) -> None:
    """Types and values of :func:`enable_compilation_cache`'s arguments (``TypeError``/``ValueError``)."""
    where = "enable_compilation_cache"
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{where}: path must be a folder (str or os.PathLike) or None, got {type(path).__name__} "
                        f"{path!r}")
    if path is not None and not os.fspath(path):
        raise ValueError(f"{where}: path is empty; give a folder, or None for {default_cache_dir()}")
    if isinstance(min_compile_time, bool) or not isinstance(min_compile_time, (int, float, np.integer, np.floating)):
        raise TypeError(f"{where}: min_compile_time must be a number of seconds, got {min_compile_time!r}")
    if not (math.isfinite(min_compile_time) and min_compile_time >= 0):
        raise ValueError(f"{where}: min_compile_time must be a finite number >= 0 seconds, got {min_compile_time!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)):
        raise TypeError(f"{where}: max_bytes must be an integer number of bytes (-1: no cap), got {max_bytes!r}")
    if max_bytes < -1:
        raise ValueError(f"{where}: max_bytes must be >= 0 bytes, or -1 for no cap, got {max_bytes!r}")
    if not isinstance(programs, (bool, np.bool_)):
        raise TypeError(f"{where}: programs must be True or False, got {programs!r}")


def compilation_cache_dir() -> str | None:
    """The folder JAX's persistent cache writes to now, or None when it is off."""
    import jax

    return jax.config.jax_compilation_cache_dir or None
