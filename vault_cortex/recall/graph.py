"""Graph maths over the index's edges, pure: weighted edges, proximity to the best candidates, health.

Nodes are notes plus one `project:<name>` node per project (membership instead of n² edges). Edges keep
their direction and relation; proximity and health treat them as undirected, as Obsidian's graph view does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean, pstdev

import msgspec
import numpy as np
import numpy.typing as npt

PROJECT_PREFIX = "project:"
PROJECT_REL = "project"
CO_RETRIEVED = "co_retrieved"


def _default_rel_weights() -> dict[str, float]:
    return {"links_to": 1.0, "embeds": 0.8, "derived_from": 0.8, "follows": 0.7, CO_RETRIEVED: 0.6}


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


class Hub(msgspec.Struct, frozen=True, kw_only=True):
    """A note with far more links than the vault's typical note."""

    path: str
    degree: int  # distinct linked notes, either direction


class GraphHealth(msgspec.Struct, frozen=True, kw_only=True):
    """Hubs, islands, bridges, articulation points and dangling links of the notes' link graph."""

    hubs: list[Hub]  # degree above mean + 2σ, highest first, at most 10
    islands: list[str]  # notes with no link to or from another note
    bridges: list[tuple[str, str]]  # links whose removal splits their component; (a, b) with a < b
    articulation_points: list[str]  # notes whose removal splits their component
    dangling: list[tuple[str, str]]  # (source note, target as written)
    notes: int
    edges: int  # distinct linked pairs of notes
    components: int  # connected components, islands included
    largest_component: int


FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Graph:
    """Notes, project nodes and weighted edges, with adjacency precomputed for proximity and health."""

    def __init__(
        self,
        notes: Iterable[str],
        links: Iterable[tuple[str, str | None, str]],
        *,
        projects: Mapping[str, str | None] | None = None,
        co_retrieved: Iterable[tuple[str, str, float]] = (),
        weights: EdgeWeights | None = None,
    ) -> None:
        """Build from note paths, (src, dst or None if dangling, rel) links, note→project, (a, b, count)."""
        w = weights or EdgeWeights()
        note_paths = sorted(set(notes))
        names = list(note_paths)
        self.n_notes = len(note_paths)
        self.dangling_count = 0
        self.outside_count = 0  # resolved to something that is not an indexed note (an image, a PDF)
        best: dict[tuple[str, str, str], float] = {}
        known = set(note_paths)
        linked: set[tuple[str, str]] = set()  # the health graph: file links only, undirected
        for src, dst, rel in links:
            if dst is None:
                self.dangling_count += 1
                continue
            if src not in known or dst not in known:
                self.outside_count += 1
                continue
            if src == dst:
                continue
            key = (src, dst, rel)
            best[key] = max(best.get(key, 0.0), w.of(rel))
            linked.add((src, dst) if src < dst else (dst, src))
        full = w.of(CO_RETRIEVED)
        for a, b, count in co_retrieved:
            if a == b or a not in known or b not in known or count <= 0:
                continue
            key = (a, b, CO_RETRIEVED) if a < b else (b, a, CO_RETRIEVED)
            weight = full * min(1.0, count / w.co_retrieval_saturation)
            best[key] = max(best.get(key, 0.0), weight)
        members: dict[str, list[str]] = {}
        for path, project in sorted((projects or {}).items()):
            if project and path in known:
                members.setdefault(PROJECT_PREFIX + project, []).append(path)
        for node, paths in sorted(members.items()):
            names.append(node)
            for path in paths:
                best[(path, node, PROJECT_REL)] = w.project
        self.names: tuple[str, ...] = tuple(names)
        self.index: dict[str, int] = {n: i for i, n in enumerate(names)}
        self.edges: tuple[Edge, ...] = tuple(
            Edge(src=s, dst=d, rel=r, weight=v) for (s, d, r), v in sorted(best.items())
        )
        self._prior: dict[str, float] | None = None  # see prior_proximity
        self._build_walk()
        self._build_links(linked)

    def _build_walk(self) -> None:
        """Random-walk transition entries: one undirected pair keeps its strongest edge's weight."""
        pair_weight: dict[tuple[int, int], float] = {}
        for e in self.edges:  # sorted, so float sums do not depend on the order links arrived in
            i, j = self.index[e.src], self.index[e.dst]
            key = (i, j) if i < j else (j, i)
            pair_weight[key] = max(pair_weight.get(key, 0.0), e.weight)
        n = len(self.names)
        m = len(pair_weight)
        src = np.empty(2 * m, dtype=np.int64)
        dst = np.empty(2 * m, dtype=np.int64)
        wt = np.empty(2 * m, dtype=np.float64)
        for k, ((i, j), v) in enumerate(pair_weight.items()):
            src[2 * k], dst[2 * k], src[2 * k + 1], dst[2 * k + 1] = i, j, j, i
            wt[2 * k] = wt[2 * k + 1] = v
        strength = np.bincount(src, weights=wt, minlength=n)
        self._walk_src: IntArray = src
        self._walk_dst: IntArray = dst
        self._walk_p: FloatArray = wt / strength[src] if m else wt  # P[u, v] = w(u, v) / Σ_x w(u, x)
        # A hop decays when it arrives at a note; passing through a project node costs no extra hop decay.
        self._is_note = np.zeros(n, dtype=bool)
        self._is_note[: self.n_notes] = True

    def _build_links(self, linked: set[tuple[str, str]]) -> None:
        """CSR adjacency of the notes' link graph (distinct neighbours), for degrees and health."""
        adj: list[list[int]] = [[] for _ in range(self.n_notes)]
        for a, b in linked:
            i, j = self.index[a], self.index[b]
            adj[i].append(j)
            adj[j].append(i)
        self._indptr = [0]
        self._indices: list[int] = []
        for nbrs in adj:
            nbrs.sort()
            self._indices += nbrs
            self._indptr.append(len(self._indices))
        self.link_count = len(linked)

    def degree(self, path: str) -> int:
        """Distinct notes linked to or from this note (0 for an unknown path)."""
        i = self.index.get(path)
        if i is None or i >= self.n_notes:
            return 0
        return self._indptr[i + 1] - self._indptr[i]

    def neighbours(self, path: str) -> list[str]:
        """Notes linked to or from this note, sorted."""
        i = self.index.get(path)
        if i is None or i >= self.n_notes:
            return []
        return [self.names[j] for j in self._indices[self._indptr[i]:self._indptr[i + 1]]]


