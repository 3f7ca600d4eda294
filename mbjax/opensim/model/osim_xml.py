"""OpenSim XML read with line numbers: the parsed document, element values, rigid transforms and
OpenSim ``Function`` elements as piecewise-polynomial data; errors name the file, line and element."""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pyexpat import ParserCreate
from typing import TYPE_CHECKING, Any

import numpy as np

from ..xml_booleans import BOOL_TEXT

if TYPE_CHECKING:
    from ...maps.piecewise import PPData

FUNCTION_TYPES = (
    "Constant",
    "LinearFunction",
    "SimmSpline",
    "NaturalCubicSpline",
    "GCVSpline",
    "PiecewiseLinearFunction",
    "PolynomialFunction",
    "MultiplierFunction",
    "MultivariatePolynomialFunction",
)


class _Doc:
    """An OpenSim XML file parsed with the line of each element, for errors that name file and line."""

    def __init__(self, path: str):
        self.path = str(path)
        #: children of function elements that are no property of their function (listed as not used)
        self.unused: list[str] = []
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raise FileNotFoundError(f"{self.path}: no such OpenSim file") from None
        except OSError as e:
            raise ValueError(f"{self.path}: cannot read OpenSim file: {e}") from None
        try:
            self.root = self._parse(raw)
        except Exception as e:  # expat error
            latin1 = _not_utf8(raw)
            if latin1 is None:
                raise ValueError(f"{self.path}: malformed XML: {e}") from None
            line = raw[:latin1].count(b"\n") + 1
            try:  # OpenSim reads such a file byte by byte: a Latin-1 (Windows) character, e.g. in a comment
                self.root = self._parse(raw, "ISO-8859-1")
            except Exception:
                raise ValueError(f"{self.path}: malformed XML: {e} (and the file is not UTF-8: byte "
                                 f"0x{raw[latin1]:02x} on line {line}; save it as UTF-8)") from None
            warnings.warn(f"{self.path}:{line}: the file is not UTF-8 (byte "
                          f"0x{raw[latin1]:02x}); read as Latin-1 (Windows-1252), as OpenSim reads it: check the "
                          "names on that line, or save the file as UTF-8", stacklevel=3)

    def _parse(self, raw: bytes, encoding: str | None = None):
        """The element tree of ``raw``, each element's line kept in :attr:`lines`; ``encoding``
        overrides the document's declaration."""
        self.lines: dict[Any, int] = {}
        builder = ET.TreeBuilder()
        parser = ParserCreate(encoding)

        def start(tag, attrs):
            el = builder.start(tag, attrs)
            self.lines[el] = parser.CurrentLineNumber

        parser.StartElementHandler = start
        parser.EndElementHandler = builder.end
        parser.CharacterDataHandler = builder.data
        parser.Parse(raw, True)
        return builder.close()

    def where(self, el) -> str:
        name = el.get("name")
        label = f"<{el.tag}{' name=' + repr(name) if name else ''}>"
        return f"{self.path}:{self.lines.get(el, '?')}: {label}"

    def error(self, el, msg: str, cls=ValueError):
        return cls(f"{self.where(el)}: {msg}")


def _not_utf8(raw: bytes) -> int | None:
    """The offset of the first byte that is not UTF-8 in ``raw`` (None: all UTF-8, or another
    encoding declared, which the parser then read by its declaration)."""
    head = raw[:200].split(b"?>", 1)[0].lower()
    if b"encoding" in head and not any(e in head for e in (b"utf-8", b"utf8")):
        return None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start
    return None


def _text(el, tag, default=None):
    child = el.find(tag)
    if child is None or child.text is None or not child.text.strip():
        return default
    return child.text.strip()


