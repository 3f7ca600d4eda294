"""The shoulder as a DAE: clavicle and scapula free, the rhythm as constraints (Ehsani §4-4 C baseline).

The seed compares its empirical ODE (3 coordinates; clavicle and scapula follow the rhythm through
joint maps, :func:`mbjax.models.shoulder.shoulder_model`) with a DAE model of the same shoulder
solved after index reduction.  Here, as for Andrews' squeezer (:mod:`mbjax.models.andrews`):

* :func:`free_shoulder_model`: the same trimmed MoBL file with its ``ConstraintSet`` removed, so
  every one of the 14 joint coordinates (SC, AC, the "unrot" phantoms, ``shoulder1_r2``, the three
  humerus coordinates) is a generalized coordinate (body i's joint variable is coordinate i).
* the rhythm as ``m = 11`` holonomic constraints ``g(q) = q_D - f_D(q_I) = 0``: each dependent
  coordinate minus its value under the ODE model's joint maps of the independent coordinates
  ``q_I = (elv_angle, shoulder_elv, shoulder_rot)`` (so both formulations share one rhythm,
  bit for bit; for the affine rhythms g is linear and γ = Ġ q̇ vanishes, computed anyway).
* index 3 -> index 1 by differentiating g twice, Baumgarte stabilized (``g̈ + 2α ġ + β² g = 0``),
  with the computed-torque law as the extra block row of Eq. 200 (``τ`` acts on ``q_I`` only)::

      [ M   Gᵀ  -B ] [ q̈ ]   [ -(N q̇ - G) ]
      [ G   0    0 ] [ λ  ] = [ -γ - 2α ġ - β² g ]
      [ Bᵀ  0    0 ] [ τ  ]   [ Q_d(t, q_I, q̇_I) ]   (Eq. 201)

  ``B`` selects ``q_I``; one dense LU solve of size 14 + 11 + 3 per right-hand side.
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._dynamics import inverse_dynamics, mass_matrix
from .._kinematics import joint_values
from .._model import Model
from ..opensim.model.osim import load_osim
from .shoulder import COORDINATES, trimmed_osim


def free_shoulder_model(path: str | None = None) -> Model:
    """The trimmed MoBL shoulder with no couplers: 14 independent joint coordinates (see module docstring)."""
    trimmed = trimmed_osim(path)
    try:
        tree = ET.parse(trimmed)
        cons = tree.getroot().find("Model/ConstraintSet/objects")
        if cons is not None:
            for c in list(cons):
                cons.remove(c)
        tree.write(trimmed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_osim(trimmed, ignore_wrapping=True)
    finally:
        os.remove(trimmed)
    return model


class RhythmConstraints(eqx.Module):
    """``g(q) = q_D - f_D(q_I)`` with ``f`` the joint maps of the reduced (ODE) shoulder model."""

    reduced: Model
    independent: tuple[int, ...] = eqx.field(static=True)  # indices of q_I in the free model's q
    dependent: tuple[int, ...] = eqx.field(static=True)  # indices of q_D (= their bodies' indices)

    def __init__(self, reduced: Model, free: Model):
        if reduced.body_names != free.body_names:
            raise ValueError("free and reduced shoulder models must have the same bodies")
        ind = [free.coordinate_names.index(c) for c in COORDINATES]
        probe = jnp.linspace(0.1, 0.9, free.n_coordinates)
        jv = joint_values(free, probe)
        if not (np.allclose(np.asarray(jv.value), np.asarray(probe)) and np.allclose(np.asarray(jv.gradient), np.eye(free.n_coordinates))):
            raise ValueError("free shoulder model: body i's joint variable must be coordinate i")
        self.reduced = reduced
        self.independent = tuple(ind)
        self.dependent = tuple(i for i in range(free.n_coordinates) if i not in ind)

    def __call__(self, q):
        ind, dep = np.asarray(self.independent), np.asarray(self.dependent)
        f = joint_values(self.reduced, q[ind]).value
        return q[dep] - f[dep]

    def consistent_state(self, q_ind, qd_ind, n: int):
        """Full ``(q, q̇)`` of the free model on the constraint manifold for given ``(q_I, q̇_I)``."""
        ind, dep = np.asarray(self.independent), np.asarray(self.dependent)
        jv = joint_values(self.reduced, q_ind)
        q = jnp.zeros(n, q_ind.dtype).at[dep].set(jv.value[dep]).at[ind].set(q_ind)
        qd = jnp.zeros(n, q_ind.dtype).at[dep].set((jv.gradient @ qd_ind)[dep])
        return q, qd.at[ind].set(qd_ind)


class TrackingDAEField(eqx.Module):
    """Index-1, Baumgarte-stabilized computed-torque DAE as an ODE in the free model's ``(q, q̇)``.

    ``__call__`` is the diffrax vector field (the free model is ``args``); :meth:`solve` returns
    ``(q̈, λ, τ)``.  ``alpha``, ``beta`` and ``gains`` are array leaves.
    """

    constraints: RhythmConstraints
    trajectory: eqx.Module
    gains: jnp.ndarray
    alpha: jnp.ndarray
    beta: jnp.ndarray

    def __init__(self, constraints, trajectory, gains, alpha=10.0, beta=10.0):
        self.constraints = constraints
        self.trajectory = trajectory
        self.gains = jnp.asarray(gains, dtype=float)
        self.alpha = jnp.asarray(alpha, dtype=float)
        self.beta = jnp.asarray(beta, dtype=float)

    def solve(self, t, q, qd, free: Model):
        ind = np.asarray(self.constraints.independent)
        n, ni = q.shape[0], ind.shape[0]
        m = mass_matrix(free, q)
        f = -inverse_dynamics(free, q, qd, jnp.zeros_like(q))  # G - N q̇
        g = self.constraints(q)
        gq = jax.jacfwd(self.constraints)(q)
        gdot = gq @ qd
        gamma = jax.jvp(lambda z: jax.jvp(self.constraints, (z,), (qd,))[1], (q,), (qd,))[1]
        q_des, qd_des, qdd_des = self.trajectory(t)
        k = self.gains
        qdd_cmd = qdd_des - 2.0 * k * (qd[ind] - qd_des) - k * k * (q[ind] - q_des)
        nc = g.shape[0]
        b = jnp.zeros((n, ni), q.dtype).at[ind, jnp.arange(ni)].set(1.0)
        z = lambda r, c: jnp.zeros((r, c), q.dtype)  # noqa: E731
        kkt = jnp.block([[m, gq.T, -b], [gq, z(nc, nc), z(nc, ni)], [b.T, z(ni, nc), z(ni, ni)]])
        rhs = jnp.concatenate([f, -gamma - 2 * self.alpha * gdot - self.beta**2 * g, qdd_cmd])
        x = jnp.linalg.solve(kkt, rhs)
        return x[:n], x[n:n + nc], x[n + nc:]

    def __call__(self, t, y, free):
        q, qd = y
        return qd, self.solve(t, q, qd, free)[0]
