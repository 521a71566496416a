"""A second look before the answer, pure: what the Stop hook recalls with, whom the gate lets through, what it says.

When an agent has composed its answer, the Stop hook recalls with the last prompt and the answer, through the
push gate at its own threshold (the ranking model's `second_look`; then each memory on its own probability at the
push's floor), leaving out what the session was shown. At most LIMIT memories come back; the hook then blocks the
stop once with `reason`, and the agent checks them before it finishes. `tests/bench/second_look.py` calibrates the
threshold on the LoCoMo development set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from vault_cortex.recall import brief
from vault_cortex.recall.gate import PushGate
from vault_cortex.recall.scored import Hit

LIMIT = 2  # memories in one second look: the agent reads each one, so only the few the gate is surest of
ANSWER_CHARS = 120  # the start of what the answer adds, where its first claims are (each token costs embedding time)
PROMPT_CHARS = 200  # the prompt's start likewise (a pasted log is not what the answer is about)
GIST_CHARS = 240  # a memory's passage (recall/brief.py): the sentences that bear on the answer
FIGURES = 4  # figures named when a memory's differ from the answer's
# An answer's best match is the memory it restates, and the exchanges around that one in its conversation are what
# the answer drew on, not what it lacks: the thread cue, which finds a question's answer told a turn or two after
# its best match, is not read (held out, it lowered the loop's coverage at the targets' precision, 0.734 -> 0.691).
UNREAD = ("thread",)
_FIGURE = re.compile(r"\d+(?:[.,:/-]\d+)*")

HEADER = ("Before you finish: the vault (vault-cortex) holds memories that bear on this answer. Check them (read "
          "each note) and correct or confirm your answer, then finish.")
CONTRADICTS = "This answer may contradict"
WHERE = "The notes are in {root} (or use the vault-cortex MCP tool note with the path)."


def query(answer: str, prompt: str, max_chars: int) -> str:
    """The recall query of a second look: the prompt answered, then the start of what the answer says beyond it,
    within the limit. The words of the answer that the prompt already has are left out: an answer that restates
    its question would cost the query's embedding and its word search as much again and add nothing to find."""
    asked = _start(prompt, PROMPT_CHARS)
    said = {_word(w) for w in asked.split()} - {""}
    new = " ".join(w for w in answer.split() if _word(w) not in said)
    text = "\n".join(part for part in (asked, _start(new, ANSWER_CHARS)) if part)
    return text[:max_chars]


def _word(token: str) -> str:
    """A whitespace token as compared with the prompt's: lower-cased, without the punctuation around it."""
    return token.strip(".,;:!?()[]{}\"'`*").lower()


def _start(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit)
    return flat[: cut if cut > limit // 2 else limit]


def gate_settings(push: PushGate, second_look: float) -> PushGate:
    """The push gate as the second look uses it, not reading the features in UNREAD: it looks only when a memory
    not yet shown reaches `second_look` (the ranking model's); then every memory at the push's floor goes along on
    its own probability, as a push's do (so the memory that contradicts an answer rides along with the one that
    restates its question; held out, a block brings evidence 0.685 of the time against 0.668 with the threshold
    as floor)."""
    return msgspec.structs.replace(push, threshold=second_look, floor=min(push.floor, second_look),
                                   weights={**push.weights, **dict.fromkeys(UNREAD, 0.0)})


def gist(text: str, limit: int = GIST_CHARS) -> str:
    """A memory's passage on one line, cut at a word."""
    return brief.cut(text, limit)


def fresh_and_shown(hits: Sequence[Hit], shown: frozenset[str], threshold: float,
                    most: int | None = None) -> tuple[list[Hit], list[Hit]]:
    """Gated hits judged with nothing left out as shown (the gate's `most` widened by the shown ones, `widened`),
    split: those the session was not shown (none unless one of them reaches `threshold`, as when the shown ones are
    left out of the gate; at most `most`) and those it was (for a reminder)."""
    fresh = [h for h in hits if h.path not in shown]
    if not any((h.push_probability or 0.0) >= threshold for h in fresh):
        fresh = []
    return fresh[:most], [h for h in hits if h.path in shown]


def chosen(hits: Sequence[Hit], seen: frozenset[str], answer: str, threshold: float) -> tuple[list[Hit], list[Hit]]:
    """What a second look offers of its gated hits (judged with the `seen` ones, `widened`): the memories not shown
    and the shown ones whose figures differ from the answer's (for a reminder). It looks when a memory not shown
    reaches `threshold`, or a shown one the answer contradicts does; then the ones not shown at the floor go along,
    as in a push."""
    fresh, shown = fresh_and_shown(hits, seen, threshold, LIMIT)
    again = [h for h in shown if differs(answer, h.snippet)][:LIMIT]
    if not fresh and any((h.push_probability or 0.0) >= threshold for h in again):
        fresh = [h for h in hits if h.path not in seen][:LIMIT]
    return fresh, again


def widened(push: PushGate, shown: frozenset[str]) -> PushGate:
    """The gate judging the shown memories too, without their taking the places of the ones not shown."""
    return msgspec.structs.replace(push, most=push.most + len(shown))


def figures(text: str) -> list[str]:
    """The numbers, dates and measurements a text states, in order, once each (single digits left out)."""
    return list(dict.fromkeys(m for m in _FIGURE.findall(text) if len(m) > 1))


def differs(answer: str, memory: str) -> str | None:
    """A hint that the memory may contradict the answer: both state figures and share none of them."""
    said, noted = figures(answer), figures(memory)
    if not said or not noted or set(said) & set(noted):
        return None
    return f"its figures ({', '.join(noted[:FIGURES])}) are not the answer's ({', '.join(said[:FIGURES])})"


def reason(hits: Sequence[Hit], answer: str = "", root: str = "", shown: Sequence[Hit] = ()) -> str:
    """The Stop hook's reason: the instruction, then each memory not shown (its path, why in words, and whether its
    figures differ from the answer's, and the passage that bears), then one line for each memory the session was
    shown whose figures differ from the answer's; then where the notes are."""
    lines = [HEADER]
    for h in hits[:LIMIT]:
        why = "; ".join(part for part in (brief.in_words(h.push_why, h.reason) or "close to the answer",
                                          differs(answer, h.snippet)) if part)
        lines.append(brief.item(h.path, why, gist(h.snippet)))
    lines += [brief.reminder(CONTRADICTS, h.path) for h in shown if differs(answer, h.snippet)][:LIMIT]
    if root:
        lines.append(WHERE.format(root=root))
    return "\n".join(lines)
