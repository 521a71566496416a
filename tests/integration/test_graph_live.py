"""The graph follows the index's change log (issue 13): writes update it in place, never rebuild it, and it
always equals a graph built from scratch from the same index. Real SQLite and files; the fake embedder."""

from __future__ import annotations

import math
import shutil
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from fakes import FakeEmbedder, SetClock

from vault_cortex.cortex import Cortex
from vault_cortex.recall.graph import Graph
from vault_cortex.recall.live import LiveGraph
from vault_cortex.recall.proximity import prior_proximity
from vault_cortex.recall.request import RecallRequest

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def write(root: Path, path: str, text: str) -> None:
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")


def check(cx: Cortex, graph: Graph, now: datetime = NOW) -> None:
    """The live graph equals one built from scratch from the same index."""
    fresh = LiveGraph()
    other = fresh.refresh(cx.db, now.timestamp())
    assert graph.edges == other.edges and graph.names == other.names
    assert graph.pair_weights().keys() == other.pair_weights().keys()
    for k, w in graph.pair_weights().items():
        assert math.isclose(w, other.pair_weights()[k])
    a, b = prior_proximity(graph), prior_proximity(other)
    assert a.keys() == b.keys() and all(math.isclose(a[k], b[k], abs_tol=1e-12) for k in a)
    assert cx.recaller.live.archived == fresh.archived
    assert cx.recaller.live.pairs.keys() == fresh.pairs.keys()
    assert all(math.isclose(v, fresh.pairs[k]) for k, v in cx.recaller.live.pairs.items())


def test_writes_update_the_graph_in_place_and_it_equals_a_rebuild(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    write(root, "a.md", "Alpha note about gardens, see [[b]].\n")
    write(root, "b.md", "Bravo note about gardens and [[c]], which does not exist yet.\n")
    write(root, "d.md", "---\nproject: p\n---\nDelta about gardens.\n")
    write(root, "e.md", "---\nproject: p\n---\nEcho about gardens, [[a]].\n")
    clock = SetClock(NOW)
    with Cortex.open(root, embedder=FakeEmbedder(), clock=clock) as cx:
        cx.sync()
        graph = cx.graph()
        check(cx, graph)
        assert graph.degree("b.md") == 1  # [[c]] dangles

        steps = [
            lambda: write(root, "c.md", "Charlie, now it exists: the dangling link resolves.\n"),
            lambda: write(root, "a.md", "---\nrelations:\n  supports: ['[[d]]']\n---\nAlpha, [[b]] and [[e]].\n"),
            lambda: (root / "b.md").unlink(),
            lambda: (shutil.move(root / "d.md", root / "dd.md"), write(root, "a.md", "Alpha now links [[dd]].\n")),
            lambda: (root / "archive").mkdir() or shutil.move(root / "e.md", root / "archive" / "e.md"),
            lambda: [cx.recall(RecallRequest(query=q, k=5)) for q in ("gardens alpha", "gardens delta",
                                                                      "gardens echo", "charlie")],
            lambda: write(root, "c.md", "---\nproject: q\n---\nCharlie moved to project q, links [[a]].\n"),
        ]
        for step in steps:
            step()
            cx.sync()
            assert cx.graph() is graph
            check(cx, graph)
        assert cx.recaller.live.rebuilds == 1
        assert graph.degree("c.md") == 1 and "archive/e.md" in cx.recaller.archived()
        assert cx.recaller.live.pairs  # the recalls' co-retrieved pairs reached the graph in place
        assert any(e.rel == "co_retrieved" for e in graph.edges)
        later = NOW + timedelta(days=20)  # co-retrieval fades with time alone: strengths are redone, in place
        clock.now = later
        assert cx.graph() is graph and cx.recaller.live.rebuilds == 1
        check(cx, graph, later)


def test_a_lost_change_log_rebuilds(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    for i in range(8):
        write(root, f"n{i}.md", f"Note {i} links [[n{(i + 1) % 8}]].\n")
    with Cortex.open(root, embedder=FakeEmbedder(), clock=lambda: NOW) as cx:
        cx.sync()
        cx.graph()
        with cx.db.write():
            cx.db.set_meta("index_id", "another index")  # as if the index folder was deleted and rebuilt
        write(root, "n0.md", "Note 0 links nothing now.\n")
        cx.sync()
        check(cx, cx.graph())
        assert cx.recaller.live.rebuilds == 2


def test_recalls_walk_the_graph_while_writes_update_it(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    for i in range(40):
        write(root, f"n{i}.md", f"Note {i} about kiln firing links [[n{(i * 7) % 40}]] and [[n{(i + 1) % 40}]].\n")
    errors: list[BaseException] = []
    stop = threading.Event()
    with Cortex.open(root, embedder=FakeEmbedder(), clock=lambda: NOW) as cx:
        cx.sync()

        def reader() -> None:
            while not stop.is_set():
                try:
                    cx.recall(RecallRequest(query="kiln firing", k=5), log_activity=False)
                    cx.graph_health()
                except BaseException as exc:  # noqa: BLE001 - any failure of a reader fails the test
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            for step in range(15):
                write(root, f"new{step}.md", f"New {step} on kiln firing, see [[n{step}]] and [[new{step - 1}]].\n")
                if step % 3 == 2:
                    (root / f"n{step}.md").unlink()
                cx.sync()
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors
        check(cx, cx.graph())
        assert cx.recaller.live.rebuilds == 1


def test_a_replaced_index_has_its_concepts_read_again(tmp_path: Path) -> None:
    """The index set aside for an empty one (`Index.recover`) moves `Index.replaced`, which the Recaller reads
    with the sync generation: the concepts cached from the old index are read again from the new one."""
    root = tmp_path / "vault"
    (root / ".cortex").mkdir(parents=True)
    write(root, "resonance/Curiosity.md", "---\nweight: 0.4\n---\nWanting to know.\n")
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        assert [c.weight for c in cx.recaller.concepts()] == [0.4]
        cx.index.recover("a test sets it aside")
        write(root, "resonance/Curiosity.md", "---\nweight: 0.9\n---\nWanting to know.\n")
        assert cx.recaller.concepts() == []  # the empty index: nothing cached from the old one
        cx.sync()
        assert [c.weight for c in cx.recaller.concepts()] == [0.9]
