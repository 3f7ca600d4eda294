"""Forward simulation of M q̈ + N q̇ = G + τ + Q (Eq. 198) as a diffrax ODE in (q, q̇).

:func:`simulate` builds the first-order system y = (q, q̇), ẏ = (q̇, forward_dynamics(...)),
and hands it to diffrax: any of its solvers (explicit ``Tsit5``/``Dopri5``/``Dopri8`` or an
implicit ``Kvaerno5`` for stiff cases), adaptive steps with a PID controller, dense output and
saving at requested times, and gradients through the solve with diffrax's adjoints.

Compile once.  The vector field is an ``eqx.Module`` (:class:`DynamicsField`) whose fields are the
``controls``/``forces`` callables; the model travels as diffrax's ``args``.  The whole solve is one
``eqx.filter_jit`` in which every array is dynamic: the initial state, ``t0``, ``t1``, ``dt0``,
the ``saveat`` times, ``rtol``/``atol`` and the array leaves of the model and of the controls (an
``eqx.Module`` controller with new gains).  A second call that changes only those runs the
compiled solve again without re-tracing.  What re-traces: a new model topology, a new solver,
adjoint or ``max_steps``, a different number of ``saveat`` times, or a *new Python function
object* as ``controls``/``forces``/``vector_field`` (a fresh ``lambda`` each call is a new static
argument; keep the function, or put its numbers in an ``eqx.Module``).  Batched over initial
states: ``jax.vmap(lambda q0, qd0: simulate(model, q0, qd0, t0, t1))(q0s, qd0s)`` (one compiled,
vmapped solve; adaptive steps run until every member is done).

Failure policy: ``t0``/``t1`` that are not finite or ``t1 < t0`` raise ``ValueError`` when they
are concrete numbers and an ``eqx.error_if`` run-time error when traced; a non-finite initial
state raises likewise.  Shapes are refused when traced, never broadcast: ``q0``/``qd0`` and what
``controls``/``forces`` return must have shape ``(nq,)`` (a scalar only for a 1-coordinate
model); ``dt0``, ``rtol``, ``atol`` and ``max_steps`` are checked when they are concrete.  A
non-finite right-hand side makes diffrax reject the step; with
``throw=True`` (default) a solve that then fails (max steps, step size collapse) raises an error
naming the diffrax result.  With ``throw=False`` inspect ``solution.result`` and
``solution.stats``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Callable

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _checks
from ._dynamics import _forward_dynamics
from ._model import Model, require_model
from ._ranges import warn_far_outside_ranges
from .discrete_adjoint import DiscreteAdjoint
from .discrete_adjoint import solve as _discrete_adjoint_solve


class DynamicsField(eqx.Module):
    """The diffrax vector field ``(t, (q, q̇), model) -> (q̇, q̈)`` of Eq. 198.

    ``controls(t, q, q̇)`` and ``forces(t, q, q̇)`` return generalized forces ``(nq,)`` (actuation
    and external Q, e.g. from :func:`mbjax.generalized_forces`); both are added to the right-hand
    side.  They are module fields: a plain function is static (hashed by identity), an
    ``eqx.Module`` contributes its arrays as dynamic leaves.  The model is diffrax's ``args``.
    """

    controls: Callable | None = None
    forces: Callable | None = None

    def __call__(self, t, y, model):
        q, qd = y
        tau = jnp.zeros_like(q)
        if self.controls is not None:
            tau = tau + _generalized(self.controls(t, q, qd), "controls", q, model)
        if self.forces is not None:
            tau = tau + _generalized(self.forces(t, q, qd), "forces", q, model)
        # argument checks off: diffrax may try a non-finite trial state and reject the step;
        # a singular M still raises (see mbjax._dynamics._cholesky_checked)
        return qd, _forward_dynamics(model, q, qd, tau)


def _generalized(tau, name: str, q, model, who: str = "simulate"):
    """What ``controls``/``forces`` returned, refused (trace time) unless it is ``(nq,)`` (a scalar
    only for a 1-coordinate model): a scalar or a ``(1,)`` would otherwise broadcast to every coordinate."""
    nq = q.shape[0]
    names = getattr(model, "coordinate_names", None)
    ctx = f" for coordinates {tuple(names)}" if names is not None else ""
    arr = _checks.real_array(tau, f"{who}: {name}(t, q, qd) must return generalized forces of shape (nq,) = "
                                  f"({nq},){ctx}", f"{who}: {name}(t, q, qd) must return real generalized forces")
    if arr.shape != (nq,) and not (nq == 1 and arr.shape == ()):
        raise ValueError(f"{who}: {name}(t, q, qd) must return generalized forces of shape (nq,) = ({nq},){ctx}, "
                         f"got {arr.shape} (nothing is broadcast: give one value per coordinate)")
    return arr


def dynamics_vector_field(model: Model | None = None, controls: Callable | None = None, forces: Callable | None = None):
    """:class:`DynamicsField` for ``controls`` and ``forces`` (``model`` is unused: it is passed as ``args``)."""
    del model
    return DynamicsField(controls, forces)


def _is_traced(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _real_scalar(x, name: str, who: str):
    """A concrete ``x`` as a NumPy array, refusing what is not a real number (str, None, complex, bool)."""
    try:
        arr = np.asarray(x)
    except Exception:
        arr = np.asarray(None)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"{who}: {name} must be a real number, got {type(x).__name__}: {x!r}")
    return arr


def _check_interval(t0, t1, who: str = "simulate"):
    """Trace-time check of concrete ``t0``, ``t1`` (finite, ``t1 >= t0``)."""
    if _is_traced(t0) or _is_traced(t1):
        return
    a, b = _real_scalar(t0, "t0", who), _real_scalar(t1, "t1", who)
    if a.shape != () or b.shape != ():
        raise ValueError(f"{who}: t0 and t1 must be scalars, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"{who}: t0 and t1 must be finite, got t0={a} and t1={b}")
    if b < a:
        raise ValueError(f"{who}: t1 must not be before t0 (backward solves are not supported), got t0={a} and t1={b}")


def _check_options(dt0, rtol, atol, max_steps, solver, who: str, tolerances: bool = True):
    """Trace-time checks of the solver options (values only where concrete); returns ``max_steps``
    as a Python int (a NumPy integer would be traced as an array by the compiled solve)."""
    if solver is not None and not isinstance(solver, diffrax.AbstractSolver):
        raise TypeError(f"{who}: solver must be a diffrax solver such as diffrax.Tsit5(), got {solver!r}")
    if tolerances and solver is not None and not isinstance(solver, diffrax.AbstractAdaptiveSolver):
        raise ValueError(f"{who}: solver diffrax.{type(solver).__name__}() gives no error estimate, so the default "
                         "adaptive step-size controller cannot use it; pass "
                         "stepsize_controller=diffrax.ConstantStepSize() and dt0 (the fixed step), or an adaptive "
                         "solver such as diffrax.Tsit5()")
    if max_steps is not None and (isinstance(max_steps, (bool, np.bool_)) or not isinstance(max_steps, (int, np.integer))
                                  or max_steps < 1):
        raise ValueError(f"{who}: max_steps must be a positive integer or None, got {max_steps!r}")
    if dt0 is not None and not _is_traced(dt0):
        d = _real_scalar(dt0, "dt0", who)
        if d.shape != () or not np.isfinite(d) or d <= 0:
            raise ValueError(f"{who}: dt0 (the first step) must be a finite number > 0 or None, got {d}")
    if tolerances:
        for name, tol in (("rtol", rtol), ("atol", atol)):
            if not _is_traced(tol):
                v = _real_scalar(tol, name, who)
                if not np.all(np.isfinite(v)) or np.any(v < 0):
                    raise ValueError(f"{who}: {name} must be finite and >= 0, got {v}")
        concrete = not (_is_traced(rtol) or _is_traced(atol))
        if concrete and np.all(np.asarray(rtol) == 0) and np.all(np.asarray(atol) == 0):
            raise ValueError(f"{who}: rtol and atol are both 0, so no step can meet the error tolerance; "
                             "give rtol > 0 or atol > 0 (defaults rtol=1e-8, atol=1e-10)")
    return None if max_steps is None else int(max_steps)


def _warn_fine_tolerances(rtol, atol, dtype, who: str):
    """Warn (concrete values) when ``rtol`` and ``atol`` lie far below the resolution of the state's dtype."""
    if _is_traced(rtol) or _is_traced(atol):
        return
    eps = _checks.dtype_eps(dtype)
    if np.all(np.asarray(rtol) < 0.01 * eps) and np.all(np.asarray(atol) < 0.01 * eps):
        warnings.warn(f"{who}: rtol={rtol} and atol={atol} lie far below the resolution of the {np.dtype(dtype).name} "
                      f"state (eps {eps:.1e}); the solver may never accept a step. Use rtol, atol >= {eps:.0e} "
                      "or a float64 state (jax_enable_x64)", RuntimeWarning, stacklevel=3)


