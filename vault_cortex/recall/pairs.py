"""The graph's undirected pairs, pure: slot arrays of walk weights and links, updated pair by pair, and the
walk's CSR over them, kept across changes (recall/proximity.py walks it; recall/graph.py fills it).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager

import numpy as np

from vault_cortex.recall.nodes import BoolArray, FloatArray, Int32Array, IntArray, Nodes

__all__ = ["LOW", "BoolArray", "FloatArray", "Int32Array", "IntArray", "PairSlots", "pair_arrays", "pair_key"]

LOW = (1 << 32) - 1


def pair_key(i: int, j: int) -> int:
    """One int naming an undirected pair of node ids."""
    return (i << 32 | j) if i < j else (j << 32 | i)


class PairSlots:
    """The undirected pairs of node ids: slot arrays holding each pair's walk weight (its strongest edge) and
    whether the notes link (for degrees and health), which numpy walks whole, found by a sorted array of pair
    keys (plus a dict for pairs added since); and the walk's CSR over the live slots (`walk_csr`).

    A part of the graph (recall/graph.py), which owns the node table and decides each pair's weight; this part
    keeps the arrays.
    """

    def __init__(self, nodes: Nodes, lock: AbstractContextManager[object]) -> None:
        """Empty slot arrays over the graph's node table; `lock` is the graph's lock for its lazily built caches."""
        self._nodes = nodes
        self._lock = lock
        self.link_count = 0
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
        self.grow_nodes()

    def fill(self, keys: IntArray, w: FloatArray, lk: BoolArray) -> None:
        """The slot arrays of the built pairs (their keys sorted and distinct), from their weights and links."""
        self._pkeys = keys
        m = keys.size
        size = max(64, 2 * m)
        self._src, self._dst = np.zeros(size, np.int32), np.zeros(size, np.int32)
        self._w, self._lk = np.zeros(size), np.zeros(size, bool)
        self._known = np.zeros(size, bool)
        lo, hi = self._pkeys >> 32, self._pkeys & LOW
        self._src[0: 2 * m: 2], self._src[1: 2 * m: 2] = lo, hi
        self._dst[0: 2 * m: 2], self._dst[1: 2 * m: 2] = hi, lo
        self._w[: 2 * m] = np.repeat(w, 2)
        self._lk[: 2 * m] = np.repeat(lk, 2)
        self._used = 2 * m
        self.link_count = int(lk.sum())

    def grow_nodes(self) -> None:
        """Room in the arrays by node id for every node of the node table."""
        if self._nodes.count > self._strength.size:
            self._strength = np.concatenate([self._strength, np.zeros(self._strength.size)])
            self._deg = np.concatenate([self._deg, np.zeros(self._deg.size, dtype=np.int64)])

    def slot_of(self, key: int) -> int | None:
        """The first of the two slots of the pair with this key; None if the pair has none."""
        k = int(self._pkeys.searchsorted(key))
        if k < self._pkeys.size and int(self._pkeys[k]) == key:
            return 2 * k
        return self._xslot.get(key)

    def linked(self, slot: int) -> bool:
        """Whether the pair in this slot links notes (either way)."""
        return bool(self._lk[slot])

    def set_pair(self, i: int, j: int, weight: float, linked: bool) -> None:
        """Set the undirected walk weight and link of a pair (with 0 and no link, drop it) in the slot arrays; the
        graph drops what the change makes stale (`changed`) once its update is done."""
        key = pair_key(i, j)
        slot = self.slot_of(key)
        if slot is None:
            if weight == 0 and not linked:
                return
            slot = self._free.pop() if self._free else self._grow()
            self._xslot[key] = slot
            self._src[slot], self._dst[slot] = i, j
            self._src[slot + 1], self._dst[slot + 1] = j, i
        elif self._w[slot] == weight and bool(self._lk[slot]) == linked:
            return
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

    def changed(self, walk_extra: int) -> None:
        """Drop the link CSR, and the walk's CSR once more than `walk_extra` slots (or 1/16 of all) were added
        since it was built (the graph calls it under its lock)."""
        self._linked = None
        if self._extra_n > max(walk_extra, self._used // 16):
            self._walk = None

    def linked_among(self, i: int, peers: IntArray) -> list[int]:
        """Those of the nodes `peers` whose pair with node i links notes."""
        keys = np.minimum(peers, i) << 32 | np.maximum(peers, i)
        k = np.minimum(self._pkeys.searchsorted(keys), max(self._pkeys.size - 1, 0))
        built = self._pkeys[k] == keys if self._pkeys.size else np.zeros(keys.size, dtype=bool)
        linked = np.zeros(keys.size, dtype=bool)
        linked[built] = self._lk[2 * k[built]]
        for n in np.flatnonzero(~built).tolist():
            slot = self._xslot.get(int(keys[n]))
            linked[n] = slot is not None and bool(self._lk[slot])
        found: list[int] = peers[linked].tolist()
        return found

    # -- reads -------------------------------------------------------------------------------------
    @property
    def slots(self) -> tuple[Int32Array, Int32Array, FloatArray]:
        """The directed slots in use as (source ids, destination ids, walk weights; 0 for a dropped slot): views
        of the slot arrays, which a change may replace."""
        used = self._used
        return self._src[:used], self._dst[:used], self._w[:used]

    @property
    def strength(self) -> FloatArray:
        """Each node's walk strength (the sum of its live slots' weights), by node id, kept with the walk's CSR."""
        self.walk_csr()
        return self._strength

    @property
    def walk_degree(self) -> IntArray:
        """Each node's number of live slots (weight > 0), by node id, kept with the walk's CSR."""
        self.walk_csr()
        return self._deg

    def pair_weights(self) -> dict[tuple[str, str], float]:
        """Every undirected walk pair (a < b) and its weight: what proximity walks over (built when asked)."""
        names = self._nodes.names
        slots = 2 * np.flatnonzero(self._w[0: self._used: 2] > 0)
        out: dict[tuple[str, str], float] = {}
        for i, j, w in zip(self._src[slots].tolist(), self._dst[slots].tolist(), self._w[slots].tolist(),
                           strict=True):
            a, b = names[i], names[j]
            out[(a, b) if a < b else (b, a)] = w
        return out

    def linked_csr(self) -> tuple[IntArray, Int32Array]:
        """The notes' link graph by node id (indptr, neighbour ids), undirected, for health and degrees (a
        recall's neighbours are read from the notes' own links instead); built under the graph's lock when first
        asked, then kept until the graph changes."""
        linked = self._linked
        if linked is None:
            with self._lock:
                linked = self._linked
                if linked is None:
                    lk = self._lk[: self._used]
                    src, dst = self._src[: self._used][lk], self._dst[: self._used][lk]
                    order = np.argsort(src, kind="stable")
                    n = self._nodes.count
                    indptr = np.zeros(n + 1, dtype=np.int64)
                    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
                    linked = self._linked = (indptr, dst[order])
        return linked

    def walk_csr(self) -> tuple[IntArray, IntArray]:
        """The walk's CSR over node ids: row pointers and the live slots (weight > 0) sorted by source. Built
        once, then kept across changes: `set_pair` lists the slots a change adds under their sources
        (`_extra`) and keeps each node's strength (Σ w) and live degree, and a freed slot is reused only after
        the next build, so a write re-sorts nothing; rebuilt when the extras outgrow it (`graph.WALK_EXTRA`).
        Built under the graph's lock (it rewrites the strengths, degrees and free slots), then only read."""
        walk = self._walk
        if walk is None:
            with self._lock:
                walk = self._walk
                if walk is None:
                    walk = self._build_walk()
        return walk

    def _build_walk(self) -> tuple[IntArray, IntArray]:
        """The walk's CSR from the slot arrays, with the strengths and degrees it keeps (under the lock)."""
        size = self._nodes.count
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


