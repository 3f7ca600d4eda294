"""Fit path functions to the exact paths: one batched sweep of lengths and moment arms, then per path
a least-squares polynomial in the coordinates it spans, its order chosen on poses it was not fitted to.

For muscle m with spanned coordinates S_m (those with |r_mk| above ``moment_arm_threshold`` at some
sampled pose) and OpenSim's monomials φ_t(x) = Π_i x_i^{e_ti} of total degree ≤ k, the coefficients c
minimise

    Σ_poses (φ(x)ᵀc − L)² + w² Σ_poses Σ_{j∈S_m} (∂φ(x)/∂x_jᵀc + r_mj)²

(lengths and moment arms together, both in metres: r = −∂L/∂q).  Poses are a Latin hypercube over the
coordinates' ranges (and the frames of a motion when given), split into a fitting set, a selection
set (the order k is the smallest meeting the tolerance there with a margin, else the best there) and a test set that
neither step saw, on which :class:`PathFitReport` gives each path's errors.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Sequence

import numpy as np

from .._checks import names as name_list
from .._model import require_model
from .._ranges import warn_far_outside_ranges
from ..maps.multivariate import multivariate_exponents
from .length_warning import LONGEST_MUSCLE_LENGTH
from .path_functions import _derivative_map


@dataclasses.dataclass(frozen=True)
class PathTolerance:
    """Errors a path function may have on held-out poses (metres): length RMS and max, moment-arm RMS."""

    length_rms: float = 1e-4
    length_max: float = 5e-4
    moment_arm_rms: float = 5e-4

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not (isinstance(value, (int, float, np.floating)) and np.isfinite(value) and value > 0):
                raise ValueError(f"PathTolerance.{field.name} must be a finite number > 0 (metres), got {value!r}")


@dataclasses.dataclass
class PathFit:
    """One path's function and its errors on the test poses (metres)."""

    muscle: str
    coordinates: tuple[str, ...]
    order: int
    coefficients: np.ndarray
    length_rms: float
    length_max: float
    moment_arm_rms: float
    moment_arm_max: float
    meets_tolerance: bool
    #: sampled neighbour pairs across which the exact length jumps (its change differs from the
    #: moment arms' prediction by more than the length tolerance), and the midpoint of the largest
    #: (coordinate values, or None): a jump no smooth function can follow
    jumps: int = 0
    jump_at: tuple[float, ...] | None = None
    #: sampled poses at which the exact path is implausible (longer than
    #: :data:`~mbjax.muscles.length_warning.LONGEST_MUSCLE_LENGTH` or a moment arm above
    #: :data:`LARGEST_MOMENT_ARM`: a wrap that fails there), left out of the fit and of the errors,
    #: and the first of them (coordinate values, or None)
    implausible: int = 0
    implausible_at: tuple[float, ...] | None = None


@dataclasses.dataclass
class PathFitReport:
    """What :func:`fit_path_functions` fitted: ``fits`` (one :class:`PathFit` per path), the
    tolerance, the sample counts and the seconds spent sampling and fitting; ``missed`` names the
    paths whose test errors exceed the tolerance."""

    fits: list[PathFit]
    tolerance: PathTolerance
    n_fit: int
    n_select: int
    n_test: int
    sample_seconds: float
    fit_seconds: float

    @property
    def missed(self) -> tuple[str, ...]:
        return tuple(f.muscle for f in self.fits if not f.meets_tolerance)

    def __getitem__(self, muscle: str) -> PathFit:
        for f in self.fits:
            if f.muscle == muscle:
                return f
        raise KeyError(f"no fitted path {muscle!r}; fitted: {[f.muscle for f in self.fits]}")

    def table(self) -> str:
        """One line per path: coordinates, order, test errors in mm."""
        head = (f"{'path':<14} {'dim':>3} {'order':>5} {'L rms':>8} {'L max':>8} {'r rms':>8} {'r max':>8}  (mm)"
                "  exact-path jumps; implausible exact samples")
        rows = [head]
        for f in self.fits:
            flag = "" if f.meets_tolerance else "  MISSED"
            jump = "" if not f.jumps else (f"  {f.jumps} (near " + ", ".join(
                f"{c}={v:.3g}" for c, v in zip(f.coordinates, f.jump_at)) + ")")
            odd = "" if not f.implausible else f"; {f.implausible} implausible"
            rows.append(f"{f.muscle:<14} {len(f.coordinates):>3} {f.order:>5} {1e3 * f.length_rms:8.4f} "
                        f"{1e3 * f.length_max:8.4f} {1e3 * f.moment_arm_rms:8.4f} {1e3 * f.moment_arm_max:8.4f}"
                        f"{flag}{jump}{odd}")
        return "\n".join(rows)

    def __str__(self) -> str:
        return (f"{len(self.fits)} path functions fitted on {self.n_fit} poses, order chosen on {self.n_select}, "
                f"tested on {self.n_test} (sampling {self.sample_seconds:.1f} s, fitting {self.fit_seconds:.1f} s); "
                f"{len(self.missed)} miss the tolerance{': ' + ', '.join(self.missed) if self.missed else ''}\n"
                + self.table())


