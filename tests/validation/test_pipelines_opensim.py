"""The IK and ID setups of opensim-models' example pipelines: ``mbjax ik|id SETUP.xml`` vs OpenSim 4.6.

``OPENSIM_MODELS_DIR`` is a checkout of opensim-org/opensim-models.  Each setup is copied into
``tmp_path`` as the pipeline wrote it except: file paths made absolute (against the setup's
folder), a short ``time_range``, results into ``tmp_path``, and the input files the repository
lacks (the outputs of an earlier pipeline step) replaced as listed below.  OpenSim's tool runs the
copy (``osim.InverseKinematicsTool(setup).run()`` / ``osim.InverseDynamicsTool(setup).run()``)
and mbjax's CLI runs the same copy with ``results`` in another folder.

IK setups (every one OpenSim 4.6 runs):

* Gait10dof18musc ``OutputReference/IK/walk_Setup_IK.xml`` (``IK/walk_Setup_IK.xml`` is the same
  file; its ``../subject01.osim`` is only in ``OutputReference/``);
* Gait2354 and Gait2392 ``subject01_Setup_IK.xml`` (coordinate tasks; ``subject01_simbody.osim``,
  the scale step's output, from ``OutputReference/``);
* Hamner ``Setup_IK.xml`` (``subject01_registered.osim`` is not in the repository:
  ``outputReference/subject02_registered.osim``);
* Leg39 ``leg39_swing_IK_Setup.xml`` and ``leg39_swing_short_IK_Setup.xml`` (``Models/Leg39``;
  couplers with ``constraint_weight`` 20);
* Rajagopal ``IK/ik_setup_run.xml`` and ``ik_setup_walk.xml`` (the scaled models are not in the
  repository: ``Models/Rajagopal/Rajagopal2016.osim``; for the walk, whose markers the generic
  model does not have (OpenSim: "Marker data does not correspond to any model markers"), with the
  pipeline's own ``Scale/markerset_walk_preScale.xml`` as its MarkerSet).

Checked: mbjax's file has OpenSim's columns in OpenSim's order; the IK objective of both files
(:class:`_Objective`: OpenSim's model set to each file's coordinates, OpenSim's marker positions,
the setup's IKTaskSet weights as OpenSim reads them) is no larger for mbjax at every frame; the
evaluator's unweighted squared error at OpenSim's pose equals the ``total_squared_error`` OpenSim
reports.

ID setups: Gait10dof18musc ``OutputReference/ID/walk_Setup_ID.xml`` (``ID/walk_Setup_ID.xml`` is
the same file), Gait2354 and Gait2392 ``subject01_Setup_InverseDynamics.xml``.  Written here in
OpenSim's conventions (:data:`ID_SETUP`, as those pipelines' ID setups: muscles excluded, 6 Hz
coordinate filter) where the pipeline has none: Hamner (the pipeline's
``outputReference/ResultsIK`` motion and ``External_Loads.xml``) and Leg39 (mbjax's IK of the
swing, whose coupled columns meet the couplers; no external loads).  Rajagopal's
``ID/id_setup_run.xml`` reads RRA outputs the repository lacks: it is run with
``Rajagopal2016.osim`` and OpenSim's IK of the running trial (its ``grf_run.xml``, cut-off and
excluded forces kept).

Checked: every column mbjax writes is one of OpenSim's, within 1e-6 of the range of OpenSim's
column; OpenSim's other columns are locked or coupled coordinates (mbjax reports independent
coordinates only).  On models with couplers OpenSim splines (and filters) each coupled column of
the file on its own and reports residuals ignoring the constraints; mbjax uses the couplers'
functions of its independent coordinates and folds the dependent residuals into them (virtual
work).  For an independent coordinate of a coupler, mbjax's column is compared with OpenSim's
folded by the couplers' derivatives (OpenSim's functions).  Where OpenSim's own filtered
kinematics break a coupler (Leg39: its spline couplers, each column filtered at 6 Hz; measured
with OpenSim's ``Storage`` filter and coupler functions) every column moves with it, and only a
gross bound (0.1 of the range) is checked.  Rajagopal2016 is an expected failure: its knee's
velocity-dependent terms differ from OpenSim's (its couplers are linear, met to rounding).
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.validation
osim = pytest.importorskip("opensim", reason="the validation group needs `pip install opensim` (4.6)")

import mbjax  # noqa: E402
from mbjax import cli  # noqa: E402
from mbjax.io import read_storage  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _osim_models import OPENSIM_MODELS  # noqa: E402

PIPELINES = os.path.join(OPENSIM_MODELS, "Pipelines") if OPENSIM_MODELS else ""
MODELS = os.path.join(OPENSIM_MODELS, "Models") if OPENSIM_MODELS else ""
needs_library = pytest.mark.skipif(not os.path.isdir(PIPELINES),
                                   reason="set OPENSIM_MODELS_DIR to a checkout of opensim-org/opensim-models")

FILE_TAGS = ("model_file", "marker_file", "coordinate_file", "coordinates_file", "external_loads_file")
TOOLS = r"(<(?:InverseKinematicsTool|InverseDynamicsTool)\b[^>]*>)"


def _set(text, tag, value):
    """``<tag>value</tag>`` in place of the element, or first in the tool when it is absent."""
    pat = re.compile(rf"<{tag}>[^<]*</{tag}>|<{tag}\s*/>")
    new = f"<{tag}>{value}</{tag}>"
    if pat.search(text):
        return pat.sub(lambda _: new, text, count=1)
    return re.sub(TOOLS, lambda m: m.group(1) + new, text, count=1)


def _rewrite(setup, dst, time_range, outputs, substitute=None):
    """``setup`` copied to ``dst``: input paths absolute, ``substitute`` (tag -> path) for inputs the
    repository lacks (asserted missing), ``time_range`` and ``outputs`` (tag -> value) set."""
    text = open(setup).read()
    base = os.path.dirname(setup)
    substitute = dict(substitute or {})
    for tag in FILE_TAGS:
        m = re.search(rf"<{tag}>([^<]*)</{tag}>", text)
        value = m.group(1).strip() if m else ""
        if not value or value == "Unassigned":
            assert tag not in substitute, tag
            continue
        path = os.path.normpath(os.path.join(base, value))
        if tag in substitute:
            assert not os.path.exists(path), f"{setup}: <{tag}> {path} exists; no substitute needed"
            path = substitute.pop(tag)
        assert os.path.exists(path), f"{setup}: <{tag}> {path}"
        text = _set(text, tag, path)
    assert not substitute, substitute
    text = _set(text, "time_range", f"{time_range[0]!r} {time_range[1]!r}")
    for tag, value in outputs.items():
        text = _set(text, tag, value)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst, "w") as fh:
        fh.write(text)
    return str(dst)


def _cli(*args):
    rc = cli.main([*map(str, args), "--quiet", "--no-compile-cache"])
    assert rc == 0, args


class _FullPrecision:
    """OpenSim writes its files with 17 significant digits inside (default: 8 decimals)."""

    def __enter__(self):
        osim.IO.SetPrecision(17)
        osim.IO.SetScientific(True)

    def __exit__(self, *exc):
        osim.IO.SetPrecision(8)
        osim.IO.SetScientific(False)


# --------------------------------------------------------------------------------------------
# IK
# --------------------------------------------------------------------------------------------


def _walk_marker_model(dst):
    """Rajagopal2016.osim with the walking pipeline's pre-scale MarkerSet (a 3.x file: ``<body>``
    written as OpenSim 4's ``socket_parent_frame``)."""
    model = open(os.path.join(MODELS, "Rajagopal", "Rajagopal2016.osim")).read()
    markers = open(os.path.join(PIPELINES, "Rajagopal", "Scale", "markerset_walk_preScale.xml")).read()
    markers = re.search(r"<MarkerSet\b.*</MarkerSet>", markers, re.S).group(0)
    markers = re.sub(r"<body>\s*(\S+)\s*</body>", r"<socket_parent_frame>/bodyset/\1</socket_parent_frame>", markers)
    model, n = re.subn(r"<MarkerSet\b.*?</MarkerSet>", lambda _: markers, model, count=1, flags=re.S)
    assert n == 1
    with open(dst, "w") as fh:
        fh.write(model)
    return str(dst)


