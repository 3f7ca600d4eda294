"""Inverse kinematics from markers, all frames at once (OpenSim's ``InverseKinematicsTool`` problem).

Per frame ``k`` the coordinates minimise OpenSim's IK objective (``InverseKinematicsSolver``)::

    Σ_m w_m |⁰r_m(q) - x_m(t_k)|² / Σ_m w_m  +  Σ_c w_c (q_c - q_c^ref(t_k))²

over the model's free coordinates, a weighted nonlinear least-squares problem solved by
Levenberg-Marquardt.  The marker term is a weighted *mean* (sums over the markers
present in the frame), as Simbody's ``Assembler`` ``Markers`` goal computes it; coordinate-task
terms are not normalised.  (Measured on OpenSim 4.6's Gait2354 IK setup: the marker gradient at
its solution balances the coordinate tasks with weight 1000 · Σ w_m = 92100, not 1000.)  With
marker tasks only, the normalisation does not move the solution.  The Jacobian is closed-form
(:func:`mbjax.markers.marker_positions_and_jacobian`: one kinematics pass per evaluation, not a
forward-mode sweep over the coordinates).

``method="scan"`` (default, ``lax.scan`` over frames): frame 0 is solved from ``q0`` (default: the
model's default pose, as OpenSim's first ``assemble``), each later frame from the line through the
two previous solutions (OpenSim's ``track`` starts from the last one; both converge to the same
pose, the extrapolated start is closer on a smooth motion: 432 instead of 472 steps on Gait2354),
by a Levenberg-Marquardt written out on the normal equations
(:func:`_solve_tracking`: a kinematics pass and a 23 x 23 Cholesky per step, with a secant
(Dennis-Gay-Welsch) model of the curvature Gauss-Newton leaves out, carried from frame to frame:
about 6 steps per Gait2354 frame); a frame it does not solve is solved again by ``optimistix.LevenbergMarquardt`` from the
same start.  (An earlier design, optimistix for frame 0 and Gauss-Newton with ``jacfwd`` Jacobians for
the others, took many more steps to the same solutions: ``benchmarks/RESULTS.md``.)
``method="vmap"``: every frame in parallel from its own start ``q0 (T, nq)`` (a previous or coarser
solution: the batched polish on an accelerator) by ``optimistix.LevenbergMarquardt``.  Each
frame is solved to the same tolerance either way, and both take one compilation per marker count:
weights, bounds, locks and tasks are traced arrays.

Long trials are cut into chunks of ``chunk`` frames (the last chunk padded, so one compilation), a
chunk warm-started from the previous one; a shorter trial is padded to the next quarter octave
(:func:`mbjax.id_tool.padded_length`), so trials of similar lengths share one program; ``progress``
prints one line per chunk.

* **Missing markers** (NaN in the data) have weight 0 in that frame, as in OpenSim; their error is NaN.
* **Bounds**: OpenSim restricts only ``clamped`` coordinates to their range (``AssemblySolver::
  setupGoals``, ``Assembler::restrictQ``); ``bounds="clamped"`` does the same, ``"all"`` bounds every
  coordinate by its range, ``None`` none.  A bounded coordinate is reparametrised smoothly
  (MINUIT's transform) ``q = mid + half·sin(u)``, ``mid, half`` the range's centre and half width, so
  every iterate lies in the range and a solution on a bound is reached exactly (``sin u = ±1``).
  ``sin u = ±1`` is a stationary point of the transform, so a frame never starts there: its start
  ``u = arcsin((q0 - mid)/half)`` has ``q0`` clipped to the range shrunk by 1e-6 half widths, and
  the next frame can leave a bound the motion leaves.
* **Locked coordinates**: those locked in the ``.osim`` are not coordinates of the mbjax model (held
  at their default by :func:`mbjax.io.load_osim`); ``locked`` holds more (by name at their default,
  or ``{name: value}``).  Coordinate tasks on locked coordinates are dropped, as in OpenSim.
* **Weights**: ``weights`` maps marker name to weight (``None``: every marker in both the model and
  the data, weight 1); only markers named there are tracked, as OpenSim tracks only markers with an
  applied ``IKMarkerTask``.  ``coordinate_tasks`` maps coordinate name to a weight (track the default
  value) or a :class:`CoordinateTask` (``default_value``, ``manual_value`` in internal units
  (radians / metres) as OpenSim passes ``IKCoordinateTask::getValue`` unconverted, or
  ``from_file``: the ``coordinate_data`` table, linearly interpolated at the marker times; OpenSim
  fits an interpolating quintic ``GCVSpline``, equal at the file's sample times).
  :func:`read_ik_setup` reads both from an OpenSim IK setup XML.

Errors reported per frame are OpenSim's: marker distance ``|⁰r_m - x_m|``, their RMS over the
markers present and the maximum.
"""

from __future__ import annotations

import os
import time as _time
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jax.custom_derivatives import SymbolicZero

from .program_store import persistent
from ._batching import padded_length
from . import _checks
from .io.motion_ranges import warn_outside_ranges
from .io.storage import (
    TRC_UNIT_NAMES,
    TRC_UNITS,
    MarkerData,
    Table,
    coordinates_from_table,
    prepare_output,
    read_storage,
    read_trc,
    table_from_coordinates,
    write_storage,
)
from .markers import Markers, _marker_kinematics, marker_positions_and_jacobian


class CoordinateTask(NamedTuple):
    """An ``IKCoordinateTask``: ``weight`` and the reference ``value_type`` (``"default_value"``,
    ``"manual_value"`` with ``value`` in radians / metres, or ``"from_file"``)."""

    weight: float
    value_type: str = "default_value"
    value: float = 0.0


class IKSetup(NamedTuple):
    """What an OpenSim ``InverseKinematicsTool`` setup file says (paths made absolute)."""

    model_file: str | None
    marker_file: str | None
    coordinate_file: str | None
    output_motion_file: str | None
    time_range: tuple[float, float] | None
    accuracy: float
    constraint_weight: float
    marker_weights: dict
    coordinate_tasks: dict
    #: ``<results_directory>/<tool name>_ik_marker_errors.sto`` when ``<report_errors>`` (OpenSim's
    #: default true), else None
    errors_file: str | None = None


class IKResult(NamedTuple):
    """IK solution: ``time (T,)``, coordinates ``q (T, nq)`` (radians / metres, model order), the
    tracked ``marker_names``, ``marker_errors (T, nm)`` (metres, NaN where missing), per-frame
    ``rms`` and ``max`` marker error, ``converged (T,)`` and solver ``steps (T,)``."""

    time: np.ndarray
    q: np.ndarray
    coordinate_names: tuple[str, ...]
    marker_names: tuple[str, ...]
    marker_errors: np.ndarray
    rms: np.ndarray
    max: np.ndarray
    converged: np.ndarray
    steps: np.ndarray


