"""OpenSim ``ExternalLoads`` files (a set of ``ExternalForce`` and their ``datafile``) as per-frame loads.

What OpenSim 4.6 does with such a file (``ExternalLoads``, ``ExternalForce``, ``Storage``), and so
what :func:`read_external_loads` and :meth:`ExternalLoadsFile.at` do:

* ``datafile`` (a ``.mot``/``.sto``) supplies every force's data.  A relative path is looked up in
  the current directory of the tool (the setup file's folder, ``base_dirs``) and then next to the
  XML (``ExternalLoads::extendConnectToModel``).
* ``force_identifier``, ``point_identifier``, ``torque_identifier``: each selects the data columns
  whose label *starts with* it (``Storage::getColumnIndicesForIdentifier``), in file order as x, y,
  z, taken by position (a label that repeats among them gives each of its columns in turn, as
  OpenSim reads them; warned); exactly 3 must match.  An empty or ``Unassigned`` identifier means
  the force applies no force / specifies no point (the body origin) / applies no torque; a point
  without a force is refused.
* ``force_expressed_in_body`` (default ground): the frame of the force *and* the torque;
  ``point_expressed_in_body`` (default ground): the frame of the point.  A point in ground is
  converted to the applied body with the pose of each frame (``implProduceForces``); the old
  ``external_loads_model_kinematics_file`` transformation and its
  ``lowpass_cutoff_frequency_for_load_kinematics`` filter are not used by OpenSim 4 (warned, naming both).
* Each data column is a function of time: ``GCVSpline`` of degree 3 with error variance 0 (the
  natural cubic interpolating spline, :class:`~mbjax.io.signal.NaturalSpline`) for 4 or more rows,
  ``PiecewiseLinearFunction`` for 2-3 rows, ``Constant`` for 1; evaluated at the requested times.
* ``appliesForce`` false (``isDisabled`` true in 3.x files) leaves the force out.

A ``PrescribedForce`` (the legacy 2.x force set of inline functions) or any other element than
``ExternalForce`` is refused by name, as OpenSim 4.6 refuses it.

Errors name the file, the line and the ``<ExternalForce>``: unknown bodies (OpenSim falls back to
ground for an unknown *expressed-in* body with a warning; mbjax refuses it), missing or ambiguous
columns, non-finite data, frames that are not bodies.
"""

from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import numpy as np

from .._model import GROUND
from .model.osim_xml import _bool
from ..io.signal import NaturalSpline
from ..io.storage import read_storage
from ..io.table import Table
from .model.osim_older_documents import IS_DISABLED_VERSION
from .setup_xml import SetupFile


class ExternalForceSpec(NamedTuple):
    """One ``ExternalForce``: its frames and the 3 data columns of force / point / torque
    (``None``: not applied / body origin / no torque).  ``line`` is its line in the XML;
    ``force_index``/``point_index``/``torque_index``: the positions of those columns in the table's
    ``data`` (``None``: found by label, the first column of each label)."""

    name: str
    applied_to_body: str
    force_expressed_in_body: str
    point_expressed_in_body: str
    force_columns: tuple[str, str, str] | None
    point_columns: tuple[str, str, str] | None
    torque_columns: tuple[str, str, str] | None
    line: int = 0
    force_index: tuple[int, int, int] | None = None
    point_index: tuple[int, int, int] | None = None
    torque_index: tuple[int, int, int] | None = None

    def triples(self, table: Table):
        """``(labels, data positions)`` of the force, point and torque columns (``(None, None)`` for
        one not given)."""
        out = []
        for cols, index in ((self.force_columns, self.force_index), (self.point_columns, self.point_index),
                            (self.torque_columns, self.torque_index)):
            if cols is not None and index is None:
                index = tuple(table.labels.index(c) for c in cols)
            out.append((cols, index))
        return out


