"""The coordinates of an OpenSim file and their roles: independent, dependent (the coordinate a
``CoordinateCouplerConstraint`` eliminates, a joint map of the independent ones) or locked."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...maps.affine import Affine
from ...maps.composed_polynomial import ComposedPolynomial
from ...maps.constant import Constant
from ...maps.multivariate import MultivariatePolynomial
from ...maps.piecewise import PiecewisePolynomial, PPData
from .osim_xml import _bool, _floats, _function_element, _pp, _text

#: SimTK::SqrtEps: the slack OpenSim allows a clamped coordinate's default beyond its range
_SQRT_EPS = float(np.sqrt(np.finfo(float).eps))


class _Coords:
    """OpenSim coordinates -> mbjax maps (independent / dependent / locked).

    A dependent (coupled) coordinate is resolved to a map of independent coordinates on first use:
    one independent coordinate (any 1-D function), several (``MultivariatePolynomialFunction``), a
    chain of couplers (the map of a dependent coordinate is composed with its coupler), or a
    locked one (a constant).  Cycles are reported.
    """

    def __init__(self):
        self.order: list[str] = []
        self.info: dict[str, dict] = {}
        #: dependent name -> (constraint element, independent names, function element, scale)
        #: or (None, None, caller-supplied inner map, None)
        self.couplers: dict[str, tuple] = {}
        self._resolved: dict[str, Any] = {}
        self._resolving: list[str] = []

    def independent(self):
        return [c for c in self.order if self.role(c) == "independent"]

    def role(self, name):
        if name in self.couplers:
            return "dependent"
        if self.info[name]["locked"]:
            return "locked"
        return "independent"

    def inner_of(self, doc, dependent: str):
        """The dependent coordinate as a (single) joint map of the independent coordinates."""
        if dependent in self._resolved:
            return self._resolved[dependent]
        con, indep, fel, scale = self.couplers[dependent]
        if dependent in self._resolving:
            chain = " -> ".join(self._resolving + [dependent])
            raise doc.error(con, f"circular chain of coordinate couplers: {chain}")
        self._resolving.append(dependent)
        if con is None:  # caller-supplied coupling
            inner = fel
        elif fel.tag == "MultivariatePolynomialFunction":
            dim = int(_floats(doc, fel, "dimension", 1)[0])
            order = int(_floats(doc, fel, "order", 1)[0])
            if dim != len(indep):
                raise doc.error(fel, f"dimension {dim} but the coupler names {len(indep)} independent "
                                f"coordinates {indep}")
            for c in indep:
                if self.role(c) != "independent":
                    raise doc.error(con, f"a MultivariatePolynomialFunction coupler of the {self.role(c)} "
                                    f"coordinate {c!r} is not supported", NotImplementedError)
            try:
                inner = MultivariatePolynomial(indep, _floats(doc, fel, "coefficients"), order).scaled(scale)
            except ValueError as e:
                raise doc.error(fel, str(e)) from None
        else:
            if len(indep) != 1:
                raise doc.error(con, f"a {fel.tag} reads one coordinate but the coupler names {len(indep)} "
                                f"independent coordinates {indep} (use a MultivariatePolynomialFunction)")
            inner = self.map_of(doc, con, indep[0], _pp(doc, fel).scaled(scale), "coupler")
        self._resolving.pop()
        self._resolved[dependent] = inner
        return inner

    def map_of(self, doc, el, coordinate: str, outer: PPData, kind: str):
        """Joint map for ``outer(coordinate)`` resolved to the independent coordinates."""
        if coordinate not in self.info:
            raise doc.error(el, f"unknown coordinate {coordinate!r}; coordinates are {tuple(self.order)}")
        role = self.role(coordinate)
        if role == "independent":
            return PiecewisePolynomial(coordinate, outer, kind)
        if role == "locked":
            f, _, _ = outer(np.asarray(self.info[coordinate]["default"]))
            return Constant(float(f))
        inner = self.inner_of(doc, coordinate)
        if isinstance(inner, Constant):
            f, _, _ = outer(np.asarray(float(inner.constant[0])))
            return Constant(float(f))
        if kind == "identity":  # the joint's own coordinate is the dependent one
            return inner
        if isinstance(inner, Affine) and outer.coef.shape[0] == 1 and outer.coef.shape[1] <= 2:
            c = np.pad(outer.coef[0], (0, 2 - outer.coef.shape[1]))  # c0 + c1 (u - a)
            c0, s = float(c[0] - c[1] * outer.anchors[0]), float(c[1])
            return Affine(inner.coordinates[0], s * np.asarray(inner.slope[0]), s * float(inner.offset[0]) + c0)
        return ComposedPolynomial(PiecewisePolynomial("u", outer, kind), inner)


def _looks_like_degrees(rng) -> bool:
    """A rotational range in degrees: a bound past 2 pi (but not an 'unbounded' sentinel such as
    99999.9), spanning more than two turns, and not OpenSim's default [-10, 10]."""
    big = max(abs(rng[0]), abs(rng[1]))
    return 2 * np.pi < big < 1000 and rng[1] - rng[0] > 4 * np.pi and list(rng) != [-10.0, 10.0]


