"""Built-in models: four-bar, five-bar, Andrews squeezer, shoulder, seven-segment planar human."""

from . import planar_human as planar_human
from . import shoulder as shoulder
from . import andrews as andrews
from . import fourbar as fourbar
from . import fivebar as fivebar
