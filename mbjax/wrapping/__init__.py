"""Wrap surfaces as OpenSim defines them, in JAX: one file per surface, one shared path algorithm.

* :mod:`~mbjax.wrapping.objects`: :class:`WrapObject` (a surface fixed in a body) and
  :class:`PathWrap` (one path's use of it), as in ``WrapObjectSet`` / ``PathWrapSet``;
* one file per surface, each a single-segment ``wrapLine`` (contract in :mod:`._result`):
  :mod:`.cylinder`, :mod:`.sphere`, :mod:`.ellipsoid`, :mod:`.torus`;
* :mod:`~mbjax.wrapping.path`: OpenSim's ``applyWrapObjects`` over whole paths, static-shaped,
  read by :func:`mbjax.muscle_lengths` and :func:`mbjax.moment_arms`;
* :mod:`~mbjax.wrapping.smooth`: the smooth option beside OpenSim's algorithm, exact geodesic
  lengths over a sphere and a cylinder (closed form, C¹ across contact, reverse-mode
  differentiable), for one segment, with closed-form tangent points;
* :mod:`~mbjax.wrapping.smooth_ellipsoid`: the same over an ellipsoid, a geodesic found by
  shooting (Runge-Kutta, Levenberg-Marquardt from the affine image of the sphere's path with
  continuation in the semi-axes; implicit derivatives);
* :mod:`~mbjax.wrapping.smooth_path`: the smooth option for whole paths and models (a taut cable
  over cylinders, spheres and ellipsoids, wraps applied in file order): :func:`smooth_wrapping`,
  :func:`with_wrapping`, ``mbjax.io.load_osim(path, wrapping="smooth")``.
"""

from ._result import INSIDE, MANDATORY, NO_WRAP, WRAPPED, WrapLine
from .objects import KINDS, METHODS, PathWrap, WrapObject
from .smooth import Geodesic, cylinder_geodesic, cylinder_geodesic_length, sphere_geodesic, sphere_geodesic_length
from .smooth_ellipsoid import ellipsoid_geodesic, ellipsoid_geodesic_length
from .smooth_path import WRAPPINGS, smooth_wrapping, with_wrapping

__all__ = ["INSIDE", "KINDS", "MANDATORY", "METHODS", "NO_WRAP", "PathWrap", "WRAPPED", "WrapLine", "WrapObject",
           "Geodesic", "WRAPPINGS", "cylinder_geodesic", "cylinder_geodesic_length", "ellipsoid_geodesic",
           "ellipsoid_geodesic_length", "smooth_wrapping",
           "sphere_geodesic", "sphere_geodesic_length", "with_wrapping"]
