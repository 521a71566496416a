"""What a ranking passes down its stages (recall/pipeline.py): the request, built once (`RankInput`), and the
candidates gathered for it (`Pool`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import msgspec

from vault_cortex.config import Settings
from vault_cortex.index.db import IndexDB
from vault_cortex.index.rows import ChunkRow, NoteRow
from vault_cortex.index.vectors import Vector, Vectors
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.model import RankingModel
from vault_cortex.recall.rank import Fused


class Concept(msgspec.Struct, frozen=True, kw_only=True):
    """A resonance note as ranking sees it: the names it goes by and its weight."""

    path: str
    names: tuple[str, ...]
    weight: float


class RankInput(msgspec.Struct, frozen=True, kw_only=True):
    """One ranking: the query and its vector; what it reads (the index, the live graph, the resonance concepts, the
    notes' access counts, the co-retrieved pairs); what it ranks by (the settings, the ranking model, the mode's
    weights, the time now); and which notes it may return: not the `exclude` paths, only the `regions` (None:
    every region), only the `allowed` note ids (None: every note) and never the `without` ones. Each search gathers
    at least `at_least` chunks (the results asked for)."""

    query: str
    qvec: Vector
    db: IndexDB
    vectors: Vectors
    graph: Graph
    concepts: Sequence[Concept]
    access: Callable[[Sequence[str]], Mapping[str, tuple[int, float | None]]]
    pairs: Mapping[tuple[str, str], float]
    settings: Settings
    model: RankingModel
    weights: dict[str, float]
    now: float
    regions: Sequence[str] | None = None
    exclude: frozenset[str] = frozenset()
    allowed: frozenset[int] | None = None
    without: frozenset[int] = frozenset()
    at_least: int = 0

    def wanted(self, note: NoteRow) -> bool:
        """Whether this ranking may return the note."""
        return (note.path not in self.exclude and (not self.regions or note.region in self.regions)
                and (self.allowed is None or note.id in self.allowed) and note.id not in self.without)


class Pool(msgspec.Struct, frozen=True, kw_only=True):
    """The candidates gathered: each chunk's dense similarity and BM25 score, the chunks and notes read, every chunk
    fused (best first), each wanted note's best chunk (`best`, in rank order) and the graph proximity of the
    candidates and their neighbours (path → proximity less the note's prior; empty when the graph is not weighed)."""

    dense: dict[int, float]
    lexical: dict[int, float]
    chunks: dict[int, ChunkRow]
    notes: dict[int, NoteRow]
    fused: list[Fused]
    best: list[Fused]
    proximity: dict[str, float] = {}

    def chunk(self, f: Fused) -> ChunkRow:
        """A candidate's chunk."""
        return self.chunks[f.chunk_id]

    def note(self, f: Fused) -> NoteRow:
        """A candidate's note."""
        return self.notes[self.chunks[f.chunk_id].note_id]

    def paths(self, top: int | None = None) -> list[str]:
        """The candidates' notes, best first (the `top` best only, when given)."""
        return [self.note(f).path for f in self.best[:top]]
