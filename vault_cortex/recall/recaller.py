"""Recall over one vault's index: the live graph and the caches read beside it, and the rank → gate → pack steps.

The composition root (`Cortex`) builds the `Index` first, then one `Recaller` over it, handing it explicitly what
it reads: the index, the settings and the clock (fixed for its life) and where activity is logged.

Lock rules: the graph is updated in place under its write lock (`LiveGraph.refresh`) and walked under its read
lock (`ranked`, `graph_health`), never refreshed while the read lock is held. The concepts are read from the
index once per index generation (a sync that changed notes, or the index replaced: `Index.replaced`), under the
Recaller's own small lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import msgspec
import numpy as np

from vault_cortex.config import Settings
from vault_cortex.errors import IndexUnavailable, InvalidRequest, NoteNotFound
from vault_cortex.files.activity import Event, OpenEvent, RecallEvent, current_client
from vault_cortex.files.paths import note_name
from vault_cortex.files.properties import DEFAULT_WEIGHT, as_weight
from vault_cortex.files.vault import note_path
from vault_cortex.index.db import IndexDB
from vault_cortex.index.upkeep import Index
from vault_cortex.index.vectors import Vector
from vault_cortex.limits import check_budget
from vault_cortex.recall.filters import Filters, Scope, scope
from vault_cortex.recall.gate import PushGate, push_gate
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.health import GraphHealth, health
from vault_cortex.recall.live import LiveGraph
from vault_cortex.recall.model import RankingModel
from vault_cortex.recall.pack import Candidate, Packed, Render, pack
from vault_cortex.recall.pipeline import Concept, RankInput, rank
from vault_cortex.recall.request import RecallRequest
from vault_cortex.recall.scored import Recall, Scored, gate_passed, to_candidate, to_hit


class Recaller:
    """Recall, related notes, packing and graph health over one vault's index and its live graph."""

    def __init__(self, index: Index, settings: Settings, *, clock: Callable[[], datetime],
                 log: Callable[[Event], None], concept_folder: str, model: RankingModel) -> None:
        """`index` is read at each use (a recovered index replaces its database and vectors); `settings` and
        `clock` are fixed for the Recaller's life; `log` appends an activity event; `concept_folder` holds the
        resonance notes whose names and weights ranking reads; `model` is the ranking model (recall/model.py)."""
        self.index = index
        self.model = model
        self.settings = settings
        self.clock = clock
        self.root: Path = index.root  # its name goes into packed links
        self.log = log
        self.concept_folder = concept_folder
        self.live = LiveGraph()
        self._lock = threading.Lock()  # the generation and the concept cache
        self._generation: tuple[int, str] | None = None
        self._concept_cache: list[Concept] | None = None

    # -- recall --------------------------------------------------------------------------------------
    def recall(self, request: RecallRequest, *, exclude: frozenset[str] = frozenset(),
               shown: frozenset[str] = frozenset(), push: PushGate | None = None, log_activity: bool = True) -> Recall:
        """Notes for a request, ranked by its mode's signals; with a budget, also the packed context (see
        `Cortex.recall`). Logged as the bound client's (`activity.current_client`) unless not `log_activity`."""
        started = time.perf_counter()
        query = self.check_query(request.query)
        k = self.check_k(request.k)
        mode_name, weights = self.mode(request.mode)
        filters = request.filters()
        exclude = self.without_archive(exclude, request.include_archive)
        within = self.scope(filters, exclude=exclude)
        qvec = self.index.embedder.embed([query])[0]
        ranked = self.ranked(query, qvec, weights, regions=request.regions, exclude=exclude, scope=within,
                             at_least=k)
        if request.gate:
            passed = gate_passed(ranked, query, push or self.push_gate(), k, shown)
            top = [s for s, _ in passed]
            hits = [to_hit(s, query, v) for s, v in passed]
        else:
            top = ranked[:k]
            hits = [to_hit(s, query) for s in top]
        packed = self.pack(top, request.budget_tokens) if request.budget_tokens is not None else None
        if log_activity:
            self.log(RecallEvent(ts=self.clock(), client=current_client(), query=query, mode=mode_name,
                                 paths=tuple(h.path for h in hits)))
        return Recall(query=query, mode=mode_name, hits=hits, context=packed,
                      took_ms=round((time.perf_counter() - started) * 1000, 2), indexing=self.index.indexing)

    def without_archive(self, exclude: frozenset[str], include_archive: bool = False) -> frozenset[str]:
        """`exclude` and, unless asked for (`include_archive`, or the vault's `index.include_archive`), the
        archived notes: the one archive rule of every recall."""
        if include_archive or self.settings.index.include_archive:
            return exclude
        return exclude | self.archived() if exclude else self.archived()  # no copy of the archive per recall

    def recall_packed(self, query: str, qvec: Vector, *, mode: str | None, budget_tokens: int,
                      extra: Sequence[Candidate], section_order: Sequence[str], filters: Filters | None = None,
                      exclude: frozenset[str] = frozenset(),
                      only: frozenset[str] | None = None, render: Render | None = None) -> tuple[str, Packed]:
        """Recall under recall's rules (the `recall.k` best, the archive left out unless the settings keep it,
        the query already checked by `check_query`) for an embedded query, packed after the `extra` items named
        by their sections (session-start context's pinned notes, habits, questions and handoff); the mode's
        name and the packed context. The extra items' paths are not recalled again; with `only`, no other path is
        recalled (the notes that bear on a session's start, `bearing`)."""
        mode_name, weights = self.mode(mode)
        k = self.check_k(None)
        taken = self.without_archive(frozenset(c.path for c in extra) | exclude)
        within = self.scope(filters, exclude=taken)  # no capture unless the filters ask for them
        ranked = self.ranked(query, qvec, weights, exclude=taken, scope=within, at_least=k)
        top = [s for s in ranked if only is None or s.note.path in only][:k]
        return mode_name, self.pack(top, budget_tokens, extra, section_order, render)

    def bearing(self, query: str, qvec: Vector, *, mode: str | None, project: str | None,
                exclude: frozenset[str] = frozenset(), filters: Filters | None = None) -> frozenset[str]:
        """The notes among a task's candidates that bear on it: those whose `project:` names the project (by
        definition), and those the push gate passes for the query on their own calibrated probability (none unless
        one reaches the gate's threshold, then each at its floor), at most `recall.k` (the archive and the captures
        left out); judged among the notes the filters keep, as the recall they gate is."""
        _, weights = self.mode(mode)
        k = self.check_k(None)
        taken = self.without_archive(exclude)
        ranked = self.ranked(query, qvec, weights, exclude=taken, scope=self.scope(filters, exclude=taken),
                             at_least=k)
        gate = msgspec.structs.replace(self.push_gate(), most=k)
        passed = {s.note.path for s, _ in gate_passed(ranked, query, gate, k)}
        own = (project or "").strip().casefold()
        return frozenset(passed | {s.note.path for s in ranked if own and (s.note.project or "").casefold() == own})

    def ranked(self, query: str, qvec: Vector, weights: dict[str, float], *, regions: list[str] | None = None,
               exclude: frozenset[str] = frozenset(), scope: Scope | None = None,
               at_least: int = 0) -> list[Scored]:
        """Every candidate for a query, scored by the given signal weights, best first (only the notes of the
        `scope`, None: every note; at least `at_least` chunks gathered from each search)."""
        within = scope or Scope()
        graph = self.graph()
        concepts = self.concepts()
        db = self.index.db
        with self.live.lock.reading():  # the graph is updated in place: no update while it is walked
            return rank(RankInput(query=query, qvec=qvec, db=db, vectors=self.index.vectors, graph=graph,
                                  concepts=concepts, access=db.access_of, pairs=self.live.pairs,
                                  settings=self.settings, model=self.model, weights=weights,
                                  now=self.clock().timestamp(), regions=regions, exclude=exclude,
                                  allowed=within.among, without=within.without, at_least=at_least))

    def push_gate(self) -> PushGate:
        """The push gate of the vault's `[push]` settings and the ranking model."""
        return push_gate(self.settings.push, self.model.gate)

    def scope(self, filters: Filters | None, regions: list[str] | None = None,
              exclude: frozenset[str] = frozenset()) -> Scope:
        """The notes recall may return under filters and regions (no filters: every note but the captures)."""
        filters = filters or Filters()
        self.check_regions(filters.regions)
        if regions:
            both = [r for r in filters.regions if r in regions] if filters.regions else list(regions)
            if not both:
                return Scope(among=frozenset())
            filters = msgspec.structs.replace(filters, regions=both)
        return scope(self.index.db, filters, self.clock(), exclude)

    def similarity(self, qvec: Vector, paths: Sequence[str]) -> dict[str, float]:
        """Best cosine similarity between a query vector and any chunk of each note."""
        db, vectors = self.index.db, self.index.vectors
        ids = db.note_ids(paths)
        chunks = db.chunks_of(ids.values())
        return {path: max(vectors.similarity(qvec, [c.id for c in chunks.get(i, [])]).values(), default=0.0)
                for path, i in ids.items()}

    def related(self, path: str, *, k: int | None = None, mode: str | None = None,
                captures: str | None = None) -> Recall:
        """Notes related to a note by its content, leaving out itself and the notes it already links to, and the
        captures unless `captures` (`Filters.captures`) asks for them."""
        within = self.scope(Filters.build(captures=captures))
        started = time.perf_counter()
        note_path(self.root, path)
        k = self.check_k(k)
        mode_name, weights = self.mode(mode)
        db, indexing = self.index.db, self.index.indexing
        ids = db.note_ids([path])
        if path not in ids:
            if indexing is not None:
                raise IndexUnavailable(f"the index is still being built ({indexing.done} of "
                                       f"{indexing.total} chunks); {path!r} is not in it yet")
            raise NoteNotFound(f"no indexed note at {path!r} (is it saved and synced?)")
        chunks = db.chunks_of([ids[path]])[ids[path]]
        vecs = list(self.index.vectors.get([c.id for c in chunks]).values())
        if not vecs:
            return Recall(query=path, mode=mode_name, hits=[], took_ms=0.0, indexing=self.index.indexing)
        qvec = np.mean(np.stack(vecs), axis=0).astype(np.float32)
        qvec /= float(np.linalg.norm(qvec)) or 1.0
        text = " ".join([note_name(path), *(c.text for c in chunks)])[:2000]
        linked = {ln.dst for ln in db.links(src=path) if ln.dst}
        exclude = frozenset({path, *linked}) | self.archived()
        top = self.ranked(text, qvec, weights, exclude=exclude, scope=within, at_least=k)[:k]
        hits = [to_hit(s, text) for s in top]
        self.log(OpenEvent(ts=self.clock(), client=current_client(), path=path))
        return Recall(query=path, mode=mode_name, hits=hits, took_ms=round((time.perf_counter() - started) * 1000, 2),
                      indexing=self.index.indexing)

    def pack(self, scored: list[Scored], budget_tokens: int, extra: Sequence[Candidate] = (),
             section_order: Sequence[str] = (), render: Render | None = None) -> Packed:
        """Ranked notes (after `extra`) packed into one context of at most `budget_tokens`, by section and region."""
        check_budget(budget_tokens)
        chunks = self.index.db.chunks_of({s.note.id for s in scored})
        candidates = [*extra, *(to_candidate(s, chunks.get(s.note.id, [])) for s in scored)]
        settings = self.settings
        order = settings.regions.order
        scale = max(1.0, budget_tokens / 1000)  # caps are per 1,000 tokens of budget
        caps = {name: max(1, round(settings.region(name).cap * scale)) for name in order}
        return pack(candidates, budget_tokens=budget_tokens, region_order=order, caps=caps,
                    count_tokens=self.index.embedder.count_tokens, vault_name=self.root.name,
                    section_order=section_order, render=render)

    def mode(self, mode: str | None) -> tuple[str, dict[str, float]]:
        """A mode's name and signal weights (None: `balanced`)."""
        name = mode or "balanced"
        modes = self.settings.modes
        if name not in modes:
            raise InvalidRequest(f"unknown mode {name!r}; modes: {', '.join(sorted(modes))}")
        return name, modes[name]

    def check_regions(self, regions: list[str] | None) -> None:
        """Refuse a region the settings do not name."""
        order = self.settings.regions.order
        unknown = sorted(set(regions or ()) - set(order))
        if unknown:
            raise InvalidRequest(f"unknown region {unknown[0]!r}; regions: {', '.join(order)}")

    def check_query(self, query: str) -> str:
        """The query stripped; refused when empty or longer than `recall.max_query_chars`."""
        query = (query or "").strip()
        if not query:
            raise InvalidRequest("the query is empty")
        limit = self.settings.recall.max_query_chars
        if len(query) > limit:
            raise InvalidRequest(f"the query is {len(query)} characters; the limit is {limit}")
        return query

    def check_k(self, k: int | None) -> int:
        """The number of results asked for (None: `recall.k`); refused outside 1 to `recall.max_k`."""
        rs = self.settings.recall
        k = rs.k if k is None else k
        if not 1 <= k <= rs.max_k:
            raise InvalidRequest(f"k must be between 1 and {rs.max_k}, not {k}")
        return k

    # -- the graph and what is read beside it ----------------------------------------------------------
    def archived(self) -> frozenset[str]:
        """The archived notes' paths, as the live graph last read them."""
        self.graph()
        return self.live.archived

    def graph(self) -> Graph:
        """The note graph (links, relations, projects, co-retrieval), updated in place for what changed."""
        db = self._current()
        return self.live.refresh(db, self.clock().timestamp())

    def _current(self) -> IndexDB:
        """The index's database, with what was read of an older generation of it dropped."""
        db = self.index.db
        generation = (self.index.replaced, db.get_meta("generation") or "0")
        if generation != self._generation:
            with self._lock:
                self._generation = generation
                self._concept_cache = None
        return db

    def concepts(self) -> list[Concept]:
        """The resonance notes as ranking reads them, read once per index generation."""
        self._current()
        concepts = self._concept_cache
        if concepts is None:
            with self._lock:
                concepts = self._concept_cache
                if concepts is None:
                    concepts = self._concept_cache = self._read_concepts()
        return concepts

    def _read_concepts(self) -> list[Concept]:
        db = self.index.db
        by_path: dict[str, set[str]] = {}
        for path, title, name in db.aliases_of(self.concept_folder + "/"):
            by_path.setdefault(path, {title.lower()}).add(name.lower())
        concepts = []
        for path, names in sorted(by_path.items()):
            fm = db.frontmatter(path) or {}
            concepts.append(Concept(path=path, names=tuple(sorted(n for n in names if len(n) > 2)),
                                    weight=as_weight(fm.get("weight"), DEFAULT_WEIGHT)))
        return concepts

    def graph_health(self) -> GraphHealth:
        """Hubs, islands, bridges, articulation points and dangling links of the vault's link graph."""
        dangling = [(ln.src, ln.target) for ln in self.index.db.links(dangling_only=True)]
        graph = self.graph()
        with self.live.lock.reading():  # a consistent graph: no update applied meanwhile
            return health(graph, dangling)