def _floats(doc, el, tag, n=None, default=None):
    txt = _text(el, tag)
    if txt is None:
        if default is not None:
            return np.asarray(default, dtype=float)
        raise doc.error(el, f"missing <{tag}>")
    try:
        vals = np.asarray([float(v) for v in txt.split()], dtype=float)
    except ValueError:
        raise doc.error(el, f"<{tag}> must hold numbers, got {txt!r}") from None
    if np.isnan(vals).any():  # OpenSim reads "nan" as a number; no model means it, every result would be NaN
        raise doc.error(el, f"<{tag}> holds NaN: {txt!r}")
    if n is not None and vals.size != n:
        raise doc.error(el, f"<{tag}> must hold {n} numbers, got {vals.size}")
    return vals


#: the spellings of an XML bool read (true/false in any case, as OpenSim; also 1/0)


def _bool(el, tag, default=False, doc=None):
    """A bool property; any other text (``yes``) is refused, as OpenSim cannot read it either."""
    txt = _text(el, tag)
    if txt is None:
        return default
    value = BOOL_TEXT.get(txt.lower())
    if value is None:
        msg = (f"<{tag}> must be true or false, got {txt!r}")
        if doc is not None:
            raise doc.error(el, msg)
        raise ValueError(f"<{el.tag}{' name=' + repr(el.get('name')) if el.get('name') else ''}>: {msg}")
    return value


def _rot(axis, angle):
    axis = np.asarray(axis, float)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _xyz_body_fixed(angles):
    a = np.asarray(angles, float)
    return _rot([1, 0, 0], a[0]) @ _rot([0, 1, 0], a[1]) @ _rot([0, 0, 1], a[2])


def _tf(rot=None, trans=None):
    t = np.eye(4)
    if rot is not None:
        t[:3, :3] = rot
    if trans is not None:
        t[:3, 3] = trans
    return t


