"""Gradient-based parameter identification: :func:`fit`.

One function for every method.  ``objective(tree)`` returns a scalar loss, or a residual vector
``r`` (any shape; flattened) whose loss is ``½‖r‖²``:

* ``"adam"`` (``optax.adam``) and ``"lbfgs"`` (``optax.lbfgs`` with its zoom line search) take
  either;
* ``"gauss_newton"`` and ``"levenberg_marquardt"`` (``optimistix.GaussNewton`` /
  ``LevenbergMarquardt``, Jacobian by forward mode) need residuals.

The optimizer runs on the free vector θ of :class:`~mbjax.analysis.identify.selection.Selection`
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


class _Residual(eqx.Module):
    """``(θ, (tree, objective)) -> (r, None)``: hashable by value (optimistix's ``fn``)."""

    sel: Selection

    def __call__(self, theta, args):
        tree, objective = args
        return jnp.ravel(objective(self.sel.apply(theta, tree))), None


def _loss(sel, theta, tree, objective):
    return _loss_of(objective(sel.apply(theta, tree)))


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
    :class:`~mbjax.analysis.identify.selection.Selection` (``Positive`` for masses and lengths,
    ``PhysicalInertia`` for (mass, COM, inertia), ``StandardInertial`` for linear least squares).
    ``learning_rate``: adam only.  The jitted step is cached on (selection, objective structure,
    tree structure, method): refitting with new data, a new start or a new tolerance reuses it.
    """
    host_tree(tree, "fit")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; one of {METHODS}")
    _check_options(method, max_steps, tol, learning_rate)
    if not callable(objective):
        raise TypeError(f"`objective` must be a function tree -> residuals or loss, got {type(objective).__name__}")
    sel = Selection(tree, where, parametrization)
    theta0 = sel.theta(tree)
    out_shape = one_array(jax.eval_shape(objective, tree), "fit", "objective")
    if out_shape.shape == () and method in ("gauss_newton", "levenberg_marquardt"):
        raise ValueError(f"{method} needs a residual vector; `objective` returned a scalar")
    if out_shape.size == 0:
        raise ValueError("`objective` returned an empty residual (no samples?): nothing to fit")
    try:
        if method in ("adam", "lbfgs"):
            run = _run_optax(method, sel, theta0, tree, objective, max_steps, tol, learning_rate, progress)
        else:
            run = _run_optimistix(method, sel, theta0, tree, objective, max_steps, tol, progress)
    except TypeError as err:
        if "custom_vjp" not in str(err):
            raise
        raise TypeError(
            f"{method} differentiates the residual in forward mode, and `objective` calls a function with a "
            "reverse-mode-only derivative (mbjax.simulate's default adjoint is): pass "
            "adjoint=diffrax.ForwardMode() to mbjax.simulate inside the objective (as "
            "mbjax.analysis.identify.trajectory_residuals does), or fit with method='lbfgs' or 'adam' (reverse mode)"
        ) from err
    theta, hist_l, hist_g, steps, conv, msg, (first, wall) = run
    if not np.isfinite(hist_l[0]):
        raise ValueError(f"the objective is {hist_l[0]} at the start: the data or the starting tree hold NaN or "
                         "inf (or the model is undefined there); nothing was fitted")
    fitted = sel.apply(theta, tree)
    report = FitReport(method, np.asarray(hist_l), np.asarray(hist_g), steps, wall, first, conv, msg, np.asarray(theta), sel.names)
    if progress:
        print(report)
    return fitted, report


def host_tree(tree, where: str) -> None:
    """Refuse a ``tree`` of traced values: ``where`` runs on the host (its own loop or NumPy)."""
    if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree)):
        raise TypeError(f"{where}: `tree` holds traced values: {where} runs on the host (its own loop and NumPy) "
                        "and cannot be called under jax.jit, vmap or grad; call it outside (it jit-compiles its "
                        "own steps)")


def one_array(out, where: str, what: str, returns: str = "a residual vector, or a scalar loss"):
    """``out`` (``jax.eval_shape`` of the user's function ``what``) when it is one array; else ``TypeError``."""
    if isinstance(out, jax.ShapeDtypeStruct):
        return out
    got = "None" if out is None else f"a {type(out).__name__} of {len(jax.tree.leaves(out))} arrays"
    raise TypeError(f"{where}: `{what}` must return one array ({returns}), got {got}; "
                    "return only the residuals (join several with jnp.concatenate)")


def _check_options(method, max_steps, tol, learning_rate):
    """Refuse tolerances, step counts and learning rates no fit can use (before any compilation)."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 0:
        raise ValueError(f"fit: max_steps must be an integer >= 0, got {max_steps!r}")
    t, lr = _number(tol), _number(learning_rate)
    if not (np.isfinite(t) and t >= 0):
        raise ValueError(f"fit: tol must be a finite number >= 0 (relative gradient and step tolerance), got {tol!r}")
    if method == "adam" and not (np.isfinite(lr) and lr > 0):
        raise ValueError(f"fit: learning_rate must be a finite number > 0, got {learning_rate!r}")


def _number(x) -> float:
    """``x`` as a float; NaN when it is not one number."""
    try:
        return float(x) if np.ndim(x) == 0 else float("nan")
    except (TypeError, ValueError):
        return float("nan")


def _bar(progress, max_steps, method):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=max_steps, desc=f"fit ({method})", leave=False)


def _optax_optimizer(method, learning_rate):
    import optax

    return optax.adam(learning_rate) if method == "adam" else optax.lbfgs()


@eqx.filter_jit
def _optax_init(method, learning_rate, theta):
    """The optimizer's state with no weakly typed leaves: optax's lbfgs starts its line-search
    info weakly typed and returns it strongly typed, which made the step compile twice."""
    state = _optax_optimizer(method, learning_rate).init(theta)
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=x.dtype), state)


@eqx.filter_jit
def _optax_step(method, learning_rate, sel, theta, state, tree, objective):
    import optax

    opt = _optax_optimizer(method, learning_rate)
    f = lambda th: _loss(sel, th, tree, objective)  # noqa: E731
    if method == "lbfgs":
        value, grad = optax.value_and_grad_from_state(f)(theta, state=state)
        updates, state = opt.update(grad, state, theta, value=value, grad=grad, value_fn=f)
    else:
        value, grad = jax.value_and_grad(f)(theta)
        updates, state = opt.update(grad, state, theta)
    return optax.apply_updates(theta, updates), state, value, jnp.max(jnp.abs(grad))


@eqx.filter_jit
def _value_grad_norm(sel, theta, tree, objective):
    value, grad = jax.value_and_grad(_loss, argnums=1)(sel, theta, tree, objective)
    return value, jnp.max(jnp.abs(grad))


def _run_optax(method, sel, theta0, tree, objective, max_steps, tol, learning_rate, progress):
    t0 = time.perf_counter()
    lr = float(learning_rate)
    theta, state = theta0, _optax_init(method, lr, theta0)
    hist_l, hist_g = [], []
    bar = _bar(progress, max_steps, method)
    conv, msg, steps, first_s = False, "max_steps reached", 0, None
    for k in range(max_steps):
        new_theta, state, value, gnorm = _optax_step(method, lr, sel, theta, state, tree, objective)
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
        if gnorm <= tol * max(hist_g[0], 1e-300):
            conv, msg = True, "gradient tolerance"
            break
        theta = new_theta
        steps = k + 1
    else:
        value, gnorm = (float(x) for x in _value_grad_norm(sel, theta, tree, objective))
        hist_l.append(value)
        hist_g.append(gnorm)
        conv = gnorm <= tol * max(hist_g[0], 1e-300)
        msg = "gradient tolerance" if conv else msg
    if bar is not None:
        bar.close()
    return theta, hist_l, hist_g, steps, conv, msg, (first_s or 0.0, time.perf_counter() - t0)


def _optimistix_solver(method, tol):
    import lineax as lx
    import optimistix as optx

    if method == "gauss_newton":
        # minimum-norm steps: directions the data cannot see (singular values below 1e-10 s_max) stay put
        return optx.GaussNewton(rtol=tol, atol=tol, linear_solver=lx.SVD(rcond=1e-10))
    return optx.LevenbergMarquardt(rtol=tol, atol=tol)


@eqx.filter_jit
def _optx_init(solver, fn, theta, args):
    f_struct = jax.eval_shape(lambda: fn(theta, args)[0])
    return solver.init(fn, theta, args, {}, f_struct, None, frozenset())


@eqx.filter_jit
def _optx_step(solver, fn, theta, state, args):
    import optimistix as optx

    tags = frozenset()
    theta, state, _ = solver.step(fn, theta, args, {}, state, tags)
    done, result = solver.terminate(fn, theta, args, {}, state, tags)
    # loss and gradient Jᵀr at the accepted point, from the solver's own linearization (materialised
    # by forward mode: a transpose would need reverse mode, which diffrax.ForwardMode solves lack)
    r = state.f_info.residual
    g = state.f_info.jac.as_matrix().T @ r
    return theta, state, done, result == optx.RESULTS.successful, 0.5 * jnp.sum(r**2), jnp.max(jnp.abs(g))


def _run_optimistix(method, sel, theta0, tree, objective, max_steps, tol, progress):
    solver = _optimistix_solver(method, float(tol))
    fn = _Residual(sel)
    args = (tree, objective)
    t0 = time.perf_counter()
    state = _optx_init(solver, fn, theta0, args)
    theta = theta0
    hist_l, hist_g = [], []
    bar = _bar(progress, max_steps, method)
    conv, msg, steps, first_s = False, "max_steps reached", 0, None
    # the first optimistix step only evaluates the start point
    for k in range(max_steps + 1):
        theta, state, done, ok, value, gnorm = _optx_step(solver, fn, theta, state, args)
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
