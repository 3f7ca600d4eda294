"""Built-in models: four-bar, five-bar, Andrews squeezer, shoulder, seven-segment planar human, and the
shipped OpenSim examples, loadable by name (:func:`load`, :func:`model_path`; :func:`arm26`), and a worked
OpenSim pipeline (:func:`pipeline_path`)."""

from . import planar_human as planar_human
from . import shoulder as shoulder
from . import andrews as andrews
from . import fourbar as fourbar
from . import fivebar as fivebar
from .opensim_examples import arm26 as arm26
from .opensim_examples import arm26_path as arm26_path
from .opensim_examples import EXAMPLES as EXAMPLES
from .opensim_examples import load as load
from .opensim_examples import model_path as model_path
from .opensim_examples import PIPELINES as PIPELINES
from .opensim_examples import pipeline_path as pipeline_path
