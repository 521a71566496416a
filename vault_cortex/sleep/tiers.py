"""Compression tiers, pure: raw → session → daily → weekly → fact summaries, extractive from the embeddings.

A summary is the most central sentences of its sources (highest mean similarity to the rest), picked with
MMR for diversity within a token budget. Each lists its sources in `derived_from`, its `tokens:` and its
sources' token count, so lineage reaches the raw text and the compression ratio can be reported.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, timedelta

import msgspec
import numpy as np

from vault_cortex.files.paths import note_name
from vault_cortex.files.yamltext import note_filename, render_new_note

Embed = Callable[[Sequence[str]], np.ndarray]
CountTokens = Callable[[str], int]

TIERS = ("session", "daily", "weekly", "fact")
NEXT = {"raw": "session", "session": "daily", "daily": "weekly", "weekly": "fact"}
BUDGET = {"session": 120, "daily": 160, "weekly": 200, "fact": 120}  # most tokens a summary's sentences take
SHARE = 0.3  # … and at most this share of its sources' tokens (but at least MIN_BUDGET)
MIN_BUDGET = 40
MMR_LAMBDA = 0.7
FOLDER = "summaries"

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CITE = re.compile(r"\s*\(\[\[[^\]]*\]\]\)")
_SKIP_LINE = re.compile(r"^\s*(#|\||<!--|%%|\*\(tool|\S+::|\^[\w-]+\s*$)")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[*]?[A-Z0-9])")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[.\]\s+)?")


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """A note that can be summarised: its layer, when it happened and its body (without frontmatter)."""

    path: str
    title: str
    layer: str
    body: str
    created: datetime | None = None
    session: str | None = None
    project: str | None = None
    derived_from: tuple[str, ...] = ()


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    tier: str
    path: str
    sources: tuple[str, ...]
    tokens: int
    source_tokens: int
    content: str


class TierReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one tier added in a sleep: its summaries and their compression (source tokens / summary tokens)."""

    tier: str
    summaries: list[str]
    source_tokens: int
    summary_tokens: int
    ratio: float


