"""Curiosity: open questions as `curiosities/` notes, listed by relevance and closed by the memory that answers them.

Closing a question sets `status: explored` and `answered_by: "[[answer]]"` on the question, and adds
`relations: answers: ["[[question]]"]` to the answer, so the link shows both ways in Obsidian's graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from vault_cortex.errors import InvalidRequest, NoteNotFound, WriteConflict
from vault_cortex.files.edit import add_relation, edit_bytes, set_property
from vault_cortex.files.note import parse_note
from vault_cortex.files.paths import note_name
from vault_cortex.files.properties import read_aliases
from vault_cortex.files.vault import content_hash
from vault_cortex.files.yamltext import note_filename, render_new_note
from vault_cortex.index.vectors import Vector
from vault_cortex.recall.recaller import Recaller
from vault_cortex.store.change import Vault

CURIOSITIES_DIR = "curiosities"
OPEN = "open"
EXPLORED = "explored"
ANSWERS = "answers"
MAX_QUESTION_CHARS = 300
MATCH_THRESHOLD = 0.4  # least cosine of a task and an open question for the question to surface (MiniLM's scale)


class Curiosity(msgspec.Struct, frozen=True, kw_only=True):
    """One question: where it lives, its text and state; `similarity` is set when listed against a text."""

    path: str
    question: str
    status: str
    created: str | None = None
    answered_by: str | None = None
    similarity: float | None = None


class Curiosities(msgspec.Struct, frozen=True, kw_only=True):
    """Open questions: all of them, or those close to a text (best first)."""

    text: str | None
    open: int  # every open question, whether or not it matched
    items: list[Curiosity]


class Explored(msgspec.Struct, frozen=True, kw_only=True):
    """A question closed by a memory, and the two links written."""

    question: Curiosity
    answer: str  # the answering note's path
    question_etag: str
    answer_etag: str


# -- pure ------------------------------------------------------------------------------------------------
def is_open(fm: Mapping[str, Any]) -> bool:
    """A question is open until its status says otherwise (a missing status is open)."""
    status = fm.get("status")
    return status is None or str(status).strip().lower() in ("", OPEN)


def question_of(path: str, fm: Mapping[str, Any]) -> str:
    """The question as asked: the alias the file name was made from (it keeps the `?`), else the file name."""
    name = note_name(path)
    for alias in read_aliases(fm.get("aliases"))[0]:
        if note_filename(alias) == name:
            return alias
    return name


def to_curiosity(path: str, fm: Mapping[str, Any], similarity: float | None = None) -> Curiosity:
    answered = fm.get("answered_by")
    return Curiosity(path=path, question=question_of(path, fm), status=str(fm.get("status") or OPEN),
                     created=str(fm["created"]) if fm.get("created") else None,
                     answered_by=str(answered) if answered else None, similarity=similarity)


def new_question(question: str, context: str | None, created: str) -> str:
    """A new curiosity note as `_templates/curiosity.md` makes it: open, unanswered, dated, tagged."""
    props: dict[str, object] = {"status": OPEN, "answered_by": "", "created": created, "tags": ["question"]}
    if note_filename(question) != question:
        props["aliases"] = [question]
    text = render_new_note(title=question, body=(context or "").strip(), properties=props)
    return text.replace('\nanswered_by: ""\n', "\nanswered_by:\n", 1)  # empty, as the template leaves it


def close(question_text: str, answer_link: str) -> str:
    """The question's text with `status: explored` and `answered_by` set: two changed lines."""
    return set_property(set_property(question_text, "status", EXPLORED), "answered_by", f"[[{answer_link}]]")


def clean_question(question: str) -> str:
    q = " ".join((question or "").split())
    if not q:
        raise InvalidRequest("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise InvalidRequest(f"the question is {len(q)} characters; keep it under {MAX_QUESTION_CHARS}")
    return q


# -- IO: the index through the Recaller ------------------------------------------------------------------------------
def open_matching(recaller: Recaller, qvec: Vector | None) -> tuple[list[Curiosity], list[Curiosity]]:
    """Every open question, and those at least MATCH_THRESHOLD similar to the vector, best first."""
    db = recaller.index.db
    paths = db.paths_under(CURIOSITIES_DIR)
    fms = {p: db.frontmatter(p) or {} for p in paths}
    open_ = [to_curiosity(p, fms[p]) for p in paths if is_open(fms[p])]
    open_.sort(key=lambda c: (c.created or "", c.path), reverse=True)
    if qvec is None:
        return open_, []
    threshold = MATCH_THRESHOLD
    sims = recaller.similarity(qvec, [c.path for c in open_])
    matching = [msgspec.structs.replace(c, similarity=round(sims[c.path], 4))
                for c in open_ if sims.get(c.path, 0.0) >= threshold]
    return open_, sorted(matching, key=lambda c: (-(c.similarity or 0.0), c.path))


def list_curiosities(recaller: Recaller, text: str | None = None) -> Curiosities:
    """Open questions, newest first; with a text, only those relevant to it, best first."""
    text = (text or "").strip()[: recaller.settings.recall.max_query_chars] or None
    qvec = recaller.index.embedder.embed([text])[0] if text else None
    open_, matching = open_matching(recaller, qvec)
    return Curiosities(text=text, open=len(open_), items=matching if text else open_)


def wonder(vault: Vault, question: str, *, context: str | None = None) -> Curiosity:
    """Create an open question in `curiosities/` (never overwriting); asking again returns the existing one."""
    q = clean_question(question)
    path = f"{CURIOSITIES_DIR}/{note_filename(q)}.md"
    with vault.change() as tx:
        try:
            data = tx.read(path)
        except NoteNotFound:
            created = vault.clock().astimezone().strftime("%Y-%m-%dT%H:%M")
            data = new_question(q, context, created).encode("utf-8")
            tx.write(path, data, None, op="create")
    return to_curiosity(path, parse_note(path, data.decode("utf-8", "replace")).frontmatter)


def explore(vault: Vault, path: str, answer_path: str) -> Explored:
    """Close a question with the memory that answers it, linking both ways; refused if either changed meanwhile."""
    if not path.startswith(CURIOSITIES_DIR + "/"):
        raise InvalidRequest(f"{path!r} is not a curiosity (questions live in {CURIOSITIES_DIR}/)")
    if answer_path == path:
        raise InvalidRequest("a question cannot answer itself")
    db = vault.index.db
    with vault.change() as tx:
        q_data, a_data = tx.read(path), tx.read(answer_path)
        new_q = edit_bytes(q_data, lambda text: close(text, link_target(db.note_paths(), answer_path)))
        new_a = edit_bytes(a_data, lambda text: add_relation(text, ANSWERS, link_target(db.note_paths(), path)))
        q_etag, a_etag = content_hash(q_data), content_hash(a_data)
        if new_q != q_data:
            q_etag = tx.write(path, new_q, q_etag, op="explore")
        try:
            if new_a != a_data:
                a_etag = tx.write(answer_path, new_a, a_etag, op="explore")
        except WriteConflict:
            if new_q != q_data:  # put the question back, so neither half of the link is left alone
                tx.write(path, q_data, q_etag)
            raise
    return Explored(question=to_curiosity(path, db.frontmatter(path) or {}), answer=answer_path,
                    question_etag=q_etag, answer_etag=a_etag)


def link_target(note_paths: Iterable[str], path: str) -> str:
    """How to link a note: its file name when no other note shares it, else its path (without `.md`)."""
    name = note_name(path)
    same = [p for p in note_paths if note_name(p).casefold() == name.casefold()]
    return name if len(same) <= 1 else path.removesuffix(".md")
