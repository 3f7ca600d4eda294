"""Construction-time checks of a force-element stack's parameters (shapes, finiteness, signs).

Each check names the element kind, the element and the parameter; value checks run only on
concrete arrays (a stack built inside a traced function keeps its shape checks).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks


def concrete(*arrays) -> bool:
    return not any(isinstance(a, jax.core.Tracer) for a in arrays)


def floats(value, kind: str, name: str):
    """``value`` as a float array; ``TypeError`` naming ``kind`` and ``name`` if it is not real numbers."""
    if isinstance(value, str) or (isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value)):
        raise TypeError(f"{kind}: {name} must be real numbers, got {value!r:.80}")
    arr = _checks.real_array(value, f"{kind}: {name} must be real numbers", f"{kind}: {name} must be real")
    return jnp.asarray(arr, dtype=float)


def check_param(kind: str, names, field: str, value, trailing=(), sign: str | None = None):
    """``value`` of shape ``(n,) + trailing`` (``n = len(names)``), finite, and ``>= 0`` (``sign="nonneg"``)
    or ``> 0`` (``sign="pos"``) when concrete; else ``ValueError`` naming the element.  ``sign="warn"``:
    a negative value is kept with a ``UserWarning`` naming the element (OpenSim accepts negative
    stiffness, damping and rest lengths; an element with one can add energy)."""
    names = tuple(names)
    shape = (len(names),) + tuple(trailing)
    arr = jnp.asarray(value)
    if arr.shape != shape:
        raise ValueError(f"{kind}: {field} must have shape {shape} (one row per element {names}), "
                         f"got {tuple(arr.shape)}")
    if not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{kind}: {field} must be real, got dtype {arr.dtype}")
    if not concrete(arr):
        return
    v = np.asarray(arr, dtype=float).reshape(len(names), -1)
    rules = [(~np.isfinite(v), "must be finite (no NaN or inf)")]
    if sign == "nonneg":
        rules.append((v < 0, "must be >= 0"))
    elif sign == "pos":
        rules.append((v <= 0, "must be > 0"))
    if sign == "warn":
        rows = np.flatnonzero((v < 0).any(axis=1))
        if rows.size:
            i = int(rows[0])
            warnings.warn(f"{kind} {names[i]!r}: {field} is negative ({v[i].tolist() if v.shape[1] > 1 else v[i, 0]}); "
                          "kept as OpenSim keeps it (the element can then add energy)", stacklevel=4)
    for bad, what in rules:
        rows = np.flatnonzero(bad.any(axis=1))
        if rows.size:
            i = int(rows[0])
            raise ValueError(f"{kind} {names[i]!r}: {field} {what}, got {v[i].tolist() if v.shape[1] > 1 else v[i, 0]}")


def check_names(kind: str, names, n: int | None = None):
    if isinstance(names, str):
        raise TypeError(f"{kind}: element_names must be a tuple of names, got the lone string {names!r}; "
                        f"use ({names!r},)")
    names = tuple(names)
    if not all(isinstance(s, str) for s in names):
        raise TypeError(f"{kind}: element_names must be strings, got {names!r}")
    if n is not None and len(names) != n:
        raise ValueError(f"{kind}: {len(names)} element names {names} but {n} coordinates (one per element)")


def check_bodies(kind: str, names, field: str, bodies, n_bodies: int | None = None):
    """Static body indices: one per element, integers ``>= -1`` (``-1`` = ground), ``< n_bodies`` if given."""
    names = tuple(names)
    if len(bodies) != len(names):
        raise ValueError(f"{kind}: {field} must hold one body index per element {names}, got {tuple(bodies)}")
    for name, b in zip(names, bodies):
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise TypeError(f"{kind} {name!r}: {field} must be a body index (int, -1 = ground), got {b!r}")
        if b < -1 or (n_bodies is not None and b >= n_bodies):
            top = f"{n_bodies - 1}" if n_bodies is not None else "n_bodies - 1"
            raise ValueError(f"{kind} {name!r}: {field} index {b} is out of range: use -1 (ground) to {top} "
                             "(model.body_index(name))")


def check_poses(kind: str, names, field: str, poses):
    """``(n, 4, 4)`` homogeneous transforms, finite, last row ``[0, 0, 0, 1]`` (when concrete)."""
    check_param(kind, names, field, poses, (4, 4))
    if concrete(poses):
        p = np.asarray(poses, dtype=float)
        bad = np.flatnonzero(np.any(p[:, 3] != np.array([0.0, 0.0, 0.0, 1.0]), axis=1))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"{kind} {tuple(names)[i]!r}: {field} must be a homogeneous transform "
                             f"[[R, p], [0, 0, 0, 1]], got last row {p[i, 3].tolist()}")
