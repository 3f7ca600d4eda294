"""Deprecated: ``mbjax.control`` is :mod:`mbjax.analysis.control`; the old path answers for one release with a
``DeprecationWarning`` (:mod:`mbjax._moved_modules`)."""

from ._moved_modules import alias_moved

alias_moved(__name__, "mbjax.analysis.control")
