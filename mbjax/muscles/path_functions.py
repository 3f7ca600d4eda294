"""Muscle paths as empirical functions of the coordinates they span (OpenSim's ``FunctionBasedPath``).

A path's length is a smooth function L_m(q_{S_m}) of the coordinates S_m it spans, the Ehsani
paper's empirical joint function applied to a muscle: its moment arms are the closed-form
derivatives r_mk = -∂L_m/∂q_k (Ehsani Eq. 193 with the path's geometry replaced by its function),
zero for every coordinate outside S_m.  The function is OpenSim's ``MultivariatePolynomialFunction``
(coefficients in OpenSim's term order, :func:`~mbjax.maps.multivariate.multivariate_exponents`,
arguments the raw coordinate values), so a model with path functions is read from and written to a
``.osim`` file as ``FunctionBasedPath`` objects that OpenSim 4.6 evaluates identically.

:class:`PathFunctions` holds the functions of some or all muscles of a model in
``model.path_functions``; :func:`mbjax.muscle_lengths` and :func:`mbjax.moment_arms` read
them for those muscles (and skip the path geometry altogether when every muscle has one), so every
consumer of lengths and moment arms (muscle forces, static optimization, muscle-driven simulation,
identification) runs unchanged, with gradients in the coefficients.  The functions are grouped by
(dimension, order): one vectorised evaluation per group, no loop over muscles.
"""

from __future__ import annotations

import functools
from typing import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._model import require_model
from ..maps.multivariate import multivariate_exponents
from .path_set import get_paths


class PathFunctionGroup(eqx.Module):
    """Path functions of equal ``(dimension, order)``: ``coefficients (n, T)``, ``inputs (n, d)``
    coordinate indices into q, ``rows (n,)`` muscle indices, and the coordinate ranges each was
    fitted on, ``lower``/``upper (n, d)`` (±inf where unknown: a function read from a file).  A
    polynomial fitted on a range is no model of the path outside it: evaluating it there is an error
    while checks are on (:func:`path_function_range_rules`)."""

    coefficients: jnp.ndarray
    inputs: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    rows: tuple[int, ...] = eqx.field(static=True)
    order: int = eqx.field(static=True)
    lower: jnp.ndarray | None = None
    upper: jnp.ndarray | None = None

    def __check_init__(self):
        for name, bound in (("lower", self.lower), ("upper", self.upper)):
            if bound is not None and jnp.shape(bound) != (len(self.rows), len(self.inputs[0])):
                raise ValueError(f"PathFunctionGroup.{name} must have shape (n, d) = "
                                 f"({len(self.rows)}, {len(self.inputs[0])}), got {jnp.shape(bound)}")

    @property
    def dimension(self) -> int:
        return len(self.inputs[0])

    def values_and_gradients(self, q, gradients: bool = True):
        """L ``(n, *batch)`` and ∂L/∂q_S ``(n, d, *batch)`` at ``q (n_q, *batch)`` (see :func:`polynomial_values`;
        ``gradients=False``: the value alone, and None)."""
        x = q[np.asarray(self.inputs)]  # (n, d, *batch)
        out = polynomial_values(x, self.coefficients, self.order, gradients)
        return out[:, 0], (out[:, 1:] if gradients else None)


def polynomial_values(x, coefficients, order: int, gradients: bool = True):
    """Values and gradients ``(n, 1 + d, *batch)`` (``gradients=False``: ``(n, 1, *batch)``) of ``n``
    ``MultivariatePolynomialFunction`` s of total degree ≤ ``order`` with ``coefficients (n, T)`` (OpenSim's
    term order) at their arguments ``x (n, d, *batch)``.

    The monomials φ_t = Π_i x_i^{e_ti} come from power tables x_i^0 … x_i^k (k products) and one
    gather per argument; then L = φᵀc and ∂L/∂x_j = φᵀ(D_j c) with (D_j c)_s = Σ_{t: e_t − δ_j = e_s}
    e_tj c_t, a linear map of the coefficients (the derivative of a polynomial of order k is one of
    order k − 1 on the same terms): one contraction of the ``(1 + d, T)`` coefficient rows with φ
    gives value and gradient.
    """
    d = x.shape[1]
    e = multivariate_exponents(d, order)  # (T, d)
    dtype = jnp.result_type(x, coefficients)
    x = x.astype(dtype)
    powers = [jnp.ones_like(x)]
    for _ in range(order):
        powers.append(powers[-1] * x)
    powers = jnp.stack(powers, axis=2)  # (n, d, k + 1, *batch)
    phi = powers[:, 0, e[:, 0]]
    for i in range(1, d):
        phi = phi * powers[:, i, e[:, i]]  # (n, T, *batch)
    c = coefficients.astype(dtype)
    rows = [c]
    if gradients:
        src, dst, var, mult = _derivative_map(d, order)
        rows += [jnp.zeros_like(c).at[:, dst[var == j]].add(c[:, src[var == j]] * mult[var == j]) for j in range(d)]
    return jnp.einsum("nkt,nt...->nk...", jnp.stack(rows, axis=1), phi)