class _CouplersMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s reading of the ``Coordinate`` elements and the
    ``ConstraintSet`` into ``self.coords``."""

    def _coordinate(self, c):
        doc = self.doc
        name = c.get("name")
        if name in self.coords.info:
            raise doc.error(c, f"duplicate coordinate {name!r}")
        rng = _floats(doc, c, "range", 2, default=[-10.0, 10.0])  # OpenSim's default range
        mt = _text(c, "motion_type", "rotational")
        default = float(_floats(doc, c, "default_value", 1, default=[0.0])[0])
        clamped = _bool(c, "clamped", doc=doc)
        if _bool(c, "prescribed", doc=doc) and c.find("prescribed_function") is not None and len(c.find("prescribed_function")):
            # OpenSim drives it as a function of time (a constraint); mbjax has no time-dependent coordinate
            raise doc.error(c, f"prescribed coordinate {name!r} (a function of time) is not supported",
                            NotImplementedError)
        if not np.isfinite(default):
            # OpenSim 4.6 loads an unclamped NaN/inf default (and its default pose is then NaN/inf)
            raise doc.error(c, f"coordinate {name!r}: <default_value> must be finite, got {default}")
        if not rng[0] <= rng[1]:  # OpenSim refuses it when clamped; unclamped, no range is meant
            raise doc.error(c, f"{'clamped ' if clamped else ''}coordinate {name!r}: <range> {rng[0]:g} {rng[1]:g} "
                            "has max < min (write it as min max)")
        if mt == "rotational" and c.find("range") is not None and _looks_like_degrees(rng):
            self._degree_ranges.append(f"{name} [{rng[0]:g}, {rng[1]:g}]")
        outside = not (rng[0] - _SQRT_EPS < default < rng[1] + _SQRT_EPS)
        if clamped and outside:  # OpenSim's Coordinate::extendFinalizeFromProperties refuses it
            raise doc.error(c, f"clamped coordinate {name!r}: <default_value> {default!r} is outside its "
                            f"<range> [{rng[0]!r}, {rng[1]!r}]")
        locked = _bool(c, "locked", doc=doc)
        if outside:  # OpenSim loads it (unclamped); the default pose is then outside the range
            self._default_outside.append(f"{name} ({'locked at ' if locked else ''}{default:g} not in "
                                         f"[{rng[0]:g}, {rng[1]:g}], line {doc.lines.get(c, '?')})")
        self.coords.order.append(name)
        self.coords.info[name] = dict(
            default=default,
            range=(float(rng[0]), float(rng[1])),
            clamped=clamped,
            locked=locked,
            motion_type=mt,
            element=c,
        )

    def _couplers(self):
        doc = self.doc
        cset = self.model.find("ConstraintSet")
        if cset is None or cset.find("objects") is None:
            return
        for con in cset.find("objects"):
            if not _bool(con, "isEnforced", True, doc) or _bool(con, "isDisabled", False, doc):
                continue  # a constraint OpenSim does not enforce changes nothing
            if con.tag != "CoordinateCouplerConstraint":
                if con.tag == "PointOnLineConstraint" and con.tag not in self.ignore_constraints:
                    self.point_on_line.append(con)  # eliminated by load_osim (osim_point_on_line)
                    continue
                if con.tag in self.ignore_constraints:
                    self.ignored.append((con.tag, con.get("name")))
                    continue
                raise doc.error(con, "unsupported constraint (only CoordinateCouplerConstraint and "
                                "PointOnLineConstraint). Pass "
                                f"ignore_constraints=({con.tag!r},) to load the model without it", NotImplementedError)
            indep = (_text(con, "independent_coordinate_names", "") or "").split()
            dep = _text(con, "dependent_coordinate_name")
            if not indep or dep is None:
                raise doc.error(con, "coupler needs <independent_coordinate_names> and <dependent_coordinate_name>")
            for n in indep + [dep]:
                if n not in self.coords.info:
                    raise doc.error(con, f"unknown coordinate {n!r}")
            if dep in indep:
                raise doc.error(con, f"coordinate {dep!r} is coupled to itself")
            if dep in self.coords.couplers:
                raise doc.error(con, f"coordinate {dep!r} is the dependent coordinate of two couplers")
            if self.coords.info[dep]["locked"]:
                raise doc.error(con, f"coordinate {dep!r} is locked and the dependent coordinate of this coupler: "
                                f"OpenSim holds it at its default and moves the independent {indep} to match, "
                                f"which mbjax does not; unlock {dep!r} (<locked> false), or lock the independent "
                                "coordinate at the matching value and disable the coupler", NotImplementedError)
            holder = con.find("coupled_coordinates_function")
            fel = _function_element(doc, holder if holder is not None else con)
            scale = float(_floats(doc, con, "scale_factor", 1, default=[1.0])[0])
            self.coords.couplers[dep] = (con, indep, fel, scale)
        for dep, inner in self.couplings.items():  # caller-supplied multi-coordinate couplings
            if dep not in self.coords.info:
                raise ValueError(f"{doc.path}: coupling for unknown coordinate {dep!r}")
            self.coords.couplers[dep] = (None, None, inner, None)
        for dep, inner in self.couplings.items():
            for c in inner.coordinates[0]:
                if c not in self.coords.info or self.coords.role(c) != "independent":
                    raise ValueError(f"{doc.path}: coupling of {dep!r} reads {c!r}, which is not an independent coordinate")
        for dep in list(self.coords.couplers):  # resolve now: errors surface at load, chains checked
            self.coords.inner_of(doc, dep)
