"""OpenSim's model scaling (``ModelScaler``, ``Model::scale``) with uniform per-body factors.

:func:`scale_model` applies one factor ``s_b`` per OpenSim body (``X Y Z`` scaling, the only kind a
``MeasurementSet`` of marker pairs produces) exactly as ``Model::scale`` does, differentiably in the
factors (jax arrays, jit-able):

* joint frames: the parent-frame translation by the parent's factor, the child-frame translation by
  the child's (``OffsetFrame::extendScale``); ``CustomJoint`` translation functions by the parent's
  factor times ``|axis|ᵀ (1,1,1)`` (``SpatialTransform::scale``; a ``LinearFunction 1 0`` is a
  degree of freedom and is not scaled; ``EllipsoidJoint`` radii by the parent's factor), see
  :class:`mbjax.opensim.model.osim.OsimScaling`;
* bodies: centre of mass ``× s``; inertia ``× s²`` (``Body::scaleInertialProperties``, zero for a
  body of mass ``<= eps``), mass ``× s³`` and inertia ``× s³`` more unless the mass distribution is
  preserved; then, with ``mass`` given, every mass and inertia ``× mass / Σ m`` (``Body::scaleMass``);
* path points and the coordinate-driven components of ``MovingPathPoint`` functions by their body's
  factor; wrap-object translations and dimensions by their body's factor;
* muscles (``Thelen2003``, ``Millard2012*``): ``optimal_fiber_length`` and ``tendon_slack_length``
  ``× L_scaled / L_generic`` with the path lengths at the default pose (``Muscle::extendPostScale``);
  ``Ligament`` and ``PathSpring`` (force elements of ``model.forces``): their paths as the muscles',
  ``resting_length`` likewise (``extendPostScale``); ``PathActuator``: nothing;
* markers (:func:`scale_markers`): offsets by their body's factor (``Station::extendScale``).

A ``MovingPathPoint`` component without a coordinate is folded into the point's fixed location by the
importer and so scaled here; OpenSim leaves such a (constant) component unscaled.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..._checks import all_of
from ..._model import ELEMENT_FIELDS, require_model
from ...forces.base import ForceSet
from ...forces.path_force import PathForce
from ...io.arguments import real_number

#: SimTK::Eps: ``Body::scaleInertialProperties`` zeroes the inertia of a body of mass at most this
_EPS = float(np.finfo(float).eps)
#: path forces whose lengths OpenSim rescales after scaling (``extendPostScale``) and what
_POST_SCALED = {
    "Thelen2003Muscle": ("optimal_fiber_length", "tendon_slack_length"),
    "Millard2012EquilibriumMuscle": ("optimal_fiber_length", "tendon_slack_length"),
    "Millard2012AccelerationMuscle": ("optimal_fiber_length", "tendon_slack_length"),
    # ActivationFiberLengthMuscle_Deprecated::extendPostScale
    "Schutte1993Muscle_Deprecated": ("optimal_fiber_length", "tendon_slack_length"),
}
#: model elements that scaling handles (or that have no geometry to scale)
_HANDLED_EXTRAS = ("muscles", "osim")
#: force elements of coordinates only (OpenSim scales nothing of them)
_COORDINATE_FORCES = ("CoordinateLimitForce", "SpringGeneralizedForce", "ExpressionBasedCoordinateForce")


def _scaling_info(model, caller="scale_model", geometry=True):
    """OpenSim's scaling layout of ``model``; ``geometry``: the caller scales body geometry, which a
    model with eliminated point-on-line coordinates cannot have scaled (their loop keeps a copy)."""
    require_model(model, caller)
    info = model.osim
    sc = getattr(info, "scaling", None)
    if sc is None:
        raise ValueError(f"{caller}: the model was not loaded from an .osim file (mbjax.io.load_osim), so "
                         "OpenSim's joint frames are unknown")
    eliminated = getattr(info, "eliminated", ())
    if eliminated and geometry:
        raise NotImplementedError(
            f"{caller}: the model's PointOnLineConstraint(s) made {tuple(c for c, _ in eliminated)} "
            "dependent, solved on a copy of the unscaled body geometry (mbjax.opensim.model.osim_point_on_line); "
            "scaling it is not implemented")
    return sc


def segment_names(model) -> tuple[str, ...]:
    """The OpenSim bodies a scale factor applies to (ground excluded), in model order."""
    return _scaling_info(model, "segment_names", geometry=False).segments


def segment_factors(model, factors) -> jnp.ndarray:
    """``factors`` (a dict body name -> factor, unlisted bodies 1, or an array over
    :func:`segment_names`) as an array over :func:`segment_names`.  Unknown names and, where the values
    are concrete, non-positive or non-finite factors raise ``ValueError`` (traced ones: at run time,
    checks on)."""
    out, rules = _factors(model, factors, "segment_factors")
    return all_of(out, rules)


def _factor_array(x, what: str, shape: tuple):
    """``x`` as a real float array of ``shape``; ``what`` names it in the error."""
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{what} must be a number (a positive scale factor), got {x!r}")
    try:
        arr = jnp.asarray(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numbers (positive scale factors), got {type(x).__name__}: {x!r}") from None
    if arr.dtype == bool or not (jnp.issubdtype(arr.dtype, jnp.floating) or jnp.issubdtype(arr.dtype, jnp.integer)):
        raise TypeError(f"{what} must be real numbers (positive scale factors), got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {tuple(arr.shape)}")
    return arr.astype(float)


def _factors(model, factors, caller="scale_model"):
    """:func:`segment_factors` unchecked when traced, and the run-time rules that check it then."""
    names = _scaling_info(model, caller, geometry=False).segments
    if isinstance(factors, dict):
        unknown = [k for k in factors if k not in names and k != "ground"]
        if unknown:
            raise ValueError(f"{caller}: scale factors for unknown body(ies) {unknown}; bodies are {names}")
        if "ground" in factors and _concrete(factors["ground"]) and float(factors["ground"]) != 1.0:
            raise ValueError(f"{caller}: ground's scale factor must be 1 (ground is not scaled), got {factors['ground']}")
        vals = [_factor_array(factors.get(n, 1.0), f"{caller}: the scale factor of body {n!r}", ()) for n in names]
        out = jnp.stack(vals) if vals else jnp.zeros(0)
    else:
        if isinstance(factors, (str, bytes)) or factors is None:
            raise TypeError(f"{caller}: factors must be a dict body name -> factor or an array of shape "
                            f"({len(names)},) (one per body {names}), got {factors!r}")
        out = _factor_array(factors, f"{caller}: scale factors (one per body {names})", (len(names),))
    if _concrete(out):
        _check(np.asarray(out), names, caller)
        return out, []
    if not names:
        return out, []
    return out, [(~(jnp.isfinite(out) & (out > 0)),
                  [f"{caller}: scale factor of body {n!r} must be positive and finite" for n in names])]


def _concrete(x) -> bool:
    try:
        np.asarray(x)
        return True
    except Exception:  # a tracer
        return False


def _check(values, names, caller):
    bad = [f"{n}={v!r}" for n, v in zip(names, values.tolist()) if not (np.isfinite(v) and v > 0)]
    if bad:
        raise ValueError(f"{caller}: scale factors must be positive and finite: {', '.join(bad)}")
    warn_implausible_factors(dict(zip(names, values.tolist())), caller)


def warn_implausible_factors(factors: dict, where: str, stacklevel: int = 5) -> None:
    """Warn about scale factors beyond 0.1..10 (no human segment is scaled so), naming them; one in
    10..1000 looks like a percentage."""
    odd = {n: v for n, v in factors.items() if np.isfinite(v) and (v > 10 or 0 < v < 0.1)}
    if not odd:
        return
    pct = [n for n, v in odd.items() if 10 < v <= 1000]
    hint = (f"; {', '.join(map(repr, pct))} look(s) like a percentage: a factor is a ratio (110 % is 1.10)"
            if pct else "")
    warnings.warn(f"{where}: implausible scale factor(s) for a human subject (expected 0.1..10): "
                  + ", ".join(f"{n}={v:g}" for n, v in odd.items()) + hint, stacklevel=stacklevel)


def scale_model(model, factors, *, mass=None, preserve_mass_distribution: bool = True):
    """``model`` scaled by one uniform factor per OpenSim body, as OpenSim's ``Model::scale`` (module
    docstring).  ``factors``: dict name -> factor or an array over :func:`segment_names`; ``mass``:
    the subject's total mass (``ScaleTool``'s ``<mass>``), or None to keep the scaled masses.
    Differentiable in ``factors`` (and ``mass``) and jit-able (traced factors and mass are checked at
    run time: positive and finite, checks on); the factors applied are accumulated in
    ``OsimInfo.scaling.factors`` for :func:`mbjax.io.write_osim`."""
    from ...muscles import muscle_lengths

    sc = _scaling_info(model, "scale_model")
    s, rules = _factors(model, factors, "scale_model")
    if mass is not None:
        if np.ndim(mass) != 0:
            raise ValueError(f"scale_model: mass must be the subject's total mass, one number (kg), got shape "
                             f"{np.shape(mass)}")
    if mass is not None and not _concrete(mass):  # under jit: checked at run time, with the factors
        rules = rules + [(~(jnp.isfinite(mass) & (mass > 0)),
                          "scale_model: mass must be the subject's total mass, a finite number > 0 (kg)")]
        s, mass = all_of((s, mass), rules)
    else:
        s = all_of(s, rules)
    s = s.astype(model.offset.dtype)
    others = [k for k in ELEMENT_FIELDS if getattr(model, k) is not None and k not in _HANDLED_EXTRAS]
    forces = model.forces
    if forces is not None and all(type(e).__name__ in _COORDINATE_FORCES or isinstance(e, PathForce)
                                  for e in forces.elements):
        others.remove("forces")  # forces of coordinates, and path forces (scaled as the muscles are)
    if others:
        raise NotImplementedError(f"scale_model: scaling of the model elements {others} (force elements with points or "
                                  "frames: PointToPointSpring, BushingForce, HuntCrossleyForce) is not implemented")
    ext = jnp.concatenate([s, jnp.ones(1, s.dtype)])  # index -1 = ground
    s_chi = ext[np.asarray(sc.child, int)]
    offset, axis = _frames(model, sc, ext)
    # bodies: the child's factor (chain bodies of a joint are massless; their frames follow the child)
    com = model.com * s_chi[:, None]
    m0 = model.mass
    m1 = m0 if preserve_mass_distribution else m0 * s_chi**3
    inertia = model.inertia * (s_chi**2 * (1.0 if preserve_mass_distribution else s_chi**3))[:, None, None]
    inertia = jnp.where((m1 <= _EPS)[:, None, None], 0.0, inertia)
    if mass is not None:
        if not isinstance(mass, jax.core.Tracer) and not (np.ndim(mass) == 0 and np.isfinite(mass) and mass > 0):
            raise ValueError(f"scale_model: mass must be the subject's total mass, a finite number > 0 (kg), got "
                             f"{mass!r}; pass mass=None to keep the scaled model's masses")
        if not isinstance(mass, jax.core.Tracer) and not 1 <= float(mass) <= 500:
            warnings.warn(f"scale_model: mass={float(mass):g} kg is implausible for a human subject (expected 1..500 "
                          f"kg){'; it looks like grams (72600 g is 72.6 kg)' if float(mass) > 500 else ''}; mass is "
                          "the subject's total mass in kg", stacklevel=2)
        f = jnp.asarray(mass, m1.dtype) / jnp.sum(m1)
        m1, inertia = m1 * f, inertia * f
    out = eqx.tree_at(lambda m: (m.offset, m.axis, m.com, m.mass, m.inertia), model, (offset, axis, com, m1, inertia))
    info = out.osim
    paths = out.muscles
    out = out.replace(osim=eqx.tree_at(lambda i: i.scaling.factors, info, sc.factors * s),
                      muscles=None if paths is None else _scale_paths(model, paths, s, ext))
    if paths is not None and paths.n_muscles:
        q0 = info.default
        ratio = muscle_lengths(out, q0) / muscle_lengths(model, q0)
        params = dict(out.muscles.parameters)
        for key in {k for keys in _POST_SCALED.values() for k in keys}:
            if key not in params:
                continue
            rows = np.array([key in _POST_SCALED.get(kind, ()) for kind in paths.kinds])
            params[key] = jnp.where(jnp.asarray(rows) & (ratio > 0), params[key] * ratio, params[key])
        out = eqx.tree_at(lambda m: m.muscles.parameters, out, params)
    if forces is not None and any(isinstance(e, PathForce) for e in forces.elements):
        out = out.replace(forces=_scale_path_forces(model, out, s, ext))
    return out


def _scale_path_forces(model, out, s, ext):
    """The force set of the scaled model ``out``: each path force's (``PathSpring``, ``Ligament``) paths
    scaled as the muscles' are, and its ``resting_length`` × ``L_scaled / L_generic`` at the default
    pose (``PathSpring::extendPostScale``, ``Ligament::extendPostScale``)."""
    q0 = out.osim.default
    elements = []
    for e in model.forces.elements:
        if isinstance(e, PathForce):
            scaled = eqx.tree_at(lambda x: x.paths, e, _scale_paths(model, e.paths, s, ext))
            ratio = scaled.lengths(out, q0) / e.lengths(model, q0)
            e = eqx.tree_at(lambda x: x.resting_length, scaled,
                            jnp.where(ratio > 0, e.resting_length * ratio, e.resting_length))
        elements.append(e)
    return ForceSet(tuple(elements))


def _frames(model, sc, ext):
    """Joint offsets and axes scaled: translations ``fixed + s_parent unit_parent + s_child unit_child``,
    scaled translation functions' axes times ``s_parent · axis_weight``."""
    s_par = ext[np.asarray(sc.parent, int)]
    s_chi = ext[np.asarray(sc.child, int)]
    trans = sc.fixed + s_par[:, None] * sc.unit_parent + s_chi[:, None] * sc.unit_child
    w = sc.axis_weight
    return model.offset.at[:, :3, 3].set(trans), model.axis * jnp.where(w > 0, s_par * w, 1.0)[:, None]


