"""What the built-in planar linkages share: the :class:`Linkage` record and uniform rod bodies."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._model import Model
from ..constraints._constraint import LoopConstraint


class Linkage(NamedTuple):
    """A closed-chain model: the cut-open ``model``, its loop ``constraint`` and point p."""

    model: Model
    constraint: LoopConstraint
    point_body: str
    point: tuple[float, float, float]


def rod(length: float, com: float | None = None) -> dict:
    """``add_body`` keywords of a slender rod of unit mass per length along its body x axis.

    ``com``: distance of the centre of mass from the proximal pivot (``length / 2`` if None).
    """
    m = float(length)
    c = length / 2 if com is None else com
    i = m * length**2 / 12 + m * (c - length / 2) ** 2  # about the COM (uniform rod: c = l/2)
    return dict(mass=m, com=[c, 0.0, 0.0], inertia=np.diag([0.0, i, i]))