def _ik_cases():
    g10 = os.path.join(PIPELINES, "Gait10dof18musc", "OutputReference")
    raj = os.path.join(MODELS, "Rajagopal", "Rajagopal2016.osim")
    return [
        pytest.param(os.path.join(g10, "IK", "walk_Setup_IK.xml"), (0.6, 0.7), {}, id="Gait10dof18musc"),
        pytest.param(os.path.join(PIPELINES, "Gait2354_Simbody", "subject01_Setup_IK.xml"), (0.6, 0.7),
                     {"model_file": os.path.join(PIPELINES, "Gait2354_Simbody", "OutputReference",
                                                 "subject01_simbody.osim")}, id="Gait2354"),
        pytest.param(os.path.join(PIPELINES, "Gait2392_Simbody", "subject01_Setup_IK.xml"), (0.6, 0.7),
                     {"model_file": os.path.join(PIPELINES, "Gait2392_Simbody", "OutputReference",
                                                 "subject01_simbody.osim")}, id="Gait2392"),
        pytest.param(os.path.join(PIPELINES, "Hamner", "Setup_IK.xml"), (0.6, 0.64),
                     {"model_file": os.path.join(PIPELINES, "Hamner", "outputReference", "subject02_registered.osim")},
                     id="Hamner"),
        pytest.param(os.path.join(PIPELINES, "Leg39", "leg39_swing_IK_Setup.xml"), (0.0, 0.2),
                     {"model_file": os.path.join(MODELS, "Leg39", "leg39.osim")}, id="Leg39-swing"),
        pytest.param(os.path.join(PIPELINES, "Leg39", "leg39_swing_short_IK_Setup.xml"), (0.0, 0.2),
                     {"model_file": os.path.join(MODELS, "Leg39", "leg39.osim")}, id="Leg39-swing-short"),
        pytest.param(os.path.join(PIPELINES, "Rajagopal", "IK", "ik_setup_run.xml"), (0.5, 0.52),
                     {"model_file": raj}, id="Rajagopal-run"),
        pytest.param(os.path.join(PIPELINES, "Rajagopal", "IK", "ik_setup_walk.xml"), (0.5, 0.52),
                     {"model_file": "walk-markers"}, id="Rajagopal-walk"),
    ]


