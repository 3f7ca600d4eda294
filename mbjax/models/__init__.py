"""Built-in models: four-bar, five-bar, Andrews squeezer, shoulder, seven-segment planar human, and the
shipped OpenSim examples, loadable by name (:func:`load`, :func:`model_path`; :func:`arm26`), and a worked
OpenSim pipeline (:func:`pipeline_path`).

Names are imported on first use (PEP 562): the command line reads :data:`EXAMPLES` without importing JAX.
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("planar_human", "shoulder", "andrews", "andrews_dae", "fourbar", "fivebar")
_EXAMPLE_NAMES = ("arm26", "arm26_path", "EXAMPLES", "load", "model_path", "PIPELINES", "pipeline_path")

__all__ = sorted(_SUBMODULES + _EXAMPLE_NAMES)


def __getattr__(name: str):
    if name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _EXAMPLE_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.opensim_examples"), name)
    else:
        raise AttributeError(f"module 'mbjax.models' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
