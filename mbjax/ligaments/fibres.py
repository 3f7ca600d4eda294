"""Discrete ligament fibres and their wrench (TPS-ligament seed Eq. 6, 10, 14).

Both discretisations of a ligament end up here: TPSM-n (one fibre per Gauss point, weight
``W_g A_σk ‖r_x × r_y‖``) and the multibundle model (one fibre per mesh vertex, weight = mean
area per fibre).  A fibre runs from ``p`` on body A (the tibia, integration side, Σ_t) to ``q`` on
body B (the femur).  With ``l = ‖p - q‖``, ``ε = (l - l0)/l0`` and ``ŝ = (p - q)/l`` the force per
unit area on body B is ``f(ε) ŝ`` (Eq. 6) and on body A ``-f(ε) ŝ``; the moment about a pole O is
``(q - O) × f ŝ`` (equal to ``(p - O) × f ŝ`` since ``f ∥ p - q``).

Fibre laws (force per unit area, i.e. stress, Pa, for stiffness ``c`` in Pa):
- ``"quadratic"``: ``c ε²`` for ε > 0, 0 when slack (seed §3, ERRATA);
- ``"blankevoort"``: Blankevoort & Huiskes (1991), ``c ε²/(4 ε_l)`` for ``0 <= ε <= 2 ε_l``,
  ``c (ε - ε_l)`` above, 0 when slack; C¹ with transition strain ``2 ε_l = 0.06``.

Zero-length fibres (``p = q``) are handled by a grad-safe norm: they are slack for ``l0 > 0`` and
carry no force (``ŝ`` is set to 0).  Free lengths must be positive (``ValueError``).
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import _checks
from .._spatial import safe_sqrt

#: a ligament (fibre) free length above this many metres is no human ligament: millimetres given as metres?
LONGEST_FREE_LENGTH = 1.0


def warn_long_free_length(where: str, free_length, stacklevel: int = 3):
    """Warn when a (concrete) free length in metres exceeds :data:`LONGEST_FREE_LENGTH` (millimetres?)."""
    v = np.asarray(free_length, dtype=float).reshape(-1)
    if v.size and np.nanmax(v) > LONGEST_FREE_LENGTH:
        i = int(np.nanargmax(v))
        at = f" (fibre {i})" if v.size > 1 else ""
        warnings.warn(f"{where}: free_length {v[i]:g} m{at} is longer than {LONGEST_FREE_LENGTH:g} m, implausible for "
                      f"a ligament; it looks like millimetres: give metres ({v[i] / 1000:g})", UserWarning,
                      stacklevel=stacklevel)


#: a stiffness (Pa) below this is no ligament's (its tissue: tens to hundreds of MPa): MPa given as Pa?
SOFTEST_STIFFNESS = 1e4
#: a strain above this (100 %) is no intact ligament's: a strain given in percent?
LARGEST_STRAIN = 1.0


def warn_implausible(where: str, name: str, value, stacklevel: int = 3):
    """Warn, naming ``name``, when a concrete stiffness (Pa) looks like MPa or a strain like percent."""
    if isinstance(value, jax.core.Tracer):
        return
    v = np.asarray(value, dtype=float).reshape(-1)
    v = v[np.isfinite(v)]
    if not v.size:
        return
    if name == "stiffness" and 0 < v.max() < SOFTEST_STIFFNESS:
        warnings.warn(f"{where}: stiffness {v.max():g} Pa is implausibly soft for a ligament; it looks like MPa: "
                      f"give Pa ({v.max() * 1e6:g})", UserWarning, stacklevel=stacklevel)
    if name == "strain" and v.max() > LARGEST_STRAIN:
        warnings.warn(f"{where}: strain {v.max():g} is above {LARGEST_STRAIN:g} (a fibre stretched to twice its free "
                      f"length); it looks like percent: give a fraction ({v.max() / 100:g})", UserWarning,
                      stacklevel=stacklevel)


LAWS = ("quadratic", "blankevoort")


def _law_options(where: str, law, transition_strain) -> None:
    """The law's name and transition strain (trace time)."""
    if not isinstance(law, str) or law not in LAWS:
        raise ValueError(f"{where}: law {law!r} is not one of {LAWS}")
    ts = transition_strain
    if isinstance(ts, bool) or not isinstance(ts, (int, float, np.integer, np.floating)) or not (
            np.isfinite(ts) and ts > 0):
        raise ValueError(f"{where}: transition_strain must be a finite number > 0 (2 ε_l of Blankevoort's law), "
                         f"got {ts!r}")


