"""The one text form a model is handed, pure: a memory as its path, a short reason in words and the passage that
bears on what was asked.

Every surface an agent reads (the session-start context, the prompt and failure pushes, the second look, the MCP
`recall` and `context` tools) renders its memories here, so each token carries the point: no link a model cannot
open, no score or per-signal figure it cannot use, and not a note's first characters but the sentences that answer
the query (the one that matches it best, then the ones after it: the fix after the symptom). The HTTP API and the
Obsidian plugin keep their structured fields and links (recall/pack.py's `render_markdown`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from vault_cortex.index.fts import STOPWORDS, WORD

STEM = 6  # letters a word is compared by, as the push gate compares them ("calibrated", "calibration": "calibr")
SUFFIXES = ("ing", "ed", "es", "s")  # cut first, leaving at least MIN_WORD letters ("locked", "locking": "lock")
MIN_WORD = 3  # shorter words ("is", "a", "of") carry no topic
WHY_PARTS = 2  # reasons named for one memory
PASSAGE_CHARS = 400  # a recalled memory's passage: a symptom, its cause and its fix; the rest one note read away
ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_FIGURE_IN_PARENS = re.compile(r"\s*\((?:[×x]?\s*)?[0-9][0-9.,%:/\s-]*\)")
_LINK = re.compile(r"\[\[[^\]]*\]\]")
_DIGIT = re.compile(r"\d")


def stems(text: str) -> set[str]:
    """The text's topic words: lower-cased, three letters or more, not stopwords, stemmed (`stem`)."""
    return {stem(w) for w in WORD.findall(text.lower()) if len(w) >= MIN_WORD and w not in STOPWORDS}


def stem(word: str) -> str:
    """A lower-cased word without its first matching suffix in SUFFIXES, cut to STEM letters."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_WORD:
            return word[: -len(suffix)][:STEM]
    return word[:STEM]


def sentences(text: str) -> list[str]:
    """The text's sentences, in order, whitespace collapsed: each line split after `.`, `!` or `?`; a heading or a
    list item is a sentence of its own."""
    out: list[str] = []
    for line in text.splitlines():
        out += [" ".join(s.split()) for s in _SENTENCE_END.split(line) if s.strip()]
    return out


def passage(text: str, query: str, limit: int) -> str:
    """The sentences of `text` that bear on `query`, within `limit` characters: the sentence holding most of the
    query's words (the first on a tie, the first sentence when none holds one), then the sentences after it while
    they fit (what follows a symptom is its cause or fix), then, with room left at the end of the text, the ones
    before it. Cut at a word with "…" where the text goes on."""
    said = sentences(text)
    if not said:
        return ""
    words = stems(query)
    held = [len(words & stems(s)) for s in said]
    best = held.index(max(held))
    start, end = best, best + 1
    size = len(said[best])
    while end < len(said) and size + 1 + len(said[end]) <= limit:
        size += 1 + len(said[end])
        end += 1
    while end == len(said) and start > 0 and size + 1 + len(said[start - 1]) <= limit:
        start -= 1
        size += 1 + len(said[start])
    body = " ".join(said[start:end])
    if len(body) > limit:
        return cut(body, limit)
    if start > 0 and len(body) + 2 <= limit:
        body = f"{ELLIPSIS} {body}"
    if end < len(said) and len(body) + 2 <= limit:
        body = f"{body} {ELLIPSIS}"
    return body


def cut(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word with "…" when it is longer."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = max(1, limit - len(ELLIPSIS))
    at = flat.rfind(" ", 0, room + 1)
    return flat[: at if at > room // 2 else room].rstrip(" .,;:") + ELLIPSIS


def in_words(*whys: str | None) -> str:
    """A short reason in words from why-lines ("matches the query by meaning (0.26); recent (1.00)"): their parts
    without the figures in brackets, a part that still states a figure left out ("meaning 0.45"; a date inside a
    [[link]] is a name, not a figure), each once, at most WHY_PARTS."""
    parts: list[str] = []
    for why in whys:
        for part in (why or "").split(";"):
            words = " ".join(_FIGURE_IN_PARENS.sub("", part).split())
            if words and not _DIGIT.search(_LINK.sub("", words)) and words not in parts:
                parts.append(words)
    return "; ".join(parts[:WHY_PARTS])


def item(path: str, why: str, text: str) -> str:
    """One memory as a model reads it: `## path — why` (the path the MCP tool `note` reads), then the passage."""
    head = f"## {path}" + (f" — {why}" if why else "")
    return f"{head}\n{text}" if text else head


def items(blocks: Iterable[str]) -> str:
    """Rendered memories, one after another, a blank line between them."""
    return "\n\n".join(b for b in blocks if b)


def named(paths: Sequence[str]) -> str:
    """Notes named as links, for a line that points back at them: `[[a]], [[b]]`."""
    return ", ".join(f"[[{p.removesuffix('.md')}]]" for p in paths)


def reminder(what: str, path: str) -> str:
    """One line pointing back at a memory the session was shown already, instead of showing it again:
    `what [[path]], shown earlier in this session.`"""
    return f"{what} {named([path])}, shown earlier in this session."


RECALL_PASSAGE_CHARS = 160  # of a hit in a recall's text: with its path and reason, about 70 tokens
NOTHING = ("Nothing in the vault bears on this: the closest note, {path}, has a {chance:.0%} chance by the push gate's "
           "estimate. Ask again in other words, or narrow it with a filter.")


def nothing(path: str, chance: float) -> str:
    """A recall's answer when no memory's chance reaches `gate.ASKED_FLOOR`: say so, with the closest one's chance."""
    return NOTHING.format(path=path, chance=chance)
