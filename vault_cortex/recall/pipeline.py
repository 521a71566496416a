"""The recall pipeline: candidates from vectors and BM25, graph neighbours, signals, mode-weighted ranking.

IO-facing orchestration over the index; the maths lives in `rank`, `graph` and `pack`.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from functools import lru_cache, partial

import msgspec

from vault_cortex.config import Settings
from vault_cortex.files.properties import parse_datetime
from vault_cortex.index.db import IndexDB
from vault_cortex.index.rows import ChunkRow, NoteRow
from vault_cortex.index.vectors import Vector, Vectors
from vault_cortex.recall.answer import Answer, answered
from vault_cortex.recall.company import (
    NAMED,
    Lift,
    Member,
    lifted,
    lifts,
    linked_among,
    sections_beside,
    sessions,
)
from vault_cortex.recall.edges import FOLLOWS
from vault_cortex.recall.gate import CANDIDATES
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.model import RankingModel
from vault_cortex.recall.proximity import relative_to_prior
from vault_cortex.recall.question import PEOPLE_PROPERTIES, Match, asked, cue_signals, match, people_in, phrases, raised
from vault_cortex.recall.rank import (
    Fused,
    NoteFacts,
    RegionFacts,
    best_per_note,
    coactivation,
    effective_importance,
    fuse,
    layer_factor,
    reason,
    recency,
    weighted,
)
from vault_cortex.recall.scored import Scored
from vault_cortex.recall.supersession import SUPERSEDED_FACTOR, superseded_why

SEEDS = 10  # best candidates that seed graph proximity
GRAPH_EXTRAS = 10  # graph neighbours added as candidates though no text matched
COACTIVATION_TOP = 5
THREAD_HOPS = 4  # exchanges either side of the best candidate that count as its thread (`in_thread`)
GATHERED = 60  # chunks gathered from each of the dense and lexical searches before fusion (or the k asked for)
# chunks BM25 scores for one query at most: past it the top N come from the query's rarer words, among the newest
# matching chunks if even the rarest matches more, so a query of common words costs the same at 1k and 100k notes
LEXICAL_BUDGET = 3000
CONVERSATION_PROPERTIES = ("session", "speaker")  # a note carrying one is an exchange of a conversation


class Concept(msgspec.Struct, frozen=True, kw_only=True):
    """A resonance note as ranking sees it: the names it goes by and its weight."""

    path: str
    names: tuple[str, ...]
    weight: float


@lru_cache(maxsize=65536)
def parse_time(value: str | None) -> float | None:
    """Epoch seconds of an ISO date or date-time as users type them; None when it is not one (remembered: each
    recall reads its candidates' `created` values, the same ones query after query)."""
    when = parse_datetime(value)
    return None if when is None else when.timestamp()


@lru_cache(maxsize=65536)
def written_on(value: str | None) -> date | None:
    """The day a note was written, from its `created` value; None when it has none."""
    when = parse_datetime(value)
    return None if when is None else when.date()


def rank(
    *,
    query: str,
    qvec: Vector,
    db: IndexDB,
    vectors: Vectors,
    graph: Graph,
    concepts: Sequence[Concept],
    access: Callable[[Sequence[str]], Mapping[str, tuple[int, float | None]]],
    pairs: Mapping[tuple[str, str], float],
    settings: Settings,
    model: RankingModel,
    weights: dict[str, float],
    now: float,
    regions: Sequence[str] | None = None,
    exclude: frozenset[str] = frozenset(),
    vector_lock: Callable[[], object] | None = None,
    allowed: frozenset[int] | None = None,
    at_least: int = 0,
    without: frozenset[int] = frozenset(),
) -> list[Scored]:
    """Every candidate note scored and sorted, best first; with `allowed` (note ids), only those notes, and never
    the `without` notes, filtered inside the dense and lexical searches so that filtering never starves the
    candidates. Each search gathers GATHERED chunks, or `at_least` (the results asked for) when that is more. The
    ranking model gives the fusion weights and how far each cue raises; the conversation cues (session, person,
    when, dated, answer) apply when `recall.conversation` is on, or, at "auto", when a candidate carries a
    `session` or `speaker` property."""
    rs, cue = settings.recall, model.cues
    fusion = model.fusion
    count = max(GATHERED, at_least)
    search = db.begin_lexical(query, count, notes=allowed, budget=LEXICAL_BUDGET,
                              without=without)  # its top found meanwhile
    dense = dense_candidates(qvec, db, vectors, count, allowed, without)
    lexical = search.finish(also=list(dense))  # the top N and the dense ones
    dense.update(vectors.similarity(qvec, [i for i in lexical if i not in dense]))
    chunks = db.chunks_by_id(set(dense) | set(lexical))
    fused = fuse(dense, lexical, fusion.dense, fusion.lexical)
    notes = db.notes_by_id({c.note_id for c in chunks.values()})
    # a sync running beside us may remove a chunk or note between these reads: such candidates drop out
    chunks = {i: c for i, c in chunks.items() if c.note_id in notes}
    best = [f for f in best_per_note(fused, {i: c.note_id for i, c in chunks.items()})
            if _wanted(notes[chunks[f.chunk_id].note_id], regions, exclude, allowed, without)]

    use_graph = weights.get("graph", 0.0) > 0 and graph.n_notes > 0
    prox: dict[str, float] = {}
    if use_graph:
        seeds = {notes[chunks[f.chunk_id].note_id].path: max(f.relevance, 1e-3) for f in best[:SEEDS]}
        have = {notes[chunks[f.chunk_id].note_id].path for f in best}
        # proximity less the note's prior (no hub bias), of the candidates and of the nearest others
        prox = relative_to_prior(graph, seeds, among=have, top=GRAPH_EXTRAS + len(have))
        nearest = heapq.nsmallest(GRAPH_EXTRAS + len(have), prox.items(), key=lambda kv: (-kv[1], kv[0]))
        extra_paths = [p for p, v in nearest if v > 0 and p not in have][:GRAPH_EXTRAS]
        if extra_paths:
            ids = {p: i for p, i in db.note_ids(extra_paths).items() if i not in without}
            extra_chunks = [c for cs in db.chunks_of(ids.values()).values() for c in cs]
            chunk_ids = [c.id for c in extra_chunks]
            dense.update(vectors.similarity(qvec, chunk_ids))
            lexical.update(db.lexical(query, len(chunk_ids), only=chunk_ids, budget=LEXICAL_BUDGET))
            chunks.update({c.id: c for c in extra_chunks})
            notes.update(db.notes_by_id(ids.values()))
            chunks = {i: c for i, c in chunks.items() if c.note_id in notes}
            fused = fuse(dense, lexical, fusion.dense, fusion.lexical)
            best = [f for f in best_per_note(fused, {i: c.note_id for i, c in chunks.items()})
                    if _wanted(notes[chunks[f.chunk_id].note_id], regions, exclude, allowed, without)]

    linked = linked_among(graph, [notes[chunks[f.chunk_id].note_id].path for f in best]) if cue.company > 0 else {}
    company = _company(best, fused, chunks, notes, linked) if cue.company > 0 else {}
    people, session, talk = _people_and_sessions(db, [chunks[f.chunk_id].note_id for f in best],
                                                 rs.conversation is not False)
    conversation = talk if rs.conversation == "auto" else rs.conversation is True
    if not conversation:
        cue = msgspec.structs.replace(cue, session=0.0, person=0.0, when=0.0, dated=0.0, answer=0.0)
    question = asked(query, {p for ps in people.values() for p in ps}, today=date.fromtimestamp(now))
    together = sessions((notes[i].path, session[i], f.relevance) for f in best
                        if (i := chunks[f.chunk_id].note_id) in session) if cue.session > 0 else {}
    # a question asking what may be inferred is answered by what a person says of themselves, not by an answer
    asked_before = _questions(db, best, fused, chunks, notes) if cue.answer > 0 and not question.infers else None
    top_paths = [notes[chunks[f.chunk_id].note_id].path for f in best[:COACTIVATION_TOP]]
    use_resonance = weights.get("resonance", 0.0) > 0 and bool(concepts)
    touched = access([notes[chunks[f.chunk_id].note_id].path for f in best])  # one read for every candidate
    drafts: list[_Draft] = []
    for f in best:
        chunk = chunks[f.chunk_id]
        note = notes[chunk.note_id]
        region_cfg = settings.region(note.region)
        region = RegionFacts(weight=region_cfg.weight, half_life_days=region_cfg.half_life_days,
                             warm=region_cfg.resonance == "warm")
        count, last = touched.get(note.path, (0, None))
        facts = NoteFacts(path=note.path, region=note.region, importance=note.importance,
                          created=parse_time(note.created), mtime=note.mtime_ns / 1e9, last_access=last,
                          access_count=count)
        lift = company.get(note.path)
        relevance = lifted(f.relevance, lift, cue.company)
        signals = {
            "relevance": round(relevance, 4),
            "region": region.weight,
            "importance": round(effective_importance(facts, region, now), 4),
            "coactivation": round(coactivation(note.path, top_paths, pairs), 4),
            "graph": round(prox.get(note.path, 0.0), 4),
            "recency": round(recency(facts, now), 4),
            "resonance": round(_resonance(note, chunk, concepts, graph), 4) if use_resonance and region.warm
            else 0.0,
        }
        factor = layer_factor(note.layer)
        if factor != 1.0:
            signals["raw"] = factor
        met = (match(question, people.get(note.id, ()), f"{note.title}\n{chunk.heading}\n{chunk.text}",
                     written_on(note.created))
               if conversation and (question.people or question.when or question.periods) else Match())
        mate = together.get(note.path)
        cued = {"session": round(cue.session * mate.relevance, 4)} if mate is not None else {}
        cued.update(cue_signals(met, cue.person, cue.when, cue.dated))
        answer = asked_before(note, chunk) if asked_before is not None else None
        if answer is not None:
            cued["answer"] = round(cue.answer * answer.relevance, 4)
        vector = f.chunk_id in dense  # every chunk with a vector has its similarity there
        named = lift if lift is not None and relevance - f.relevance >= NAMED and weights.get("relevance", 0.0) > 0 \
            else None
        words: list[Callable[[], list[str]]] = [partial(_phrase, mate)] if mate is not None else []
        words.append(partial(phrases, met, cued))
        words += [partial(_phrase, answer)] if answer is not None else []
        drafts.append(_Draft(note=note, chunk=chunk, fused=f, signals=signals, vector=vector,
                             base=partial(_signals_why, signals, weights, f, vector, named),
                             weighed=weighted(signals, weights), factor=factor, cued=cued, words=words))
    out = _superseded([d.final() for d in drafts], db.superseding(d.note.path for d in drafts))
    out.sort(key=lambda s: (-s.score, s.note.path))
    near = in_thread(graph, [s.note.path for s in out[:CANDIDATES]], THREAD_HOPS)
    return [msgspec.structs.replace(s, thread=True) if s.note.path in near else s for s in out] if near else out


def _superseded(scored: list[Scored], newer_of: Mapping[str, Sequence[str]]) -> list[Scored]:
    """Each candidate a later note supersedes, its score times SUPERSEDED_FACTOR and its why-line saying by what."""
    if not newer_of:
        return scored
    return [msgspec.structs.replace(s, score=round(s.score * SUPERSEDED_FACTOR, 4), superseded_by=tuple(newer),
                                    explain=partial(_and, s.explain, superseded_why(newer)))
            if (newer := newer_of.get(s.note.path)) else s for s in scored]


def _and(explain: Callable[[], str], words: str) -> str:
    return f"{explain()}; {words}"


def in_thread(graph: Graph, paths: Sequence[str], hops: int) -> set[str]:
    """Those of `paths` (after the first) within `hops` exchanges of the first, before or after it, in a
    conversation whose exchanges each follow the one before (`follows::`, as imported transcripts write): where the
    best memory is a turn of a conversation, the answer is often told a turn or two later, or just before."""
    if len(paths) < 2:
        return set()
    best = paths[0]
    before = set(graph.followed(best, FOLLOWS, hops))
    return {p for p in paths[1:] if p in before or best in graph.followed(p, FOLLOWS, hops)}


class _Draft(msgspec.Struct, kw_only=True):
    """A candidate between its signals and its final score, its why-line composed only when read."""

    note: NoteRow
    chunk: ChunkRow
    fused: Fused
    signals: dict[str, float]
    vector: bool
    base: Callable[[], str]  # the why-line of its signals and lift, before the cues
    weighed: float  # the mode-weighted signals
    factor: float  # its layer's factor
    cued: dict[str, float]  # the cues met, each the share of the gap to 1 it closes
    words: list[Callable[[], list[str]]]  # the why-line's words for them

    def score(self) -> float:
        """The weighted signals raised by the cues met, a raw capture kept ×0.85 of it."""
        return round(raised(self.weighed, self.cued) * self.factor, 4)

    def final(self) -> Scored:
        """The scored candidate; its why-line, composed when read, names each raise when together they added
        0.03 or more."""
        score = self.score()
        return Scored(note=self.note, chunk=self.chunk, fused=self.fused, score=score,
                      signals={**self.signals, **self.cued}, vector=self.vector,
                      explain=partial(_why, self.base, self.words, score - self.weighed * self.factor))


def _signals_why(signals: Mapping[str, float], weights: Mapping[str, float], f: Fused, vector: bool,
                 lift: Lift | None) -> str:
    """The why-line of a candidate's signals (`rank.reason`), and of the neighbour that lifted it, if named."""
    why = reason(signals, weights, dense=f.dense, lexical=f.lexical, vector=vector)
    if lift is None:
        return why
    return lift.phrase() if why == "weak match" else f"{why}; {lift.phrase()}"


def _why(base: Callable[[], str], words: Sequence[Callable[[], list[str]]], gain: float) -> str:
    """A candidate's whole why-line: its signals', then, when the cues raised its score by NAMED or more, theirs."""
    why = base()
    if gain >= NAMED:
        why = "; ".join([why, *(w for said in words for w in said())]) + f" (score +{gain:.2f})"
    return why


def _phrase(cue: Answer | Lift) -> list[str]:
    return [cue.phrase()]


def _company(best: Sequence[Fused], fused: Sequence[Fused], chunks: Mapping[int, ChunkRow],
             notes: Mapping[int, NoteRow], linked: Mapping[str, tuple[tuple[str, ...], int]]) -> dict[str, Lift]:
    """Each candidate note's best neighbour among the candidates: a note it links with, or a section beside
    its best chunk (see `company`)."""
    by_note: dict[int, list[tuple[int, str, float]]] = {}
    for f in fused:
        c = chunks.get(f.chunk_id)
        if c is not None:
            by_note.setdefault(c.note_id, []).append((c.ord, c.heading, f.relevance))
    paths = [notes[chunks[f.chunk_id].note_id].path for f in best]
    members = []
    for f, path in zip(best, paths, strict=True):
        chunk = chunks[f.chunk_id]
        around, links = linked.get(path, ((), 0))
        members.append(Member(path=path, relevance=f.relevance, linked=around, links=links,
                              beside=sections_beside(chunk.ord, by_note.get(chunk.note_id, ()))))
    return lifts(members)


def _questions(db: IndexDB, best: Sequence[Fused], fused: Sequence[Fused], chunks: Mapping[int, ChunkRow],
               notes: Mapping[int, NoteRow]) -> Callable[[NoteRow, ChunkRow], Answer | None]:
    """The question each candidate answers, if any (see `answer`): read the notes the candidates follow once,
    and the candidate sections of each note by position."""
    candidates = {notes[chunks[f.chunk_id].note_id].path: (f.relevance, chunks[f.chunk_id].text) for f in best}
    sections = {(c.note_id, c.ord): (c.heading, f.relevance, c.text) for f in fused
                if (c := chunks.get(f.chunk_id)) is not None}
    follows = db.followed(chunks[f.chunk_id].note_id for f in best)

    def question(note: NoteRow, chunk: ChunkRow) -> Answer | None:
        before = sections.get((chunk.note_id, chunk.ord - 1))
        return answered(follows.get(note.id, ""), candidates, (before,) if before is not None else ())
    return question


def _people_and_sessions(db: IndexDB, note_ids: Sequence[int],
                         read: bool) -> tuple[dict[int, tuple[str, ...]], dict[int, str], bool]:
    """The people each note is by or about (its `speaker`, `author` and `people` properties), the session it
    belongs to (`session`), for the notes that name any, and whether any is an exchange of a conversation (it
    carries one of CONVERSATION_PROPERTIES), in one read; nothing when not `read`."""
    if not read:
        return {}, {}, False
    keys = (*PEOPLE_PROPERTIES, "session")
    found = db.properties_of(note_ids, keys)
    people = {i: ps for i, (*values, _) in found.items() if (ps := people_in(values))}
    session = {i: str(values[-1]) for i, values in found.items()
               if values[-1] is not None and not isinstance(values[-1], (list, dict))}
    at = [keys.index(k) for k in CONVERSATION_PROPERTIES]
    talk = any(values[j] is not None for values in found.values() for j in at)
    return people, session, talk


def _wanted(note: NoteRow, regions: Sequence[str] | None, exclude: frozenset[str],
            allowed: frozenset[int] | None = None, without: frozenset[int] = frozenset()) -> bool:
    return (note.path not in exclude and (not regions or note.region in regions)
            and (allowed is None or note.id in allowed) and note.id not in without)


EXACT_LIMIT = 20_000  # a filter keeping more chunks than this always searches the ANN index first


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


def _resonance(note: NoteRow, chunk: ChunkRow, concepts: Sequence[Concept], graph: Graph) -> float:
    """The strongest resonant concept this note links to or names, 0 when none."""
    linked = set(graph.neighbours(note.path))
    text = f"{note.title}\n{chunk.text}".lower()
    best = 0.0
    for c in concepts:
        if c.path == note.path:
            continue
        if c.path in linked or _names_pattern(c.names).search(text):
            best = max(best, c.weight)
    return best


@lru_cache(maxsize=1024)
def _names_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """Whole-word matching of a concept's names (so the alias `craft` does not match `aircraft`)."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) or r"(?!x)x"
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)")
