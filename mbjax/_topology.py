"""Hashable static topology of a body tree (Featherstone numbering, ground = -1 here).

Everything in :class:`Topology` is plain Python (ints, strs, tuples), so a ``Model`` carrying it
in a static field hashes cheaply and a jitted function compiles once per topology.  Derived
index arrays are built on demand as NumPy constants (never stored in the module).
"""

from __future__ import annotations

import dataclasses

import numpy as np

REVOLUTE = "revolute"
PRISMATIC = "prismatic"
JOINT_TYPES = (REVOLUTE, PRISMATIC)


@dataclasses.dataclass(frozen=True)
class Topology:
    """Parents (``-1`` = ground, parents precede children), joint types, names, map bindings."""

    parents: tuple[int, ...]
    joint_types: tuple[str, ...]
    body_names: tuple[str, ...]
    coordinate_names: tuple[str, ...]
    #: for each stacked map family in ``Model.maps``: the bodies it serves, in stack order
    map_bodies: tuple[tuple[int, ...], ...]
    #: for each stacked map family: per map, positions of its local inputs in ``q`` (padded)
    map_inputs: tuple[tuple[tuple[int, ...], ...], ...]

    def __post_init__(self):
        for i, p in enumerate(self.parents):
            if not -1 <= p < i:
                raise ValueError(
                    f"body {self.body_names[i]!r}: parent index {p} must precede the body "
                    "(bodies are numbered parents-first)"
                )

    @property
    def n_bodies(self) -> int:
        return len(self.parents)

    @property
    def n_coordinates(self) -> int:
        return len(self.coordinate_names)

    def ancestors(self, i: int) -> tuple[int, ...]:
        """Moving ancestors of body ``i`` (Anc(i)), root first."""
        out = []
        p = self.parents[i]
        while p >= 0:
            out.append(p)
            p = self.parents[p]
        return tuple(reversed(out))

    def ancestor_mask(self) -> np.ndarray:
        """``A[i, j] = 1`` if ``j ∈ Anc(i) ∪ {i}``; shape ``(nb, nb)``."""
        nb = self.n_bodies
        a = np.zeros((nb, nb))
        for i in range(nb):
            a[i, i] = 1.0
            for j in self.ancestors(i):
                a[i, j] = 1.0
        return a

    def depth(self) -> np.ndarray:
        d = np.zeros(self.n_bodies, dtype=int)
        for i, p in enumerate(self.parents):
            d[i] = 0 if p < 0 else d[p] + 1
        return d

    def levels(self) -> tuple[np.ndarray, ...]:
        """Body indices grouped by depth (roots first); one vectorised step per level."""
        d = self.depth()
        return tuple(np.nonzero(d == k)[0] for k in range(int(d.max()) + 1)) if len(d) else ()

    def parent_array(self) -> np.ndarray:
        return np.asarray(self.parents, dtype=np.int32)

    def is_revolute(self) -> np.ndarray:
        return np.asarray([t == REVOLUTE for t in self.joint_types])

    def body_index(self, body) -> int:
        """Index of a body given by name or index."""
        if isinstance(body, (bool, np.bool_)):
            raise ValueError(f"body must be a name (str) or an int index 0..{self.n_bodies - 1}, got the bool "
                             f"{bool(body)}; bodies are {self.body_names}")
        if isinstance(body, (int, np.integer)):
            if not 0 <= int(body) < self.n_bodies:
                raise ValueError(f"body index {body} out of range 0..{self.n_bodies - 1}")
            return int(body)
        if not isinstance(body, str):
            got = (f"an array of dtype {body.dtype} (an array or a traced value; give a Python int or a name)"
                   if hasattr(body, "dtype") else f"{type(body).__name__} {body!r}")
            raise ValueError(f"body must be a name (str) or an int index 0..{self.n_bodies - 1}, got {got}; "
                             f"bodies are {self.body_names}")
        try:
            return self.body_names.index(body)
        except ValueError:
            raise ValueError(f"unknown body {body!r}; bodies are {self.body_names}") from None

    def coordinate_index(self, coordinate) -> int:
        if isinstance(coordinate, (bool, np.bool_)):
            raise ValueError(f"coordinate must be a name (str) or an int index, got the bool {bool(coordinate)}; "
                             f"coordinates are {self.coordinate_names}")
        if isinstance(coordinate, (int, np.integer)):
            return int(coordinate)
        try:
            return self.coordinate_names.index(coordinate)
        except ValueError:
            raise ValueError(
                f"unknown coordinate {coordinate!r}; coordinates are {self.coordinate_names}"
            ) from None
