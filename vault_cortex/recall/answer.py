"""The answer after a question, pure: a memory that comes right after one asking a question (the exchange it
`follows::` in an imported conversation, the section just before it in its own note) is likely its answer. When
that question matches the query, the memory answering it rises, and its why-line names the question it answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from vault_cortex.files.paths import note_name

TAIL = 200  # a question mark within this many characters of a text's end asks what the next memory answers


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    """The question a candidate answers: the note it follows (`path`) or the section before its best one."""

    relevance: float  # the question's own relevance to the query
    path: str = ""  # the note it follows, when the question is one
    heading: str = ""  # the section before it, when the question is one

    def phrase(self) -> str:
        """The why-line's words for this answer."""
        if self.path:
            return f"answers the question of [[{note_name(self.path)}]] ({self.relevance:.2f})"
        section = f' "{self.heading}"' if self.heading else ""
        return f"answers the question in the section before it{section} ({self.relevance:.2f})"


def asks(text: str) -> bool:
    """Whether a text ends by asking something: a question mark within its last TAIL characters."""
    return "?" in text.rstrip()[-TAIL:]


def answered(follows: str, candidates: Mapping[str, tuple[float, str]],
             before: Sequence[tuple[str, float, str]] = ()) -> Answer | None:
    """The question a candidate answers, if any: the note it follows (`follows`, a path) when that note is a
    candidate (`candidates`: path → its relevance and its best chunk's text) that asks something; else the
    section just before its best chunk (`before`: heading, relevance, text) when that section is a candidate that
    asks something. A question that does not match the query at all (relevance 0) is none."""
    if follows and (found := candidates.get(follows)) is not None and found[0] > 0 and asks(found[1]):
        return Answer(relevance=found[0], path=follows)
    for heading, relevance, text in before:
        if relevance > 0 and asks(text):
            return Answer(relevance=relevance, heading=heading)
    return None
