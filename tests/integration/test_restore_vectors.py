"""Restoring the vector index when its file is lost (with the embedding cache) or the model changes: every chunk
is embedded again, and that must behave as any embedding does — progress shown, stoppable between batches,
cached batch by batch so a stop resumes, counted in the report, and without holding the write lock (writes go
on meanwhile). Before, it was one uninterruptible call under the write lock, reported as "0 embedded"."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fakes import Slowed

from vault_cortex import Cortex
from vault_cortex.errors import SyncCancelled
from vault_cortex.index.embed import Embedder
from vault_cortex.index.restore import EMBED_BATCH
from vault_cortex.recall.request import RecallRequest

NOTES = 24


def make_vault(root: Path) -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / "field").mkdir()
    for i in range(NOTES):
        (root / f"field/Plot {i}.md").write_text(
            f"# Plot {i}\nThe soil probe in plot {i} reads {10 + i} % moisture at dawn.\n\n"
            f"## Notes\nPlot {i} was mulched with straw in week {i % 7 + 1}; see [[Plot {(i + 1) % NOTES}]].\n")
    return root


def synced_then_lost(root: Path, embedder: Embedder) -> int:
    """Index a new vault, then lose its vector file and embedding cache; the number of chunks indexed."""
    make_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        chunks = cx.sync().chunks_embedded
    index = root / ".cortex/index"
    for name in ("vectors.usearch", "embeddings.db", "embeddings.db-wal", "embeddings.db-shm"):
        (index / name).unlink(missing_ok=True)
    return chunks


def test_a_lost_vector_file_and_cache_are_restored_with_progress_and_counted(
        tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "v"
    chunks = synced_then_lost(root, embedder)
    steps: list[tuple[str, int, int]] = []
    with Cortex.open(root, embedder=embedder) as cx:
        report = cx.sync(progress=lambda phase, done, total: steps.append((phase, done, total)))
        assert report.chunks_embedded == chunks  # was 0: the restore was not counted
        restore = [(d, t) for p, d, t in steps if p == "vectors"]
        assert restore[0] == (0, chunks) and restore[-1] == (chunks, chunks)
        assert all(b - a <= EMBED_BATCH for (a, _), (b, _) in zip(restore, restore[1:], strict=False))
        assert len(cx.vectors) == chunks
        assert cx.recall(RecallRequest(query="soil probe moisture plot 7", k=1)).hits[0].path == "field/Plot 7.md"
        assert cx.verify().ok


def test_a_stopped_restore_keeps_what_it_embedded_and_the_next_sync_resumes(
        tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "v"
    chunks = synced_then_lost(root, embedder)
    with Cortex.open(root, embedder=embedder) as cx:
        def stop_early(phase: str, done: int, total: int) -> None:
            if phase == "vectors" and done >= 2 * EMBED_BATCH:
                cx.index.stop()

        with pytest.raises(SyncCancelled):
            cx.sync(progress=stop_early)
    with Cortex.open(root, embedder=embedder) as cx:
        report = cx.sync()
        assert report.chunks_embedded == chunks - 2 * EMBED_BATCH  # the batches before the stop were cached
        assert report.chunks_cached == 2 * EMBED_BATCH  # and are counted as restored from the cache
        assert len(cx.vectors) == chunks and cx.verify().ok


def test_a_changed_model_re_embeds_every_chunk_while_writes_go_on(tmp_path: Path, embedder: Embedder) -> None:
    root = make_vault(tmp_path / "v")
    with Cortex.open(root, embedder=embedder) as cx:
        chunks = cx.sync().chunks_embedded
    renamed = Slowed(embedder, 0.0, model_id="renamed-for-the-test")
    with Cortex.open(root, embedder=renamed) as cx:
        started, written = threading.Event(), threading.Event()
        result: dict[str, object] = {}

        def progress(phase: str, done: int, total: int) -> None:
            """The re-embedding holds here, between two batches, until the write below returned (or a generous
            deadline passed: a write queued behind the re-embedding would wait for it)."""
            if phase == "vectors" and 0 < done < total and not started.is_set():
                started.set()
                result["held"] = written.wait(120)

        def run() -> None:
            try:
                result["report"] = cx.sync(progress=progress)
            except BaseException as exc:  # noqa: BLE001 - reported below
                result["error"] = exc

        worker = threading.Thread(target=run)
        worker.start()
        assert started.wait(60), "the re-embedding never showed progress"
        doc = cx.remember("The plot 3 probe was recalibrated against a sample dried at 105 C.", title="Recal")
        written.set()
        worker.join(300)
        assert not worker.is_alive() and "error" not in result, result
        # not behind the whole re-embedding: answered while it was held half done (how long the write takes then
        # is a figure: tests/bench/server.py, POST /v1/notes while the first index embeds)
        assert result["held"] is True, "the write waited for the re-embedding to finish"
        report = result["report"]
        assert report.chunks_embedded >= chunks  # type: ignore[attr-defined]
        assert cx.db.get_meta("model") == "renamed-for-the-test"
        assert cx.recall(RecallRequest(query="probe recalibrated dried sample", k=1)).hits[0].path == doc.path
        assert cx.verify().ok
    assert not list((root / ".cortex/index").glob("vectors.usearch.new"))
