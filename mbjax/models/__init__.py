"""Built-in models: four-bar, five-bar, Andrews squeezer, shoulder, seven-segment planar human, and the
shipped OpenSim example ``arm26`` (:func:`arm26`, :func:`arm26_path`)."""

from . import planar_human as planar_human
from . import shoulder as shoulder
from . import andrews as andrews
from . import fourbar as fourbar
from . import fivebar as fivebar
from .opensim_examples import arm26 as arm26
from .opensim_examples import arm26_path as arm26_path
