"""Session-start context: pinned identity notes, matching habits and open questions, the handoff, and recall,
packed into one token budget."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

import msgspec

from vault_cortex.files.activity import RecallEvent, current_client
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import note_name
from vault_cortex.identity.curiosity import open_matching
from vault_cortex.identity.habits import match as match_habits
from vault_cortex.index.host import Searchable
from vault_cortex.index.sync import Indexing
from vault_cortex.index.vectors import Vector
from vault_cortex.limits import MIN_BUDGET_TOKENS, check_budget
from vault_cortex.recall.filters import Filters, Scope
from vault_cortex.recall.pack import Candidate, Packed, Piece
from vault_cortex.recall.scored import Scored


class Recalling(Searchable, Protocol):
    """What session-start context uses: the store, ranking and packing, modes and the archive."""

    def ranked(self, query: str, qvec: Vector, weights: dict[str, float], *, regions: list[str] | None = None,
               exclude: frozenset[str] = frozenset(), scope: Scope | None = None) -> list[Scored]: ...
    def pack(self, scored: list[Scored], budget_tokens: int, extra: Sequence[Candidate] = (),
             section_order: Sequence[str] = ()) -> Packed: ...
    def mode(self, mode: str | None) -> tuple[str, dict[str, float]]: ...
    def archived(self) -> frozenset[str]: ...
    def scope(self, filters: Filters | None, regions: list[str] | None = None,
              exclude: frozenset[str] = frozenset()) -> Scope: ...


HANDOFF = "HANDOFF.md"
SECTIONS = ("Pinned", "Habits", "Open questions", "Handoff")
MAX_PINNED = 4


class Context(msgspec.Struct, frozen=True, kw_only=True):
    """What an agent or a person should know at the start of a task, within one budget."""

    task: str | None
    project: str | None
    mode: str
    markdown: str
    nudge: str  # one line: how many questions are open, and which match the task
    open_questions: int
    matching_questions: list[str]
    context: Packed
    took_ms: float
    indexing: Indexing | None = None  # set while a sync runs: the context comes from what is indexed so far


def query_text(cx: Recalling, task: str | None, project: str | None, active_note: str | None,
               recent: Sequence[str] | None) -> str:
    """The text recall runs on: the task, the project, the active note's head and the recent notes' titles."""
    parts = [p for p in (task, project) if p]
    if active_note:
        doc = cx.read_note(active_note)
        parts.append(note_name(doc.path))
        parts.append(body_text(doc.content)[:600])
    parts += [note_name(r) for r in (recent or [])]
    return "\n".join(parts).strip()


def special(cx: Recalling, path: str, section: str, score: float, why: str) -> Candidate | None:
    """A whole-note candidate for one of the fixed sections (pinned, habits, questions, handoff)."""
    ids = cx.db.note_ids([path])
    if path not in ids:
        return None
    chunks = cx.db.chunks_of([ids[path]])[ids[path]]
    if not chunks:
        return None
    note = cx.db.notes_by_id([ids[path]])[ids[path]]
    first, rest = chunks[0], chunks[1:]
    return Candidate(
        path=path, title=note.title, region=note.region, score=score, signals={}, reason=why,
        heading=first.heading, line=first.start_line, chunk_text=first.text, chunk_tokens=first.tokens,
        neighbours=tuple(Piece(text=c.text, tokens=c.tokens, heading=c.heading, line=c.start_line) for c in rest),
        section=section,
    )


def pinned(cx: Recalling) -> list[str]:
    """Identity-region notes marked `pinned: true`, else the most important ones, at most a few."""
    identity = {name for name in cx.settings.regions.order if cx.settings.region(name).identity}
    chosen = cx.db.pinned_notes(sorted(identity), MAX_PINNED)
    return [n.path for n in sorted(chosen, key=lambda n: (-(n.importance or 0.5), n.path))[:MAX_PINNED]]


def build_context(cx: Recalling, *, task: str | None, project: str | None, active_note: str | None,
                  recent: Sequence[str] | None, budget_tokens: int | None, mode: str | None,
                  filters: Filters | None = None, exclude: frozenset[str] = frozenset()) -> Context:
    """Pinned notes, matching habits and open questions, the handoff and recall (never the `exclude` paths),
    packed in one budget."""
    started = time.perf_counter()
    budget = cx.settings.recall.budget_tokens if budget_tokens is None else check_budget(budget_tokens)
    mode_name, weights = cx.mode(mode)
    text = query_text(cx, task, project, active_note, recent)
    if len(text) > cx.settings.recall.max_query_chars:
        text = text[: cx.settings.recall.max_query_chars]
    qvec = cx.embedder.embed([text])[0] if text else None
    extra: list[Candidate] = []
    for i, p in enumerate(pinned(cx)):
        extra += [c for c in [special(cx, p, "Pinned", 1.0 - i * 1e-3, "pinned identity note")] if c]
    if qvec is not None:
        for h in match_habits(cx, text, qvec)[: cx.settings.habits.max]:
            c = special(cx, h.path, "Habits", 0.95 + 0.04 * h.score, f"habit that matches this task: {h.why}")
            extra += [c] if c else []
    open_questions, found = open_matching(cx, qvec)
    matching = [q.path for q in found]
    for path in matching[:3]:
        c = special(cx, path, "Open questions", 0.94, "open question close to this task")
        extra += [c] if c else []
    handoff = special(cx, HANDOFF, "Handoff", 0.93, "the last handoff")
    extra += [handoff] if handoff else []
    nudge = ""
    if open_questions:
        names = ", ".join(f"[[{p.removesuffix('.md')}]]" for p in matching[:3])
        n = len(open_questions)
        nudge = f"> {n} open question{'s' if n != 1 else ''}" + (
            f"; {len(matching)} match this task: {names}" if matching else "") + "\n\n"
    nudge_tokens = cx.embedder.count_tokens(nudge) if nudge else 0
    scored: list[Scored] = []
    if qvec is not None:
        taken = frozenset(c.path for c in extra) | cx.archived() | exclude
        within = cx.scope(filters, exclude=taken)  # no capture unless the filters ask for them
        scored = cx.ranked(text, qvec, weights, exclude=taken, scope=within)[: cx.settings.recall.max_k]
    packed = cx.pack(scored, max(MIN_BUDGET_TOKENS, budget - nudge_tokens), extra=extra, section_order=SECTIONS)
    if task or project:
        cx.log(RecallEvent(ts=cx.clock(), client=current_client(), query=text[:500], mode=mode_name,
                             paths=tuple(i.path for i in packed.items if not i.section)))
    return Context(task=task, project=project, mode=mode_name, markdown=nudge + packed.markdown,
                   nudge=nudge.strip(), open_questions=len(open_questions), matching_questions=matching, context=packed,
                   took_ms=round((time.perf_counter() - started) * 1000, 2))

