"""The muscle parameters mbjax refuses as OpenSim does: OpenSim 4.6 refuses the same files.

Each case of ``tests/test_bad_inputs_muscles.py`` whose rule is OpenSim's is loaded by OpenSim
live (``Model(file).initSystem()``) and must fail there too; the valid twins load in both.  The
rules that are mbjax's own (OpenSim accepts the value) are checked to be accepted by OpenSim, so
the message's "OpenSim 4.6 refuses it too" is never a claim about OpenSim that OpenSim contradicts.
"""

import os
import sys

import pytest

from mbjax.muscles.parameter_rules import RULES

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _muscle_parameter_variants import (ARM26, GAIT10, MILLARD_CASES, OPTIONAL, THELEN_CASES,  # noqa: E402
                                        set_property, with_optional)

osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

WHO = {r[0]: r[4] for r in RULES}


def _opensim_accepts(tmp_path, src) -> bool:
    path = tmp_path / "model.osim"
    path.write_text(src)
    try:
        osim.Model(str(path)).initSystem()
        return True
    except Exception:  # OpenSim's InvalidPropertyValue / SimTK errors
        return False


CASES = ([(p, v, "TRIlat", ARM26) for p, v in THELEN_CASES if "inf" not in v]
         + [(p, v, "bifemsh_r", GAIT10) for p, v in MILLARD_CASES])


@pytest.mark.parametrize("prop,value,muscle,src", CASES, ids=[f"{c[0]}={c[1]}" for c in CASES])
def test_opensim_agrees_on_who_refuses(tmp_path, prop, value, muscle, src):
    bad = set_property(with_optional(src, muscle, prop), muscle, prop, value)
    if prop in ("Flen", "fv_linear_extrap_threshold") or WHO.get(prop) == "OpenSim":
        assert not _opensim_accepts(tmp_path, bad), f"OpenSim 4.6 accepts {prop} = {value}"
    else:
        assert _opensim_accepts(tmp_path, bad), f"OpenSim 4.6 refuses {prop} = {value}: the rule is OpenSim's"


@pytest.mark.parametrize("curve", sorted(OPTIONAL))
def test_opensim_refuses_one_optional_curve_property_alone(tmp_path, curve):
    assert _opensim_accepts(tmp_path, with_optional(GAIT10, "bifemsh_r", f"{curve}.x"))
    assert not _opensim_accepts(tmp_path, set_property(GAIT10, "bifemsh_r", f"{curve}.curviness", "0.5"))
