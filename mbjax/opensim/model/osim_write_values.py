"""Numbers written into the copy of an ``.osim`` file that :func:`mbjax.io.write_osim` writes: set
(``repr``, the shortest text that reads back as the same double; non-finite values refused, naming
the element) or multiplied in place, a function wrapped in OpenSim's ``MultiplierFunction`` where it
is not a ``Constant`` or a multiplier already."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from .osim_xml import _function_element


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _set(doc, orig, parent, tag, values, create=True):
    """Set ``parent/<tag>`` (in the tree being written) to ``values``; ``orig`` is the same element in
    the line-numbered parse, for the error message."""
    values = np.asarray(values, float)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{doc.where(orig)}: <{tag}> would be {values.tolist()}: not finite")
    el = parent.find(tag)
    if el is None:
        if not create:
            return
        el = ET.SubElement(parent, tag)
    el.text = _fmt(values)


def _scale_text(doc, orig, out, tag, factor):
    """``out/<tag>`` (numbers) times ``factor``, if present."""
    if out is None or out.find(tag) is None or factor == 1.0:
        return
    values = np.asarray([float(v) for v in out.find(tag).text.split()], float)
    _set(doc, orig, out, tag, values * factor, create=False)


def _multiply_function(doc, twin, holder, factor):
    """The function inside ``holder`` times ``factor``, as OpenSim's scaling writes it: a ``Constant``'s
    value, a ``MultiplierFunction``'s scale, else the function wrapped in a ``MultiplierFunction``."""
    if holder is None or factor == 1.0:
        return
    fel = _function_element(doc, holder)
    out = twin[fel]
    if fel.tag == "Constant":
        _scale_text(doc, fel, out, "value", factor)
        return
    if fel.tag == "MultiplierFunction":
        if out.find("scale") is None:
            ET.SubElement(out, "scale").text = "1.0"
        _scale_text(doc, fel, out, "scale", factor)
        return
    parent = next(e for e in twin[holder].iter() if out in list(e))
    k = list(parent).index(out)
    parent.remove(out)
    mf = ET.Element("MultiplierFunction", {"name": out.get("name")} if out.get("name") else {})
    mf.text, mf.tail = out.text, out.tail
    inner = ET.SubElement(mf, "function")
    inner.append(out)
    ET.SubElement(mf, "scale").text = repr(float(factor))
    parent.insert(k, mf)