def _is_max_steps(err) -> bool:
    return "maximum number of solver steps" in str(err)


def _max_steps_error(who: str, err, rtol, atol, max_steps, dtype, t0, t1, inputs=()):
    """mbjax's message for diffrax's max-steps failure: the likely causes with the values of this call."""
    eps = _checks.dtype_eps(dtype)
    causes = [f"tolerances rtol={rtol}, atol={atol} (state dtype {np.dtype(dtype).name}, resolution {eps:.1e})",
              f"max_steps={max_steps} for [t0, t1] = [{float(t0)}, {float(t1)}]"]
    for text in inputs:
        causes.append(text)
    return RuntimeError(f"{who}: the solver reached max_steps before t1. Likely causes: " + "; ".join(causes)
                        + ". Loosen the tolerances (not below the dtype's resolution), check the size and units of "
                        "controls/forces and the initial state, use an implicit solver (diffrax.Kvaerno5()) for a "
                        "stiff system, or raise max_steps; pass throw=False to inspect the partial solution")


def _magnitude(name: str, fn, t0, q0, qd0, tol: float = 1e6) -> list:
    """``[text]`` naming ``fn(t0, q0, qd0)``'s largest magnitude when it is huge or not finite (else ``[]``)."""
    if fn is None:
        return []
    try:
        out = np.asarray(fn(t0, q0, qd0), dtype=float)
    except Exception:
        return []
    if out.size and (not np.all(np.isfinite(out)) or np.max(np.abs(out)) > tol):
        return [f"{name}(t0, q0, qd0) of magnitude up to {np.max(np.abs(out)):.3g} (huge generalized forces "
                "make the system stiff)"]
    return []


