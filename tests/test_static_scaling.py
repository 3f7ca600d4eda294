"""Scale factors and the static pose fitted to a static marker frame (``fit_static_scale``), the
``MarkerPlacer`` step (``place_markers``) and the ``ScaleTool`` setup reader.

Independent checks: a synthetic static frame made by ``scale_model``/``scale_markers`` of the Gait2354
generic model with known group factors at a known pose (noise free) must give back the factors to
1e-6 relative and the marker errors to 0; placed markers sit on the measurements at the pose
(``marker_positions``); the setup reader's numbers are those of the XML (parsed here by ElementTree).
"""

from __future__ import annotations

import os
import re
import warnings
import xml.etree.ElementTree as ET

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mbjax
import mbjax.models as mm
from mbjax.analysis.identify import fit_static_scale, place_markers, scale_kinematics, scale_markers, scale_model
from mbjax.io import load_marker_set, read_scale_setup
from mbjax.io.storage import MarkerData

jax.config.update("jax_enable_x64", True)
PIPE = mm.pipeline_path("gait2354_walk")
GROUPS = {"pelvis": ("pelvis",), "torso": ("torso",), "femur_r": ("femur_r",), "femur_l": ("femur_l",),
          "shank_r": ("tibia_r", "talus_r"), "shank_l": ("tibia_l", "talus_l"),
          "foot_r": ("calcn_r", "toes_r"), "foot_l": ("calcn_l", "toes_l")}


@pytest.fixture(scope="module")
def generic():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mm.load("gait2354")
    markers, fixed = load_marker_set(f"{PIPE}/gait2354_Scale_MarkerSet.xml", model)
    return model, markers, fixed


def test_read_scale_setup_matches_the_xml():
    st = read_scale_setup(f"{PIPE}/subject01_Setup_Scale.xml")
    root = ET.parse(f"{PIPE}/subject01_Setup_Scale.xml").getroot()
    assert st.mass == float(root.findtext(".//ScaleTool/mass"))
    assert st.scaling_order == ("measurements", "manualScale")
    assert [m.name for m in st.measurements] == [m.get("name") for m in root.iter("Measurement")]
    assert st.measurements[2].pairs == (("R.ASIS", "R.Knee.Lat"), ("L.ASIS", "L.Knee.Lat"))
    assert st.manual == {"femur_r": 1.14724, "femur_l": 1.14724, "tibia_r": 0.988523, "tibia_l": 0.988523}
    tasks = {t.get("name"): float(t.findtext("weight")) for t in root.iter("IKMarkerTask")}
    assert st.marker_weights == tasks
    assert st.coordinate_tasks["lumbar_extension"].value_type == "manual_value"
    assert st.scaler_time_range == (1.0, 2.0) and st.placer_time_range == (1.0, 1.01)
    assert st.placer_marker_file.endswith("subject01_static.trc") and st.preserve_mass_distribution
    # the elements that change no number: carried as given (paths made absolute)
    placer, scaler = root.find(".//MarkerPlacer"), root.find(".//ModelScaler")
    assert st.max_marker_movement == float(placer.findtext("max_marker_movement")) == -1.0
    assert re.fullmatch(r".*subject01_Setup_Scale\.xml:\d+: <max_marker_movement>", st.max_marker_movement_where)
    assert (st.height, st.age) == (float(root.findtext(".//ScaleTool/height")), float(root.findtext(".//ScaleTool/age")))
    assert st.notes == root.findtext(".//ScaleTool/notes").strip()
    for field, el, tag in (("scaler_output_model_file", scaler, "output_model_file"),
                           ("scaler_output_scale_file", scaler, "output_scale_file"),
                           ("placer_output_model_file", placer, "output_model_file"),
                           ("placer_output_motion_file", placer, "output_motion_file")):
        assert getattr(st, field) == os.path.join(PIPE, el.findtext(tag).strip()), field
    assert placer.findtext("output_marker_file").strip() == "Unassigned" and st.placer_output_marker_file is None


