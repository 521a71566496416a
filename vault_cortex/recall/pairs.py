"""The graph's undirected pairs, pure: slot arrays of walk weights and links, updated pair by pair, and the
walk's CSR over them, kept across changes (recall/proximity.py walks it; recall/graph.py fills it).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

LOW = (1 << 32) - 1


def pair_key(i: int, j: int) -> int:
    """One int naming an undirected pair of node ids."""
    return (i << 32 | j) if i < j else (j << 32 | i)


class PairSlots:
    """The undirected pairs of node ids: slot arrays holding each pair's walk weight (its strongest edge) and
    whether the notes link (for degrees and health), which numpy walks whole, found by a sorted array of pair
    keys (plus a dict for pairs added since); and the walk's CSR over the live slots (`walk_csr`).

    The graph (recall/graph.py) owns the node ids and decides each pair's weight; this part keeps the arrays.
    """

    _n_ids: int  # node ids in use (recall/graph.py)
    _by_id: list[str]  # node id -> name (recall/graph.py)

    def _changed(self) -> None:
        """Drop what a change makes stale (`Graph._changed`)."""
        raise NotImplementedError

    def _setup_pairs(self) -> None:
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

    def _fill_slots(self, w: FloatArray, lk: BoolArray) -> None:
        """The slot arrays of the built pairs `_pkeys` (sorted, distinct), from their weights and links."""
        m = self._pkeys.size
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

    def _slot_of(self, key: int) -> int | None:
        k = int(self._pkeys.searchsorted(key))
        if k < self._pkeys.size and int(self._pkeys[k]) == key:
            return 2 * k
        return self._xslot.get(key)

    def _set_pair(self, i: int, j: int, weight: float, linked: bool) -> None:
        """Set the undirected walk weight and link of a pair (with 0 and no link, drop it) in the slot arrays."""
        key = pair_key(i, j)
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

    # -- reads -------------------------------------------------------------------------------------
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
        the next build, so a write re-sorts nothing; rebuilt when the extras outgrow it (`graph.WALK_EXTRA`)."""
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
