"""OpenSim tool setup files (``InverseDynamicsTool``, ``AnalyzeTool``, force sets) read with line
numbers: element text, numbers, flags and paths relative to the file's folder, with errors that
name the file, line and element."""

from __future__ import annotations

import os

from .osim_xml import _Doc


class SetupFile:
    """One setup XML.  ``text`` is None for an empty or ``Unassigned`` element; ``number``/``flag``
    return ``default`` then and raise naming ``file:line: <element>`` for a value that does not parse."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.doc = _Doc(self.path)
        self.root = self.doc.root
        self.base = os.path.dirname(os.path.abspath(self.path))

    def text(self, el, tag):
        sub = el.find(tag)
        txt = sub.text.strip() if sub is not None and sub.text else ""
        return None if not txt or txt == "Unassigned" else txt

    def resolve(self, txt):
        """A path as OpenSim runs its tools: relative to the setup file's folder."""
        return None if txt is None else (txt if os.path.isabs(txt) else os.path.join(self.base, txt))

    def file(self, el, tag):
        return self.resolve(self.text(el, tag))

    def number(self, el, tag, default):
        txt = self.text(el, tag)
        if txt is None:
            return default
        try:
            return float(txt)
        except ValueError:
            raise self.doc.error(el.find(tag), f"<{tag}> must be a number, got {txt!r}") from None

    def vector(self, el, tag, default):
        """A 3-vector (``<point>0 0.1 0</point>``), ``default`` when absent."""
        txt = self.text(el, tag)
        if txt is None:
            return default
        try:
            v = tuple(float(x) for x in txt.split())
        except ValueError:
            v = ()
        if len(v) != 3:
            raise self.doc.error(el.find(tag), f"<{tag}> must be three numbers, got {txt!r}")
        return v

    def flag(self, el, tag, default):
        txt = self.text(el, tag)
        if txt is None:
            return default
        if txt.lower() not in ("true", "false"):
            raise self.doc.error(el.find(tag), f"<{tag}> must be true or false, got {txt!r}")
        return txt.lower() == "true"
