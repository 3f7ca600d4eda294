"""Griffe extension for the API reference: make mbjax's lazily loaded public names visible.

``mbjax/__init__.py`` loads its public names on first use (PEP 562 ``__getattr__`` over the
``_EXPORTS`` table), so static analysis sees none of them.  This extension reads that table, imports
each name's module to find where the object is defined, and adds the name to the ``mbjax`` package
as an alias of that object, listed in ``__all__``: ``::: mbjax`` then documents exactly the names
that ``mbjax.<name>`` gives.  Enabled in mkdocs.yml (mkdocstrings' python handler, ``extensions``).
"""

from __future__ import annotations

import importlib
from typing import Any

import griffe


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.path != "mbjax":
            return
        exports = importlib.import_module("mbjax")._EXPORTS
        for name, (module, attribute) in exports.items():
            if attribute is None:  # a submodule: in the package already
                continue
            # where the object is defined (``mbjax.muscles.moment_arms`` is also a submodule's name)
            obj = getattr(importlib.import_module(f"mbjax.{module}"), attribute)
            where = getattr(obj, "__module__", None)
            qualname = getattr(obj, "__qualname__", None)
            target = f"{where}.{qualname}" if where and qualname else f"mbjax.{module}.{attribute}"
            pkg.set_member(name, griffe.Alias(name, target, parent=pkg))
        pkg.exports = sorted(exports)