@functools.lru_cache(maxsize=None)
def _derivative_map(dimension: int, order: int):
    """The entries (D_var)_{dst, src} = mult of the derivative maps (see :func:`polynomial_values`)."""
    e = multivariate_exponents(dimension, order)
    index = {tuple(r): t for t, r in enumerate(e)}
    src, dst, var, mult = [], [], [], []
    for t, r in enumerate(e):
        for j in np.nonzero(r)[0]:
            lower = r.copy()
            lower[j] -= 1
            src.append(t)
            dst.append(index[tuple(lower)])
            var.append(int(j))
            mult.append(float(r[j]))
    return (np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(var, np.int64), np.asarray(mult))


@functools.lru_cache(maxsize=None)
def _term_positions(dimension: int, order: int, to_order: int) -> np.ndarray:
    """Where each term of an order-``order`` polynomial sits among those of order ``to_order``."""
    big = {tuple(r): t for t, r in enumerate(multivariate_exponents(dimension, to_order))}
    return np.asarray([big[tuple(r)] for r in multivariate_exponents(dimension, order)], dtype=np.int64)


def _evaluate(pf: "PathFunctions", q, gradients: bool):
    """``(rows, inputs, out)`` per dimension: the functions of one dimension evaluated together, their
    coefficients padded with zeros to the highest order among them (fewer, larger operations than a
    pass per order); ``out (n, 1 + d, *batch)`` as :func:`polynomial_values`."""
    by_dimension: dict[int, list] = {}
    for g in pf.groups:
        by_dimension.setdefault(g.dimension, []).append(g)
    result = []
    for d, groups in sorted(by_dimension.items()):
        top = max(g.order for g in groups)
        n_terms = multivariate_exponents(d, top).shape[0]
        blocks = [jnp.zeros((len(g.rows), n_terms), g.coefficients.dtype).at[:, _term_positions(d, g.order, top)]
                  .set(g.coefficients) if g.order < top else g.coefficients for g in groups]
        inputs = np.asarray([i for g in groups for i in g.inputs], dtype=np.int64)  # (n, d)
        rows = np.asarray([r for g in groups for r in g.rows], dtype=np.int64)
        c = blocks[0] if len(blocks) == 1 else jnp.concatenate(blocks)
        result.append((rows, inputs, polynomial_values(q[inputs], c, top, gradients)))
    return result


class PathFunctions(eqx.Module):
    """The path functions of a model's muscles (all, or some), grouped by (dimension, order).

    ``names``: the muscle of each function, in group order (aligned with :attr:`rows`, the
    muscles' indices in the model); ``coordinates``: the model's coordinate names the inputs index
    (None: not known).
    """

    groups: tuple[PathFunctionGroup, ...]
    names: tuple[str, ...] = eqx.field(static=True)
    coordinates: tuple[str, ...] | None = eqx.field(static=True, default=None)

    @property
    def rows(self) -> np.ndarray:
        return np.asarray([r for g in self.groups for r in g.rows], dtype=np.int64)

    def violations(self, coordinate_names: Sequence[str], qs) -> list:
        """Host side of :func:`path_function_range_rules` at concrete poses ``qs (N, nq)``:
        ``(muscle, coordinate, value, lower, upper, pose index)`` for each coordinate out of range."""
        qs = np.asarray(qs, dtype=float)
        out = []
        k = 0
        for g in self.groups:
            muscles = self.names[k:k + len(g.rows)]
            k += len(g.rows)
            if g.lower is None:
                continue
            lower, upper = np.asarray(g.lower, float), np.asarray(g.upper, float)
            slack = np.asarray(_range_slack(lower, upper))
            x = qs[:, np.asarray(g.inputs)]  # (N, n, d)
            for p, i, j in zip(*np.nonzero((x < lower - slack) | (x > upper + slack))):
                out.append((muscles[i], coordinate_names[g.inputs[i][j]], float(x[p, i, j]),
                            float(lower[i, j]), float(upper[i, j]), int(p)))
        return out

    def function(self, name: str):
        """``(coordinate indices, order, coefficients)`` of muscle ``name``'s function."""
        if name not in self.names:
            raise KeyError(f"no path function for muscle {name!r}; functions exist for {list(self.names)}")
        k = self.names.index(name)
        for g in self.groups:
            if k < len(g.rows):
                return g.inputs[k], g.order, g.coefficients[k]
            k -= len(g.rows)
        raise AssertionError("unreachable")


