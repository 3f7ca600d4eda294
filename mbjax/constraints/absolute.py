"""Absolute-coordinate kinematic analysis of a planar closed chain (Shabana 2005, ch. 3).

The "traditional method" the seed compares against (§4-3): every body has absolute coordinates
``p_i = (x_i, y_i, φ_i)`` of its centre of mass; revolute joints, the ground pivots and the driving
constraints give ``C(p, q) = 0`` with the analytic constraint Jacobian ``C_p``.  Position: Newton
on ``C``; velocity: ``C_p ṗ = -C_t``; acceleration: ``C_p p̈ = Q_d`` with, for a revolute joint
``R_i + A_i u_i - R_j - A_j u_j = 0``, ``Q_d = A_i u_i φ̇_i² - A_j u_j φ̇_j²`` (Shabana Eq. 3.xx),
and ``Q_d = q̈`` for driving constraints ``D p = q`` that are linear in ``p``.  Nothing here uses
joint maps, ∇f or H: it is an independent route for the tests and the experiments.

:class:`PlanarChain` is a serial chain of ``n`` rigid links from the ground pivot (0, 0) to the
ground pivot ``(l0, 0)``; link ``i`` has length ``L_i`` and its centre of mass at distance ``c_i``
from its proximal pivot on the link's axis (body x axis).
"""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx


def _real(x, name: str):
    try:
        arr = jnp.asarray(x)
    except TypeError:
        arr = None
    if arr is None or not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"PlanarChain: {name} must be a real array, got {type(x).__name__}: {x!r}")
    return arr.astype(float)


def _rot(phi):
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.array([[c, -s], [s, c]])


def _drot(phi):
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.array([[-s, -c], [c, -s]])


class PlanarChain(eqx.Module):
    """Serial planar chain closed to ground: lengths ``(n,)``, COM distances ``(n,)``, ground span ``l0``,
    driving matrix ``drive`` ``(n_q, 3n)`` (``D p = q``)."""

    lengths: jnp.ndarray
    com: jnp.ndarray
    l0: jnp.ndarray
    drive: jnp.ndarray

    def __init__(self, lengths, com, l0, drive):
        self.lengths = _real(lengths, "lengths")
        self.com = _real(com, "com")
        self.l0 = _real(l0, "l0")
        self.drive = _real(drive, "drive")
        if self.lengths.ndim != 1 or self.lengths.shape[0] < 3:
            raise ValueError(f"PlanarChain: lengths must be a 1-D array of n >= 3 link lengths (a closed chain "
                             f"with ground has n - 2 >= 1 dof), got shape {self.lengths.shape}")
        n = self.lengths.shape[0]
        if self.com.shape != (n,):
            raise ValueError(f"PlanarChain: com must have shape (n,) = ({n},) (one COM distance per link), "
                             f"got {self.com.shape}")
        if self.l0.shape != ():
            raise ValueError(f"PlanarChain: l0 (ground span) must be a scalar, got shape {self.l0.shape}")
        if self.drive.shape != (n - 2, 3 * n):
            raise ValueError(
                f"PlanarChain: a closed chain of {n} links has {n - 2} dof, so drive must be "
                f"({n - 2}, {3 * n}), got {self.drive.shape}"
            )

    def __check_init__(self):
        if any(isinstance(x, jax.core.Tracer) for x in (self.lengths, self.com, self.l0, self.drive)):
            return
        for name in ("lengths", "com", "l0", "drive"):
            if not np.all(np.isfinite(np.asarray(getattr(self, name)))):
                raise ValueError(f"PlanarChain: {name} contains NaN or inf")
        if np.any(np.asarray(self.lengths) <= 0):
            raise ValueError(f"PlanarChain: lengths must be > 0, got {np.asarray(self.lengths)}")

    @property
    def n(self) -> int:
        return self.lengths.shape[0]

    def _joints(self):
        """For each of the n+1 pivots: (body_i, u_i, body_j, u_j) with -1 = ground."""
        n = self.n
        out = []
        for k in range(n + 1):
            bi, bj = k - 1, k  # pivot k joins link k-1 (distal) and link k (proximal)
            ui = (self.lengths[bi] - self.com[bi]) if bi >= 0 else None
            uj = -self.com[bj] if bj < n else None
            out.append((bi, ui, bj if bj < n else -1, uj))
        return out

    def ground_point(self, k):
        return jnp.zeros(2) if k == 0 else jnp.stack([self.l0, jnp.zeros_like(self.l0)])

    def constraints(self, p, q):
        """C(p, q): pivots (2 each, n+1 of them) then driving ``D p - q``."""
        p3 = p.reshape(-1, 3)
        rows = []
        for k, (bi, ui, bj, uj) in enumerate(self._joints()):
            ri = p3[bi, :2] + _rot(p3[bi, 2]) @ jnp.stack([ui, 0.0 * ui]) if bi >= 0 else self.ground_point(k)
            rj = p3[bj, :2] + _rot(p3[bj, 2]) @ jnp.stack([uj, 0.0 * uj]) if bj >= 0 else self.ground_point(k)
            rows.append(ri - rj)
        return jnp.concatenate(rows + [self.drive @ p - q])

    def jacobian(self, p):
        """Analytic C_p ``(3n, 3n)``."""
        n = self.n
        p3 = p.reshape(-1, 3)
        cp = jnp.zeros((2 * (n + 1), 3 * n), p.dtype)
        for k, (bi, ui, bj, uj) in enumerate(self._joints()):
            for b, u, sgn in ((bi, ui, 1.0), (bj, uj, -1.0)):
                if b < 0:
                    continue
                cp = cp.at[2 * k : 2 * k + 2, 3 * b : 3 * b + 2].set(sgn * jnp.eye(2, dtype=p.dtype))
                cp = cp.at[2 * k : 2 * k + 2, 3 * b + 2].set(sgn * _drot(p3[b, 2]) @ jnp.stack([u, 0.0 * u]))
        return jnp.concatenate([cp, self.drive.astype(p.dtype)], axis=0)

    def gamma(self, p, pd, qdd):
        """Q_d of C_p p̈ = Q_d: revolute ``A_i u_i φ̇_i² - A_j u_j φ̇_j²``; driving ``q̈``."""
        p3 = p.reshape(-1, 3)
        w = pd.reshape(-1, 3)[:, 2]
        rows = []
        for bi, ui, bj, uj in self._joints():
            r = jnp.zeros(2, p.dtype)
            if bi >= 0:
                r = r + _rot(p3[bi, 2]) @ jnp.stack([ui, 0.0 * ui]) * w[bi] ** 2
            if bj >= 0:
                r = r - _rot(p3[bj, 2]) @ jnp.stack([uj, 0.0 * uj]) * w[bj] ** 2
            rows.append(r)
        return jnp.concatenate(rows + [qdd])

    def from_joint_angles(self, theta):
        """Absolute coordinates from relative joint angles θ (forward kinematics; for initial guesses)."""
        phi = jnp.cumsum(theta)
        pts = [jnp.zeros(2)]
        out = []
        for i in range(self.n):
            e = jnp.stack([jnp.cos(phi[i]), jnp.sin(phi[i])])
            out.append(jnp.concatenate([pts[-1] + self.com[i] * e, phi[i][None]]))
            pts.append(pts[-1] + self.lengths[i] * e)
        return jnp.concatenate(out)


