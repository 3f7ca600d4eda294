"""Traced programs kept on disk between processes (``jax.export``), beside the compilation cache.

The compilation cache (:mod:`mbjax.compilation_cache`) lets a new process read XLA's executables
back, but every program is still traced in Python and lowered first: with the cache filled, that is
the largest part of a cold ``mbjax run`` (``benchmarks/cold_budget.py``; numbers in
``benchmarks/RESULTS.md``).  :func:`persistent` wraps a function as ``eqx.filter_jit`` does
(arrays traced, everything else static); while a store folder is set
(:func:`enable_program_store`), the first call with a new *key* traces and lowers it once, exports
it (``jax.export``) and writes the serialized program to ``<folder>/<key>.mbjaxprog``; a later call
with the same key, in this process or another, runs that program without tracing the function.

The key is a SHA-256 of: the function's name; the static part of the arguments, pickled exactly
(every non-array leaf and the tree structure: the model's topology, names, options); the arrays'
shapes and dtypes; the JAX settings that change traced programs (64-bit, default matmul
precision) and whether mbjax's run-time checks are on; the platform; the versions of Python, jax,
jaxlib, equinox, optimistix, diffrax and lineax; and a hash of mbjax's own source files.  An
artifact is thus only ever run for the program it was made from.  A file that does not hold its
own key in its header (stale, foreign, renamed) or does not deserialize is rebuilt with a warning
naming it, never run.

Not persisted (traced as usual, nothing written): arguments whose static part cannot be pickled,
programs JAX cannot export (host callbacks, i.e. run-time checks on), and outputs that are not
built of arrays, tuples, lists, dicts and ``None``.
"""

from __future__ import annotations

import functools

import numpy as np
import hashlib
import io
import os
import pickle
import re
import sys
import tempfile
import warnings

MAGIC = b"MBJAXPROG1\n"
SUFFIX = ".mbjaxprog"
#: files kept at most: past it, the least recently used are removed when a new one is written (each
#: mbjax or JAX version makes new keys, so old files would otherwise stay for ever)
MAX_FILES = 500
_FOLDER: list[str | None] = [None]
_SOURCE_HASH: list[str | None] = [None]
_MEMOS: list[dict] = []  # every persistent function's in-process table (forget() empties them)


def writable_folder(path: str | os.PathLike, what: str) -> str:
    """``path`` as an absolute folder, created if missing; ``ValueError`` naming ``what`` when it is a
    file or cannot be created or written (the compilation cache and this store alike)."""
    folder = os.path.abspath(os.path.expanduser(os.fspath(path)))
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"{what} {folder}: exists and is not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{what} {folder}: cannot create the folder ({e.strerror})") from None
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{what} {folder}: the folder is not writable")
    return folder


def enable_program_store(path: str | os.PathLike) -> str:
    """Keep exported programs in ``path`` (created if missing); returns the folder.  Raises
    ``ValueError`` for a path that is not a folder or cannot be written."""
    folder = writable_folder(path, "program store")
    _FOLDER[0] = folder
    return folder


def disable_program_store() -> None:
    """Trace as usual from now on (files already written stay)."""
    _FOLDER[0] = None


def forget() -> None:
    """Drop the programs this process has read or made (as a new process starts): the next call of
    each persistent function reads its file again."""
    for runs in _MEMOS:
        runs.clear()


def program_store_dir() -> str | None:
    """The folder programs are kept in now, or None when the store is off."""
    return _FOLDER[0]


def _source_hash() -> str:
    """SHA-256 of mbjax's own ``.py`` files (path and content), once per process."""
    if _SOURCE_HASH[0] is None:
        root = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256()
        for base, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(".py"):
                    p = os.path.join(base, f)
                    h.update(os.path.relpath(p, root).encode())
                    with open(p, "rb") as fh:
                        h.update(fh.read())
        _SOURCE_HASH[0] = h.hexdigest()
    return _SOURCE_HASH[0]


def _versions() -> tuple:
    from importlib.metadata import PackageNotFoundError, version

    out = [sys.version]
    for dist in ("jax", "jaxlib", "equinox", "optimistix", "diffrax", "lineax"):
        try:
            out.append((dist, version(dist)))
        except PackageNotFoundError:
            out.append((dist, None))
    return tuple(out)


def program_key(name: str, static, treedef, leaves) -> str:
    """The key of a call (module docstring); raises when the static part cannot be pickled."""
    import jax

    from . import _checks

    buf = io.BytesIO()
    pickle.Pickler(buf, protocol=4).dump(static)
    h = hashlib.sha256()
    for part in (name, str(treedef), [(tuple(x.shape), str(x.dtype)) for x in leaves],
                 (jax.config.jax_enable_x64, str(jax.config.jax_default_matmul_precision), _checks.checks_enabled()),
                 jax.default_backend(), _versions(), _source_hash()):
        h.update(repr(part).encode())
        h.update(b"\0")
    h.update(buf.getvalue())
    return h.hexdigest()


