"""The recall pipeline: one request (`RankInput`) passed down short named stages — candidates gathered from vectors
and BM25 within the scope, fused, joined by their graph neighbours, read and scored (recall/scoring.py), then the
superseded lowered, sorted, and the best candidate's thread marked.

IO-facing orchestration over the index; the maths lives in `rank`, `graph`, `company`, `question` and `pack`.
"""

from __future__ import annotations

import heapq

import msgspec

from vault_cortex.index.db import IndexDB
from vault_cortex.index.rows import ChunkRow, NoteRow
from vault_cortex.index.vectors import Vector, Vectors
from vault_cortex.recall.candidates import Concept as Concept
from vault_cortex.recall.candidates import Pool
from vault_cortex.recall.candidates import RankInput as RankInput
from vault_cortex.recall.edges import FOLLOWS
from vault_cortex.recall.gate import CANDIDATES
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.proximity import relative_to_prior
from vault_cortex.recall.rank import best_per_note, fuse
from vault_cortex.recall.scored import Scored
from vault_cortex.recall.scoring import also_said, read_candidates, score
from vault_cortex.recall.scoring import parse_time as parse_time
from vault_cortex.recall.supersession import SUPERSEDED_FACTOR, superseded_why

SEEDS = 10  # best candidates that seed graph proximity
GRAPH_EXTRAS = 10  # graph neighbours added as candidates though no text matched
THREAD_HOPS = 4  # exchanges either side of the best candidate that count as its thread (`in_thread`)
GATHERED = 60  # chunks gathered from each of the dense and lexical searches before fusion (or the k asked for)
# chunks BM25 scores for one query at most: past it the top N come from the query's rarer words, among the newest
# matching chunks if even the rarest matches more, so a query of common words costs the same at 1k and 100k notes
LEXICAL_BUDGET = 3000
EXACT_LIMIT = 20_000  # a filter keeping more chunks than this always searches the ANN index first


def rank(request: RankInput) -> list[Scored]:
    """Every candidate note scored and sorted, best first: gathered (`gather`), joined by its graph neighbours
    (`with_graph_extras`), read once and scored each (`scoring`), the superseded lowered and the best one's thread
    marked (`settled`)."""
    pool = with_graph_extras(request, gather(request))
    return settled(request, score(request, pool, read_candidates(request, pool)))


def gather(request: RankInput) -> Pool:
    """The candidates the dense and lexical searches find within the scope (`allowed`, never `without`: filtered
    inside the searches, so that filtering never starves them), fused. Each search gathers GATHERED chunks, or
    `at_least` when that is more; the lexical search runs on a worker while the dense one runs here."""
    r = request
    count = max(GATHERED, r.at_least)
    search = r.db.begin_lexical(r.query, count, notes=r.allowed, budget=LEXICAL_BUDGET, without=r.without)
    dense = dense_candidates(r.qvec, r.db, r.vectors, count, r.allowed, r.without)
    lexical = search.finish(also=list(dense))  # the top N and the dense ones
    dense.update(r.vectors.similarity(r.qvec, [i for i in lexical if i not in dense]))
    chunks = r.db.chunks_by_id(set(dense) | set(lexical))
    return pooled(r, dense, lexical, chunks, r.db.notes_by_id({c.note_id for c in chunks.values()}))


def pooled(request: RankInput, dense: dict[int, float], lexical: dict[int, float], chunks: dict[int, ChunkRow],
           notes: dict[int, NoteRow], proximity: dict[str, float] | None = None) -> Pool:
    """The chunks found fused by the model's weights, and each wanted note's best chunk. A sync running beside us
    may remove a chunk or note between the reads: such candidates drop out."""
    chunks = {i: c for i, c in chunks.items() if c.note_id in notes}
    fused = fuse(dense, lexical, request.model.fusion.dense, request.model.fusion.lexical)
    best = [f for f in best_per_note(fused, {i: c.note_id for i, c in chunks.items()})
            if request.wanted(notes[chunks[f.chunk_id].note_id])]
    return Pool(dense=dense, lexical=lexical, chunks=chunks, notes=notes, fused=fused, best=best,
                proximity=proximity or {})


