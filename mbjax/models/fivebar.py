"""Planar five-bar linkage of Ehsani §4-3 B (Eq. 123, Fig. 7, Table 2).

Four moving bodies in a chain from the ground pivot (0, 0); the loop is cut at body 4's distal
pivot, held at (l0, 0).  The generalized coordinates are the first two joint angles,
q = (θ1, θ2); the dependent joint variables θ3, θ4 satisfy

    l1 S1 + l2 S12 + l3 S123 + l4 S1234 = 0,   l1 C1 + l2 C12 + l3 C123 + l4 C1234 = l0.

Table 2: l0 = 3, l1 = 1, l2 = 1, l3 = 3, l4 = 3, lp = 2.  Point p lies on body 3 at distance lp
from its proximal pivot (Fig. 7 is missing from the seed; this is our reading).  With these
lengths the loop always assembles (1 <= |CD| <= 5 < l3 + l4) and is never singular; the branch is
the one with θ3 ≈ -1.2327, θ4 ≈ -1.8523 at q = (π/2, 0) (body 3 pointing up).  Bodies are uniform rods of unit mass
per length.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._builder import ModelBuilder
from ..constraints._constraint import LoopConstraint
from ..constraints.absolute import PlanarChain, drive_rows
from ..constraints.implicit import METHODS, ImplicitMap
from .linkage import Linkage, rod

FIVEBAR_LENGTHS = {"l0": 3.0, "l1": 1.0, "l2": 1.0, "l3": 3.0, "l4": 3.0, "lp": 2.0}
_Q_REF = (np.pi / 2, 0.0)
_F_REF = (-1.2327, -1.8523)


def fivebar_residual(p, f, q):
    """Eq. 123 (f = (θ3, θ4), q = (θ1, θ2))."""
    t1 = q[0]
    t12 = t1 + q[1]
    t123 = t12 + f[0]
    t1234 = t123 + f[1]
    return jnp.stack(
        [
            p["l1"] * jnp.sin(t1) + p["l2"] * jnp.sin(t12) + p["l3"] * jnp.sin(t123) + p["l4"] * jnp.sin(t1234),
            p["l1"] * jnp.cos(t1) + p["l2"] * jnp.cos(t12) + p["l3"] * jnp.cos(t123) + p["l4"] * jnp.cos(t1234)
            - p["l0"],
        ]
    )


def fivebar_constraint(lengths=None, **options) -> LoopConstraint:
    """The loop constraint of Eq. 123 (joints θ3, θ4; coordinates ``q1`` = θ1, ``q2`` = θ2)."""
    p = dict(FIVEBAR_LENGTHS if lengths is None else lengths)
    p.pop("lp", None)
    return LoopConstraint(
        fivebar_residual, {k: jnp.asarray(float(v)) for k, v in p.items()}, ("q1", "q2"),
        ("theta3", "theta4"), _Q_REF, _F_REF, **options,
    )


def fivebar(method: str = "projection", *, lengths=None, step=1e-4, **options) -> Linkage:
    """Five-bar :class:`Linkage`; θ1, θ2 are the coordinates, θ3, θ4 use ``method``.

    ``method``: ``"projection"``, ``"implicit"`` or ``"molecule"`` (:class:`ImplicitMap`, one
    shared solve per evaluation).  Pre-models on a grid: :func:`mbjax.constraints.premodel`.
    """
    if method not in METHODS:
        raise ValueError(f"fivebar: unknown method {method!r}; supported: {METHODS}")
    full = dict(FIVEBAR_LENGTHS if lengths is None else lengths)
    con = fivebar_constraint(full, **options)
    p = {k: float(v) for k, v in full.items()}
    maps = [ImplicitMap(con, j, method=method, step=step) for j in range(2)]
    b = ModelBuilder(["q1", "q2"], gravity=[0.0, -9.81, 0.0])
    b.add_body("link1", parent="ground", axis=[0, 0, 1], map="q1", **rod(p["l1"]))
    b.add_body("link2", parent="link1", axis=[0, 0, 1], translation=[p["l1"], 0, 0], map="q2", **rod(p["l2"]))
    b.add_body("link3", parent="link2", axis=[0, 0, 1], translation=[p["l2"], 0, 0], map=maps[0], **rod(p["l3"]))
    b.add_body("link4", parent="link3", axis=[0, 0, 1], translation=[p["l3"], 0, 0], map=maps[1], **rod(p["l4"]))
    return Linkage(b.build(), con, "link3", (p["lp"], 0.0, 0.0))


#: Hermite knots (t, q, q̇) of the drives q1(t), q2(t) used by the experiments (Fig. 8 is missing)
FIVEBAR_TRAJECTORY = (
    (0.0, 1.0, 2.0, 3.0),
    ((np.pi / 2, 0.0), (np.pi, 0.8), (3 * np.pi / 2, -0.8), (2 * np.pi, 0.3)),
    ((1.0, 0.0), (2.0, 0.0), (2.0, 0.0), (1.0, 0.5)),
)


def fivebar_chain(lengths=None):
    """The same linkage in absolute coordinates, driven by φ1 = q1 and φ2 - φ1 = q2 (independent route)."""
    p = dict(FIVEBAR_LENGTHS if lengths is None else lengths)
    ls = [p["l1"], p["l2"], p["l3"], p["l4"]]
    return PlanarChain(ls, [x / 2 for x in ls], p["l0"], drive_rows(4, [[(1.0, 0, 2)], [(1.0, 1, 2), (-1.0, 0, 2)]]))
