"""A sleep's wiring: co_retrieved edges from the activity log, and related_to links between close, unlinked notes
that what they say of their own (or a link path) backs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from vault_cortex.files.paths import note_name
from vault_cortex.sleep.distinct import Distinct, backed, shared_neighbours
from vault_cortex.sleep.dream import Wire
from vault_cortex.sleep.operations import Memo
from vault_cortex.sleep.tiers import unit_rows

RELATED_PER_NOTE = 3  # most related_to links suggested from one note in one sleep
PATH_MAX_DEGREE = 8  # a note linking both ends is a link path between them unless it links more notes (a hub)


def wires(live: Mapping[str, Memo], ok: set[str], vec: Mapping[str, np.ndarray], distinct: Distinct,
          co_pairs: Iterable[tuple[str, str, int]], co_min: int, threshold: float,
          apart: set[frozenset[str]]) -> list[Wire]:
    """co_retrieved edges (pairs recalled together by `co_min` distinct queries) and related_to links between
    close (cosine ≥ `threshold`), unlinked notes of `ok` that share distinctive words or a link path through a
    note that is not a hub (not between the pairs in `apart`, already related by supersedes)."""
    out = []
    for a, b, n in sorted(co_pairs):
        if n >= co_min and a in ok and b in ok and a in live and b in live \
                and b not in live[a].co_listed and a not in live[b].co_listed:
            out.append(Wire(src=a, rel="co_retrieved", dst=b, why=f"recalled together by {n} distinct queries"))
    cands = sorted(p for p in ok if p in vec and not (live.get(p) and live[p].layer))
    if len(cands) < 2:
        return out
    sims = unit_rows([vec[p] for p in cands])
    sims = sims @ sims.T
    pairs = sorted(((float(sims[i, j]), i, j) for i in range(len(cands)) for j in range(i + 1, len(cands))
                    if threshold <= sims[i, j]), reverse=True)
    used: dict[str, int] = {}
    degree = {p: m.degree for p, m in live.items()}
    for sim, i, j in pairs:
        a, b = cands[i], cands[j]
        ma, mb = live.get(a), live.get(b)
        if (ma and b in ma.neighbours) or frozenset((a, b)) in apart \
                or max(used.get(a, 0), used.get(b, 0)) >= RELATED_PER_NOTE:
            continue
        why = related_evidence(distinct, a, b, ma.neighbours if ma else (), mb.neighbours if mb else (), degree)
        if why is None:
            continue
        used[a], used[b] = used.get(a, 0) + 1, used.get(b, 0) + 1
        out.append(Wire(src=a, rel="related_to", dst=b, why=f"similar ({sim:.2f}), not linked; {why}"))
    return out


def related_evidence(distinct: Distinct, a: str, b: str, na: Sequence[str], nb: Sequence[str],
                     degree: Mapping[str, int]) -> str | None:
    """Why two similar notes are related beyond their similarity (shared distinctive words, or a link path
    through a note that is not a hub), or None: similarity alone (a shared template) proposes no link."""
    e = distinct.evidence(a, b)
    if backed(e):
        return f"share {', '.join(e.shared)} ({e.overlap:.0%} of what is distinctive)"
    via = shared_neighbours(na, nb, degree, PATH_MAX_DEGREE)
    if via:
        return f"both linked with {', '.join(note_name(p) for p in via[:3])}"
    return None
