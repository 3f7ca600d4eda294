"""The tools judge their inputs and their own results: IK with nothing to track is refused, a
frame with no marker is "not converged"; a NaN cut-off, an exponent without a single minimum are
refused; coordinates in degrees labelled radians, coordinates far outside their ranges and external
loads asked outside their data are computed (as OpenSim does) with a warning naming them."""

import os
import re
import warnings

import jax
import numpy as np
import pytest

import mbjax
from mbjax.opensim.tools.id import coordinate_trajectory
from mbjax.analysis.ik import inverse_kinematics
from mbjax.io import MarkerData, load_markers, read_external_loads, read_storage
from mbjax.models import arm26_path
from mbjax.opensim.tools.so import static_optimization_motion

DATA = os.path.join(os.path.dirname(__file__), "data", "opensim_models")
ARM = mbjax.io.load_osim(arm26_path(), ignore_wrapping=True)
MOTION = read_storage(os.path.join(DATA, "arm26_so", "arm26_InverseKinematics.mot"))


def _markers(T=6):
    markers = load_markers(arm26_path(), ARM)
    q = np.stack([np.linspace(0.2, 0.5, T), np.linspace(0.3, 1.2, T)], axis=1)
    x = np.asarray(jax.vmap(lambda qq: mbjax.marker_positions(ARM, markers, qq))(q))
    return markers, MarkerData(np.arange(T) / 100.0, tuple(markers.names), x), q


def test_ik_with_every_weight_zero_refused():
    markers, data, _ = _markers()
    with pytest.raises(ValueError, match=r"every marker weight is 0 \(.*r_acromion"):
        inverse_kinematics(ARM, markers, data, {n: 0.0 for n in markers.names})


def test_ik_frame_without_markers_is_not_converged():
    markers, data, q = _markers()
    x = np.array(data.positions)
    x[2] = np.nan  # every marker missing at t = 0.02 s
    with pytest.warns(UserWarning, match=r"at 1 of 6 frame\(s\) \(first at t = 0.02 s\) the markers present do not "
                                         r"determine 'r_shoulder_elev', 'r_elbow_flex'"):
        r = inverse_kinematics(ARM, markers, data._replace(positions=x))
    assert not r.converged[2] and r.converged[[0, 1, 3, 4, 5]].all()
    np.testing.assert_allclose(r.q[[0, 1, 3, 4, 5]], q[[0, 1, 3, 4, 5]], atol=1e-6)  # the markers' poses


@pytest.mark.parametrize("cutoff", [float("nan")])
def test_nan_cutoff_refused(cutoff):
    with pytest.raises(ValueError, match="lowpass_cutoff must be a finite frequency"):
        coordinate_trajectory(ARM, MOTION, cutoff)


def _mot_in_degrees_labelled_radians(tmp_path):
    src = open(os.path.join(DATA, "arm26_so", "arm26_InverseKinematics.mot")).read()
    assert re.search(r"inDegrees=yes", src)
    path = tmp_path / "deg_as_rad.mot"
    path.write_text(src.replace("inDegrees=yes", "inDegrees=no"))
    return read_storage(path)


def test_degrees_labelled_radians_warn_by_coordinate(tmp_path):
    table = _mot_in_degrees_labelled_radians(tmp_path)
    with pytest.warns(UserWarning, match=r"beyond two turns: r_elbow_flex reaches .* rad.*Is the file in degrees"):
        coordinate_trajectory(ARM, table)
    with warnings.catch_warnings():  # the file as written: no range warning
        warnings.simplefilter("error")
        coordinate_trajectory(ARM, MOTION)


def test_coordinate_far_outside_its_range_warns(tmp_path):
    i = MOTION.labels.index("r_elbow_flex")
    data = np.array(MOTION.data)
    data[:, i] += 300.0  # degrees: ~5 rad above arm26's elbow range [0, 2.27]
    with pytest.warns(UserWarning, match=r"far outside their range .*r_elbow_flex reaches .*range \[0, 2.26"):
        coordinate_trajectory(ARM, MOTION._replace(data=data))


@pytest.mark.parametrize("exponent", [-2.0, 0.0, 1.0, float("nan"), float("inf")])
def test_exponent_without_a_single_minimum_refused(exponent):
    with pytest.raises(ValueError, match=r"exponent must be a finite number > 1"):
        static_optimization_motion(ARM, MOTION, exponent=exponent, progress=False)
    with pytest.raises(ValueError, match=r"exponent must be a finite number > 1"):
        mbjax.analysis.sharing.qp.solve(np.eye(2), np.ones(2), -np.ones(2) * 9, np.ones(2) * 9, np.ones(2), exponent)


def test_external_loads_outside_their_data_warn():
    loads = read_external_loads(os.path.join(DATA, "gait2354_id", "subject01_walk1_grf.xml"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loads.at(np.linspace(0.5, 0.9, 5))
    with pytest.warns(UserWarning, match=r"subject01_walk1_grf_0.45-0.95s.mot: external loads .* asked at 2 time\(s\) "
                                         r"outside the data's \[0.45, 0.95\] s .*extrapolated, as OpenSim does"):
        loads.at(np.asarray([0.5, 10.0, -50.0]))


def test_repeated_time_in_coordinates_named():
    """OpenSim's Storage reads a repeated time (its TimeSeriesTable refuses it); the tools' splines
    cannot use it: the message names the rows and times, not the spline's knots."""
    time = np.array(MOTION.time)
    time[5] = time[4]
    with pytest.raises(ValueError, match=r"coordinates 'Coordinates': time .* at row 6 does not increase from row 5"):
        coordinate_trajectory(ARM, MOTION._replace(time=time))
