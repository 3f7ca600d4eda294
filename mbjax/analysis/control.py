"""Computed-torque tracking (Ehsani §4-4 C, Eq. 200-201).

The desired motion ``q_des(t)`` is a :class:`Trajectory` (an ``eqx.Module``; its samples are
dynamic leaves, and ``q̇_des``, ``q̈_des`` are the *exact* derivatives of its ``position`` by
forward-mode autodiff).  The control law (Eq. 200-201, with ERRATA: Eq. 200's ``N`` is ``N q̇``)::

    Q_d = q̈_des - 2K (q̇ - q̇_des) - K² (q - q_des)        (Eq. 201, K diagonal > 0)
    τ   = M(q) Q_d + N(q, q̇) q̇ - G(q)                     (second block row of Eq. 200 solved for τ)

is one recursive Newton-Euler pass, ``τ = inverse_dynamics(model, q, q̇, Q_d)``.  Substituted in
``M q̈ + N q̇ = G + τ`` (Eq. 198) it gives ``q̈ = Q_d``: every coordinate's error ``e = q - q_des``
obeys ``ë + 2K ė + K² e = 0``, a critically damped linear ODE with the closed form
``e(t) = (e0 + (ė0 + K e0) t) e^{-Kt}``.  With consistent initial conditions (``e0 = ė0 = 0``) the
exact closed loop follows ``q_des`` identically; what a simulation shows is the integrator's
local error (which the loop also damps) and rounding.

:func:`track` simulates the closed loop: the plant (``mbjax.simulate``: forward dynamics through
a Cholesky solve of M, a diffrax solver) driven by a :class:`ComputedTorque` controller, then
recomputes τ at the saved times.  The seed solves Eq. 200 with Runge-Kutta-Fehlberg 4(5);
diffrax has no RKF45 by that name, the default here is ``diffrax.Tsit5`` (also an embedded 4(5)
explicit pair with adaptive steps; ``diffrax.Dopri5`` is the other 4(5) pair) — any diffrax solver
can be passed.  Compile once: gains, trajectory samples (same count), initial state, times and
tolerances are array leaves; a new model topology, solver, trajectory class or number of saved
times re-traces (see :mod:`mbjax._simulate`).
"""

from __future__ import annotations

import warnings
from typing import Callable, NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._dynamics import inverse_dynamics
from .._model import Model, require_model
from .._simulate import simulate

__all__ = [
    "Trajectory",
    "MinimumJerk",
    "QuinticHermite",
    "FunctionTrajectory",
    "ComputedTorque",
    "TrackingResult",
    "computed_torque",
    "track",
]


# --------------------------------------------------------------------------------------------
# desired trajectories
# --------------------------------------------------------------------------------------------


class Trajectory(eqx.Module):
    """A desired motion ``t -> q_des(t)`` ``(nq,)``; calling it gives ``(q, q̇, q̈)`` at scalar ``t``.

    Subclasses implement :meth:`position`; velocities and accelerations are its exact first and
    second time derivatives (nested ``jax.jvp``), so the three are always consistent.
    """

    def position(self, t):
        raise NotImplementedError

    def __call__(self, t):
        def vel(s):
            return jax.jvp(self.position, (s,), (jnp.ones_like(s),))

        t = jnp.asarray(t, dtype=self._dtype())
        (q, qd), (_, qdd) = jax.jvp(vel, (t,), (jnp.ones_like(t),))
        return q, qd, qdd

    def _dtype(self):
        leaves = [x for x in jax.tree_util.tree_leaves(self) if eqx.is_inexact_array(x)]
        return leaves[0].dtype if leaves else jnp.result_type(float)

    def time_span(self):
        """``(first, last)`` time the trajectory is given on (None: every time), for warnings."""
        return None


def _min_jerk(s):
    """``10 s³ - 15 s⁴ + 6 s⁵``: 0 → 1 with zero first and second derivatives at both ends."""
    return s**3 * (10.0 + s * (-15.0 + 6.0 * s))


