"""The note graph kept in step with the index: updated in place from the index's change log, rebuilt only
when the log cannot say what changed (another index, a log that went backwards, or most of the vault).

Also the per-note numbers ranking reads beside the graph: co-retrieval strengths and the archived notes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from vault_cortex.files.vault import ARCHIVE
from vault_cortex.index.changes import GraphRows
from vault_cortex.index.db import IndexDB
from vault_cortex.recall.graph import Graph, NoteEdges
from vault_cortex.recall.proximity import warm
from vault_cortex.recall.rank import co_strength

CO_REFRESH_SECONDS = 3600.0  # co-retrieval strengths decay with time: recompute them all at most hourly
REBUILD_SHARE = 0.25  # a change set naming more than this share of the notes is cheaper to rebuild from


class ReadWriteLock:
    """Many readers or one writer; a waiting writer goes before new readers (so a busy server still updates)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class LiveGraph:
    """One vault's graph, co-retrieval strengths and archived notes, following the index's change log.

    The graph is changed in place, so whoever walks it holds `lock.reading()` (never calling `refresh` inside);
    `refresh` applies changes under `lock.writing()` and builds there what a recall reads (`proximity.warm`).
    The graph's other caches are built by readers under the graph's own lock (see `Graph`)."""

    def __init__(self) -> None:
        self.lock = ReadWriteLock()
        self.graph: Graph | None = None
        self.pairs: dict[tuple[str, str], float] = {}  # co-retrieval strength (rank.co_strength) of each pair
        self.archived: frozenset[str] = frozenset()
        self.rebuilds = 0  # full builds so far (tests and benchmarks read it)
        self._since: tuple[str, int, int] | None = None
        self._co_at = float("-inf")

    def refresh(self, db: IndexDB, now: float) -> Graph:
        """The graph as the index now stands: the changes since the last refresh applied in place."""
        if self._current(db, now):
            assert self.graph is not None
            return self.graph
        with self.lock.writing():
            if not self._current(db, now):
                since = None if self.graph is None else self._since
                limit = int(self.graph.n_notes * REBUILD_SHARE) + 100 if self.graph is not None else 0
                rows = db.graph_rows(since, limit=limit)
                if rows.full:
                    self._build(rows, now)
                else:
                    self._apply(rows, now)
                    if now - self._co_at >= CO_REFRESH_SECONDS:
                        self._decay_co(db.co_diversity(), now)
                self._since = (rows.index_id, rows.seq, rows.co_seq)
                assert self.graph is not None
                warm(self.graph)
        assert self.graph is not None
        return self.graph

    def _current(self, db: IndexDB, now: float) -> bool:
        return (self.graph is not None and now - self._co_at < CO_REFRESH_SECONDS
                and self._since == db.change_seqs())

    def _build(self, rows: GraphRows, now: float) -> None:
        self.pairs = {(a, b): s for a, b, q, last in rows.co if (s := co_strength(q, last, now)) > 0}
        self.graph = Graph.from_columns(
            rows.paths, rows.link_counts, rows.link_dst, rows.link_rel,
            projects=dict(zip(rows.paths, rows.projects, strict=True)),
            co_retrieved=[(a, b, s) for (a, b), s in self.pairs.items()],
            lock=threading.RLock(),  # recalls and health read it from many threads (the graph's lock rules)
        )
        self.archived = frozenset(p for p in rows.paths if p.startswith(ARCHIVE + "/"))
        self._co_at = now
        self.rebuilds += 1

    def _decay_co(self, co: list[tuple[str, str, int, float]], now: float) -> None:
        """Every co-retrieval strength again at `now` (they fade with time, not only with new recalls)."""
        assert self.graph is not None
        pairs = {(a, b): s for a, b, q, last in co if (s := co_strength(q, last, now)) > 0}
        gone = [(a, b, 0.0) for a, b in self.pairs if (a, b) not in pairs]
        self.graph.update_co_retrieved([*gone, *((a, b, s) for (a, b), s in pairs.items())])
        self.pairs = pairs
        self._co_at = now

    def _apply(self, rows: GraphRows, now: float) -> None:
        assert self.graph is not None
        changed: dict[str, NoteEdges | None] = dict.fromkeys(rows.gone)
        for path, (project, links) in rows.notes.items():
            changed[path] = NoteEdges(links=tuple(links), project=project)
        self.graph.update(changed)
        co = []
        for a, b, queries, last in rows.co:
            strength = co_strength(queries, last, now) if queries else 0.0
            if strength > 0:
                self.pairs[(a, b)] = strength
            else:
                self.pairs.pop((a, b), None)
            co.append((a, b, strength))
        self.graph.update_co_retrieved(co)
        archived = {p for p in changed if p.startswith(ARCHIVE + "/")}
        if archived:
            self.archived = (self.archived - archived) | {p for p in archived if changed[p] is not None}
