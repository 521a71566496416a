"""Session-start context: pinned identity notes and the handoff, then the habits, open questions and memories that
bear on the project and task (the push gate's calibrated probability, or the note's `project:`), packed into one
token budget and rendered in the one text form a model reads (recall/brief.py)."""

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
from vault_cortex.index.vectors import Vector
from vault_cortex.limits import check_budget
from vault_cortex.recall import brief
from vault_cortex.recall.filters import Filters
from vault_cortex.recall.pack import Candidate, Packed, PackedItem, Piece
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
PASSAGE_CHARS = 160  # of each item in the model's text: the sentences that bear on the project and task
OPEN_QUESTION = "an open question on this"  # named on one line: the path says what it asks


class Context(msgspec.Struct, frozen=True, kw_only=True):
    """What an agent or a person should know at the start of a task, within one budget."""

    task: str | None
    project: str | None
    mode: str
    markdown: str  # what an agent reads (recall/brief.py's form: path, reason in words, the passage that bears)
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


def special(db: IndexDB, path: str, section: str, score: float, why: str, named: bool = False) -> Candidate | None:
    """A whole-note candidate for one of the fixed sections (pinned, habits, questions, handoff); `named`: only its
    title (an open question, which the model is shown on one line)."""
    ids = db.note_ids([path])
    if path not in ids:
        return None
    chunks = db.chunks_of([ids[path]])[ids[path]]
    if not chunks:
        return None
    note = db.notes_by_id([ids[path]])[ids[path]]
    first, rest = chunks[0], chunks[1:]
    if named:
        return Candidate(path=path, title=note.title, region=note.region, score=score, signals={}, reason=why,
                         heading=first.heading, line=first.start_line, chunk_text=note.title,
                         chunk_tokens=len(note.title.split()), section=section)  # never widened
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
    """Pinned notes and the handoff, then the habits, open questions and
    recall that bear on the task (`Recaller.bearing`; never the `exclude` paths), packed in one budget. Recall runs
    by recall's rules (`Recaller.recall_packed`): a task longer than `recall.max_query_chars` is refused, not cut."""
    started = time.perf_counter()
    settings, db = recaller.settings, recaller.index.db
    budget = settings.recall.budget_tokens if budget_tokens is None else check_budget(budget_tokens)
    mode_name, _ = recaller.mode(mode)
    if task and task.strip():
        task = recaller.check_query(task)
    text = query_text(vault, task, project, active_note, recent, settings.recall.max_query_chars)
    qvec = recaller.index.embedder.embed([text])[0] if text else None
    bears = frozenset() if qvec is None else recaller.bearing(text, qvec, mode=mode, project=project,
                                                              exclude=exclude, filters=filters)
    open_questions, found = open_matching(recaller, qvec)
    matching = [q.path for q in found]
    bears |= of_project(db, [q.path for q in open_questions], project)
    extra = _sections(recaller, db, text, qvec, bears, project,
                      [q.path for q in (*found, *open_questions) if q.path in bears])
    nudge = ""
    if open_questions:
        names = ", ".join(f"[[{p.removesuffix('.md')}]]" for p in matching[:MAX_QUESTIONS])
        n = len(open_questions)
        nudge = f"> {n} open question{'s' if n != 1 else ''}" + (
            f"; {len(matching)} match this task: {names}" if matching else "")
    if qvec is not None:
        _, packed = recaller.recall_packed(text, qvec, mode=mode, budget_tokens=budget, extra=extra,
                                           section_order=SECTIONS, filters=filters, exclude=exclude, only=bears,
                                           render=lambda i: one(i, text) + "\n\n")
    else:
        packed = recaller.pack([], budget, extra=extra, section_order=SECTIONS, render=lambda i: one(i, text) + "\n\n")
    if task or project:
        vault.log(RecallEvent(ts=vault.clock(), client=current_client(), query=text[:500], mode=mode_name,
                              paths=tuple(i.path for i in packed.items if not i.section)))
    return Context(task=task, project=project, mode=mode_name, markdown=render(packed.items, text),
                   nudge=nudge, open_questions=len(open_questions), matching_questions=matching, context=packed,
                   took_ms=round((time.perf_counter() - started) * 1000, 2))


def _sections(recaller: Recaller, db: IndexDB, text: str, qvec: Vector | None, bears: frozenset[str],
              project: str | None, questions: Sequence[str]) -> list[Candidate]:
    """The fixed sections' items: the pinned notes, the habits and open questions that bear, and the handoff (which
    says whose it is when its `project:` names another project than the one given)."""
    settings = recaller.settings
    extra: list[Candidate] = []
    for i, p in enumerate(pinned(db, settings)):
        extra += [c for c in [special(db, p, "Pinned", PINNED_RANK - i * PINNED_STEP, "pinned identity note")] if c]
    if qvec is not None:
        # a habit bears when a trigger word the person wrote for it is in the text, or when the gate passes it
        for h in [h for h in match_habits(recaller, text, qvec) if h.trigger or h.path in bears][: settings.habits.max]:
            c = special(db, h.path, "Habits", HABIT_RANK + HABIT_SPAN * h.score,
                        f"habit that matches this task: {h.why}")
            extra += [c] if c else []
    for path in list(dict.fromkeys(questions))[:MAX_QUESTIONS]:
        c = special(db, path, "Open questions", QUESTION_RANK, OPEN_QUESTION, named=True)
        extra += [c] if c else []
    ids = db.note_ids([HANDOFF])
    own = db.notes_by_id(list(ids.values())).get(ids[HANDOFF]) if HANDOFF in ids else None
    if own is not None:  # always: where the last session left off, saying whose it is when another project's
        theirs = bool(project and own.project and HANDOFF not in of_project(db, [HANDOFF], project))
        handoff = special(db, HANDOFF, "Handoff", HANDOFF_RANK,
                          f"the last handoff, of project {own.project}" if theirs else "the last handoff")
        extra += [handoff] if handoff else []
    return extra


def of_project(db: IndexDB, paths: Sequence[str], project: str | None) -> frozenset[str]:
    """Those of the paths whose note's `project:` names the project (read by id, as few as there are paths)."""
    own = (project or "").strip().casefold()
    if not own or not paths:
        return frozenset()
    notes = db.notes_by_id(db.note_ids(list(paths)).values())
    return frozenset(n.path for n in notes.values() if (n.project or "").strip().casefold() == own)


def render(items: Sequence[PackedItem], query: str) -> str:
    """The context as a model reads it (recall/brief.py), item after item; the budget counts these blocks."""
    return brief.items(one(i, query) for i in items)


def one(item: PackedItem, query: str) -> str:
    """One item as a model reads it: its path, its reason in words and the passage that bears on the query; a pinned
    identity note's opening whatever the task (it says who the person is, not what the task matched in it); an open
    question on one line (its path asks it)."""
    if item.section == "Open questions":
        return brief.item(item.path, OPEN_QUESTION, "")
    bears_on = "" if item.section == "Pinned" else query  # no query words: the passage is the note's start
    return brief.item(item.path, brief.in_words(item.reason), brief.passage(item.text, bears_on, PASSAGE_CHARS))