def scale_kinematics(model, factors):
    """Only the kinematic part of :func:`scale_model` (joint frames and translation functions): the
    same body poses, markers need :func:`scale_markers`; masses, paths and muscles are left as they
    are (cheaper inside a marker fit)."""
    sc = _scaling_info(model, "scale_kinematics")
    s, rules = _factors(model, factors, "scale_kinematics")
    s = all_of(s, rules).astype(model.offset.dtype)
    offset, axis = _frames(model, sc, jnp.concatenate([s, jnp.ones(1, s.dtype)]))
    return eqx.tree_at(lambda m: (m.offset, m.axis), model, (offset, axis))


def _body_factor(model, ext, body_index):
    """Factor of the OpenSim body that model body ``body_index`` belongs to (``-1``: ground, 1)."""
    sc = _scaling_info(model, geometry=False)
    idx = np.asarray([sc.child[b] if b >= 0 else -1 for b in np.ravel(body_index)], int)
    return ext[idx].reshape(np.shape(body_index))


def _scale_paths(model, paths, s, ext):
    body = np.asarray(paths.body, int)
    loc = paths.location * _body_factor(model, ext, body)[..., None]
    maps = []
    for family, slots in zip(paths.moving_maps or (), paths.moving_slots):
        f = _body_factor(model, ext, np.asarray([body[m, p] for m, p, _ in slots], int))
        maps.append(_scale_map(family, f))
    out = eqx.tree_at(lambda p: p.location, paths, loc)
    if paths.moving_maps:
        out = eqx.tree_at(lambda p: p.moving_maps, out, tuple(maps))
    wraps = paths.wraps
    if wraps is not None:
        f = _body_factor(model, ext, np.asarray(wraps.body, int))
        # uniform factors: WrapObject translation, and each kind's dimensions (radius, length, ...) × s
        wraps = eqx.tree_at(lambda w: (w.translation, w.dimensions), wraps,
                            (wraps.translation * f[:, None], wraps.dimensions * f[:, None]))
        out = eqx.tree_at(lambda p: p.wraps, out, wraps)
    return out