def _check_callable(fn, name: str, model, t0, q0, qd0, who: str = "simulate"):
    """``controls``/``forces`` must take ``(t, q, qd)``; called eagerly (concrete inputs, checks on) at
    ``t0`` once, so a wrong shape or a NaN is named now rather than as a failed solve."""
    if not callable(fn):
        raise TypeError(f"{who}: {name} must be a callable, got {type(fn).__name__}; it takes (t, q, qd) and "
                        "returns generalized forces (nq,)")
    _same_model(fn, name, model, who)
    label = getattr(fn, "__name__", type(fn).__name__)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: checked when traced
        signature = None
    if signature is not None:
        try:
            signature.bind(t0, q0, qd0)
        except TypeError:
            raise TypeError(f"{who}: {name} must take three arguments (t, q, qd) and return generalized forces "
                            f"(nq,) = ({model.n_coordinates},); {label}{signature} does not") from None
    if not _checks.checks_enabled() or any(_is_traced(x) for x in (t0, q0, qd0)):
        return
    out = np.asarray(_generalized(fn(t0, q0, qd0), name, q0, model, who))
    if not np.all(np.isfinite(out)):
        bad = [model.coordinate_names[j] for j in np.nonzero(~np.isfinite(np.atleast_1d(out)))[0]]
        raise ValueError(f"{who}: {name}(t0, q0, qd0) returned NaN or inf for coordinates {bad} (t0 = {t0}); "
                         "it must return finite generalized forces")


def _same_model(fn, name: str, model, who: str):
    """Refuse ``controls``/``forces`` that carry a model (``ModelForces``) with other coordinates."""
    own = getattr(fn, "model", None)
    if isinstance(own, Model) and tuple(own.coordinate_names) != tuple(model.coordinate_names):
        raise ValueError(f"{who}: {name} ({type(fn).__name__}) was built for a model with coordinates "
                         f"{tuple(own.coordinate_names)}, but the simulated model has {tuple(model.coordinate_names)}; "
                         f"build it from the simulated model, e.g. {name}=ModelForces(model)")


def _initial_state(model, q0, qd0, who: str):
    """``q0``, ``qd0`` as real ``(nq,)`` arrays of one floating dtype (trace-time checks)."""
    require_model(model, who)
    out = []
    for name, x in (("q0", q0), ("qd0", qd0)):
        out.append(_checks.real_array(x, f"{who}: {name} must be a real array of shape (nq,) = ({model.n_coordinates},)",
                                      f"{who}: {name} must be a real (integer or floating) array", show_value=True))
    q0, qd0 = out
    if _checks.checks_enabled():  # a concrete q0 in degrees (or millimetres)
        warn_far_outside_ranges(model, q0, f"{who}: q0")
    if not jnp.issubdtype(q0.dtype, jnp.inexact):
        q0 = q0.astype(float)
    dtype = q0.dtype
    qd0 = qd0.astype(dtype)
    nq = model.n_coordinates
    if q0.shape != (nq,) or qd0.shape != (nq,):
        raise ValueError(f"q0 and qd0 must have shape ({nq},), got {q0.shape} and {qd0.shape}"
                         f"{_checks.coordinates_context(model)}")
    return q0, qd0


