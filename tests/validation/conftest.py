"""OpenSim's default objects are global to a process: an OpenSim file with ``<defaults>`` (Rajagopal2016's
PointActuator, Hamner2010's 3.x-era Thelen2003Muscle, a legacy loads file) changes the defaults of every
model OpenSim reads after it in the same worker, so a validation test could compare mbjax with another
OpenSim model than its file describes, depending on which tests ran before.  After each test the
default objects of the classes such files set are registered afresh."""

from __future__ import annotations

import sys

import pytest

#: the classes whose defaults OpenSim's library files set (their <defaults> elements)
_CLASSES = ("Thelen2003Muscle", "Millard2012EquilibriumMuscle", "CoordinateActuator", "PointActuator",
            "TorqueActuator", "ControlLinear", "PrescribedForce", "ExternalForce")


@pytest.fixture(autouse=True)
def _fresh_opensim_defaults():
    yield
    osim = sys.modules.get("opensim")
    if osim is None:
        return
    for name in _CLASSES:
        cls = getattr(osim, name, None)
        if cls is not None:
            osim.OpenSimObject.registerType(cls())