class MinimumJerk(Trajectory):
    """Minimum-jerk move from ``q_start`` at ``t_start`` to ``q_end`` at ``t_end`` (Flash & Hogan 1985).

    ``q(t) = q_start + (q_end - q_start) s(τ)``, ``s = 10τ³ - 15τ⁴ + 6τ⁵``, ``τ`` clipped to
    ``[0, 1]``: constant (rest) before and after; C² everywhere (s', s'' vanish at both ends).
    """

    t_start: jnp.ndarray
    t_end: jnp.ndarray
    q_start: jnp.ndarray
    q_end: jnp.ndarray

    def __init__(self, t_start, t_end, q_start, q_end):
        self.q_start = jnp.asarray(q_start, dtype=float)
        self.q_end = jnp.asarray(q_end, dtype=self.q_start.dtype)
        self.t_start = jnp.asarray(t_start, dtype=self.q_start.dtype)
        self.t_end = jnp.asarray(t_end, dtype=self.q_start.dtype)
        if self.q_start.shape != self.q_end.shape:
            raise ValueError(f"MinimumJerk: q_start and q_end must have one shape (nq,), got {self.q_start.shape} and "
                             f"{self.q_end.shape}")
        concrete = not any(isinstance(x, jax.core.Tracer) for x in (self.t_start, self.t_end))
        if concrete and not float(self.t_end) > float(self.t_start):
            raise ValueError(f"MinimumJerk: t_end must be later than t_start (the move's duration divides), got "
                             f"t_start = {float(self.t_start)}, t_end = {float(self.t_end)}")

    def position(self, t):
        tau = jnp.clip((t - self.t_start) / (self.t_end - self.t_start), 0.0, 1.0)
        return self.q_start + (self.q_end - self.q_start) * _min_jerk(tau)


class QuinticHermite(Trajectory):
    """Piecewise quintic Hermite spline through knots ``ts`` ``(n,)`` with ``q``, ``q̇``, ``q̈`` ``(n, nq)``.

    On ``[t_i, t_{i+1}]`` (``h = t_{i+1} - t_i``, ``s = (t - t_i)/h``) the unique quintic matching
    position, velocity and acceleration at both knots::

        q = H0 q_i + h H1 q̇_i + h² H2 q̈_i + h² H3 q̈_{i+1} + h H4 q̇_{i+1} + H5 q_{i+1}
        H0 = 1 - 10s³ + 15s⁴ - 6s⁵,  H1 = s - 6s³ + 8s⁴ - 3s⁵,  H2 = (s² - 3s³ + 3s⁴ - s⁵)/2,
        H3 = (s³ - 2s⁴ + s⁵)/2,      H4 = -4s³ + 7s⁴ - 3s⁵,     H5 = 10s³ - 15s⁴ + 6s⁵

    so the spline is C² (q̈_des continuous: no torque jumps).  Outside ``[t_0, t_{n-1}]`` the end
    segments' polynomials are extrapolated.  Zero ``q̇``, ``q̈`` at the knots gives minimum-jerk
    segments between via points; :meth:`from_samples` estimates them from samples.
    """

    ts: jnp.ndarray
    q: jnp.ndarray
    qd: jnp.ndarray
    qdd: jnp.ndarray

    def __init__(self, ts, q, qd=None, qdd=None):
        q = jnp.asarray(q, dtype=float)
        if q.ndim == 1:
            q = q[:, None]
        self.q = q
        self.ts = jnp.asarray(ts, dtype=q.dtype)
        self.qd = jnp.zeros_like(q) if qd is None else jnp.asarray(qd, dtype=q.dtype).reshape(q.shape)
        self.qdd = jnp.zeros_like(q) if qdd is None else jnp.asarray(qdd, dtype=q.dtype).reshape(q.shape)
        if self.ts.ndim != 1 or self.ts.shape[0] < 2 or self.ts.shape[0] != q.shape[0]:
            raise ValueError(f"QuinticHermite: need >= 2 knots ts (n,) and q (n, nq), got {self.ts.shape} and {q.shape}")
        for name, value in (("ts", self.ts), ("q", q), ("qd", self.qd), ("qdd", self.qdd)):
            if not isinstance(value, jax.core.Tracer) and not np.all(np.isfinite(np.asarray(value))):
                raise ValueError(f"QuinticHermite: knot values must be finite: {name} holds NaN or inf")
        if not isinstance(self.ts, jax.core.Tracer) and np.any(np.diff(np.asarray(self.ts)) <= 0):
            raise ValueError("QuinticHermite: knot times must be strictly increasing")

    def time_span(self):
        return self.ts[0], self.ts[-1]

    @classmethod
    def from_samples(cls, ts, q, bc_type="not-a-knot"):
        """Knot derivatives from a cubic interpolating spline through ``(ts, q)`` (SciPy, host side).

        The quintic through the samples with the cubic spline's q̇ and q̈ at the knots: C², and
        exact at the samples.  ``bc_type`` as in ``scipy.interpolate.CubicSpline`` (``"clamped"``:
        zero end velocities).
        """
        from scipy.interpolate import CubicSpline

        ts_np, q_np = np.asarray(ts, dtype=float), np.asarray(q, dtype=float)
        cs = CubicSpline(ts_np, q_np, axis=0, bc_type=bc_type)
        return cls(ts_np, q_np, cs(ts_np, 1), cs(ts_np, 2))

    def position(self, t):
        n = self.ts.shape[0]
        i = jnp.clip(jnp.searchsorted(self.ts, jax.lax.stop_gradient(t), side="right") - 1, 0, n - 2)
        h = self.ts[i + 1] - self.ts[i]
        s = (t - self.ts[i]) / h
        s2, s3 = s * s, s * s * s
        s4, s5 = s3 * s, s3 * s2
        h0 = 1.0 - 10.0 * s3 + 15.0 * s4 - 6.0 * s5
        h1 = s - 6.0 * s3 + 8.0 * s4 - 3.0 * s5
        h2 = 0.5 * (s2 - 3.0 * s3 + 3.0 * s4 - s5)
        h3 = 0.5 * (s3 - 2.0 * s4 + s5)
        h4 = -4.0 * s3 + 7.0 * s4 - 3.0 * s5
        h5 = 10.0 * s3 - 15.0 * s4 + 6.0 * s5
        return (h0 * self.q[i] + h * h1 * self.qd[i] + h * h * h2 * self.qdd[i]
                + h * h * h3 * self.qdd[i + 1] + h * h4 * self.qd[i + 1] + h5 * self.q[i + 1])


