"""The note graph, pure: weighted, typed edges between notes and project nodes, updated in place.

Nodes are notes plus one `project:<name>` node per project (membership instead of n² edges). Edges keep
their direction and relation; proximity (recall/proximity.py) and health (recall/health.py) treat them as
undirected, as Obsidian's graph view does.
The graph is updated in place (`Graph.update`, `Graph.update_co_retrieved`) for the notes that changed, so a
write costs what it changes; an update gives the same graph as building it again from every note.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence

import msgspec
import numpy as np
import numpy.typing as npt

PROJECT_PREFIX = "project:"
PROJECT_REL = "project"
CO_RETRIEVED = "co_retrieved"


WALK_EXTRA = 4096  # slots added since the walk's CSR was built past which it is rebuilt (or 1/16 of all)


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
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

_LOW = (1 << 32) - 1


def _pair(i: int, j: int) -> int:
    """One int naming an undirected pair of node ids."""
    return (i << 32 | j) if i < j else (j << 32 | i)


class Graph:
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
        # links: base CSR by source id (dst -1: dangling), overlaid by the notes changed since the build
        self._lptr: IntArray = np.zeros(1, dtype=np.int64)
        self._ldst: Int32Array = np.zeros(0, dtype=np.int32)
        self._lrel: Int32Array = np.zeros(0, dtype=np.int32)
        self._lover: dict[int, tuple[tuple[int, int], ...]] = {}
        # inbound: base CSR by destination id (a superset once notes change) plus the overlay's sources
        self._iptr: IntArray = np.zeros(1, dtype=np.int64)
        self._isrc: Int32Array = np.zeros(0, dtype=np.int32)
        self._in_over: dict[int, set[int]] = {}
        self._co: dict[int, float] = {}  # pair key -> co-retrieval edge weight
        self._co_by: dict[int, set[int]] = {}
        self.link_count = 0
        self._stray_dangling = 0  # links from paths that are not notes (kept only as counts)
        self._stray_outside = 0
        # slot arrays: a pair keeps two directed slots (2k, 2k + 1) while it has a weight or a link
        self._pkeys: IntArray = np.zeros(0, dtype=np.int64)  # sorted keys of the built pairs: slot 2k
        self._xslot: dict[int, int] = {}  # pairs added since the build -> slot
        self._free: list[int] = []
        self._freed: list[int] = []  # freed while the walk's CSR may list them: reusable after its rebuild
        self._src: Int32Array = np.zeros(64, dtype=np.int32)
        self._dst: Int32Array = np.zeros(64, dtype=np.int32)
        self._w: FloatArray = np.zeros(64, dtype=np.float64)
        self._lk: BoolArray = np.zeros(64, dtype=bool)  # the pair's notes link (either way)
        self._used = 0
        # The walk's CSR (row pointers, slot ids by source), built lazily and then kept (`walk_csr`)
        self._walk: tuple[IntArray, IntArray] | None = None
        self._extra: dict[int, list[int]] = {}
        self._extra_n = 0
        self._strength: FloatArray = np.zeros(64, dtype=np.float64)
        self._deg: IntArray = np.zeros(64, dtype=np.int64)
        self._known: BoolArray = np.zeros(64, dtype=bool)  # slots the walk's CSR or `_extra` lists
        self._linked: tuple[IntArray, Int32Array] | None = None  # CSR of the link graph by node id, lazily
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
        order = np.argsort(src, kind="stable")
        self._ldst, self._lrel = dst[order].copy(), rel[order].copy()
        self._lptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self._lptr[1:])
        has_dst = dst >= 0
        by_dst = np.argsort(dst[has_dst], kind="stable")
        self._isrc = src[has_dst][by_dst].copy()
        self._iptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst[has_dst], minlength=n), out=self._iptr[1:])
        del order, by_dst

        is_note = self._is_note_id[:n]
        valid = has_dst & (dst != src) & is_note[np.maximum(dst, 0)]
        s, d = src[valid].astype(np.int64), dst[valid].astype(np.int64)
        link_keys = np.minimum(s, d) << 32 | np.maximum(s, d)
        link_w = np.asarray(self._rel_w, dtype=np.float64)[rel[valid]] if len(self._rel_w) else np.zeros(0)
        del s, d, valid
        co = [(k, w) for k, w in self._co.items() if is_note[k >> 32] and is_note[k & _LOW]]
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
        m = self._pkeys.size
        size = max(64, 2 * m)
        self._src, self._dst = np.zeros(size, np.int32), np.zeros(size, np.int32)
        self._w, self._lk = np.zeros(size), np.zeros(size, bool)
        self._known = np.zeros(size, bool)
        lo, hi = self._pkeys >> 32, self._pkeys & _LOW
        self._src[0: 2 * m: 2], self._src[1: 2 * m: 2] = lo, hi
        self._dst[0: 2 * m: 2], self._dst[1: 2 * m: 2] = hi, lo
        self._w[: 2 * m] = np.repeat(w, 2)
        self._lk[: 2 * m] = np.repeat(lk, 2)
        self._used = 2 * m
        self.link_count = int(lk.sum())

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
            slot = self._slot_of(_pair(i, j))
            if slot is not None and self._lk[slot]:
                self._refresh_pair(i, j)  # linked too: the weight is the larger of the links' and this
            elif self._is_note_id[i] and self._is_note_id[j]:  # links unchanged, and none between them
                self._set_pair(i, j, self._co.get(_pair(i, j), 0.0), False)
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
        key = _pair(i, j)
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

    def _links_of(self, i: int) -> Iterable[tuple[int, int]]:
        """A note's links as (destination id or -1, relation code)."""
        over = self._lover.get(i)
        if over is not None:
            return over
        if i + 1 < self._lptr.size:
            a, b = int(self._lptr[i]), int(self._lptr[i + 1])
            if a < b:
                return zip(self._ldst[a:b].tolist(), self._lrel[a:b].tolist(), strict=True)
        return ()

    def _rels_to(self, i: int, j: int) -> set[int]:
        """Relation codes of note i's links to j (validity aside)."""
        over = self._lover.get(i)
        if over is not None:
            return {r for d, r in over if d == j}
        if i + 1 < self._lptr.size:
            a, b = int(self._lptr[i]), int(self._lptr[i + 1])
            if a < b:
                return set(self._lrel[a:b][self._ldst[a:b] == j].tolist())
        return set()

    def _inbound(self, i: int) -> set[int]:
        """Notes that may link to this node (a superset: extra ones cost a no-op refresh)."""
        found = set(self._in_over.get(i, ()))
        if i + 1 < self._iptr.size:
            found.update(self._isrc[int(self._iptr[i]): int(self._iptr[i + 1])].tolist())
        return found

    def _set_links(self, i: int, links: tuple[tuple[int, int], ...], old: set[int]) -> None:
        self._lover[i] = links
        new = {d for d, _ in links if d >= 0}
        for d in old - new:
            peers = self._in_over.get(d)
            if peers is not None:
                peers.discard(i)
                if not peers:
                    del self._in_over[d]
        for d in new:
            self._in_over.setdefault(d, set()).add(i)

    def _out(self, i: int) -> dict[int, set[int]]:
        """A note's valid outgoing edges: other notes -> relation codes."""
        out: dict[int, set[int]] = {}
        if self._is_note_id[i]:
            is_note = self._is_note_id
            for d, r in self._links_of(i):
                if d >= 0 and d != i and is_note[d]:
                    out.setdefault(d, set()).add(r)
        return out

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
            weight = max(weight, self._co.get(_pair(i, j), 0.0))
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

    def _slot_of(self, key: int) -> int | None:
        k = int(self._pkeys.searchsorted(key))
        if k < self._pkeys.size and int(self._pkeys[k]) == key:
            return 2 * k
        return self._xslot.get(key)

    def _set_pair(self, i: int, j: int, weight: float, linked: bool) -> None:
        """Set the undirected walk weight and link of a pair (with 0 and no link, drop it) in the slot arrays."""
        key = _pair(i, j)
        slot = self._slot_of(key)
        if slot is None:
            if weight == 0 and not linked:
                return
            slot = self._free.pop() if self._free else self._grow()
            self._xslot[key] = slot
            self._src[slot], self._dst[slot] = i, j
            self._src[slot + 1], self._dst[slot + 1] = j, i
        elif self._w[slot] == weight and bool(self._lk[slot]) == linked:
            return
        self._changed()
        old = float(self._w[slot])
        if self._walk is not None and old != weight:
            for node in (i, j):
                self._strength[node] += weight - old
                self._deg[node] += int(weight > 0) - int(old > 0)
        if bool(self._lk[slot]) != linked:
            self.link_count += 1 if linked else -1
        self._w[slot] = self._w[slot + 1] = weight
        self._lk[slot] = self._lk[slot + 1] = linked
        if self._walk is not None and weight > 0 and not self._known[slot]:  # not in the walk's CSR yet
            for sl in (slot, slot + 1):
                self._extra.setdefault(int(self._src[sl]), []).append(sl)
            self._known[slot] = self._known[slot + 1] = True
            self._extra_n += 2
        if weight == 0 and not linked and self._xslot.get(key) == slot:
            del self._xslot[key]
            # a slot the walk's CSR may list is reused only once the CSR is rebuilt without it
            (self._free if self._walk is None else self._freed).append(slot)

    def _grow(self) -> int:
        slot = self._used
        self._used += 2
        if self._used > self._w.size:
            size = 2 * self._w.size
            self._src = np.resize(self._src, size)
            self._dst = np.resize(self._dst, size)
            self._w = np.concatenate([self._w, np.zeros(size - self._w.size)])
            self._lk = np.concatenate([self._lk, np.zeros(size - self._lk.size, dtype=bool)])
            self._known = np.concatenate([self._known, np.zeros(size - self._known.size, dtype=bool)])
        return slot

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
                i, j = key >> 32, key & _LOW
                if is_note[i] and is_note[j]:
                    a, b = sorted((names[i], names[j]))
                    best[(a, b, CO_RETRIEVED)] = max(best.get((a, b, CO_RETRIEVED), 0.0), weight)
            self._edges = tuple(Edge(src=s, dst=d, rel=r, weight=v) for (s, d, r), v in sorted(best.items()))
        return self._edges

    def _link_arrays(self) -> tuple[Int32Array, Int32Array]:
        """Every note's current links as (source id, destination id or -1) arrays."""
        src = np.repeat(np.arange(self._lptr.size - 1, dtype=np.int32), np.diff(self._lptr))
        keep = ~np.isin(src, np.fromiter(self._lover, dtype=np.int32, count=len(self._lover)))
        over = [(i, d) for i, links in self._lover.items() if self._is_note_id[i] for d, _ in links]
        return (np.concatenate([src[keep], np.array([i for i, _ in over], dtype=np.int32)]),
                np.concatenate([self._ldst[keep], np.array([d for _, d in over], dtype=np.int32)]))

    @property
    def dangling_count(self) -> int:
        _, dst = self._link_arrays()
        return self._stray_dangling + int((dst < 0).sum())

    @property
    def outside_count(self) -> int:
        """Links resolved to something that is not an indexed note (an image, a PDF)."""
        _, dst = self._link_arrays()
        outside = dst >= 0
        outside[outside] = ~self._is_note_id[dst[outside]]
        return self._stray_outside + int(outside.sum())

    def pair_weights(self) -> dict[tuple[str, str], float]:
        """Every undirected walk pair (a < b) and its weight: what proximity walks over (built when asked)."""
        names = self._by_id
        slots = 2 * np.flatnonzero(self._w[0: self._used: 2] > 0)
        out: dict[tuple[str, str], float] = {}
        for i, j, w in zip(self._src[slots].tolist(), self._dst[slots].tolist(), self._w[slots].tolist(),
                           strict=True):
            a, b = names[i], names[j]
            out[(a, b) if a < b else (b, a)] = w
        return out

    def linked_csr(self) -> tuple[IntArray, Int32Array]:
        """The notes' link graph by node id (indptr, neighbour ids), undirected, for health and degrees (a
        recall's neighbours are read from the notes' own links instead); cached until the graph changes."""
        if self._linked is None:
            lk = self._lk[: self._used]
            src, dst = self._src[: self._used][lk], self._dst[: self._used][lk]
            order = np.argsort(src, kind="stable")
            indptr = np.zeros(self._n_ids + 1, dtype=np.int64)
            np.cumsum(np.bincount(src, minlength=self._n_ids), out=indptr[1:])
            self._linked = (indptr, dst[order])
        return self._linked

    def walk_csr(self) -> tuple[IntArray, IntArray]:
        """The walk's CSR over node ids: row pointers and the live slots (weight > 0) sorted by source. Built
        once, then kept across changes: `_set_pair` lists the slots a change adds under their sources
        (`_extra`) and keeps each node's strength (Σ w) and live degree, and a freed slot is reused only after
        the next build, so a write re-sorts nothing; rebuilt when the extras outgrow it (`WALK_EXTRA`)."""
        if self._walk is None:
            size = self._n_ids
            slots = np.flatnonzero(self._w[: self._used] > 0)
            src = self._src[slots]
            indptr = np.zeros(size + 1, dtype=np.int64)
            np.cumsum(np.bincount(src, minlength=size), out=indptr[1:])
            capacity = self._strength.size
            self._strength = np.bincount(src, weights=self._w[slots], minlength=capacity).astype(np.float64)
            self._deg = np.bincount(src, minlength=capacity).astype(np.int64)
            self._known = np.zeros(self._w.size, dtype=bool)
            self._known[slots] = True
            self._extra, self._extra_n = {}, 0
            self._free += self._freed
            self._freed = []
            self._walk = (indptr, slots[np.argsort(src, kind="stable")])
        return self._walk

    def walk_rows(self, ids: IntArray) -> tuple[IntArray, IntArray]:
        """The live slots out of each node in `ids` and, for each, its position in `ids`."""
        indptr, order = self.walk_csr()
        rows = indptr.size - 1
        inside = ids < rows
        first = np.where(inside, indptr[np.minimum(ids, rows - 1)], 0) if rows else np.zeros(ids.size, np.int64)
        counts = np.where(inside, indptr[np.minimum(ids + 1, rows)] - first, 0) if rows else first
        n = int(counts.sum())
        pos = np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(n)
        slots, owner = order[pos], np.repeat(np.arange(ids.size), counts)
        if self._extra:
            more = [(k, sl) for k, i in enumerate(ids.tolist()) for sl in self._extra.get(i, ())]
            if more:
                owner = np.concatenate([owner, np.fromiter((k for k, _ in more), dtype=np.int64, count=len(more))])
                slots = np.concatenate([slots, np.fromiter((sl for _, sl in more), dtype=np.int64,
                                                           count=len(more))])
        # a slot listed under a source may since have been dropped (weight 0) or reused for another pair
        keep = (self._src[slots] == ids[owner]) & (self._w[slots] > 0)
        return slots[keep], owner[keep]

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