def _monomials(x, order):
    """φ ``(n, T)`` and ∂φ/∂x_j ``(d, n, T)`` at ``x (n, d)``: OpenSim's monomials of total degree ≤
    ``order``, from power tables and the derivative map the evaluation uses
    (:func:`~mbjax.muscles.path_functions.polynomial_values`)."""
    n, d = x.shape
    e = multivariate_exponents(d, order)
    powers = x[:, :, None] ** np.arange(order + 1)  # (n, d, k + 1)
    phi = np.prod(powers[:, np.arange(d), e], axis=2)  # (n, T)
    src, dst, var, mult = _derivative_map(d, order)
    dphi = np.zeros((d, n, phi.shape[1]))
    dphi[var, :, src] = (mult * phi[:, dst]).T  # ∂φ_src/∂x_var = mult · φ_dst
    return phi, dphi


def _fit_one(x, L, r, order, weight):
    """Least-squares coefficients from lengths ``L (n,)`` and moment arms ``r (n, d)`` (r = −∂L/∂x)."""
    phi, dphi = _monomials(x, order)
    a = np.concatenate([phi] + [weight * dphi[j] for j in range(x.shape[1])])
    b = np.concatenate([L] + [-weight * r[:, j] for j in range(x.shape[1])])
    scale = np.sqrt(np.sum(a * a, axis=0))
    scale = np.where(scale > 0, scale, 1.0)
    c, *_ = np.linalg.lstsq(a / scale, b, rcond=None)
    return c / scale


def _errors(x, L, r, order, c):
    phi, dphi = _monomials(x, order)
    e_len = phi @ c - L
    e_arm = -np.einsum("jnt,t->nj", dphi, c) - r
    return (float(np.sqrt(np.mean(e_len ** 2))), float(np.max(np.abs(e_len))),
            float(np.sqrt(np.mean(e_arm ** 2))), float(np.max(np.abs(e_arm))))


#: a moment arm (m, or m/m about a translation) above this is no human muscle's: the exact path failed
#: there (OpenSim's wrap methods can, e.g. a path kilometres long on MoBL-ARMS's shoulder at poses
#: inside the coordinate ranges); such samples are left out of a fit, with a warning naming the paths
LARGEST_MOMENT_ARM = 1.0


#: the order stops rising once the selection set's errors are this fraction of the tolerance, so that
#: the test set (other poses, same distribution) meets it too
SELECTION_MARGIN = 0.7


def _score(errors, tolerance: PathTolerance) -> float:
    """The largest error as a fraction of its tolerance (length RMS, length max, moment-arm RMS)."""
    return max(errors[0] / tolerance.length_rms, errors[1] / tolerance.length_max, errors[2] / tolerance.moment_arm_rms)


def exact_path_jumps(x, lengths, arms, threshold: float, scale=None):
    """Neighbour pairs of samples across which a path's length jumps: ``(count, midpoint or None)``.

    For each sample i and its 2d + 1 nearest neighbours j (coordinates ``x (n, d)`` scaled by ``scale``),
    the trapezoid rule predicts L_j − L_i = −(r_i + r_j)/2 · (x_j − x_i) for a smooth path (error
    O(|Δx|³), and at most |Δx| |r_j − r_i| to leading order); a mismatch above both ``threshold`` (m)
    and that bound is a jump (a conditional point or a wrap switching on, a change of wrap segment).
    """
    from scipy.spatial import cKDTree

    xs = x if scale is None else x / scale
    k = min(2 * x.shape[1] + 1, len(x) - 1)  # neighbours on every side, so pairs straddle a jump
    _, nn = cKDTree(xs).query(xs, k=k + 1)
    i = np.repeat(np.arange(len(x)), k)
    j = nn[:, 1:].ravel()
    predicted = -0.5 * np.sum((arms[i] + arms[j]) * (x[j] - x[i]), axis=1)
    mismatch = np.abs(lengths[j] - lengths[i] - predicted)
    # a smooth path's trapezoid error is at most |Δx| times the moment arms' variation along the
    # pair, which |Δx| |r_j − r_i| estimates; a jump exceeds it however close the pair
    smooth_bound = np.linalg.norm(x[j] - x[i], axis=1) * np.linalg.norm(arms[j] - arms[i], axis=1)
    bad = mismatch > np.maximum(threshold, smooth_bound)
    if not bad.any():
        return 0, None
    pairs = {(min(a, b), max(a, b)) for a, b in zip(i[bad], j[bad])}
    w = int(np.argmax(mismatch))
    return len(pairs), tuple(float(v) for v in 0.5 * (x[i[w]] + x[j[w]]))