def proximity(graph: Graph, seeds: Mapping[str, float], *, hops: int = 3, decay: float = 0.5,
              raw: bool = False) -> dict[str, float]:
    """Truncated personalised PageRank from the seeds, in [0, 1] relative to the best non-seed note.

    Mass starts on the seeds in proportion to their relevance and walks at most `hops` steps, each step
    splitting a node's mass over its edges by weight and keeping `decay` of it. A seed's own mass is not
    counted, so a seed scores only for being near other seeds. Unreached notes are absent (proximity 0).
    With `raw`, the walk's mass itself, unscaled (see `relative_to_prior`).
    """
    x = np.zeros(len(graph.names), dtype=np.float64)
    for path, rel in seeds.items():
        i = graph.index.get(path)
        if i is not None and i < graph.n_notes and rel > 0:
            x[i] += rel
    if not x.any() or graph._walk_p.size == 0:
        return {}
    step_decay = np.where(graph._is_note, decay, 1.0)
    total = np.zeros_like(x)
    for _ in range(hops):
        pushed = np.bincount(graph._walk_dst, weights=x[graph._walk_src] * graph._walk_p, minlength=x.size)
        x = pushed.astype(np.float64, copy=False) * step_decay
        total += x
    if raw:
        notes_mass = total[: graph.n_notes]
        return {graph.names[int(i)]: float(notes_mass[i]) for i in np.flatnonzero(notes_mass > 1e-15)}
    seeded = np.zeros(x.size, dtype=bool)
    for path in seeds:
        i = graph.index.get(path)
        if i is not None:
            seeded[i] = True
    notes = total[: graph.n_notes]
    candidates = notes[~seeded[: graph.n_notes]]
    top = float(candidates.max()) if candidates.size else 0.0
    if top <= 0.0:
        top = float(notes.max())
    if top <= 0.0:
        return {}
    scores = np.minimum(notes / top, 1.0)
    return {graph.names[int(i)]: float(scores[i]) for i in np.flatnonzero(scores > 1e-12)}


