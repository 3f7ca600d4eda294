"""The inverse-kinematics problem of one frame and its solvers: the bounded-coordinate transform,
the weighted residuals with their closed-form Jacobian, Levenberg-Marquardt (written out for
tracking, optimistix's as the fallback and for ``method="vmap"``), a chunk of frames in one
program, and the tests of a solution (stationary, coordinates the tasks leave free)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optimistix as optx
from jax.custom_derivatives import SymbolicZero

from ...markers import Markers, _marker_kinematics, marker_positions_and_jacobian
from ...program_store import persistent


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


def _at_solution(spec: _Spec, fx: _Fixed, u, x, w, qref):
    """One frame's solution ``u``: ``q``, the markers, the coordinates its tasks leave free, and
    whether it is a minimum to the solver's tolerance (:func:`_stationary`)."""
    q = _to_q(fx, u)
    pos, jac = marker_positions_and_jacobian(fx.model, fx.markers, q)
    loose = undetermined_coordinates(fx, jac, w)
    return q, pos, loose, _stationary(spec, fx, u, q, pos, jac, x, w, qref, loose)


@persistent("mbjax.analysis.ik.frame_solver._solve_chunk")
def _solve_chunk(spec: _Spec, fx: _Fixed, x, w, qref, u_start, u_prev):
    """One chunk of frames: ``lax.scan`` (each frame by :func:`_solve_tracking` from the line
    through the two previous solutions, the first from ``u_start``, ``u_prev (nq,)``; the
    curvature model starts from zero) or ``vmap`` (every frame from its own ``u_start (C, nq)``, in
    parallel, optimistix's Levenberg-Marquardt).  Returns ``(u, q, markers, converged, steps,
    undetermined, tracked, starts)``: ``tracked``, whether the tracking solver solved the frame
    (``scan``; a frame it did not solve is solved again by :func:`_solve_fallback` from its start in
    ``starts``, and the frames after it from there: :func:`solve_frames`)."""
    if spec.method == "scan":
        def step(carry, frame):
            u, u_prev, curv = carry
            xk, wk, rk = frame
            # start from the line through the last two solutions (q, not the bounded u: its sin
            # map bends the line), one step closer than the last solution on a smooth motion
            u0 = _to_u(fx, 2.0 * _to_q(fx, u) - _to_q(fx, u_prev))
            u_new, ok, steps, curv = _solve_tracking(spec, fx, u0, xk, wk, rk, curv)
            return (u_new, u, curv), (u_new, ok, steps, u0)

        nq = u_start.shape[-1]
        curv0 = jnp.zeros((nq, nq), u_start.dtype)
        _, (u, ok, steps, starts) = jax.lax.scan(step, (u_start, u_prev, curv0), (x, w, qref))
    else:
        u, ok, steps = jax.vmap(lambda u0, xk, wk, rk: _solve(spec, fx, u0, xk, wk, rk))(u_start, x, w, qref)
        starts = u_start
    q, xm, loose, still = jax.vmap(lambda uk, xk, wk, rk: _at_solution(spec, fx, uk, xk, wk, rk))(u, x, w, qref)
    return u, q, xm, ok & still, steps, loose, ok, starts


@persistent("mbjax.analysis.ik.frame_solver._solve_fallback")
def _solve_fallback(spec: _Spec, fx: _Fixed, u0, x, w, qref):
    """One frame the tracking solver did not solve, by optimistix's Levenberg-Marquardt from the
    same start: ``(u, q, markers, converged, steps, undetermined)``.  A program of its own, compiled
    only when a trial needs it (most never do), so the chunk program stays small."""
    u, ok, steps = _solve(spec, fx, u0, x, w, qref)
    q, xm, loose, still = _at_solution(spec, fx, u, x, w, qref)
    return u, q, xm, ok & still, steps, loose


def solve_frames(spec: _Spec, fx: _Fixed, x, w, qref, u_start, size: int):
    """The frames of one chunk (host arrays ``x, w, qref`` of ``T <= size`` frames, padded here to
    ``size`` with the last frame: one program per chunk size) by :func:`_solve_chunk`, from
    ``u_start`` (``(nq,)``, or ``(T, nq)`` for ``method="vmap"``).  With ``method="scan"`` a frame the
    tracking solver did not solve is solved again by :func:`_solve_fallback` from its own start, and
    the frames after it go on from that solution with a fresh curvature model (the same compiled
    chunk program on the remaining frames), as one scan with the fallback inside would.  Returns
    host arrays ``(u, q, markers, converged, steps, undetermined)``."""
    frames = x.shape[0]

    def run(first, u_s, u_p):
        idx = np.r_[np.arange(first, frames), np.full(size - (frames - first), frames - 1)].astype(int)
        if spec.method != "scan":
            u_s = u_p = u_s[idx]
        return [np.asarray(a) for a in _solve_chunk(spec, fx, *jax.device_put((x[idx], w[idx], qref[idx], u_s, u_p)))]

    out = run(0, u_start, u_start)
    if spec.method != "scan" or bool(np.all(out[6][:frames])):
        return tuple(a[:frames] for a in out[:6])
    results = [np.empty((frames,) + a.shape[1:], a.dtype) for a in out[:6]]
    first, u_s = 0, u_start
    while True:
        n = frames - first
        fail = n if bool(np.all(out[6][:n])) else int(np.argmin(out[6][:n]))
        for r, a in zip(results, out[:6]):
            r[first:first + fail] = a[:fail]
        if fail == n:
            return tuple(results)
        k = first + fail
        fb = [np.asarray(a) for a in _solve_fallback(spec, fx, *jax.device_put((out[7][fail], x[k], w[k], qref[k])))]
        fb[4] = fb[4] + out[4][fail]  # the tracking solver's steps too
        for r, a in zip(results, fb):
            r[k] = a
        if k + 1 == frames:
            return tuple(results)
        previous = out[0][fail - 1] if fail > 0 else u_s  # the solution before frame k
        first, u_s = k + 1, fb[0]
        out = run(first, u_s, previous)


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
    Jacobian ``jac (nm, 3, nq)`` at its solution. A coordinate task (weight > 0) determines its
    coordinate; the others are determined when the weighted markers' normal matrix
    ``Σ w_m J_mᵀ J_m``, restricted to them (the tasked ones are fixed by their tasks), has no null
    direction that moves them (eigenvalues below ``100 eps`` of its largest; a heavy coordinate task
    does not enter that scale), e.g. a coordinate moving only bodies without markers in this frame,
    or rotation about the line through a body's only two markers."""
    nq = jac.shape[-1]
    j = (jnp.sqrt(w)[:, None, None] * jac).reshape(-1, nq)
    by_markers = (fx.free > 0) & ~(fx.wc > 0)
    a = j.T @ j
    both = by_markers[:, None] & by_markers[None, :]
    scale = jnp.max(jnp.where(by_markers, jnp.diagonal(a), 0.0))
    scale = jnp.where(scale > 0, scale, 1.0)
    a = jnp.where(both, a, scale * jnp.eye(nq, dtype=a.dtype))
    lam, vec = jnp.linalg.eigh(a)
    null = lam <= 100.0 * jnp.finfo(a.dtype).eps * lam[-1]
    return by_markers & jnp.any(null[None, :] & (jnp.abs(vec) > 0.1), axis=1)
