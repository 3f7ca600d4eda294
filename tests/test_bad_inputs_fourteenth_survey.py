"""Findings of a short fourteenth outside survey on the muscle parameters' run-time rules: each now refused
by name with checks on, and NaN with checks off (the valid model's forces unchanged)."""

from __future__ import annotations

import equinox as eqx
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
from mbjax.io import load_osim
from _two_link_muscles import muscle, two_link


def _edited(model, key, value, row=0):
    return eqx.tree_at(lambda m: m.muscles.parameters[key], model, model.muscles.parameters[key].at[row].set(value))


def _model(tmp_path):
    rigid = "<ignore_tendon_compliance>true</ignore_tendon_compliance>"
    path = tmp_path / "m.osim"
    path.write_text(two_link(muscle("Thelen2003Muscle", "t1", extra=rigid + "<Flen>1.4</Flen><KshapePassive>4</KshapePassive>"
                                    "<Af>0.25</Af>"),
                             muscle("Millard2012EquilibriumMuscle", "m2", extra=rigid + "<FiberForceLengthCurve>"
                                    "<strain_at_zero_force>0</strain_at_zero_force><strain_at_one_norm_force>0.7"
                                    "</strain_at_one_norm_force></FiberForceLengthCurve>")))
    return load_osim(str(path))


def test_the_run_time_rules_refuse_inf_and_every_nan_a_class_holds(tmp_path):
    """The rules themselves (no solve): inf passed "must be finite and > 1" (Thelen's Flen), a Millard
    curve property had no run-time rule; a NaN or inf Thelen or Millard number now joins the values
    whose NaN makes the muscle's state NaN with checks off."""
    from mbjax.muscles.parameter_rules import parameter_rules
    from mbjax.muscles.parameters import hill_core_parameters
    from mbjax.muscles.paths import get_paths

    model = _model(tmp_path)
    assert not any(np.asarray(bad).any() for bad, _ in parameter_rules(get_paths(model), "w"))
    for key, row, value in (("Flen", 0, np.inf), ("KshapePassive", 0, np.inf), ("Af", 0, np.nan),
                            ("FiberForceLengthCurve.strain_at_one_norm_force", 1, np.nan),
                            ("FiberForceLengthCurve.strain_at_zero_force", 1, np.inf)):
        paths = get_paths(_edited(model, key, value, row))
        hits = [m[row] for bad, m in parameter_rules(paths, "w") if bool(np.asarray(bad)[row])]
        assert hits and f"muscle {('t1', 'm2')[row]!r}: {key} must be finite" in hits[0], (key, hits)
        assert any(not np.isfinite(np.asarray(v)[row]) for v in hill_core_parameters(paths)), key
    assert all(np.isfinite(np.asarray(v)).all() for v in hill_core_parameters(get_paths(model)))


@pytest.mark.extended  # three compilations of the muscle forces (~30 s); the rules are checked in CI just above
def test_muscle_parameters_are_finite_or_refused_and_nan_with_checks_off(tmp_path):
    """inf passed a rule written "must be finite and > 1" (Thelen's Flen: 47.68 N for 401.06 N); NaN in a
    Millard curve property had no run-time rule (99.68 N for 483.83 N); with checks off a NaN Thelen curve
    parameter gave a finite force."""
    model = _model(tmp_path)
    q, qd, a = jnp.array([0.3, 0.5]), jnp.zeros(2), jnp.array([0.4, 0.4])
    base = np.asarray(mbjax.muscle_forces(model, q, qd, a))
    assert np.isfinite(base).all()
    for key, row, value in (("Flen", 0, np.inf), ("FiberForceLengthCurve.strain_at_one_norm_force", 1, np.nan)):
        name = ("t1", "m2")[row]
        with pytest.raises(RuntimeError, match=rf"muscle '{name}': {key} must be finite"):
            mbjax.muscle_forces(_edited(model, key, value, row), q, qd, a)

    @eqx.filter_jit  # traced with checks off
    def forces(m):
        return mbjax.muscle_forces(m, q, qd, a)

    with mbjax.config.checks(False):
        for key, row in (("Af", 0),):
            f = np.asarray(forces(_edited(model, key, np.nan, row)))
            assert np.isnan(f[row]) and f[1 - row] == pytest.approx(base[1 - row], rel=1e-12), (key, f)
