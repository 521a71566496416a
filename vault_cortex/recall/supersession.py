"""Supersession in recall, pure: a note that a later one supersedes ranks lower and says by what; a push carries
the later note with it.

A later note that reverses or corrects an earlier one names it with `supersedes: [[older]]` (a sleep writes it
under `relations:`, a person may write it by hand; both are kept whole). The older note stays findable — it is
the history of the decision — but ranks below: its score times SUPERSEDED_FACTOR, its why-line ending
"superseded by [[Newer]]". The newer note's own score is left as it is. A push (the prompt's, a failure's, the
second look's) never carries the older note without the newer one when that one is among the gate's candidates:
the newer goes first and says which note it supersedes.

Which notes a note supersedes is read from the index's links (`IndexDB.superseding`, one indexed read per recall).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from vault_cortex.files.paths import note_name

SUPERSEDES = "supersedes"  # the relation, in `relations:` or as a property of its own
# A superseded note's score is multiplied by this: a reversal and the decision it reverses are about equally
# close to any query about either, so the factor must outweigh their usual difference (a few hundredths) and the
# lift the `supersedes` link itself gives the older note in the graph signal, yet keep it above unrelated notes.
SUPERSEDED_FACTOR = 0.6


def link(path: str) -> str:
    """A note as a wikilink in a why-line."""
    return f"[[{note_name(path)}]]"


def superseded_why(newer: Sequence[str]) -> str:
    """The why-line's words for a superseded note."""
    return "superseded by " + ", ".join(link(p) for p in newer)


def supersedes_why(older: Sequence[str]) -> str:
    """The push's words for the note that supersedes one it carries."""
    return "supersedes " + ", ".join(link(p) for p in older)


def push_order(passed: Sequence[str], superseded_by: Mapping[str, Sequence[str]], among: Collection[str],
               most: int) -> list[str]:
    """The notes to push, in order: each passed note, preceded by the notes superseding it that are `among` the
    gate's candidates (once each), at most `most` (a newer note is never cut for the older one it precedes)."""
    out: list[str] = []
    for path in passed:
        out += [n for n in superseded_by.get(path, ()) if n in among and n not in out]
        if path not in out:
            out.append(path)
    return out[:most]
