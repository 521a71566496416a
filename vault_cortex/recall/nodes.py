"""The graph's node table, pure: names and their integer ids, which ids are indexed notes, each note's project.

A part of the graph (recall/graph.py), which alone changes it; the graph's other parts read it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


class Nodes:
    """Notes and the other nodes (link targets that are not notes, project nodes) by integer id, in the order
    they were first seen; the arrays by id grow by doubling."""

    def __init__(self, notes: Iterable[str]) -> None:
        self.notes: set[str] = set(notes)  # the indexed notes' paths
        self.id: dict[str, int] = {}  # name -> node id
        self.names: list[str] = []  # node id -> name
        self.is_note: BoolArray = np.zeros(64, dtype=bool)  # node id -> is an indexed note
        self.project: Int32Array = np.full(64, -1, dtype=np.int32)  # note id -> its project node id, or -1
        self.members: dict[int, int] = {}  # project node id -> number of member notes

    @property
    def count(self) -> int:
        """Node ids in use."""
        return len(self.names)

    def add(self, name: str) -> int:
        """The id of a node, given one if it has none yet."""
        i = self.id.get(name)
        if i is None:
            i = self.id[name] = len(self.names)
            self.names.append(name)
            if i >= self.is_note.size:
                self.is_note = np.concatenate([self.is_note, np.zeros(self.is_note.size, dtype=bool)])
                self.project = np.concatenate([self.project, np.full(self.project.size, -1, dtype=np.int32)])
            self.is_note[i] = name in self.notes
        return i
