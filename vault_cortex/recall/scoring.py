"""The ranking's scoring stages (recall/pipeline.py calls them): what is read of the candidates once — their people
and sessions, whether they are a conversation, the company they keep, the question each answers, their access — and
then each candidate scored from it: its signals, weighted by the mode, raised by the cues it met, its why-line
composed only when read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from functools import lru_cache, partial

import msgspec

from vault_cortex.files.properties import parse_datetime
from vault_cortex.index.db import IndexDB
from vault_cortex.index.rows import ChunkRow, NoteRow
from vault_cortex.recall.answer import Answer, answered
from vault_cortex.recall.candidates import Concept, Pool, RankInput
from vault_cortex.recall.company import NAMED, Lift, Member, lifted, lifts, linked_among, sections_beside, sessions
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.model import Cues
from vault_cortex.recall.question import PEOPLE_PROPERTIES, Asked, Match, asked, match, people_in
from vault_cortex.recall.rank import (
    Fused,
    NoteFacts,
    RegionFacts,
    coactivation,
    effective_importance,
    layer_factor,
    reason,
    recency,
    weighted,
)
from vault_cortex.recall.scored import Scored
from vault_cortex.recall.signals import Cued, Signals, phrases

COACTIVATION_TOP = 5  # the best candidates whose co-retrievals count (`rank.coactivation`)
CONVERSATION_PROPERTIES = ("session", "speaker")  # a note carrying one is an exchange of a conversation
SESSION = "session"  # the property naming the conversation session a note belongs to

Questions = Callable[[NoteRow, ChunkRow], Answer | None]


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


class Reading(msgspec.Struct, frozen=True, kw_only=True):
    """What is read of the candidates once, for scoring each: the cue shares in force (the conversation cues off
    when the candidates are no conversation), what the query asks, and each candidate's people, company, session
    mate, the question it answers and its access (count, last time)."""

    cue: Cues
    conversation: bool
    question: Asked
    people: dict[int, tuple[str, ...]]
    company: dict[str, Lift]
    together: dict[str, Lift]
    answers: Questions | None  # None: the answer cue is off, or the query asks what may be inferred
    top: list[str]  # the best COACTIVATION_TOP candidates
    touched: Mapping[str, tuple[int, float | None]]


def read_candidates(request: RankInput, pool: Pool) -> Reading:
    """Read what scoring needs of the candidates, once. The conversation cues (session, person, when, dated,
    answer) apply when `recall.conversation` is on, or, at "auto", when a candidate carries a `session` or `speaker`
    property; a question asking what may be inferred is answered by what a person says of themselves, not by an
    answer."""
    r, cue = request, request.model.cues
    switch = r.settings.recall.conversation
    paths = pool.paths()
    company = _company(pool, linked_among(r.graph, paths)) if cue.company > 0 else {}
    people, session, talk = _people_and_sessions(r.db, [pool.chunk(f).note_id for f in pool.best],
                                                 switch is not False)
    conversation = talk if switch == "auto" else switch is True
    if not conversation:
        cue = msgspec.structs.replace(cue, session=0.0, person=0.0, when=0.0, dated=0.0, answer=0.0)
    question = asked(r.query, {p for ps in people.values() for p in ps}, today=date.fromtimestamp(r.now))
    together = sessions((pool.notes[i].path, session[i], f.relevance) for f in pool.best
                        if (i := pool.chunk(f).note_id) in session) if cue.session > 0 else {}
    answers = _questions(r.db, pool) if cue.answer > 0 and not question.infers else None
    return Reading(cue=cue, conversation=conversation, question=question, people=people, company=company,
                   together=together, answers=answers, top=paths[:COACTIVATION_TOP],
                   touched=r.access(paths))  # one read for every candidate


def score(request: RankInput, pool: Pool, reading: Reading) -> list[Scored]:
    """Each candidate scored: its signals weighted by the mode, raised by the cues it met, times its layer's factor."""
    return [_scored(request, pool, reading, f) for f in pool.best]


def _scored(request: RankInput, pool: Pool, reading: Reading, f: Fused) -> Scored:
    """One candidate scored; its why-line, composed when read, names each cue's raise when together they added
    NAMED or more."""
    note, chunk = pool.note(f), pool.chunk(f)
    lift = reading.company.get(note.path)
    relevance = lifted(f.relevance, lift, reading.cue.company)
    signals = _signals(request, pool, reading, note, chunk, relevance)
    cued, words = _cues(reading, note, chunk)
    weighed = weighted(signals.named(), request.weights)
    factor = signals.raw if signals.raw is not None else 1.0
    score = round(cued.raised(weighed) * factor, 4)
    vector = f.chunk_id in pool.dense  # every chunk with a vector has its similarity there
    weighs_relevance = request.weights.get("relevance", 0.0) > 0
    named = lift if lift is not None and relevance - f.relevance >= NAMED and weighs_relevance else None
    base = partial(_signals_why, signals, request.weights, f, vector, named)
    return Scored(note=note, chunk=chunk, fused=f, score=score, signals=signals, cued=cued, vector=vector,
                  explain=partial(_why, base, words, score - weighed * factor))