def build_path_functions(muscle_names: Sequence[str], coordinate_names: Sequence[str],
                         functions: dict) -> PathFunctions:
    """:class:`PathFunctions` from ``functions = {muscle: (coordinates, order, coefficients[, ranges])}``.

    ``coordinates``: names of the model's coordinates (the function's arguments, in order);
    ``coefficients``: OpenSim's ``MultivariatePolynomialFunction`` coefficients for that dimension
    and order; ``ranges``: the ``(lower, upper)`` of each coordinate the function is valid on (what
    it was fitted on; default: everywhere).  Errors name the muscle and the coordinate.
    """
    for what, names in (("muscle_names", muscle_names), ("coordinate_names", coordinate_names)):
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise TypeError(f"build_path_functions: {what} must be a sequence of names (model.muscle_names, "
                            f"model.coordinate_names), got {names!r}"[:300])
        if len(set(names)) != len(names):
            raise ValueError(f"build_path_functions: {what} repeat a name: {list(names)}"[:300])
    muscle_names = list(muscle_names)
    coordinate_names = list(coordinate_names)
    by_key: dict[tuple[int, int], list] = {}
    if not isinstance(functions, dict):
        raise TypeError(f"path functions must be a PathFunctions or a dict {{muscle: (coordinates, order, "
                        f"coefficients)}}, got {type(functions).__name__}")
    for name, spec in functions.items():
        if name not in muscle_names:
            raise ValueError(f"path function for {name!r}: the model has no muscle of that name")
        if not isinstance(spec, (tuple, list)) or len(spec) not in (3, 4):
            raise ValueError(f"path function for muscle {name!r}: expected (coordinates, order, coefficients) or "
                             f"(coordinates, order, coefficients, ranges), got {spec!r}"[:300])
        coords, order, coefficients = spec[:3]
        if isinstance(coords, str):
            raise ValueError(f"path function for muscle {name!r}: coordinates must be a sequence of names, got the "
                             f"string {coords!r} (write ({coords!r},) for one coordinate)")
        coords = tuple(coords)
        if not coords:
            raise ValueError(f"path function for muscle {name!r}: it names no coordinate")
        if len(set(coords)) != len(coords):
            raise ValueError(f"path function for muscle {name!r}: coordinates {coords} repeat")
        missing = [c for c in coords if c not in coordinate_names]
        if missing:
            raise ValueError(f"path function for muscle {name!r}: {missing} are not coordinates of the model "
                             f"(independent coordinates: {coordinate_names})")
        if (isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer, float, np.floating))
                or not float(order).is_integer()):
            raise ValueError(f"path function for muscle {name!r}: order must be an integer >= 1, got {order!r}")
        order = int(order)
        if order < 1:
            raise ValueError(f"path function for muscle {name!r}: order must be >= 1, got {order}")
        try:
            c = np.asarray(coefficients, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"path function for muscle {name!r}: coefficients must be a sequence of numbers, got "
                             f"{coefficients!r}"[:300]) from None
        if c.ndim != 1:
            raise ValueError(f"path function for muscle {name!r}: coefficients must be one flat sequence (OpenSim's "
                             f"term order), got shape {c.shape}")
        n_terms = multivariate_exponents(len(coords), order).shape[0]
        if c.size != n_terms:
            raise ValueError(f"path function for muscle {name!r}: a MultivariatePolynomialFunction of dimension "
                             f"{len(coords)} and order {order} has {n_terms} coefficients, got {c.size}")
        if not np.all(np.isfinite(c)):
            raise ValueError(f"path function for muscle {name!r}: coefficients are not all finite")
        inputs = tuple(coordinate_names.index(x) for x in coords)
        bounds = _ranges(name, coords, spec[3] if len(spec) == 4 else None)
        by_key.setdefault((len(coords), order), []).append((muscle_names.index(name), inputs, c, bounds))
    groups = []
    for (_, order), items in sorted(by_key.items()):
        groups.append(PathFunctionGroup(
            coefficients=jnp.asarray(np.stack([c for _, _, c, _ in items])),
            inputs=tuple(i for _, i, _, _ in items),
            rows=tuple(r for r, _, _, _ in items),
            order=order,
            lower=jnp.asarray(np.stack([b[:, 0] for *_, b in items])),
            upper=jnp.asarray(np.stack([b[:, 1] for *_, b in items])),
        ))
    rows = [r for g in groups for r in g.rows]
    return PathFunctions(groups=tuple(groups), names=tuple(muscle_names[r] for r in rows),
                         coordinates=tuple(coordinate_names))


