"""OpenSim's spellings of a boolean in its XML files (what its property reader accepts, any case).

Kept apart from :mod:`mbjax.opensim.model.osim_xml` so that the CLI can read a setup's switches without
importing JAX."""

from __future__ import annotations

#: lower-cased text -> value; anything else is refused by the readers, naming file, line and tag
BOOL_TEXT = {"true": True, "1": True, "false": False, "0": False}
