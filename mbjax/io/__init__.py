"""Model import: URDF and OpenSim (.osim 3.x and 4.x); OpenSim data files (.mot/.sto/.trc).

Names load on first use (PEP 562): ``mbjax info`` reads a file's summary without importing JAX.
"""

from __future__ import annotations

import importlib

#: public name -> submodule that defines it
_EXPORTS = {
    'load_osim': 'osim',
    'write_osim': 'osim_write',
    'load_urdf': 'urdf',
    'load_markers': 'osim_markers',
    'load_marker_set': 'osim_markers',
    'read_scale_setup': 'scale_setup',
    'MarkerData': 'trc',
    'Table': 'table',
    'coordinates_from_table': 'coordinate_tables',
    'read_storage': 'storage',
    'read_trc': 'trc',
    'table_from_coordinates': 'coordinate_tables',
    'write_storage': 'storage',
    'write_trc': 'trc',
    'ExternalForceSpec': 'external_loads',
    'ExternalLoadsFile': 'external_loads',
    'read_external_loads': 'external_loads',
    'read_path_functions': 'osim_path_functions',
    'write_path_functions': 'osim_path_functions',
    'load_model': 'native',
    'save_model': 'native',
}
_SUBMODULES = ('signal',)

__all__ = sorted(set(_EXPORTS) | set(_SUBMODULES))


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    else:
        try:  # a submodule (mbjax.io.osim, mbjax.io.signal, ...)
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
