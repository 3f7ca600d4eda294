"""A fifth outside survey's findings on data files: text written in a Windows code page."""

import numpy as np
import pytest

from mbjax.io import read_storage, read_trc, write_storage, write_trc
from mbjax.io.table import Table
from mbjax.io.trc import MarkerData


def test_a_latin1_trc_is_read_with_a_warning_naming_the_line(tmp_path):
    t = np.arange(3) / 100.0
    x = np.arange(18, dtype=float).reshape(3, 2, 3) / 10.0
    path = tmp_path / "lab.trc"
    write_trc(path, MarkerData(t, ("Maker", "RASI"), x, rate=100.0))
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"Maker", "Mäker".encode("latin-1")))  # 0xe4: not UTF-8
    line = raw[:raw.index(b"Maker")].count(b"\n") + 1
    with pytest.warns(UserWarning, match=rf"lab.trc:{line}: the file is not UTF-8 \(byte 0xe4\); read as Latin-1"):
        m = read_trc(path)
    assert m.names == ("Mäker", "RASI")
    np.testing.assert_allclose(m.positions, x, rtol=0, atol=1e-12)  # the numbers as written (mm back to m)


def test_a_latin1_storage_file_is_read_and_utf8_with_a_bom_is_not_warned(tmp_path, recwarn):
    table = Table(np.arange(3) / 10.0, ("hip_flexion", "knee_angle"), np.ones((3, 2)), in_degrees=False)
    path = tmp_path / "m.sto"
    write_storage(path, table)
    utf8 = path.read_bytes()
    (tmp_path / "bom.sto").write_bytes(b"\xef\xbb\xbf" + utf8.replace(b"knee_angle", "knee_angle_é".encode()))
    assert read_storage(tmp_path / "bom.sto").labels == ("hip_flexion", "knee_angle_é")
    assert not [w for w in recwarn if "UTF-8" in str(w.message)]
    (tmp_path / "cp.sto").write_bytes(utf8.replace(b"knee_angle", "knee_angle_é".encode("latin-1")))
    with pytest.warns(UserWarning, match=r"cp.sto:\d+: the file is not UTF-8"):
        assert read_storage(tmp_path / "cp.sto").labels == ("hip_flexion", "knee_angle_é")


def test_two_columns_of_one_coordinate_that_differ_are_warned():
    import warnings

    import mbjax
    from mbjax.io import coordinates_from_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arm = mbjax.models.load("arm26", ignore_wrapping=True)
    t = np.arange(3) / 10.0
    shoulder, elbow = np.full(3, 10.0), np.full(3, 20.0)
    table = Table(t, ("r_shoulder_elev", "r_elbow_flex", "/jointset/r_elbow/r_elbow_flex/value"),
                  np.stack([shoulder, elbow, elbow + 10.0], axis=1), in_degrees=True)
    with pytest.warns(UserWarning, match=r"columns 'r_elbow_flex' and '/jointset/r_elbow/r_elbow_flex/value' both give "
                                         r"coordinate 'r_elbow_flex' and differ \(by up to 10\); the first is used"):
        q = coordinates_from_table(arm, table)
    np.testing.assert_allclose(q[:, 1], np.deg2rad(20.0))
    same = table._replace(data=np.stack([shoulder, elbow, elbow], axis=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # equal columns: nothing to say
        np.testing.assert_allclose(coordinates_from_table(arm, same), q)


def test_force_columns_labelled_out_of_xyz_order_are_warned(tmp_path):
    from mbjax.io import read_external_loads

    labels = ("ground_force_vz", "ground_force_vx", "ground_force_vy", "ground_force_px", "ground_force_py",
              "ground_force_pz")
    write_storage(tmp_path / "grf.mot", Table(np.arange(3) / 100.0, labels, np.ones((3, 6))))
    (tmp_path / "loads.xml").write_text("""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><ExternalLoads name="loads"><objects>
  <ExternalForce name="right"><applied_to_body>calcn_r</applied_to_body>
    <force_expressed_in_body>ground</force_expressed_in_body><point_expressed_in_body>ground</point_expressed_in_body>
    <force_identifier>ground_force_v</force_identifier><point_identifier>ground_force_p</point_identifier>
  </ExternalForce></objects><groups /></ExternalLoads>
  <datafile>grf.mot</datafile></OpenSimDocument>""".replace("</ExternalLoads>\n  <datafile>grf.mot</datafile>",
                                                              "<datafile>grf.mot</datafile></ExternalLoads>"))
    with pytest.warns(UserWarning, match=r"grf.mot: the columns of <force_identifier> 'ground_force_v' are "
                                         r"\['ground_force_vz', 'ground_force_vx', 'ground_force_vy'\], in that order"):
        read_external_loads(tmp_path / "loads.xml")


def test_a_column_path_naming_the_wrong_joint_is_warned():
    import warnings

    import mbjax
    from mbjax.io import coordinates_from_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arm = mbjax.models.load("arm26", ignore_wrapping=True)
    table = Table(np.arange(2) / 10.0, ("/jointset/r_shoulder/r_shoulder_elev/value", "/jointset/r_shoulder/r_elbow_flex/value"),
                  np.full((2, 2), 10.0), in_degrees=True)
    with pytest.warns(UserWarning, match=r"column '/jointset/r_shoulder/r_elbow_flex/value' names joint 'r_shoulder', "
                                         r"but coordinate 'r_elbow_flex' belongs to joint 'r_elbow' in arm26.osim"):
        coordinates_from_table(arm, table)
    right = table._replace(labels=("/jointset/r_shoulder/r_shoulder_elev/value", "/jointset/r_elbow/r_elbow_flex/value"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(coordinates_from_table(arm, right), np.deg2rad(10.0))
