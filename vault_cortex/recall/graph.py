"""The note graph, pure: weighted, typed edges between notes and project nodes, updated in place.

Nodes are notes plus one `project:<name>` node per project (membership instead of n² edges). Edges keep
their direction and relation; proximity (recall/proximity.py) and health (recall/health.py) treat them as
undirected, as Obsidian's graph view does.
The graph is updated in place (`Graph.update`, `Graph.update_co_retrieved`) for the notes that changed, so a
write costs what it changes; an update gives the same graph as building it again from every note.
It is composed of parts it holds: the node table (recall/nodes.py), the notes' links (recall/note_links.py),
the undirected pairs' slot arrays and the walk's CSR (recall/pairs.py); relations and their weights are in
recall/edges.py.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

import msgspec
import numpy as np

from vault_cortex.recall.edges import CO_RETRIEVED, PROJECT_PREFIX, Edge, EdgeWeights, edge_list
from vault_cortex.recall.nodes import BoolArray, FloatArray, Int32Array, IntArray, Nodes
from vault_cortex.recall.note_links import NoteLinks
from vault_cortex.recall.pairs import LOW, PairSlots, pair_arrays, pair_key

_T = TypeVar("_T")
WALK_EXTRA = 4096  # slots added since the walk's CSR was built past which it is rebuilt (or 1/16 of all)


class NoteEdges(msgspec.Struct, frozen=True, kw_only=True):
    """What one note brings to the graph: its links as (destination or None if dangling, relation), its project."""

    links: tuple[tuple[str | None, str], ...] = ()
    project: str | None = None


class Graph:
    """Notes, project nodes and weighted edges over integer node ids, kept up to date note by note.

    The truth is each note's links (one CSR of node ids built in bulk, then a small per-note overlay for the
    notes changed since: `NoteLinks`), its project and the co-retrieval pairs. Derived from them are the
    undirected pairs (`PairSlots`): slot arrays holding each pair's walk weight (its strongest edge) and whether
    the notes link (for degrees and health), which numpy walks whole, found by a sorted array of pair keys (plus
    a dict for pairs added since). No structure is keyed by path strings except the node table's path -> id map.
    Readers outside the graph's modules use its accessors, never its parts.

    Lock rules. The graph changes only in `update` and `update_co_retrieved`: whoever shares a graph between
    threads runs those under a write lock and every read under a read lock (`LiveGraph` does). The caches built
    from the whole graph when first asked (the walk's CSR with its strengths and degrees, the prior, the link
    CSR, `names`, `index`, `edges`) are never written by a reader unguarded: each is built under the graph's own
    small lock (`lock`, checked again inside it, so a reader that finds one built only reads it) and dropped
    under it at the end of each update; `proximity.warm` builds what a recall reads while the writer still holds
    its write lock. A graph read by several threads at once is given a reentrant lock (`threading.RLock`); the
    default, for a graph one thread owns, does nothing.
    """

    def __init__(
        self,
        notes: Iterable[str],
        links: Iterable[tuple[str, str | None, str]],
        *,
        projects: Mapping[str, str | None] | None = None,
        co_retrieved: Iterable[tuple[str, str, float]] = (),
        weights: EdgeWeights | None = None,
        lock: AbstractContextManager[object] | None = None,
    ) -> None:
        """Build from note paths, (src, dst or None if dangling, rel) links, note→project, (a, b, count); `lock`
        guards the lazily built caches (see the lock rules above)."""
        self._setup(notes, weights, lock)
        ids, note_paths = self._nodes.id, self._nodes.notes
        src_ids = array("i")
        dsts: list[str | None] = []
        rels: list[str] = []
        for src, dst, rel in links:
            i = ids.get(src) if src in note_paths else None
            if i is None:
                self._links.add_stray(dangling=dst is None)
                continue
            src_ids.append(i)
            dsts.append(dst)
            rels.append(rel)
        self._load(np.frombuffer(src_ids, dtype=np.int32), dsts, rels, projects, co_retrieved)

    @classmethod
    def from_columns(
        cls,
        paths: Sequence[str],
        link_counts: Sequence[int],
        link_dst: Sequence[str | None],
        link_rel: Sequence[str],
        *,
        projects: Mapping[str, str | None] | None = None,
        co_retrieved: Iterable[tuple[str, str, float]] = (),
        weights: EdgeWeights | None = None,
        lock: AbstractContextManager[object] | None = None,
    ) -> Graph:
        """The graph `Graph(paths, links, ...)` gives, from columns: each note's number of links, then the links
        of the notes in that order (no Python object per link: a 100k-note vault has half a million)."""
        graph = cls.__new__(cls)
        graph._setup(paths, weights, lock)
        note_ids = np.fromiter(map(graph._nodes.id.__getitem__, paths), dtype=np.int32, count=len(paths))
        src = np.repeat(note_ids, np.asarray(link_counts, dtype=np.int64))
        graph._load(src, link_dst, link_rel, projects, co_retrieved)
        return graph

    def _setup(self, notes: Iterable[str], weights: EdgeWeights | None,
               lock: AbstractContextManager[object] | None) -> None:
        self.weights = weights or EdgeWeights()
        self._lock: AbstractContextManager[object] = nullcontext() if lock is None else lock
        self._nodes = Nodes(notes)
        self._links = NoteLinks(self._nodes)
        self._pairs = PairSlots(self._nodes, self._lock)
        self._rel_code: dict[str, int] = {}
        self._rel_names: list[str] = []
        self._rel_w: list[float] = []
        self._co: dict[int, float] = {}  # pair key -> co-retrieval edge weight
        self._co_by: dict[int, set[int]] = {}
        self._prior: FloatArray | None = None
        self._names: tuple[str, ...] | None = None
        self._index: dict[str, int] | None = None
        self._edges: tuple[Edge, ...] | None = None

        for note in sorted(self._nodes.notes):
            self._node_id(note)

    def _load(self, src: Int32Array, dsts: Sequence[str | None], rels: Sequence[str],
              projects: Mapping[str, str | None] | None, co_retrieved: Iterable[tuple[str, str, float]]) -> None:
        """The links (source ids, destination paths or None, relations), projects and co-retrieval, then the rest."""
        nodes = self._nodes
        for dst in sorted({d for d in set(dsts) if d is not None and d not in nodes.id}):
            self._node_id(dst)
        for rel in sorted(set(rels)):
            self._rel(rel)
        lookup: dict[str | None, int] = {None: -1}
        lookup.update(nodes.id)
        dst_ids = np.fromiter(map(lookup.__getitem__, dsts), dtype=np.int32, count=len(dsts))
        del lookup
        rel_ids = np.fromiter(map(self._rel_code.__getitem__, rels), dtype=np.int32, count=len(rels))
        for path, project in sorted((projects or {}).items()):
            if project and path in nodes.notes:
                nodes.project[nodes.id[path]] = self._node_id(PROJECT_PREFIX + project)
        for a, b, count in co_retrieved:
            self._set_co(a, b, count, keep_max=True)
        self._build(src, dst_ids, rel_ids)

    def _build(self, src: Int32Array, dst: Int32Array, rel: Int32Array) -> None:
        """Everything derived, in bulk over arrays (what `update` maintains pair by pair)."""
        nodes = self._nodes
        n = nodes.count
        self._links.build(src, dst, rel)
        is_note = nodes.is_note[:n]
        co = [(k, w) for k, w in self._co.items() if is_note[k >> 32] and is_note[k & LOW]]
        members = np.flatnonzero((nodes.project[:n] >= 0) & is_note).astype(np.int64)
        projects = nodes.project[members].astype(np.int64)
        for node, count in zip(*np.unique(projects, return_counts=True), strict=True):
            nodes.members[int(node)] = int(count)
        self._pairs.fill(*pair_arrays(src, dst, rel, is_note, self._rel_w, co, members, projects,
                                      self.weights.project))

    # -- in-place updates -------------------------------------------------------------------------
    def update(self, changed: Mapping[str, NoteEdges | None]) -> None:
        """Apply the new state of some notes (None: the note is gone); a rename is the old path gone and the
        new one present. Only those notes' pairs, and links into them from other notes, are recomputed."""
        if not changed:
            return
        nodes, links = self._nodes, self._links
        before: dict[int, set[int]] = {}
        for path, edges in changed.items():
            i = self._node_id(path)
            old_node = int(nodes.project[i])
            if old_node >= 0:
                nodes.project[i] = -1
                self._leave(i, old_node)
            before[i] = {d for d, _ in links.of(i) if d >= 0}
            if edges is None:
                nodes.notes.discard(path)
                links.replace(i, (), before[i])
            else:
                nodes.notes.add(path)
                links.replace(i, tuple((-1 if d is None else self._node_id(d), self._rel(r)) for d, r in edges.links),
                          before[i])
                if edges.project:
                    nodes.project[i] = self._node_id(PROJECT_PREFIX + edges.project)
            nodes.is_note[i] = path in nodes.notes
        for path in sorted(changed):
            i = nodes.id[path]
            out = links.out(i)
            partners = before[i] | set(out) | links.inbound(i) | self._co_by.get(i, set())
            partners.discard(i)
            partners.discard(-1)
            for j in sorted(partners):
                self._refresh_pair(i, j, out)
            node = int(nodes.project[i])
            if node >= 0:
                self._join(i, node)
        self._changed(names=True)

    def update_co_retrieved(self, pairs: Iterable[tuple[str, str, float]]) -> None:
        """Set the co-retrieval strength of some pairs (0 removes the pair's edge)."""
        for a, b, count in pairs:
            if a == b:
                continue
            self._set_co(a, b, count)
            i, j = self._node_id(a), self._node_id(b)
            is_note = self._nodes.is_note  # adding a node may have grown it
            slot = self._pairs.slot_of(pair_key(i, j))
            if slot is not None and self._pairs.linked(slot):
                self._refresh_pair(i, j)  # linked too: the weight is the larger of the links' and this
            elif is_note[i] and is_note[j]:  # links unchanged, and none between them
                self._pairs.set_pair(i, j, self._co.get(pair_key(i, j), 0.0), False)
        self._changed()

    def _rel(self, rel: str) -> int:
        code = self._rel_code.get(rel)
        if code is None:
            code = self._rel_code[rel] = len(self._rel_names)
            self._rel_names.append(rel)
            self._rel_w.append(self.weights.of(rel))
        return code

    def _set_co(self, a: str, b: str, count: float, *, keep_max: bool = False) -> None:
        if a == b:
            return
        i, j = self._node_id(a), self._node_id(b)
        key = pair_key(i, j)
        if count > 0:
            w = self.weights
            weight = w.of(CO_RETRIEVED) * min(1.0, count / w.co_retrieval_saturation)
            self._co[key] = max(self._co.get(key, 0.0), weight) if keep_max else weight
            self._co_by.setdefault(i, set()).add(j)
            self._co_by.setdefault(j, set()).add(i)
        elif key in self._co:
            del self._co[key]
            for x, y in ((i, j), (j, i)):
                peers = self._co_by.get(x)
                if peers is not None:
                    peers.discard(y)
                    if not peers:
                        del self._co_by[x]

    def _refresh_pair(self, i: int, j: int, out: Mapping[int, set[int]] | None = None) -> None:
        """The walk weight and the link of one pair of nodes, from their edges both ways and co-retrieval
        (`out`: i's outgoing edges, when the caller has them)."""
        weight = 0.0
        linked = False
        is_note = self._nodes.is_note
        if i != j and is_note[i] and is_note[j]:
            rels = set(out.get(j, ())) if out is not None else self._links.rels_to(i, j)
            rels |= self._links.rels_to(j, i)
            linked = bool(rels)
            weight = max((self._rel_w[r] for r in rels), default=0.0)
            weight = max(weight, self._co.get(pair_key(i, j), 0.0))
        self._pairs.set_pair(i, j, weight, linked)

    def _join(self, i: int, node: int) -> None:
        members = self._nodes.members
        members[node] = members.get(node, 0) + 1
        self._pairs.set_pair(i, node, self.weights.project, False)

    def _leave(self, i: int, node: int) -> None:
        members = self._nodes.members
        count = members.get(node, 0) - 1
        if count > 0:
            members[node] = count
        else:
            members.pop(node, None)
        self._pairs.set_pair(i, node, 0.0, False)

    def _node_id(self, name: str) -> int:
        i = self._nodes.add(name)
        self._pairs.grow_nodes()
        return i

    def _changed(self, *, names: bool = False) -> None:
        """Drop what a change makes stale (with `names`, the names and their index too); the walk's CSR is kept
        until the slots added since outgrow it. Under the lock, so no cache built meanwhile outlives the change."""
        with self._lock:
            self._prior = None
            self._edges = None
            if names:
                self._names = self._index = None
            self._pairs.changed(WALK_EXTRA)

    # -- reads -------------------------------------------------------------------------------------
    @property
    def n_notes(self) -> int:
        """Indexed notes in the graph."""
        return len(self._nodes.notes)

    def has_note(self, path: str) -> bool:
        """Whether this path is an indexed note of the graph."""
        return path in self._nodes.notes

    @property
    def n_nodes(self) -> int:
        """Node ids in use: notes, project nodes and link targets that are not notes (ids 0 to n_nodes - 1)."""
        return self._nodes.count

    @property
    def node_names(self) -> Sequence[str]:
        """Each node's name by node id (read only)."""
        return self._nodes.names

    def node_id(self, name: str) -> int | None:
        """A node's id, None for a name the graph never saw."""
        return self._nodes.id.get(name)

    def ids_of(self, names: Iterable[str]) -> IntArray:
        """The node ids of those of the names the graph knows, in their order."""
        ids = self._nodes.id
        return np.array([ids[n] for n in names if n in ids], dtype=np.int64)

    @property
    def note_mask(self) -> BoolArray:
        """Whether each node id is an indexed note (a view of the first `n_nodes`)."""
        return self._nodes.is_note[: self._nodes.count]

    @property
    def slots(self) -> tuple[Int32Array, Int32Array, FloatArray]:
        """The pairs' directed slots in use as (source ids, destination ids, walk weights; 0 for a dropped slot),
        which `walk_rows` indexes."""
        return self._pairs.slots

    @property
    def strength(self) -> FloatArray:
        """Each node's walk strength (the sum of the weights of its pairs), by node id."""
        return self._pairs.strength

    @property
    def walk_degree(self) -> IntArray:
        """Each node's number of pairs with a walk weight, by node id."""
        return self._pairs.walk_degree

    def walk_csr(self) -> tuple[IntArray, IntArray]:
        """The walk's CSR over node ids: row pointers and the live slots sorted by source (`PairSlots.walk_csr`)."""
        return self._pairs.walk_csr()

    def walk_rows(self, ids: IntArray) -> tuple[IntArray, IntArray]:
        """The live slots out of each node in `ids` and, for each, its position in `ids`."""
        return self._pairs.walk_rows(ids)

    def linked_csr(self) -> tuple[IntArray, Int32Array]:
        """The notes' link graph by node id (indptr, neighbour ids), undirected (`PairSlots.linked_csr`)."""
        return self._pairs.linked_csr()

    def pair_weights(self) -> dict[tuple[str, str], float]:
        """Every undirected walk pair (a < b) and its weight: what proximity walks over (built when asked)."""
        return self._pairs.pair_weights()

    def prior(self, build: Callable[[Graph], FloatArray]) -> FloatArray:
        """The walk's query-independent prior by node id, which `build` (recall/proximity.py) computes from the
        graph; built under the lock when first asked, then kept until the graph changes."""
        return self._kept("_prior", lambda: build(self))

    @property
    def link_count(self) -> int:
        """Distinct pairs of notes that link (either way)."""
        return self._pairs.link_count

    @property
    def dangling_count(self) -> int:
        """Links that resolve to nothing."""
        return self._links.dangling_count

    @property
    def outside_count(self) -> int:
        """Links resolved to something that is not an indexed note (an image, a PDF)."""
        return self._links.outside_count

    @property
    def names(self) -> tuple[str, ...]:
        """Notes (sorted), then project nodes (sorted)."""
        nodes = self._nodes
        return self._kept("_names", lambda: (*sorted(nodes.notes), *sorted(nodes.names[n] for n in nodes.members)))

    @property
    def index(self) -> dict[str, int]:
        """Each of `names` by its place in `names`."""
        return self._kept("_index", lambda: {n: i for i, n in enumerate(self.names)})

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Every edge, sorted: links between notes, co-retrieval pairs, project memberships (built when asked:
        the serve path never needs it)."""
        return self._kept("_edges", lambda: edge_list(self._nodes, self._links, self._rel_names, self._rel_w,
                                                      self._co, self.weights.project))

    def _kept(self, cache: str, build: Callable[[], _T]) -> _T:
        """A view of the whole graph: built under the lock when first asked (and checked again inside it, so a
        reader that finds it built only reads it), then kept until a change drops it (`_changed`)."""
        value: _T | None = getattr(self, cache)
        if value is None:
            with self._lock:
                value = getattr(self, cache)
                if value is None:
                    value = build()
                    setattr(self, cache, value)
        return value

    def _peers(self, i: int) -> list[int]:
        """Node ids linked to or from note i: its link targets and inbound sources whose pair is linked."""
        found = self._links.inbound(i)
        found.update(d for d, _ in self._links.of(i))
        found.discard(i)
        found.discard(-1)
        return self._pairs.linked_among(i, np.fromiter(found, dtype=np.int64, count=len(found)))

    def degree(self, path: str) -> int:
        """Distinct notes linked to or from this note (0 for an unknown path); from the cached link CSR, as a
        sleep asks it of every note."""
        if path not in self._nodes.notes:
            return 0
        indptr, _ = self.linked_csr()
        i = self._nodes.id[path]
        return int(indptr[i + 1] - indptr[i])

    def followed(self, path: str, rel: str, hops: int) -> list[str]:
        """The notes reached from this one by its first link of relation `rel`, then by theirs, at most `hops`
        steps, nearest first (by `follows`: the exchanges before one in an imported conversation); a dangling link,
        a link to a non-note or a loop ends the chain."""
        nodes, code = self._nodes, self._rel_code.get(rel)
        if code is None or path not in nodes.notes:
            return []
        i, out, seen = nodes.id[path], [], {nodes.id[path]}
        for _ in range(hops):
            i = next((d for d, r in self._links.of(i) if r == code), -1)
            if i < 0 or i in seen or not nodes.is_note[i]:
                break
            seen.add(i)
            out.append(nodes.names[i])
        return out

    def neighbours(self, path: str) -> list[str]:
        """Notes linked to or from this note, sorted."""
        if path not in self._nodes.notes:
            return []
        names = self._nodes.names
        return sorted(names[j] for j in self._peers(self._nodes.id[path]))