class ExternalLoadsFile(NamedTuple):
    """An OpenSim ``ExternalLoads`` XML read with its data table (``datafile`` made absolute).
    :meth:`at` gives the loads at chosen times as :class:`mbjax.ExternalLoads`."""

    path: str
    datafile: str
    forces: tuple[ExternalForceSpec, ...]
    table: Table

    def where(self, f: ExternalForceSpec) -> str:
        return f"{self.path}:{f.line}: <ExternalForce name={f.name!r}>"

    def at(self, times, model=None):
        """The loads at ``times (T,)`` as :class:`mbjax.ExternalLoads` with arrays ``(T, n, 3)``
        (frames as in the file, resolved per pose by :meth:`mbjax.ExternalLoads.resolved`).
        With ``model``, body names are checked against it and OpenSim frame paths
        (``/bodyset/calcn_r``, ``/ground``) become its body names."""
        from .._loads import ExternalLoads

        times = np.atleast_1d(np.asarray(times, float))
        _warn_outside_data(self, times)
        column, offset = _functions(self, times)
        values = None if column is None else column(times)  # every triple from one spline evaluation

        def triple(index):
            return zero if index is None else values[:, offset[index]:offset[index] + 3]

        bodies, pframes, fframes, names = [], [], [], []
        pts, frc, trq = [], [], []
        zero = np.zeros((times.shape[0], 3))
        for f in self.forces:
            body = _body(self, f, f.applied_to_body, "applied_to_body", model)
            bodies.append(body)
            names.append(f.name)
            fframes.append(_body(self, f, f.force_expressed_in_body, "force_expressed_in_body", model))
            if f.point_columns is None:
                pframes.append(body)  # the body origin
            else:
                pframes.append(_body(self, f, f.point_expressed_in_body, "point_expressed_in_body", model))
            (_, fi), (_, pi), (_, ti) = f.triples(self.table)
            frc.append(triple(fi))
            pts.append(triple(pi))
            trq.append(triple(ti))
        stack = lambda a: np.stack(a, axis=1) if a else np.zeros((times.shape[0], 0, 3))  # noqa: E731
        return ExternalLoads(tuple(bodies), stack(pts), stack(frc), stack(trq), point_frames=tuple(pframes),
                             force_frames=tuple(fframes), names=tuple(names))


def _warn_outside_data(loads: ExternalLoadsFile, times: np.ndarray) -> None:
    """OpenSim's ``ExternalForce`` extrapolates its splines past the data without a word; mbjax
    computes the same loads but names the file and how far outside its time range they are asked
    (more than one sample interval: a tool's time range that misses the force data)."""
    data_time = np.asarray(loads.table.time, float)
    if data_time.size < 2 or times.size == 0 or not loads.forces:
        return
    step = float(np.max(np.diff(data_time)))
    lo, hi = float(data_time[0]), float(data_time[-1])
    outside = (times < lo - step) | (times > hi + step)
    if outside.any():
        warnings.warn(f"{loads.datafile}: external loads of {loads.path} asked at {int(outside.sum())} time(s) outside "
                      f"the data's [{lo:.6g}, {hi:.6g}] s (from {float(times.min()):.6g} to {float(times.max()):.6g} "
                      "s): extrapolated, as OpenSim does; check the tool's time range", stacklevel=3)


def _body(loads: ExternalLoadsFile, f: ExternalForceSpec, name: str, tag: str, model):
    short = name
    for prefix in ("/bodyset/", "./bodyset/", "bodyset/"):
        if short.startswith(prefix):
            short = short[len(prefix):]
    if short in ("/ground", "./ground"):
        short = GROUND
    if model is None or short == GROUND:
        if short == GROUND and tag == "applied_to_body":
            raise ValueError(f"{loads.where(f)}: <applied_to_body> is ground: the force does no work on the model")
        return short
    if short not in model.body_names:
        fallback = " (OpenSim would warn and use ground)" if tag != "applied_to_body" else ""
        raise ValueError(f"{loads.where(f)}: <{tag}> {name!r} is not a body of the model{fallback}; "
                         f"bodies are {tuple(b for b in model.body_names if '/' not in b)}")
    return short


class _Column:
    """One data column as OpenSim's ExternalForce makes it a function of time."""

    def __init__(self, time, y):
        self.time, self.y = time, y
        n = time.shape[0]
        self.spline = NaturalSpline(time, y, 3) if n >= 4 else None

    def __call__(self, t):
        if self.spline is not None:
            return self.spline(t)
        if self.time.shape[0] == 1:  # Constant
            return np.broadcast_to(self.y[0], t.shape + self.y.shape[1:]).copy()
        # PiecewiseLinearFunction: end segments' slopes outside
        x, y = self.time, self.y
        k = np.clip(np.searchsorted(x, t, side="right") - 1, 0, x.shape[0] - 2)
        slope = (y[k + 1] - y[k]) / (x[k + 1] - x[k])[:, None]
        return y[k] + (t - x[k])[:, None] * slope


