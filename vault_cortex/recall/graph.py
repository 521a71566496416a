"""The note graph, pure: weighted, typed edges between notes and project nodes, updated in place.

Nodes are notes plus one `project:<name>` node per project (membership instead of n² edges). Edges keep
their direction and relation; proximity (recall/proximity.py) and health (recall/health.py) treat them as
undirected, as Obsidian's graph view does.
The graph is updated in place (`Graph.update`, `Graph.update_co_retrieved`) for the notes that changed, so a
write costs what it changes; an update gives the same graph as building it again from every note.
Its parts: the notes' links (recall/note_links.py), the undirected pairs' slot arrays and the walk's CSR
(recall/pairs.py), relations and their weights (recall/edges.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence

import msgspec
import numpy as np

from vault_cortex.recall.edges import CO_RETRIEVED, PROJECT_PREFIX, PROJECT_REL, Edge, EdgeWeights
from vault_cortex.recall.note_links import NoteLinks
from vault_cortex.recall.pairs import LOW, BoolArray, FloatArray, Int32Array, PairSlots, pair_key

WALK_EXTRA = 4096  # slots added since the walk's CSR was built past which it is rebuilt (or 1/16 of all)


class NoteEdges(msgspec.Struct, frozen=True, kw_only=True):
    """What one note brings to the graph: its links as (destination or None if dangling, relation), its project."""

    links: tuple[tuple[str | None, str], ...] = ()
    project: str | None = None


class Graph(NoteLinks, PairSlots):
    """Notes, project nodes and weighted edges over integer node ids, kept up to date note by note.

    The truth is each note's links (one CSR of node ids built in bulk, then a small per-note overlay for the
    notes changed since), its project and the co-retrieval pairs. Derived from them are the undirected pairs:
    slot arrays holding each pair's walk weight (its strongest edge) and whether the notes link (for degrees and
    health), which numpy walks whole, found by a sorted array of pair keys (plus a dict for pairs added since).
    No structure is keyed by path strings except the one path -> node id map.
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
        self._setup(notes, weights)
        ids = self._id
        src_ids = array("i")
        dsts: list[str | None] = []
        rels: list[str] = []
        for src, dst, rel in links:
            i = ids.get(src) if src in self._notes else None
            if i is None:
                if dst is None:
                    self._stray_dangling += 1
                else:
                    self._stray_outside += 1
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
    ) -> Graph:
        """The graph `Graph(paths, links, ...)` gives, from columns: each note's number of links, then the links
        of the notes in that order (no Python object per link: a 100k-note vault has half a million)."""
        graph = cls.__new__(cls)
        graph._setup(paths, weights)
        note_ids = np.fromiter(map(graph._id.__getitem__, paths), dtype=np.int32, count=len(paths))
        src = np.repeat(note_ids, np.asarray(link_counts, dtype=np.int64))
        graph._load(src, link_dst, link_rel, projects, co_retrieved)
        return graph

    def _setup(self, notes: Iterable[str], weights: EdgeWeights | None) -> None:
        self.weights = weights or EdgeWeights()
        self._notes: set[str] = set(notes)
        self._n_ids = 0
        self._id: dict[str, int] = {}
        self._by_id: list[str] = []
        self._is_note_id: BoolArray = np.zeros(64, dtype=bool)
        self._proj: Int32Array = np.full(64, -1, dtype=np.int32)  # note id -> its project node id, or -1
        self._members: dict[int, int] = {}  # project node id -> number of member notes
        self._rel_code: dict[str, int] = {}
        self._rel_names: list[str] = []
        self._rel_w: list[float] = []
        self._setup_links()
        self._co: dict[int, float] = {}  # pair key -> co-retrieval edge weight
        self._co_by: dict[int, set[int]] = {}
        self._setup_pairs()
        self._prior: FloatArray | None = None
        self._names: tuple[str, ...] | None = None
        self._index: dict[str, int] | None = None
        self._edges: tuple[Edge, ...] | None = None

        for note in sorted(self._notes):
            self._node_id(note)

    def _load(self, src: Int32Array, dsts: Sequence[str | None], rels: Sequence[str],
              projects: Mapping[str, str | None] | None, co_retrieved: Iterable[tuple[str, str, float]]) -> None:
        """The links (source ids, destination paths or None, relations), projects and co-retrieval, then the rest."""
        for dst in sorted({d for d in set(dsts) if d is not None and d not in self._id}):
            self._node_id(dst)
        for rel in sorted(set(rels)):
            self._rel(rel)
        lookup: dict[str | None, int] = {None: -1}
        lookup.update(self._id)
        dst_ids = np.fromiter(map(lookup.__getitem__, dsts), dtype=np.int32, count=len(dsts))
        del lookup
        rel_ids = np.fromiter(map(self._rel_code.__getitem__, rels), dtype=np.int32, count=len(rels))
        for path, project in sorted((projects or {}).items()):
            if project and path in self._notes:
                self._proj[self._id[path]] = self._node_id(PROJECT_PREFIX + project)
        for a, b, count in co_retrieved:
            self._set_co(a, b, count, keep_max=True)
        self._build(src, dst_ids, rel_ids)

    def _build(self, src: Int32Array, dst: Int32Array, rel: Int32Array) -> None:
        """Everything derived, in bulk over arrays (what `update` maintains pair by pair)."""
        n = self._n_ids
        self._build_links(src, dst, rel)
        has_dst = dst >= 0
        is_note = self._is_note_id[:n]
        valid = has_dst & (dst != src) & is_note[np.maximum(dst, 0)]
        s, d = src[valid].astype(np.int64), dst[valid].astype(np.int64)
        link_keys = np.minimum(s, d) << 32 | np.maximum(s, d)
        link_w = np.asarray(self._rel_w, dtype=np.float64)[rel[valid]] if len(self._rel_w) else np.zeros(0)
        del s, d, valid
        co = [(k, w) for k, w in self._co.items() if is_note[k >> 32] and is_note[k & LOW]]
        co_keys = np.fromiter((k for k, _ in co), dtype=np.int64, count=len(co))
        co_w = np.fromiter((w for _, w in co), dtype=np.float64, count=len(co))
        members = np.flatnonzero((self._proj[:n] >= 0) & is_note).astype(np.int64)
        nodes = self._proj[members].astype(np.int64)
        for node, count in zip(*np.unique(nodes, return_counts=True), strict=True):
            self._members[int(node)] = int(count)
        proj_keys = np.minimum(members, nodes) << 32 | np.maximum(members, nodes)
        keys = np.concatenate([link_keys, co_keys, proj_keys])
        w = np.concatenate([link_w, co_w, np.full(proj_keys.size, self.weights.project)])
        lk = np.concatenate([np.ones(link_keys.size, bool), np.zeros(co_keys.size + proj_keys.size, bool)])
        del link_keys, link_w, co_keys, co_w, proj_keys
        order = np.argsort(keys, kind="stable")
        keys, w, lk = keys[order], w[order], lk[order]
        del order
        first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else np.zeros(0, np.int64)
        keys = keys[first]
        w = np.maximum.reduceat(w, first) if first.size else w
        lk = np.logical_or.reduceat(lk, first) if first.size else lk
        keep = (w > 0) | lk
        self._pkeys, w, lk = keys[keep], w[keep], lk[keep]
        self._fill_slots(w, lk)

    # -- in-place updates -------------------------------------------------------------------------
    def update(self, changed: Mapping[str, NoteEdges | None]) -> None:
        """Apply the new state of some notes (None: the note is gone); a rename is the old path gone and the
        new one present. Only those notes' pairs, and links into them from other notes, are recomputed."""
        if not changed:
            return
        before: dict[int, set[int]] = {}
        for path, edges in changed.items():
            i = self._node_id(path)
            old_node = int(self._proj[i])
            if old_node >= 0:
                self._proj[i] = -1
                self._leave(i, old_node)
            before[i] = {d for d, _ in self._links_of(i) if d >= 0}
            if edges is None:
                self._notes.discard(path)
                self._set_links(i, (), before[i])
            else:
                self._notes.add(path)
                self._set_links(i, tuple((-1 if d is None else self._node_id(d), self._rel(r))
                                         for d, r in edges.links), before[i])
                if edges.project:
                    self._proj[i] = self._node_id(PROJECT_PREFIX + edges.project)
            self._is_note_id[i] = path in self._notes
        for path in sorted(changed):
            i = self._id[path]
            out = self._out(i)
            partners = before[i] | set(out) | self._inbound(i) | self._co_by.get(i, set())
            partners.discard(i)
            partners.discard(-1)
            for j in sorted(partners):
                self._refresh_pair(i, j, out)
            node = int(self._proj[i])
            if node >= 0:
                self._join(i, node)
        self._names = self._index = None
        self._changed()

    def update_co_retrieved(self, pairs: Iterable[tuple[str, str, float]]) -> None:
        """Set the co-retrieval strength of some pairs (0 removes the pair's edge)."""
        for a, b, count in pairs:
            if a == b:
                continue
            self._set_co(a, b, count)
            i, j = self._node_id(a), self._node_id(b)
            slot = self._slot_of(pair_key(i, j))
            if slot is not None and self._lk[slot]:
                self._refresh_pair(i, j)  # linked too: the weight is the larger of the links' and this
            elif self._is_note_id[i] and self._is_note_id[j]:  # links unchanged, and none between them
                self._set_pair(i, j, self._co.get(pair_key(i, j), 0.0), False)
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
        if i != j and self._is_note_id[i] and self._is_note_id[j]:
            rels = set(out.get(j, ())) if out is not None else self._rels_to(i, j)
            rels |= self._rels_to(j, i)
            linked = bool(rels)
            weight = max((self._rel_w[r] for r in rels), default=0.0)
            weight = max(weight, self._co.get(pair_key(i, j), 0.0))
        self._set_pair(i, j, weight, linked)

    def _join(self, i: int, node: int) -> None:
        if node not in self._members:
            self._names = self._index = None
        self._members[node] = self._members.get(node, 0) + 1
        self._set_pair(i, node, self.weights.project, False)

    def _leave(self, i: int, node: int) -> None:
        count = self._members.get(node, 0) - 1
        if count > 0:
            self._members[node] = count
        else:
            self._members.pop(node, None)
            self._names = self._index = None
        self._set_pair(i, node, 0.0, False)

    def _node_id(self, name: str) -> int:
        i = self._id.get(name)
        if i is None:
            i = self._id[name] = self._n_ids
            self._n_ids += 1
            self._by_id.append(name)
            self._linked = None
            if i >= self._is_note_id.size:
                self._is_note_id = np.concatenate([self._is_note_id, np.zeros(self._is_note_id.size, dtype=bool)])
                self._proj = np.concatenate([self._proj, np.full(self._proj.size, -1, dtype=np.int32)])
            if i >= self._strength.size:
                self._strength = np.concatenate([self._strength, np.zeros(self._strength.size)])
                self._deg = np.concatenate([self._deg, np.zeros(self._deg.size, dtype=np.int64)])
            self._is_note_id[i] = name in self._notes
        return i

    def _changed(self) -> None:
        """Drop what a change makes stale; the walk's CSR is kept until the slots added since outgrow it."""
        self._prior = None
        self._linked = None
        self._edges = None
        if self._extra_n > max(WALK_EXTRA, self._used // 16):
            self._walk = None

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
            self._names = (*sorted(self._notes), *sorted(self._by_id[n] for n in self._members))
        return self._names

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.names)}
        return self._index

    @property
    def edges(self) -> tuple[Edge, ...]:
        """Every edge, sorted: links between notes, co-retrieval pairs, project memberships (built when asked:
        the serve path never needs it)."""
        if self._edges is None:
            names, rels, is_note = self._by_id, self._rel_names, self._is_note_id
            best: dict[tuple[str, str, str], float] = {}
            for path in self._notes:
                i = self._id[path]
                for d, r in self._links_of(i):
                    if d >= 0 and d != i and is_note[d]:
                        best[(path, names[d], rels[r])] = self._rel_w[r]
                node = int(self._proj[i])
                if node >= 0:
                    best[(path, names[node], PROJECT_REL)] = self.weights.project
            for key, weight in self._co.items():
                i, j = key >> 32, key & LOW
                if is_note[i] and is_note[j]:
                    a, b = sorted((names[i], names[j]))
                    best[(a, b, CO_RETRIEVED)] = max(best.get((a, b, CO_RETRIEVED), 0.0), weight)
            self._edges = tuple(Edge(src=s, dst=d, rel=r, weight=v) for (s, d, r), v in sorted(best.items()))
        return self._edges

    def _peers(self, i: int) -> list[int]:
        """Node ids linked to or from note i: its link targets and inbound sources whose pair is linked."""
        found = self._inbound(i)
        found.update(d for d, _ in self._links_of(i))
        found.discard(i)
        found.discard(-1)
        peers = np.fromiter(found, dtype=np.int64, count=len(found))
        keys = np.minimum(peers, i) << 32 | np.maximum(peers, i)
        k = np.minimum(self._pkeys.searchsorted(keys), max(self._pkeys.size - 1, 0))
        built = self._pkeys[k] == keys if self._pkeys.size else np.zeros(keys.size, dtype=bool)
        linked = np.zeros(keys.size, dtype=bool)
        linked[built] = self._lk[2 * k[built]]
        for n in np.flatnonzero(~built).tolist():
            slot = self._xslot.get(int(keys[n]))
            linked[n] = slot is not None and bool(self._lk[slot])
        found_linked: list[int] = peers[linked].tolist()
        return found_linked

    def degree(self, path: str) -> int:
        """Distinct notes linked to or from this note (0 for an unknown path); from the cached link CSR, as a
        sleep asks it of every note."""
        if path not in self._notes:
            return 0
        indptr, _ = self.linked_csr()
        i = self._id[path]
        return int(indptr[i + 1] - indptr[i])

    def neighbours(self, path: str) -> list[str]:
        """Notes linked to or from this note, sorted."""
        if path not in self._notes:
            return []
        return sorted(self._by_id[j] for j in self._peers(self._id[path]))
