"""``mbjax.analysis.identify.scale_model`` equals OpenSim 4.6's own ``Model::scale``, and OpenSim 4.6 reads the
scaled model ``mbjax.io.write_osim`` writes as the same model (marker ``validation``).

* Gait2354 (4.x file, CustomJoint knee with scaled translation splines, MovingPathPoints, the scale
  marker set of the pipeline added as the ScaleTool adds it): the Gait2354 pipeline's factors (from
  the static trial, tests/test_scaling.py), mass distribution preserved, subject mass 72.6 kg;
* arm26 (3.x file, a wrap cylinder on the humerus and the ulna's wrap objects): other factors, masses
  scaled with the volume (``preserve_mass_distribution=False``), no subject mass;
* MoBL-ARMS 4.1 (``needs_mobl``; straight-line paths, 13 shoulder couplers, the dependent coordinates
  set from their couplers; no mass matrix, which would need the couplers' Jacobian), random factors on
  all 11 bodies, one marker added to each arm body, subject mass 3.5 kg.

Compared at random poses, relative to each quantity's largest magnitude, to 1e-9: every body's mass,
centre of mass and inertia, body transforms in ground, marker positions, path lengths, the mass matrix
(``calcM``), and each muscle's optimal fibre and tendon slack length.
"""

from __future__ import annotations

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
import mbjax.models as mm  # noqa: E402
from mbjax.analysis.identify import scale_markers, scale_model  # noqa: E402
from mbjax.io import load_marker_set, load_markers, load_osim, write_osim  # noqa: E402

from _osim_models import MOBL, needs_mobl, strip_wrapping  # noqa: E402
from mbjax.analysis.identify import segment_names as idf_segments  # noqa: E402
from mbjax.forces import PathForce  # noqa: E402
from mbjax.markers import Markers  # noqa: E402
from test_scaling import PIPE, SUBJECT_MASS, setup_factors  # noqa: E402

jax.config.update("jax_enable_x64", True)
TOL = 1e-9


def _vec(x):
    return np.array([x.get(i) for i in range(x.size())])


