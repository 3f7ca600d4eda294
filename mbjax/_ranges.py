"""Which joint map left its fitted range: the joint, coordinate, value and range, by name.

Inside compiled code an out-of-range coordinate (policy ``"error"``, :mod:`mbjax.maps`) stops the
program through ``eqx.error_if``, whose message is fixed when the program is traced.  This module
is the host-side half: :func:`range_violations` evaluates every map's range-checked quantity
(:meth:`~mbjax.maps.AbstractJointMap.guarded_inputs`) at concrete poses and names each violation.
Public functions called eagerly re-raise the run-time error with this list
(:mod:`mbjax._eager`); under your own ``jit``/``vmap`` the message points here.
"""

from __future__ import annotations

import functools
import os
import warnings
from typing import NamedTuple

import equinox as eqx
import jax
import numpy as np

from ._model import Model, require_model


class RangeViolation(NamedTuple):
    """One range-checked quantity outside its fitted range (``pose``: index in a batch, or None)."""

    joint: str
    family: str
    coordinates: tuple[str, ...]
    quantity: str
    value: float
    lower: float
    upper: float
    pose: int | None
    #: ``"joint"`` (a joint map; ``joint`` names its body) or ``"muscle"`` (a fitted path function,
    #: :mod:`mbjax.muscles.path_functions`; ``joint`` names the muscle)
    element: str = "joint"

    def __str__(self) -> str:
        where = "" if self.pose is None else f"pose {self.pose}: "
        if self.element == "muscle":
            return (f"{where}muscle {self.joint!r} (path function): {self.quantity} = {self.value:.6g} outside "
                    f"the fitted range [{self.lower:.6g}, {self.upper:.6g}]")
        return (
            f"{where}joint {self.joint!r} ({self.family} map of {', '.join(self.coordinates)}): "
            f"{self.quantity} = {self.value:.6g} outside the fitted range [{self.lower:.6g}, {self.upper:.6g}]"
        )


def _policy(family) -> str:
    outer = getattr(family, "outer", None)
    return getattr(family, "policy", getattr(outer, "policy", "extrapolate"))


def range_violations(model: Model, q) -> list[RangeViolation]:
    """Every map with policy ``"error"`` whose checked quantity is outside its range at ``q``, and
    every fitted muscle path function evaluated outside the coordinate range it was fitted on.

    ``q``: one pose ``(nq,)`` or a batch ``(N, nq)`` (concrete arrays; this runs on the host).
    The slack is :func:`mbjax.maps._base.range_guard`'s (1e-12 of the span), so the list is empty
    exactly when the compiled check passes.
    """
    require_model(model, "range_violations")
    nq = model.n_coordinates
    try:
        dtype = None if isinstance(q, dict) else np.asarray(q).dtype
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "iuf":  # as the core functions: no bool, complex, object or dict
        got = f"dtype {dtype}" if isinstance(q, np.ndarray) or (dtype is not None and dtype.kind != "O") \
            else type(q).__name__
        raise ValueError(f"range_violations: q must be a real (integer or floating) array of shape (nq,) or (N, nq) "
                         f"with nq = {nq} (coordinates {model.coordinate_names}), got {got}")
    q = np.asarray(q, dtype=float)
    if q.ndim not in (1, 2) or q.shape[-1] != nq:
        raise ValueError(f"range_violations: q must have shape (nq,) or (N, nq) with nq = {nq} "
                         f"(coordinates {model.coordinate_names}), got {q.shape}")
    if not np.all(np.isfinite(q)):
        at = np.argwhere(~np.isfinite(np.atleast_2d(q)))[0]
        where = f"coordinate {model.coordinate_names[at[1]]!r}" + ("" if q.ndim == 1 else f" of pose {at[0]}")
        raise ValueError(f"range_violations: q holds NaN or inf ({where}): no range can be judged there")
    single = q.ndim == 1
    qs = q[None] if single else q.reshape(-1, q.shape[-1])
    top = model.topology
    out: list[RangeViolation] = []
    for family, bodies, inputs in zip(model.maps, top.map_bodies, top.map_inputs):
        if _policy(family) != "error":
            continue
        inputs = np.asarray(inputs, dtype=np.int64)
        for p, pose in enumerate(qs):
            checked = family.guarded_inputs(pose[inputs]) if inputs.size else None
            if checked is None:
                continue
            values, lower, upper = (np.asarray(a, dtype=float) for a in checked)
            span = np.abs(upper - lower)
            tol = 1e-12 * np.maximum(np.where(np.isfinite(span), span, 1.0), 1.0)
            bad = (values < lower - tol) | (values > upper + tol)
            for i, j in zip(*np.nonzero(bad)):
                coords = family.coordinates[i]
                composed = hasattr(family, "outer")
                quantity = (f"u[{j}] (affine in {', '.join(coords)})" if composed
                            else coords[j] if j < len(coords) else f"input {j}")
                out.append(RangeViolation(
                    joint=top.body_names[bodies[i]],
                    family=type(family).__name__,
                    coordinates=tuple(coords),
                    quantity=quantity,
                    value=float(values[i, j]),
                    lower=float(lower[i, j]),
                    upper=float(upper[i, j]),
                    pose=None if single else p,
                ))
    functions = getattr(model, "path_functions", None)  # muscle paths fitted on a range
    if functions is not None:
        for muscle, coordinate, value, lo, hi, p in functions.violations(model.coordinate_names, qs):
            out.append(RangeViolation(joint=muscle, family="path function", coordinates=(coordinate,),
                                      quantity=coordinate, value=value, lower=lo, upper=hi,
                                      pose=None if single else p, element="muscle"))
    return out


