"""The table of a ``.mot``/``.sto`` file (:mod:`~mbjax.io.storage` reads and writes it)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Table(NamedTuple):
    """A ``.mot``/``.sto`` table: ``time (T,)``, data column ``labels`` (without the time column),
    ``data (T, n)``, ``in_degrees`` and the header ``metadata`` (strings)."""

    time: np.ndarray
    labels: tuple[str, ...]
    data: np.ndarray
    in_degrees: bool = False
    metadata: dict | None = None

    def column(self, label: str) -> np.ndarray:
        """One data column by label."""
        try:
            return self.data[:, self.labels.index(label)]
        except ValueError:
            raise KeyError(f"no column {label!r}; columns are {self.labels}") from None
