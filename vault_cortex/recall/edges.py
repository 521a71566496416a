"""The graph's edges, pure: the relation names the graph adds, each relation's weight, one typed edge, and the
list of every edge of a graph's parts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from vault_cortex.recall.nodes import Nodes
from vault_cortex.recall.note_links import NoteLinks
from vault_cortex.recall.pairs import LOW

PROJECT_PREFIX = "project:"
PROJECT_REL = "project"
CO_RETRIEVED = "co_retrieved"
FOLLOWS = "follows"  # an exchange of a conversation links the one before it (imported transcripts, captures)


def _default_rel_weights() -> dict[str, float]:
    return {"links_to": 1.0, "embeds": 0.8, "derived_from": 0.8, FOLLOWS: 0.7, CO_RETRIEVED: 0.6}


class EdgeWeights(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Weight of an edge by relation; co-retrieval counts grow toward the `co_retrieved` weight."""

    rels: dict[str, float] = msgspec.field(default_factory=_default_rel_weights)
    typed: float = 1.0  # any relation not named in `rels`: supports, contradicts, depends_on, ...
    project: float = 0.5  # a note's membership of its project node
    co_retrieval_saturation: float = 5.0  # pair strength (rank.co_strength) at which the edge is full weight

    def of(self, rel: str) -> float:
        """The weight of one edge of this relation."""
        return self.rels.get(rel, self.typed)


class Edge(msgspec.Struct, frozen=True, kw_only=True):
    """One typed edge; a repeated (src, dst, rel) is kept once, at its highest weight."""

    src: str
    dst: str
    rel: str  # links_to, embeds, supports, derived_from, co_retrieved, follows, project, ...
    weight: float


def edge_list(nodes: Nodes, links: NoteLinks, rel_names: Sequence[str], rel_w: Sequence[float],
              co: Mapping[int, float], project_weight: float) -> tuple[Edge, ...]:
    """Every edge, sorted: links between notes, co-retrieval pairs (by pair key), project memberships."""
    names, is_note = nodes.names, nodes.is_note
    best: dict[tuple[str, str, str], float] = {}
    for path in nodes.notes:
        i = nodes.id[path]
        for d, r in links.of(i):
            if d >= 0 and d != i and is_note[d]:
                best[(path, names[d], rel_names[r])] = rel_w[r]
        node = int(nodes.project[i])
        if node >= 0:
            best[(path, names[node], PROJECT_REL)] = project_weight
    for key, weight in co.items():
        i, j = key >> 32, key & LOW
        if is_note[i] and is_note[j]:
            a, b = sorted((names[i], names[j]))
            best[(a, b, CO_RETRIEVED)] = max(best.get((a, b, CO_RETRIEVED), 0.0), weight)
    return tuple(Edge(src=s, dst=d, rel=r, weight=v) for (s, d, r), v in sorted(best.items()))