def _checked_saveat(saveat, t0, t1):
    """Run-time check (traced) that the ``saveat`` times are finite, sorted and in [t0, t1]."""
    if isinstance(saveat.subs, diffrax.SubSaveAt) and saveat.subs.ts is not None:
        ts = saveat.subs.ts
        bad_ts = ~jnp.all(jnp.isfinite(ts)) | jnp.any(ts < t0) | jnp.any(ts > t1) | jnp.any(jnp.diff(ts) < 0)
        saveat = eqx.tree_at(
            lambda s: s.subs.ts,
            saveat,
            eqx.error_if(ts, bad_ts, "simulate: saveat times must be finite, non-decreasing and within [t0, t1]"),
        )
    return saveat


def _as_saveat(saveat, t0, t1, dtype):
    """``None`` (end point), an array of times (checked now when concrete) or a ``diffrax.SaveAt``."""
    if saveat is None:
        return diffrax.SaveAt(t1=True)
    if isinstance(saveat, diffrax.SaveAt):
        return saveat
    try:
        ts = jnp.asarray(saveat)
    except (TypeError, ValueError):
        raise TypeError(f"simulate: saveat must be an array of times, a diffrax.SaveAt or None, got {saveat!r}") from None
    if not (jnp.issubdtype(ts.dtype, jnp.floating) or jnp.issubdtype(ts.dtype, jnp.integer)):
        raise TypeError(f"simulate: saveat times must be real, got dtype {ts.dtype}")
    ts = ts.astype(dtype)
    if ts.ndim != 1:
        raise ValueError(f"simulate: saveat times must be a 1-D array (n_save,), got shape {ts.shape}")
    if ts.shape[0] == 0:
        raise ValueError("simulate: saveat holds no times; pass None to save the end point only")
    if not _is_traced(ts) and not _is_traced(t0) and not _is_traced(t1):
        tn = np.asarray(ts)
        if not np.all(np.isfinite(tn)) or np.any(np.diff(tn) < 0) or np.any(tn < t0) or np.any(tn > t1):
            raise ValueError(
                f"simulate: saveat times must be finite, non-decreasing and within [t0, t1] = [{t0}, {t1}], got {tn}"
            )
    return diffrax.SaveAt(ts=ts)


def _checked_end_time(t0, t1, who: str):
    """``t1`` behind a run-time check that ``t0``, ``t1`` are finite with ``t1 >= t0`` (traced times)."""
    bad_t = ~(jnp.isfinite(t0) & jnp.isfinite(t1) & (t1 >= t0))
    return eqx.error_if(t1, bad_t, f"{who}: t0 and t1 must be finite with t1 >= t0")


def _integrate(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, adjoint, max_steps, throw):
    """The traced body of :func:`simulate` (one trace per static configuration; tests count them)."""
    t1 = _checked_end_time(t0, t1, "simulate")
    q0, qd0 = y0
    y0 = (
        eqx.error_if(q0, ~jnp.all(jnp.isfinite(q0)), "simulate: q0 is not finite"),
        eqx.error_if(qd0, ~jnp.all(jnp.isfinite(qd0)), "simulate: qd0 is not finite"),
    )
    saveat = _checked_saveat(saveat, t0, t1)
    if isinstance(adjoint, DiscreteAdjoint):
        return _discrete_adjoint_solve(adjoint, field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller,
                                       max_steps, throw)
    return diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        solver,
        t0=t0,
        t1=t1,
        dt0=dt0,
        y0=y0,
        args=model,
        saveat=saveat,
        stepsize_controller=stepsize_controller,
        adjoint=adjoint,
        max_steps=max_steps,
        throw=throw,
    )


@eqx.filter_jit
def _solve(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, adjoint, max_steps, throw):
    # `_integrate` is looked up at trace time, so a test can wrap it to count traces
    return _integrate(field, solver, t0, t1, dt0, y0, model, saveat, stepsize_controller, adjoint, max_steps, throw)