def _law_arrays(where: str, **arrays):
    """Real arrays that broadcast to the strain's shape without changing it (trace time)."""
    out = {}
    for name, x in arrays.items():
        out[name] = _checks.real_array(x, f"{where}: {name} must be a real array or number",
                                       f"{where}: {name} must be real")
    shape = tuple(out["strain"].shape)
    for name, a in out.items():
        if not _checks.broadcasts_to(a.shape, shape):
            raise ValueError(f"{where}: {name} has shape {tuple(a.shape)}, strain {shape}: give one value per fibre "
                             "(the strain's shape) or one number")
    return out


def fibre_law(strain, stiffness, law: str = "quadratic", transition_strain: float = 0.06):
    """Fibre stress ``f(c, ε)`` of Eq. 6 (zero for slack fibres).  ``stiffness`` (Pa) >= 0: one number
    or one per strain; NaN/inf raise at run time (checks on)."""
    _law_options("fibre_law", law, transition_strain)
    a = _law_arrays("fibre_law", strain=strain, stiffness=stiffness)
    warn_implausible("fibre_law", "strain", a["strain"])
    eps, k = a["strain"], a["stiffness"]
    out = _fibre_law(eps, k, law, transition_strain)
    return _checks.all_of(out, [_checks.not_finite(eps, "fibre_law: strain"),
                                (~jnp.isfinite(k) | (k < 0), "fibre_law: stiffness must be finite and >= 0 (Pa)")])


def _fibre_law(strain, stiffness, law, transition_strain):
    """:func:`fibre_law` unchecked (a :class:`FibreSet`'s values are checked by its callers)."""
    eps = jnp.asarray(strain)
    pos = jnp.maximum(eps, 0.0)
    if law == "quadratic":
        return stiffness * pos**2
    if law == "blankevoort":
        el = 0.5 * transition_strain
        toe = stiffness * pos**2 / (4.0 * el)
        lin = stiffness * (pos - el)
        return jnp.where(pos <= 2.0 * el, toe, lin)
    raise ValueError(f"fibre law {law!r} is not one of {LAWS}")


def fibre_energy_density(strain, stiffness, free_length, law: str = "quadratic", transition_strain: float = 0.06):
    """Elastic energy per unit area ``∫_{l0}^{l} f dl = l0 ∫_0^ε f(e) de`` (for virtual-work tests).
    ``stiffness`` >= 0 and ``free_length`` > 0 (m): one number or one per strain."""
    _law_options("fibre_energy_density", law, transition_strain)
    a = _law_arrays("fibre_energy_density", strain=strain, stiffness=stiffness, free_length=free_length)
    eps, k, l0 = a["strain"], a["stiffness"], a["free_length"]
    out = _fibre_energy_density(eps, k, l0, law, transition_strain)
    return _checks.all_of(out, [
        _checks.not_finite(eps, "fibre_energy_density: strain"),
        (~jnp.isfinite(k) | (k < 0), "fibre_energy_density: stiffness must be finite and >= 0 (Pa)"),
        (~jnp.isfinite(l0) | (l0 <= 0), "fibre_energy_density: free_length must be finite and > 0 (m)")])


def _fibre_energy_density(strain, stiffness, free_length, law, transition_strain):
    """:func:`fibre_energy_density` unchecked."""
    pos = jnp.maximum(jnp.asarray(strain), 0.0)
    if law == "quadratic":
        return free_length * stiffness * pos**3 / 3.0
    if law == "blankevoort":
        el = 0.5 * transition_strain
        toe = stiffness * pos**3 / (12.0 * el)
        e2 = 2.0 * el
        lin = stiffness * (e2**3 / (12.0 * el) + 0.5 * (pos - el) ** 2 - 0.5 * (e2 - el) ** 2)
        return free_length * jnp.where(pos <= e2, toe, lin)
    raise ValueError(f"fibre law {law!r} is not one of {LAWS}")