#: rows of the data kept on each side of the times asked for: the natural cubic spline's response
#: to a sample decays by 2 - √3 ≈ 0.27 per knot on uniform knots (at worst 1/2), so 64 rows
#: further the windowed spline equals the whole file's to far below rounding (2^-64)
WINDOW_MARGIN = 64


def _functions(loads: ExternalLoadsFile, times=None):
    """The column triples used by the forces as one :class:`_Column` (their splines fitted together:
    one banded solve with many right-hand sides, column by column the same) and each triple's first
    column in it, ``(column, {triple's data positions: offset})``; ``(None, {})`` without triples.
    With ``times``, the spline is fitted to the rows from ``WINDOW_MARGIN`` before the first to ``WINDOW_MARGIN``
    after the last (a 1501-row ground-reaction file evaluated over 1.2 s of it: 849 rows); equal to
    the whole file's spline to rounding (``tests/test_id_tool.py``)."""
    table = loads.table
    triples = []
    for f in loads.forces:
        for cols, index in f.triples(table):
            if cols is None or index in triples:
                continue
            if not np.all(np.isfinite(table.data[:, list(index)])):
                raise ValueError(f"{loads.datafile}: columns {cols} (used by {loads.where(f)}) hold NaN or inf")
            triples.append(index)
    if not triples:
        return None, {}
    idx = [i for index in triples for i in index]
    time = np.asarray(table.time, float)
    rows = slice(None)
    if times is not None and times.size:
        lo = max(int(np.searchsorted(time, np.min(times), side="right")) - 1 - WINDOW_MARGIN, 0)
        hi = min(int(np.searchsorted(time, np.max(times), side="left")) + 1 + WINDOW_MARGIN, time.shape[0])
        rows = slice(lo, hi)
    return _Column(time[rows], table.data[rows][:, idx]), {index: 3 * k for k, index in enumerate(triples)}


def _flag(doc, el, tag):
    """A bool element (None when absent), read as every setup file's (:func:`osim_xml._bool`)."""
    return _bool(el, tag, None, doc)


def _columns(doc, el, table: Table, datafile: str, identifier: str | None, what: str):
    """``(labels, data positions)`` of the 3 columns whose label starts with ``identifier``, taken
    by position as OpenSim takes them; ``(None, None)`` for no identifier."""
    identifier = (identifier or "").strip()
    if not identifier or identifier == "Unassigned":
        return None, None
    index = [i for i, lab in enumerate(table.labels) if lab.startswith(identifier)]
    found = [table.labels[i] for i in index]
    if len(found) != 3:
        raise doc.error(el, f"<{what}_identifier> {identifier!r} matches {len(found)} column(s) of {datafile} "
                            f"({found}); OpenSim needs exactly 3 columns starting with it (x, y, z)")
    suffixes = [lab[len(identifier):].strip("_").lower()[-1:] for lab in found]
    if len(set(found)) < 3:
        columns = ", ".join(f"{i + 2} ({lab!r})" for i, lab in zip(index, found))
        warnings.warn(f"{datafile}: {doc.where(el)}: <{what}_identifier> {identifier!r} matches the columns "
                      f"{columns}, a label repeated among them; they are read as x, y, z by position, as OpenSim "
                      "reads them: give each column its own label (x, y, z)", stacklevel=4)
    elif set(suffixes) == {"x", "y", "z"} and suffixes != ["x", "y", "z"]:
        warnings.warn(f"{datafile}: the columns of <{what}_identifier> {identifier!r} are {found}, in that order; "
                      "they are read as x, y, z in file order (as OpenSim reads them), so their labels disagree "
                      "with what is read: reorder the columns to x, y, z", stacklevel=4)
    return tuple(found), tuple(index)


#: the properties of OpenSim 4.6's ``ExternalLoads`` and ``ExternalForce`` (read or without effect)
#: ``defaults``: OpenSim 3.x's default objects of the document (controls), no part of the loads
_LOADS_PROPERTIES = ("objects", "groups", "datafile", "external_loads_model_kinematics_file",
                     "lowpass_cutoff_frequency_for_load_kinematics", "defaults")
_FORCE_PROPERTIES = ("appliesForce", "isDisabled", "applied_to_body", "force_expressed_in_body",
                     "point_expressed_in_body", "force_identifier", "point_identifier", "torque_identifier",
                     "data_source_name")