def _ranges(name: str, coords: tuple, ranges) -> np.ndarray:
    """``(d, 2)`` lower and upper bound of each coordinate (``ranges`` None: unbounded)."""
    if ranges is None:
        return np.tile([-np.inf, np.inf], (len(coords), 1))
    try:
        r = np.asarray(ranges, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"path function for muscle {name!r}: ranges must be one (lower, upper) pair of numbers per "
                         f"coordinate {coords}, got {ranges!r}"[:300]) from None
    if r.shape != (len(coords), 2):
        raise ValueError(f"path function for muscle {name!r}: ranges must be one (lower, upper) per coordinate "
                         f"{coords}, shape ({len(coords)}, 2), got {r.shape}")
    if np.any(np.isnan(r)) or np.any(r[:, 0] > r[:, 1]):
        raise ValueError(f"path function for muscle {name!r}: ranges {r.tolist()} must be (lower, upper) with "
                         f"lower <= upper (inf allowed), one per coordinate {coords}")
    return r


def _range_slack(lower, upper):
    """Rounding slack of a range check: 1e-12 of the span (at least 1e-12), as the joint maps'."""
    span = jnp.where(jnp.isfinite(upper - lower), upper - lower, 1.0)
    return 1e-12 * jnp.maximum(span, 1.0)


def path_function_range_rules(model, q, where: str) -> list:
    """``(bad, message)`` per path function evaluated outside the coordinate ranges it was fitted on
    (``q (nq,)`` or ``(..., nq)``): its polynomial is no model of the path there."""
    pf = get_path_functions(model)
    if pf is None:
        return []
    names = model.coordinate_names
    rules = []
    k = 0
    for g in pf.groups:
        rules.append((~jnp.all(jnp.isfinite(g.coefficients), axis=-1), [
            f"{where}: the path function of muscle {m!r} has coefficients that are NaN or inf (changed after "
            "fitting? eqx.tree_at or a fit step)" for m in pf.names[k:k + len(g.rows)]]))
        if g.lower is None:
            k += len(g.rows)
            continue
        x = jnp.take(q, np.asarray(g.inputs), axis=-1)  # (..., n, d)
        slack = _range_slack(g.lower, g.upper)
        out = (x < g.lower - slack) | (x > g.upper + slack)
        rules.append((jnp.moveaxis(out, -2, 0), [
            f"{where}: the path function of muscle {m!r} is evaluated outside the fitted range of its "
            f"coordinates ({', '.join(names[i] for i in inputs)}): refit it over the poses you need "
            "(fit_path_functions' ranges= or motion=); mbjax.range_violations(model, q) names the value"
            for m, inputs in zip(pf.names[k:k + len(g.rows)], g.inputs)]))
        k += len(g.rows)
    return rules


def get_path_functions(model) -> PathFunctions | None:
    """The model's :class:`PathFunctions`, or None when every path is geometric."""
    pf = model.path_functions
    if pf is not None and not isinstance(pf, PathFunctions):
        raise ValueError(f"model.path_functions must be a PathFunctions, got {type(pf).__name__}")
    return pf


