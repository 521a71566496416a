"""Memories that echo each other, pure: two of the best candidates, from different sessions (or different notes),
that share words the query does not hold and few other candidates hold. An answer spread over several memories
is often told more than once (the pottery made with the kids in May, the kids' clay bowls in June): each such
memory corroborates the other, so the one that matches the question less well rises with the one that matches
it well, and its why-line names the echo and the words they share.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache

import msgspec
import numpy as np

from vault_cortex.files.paths import note_name
from vault_cortex.index.fts import STOPWORDS, WORD

POOL = 30  # the best-scored candidates that may echo one another
FULL = 6.0  # shared words whose rarity among the pool sums to this count as a full echo
FLOOR = 0.1  # a candidate matching the query less than this is not raised by an echo: it answers none of it
MIN_LENGTH = 4  # shorter words are too plain to tie two memories together
SHOWN = 3  # shared words the why-line names
LONG = re.compile(rf"\w{{{MIN_LENGTH},}}")  # a whole word (a run of word characters) of MIN_LENGTH or more
# words common in any writing, too plain to tie two memories together (beside the stopwords BM25 drops)
PLAIN = frozenset("""
    also always amazing awesome cool could done even feel felt glad going good great hey into just keep know
    like lot lots love made make much nice really sounds super thank thanks thing things think time times
    totally want wanted well wow yeah yes
    """.split())


class Echo(msgspec.Struct, frozen=True, kw_only=True):
    """The candidate of another session (or note) that a candidate shares the most rare words with."""

    path: str  # the echoing candidate
    relevance: float  # its relevance to the query
    strength: float  # in [0, 1]: how strongly the two agree (their shared words' rarity, full at FULL) × relevance
    words: tuple[str, ...] = ()  # the rarest words they share, at most SHOWN

    def phrase(self) -> str:
        """The why-line's words for this echo."""
        shared = ", ".join(f'"{w}"' for w in self.words)
        return f"echoes [[{note_name(self.path)}]] ({shared}; {self.relevance:.2f})"


def telling_words(text: str, query: str | frozenset[str]) -> frozenset[str]:
    """The words of a text that can tie it to another memory: lower-cased, at least MIN_LENGTH letters, neither
    stopwords nor plain, and not the query's own (those already count in its relevance); `query` is the query or
    its lower-cased words."""
    asked = query if isinstance(query, frozenset) else frozenset(w.lower() for w in WORD.findall(query))
    return _words(text) - asked


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """A text's telling words before the query's are taken out: the same candidates come back query after query.
    (`LONG` finds exactly the words `WORD` finds that are MIN_LENGTH or longer, in one pass in C.)"""
    return frozenset(LONG.findall(text.lower())).difference(STOPWORDS, PLAIN)


def echoes(members: Sequence[tuple[str, str, float, str]], query: str,
           linked: Mapping[str, Collection[str]] | None = None) -> dict[str, Echo]:
    """Each candidate's strongest echo among the others, from (path, group, relevance, text) best-scored first
    (only the first POOL count): a group is the candidate's session, or its own path when it has none, and two
    of one group never echo (the session lift judges those), nor two that `linked` says link with each other (the
    company lift judges those), and a candidate whose relevance is below FLOOR is
    not raised. A shared word counts log(pool / the candidates holding it), so a word most of them hold ties
    nothing together."""
    pool = members[:POOL]
    asked = frozenset(w.lower() for w in WORD.findall(query))
    words = [telling_words(text, asked) for *_, text in pool]
    held = Counter(w for ws in words for w in ws)
    n = len(pool)
    vocabulary = sorted(w for w, k in held.items() if k > 1)  # a word one candidate holds ties nothing together
    if not vocabulary:
        return {}
    column = {w: c for c, w in enumerate(vocabulary)}
    rarity = np.log(n / np.array([held[w] for w in vocabulary], dtype=np.float64))
    holds = np.zeros((n, len(vocabulary)), dtype=np.float64)
    for i, ws in enumerate(words):
        holds[i, [column[w] for w in ws if w in column]] = 1.0
    shared = (holds * rarity) @ holds.T  # the rarity of the words each two candidates share
    relevance = np.array([m[2] for m in pool], dtype=np.float64)
    codes: dict[str, int] = {}
    group = np.array([codes.setdefault(m[1], len(codes)) for m in pool])
    apart = group[:, None] != group[None, :]  # one group never echoes itself (nor a candidate itself)
    at = {m[0]: i for i, m in enumerate(pool)}
    for i, (path, *_) in enumerate(pool):
        for j in (at[o] for o in (linked or {}).get(path, ()) if o in at):
            apart[i, j] = apart[j, i] = False
    strength = np.where(apart & (relevance > 0)[None, :], np.minimum(1.0, shared / FULL) * relevance[None, :], 0.0)
    out: dict[str, Echo] = {}
    for i, (path, _, own, _) in enumerate(pool):
        j = int(np.argmax(strength[i]))
        if own < FLOOR or strength[i, j] <= 0:
            continue
        both = words[i] & words[j]
        named = sorted((w for w in both if w in column), key=lambda w: (-rarity[column[w]], w))[:SHOWN]
        out[path] = Echo(path=pool[j][0], relevance=pool[j][2], strength=float(strength[i, j]), words=tuple(named))
    return out