def _scale_map(family, f):
    """A stack of joint maps with each map's output multiplied by ``f (n_maps,)``."""
    from ...maps.affine import Affine
    from ...maps.constant import Constant
    from ...maps.linear_combination import LinearCombination
    from ...maps.piecewise import PiecewisePolynomial

    if isinstance(family, PiecewisePolynomial):
        return eqx.tree_at(lambda m: m.coef, family, family.coef * f[:, None, None])
    if isinstance(family, Constant):
        return eqx.tree_at(lambda m: m.constant, family, family.constant * f)
    if isinstance(family, Affine):
        return eqx.tree_at(lambda m: (m.slope, m.offset), family,
                           (family.slope * f.reshape((-1,) + (1,) * (family.slope.ndim - 1)), family.offset * f))
    if isinstance(family, LinearCombination):
        return _scale_linear_combination(family, f)
    raise NotImplementedError(f"scaling a MovingPathPoint function of the {type(family).__name__} family is not "
                              "implemented (PiecewisePolynomial, Constant, Affine, LinearCombination are)")


def _scale_linear_combination(family, f):
    fields = {k: getattr(family, k) for k in ("weights", "offset") if hasattr(family, k)}
    if set(fields) != {"weights", "offset"}:
        raise NotImplementedError("scaling this LinearCombination layout is not implemented")
    w, c = fields["weights"], fields["offset"]
    return eqx.tree_at(lambda m: (m.weights, m.offset), family,
                       (w * f.reshape((-1,) + (1,) * (w.ndim - 1)), c * f.reshape((-1,) + (1,) * (c.ndim - 1))))


