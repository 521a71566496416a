"""The FTS5 query text, pure: a query's words OR-ed for BM25, stopwords dropped; and FTS5's own BM25 formula, for
scoring chunks outside FTS5 (`index.lexical`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

# Words too common to help BM25; a query made only of them falls back to all its words.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours yourself
    yourselves ever
    """.split()
)
WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(query: str) -> list[str]:
    """The query's words that BM25 matches on: lower-cased, stopwords dropped (unless nothing else), once each."""
    words = [w.lower() for w in WORD.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(kept))


def fts_match(terms: list[str]) -> str:
    """An FTS5 MATCH expression: the terms OR-ed, each quoted."""
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)


def rarest(terms: list[str], freqs: dict[str, int], budget: int) -> list[str] | None:
    """The rarer terms whose matches together stay within `budget` chunks (at least the rarest one), when all of
    them would not; None when every term fits. BM25 scores each chunk matching any term, so a query of common
    words in a large vault would score most of it; it is scored on its rarer words instead."""
    if budget <= 0 or len(terms) < 2 or sum(freqs.get(t, 0) for t in terms) <= budget:
        return None
    kept: list[str] = []
    total = 0
    for term in sorted(terms, key=lambda t: (freqs.get(t, 0), t)):
        if kept and total + freqs.get(term, 0) > budget:
            break
        kept.append(term)
        total += freqs.get(term, 0)
    return kept


COLUMNS = ("title", "heading", "text")
COLUMN_WEIGHTS = (2.0, 1.0, 1.0)  # a word in the title counts twice
K1, B = 1.2, 0.75  # FTS5's bm25() constants


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of an FTS5 record (its averages record, a row's column sizes), read 7 bits a byte:
    exact below 2**56, far past any token count."""
    out: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            out.append(value)
            value = 0
    return out


def idf(rows: int, hits: int) -> float:
    """FTS5's inverse document frequency of a phrase matching `hits` of `rows` rows (never below 1e-6)."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def bm25(freqs: Sequence[float], idfs: Sequence[float], size: int, avgdl: float) -> float:
    """FTS5's bm25() of one row (higher is better): `freqs` are each phrase's column-weighted occurrences in
    the row, `size` the row's tokens over all columns, `avgdl` the table's mean row size."""
    norm = K1 * (1.0 - B + B * size / avgdl)
    return sum(w * (f * (K1 + 1.0)) / (f + norm) for f, w in zip(freqs, idfs, strict=True) if f)