def _warn_load_kinematics(doc, node) -> None:
    """Name OpenSim 3's load-kinematics elements, which OpenSim 4 ignores (``ExternalLoads`` has no such
    property; ``ExternalLoads::updateFromXMLNode`` reads the cut-off of old documents and drops it):
    ``<external_loads_model_kinematics_file>`` when it names a file, with the
    ``<lowpass_cutoff_frequency_for_load_kinematics>`` beside it, and that cut-off alone when it asks
    for a filter (>= 0; OpenSim 3's -1 is none)."""
    kin_el = node.find("external_loads_model_kinematics_file")
    cut_el = node.find("lowpass_cutoff_frequency_for_load_kinematics")
    kin = (kin_el.text or "").strip() if kin_el is not None else ""
    cut = (cut_el.text or "").strip() if cut_el is not None else ""
    try:
        filtered = float(cut) >= 0
    except ValueError:
        filtered = bool(cut)
    named = []
    if kin and kin != "Unassigned":
        named.append(f"{doc.where(kin_el)} {kin!r}")
    if cut and (named or filtered):
        named.append(f"{doc.where(cut_el)} {cut} Hz")
    if named:
        warnings.warn(f"{'; '.join(named)}: ignored, as OpenSim 4 ignores {'them' if len(named) > 1 else 'it'}: the "
                      "loads' points in ground are converted to their bodies with each frame's pose, from the tool's "
                      "own coordinates (filtered by the tool's own cut-off), not from a load-kinematics file",
                      stacklevel=3)


