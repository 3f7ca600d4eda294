"""An ``.osim`` file's ``MarkerSet`` as :class:`mbjax.markers.Markers` (``load_markers``).

OpenSim 4.x markers name their frame by ``<socket_parent_frame>`` (a body or a
``PhysicalOffsetFrame``, resolved to its body exactly as the joints' frames are), 3.x markers by
``<body>``; ``<location>`` is in that frame and is mapped into the body frame.  mbjax body frames
equal OpenSim's (see :mod:`mbjax.opensim.model.osim`), so the offsets are OpenSim's ``Marker::get_location``
in the body frame.
"""

from __future__ import annotations

import numpy as np

from ..._model import GROUND
from ...markers import Markers
from .osim import _Loader, load_osim
from .osim_xml import _bool, _Doc, _floats, _text


def load_markers(path, model=None) -> Markers:
    """The ``MarkerSet`` of ``path`` as :class:`~mbjax.markers.Markers` on ``model``'s bodies.

    ``model`` defaults to ``load_osim(path)``; pass the loaded model to skip a second import.
    A marker on a body the model lacks, or without a frame, raises ``ValueError`` naming the line.
    """
    loader = _Loader(path, ignore_wrapping=True)
    loader.read_structure()
    if model is None:
        model = load_osim(path)
    mset = loader.model.find("MarkerSet")
    markers, _ = _read_markers(loader.doc, loader, mset.find("objects") if mset is not None else None, model, path)
    return markers


def _read_markers(doc, loader, objs, model, source):
    """The ``<Marker>`` elements of ``objs`` (in ``doc``) as :class:`~mbjax.markers.Markers` on
    ``model``'s bodies, frames resolved by ``loader`` (the ``.osim`` file ``source``), and the
    elements themselves.  Errors name the line of ``doc``."""
    names, bodies, offsets, elements, missing = [], [], [], [], []
    for el in (objs if objs is not None else []):
        if el.tag != "Marker":
            raise doc.error(el, "unsupported marker type (only <Marker>)", NotImplementedError)
        ref = _text(el, "socket_parent_frame") or _text(el, "body")
        if ref is None:
            raise doc.error(el, "marker without <socket_parent_frame> or <body>")
        if _text(el, "socket_parent_frame") is not None and _text(el, "body") is not None:
            # ambiguous: OpenSim 4.6 takes <body> in a 3.x document, <socket_parent_frame> in a 4.x one
            raise doc.error(el, f"marker {el.get('name')!r} names two frames, <body> {_text(el, 'body')!r} and "
                                f"<socket_parent_frame> {_text(el, 'socket_parent_frame')!r}: keep one")
        _bool(el, "fixed", False, doc)  # refused by line unless true or false
        try:
            body, x_bf = loader._resolve(el, ref)
        except ValueError:
            raise doc.error(el, f"marker frame {ref!r} is not a frame of {source}") from None
        loc = _floats(doc, el, "location", 3, default=[0, 0, 0])
        if body != GROUND and body not in model.body_names:
            missing.append((el, body))
            continue
        names.append(el.get("name"))
        bodies.append(-1 if body == GROUND else model.body_index(body))
        offsets.append(x_bf[:3, :3] @ loc + x_bf[:3, 3])
        elements.append(el)
    if missing:
        shown = ", ".join(f"{el.get('name')!r} (body {body!r})" for el, body in missing[:8])
        raise doc.error(missing[0][0], f"{len(missing)} marker(s) on bodies the model lacks: {shown}"
                        f"{' ...' if len(missing) > 8 else ''}; is the model the one of {source}? pass that "
                        f"model, or markers for this one")
    return Markers(names, bodies, np.asarray(offsets, dtype=float).reshape(len(names), 3)), elements


def load_marker_set(path, model):
    """A standalone OpenSim ``<MarkerSet>`` file (a ``ScaleTool``'s ``marker_set_file``, which replaces
    the model's markers before scaling) on ``model``'s bodies: ``(Markers, fixed)`` with ``fixed`` the
    tuple of the markers' ``<fixed>`` flags (a fixed marker is not moved by the ``MarkerPlacer``).
    Frames are resolved in ``model``'s source ``.osim``; an unknown body raises ``ValueError``."""
    info = model.osim
    if info is None:
        raise ValueError("load_marker_set: the model was not loaded from an .osim file")
    loader = _Loader(info.source, ignore_wrapping=True)
    loader.read_structure()
    doc = _Doc(path)
    mset = doc.root if doc.root.tag == "MarkerSet" else doc.root.find("MarkerSet")
    if mset is None:
        raise ValueError(f"{path}: no <MarkerSet>")
    markers, elements = _read_markers(doc, loader, mset.find("objects"), model, info.source)
    return markers, tuple(_bool(el, "fixed") for el in elements)