class FunctionTrajectory(Trajectory):
    """``q_des = fn(t, params)`` for any smooth JAX function (closed-form trajectories).

    ``fn`` is static (hashed by identity: keep the same function object to compile once);
    ``params`` is a pytree of arrays (dynamic).  Derivatives by autodiff, as for every trajectory.
    """

    params: object
    fn: Callable = eqx.field(static=True)

    def __init__(self, fn: Callable, params=None):
        self.fn = fn
        self.params = params

    def position(self, t):
        return self.fn(t, self.params)

    def _dtype(self):
        leaves = [x for x in jax.tree_util.tree_leaves(self.params) if eqx.is_inexact_array(x)]
        return leaves[0].dtype if leaves else jnp.result_type(float)


# --------------------------------------------------------------------------------------------
# the control law
# --------------------------------------------------------------------------------------------


def computed_torque(model: Model, q, qd, q_des, qd_des, qdd_des, gains):
    """τ = M Q_d + N q̇ - G with Q_d = q̈_des - 2K(q̇ - q̇_des) - K²(q - q_des) (Eq. 200-201).

    ``gains`` is the diagonal of K ``(nq,)`` (or a scalar): each coordinate's error is critically
    damped with the double pole ``-K_j``.  One recursive Newton-Euler pass (``inverse_dynamics``
    at the commanded acceleration Q_d).
    """
    require_model(model, "computed_torque")
    nq, ctx = model.n_coordinates, _checks.coordinates_context(model)
    args = {"q": q, "qd": qd, "q_des": q_des, "qd_des": qd_des, "qdd_des": qdd_des}
    args = {k: _checks.as_array(v, f"computed_torque: {k}", (nq,), ("nq",), ctx) for k, v in args.items()}
    k = _gains(gains, model, "computed_torque", args["q"].dtype)
    rules = [_checks.not_finite(v, f"computed_torque: {name}", ctx) for name, v in args.items()]
    rules.append(_checks.not_finite(k, "computed_torque: gains", ctx))
    q = _checks.all_of(args["q"], rules)
    return _law(model, q, args["qd"], args["q_des"], args["qd_des"], args["qdd_des"], k)


