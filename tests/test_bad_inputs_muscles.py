"""Muscle parameters in .osim files and in ``build_paths``: refused by file, line, muscle and
property where the muscle model has no answer, never replaced by a default without a word.

The refusals that follow OpenSim 4.6 are checked against OpenSim itself (it refuses the same files)
in ``tests/validation/test_muscle_parameters_opensim.py``.
"""

import math
import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.io
import mbjax.muscles
from mbjax.models import model_path
from mbjax.muscles.parameter_rules import RULES, parameter_problems
from mbjax.muscles.paths import PathPoint, build_paths

sys.path.insert(0, os.path.dirname(__file__))
from _muscle_parameter_variants import (ARM26, GAIT10, MILLARD_CASES, OPTIONAL, THELEN_CASES,  # noqa: E402
                                        set_property, with_optional)

def _load(tmp_path, src):
    path = tmp_path / "model.osim"
    path.write_text(src)
    return mbjax.io.load_osim(str(path)), str(path)


@pytest.mark.parametrize("text", ["1,500", "0,12", "12 mm", "nan", "NaN"])
def test_unparsable_or_nan_property_refused_by_file_line_muscle(tmp_path, text):
    src = set_property(ARM26, "BIClong", "max_isometric_force", text)
    with pytest.raises(ValueError) as err:
        _load(tmp_path, src)
    msg = str(err.value)
    line = src[:src.index(f"<max_isometric_force>{text}<")].count("\n") + 1
    assert f"model.osim:{line}:" in msg and "'BIClong'" in msg and "max_isometric_force" in msg


def test_nan_curve_parameter_refused(tmp_path):
    src = set_property(GAIT10, "bifemsh_r", "TendonForceLengthCurve.strain_at_one_norm_force", "nan")
    with pytest.raises(ValueError, match=r"model.osim:\d+: .*'bifemsh_r'.*strain_at_one_norm_force.*NaN"):
        _load(tmp_path, src)


@pytest.mark.parametrize("prop,value", THELEN_CASES + [("millard", c) for c in MILLARD_CASES],
                         ids=lambda v: v if isinstance(v, str) else "-".join(v))
def test_out_of_range_parameter_refused_by_file_line_muscle(tmp_path, prop, value):
    if prop == "millard":
        (prop, value), src, muscle, tag = value, GAIT10, "bifemsh_r", "Millard2012EquilibriumMuscle"
    else:
        src, muscle, tag = ARM26, "TRIlat", "Thelen2003Muscle"
    bad = set_property(with_optional(src, muscle, prop), muscle, prop, value)
    line = bad[:bad.index(f'name="{muscle}"')].count("\n") + 1
    with pytest.raises(ValueError) as err:
        _load(tmp_path, bad)
    msg = str(err.value)
    assert f"model.osim:{line}: <{tag} name='{muscle}'>" in msg, msg
    assert f"{prop} = " in msg and "must be" in msg, msg
    assert all(f"name='{muscle}'" in ln for ln in msg.splitlines()[1:]), msg  # only the bad muscle


def test_boundary_values_load(tmp_path):
    """The ends of each allowed range load (OpenSim accepts them too)."""
    src = ARM26
    for prop, value in [("max_isometric_force", "0"), ("pennation_angle_at_optimal", "0"),
                        ("minimum_activation", "0.01"), ("maximum_pennation_angle", "1.5707963267948966")]:
        src = set_property(src, "TRIlat", prop, value)
    model, _ = _load(tmp_path, src)
    src = set_property(GAIT10, "bifemsh_r", "minimum_activation", "0")
    src = set_property(with_optional(src, "bifemsh_r", "TendonForceLengthCurve.x"), "bifemsh_r",
                       "TendonForceLengthCurve.norm_force_at_toe_end", "1")
    _load(tmp_path, src)


@pytest.mark.parametrize("curve", sorted(OPTIONAL))
def test_optional_curve_property_alone_refused(tmp_path, curve):
    src = set_property(GAIT10, "bifemsh_r", f"{curve}.curviness", "0.5")
    with pytest.raises(ValueError, match=rf"'bifemsh_r'>: {curve}: curviness given without .*all given or none"):
        _load(tmp_path, src)


