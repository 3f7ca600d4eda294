"""mbjax's native model file: :func:`save_model` / :func:`load_model`, a lossless round trip.

Layout: the 8-byte magic ``b"MBJAXMDL"``, a format version (uint32), the length (uint64) of a
pickled *skeleton*, the skeleton, then the array leaves by ``eqx.tree_serialise_leaves``
(NumPy ``.npy`` records: bit-exact, dtype kept).  The skeleton is the model with every array
leaf replaced by its shape and dtype (``_ArraySpec``): the static topology, the map and muscle
classes and their static fields, and any non-array leaf.  Loading unpickles it, builds zero
arrays of those shapes and dtypes, and deserialises the leaves into them.

It works for any pytree (a fitted ``(model, damper)`` too) whose non-array parts pickle; a
:class:`~mbjax.maps.FunctionMap` must hold a module-level function (a ``lambda`` does not
pickle: the error says so).  Loading runs ``pickle``: open only files you trust.  A float64
file loaded with x64 disabled raises (it would not round-trip).
"""

from __future__ import annotations

import io as _io
import pickle
import struct

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .arguments import require_folder

MAGIC = b"MBJAXMDL"
VERSION = 1


class _ArraySpec:
    """Placeholder for an array leaf in the pickled skeleton."""

    def __init__(self, shape, dtype, kind):
        self.shape, self.dtype, self.kind = tuple(shape), np.dtype(dtype).str, kind

    def zeros(self):
        if self.kind == "numpy":
            return np.zeros(self.shape, np.dtype(self.dtype))
        a = jnp.zeros(self.shape, np.dtype(self.dtype))
        if a.dtype != np.dtype(self.dtype):
            raise ValueError(f"load_model: the file holds {np.dtype(self.dtype)} arrays but JAX gives {a.dtype} "
                             "(enable float64: jax.config.update('jax_enable_x64', True))")
        return a


def _skeleton(tree):
    def spec(x):
        if eqx.is_array(x):
            return _ArraySpec(np.shape(x), x.dtype, "numpy" if isinstance(x, np.ndarray) else "jax")
        return x

    return jax.tree.map(spec, tree)


def save_model(path, model) -> None:
    """Write ``model`` (a ``Model`` or any pytree of them) to ``path`` (see module)."""
    path = require_folder(path, "save_model")
    try:
        skel = pickle.dumps(_skeleton(model), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise TypeError(f"save_model: the model's static parts do not pickle ({e}); "
                        "use module-level functions, not lambdas, in FunctionMap / callables") from e
    buf = _io.BytesIO()
    eqx.tree_serialise_leaves(buf, model)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<IQ", VERSION, len(skel)))
        f.write(skel)
        f.write(buf.getvalue())


def load_model(path):
    """Read a file written by :func:`save_model`.

    Loading unpickles the file's skeleton, which can run any code: open only files you trust."""
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise ValueError(f"load_model: {path} is not an mbjax model file")
        try:
            version, n = struct.unpack("<IQ", f.read(12))
            if version == VERSION:
                skel = pickle.loads(f.read(n))
        except (struct.error, pickle.UnpicklingError, EOFError) as e:
            raise ValueError(f"load_model: {path} is damaged or truncated ({e})") from None
        if version != VERSION:
            raise ValueError(f"load_model: {path} has format version {version}; this mbjax reads {VERSION}")
        like = jax.tree.map(lambda x: x.zeros() if isinstance(x, _ArraySpec) else x, skel)
        try:
            return eqx.tree_deserialise_leaves(f, like)
        except (EOFError, ValueError, OSError, RuntimeError) as e:  # equinox wraps the cause in a RuntimeError
            while e.__cause__ is not None:
                e = e.__cause__
            raise ValueError(f"load_model: {path} is damaged or truncated ({e})") from None
