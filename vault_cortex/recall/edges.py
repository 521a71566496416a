"""The graph's edges, pure: the relation names the graph adds, each relation's weight, and one typed edge."""

from __future__ import annotations

import msgspec

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
