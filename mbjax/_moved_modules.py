"""Former module paths kept for one release: ``import mbjax.sharing``, ``from mbjax.identify.fit import
fit``, ``mbjax.sweep``, ... reach a small shim at the old path that warns, naming the new home, and puts
the new module (and each of its submodules) in ``sys.modules`` under the old name, so the old path gives
the very objects of the new one.  As for any import, that happens once per process: the first use of
an old path warns.  ``mbjax.<name>`` as an attribute goes through ``mbjax.__getattr__``
(``mbjax._MOVED_MODULES``), which imports the shim."""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import warnings

_ROOT_INIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")


def moved_message(old: str, homes: tuple[str, ...]) -> str:
    """The warning of a former module ``old`` whose names are now in ``homes`` (dotted names)."""
    return f"{old} is {' and '.join(homes)}; {old} goes in the next release"


def _user_stacklevel() -> int:
    """``warnings.warn``'s stacklevel, from :func:`alias_moved`, of the line that used the old path:
    past the shim, ``importlib.import_module`` and ``mbjax.__getattr__`` (the warnings module itself
    steps over importlib's bootstrap frames, so they are not counted)."""
    level, frame = 2, sys._getframe(3)  # 0 here, 1 alias_moved, 2 the shim (stacklevel 2), 3 what imported it
    while frame is not None:
        name = frame.f_code.co_filename
        if not ("importlib" in name and "_bootstrap" in name):
            level += 1
            if not (os.path.abspath(name) == _ROOT_INIT or name.endswith(os.path.join("importlib", "__init__.py"))):
                return level
        frame = frame.f_back
    return level


def alias_moved(old: str, new: str) -> None:
    """Called by the shim module ``old``: warn at the line that used the old path, then make ``old``
    and ``old.<sub>`` the modules ``new`` and ``new.<sub>``."""
    warnings.warn(moved_message(old, (new,)), DeprecationWarning, stacklevel=_user_stacklevel())
    module = importlib.import_module(new)
    sys.modules[old] = module
    for info in pkgutil.walk_packages(getattr(module, "__path__", ()), new + "."):
        sys.modules[old + info.name[len(new):]] = importlib.import_module(info.name)