def pair_arrays(src: Int32Array, dst: Int32Array, rel: Int32Array, is_note: BoolArray, rel_w: Sequence[float],
                co: Sequence[tuple[int, float]], members: IntArray, projects: IntArray,
                project_weight: float) -> tuple[IntArray, FloatArray, BoolArray]:
    """The undirected pairs in bulk, from the links (source, destination or -1, relation ids), the co-retrieval
    pairs (key, weight) and the project memberships: each pair's key, walk weight (its strongest edge) and whether
    its notes link, sorted by key; pairs with neither a weight nor a link left out (what `PairSlots.fill` takes)."""
    has_dst = dst >= 0
    valid = has_dst & (dst != src) & is_note[np.maximum(dst, 0)]
    s, d = src[valid].astype(np.int64), dst[valid].astype(np.int64)
    link_keys = np.minimum(s, d) << 32 | np.maximum(s, d)
    link_w = np.asarray(rel_w, dtype=np.float64)[rel[valid]] if len(rel_w) else np.zeros(0)
    del s, d, valid
    co_keys = np.fromiter((k for k, _ in co), dtype=np.int64, count=len(co))
    co_w = np.fromiter((w for _, w in co), dtype=np.float64, count=len(co))
    proj_keys = np.minimum(members, projects) << 32 | np.maximum(members, projects)
    keys = np.concatenate([link_keys, co_keys, proj_keys])
    w = np.concatenate([link_w, co_w, np.full(proj_keys.size, project_weight)])
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
    return keys[keep], w[keep], lk[keep]
