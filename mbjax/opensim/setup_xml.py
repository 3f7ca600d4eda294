"""OpenSim tool setup files (``InverseDynamicsTool``, ``AnalyzeTool``, force sets) read with line
numbers: element text, numbers, flags and paths relative to the file's folder, with errors that
name the file, line and element."""

from __future__ import annotations

import os

from .model.osim_xml import _Doc
from .xml_booleans import BOOL_TEXT


class SetupFile:
    """One setup XML.  ``text`` is None for an empty or ``Unassigned`` element; ``number``/``flag``
    return ``default`` then and raise naming ``file:line: <element>`` for a value that does not parse."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self.doc = _Doc(self.path)
        self.root = self.doc.root
        self.base = os.path.dirname(os.path.abspath(self.path))
        self._inline_files(self.root, self.base, self.doc, ())

    def _inline_files(self, node, base, doc, chain):
        """OpenSim's ``file=`` attribute (``<IKTaskSet file="tasks.xml"/>``): the object's contents
        read from that file (relative to the folder of the file naming it), in place; lines named
        as ``setup line (file= other:line)``."""
        for el in list(node.iter()):
            ref = (el.get("file") or "").strip()
            if not ref or ref == "Unassigned":
                continue
            where, line = doc.where(el), doc.lines.get(el, "?")
            path = os.path.normpath(ref if os.path.isabs(ref) else os.path.join(base, ref))
            if not os.path.isfile(path):
                raise ValueError(f"{where}: file={ref!r}: no such file {path} (relative to the folder of the "
                                 "file naming it)")
            if path in chain or len(chain) > 8:
                raise ValueError(f"{where}: file={ref!r} includes itself (through {', '.join(chain)})")
            other = _Doc(path)
            src = other.root
            if src.tag == "OpenSimDocument":
                src = next((c for c in src if isinstance(c.tag, str)), None)
            if src is None or src.tag != el.tag:
                raise ValueError(f"{where}: file={ref!r} ({path}) holds "
                                 f"{'no object' if src is None else '<' + src.tag + '>'}, not <{el.tag}>")
            self._inline_files(src, os.path.dirname(path), other, chain + (path,))
            for sub in src.iter():
                self.doc.lines[sub] = f"{line} (file= {path}:{other.lines.get(sub, '?')})"
            name = el.get("name")
            el.attrib.clear()
            el.attrib.update(src.attrib)
            if name is not None and "name" not in el.attrib:
                el.set("name", name)
            el.text, el[:] = src.text, list(src)

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
        """A bool element of any setup file: true/false in any case, or 1/0, as OpenSim reads them;
        other text is refused naming the file, line, element and tag."""
        txt = self.text(el, tag)
        if txt is None:
            return default
        value = BOOL_TEXT.get(txt.lower())
        if value is None:
            owner = el.get("name")
            raise self.doc.error(el.find(tag), f"<{tag}> must be true or false, got {txt!r} (in <{el.tag}"
                                 + (f" name={owner!r}" if owner else "") + ">)")
        return value

    def time_range(self, el, default=None):
        """``<time_range>``: two numbers (not NaN), start <= end; ``default`` when absent."""
        txt = self.text(el, "time_range")
        if txt is None:
            return default
        try:
            vals = [float(v) for v in txt.split()]
        except ValueError:
            vals = []
        if len(vals) != 2 or any(v != v for v in vals):
            raise self.doc.error(el.find("time_range"), f"<time_range> must hold two numbers, got {txt!r} "
                                 "(a start and an end time)")
        if not vals[0] <= vals[1]:
            raise self.doc.error(el.find("time_range"), f"<time_range> is reversed: its start {vals[0]:g} is after "
                                 f"its end {vals[1]:g} (got {txt!r}); give the start first")
        return (vals[0], vals[1])

    def analysis_times(self, el):
        """An AnalyzeTool's ``<initial_time>``/``<final_time>`` (OpenSim's defaults 0 and 1 s): numbers,
        not NaN, in order; infinite ones are the coordinates' first or last time when run."""
        times = []
        for tag, default in (("initial_time", 0.0), ("final_time", 1.0)):
            t = self.number(el, tag, default)
            if t != t:
                raise self.doc.error(el.find(tag), f"must be a time (s), got {self.text(el, tag)!r}")
            times.append(t)
        if not times[0] <= times[1]:
            at = el.find("final_time")
            raise self.doc.error(at if at is not None else el,
                                 f"<final_time> {times[1]:g} is before <initial_time> {times[0]:g}")
        return times[0], times[1]

    def files(self, el, tag):
        """A list of paths (``<force_set_files>a.xml b.xml</force_set_files>``), each relative to the
        setup's folder; a file listed twice is refused naming it."""
        paths = tuple(self.resolve(f) for f in (self.text(el, tag) or "").split())
        seen = set()
        for f in paths:
            key = os.path.normcase(os.path.abspath(f))
            if key in seen:
                raise self.doc.error(el.find(tag), f"lists {os.path.basename(f)!r} ({f}) twice: OpenSim "
                                     "would add its objects twice (two of each name); list each file once")
            seen.add(key)
        return paths

    def cutoff(self, el, tag="lowpass_cutoff_frequency_for_coordinates"):
        """A low-pass cut-off (Hz): finite and not 0; negative (OpenSim's default -1) means no filtering."""
        f = self.number(el, tag, -1.0)
        if f != f or f in (float("inf"), float("-inf")):
            raise self.doc.error(el.find(tag), f"<{tag}> must be a finite frequency (Hz), or -1 for no filtering; "
                                 f"got {self.text(el, tag)!r}")
        if f == 0:
            raise self.doc.error(el.find(tag), f"<{tag}> 0 Hz would remove the whole motion; give a positive "
                                 "cut-off, or -1 for no filtering")
        return f

    def unknown(self, el, known, owner=None) -> list:
        """The children of ``el`` whose tag is not in ``known`` (misspellings), each as ``file:line:
        <tag>``, with `` in <owner>`` when ``owner`` names the element they are in."""
        where = f" in {owner}" if owner else ""
        return [f"{self.doc.where(c)}{where}" for c in el if isinstance(c.tag, str) and c.tag not in known]

    def defaults(self) -> tuple:
        """The ``<defaults>`` element OpenSim reads from this document, as a tuple of none or one: the
        first under the document's object (``Object::updateDefaultObjectsFromXMLNode``).  Its default
        objects change OpenSim's process-wide defaults, so they stand for what a later-read model or
        force set leaves out (``load_osim(..., prior_defaults=)``)."""
        held = self.root if self.root.tag != "OpenSimDocument" else next(
            (c for c in self.root if isinstance(c.tag, str)), None)
        found = held.find("defaults") if held is not None else None
        return () if found is None else (found,)

    def tool(self, tag):
        """The ``<tag>`` tool element (the root or its child); a setup of another tool is refused
        naming the tool it holds and the mbjax command that runs it."""
        found = [self.root] if self.root.tag == tag else self.root.findall(tag)
        if len(found) > 1:
            raise ValueError(f"{self.path}: {len(found)} <{tag}> elements (lines "
                             f"{', '.join(str(self.doc.lines.get(e, '?')) for e in found)}): one tool per setup file")
        if found:
            others = [c for c in self.root if isinstance(c.tag, str) and c is not found[0]]
            if others:
                import warnings

                warnings.warn(f"{self.path}: not used (OpenSim reads only the tool of an <OpenSimDocument>): "
                              + "; ".join(f"{self.doc.where(c)} beside <{tag}>" for c in others), stacklevel=3)
            self._warn_repeated(found[0])
            return found[0]
        held = self.root if self.root.tag != "OpenSimDocument" else next(
            (c for c in self.root if isinstance(c.tag, str)), None)
        found = f"it holds <{held.tag}>" if held is not None else "it holds no tool"
        command = _COMMANDS.get(held.tag) if held is not None else None
        hint = f" (run it with `mbjax {command}`)" if command else ""
        raise ValueError(f"{self.path}: no <{tag}>: {found}{hint}")

    def _warn_repeated(self, tool):
        """A property given twice in one element (``<time_range>`` twice): OpenSim reads the first
        and so does mbjax, with a warning naming both lines (lists of objects may repeat tags, and
        an object, named, out of its list is for the tool's reader to refuse)."""
        import warnings

        for el in tool.iter():
            if not isinstance(el.tag, str) or el.tag in _OBJECT_LISTS:
                continue
            first = {}
            for c in el:
                if not isinstance(c.tag, str) or c.get("name") is not None:
                    continue
                if c.tag not in first:
                    first[c.tag] = c
                    continue
                owner = el.get("name")
                warnings.warn(f"{self.path}: <{c.tag}> given twice in <{el.tag}" + (f" name={owner!r}" if owner else "")
                              + f"> (lines {self.doc.lines.get(first[c.tag], '?')} and {self.doc.lines.get(c, '?')}): "
                              "the first is used, as OpenSim uses it, and the second ignored; remove one", stacklevel=4)


#: elements holding a list of objects, whose children may share a tag
_OBJECT_LISTS = ("objects", "groups", "defaults", "components")


#: the mbjax command that runs each OpenSim tool's setup
_COMMANDS = {"InverseKinematicsTool": "ik", "InverseDynamicsTool": "id", "AnalyzeTool": "so or jr"}