def _latin_hypercube(n, lower, upper, rng):
    d = lower.size
    u = (rng.permuted(np.tile(np.arange(n), (d, 1)), axis=1).T + rng.uniform(size=(n, d))) / n
    return lower + (upper - lower) * u


def _coordinate_ranges(model, ranges):
    names = list(model.coordinate_names)
    nq = len(names)
    lower = np.full(nq, np.nan)
    upper = np.full(nq, np.nan)
    info = model.osim
    if info is not None:
        lower, upper = np.asarray(info.lower, float).copy(), np.asarray(info.upper, float).copy()
    if ranges is not None and not isinstance(ranges, dict):
        raise TypeError(f"fit_path_functions: ranges must be a dict {{coordinate: (lo, hi)}}, got {type(ranges).__name__}")
    for name, pair in (ranges or {}).items():
        if name not in names:
            raise ValueError(f"fit_path_functions: ranges name {name!r}, which is not a coordinate of the model; "
                             f"coordinates: {names}")
        try:
            lo, hi = (float(v) for v in pair)
        except (TypeError, ValueError):
            raise ValueError(f"fit_path_functions: ranges[{name!r}] must be a pair of numbers (lo, hi), "
                             f"got {pair!r}") from None
        if lo > hi:
            raise ValueError(f"fit_path_functions: no finite range for coordinates [{name!r}]: ranges[{name!r}] = "
                             f"({lo:g}, {hi:g}) is reversed (lower > upper); give ({hi:g}, {lo:g})")
        if lo == hi:
            raise ValueError(f"fit_path_functions: ranges[{name!r}] = ({lo:g}, {hi:g}) is empty (lower == upper): "
                             "no function of that coordinate can be fitted on one value; give lower < upper")
        lower[names.index(name)], upper[names.index(name)] = lo, hi
    if ranges and info is not None:  # a range in degrees (or millimetres) is far outside the file's
        warn_far_outside_ranges(model, np.stack([lower, upper]),
                                "fit_path_functions: ranges")
    bad = [n for n, lo, hi in zip(names, lower, upper) if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi)]
    if bad:
        raise ValueError(f"fit_path_functions: no finite range for coordinates {bad}; give ranges={{name: (lo, hi)}}")
    return lower, upper


def sample_paths(model, qs, *, progress: bool = True):
    """Exact lengths ``(N, nm)`` and moment arms ``(N, nq, nm)`` at ``qs (N, nq)`` in one batched sweep."""
    from ..analysis.sweep import sweep_poses

    lengths, arms = sweep_poses(_lengths_and_arms, model, np.asarray(qs), progress=progress, desc="exact paths")
    return np.asarray(lengths), np.asarray(arms)


def _lengths_and_arms(model, q):
    from .geometry import muscle_lengths
    from .moment_arms import moment_arms

    return muscle_lengths(model, q), moment_arms(model, q)


