"""The shoulder of Holzbaur et al. (2005) / MoBL-ARMS: thorax, clavicle, scapula, humerus, 14 muscles.

Ehsani §4-4 A and C.  Geometry, joint axes, inertias and muscle paths are **read at run time**
from the MoBL-ARMS 4.1 model (``MOBL_ARMS_fixed_41-ignoreTendonCompl.osim``, Saul et al. 2015,
SimTK non-commercial licence: it is never copied into mbjax).  The file is trimmed in memory to
the thorax (ground), clavicle, scapula, humerus and the phantom bodies between them, and to the
14 muscles DELT1-3, SUPSP, INFSP, SUBSC, TMIN, TMAJ, PECM1-3, LAT1-3; wrap objects are dropped
(straight-line paths between the via points, as in the seed's comparison).  Segment inertias are
MoBL's (the seed's Quental et al. anthropometry is not available; ERRATA).

Coordinates ``q = (elv_angle, shoulder_elv, shoulder_rot)``: plane of elevation (rotation about
the thorax ~Y axis, 0 = abduction in the frontal plane, π/2 = forward flexion), elevation angle
(about the rotated ~-X axis; the arm hangs at 0) and axial rotation (about the humerus ~Y axis),
all in radians, OpenSim's conventions.

Rhythms (clavicle and scapula as joint maps of the humerus coordinates):

* ``"holzbaur"``: the OpenSim model's CoordinateCouplerConstraints — every clavicle/scapula angle
  linear in ``shoulder_elv`` only (slopes -0.242, 0.1025 for SC; 0.178, -0.049, 0.396 for AC).
* ``"degroot_brand"``: de Groot & Brand (2001)'s regression with its plane-of-elevation terms:
  ``Cy = -0.242 Hz + 0.120 Hy``, ``Cz = 0.123 Hz - 0.046 Hy``, ``Sx = 0.184 Hz - 0.028 Hy``,
  ``Sy = -0.049 Hz + 0.140 Hy``, ``Sz = 0.396 Hz - 0.079 Hy`` (deg/deg = rad/rad; coefficients
  from ``degroot_brand_2001.json`` in the shared data folder, ``MBJAX_SHARED_DATA``).  Angle mapping (documented assumption):
  the regressed angles map onto MoBL's coupled coordinates exactly as Holzbaur's slopes show
  (Cy → sternoclavicular_r2, Cz → sternoclavicular_r3, Sx → acromioclavicular_r1,
  Sy → acromioclavicular_r2, Sz → acromioclavicular_r3), Hz → ``shoulder_elv`` and
  Hy → ``elv_angle - plane_offset`` (both rotations about the thorax +Y axis; ``plane_offset``
  defaults to 0).  Intercepts and rest-posture terms stay dropped, as in Holzbaur's model (the
  rest posture is in the fixed joint axes); the "unrot" phantom coordinates are the negatives,
  as in the OpenSim model.  These are two-coordinate maps: what SIMM/OpenSim couplers could not do.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
import xml.etree.ElementTree as ET

from .._data import shared_data
from ..opensim.model.osim import load_osim
from ..maps.affine import Affine

MOBL_PATH = shared_data("osim", "MOBL_ARMS_fixed_41-ignoreTendonCompl.osim")
DEGROOT_PATH = shared_data("degroot_brand_2001.json")
MUSCLES = ("DELT1", "DELT2", "DELT3", "SUPSP", "INFSP", "SUBSC", "TMIN", "TMAJ",
           "PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3")
LEADERS = ("LAT1", "PECM3", "DELT1", "PECM1", "SUBSC", "DELT2")  # Table 5 group leaders
BODIES = ("clavicle", "clavphant", "scapula", "scapphant", "humphant", "humphant1", "humerus")
COORDINATES = ("elv_angle", "shoulder_elv", "shoulder_rot")
RHYTHMS = ("holzbaur", "degroot_brand")
#: regressed angle -> (MoBL coordinate, its "unrot" negative)
_ANGLE_TO_COORD = {
    "Cy": ("sternoclavicular_r2", "unrotscap_r2"),
    "Cz": ("sternoclavicular_r3", "unrotscap_r3"),
    "Sx": ("acromioclavicular_r1", "unrothum_r1"),
    "Sy": ("acromioclavicular_r2", "unrothum_r2"),
    "Sz": ("acromioclavicular_r3", "unrothum_r3"),
}


def _source(path):
    path = path or os.environ.get("MBJAX_MOBL", MOBL_PATH)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"the shoulder model reads the MoBL-ARMS 4.1 OpenSim file at run time (non-commercial "
            f"licence, not distributed with mbjax); not found at {path}. Set MBJAX_SHARED_DATA to the folder "
            f"holding osim/MOBL_ARMS_fixed_41-ignoreTendonCompl.osim, set MBJAX_MOBL to the file, or pass path= "
            f"(README, 'Data')."
        )
    return path


def trimmed_osim(path=None, out=None, muscles=MUSCLES, strip_wrapping=True) -> str:
    """Write the shoulder part of MoBL (bodies in :data:`BODIES`, the given muscles) to ``out``.

    Returns the path of the trimmed ``.osim`` (a temporary file if ``out`` is None).  OpenSim can
    load it too, which is how the experiment overlays OpenSim's moment arms.
    """
    src = _source(path)
    tree = ET.parse(src)
    model = tree.getroot().find("Model")
    keep_bodies = set(BODIES)
    bodyset = model.find("BodySet/objects")
    for b in list(bodyset):
        if b.get("name") not in keep_bodies:
            bodyset.remove(b)
    jointset = model.find("JointSet/objects")
    kept_coords = set()
    for j in list(jointset):
        child = (j.findtext("socket_child_frame") or "").strip()
        frames = {f.get("name"): (f.findtext("socket_parent") or "") for f in j.iter("PhysicalOffsetFrame")}
        child_body = frames.get(child, child).split("/")[-1]
        if child_body not in keep_bodies:
            jointset.remove(j)
        else:
            kept_coords |= {c.get("name") for c in j.iter("Coordinate")}
    cons = model.find("ConstraintSet/objects")
    if cons is not None:
        for c in list(cons):
            if (c.findtext("dependent_coordinate_name") or "").strip() not in kept_coords:
                cons.remove(c)
    forces = model.find("ForceSet/objects")
    for f in list(forces):
        if f.get("name") not in muscles:
            forces.remove(f)
        elif strip_wrapping:
            for pws in f.iter("PathWrapSet"):
                objs = pws.find("objects")
                if objs is not None:
                    for w in list(objs):
                        objs.remove(w)
    for tag in ("MarkerSet", "ContactGeometrySet", "ControllerSet", "ProbeSet", "ComponentSet"):
        el = model.find(tag)
        if el is not None:
            model.remove(el)
    if out is None:
        fd, out = tempfile.mkstemp(suffix="_shoulder.osim")
        os.close(fd)
    tree.write(out)
    return out


def degroot_brand_couplings(plane_offset: float = 0.0, data_path: str = DEGROOT_PATH):
    """Two-coordinate affine maps of (shoulder_elv, elv_angle) for the coupled coordinates."""
    with open(data_path) as fh:
        coef = json.load(fh)["coefficients"]
    out = {}
    for angle, (coord, unrot) in _ANGLE_TO_COORD.items():
        a, b = float(coef[angle]["Hz"]), float(coef[angle]["Hy"])
        out[coord] = Affine(["shoulder_elv", "elv_angle"], [a, b], -b * plane_offset)
        out[unrot] = Affine(["shoulder_elv", "elv_angle"], [-a, -b], b * plane_offset)
    return out


def shoulder_model(rhythm: str = "holzbaur", path: str | None = None, plane_offset: float = 0.0):
    """The 3-coordinate, 14-muscle shoulder as an mbjax ``Model`` (see module docstring)."""
    if rhythm not in RHYTHMS:
        raise ValueError(f"rhythm {rhythm!r} is not one of {RHYTHMS}")
    trimmed = trimmed_osim(path)
    try:
        couplings = degroot_brand_couplings(plane_offset) if rhythm == "degroot_brand" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = load_osim(trimmed, ignore_wrapping=True, couplings=couplings)
    finally:
        os.remove(trimmed)
    if model.coordinate_names != COORDINATES:
        raise ValueError(f"unexpected shoulder coordinates {model.coordinate_names}")
    return model


def without_phantom_inertia(model):
    """The model with MoBL's phantom bodies made massless (``*phant*``: mass and inertia set to 0).

    MoBL-ARMS gives its placeholder bodies between the joints (``clavphant``, ``scapphant``,
    ``humphant``, ``humphant1``) a mass of 1e-4 kg but an inertia of diag(1, 1, 1) kg·m²: 50 times
    the humerus' own.  Kinematics and moment arms do not see it; dynamics do (it dominates M).  The
    seed's shoulder (Quental et al. anthropometry of clavicle, scapula, humerus) has no such bodies,
    so the tracking experiment removes them.  Works on any model whose body names contain "phant".
    """
    import equinox as eqx
    import numpy as np

    phantom = np.array(["phant" in name for name in model.body_names])
    mass = model.mass * (1.0 - phantom)
    inertia = model.inertia * (1.0 - phantom)[:, None, None]
    return eqx.tree_at(lambda m: (m.mass, m.inertia), model, (mass, inertia))
