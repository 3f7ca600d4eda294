"""The OpenSim workflow tier (:mod:`mbjax.opensim`) refuses bad setups, tables and options by name.

The tier re-exports readers and tools whose refusals are tested where they live (the data files,
the setups and the tools); these are the ones reached only through this tier's names.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbjax
import mbjax.opensim as mo
from mbjax.io.storage import Table

T = np.linspace(0.0, 0.1, 8)


@pytest.fixture(scope="module")
def arm():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # wrapping ignored, as asked
        model = mbjax.models.load("arm26", ignore_wrapping=True)
    coords = Table(T, ("r_shoulder_elev", "r_elbow_flex"), np.zeros((T.size, 2)), False)
    forces = Table(T, tuple(model.muscle_names), np.full((T.size, 6), 10.0), False)
    return model, coords, forces


def test_read_jr_setup_names_the_file_and_what_is_missing(tmp_path):
    p = tmp_path / "x.xml"
    p.write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"><Foo/></OpenSimDocument>')
    with pytest.raises(ValueError, match=r"x\.xml:1: <OpenSimDocument>: no <AnalyzeTool>"):
        mo.read_jr_setup(p)
    with pytest.raises(FileNotFoundError, match=r"none\.xml: no such OpenSim file"):
        mo.read_jr_setup(tmp_path / "none.xml")


def test_run_setups_checks_every_file_before_running(tmp_path):
    p = tmp_path / "x.xml"
    p.write_text('<?xml version="1.0"?><OpenSimDocument Version="40000"><Foo/></OpenSimDocument>')
    with pytest.raises(Exception, match=r"none\.xml: no such file"):
        mo.run_setups([str(tmp_path / "none.xml")], quiet=True)
    with pytest.raises(Exception, match=r"x\.xml: <Foo> is not a tool mbjax runs"):
        mo.run_setups([str(p)], quiet=True)


@pytest.mark.parametrize("options, message", [
    ({"joints": ("nope",)}, r"no joint of joint_names \['nope'\] is a joint of the model"),
    ({"step_interval": 0}, r"step_interval must be a positive integer, got 0"),
    ({"express_in_frame": ("moon",)}, r"express_in_frame 'moon' of joint 'offset' is neither a frame"),
    ({"apply_on_bodies": ("side",)}, r"apply_on_bodies 'side' for joint 'offset' must be 'child' or 'parent'"),
])
def test_joint_reactions_motion_refuses_bad_options(arm, options, message):
    model, coords, forces = arm
    with pytest.raises(ValueError, match=message):
        mo.joint_reactions_motion(model, coords, forces, progress=False, **options)


def test_joint_reactions_motion_refuses_a_forces_table_without_the_actuators(arm):
    model, coords, _ = arm
    other = Table(T, ("zzz",), np.zeros((T.size, 1)), False)
    with pytest.raises(ValueError, match=r"no column for the actuators \['TRIlong'"):
        mo.joint_reactions_motion(model, coords, other, progress=False)