def test_non_numeric_properties_still_read(tmp_path):
    """Text properties mbjax does not read as numbers pass (``appliesForce``, sockets, ``Inf`` controls)."""
    src = set_property(ARM26, "TRIlat", "max_control", "Inf")
    src = set_property(src, "TRIlat", "appliesForce", "true")
    _load(tmp_path, src)


def test_zero_flen_is_named_not_a_division_by_zero():
    problems = parameter_problems(["m"], ["Thelen2003Muscle"], {"m": {"Flen": 0.0}})
    assert any(p.startswith("Flen = 0.0 must be > 1") for _, p in problems), problems


def test_every_rule_has_a_refused_case():
    covered = {p for p, _ in THELEN_CASES} | {p for p, _ in MILLARD_CASES}
    missing = {r[0] for r in RULES if r[0] != "time_scale"} - covered
    assert not missing, missing


def test_build_paths_refuses_by_muscle_name():
    pts = [PathPoint("ground", [0, 0, 0]), PathPoint("ground", [0, 1, 0])]
    with pytest.raises(ValueError, match=r"muscle 'm2': tendon_slack_length = -0.1 must be > 0"):
        build_paths(["ground"], [], {"m1": pts, "m2": pts}, kinds={"m1": "Thelen2003Muscle", "m2": "Thelen2003Muscle"},
                    parameters={"m2": {"tendon_slack_length": -0.1}})
    # plain paths (no muscle model) and absent properties (OpenSim's defaults) are not refused
    build_paths(["ground"], [], {"m1": pts}, parameters={"m1": {"tendon_slack_length": -0.1}})
    build_paths(["ground"], [], {"m1": pts}, kinds={"m1": "Millard2012EquilibriumMuscle"},
                parameters={"m1": {"tendon_slack_length": math.nan}})


def test_defaults_of_every_class_pass_the_rules():
    """OpenSim's defaults are valid muscles: the rules refuse none of them."""
    names = ["thelen", "millard", "schutte"]
    kinds = ["Thelen2003Muscle", "Millard2012EquilibriumMuscle", "Schutte1993Muscle_Deprecated"]
    assert parameter_problems(names, kinds, {}) == []


def test_shipped_models_pass_the_rules():
    for name in ("arm26", "gait10dof18musc", "gait2392_millard", "gait2392", "gait2354"):
        model = mbjax.io.load_osim(model_path(name))
        assert np.isfinite(np.asarray(model.muscles.parameters["max_isometric_force"])).all()


# ---- per-muscle arrays at call time: shapes named when traced, values in one fused check ----------

ARM = mbjax.io.load_osim(model_path("arm26"), ignore_wrapping=True)
NM = 6
Q, QD = jnp.asarray([0.3, 0.8]), jnp.zeros(2)
A = jnp.full(NM, 0.5)


def _call(fn, length=None, speed=None, activation=None):
    L = mbjax.muscle_lengths(ARM, Q) if length is None else length
    V = jnp.zeros(NM) if speed is None else speed
    a = A if activation is None else activation
    return {"equilibrium_fiber_length": lambda: mbjax.muscles.equilibrium_fiber_length(ARM, L, V, a),
            "musculotendon_state": lambda: mbjax.muscles.musculotendon_state(ARM, L, V, a).tendon_force,
            "state_from_fiber_length": lambda: mbjax.muscles.state_from_fiber_length(
                ARM, 0.1 * jnp.ones(NM), L, V, a).tendon_force}[fn]()


MUSCLE_FNS = ["equilibrium_fiber_length", "musculotendon_state", "state_from_fiber_length"]