def with_graph_extras(request: RankInput, pool: Pool) -> Pool:
    """With the graph weighed, the candidates' proximity to the best SEEDS (less each note's prior: no hub bias),
    and the GRAPH_EXTRAS nearest notes that no search found joined as candidates, scored like the others."""
    r = request
    if r.weights.get("graph", 0.0) <= 0 or r.graph.n_notes <= 0:
        return pool
    seeds = {pool.note(f).path: max(f.relevance, 1e-3) for f in pool.best[:SEEDS]}
    have = set(pool.paths())
    prox = relative_to_prior(r.graph, seeds, among=have, top=GRAPH_EXTRAS + len(have))
    nearest = heapq.nsmallest(GRAPH_EXTRAS + len(have), prox.items(), key=lambda kv: (-kv[1], kv[0]))
    extra_paths = [p for p, v in nearest if v > 0 and p not in have][:GRAPH_EXTRAS]
    if not extra_paths:
        return msgspec.structs.replace(pool, proximity=prox)
    ids = {p: i for p, i in r.db.note_ids(extra_paths).items() if i not in r.without}
    extra_chunks = [c for cs in r.db.chunks_of(ids.values()).values() for c in cs]
    chunk_ids = [c.id for c in extra_chunks]
    dense = {**pool.dense, **r.vectors.similarity(r.qvec, chunk_ids)}
    lexical = {**pool.lexical, **r.db.lexical(r.query, len(chunk_ids), only=chunk_ids, budget=LEXICAL_BUDGET)}
    chunks = {**pool.chunks, **{c.id: c for c in extra_chunks}}
    return pooled(r, dense, lexical, chunks, {**pool.notes, **r.db.notes_by_id(ids.values())}, prox)


def dense_candidates(qvec: Vector, db: IndexDB, vectors: Vectors, count: int, allowed: frozenset[int] | None,
                     without: frozenset[int] = frozenset()) -> dict[int, float]:
    """The `count` chunks nearest the query; with `allowed` notes, the nearest among their chunks only; never a
    chunk of the `without` notes (the ANN search fetches past them)."""
    if allowed is None:
        return vectors.search(qvec, count, skip=frozenset(db.chunk_ids_of(without)) if without else frozenset())
    ids = db.chunk_ids_of(allowed - without)
    if not ids:
        return {}
    total = max(1, len(vectors))
    fetch = count * (total // len(ids) + 1) * 2
    if len(ids) > EXACT_LIMIT or fetch < len(ids):  # a loose filter: over-fetch from the ANN index, then filter
        wanted = set(ids)
        found = {i: s for i, s in vectors.search(qvec, min(total, fetch)).items() if i in wanted}
        if len(found) >= count:
            return dict(sorted(found.items(), key=lambda kv: -kv[1])[:count])
    return vectors.search_among(qvec, ids, count)


def settled(request: RankInput, scored: list[Scored]) -> list[Scored]:
    """The scored candidates in their final order: each a later note supersedes lowered (`superseded`), sorted best
    first, and the few exchanges around the best candidate in its conversation marked (`in_thread`)."""
    out = superseded(scored, request.db.superseding(s.note.path for s in scored))
    out.sort(key=lambda s: (-s.score, s.note.path))
    near = in_thread(request.graph, [s.note.path for s in out[:CANDIDATES]], THREAD_HOPS)
    return [msgspec.structs.replace(s, thread=True) if s.note.path in near else s for s in out] if near else out


def superseded(scored: list[Scored], newer_of: dict[str, list[str]]) -> list[Scored]:
    """Each candidate a later note supersedes, its score times SUPERSEDED_FACTOR and its why-line saying by what."""
    if not newer_of:
        return scored
    return [msgspec.structs.replace(s, score=round(s.score * SUPERSEDED_FACTOR, 4), superseded_by=tuple(newer),
                                    explain=also_said(s.explain, superseded_why(newer)))
            if (newer := newer_of.get(s.note.path)) else s for s in scored]


def in_thread(graph: Graph, paths: list[str], hops: int) -> set[str]:
    """Those of `paths` (after the first) within `hops` exchanges of the first, before or after it, in a
    conversation whose exchanges each follow the one before (`follows::`, as imported transcripts write): where the
    best memory is a turn of a conversation, the answer is often told a turn or two later, or just before."""
    if len(paths) < 2:
        return set()
    best = paths[0]
    before = set(graph.followed(best, FOLLOWS, hops))
    return {p for p in paths[1:] if p in before or best in graph.followed(p, FOLLOWS, hops)}
