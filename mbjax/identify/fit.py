"""Gradient-based parameter identification: :func:`fit`.

One function for every method.  ``objective(tree)`` returns a scalar loss, or a residual vector
``r`` (any shape; flattened) whose loss is ``½‖r‖²``:

* ``"adam"`` (``optax.adam``) and ``"lbfgs"`` (``optax.lbfgs`` with its zoom line search) take
  either;
* ``"gauss_newton"`` and ``"levenberg_marquardt"`` (``optimistix.GaussNewton`` /
  ``LevenbergMarquardt``, Jacobian by forward mode) need residuals.

The optimizer runs on the free vector θ of :class:`~mbjax.identify.selection.Selection`
(``where`` + parametrizations), so bounds hold by construction.  One jitted step (the tree and
an ``eqx.Module`` objective are dynamic arguments: new data or new start values do not
recompile) is called from a Python loop that records the history, shows a tqdm bar
(``progress=False``: silent) and stops on the tolerance:

* every method: ``‖∇_θ loss‖_∞ ≤ tol · ‖∇_θ loss(θ₀)‖_∞`` (relative gradient);
* Gauss-Newton / Levenberg-Marquardt also: optimistix's Cauchy test with ``rtol = atol = tol`` on
  the step in θ and the change of the residuals.  Gauss-Newton solves each step by SVD with
  ``rcond = 1e-10`` (minimum-norm steps: unidentifiable directions do not drift).
"""

from __future__ import annotations

import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .report import FitReport
from .selection import Selection

METHODS = ("adam", "lbfgs", "gauss_newton", "levenberg_marquardt")


def _loss_of(out):
    out = jnp.asarray(out)
    return out if out.ndim == 0 else 0.5 * jnp.sum(out**2)


