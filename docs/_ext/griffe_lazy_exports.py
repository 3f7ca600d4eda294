"""Griffe extension for the API reference: make mbjax's lazily loaded public names visible
(``mbjax``, ``mbjax.io`` and ``mbjax.opensim``).

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


#: the packages whose public names load on first use, each with an ``_EXPORTS`` table
LAZY_PACKAGES = ("mbjax", "mbjax.io", "mbjax.opensim")


class LazyExports(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._add_exports(pkg)

    def on_module(self, *, mod: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        self._add_exports(mod)

    @staticmethod
    def _add_exports(pkg: griffe.Module) -> None:
        if pkg.path not in LAZY_PACKAGES:
            return
        package = importlib.import_module(pkg.path)
        for name, entry in package._EXPORTS.items():
            module, attribute = entry if isinstance(entry, tuple) else (entry, name)
            if attribute is None:  # a submodule: in the package already
                continue
            # a module named from the top (``mbjax.opensim``'s table) or within the package
            module = module if module.startswith("mbjax.") else f"{pkg.path}.{module}"
            # where the object is defined (``mbjax.muscles.moment_arms`` is also a submodule's name)
            obj = getattr(importlib.import_module(module), attribute)
            where = getattr(obj, "__module__", None)
            qualname = getattr(obj, "__qualname__", None)
            target = f"{where}.{qualname}" if where and qualname else f"{module}.{attribute}"
            pkg.set_member(name, griffe.Alias(name, target, parent=pkg))
        pkg.exports = sorted(package.__all__)