def unit_rows(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Stack vectors into rows of unit length."""
    m = np.stack([np.asarray(v, dtype=np.float32) for v in vectors])
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.asarray(m / np.where(norms == 0, 1.0, norms), dtype=np.float32)


def clusters(paths: Sequence[str], vecs: np.ndarray, threshold: float) -> list[tuple[list[str], float]]:
    """Groups of 2+ paths joined by similarity ≥ threshold (single link), with their lowest pairwise similarity."""
    parent = list(range(len(paths)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    sims = vecs @ vecs.T if len(paths) else np.zeros((0, 0))
    for i, j in zip(*np.nonzero(np.triu(sims >= threshold, 1)), strict=True):
        parent[find(int(j))] = find(int(i))
    groups: dict[int, list[int]] = {}
    for i in range(len(paths)):
        groups.setdefault(find(i), []).append(i)
    out = []
    for members in groups.values():
        if len(members) > 1:
            low = min(float(sims[a, b]) for a in members for b in members if a < b)
            out.append((sorted(paths[i] for i in members), round(low, 3)))
    return sorted(out)


def sentences(body: str) -> list[str]:
    """The prose sentences of a note body: no headings, code, tables, inline fields or tool lines."""
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        text = " ".join(" ".join(para).split())
        para.clear()
        for s in _SPLIT.split(text):
            s = _CITE.sub("", s).strip()
            if len(s.split()) >= 4 and not s.endswith("?"):  # questions are not what a summary keeps
                out.append(s)

    for line in _FENCE.sub("", body).splitlines():
        if not line.strip() or _SKIP_LINE.match(line):
            flush()
            continue
        if _ITEM.match(line):
            flush()
            line = _ITEM.sub("", line)
        para.append(line.strip())
    flush()
    return list(dict.fromkeys(out))


def select(texts: Sequence[str], vecs: np.ndarray, budget: int, count_tokens: CountTokens) -> list[int]:
    """Indices of the most central sentences, MMR-diverse, within the token budget, in text order."""
    n = len(texts)
    if n == 0:
        return []
    sims = vecs @ vecs.T
    central = (sims.sum(axis=1) - 1.0) / max(1, n - 1) if n > 1 else np.ones(1)
    chosen: list[int] = []
    used = 0
    left = set(range(n))
    while left:
        def gain(i: int) -> float:
            redundancy = max((float(sims[i, j]) for j in chosen), default=0.0)
            return MMR_LAMBDA * float(central[i]) - (1 - MMR_LAMBDA) * redundancy

        best = max(sorted(left), key=gain)
        left.discard(best)
        cost = count_tokens(texts[best])
        if chosen and used + cost > budget:
            continue
        chosen.append(best)
        used += cost
    return sorted(chosen)


def summarise(sources: Sequence[Source], *, today: date, embed: Embed, count_tokens: CountTokens,
              link: Callable[[str], str], claim: Callable[[str], str]) -> list[Summary]:
    """Every summary the tiers lack: sessions for uncovered raw notes, then closed days, weeks and months.

    `link(path)` writes a wikilink to a note; `claim(path)` reserves a free path for a new note.
    """
    pool: list[Source] = list(sources)
    cache: dict[str, np.ndarray] = {}
    made: list[Summary] = []
    for layer, tier in NEXT.items():
        covered = {d for s in pool if s.layer == tier for d in s.derived_from}
        groups: dict[str, list[Source]] = {}
        for s in pool:
            if s.layer == layer and s.path not in covered:
                key = _period(tier, s, today)
                if key is not None:
                    groups.setdefault(key, []).append(s)
        for key, members in sorted(groups.items()):
            members.sort(key=lambda s: (s.created.timestamp() if s.created else 0.0, s.path))
            summary = _summary(tier, key, members, cache, embed, count_tokens, link, claim)
            if summary is None:
                continue
            made.append(summary)
            body = summary.content.split("\n---\n", 1)[-1]
            pool.append(Source(path=summary.path, title=note_name(summary.path), layer=tier, body=body,
                               created=max((m.created for m in members if m.created), default=None),
                               session=members[0].session, project=_common(m.project for m in members),
                               derived_from=summary.sources))
    return made


def report(summaries: Sequence[Summary]) -> list[TierReport]:
    """Per tier: the summaries made and their compression ratio."""
    out = []
    for tier in TIERS:
        mine = [s for s in summaries if s.tier == tier]
        if mine:
            src, dst = sum(s.source_tokens for s in mine), sum(s.tokens for s in mine)
            out.append(TierReport(tier=tier, summaries=[s.path for s in mine], source_tokens=src,
                                  summary_tokens=dst, ratio=round(src / dst, 2) if dst else 0.0))
    return out


def _period(tier: str, s: Source, today: date) -> str | None:
    """The group a source belongs to in the next tier, or None while that period is still open."""
    if tier == "session":
        return s.session or s.title
    if s.created is None:
        return None
    day = s.created.date()
    if tier == "daily":
        return day.isoformat() if day < today else None
    if tier == "weekly":
        year, week, weekday = day.isocalendar()
        sunday = day + timedelta(days=7 - weekday)
        return f"{year}-W{week:02d}" if sunday < today else None
    thursday = day - timedelta(days=day.isoweekday() - 4) if s.layer == "weekly" else day
    month = thursday.strftime("%Y-%m")
    return month if month < today.strftime("%Y-%m") else None


def _summary(tier: str, key: str, members: list[Source], cache: dict[str, np.ndarray], embed: Embed,
             count_tokens: CountTokens, link: Callable[[str], str], claim: Callable[[str], str]) -> Summary | None:
    found = [(text, m.path) for m in members for text in sentences(m.body)]
    if not found:
        return None
    texts = [t for t, _ in found]
    missing = [t for t in dict.fromkeys(texts) if t not in cache]
    if missing:
        for t, v in zip(missing, embed(missing), strict=True):
            cache[t] = np.asarray(v, dtype=np.float32)
    source_tokens = sum(count_tokens(m.body) for m in members)
    budget = min(BUDGET[tier], max(MIN_BUDGET, int(SHARE * source_tokens)))
    picked = select(texts, unit_rows([cache[t] for t in texts]), budget, count_tokens)
    title = {"session": f"{key} (session)", "daily": f"{key} (daily)", "weekly": f"{key} (weekly)",
             "fact": f"{key} (facts)"}[tier]
    path = claim(f"{FOLDER}/{tier}/{note_filename(title)}.md")
    body = f"# {title}\n\n" + "".join(f"- {found[i][0]}\n" for i in picked)
    tokens = count_tokens(body)
    last = max((m.created for m in members if m.created), default=None)
    props: dict[str, object] = {
        "cortex": "long_term", "layer": tier, "period": key,
        "created": last.strftime("%Y-%m-%dT%H:%M") if last else None,
        "tokens": tokens, "source_tokens": source_tokens,
        "project": _common(m.project for m in members),
        "relations": {"derived_from": [link(m.path) for m in members]},
    }
    content = render_new_note(title=None, body=body, properties=props)
    return Summary(tier=tier, path=path, sources=tuple(m.path for m in members), tokens=tokens,
                   source_tokens=source_tokens, content=content)


def _common(values: Iterable[str | None]) -> str | None:
    """The one value every member shares, else None."""
    found = set(values)
    return next(iter(found)) if len(found) == 1 and None not in found else None
