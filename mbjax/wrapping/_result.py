"""What one wrap surface returns for one straight path segment (OpenSim's ``WrapResult``).

Every surface function (``wrap_cylinder``, ``wrap_sphere``, ``wrap_ellipsoid``, ``wrap_torus``)
takes the two segment end points **in the wrap object's own frame** and the surface's dimensions
and quadrant as arrays (so one call can be ``jax.vmap``-ed over poses *and* over the wrap objects
of one kind), and returns a :class:`WrapLine`.  The codes are OpenSim's ``WrapObject::WrapAction``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

#: the segment misses the object (OpenSim ``noWrap``)
NO_WRAP = 0
#: an end point lies inside the object (``insideRadius``): no wrap
INSIDE = 1
#: a wrap exists, but another segment of the path may wrap with a smaller length change (``wrapped``)
WRAPPED = 2
#: the straight segment intersects the object: this segment must wrap (``mandatoryWrap``)
MANDATORY = 3


class WrapLine(NamedTuple):
    """One segment over one surface, all in the wrap object's frame.

    ``code`` (int32): one of :data:`NO_WRAP`, :data:`INSIDE`, :data:`WRAPPED`, :data:`MANDATORY`,
    exactly as OpenSim's ``wrapLine`` returns it.  ``has_path``: whether OpenSim would have produced
    surface points (``aFlag`` and a non-empty ``wrap_pts``); a code of ``WRAPPED``/``MANDATORY``
    without a path means no wrap is inserted.  ``r1``, ``r2`` ``(3,)``: the tangent points where the
    path leaves the straight line from p1 and rejoins the one to p2.  ``length``: the length of the
    path on the surface from r1 to r2 (OpenSim's ``wrap_path_length``).
    """

    code: jnp.ndarray
    has_path: jnp.ndarray
    r1: jnp.ndarray
    r2: jnp.ndarray
    length: jnp.ndarray

    @property
    def wraps(self):
        """Whether this result inserts r1, r2 into the path."""
        return (self.code >= WRAPPED) & self.has_path