class _Spec(NamedTuple):  # static (hashable) part of the problem: one compilation per setting
    method: str
    rtol: float
    atol: float
    max_steps: int


class _Fixed(NamedTuple):  # traced per-problem arrays (new values never recompile)
    model: object
    markers: Markers
    free: jnp.ndarray  # (nq,) 1 = solved for, 0 = held at q_fix
    bounded: jnp.ndarray  # (nq,) 1 = kept in [lo, hi]
    q_fix: jnp.ndarray
    lo: jnp.ndarray
    hi: jnp.ndarray
    wc: jnp.ndarray  # (nq,) coordinate-task weights (0 = no task)


def _to_q(fx: _Fixed, u):
    """Coordinates of the solver variables: ``mid + half sin u`` on bounded ones, ``q_fix`` on held ones."""
    mid, half = 0.5 * (fx.lo + fx.hi), 0.5 * (fx.hi - fx.lo)
    q = jnp.where(fx.bounded > 0, mid + half * jnp.sin(u), u)
    return jnp.where(fx.free > 0, q, fx.q_fix)


#: a start on a bound is moved this fraction of the half range inside: ``sin u = ±1`` is a stationary
#: point of the transform (zero gradient), from which a solver could not leave the bound
_BOUND_NUDGE = 1e-6


def _to_u(fx: _Fixed, q, xp=jnp):
    """Inverse of :func:`_to_q`, ``q`` clipped into ``[lo, hi]`` shrunk by ``_BOUND_NUDGE`` half widths
    (``xp=np``: on the host, for the start, with ``fx``'s arrays as NumPy arrays)."""
    mid, half = 0.5 * (fx.lo + fx.hi), 0.5 * (fx.hi - fx.lo)
    b = fx.bounded > 0
    s = xp.clip((q - mid) / xp.where(b, half, 1.0), -1.0 + _BOUND_NUDGE, 1.0 - _BOUND_NUDGE)
    return xp.where(b, xp.arcsin(s), q)


def _restart(fx: _Fixed, u):
    """A frame's start from the previous frame's solution: bounded coordinates moved off the bound."""
    return _to_u(fx, _to_q(fx, u))


def _residual_plain(u, args):
    """Weighted residuals ``[√w_m (⁰r_m(q) - x_m); √w_c (q_c - q_c^ref)]`` of one frame (``w_m``
    normalised to sum 1 over the markers present)."""
    fx, x, w, qref = args
    q = _to_q(fx, u)
    pos = _marker_kinematics(fx.model, fx.markers, q, jacobian=False)  # = marker_positions
    r_m = (jnp.sqrt(w)[:, None] * (pos - x)).reshape(-1)
    r_c = jnp.sqrt(fx.wc) * (q - qref)
    return jnp.concatenate([r_m, r_c])


def _residual_parts(u, args):
    """The residuals of :func:`_residual_plain` and their Jacobian in ``u``, in closed form
    (:func:`mbjax.markers.marker_positions_and_jacobian` times ``dq/du``), split as the marker
    part ``(r_m (3 nm,), J_m (3 nm, nq))`` and the coordinate-task part ``(r_c (nq,), d_c (nq,))``
    whose Jacobian is ``diag(d_c)`` (kept diagonal: the normal equations never form its zeros)."""
    fx, x, w, qref = args
    q = _to_q(fx, u)
    half = 0.5 * (fx.hi - fx.lo)
    dq = jnp.where(fx.free > 0, jnp.where(fx.bounded > 0, half * jnp.cos(u), 1.0), 0.0)
    pos, jac = marker_positions_and_jacobian(fx.model, fx.markers, q)
    sw, sc = jnp.sqrt(w), jnp.sqrt(fx.wc)
    r_m = (sw[:, None] * (pos - x)).reshape(-1)
    j_m = (sw[:, None, None] * jac).reshape(-1, q.shape[0]) * dq[None]
    return (r_m, sc * (q - qref)), (j_m, sc * dq)


def _residual_jacobian(u, args):
    """:func:`_residual_parts` as one residual vector and one ``(3 nm + nq, nq)`` Jacobian."""
    (r_m, r_c), (j_m, d_c) = _residual_parts(u, args)
    return jnp.concatenate([r_m, r_c]), jnp.concatenate([j_m, jnp.diag(d_c)])


@jax.custom_jvp
def _residual(u, args):
    """:func:`_residual_plain` whose derivative in ``u`` is the closed-form Jacobian (what the
    solvers materialise: one kinematics pass instead of a forward-mode sweep over ``nq``
    coordinates); derivatives in ``args`` (marker data, weights, model), when asked for, are
    forward-mode through :func:`_residual_plain`."""
    return _residual_plain(u, args)


def _residual_jvp(primals, tangents):
    u, args = primals
    t_u, t_args = tangents
    r, jac = _residual_jacobian(u, args)
    out = jac @ t_u if not isinstance(t_u, SymbolicZero) else jnp.zeros_like(r)
    leaves, tree = jax.tree_util.tree_flatten(args)
    t_leaves = jax.tree_util.tree_leaves(t_args, is_leaf=lambda t: isinstance(t, SymbolicZero))
    moved = [k for k, t in enumerate(t_leaves) if not isinstance(t, SymbolicZero)]
    if moved:  # only the perturbed leaves: a zero tangent through sqrt(0) weights would give NaN

        def of(*xs):
            new = list(leaves)
            for k, v in zip(moved, xs):
                new[k] = v
            return _residual_plain(u, jax.tree_util.tree_unflatten(tree, new))

        out = out + jax.jvp(of, tuple(leaves[k] for k in moved), tuple(t_leaves[k] for k in moved))[1]
    return r, out


_residual.defjvp(_residual_jvp, symbolic_zeros=True)


def _solve(spec: _Spec, fx: _Fixed, u0, x, w, qref):
    """optimistix's Levenberg-Marquardt from ``u0`` (every frame of ``vmap``; the fallback of ``scan``)."""
    solver = optx.LevenbergMarquardt(rtol=spec.rtol, atol=spec.atol)
    sol = optx.least_squares(_residual, solver, u0, args=(fx, x, w, qref), max_steps=spec.max_steps, throw=False)
    return sol.value, sol.result == optx.RESULTS.successful, sol.stats["num_steps"]


