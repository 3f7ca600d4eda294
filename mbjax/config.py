"""Process settings: run-time input checks, JAX's persistent compilation cache, CPU threads, XLA:CPU emitters.

* :func:`checks`, :func:`set_checks`, :func:`checks_enabled`: the run-time checks of poses, paths
  and muscle inputs (on by default; one fused host callback per batched call).
* :class:`CoordinateRangeWarning`: an eager call's pose far outside the file's coordinate ranges
  (filter it with :mod:`warnings`; ``checks(False)`` silences it too).
* :func:`enable_compilation_cache`: XLA's compiled programs kept on disk between processes.
* :func:`single_threaded_matmuls`: small matrix products on one thread (faster for batched
  kernels on few cores).
* :func:`faster_compiles`: XLA:CPU's elemental emitters, faster compiles (``import mbjax``
  sets them unless ``MBJAX_XLA_DEFAULTS=1``).
"""

from __future__ import annotations

from ._checks import checks, checks_enabled, set_checks
from ._ranges import CoordinateRangeWarning
from .compilation_cache import enable_compilation_cache
from .cpu_threads import single_threaded_matmuls
from .fast_compiles import faster_compiles

__all__ = ["CoordinateRangeWarning", "checks", "checks_enabled", "enable_compilation_cache", "faster_compiles", "set_checks", "single_threaded_matmuls"]
