"""The OpenSim example shipped in the wheel, its licence notice, and where the unshipped data are looked for."""

import fnmatch
import os
import pathlib
import tomllib
import warnings

import pytest

import mbjax
from mbjax import _data

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_arm26_is_packaged_with_its_notice():
    path = pathlib.Path(mbjax.models.arm26_path())
    assert path.is_file() and path.parent == ROOT / "mbjax" / "models" / "data"
    text = path.read_text()
    assert '<Model name="arm26">' in text and "Holzbaur" in text
    shared = pathlib.Path(_data.shared_data("osim", "arm26.osim"))
    if shared.is_file():  # byte-identical to the reference copy
        assert shared.read_bytes() == path.read_bytes()
    notice = (path.parent / "NOTICE").read_text()
    assert "Apache License, Version 2.0" in notice and "OpenSim" in notice and "Stanford" in notice
    # pyproject's package-data globs take both files into the wheel
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = conf["tool"]["setuptools"]["package-data"]["mbjax.models"]
    for name in ("data/arm26.osim", "data/NOTICE"):
        assert any(fnmatch.fnmatch(name, g) for g in globs), name


def test_arm26_loader_passes_ignore_wrapping_through():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = mbjax.models.arm26()
    assert model.coordinate_names == ("r_shoulder_elev", "r_elbow_flex")
    assert model.muscle_names == ("TRIlong", "TRIlat", "TRImed", "BIClong", "BICshort", "BRA")
    info = model.osim
    if info.wrapping_ignored:  # straight lines for now: the loader says so
        assert any("wrapping ignored" in str(w.message) for w in caught)
        with pytest.raises(ValueError, match="ignore_wrapping"):
            mbjax.models.arm26(ignore_wrapping=False)


def test_shared_data_has_no_machine_specific_fallback(monkeypatch, tmp_path):
    assert "/work" not in (ROOT / "mbjax" / "_data.py").read_text()
    monkeypatch.setenv("MBJAX_SHARED_DATA", str(tmp_path))
    assert _data.shared_data("osim", "x.osim") == os.path.join(str(tmp_path), "osim", "x.osim")
    from mbjax.models import shoulder

    with pytest.raises(FileNotFoundError, match="MBJAX_SHARED_DATA"):
        shoulder._source(str(tmp_path / "osim" / "none.osim"))


@pytest.mark.parametrize("name", sorted(mbjax.models.EXAMPLES))
def test_shipped_examples_load_by_name_as_their_files_declare(name):
    """``mbjax.models.load(name)``: the packaged file (in the wheel's package data, NOTICE naming it),
    with the coordinates and muscles its XML declares (read here with ElementTree, independently)."""
    import xml.etree.ElementTree as ET

    path = pathlib.Path(mbjax.models.model_path(name))
    assert path.is_file() and path.parent == ROOT / "mbjax" / "models" / "data"
    assert path.name in (path.parent / "NOTICE").read_text()
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(fnmatch.fnmatch(f"data/{path.name}", g) for g in conf["tool"]["setuptools"]["package-data"]["mbjax.models"])
    root = ET.parse(path).getroot()
    coords = {c.get("name") for c in root.iter("Coordinate")}
    muscles = [f.get("name") for fs in root.iter("ForceSet") for objs in fs.iter("objects") for f in objs
               if f.tag.endswith("Muscle")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mbjax.models.load(name)
    info = model.osim
    assert {c for c, _ in info.roles} == coords  # every coordinate of the file, with its role
    assert list(model.coordinate_names) == [c for c, role in info.roles if role == "independent"]
    assert list(model.muscle_names) == muscles


def test_unknown_example_name_lists_the_shipped_ones():
    with pytest.raises(ValueError, match="gait2392"):
        mbjax.models.load("gait9999")
