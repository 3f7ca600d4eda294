"""mbjax's ``.trc`` and ``.mot``/``.sto`` readers vs OpenSim 4.6 reading the same files (marker ``validation``).

* Hand-written ``.trc`` variants (tests/_data_file_variants.py): OpenSim's ``TRCFileAdapter`` reads
  the ones mbjax reads, to the same values and NaNs; it refuses the ones mbjax refuses, except the
  listed ones it reads by turning bad text into NaN or dropping rows after an empty line.
* Every ``.trc`` under opensim-models/Pipelines (with ``OPENSIM_MODELS_DIR``): every value equal
  to OpenSim's after the unit conversion.
* ``.mot``/``.sto`` whitespace variants: OpenSim's ``Storage`` gives the same labels and values.
* ``inDegrees`` values: the ones mbjax reads give ``Storage::isInDegrees``; the rest are refused,
  the message saying how OpenSim would read the file.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _data_file_variants import MBJAX_ONLY, OPENSIM_READS_REFUSED, READS, REFUSED, STORAGE  # noqa: E402

from mbjax.io import read_storage, read_trc  # noqa: E402

OPENSIM_MODELS = os.environ.get("OPENSIM_MODELS_DIR", "")


def _opensim_trc(path):
    """OpenSim's TimeSeriesTableVec3 of a .trc: times, labels, values (T, nm, 3) in file units."""
    t = osim.TimeSeriesTableVec3(str(path))
    vals = np.array([[[t.getRowAtIndex(r)[c][k] for k in range(3)] for c in range(t.getNumColumns())]
                     for r in range(t.getNumRows())])
    units = t.getTableMetaDataString("Units")
    return np.array(t.getIndependentColumn()), tuple(t.getColumnLabels()), vals, units


@pytest.mark.parametrize("name", sorted(READS))
def test_trc_variants_read_as_opensim_reads_them(tmp_path, name):
    p = tmp_path / f"{name}.trc"
    p.write_bytes(READS[name][0].encode())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = read_trc(p)
    if name in MBJAX_ONLY:
        with pytest.raises(Exception):
            _opensim_trc(p)
        return
    time, names, vals, units = _opensim_trc(p)
    scale = osim.Units(units).convertTo(osim.Units(osim.Units.Meters))
    assert d.names == names
    np.testing.assert_array_equal(d.time, time)
    np.testing.assert_array_equal(np.isnan(d.positions), np.isnan(vals))
    np.testing.assert_allclose(d.positions, vals * scale, rtol=1e-15)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_trc_variants_refused_as_opensim_refuses_them(tmp_path, name):
    p = tmp_path / f"{name}.trc"
    p.write_text(REFUSED[name][0])
    with pytest.raises(ValueError):
        read_trc(p)
    if name in OPENSIM_READS_REFUSED:
        _, _, vals, units = _opensim_trc(p)  # read silently with NaN / truncated; mbjax names the line
        if name == "unknown_units":
            assert np.isnan(osim.Units(units).convertTo(osim.Units(osim.Units.Meters)))
        elif name == "rows_after_empty_line":
            assert vals.shape[0] == 1
        else:
            assert np.isnan(vals).any() or name == "empty_time"
    else:
        with pytest.raises(Exception):
            _opensim_trc(p)


@pytest.mark.skipif(not (OPENSIM_MODELS and os.path.isdir(os.path.join(OPENSIM_MODELS, "Pipelines"))),
                    reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")
def test_every_pipeline_trc_matches_opensim():
    files = sorted(glob.glob(os.path.join(OPENSIM_MODELS, "Pipelines", "**", "*.trc"), recursive=True))
    assert len(files) >= 10
    for f in files:
        d = read_trc(f)
        time, names, vals, units = _opensim_trc(f)
        scale = osim.Units(units).convertTo(osim.Units(osim.Units.Meters))
        assert d.names == names, f
        np.testing.assert_array_equal(d.time, time, err_msg=f)
        np.testing.assert_array_equal(np.isnan(d.positions), np.isnan(vals), err_msg=f)
        np.testing.assert_allclose(d.positions, vals * scale, rtol=1e-15, err_msg=f)


@pytest.mark.parametrize("name", sorted(STORAGE))
def test_storage_variants_read_as_opensim_reads_them(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(STORAGE[name][0].encode())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = read_storage(p)
    st = osim.Storage(str(p))
    labels = st.getColumnLabels()
    assert ("time",) + t.labels == tuple(labels.get(i) for i in range(labels.getSize()))
    time = osim.ArrayDouble()
    st.getTimeColumn(time)
    np.testing.assert_array_equal(t.time, [time.get(i) for i in range(time.getSize())])
    data = []
    for r in range(st.getSize()):
        v = st.getStateVector(r).getData()
        data.append([v.get(i) for i in range(v.getSize())])
    np.testing.assert_array_equal(t.data, np.array(data))


def test_opensim_refuses_legacy_prescribed_force_loads(tmp_path):
    """mbjax refuses an ExternalLoads of PrescribedForce objects (tests/test_id_tool.py); OpenSim 4.6
    refuses it too, so there is nothing to match."""
    from _data_file_variants import LEGACY_LOADS

    from mbjax.io import read_external_loads

    p = tmp_path / "legacy.xml"
    p.write_text(LEGACY_LOADS)
    with pytest.raises(ValueError, match="PrescribedForce"):
        read_external_loads(p)
    with pytest.raises(Exception, match="PrescribedForce"):
        osim.ExternalLoads(str(p), True)
    if OPENSIM_MODELS:
        # in a process of its own: the file's <defaults> (Thelen2003Muscle's among them) change OpenSim's
        # default objects for the rest of the process, and so every later OpenSim model's muscles
        real = os.path.join(OPENSIM_MODELS, "Pipelines", "Gait2392_Simbody", "foot_floor_loads.xml")
        code = ("import sys, opensim\ntry:\n    opensim.ExternalLoads(sys.argv[1], True)\nexcept Exception as e:\n"
                "    print(e)\n    sys.exit(3)\n")
        run = subprocess.run([sys.executable, "-c", code, real], capture_output=True, text=True, timeout=300)
        assert run.returncode == 3 and "PrescribedForce" in run.stdout + run.stderr, run.stdout + run.stderr


@pytest.mark.parametrize("version", [1, 3])
@pytest.mark.parametrize("value", ["yes", "Yes", "YES", " yes ", "no", "NO", "y", "true", "True", "false", "1", "on"])
def test_indegrees_read_as_opensim_reads_it_or_refused(tmp_path, version, value):
    """mbjax's ``in_degrees`` equals OpenSim's ``Storage::isInDegrees`` for every value it reads;
    every other value (``true`` included, which OpenSim reads as radians) is refused by name."""
    head = (f"t\nversion=1\nnRows=2\nnColumns=2\ninDegrees={value}\nendheader\n" if version == 1 else
            f"inDegrees={value}\nDataType=double\nversion=3\nOpenSimVersion=4.6\nendheader\n")
    p = tmp_path / "deg.mot"
    p.write_text(head + "time\ta\n0\t1\n0.1\t2\n")
    degrees = osim.Storage(str(p)).isInDegrees()
    if value.strip().lower() in ("yes", "no"):
        assert read_storage(p).in_degrees is degrees
    else:
        reads = "degrees" if degrees else "radians"
        with pytest.raises(ValueError, match=rf"deg\.mot:\d: inDegrees=.*OpenSim 4\.6 would read this file as {reads}"):
            read_storage(p)