def _signals(request: RankInput, pool: Pool, reading: Reading, note: NoteRow, chunk: ChunkRow,
             relevance: float) -> Signals:
    """A candidate's signals: its (lifted) relevance, its region's weight, its importance decayed since last used,
    how often it was recalled with the best candidates, its graph proximity, its recency, and the resonant concept
    it touches (in a warm region, when the mode weighs resonance)."""
    r = request
    region_cfg = r.settings.region(note.region)
    region = RegionFacts(weight=region_cfg.weight, half_life_days=region_cfg.half_life_days,
                         warm=region_cfg.resonance == "warm")
    count, last = reading.touched.get(note.path, (0, None))
    facts = NoteFacts(path=note.path, region=note.region, importance=note.importance,
                      created=parse_time(note.created), mtime=note.mtime_ns / 1e9, last_access=last,
                      access_count=count)
    warm = r.weights.get("resonance", 0.0) > 0 and bool(r.concepts) and region.warm
    factor = layer_factor(note.layer)
    return Signals(relevance=round(relevance, 4), region=region.weight,
                   importance=round(effective_importance(facts, region, r.now), 4),
                   coactivation=round(coactivation(note.path, reading.top, r.pairs), 4),
                   graph=round(pool.proximity.get(note.path, 0.0), 4), recency=round(recency(facts, r.now), 4),
                   resonance=round(_resonance(note, chunk, r.concepts, r.graph), 4) if warm else 0.0,
                   raw=factor if factor != 1.0 else None)


def _cues(reading: Reading, note: NoteRow, chunk: ChunkRow) -> tuple[Cued, list[Callable[[], list[str]]]]:
    """The cues a candidate met (`cues_met`), and the why-line's words for them, composed when read."""
    q = reading.question
    met = (match(q, reading.people.get(note.id, ()), f"{note.title}\n{chunk.heading}\n{chunk.text}",
                 written_on(note.created))
           if reading.conversation and (q.people or q.when or q.periods) else Match())
    mate = reading.together.get(note.path)
    answer = reading.answers(note, chunk) if reading.answers is not None else None
    cued = cues_met(reading.cue, met, mate, answer)
    words: list[Callable[[], list[str]]] = [partial(_phrase, mate)] if mate is not None else []
    words.append(partial(phrases, cued, met))
    words += [partial(_phrase, answer)] if answer is not None else []
    return cued, words


def cues_met(cue: Cues, m: Match, session: Lift | None = None, answer: Answer | None = None) -> Cued:
    """The cues a candidate met, by the model's shares: its session mate's lift, the person and time cues of its
    match (`question.match`), the question it answers; a share of 0 turns its cue off."""
    return Cued(session=round(cue.session * session.relevance, 4) if session is not None else None,
                person=cue.person if m.person and cue.person > 0 else None,
                when=cue.when if m.when and cue.when > 0 else None,
                dated=cue.dated if m.period and cue.dated > 0 else None,
                answer=round(cue.answer * answer.relevance, 4) if answer is not None else None)


def also_said(explain: Callable[[], str], words: str) -> Callable[[], str]:
    """A why-line with more words after it, composed when read."""
    return partial(_and, explain, words)


def _and(explain: Callable[[], str], words: str) -> str:
    return f"{explain()}; {words}"


def _signals_why(signals: Signals, weights: Mapping[str, float], f: Fused, vector: bool, lift: Lift | None) -> str:
    """The why-line of a candidate's signals (`rank.reason`), and of the neighbour that lifted it, if named."""
    why = reason(signals.named(), weights, dense=f.dense, lexical=f.lexical, vector=vector, raw=signals.raw)
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


def _company(pool: Pool, linked: Mapping[str, tuple[tuple[str, ...], int]]) -> dict[str, Lift]:
    """Each candidate note's best neighbour among the candidates: a note it links with, or a section beside
    its best chunk (see `company`)."""
    by_note: dict[int, list[tuple[int, str, float]]] = {}
    for f in pool.fused:
        c = pool.chunks.get(f.chunk_id)
        if c is not None:
            by_note.setdefault(c.note_id, []).append((c.ord, c.heading, f.relevance))
    members = []
    for f in pool.best:
        chunk, path = pool.chunk(f), pool.note(f).path
        around, links = linked.get(path, ((), 0))
        members.append(Member(path=path, relevance=f.relevance, linked=around, links=links,
                              beside=sections_beside(chunk.ord, by_note.get(chunk.note_id, ()))))
    return lifts(members)


def _questions(db: IndexDB, pool: Pool) -> Questions:
    """The question each candidate answers, if any (see `answer`): read the notes the candidates follow once,
    and the candidate sections of each note by position."""
    candidates = {pool.note(f).path: (f.relevance, pool.chunk(f).text) for f in pool.best}
    sections = {(c.note_id, c.ord): (c.heading, f.relevance, c.text) for f in pool.fused
                if (c := pool.chunks.get(f.chunk_id)) is not None}
    follows = db.followed(pool.chunk(f).note_id for f in pool.best)

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
    keys = (*PEOPLE_PROPERTIES, SESSION)
    found = db.properties_of(note_ids, keys)
    people = {i: ps for i, (*values, _) in found.items() if (ps := people_in(values))}
    session = {i: str(values[-1]) for i, values in found.items()
               if values[-1] is not None and not isinstance(values[-1], (list, dict))}
    at = [keys.index(k) for k in CONVERSATION_PROPERTIES]
    talk = any(values[j] is not None for values in found.values() for j in at)
    return people, session, talk


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