def _inv(t):
    out = np.eye(4)
    out[:3, :3] = t[:3, :3].T
    out[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return out


def _coordinate_elements(joint):
    out = []
    cs = joint.find("coordinates")  # 4.x
    if cs is not None:
        out += [c for c in cs if c.tag == "Coordinate"]
    cs = joint.find("CoordinateSet")  # 3.x
    if cs is not None and cs.find("objects") is not None:
        out += [c for c in cs.find("objects") if c.tag == "Coordinate"]
    return out


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


# --------------------------------------------------------------------------------------------
# functions
# --------------------------------------------------------------------------------------------


def _function_element(doc, holder):
    """The single OpenSim Function element inside ``holder`` (3.x wraps it in <function>)."""
    kids = [c for c in holder if c.tag in FUNCTION_TYPES]
    if len(kids) == 1:
        return kids[0]
    for c in holder:
        if c.tag not in FUNCTION_TYPES and len(c):
            inner = [g for g in c if g.tag in FUNCTION_TYPES]
            if len(inner) == 1 and c.tag in ("function", "coupled_coordinates_function", "x_location",
                                             "y_location", "z_location", "function_"):
                return inner[0]
    unknown = [c.tag for c in holder if len(c) or c.tag[0].isupper()]
    raise doc.error(
        holder,
        f"expected exactly one function of the supported types {FUNCTION_TYPES}, found {unknown}",
        NotImplementedError,
    )


#: properties of a TransformAxis other than its function (3.x wraps the function in <function>)
_TRANSFORM_AXIS_PROPERTIES = ("coordinates", "axis")


def _has_function(holder) -> bool:
    """Whether a TransformAxis names a function (anything but its other properties or an empty wrapper)."""
    for c in holder:
        if c.tag in _TRANSFORM_AXIS_PROPERTIES:
            continue
        if c.tag == "function" and len(c) == 0 and not (c.text or "").strip():
            continue
        return True
    return False


def _is_identity_function(doc, holder) -> bool:
    """A ``LinearFunction`` with coefficients exactly ``1 0``: a translation dof that
    ``SpatialTransform::scale`` leaves unscaled."""
    fel = _function_element(doc, holder)
    return fel.tag == "LinearFunction" and list(_floats(doc, fel, "coefficients", 2, default=[1.0, 0.0])) == [1.0, 0.0]


#: the properties of each 1-D function element (OpenSim's, plus a MultiplierFunction's inner function)
_FUNCTION_PROPERTIES = {
    "Constant": ("value",), "LinearFunction": ("coefficients",), "PolynomialFunction": ("coefficients",),
    "SimmSpline": ("x", "y"), "NaturalCubicSpline": ("x", "y"), "PiecewiseLinearFunction": ("x", "y"),
    "GCVSpline": ("half_order", "error_variance", "x", "y"), "MultiplierFunction": ("function", "scale", *FUNCTION_TYPES),
}


def _note_unknown_children(doc, el):
    """List in ``doc.unused`` the children of a function element that are none of its properties
    (a misspelt ``<half_ordr>`` leaves the default in force; OpenSim ignores them too)."""
    known = _FUNCTION_PROPERTIES.get(el.tag, ())
    for c in el:
        if isinstance(c.tag, str) and c.tag not in known:
            note = (f"line {doc.lines.get(c, '?')} <{c.tag}> in <{el.tag}{' name=' + repr(el.get('name')) if el.get('name') else ''}> "
                    f"(line {doc.lines.get(el, '?')}; not a property of {el.tag}: check the spelling)")
            if note not in doc.unused:
                doc.unused.append(note)


def _pp(doc, el) -> PPData:
    """A 1-D OpenSim function as piecewise-polynomial data."""
    # here, not at the top: the maps import JAX, which reading a file's elements (`mbjax info`) must not
    from ...maps.gcv_spline import pp_gcv_spline
    from ...maps.piecewise import pp_constant, pp_linear, pp_piecewise_linear, pp_polynomial
    from ...maps.simm_spline import pp_simm_spline

    tag = el.tag
    if hasattr(doc, "unused"):
        _note_unknown_children(doc, el)
    if tag == "Constant":
        return pp_constant(_floats(doc, el, "value", 1)[0])
    if tag == "LinearFunction":
        c = _floats(doc, el, "coefficients", 2, default=[1.0, 0.0])  # OpenSim's default: the identity
        return pp_linear(c[0], c[1])
    if tag in ("SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction"):
        x = _floats(doc, el, "x")
        y = _floats(doc, el, "y")
        try:
            # OpenSim 4.x registers <NaturalCubicSpline> as an alias of SimmSpline and evaluates it
            # with SIMM's end conditions, not natural ones (checked against opensim 4.6)
            return {"SimmSpline": pp_simm_spline, "NaturalCubicSpline": pp_simm_spline,
                    "PiecewiseLinearFunction": pp_piecewise_linear}[tag](x, y)
        except ValueError as e:
            raise doc.error(el, str(e)) from None
    if tag == "PolynomialFunction":
        return pp_polynomial(_floats(doc, el, "coefficients"))
    if tag == "MultiplierFunction":
        scale = _floats(doc, el, "scale", 1, default=[1.0])[0]
        holder = el.find("function")
        inner = _function_element(doc, holder if holder is not None else el)
        return _pp(doc, inner).scaled(scale)
    if tag == "GCVSpline":
        x = _floats(doc, el, "x")
        y = _floats(doc, el, "y")
        if _text(el, "half_order") is None:  # OpenSim's default makes degree 2*0-1, which GCVSPL refuses
            raise doc.error(el, "GCVSpline without <half_order> (OpenSim refuses it too: degree must be positive and "
                            "odd); give <half_order>3</half_order> for a quintic spline (<degree> is no property)")
        half = _floats(doc, el, "half_order", 1)[0]
        variance = _floats(doc, el, "error_variance", 1, default=[0.0])[0]
        if variance != 0.0:
            raise doc.error(
                el,
                f"GCVSpline with error_variance={variance:g} is a smoothing spline whose smoothing parameter "
                "OpenSim finds iteratively (GCVSPL mode 3); only error_variance=0 (interpolating natural "
                "spline) is supported",
                NotImplementedError,
            )
        if half != int(half):
            raise doc.error(el, f"<half_order> must be an integer, got {half}")
        try:
            return pp_gcv_spline(x, y, int(half))
        except ValueError as e:
            raise doc.error(el, str(e)) from None
    raise doc.error(el, f"unsupported function type; supported: {FUNCTION_TYPES}", NotImplementedError)
