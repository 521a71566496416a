"""Sync on real files with the real model: incremental updates, renames, deletes, rebuilds, verify, doctor."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.files.vault import init_vault
from vault_cortex.recall.request import RecallRequest


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def bump(path: Path) -> None:
    """Make sure the next sync sees a new mtime even on coarse file systems."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    root.mkdir()
    (root / ".cortex").mkdir()
    write(root, "scientific/WAL checkpoints.md",
          "---\ncortex: scientific\nimportance: 0.7\ntags: [sqlite]\n---\n# WAL\n"
          "A long read transaction keeps the WAL from being checkpointed, so it grows.\n"
          "See [[Connection pool]].\n")
    write(root, "long_term/Connection pool.md",
          "# Pool\nThe connection pool hands out at most four connections to the web workers.\n")
    write(root, "short_term/Groceries.md", "Buy tomatoes, basil and mozzarella for the salad.\n")
    return root


def test_sync_then_recall_finds_the_note(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        report = cx.sync()
        assert (report.notes, report.added, report.unchanged) == (3, 3, 0)
        hits = cx.recall(RecallRequest(query="why does the write-ahead log keep growing", k=3)).hits
        assert hits[0].path == "scientific/WAL checkpoints.md"
        assert hits[0].region == "scientific"
        assert 0 < hits[0].score <= 1 and hits[0].dense > 0 and hits[0].lexical >= 0
        assert cx.recall(RecallRequest(query="tomato salad", k=1)).hits[0].path == "short_term/Groceries.md"


def test_incremental_sync_updates_renames_and_deletes(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        again = cx.sync()
        assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 3)
        assert again.chunks_embedded == 0

        groceries = vault / "short_term/Groceries.md"
        groceries.write_text("Buy lemons and olive oil for the dressing.\n", encoding="utf-8")
        bump(groceries)
        changed = cx.sync()
        assert (changed.updated, changed.unchanged) == (1, 2)
        assert cx.recall(RecallRequest(query="lemons olive oil", k=1)).hits[0].path == "short_term/Groceries.md"

        os.replace(vault / "long_term/Connection pool.md", vault / "long_term/Pool sizing.md")
        moved = cx.sync()
        assert (moved.renamed, moved.added, moved.deleted) == (1, 0, 0)
        paths = [h.path for h in cx.recall(RecallRequest(query="connection pool web workers", k=3)).hits]
        assert "long_term/Pool sizing.md" in paths and "long_term/Connection pool.md" not in paths
        # the link from the WAL note now dangles, and doctor says so
        assert any(ln.target == "Connection pool" for ln in cx.doctor().dangling)

        groceries.unlink()
        gone = cx.sync()
        assert gone.deleted == 1 and gone.notes == 2
        assert all(h.path != "short_term/Groceries.md" for h in cx.recall(RecallRequest(query="lemons", k=5)).hits)


def test_touch_without_change_is_confirmed_by_hash(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        bump(vault / "short_term/Groceries.md")
        report = cx.sync()
        assert (report.updated, report.unchanged, report.chunks_embedded) == (0, 3, 0)


def test_rebuild_equals_incremental_and_costs_no_model_time(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        write(vault, "long_term/New idea.md", "Use a bounded queue between the watcher and the indexer.\n")
        (vault / "short_term/Groceries.md").unlink()
        cx.sync()
        assert cx.verify().ok
        live = cx.db.snapshot()
    shutil.rmtree(vault / ".cortex/index/index.db", ignore_errors=True)
    for name in ("index.db", "index.db-wal", "index.db-shm", "vectors.usearch"):
        (vault / ".cortex/index" / name).unlink(missing_ok=True)
    with Cortex.open(vault, embedder=embedder) as cx:
        report = cx.sync()
        assert report.chunks_embedded == 0 and report.chunks_cached > 0
        assert cx.db.snapshot() == live


def test_verify_reports_a_tampered_index(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        with cx.db.write():
            cx.db.conn.execute("DELETE FROM tags")
        result = cx.verify()
        assert not result.ok
        assert any(d.startswith("tags: only in the rebuild") for d in result.differences)


def test_lost_vector_file_is_restored_from_the_cache(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        n = len(cx.vectors)
    (vault / ".cortex/index/vectors.usearch").unlink()
    with Cortex.open(vault, embedder=embedder) as cx:
        report = cx.sync()
        assert len(cx.vectors) == n and report.chunks_embedded == 0
        assert cx.recall(RecallRequest(query="write-ahead log", k=1)).hits[0].path == "scientific/WAL checkpoints.md"


def test_doctor_shows_drift_before_sync(vault: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Cortex.open(vault, embedder=embedder) as cx:
        cx.sync()
        write(vault, "long_term/Later.md", "Written while nothing watched.\n")
        time.sleep(0.01)
        drift = cx.doctor().drift
        assert drift == ["long_term/Later.md: on disk, not in the index"]
        cx.sync()
        assert cx.doctor().drift == []


def test_template_vault_syncs_and_recalls(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "starter"
    init_vault(root)
    with Cortex.open(root, embedder=embedder) as cx:
        report = cx.sync()
        assert report.notes >= 12 and report.skipped == 0
        assert cx.recall(RecallRequest(query="sensor", k=3)).hits
