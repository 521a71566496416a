"""The note graph, pure: weighted, typed edges between notes and project nodes, updated in place.

Nodes are notes plus one `project:<name>` node per project (membership instead of n² edges). Edges keep
their direction and relation; proximity (recall/proximity.py) and health (recall/health.py) treat them as
undirected, as Obsidian's graph view does.
The graph is updated in place (`Graph.update`, `Graph.update_co_retrieved`) for the notes that changed, so a
write costs what it changes; an update gives the same graph as building it again from every note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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


class NoteEdges(msgspec.Struct, frozen=True, kw_only=True):
    """What one note brings to the graph: its links as (destination or None if dangling, relation), its project."""

    links: tuple[tuple[str | None, str], ...] = ()
    project: str | None = None


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


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


class Graph:
    """Notes, project nodes and weighted edges as adjacency maps, kept up to date note by note.

    The truth is each note's links and project and the co-retrieval pairs; derived from them are the walk's
    undirected pair weights (`_adj`, strongest edge of a pair), the notes' link graph (`_linked`, for degrees
    and health), and slot arrays of the pair weights for the query-independent prior, which numpy walks whole.
    """

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
        self.weights = weights or EdgeWeights()
        self._notes: set[str] = set(notes)
        self._links: dict[str, list[tuple[str | None, str]]] = {}
        self._project: dict[str, str] = {}
        self._inbound: dict[str, set[str]] = {}  # a link's destination -> notes that link to it
        self._co: dict[tuple[str, str], float] = {}  # (a, b), a < b -> co-retrieval edge weight
        self._co_by: dict[str, set[str]] = {}
        self._out: dict[str, dict[str, set[str]]] = {}  # src -> dst -> relations, notes only, no self-links
        self._adj: dict[str, dict[str, float]] = {}  # undirected walk weights: notes and project nodes
        self._linked: dict[str, set[str]] = {}  # undirected file links between notes
        self._members: dict[str, set[str]] = {}  # project node -> member notes
        self.link_count = 0
        self._stray_dangling = 0  # links from paths that are not notes (kept only as counts)
        self._stray_outside = 0
        # slot arrays for the prior: node ids are permanent, a pair keeps its two directed slots
        self._id: dict[str, int] = {}
        self._by_id: list[str] = []
        self._walk: tuple[IntArray, IntArray, IntArray, FloatArray] | None = None  # CSR of the walk, lazily
        self._slot: dict[tuple[str, str], int] = {}
        self._free: list[int] = []
        self._src: IntArray = np.zeros(64, dtype=np.int64)
        self._dst: IntArray = np.zeros(64, dtype=np.int64)
        self._w: FloatArray = np.zeros(64, dtype=np.float64)
        self._used = 0
        self._is_note_id: npt.NDArray[np.bool_] = np.zeros(64, dtype=bool)
        self._prior: FloatArray | None = None
        self._names: tuple[str, ...] | None = None
        self._index: dict[str, int] | None = None
        self._edges: tuple[Edge, ...] | None = None

        by_src: dict[str, list[tuple[str | None, str]]] = {}
        for src, dst, rel in links:
            if src not in self._notes:
                if dst is None:
                    self._stray_dangling += 1
                else:
                    self._stray_outside += 1
                continue
            by_src.setdefault(src, []).append((dst, rel))
        for note in sorted(self._notes):
            self._node_id(note)
        for path, project in sorted((projects or {}).items()):
            if project and path in self._notes:
                self._project[path] = project
        for a, b, count in co_retrieved:
            self._set_co(a, b, count, keep_max=True)
        for src, ls in by_src.items():
            self._set_links(src, ls)
        self._build()

    def _build(self) -> None:
        """Everything derived, in bulk (what `update` maintains pair by pair)."""
        pair_weight: dict[tuple[str, str], float] = {}
        linked: set[tuple[str, str]] = set()
        of = self.weights.of
        for src in sorted(self._links):
            if src not in self._notes:
                continue
            out: dict[str, set[str]] = {}
            for dst, rel in self._links[src]:
                if dst is not None and dst != src and dst in self._notes:
                    out.setdefault(dst, set()).add(rel)
            if out:
                self._out[src] = out
            for dst, rels in out.items():
                key = _key(src, dst)
                linked.add(key)
                pair_weight[key] = max(pair_weight.get(key, 0.0), *(of(r) for r in rels))
        for key, weight in self._co.items():
            if key[0] in self._notes and key[1] in self._notes:
                pair_weight[key] = max(pair_weight.get(key, 0.0), weight)
        for a, b in linked:
            self._linked.setdefault(a, set()).add(b)
            self._linked.setdefault(b, set()).add(a)
        self.link_count = len(linked)
        for path, project in sorted(self._project.items()):
            node = PROJECT_PREFIX + project
            self._node_id(node)
            self._members.setdefault(node, set()).add(path)
            pair_weight[_key(path, node)] = self.weights.project
        pairs = [(key, w) for key, w in sorted(pair_weight.items()) if w > 0]
        for (a, b), w in pairs:
            self._adj.setdefault(a, {})[b] = w
            self._adj.setdefault(b, {})[a] = w
        m = len(pairs)
        size = max(64, 2 * m)
        ids = np.fromiter((self._node_id(n) for (a, b), _ in pairs for n in (a, b)), dtype=np.int64, count=2 * m)
        self._src, self._dst, self._w = np.zeros(size, np.int64), np.zeros(size, np.int64), np.zeros(size)
        self._src[: 2 * m] = ids
        self._dst[0: 2 * m: 2], self._dst[1: 2 * m: 2] = ids[1::2], ids[0::2]
        self._w[: 2 * m] = np.repeat(np.fromiter((w for _, w in pairs), dtype=np.float64, count=m), 2)
        self._slot = {key: 2 * k for k, (key, _) in enumerate(pairs)}
        self._used = 2 * m

    # -- in-place updates -------------------------------------------------------------------------
    def update(self, changed: Mapping[str, NoteEdges | None]) -> None:
        """Apply the new state of some notes (None: the note is gone); a rename is the old path gone and the
        new one present. Only those notes' edges, and links into them from other notes, are recomputed."""
        if not changed:
            return
        for path, edges in changed.items():
            old_project = self._project.pop(path, None)
            if old_project:
                self._leave(path, old_project)
            if edges is None:
                self._notes.discard(path)
                self._set_links(path, [])
            else:
                if path not in self._notes:
                    self._notes.add(path)
                    self._node_id(path)
                self._set_links(path, list(edges.links))
                if edges.project:
                    self._project[path] = edges.project
            self._is_note_id[self._node_id(path)] = path in self._notes
        touched: set[str] = set(changed)
        for path in changed:
            touched |= self._inbound.get(path, set())
        for src in sorted(touched):
            self._refresh_out(src)
        for path in sorted(changed):
            for other in sorted(self._co_by.get(path, ())):
                self._refresh_pair(path, other)
            project = self._project.get(path)
            if project:
                self._join(path, project)
        self._names = self._index = None
        self._invalidate()

    def update_co_retrieved(self, pairs: Iterable[tuple[str, str, float]]) -> None:
        """Set the co-retrieval strength of some pairs (0 removes the pair's edge)."""
        for a, b, count in pairs:
            if a == b:
                continue
            self._set_co(a, b, count)
            self._refresh_pair(*_key(a, b))
        self._invalidate()

    def _set_co(self, a: str, b: str, count: float, *, keep_max: bool = False) -> None:
        if a == b:
            return
        key = _key(a, b)
        if count > 0:
            w = self.weights
            weight = w.of(CO_RETRIEVED) * min(1.0, count / w.co_retrieval_saturation)
            self._co[key] = max(self._co.get(key, 0.0), weight) if keep_max else weight
            self._co_by.setdefault(a, set()).add(b)
            self._co_by.setdefault(b, set()).add(a)
        elif key in self._co:
            del self._co[key]
            for x, y in ((a, b), (b, a)):
                peers = self._co_by.get(x)
                if peers is not None:
                    peers.discard(y)
                    if not peers:
                        del self._co_by[x]

    def _set_links(self, src: str, links: list[tuple[str | None, str]]) -> None:
        for dst, _ in self._links.pop(src, []):
            if dst is not None and src in self._inbound.get(dst, ()):
                self._inbound[dst].discard(src)
                if not self._inbound[dst]:
                    del self._inbound[dst]
        if links:
            self._links[src] = links
            for dst, _ in links:
                if dst is not None:
                    self._inbound.setdefault(dst, set()).add(src)

    def _refresh_out(self, src: str) -> None:
        """Recompute a note's valid outgoing edges and the pairs they touch."""
        old = self._out.pop(src, {})
        new: dict[str, set[str]] = {}
        if src in self._notes:
            for dst, rel in self._links.get(src, ()):
                if dst is not None and dst != src and dst in self._notes:
                    new.setdefault(dst, set()).add(rel)
        if new:
            self._out[src] = new
        for dst in sorted(set(old) | set(new)):
            if old.get(dst) != new.get(dst):
                self._refresh_pair(src, dst)

    def _refresh_pair(self, a: str, b: str) -> None:
        """The walk weight and the link of one pair of notes, from their edges both ways and co-retrieval."""
        weight = 0.0
        linked = False
        if a in self._notes and b in self._notes:
            rels = self._out.get(a, {}).get(b, set()) | self._out.get(b, {}).get(a, set())
            linked = bool(rels)
            weight = max((self.weights.of(r) for r in rels), default=0.0)
            weight = max(weight, self._co.get(_key(a, b), 0.0))
        was_linked = b in self._linked.get(a, ())
        if linked and not was_linked:
            self._linked.setdefault(a, set()).add(b)
            self._linked.setdefault(b, set()).add(a)
            self.link_count += 1
        elif was_linked and not linked:
            self._unlink(self._linked, a, b)
            self.link_count -= 1
        self._set_pair(a, b, weight)

    def _join(self, path: str, project: str) -> None:
        node = PROJECT_PREFIX + project
        if node not in self._members:
            self._node_id(node)
            self._names = self._index = None
        self._members.setdefault(node, set()).add(path)
        self._set_pair(path, node, self.weights.project)

    def _leave(self, path: str, project: str) -> None:
        node = PROJECT_PREFIX + project
        members = self._members.get(node)
        if members is not None:
            members.discard(path)
            if not members:
                del self._members[node]
                self._names = self._index = None
        self._set_pair(path, node, 0.0)

    @staticmethod
    def _unlink(adj: dict[str, set[str]], a: str, b: str) -> None:
        for x, y in ((a, b), (b, a)):
            peers = adj.get(x)
            if peers is not None:
                peers.discard(y)
                if not peers:
                    del adj[x]

    def _set_pair(self, a: str, b: str, weight: float) -> None:
        """Set (or with 0, drop) the undirected walk weight of a pair, in the maps and the slot arrays."""
        current = self._adj.get(a, {}).get(b, 0.0)
        if current == weight:
            return
        self._invalidate()
        key = _key(a, b)
        if weight > 0:
            self._adj.setdefault(a, {})[b] = weight
            self._adj.setdefault(b, {})[a] = weight
            slot = self._slot.get(key)
            if slot is None:
                slot = self._free.pop() if self._free else self._grow()
                self._slot[key] = slot
                i, j = self._node_id(key[0]), self._node_id(key[1])
                self._src[slot], self._dst[slot] = i, j
                self._src[slot + 1], self._dst[slot + 1] = j, i
            self._w[slot] = self._w[slot + 1] = weight
            return
        for x, y in ((a, b), (b, a)):
            peers = self._adj.get(x)
            if peers is not None:
                peers.pop(y, None)
                if not peers:
                    del self._adj[x]
        slot = self._slot.pop(key, None)
        if slot is not None:
            self._w[slot] = self._w[slot + 1] = 0.0
            self._free.append(slot)

    def _grow(self) -> int:
        slot = self._used
        self._used += 2
        if self._used > self._w.size:
            size = 2 * self._w.size
            self._src = np.resize(self._src, size)
            self._dst = np.resize(self._dst, size)
            self._w = np.concatenate([self._w, np.zeros(size - self._w.size)])
        return slot

    def _node_id(self, name: str) -> int:
        i = self._id.get(name)
        if i is None:
            i = self._id[name] = len(self._id)
            self._by_id.append(name)
            self._walk = None
            if i >= self._is_note_id.size:
                self._is_note_id = np.concatenate([self._is_note_id, np.zeros(self._is_note_id.size, dtype=bool)])
            self._is_note_id[i] = name in self._notes
        return i

    def _invalidate(self) -> None:
        self._prior = None
        self._walk = None
        self._edges = None

    # -- reads -------------------------------------------------------------------------------------
    @property
    def n_notes(self) -> int:
        return len(self._notes)

    def has_note(self, path: str) -> bool:
        return path in self._notes

    @property
    def names(self) -> tuple[str, ...]:
        """Notes (sorted), then project nodes (sorted)."""
        if self._names is None:
            self._names = (*sorted(self._notes), *sorted(self._members))
        return self._names

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.names)}
        return self._index

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Every edge, sorted: links between notes, co-retrieval pairs, project memberships."""
        if self._edges is None:
            best: dict[tuple[str, str, str], float] = {}
            for src, dsts in self._out.items():
                for dst, rels in dsts.items():
                    for rel in rels:
                        best[(src, dst, rel)] = self.weights.of(rel)
            for (a, b), weight in self._co.items():
                if a in self._notes and b in self._notes:
                    best[(a, b, CO_RETRIEVED)] = max(best.get((a, b, CO_RETRIEVED), 0.0), weight)
            for node, members in self._members.items():
                for path in members:
                    best[(path, node, PROJECT_REL)] = self.weights.project
            self._edges = tuple(Edge(src=s, dst=d, rel=r, weight=v) for (s, d, r), v in sorted(best.items()))
        return self._edges

    @property
    def dangling_count(self) -> int:
        return self._stray_dangling + sum(1 for ls in self._links.values() for d, _ in ls if d is None)

    @property
    def outside_count(self) -> int:
        """Links resolved to something that is not an indexed note (an image, a PDF)."""
        return self._stray_outside + sum(
            1 for ls in self._links.values() for d, _ in ls if d is not None and d not in self._notes)

    def pair_weights(self) -> dict[tuple[str, str], float]:
        """Every undirected walk pair (a < b) and its weight: what proximity walks over."""
        return {(a, b): w for a, peers in self._adj.items() for b, w in peers.items() if a < b}

    def degree(self, path: str) -> int:
        """Distinct notes linked to or from this note (0 for an unknown path)."""
        return len(self._linked.get(path, ())) if path in self._notes else 0

    def neighbours(self, path: str) -> list[str]:
        """Notes linked to or from this note, sorted."""
        return sorted(self._linked.get(path, ())) if path in self._notes else []