def describe_range_violations(model: Model, q, limit: int = 10) -> str:
    """Text for an error message: the first ``limit`` violations, one per line."""
    found = range_violations(model, q)
    lines = [str(v) for v in found[:limit]]
    if len(found) > limit:
        lines.append(f"... and {len(found) - limit} more")
    return "\n".join(lines)


class CoordinateRangeWarning(UserWarning):
    """A pose given to a public function lies far outside a coordinate's ``<range>`` in the model file."""


def warn_far_outside_ranges(model, q, where: str) -> None:
    """Warn, naming the coordinate, when a concrete pose leaves a coordinate's range by more than its width.

    The core functions compute anywhere (sweeps past a joint's range are legitimate), so this is a
    warning, given only for eager calls on models read from a file with coordinate ranges: the
    common mistake it catches is a pose in degrees (or millimetres), which no range check at the
    edge of a range would tell from a real pose.  Unbounded ranges (wider than 1000) are skipped.
    """
    info = getattr(model, "osim", None)
    lower, upper = getattr(info, "lower", None), getattr(info, "upper", None)
    if lower is None or upper is None or any(isinstance(a, jax.core.Tracer) for a in (q, lower, upper)):
        return  # traced (under jit, vmap, or grad with respect to the model): nothing concrete to judge
    try:
        values = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        return
    nq = model.n_coordinates
    if values.ndim not in (1, 2) or values.shape[-1] != nq or np.shape(lower) != (nq,):
        return
    values = values.reshape(-1, nq)
    if not values.shape[0]:  # no poses: nothing to judge
        return
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    width = hi - lo
    kinds = tuple(getattr(info, "motion_types", ())) or ("rotational",) * nq
    found = []
    finite = np.isfinite(values)  # NaN and inf are the run-time checks' business
    vmin = np.min(np.where(finite, values, np.inf), axis=0)
    vmax = np.max(np.where(finite, values, -np.inf), axis=0)
    for j in range(nq):
        if not (np.isfinite(width[j]) and 0 < width[j] <= 1e3):
            continue
        far_low, far_high = vmin[j] < lo[j] - width[j], vmax[j] > hi[j] + width[j]
        if not (far_low or far_high):
            continue
        value = vmin[j] if far_low else vmax[j]
        unit, factor, other, beyond = ("m", 1e-3, "millimetres", 10.0) if kinds[j] == "translational" else \
            ("rad", np.pi / 180, "degrees", 2 * np.pi)
        within = (max(abs(vmin[j]), abs(vmax[j])) > beyond  # more than a full turn (10 m): not a pose
                  and lo[j] - width[j] <= vmin[j] * factor and vmax[j] * factor <= hi[j] + width[j])
        hint = f" (it looks like {other}: mbjax takes {'metres' if unit == 'm' else 'radians'})" if within else ""
        found.append(f"{model.coordinate_names[j]!r} = {value:.6g} outside [{lo[j]:.6g}, {hi[j]:.6g}] {unit}{hint}")
    if found:
        source = getattr(info, "source", None)
        of = f" of {os.path.basename(source)}" if isinstance(source, str) else ""
        warnings.warn(f"{where}: the pose is outside the coordinate ranges{of} by more than each range's width: "
                      + "; ".join(found[:6]) + (f"; and {len(found) - 6} more" if len(found) > 6 else "")
                      + " (computed anyway; mbjax.config.checks(False) silences this)",
                      CoordinateRangeWarning, stacklevel=3)


#: what a failed ``eqx.error_if`` raises: Equinox's error under ``filter_jit``, XLA's otherwise
RUNTIME_ERRORS = (eqx.EquinoxRuntimeError, jax.errors.JaxRuntimeError)


class MapRangeError(eqx.EquinoxRuntimeError):
    """A joint map's coordinate left its fitted range (policy ``"error"``), with the joint named."""


def name_range_violation(error, model, args):
    """Re-raise an eager call's out-of-range run-time error naming joint, coordinate, value, range.

    ``args[0]`` is the pose (or batch of poses) the public function was called with.  Returns
    (letting the caller re-raise ``error`` unchanged) when the error is another one or the pose
    cannot be read.
    """
    if "outside the fitted range" not in str(error) or not args or isinstance(error, MapRangeError):
        return
    q = args[0]
    nq = getattr(getattr(model, "topology", None), "n_coordinates", None)
    if nq is None or not hasattr(q, "shape") or not q.shape or q.shape[-1] != nq:
        return
    try:
        text = describe_range_violations(model, q)
    except Exception:  # a tracer or an odd argument: keep the original error
        return
    if text:
        own = [line for line in str(error).splitlines() if "path function of muscle" in line]
        head = (own[0].split(": refit it")[0].split("EquinoxRuntimeError: ")[-1].strip() + "; out of range:" if own
                else "a joint map's coordinate is outside its fitted range:")
        advice = "\nrefit over the poses you need (fit_path_functions' ranges= or motion=)" if own else ""
        raise MapRangeError(f"{head}\n{text}{advice}") from error


def naming_range_violations(fn):
    """Wrap a public ``fn(model, q, ...)``: called eagerly, a range error names the joint (no cost under jit)."""

    @functools.wraps(fn)
    def public(model, *args, **kwargs):
        try:
            return fn(model, *args, **kwargs)
        except RUNTIME_ERRORS as e:
            name_range_violation(e, model, args)
            raise

    return public