def scale_markers(model, markers, factors):
    """:class:`mbjax.Markers` with each offset times its body's factor (OpenSim scales a marker's
    location in its parent frame by that frame's body's factor)."""
    from ...markers import Markers

    require_model(model, "scale_markers")
    if not isinstance(markers, Markers):
        raise TypeError(f"scale_markers(model, markers, factors): markers must be mbjax.Markers, got "
                        f"{type(markers).__name__}")
    s, rules = _factors(model, factors, "scale_markers")
    s = all_of(s, rules)
    far = [(n, b) for n, b in zip(markers.names, markers.body) if b >= model.n_bodies]
    if far:
        raise ValueError(f"scale_markers: marker {far[0][0]!r} is on body index {far[0][1]}, but the model has "
                         f"{model.n_bodies} bodies {model.body_names}; build the markers for this model")
    ext = jnp.concatenate([s.astype(markers.offset.dtype), jnp.ones(1, markers.offset.dtype)])
    f = _body_factor(model, ext, np.asarray(markers.body, int))
    return eqx.tree_at(lambda m: m.offset, markers, markers.offset * f[:, None])


def frame_range(time, start: float, end: float) -> tuple[int, int]:
    """First and last frame (inclusive) that OpenSim's ``MarkerData::findFrameRange`` picks for
    ``[start, end]``: the last frame at or before ``start``, then the first at or after ``end``."""
    time = np.asarray(time, float)
    if start > end:
        raise ValueError(f"time range start {start} is past its end {end}")
    before = np.nonzero(time <= start)[0]
    i0 = int(before[-1]) if before.size else 0
    after = np.nonzero(time[i0:] >= end)[0]
    i1 = i0 + int(after[0]) if after.size else time.size - 1
    return i0, i1