def _case(which, tmp_path=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if which == "arm26_4x":  # arm26 converted to the 4.x format by OpenSim itself
            path = str(tmp_path / "arm26_4x.osim")
            osim.Model(mm.model_path("arm26")).printToXML(path)
            generic = load_osim(path)
            factors = {"base": 1.05, "r_humerus": 1.12, "r_ulna_radius_hand": 0.93}
            return path, generic, load_markers(path, generic), factors, dict(preserve_mass_distribution=False), False
        if which == "mobl":  # straight-line paths (wrapping costs minutes of compilation here)
            path = strip_wrapping(MOBL, str(tmp_path / "mobl_straight.osim"))
            generic = load_osim(path)
            rng = np.random.default_rng(7)
            factors = {b: float(rng.uniform(0.85, 1.2)) for b in idf_segments(generic)}
            return path, generic, _mobl_markers(generic), factors, dict(mass=3.5), False
        if which == "gait2354":
            path = mm.model_path("gait2354")
            generic = load_osim(path)
            markers, _ = load_marker_set(f"{PIPE}/gait2354_Scale_MarkerSet.xml", generic)
            return path, generic, markers, setup_factors(generic, markers), dict(mass=SUBJECT_MASS), True
        path = mm.model_path("arm26")
        generic = load_osim(path)
        factors = {"base": 1.05, "r_humerus": 1.12, "r_ulna_radius_hand": 0.93}
        return path, generic, load_markers(path, generic), factors, dict(preserve_mass_distribution=False), False


def _mobl_markers(model):
    """One marker 3 cm off each arm body's origin (MoBL has no markers; OpenSim gets the same ones)."""
    names = ("clavicle", "scapula", "humerus", "ulna", "radius", "hand")
    return Markers([f"m_{b}" for b in names], [model.body_index(b) for b in names],
                   [[0.03, -0.02 * k, 0.01] for k in range(len(names))])


def _add_markers(model, markers, body_names):
    for n, b, o in zip(markers.names, markers.body, np.asarray(markers.offset)):
        model.addMarker(osim.Marker(n, model.getBodySet().get(body_names[b]), osim.Vec3(*o)))


def _opensim_scaled(path, factors, options, marker_file, markers=None, body_names=None):
    model = osim.Model(path)
    if marker_file:
        model.updateMarkerSet(osim.MarkerSet(marker_file))  # as the ScaleTool replaces the markers
    elif markers is not None:
        _add_markers(model, markers, body_names)
    state = model.initSystem()
    scale_set = osim.ScaleSet()
    for name, f in factors.items():
        sc = osim.Scale()
        sc.setSegmentName(name)
        sc.setScaleFactors(osim.Vec3(f, f, f))
        sc.setApply(True)
        scale_set.cloneAndAppend(sc)
    preserve = options.get("preserve_mass_distribution", True)
    model.scale(state, scale_set, preserve, options.get("mass", -1.0))
    return model


def _path(force):
    for cls in (osim.Muscle, osim.PathActuator, osim.Ligament, osim.PathSpring):
        f = cls.safeDownCast(force)
        if f is not None:
            return f.getGeometryPath()
    raise TypeError(f"no path for {force.getConcreteClassName()}")


def _compare(theirs, ours, markers, seed):
    """OpenSim model ``theirs`` vs mbjax's ``ours`` (+ ``markers``), relative errors by quantity."""
    for f in theirs.getForceSet():
        f.set_appliesForce(False)
    state = theirs.initSystem()
    err = {}
    rel = lambda a, b: float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300))  # noqa: E731
    segs = ours.osim.scaling.segments
    idx = [ours.body_index(n) for n in segs]
    bodies = [theirs.getBodySet().get(n) for n in segs]
    err["mass"] = rel(np.asarray(ours.mass)[idx], [b.getMass() for b in bodies])
    err["com"] = rel(np.asarray(ours.com)[idx], [[b.getMassCenter()[k] for k in range(3)] for b in bodies])
    inertia = []
    for b in bodies:
        mo, pr = b.getInertia().getMoments(), b.getInertia().getProducts()
        inertia.append([[mo[0], pr[0], pr[1]], [pr[0], mo[1], pr[2]], [pr[1], pr[2], mo[2]]])
    err["inertia"] = rel(np.asarray(ours.inertia)[idx], inertia)
    paths = ours.muscles
    fs = theirs.getForceSet()
    muscles = [k for k, n in enumerate(paths.names) if osim.Muscle.safeDownCast(fs.get(n)) is not None]
    for key, get in (("optimal_fiber_length", "getOptimalFiberLength"), ("tendon_slack_length", "getTendonSlackLength")):
        theirs_v = [getattr(osim.Muscle.safeDownCast(fs.get(paths.names[k])), get)() for k in muscles]
        err[key] = rel(np.asarray(paths.parameters[key])[muscles], theirs_v)
    # path forces (Ligament, PathSpring): resting lengths rescaled with their paths (extendPostScale)
    path_forces = [e for e in (ours.forces.elements if ours.forces is not None else ()) if isinstance(e, PathForce)]
    for e in path_forces:
        err[f"{type(e).__name__} resting_length"] = rel(
            e.resting_length, [(osim.Ligament.safeDownCast(fs.get(n)) or osim.PathSpring.safeDownCast(fs.get(n)))
                               .get_resting_length() for n in e.names])
    coords = {c.getName(): c for c in theirs.getCoordinateSet()}
    slot = [""] * state.getNQ()  # each coordinate's slot in the state's q
    for name, c in coords.items():
        before, v = _vec(state.getQ()), c.getValue(state)
        c.setValue(state, v + 0.5, False)
        (k,) = np.nonzero(_vec(state.getQ()) != before)[0]
        slot[k] = name
        c.setValue(state, v, False)
    names = ours.coordinate_names
    info = ours.osim
    lo, hi = np.asarray(info.lower), np.asarray(info.upper)
    qs = (lo + hi) / 2 + 0.35 * (hi - lo) * np.random.default_rng(seed).uniform(-1, 1, (3, len(names)))
    ms = theirs.getMarkerSet()
    couplers = []
    for c in theirs.getConstraintSet():
        c = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if c is not None:
            ind = c.getIndependentCoordinateNames()
            scale = osim.PropertyHelper.getValueDouble(c.getPropertyByName("scale_factor"))
            couplers.append(([ind.get(k) for k in range(ind.getSize())], c.getDependentCoordinateName(),
                             c.getFunction(), scale))
    for q in qs:
        for n, v in zip(names, q):
            coords[n].setValue(state, float(v), False)
        for _ in couplers:  # dependent coordinates from their couplers (chains: repeat)
            for ind, dep, fn, scale in couplers:
                x = osim.Vector([coords[n].getValue(state) for n in ind])
                coords[dep].setValue(state, scale * fn.calcValue(x), False)
        theirs.realizeVelocity(state)
        poses = np.asarray(mbjax.body_poses(ours, jnp.asarray(q)))[idx]
        ref = []
        for b in bodies:
            t = b.getTransformInGround(state)
            m = np.eye(4)
            m[:3, :3] = [[t.R().get(i, j) for j in range(3)] for i in range(3)]
            m[:3, 3] = [t.p()[k] for k in range(3)]
            ref.append(m)
        err["poses"] = max(err.get("poses", 0.0), rel(poses, ref))
        x = np.asarray(mbjax.marker_positions(ours, markers, jnp.asarray(q)))
        xr = [[ms.get(n).getLocationInGround(state)[k] for k in range(3)] for n in markers.names]
        err["markers"] = max(err.get("markers", 0.0), rel(x, xr))
        lengths = [_path(fs.get(n)).getLength(state) for n in paths.names]
        err["path lengths"] = max(err.get("path lengths", 0.0), rel(mbjax.muscle_lengths(ours, jnp.asarray(q)), lengths))
        for e in path_forces:
            lengths = [_path(fs.get(n)).getLength(state) for n in e.names]
            err["path lengths"] = max(err["path lengths"], rel(e.lengths(ours, jnp.asarray(q)), lengths))
        if couplers:
            continue  # M over the independent coordinates needs the coupler Jacobian: checked without couplers
        mm_ = osim.Matrix()
        theirs.getMatterSubsystem().calcM(state, mm_)
        m_u = np.array([[mm_.get(i, j) for j in range(mm_.ncol())] for i in range(mm_.nrow())])
        k = [slot.index(n) for n in names]
        err["mass matrix"] = max(err.get("mass matrix", 0.0), rel(mbjax.mass_matrix(ours, jnp.asarray(q)), m_u[np.ix_(k, k)]))
    return err


