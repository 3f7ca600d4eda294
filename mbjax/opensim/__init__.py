"""OpenSim's file workflow in one place: read and write its files, run its tools from setup files.

A trial goes through OpenSim's tools in order, each reading the files the previous one wrote::

    model.osim + markers.trc ──IK──> coordinates.mot ──ID──> generalized forces.sto
                                          │  (+ external loads.xml/.mot)
                                          └──SO──> activations, forces.sto ──JR──> reaction loads.sto

* Files: :func:`load_osim` / :func:`write_osim` (models), :func:`read_storage` /
  :func:`write_storage` (``.mot``/``.sto``), :func:`read_trc` / :func:`write_trc` (markers),
  :func:`read_external_loads`, and the setup readers :func:`read_ik_setup`, :func:`read_id_setup`,
  :func:`read_so_setup`, :func:`read_jr_setup`, :func:`read_scale_setup`.
* Tools run from a setup file (writing the files it names, as OpenSim does):
  :func:`inverse_kinematics_from_setup`, :func:`inverse_dynamics_from_setup`,
  :func:`static_optimization_from_setup`, :func:`joint_reactions_from_setup`; a trial's chain of
  setup files in one process: :func:`run_setups` (``mbjax run SETUP.xml ...``).
* Tools on tables already read (no files): :func:`inverse_dynamics_motion`,
  :func:`static_optimization_motion`, :func:`joint_reactions_motion`; inverse kinematics of marker
  data is the core's ``mbjax.inverse_kinematics``.

The names load on first use (PEP 562), as in :mod:`mbjax.io`: ``import mbjax.opensim`` does not
import JAX.  This is mbjax's tier; OpenSim's own Python package stays ``import opensim``.
"""

from __future__ import annotations

import importlib

#: public name -> module that defines it
_EXPORTS = {
    # files
    'load_osim': 'mbjax.opensim.model.osim',
    'write_osim': 'mbjax.opensim.model.osim_write',
    'read_storage': 'mbjax.io.storage',
    'write_storage': 'mbjax.io.storage',
    'read_trc': 'mbjax.io.trc',
    'write_trc': 'mbjax.io.trc',
    'read_external_loads': 'mbjax.opensim.external_loads',
    'read_ik_setup': 'mbjax.opensim.tools.ik',
    'read_id_setup': 'mbjax.opensim.tools.id.setup',
    'read_so_setup': 'mbjax.opensim.tools.so.setup',
    'read_jr_setup': 'mbjax.opensim.tools.jr.setup',
    'read_scale_setup': 'mbjax.opensim.scale_setup',
    # tools run from setup files
    'inverse_kinematics_from_setup': 'mbjax.opensim.tools.ik',
    'inverse_dynamics_from_setup': 'mbjax.opensim.tools.id.setup',
    'static_optimization_from_setup': 'mbjax.opensim.tools.so.setup',
    'joint_reactions_from_setup': 'mbjax.opensim.tools.jr.setup',
    'run_setups': 'mbjax.cli.tools',
    # tools on tables
    'inverse_dynamics_motion': 'mbjax.opensim.tools.id.motion',
    'static_optimization_motion': 'mbjax.opensim.tools.so.motion',
    'joint_reactions_motion': 'mbjax.opensim.tools.jr.motion',
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