class FibreSet(eqx.Module):
    """``N`` fibres: ends ``points_a (N, 3)`` in body A's frame and ``points_b (N, 3)`` in body B's,
    ``weight (N,)`` (area, m²), ``stiffness (N,)`` (Pa), ``free_length (N,)`` (m) and a static law."""

    points_a: jnp.ndarray
    points_b: jnp.ndarray
    weight: jnp.ndarray
    stiffness: jnp.ndarray
    free_length: jnp.ndarray
    law: str = eqx.field(static=True, default="quadratic")
    transition_strain: float = eqx.field(static=True, default=0.06)

    def __check_init__(self):
        arrays = {}
        for name in ("points_a", "points_b", "weight", "stiffness", "free_length"):
            value = getattr(self, name)
            if not hasattr(value, "shape") or not hasattr(value, "dtype"):
                raise TypeError(f"FibreSet: {name} must be an array (one row per fibre), got {type(value).__name__}; "
                                "e.g. jnp.full(n_fibres, value) for a constant")
            if not (jnp.issubdtype(value.dtype, jnp.floating) or jnp.issubdtype(value.dtype, jnp.integer)):
                raise ValueError(f"FibreSet: {name} must be a real array, got dtype {value.dtype}")
            arrays[name] = value
        if arrays["points_a"].ndim != 2 or arrays["points_a"].shape[1] != 3:
            raise ValueError(f"FibreSet: points_a must have shape (N, 3) (fibre ends in body A's frame), "
                             f"got {tuple(arrays['points_a'].shape)}")
        n = self.points_a.shape[0]
        want = {"points_b": (n, 3), "weight": (n,), "stiffness": (n,), "free_length": (n,)}
        for name, shape in want.items():
            got = tuple(arrays[name].shape)
            if got != shape:
                if got[:1] != (n,):
                    raise ValueError(f"FibreSet: {name} has {got[0] if got else 0} rows, expected {n} "
                                     f"(shape {shape}, got {got})")
                raise ValueError(f"FibreSet: {name} must have shape {shape} for N = {n} fibres, got {got}")
        if self.law not in LAWS:
            raise ValueError(f"FibreSet: law {self.law!r} is not one of {LAWS}")
        ts = self.transition_strain
        if isinstance(ts, bool) or not isinstance(ts, (int, float, np.integer, np.floating)) or not (
                np.isfinite(ts) and ts > 0):
            raise ValueError(f"FibreSet: transition_strain must be a finite number > 0, got {ts!r}")
        try:
            l0 = np.asarray(self.free_length)
            k, w = np.asarray(self.stiffness), np.asarray(self.weight)
            pa, pb = np.asarray(self.points_a), np.asarray(self.points_b)
        except Exception:  # traced: skip the concrete check
            return
        if not all(np.all(np.isfinite(a)) for a in (l0, k, w, pa, pb)):
            raise ValueError("FibreSet: points, weights, stiffnesses and free lengths must be finite")
        if np.any(l0 <= 0):
            raise ValueError("FibreSet: free lengths must be > 0 (strain ε = (l - l0)/l0 of Eq. 6)")
        warn_long_free_length("FibreSet", l0, stacklevel=5)
        if np.any(k < 0):
            raise ValueError(f"FibreSet: stiffness must be >= 0 (Pa), got min {k.min()} (fibre {int(np.argmin(k))})")
        if np.any(w < 0):
            raise ValueError(f"FibreSet: weights (areas, m²) must be >= 0, got min {w.min()} (fibre {int(np.argmin(w))})")

    @property
    def n_fibres(self) -> int:
        return int(self.points_a.shape[0])


def _world(pose, pts):
    return pts @ pose[:3, :3].T + pose[:3, 3]


#: the hint the run-time messages end with
CHANGED = " (changed after construction? eqx.tree_at or a fit step)"


def fibre_rules(fibres: FibreSet, where: str) -> list:
    """``(bad, message)`` rules of :func:`mbjax._checks.all_of` on the fibres' values: finite ends and
    weights (a Gauss rule may have negative weights), stiffnesses >= 0, free lengths > 0."""
    def nf(x):
        return ~jnp.isfinite(x)

    return [
        (nf(fibres.points_a), f"{where}: fibre ends points_a contain NaN or inf{CHANGED}"),
        (nf(fibres.points_b), f"{where}: fibre ends points_b contain NaN or inf{CHANGED}"),
        (nf(fibres.weight), f"{where}: fibre weight (area, m²) contains NaN or inf{CHANGED}"),
        (nf(fibres.stiffness) | (fibres.stiffness < 0),
         f"{where}: fibre stiffness is NaN, inf or < 0 (Pa){CHANGED}"),
        (nf(fibres.free_length) | (fibres.free_length <= 0),
         f"{where}: fibre free_length (slack length) is NaN, inf or <= 0 (m){CHANGED}"),
    ]


