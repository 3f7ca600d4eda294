"""XLA:CPU's Eigen threads for small matrix products: off for per-frame solver loops.

The IK, ID and static-optimization programs of a gait trial are loops over frames of small dense
products (a 117 x 23 marker Jacobian and its 23 x 23 normal equations, a 23 x 83 dual Newton
matrix).  XLA:CPU hands each to Eigen, whose multi-threaded path splits even these over its
intra-op thread pool; on a 2-core machine the hand-offs cost more than they save (the Gait2354
pipeline's warm IK and static optimization, measured in ``benchmarks/RESULTS.md``), while batched
moment-arm kernels (elementwise, batch-last) are unchanged.

XLA reads its flags once, when the CPU backend starts, so :func:`single_threaded_matmuls` must run
before the first JAX computation of the process (e.g. first cell of a notebook); it sets
``XLA_FLAGS`` and changes nothing else.
"""

from __future__ import annotations

import os
import warnings

#: the XLA:CPU flag that keeps Eigen's matrix products on the calling thread
FLAG = "--xla_cpu_multi_thread_eigen=false"


def single_threaded_matmuls() -> bool:
    """Add :data:`FLAG` to ``XLA_FLAGS`` for this process.  Returns True when it will take effect
    (JAX's backends not started yet, or the flag already set); False, changing nothing, when
    ``XLA_FLAGS`` already sets the option otherwise, or (with a warning) when JAX already runs
    (restart the process, or set ``XLA_FLAGS`` before starting Python)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" in flags:
        return FLAG in flags.split()
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        warnings.warn("single_threaded_matmuls: JAX's backends are already running, XLA_FLAGS is read only "
                      f"when they start; call it before any JAX computation, or start Python with "
                      f"XLA_FLAGS={FLAG}", stacklevel=2)
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()
    return True