def prior_proximity(graph: Graph) -> dict[str, float]:
    """The query-independent prior: the walk's raw mass from every note at once (unit total), cached."""
    if graph._prior is None:
        n = graph.n_notes
        graph._prior = proximity(graph, dict.fromkeys(graph.names[:n], 1.0 / max(n, 1)), raw=True)
    return graph._prior


def relative_to_prior(graph: Graph, seeds: Mapping[str, float], *, share: float = 0.5) -> dict[str, float]:
    """Graph proximity beyond what the note gets from anywhere: no hub bias, in [0, 1].

    A walk from any seeds reaches a hub more than a leaf simply because the hub has more edges, so plain
    proximity is near 1.0 for a hub on every query. Here the walk's mass from this query's seeds has the
    mass the same walk brings the note from seeds spread over the whole vault (same total) taken off; what is
    left is specific to the query. It is scaled to the best such excess of a non-seed note, but never to less
    than `share` of the strongest raw proximity, so a graph with nothing query-specific gives small values.
    Kept apart from `proximity` so the walk itself can change.
    """
    mass = proximity(graph, seeds, raw=True)
    if not mass:
        return {}
    prior = prior_proximity(graph)
    total = sum(v for p, v in seeds.items() if v > 0 and graph.index.get(p, graph.n_notes) < graph.n_notes)
    excess = {p: v - total * prior.get(p, 0.0) for p, v in mass.items()}
    others = [p for p in mass if p not in seeds] or list(mass)
    top = max(max(excess[p] for p in others), share * max(mass[p] for p in others))
    if top <= 0.0:
        return {}
    return {p: min(1.0, v / top) for p, v in excess.items() if v / top > 1e-12}


def _tarjan(graph: Graph) -> tuple[list[tuple[int, int]], set[int], list[int]]:
    """Bridges, articulation points and component sizes of the link graph, by an iterative DFS."""
    indptr, indices = graph._indptr, graph._indices
    n = graph.n_notes
    disc = [-1] * n
    low = [0] * n
    parent = [-1] * n
    ptr = indptr[:-1]
    bridges: list[tuple[int, int]] = []
    points: set[int] = set()
    sizes: list[int] = []
    clock = 0
    for root in range(n):
        if disc[root] != -1:
            continue
        disc[root] = low[root] = clock
        clock += 1
        start = clock
        children = 0
        stack = [root]
        while stack:
            v = stack[-1]
            if ptr[v] < indptr[v + 1]:
                w = indices[ptr[v]]
                ptr[v] += 1
                if disc[w] == -1:
                    parent[w] = v
                    disc[w] = low[w] = clock
                    clock += 1
                    stack.append(w)
                elif w != parent[v] and disc[w] < low[v]:
                    low[v] = disc[w]
                continue
            stack.pop()
            if not stack:
                break
            u = stack[-1]
            if low[v] < low[u]:
                low[u] = low[v]
            if low[v] > disc[u]:
                bridges.append((u, v))
            if u == root:
                children += 1
            elif low[v] >= disc[u]:
                points.add(u)
        if children > 1:
            points.add(root)
        sizes.append(clock - start + 1)
    return bridges, points, sizes


def health(graph: Graph, dangling: Sequence[tuple[str, str]], *, max_hubs: int = 10) -> GraphHealth:
    """Health of the notes' own link graph: project membership and replayed co-retrieval are left out."""
    names = graph.names
    degrees = [graph._indptr[i + 1] - graph._indptr[i] for i in range(graph.n_notes)]
    hubs: list[Hub] = []
    if degrees:
        threshold = fmean(degrees) + 2 * pstdev(degrees)
        ranked = sorted((i for i, d in enumerate(degrees) if d > threshold), key=lambda i: (-degrees[i], names[i]))
        hubs = [Hub(path=names[i], degree=degrees[i]) for i in ranked[:max_hubs]]
    bridge_ids, point_ids, sizes = _tarjan(graph)
    bridges = sorted((min(names[a], names[b]), max(names[a], names[b])) for a, b in bridge_ids)
    return GraphHealth(
        hubs=hubs,
        islands=[names[i] for i, d in enumerate(degrees) if d == 0],
        bridges=bridges,
        articulation_points=sorted(names[i] for i in point_ids),
        dangling=[(s, t) for s, t in dangling],
        notes=graph.n_notes,
        edges=graph.link_count,
        components=len(sizes),
        largest_component=max(sizes, default=0),
    )
