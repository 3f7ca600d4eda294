"""The table of a ``.mot``/``.sto`` file (:mod:`~mbjax.io.storage` reads and writes it)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class _TableFields(NamedTuple):
    time: np.ndarray
    labels: tuple[str, ...]
    data: np.ndarray
    in_degrees: bool = False
    metadata: dict | None = None


def _check_shapes(time, labels, data) -> None:
    """The rule of a table's shapes: ``data`` 2-D ``(T, n)``, one label per data column (the time column
    has none) and one time per row; else ``ValueError`` naming the field and the shapes."""
    if isinstance(labels, str):
        raise ValueError(f"Table: labels must be a tuple of column labels, got the string {labels!r}")
    shape = np.shape(data)
    if len(shape) != 2:
        raise ValueError(f"Table: data must be 2-D (T, n), got shape {shape}")
    if shape[1] != len(labels):
        raise ValueError(f"Table: {len(labels)} labels for {shape[1]} data columns (data has shape {shape}; "
                         "labels exclude the time column)")
    if np.size(time) != shape[0]:
        raise ValueError(f"Table: time has {np.size(time)} entries but data has {shape[0]} rows (data shape "
                         f"{shape})")


class Table(_TableFields):
    """A ``.mot``/``.sto`` table: ``time (T,)``, data column ``labels`` (without the time column),
    ``data (T, n)``, ``in_degrees`` and the header ``metadata`` (strings).  The shapes are checked when
    the table is built (one time per row, one label per column)."""

    __slots__ = ()

    def __new__(cls, time, labels, data, in_degrees: bool = False, metadata: dict | None = None):
        _check_shapes(time, labels, data)
        return super().__new__(cls, time, labels, data, in_degrees, metadata)

    @classmethod
    def _make(cls, iterable):  # ``_replace`` builds through here: checked as well
        return cls(*iterable)

    def column(self, label: str) -> np.ndarray:
        """One data column by label."""
        try:
            return self.data[:, self.labels.index(label)]
        except ValueError:
            raise KeyError(f"no column {label!r}; columns are {self.labels}") from None
