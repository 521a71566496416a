"""The ranking's scored candidates and what is made of them: a hit as recall returns it, a candidate as packing
sees it, and what the push gate reads of them and lets through (its model is recall/gate.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from vault_cortex.index.progress import Indexing
from vault_cortex.index.rows import ChunkRow, NoteRow
from vault_cortex.recall.brief import PASSAGE_CHARS, passage
from vault_cortex.recall.gate import CANDIDATES, Cue, PushGate, Verdict, choose, judge
from vault_cortex.recall.pack import Candidate, Packed, Piece
from vault_cortex.recall.rank import Fused
from vault_cortex.recall.signals import Cued, Signals
from vault_cortex.recall.supersession import push_order, superseded_why, supersedes_why


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled note: its best chunk, score, every signal and a one-line reason."""

    path: str
    title: str
    region: str
    score: float
    signals: dict[str, float]
    reason: str
    dense: float
    lexical: float
    heading: str
    snippet: str
    line: int
    push_probability: float | None = None  # with `gate`: the gate's chance that this memory bears on the query
    push_why: str | None = None  # with `gate`: the features that raised that chance, in words
    vector: bool = True  # False: the chunk has no vector yet (indexing fills them in), so it matched by words only


class Recall(msgspec.Struct, frozen=True, kw_only=True):
    query: str
    mode: str
    hits: list[Hit]
    took_ms: float
    context: Packed | None = None  # set when a token budget was asked for
    # set while indexing runs: the answer comes from what is indexed so far; its phase says how far ("words": the
    # notes written so far, by words; "vectors": every note by words, by meaning those whose vectors are in)
    indexing: Indexing | None = None


class Scored(msgspec.Struct, frozen=True, kw_only=True):
    note: NoteRow
    chunk: ChunkRow
    fused: Fused
    score: float
    signals: Signals
    explain: Callable[[], str]  # composes the why-line: most candidates are never shown, so it is made when read
    vector: bool = True  # the chunk had its vector (its meaning counted)
    thread: bool = False  # a few exchanges from the best candidate in its conversation (`in_thread`)
    superseded_by: tuple[str, ...] = ()  # the notes that supersede it (recall/supersession.py)
    cued: Cued = Cued()  # the cues it met

    def named(self) -> dict[str, float]:
        """Its signals and the cues it met, by name, as a hit reports them."""
        return {**self.signals.named(), **self.cued.met()}

    @property
    def reason(self) -> str:
        """The one-line why of this candidate's score."""
        return self.explain()


def gate(scored: Sequence[Scored], query: str, push: PushGate) -> list[Verdict]:
    """The push gate's verdict on the best-ranked candidates (at most `gate.CANDIDATES`), in rank order."""
    seen = [s.chunk.text for s in scored[CANDIDATES:]]
    return judge(query, cues(scored[:CANDIDATES]), push.weights, push.intercept, seen)


def cues(scored: Sequence[Scored]) -> list[Cue]:
    """What the push gate reads of each scored candidate."""
    return [Cue(score=s.score, relevance=s.fused.relevance, dense=s.fused.dense, lexical=s.fused.lexical,
                cosine=s.fused.cosine, text=f"{s.note.title}\n{s.chunk.text}", region=s.signals.region,
                recency=s.signals.recency, person=s.cued.person is not None, when=s.cued.when is not None,
                dated=s.cued.dated is not None, thread=s.thread)
            for s in scored]


def gate_passed(scored: Sequence[Scored], query: str, push: PushGate, k: int,
                shown: frozenset[str] = frozenset()) -> list[tuple[Scored, Verdict]]:
    """The candidates the push gate lets through, likeliest first, at most k (and `push.most`), with their verdicts.

    Each memory passes on its own calibrated probability (`push.floor`), never on the best one's: the gate
    fires only when a memory not yet `shown` reaches `push.threshold`, so when the best memories were shown
    already (the session's start context held them) nothing is pushed rather than leftovers (`gate.choose`).
    """
    verdicts = [(s, v) for s, v in zip(scored, gate(scored, query, push), strict=False) if s.note.path not in shown]
    picked = choose([v.probability for _, v in verdicts], push.threshold, push.floor, min(k, push.most))
    return with_superseding([verdicts[i] for i in picked], verdicts, min(k, push.most))


def with_superseding(passed: Sequence[tuple[Scored, Verdict]], among: Sequence[tuple[Scored, Verdict]],
                     most: int) -> list[tuple[Scored, Verdict]]:
    """A superseded memory the gate passed goes after the memories superseding it that are `among` its candidates
    (`supersession.push_order`); each verdict's why says which supersedes which."""
    if not any(s.superseded_by for s, _ in passed):
        return list(passed)
    by_path = {s.note.path: (s, v) for s, v in among}
    superseded_by = {s.note.path: s.superseded_by for s, _ in passed}
    order = push_order([s.note.path for s, _ in passed], superseded_by, by_path, most)
    out = []
    for path in order:
        s, v = by_path[path]
        older = [p for p in order if path in superseded_by.get(p, ())]
        said = [v.why, supersedes_why(older) if older else "", superseded_why(s.superseded_by) if s.superseded_by
                else ""]
        out.append((s, msgspec.structs.replace(v, why="; ".join(w for w in said if w))))
    return out


def to_hit(s: Scored, query: str, verdict: Verdict | None = None) -> Hit:
    return Hit(path=s.note.path, title=s.note.title, region=s.note.region, score=s.score, signals=s.named(),
               reason=s.reason, dense=round(s.fused.dense, 4), lexical=round(s.fused.lexical, 4),
               heading=s.chunk.heading, snippet=passage(s.chunk.text, query, PASSAGE_CHARS), line=s.chunk.start_line,
               push_probability=verdict.probability if verdict else None, push_why=verdict.why if verdict else None,
               vector=s.vector)


def to_candidate(s: Scored, neighbours: Sequence[ChunkRow], section: str = "") -> Candidate:
    """A scored note as packing sees it: its best chunk and the chunks around it, nearest first."""
    around = sorted((c for c in neighbours if c.id != s.chunk.id), key=lambda c: (abs(c.ord - s.chunk.ord), c.ord))
    return Candidate(
        path=s.note.path, title=s.note.title, region=s.note.region, score=s.score, signals=s.named(),
        reason=s.reason, heading=s.chunk.heading, line=s.chunk.start_line, chunk_text=s.chunk.text,
        chunk_tokens=s.chunk.tokens,
        neighbours=tuple(Piece(text=c.text, tokens=c.tokens, heading=c.heading, line=c.start_line)
                         for c in around[:4]),
        section=section,
    )