def _solve_tracking(spec: _Spec, fx: _Fixed, u0, x, w, qref, curv):
    """Levenberg-Marquardt written out for one frame (``method="scan"``: frame 0 from ``q0``, later
    frames from the previous frame's solution), with a secant model of the residual curvature.

    Each step solves ``(JᵀJ + S + λ diag(JᵀJ)) δ = Jᵀr`` (Cholesky, ``nq x nq``) with the
    closed-form Jacobian (:func:`_residual_parts`); the trial point's residual and Jacobian come from
    one evaluation, kept when the cost does not rise beyond rounding (then ``λ /= 10``, else
    ``λ = max(10 λ, 1e-4)``).  λ starts at 1e-6.  ``S ≈ Σ r_i ∇²r_i`` is the curvature term that
    Gauss-Newton leaves out (it converges only linearly, ~0.17 per step on Gait2354's 2-cm residuals):
    the Dennis-Gay-Welsch secant update of NL2SOL after every accepted step (``y# = (J₊ - J)ᵀ r₊``,
    sized by ``min(1, |sᵀy#| / |sᵀ S s|)``), carried from frame to frame (``curv``, zero at the start
    of a chunk) since the motion is smooth; a step where ``JᵀJ + S`` is not positive definite is a
    plain Gauss-Newton one.  Gait2354: 473 instead of 781 steps, the same poses (to 4e-10 rad).
    Converged as optimistix's Cauchy test: ``|δ| <= atol + rtol |u|`` elementwise and
    ``|Δcost| <= atol + rtol cost`` on an accepted step.  Locked coordinates (zero columns) get a
    unit diagonal (their step is 0); a 1e-12 relative floor keeps ``JᵀJ`` positive definite.
    Returns ``(u, converged, steps, S)``."""
    args = (fx, x, w, qref)
    eye_fixed = 1.0 - fx.free
    rise = max(1e-12, 100.0 * float(jnp.finfo(u0.dtype).eps))  # a cost "rise" at rounding level is no rise

    def cost_of(r):
        return 0.5 * (r[0] @ r[0] + r[1] @ r[1])

    def grad_of(r, jac):
        return jac[0].T @ r[0] + jac[1] * r[1]

    def cond(st):
        return (~st[5]) & (st[6] < spec.max_steps)

    def body(st):
        u, r, jac, cost, lam, _, k, curv = st
        j_m, d_c = jac
        a = j_m.T @ j_m + jnp.diag(d_c * d_c)
        g = grad_of(r, jac)
        diag = jnp.diagonal(a)
        reg = jnp.diag(lam * diag + 1e-12 * jnp.max(diag) + eye_fixed)
        factor = jax.scipy.linalg.cho_factor(a + curv + reg)
        chol = jax.lax.cond(jnp.all(jnp.isfinite(factor[0])), lambda: factor[0],
                            lambda: jax.scipy.linalg.cho_factor(a + reg)[0])  # S indefinite here: Gauss-Newton
        step = jax.scipy.linalg.cho_solve((chol, factor[1]), g)
        u_t = u - step
        r_t, jac_t = _residual_parts(u_t, args)
        cost_t = cost_of(r_t)
        short = jnp.all(jnp.abs(step) <= spec.atol + spec.rtol * jnp.abs(u_t))
        # a step below the tolerance is kept even if rounding raises the cost (near-zero residuals)
        ok = jnp.isfinite(cost_t) & ((cost_t <= cost * (1.0 + rise)) | short)
        small = (short & (jnp.abs(cost - cost_t) <= spec.atol + spec.rtol * cost_t)
                 & (lam <= 1e-5))  # a short step, not one shortened by damping
        # Dennis-Gay-Welsch update of S along the step s = -step
        s_ = -step
        y = grad_of(r_t, jac_t) - g
        y_sharp = grad_of(r_t, jac_t) - grad_of(r_t, jac)
        ys = y @ s_
        sss = s_ @ curv @ s_
        size = jnp.where(sss > 0, jnp.minimum(1.0, jnp.abs(s_ @ y_sharp) / jnp.where(sss > 0, sss, 1.0)), 1.0)
        sized = size * curv
        v = y_sharp - sized @ s_
        ys_safe = jnp.where(ys > 0, ys, 1.0)
        new = sized + (jnp.outer(v, y) + jnp.outer(y, v)) / ys_safe - (v @ s_) * jnp.outer(y, y) / ys_safe ** 2
        curv = jnp.where(ok & (ys > 0) & jnp.all(jnp.isfinite(new)), new, curv)
        u, r, jac, cost = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), (u_t, r_t, jac_t, cost_t),
                                                 (u, r, jac, cost))
        lam = jnp.where(ok, 0.1 * lam, jnp.maximum(10.0 * lam, 1e-4))
        return u, r, jac, cost, lam, ok & small, k + 1, curv

    r0, jac0 = _residual_parts(u0, args)
    dtype = u0.dtype
    st = (u0, r0, jac0, cost_of(r0), jnp.asarray(1e-6, dtype), jnp.asarray(False), jnp.asarray(0), curv)
    u, _, _, _, _, done, k, curv = jax.lax.while_loop(cond, body, st)
    return u, done & jnp.all(jnp.isfinite(u)), k, curv


def _solve_warm(spec: _Spec, fx: _Fixed, u0, x, w, qref, curv):
    """One frame of ``method="scan"``: :func:`_solve_tracking` (5-7 steps per Gait2354 frame, each a
    fraction of an optimistix step); a frame it does not solve is solved again by optimistix's
    Levenberg-Marquardt from the same start (and the curvature model starts again from zero)."""
    gn = _solve_tracking(spec, fx, u0, x, w, qref, curv)
    ok = gn[1]

    def fallback(_):
        u, ok_lm, steps = _solve(spec, fx, u0, x, w, qref)
        return u, ok_lm, steps + gn[2], jnp.zeros_like(curv)

    return jax.lax.cond(ok, lambda _: gn, fallback, None)


