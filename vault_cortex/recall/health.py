"""Graph health, pure: hubs, islands, bridges, articulation points and components of the notes' link graph."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean, pstdev

import msgspec
import numpy as np

from vault_cortex.recall.graph import Graph


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


def _csr(graph: Graph) -> tuple[list[int], list[int]]:
    """CSR adjacency of the notes' link graph (distinct neighbours, sorted), in `graph.names` order."""
    n = graph.n_notes
    pos = np.full(graph.n_nodes, -1, dtype=np.int64)  # node id -> place in `graph.names`
    pos[graph.ids_of(graph.names[:n])] = np.arange(n)
    indptr_ids, peers = graph.linked_csr()
    u = pos[np.repeat(np.arange(indptr_ids.size - 1), np.diff(indptr_ids))]
    v = pos[peers]
    order = np.lexsort((v, u))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    return indptr.tolist(), v[order].tolist()


def _tarjan(graph: Graph, indptr: list[int], indices: list[int]) -> tuple[list[tuple[int, int]], set[int], list[int]]:
    """Bridges, articulation points and component sizes of the link graph, by an iterative DFS."""
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
    indptr, indices = _csr(graph)
    degrees = [indptr[i + 1] - indptr[i] for i in range(graph.n_notes)]
    hubs: list[Hub] = []
    if degrees:
        threshold = fmean(degrees) + 2 * pstdev(degrees)
        ranked = sorted((i for i, d in enumerate(degrees) if d > threshold), key=lambda i: (-degrees[i], names[i]))
        hubs = [Hub(path=names[i], degree=degrees[i]) for i in ranked[:max_hubs]]
    bridge_ids, point_ids, sizes = _tarjan(graph, indptr, indices)
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