@pytest.mark.parametrize("fn", MUSCLE_FNS)
@pytest.mark.parametrize("arg,bad,match", [
    ("activation", A.at[2].set(jnp.nan), "activation contains NaN"),
    ("activation", A.at[0].set(1.5), r"activation must be in \[0, 1\]"),
    ("activation", A.at[0].set(-0.5), r"activation must be in \[0, 1\]"),
    ("speed", jnp.zeros(NM).at[1].set(jnp.nan), "speed contains NaN"),
    ("length", jnp.full(NM, 0.3).at[0].set(jnp.nan), "length contains NaN"),
    ("length", jnp.full(NM, 0.3).at[0].set(-0.1), r"length must be > 0"),
    ("length", jnp.full(NM, 0.3).at[0].set(0.0), r"length must be > 0"),
])
def test_bad_muscle_values_refused(fn, arg, bad, match):
    with pytest.raises(RuntimeError, match=match + r".* for muscles \('TRIlong'"):
        _call(fn, **{arg: bad})


@pytest.mark.parametrize("fn", MUSCLE_FNS)
@pytest.mark.parametrize("arg", ["length", "speed", "activation"])
@pytest.mark.parametrize("n", [1, NM + 1, None])
def test_muscle_vectors_of_another_length_refused_not_broadcast(fn, arg, n):
    bad = jnp.asarray(0.3) if n is None else jnp.full(n, 0.3)
    with pytest.raises(ValueError, match=rf"{arg} must have shape \(nm,\) = \(6,\) for muscles .*got"):
        _call(fn, **{arg: bad})


def test_muscle_forces_checks_velocity_and_activation():
    with pytest.raises(RuntimeError, match="qd contains NaN"):
        mbjax.muscle_forces(ARM, Q, QD.at[0].set(jnp.nan), A)
    with pytest.raises(ValueError, match=r"qd must have shape \(nq,\) = \(2,\)"):
        mbjax.muscle_forces(ARM, Q, jnp.zeros(3), A)
    with pytest.raises(ValueError, match=r"activation must have shape \(nm,\) = \(6,\)"):
        mbjax.muscle_forces(ARM, Q, QD, jnp.ones(1) * 0.5)
    with pytest.raises(RuntimeError, match=r"activation must be in \[0, 1\]"):
        jax.jit(lambda a: mbjax.muscle_forces(ARM, Q, QD, a))(A.at[3].set(2.0))
    # the valid twin: finite, and the ends of the activation range are accepted
    for a in (A, jnp.zeros(NM), jnp.ones(NM)):
        assert np.isfinite(np.asarray(mbjax.muscle_forces(ARM, Q, QD, a))).all()
    with mbjax.config.checks(False):  # checks off: the NaN propagates (never a plausible number)
        f = mbjax.muscle_forces(ARM, Q, QD, A.at[0].set(jnp.nan))
    assert np.isnan(np.asarray(f)[0])


def test_one_fused_check_per_call():
    """The per-muscle checks add one host callback, not one per argument and rule."""
    L = mbjax.muscle_lengths(ARM, Q)

    def callbacks():
        fn = lambda l, v, a: mbjax.muscles.musculotendon_state(ARM, l, v, a).tendon_force  # noqa: E731
        return str(jax.make_jaxpr(fn)(L, jnp.zeros(NM), A)).count("callback")

    one = str(jax.make_jaxpr(lambda x: eqx.error_if(x, x > 1, "m"))(1.0)).count("callback")
    with mbjax.config.checks(False):
        off = callbacks()
    assert callbacks() - off == one


def test_activation_derivative_refuses_nan_and_other_lengths():
    u = jnp.full(NM, 0.7)
    with pytest.raises(RuntimeError, match=r"excitation contains NaN.* for muscles \('TRIlong'"):
        mbjax.activation_derivative(u.at[0].set(jnp.nan), A, ARM)
    with pytest.raises(RuntimeError, match=r"activation contains NaN"):
        mbjax.activation_derivative(u, A.at[5].set(jnp.inf), ARM)
    for bad in (jnp.ones(1), jnp.ones(NM + 1), jnp.asarray(0.5)):
        with pytest.raises(ValueError, match=r"excitation must have shape \(nm,\) = \(6,\)"):
            mbjax.activation_derivative(bad, A, ARM)
    # OpenSim clamps the activation to [a_min, 1] first: 1.5 decays as 1 does (hand value, Thelen τ_deact)
    tau_deact = 0.04  # arm26.osim gives 0.04 for every muscle
    got = np.asarray(mbjax.activation_derivative(jnp.full(NM, 0.5), jnp.full(NM, 1.5), ARM))
    np.testing.assert_allclose(got, (0.5 - 1.0) / (tau_deact / 2.0), rtol=1e-12)


