"""The notes' links in the graph, pure: each note's links as node ids (a CSR built in bulk, then a per-note
overlay for the notes changed since) and the inbound index that finds the notes linking to a node.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from vault_cortex.recall.nodes import Int32Array, IntArray, Nodes


class NoteLinks:
    """Each note's links as (destination id or -1 if dangling, relation code), by source node id, and the
    sources that may link to each node; a part of the graph (recall/graph.py), which owns the node table and
    the relation codes."""

    def __init__(self, nodes: Nodes) -> None:
        self._nodes = nodes
        # links: base CSR by source id (dst -1: dangling), overlaid by the notes changed since the build
        self._lptr: IntArray = np.zeros(1, dtype=np.int64)
        self._ldst: Int32Array = np.zeros(0, dtype=np.int32)
        self._lrel: Int32Array = np.zeros(0, dtype=np.int32)
        self._lover: dict[int, tuple[tuple[int, int], ...]] = {}
        # inbound: base CSR by destination id (a superset once notes change) plus the overlay's sources
        self._iptr: IntArray = np.zeros(1, dtype=np.int64)
        self._isrc: Int32Array = np.zeros(0, dtype=np.int32)
        self._in_over: dict[int, set[int]] = {}
        self._stray_dangling = 0  # links from paths that are not notes (kept only as counts)
        self._stray_outside = 0

    def add_stray(self, *, dangling: bool) -> None:
        """Count a link from a path that is not a note (dangling, or to something else)."""
        if dangling:
            self._stray_dangling += 1
        else:
            self._stray_outside += 1

    def build(self, src: Int32Array, dst: Int32Array, rel: Int32Array) -> None:
        """The base CSRs, by source and by destination, of every link (source ids, destination ids, relations)."""
        n = self._nodes.count
        order = np.argsort(src, kind="stable")
        self._ldst, self._lrel = dst[order].copy(), rel[order].copy()
        self._lptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self._lptr[1:])
        has_dst = dst >= 0
        by_dst = np.argsort(dst[has_dst], kind="stable")
        self._isrc = src[has_dst][by_dst].copy()
        self._iptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(dst[has_dst], minlength=n), out=self._iptr[1:])

    def of(self, i: int) -> Iterable[tuple[int, int]]:
        """A note's links as (destination id or -1, relation code)."""
        over = self._lover.get(i)
        if over is not None:
            return over
        if i + 1 < self._lptr.size:
            a, b = int(self._lptr[i]), int(self._lptr[i + 1])
            if a < b:
                return zip(self._ldst[a:b].tolist(), self._lrel[a:b].tolist(), strict=True)
        return ()

    def rels_to(self, i: int, j: int) -> set[int]:
        """Relation codes of note i's links to j (validity aside)."""
        over = self._lover.get(i)
        if over is not None:
            return {r for d, r in over if d == j}
        if i + 1 < self._lptr.size:
            a, b = int(self._lptr[i]), int(self._lptr[i + 1])
            if a < b:
                return set(self._lrel[a:b][self._ldst[a:b] == j].tolist())
        return set()

    def inbound(self, i: int) -> set[int]:
        """Notes that may link to this node (a superset: extra ones cost a no-op refresh)."""
        found = set(self._in_over.get(i, ()))
        if i + 1 < self._iptr.size:
            found.update(self._isrc[int(self._iptr[i]): int(self._iptr[i + 1])].tolist())
        return found

    def replace(self, i: int, links: tuple[tuple[int, int], ...], old: set[int]) -> None:
        """Replace note i's links (`old`: the destinations it linked to before)."""
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

    def out(self, i: int) -> dict[int, set[int]]:
        """A note's valid outgoing edges: other notes -> relation codes."""
        out: dict[int, set[int]] = {}
        is_note = self._nodes.is_note
        if is_note[i]:
            for d, r in self.of(i):
                if d >= 0 and d != i and is_note[d]:
                    out.setdefault(d, set()).add(r)
        return out

    # -- reads -------------------------------------------------------------------------------------
    def _arrays(self) -> tuple[Int32Array, Int32Array]:
        """Every note's current links as (source id, destination id or -1) arrays."""
        is_note = self._nodes.is_note
        src = np.repeat(np.arange(self._lptr.size - 1, dtype=np.int32), np.diff(self._lptr))
        keep = ~np.isin(src, np.fromiter(self._lover, dtype=np.int32, count=len(self._lover)))
        over = [(i, d) for i, links in self._lover.items() if is_note[i] for d, _ in links]
        return (np.concatenate([src[keep], np.array([i for i, _ in over], dtype=np.int32)]),
                np.concatenate([self._ldst[keep], np.array([d for _, d in over], dtype=np.int32)]))

    @property
    def dangling_count(self) -> int:
        """Links that resolve to nothing."""
        _, dst = self._arrays()
        return self._stray_dangling + int((dst < 0).sum())

    @property
    def outside_count(self) -> int:
        """Links resolved to something that is not an indexed note (an image, a PDF)."""
        _, dst = self._arrays()
        outside = dst >= 0
        outside[outside] = ~self._nodes.is_note[dst[outside]]
        return self._stray_outside + int(outside.sum())
