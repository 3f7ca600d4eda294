"""Model import: URDF and OpenSim (.osim 3.x and 4.x); OpenSim data files (.mot/.sto/.trc).

Names load on first use (PEP 562): ``mbjax info`` reads a file's summary without importing JAX.
"""

from __future__ import annotations

import importlib

#: public name -> submodule that defines it (or, named from the top, the module of ``mbjax.opensim`` that
#: does: OpenSim's own files are read there, and ``mbjax.io`` stays the place for every file)
_EXPORTS = {
    'load_osim': 'mbjax.opensim.model.osim',
    'write_osim': 'mbjax.opensim.model.osim_write',
    'load_urdf': 'urdf',
    'load_markers': 'mbjax.opensim.model.osim_markers',
    'load_marker_set': 'mbjax.opensim.model.osim_markers',
    'read_scale_setup': 'mbjax.opensim.scale_setup',
    'MarkerData': 'trc',
    'Table': 'table',
    'coordinates_from_table': 'coordinate_tables',
    'read_storage': 'storage',
    'read_trc': 'trc',
    'table_from_coordinates': 'coordinate_tables',
    'write_storage': 'storage',
    'write_trc': 'trc',
    'ExternalForceSpec': 'mbjax.opensim.external_loads',
    'ExternalLoadsFile': 'mbjax.opensim.external_loads',
    'read_external_loads': 'mbjax.opensim.external_loads',
    'read_path_functions': 'mbjax.opensim.model.osim_path_functions',
    'write_path_functions': 'mbjax.opensim.model.osim_path_functions',
    'load_model': 'native',
    'save_model': 'native',
}
_SUBMODULES = ('signal',)

__all__ = sorted(set(_EXPORTS) | set(_SUBMODULES))


def __getattr__(name: str):
    if name in _EXPORTS:
        module = _EXPORTS[name]
        value = getattr(importlib.import_module(module if module.startswith("mbjax.") else f"{__name__}.{module}"), name)
    else:
        try:  # a submodule (mbjax.opensim.model.osim, mbjax.io.signal, ...)
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(__all__) | {n for n in globals() if n.startswith("_")})  # not this module's own imports