class _Objective:
    """OpenSim's IK objective of a motion file, evaluated with OpenSim: the model set to each row's
    coordinates (``Coordinate::setValue``, no assembly), markers from ``getLocationInGround``, data
    from ``TimeSeriesTableVec3`` (its units), weights from the IKTaskSet as OpenSim reads it:
    ``Σ w_m |e_m|² / Σ w_m`` over the tracked markers present, plus ``Σ w_c (q_c - ref_c)²``."""

    def __init__(self, model_file, setup):
        self.model = osim.Model(model_file)
        self.state = self.model.initSystem()
        tool = osim.InverseKinematicsTool(setup, False)
        tasks = tool.getIKTaskSet()
        names = {self.model.getMarkerSet().get(i).getName() for i in range(self.model.getMarkerSet().getSize())}
        table = osim.TimeSeriesTableVec3(tool.getMarkerDataFileName())
        units = table.getTableMetaDataAsString("Units").strip().lower()
        scale = {"mm": 1e-3, "m": 1.0, "cm": 1e-2}[units]
        labels = list(table.getColumnLabels())
        self.times = np.array(table.getIndependentColumn())
        self.marker_w, self.coord_w = {}, {}
        for i in range(tasks.getSize()):
            task = tasks.get(i)
            if not task.getApply():
                continue
            if task.getConcreteClassName() == "IKMarkerTask":
                if task.getName() in names and task.getName() in labels:
                    self.marker_w[task.getName()] = task.getWeight()
            else:
                ct = osim.IKCoordinateTask.safeDownCast(task)
                coord = self.model.getCoordinateSet().get(ct.getName())
                kind = ct.getValueType()
                assert kind in (osim.IKCoordinateTask.DefaultValue, osim.IKCoordinateTask.ManualValue), kind
                ref = coord.getDefaultValue() if kind == osim.IKCoordinateTask.DefaultValue else ct.getValue()
                self.coord_w[ct.getName()] = (task.getWeight(), ref)
        cols = [labels.index(n) for n in self.marker_w]
        mat = table.getMatrix()
        self.data = np.array([[[mat.getElt(r, c)[k] * scale for k in range(3)] for c in cols]
                              for r in range(table.getNumRows())])
        self.w = np.array(list(self.marker_w.values()))

    def __call__(self, motion_file):
        """Per row of ``motion_file``: (objective, unweighted squared marker error)."""
        st = osim.Storage(str(motion_file))
        self.model.getSimbodyEngine().convertDegreesToRadians(st)
        labels = st.getColumnLabels()
        labels = [labels.get(i) for i in range(1, labels.getSize())]
        cs, ms = self.model.getCoordinateSet(), self.model.getMarkerSet()
        obj, sq = [], []
        for k in range(st.getSize()):
            row = st.getStateVector(k)
            vals = row.getData()
            for j, n in enumerate(labels):
                cs.get(n).setValue(self.state, vals.get(j), False)
            self.model.realizePosition(self.state)
            pos = np.array([[ms.get(n).getLocationInGround(self.state)[i] for i in range(3)] for n in self.marker_w])
            r = int(np.argmin(np.abs(self.times - row.getTime())))
            assert abs(self.times[r] - row.getTime()) < 1e-6
            x = self.data[r]
            present = np.all(np.isfinite(x), axis=1)
            e2 = np.where(present, np.sum((pos - np.where(present[:, None], x, 0.0)) ** 2, axis=1), 0.0)
            w = np.where(present, self.w, 0.0)
            value = float(w @ e2 / w.sum())
            for n, (wc, ref) in self.coord_w.items():
                value += wc * (cs.get(n).getValue(self.state) - ref) ** 2
            obj.append(value)
            sq.append(float(e2[w > 0].sum()))
        return np.array(obj), np.array(sq)


