"""OpenSim example models shipped inside the mbjax wheel (Apache-2.0, see ``mbjax/models/data/NOTICE``).

:func:`arm26` loads OpenSim's two-coordinate (``r_shoulder_elev``, ``r_elbow_flex``), six-muscle arm
with :func:`mbjax.io.load_osim`; :func:`arm26_path` is the packaged file, for OpenSim or the
``mbjax`` command (``mbjax info arm26`` / ``mbjax moment-arms arm26 ...`` use it by name).  The
MoBL-ARMS model is not shipped (non-commercial licence): see the README's "Data" section.
"""

from __future__ import annotations

import importlib.resources

__all__ = ["arm26", "arm26_path", "EXAMPLES"]

#: built-in name -> packaged file
EXAMPLES = {"arm26": "arm26.osim"}


def arm26_path() -> str:
    """Path of the packaged ``arm26.osim`` (a real file inside the installed package)."""
    return str(importlib.resources.files("mbjax.models").joinpath("data", EXAMPLES["arm26"]))


def arm26(ignore_wrapping: bool = False):
    """OpenSim's ``arm26`` as an mbjax :class:`~mbjax.Model` (``load_osim(arm26_path(), ...)``).

    arm26's triceps and biceps paths wrap over ``TRIlonghh``, ``BIClonghh`` (ellipsoids), ``TRI``
    and ``TRIlongglen`` (cylinders), modelled as OpenSim models them (:mod:`mbjax.wrapping`);
    ``ignore_wrapping=True`` is the explicit choice of straight lines (warned).
    """
    from ..io.osim import load_osim

    return load_osim(arm26_path(), ignore_wrapping=ignore_wrapping)