def _law(model, q, qd, q_des, qd_des, qdd_des, k):
    """:func:`computed_torque` without its argument checks (the simulation's vector field)."""
    qdd_cmd = qdd_des - 2.0 * k * (qd - qd_des) - k * k * (q - q_des)
    return inverse_dynamics(model, q, qd, qdd_cmd)


def _gains(gains, model, where: str, dtype):
    """The gains K ``(nq,)`` from one number or one per coordinate (never another length)."""
    gains = _checks.real_array(gains, f"{where}: gains must be a number or an array (nq,)",
                               f"{where}: gains must be real").astype(dtype)
    if gains.shape not in ((), (model.n_coordinates,)):
        raise ValueError(f"{where}: gains must be one number or one per coordinate, shape (nq,) = "
                         f"({model.n_coordinates},) for {tuple(model.coordinate_names)}, got shape {gains.shape}")
    return jnp.broadcast_to(gains, (model.n_coordinates,))


class ComputedTorque(eqx.Module):
    """Computed-torque controller ``(t, q, q̇) -> τ``: usable as ``controls=`` of :func:`mbjax.simulate`.

    ``model`` is the controller's internal model (the plant may differ: model-mismatch studies);
    ``trajectory`` a :class:`Trajectory`; ``gains`` the diagonal of K ``(nq,)``.  All arrays are
    dynamic leaves: new gains or trajectory samples do not recompile a simulation.
    """

    model: Model
    trajectory: Trajectory
    gains: jnp.ndarray

    def __init__(self, model: Model, trajectory: Trajectory, gains):
        require_model(model, "ComputedTorque")
        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"ComputedTorque: trajectory must be a mbjax.analysis.control.Trajectory (MinimumJerk, "
                            f"QuinticHermite, FunctionTrajectory), got {type(trajectory).__name__}")
        self.model = model
        self.trajectory = trajectory
        gains = _gains(gains, model, "ComputedTorque", trajectory._dtype())
        if not isinstance(gains, jax.core.Tracer) and not np.all(np.asarray(gains) > 0):
            raise ValueError(f"ComputedTorque: gains K must be positive (critically damped poles -K), got {gains}")
        self.gains = gains

    def __call__(self, t, q, qd):
        q_des, qd_des, qdd_des = self.trajectory(t)
        q_des = _checks.all_of(q_des, [(~jnp.isfinite(q_des) | ~jnp.isfinite(qd_des) | ~jnp.isfinite(qdd_des),
                                        f"ComputedTorque: the trajectory ({type(self.trajectory).__name__}) returned "
                                        "NaN or inf (q_des, qd_des or qdd_des) at a time of the simulation")])
        return _law(self.model, q, qd, q_des, qd_des, qdd_des, self.gains)


class TrackingResult(NamedTuple):
    """Closed-loop solution at the saved times ``ts`` ``(n,)``: states, torques, desired motion."""

    ts: jnp.ndarray
    q: jnp.ndarray  # (n, nq)
    qd: jnp.ndarray
    tau: jnp.ndarray  # (n, nq) controller torques recomputed at the saved states
    q_des: jnp.ndarray
    qd_des: jnp.ndarray
    qdd_des: jnp.ndarray
    solution: diffrax.Solution


def _warn_beyond_span(trajectory: Trajectory, t0, t1) -> None:
    """Warn when ``[t0, t1]`` leaves the times a trajectory is given on (its end segments extrapolate)."""
    span = trajectory.time_span()
    if span is None or any(isinstance(x, jax.core.Tracer) for x in (*span, t0, t1)):
        return
    first, last = float(span[0]), float(span[1])
    if float(t0) < first or float(t1) > last:
        warnings.warn(f"track: the simulated time [{float(t0):.6g}, {float(t1):.6g}] s leaves the trajectory's knots "
                      f"[{first:.6g}, {last:.6g}] s; its end segments are extrapolated there (the desired motion can "
                      "run far off): add knots that cover the time span", stacklevel=3)


@eqx.filter_jit
def _sampled(trajectory: Trajectory, ts):
    return jax.vmap(trajectory)(ts)


