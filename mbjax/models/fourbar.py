"""Planar four-bar linkage of Ehsani §4-3 A (Eq. 121-122, Fig. 3).

Three moving bodies in a chain from the ground pivot O = (0, 0); the loop is cut at the third
body's distal pivot, which the closure holds at (l0, 0).  Joint variables are the relative angles
θ1, θ2, θ3 (z axis); the generalized coordinate ``q`` is the height of body 2's centre of mass:

    l1 S1 + lcm2 S12 - q = 0,   (l2 - lcm2) S12 + l3 S123 + q = 0,   l1 C1 + l2 C12 + l3 C123 - l0 = 0.

Table 1 of the seed is missing (ERRATA), so the lengths are ours, chosen so that q spans -2..2
inside one assembly branch with margin (the branch is monotone in q on about [-3.87, 2.58], the
ends being the toggle positions where ∂g/∂f is singular):

    l0 = 2, l1 = 3, l2 = 6, lcm2 = 3, l3 = 5.5   (a Grashof double crank; units of length)

Branch: at q = 0, θ ≈ (-0.6441, 1.2883, -3.4520) rad.  Bodies are uniform slender rods of unit
mass per length along their local x axis (frame origin at the proximal pivot).  Point p is the
coupler point ``FOURBAR_POINT`` = (4, 1, 0) in body 2's frame (Fig. 3's p is not recoverable).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._builder import ModelBuilder
from ..constraints._constraint import LoopConstraint
from ..constraints.absolute import PlanarChain, drive_rows
from ..constraints.implicit import METHODS, ImplicitMap
from ..constraints.premodel import premodel
from .linkage import Linkage, rod

FOURBAR_LENGTHS = {"l0": 2.0, "l1": 3.0, "l2": 6.0, "lcm2": 3.0, "l3": 5.5}
FOURBAR_RANGE = (-2.0, 2.0)
FOURBAR_POINT = (4.0, 1.0, 0.0)  # coupler point p in body 2's frame
_F_REF = (-0.6441, 1.2883, -3.4520)


def fourbar_residual(p, f, q):
    """Eq. 121 with Eq. 122's S/C shorthand."""
    t1 = f[0]
    t12 = f[0] + f[1]
    t123 = t12 + f[2]
    qq = q[0]
    return jnp.stack(
        [
            p["l1"] * jnp.sin(t1) + p["lcm2"] * jnp.sin(t12) - qq,
            (p["l2"] - p["lcm2"]) * jnp.sin(t12) + p["l3"] * jnp.sin(t123) + qq,
            p["l1"] * jnp.cos(t1) + p["l2"] * jnp.cos(t12) + p["l3"] * jnp.cos(t123) - p["l0"],
        ]
    )


def fourbar_constraint(lengths=None, **options) -> LoopConstraint:
    """The loop constraint of Eq. 121 (joints θ1..θ3, coordinate ``q``)."""
    p = dict(FOURBAR_LENGTHS if lengths is None else lengths)
    return LoopConstraint(
        fourbar_residual, {k: jnp.asarray(float(v)) for k, v in p.items()}, ("q",),
        ("theta1", "theta2", "theta3"), [0.0], _F_REF, **options,
    )


def fourbar(method: str = "projection", *, lengths=None, step=1e-4, premodel_step=0.01, **options) -> Linkage:
    """Four-bar :class:`Linkage` whose θ1..θ3 maps use ``method``.

    ``method``: ``"projection"``, ``"implicit"``, ``"molecule"`` (an :class:`ImplicitMap`; one
    shared solve per evaluation) or ``"premodel"`` (natural cubic splines fitted to a sweep of
    ``FOURBAR_RANGE`` with ``premodel_step``, the seed's pre-modelling approach).
    """
    con = fourbar_constraint(lengths, **options)
    p = {k: float(v) for k, v in con.params.items()}
    if method in METHODS:
        maps = [ImplicitMap(con, j, method=method, step=step) for j in range(3)]
    elif method == "premodel":
        n = int(round((FOURBAR_RANGE[1] - FOURBAR_RANGE[0]) / premodel_step)) + 1
        grid = np.linspace(FOURBAR_RANGE[0], FOURBAR_RANGE[1], n)
        maps = premodel(con, [grid], kind="spline")
    else:
        raise ValueError(f"fourbar: unknown method {method!r}; supported: {METHODS + ('premodel',)}")
    b = ModelBuilder(["q"], gravity=[0.0, -9.81, 0.0])
    b.add_body("link1", parent="ground", axis=[0, 0, 1], map=maps[0], **rod(p["l1"]))
    b.add_body("link2", parent="link1", axis=[0, 0, 1], translation=[p["l1"], 0, 0], map=maps[1],
               **rod(p["l2"], p["lcm2"]))
    b.add_body("link3", parent="link2", axis=[0, 0, 1], translation=[p["l2"], 0, 0], map=maps[2], **rod(p["l3"]))
    return Linkage(b.build(), con, "link2", FOURBAR_POINT)


#: Hermite knots (t, q, q̇) of the drive q(t) used by the experiments (Fig. 4 is not recoverable)
FOURBAR_TRAJECTORY = ((0.0, 1.0, 2.5, 4.0), (0.0, 1.9, -1.9, 0.5), (0.5, 0.0, 0.0, 0.0))


def fourbar_chain(lengths=None):
    """The same linkage in absolute coordinates (:class:`~mbjax.constraints.absolute.PlanarChain`),
    driven by the height of body 2's centre of mass (an independent route for the tests)."""
    p = dict(FOURBAR_LENGTHS if lengths is None else lengths)
    return PlanarChain(
        [p["l1"], p["l2"], p["l3"]], [p["l1"] / 2, p["lcm2"], p["l3"] / 2], p["l0"], drive_rows(3, [[(1.0, 1, 1)]])
    )