def pose_rule(x, name: str):
    """``(pose (4, 4), rule or None)``: shape at trace time, the rule of :func:`mbjax._checks.pose`."""
    arr = _checks.as_array(x, name, (4, 4), (4, 4), " (a homogeneous transform [[R, p], [0, 0, 0, 1]])")
    if not jnp.issubdtype(arr.dtype, jnp.inexact):
        return arr, None
    eps = 100 * jnp.finfo(arr.dtype).eps
    row = jnp.asarray([0.0, 0.0, 0.0, 1.0], arr.dtype)
    rot = arr[:3, :3]
    skewed = jnp.max(jnp.abs(rot.T @ rot - jnp.eye(3, dtype=arr.dtype))) > jnp.sqrt(eps)
    reflected = jnp.linalg.det(rot) < 0
    bad = ~jnp.all(jnp.isfinite(arr)) | jnp.any(jnp.abs(arr[3] - row) > eps) | skewed | reflected
    return arr, (bad, f"{name} must be a finite rigid transform [[R, p], [0, 0, 0, 1]] with R a rotation "
                      "(orthonormal, det +1) and last row [0, 0, 0, 1]")


def checked(fibres: FibreSet, pose_a, pose_b, where: str, pole=None, extra=()):
    """Poses (and pole) checked: shapes at trace time, then one fused run-time check of the poses,
    the pole, the ``extra`` rules and the fibres' values."""
    if not isinstance(fibres, FibreSet):
        raise TypeError(f"{where}: fibres must be a FibreSet, got {type(fibres).__name__}")
    pose_a, rule_a = pose_rule(pose_a, "pose_a")
    pose_b, rule_b = pose_rule(pose_b, "pose_b")
    rules = [r for r in (rule_a, rule_b) if r is not None]
    if pole is not None:
        pole = _checks.as_array(pole, "pole", (3,), (3,))
        rules.append(_checks.not_finite(pole, "pole"))
    rules += list(extra) + fibre_rules(fibres, where)  # the caller's own parameters named first
    return _checks.all_of(pose_a, rules), pose_b, pole


def _state(fibres: FibreSet, pose_a, pose_b):
    p = _world(pose_a, fibres.points_a)
    q = _world(pose_b, fibres.points_b)
    d = p - q
    sq = jnp.sum(d * d, axis=-1)
    length = jnp.where(jnp.isnan(sq), sq, safe_sqrt(sq))  # a NaN end (checks off) stays NaN
    s_hat = d / jnp.where(length > 0, length, 1.0)[:, None]
    strain = (length - fibres.free_length) / fibres.free_length
    return p, q, length, strain, s_hat


def fibre_state(fibres: FibreSet, pose_a, pose_b):
    """World ends ``p, q``, lengths ``l``, strains ``ε`` and unit vectors ``ŝ = (p - q)/l``."""
    pose_a, pose_b, _ = checked(fibres, pose_a, pose_b, "fibre_state")
    return _state(fibres, pose_a, pose_b)


def wrench(fibres: FibreSet, pose_a, pose_b, pole=None):
    """:func:`ligament_wrench` without checks (inputs checked by the caller)."""
    _, q, _, strain, s_hat = _state(fibres, pose_a, pose_b)
    t = _fibre_law(strain, fibres.stiffness, fibres.law, fibres.transition_strain) * fibres.weight
    force = t[:, None] * s_hat
    arm = q if pole is None else q - pole
    moment = jnp.cross(arm, force)
    return jnp.concatenate([moment.sum(0), force.sum(0)])


wrench_jit = eqx.filter_jit(wrench)


@eqx.filter_jit
def ligament_wrench(fibres: FibreSet, pose_a, pose_b, pole=None):
    """Wrench ``[M_O; F]`` (6,) that the ligament applies to body B (Eq. 6 summed as Eq. 10/14).

    ``pose_a``, ``pose_b``: world 4x4 poses of bodies A and B; ``pole`` (3,) defaults to the world
    origin (then the wrench pairs with ``body_jacobians``' twists).  The wrench on body A is the
    negative (same pole).
    """
    pose_a, pose_b, pole = checked(fibres, pose_a, pose_b, "ligament_wrench", pole)
    return wrench(fibres, pose_a, pose_b, pole)


def energy(fibres: FibreSet, pose_a, pose_b):
    """:func:`ligament_energy` without checks."""
    _, _, _, strain, _ = _state(fibres, pose_a, pose_b)
    e = _fibre_energy_density(strain, fibres.stiffness, fibres.free_length, fibres.law, fibres.transition_strain)
    return jnp.sum(e * fibres.weight)


def ligament_energy(fibres: FibreSet, pose_a, pose_b):
    """Elastic energy of the discretised ligament (J); its negative gradient is the wrench."""
    pose_a, pose_b, _ = checked(fibres, pose_a, pose_b, "ligament_energy")
    return energy(fibres, pose_a, pose_b)
