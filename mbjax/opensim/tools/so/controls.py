"""OpenSim's ``<name>_StaticOptimization_controls.xml``: the activations as a ``ControlSet``, the
controls file of OpenSim's Forward and CMC tools.

``StaticOptimization::printResults`` writes, beside the two ``.sto`` files, ``ControlSet(activations)``
(``ControlSet::ExtractControl``): one ``ControlLinear`` per column of the activation table (muscles,
then the other actuators, in the table's order) named after it, with a ``ControlLinearNode`` ``(t,
value)`` at every row, and the class defaults (``is_model_control`` true, ``extrapolate`` true,
``default_min`` 0.02, ``default_max`` 1, ``filter_on`` false, ``use_steps`` false, no min/max nodes,
``kp`` 100, ``kv`` 20).  :func:`controls_text` writes that document as OpenSim 4.6 prints it: tab
indents, the document version 40600, numbers as ``%.17g`` (``SimTK::String``; ``NaN``, ``Inf``,
``-Inf`` for the non-finite), so the values are the activations to the last bit, not the ``.sto``
files' 8 decimals.
"""

from __future__ import annotations

import math
import os
from xml.sax.saxutils import quoteattr

import numpy as np

from ....io.storage import Table

#: the ``Version`` of the documents OpenSim 4.6 writes
DOCUMENT_VERSION = 40600


def _number(x: float) -> str:
    """A double as ``SimTK::String`` prints it (``%.17g``; NaN, Inf, -Inf)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "-Inf" if x < 0 else "Inf"
    return f"{x:.17g}"


def controls_text(table: Table) -> str:
    """The ``ControlSet`` document of an activation ``table`` (the module docstring)."""
    time = np.asarray(table.time, float)
    data = np.asarray(table.data, float).reshape(time.shape[0], len(table.labels))
    out = ['<?xml version="1.0" encoding="UTF-8" ?>', f'<OpenSimDocument Version="{DOCUMENT_VERSION}">',
           '\t<ControlSet name="Control Set">', "\t\t<objects>"]
    times = [_number(float(t)) for t in time]
    for k, name in enumerate(table.labels):
        out += [f"\t\t\t<ControlLinear name={quoteattr(name)}>", "\t\t\t\t<is_model_control>true</is_model_control>",
                "\t\t\t\t<extrapolate>true</extrapolate>", "\t\t\t\t<default_min>0.02</default_min>",
                "\t\t\t\t<default_max>1</default_max>", "\t\t\t\t<filter_on>false</filter_on>",
                "\t\t\t\t<use_steps>false</use_steps>"]
        if times:
            out.append("\t\t\t\t<x_nodes>")
            for t, v in zip(times, data[:, k]):
                out += ["\t\t\t\t\t<ControlLinearNode>", f"\t\t\t\t\t\t<t>{t}</t>",
                        f"\t\t\t\t\t\t<value>{_number(float(v))}</value>", "\t\t\t\t\t</ControlLinearNode>"]
            out.append("\t\t\t\t</x_nodes>")
        else:
            out.append("\t\t\t\t<x_nodes />")
        out += ["\t\t\t\t<min_nodes />", "\t\t\t\t<max_nodes />", "\t\t\t\t<kp>100</kp>", "\t\t\t\t<kv>20</kv>",
                "\t\t\t</ControlLinear>"]
    out += ["\t\t</objects>", "\t\t<groups />", "\t</ControlSet>", "</OpenSimDocument>", ""]
    return "\n".join(out)


def write_controls(path, table: Table) -> None:
    """Write :func:`controls_text` of the activation ``table`` to ``path``."""
    with open(os.fspath(path), "w", encoding="utf-8", newline="\n") as f:
        f.write(controls_text(table))
