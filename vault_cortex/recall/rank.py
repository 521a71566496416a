"""Ranking maths, pure: fusing dense and lexical scores, picking each note's best chunk."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from vault_cortex.files.properties import is_capture


class Fused(msgspec.Struct, frozen=True, kw_only=True):
    """A chunk's relevance and the two normalised components it came from."""

    chunk_id: int
    relevance: float
    dense: float
    lexical: float
    cosine: float = 0.0  # the raw cosine similarity behind `dense` (0 when it was not computed)


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
            cosine=float(dense.get(k, 0.0)),
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


# -- signals and modes ---------------------------------------------------------------------------------

DAY = 86400.0
RECENCY_HALF_LIFE_DAYS = 30.0


def halved(elapsed: float, half_life: float) -> float:
    """What is left of 1 after `elapsed`, halving every `half_life` (in the same unit): the one decay every
    signal, sleep and weight uses. 1 when nothing elapsed or `half_life` is 0 (never decays)."""
    if half_life <= 0:
        return 1.0
    return float(0.5 ** (max(0.0, elapsed) / half_life))


class NoteFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What ranking needs to know about a note besides its relevance."""

    path: str
    region: str
    importance: float | None  # the `importance:` property, None when unset
    created: float | None  # epoch seconds of `created:`, None when unset or unparsable
    mtime: float  # epoch seconds of the file's last change
    last_access: float | None = None  # from the activity log
    access_count: int = 0


class RegionFacts(msgspec.Struct, frozen=True, kw_only=True):
    weight: float
    half_life_days: float  # 0 = no decay
    warm: bool


def effective_importance(facts: NoteFacts, region: RegionFacts, now: float) -> float:
    """Importance (0.5 when unset) halved every half-life since the last access; no decay when half-life is 0."""
    base = 0.5 if facts.importance is None else min(1.0, max(0.0, facts.importance))
    since = max(t for t in (facts.last_access, facts.created, facts.mtime) if t is not None)
    return base * halved((now - since) / DAY, region.half_life_days)


def recency(facts: NoteFacts, now: float) -> float:
    """1 for a note made or used today, halving every 30 days."""
    since = max(t for t in (facts.last_access, facts.created, facts.mtime) if t is not None)
    return halved((now - since) / DAY, RECENCY_HALF_LIFE_DAYS)


CO_MIN_QUERIES = 3  # distinct queries that must have returned a pair together before it counts at all
CO_HALF_LIFE_DAYS = 30.0


def co_strength(queries: int, last: float, now: float, *, min_queries: int = CO_MIN_QUERIES,
                half_life_days: float = CO_HALF_LIFE_DAYS) -> float:
    """How much a co-retrieved pair may count: nothing until `min_queries` distinct queries returned it, then
    one per further query, halving every half-life since they were last returned together.

    Recalling one query again and again adds nothing, so a few of a user's own recalls cannot lift their
    results above what answers a different query (the filter bubble).
    """
    if queries < min_queries:
        return 0.0
    return (queries - min_queries + 1) * halved((now - last) / DAY, half_life_days)


def coactivation(path: str, top: list[str], pairs: Mapping[tuple[str, str], float]) -> float:
    """How often this note was retrieved together with the current top results, saturating in [0, 1)."""
    total = 0.0
    for other in top:
        if other != path:
            total += pairs.get((path, other) if path < other else (other, path), 0)
    return total / (total + 3.0)


def weighted(signals: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """The mode-weighted sum of signals, divided by the total weight so the score stays in [0, 1]."""
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0:
        return signals.get("relevance", 0.0)
    return sum(weights.get(k, 0.0) * v for k, v in signals.items() if weights.get(k, 0.0) > 0) / total


RAW_FACTOR = 0.85  # a raw capture's score is multiplied by this until sleep consolidates it into a summary


def layer_factor(layer: str | None) -> float:
    """What a note's layer multiplies its score by: a raw capture (a session's words as they were said, the
    question as much as the answer) ranks below a curated note of equal relevance; every other note keeps its
    score. Reported as the `raw` signal, so the why-line says so (ranking, never filtering)."""
    return RAW_FACTOR if is_capture(layer) else 1.0


_PHRASES = {
    "relevance": "matches the query",
    "region": "from a weighted region",
    "importance": "important",
    "coactivation": "often recalled with these results",
    "graph": "linked to the top results",
    "recency": "recent",
    "resonance": "touches a resonant concept",
}


NO_VECTOR = "no vector yet: matched by words only, while the index fills vectors in"


def reason(signals: Mapping[str, float], weights: Mapping[str, float], *, dense: float, lexical: float,
           vector: bool = True, raw: float | None = None) -> str:
    """A one-line human reason: the signals that contributed most, with their values; for a raw capture (`raw`,
    its layer's factor), that it ranks lower until consolidated; and, for a chunk that has no vector yet (a first
    index fills them in behind), that its meaning could not count."""
    contrib = sorted(
        ((weights.get(k, 0.0) * v, k) for k, v in signals.items() if weights.get(k, 0.0) > 0 and v > 0.05),
        reverse=True,
    )
    parts = []
    for _, key in contrib[:3]:
        value = signals[key]
        if key == "relevance":
            how = "words and meaning" if dense > 0.3 and lexical > 0.3 else ("words" if lexical >= dense else "meaning")
            parts.append(f"matches the query by {how} ({value:.2f})")
        else:
            parts.append(f"{_PHRASES[key]} ({value:.2f})")
    if raw is not None:
        parts.append(f"a raw capture, ranked ×{raw:.2f} until sleep consolidates it")
    said = "; ".join(parts) if parts else "weak match"
    return said if vector else f"{said}; {NO_VECTOR}"