def with_path_functions(model, functions: PathFunctions | dict | None):
    """A copy of ``model`` whose muscles named in ``functions`` use them for length and moment arms
    (``functions``: a :class:`PathFunctions` or the dict of :func:`build_path_functions`; None
    removes them, every path geometric again)."""
    require_model(model, "with_path_functions")
    if functions is None:
        return model.replace(path_functions=None)
    if not isinstance(functions, PathFunctions):
        functions = build_path_functions(get_paths(model).names, model.coordinate_names, functions)
    _check_fits(model, functions)
    return model.replace(path_functions=functions)


def _check_fits(model, functions: PathFunctions) -> None:
    """Refuse functions of another model: each must name the model's muscle at its row, and read
    coordinates the model has at the indices its inputs give."""
    if not isinstance(functions, PathFunctions):
        raise TypeError(f"with_path_functions: functions must be a PathFunctions, a dict or None, got "
                        f"{type(functions).__name__}")
    muscles, coords = get_paths(model).names, tuple(model.coordinate_names)
    wrong = [f"{n!r} (row {r})" for n, r in zip(functions.names, functions.rows.tolist())
             if r >= len(muscles) or muscles[r] != n]
    if wrong:
        raise ValueError(f"with_path_functions: the path functions of {', '.join(wrong)} do not match the model's "
                         f"muscles at those rows; muscles: {list(muscles)}. Functions of another model? Build them for "
                         "this one (build_path_functions with its names, or fit_path_functions)")
    used = sorted({i for g in functions.groups for inputs in g.inputs for i in inputs})
    known = functions.coordinates
    bad = [i for i in used if i >= len(coords) or (known is not None and known[i] != coords[i])]
    if bad:
        theirs = [known[i] if known is not None else f"index {i}" for i in bad]
        raise ValueError(f"with_path_functions: the path functions read coordinates {theirs}, which the model does not "
                         f"have at those positions; coordinates: {list(coords)}. Functions of another model? Build "
                         "them for this one")


def all_paths_are_functions(model) -> bool:
    """True when every muscle of the model has a path function (no path geometry is evaluated)."""
    pf = get_path_functions(model)
    return pf is not None and set(pf.rows.tolist()) == set(range(get_paths(model).n_muscles))


def function_lengths(pf: PathFunctions, q, lengths):
    """``lengths (nm, *batch)`` with the rows of the functions replaced by their values at ``q``."""
    parts = _evaluate(pf, q, gradients=False)
    values = jnp.concatenate([out[:, 0] for _, _, out in parts]).astype(lengths.dtype)  # (N, *batch)
    rows = np.concatenate([r for r, _, _ in parts])
    source = np.full(lengths.shape[0], -1, dtype=np.int64)
    source[rows] = np.arange(rows.size)
    mask = (source >= 0).reshape((-1,) + (1,) * (lengths.ndim - 1))
    return jnp.where(mask, values[np.maximum(source, 0)], lengths)


def function_moment_arms(pf: PathFunctions, q, arms):
    """``arms (nq, nm, *batch)`` with the columns of the functions replaced by -∂L/∂q (zero outside
    the coordinates each function spans): one gather of the gradients into place."""
    parts = _evaluate(pf, q, gradients=True)
    nq, nm = arms.shape[:2]
    grads = [-out[:, 1:].reshape((-1,) + out.shape[2:]) for _, _, out in parts]  # (n·d, *batch) each
    flat = jnp.concatenate(grads + [jnp.zeros((1,) + grads[0].shape[1:], grads[0].dtype)]).astype(arms.dtype)
    source = np.full((nq, nm), flat.shape[0] - 1, dtype=np.int64)  # the zero row
    column = np.zeros(nm, dtype=bool)
    k = 0
    for rows, inputs, _ in parts:
        for r, coords in zip(rows, inputs):
            column[r] = True
            source[coords, r] = k + np.arange(coords.size)
            k += coords.size
    gathered = flat[source.ravel()].reshape((nq, nm) + flat.shape[1:])
    return jnp.where(column.reshape((1, nm) + (1,) * (arms.ndim - 2)), gathered, arms)


def refuse_path_functions(model, where: str) -> None:
    """Raise for a consumer that needs every path's points when some muscles have a path function."""
    pf = get_path_functions(model)
    if pf is not None:
        raise NotImplementedError(
            f"{where} needs each path's points, and the muscles {list(pf.names)} have a path function instead "
            "(a FunctionBasedPath has no points); use mbjax.moment_arms / mbjax.muscle_lengths, or the model "
            "without path functions (mbjax.with_path_functions(model, None))")