# MoBL in the extended group (~10 s); gait2354 and arm26 in CI
@pytest.mark.parametrize("which", ["gait2354", "arm26", pytest.param("mobl", marks=[needs_mobl, pytest.mark.extended])])
def test_scale_model_equals_opensims_model_scale(which, tmp_path):
    path, generic, markers, factors, options, marker_file = _case(which, tmp_path)
    ours = scale_model(generic, factors, **options)
    ours_markers = scale_markers(generic, markers, factors)
    theirs = _opensim_scaled(path, factors, options, f"{PIPE}/gait2354_Scale_MarkerSet.xml" if marker_file else None,
                             markers if which == "mobl" else None, generic.body_names)
    err = _compare(theirs, ours, ours_markers, seed=1)
    assert max(err.values()) < TOL, sorted(err.items())


# arm26 scaled 4x in the extended group (~16 s); gait2354 and arm26 in CI
@pytest.mark.parametrize("which", ["gait2354", pytest.param("arm26_4x", marks=pytest.mark.extended), "arm26"])
def test_opensim_reads_the_written_scaled_model(which, tmp_path):
    """4.x files to 1e-9.  A 3.x file (arm26 as shipped) is read by OpenSim 4.6's format updater, which
    rounds ``location_in_parent`` to 6 significant digits (checked: -0.01842225 is read as -0.0184223),
    so its poses, markers and path lengths agree to that rounding only (< 1e-6 relative here)."""
    path, generic, markers, factors, options, _ = _case(which, tmp_path)
    ours = scale_model(generic, factors, **options)
    ours_markers = scale_markers(generic, markers, factors)
    out = write_osim(ours, tmp_path / "scaled.osim", markers=ours_markers)
    err = _compare(osim.Model(out), ours, ours_markers, seed=2)
    if which == "arm26":
        exact = {k: v for k, v in err.items() if k not in ("poses", "markers", "path lengths")}
        assert max(exact.values()) < TOL and max(err.values()) < 1e-6, err
    else:
        assert max(err.values()) < TOL, sorted(err.items())
