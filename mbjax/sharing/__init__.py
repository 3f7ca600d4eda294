"""Deprecated: ``mbjax.sharing`` is :mod:`mbjax.analysis.sharing`; the old path, its submodules included,
answers for one release with a ``DeprecationWarning`` (:mod:`mbjax._moved_modules`)."""

from .._moved_modules import alias_moved

alias_moved(__name__, "mbjax.analysis.sharing")