@persistent("mbjax.ik._solve_chunk")
def _solve_chunk(spec: _Spec, fx: _Fixed, x, w, qref, u_start):
    """One chunk of frames: ``lax.scan`` (each frame from the previous solution, the first from
    ``u_start (nq,)``, all by :func:`_solve_warm`) or ``vmap`` (every frame from its own
    ``u_start (C, nq)``, in parallel, Levenberg-Marquardt)."""
    if spec.method == "scan":
        def step(carry, frame):
            u, u_prev, curv = carry
            xk, wk, rk = frame
            # start from the line through the last two solutions (q, not the bounded u: its sin
            # map bends the line), one step closer than the last solution on a smooth motion
            q_new = 2.0 * _to_q(fx, u) - _to_q(fx, u_prev)
            u_new, ok, steps, curv = _solve_warm(spec, fx, _to_u(fx, q_new), xk, wk, rk, curv)
            return (u_new, u, curv), (u_new, ok, steps)

        nq = u_start.shape[-1]
        curv0 = jnp.zeros((nq, nq), u_start.dtype)
        _, (u, ok, steps) = jax.lax.scan(step, (u_start, u_start, curv0), (x, w, qref))
    else:
        u, ok, steps = jax.vmap(lambda u0, xk, wk, rk: _solve(spec, fx, u0, xk, wk, rk))(u_start, x, w, qref)
    q = jax.vmap(lambda uk: _to_q(fx, uk))(u)

    def at_solution(uk, qk, xk, wk, rk):  # the markers and, from their Jacobian, the coordinates left free
        pos, jac = marker_positions_and_jacobian(fx.model, fx.markers, qk)
        loose = undetermined_coordinates(fx, jac, wk)
        return pos, loose, _stationary(spec, fx, uk, qk, pos, jac, xk, wk, rk, loose)

    xm, loose, still = jax.vmap(at_solution)(u, q, x, w, qref)
    return u, q, xm, ok & still, steps, loose


#: a frame is converged only if a Gauss-Newton step from its solution is within this many times the
#: solver's tolerance (the solvers stop on a short step, which a damped step may be far from the optimum)
_STATIONARY_MARGIN = 100.0


def _stationary(spec: _Spec, fx: _Fixed, u, q, pos, jac, x, w, qref, loose):
    """Whether one frame's solution is a minimum to the solver's tolerance: the undamped Gauss-Newton
    step in ``u`` from it is within ``_STATIONARY_MARGIN (atol + rtol |u|)`` on every free coordinate
    (those the tasks leave undetermined, ``loose``, and bounded ones on their bound, where the step
    in ``u`` is not small, left out)."""
    nq = q.shape[0]
    half = 0.5 * (fx.hi - fx.lo)
    dq = jnp.where(fx.free > 0, jnp.where(fx.bounded > 0, half * jnp.cos(u), 1.0), 0.0)
    sw, sc = jnp.sqrt(w), jnp.sqrt(fx.wc)
    r_m = (sw[:, None] * (pos - x)).reshape(-1)
    j_m = (sw[:, None, None] * jac).reshape(-1, nq) * dq[None]
    d_c = sc * dq
    a = j_m.T @ j_m + jnp.diag(d_c * d_c)
    g = j_m.T @ r_m + d_c * (sc * (q - qref))
    on_bound = (fx.bounded > 0) & (jnp.abs(jnp.sin(u)) >= 1.0 - _BOUND_NUDGE)
    keep = (fx.free > 0) & ~loose & ~on_bound
    a = jnp.where(keep[:, None] & keep[None, :], a, jnp.eye(nq, dtype=a.dtype))
    g = jnp.where(keep, g, 0.0)
    a = a + 1e-12 * jnp.max(jnp.diagonal(a)) * jnp.eye(nq, dtype=a.dtype)
    step = jnp.linalg.solve(a, g)
    return jnp.all(jnp.isfinite(step) & (jnp.abs(step) <= _STATIONARY_MARGIN * (spec.atol + spec.rtol * jnp.abs(u))))


def undetermined_coordinates(fx: _Fixed, jac, w):
    """Free coordinates ``(nq,)`` that one frame's tasks do not determine, from the marker
    Jacobian ``jac (nm, 3, nq)`` at its solution: those in a null direction of the normal matrix
    ``JᵀJ = Σ w_m J_mᵀ J_m + diag(w_c)`` of the weighted marker and coordinate tasks in q (held
    coordinates excluded; eigenvalues below ``100 eps`` of the largest), e.g. a coordinate moving
    only bodies without markers in this frame, or rotation about the line through a body's only two
    markers."""
    nq = jac.shape[-1]
    j = (jnp.sqrt(w)[:, None, None] * jac).reshape(-1, nq)
    free = fx.free > 0
    a = j.T @ j + jnp.diag(fx.wc)
    a = jnp.where(free[:, None] & free[None, :], a, jnp.eye(nq, dtype=a.dtype))
    lam, vec = jnp.linalg.eigh(a)
    null = lam <= 100.0 * jnp.finfo(a.dtype).eps * lam[-1]
    return free & jnp.any(null[None, :] & (jnp.abs(vec) > 0.1), axis=1)


def _coordinate_refs(model, tasks, free_names, coordinate_data, times):
    """Coordinate-task weights ``(nq,)`` (0: no task) and reference values ``(T, nq)``."""
    info = model.extras.get("osim")
    names = model.coordinate_names
    default = np.asarray(info.default) if info is not None else np.zeros(len(names))
    roles = dict(info.roles) if info is not None else {}
    wc = np.zeros(len(names))
    qref = np.zeros((len(times), len(names)))
    file_q = cols = None
    for name, task in (tasks or {}).items():
        task = (task._replace(weight=_weight(f"coordinate task {name!r}", task.weight)) if isinstance(task, CoordinateTask)
                else CoordinateTask(_weight(f"coordinate task {name!r}", task)))
        if name not in names:
            role = roles.get(name)
            if role is None:
                raise ValueError(f"coordinate task {name!r}: no such coordinate; coordinates are {names}")
            if role != "locked":
                warnings.warn(f"coordinate task {name!r} on a {role} coordinate is ignored", stacklevel=3)
            continue  # OpenSim drops tasks on locked coordinates
        if name not in free_names:
            continue  # locked by the caller
        i = names.index(name)
        if task.value_type == "default_value":
            ref = np.full(len(times), default[i])
        elif task.value_type == "manual_value":
            if not np.isfinite(float(task.value)):
                raise ValueError(f"coordinate task {name!r}: manual_value must be finite, got {task.value}")
            ref = np.full(len(times), float(task.value))
        elif task.value_type == "from_file":
            if coordinate_data is None:
                raise ValueError(f"coordinate task {name!r} is from_file but no coordinate_data was given")
            if file_q is None:
                file_q = coordinates_from_table(model, coordinate_data, missing="default")
                cols = {lab.strip("/").split("/")[-2] if lab.endswith("/value") else lab.split("/")[-1]
                        for lab in coordinate_data.labels}
            if name not in cols:
                raise ValueError(f"coordinate task {name!r}: value for coordinate not found in the coordinate file")
            ref = np.interp(times, coordinate_data.time, file_q[:, i])
        else:
            raise ValueError(f"coordinate task {name!r}: unknown value_type {task.value_type!r}")
        if not (np.isfinite(task.weight) and task.weight >= 0):
            raise ValueError(f"coordinate task {name!r}: weight must be finite and >= 0, got {task.weight}")
        wc[i] = float(task.weight)
        qref[:, i] = ref
    return wc, qref


