"""Model import: URDF and OpenSim (.osim 3.x and 4.x); OpenSim data files (.mot/.sto/.trc)."""

from .osim import load_osim as load_osim
from .osim_write import write_osim as write_osim
from .urdf import load_urdf as load_urdf
# OpenSim data files and model markers
from .osim_markers import load_markers as load_markers
from .osim_markers import load_marker_set as load_marker_set
from .scale_setup import read_scale_setup as read_scale_setup
from .storage import MarkerData as MarkerData
from .storage import Table as Table
from .storage import coordinates_from_table as coordinates_from_table
from .storage import read_storage as read_storage
from .storage import read_trc as read_trc
from .storage import table_from_coordinates as table_from_coordinates
from .storage import write_storage as write_storage
from .storage import write_trc as write_trc

# OpenSim ExternalLoads files and the signal processing of OpenSim's tools
from . import signal as signal
from .external_loads import ExternalForceSpec as ExternalForceSpec
from .external_loads import ExternalLoadsFile as ExternalLoadsFile
from .external_loads import read_external_loads as read_external_loads

# OpenSim 4.6 FunctionBasedPath sets (path functions of a model's muscles)
from .osim_path_functions import read_path_functions as read_path_functions
from .osim_path_functions import write_path_functions as write_path_functions

from .native import load_model as load_model
from .native import save_model as save_model
