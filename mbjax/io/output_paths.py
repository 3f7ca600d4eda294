"""Output files checked before a tool computes: the folder made, the file tried for writing."""

from __future__ import annotations

import os


class OutputPathError(OSError):
    """An output file a tool cannot write, found before it computes (the CLI's usage error, status 2)."""


class OutputIsInputError(OutputPathError, ValueError):
    """An output file that is one of the tool's own inputs (writing it would destroy that input)."""


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name one file: ``os.path.samefile`` when both exist, else
    their resolved paths compared."""
    a, b = os.fspath(a), os.fspath(b)
    if os.path.exists(a) and os.path.exists(b):
        try:
            return os.path.samefile(a, b)
        except OSError:
            pass
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def _loads_datafile(xml, base_dirs):
    """The ``<datafile>`` an ExternalLoads file names, found where its reader looks (the tool's
    setup folder first, then the XML's own); None when there is none to find (the reader says why)."""
    import xml.etree.ElementTree as ET

    try:
        text = (ET.parse(xml).getroot().findtext(".//datafile") or "").strip()
    except (ET.ParseError, OSError):
        return None
    if not text or text == "Unassigned":
        return None
    if os.path.isabs(text):
        return text
    found = [os.path.join(d, text) for d in (*base_dirs, os.path.dirname(os.path.abspath(xml)))]
    return next((f for f in found if os.path.isfile(f)), None)


def refuse_overwriting_inputs(output, inputs, given: str, base_dirs=()) -> None:
    """Refuse an ``output`` that is one of a tool's own ``inputs`` (``(how it was given, path)``
    pairs, e.g. ``("<marker_file> of setup.xml", path)``; an ``external_loads_file`` brings its
    ``<datafile>``, looked up in ``base_dirs`` first), before the tool computes: the error names the
    output as ``given`` (``--out``, ``setup.xml: the IK motion file``), the input and where it was given."""
    pairs = []
    for label, path in inputs:
        if path is None:
            continue
        pairs.append((label, os.fspath(path)))
        if "external_loads_file" in label and os.path.isfile(path):
            data = _loads_datafile(path, base_dirs)
            if data is not None:
                pairs.append((f"the <datafile> of {path}", data))
    for label, path in pairs:
        if same_file(output, path):
            raise OutputIsInputError(f"{given} {os.fspath(output)!r} is {label} ({path!r}), an input of this run: "
                                     "writing it would overwrite that input; write the output elsewhere")


def cannot_write(path) -> str | None:
    """Why the file ``path`` cannot be written, or None: a real trial (open for appending, then the
    file removed again if the trial made it), since permission bits do not tell (root, ``/proc``,
    read-only mounts, full disks)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return "is a folder"
    existed = os.path.exists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        return e.strerror or str(e)
    finally:
        if not existed and os.path.exists(path):
            os.remove(path)
    return None


def prepare_output(path, setup=None, what: str = "output file", inputs=()) -> str:
    """Make ``path``'s folder (as OpenSim's tools make their results directory) and check that the
    file can be written there and is none of the tool's ``inputs`` nor the ``setup`` file
    (:func:`refuse_overwriting_inputs`), before a tool computes anything; errors name ``setup`` and the path."""
    path = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(path)
    where = f"{setup}: " if setup is not None else ""
    if setup is not None or inputs:
        own = [(f"<{tag}> of {setup}" if setup is not None else tag, f) for tag, f in inputs]
        refuse_overwriting_inputs(path, own + ([("the setup file", setup)] if setup is not None else []),
                                  f"{where}the {what}",
                                  (os.path.dirname(os.path.abspath(setup)),) if setup is not None else ())
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"{where}cannot create the folder {folder!r} for the {what} {path!r}: "
                              f"{e.strerror or e}") from None
    if os.path.isdir(path):
        raise OutputPathError(f"{where}the {what} {path!r} is a folder")
    why = cannot_write(path)
    if why is not None:
        raise OutputPathError(f"{where}cannot write the {what} {path!r}: {why}")
    return path