#: marker data spread this many times as far as (or this fraction of) the model's markers at the
#: solution is refused: a subject differs from a generic model by far less, a unit by 10-1000 times
_SCALE_LIMIT = 4.0


def _check_marker_scale(data, x, xm, present):
    """Refuse marker data whose size does not match the model's: the median over frames (with three
    or more markers present) of the data's spread (RMS distance of the markers from their centroid)
    over the model's markers' at the IK solution.  Millimetre data under ``Units m`` gives ~1000
    (the pose cannot stretch the model, so IK returns a pose and a huge error, not an error)."""
    use = present.sum(axis=1) >= 3
    if not use.any():
        return

    def spread(p):
        p = np.where(present[use][..., None], p[use], np.nan)
        c = np.nanmean(p, axis=1, keepdims=True)
        return np.sqrt(np.nanmean(np.sum((p - c) ** 2, axis=-1), axis=1))

    model_spread = spread(xm)
    ok = model_spread > 0
    if not ok.any():
        return
    ratio = float(np.median(spread(x)[ok] / model_spread[ok]))
    if 1.0 / _SCALE_LIMIT <= ratio <= _SCALE_LIMIT:
        return
    factor = TRC_UNITS.get(TRC_UNIT_NAMES.get(data.units, data.units), 1.0) / ratio  # metres per file unit
    guess = min(TRC_UNITS, key=lambda u: abs(np.log(TRC_UNITS[u] / factor)))
    raise ValueError(f"IK: the marker data (Units={data.units!r}) spread {ratio:.3g} times as far as the model's "
                     f"markers at the best pose: the file's units do not match its values (they look like "
                     f"{guess!r}); fix its Units header")


def _report_undetermined(names, times, loose, ok):
    """Name the coordinates the tasks leave free (``loose (T, nq)``, :func:`undetermined_coordinates`).
    One the tasks determine in no frame (no marker on a body it moves, no coordinate task) is the
    setup's choice, as in OpenSim (its assembler leaves it where it starts): it stays at its start
    (the default pose, then the previous frame's value) and is named in a warning, the frames being
    converged.  One the tasks determine in other frames (missing markers) makes a frame where they
    do not one of many poses: reported as not converged (``ok`` is updated in place), with a warning
    naming the coordinates and the first such frame (a frame with no marker at all among them)."""
    if not loose.any():
        return
    never = loose.all(axis=0)
    if never.any():
        warnings.warn(f"IK: no marker or coordinate task determines {', '.join(repr(names[k]) for k in np.flatnonzero(never))} "
                      "in any frame: held at the start (the default value, as OpenSim's assembler leaves it); "
                      "weight a marker on a body it moves, add a coordinate task, or lock it", stacklevel=3)
    partial = loose & ~never[None, :]
    frames = partial.any(axis=1)
    if frames.any():
        ok &= ~frames
        first = int(np.argmax(frames))
        coords = ", ".join(repr(names[k]) for k in np.flatnonzero(partial.any(axis=0)))
        warnings.warn(f"IK: at {int(frames.sum())} of {len(times)} frame(s) (first at t = {times[first]:.6g} s) the "
                      f"markers present do not determine {coords}: those poses are one of many and are reported "
                      "as not converged", stacklevel=3)


def _default_tolerance() -> float:
    """The solver's default ``rtol = atol``: 1e-9 in float64, 1e-5 in float32 (1e-10 can stall in
    trust-region rejections at roundoff)."""
    return 1e-9 if jnp.result_type(float) == jnp.float64 else 1e-5


def _tolerance(name: str, value) -> float:
    """A solver tolerance: a finite number >= 0 (a negative one would pass every step as converged)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"IK: {name} must be a number, got {value!r}") from None
    if not (np.isfinite(v) and v >= 0):
        raise ValueError(f"IK: {name} must be a finite number >= 0, got {value!r}")
    return v


def _weight(what: str, value) -> float:
    """A task weight as a float; a value that is not a number is refused naming the task."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: weight must be a number, got {value!r}") from None


def _checked_marker_data(data: MarkerData) -> MarkerData:
    """``data`` with ``time (T,)`` and ``positions (T, len(names), 3)`` as float arrays and unique
    names; anything else is refused naming the field and its shape."""
    names = tuple(str(n) for n in data.names)
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"IK: the marker data names {', '.join(map(repr, dup))} more than once: "
                         "rename or drop the duplicate markers")
    try:
        time = np.asarray(data.time, float)
        pos = np.asarray(data.positions, float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"IK: marker data time and positions must be real arrays: {e}") from None
    if time.ndim != 1:
        raise ValueError(f"IK: marker data time must have shape (T,), got {time.shape}")
    if time.shape[0] == 0:
        raise ValueError("IK: the marker data has no frames")
    if pos.ndim != 3 or pos.shape[2] != 3:
        raise ValueError(f"IK: marker data positions must have shape (T, n_markers, 3) (x, y, z of each marker "
                         f"in each frame), got {pos.shape}")
    if pos.shape[1] != len(names):
        raise ValueError(f"IK: marker data positions hold {pos.shape[1]} markers (shape {pos.shape}) but names "
                         f"holds {len(names)} {names}: give one name per marker")
    if pos.shape[0] != time.shape[0]:
        raise ValueError(f"IK: marker data positions hold {pos.shape[0]} frames (shape {pos.shape}) but time "
                         f"holds {time.shape[0]}: give one time per frame")
    if not np.all(np.isfinite(time)):
        raise ValueError("IK: marker data time holds NaN or inf")
    return data._replace(time=time, names=names, positions=pos)


def _checked_q0(q0, names, T: int, method: str) -> np.ndarray:
    """The start ``q0``: ``(nq,)`` (or ``(T, nq)`` with ``method="vmap"``), finite, refused naming
    the coordinates otherwise."""
    try:
        q = np.asarray(q0, float)
    except (TypeError, ValueError):
        raise ValueError(f"IK: q0 must be an array of numbers, got {q0!r}") from None
    nq = len(names)
    shapes = [(nq,), (T, nq)] if method == "vmap" else [(nq,)]
    if q.shape not in shapes:
        want = " or ".join(map(str, shapes))
        raise ValueError(f"IK: q0 must have shape {want} for coordinates {tuple(names)}, got {q.shape}")
    bad = ~np.isfinite(q.reshape(-1, nq)).all(axis=0)
    if bad.any():
        raise ValueError(f"IK: q0 holds NaN or inf for {', '.join(repr(n) for n, b in zip(names, bad) if b)}")
    return q


