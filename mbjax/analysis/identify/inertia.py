"""Inertial parametrizations of a Model's ``(mass, com, inertia)`` leaves, ten numbers per body.

Both are group parametrizations: ``where=lambda m: (m.mass, m.com, m.inertia)``.

:class:`StandardInertial` — the *standard* (barycentric) parameters
``π = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz)`` with the inertia ``I_o``
about the body-frame origin.  Inverse dynamics is linear in π (τ = Y(q, q̇, q̈) π), so least
squares in π is linear and its Jacobian is the regressor: use it for identifiability and base
parameters.  Not constrained: π may be unphysical.

:class:`PhysicalInertia` — the log-Cholesky parametrization of the pseudo-inertia (Rucker &
Wensing 2022, "Smooth parameterization of rigid-body inertia"): ``J = U Uᵀ`` with

    U = e^α [[e^{d1}, s12, s13, t1], [0, e^{d2}, s23, t2], [0, 0, e^{d3}, t3], [0, 0, 0, 1]],

``J = [Σ, h; hᵀ, m]``, ``Σ = ∫ r rᵀ dm = ½ tr(I_o) 1 − I_o``.  Every θ ∈ R¹⁰ gives J ≻ 0, which is
exactly physical consistency (m > 0, I_c ≻ 0 with the triangle inequality on principal moments),
and every physical body has one θ.  Bodies with zero mass cannot be parametrized
(``bodies=None`` picks those with mass > 0).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._checks import all_of, not_finite, real_array
from .parametrizations import Parametrization

_IU = (np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 1, 2, 2]))
_XYZ = "xyz"


def _resolve_bodies(bodies, mass, info):
    labels = info[0].labels[0] if info and info[0].labels else None
    if bodies is None:
        m = np.asarray(mass)
        return tuple(int(i) for i in np.nonzero(m > 0)[0])
    out = []
    for b in bodies:
        if isinstance(b, str):
            if labels is None or b not in labels:
                raise ValueError(f"unknown body {b!r}; bodies are {labels}")
            out.append(list(labels).index(b))
        else:
            out.append(int(b))
    return tuple(out)


def _origin_inertia(m, c, ic):
    """I_o = I_c + m (|c|² 1 − c cᵀ) for stacked bodies."""
    eye = jnp.eye(3, dtype=c.dtype)
    return ic + m[:, None, None] * (jnp.sum(c * c, -1)[:, None, None] * eye - c[:, :, None] * c[:, None, :])


def _com_inertia(m, c, io):
    eye = jnp.eye(3, dtype=c.dtype)
    return io - m[:, None, None] * (jnp.sum(c * c, -1)[:, None, None] * eye - c[:, :, None] * c[:, None, :])


class _Inertial(Parametrization):
    group = True
    bodies: Any = eqx.field(static=True, default=None)
    _all_by_default = False

    def __check_init__(self):
        b = self.bodies
        if b is not None and (isinstance(b, (str, bytes)) or not isinstance(b, (tuple, list))):
            raise TypeError(f"{type(self).__name__}: bodies must be None (every body) or a tuple of body names or "
                            f"indices, got {b!r}" + (f"; for one body write bodies=({b!r},)" if isinstance(b, (str, int))
                                                     else ""))

    def bind(self, value, info):
        shapes = [tuple(np.shape(v)) for v in value]
        nb = shapes[0][0] if shapes and len(shapes[0]) == 1 else None
        if nb is None or shapes != [(nb,), (nb, 3), (nb, 3, 3)]:
            raise ValueError(f"{type(self).__name__} parametrizes (mass (nb,), com (nb, 3), inertia (nb, 3, 3)) together, "
                             f"in that order: where=lambda m: (m.mass, m.com, m.inertia); got leaves of shapes {shapes}")
        if self.bodies is not None:
            bad = [b for b in self.bodies if not isinstance(b, str) and not (
                isinstance(b, (int, np.integer)) and not isinstance(b, bool) and -nb <= b < nb)]
            if bad:
                raise ValueError(f"{type(self).__name__}: bodies {bad} are not body names or indices in [0, {nb})")
        if self.bodies is None and self._all_by_default:
            return type(self)(tuple(range(np.shape(value[0])[0])))
        bodies = tuple(b % nb if not isinstance(b, str) else b for b in _resolve_bodies(self.bodies, value[0], info))
        if not bodies:
            raise ValueError(f"{type(self).__name__}: no body to parametrize (bodies={self.bodies!r}"
                             + (", and no body has mass > 0" if self.bodies is None else "") + ")")
        twice = sorted({b for b in bodies if bodies.count(b) > 1})
        if twice:
            labels = info[0].labels[0] if info and info[0].labels else None
            named = [str(labels[b]) if labels is not None else b for b in twice]
            raise ValueError(f"{type(self).__name__}: bodies {named} given more than once in bodies={self.bodies!r} "
                             "(a name and its index, or a negative index, count as the same body)")
        return type(self)(bodies)

    def _sel(self):
        return np.asarray(self.bodies, dtype=int)

    def _body_names(self, info):
        labels = info[0].labels[0] if info and info[0].labels else None
        return [str(labels[b]) if labels is not None else str(b) for b in self.bodies]


class StandardInertial(_Inertial):
    """θ per body = (m, m c, I_o upper triangle): linear in the dynamics (see module notes).
    ``bodies=None``: every body (massless ones too)."""

    _all_by_default = True

    def free(self, value):
        mass, com, inertia = value
        s = self._sel()
        m, c = mass[s], com[s]
        io = _origin_inertia(m, c, inertia[s])
        return jnp.concatenate([m[:, None], m[:, None] * c, io[:, _IU[0], _IU[1]]], axis=1).ravel()

    def value(self, theta, value):
        mass, com, inertia = value
        s = self._sel()
        t = theta.reshape(len(s), 10).astype(mass.dtype)
        m, h = t[:, 0], t[:, 1:4]
        io = jnp.zeros((len(s), 3, 3), mass.dtype).at[:, _IU[0], _IU[1]].set(t[:, 4:])
        io = io + jnp.swapaxes(io, 1, 2) - io * jnp.eye(3, dtype=mass.dtype)
        safe = jnp.where(m == 0, 1.0, m)
        c = jnp.where((m == 0)[:, None], 0.0, h / safe[:, None])  # a massless body keeps c = 0
        return mass.at[s].set(m), com.at[s].set(c), inertia.at[s].set(_com_inertia(m, c, io))

    def names(self, info):
        out = []
        for b in self._body_names(info):
            out += [f"m[{b}]", f"mc_x[{b}]", f"mc_y[{b}]", f"mc_z[{b}]"]
            out += [f"I_{_XYZ[i]}{_XYZ[j]}[{b}]" for i, j in zip(*_IU)]
        return out


def pseudo_inertia(m, c, ic):
    """J = [Σ, h; hᵀ, m] ``(n, 4, 4)`` about the body origin from masses ``m (n,)``, COMs ``c (n, 3)``
    and COM inertias ``ic (n, 3, 3)`` (NaN/inf raise at run time, checks on)."""
    arrays = []
    for x, name, tail in ((m, "m", ()), (c, "c", (3,)), (ic, "ic", (3, 3))):
        a = real_array(x, f"pseudo_inertia: {name} must be an array", f"pseudo_inertia: {name} must be real")
        if a.ndim != 1 + len(tail) or tuple(a.shape[1:]) != tail:
            raise ValueError(f"pseudo_inertia: {name} must have shape {_shape(('n',) + tail)} (one row per body; "
                             f"m (n,), c (n, 3), ic (n, 3, 3)), got {tuple(a.shape)}")
        arrays.append(a)
    n = [a.shape[0] for a in arrays]
    if len(set(n)) != 1:
        raise ValueError(f"pseudo_inertia: m, c and ic must hold the same number of bodies, got {n[0]}, {n[1]}, {n[2]}")
    dtype = jnp.result_type(*arrays, float)
    m, c, ic = (a.astype(dtype) for a in arrays)
    m, c, ic = all_of((m, c, ic), [not_finite(a, f"pseudo_inertia: {k}") for a, k in ((m, "m"), (c, "c"), (ic, "ic"))])
    return _pseudo_inertia(m, c, ic)


def _shape(dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _pseudo_inertia(m, c, ic):
    """:func:`pseudo_inertia` unchecked."""
    io = _origin_inertia(m, c, ic)
    eye = jnp.eye(3, dtype=c.dtype)
    sigma = 0.5 * jnp.trace(io, axis1=1, axis2=2)[:, None, None] * eye - io
    h = m[:, None] * c
    top = jnp.concatenate([sigma, h[:, :, None]], axis=2)
    bottom = jnp.concatenate([h, m[:, None]], axis=1)[:, None, :]
    return jnp.concatenate([top, bottom], axis=1)


def _upper_cholesky(j):
    """U upper triangular with J = U Uᵀ (Cholesky of the index-reversed matrix)."""
    p = jnp.eye(4, dtype=j.dtype)[::-1]
    lo = jnp.linalg.cholesky(p @ j @ p)
    return p @ lo @ p


class PhysicalInertia(_Inertial):
    """θ per body = (α, d1, d2, d3, s12, s23, s13, t1, t2, t3): log-Cholesky of the pseudo-inertia."""

    def free(self, value):
        mass, com, inertia = value
        s = self._sel()
        j = _pseudo_inertia(mass[s], com[s], inertia[s])
        if not isinstance(j, jax.core.Tracer):
            ev = np.linalg.eigvalsh(np.asarray(j))
            if np.any(ev <= 0):
                raise ValueError("PhysicalInertia: the starting (mass, com, inertia) must be strictly physical "
                                 f"(pseudo-inertia positive definite); eigenvalues {ev}")
        u = jax.vmap(_upper_cholesky)(j)
        alpha = jnp.log(u[:, 3, 3])
        u = u / u[:, 3:4, 3:4]
        d = jnp.log(jnp.stack([u[:, 0, 0], u[:, 1, 1], u[:, 2, 2]], 1))
        off = jnp.stack([u[:, 0, 1], u[:, 1, 2], u[:, 0, 2]], 1)
        t = u[:, :3, 3]
        return jnp.concatenate([alpha[:, None], d, off, t], axis=1).ravel()

    def value(self, theta, value):
        mass, com, inertia = value
        s = self._sel()
        th = theta.reshape(len(s), 10).astype(mass.dtype)
        n = len(s)
        u = jnp.zeros((n, 4, 4), mass.dtype)
        u = u.at[:, 0, 0].set(jnp.exp(th[:, 1])).at[:, 1, 1].set(jnp.exp(th[:, 2])).at[:, 2, 2].set(jnp.exp(th[:, 3]))
        u = u.at[:, 0, 1].set(th[:, 4]).at[:, 1, 2].set(th[:, 5]).at[:, 0, 2].set(th[:, 6])
        u = u.at[:, :3, 3].set(th[:, 7:10]).at[:, 3, 3].set(1.0)
        u = jnp.exp(th[:, 0])[:, None, None] * u
        j = u @ jnp.swapaxes(u, 1, 2)
        m = j[:, 3, 3]
        c = j[:, :3, 3] / m[:, None]
        sigma = j[:, :3, :3]
        io = jnp.trace(sigma, axis1=1, axis2=2)[:, None, None] * jnp.eye(3, dtype=mass.dtype) - sigma
        return mass.at[s].set(m), com.at[s].set(c), inertia.at[s].set(_com_inertia(m, c, io))

    def names(self, info):
        out = []
        for b in self._body_names(info):
            out += [f"{k}[{b}]" for k in ("alpha", "d1", "d2", "d3", "s12", "s23", "s13", "t1", "t2", "t3")]
        return out