def measurement_factor(model, markers, data, pairs, time_range, name=None) -> float:
    """One ``Measurement`` of OpenSim's ``ModelScaler``: the mean over marker ``pairs`` of the
    experimental distance (averaged over the frames of ``time_range``, :func:`frame_range`) over the
    model distance at the default pose.  ``markers``: the model's :class:`mbjax.Markers` (the scale
    marker set); ``data``: :class:`mbjax.io.MarkerData` (metres); ``name`` names the measurement in
    errors.

    Frames where a marker of a pair is missing (NaN) are left out of that pair's average, with a
    warning (OpenSim's ``ModelScaler`` then drops the whole measurement); a marker missing in every
    frame of the range, or a pair of one marker (or of two at the same place), is refused."""
    from ...markers import marker_positions

    require_model(model, "measurement_factor")
    what = f"measurement {name!r}" if name is not None else "measurement_factor"
    pairs = _pairs(pairs, what)
    i0, i1 = frame_range(data.time, *_time_range(time_range, data.time, what))
    x = np.asarray(marker_positions(model, markers, model.osim.default))
    t = np.asarray(data.time, float)[i0:i1 + 1]
    span = f"time {t[0]:g} to {t[-1]:g}"
    total = 0.0
    for a, b in pairs:
        for n in (a, b):
            if n not in data.names:
                raise ValueError(f"{what}: marker {n!r} of pair ({a}, {b}) is not in the marker data "
                                 f"({len(data.names)} markers)")
            if n not in markers.names:
                raise ValueError(f"{what}: marker {n!r} of pair ({a}, {b}) is not in the model's marker set")
        modelled = float(np.linalg.norm(x[markers.index(a)] - x[markers.index(b)]))
        if a == b or not modelled > 0:
            raise ValueError(f"{what}: pair ({a}, {b}) has no length in the model"
                             f"{' (the same marker twice)' if a == b else ''}; name two different markers")
        pa, pb = data.positions[i0:i1 + 1, data.names.index(a)], data.positions[i0:i1 + 1, data.names.index(b)]
        dist = np.linalg.norm(pb - pa, axis=1)
        ok = np.isfinite(dist)
        if not ok.any():
            gone = [n for n, p in ((a, pa), (b, pb)) if np.isnan(p).any(axis=1).all()] or [a, b]
            raise ValueError(f"{what}: marker(s) {gone} of pair ({a}, {b}) missing in every frame from {span}; "
                             "choose a time range where they are measured, or another pair")
        if not ok.all():
            gone = [n for n, p in ((a, pa), (b, pb)) if np.isnan(p).any(axis=1).any()]
            warnings.warn(f"{what}: marker(s) {gone} of pair ({a}, {b}) missing in {int((~ok).sum())} of {ok.size} "
                          f"frames from {span} (times {', '.join(f'{v:g}' for v in t[~ok][:5])}"
                          f"{' ...' if (~ok).sum() > 5 else ''}); the pair's distance is averaged over the other "
                          "frames (OpenSim's ModelScaler would not use the measurement)", stacklevel=2)
        total += float(np.mean(dist[ok])) / modelled
    factor = total / len(pairs)
    if not 0.1 <= factor <= 10:
        hint = ("; the marker data look like millimetres: read_trc converts by the file's Units, so check them"
                if 100 < factor < 1e4 else "; check the marker data's units (metres) and the pairs")
        warnings.warn(f"{what}: implausible scale factor {factor:g} for a human subject (expected 0.1..10){hint}",
                      stacklevel=2)
    return factor


