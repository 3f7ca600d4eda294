"""Trajectory data terms through :func:`mbjax.simulate` (diffrax): single and multiple shooting.

The fitted tree is a ``Model``, or ``(model, forces)`` with ``forces`` an ``eqx.Module``
``(t, q, q̇) -> Q`` (e.g. :class:`ViscousDamping`, whose coefficients are then fitted too), or
``(model, forces, (q0, q̇0))`` to fit the initial state as well.

Single shooting: r = w ⊙ (q(t_k; model) − q_meas(t_k)), one solve from ``(q0, q̇0)``.
Multiple shooting: the samples are cut into K segments of equal length; segment k starts from its
own state ``(Q_k, Q̇_k)`` (fitted, in the tree's third entry), one vmapped solve over segments, and
the continuity defects ``(q, q̇)(end of k) − (Q, Q̇)_{k+1}`` are extra residuals weighted by
``continuity_weight`` (a long or chaotic record becomes a well-conditioned problem).

``adjoint`` is diffrax's: ``diffrax.ForwardMode()`` (default) gives the forward-mode Jacobians
that Gauss-Newton / Levenberg-Marquardt and :func:`~mbjax.analysis.identify.identifiability` use;
``mbjax.DiscreteAdjoint()`` (a discrete adjoint over the accepted steps, see
:mod:`mbjax.discrete_adjoint`: the same gradient, the cheapest of the three, with half the compile
time), ``diffrax.RecursiveCheckpointAdjoint()`` or ``BacksolveAdjoint()`` give the reverse-mode
gradients of ``adam`` / ``lbfgs`` (``benchmarks/identify.py``; the forward-mode Jacobian costs more;
numbers in ``benchmarks/RESULTS.md``).
"""

from __future__ import annotations

from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._model import Model
from ..._simulate import simulate
from .robust import finish, measured, options, residual, same_samples


class ViscousDamping(eqx.Module):
    """Joint damping Q = −c ⊙ q̇ (``c`` per coordinate, or a scalar): a ``forces`` callable."""

    c: jnp.ndarray

    def __check_init__(self):
        c = self.c
        if isinstance(c, (str, bytes)) or c is None:
            raise TypeError(f"ViscousDamping: c must be damping coefficients (a number or one per coordinate), got {c!r}")
        try:
            arr = np.asarray(c) if not isinstance(c, jax.core.Tracer) else None
        except Exception:  # a traced value inside a transformation: checked where it is used
            arr = None
        if arr is None:
            if np.ndim(c) > 1:
                raise ValueError(f"ViscousDamping: c must be a number or a vector (one per coordinate), got shape "
                                 f"{np.shape(c)}")
            return
        if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise TypeError(f"ViscousDamping: c must be real damping coefficients, got dtype {arr.dtype}")
        if arr.ndim > 1:
            raise ValueError(f"ViscousDamping: c must be a number or a vector (nq,) (one per coordinate), got shape "
                             f"{arr.shape}")
        bad = ~(np.isfinite(arr) & (arr >= 0))
        if bad.any():
            k = int(np.argmax(np.ravel(bad)))
            v = float(np.ravel(arr)[k])
            raise ValueError(f"ViscousDamping: c must be finite and >= 0 (N m s/rad), got {v!r}"
                             + (f" at index {k}" if arr.ndim else "")
                             + (" (a negative coefficient feeds energy in)" if v < 0 else ""))

    def __call__(self, t, q, qd):
        c = jnp.asarray(self.c)
        if c.ndim != 0 and c.shape != jnp.shape(qd):
            raise ValueError(f"ViscousDamping: c has shape {tuple(c.shape)} but the model has {jnp.shape(qd)[-1]} "
                             f"coordinates: give one coefficient per coordinate, shape {tuple(jnp.shape(qd))}, or one number")
        return -c * qd


def _unpack(tree):
    """``(model, forces, initial_state)`` of a fitted tree (see module)."""
    if isinstance(tree, Model):
        return tree, None, None
    tree = tuple(tree)
    return tree[0], (tree[1] if len(tree) > 1 else None), (tree[2] if len(tree) > 2 else None)


class SingleShooting(eqx.Module):
    """Callable ``tree -> r`` (see module); ``predict(tree)`` gives ``(q, q̇)`` at ``ts``."""

    ts: jnp.ndarray
    q_meas: jnp.ndarray
    q0: jnp.ndarray
    qd0: jnp.ndarray
    qd_meas: Any = None
    weights: Any = None
    huber: Any = None
    rtol: float = eqx.field(static=True, default=1e-9)
    atol: float = eqx.field(static=True, default=1e-11)
    adjoint: Any = eqx.field(static=True, default=None)
    solver: Any = eqx.field(static=True, default=None)

    def predict(self, tree):
        model, forces, init = _unpack(tree)
        q0, qd0 = (self.q0, self.qd0) if init is None else init
        sol = simulate(model, q0, qd0, self.ts[0], self.ts[-1], saveat=self.ts, forces=forces, rtol=self.rtol,
                       atol=self.atol, adjoint=self.adjoint or diffrax.ForwardMode(), solver=self.solver)
        return sol.ys

    def __call__(self, tree):
        q, qd = self.predict(tree)
        r = residual(q, self.q_meas, "q_meas", "coordinates (N, nq)")
        if self.qd_meas is not None:
            r = jnp.concatenate([r, residual(qd, self.qd_meas, "qd_meas", "velocities (N, nq)")], axis=-1)
        return finish(r, self.weights, self.huber)