def test_max_marker_movement_is_warned_as_opensims_marker_placer_warns():
    """``average_frames`` with the MarkerPlacer's ``max_marker_movement`` (in the file's units, mm
    here): a marker whose X, Y or Z samples span more than it over the averaged frames (a frame where
    it is missing left out), or that is missing in all of them, is named with its span; frames
    outside the range, and a limit <= 0 (OpenSim's -1), change nothing; the average is the same."""
    from mbjax.analysis.identify import average_frames

    t = np.arange(6) / 10.0  # frames 0.1..0.4 s are averaged for (0.1, 0.4)
    x = np.zeros((6, 4, 3))
    x[:, 0, 1] = [9.0, 0.0, 0.2, 0.5, 0.1, 9.0]  # 'still': spans 0.5 mm in the frames averaged
    x[:, 1, 2] = [0.0, 0.0, 1.5, np.nan, -0.7, 0.0]  # 'slides': 2.2 mm, its missing frame left out
    x[:, 2, 0] = [0.0, 0.3, 0.3, 1.0, 0.0, 0.0]  # 'edge': 1.0 mm, not more than the limit
    x[1:5, 3] = np.nan  # 'gone' in every averaged frame
    data = MarkerData(t, ("still", "slides", "edge", "gone"), x * 1e-3, "mm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of 'gone's empty frames
        with pytest.warns(UserWarning) as said:
            avg = average_frames(data, (0.1, 0.4), 1.0, "setup.xml:9: <max_marker_movement>")
        [message] = [str(w.message) for w in said if w.category is UserWarning]
        assert re.match(r"setup\.xml:9: <max_marker_movement>: 1 marker\(s\) move more than <max_marker_movement> 1 mm "
                        r"over the 4 frame\(s\) averaged \(time 0\.1 to 0\.4 s\): 'slides' 2\.2 mm; marker\(s\) 'gone' "
                        r"missing in every one of those frames", message), message
        assert "OpenSim's MarkerPlacer warns so and averages the frames all the same" in message
        for limit in (-1.0, 0.0, None):
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)
                np.testing.assert_array_equal(average_frames(data, (0.1, 0.4), limit), avg)
    np.testing.assert_allclose(avg[:3], [[0, 0.2e-3, 0], [0, 0, 0.8e-3 / 3], [0.4e-3, 0, 0]], atol=1e-15)


def test_max_marker_movement_must_be_finite(tmp_path):
    text = open(f"{PIPE}/subject01_Setup_Scale.xml").read()
    old = "<max_marker_movement>      -1.00000000 </max_marker_movement>"
    line = text[:text.index(old)].count("\n") + 1
    (tmp_path / "s.xml").write_text(text.replace(old, "<max_marker_movement> nan </max_marker_movement>"))
    with pytest.raises(ValueError, match=rf"s\.xml:{line}: <max_marker_movement>: <max_marker_movement> must be a "
                                         r"finite distance in the marker file's units, or -1 for no limit; got 'nan'"):
        read_scale_setup(tmp_path / "s.xml")


def test_scale_kinematics_poses_equal_scale_model(generic):
    model = generic[0]
    f = {"pelvis": 1.1, "femur_r": 0.9, "tibia_l": 1.2, "torso": 1.05}
    q = jnp.asarray(np.random.default_rng(0).uniform(-0.5, 0.5, model.n_coordinates))
    np.testing.assert_array_equal(mbjax.body_poses(scale_kinematics(model, f), q),
                                  mbjax.body_poses(scale_model(model, f, mass=70.0), q))


def test_noise_free_static_frame_gives_back_the_factors(generic):
    model, markers, _ = generic
    truth = {"pelvis": 1.06, "torso": 0.97, "femur_r": 1.12, "femur_l": 1.09, "shank_r": 0.95, "shank_l": 1.03,
             "foot_r": 1.08, "foot_l": 0.93}
    per_body = {b: truth[g] for g, bodies in GROUPS.items() for b in bodies}
    q = np.asarray(model.osim.default, float).copy()
    rng = np.random.default_rng(4)
    names = model.coordinate_names
    for c in names:  # a standing pose; mtp (no marker on the toes) left at 0
        if c != "mtp_angle_r" and c != "mtp_angle_l":
            q[names.index(c)] += rng.uniform(-0.15, 0.15)
    x = np.asarray(mbjax.marker_positions(scale_kinematics(model, per_body), scale_markers(model, markers, per_body),
                                          jnp.asarray(q)))
    data = MarkerData(np.array([0.0, 0.01]), markers.names, np.stack([x, x]))
    weights = {n: (1000.0 if "ASIS" in n or "Knee" in n or "Ankle" in n else 1.0) for n in markers.names}
    res = fit_static_scale(model, markers, data, GROUPS, weights=weights, mass=72.6)
    for g, v in truth.items():
        assert res.groups[g] == pytest.approx(v, rel=1e-6), g
    assert res.rms < 1e-8
    assert float(res.scaled.mass.sum()) == pytest.approx(72.6, rel=1e-14)
    # the MarkerPlacer step: moved markers lie on the measurements at the fitted pose
    moved = place_markers(res.scaled, res.markers, res.q, x + 0.01, markers.names, movable=markers.names[:5])
    at = np.asarray(mbjax.marker_positions(res.scaled, moved, jnp.asarray(res.q)))
    np.testing.assert_allclose(at[:5], x[:5] + 0.01, atol=1e-12)
    np.testing.assert_array_equal(moved.offset[5:], res.markers.offset[5:])


def test_bad_groups_raise(generic):
    model, markers, _ = generic
    data = MarkerData(np.array([0.0]), markers.names, np.zeros((1, len(markers.names), 3)))
    with pytest.raises(ValueError, match="unknown body"):
        fit_static_scale(model, markers, data, {"a": ("femur",)})
    with pytest.raises(ValueError, match="in no group"):
        fit_static_scale(model, markers, data, {"a": ("femur_r",)})
    both = dict(GROUPS, extra=("pelvis",))
    with pytest.raises(ValueError, match="groups"):
        fit_static_scale(model, markers, data, both)
    with pytest.raises(ValueError, match="positive"):
        fit_static_scale(model, markers, data, GROUPS, factors0={"pelvis": 0.0})
