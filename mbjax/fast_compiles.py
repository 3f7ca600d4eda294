"""XLA:CPU's elemental emitters for mbjax's programs: faster compiles.

mbjax's programs are thousands of small elementwise operations (a wrap pass, a model's joint maps,
the per-frame solvers), and on the CPU most of a first call is XLA compiling them.  XLA:CPU emits
each fused loop nest with its newer MLIR "fusion emitters" by default; with
``--xla_cpu_use_fusion_emitters=false`` it uses its older elemental IR emitters, which compile
mbjax's programs faster, and the code they make runs as fast or faster (``benchmarks/RESULTS.md``).
The HLO (what is computed, in which order) is the same and XLA:CPU uses no fast-math either way:
results agree to rounding.

XLA reads its flags once, when the CPU backend starts, and aborts the process on a flag it does not
know.  So :func:`faster_compiles` adds the flag only when the installed jaxlib knows it and JAX's
backends have not started, and never overrides an ``XLA_FLAGS`` that already sets the option.
``import mbjax`` calls it (the command line too); set ``MBJAX_XLA_DEFAULTS=1`` to keep XLA's own
emitters.  This module imports neither JAX nor jaxlib.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
import pathlib
import sys

#: the XLA:CPU flag that selects the elemental emitters
FLAG = "--xla_cpu_use_fusion_emitters=false"
_OPTION = FLAG[2:].split("=")[0]
#: set to 1 to keep XLA's defaults (``import mbjax`` then changes no flag)
KEEP_DEFAULTS = "MBJAX_XLA_DEFAULTS"


def jaxlib_knows_flag(option: str = _OPTION) -> bool:
    """Whether the installed jaxlib's XLA registers ``option`` (its name is in jaxlib's shared
    libraries), found without importing jaxlib.  False when jaxlib or its libraries are not found."""
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        return False
    needle = option.encode()
    for folder in spec.submodule_search_locations:
        # XLA lives in libjax_common (other jaxlib builds: any of its libraries); it is read first
        for lib in sorted(pathlib.Path(folder).glob("*.so"), key=lambda p: ("common" not in p.name, p.name)):
            try:
                with open(lib, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    if data.find(needle) >= 0:
                        return True
            except (OSError, ValueError):
                continue
    return False


def _backends_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    return xla_bridge.backends_are_initialized()


def faster_compiles() -> bool:
    """Add :data:`FLAG` to ``XLA_FLAGS`` for this process.  Returns True when it is in effect or will
    be (the flag set now, or already); False, changing nothing, when ``XLA_FLAGS`` sets the option
    otherwise, when ``MBJAX_XLA_DEFAULTS=1``, when this jaxlib does not know the flag, or when JAX's
    backends already run (flags are read when they start: call it before any JAX computation)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if _OPTION in flags:
        return FLAG in flags.split()
    if os.environ.get(KEEP_DEFAULTS) == "1" or _backends_started() or not jaxlib_knows_flag():
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {FLAG}".strip()
    return True
