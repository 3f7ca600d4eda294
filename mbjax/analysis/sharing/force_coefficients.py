"""The force each muscle (or path actuator) makes per unit control in static optimization, as
OpenSim's ``StaticOptimizationTarget`` overrides its actuation: F_opt = F_o f_L(ℓ) f_V(v) cos α at
activation 1 with rigid-tendon fibre kinematics (``use_muscle_physiology``), or F_o; the rules and
OpenSim's Millard pennation are described in :mod:`mbjax.analysis.sharing.static_optimization`."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...muscles.geometry import muscle_lengths
from ...muscles.moment_arms import moment_arms
from ...muscles.by_class import by_class, path_actuator_properties
from ...muscles.musculotendon import _Family, _rigid_state
from ...muscles.parameters import MILLARD, hill_parameters
from ...muscles.pennation import pennation_angle
from ...muscles.schutte1993 import SCHUTTE
from ...muscles.paths import get_paths
from ... import _checks
from ..._eager import compiled_when_eager


def _inextensible(kind, p, L, V, a, pennation_rule="opensim"):
    """Rigid-tendon active (at ``a``) and passive fibre forces along the tendon (N).

    ``pennation_rule="opensim"``: a Millard2012 muscle's active force is projected on the tendon as
    OpenSim 4.6's ``Millard2012EquilibriumMuscle::calcActiveFiberForceAlongTendon`` projects it,
    with the pennation angle of the *normalized* fibre length taken as a length,
    ``calcPennationAngle(ℓ/ℓ_o)`` (near 0 for a fibre of about 1 m, so the force is larger than
    the physical F_o a f_L f_V cos α by close to 1/cos α), and zero at ℓ ≤ ℓ_min;
    ``"rigid"``: the physical projection cos α(ℓ) (what Thelen muscles use in both rules)."""
    fam = _Family(kind, p)
    st = _rigid_state(fam, L, V, a)
    cos = jnp.cos(st.pennation_angle)
    active = st.active_fiber_force * cos
    if kind == MILLARD and pennation_rule == "opensim":
        phi = pennation_angle(st.normalized_fiber_length, p["optimal_fiber_length"],
                              p["pennation_angle_at_optimal"], p["maximum_pennation_angle"])
        active = jnp.where(st.fiber_length <= fam.lmin, 0.0, st.active_fiber_force * jnp.cos(phi))
    return active, st.passive_fiber_force * cos


def muscle_force_coefficients(model, q, qd, *, use_muscle_physiology=True, passive_forces=False, R=None, L=None,
                              pennation_rule="opensim"):
    """``(f_opt, f_passive)``, ``(nm,)`` each: tendon force = a · f_opt + f_passive (module docstring;
    f_opt is OpenSim's ``calcInextensibleTendonActiveFiberForce(s, 1.0)``).  ``R``/``L``: moment
    arms and path lengths at ``q`` when already known; ``pennation_rule``: ``"opensim"`` or
    ``"rigid"`` (:func:`_inextensible`; they differ for pennated Millard2012 muscles only)."""
    q, qd, R, L, rules = _coefficient_inputs(model, q, qd, R, L, "muscle_force_coefficients")
    qd = _checks.all_of(qd, rules)
    return _coefficients(model, q, qd, use_muscle_physiology, passive_forces, R, L, pennation_rule)


def _coefficient_inputs(model, q, qd, R, L, where: str):
    """Shapes of ``q``, ``qd`` and the optional ``R``/``L`` (trace time) and the finiteness rules of
    ``qd``, ``R``, ``L`` for one fused check (``q`` is checked where it is used, by the moment arms)."""
    from ..._model import Model

    if not isinstance(model, Model):
        raise TypeError(f"{where}: model must be an mbjax.Model (e.g. mbjax.models.load(...)), got {type(model).__name__}")
    paths = get_paths(model)
    nq, nm = model.n_coordinates, paths.n_muscles
    qctx, mctx = _checks.coordinates_context(model), _checks.names_context("muscles", paths.names)
    q = _checks.as_array(q, f"{where}: q", (nq,), ("nq",), qctx)
    qd = _checks.as_array(qd, f"{where}: qd", (nq,), ("nq",), qctx)
    rules = [_checks.not_finite(qd, f"{where}: qd", qctx)]
    if R is not None:
        R = _checks.as_array(R, f"{where}: moment_arms", (nq, nm), ("nq", "nm"), mctx)
        rules.append(_checks.not_finite(R, f"{where}: moment_arms", mctx))
    if L is not None:
        L = _checks.as_array(L, f"{where}: lengths", (nm,), ("nm",), mctx)
        if nm:
            rules.append((~jnp.isfinite(L) | (L <= 0), [f"{where}: lengths must be finite and > 0 (m, a muscle's "
                                                        f"path length): muscle {n!r} is not" for n in paths.names]))
    return q, qd, R, L, rules


def check_frame_lengths(lengths, names, where: str, limit: int = 8) -> None:
    """Refuse concrete path ``lengths (T, nm)`` that are not finite and > 0, naming the muscles and
    frames (a traced array is checked at run time, per frame, by :func:`_coefficient_inputs`)."""
    if lengths is None or isinstance(lengths, jax.core.Tracer):
        return
    L = np.asarray(lengths)
    if not np.issubdtype(L.dtype, np.number) or L.ndim != 2 or L.shape[1] != len(names):
        return  # the shape (or type) is refused elsewhere
    bad = ~np.isfinite(L) | (L <= 0)
    if not bad.any():
        return
    muscles = [n for n, b in zip(names, bad.any(axis=0)) if b]
    frames = np.nonzero(bad.any(axis=1))[0]
    more = lambda xs: "" if len(xs) <= limit else f" and {len(xs) - limit} more"  # noqa: E731
    raise ValueError(f"{where}: lengths must be finite and > 0 (m, each muscle's path length per frame): muscles "
                     f"{', '.join(map(repr, muscles[:limit]))}{more(muscles)} at frames "
                     f"{', '.join(str(int(k)) for k in frames[:limit])}{more(frames)} are not (first: "
                     f"{float(L[bad][0]):g} for {names[int(np.nonzero(bad)[1][0])]!r} at frame {int(np.nonzero(bad)[0][0])})")


def _coefficients(model, q, qd, use_muscle_physiology, passive_forces, R, L, pennation_rule):
    use_muscle_physiology = _checks.true_or_false(use_muscle_physiology, "static optimization: use_muscle_physiology")
    passive_forces = _checks.true_or_false(passive_forces, "static optimization: passive_forces")
    if pennation_rule not in ("opensim", "rigid"):
        raise ValueError(f"pennation_rule must be 'opensim' or 'rigid', got {pennation_rule!r}")
    paths = get_paths(model)
    schutte = [n for n, k in zip(paths.names, paths.kinds) if k == SCHUTTE]
    if schutte:
        raise NotImplementedError(
            f"static optimization: the {SCHUTTE} muscles {schutte} are not supported (it needs each muscle's "
            "rigid-tendon force per unit activation; OpenSim's deprecated class has no rigid-tendon mode and "
            "substitutes a compliant isometric equilibrium times a generic force-velocity curve, which mbjax "
            f"does not model).  Load the model with ignore_forces=({SCHUTTE!r},) to leave them out")
    if R is None:
        R = moment_arms(model, q)
    if L is None:
        L = muscle_lengths(model, q)
    V = -(R.T @ jnp.asarray(qd, L.dtype))
    if not paths.n_muscles:  # no muscles: no force coefficients (reserves or actuators alone carry the torque)
        return jnp.zeros((0,), L.dtype), jnp.zeros((0,), L.dtype)
    act, pas = _per_unit_activation(model, L, V, pennation_rule=pennation_rule)
    if not use_muscle_physiology:
        act = hill_parameters(get_paths(model))["max_isometric_force"].astype(L.dtype) * jnp.ones_like(L)
    if not passive_forces:
        pas = jnp.zeros_like(pas)
    mask, optimal, _, _ = path_actuator_properties(get_paths(model), L.dtype)
    if mask.any():  # a PathActuator's tension is its control times its optimal force
        act = jnp.where(jnp.asarray(mask), optimal, act)
    return act, pas


def _per_unit_activation_of(model, L, V, pennation_rule):
    """Each muscle's active force per unit activation and passive force at lengths ``L``, speeds ``V``;
    compiled once per model structure when called eagerly, inlined under an outer ``jit``."""
    return by_class(model, lambda kind, p, *x: _inextensible(kind, p, *x, pennation_rule=pennation_rule),
                    L, V, jnp.ones_like(L))


_per_unit_activation = compiled_when_eager(_per_unit_activation_of, pose=False)