def trajectory_residuals(ts, q_meas, q0, qd0, *, qd_meas=None, weights=None, huber=None, rtol=1e-9, atol=1e-11,
                         adjoint=None, solver=None) -> SingleShooting:
    """Single-shooting residuals of measured ``q_meas (N, nq)`` (and optionally ``qd_meas``) at ``ts (N,)``."""
    a = lambda x: None if x is None else jnp.asarray(x)  # noqa: E731
    ts, q_meas = _times(ts), measured(q_meas, "q_meas", ("N", "nq"))
    qd_meas = measured(qd_meas, "qd_meas", ("N", "nq"))
    same_samples(ts=ts, q_meas=q_meas, qd_meas=qd_meas)
    nq = q_meas.shape[1]
    if qd_meas is not None and qd_meas.shape != q_meas.shape:
        raise ValueError(f"qd_meas has shape {tuple(qd_meas.shape)}, q_meas {tuple(q_meas.shape)}: both (N, nq)")
    q0, qd0 = a(q0), a(qd0)
    for k, v in (("q0", q0), ("qd0", qd0)):
        if v is not None and v.shape != (nq,):
            raise ValueError(f"trajectory_residuals: {k} has shape {tuple(v.shape)}, q_meas {tuple(q_meas.shape)}: "
                             f"{k} must be (nq,) = ({nq},), one entry per column of q_meas (the model's coordinates)")
    shape = (q_meas.shape[0], nq if qd_meas is None else 2 * nq)
    w = options(weights, huber, shape, "(N, nq)" if qd_meas is None else "(N, 2 nq) (q then qd)", "trajectory_residuals")
    return SingleShooting(ts, q_meas, q0, qd0, qd_meas, w, huber, rtol, atol, adjoint, solver)


def _times(ts):
    ts = measured(ts, "ts", ("N",))
    if not isinstance(ts, jax.core.Tracer) and ts.shape[0] > 1 and not bool(jnp.all(jnp.diff(ts) > 0)):
        k = int(np.argmax(~(np.diff(np.asarray(ts)) > 0)))
        raise ValueError(f"ts must be strictly increasing (ts[{k}] = {float(ts[k])!r}, ts[{k + 1}] = {float(ts[k + 1])!r})")
    return ts


class MultipleShooting(eqx.Module):
    """Callable ``(model, forces, (Q, Q̇)) -> r``; ``Q, Q̇`` ``(K, nq)`` start the K segments."""

    ts: jnp.ndarray  # (K, n+1): each segment's sample times, shared end points
    q_meas: jnp.ndarray  # (K, n+1, nq)
    continuity_weight: float = 1.0
    weights: Any = None
    huber: Any = None
    rtol: float = eqx.field(static=True, default=1e-9)
    atol: float = eqx.field(static=True, default=1e-11)
    adjoint: Any = eqx.field(static=True, default=None)

    def predict(self, tree):
        model, forces, (q0s, qd0s) = tree

        def one(ts, q0, qd0):
            sol = simulate(model, q0, qd0, ts[0], ts[-1], saveat=ts, forces=forces, rtol=self.rtol, atol=self.atol,
                           adjoint=self.adjoint or diffrax.ForwardMode())
            return sol.ys

        return jax.vmap(one)(self.ts, q0s, qd0s)

    def __call__(self, tree):
        _, _, (q0s, qd0s) = tree
        q, qd = self.predict(tree)
        fit_r = finish(q[:, :-1] - self.q_meas[:, :-1], None if self.weights is None else self.weights, self.huber)
        last = finish(q[-1, -1] - self.q_meas[-1, -1], None, self.huber)
        defect = jnp.concatenate([q[:-1, -1] - q0s[1:], qd[:-1, -1] - qd0s[1:]], axis=-1)
        return jnp.concatenate([fit_r, last, self.continuity_weight * jnp.ravel(defect)])

    def initial_states(self, qd_meas=None):
        """Starting ``(Q, Q̇)`` from the data: segment-start samples, velocities by finite differences."""
        q0s = self.q_meas[:, 0]
        if qd_meas is not None:
            return q0s, jnp.asarray(qd_meas)
        dt = self.ts[:, 1] - self.ts[:, 0]
        return q0s, (self.q_meas[:, 1] - self.q_meas[:, 0]) / dt[:, None]


def multiple_shooting(ts, q_meas, n_segments: int, *, continuity_weight=1.0, weights=None, huber=None, rtol=1e-9,
                      atol=1e-11, adjoint=None) -> MultipleShooting:
    """Cut ``N = K·n + 1`` samples into ``K = n_segments`` segments of ``n + 1`` samples (shared ends)."""
    ts, q_meas = _times(ts), measured(q_meas, "q_meas", ("N", "nq"))
    same_samples(ts=ts, q_meas=q_meas)
    n_total = ts.shape[0] - 1
    if isinstance(n_segments, bool) or not isinstance(n_segments, (int, np.integer)) or not 1 <= n_segments <= max(n_total, 1):
        raise ValueError(f"multiple_shooting: n_segments must be an integer from 1 to {max(n_total, 1)} (samples - 1), "
                         f"got {n_segments!r}")
    if n_total < 1:
        raise ValueError("multiple_shooting: needs at least 2 samples (one segment)")
    if n_total % n_segments:
        raise ValueError(f"multiple_shooting: {n_total + 1} samples do not split into {n_segments} equal segments (need K·n + 1)")
    n = n_total // n_segments
    idx = jnp.arange(n_segments)[:, None] * n + jnp.arange(n + 1)[None, :]
    weights = options(weights, huber, (n_segments, n, q_meas.shape[1]), "(K, n, nq) (segment, sample, coordinate)",
                      "multiple_shooting")
    return MultipleShooting(ts[idx], q_meas[idx], continuity_weight, weights, huber, rtol, atol, adjoint)
