"""OpenSim example models shipped inside the mbjax wheel (Apache-2.0, see ``mbjax/models/data/NOTICE``).

Loadable by name with :func:`load` (``mbjax.models.load("gait2392")``); :func:`model_path` is the
packaged file, for OpenSim or the ``mbjax`` command (``mbjax info gait2392`` uses it by name).

========================  ============================================================================
name                      model (OpenSim's ``Models/`` folder, unchanged)
========================  ============================================================================
``arm26``                 2 coordinates, 6 muscles (``Arm26/arm26.osim``); wraps: 2 cylinders, 2 ellipsoids
``double_pendulum``       2 pin joints, no muscles (``DoublePendulum/double_pendulum.osim``)
``gait10dof18musc``       planar gait, 10 coordinates, 18 muscles (``Gait10dof18musc/gait10dof18musc.osim``)
``gait2354``              3-D gait, 23 coordinates, 54 muscles (``Gait2354_Simbody/gait2354_simbody.osim``)
``gait2392``              3-D gait, 23 coordinates, 92 Thelen muscles
                          (``Gait2392_Simbody/gait2392_thelen2003muscle.osim``)
``gait2392_millard``      the same with 92 Millard 2012 equilibrium muscles
                          (``Gait2392_Simbody/gait2392_millard2012muscle.osim``)
========================  ============================================================================

Any other ``.osim`` file is read from the path you give (:func:`mbjax.io.load_osim`).  The
MoBL-ARMS model is not shipped (non-commercial licence): see the README's "Data" section.
"""

from __future__ import annotations

import importlib.resources

__all__ = ["arm26", "arm26_path", "load", "model_path", "pipeline_path", "EXAMPLES", "PIPELINES"]

#: built-in name -> packaged file
EXAMPLES = {
    "arm26": "arm26.osim",
    "double_pendulum": "double_pendulum.osim",
    "gait10dof18musc": "gait10dof18musc.osim",
    "gait2354": "gait2354_simbody.osim",
    "gait2392": "gait2392_thelen2003muscle.osim",
    "gait2392_millard": "gait2392_millard2012muscle.osim",
}


#: built-in name -> packaged folder of a worked OpenSim pipeline (model, data, setup files, reference outputs)
PIPELINES = {
    "gait2354_walk": "gait2354_walk",
}


def pipeline_path(name: str) -> str:
    """Folder of the packaged pipeline ``name``: ``"gait2354_walk"`` is OpenSim's Gait2354 walking
    trial (``Pipelines/Gait2354_Simbody``): the scaled subject model with 54 muscles, its markers
    (``.trc``), ground reactions, the IK and ID setup files, a static-optimization setup with the
    pipeline's residual and reserve actuators, and OpenSim's stored IK and ID outputs in
    ``reference/`` (see its NOTICE)."""
    if name not in PIPELINES:
        raise ValueError(f"no shipped pipeline named {name!r}; shipped: {', '.join(PIPELINES)}")
    return str(importlib.resources.files("mbjax.models").joinpath("data", PIPELINES[name]))


def model_path(name: str) -> str:
    """Path of the packaged ``.osim`` file of the example ``name`` (a real file inside the installed package)."""
    if name not in EXAMPLES:
        raise ValueError(f"no shipped model named {name!r}; shipped: {', '.join(EXAMPLES)} "
                         f"(load any other .osim file with mbjax.io.load_osim(path))")
    return str(importlib.resources.files("mbjax.models").joinpath("data", EXAMPLES[name]))


def load(name: str, **options):
    """The shipped example ``name`` as an mbjax :class:`~mbjax.Model`: ``load_osim(model_path(name), **options)``.

    ``options`` are :func:`mbjax.io.load_osim`'s (``ignore_wrapping``, ``ignore_forces``, ...)."""
    from ..opensim.model.osim import load_osim

    return load_osim(model_path(name), **options)


def arm26_path() -> str:
    """Path of the packaged ``arm26.osim`` (``model_path("arm26")``)."""
    return model_path("arm26")


def arm26(ignore_wrapping: bool = False):
    """OpenSim's ``arm26`` as an mbjax :class:`~mbjax.Model` (``load_osim(arm26_path(), ...)``).

    arm26's triceps and biceps paths wrap over ``TRIlonghh``, ``BIClonghh`` (ellipsoids), ``TRI``
    and ``TRIlongglen`` (cylinders), modelled as OpenSim models them (:mod:`mbjax.wrapping`);
    ``ignore_wrapping=True`` is the explicit choice of straight lines (warned).
    """
    return load("arm26", ignore_wrapping=ignore_wrapping)
