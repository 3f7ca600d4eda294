"""Muscle parameters in .osim files and in ``build_paths``: refused by file, line, muscle and
property where the muscle model has no answer, never replaced by a default without a word.

The refusals that follow OpenSim 4.6 are checked against OpenSim itself (it refuses the same files)
in ``tests/validation/test_muscle_parameters_opensim.py``.
"""

import math
import os
import sys

import numpy as np
import pytest

import mbjax.io
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
        assert np.isfinite(np.asarray(model.extras["muscles"].parameters["max_isometric_force"])).all()