def fit(
    tree,
    objective,
    where,
    *,
    method: str = "levenberg_marquardt",
    parametrization=None,
    max_steps: int = 200,
    tol: float = 1e-10,
    learning_rate: float = 1e-2,
    progress: bool = True,
):
    """Fit the leaves ``where(tree)`` to minimise ``objective``; returns ``(fitted_tree, FitReport)``.

    ``tree``: a ``Model`` or any pytree holding one (e.g. ``(model, damper)`` to fit a force
    element's coefficient too).  ``where``/``parametrization``: see
    :class:`~mbjax.identify.selection.Selection` (``Positive`` for masses and lengths,
    ``PhysicalInertia`` for (mass, COM, inertia), ``StandardInertial`` for linear least squares).
    ``learning_rate``: adam only.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {METHODS}")
    sel = Selection(tree, where, parametrization)
    theta0 = sel.theta(tree)
    out_shape = jax.eval_shape(objective, tree)
    is_scalar = out_shape.shape == ()
    if is_scalar and method in ("gauss_newton", "levenberg_marquardt"):
        raise ValueError(f"{method} needs a residual vector; `objective` returned a scalar")

    def residual(theta, args):
        t, obj = args
        return jnp.ravel(obj(sel.apply(theta, t)))

    def loss(theta, args):
        t, obj = args
        return _loss_of(obj(sel.apply(theta, t)))

    # split the objective: its arrays travel as dynamic arguments, its functions as static ones
    args = (tree, objective)
    if method in ("adam", "lbfgs"):
        theta, hist_l, hist_g, steps, conv, msg, first = _run_optax(method, loss, theta0, args, max_steps, tol, learning_rate, progress)
    else:
        theta, hist_l, hist_g, steps, conv, msg, first = _run_optimistix(method, residual, loss, theta0, args, max_steps, tol, progress)
    fitted = sel.apply(theta, tree)
    wall = first[1]
    report = FitReport(method, np.asarray(hist_l), np.asarray(hist_g), steps, wall, first[0], conv, msg, np.asarray(theta), sel.names)
    if progress:
        print(report)
    return fitted, report


def _bar(progress, max_steps, method):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=max_steps, desc=f"fit ({method})", leave=False)


def _run_optax(method, loss, theta0, args, max_steps, tol, learning_rate, progress):
    import optax

    if method == "adam":
        opt = optax.adam(learning_rate)
    else:
        opt = optax.lbfgs()

    @eqx.filter_jit
    def step(theta, state, args):
        f = lambda th: loss(th, args)  # noqa: E731
        if method == "lbfgs":
            value, grad = optax.value_and_grad_from_state(f)(theta, state=state)
            updates, state = opt.update(grad, state, theta, value=value, grad=grad, value_fn=f)
        else:
            value, grad = jax.value_and_grad(f)(theta)
            updates, state = opt.update(grad, state, theta)
        return optax.apply_updates(theta, updates), state, value, jnp.max(jnp.abs(grad))

    @eqx.filter_jit
    def evaluate(theta, args):
        value, grad = jax.value_and_grad(loss)(theta, args)
        return value, jnp.max(jnp.abs(grad))

    t0 = time.perf_counter()
    theta, state = theta0, opt.init(theta0)
    hist_l, hist_g = [], []
    bar = _bar(progress, max_steps, method)
    conv, msg, steps, first_s = False, "max_steps reached", 0, None
    for k in range(max_steps):
        new_theta, state, value, gnorm = step(theta, state, args)
        value, gnorm = float(value), float(gnorm)  # at theta (before the update)
        if first_s is None:
            first_s = time.perf_counter() - t0
        hist_l.append(value)
        hist_g.append(gnorm)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{value:.4g}", grad=f"{gnorm:.2g}")
        if not np.isfinite(value):
            msg = "non-finite loss"
            break
        g0 = hist_g[0]
        if gnorm <= tol * max(g0, 1e-300):
            conv, msg = True, "gradient tolerance"
            break
        theta = new_theta
        steps = k + 1
    else:
        value, gnorm = (float(x) for x in evaluate(theta, args))
        hist_l.append(value)
        hist_g.append(gnorm)
        conv = gnorm <= tol * max(hist_g[0], 1e-300)
        msg = "gradient tolerance" if conv else msg
    if bar is not None:
        bar.close()
    return theta, hist_l, hist_g, steps, conv, msg, (first_s or 0.0, time.perf_counter() - t0)


def _run_optimistix(method, residual, loss, theta0, args, max_steps, tol, progress):
    import optimistix as optx

    import lineax as lx

    if method == "gauss_newton":
        # minimum-norm steps: directions the data cannot see (singular values below 1e-10 s_max) stay put
        solver = optx.GaussNewton(rtol=tol, atol=tol, linear_solver=lx.SVD(rcond=1e-10))
    else:
        solver = optx.LevenbergMarquardt(rtol=tol, atol=tol)
    fn = eqx.filter_closure_convert(lambda th, a: (residual(th, a), None), theta0, args)
    f_struct, aux_struct = fn.out_struct
    tags = frozenset()

    @eqx.filter_jit
    def init(fn, theta, args):
        return solver.init(fn, theta, args, {}, f_struct, aux_struct, tags)

    @eqx.filter_jit
    def step(fn, theta, state, args):
        theta, state, _ = solver.step(fn, theta, args, {}, state, tags)
        done, result = solver.terminate(fn, theta, args, {}, state, tags)
        # loss and gradient Jᵀr at the accepted point, from the solver's own evaluation
        r = state.f_info.residual
        g = state.f_info.compute_grad()
        return theta, state, done, result == optx.RESULTS.successful, 0.5 * jnp.sum(r**2), jnp.max(jnp.abs(g))

    t0 = time.perf_counter()
    state = init(fn, theta0, args)
    theta = theta0
    hist_l, hist_g = [], []
    bar = _bar(progress, max_steps, method)
    conv, msg, steps, first_s = False, "max_steps reached", 0, None
    # the first optimistix step only evaluates the start point
    for k in range(max_steps + 1):
        theta, state, done, ok, value, gnorm = step(fn, theta, state, args)
        value, gnorm = float(value), float(gnorm)
        if first_s is None:
            first_s = time.perf_counter() - t0
        hist_l.append(value)
        hist_g.append(gnorm)
        steps = k
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{value:.4g}", grad=f"{gnorm:.2g}")
        if not bool(ok):
            msg = "solver failure"
            break
        if k > 0 and bool(done):
            conv, msg = True, "step and residual tolerance"
            break
        if gnorm <= tol * max(hist_g[0], 1e-300):
            conv, msg = True, "gradient tolerance"
            break
    if bar is not None:
        bar.close()
    return theta, hist_l, hist_g, steps, conv, msg, (first_s or 0.0, time.perf_counter() - t0)
