"""OpenSim itself as a reference: lengths, body poses and moment arms of an ``.osim`` file.

For validating mbjax against OpenSim (the ``validation`` tests, the shoulder experiment, your own
checks).  Needs the ``opensim`` package (``pip install opensim``); imported lazily.

Coupled coordinates are filled from OpenSim's own coupler functions (repeated passes settle chains
of couplers in any order), so poses lie exactly on the constraint manifold without ``assemble``'s
tolerance.  Moment arms are ``-dL/dq`` by Richardson-extrapolated central differences of
``GeometryPath.getLength`` along that manifold (fourth-order one-sided differences at the
coordinate range ends, where OpenSim clamps), because ``Muscle.computeMomentArm`` is wrong for coupled coordinates
(opensim-core #3805); :meth:`OpenSimReference.compute_moment_arm` gives OpenSim's own value too.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


class OpenSimReference:
    """An OpenSim model and state, driven by independent coordinate values."""

    def __init__(self, path: str):
        try:
            import opensim as osim
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("OpenSimReference needs the opensim package: pip install opensim") from e
        self.osim = osim
        self.model = osim.Model(str(path))
        self.state = self.model.initSystem()
        cs = self.model.getCoordinateSet()
        self.coords = {cs.get(i).getName(): cs.get(i) for i in range(cs.getSize())}
        self.couplers = []
        cons = self.model.getConstraintSet()
        for i in range(cons.getSize()):
            c = osim.CoordinateCouplerConstraint.safeDownCast(cons.get(i))
            if c is None:
                continue
            names = c.getIndependentCoordinateNames()
            scale = osim.PropertyHelper.getValueDouble(c.getPropertyByName("scale_factor"))
            self.couplers.append(
                ([names.get(k) for k in range(names.getSize())], c.getDependentCoordinateName(), c.getFunction(), scale)
            )
        ms = self.model.getMuscles()
        self.muscles = {ms.get(i).getName(): ms.get(i) for i in range(ms.getSize())}
        #: every force with a path (muscles, path actuators), as :func:`mbjax.io.load_osim` lists
        #: them in ``model.muscle_names`` (PathSpring and Ligament are force elements, not listed there)
        self.paths = {}
        fs = self.model.getForceSet()
        for i in range(fs.getSize()):
            f = fs.get(i)
            for cls in ("PathActuator",):
                down = getattr(osim, cls).safeDownCast(f)
                if down is not None:
                    self.paths[f.getName()] = down
                    break

    def muscle_names(self) -> list[str]:
        return list(self.muscles)

    def set(self, names: Sequence[str], q) -> None:
        """Set independent coordinates, fill the coupled ones, realize positions."""
        for n, v in zip(names, q):
            self.coords[n].setValue(self.state, float(v), False)
        for _ in self.couplers:
            for indep, dep, fn, scale in self.couplers:
                x = self.osim.Vector([self.coords[n].getValue(self.state) for n in indep])
                self.coords[dep].setValue(self.state, scale * fn.calcValue(x), False)
        self.model.realizePosition(self.state)

    def lengths(self, names, q, muscles: Sequence[str] | None = None) -> np.ndarray:
        self.set(names, q)
        muscles = self.muscle_names() if muscles is None else muscles
        return np.array([self.paths[m].getLength(self.state) for m in muscles])

    def body_pose(self, name: str):
        """Rotation ``(3, 3)`` and origin ``(3,)`` of body ``name`` in ground, at the current state."""
        x = self.model.getBodySet().get(name).getTransformInGround(self.state)
        r = np.array([[x.R().get(i, j) for j in range(3)] for i in range(3)])
        p = np.array([x.p().get(i) for i in range(3)])
        return r, p

    def moment_arms(self, names, q, wrt: str, muscles=None, h: float = 1e-3) -> np.ndarray:
        """-dL/d(wrt): Richardson extrapolation of central differences (h, h/2; error O(h⁴))."""
        names = list(names)
        q = np.asarray(q, dtype=float)
        k = names.index(wrt)
        c = self.coords[wrt]
        if c.getRangeMin() <= q[k] - h and q[k] + h <= c.getRangeMax():
            d1 = self._central(names, q, k, muscles, h)
            d2 = self._central(names, q, k, muscles, h / 2)
            return -(4 * d2 - d1) / 3
        return self._one_sided(names, q, k, muscles)

    def _central(self, names, q, k, muscles, h):
        dq = np.zeros(len(q))
        dq[k] = h
        return (self.lengths(names, q + dq, muscles) - self.lengths(names, q - dq, muscles)) / (2 * h)

    def _one_sided(self, names, q, k, muscles, h=1e-3):
        """Fourth-order one-sided difference into the coordinate range (error O(h⁴))."""
        c = self.coords[names[k]]
        sign = 1.0 if q[k] - h < c.getRangeMin() else -1.0
        dq = np.zeros(len(q))
        dq[k] = sign * h
        stencil = (-25.0, 48.0, -36.0, 16.0, -3.0)
        d = sum(w * self.lengths(names, q + i * dq, muscles) for i, w in enumerate(stencil)) / (12.0 * h)
        return -sign * d

    def compute_moment_arm(self, names, q, wrt: str, muscles=None) -> np.ndarray:
        """OpenSim's own ``Muscle.computeMomentArm`` (wrong for coupled coordinates, #3805)."""
        self.set(names, q)
        muscles = self.muscle_names() if muscles is None else muscles
        return np.array([self.muscles[m].computeMomentArm(self.state, self.coords[wrt]) for m in muscles])