def _check_trajectory_at(trajectory: Trajectory, ts) -> None:
    """Refuse, before integrating, a trajectory that is NaN or inf at one of the times ``ts`` (concrete
    times only; inside the simulation the controller checks it at run time), naming the first time."""
    if isinstance(ts, jax.core.Tracer) or any(isinstance(x, jax.core.Tracer)
                                              for x in jax.tree_util.tree_leaves(trajectory)):
        return
    bad = ~np.all(np.isfinite(np.concatenate([np.asarray(x).reshape(len(ts), -1)
                                              for x in _sampled(trajectory, ts)], axis=1)), axis=1)
    if bad.any():
        t = np.asarray(ts)[bad]
        raise ValueError(f"track: the trajectory ({type(trajectory).__name__}) returned NaN or inf (q_des, qd_des or "
                         f"qdd_des) at t = {float(t[0]):.6g} s" + (f" (and {t.size - 1} more of the saved times)"
                                                                   if t.size > 1 else "")
                         + ": it must be finite over [t0, t1]")


@eqx.filter_jit
def _along(controller: ComputedTorque, ts, q, qd):
    tau = jax.vmap(controller)(ts, q, qd)
    des = jax.vmap(controller.trajectory)(ts)
    return tau, des


def track(
    model: Model,
    trajectory: Trajectory,
    gains,
    t0,
    t1,
    *,
    saveat=None,
    q0=None,
    qd0=None,
    plant: Model | None = None,
    solver=None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    **simulate_kwargs,
) -> TrackingResult:
    """Simulate the computed-torque closed loop from ``t0`` to ``t1`` and return states and torques.

    ``q0``, ``qd0`` default to the desired state at ``t0`` (consistent start: exact tracking).
    ``saveat``: times ``(n,)`` (default 101 equally spaced in ``[t0, t1]``).  ``plant`` is the
    simulated model (default ``model``: the controller knows the plant exactly).  ``solver``
    defaults to ``diffrax.Tsit5()`` (the seed: RKF45; see the module docstring).  Further keyword
    arguments go to :func:`mbjax.simulate`.  τ is the controller's output at the saved states.
    """
    require_model(model, "track")
    controller = ComputedTorque(model, trajectory, gains)
    dtype = controller.gains.dtype
    q_t0 = jax.eval_shape(lambda t: trajectory(t)[0], jnp.asarray(t0, dtype))
    if q_t0.shape != (model.n_coordinates,):
        raise ValueError(f"track: the trajectory gives q_des of shape {q_t0.shape}, the model has "
                         f"{model.n_coordinates} coordinates {tuple(model.coordinate_names)}: give the trajectory one "
                         "column per coordinate")
    _warn_beyond_span(trajectory, t0, t1)
    if saveat is None:
        saveat = jnp.linspace(jnp.asarray(t0, dtype), jnp.asarray(t1, dtype), 101)
    ts = jnp.asarray(saveat, dtype=dtype)
    _check_trajectory_at(trajectory, jnp.concatenate([jnp.asarray(t0, dtype)[None], ts]))
    if q0 is None or qd0 is None:
        q_start, qd_start, _ = trajectory(jnp.asarray(t0, dtype))
        q0 = q_start if q0 is None else q0
        qd0 = qd_start if qd0 is None else qd0
    ctx = _checks.coordinates_context(model)
    q0, qd0 = (_checks.as_array(jnp.asarray(x, dtype), f"track: {k}", (model.n_coordinates,), ("nq",), ctx)
               for k, x in (("q0", q0), ("qd0", qd0)))
    q0 = _checks.all_of(q0, [_checks.not_finite(q0, "track: q0", ctx), _checks.not_finite(qd0, "track: qd0", ctx)])
    sol = simulate(plant if plant is not None else model, jnp.asarray(q0, dtype), jnp.asarray(qd0, dtype), t0, t1,
                   saveat=ts, solver=solver, controls=controller, rtol=rtol, atol=atol, **simulate_kwargs)
    q, qd = sol.ys
    tau, (q_des, qd_des, qdd_des) = _along(controller, ts, q, qd)
    return TrackingResult(ts, q, qd, tau, q_des, qd_des, qdd_des, sol)