def inverse_kinematics(model, markers: Markers, data: MarkerData, weights=None, coordinate_tasks=None, *,
                       coordinate_data: Table | None = None, locked=None, bounds: str | None = "clamped",
                       q0=None, method: str = "scan", rtol: float | None = None, atol: float | None = None,
                       max_steps: int = 200, chunk: int = 256, progress: bool | None = None) -> IKResult:
    """Inverse kinematics of every frame of ``data`` (see the module docstring for the method).

    ``method="scan"``: frames in sequence, each from the previous solution (the first from ``q0``,
    default the model's default pose).  ``method="vmap"``: all frames of a chunk in parallel, each
    from its row of ``q0 (T, nq)`` (e.g. a previous or coarser solution; default: the default pose).
    ``rtol``/``atol``: optimistix's Cauchy termination on the solver variables and the objective
    (default 1e-9 in float64, 1e-5 in float32); a frame is reported converged only if, besides,
    a Gauss-Newton step from its solution is within 100 times that tolerance.  ``progress``: print
    a line per chunk of ``chunk`` frames (default: when there is more than one chunk).
    """
    if method not in ("scan", "vmap"):
        raise ValueError(f"method must be 'scan' or 'vmap', got {method!r}")
    tol = _default_tolerance()
    rtol = tol if rtol is None else _tolerance("rtol", rtol)
    atol = tol if atol is None else _tolerance("atol", atol)
    if rtol == 0 and atol == 0:
        raise ValueError("IK: rtol and atol are both 0: no step passes the convergence test; give a positive "
                         f"tolerance (default {tol:g})")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"IK: chunk (frames solved per program run) must be a positive integer, got {chunk!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"IK: max_steps must be a positive integer, got {max_steps!r}")
    data = _checked_marker_data(data)
    names = model.coordinate_names
    nq = len(names)
    info = model.extras.get("osim")
    # ---- markers and weights -----------------------------------------------------------------
    if weights is None:
        used = [n for n in data.names if n in markers.names]
        wdict = {n: 1.0 for n in used}
    else:
        wdict = {str(k): _weight(f"IK marker task {k!r}", v) for k, v in dict(weights).items()}
        unknown = {n: ("the model or the marker data" if n not in markers.names and n not in data.names
                       else "the model" if n not in markers.names else "the marker data")
                   for n in wdict if n not in markers.names or n not in data.names}
        used = [n for n in data.names if n in wdict and n in markers.names]
        if unknown and not used:
            raise ValueError("IK: no weighted marker is in both the model and the marker data: "
                             + ", ".join(f"{n!r} (not in {where})" for n, where in unknown.items())
                             + f"; model markers {markers.names}, marker data {data.names}")
        for n, where in unknown.items():
            warnings.warn(f"IK marker task {n!r}: marker not in {where}; ignored", stacklevel=2)
    if not used:
        raise ValueError(f"no marker is in both the model {markers.names} and the data {data.names}")
    bad = [n for n in used if not (np.isfinite(wdict[n]) and wdict[n] >= 0)]
    if bad:
        raise ValueError(f"marker weights must be finite and >= 0: {[(n, wdict[n]) for n in bad]}")
    if not any(wdict[n] > 0 for n in used):
        raise ValueError(f"every marker weight is 0 ({', '.join(used)}): no marker task determines the pose; "
                         "give the markers to track weights > 0")
    mk = markers.select(used)
    col = [data.names.index(n) for n in used]
    x = np.asarray(data.positions, float)[:, col]
    present = np.all(np.isfinite(x), axis=-1)
    w = np.where(present, np.asarray([wdict[n] for n in used])[None, :], 0.0)
    w_sum = w.sum(axis=1, keepdims=True)
    w = np.where(w_sum > 0, w / np.where(w_sum > 0, w_sum, 1.0), 0.0)  # Simbody's weighted mean
    never = [n for k, n in enumerate(used) if wdict[n] > 0 and not present[:, k].any()]
    if never:
        warnings.warn(f"IK: marker(s) {', '.join(map(repr, never))} have weight > 0 but no data in any frame "
                      "(empty in the marker data): they track nothing; check the marker file's labels",
                      stacklevel=2)
    x = np.where(present[..., None], x, 0.0)
    times = np.asarray(data.time, float)
    T = times.shape[0]
    # ---- coordinates: locked, bounds, start ----------------------------------------------------
    default = np.asarray(info.default, float) if info is not None else np.zeros(nq)
    q_fix = default.copy()
    lock = {}
    if locked is not None:
        lock = dict(locked) if isinstance(locked, dict) else {n: None for n in locked}
    for n, v in lock.items():
        if n not in names:
            raise ValueError(f"locked coordinate {n!r} is not a coordinate of the model {names}")
        if v is not None:
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ValueError(f"IK: locked coordinate {n!r}: value must be a number, got {v!r}") from None
            if not np.isfinite(v):
                raise ValueError(f"IK: locked coordinate {n!r}: value must be finite, got {v}")
            q_fix[names.index(n)] = v
    free = np.array([n not in lock for n in names])
    if bounds not in (None, "clamped", "all"):
        raise ValueError(f"bounds must be 'clamped', 'all' or None, got {bounds!r}")
    if bounds is not None and info is None:
        raise ValueError("bounds need OpenSim coordinate ranges (model.extras['osim']); pass bounds=None")
    lo = np.asarray(info.lower, float) if info is not None else np.zeros(nq)
    hi = np.asarray(info.upper, float) if info is not None else np.ones(nq)
    if bounds == "clamped":
        bounded = np.asarray(info.clamped, bool)
    else:
        bounded = np.full(nq, bounds == "all")
    bounded &= free
    for i in np.flatnonzero(bounded):
        if not lo[i] < hi[i]:
            raise ValueError(f"coordinate {names[i]!r}: range [{lo[i]}, {hi[i]}] is empty; cannot bound it")
    wc, qref = _coordinate_refs(model, coordinate_tasks, [n for n in names if n not in lock], coordinate_data,
                                times)
    start = np.broadcast_to(default if q0 is None else _checked_q0(q0, names, T, method), (T, nq) if method == "vmap"
                            else (nq,))
    start = np.where(free, start, q_fix)
    spec = _Spec(method, rtol, atol, int(max_steps))
    dtype = jnp.result_type(float)
    np_dtype = np.dtype(dtype)
    j = lambda a: np.asarray(a, dtype=np_dtype)  # noqa: E731  (host arrays: one transfer per call below)
    kin_model = model.with_extras({})  # kinematics only: muscles etc. are not traced
    fx = _Fixed(kin_model, mk, *jax.device_put(tuple(j(a) for a in (free, bounded, q_fix, lo, hi, wc))))
    u = j(_to_u(_Fixed(None, None, free, bounded, q_fix, lo, hi, wc), start, np))  # on the host: no eager ops
    # ---- chunks ------------------------------------------------------------------------------
    C = min(int(chunk), padded_length(T))  # a short trial: the next quarter octave (one program per bucket)
    n_chunks = -(-T // C)
    progress = n_chunks > 1 if progress is None else progress
    q_out = np.empty((T, nq))
    xm_out = np.empty((T, len(used), 3))
    ok_out = np.empty(T, bool)
    steps_out = np.empty(T, int)
    loose_out = np.zeros((T, nq), bool)
    t0 = _time.perf_counter()
    with _checks.checks(False):  # inputs are checked above; no host callbacks inside the solver
        for c in range(n_chunks):
            a, b = c * C, min((c + 1) * C, T)
            n = b - a
            pad = np.r_[np.arange(a, b), np.full(C - n, b - 1)].astype(int)
            u_start = u if method == "scan" else u[pad]
            uc, qc, xmc, okc, stc, lc = _solve_chunk(spec, fx, *jax.device_put((j(x[pad]), j(w[pad]), j(qref[pad]),
                                                                                u_start)))
            q_out[a:b] = np.asarray(qc)[:n]
            loose_out[a:b] = np.asarray(lc)[:n]
            xm_out[a:b] = np.asarray(xmc)[:n]
            ok_out[a:b] = np.asarray(okc)[:n]
            steps_out[a:b] = np.asarray(stc)[:n]
            if method == "scan":
                u = np.asarray(uc)[n - 1]
            if progress:
                err = np.where(present[a:b], np.linalg.norm(xm_out[a:b] - x[a:b], axis=-1), np.nan)
                worst = np.nanmax(err) if np.any(present[a:b]) else float("nan")
                print(f"IK: {b}/{T} frames ({_time.perf_counter() - t0:.1f} s), max marker error in chunk "
                      f"{worst:.3g} m, {int(np.sum(~ok_out[a:b]))} not converged", flush=True)
    _report_undetermined(names, times, loose_out, ok_out)
    _check_marker_scale(data, x, xm_out, present)
    if info is not None:  # a free coordinate the solver took far beyond its range: named, not silent
        loose = [i for i in range(nq) if free[i] and not bounded[i]]
        warn_outside_ranges(model, [names[i] for i in loose], q_out[:, loose], "IK", None, stacklevel=3,
                            times=times, cause=". The markers may not fit the model there (scaling, marker "
                            "placement or labels), or the coordinate should be clamped")
    err = np.where(present, np.linalg.norm(xm_out - x, axis=-1), np.nan)
    count = present.sum(axis=1)
    sq = np.where(present, err, 0.0) ** 2
    rms = np.where(count > 0, np.sqrt(sq.sum(axis=1) / np.maximum(count, 1)), np.nan)
    mx = np.where(count > 0, np.max(np.where(present, err, -np.inf), axis=1), np.nan)
    return IKResult(times, q_out, tuple(names), tuple(used), err, rms, mx, ok_out, steps_out)


# --------------------------------------------------------------------------------------------
# OpenSim IK setup files
# --------------------------------------------------------------------------------------------


def read_ik_setup(path) -> IKSetup:
    """Read an OpenSim ``InverseKinematicsTool`` setup XML (3.x or 4.x): files, time range, accuracy,
    marker weights (applied ``IKMarkerTask``) and coordinate tasks (applied ``IKCoordinateTask``)."""
    from .io.setup_xml import SetupFile

    setup = SetupFile(path)
    path, doc, root, base = setup.path, setup.doc, setup.root, setup.base
    tool = root if root.tag == "InverseKinematicsTool" else root.find("InverseKinematicsTool")
    if tool is None:
        raise ValueError(f"{path}: no <InverseKinematicsTool>")

    def file_of(tag):
        return setup.file(tool, tag)

    def number(el, tag, default):
        try:
            return setup.number(el, tag, default)
        except ValueError:
            if el is tool:
                raise
            raise doc.error(el, f"<{tag}> must be a number, got {setup.text(el, tag)!r}") from None  # names the task

    tr = tool.find("time_range")
    time_range = None
    txt = setup.text(tool, "time_range")
    if txt is not None:
        try:
            vals = [float(v) for v in txt.split()]
        except ValueError:
            vals = []
        if len(vals) != 2:
            raise doc.error(tr, f"<time_range> must hold two numbers, got {txt!r}")
        if not vals[0] <= vals[1]:
            raise doc.error(tr, f"<time_range> is reversed: its start {vals[0]:g} is after its end {vals[1]:g}; "
                            "give the start first")
        time_range = (vals[0], vals[1])
    marker_w, coord_t = {}, {}
    tasks = tool.find("IKTaskSet")
    objs = tasks.find("objects") if tasks is not None else None
    for el in (objs if objs is not None else []):
        if not isinstance(el.tag, str):
            continue
        apply = (el.findtext("apply") or "true").strip().lower() in ("true", "1")
        if not apply:
            continue
        weight = number(el, "weight", 1.0)
        if not (np.isfinite(weight) and weight >= 0):
            raise doc.error(el, f"<weight> must be a finite number >= 0, got {setup.text(el, 'weight')!r}")
        name = (el.get("name") or "").strip()
        if el.tag == "IKMarkerTask":
            if not name:  # OpenSim's MarkerWeight "" matches no marker
                warnings.warn(f"{doc.where(el)}: an <IKMarkerTask> without a name tracks no marker; ignored "
                              "(give it the name of the marker to track)", stacklevel=2)
                continue
            marker_w[name] = weight
        elif el.tag == "IKCoordinateTask":
            if not name:  # OpenSim finds no coordinate "" and fails
                raise doc.error(el, "an <IKCoordinateTask> without a name: give it the name of the coordinate "
                                "to track")
            vt = (el.findtext("value_type") or "default_value").strip()
            coord_t[name] = CoordinateTask(weight, vt, number(el, "value", 0.0))
        else:
            raise ValueError(f"{path}: unknown IK task <{el.tag}>")
    constraint_weight = number(tool, "constraint_weight", float("inf"))
    unused = [f"<{el.tag}>" for el in tool if isinstance(el.tag, str) and el.tag not in _IK_READ + _IK_IGNORED]
    if (tool.findtext("report_marker_locations") or "").strip().lower() == "true":
        unused.append("<report_marker_locations> true (the model's marker locations file is not written)")
    errors_file = None
    if (tool.findtext("report_errors") or "true").strip().lower() != "false":
        results = file_of("results_directory") or base
        errors_file = os.path.join(results, f"{tool.get('name') or ''}_ik_marker_errors.sto")
    if np.isfinite(constraint_weight):
        unused.append(f"<constraint_weight> {constraint_weight:g} (mbjax eliminates the model's constraints, "
                      "so they hold exactly, as OpenSim's default weight Infinity has them)")
    if unused:
        warnings.warn(f"{path}: not used by mbjax's inverse kinematics: " + "; ".join(unused), stacklevel=2)
    return IKSetup(file_of("model_file"), file_of("marker_file"), file_of("coordinate_file"),
                   file_of("output_motion_file"), time_range, number(tool, "accuracy", 1e-5),
                   constraint_weight, marker_w, coord_t, errors_file)


def write_ik_marker_errors(path, result: IKResult) -> None:
    """OpenSim's ``<name>_ik_marker_errors.sto`` (``InverseKinematicsTool::run`` with
    ``report_errors``): per frame ``total_squared_error`` (Σ |e|² over the markers present, m²),
    ``marker_error_RMS`` and ``marker_error_max`` (m)."""
    err = np.asarray(result.marker_errors, float)
    total = np.nansum(err ** 2, axis=1)
    table = Table(np.asarray(result.time, float), ("total_squared_error", "marker_error_RMS", "marker_error_max"),
                  np.stack([total, result.rms, result.max], axis=1), False, {"name": "Model Marker Errors from IK"})
    write_storage(prepare_output(path, None, "IK marker errors file"), table, format="storage")


#: InverseKinematicsTool properties read by :func:`read_ik_setup`, and those that change nothing
#: mbjax computes (``results_directory`` and ``input_directory`` locate OpenSim's own extra files)
_IK_READ = ("model_file", "marker_file", "coordinate_file", "output_motion_file", "time_range", "accuracy",
            "constraint_weight", "IKTaskSet", "report_errors", "report_marker_locations")
_IK_IGNORED = ("results_directory", "input_directory", "defaults")


def _nearest_row(time: np.ndarray, t: float) -> int:
    """``TimeSeriesTable::getNearestRowIndexForTime``: the row whose time is closest to ``t``."""
    return int(np.argmin(np.abs(time - t)))


def inverse_kinematics_from_setup(path, model=None, markers: Markers | None = None, *, accuracy: float | None = None,
                                  write: bool = False, output_motion_file=None, **kwargs) -> IKResult:
    """Run an OpenSim IK setup file with :func:`inverse_kinematics`: its model (unless ``model`` /
    ``markers`` are given), marker file, time range (rows nearest to its ends, as OpenSim picks
    them), marker weights, coordinate tasks and accuracy.  ``kwargs`` go to :func:`inverse_kinematics`.

    With ``write`` (or an ``output_motion_file``), the motion is written as OpenSim's IK tool writes
    it (:func:`write_ik_motion`: every coordinate, degrees) to ``output_motion_file`` or the setup's
    ``<output_motion_file>``; its folder is made and checked writable before solving.

    **Accuracy**: the file's ``<accuracy>`` (or ``accuracy=``) is the solver's ``rtol = atol``
    (:func:`inverse_kinematics`' Cauchy test on the steps and the objective), not below the dtype's
    default (1e-9 in float64, 1e-5 in float32); explicit ``rtol`` / ``atol`` take precedence.  That
    test is stricter than OpenSim's: on the Gait2354 pipeline at the file's 1e-5, mbjax's coordinates
    lie within 8.6e-7 rad of the optimum solved to 1e-12, OpenSim 4.6's tool's within 2.1e-3 rad
    (median 4e-5), in 263 Levenberg-Marquardt steps instead of 432 at 1e-9."""
    from .io.osim import load_osim
    from .io.osim_markers import load_markers

    setup = read_ik_setup(path)
    out = None
    if write or output_motion_file is not None:
        out = output_motion_file if output_motion_file is not None else setup.output_motion_file
        if out is None:
            raise ValueError(f"{path}: no <output_motion_file> to write; pass output_motion_file=")
        out = prepare_output(out, path, "IK output motion file")
    acc = setup.accuracy if accuracy is None else float(accuracy)
    if not (np.isfinite(acc) and acc > 0):
        raise ValueError(f"{path}: the IK accuracy must be a positive number, got {acc} "
                         f"({'<accuracy> in the file' if accuracy is None else 'accuracy='})")
    kwargs.setdefault("rtol", max(acc, _default_tolerance()))
    kwargs.setdefault("atol", max(acc, _default_tolerance()))
    if setup.marker_file is None:
        raise ValueError(f"{path}: no <marker_file>")
    for tag, file in (("marker_file", setup.marker_file), ("coordinate_file", setup.coordinate_file)):
        if file is not None and not os.path.isfile(file):  # checked before the model is loaded
            raise FileNotFoundError(f"{path}: <{tag}> {file}: not found (paths are relative to the setup "
                                    "file's folder)")
    if model is None:
        if setup.model_file is None:
            raise ValueError(f"{path}: no <model_file>; pass model=")
        model = load_osim(setup.model_file)
    if markers is None:
        if setup.model_file is None:
            raise ValueError(f"{path}: no <model_file> to read markers from; pass markers=")
        markers = load_markers(setup.model_file, model)
    data = read_trc(setup.marker_file)
    if setup.time_range is not None:
        t0 = max(setup.time_range[0], data.time[0])
        t1 = min(setup.time_range[1], data.time[-1])
        if t1 < t0:
            raise ValueError(f"{path}: time range {setup.time_range} does not overlap the marker data "
                             f"[{data.time[0]}, {data.time[-1]}]")
        a, b = _nearest_row(data.time, t0), _nearest_row(data.time, t1) + 1
        data = data._replace(time=data.time[a:b], positions=data.positions[a:b],
                             frame=None if data.frame is None else data.frame[a:b])
    coords = read_storage(setup.coordinate_file) if setup.coordinate_file else None
    result = inverse_kinematics(model, markers, data, setup.marker_weights, setup.coordinate_tasks,
                                coordinate_data=coords, **kwargs)
    if out is not None:
        write_ik_motion(out, model, result)
        if setup.errors_file is not None:  # beside the motion when its path was given here
            write_ik_marker_errors(setup.errors_file if output_motion_file is None else os.path.join(
                os.path.dirname(os.path.abspath(out)), os.path.basename(setup.errors_file)), result)
    return result


def write_ik_motion(path, model, result: IKResult) -> None:
    """Write an IK solution as OpenSim's IK tool does: an ``OpenSim::Storage`` ``.mot`` named
    ``Coordinates``, ``inDegrees=yes``, with every coordinate of the model in its ``CoordinateSet``
    order (coupled ones from their couplers, locked ones at their locked value; rotational ones in
    degrees) so OpenSim's tools reading it get the full pose."""
    write_storage(path, table_from_coordinates(model, result.time, result.q, in_degrees=True), format="storage")