def fit_path_functions(model, muscles: Sequence[str] | None = None, *, n_samples: int = 2000,
                       max_order: int = 12, max_terms: int = 1500, tolerance: PathTolerance | None = None,
                       moment_arm_threshold: float = 1e-4, moment_arm_weight: float = 1.0,
                       ranges: dict | None = None, motion=None, seed: int = 0, progress: bool = True):
    """A copy of ``model`` whose paths are polynomial functions of the coordinates they span, and a
    :class:`PathFitReport` of their errors on poses neither the fit nor the order choice saw.

    ``muscles``: the paths to fit (default: all).  ``n_samples`` poses (a Latin hypercube over the
    coordinate ranges, ``ranges={name: (lo, hi)}`` overriding the model's) are split 60/20/20 into
    fitting, order-selection and test sets; ``motion (T, nq)``: frames of a motion added to the
    fitting set (the test set stays in the ranges).  ``max_order``/``max_terms``: the highest total degree, and most terms, tried.
    ``tolerance``: the errors a path must meet on the selection set to stop raising its order
    (:class:`PathTolerance`); paths that miss it on the test set are named in ``report.missed`` and
    in a warning.  ``moment_arm_threshold`` (m): a coordinate is spanned where some sampled
    |moment arm| exceeds it.  Sampled poses at which a path's exact length is implausible (above
    :data:`~mbjax.muscles.length_warning.LONGEST_MUSCLE_LENGTH`, or a moment arm above
    :data:`LARGEST_MOMENT_ARM`: a wrap that fails, as OpenSim's does at the same poses) are left out
    of that path's fit and errors, counted in ``report[muscle].implausible`` and named in a warning.  Each function keeps the coordinate ranges it was fitted on (the
    ranges, widened to the motion's frames): evaluating it outside them is an error while checks
    are on, and :func:`mbjax.range_violations` names the coordinate and value.  The model keeps every path's geometry for the consumers that need
    points (joint reactions); :func:`mbjax.muscles.path_functions.with_path_functions` with None
    restores the exact paths.
    """
    require_model(model, "fit_path_functions")
    from .path_functions import build_path_functions, with_path_functions
    from .paths import get_paths

    tolerance = tolerance or PathTolerance()
    paths = get_paths(model)
    names = list(paths.names)
    chosen = names if muscles is None else list(name_list(muscles, "muscles", "fit_path_functions"))
    unknown = [m for m in chosen if m not in names]
    if unknown:
        raise ValueError(f"fit_path_functions: {unknown} are not muscles of the model; muscles: {names}")
    if not chosen:
        raise ValueError("fit_path_functions: no muscle to fit")
    twice = sorted({m for m in chosen if chosen.count(m) > 1})
    if twice:
        raise ValueError(f"fit_path_functions: muscles names {', '.join(map(repr, twice))} more than once: "
                         "name each muscle once")
    for name, value in (("n_samples", n_samples), ("max_order", max_order), ("max_terms", max_terms)):
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
                or not float(value).is_integer()):
            raise TypeError(f"fit_path_functions: {name} must be an integer, got {value!r}")
    if int(n_samples) < 50:
        raise ValueError(f"fit_path_functions: n_samples must be >= 50, got {n_samples}")
    if int(max_order) < 1:
        raise ValueError(f"fit_path_functions: max_order must be >= 1, got {max_order}")
    if int(max_terms) < 2:
        raise ValueError(f"fit_path_functions: max_terms must be >= 2 (order 1 in one coordinate has 2 terms), "
                         f"got {max_terms}")
    if not isinstance(tolerance, PathTolerance):
        raise TypeError(f"fit_path_functions: tolerance must be a PathTolerance, got {type(tolerance).__name__}")
    for name, value in (("moment_arm_threshold", moment_arm_threshold), ("moment_arm_weight", moment_arm_weight)):
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"fit_path_functions: {name} must be a finite number >= 0, got {value!r}")
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise TypeError(f"fit_path_functions: seed must be an integer >= 0 (it seeds the sampled poses; None: fresh "
                        f"poses each call), got {seed!r}")
    lower, upper = _coordinate_ranges(model, ranges)
    rng = np.random.default_rng(seed)
    n = int(n_samples)
    qs = _latin_hypercube(n, lower, upper, rng)
    n_fit, n_select = int(0.6 * n), int(0.2 * n)
    extra = np.zeros((0, lower.size))
    if motion is not None:
        extra = np.asarray(motion, float)
        if extra.ndim != 2 or extra.shape[1] != lower.size:
            raise ValueError(f"fit_path_functions: motion must have shape (T, {lower.size}), got {extra.shape}")
        warn_far_outside_ranges(model, extra, "fit_path_functions: motion")  # frames in degrees?
        if not np.all(np.isfinite(extra)):
            raise ValueError("fit_path_functions: motion holds NaN or inf")
    geometric = with_path_functions(model, None)
    t0 = time.perf_counter()
    lengths, arms = sample_paths(geometric, np.concatenate([qs, extra]), progress=progress)
    sample_seconds = time.perf_counter() - t0
    bad = ~np.all(np.isfinite(lengths), axis=0) | ~np.all(np.isfinite(arms), axis=(0, 1))
    undefined = [m for m in chosen if bad[names.index(m)]]
    if undefined:
        raise ValueError(f"fit_path_functions: the exact paths of {undefined} are undefined (NaN) at some sampled "
                         "poses (conditional points out of range, or a failed wrap); narrow the ranges")
    x_all = np.concatenate([qs, extra])
    # the range each function is valid on: the sampled ranges and the motion's frames
    fitted_lower, fitted_upper = np.minimum(lower, x_all.min(axis=0)), np.maximum(upper, x_all.max(axis=0))
    fit_idx = np.concatenate([np.arange(n_fit), n + np.arange(len(extra))])
    sel_idx = np.arange(n_fit, n_fit + n_select)
    test_idx = np.arange(n_fit + n_select, n)
    t0 = time.perf_counter()
    fits, functions, odd = [], {}, []
    coord_names = list(model.coordinate_names)
    for m in chosen:
        j = names.index(m)
        plausible = (lengths[:, j] <= LONGEST_MUSCLE_LENGTH) & np.all(np.abs(arms[:, :, j]) <= LARGEST_MOMENT_ARM, axis=1)
        m_fit, m_sel, m_test = fit_idx[plausible[fit_idx]], sel_idx[plausible[sel_idx]], test_idx[plausible[test_idx]]
        if min(len(m_fit), len(m_sel), len(m_test)) < min(len(fit_idx), len(sel_idx), len(test_idx)) // 2:
            raise ValueError(f"fit_path_functions: the exact path of {m!r} is implausible (longer than "
                             f"{LONGEST_MUSCLE_LENGTH:g} m or a moment arm above {LARGEST_MOMENT_ARM:g} m) at "
                             f"{np.sum(~plausible)} of {len(plausible)} sampled poses: its wraps fail over much of "
                             "the ranges; narrow the ranges (ranges=...) or fit it on a motion's neighbourhood")
        if not plausible.all():
            odd.append((m, int(np.sum(~plausible)), float(np.max(lengths[~plausible, j]))))
        spans = np.nonzero(np.max(np.abs(arms[plausible, :, j]), axis=0) > moment_arm_threshold)[0]
        if spans.size == 0:
            raise ValueError(f"fit_path_functions: muscle {m!r} spans no coordinate (every sampled |moment arm| "
                             f"<= {moment_arm_threshold} m)")
        x, L, r = x_all[:, spans], lengths[:, j], arms[:, spans, j]
        if spans.size + 1 > int(max_terms):
            raise ValueError(f"fit_path_functions: max_terms = {max_terms} allows no polynomial for muscle {m!r}, which "
                             f"spans {spans.size} coordinates: order 1 has {spans.size + 1} terms; give max_terms >= "
                             f"{spans.size + 1}")
        best = None
        for order in range(1, int(max_order) + 1):
            if multivariate_exponents(spans.size, order).shape[0] > min(int(max_terms), len(fit_idx) * (1 + spans.size) // 2):
                break  # more terms than the data can determine (or than is worth evaluating)
            c = _fit_one(x[m_fit], L[m_fit], r[m_fit], order, moment_arm_weight)
            e = _errors(x[m_sel], L[m_sel], r[m_sel], order, c)
            score = _score(e, tolerance)
            if best is None or score < best[0]:
                best = (score, order, c)
            if score <= SELECTION_MARGIN:
                break
        _, order, c = best
        e = _errors(x[m_test], L[m_test], r[m_test], order, c)
        meets = _score(e, tolerance) <= 1.0
        cs = tuple(coord_names[i] for i in spans)
        width = (upper - lower)[spans]
        jumps, at = exact_path_jumps(x[plausible], L[plausible], r[plausible], tolerance.length_max,
                                     np.where(width > 0, width, 1.0))
        first = None if plausible.all() else tuple(float(v) for v in x[np.argmin(plausible)])
        fits.append(PathFit(m, cs, order, c, *e, meets, jumps, at, int(np.sum(~plausible)), first))
        functions[m] = (cs, order, c, np.stack([fitted_lower[spans], fitted_upper[spans]], axis=1))
    fit_seconds = time.perf_counter() - t0
    report = PathFitReport(fits, tolerance, len(fit_idx), len(sel_idx), len(test_idx), sample_seconds, fit_seconds)
    if odd:
        warnings.warn("fit_path_functions: the exact paths of " + ", ".join(
            f"{m} ({k} poses, up to {top:.3g} m)" for m, k, top in odd) + f" are implausible at some of the "
            f"{len(x_all)} sampled poses (longer than {LONGEST_MUSCLE_LENGTH:g} m or a moment arm above "
            f"{LARGEST_MOMENT_ARM:g} m: a wrap fails there, as OpenSim's does at the same poses); those poses are "
            "left out of the fit and of the errors (report[muscle].implausible_at gives one)", stacklevel=2)
    if report.missed:
        warnings.warn(f"fit_path_functions: {len(report.missed)} paths miss the tolerance {tolerance} on the test "
                      f"poses: {', '.join(report.missed)} (see report.table())", stacklevel=2)
    fitted = with_path_functions(model, build_path_functions(names, coord_names, functions))
    return fitted, report
