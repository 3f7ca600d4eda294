"""Model import: URDF and OpenSim (.osim 3.x and 4.x)."""

from .osim import load_osim as load_osim
from .urdf import load_urdf as load_urdf
from .native import load_model as load_model
from .native import save_model as save_model
