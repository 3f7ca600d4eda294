"""OpenSim's ``.osim`` model files: the reader (:mod:`~mbjax.opensim.model.osim`, ``load_osim``), assembled
from one module per part of the file, and the writer (:mod:`~mbjax.opensim.model.osim_write`,
``write_osim``).  The public names are :mod:`mbjax.io`'s and :mod:`mbjax.opensim`'s."""