class AbsoluteState(NamedTuple):
    p: jnp.ndarray
    pd: jnp.ndarray
    pdd: jnp.ndarray


def position(chain: PlanarChain, q, guess, tol: float = 1e-14):
    """Newton solve of C(p, q) = 0 from ``guess`` (optimistix, analytic Jacobian not needed there)."""
    sol = optx.root_find(
        lambda p, qq: chain.constraints(p, qq), optx.Newton(rtol=tol, atol=tol), guess, args=q,
        max_steps=50, throw=False,
    )
    p = sol.value
    return eqx.error_if(
        p, ~(jnp.max(jnp.abs(chain.constraints(p, q))) < 1e-9), "absolute analysis: position solve did not converge"
    )


def kinematics(chain: PlanarChain, q, qd, qdd, guess) -> AbsoluteState:
    """Position, velocity and acceleration of all absolute coordinates for one instant."""
    p = position(chain, q, guess)
    cp = chain.jacobian(p)
    m = 2 * (chain.n + 1)
    pd = jnp.linalg.solve(cp, jnp.concatenate([jnp.zeros(m, p.dtype), qd]))  # C_t = [0; -q̇]
    pdd = jnp.linalg.solve(cp, chain.gamma(p, pd, qdd))
    return AbsoluteState(p, pd, pdd)


def trajectory(chain: PlanarChain, qs, qds, qdds, guess) -> AbsoluteState:
    """:func:`kinematics` along a trajectory, each Newton solve started from the previous instant."""

    def step(p_prev, x):
        s = kinematics(chain, *x, p_prev)
        return s.p, s

    _, out = jax.lax.scan(step, guess, (qs, qds, qdds))
    return out


def point_kinematics(chain: PlanarChain, state: AbsoluteState, body: int, u):
    """Position, velocity, acceleration of the point ``u`` (body frame relative to the COM, ``(2,)``) of ``body``.

    r = R + A u,  v = Ṙ + φ̇ A_φ u,  a = R̈ + φ̈ A_φ u - φ̇² A u.
    """
    u = jnp.asarray(u)
    p3, v3, a3 = (x.reshape(-1, 3)[body] for x in state)
    a_ = _rot(p3[2])
    da = _drot(p3[2])
    r = p3[:2] + a_ @ u
    v = v3[:2] + v3[2] * (da @ u)
    acc = a3[:2] + a3[2] * (da @ u) - v3[2] ** 2 * (a_ @ u)
    return r, v, acc


def drive_rows(n: int, rows) -> np.ndarray:
    """Helper: driving matrix from ``[(coef, body, component), ...]`` per row (component 0=x, 1=y, 2=φ)."""
    d = np.zeros((len(rows), 3 * n))
    for r, terms in enumerate(rows):
        for coef, body, comp in terms:
            d[r, 3 * body + comp] += coef
    return d
