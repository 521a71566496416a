"""Session-start context: pinned identity notes, matching habits and open questions, the handoff, and recall,
packed into one token budget."""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from vault_cortex.config import Settings
from vault_cortex.files.activity import RecallEvent, current_client
from vault_cortex.files.frontmatter import body_text
from vault_cortex.files.paths import note_name
from vault_cortex.identity.curiosity import open_matching
from vault_cortex.identity.habits import match as match_habits
from vault_cortex.index.db import IndexDB
from vault_cortex.index.sync import Indexing
from vault_cortex.limits import MIN_BUDGET_TOKENS, check_budget
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.pack import Candidate, Packed, Piece
from vault_cortex.recall.recaller import Recaller
from vault_cortex.store.change import Vault

HANDOFF = "HANDOFF.md"
SECTIONS = ("Pinned", "Habits", "Open questions", "Handoff")
MAX_PINNED = 4
MAX_QUESTIONS = 3  # matching open questions packed (and named in the nudge)
ACTIVE_HEAD_CHARS = 600  # of the active note's body, added to the query text
# The fixed sections' items as packing ranks them (greedy by score: these put them ahead of recall's hits for the
# budget): the pinned notes first, each next one a step lower; a habit between HABIT_RANK and HABIT_RANK +
# HABIT_SPAN by its match score (0 to 1); then the matching questions, then the handoff.
PINNED_RANK = 1.0
PINNED_STEP = 1e-3
HABIT_RANK = 0.95
HABIT_SPAN = 0.04
QUESTION_RANK = 0.94
HANDOFF_RANK = 0.93


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


def query_text(vault: Vault, task: str | None, project: str | None, active_note: str | None,
               recent: Sequence[str] | None, limit: int) -> str:
    """The text recall runs on: the task and the project, then the active note's head and the recent notes'
    titles, each added whole while the text stays within `limit` characters (the caller checks the task's)."""
    text = "\n".join(p for p in (task, project) if p)
    more: list[str] = []
    if active_note:
        doc = vault.read_note(active_note)
        more += [note_name(doc.path), body_text(doc.content)[:ACTIVE_HEAD_CHARS]]
    more += [note_name(r) for r in (recent or [])]
    for part in more:
        longer = f"{text}\n{part}" if text else part
        if len(longer.strip()) > limit:
            break
        text = longer
    return text.strip()


def special(db: IndexDB, path: str, section: str, score: float, why: str) -> Candidate | None:
    """A whole-note candidate for one of the fixed sections (pinned, habits, questions, handoff)."""
    ids = db.note_ids([path])
    if path not in ids:
        return None
    chunks = db.chunks_of([ids[path]])[ids[path]]
    if not chunks:
        return None
    note = db.notes_by_id([ids[path]])[ids[path]]
    first, rest = chunks[0], chunks[1:]
    return Candidate(
        path=path, title=note.title, region=note.region, score=score, signals={}, reason=why,
        heading=first.heading, line=first.start_line, chunk_text=first.text, chunk_tokens=first.tokens,
        neighbours=tuple(Piece(text=c.text, tokens=c.tokens, heading=c.heading, line=c.start_line) for c in rest),
        section=section,
    )


def pinned(db: IndexDB, settings: Settings) -> list[str]:
    """Identity-region notes marked `pinned: true`, else the most important ones, at most a few."""
    identity = {name for name in settings.regions.order if settings.region(name).identity}
    chosen = db.pinned_notes(sorted(identity), MAX_PINNED)
    return [n.path for n in sorted(chosen, key=lambda n: (-(n.importance or 0.5), n.path))[:MAX_PINNED]]


def build_context(recaller: Recaller, vault: Vault, *, task: str | None, project: str | None,
                  active_note: str | None, recent: Sequence[str] | None, budget_tokens: int | None,
                  mode: str | None, filters: Filters | None = None,
                  exclude: frozenset[str] = frozenset()) -> Context:
    """Pinned notes, matching habits and open questions, the handoff and recall (never the `exclude` paths),
    packed in one budget. Recall runs by recall's rules (`Recaller.recall_packed`): a task longer than
    `recall.max_query_chars` is refused, not cut."""
    started = time.perf_counter()
    settings, db = recaller.settings, recaller.index.db
    budget = settings.recall.budget_tokens if budget_tokens is None else check_budget(budget_tokens)
    mode_name, _ = recaller.mode(mode)
    if task and task.strip():
        task = recaller.check_query(task)
    text = query_text(vault, task, project, active_note, recent, settings.recall.max_query_chars)
    qvec = recaller.index.embedder.embed([text])[0] if text else None
    extra: list[Candidate] = []
    for i, p in enumerate(pinned(db, settings)):
        extra += [c for c in [special(db, p, "Pinned", PINNED_RANK - i * PINNED_STEP, "pinned identity note")] if c]
    if qvec is not None:
        for h in match_habits(recaller, text, qvec)[: settings.habits.max]:
            c = special(db, h.path, "Habits", HABIT_RANK + HABIT_SPAN * h.score,
                        f"habit that matches this task: {h.why}")
            extra += [c] if c else []
    open_questions, found = open_matching(recaller, qvec)
    matching = [q.path for q in found]
    for path in matching[:MAX_QUESTIONS]:
        c = special(db, path, "Open questions", QUESTION_RANK, "open question close to this task")
        extra += [c] if c else []
    handoff = special(db, HANDOFF, "Handoff", HANDOFF_RANK, "the last handoff")
    extra += [handoff] if handoff else []
    nudge = ""
    if open_questions:
        names = ", ".join(f"[[{p.removesuffix('.md')}]]" for p in matching[:MAX_QUESTIONS])
        n = len(open_questions)
        nudge = f"> {n} open question{'s' if n != 1 else ''}" + (
            f"; {len(matching)} match this task: {names}" if matching else "") + "\n\n"
    nudge_tokens = recaller.index.count_tokens(nudge) if nudge else 0
    left = max(MIN_BUDGET_TOKENS, budget - nudge_tokens)
    if qvec is not None:
        _, packed = recaller.recall_packed(text, qvec, mode=mode, budget_tokens=left, extra=extra,
                                           section_order=SECTIONS, filters=filters, exclude=exclude)
    else:
        packed = recaller.pack([], left, extra=extra, section_order=SECTIONS)
    if task or project:
        vault.log(RecallEvent(ts=vault.clock(), client=current_client(), query=text[:500], mode=mode_name,
                              paths=tuple(i.path for i in packed.items if not i.section)))
    return Context(task=task, project=project, mode=mode_name, markdown=nudge + packed.markdown,
                   nudge=nudge.strip(), open_questions=len(open_questions), matching_questions=matching, context=packed,
                   took_ms=round((time.perf_counter() - started) * 1000, 2))