@pytest.mark.extended  # a 25 s subprocess; the float64 twins above check the same rules in CI
def test_float32_checks_refuse_and_accept_the_same():
    """In JAX's default float32 the rules are the same (parameters are checked in float64 as read,
    arrays in their own dtype): the valid call is finite, the bad one refused."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np, mbjax, mbjax.io
        from mbjax.models import model_path
        assert not jax.config.jax_enable_x64
        m = mbjax.io.load_osim(model_path("gait10dof18musc"))
        nm = m.muscles.n_muscles
        q, qd = jnp.full(m.n_coordinates, 0.1), jnp.zeros(m.n_coordinates)
        f = mbjax.muscle_forces(m, q, qd, jnp.full(nm, 0.5))
        assert f.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(f)))
        try:
            mbjax.muscle_forces(m, q, qd, jnp.full(nm, 0.5).at[0].set(1.5))
        except RuntimeError as e:
            assert "activation must be in [0, 1]" in str(e)
        else:
            raise SystemExit("not refused")
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]



@pytest.mark.parametrize("axis, value", [(0, math.nan), (0, -0.05), (0, 0.0), (1, math.inf)])
def test_wrap_dimensions_changed_after_loading_are_refused_by_object(axis, value):
    """A wrap object's dimensions set outside what a file may hold (``eqx.tree_at``, a fit step) give
    an error naming the object, not the straight path (NaN) or a mirrored surface (negative)."""
    from test_wrap_path import _hinge_model

    model = _hinge_model("link")  # a string over a hinge cylinder (radius, length)
    q = jnp.asarray([2.9])
    wraps = model.muscles.wraps
    leaf = lambda m: m.muscles.wraps.dimensions  # noqa: E731
    bad = eqx.tree_at(leaf, model, wraps.dimensions.at[0, axis].set(value))
    name, kind = wraps.names[0], wraps.kinds[0]
    for fn in (mbjax.muscle_lengths, mbjax.moment_arms):
        with pytest.raises(RuntimeError, match=rf"{fn.__name__}: wrap object '{name}' \({kind}\) has dimensions "
                                               "that are not finite and positive"):
            fn(bad, q)
    # a cylinder's third dimension is not used: any value there is no error, and changes nothing
    fine = eqx.tree_at(leaf, model, wraps.dimensions.at[0, 2].set(-1.0))
    np.testing.assert_array_equal(np.asarray(mbjax.muscle_lengths(fine, q)), np.asarray(mbjax.muscle_lengths(model, q)))


@pytest.mark.extended  # 30 s of compilation; the rule is the one muscle_lengths and moment_arms check in CI
def test_opensim_moment_arms_refuse_changed_wrap_dimensions():
    """OpenSim's moment arms (one pose and the batched route) check the wrap objects as the lengths do."""
    from test_wrap_path import _hinge_model
    from mbjax.muscles.opensim_moment_arms import opensim_moment_arms, opensim_moment_arms_and_lengths

    model = _hinge_model("link")
    q = jnp.asarray([2.9])
    wraps = model.muscles.wraps
    bad = eqx.tree_at(lambda m: m.muscles.wraps.dimensions, model, wraps.dimensions.at[0, 0].set(math.nan))
    for fn, x in ((opensim_moment_arms, q), (opensim_moment_arms_and_lengths, q[None])):
        with pytest.raises(RuntimeError, match=rf"{fn.__name__}: wrap object '{wraps.names[0]}' .* has dimensions "
                                               "that are not finite and positive"):
            fn(bad, x)