def _read(path: str, key: str):
    """The exported program in ``path`` if its header holds ``key``; else None, with a warning."""
    import jax

    try:
        with open(path, "rb") as fh:
            data = fh.read()
        os.utime(path)  # recently used (the eviction order), whatever the file system's atime policy
        head = MAGIC + key.encode() + b"\n"
        if not data.startswith(head):
            raise ValueError("its header does not hold this program's key (stale or foreign)")
        return jax.export.deserialize(bytearray(data[len(head):]))
    except Exception as e:  # noqa: BLE001 - whatever is wrong with the file, it is rebuilt
        warnings.warn(f"program store: {path} cannot be used ({type(e).__name__}: {str(e)[:200]}); "
                      "tracing again and rewriting it", stacklevel=4)
        return None


def _write(folder: str, path: str, key: str, blob: bytes) -> None:
    """Write atomically (a reader never sees half a file); a failed write only costs speed."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(MAGIC + key.encode() + b"\n" + blob)
        os.replace(tmp, path)
        _evict(folder)
    except OSError as e:
        warnings.warn(f"program store: cannot write {path} ({e.strerror}); the program is traced again "
                      "next time", stacklevel=4)


def _evict(folder: str, keep: int | None = None) -> None:
    """Remove the least recently used files beyond ``keep`` (default :data:`MAX_FILES`)."""
    keep = MAX_FILES if keep is None else keep
    files = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith((SUFFIX, ".skip"))]
    if len(files) <= keep:
        return
    files.sort(key=lambda f: os.stat(f).st_atime, reverse=True)
    for f in files[keep:]:
        try:
            os.remove(f)
        except OSError:
            pass


def persistent(name: str):
    """Decorator: ``eqx.filter_jit(fn)``, kept on disk while the store is on (module docstring).
    ``name`` identifies the function in the key (a module path and function name)."""

    def wrap(fn):
        import equinox as eqx

        jitted = eqx.filter_jit(fn)
        runs: dict = {}  # key -> the jitted exported program (or None: this one is not persisted)
        _MEMOS.append(runs)

        @functools.wraps(fn)
        def call(*args):
            folder = _FOLDER[0]
            if folder is None:
                return jitted(*args)
            import jax

            dyn, static = eqx.partition(args, eqx.is_array)
            leaves, treedef = jax.tree.flatten(dyn)
            try:
                key = program_key(name, static, treedef, leaves)
            except Exception:  # noqa: BLE001 - an unpicklable static part: not persisted
                return jitted(*args)
            if key not in runs:
                runs[key] = _program(folder, key, fn, static, treedef, leaves)
            run = runs[key]
            return jitted(*args) if run is None else run(*leaves)

        call.__wrapped_jit__ = jitted
        return call

    return wrap


#: jaxlib's own kernels (LAPACK, FFT): exported although JAX does not promise them across jaxlib
#: versions, since the key holds the jaxlib version (host callbacks are never exported)
OWN_KERNELS = re.compile(r"^(lapack_|ducc_)")


def _export(jitted, avals):
    """``jax.export.export(jitted)(*avals)``, allowing calls to jaxlib's own kernels only."""
    import jax

    allowed: set[str] = set()
    for _ in range(8):  # JAX names a few offending targets per error ("Examples are"): allow and retry
        checks = [jax.export.DisabledSafetyCheck.custom_call(t) for t in sorted(allowed)]
        try:
            return jax.export.export(jitted, disabled_checks=checks)(*avals)
        except ValueError as e:
            if "custom calls whose targets have no compatibility guarantees" not in str(e):
                raise
            targets = set(re.findall(r"custom_call @([\w.]+)", str(e))) - allowed
            if not targets or not all(OWN_KERNELS.match(t) for t in targets):
                raise
            allowed |= targets
    raise ValueError(f"too many custom-call targets to allow: {sorted(allowed)}")


def _program(folder, key, fn, static, treedef, leaves):
    """The exported program of ``key``: read from the store, else traced, exported and written;
    None when it cannot be exported (then the caller traces as ``filter_jit`` does)."""
    import equinox as eqx
    import jax

    path = os.path.join(folder, key + SUFFIX)
    skip = os.path.join(folder, key + ".skip")  # this program cannot be exported: do not try again
    if os.path.exists(skip):
        return None
    exp = _read(path, key) if os.path.exists(path) else None
    if exp is None:
        def flat(*lv):
            return fn(*eqx.combine(jax.tree.unflatten(treedef, lv), static))

        try:
            exp = _export(jax.jit(flat), [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in leaves])
            blob = exp.serialize()
        except Exception as _e:  # noqa: BLE001 - host callbacks, outputs JAX cannot serialize: not persisted
            if os.environ.get("MBJAX_PROGRAM_STORE_DEBUG"):
                print("program store: not exported:", type(_e).__name__, str(_e)[:3000], file=sys.stderr)
            try:
                open(skip, "wb").close()
            except OSError:
                pass
            return None
        _write(folder, path, key, bytes(blob))
    run = jax.jit(exp.call)
    dtypes = [a.dtype for a in exp.in_avals]

    def call(*leaves):  # the exported dtypes exactly (NumPy float64 data with jax_enable_x64 off: float32)
        return run(*(leaf if getattr(leaf, "dtype", None) == d else np.asarray(leaf, d) for leaf, d in zip(leaves, dtypes)))

    return call
