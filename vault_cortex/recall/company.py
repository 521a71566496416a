"""A candidate judged in the company it keeps, pure: the notes it links with and the sections beside it in its own
note. A memory that alone matches a question weakly is lifted by a neighbour that matches it well (the answer
that follows the question, the section under the heading the query names), and its why-line says by which.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import numpy as np

from vault_cortex.files.paths import note_name
from vault_cortex.recall.graph import Graph

NAMED = 0.03  # a lift that adds at least this much to a memory's relevance is named in its why-line
SPREAD = 2  # a note linked with more notes than this shares its company: a linked neighbour counts SPREAD / links


class Lift(msgspec.Struct, frozen=True, kw_only=True):
    """The neighbour that lifts a candidate: a linked note (`path`) or a section of its own note (`heading`)."""

    relevance: float  # the neighbour's own relevance to the query
    share: float = 1.0  # the part of it that counts: SPREAD / the candidate's links, for a well-linked candidate
    path: str = ""  # the linked note, when the neighbour is one
    heading: str = ""  # the section beside the candidate's best one, when the neighbour is one
    session: str = ""  # the session the neighbour shares with the candidate, when it is a memory of that session

    def phrase(self) -> str:
        """The why-line's words for this lift."""
        if self.session:
            return f"lifted by [[{note_name(self.path)}]] of the same session ({self.relevance:.2f})"
        if self.path:
            return f"lifted by its neighbour [[{note_name(self.path)}]] ({self.relevance:.2f})"
        section = f' "{self.heading}"' if self.heading else ""
        return f"lifted by the section beside it{section} ({self.relevance:.2f})"


class Member(msgspec.Struct, frozen=True, kw_only=True):
    """A candidate note as company sees it: its relevance, the candidates it links with, how many notes it
    links with in all, and the sections beside its best chunk that are candidates themselves (heading,
    relevance)."""

    path: str
    relevance: float
    linked: tuple[str, ...] = ()
    links: int = 0
    beside: tuple[tuple[str, float], ...] = ()


def lifts(members: Iterable[Member]) -> dict[str, Lift]:
    """Each candidate's best neighbour among the candidates (a linked note or a section beside its best one),
    for the candidates that have one; a neighbour that is not itself a candidate does not count. A candidate
    linked with many notes keeps company with everything (a home page linked from every page): a linked
    neighbour's relevance counts `SPREAD` / its links, so a hub is not lifted by whatever matches best."""
    members = list(members)
    relevance = {m.path: m.relevance for m in members}
    out: dict[str, Lift] = {}
    for m in members:
        best: Lift | None = None
        share = min(1.0, SPREAD / max(m.links, 1))
        for other in m.linked:
            rel = relevance.get(other, 0.0)
            if other != m.path and rel > 0 and (best is None or rel * share > best.relevance * best.share):
                best = Lift(relevance=rel, share=share, path=other)
        for heading, rel in m.beside:
            if rel > 0 and (best is None or rel > best.relevance * best.share):
                best = Lift(relevance=rel, heading=heading)
        if best is not None:
            out[m.path] = best
    return out


def linked_among(graph: Graph, paths: Sequence[str]) -> dict[str, tuple[tuple[str, ...], int]]:
    """For each of the paths, the others of them it shares an edge with (a link either way, a relation, a
    co-retrieval) and how many notes it shares one with in all, read from the walk's rows of these notes only:
    a hub costs its own edges, not the vault's. Call it under the graph's read lock."""
    known = [p for p in paths if graph.has_note(p)]
    ids = graph.ids_of(known)
    if not ids.size:
        return {}
    slots, owner = graph.walk_rows(ids)
    _, dst, _ = graph.slots
    other = dst[slots].astype(np.int64)
    notes = graph.note_mask[other] & (other != ids[owner])
    pairs = np.unique(owner[notes] * graph.n_nodes + other[notes])
    links = np.bincount(pairs // graph.n_nodes, minlength=ids.size)
    keep = np.isin(other, ids) & notes
    names = graph.node_names
    found: dict[str, set[str]] = {}
    for o, n in zip(owner[keep].tolist(), other[keep].tolist(), strict=True):
        found.setdefault(known[o], set()).add(names[n])
    return {p: (tuple(sorted(found.get(p, ()))), int(links[o])) for o, p in enumerate(known) if links[o]}


def lifted(relevance: float, lift: Lift | None, weight: float) -> float:
    """A candidate's relevance lifted by its best neighbour's: `weight` × the neighbour's relevance (× its share)
    of the way left to 1, so a weak match gains most, a strong one little, and none reaches 1 by its company."""
    if lift is None or weight <= 0:
        return relevance
    return relevance + weight * lift.relevance * lift.share * (1.0 - relevance)


def sections_beside(best_ord: int, chunks: Sequence[tuple[int, str, float]]) -> tuple[tuple[str, float], ...]:
    """The chunks just before and after the best one in its note (ord ± 1), as (heading, relevance), from the
    note's candidate chunks given as (ord, heading, relevance)."""
    return tuple((heading, rel) for ord_, heading, rel in chunks if abs(ord_ - best_ord) == 1)


def sessions(members: Iterable[tuple[str, str, float]]) -> dict[str, Lift]:
    """Each candidate's best other candidate of the same session (an imported conversation's exchanges share
    their `session` property), from (path, session, relevance); a candidate alone in its session has none."""
    members = [m for m in members if m[1]]
    first: dict[str, tuple[float, str]] = {}  # each session's best member and the runner-up (relevance, path)
    second: dict[str, tuple[float, str]] = {}
    for path, session, rel in members:
        entry = (rel, path)
        best = first.get(session)
        if best is None or (-rel, path) < (-best[0], best[1]):
            first[session] = entry
            if best is not None:
                second[session] = best
        elif session not in second or (-rel, path) < (-second[session][0], second[session][1]):
            second[session] = entry
    out: dict[str, Lift] = {}
    for path, session, _ in members:
        rel, other = first[session] if first[session][1] != path else second.get(session, (0.0, ""))
        if other and rel > 0:
            out[path] = Lift(relevance=rel, path=other, session=session)
    return out
