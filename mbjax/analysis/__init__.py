"""Array-in, array-out solvers on top of the core: inverse kinematics from markers
(:mod:`mbjax.analysis.ik`), muscle force sharing by static optimization (:mod:`mbjax.analysis.sharing`),
parameter identification and scaling (:mod:`mbjax.analysis.identify`), computed-torque tracking
(:mod:`mbjax.analysis.control`) and per-pose functions over many poses (:mod:`mbjax.analysis.sweep`).

They take arrays and a model and return arrays; reading and writing OpenSim's files is
:mod:`mbjax.opensim`'s (``mbjax.opensim.tools``: thin adapters from setup files to these solvers).
The submodules load on first use (``mbjax.analysis.sharing`` imports it), so ``import mbjax.analysis``
does not import JAX.
"""

from __future__ import annotations

import importlib

__all__ = ["control", "identify", "ik", "sharing", "sweep"]


def __getattr__(name: str):
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")  # the import binds it: no second call


def __dir__():
    return sorted(set(globals()) | set(__all__))