def _pairs(pairs, what):
    """``pairs`` as a tuple of marker-name pairs; one pair ``(a, b)`` of two names is taken as one."""
    if isinstance(pairs, str) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"{what}: pairs must be marker-name pairs ((a, b), ...), got {pairs!r}")
    pairs = tuple(pairs)
    if len(pairs) == 2 and all(isinstance(n, str) for n in pairs):
        pairs = (pairs,)
    if not pairs:
        raise ValueError(f"{what}: needs at least one marker pair")
    for p in pairs:
        if isinstance(p, str) or not hasattr(p, "__len__") or len(p) != 2 or not all(isinstance(n, str) for n in p):
            raise ValueError(f"{what}: each marker pair must be two marker names (a, b), got {p!r} in {pairs!r}")
    return pairs


def _time_range(time_range, time, what):
    """``(start, end)`` as floats, refused when reversed or outside the data's ``time``."""
    if isinstance(time_range, str) or np.shape(time_range) != (2,):
        raise TypeError(f"{what}: time_range must be (start, end) in seconds, got {time_range!r}")
    start, end = (real_number(v, "time_range", what) for v in time_range)
    t = np.asarray(time, float)
    if not start <= end:
        raise ValueError(f"{what}: time_range start {start:g} is past its end {end:g}")
    if start > t[-1] or end < t[0]:
        raise ValueError(f"{what}: time_range ({start:g}, {end:g}) lies outside the data's times {t[0]:g} to "
                         f"{t[-1]:g}; give a range within the trial")
    return start, end