@needs_library
@pytest.mark.parametrize("setup, time_range, substitute", _ik_cases())
def test_ik_setup_equals_opensim(setup, time_range, substitute, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if substitute.get("model_file") == "walk-markers":
        substitute = {"model_file": _walk_marker_model(tmp_path / "rajagopal_walk_markers.osim")}
    name = os.path.basename(setup)
    theirs = _rewrite(setup, tmp_path / "opensim" / name, time_range,
                      {"results_directory": tmp_path / "opensim", "output_motion_file": tmp_path / "opensim" / "ik.mot"},
                      substitute)
    ours = _rewrite(setup, tmp_path / "mbjax" / name, time_range,
                    {"results_directory": tmp_path / "mbjax", "output_motion_file": tmp_path / "mbjax" / "ik.mot"},
                    substitute)
    with _FullPrecision():
        tool = osim.InverseKinematicsTool(theirs)
        assert tool.run()
    errors = read_storage(tmp_path / "opensim" / f"{tool.getName()}_ik_marker_errors.sto")
    _cli("ik", ours)
    mine, os_mot = read_storage(tmp_path / "mbjax" / "ik.mot"), read_storage(tmp_path / "opensim" / "ik.mot")
    assert mine.labels == os_mot.labels and mine.in_degrees == os_mot.in_degrees
    np.testing.assert_allclose(mine.time, os_mot.time, rtol=0, atol=1e-12)
    objective = _Objective(os.path.join(tmp_path, re.search(r"<model_file>([^<]*)<", open(theirs).read()).group(1)),
                           theirs)
    f_os, sq_os = objective(tmp_path / "opensim" / "ik.mot")
    f_mb, _ = objective(tmp_path / "mbjax" / "ik.mot")
    ratio = f_mb / f_os
    print(f"\n{name}: {mine.time.size} frames, {len(objective.marker_w)} markers, "
          f"{len(objective.coord_w)} coordinate tasks; objective mbjax / OpenSim per frame "
          f"{np.array2string(ratio, precision=6)} (max {ratio.max():.8f}); OpenSim's reported squared error "
          f"vs the evaluator's: max |Δ| {np.abs(sq_os - errors.column('total_squared_error')).max():.1e}")
    np.testing.assert_allclose(sq_os, errors.column("total_squared_error"), rtol=1e-9, atol=1e-14)
    assert np.all(f_mb <= f_os * (1 + 1e-9)), ratio


# --------------------------------------------------------------------------------------------
# ID
# --------------------------------------------------------------------------------------------

#: an ID setup in OpenSim's conventions, as the pipelines' own (muscles excluded, 6 Hz filter)
ID_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
  <InverseDynamicsTool name="{name}">
    <results_directory>Results</results_directory>
    <model_file>{model}</model_file>
    <time_range> 0 1</time_range>
    <forces_to_exclude> Muscles</forces_to_exclude>
    <external_loads_file>{loads}</external_loads_file>
    <coordinates_file>{coordinates}</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
    <output_gen_force_file>{name}_ID.sto</output_gen_force_file>
  </InverseDynamicsTool>
</OpenSimDocument>
"""


def _pipeline_ik(setup, tmp_path, time_range, model_file, tool="opensim"):
    """The IK of a pipeline setup over ``time_range`` by OpenSim or mbjax's CLI (the coordinates of
    an ID setup)."""
    out = tmp_path / "ik"
    copy = _rewrite(setup, out / os.path.basename(setup), time_range,
                    {"results_directory": out, "output_motion_file": out / "ik.mot"}, {"model_file": model_file})
    if tool == "opensim":
        assert osim.InverseKinematicsTool(copy).run()
    else:
        _cli("ik", copy)
    return str(out / "ik.mot")


def _id_case(case, tmp_path):
    """(setup, time range, substitutes) of an ID case; written setups go into ``tmp_path/written``."""
    g10 = os.path.join(PIPELINES, "Gait10dof18musc", "OutputReference")
    if case == "Gait10dof18musc":
        return os.path.join(g10, "ID", "walk_Setup_ID.xml"), (0.6, 0.7), {}
    if case in ("Gait2354", "Gait2392"):
        root = os.path.join(PIPELINES, f"{case}_Simbody")
        return (os.path.join(root, "subject01_Setup_InverseDynamics.xml"), (0.6, 0.7),
                {"model_file": os.path.join(root, "OutputReference", "subject01_simbody.osim")})
    written = tmp_path / "written"
    written.mkdir()
    if case == "Hamner":
        root = os.path.join(PIPELINES, "Hamner")
        text = ID_SETUP.format(name="hamner", model=os.path.join(root, "outputReference", "subject02_registered.osim"),
                               loads=os.path.join(root, "External_Loads.xml"),
                               coordinates=os.path.join(root, "outputReference", "ResultsIK", "subject02_running_ik.mot"))
        time_range, sub = (0.6, 0.64), {}
    elif case == "Leg39":
        model = os.path.join(MODELS, "Leg39", "leg39.osim")
        coords = _pipeline_ik(os.path.join(PIPELINES, "Leg39", "leg39_swing_IK_Setup.xml"), tmp_path, (0.0, 1.0), model,
                              "mbjax")
        text = ID_SETUP.format(name="leg39", model=model, loads="Unassigned", coordinates=coords)
        time_range, sub = (0.1, 0.3), {}
    else:  # Rajagopal: the pipeline's running ID setup, its RRA inputs replaced
        model = os.path.join(MODELS, "Rajagopal", "Rajagopal2016.osim")
        coords = _pipeline_ik(os.path.join(PIPELINES, "Rajagopal", "IK", "ik_setup_run.xml"), tmp_path, (0.5, 0.6),
                             model)
        return (os.path.join(PIPELINES, "Rajagopal", "ID", "id_setup_run.xml"), (0.53, 0.57),
                {"model_file": model, "coordinates_file": coords})
    path = written / f"{case}_Setup_ID.xml"
    path.write_text(text)
    return str(path), time_range, sub


class _Couplers:
    """A model's coordinates as OpenSim sees them: locked ones, and its CoordinateCouplerConstraints
    (dependent = scale · f(independent), OpenSim's function objects)."""

    def __init__(self, model_file):
        self.model = osim.Model(model_file)
        self.model.initSystem()
        cs = self.model.getCoordinateSet()
        self.locked = {cs.get(i).getName() for i in range(cs.getSize()) if cs.get(i).getDefaultLocked()}
        self.couplers = []  # (dependent, independent, function, scale)
        for c in self.model.getConstraintSet():
            ccc = osim.CoordinateCouplerConstraint.safeDownCast(c)
            if ccc is None:
                continue
            ind = ccc.getIndependentCoordinateNames()
            assert ind.getSize() == 1, ccc.getName()
            self.couplers.append((ccc.getDependentCoordinateName(), ind.get(0), ccc.getFunction(),
                                  float(ccc.getPropertyByName("scale_factor").toString())))
        self.dependent = {d for d, *_ in self.couplers}
        self.independent = {i for _, i, *_ in self.couplers}
        assert not self.dependent & self.independent

    def value(self, k, x):
        _, _, f, scale = self.couplers[k]
        return scale * f.calcValue(osim.Vector(1, float(x)))

    def slope(self, k, x):
        _, _, f, scale = self.couplers[k]
        return scale * f.calcDerivative(osim.StdVectorInt([0]), osim.Vector(1, float(x)))

    def kinematics(self, coordinates_file, cutoff, times):
        """The coordinates OpenSim's ID tool splines (``Storage``: padded and ``lowpassIIR`` filtered
        when ``cutoff > 0``, radians) at the rows of ``times``: {name: (T,)}."""
        st = osim.Storage(str(coordinates_file))
        if cutoff > 0:
            st.pad(st.getSize() // 2)
            st.lowpassIIR(cutoff)
        self.model.getSimbodyEngine().convertDegreesToRadians(st)
        t = osim.ArrayDouble()
        st.getTimeColumn(t)
        t = np.array([t.get(i) for i in range(t.getSize())])
        rows = [int(np.argmin(np.abs(t - s))) for s in times]
        assert np.abs(t[rows] - times).max() < 1e-9
        labels = st.getColumnLabels()
        out = {}
        for j in range(1, labels.getSize()):
            out[labels.get(j)] = np.array([st.getStateVector(r).getData().get(j - 1) for r in rows])
        return out


ID_CASES = ["Gait10dof18musc", "Gait2354", "Gait2392", "Hamner", "Leg39",
            pytest.param("Rajagopal", marks=pytest.mark.xfail(
                strict=True, reason="OpenSim's velocity-dependent generalized forces of Rajagopal2016's walker knee "
                                    "are not the Lagrangian of its own mass matrix, mbjax's are "
                                    "(test_rajagopal_knee_velocity_terms_are_lagrangian_in_mbjax_not_in_opensim)"))]


@needs_library
@pytest.mark.parametrize("case", ID_CASES)
def test_id_setup_equals_opensim(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    setup, time_range, substitute = _id_case(case, tmp_path)
    name = os.path.basename(setup)
    theirs = _rewrite(setup, tmp_path / "opensim" / name, time_range, {"results_directory": tmp_path / "opensim"},
                      substitute)
    ours = _rewrite(setup, tmp_path / "mbjax" / name, time_range, {"results_directory": tmp_path / "mbjax"},
                    substitute)
    with _FullPrecision():
        tool = osim.InverseDynamicsTool(theirs)
        assert tool.run()
    out = os.path.basename(tool.getOutputGenForceFileName())
    os_id = read_storage(tmp_path / "opensim" / out)
    _cli("id", ours)
    mb_id = read_storage(tmp_path / "mbjax" / out)
    np.testing.assert_allclose(mb_id.time, os_id.time, rtol=0, atol=1e-12)
    assert os_id.time.size >= 3
    text = open(theirs).read()
    coords = _Couplers(re.search(r"<model_file>([^<]*)<", text).group(1))

    def coordinate(label):
        return label.rsplit("_", 1)[0]

    extra = [lab for lab in os_id.labels if lab not in mb_id.labels]
    assert set(mb_id.labels) <= set(os_id.labels), sorted(set(mb_id.labels) - set(os_id.labels))
    assert {coordinate(lab) for lab in extra} <= coords.locked | coords.dependent, extra
    plain, folded = [], []
    for lab in mb_id.labels:
        ref = os_id.column(lab)
        scale = max(np.ptp(ref), 1e-3)
        c = coordinate(lab)
        if c in coords.independent:
            cutoff = float(re.search(r"<lowpass_cutoff_frequency_for_coordinates>([^<]*)<", text).group(1))
            q = coords.kinematics(re.search(r"<coordinates_file>([^<]*)<", text).group(1).strip(), cutoff,
                                  os_id.time)
            ref = ref.copy()
            violation = 0.0
            for k, (dep, ind, *_) in enumerate(coords.couplers):
                if ind != c:
                    continue
                dlab = next(lab for lab in os_id.labels if coordinate(lab) == dep)
                ref += os_id.column(dlab) * np.array([coords.slope(k, x) for x in q[ind]])
                violation = max(violation, np.abs(q[dep] - [coords.value(k, x) for x in q[ind]]).max())
            folded.append((lab, np.abs(mb_id.column(lab) - ref).max() / scale, violation))
        else:
            plain.append((lab, np.abs(mb_id.column(lab) - ref).max() / scale))
    worst = max(plain, key=lambda p: p[1])
    print(f"\n{case} {name}: {os_id.time.size} frames, {len(mb_id.labels)} columns ({len(extra)} of OpenSim's "
          f"locked or coupled: {extra}); max |Δ| / range {worst[1]:.1e} ({worst[0]})"
          + "".join(f"; folded {lab}: {d:.1e} (OpenSim's coupler violation {v:.1e})" for lab, d, v in folded))
    violation = max((v for *_, v in folded), default=0.0)
    if violation > 1e-6:  # OpenSim's kinematics break the couplers: every column moves with them
        assert max(worst[1], *(d for _, d, _ in folded)) <= 0.1, (plain, folded)
    else:
        assert worst[1] <= 1e-6, plain
        assert all(d <= 1e-6 for _, d, _ in folded), folded


def _opensim_velocity_terms(model_file, pose, knee, speed=3.0, h=1e-6):
    """OpenSim's velocity term c(q, u) (its InverseDynamicsSolver at zero accelerations, gravity and
    forces off) with only ``knee`` moving, and the Lagrangian of its own mass matrix M(q) (calcM,
    central differences): c_i = (∂M_ik/∂q_k − ½ ∂M_kk/∂q_i) u_k²."""
    from _opensim_tools import OpenSimDynamics

    m = osim.Model(model_file)
    m.setGravity(osim.Vec3(0, 0, 0))
    s = m.initSystem()
    fs = m.getForceSet()
    for i in range(fs.getSize()):
        fs.get(i).setAppliesForce(s, False)
    cs = m.getCoordinateSet()
    for name, value in pose.items():
        cs.get(name).setValue(s, value, False)
    n = s.getNU()
    q = np.array([s.getQ().get(i) for i in range(n)])
    cs.get(knee).setSpeedValue(s, speed)
    u = np.array([s.getU().get(i) for i in range(n)])
    k = int(np.argmax(np.abs(u)))
    dynamics = OpenSimDynamics(m, s)
    c = dynamics.velocity_terms(q, u)
    dM = dynamics.mass_derivatives(q, h)
    return c, (dM[k][:, k] - 0.5 * dM[:, k, k]) * u[k] ** 2


@needs_library
def test_rajagopal_knee_velocity_terms_are_lagrangian_in_mbjax_not_in_opensim():
    """Where mbjax's and OpenSim's inverse dynamics of Rajagopal2016 part (the expected failure
    above): with only one knee moving, OpenSim's velocity term misses the Lagrangian of its own
    mass matrix by far more than the differences' error, for either knee (by an amount that depends
    on the knee angle: the walker knee's rotation2 and rotation3 both follow it, the case
    test_id_opensim.py::test_custom_joint_velocity_terms_are_lagrangian_in_mbjax shows on generated
    joints), while mbjax's equals the Lagrangian of mbjax's (autodiff) to rounding."""
    import jax
    import jax.numpy as jnp

    model_file = os.path.join(OPENSIM_MODELS, "Models", "Rajagopal", "Rajagopal2016.osim")
    pose = {"knee_angle_r": 1.2, "knee_angle_l": 0.5, "hip_flexion_r": 0.3}
    gaps = {}
    for knee in ("knee_angle_r", "knee_angle_l"):
        c, lag = _opensim_velocity_terms(model_file, pose, knee)
        gaps[knee] = np.abs(c - lag).max() / np.abs(lag).max()
    print(f"OpenSim: |c - Lagrangian of its M| / |c|: right knee {gaps['knee_angle_r']:.1e}, left {gaps['knee_angle_l']:.1e}")
    assert gaps["knee_angle_r"] > 1e-3 and gaps["knee_angle_l"] > 3e-3

    model = mbjax.io.load_osim(model_file)
    model = model.replace(muscles=None, forces=None, path_functions=None, osim=None)
    names = list(model.coordinate_names)
    q = np.array(mbjax.io.load_osim(model_file).osim.default, float)
    for name, value in pose.items():
        q[names.index(name)] = value
    zero = np.zeros_like(q)
    dM = jax.jacfwd(lambda x: mbjax.mass_matrix(model, x))(jnp.asarray(q))
    for knee in ("knee_angle_r", "knee_angle_l"):
        qd = zero.copy()
        qd[names.index(knee)] = 3.0
        c = np.asarray(mbjax.inverse_dynamics(model, q, qd, zero) - mbjax.inverse_dynamics(model, q, zero, zero))
        lag = np.asarray(jnp.einsum("ijk,j,k->i", dM, qd, qd) - 0.5 * jnp.einsum("jki,j,k->i", dM, qd, qd))
        assert np.abs(c - lag).max() < 1e-12 * np.abs(lag).max()