def read_external_loads(path, base_dirs=()) -> ExternalLoadsFile:
    """Read an OpenSim ``ExternalLoads`` XML and its ``datafile`` (see the module docstring).

    ``base_dirs``: folders where a relative ``datafile`` is looked up before the XML's own folder
    (OpenSim's tools look in their setup file's folder first).
    """
    path = os.fspath(path)
    doc = SetupFile(path).doc  # objects given by file= read in place, as OpenSim reads them
    root = doc.root
    if root.tag == "OpenSimDocument":
        version = root.get("Version")
        if version is not None and version.strip().isdigit() and int(version) < 20301:
            raise doc.error(root, f"ExternalLoads of document Version {version} (< 20301, OpenSim 2.x layout) "
                                  "are not supported; open and save the file in OpenSim 4")
        node = root.find("ExternalLoads")
    else:
        node = root if root.tag == "ExternalLoads" else None
    if node is None:
        raise doc.error(root, "no <ExternalLoads> element")
    _warn_load_kinematics(doc, node)
    objs = node.find("objects")
    version = (root.get("Version") or "").strip() if root.tag == "OpenSimDocument" else ""
    converts = not (version.isdigit() and int(version) >= IS_DISABLED_VERSION)  # <isDisabled> read by OpenSim
    unused = [f"{doc.where(el)} (not an ExternalLoads property)" for el in node
              if isinstance(el.tag, str) and el.tag not in _LOADS_PROPERTIES]
    for el in (list(objs) if objs is not None else []):
        if el.tag == "ExternalForce":
            unused += [f"{doc.where(sub)} (not an ExternalForce property)" for sub in el
                       if isinstance(sub.tag, str) and sub.tag not in _FORCE_PROPERTIES]
            unused += [f"{doc.where(sub)} in <ExternalForce name={el.get('name')!r}> (OpenSim reads it only in "
                       f"documents older than Version {IS_DISABLED_VERSION}; in this Version {version} document it is "
                       "ignored and the force is applied: write <appliesForce>false</appliesForce> to leave it out)"
                       for sub in ([] if converts else el.findall("isDisabled"))]
    if unused:
        warnings.warn(f"{path}: not used by mbjax's external loads: " + "; ".join(unused), stacklevel=2)
    other = [el for el in (list(objs) if objs is not None else []) if el.tag != "ExternalForce"]
    if other:
        which = ", ".join(f"<{el.tag} name={el.get('name')!r}> (line {doc.lines.get(el, 0)})" for el in other)
        legacy = all(el.tag == "PrescribedForce" for el in other)
        why = ("a legacy force set of PrescribedForce objects with inline functions (OpenSim 2.x); OpenSim 4.6 "
               "refuses it too (ExternalLoads holds only ExternalForce).  Use an ExternalLoads of ExternalForce "
               "with a <datafile>, e.g. the pipeline's *_grf.xml with its .mot" if legacy else
               "ExternalLoads holds only <ExternalForce>, as in OpenSim 4.6")
        raise doc.error(other[0], f"{len(other)} unsupported element(s) in <ExternalLoads>: {which}: {why}")
    datafile = (node.findtext("datafile") or "").strip()
    if not datafile or datafile == "Unassigned":
        raise doc.error(node, "no <datafile>: per-force data sources (<data_source_name>) are not supported, "
                              "as OpenSim's ExternalLoads needs the datafile")
    if not os.path.isabs(datafile):
        here = os.path.dirname(os.path.abspath(path))
        cands = [os.path.join(os.fspath(d), datafile) for d in base_dirs] + [os.path.join(here, datafile)]
        found = next((c for c in cands if os.path.exists(c)), None)
        if found is None:
            raise doc.error(node, f"<datafile> {datafile!r} not found (looked in {cands})", FileNotFoundError)
        datafile = found
    table = read_storage(datafile)
    time = np.asarray(table.time, float)
    back = np.flatnonzero(~(np.diff(time) > 0))
    if back.size:
        k = int(back[0]) + 1
        raise ValueError(f"{datafile} (datafile of {path}): time {float(time[k])!r} at row {k + 1} does not increase "
                         f"from row {k}'s {float(time[k - 1])!r}; the external loads' splines need strictly "
                         "increasing times")
    forces = []
    seen = set()
    for el in (list(objs) if objs is not None else []):
        name = el.get("name") or ""
        if name in seen:
            raise doc.error(el, f"duplicate ExternalForce name {name!r}")
        seen.add(name)
        applies = _flag(doc, el, "appliesForce")
        disabled = _flag(doc, el, "isDisabled") if converts else None
        if applies is False or (applies is None and disabled is True):
            continue
        applied = (el.findtext("applied_to_body") or "").strip()
        if not applied:
            raise doc.error(el, "no <applied_to_body>")
        fexp = (el.findtext("force_expressed_in_body") or "").strip() or GROUND
        pexp = (el.findtext("point_expressed_in_body") or "").strip() or GROUND
        src = (el.findtext("data_source_name") or "").strip()
        del src  # the datafile overrides it (ExternalLoads::extendConnectToModel)
        fcols, findex = _columns(doc, el, table, datafile, el.findtext("force_identifier"), "force")
        pcols, pindex = _columns(doc, el, table, datafile, el.findtext("point_identifier"), "point")
        tcols, tindex = _columns(doc, el, table, datafile, el.findtext("torque_identifier"), "torque")
        if fcols is None and tcols is None:
            raise doc.error(el, "applies neither a force nor a torque (no force_identifier or torque_identifier)")
        if fcols is None and pcols is not None:
            raise doc.error(el, "specifies a point but applies no force (OpenSim refuses it)")
        forces.append(ExternalForceSpec(name, applied, fexp, pexp, fcols, pcols, tcols, doc.lines.get(el, 0),
                                        findex, pindex, tindex))
        _warn_far_point(doc, el, table, datafile, findex, pindex, pcols, pexp)
    if not seen:
        warnings.warn(f"{doc.where(node)}: holds no <ExternalForce> (in its <objects>): no external load is applied "
                      f"and none of the {len(table.labels)} columns of its <datafile> {datafile} is used; add the "
                      "ExternalForce elements (or give no external loads file)", stacklevel=2)
    return ExternalLoadsFile(path, datafile, tuple(forces), table)


#: an applied point farther than this (m) from its frame's origin lies outside any gait lab
FAR_POINT = 10.0


def _warn_far_point(doc, el, table: Table, datafile: str, findex, pindex, pcols, frame: str) -> None:
    """Warn naming the point columns when the point of a force (where it is not zero) lies more
    than :data:`FAR_POINT` from the origin of its frame: the file's points look like millimetres."""
    if pindex is None:
        return
    data = np.asarray(table.data, float)
    p = data[:, list(pindex)]
    if findex is not None:
        on = np.linalg.norm(data[:, list(findex)], axis=1) > 0
        p = p[on]
    dist = np.linalg.norm(p, axis=1)
    dist = dist[np.isfinite(dist)]
    if dist.size and dist.max() > FAR_POINT:
        warnings.warn(f"{datafile}: the point columns {list(pcols)} of {doc.where(el)} reach {dist.max():.4g} m from "
                      f"the origin of {frame!r}, far beyond any gait lab: they look like millimetres; convert them "
                      "to metres (divide by 1000)", stacklevel=3)
