"""Ranking maths, pure: fusing dense and lexical scores, picking each note's best chunk, snippets."""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec

_WORD = re.compile(r"\w+", re.UNICODE)


class Fused(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk's relevance and the two normalised components it came from."""

    chunk_id: int
    relevance: float
    dense: float
    lexical: float


def normalise_dense(sims: Mapping[int, float]) -> dict[int, float]:
    """Cosine similarity mapped to [0, 1] against the best candidate, so weights mean the same per query."""
    if not sims:
        return {}
    top = max(sims.values())
    floor = min(min(sims.values()), top - 1e-9)
    span = max(top - floor, 1e-9)
    return {k: max(0.0, (v - floor) / span) for k, v in sims.items()}


def normalise_lexical(scores: Mapping[int, float]) -> dict[int, float]:
    """BM25 (higher is better) divided by the query's best score, in [0, 1]."""
    if not scores:
        return {}
    top = max(scores.values())
    if top <= 0:
        return {k: 0.0 for k in scores}
    return {k: max(0.0, v / top) for k, v in scores.items()}


def fuse(
    dense: Mapping[int, float],
    lexical: Mapping[int, float],
    dense_weight: float,
    lexical_weight: float,
) -> list[Fused]:
    """Weighted sum of normalised dense and lexical scores over the union of candidates, best first."""
    d = normalise_dense(dense)
    lx = normalise_lexical(lexical)
    total = (dense_weight + lexical_weight) or 1.0
    out = [
        Fused(
            chunk_id=k,
            relevance=(dense_weight * d.get(k, 0.0) + lexical_weight * lx.get(k, 0.0)) / total,
            dense=d.get(k, 0.0),
            lexical=lx.get(k, 0.0),
        )
        for k in set(d) | set(lx)
    ]
    out.sort(key=lambda f: (-f.relevance, f.chunk_id))
    return out


def best_per_note(fused: list[Fused], note_of: Mapping[int, int]) -> list[Fused]:
    """Keep each note's best chunk, in rank order (fused must already be sorted)."""
    seen: set[int] = set()
    out = []
    for f in fused:
        note = note_of.get(f.chunk_id)
        if note is None or note in seen:
            continue
        seen.add(note)
        out.append(f)
    return out


def snippet(text: str, query: str, width: int = 240) -> str:
    """The window of the text with the most query words, whitespace collapsed, ellipses where cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    best, best_at = -1, 0
    step = max(20, width // 4)
    for start in range(0, max(1, len(flat) - width + step), step):
        window = flat[start:start + width].lower()
        hits = sum(1 for w in words if w in window)
        if hits > best:
            best, best_at = hits, start
    start = best_at
    if start > 0:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 30 else start
    piece = flat[start:start + width]
    if start + width < len(flat):
        cut = piece.rfind(" ")
        piece = (piece[:cut] if cut > width // 2 else piece) + "…"
    return ("…" if start > 0 else "") + piece