def simulate(
    model: Model,
    q0,
    qd0,
    t0,
    t1,
    *,
    saveat=None,
    solver=None,
    controls: Callable | None = None,
    forces: Callable | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    dt0: float | None = None,
    max_steps: int | None = 100_000,
    adjoint=None,
    stepsize_controller=None,
    throw: bool = True,
    vector_field: Callable | None = None,
) -> diffrax.Solution:
    """Integrate the equations of motion from ``(q0, qd0)`` at ``t0`` to ``t1 >= t0``.

    ``saveat``: an array of times, a ``diffrax.SaveAt``, or ``None`` (end point only; pass
    ``diffrax.SaveAt(dense=True)`` for dense output).  ``solver`` defaults to ``diffrax.Tsit5()``;
    ``stepsize_controller`` to ``diffrax.PIDController(rtol, atol)``.
    Returns the ``diffrax.Solution``; ``sol.ys`` is the tuple ``(q, q̇)`` with a leading time axis.
    ``adjoint`` defaults to ``diffrax.RecursiveCheckpointAdjoint()`` (reverse-mode through the
    solver); ``diffrax.BacksolveAdjoint()`` and ``diffrax.ForwardMode()`` also work, and so does
    :class:`mbjax.DiscreteAdjoint` (reverse mode by a hand-written discrete adjoint over the accepted
    steps: the same forward solve and outputs, the same gradient to rounding; explicit Runge-Kutta solvers,
    step sizes held constant, a step buffer of ``DiscreteAdjoint.max_steps``; see
    :mod:`mbjax.discrete_adjoint`).
    ``vector_field`` replaces the default :class:`DynamicsField` (for reduced models): a callable
    ``(t, (q, q̇), model) -> (q̇, q̈)``, best an ``eqx.Module`` built once (see the module notes on
    what re-traces).  The model is passed to the vector field as ``args``, so ``jax.grad`` with
    respect to model parameters flows through the solve.  ``t0``, ``t1``, ``dt0``, ``rtol``,
    ``atol`` and the ``saveat`` times are dynamic (new values do not recompile).
    """
    q0, qd0 = _initial_state(model, q0, qd0, "simulate")
    dtype = q0.dtype
    _check_interval(t0, t1)
    max_steps = _check_options(dt0, rtol, atol, max_steps, solver, "simulate", tolerances=stepsize_controller is None)
    if vector_field is not None and not callable(vector_field):
        raise TypeError(f"simulate: vector_field must be a callable, got {type(vector_field).__name__}")
    # non-weak arrays of the state's dtype: Python floats, NumPy scalars and arrays all give the
    # same abstract signature, so new values never re-trace
    t0 = jnp.asarray(t0, dtype=dtype)
    t1 = jnp.asarray(t1, dtype=dtype)
    if vector_field is None:
        for name, fn in (("controls", controls), ("forces", forces)):
            if fn is not None:
                _check_callable(fn, name, model, t0, q0, qd0)
    if dt0 is not None:
        dt0 = jnp.asarray(dt0, dtype=dtype)
    if solver is None:
        solver = diffrax.Tsit5()
    saveat = _as_saveat(saveat, t0, t1, dtype)
    custom_controller = stepsize_controller is not None
    if stepsize_controller is None:
        stepsize_controller = diffrax.PIDController(rtol=jnp.asarray(rtol, dtype=dtype), atol=jnp.asarray(atol, dtype=dtype))
    if adjoint is None:
        adjoint = diffrax.RecursiveCheckpointAdjoint()
    if vector_field is None:
        field = DynamicsField(controls, forces)
        # the default field reads the body tree only: muscles and file metadata stay out of the
        # solve's args (a smaller adjoint state for BacksolveAdjoint; a user's vector_field may
        # carry the whole model: models hold no empty-tuple nodes, which diffrax 0.7 cannot
        # stop_gradient through, see mbjax.muscles.paths.MusclePaths)
        model = model.replace(muscles=None, forces=None, path_functions=None, osim=None)
    elif controls is not None or forces is not None:
        raise ValueError("simulate: controls and forces apply to the default vector field; put them in vector_field")
    else:
        field = vector_field
    if not custom_controller:
        _warn_fine_tolerances(rtol, atol, dtype, "simulate")
    try:
        return _solve(field, solver, t0, t1, dt0, (q0, qd0), model, saveat, stepsize_controller, adjoint, max_steps,
                      throw)
    except eqx.EquinoxRuntimeError as err:
        if not _is_max_steps(err) or any(_is_traced(x) for x in (t0, t1, q0, qd0)):
            raise
        inputs = [f"initial state q0={np.asarray(q0)}, qd0={np.asarray(qd0)}"]
        if vector_field is None:
            inputs = _magnitude("controls", controls, t0, q0, qd0) + _magnitude("forces", forces, t0, q0, qd0) + inputs
        raise _max_steps_error("simulate", err, rtol, atol, max_steps, dtype, t0, t1, inputs) from err
