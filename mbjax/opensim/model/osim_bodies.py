"""The bodies of an imported OpenSim model: mass properties, inertia checks, and the chain of mbjax
bodies each joint becomes."""

from __future__ import annotations

import warnings

import numpy as np

from ..._builder import ModelBuilder
from ...maps.constant import Constant
from .osim_older_documents import INERTIA_VERSION, opensim_rounded
from .osim_xml import _coordinate_elements, _floats, _inv, _rot, _text, _tf

#: SimTK::SignificantReal (eps^(7/8)): OpenSim zeroes the inertia of a body with |mass| at most this
_SIGNIFICANT_REAL = float(np.finfo(float).eps ** 0.875)


class _BodiesMixin:
    """:class:`~mbjax.opensim.model.osim._Loader`'s bodies: mass properties and chains."""

    def _warn_inertias(self):
        bad, massless = [], []
        for name, el in self.bodies.items():
            if name not in self._inertias:
                continue
            if name in self._massless:
                massless.append(name)
                continue
            why = _inertia_problem(self._inertias[name])
            if why:
                bad.append(f"{name} ({why})")
        parts = []
        if bad:
            parts.append(f"{len(bad)} body(ies) have an inertia no mass distribution has, used as given (as "
                         f"OpenSim does): {'; '.join(bad)}")
        if massless:
            parts.append(f"massless body(ies) with non-zero inertia, set to zero as OpenSim does: {', '.join(massless)}")
        if parts:
            warnings.warn(f"{self.doc.path}: " + ". ".join(parts), stacklevel=4)

    def _warn_massless_terminal(self):
        """Warn about the coordinates that move only bodies without mass or inertia (a massless
        terminal body on a joint with dofs, which Simbody's rule for massless bodies forbids): the
        mass matrix is singular there, so forward dynamics fails while kinematics is fine."""
        children: dict[str, list[str]] = {}
        for j, parent, child, _, _ in self.joints:
            children.setdefault(parent, []).append(child)

        def massless(body):
            return (self._masses.get(body, 0.0) == 0.0 and not np.any(self._inertias.get(body, 0.0))
                    and all(massless(c) for c in children.get(body, ())))

        # coordinates a coupler reads also move the coupled joints: not judged here
        driving = {c for v in self.coords.couplers.values()
                   for c in (v[1] if v[1] is not None else getattr(v[2], "coordinates", ()))}
        bad = []
        for j, parent, child, _, _ in self.joints:
            names = [c.get("name") for c in _coordinate_elements(j)]
            coords = [n for n in names if n in self.coords.info and n not in driving
                      and self.coords.role(n) == "independent"]
            if coords and massless(child):
                bad.append(f"body {child!r} (joint {j.get('name')!r}, line {self.doc.lines.get(j, '?')}: "
                           f"{', '.join(coords)})")
        if bad:
            warnings.warn(f"{self.doc.path}: {len(bad)} body(ies) with zero mass and inertia and no massive body "
                          "beyond them, so the mass matrix is singular in their joint's coordinates (Simbody's "
                          "rule: a massless body must not be terminal on a joint with dofs); kinematics works, "
                          "forward dynamics will fail: "
                          + "; ".join(bad) + ". Give the body a mass and inertia, or lock or weld its joint",
                          stacklevel=4)

    def _mass_props(self, el):
        doc = self.doc
        if _text(el, "mass") is None:  # Body::getMassProperties: "unspecified or negative mass"
            where = el.find("mass") if el.find("mass") is not None else el
            raise doc.error(where, f"body {el.get('name')!r} has {'an empty' if el.find('mass') is not None else 'no'} "
                            "<mass> (OpenSim refuses it too: unspecified mass); give its mass in kg")
        mass = float(_floats(doc, el, "mass", 1)[0])
        if not mass >= 0 or not np.isfinite(mass):  # OpenSim's Body refuses a negative mass too
            raise doc.error(el.find("mass"), f"body {el.get('name')!r}: mass must be finite and >= 0, got {mass}")
        com = _floats(doc, el, "mass_center", 3, default=[0, 0, 0])
        if el.find("inertia") is not None:
            v = _floats(doc, el, "inertia", 6)
        else:
            v = np.array([float(_floats(doc, el, t, 1, default=[0.0])[0]) for t in
                          ("inertia_xx", "inertia_yy", "inertia_zz", "inertia_xy", "inertia_xz", "inertia_yz")])
            if self.version < INERTIA_VERSION:  # as OpenSim rounds them converting
                v = np.array(opensim_rounded(v))
        if not (np.isfinite(mass) and np.all(np.isfinite(v))):
            raise doc.error(el, f"mass {mass} and inertia {v} must be finite")
        inertia = np.array([[v[0], v[3], v[4]], [v[3], v[1], v[5]], [v[4], v[5], v[2]]])
        if abs(mass) <= _SIGNIFICANT_REAL and np.linalg.norm(v) > _SIGNIFICANT_REAL:
            # OpenSim's Body::getInertia: "massless but nonzero inertia provided. Inertia reset to zero"
            self._massless.add(el.get("name"))
            inertia = np.zeros((3, 3))
        return mass, com, inertia

    def _add_chain(self, b: ModelBuilder, item):
        j, parent, child, x_pf, x_bc = item
        el = self.bodies.get(child)
        if el is None:
            raise self.doc.error(j, f"child body {child!r} is not in the BodySet")
        mass, com, inertia = self._mass_props(el)
        self._inertias[child] = inertia
        self._masses[child] = mass
        inertia = None  # set after ModelBuilder.build (see build)
        pending = x_pf.copy()
        # the offset translations as s_parent * unit_parent + s_child * unit_child (OpenSim's uniform
        # scaling of the joint frames and of the constant translation functions; see OsimScaling)
        # (+ unit_fixed, the translations OpenSim never scales: constant generalized coordinates)
        unit_parent, unit_fixed = x_pf[:3, 3].copy(), np.zeros(3)
        steps = []
        for kind, axis, axname, m, const, weight in self._axes(j):
            if m is None:
                if const:
                    if kind == "prismatic":
                        if weight:
                            unit_parent = unit_parent + pending[:3, :3] @ (axis * const * weight)
                        else:
                            unit_fixed = unit_fixed + pending[:3, :3] @ (axis * const)
                    pending = pending @ (_tf(_rot(axis, const)) if kind == "revolute" else _tf(None, axis * const))
                continue
            steps.append((kind, axis, axname, m, pending, unit_parent, unit_fixed, weight))
            pending = np.eye(4)
            unit_parent, unit_fixed = np.zeros(3), np.zeros(3)
        tail = pending @ _inv(x_bc)
        unit_child = pending[:3, :3] @ (-x_bc[:3, :3].T @ x_bc[:3, 3])
        need_weld = not np.allclose(tail, np.eye(4), atol=0, rtol=0) or not steps
        current = parent
        for k, (kind, axis, axname, m, offset, unit_p, unit_f, weight) in enumerate(steps):
            last = k == len(steps) - 1 and not need_weld
            name = child if last else f"{child}/{j.get('name')}/{axname}"
            b.add_body(name, parent=current, joint=kind, axis=axis, map=m, offset=offset,
                       mass=mass if last else 0.0, com=com if last else (0, 0, 0),
                       inertia=inertia if last else None)
            self.scaling[name] = (parent, child, unit_f, unit_p, np.zeros(3), weight)
            current = name
        if need_weld:
            b.add_body(child, parent=current, joint="revolute", axis=[0, 0, 1], map=Constant(0.0),
                       offset=tail, mass=mass, com=com, inertia=inertia)
            self.scaling[child] = (parent, child, unit_fixed, unit_parent, unit_child, 0.0)


def _inertia_problem(inertia: np.ndarray) -> str | None:
    """Why an inertia tensor (about the centre of mass) belongs to no mass distribution, or None.

    Its principal moments must be non-negative and satisfy the triangle inequality (slack 1e-9 of the
    largest moment).  Simbody (release builds, so OpenSim) does not check this.
    """
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-9 * float(np.abs(eig).max())
    moments = " ".join(f"{e:.4g}" for e in eig)
    if eig[0] < -tol:
        return f"not positive semidefinite, principal moments {moments}"
    if eig[0] + eig[1] < eig[2] - tol:
        return f"principal moments {moments} violate the triangle inequality"
    return None
