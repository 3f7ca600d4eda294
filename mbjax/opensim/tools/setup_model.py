"""The model a tool's setup file names, loaded as OpenSim's tools load it: after the setup file, whose
first ``<defaults>`` block changes OpenSim's process-wide default objects, so its default objects stand
for what the model's muscles and actuators leave out (``load_osim(..., prior_defaults=)``)."""

from __future__ import annotations

from ..setup_xml import SetupFile


def setup_model(path, model_file, model=None):
    """``model`` when given (the caller's), else the setup's ``<model_file>`` loaded after the setup's
    ``<defaults>``; a setup without one is refused naming the file."""
    if model is not None:
        return model
    if model_file is None:
        raise ValueError(f"{path}: no <model_file>; pass model=")
    from ..model.osim import load_osim

    return load_osim(model_file, prior_defaults=SetupFile(path).defaults())
