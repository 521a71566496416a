"""A damaged index.db (inner pages, truncated, garbage, undecodable text) is moved aside and rebuilt from the
files and the embedding cache, said in one line; never a traceback, never a changed note (issue 11 D5)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.index.db import IndexDB
from vault_cortex.recall.request import RecallRequest


def make_vault(root: Path, notes: int = 30) -> Path:
    (root / ".cortex").mkdir(parents=True)
    (root / "scientific").mkdir()
    for i in range(notes):
        (root / f"scientific/Sensor {i}.md").write_text(
            f"---\ncortex: scientific\ntags: [sensor]\n---\n# Sensor {i}\nThe sensor {i} reads humidity every "
            f"{i + 1} minutes and reports to [[Sensor {(i + 1) % notes}]].\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".cortex" not in p.parts}


def inner_pages(db: Path) -> None:
    data = bytearray(db.read_bytes())
    assert len(data) > 4096 * 6
    data[4096 * 2: 4096 * 5] = os.urandom(4096 * 3)  # the header page stays intact
    db.write_bytes(bytes(data))


def truncated(db: Path) -> None:
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])


def garbage(db: Path) -> None:
    db.write_bytes(os.urandom(20_000))


def undecodable(db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE links SET target = CAST(X'C3FF28' AS TEXT)")
    conn.execute("UPDATE notes SET title = CAST(X'FFFE' AS TEXT)")
    conn.commit()
    conn.close()


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    return subprocess.run([sys.executable, "-m", "server.cli", *args, "--vault", str(root)],
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("damage", [inner_pages, truncated, garbage, undecodable], ids=lambda f: f.__name__)
def test_a_damaged_index_is_moved_aside_and_rebuilt(tmp_path: Path, embedder,  # type: ignore[no-untyped-def]
                                                    damage: Callable[[Path], None]) -> None:
    root = make_vault(tmp_path / "v")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        expected = cx.db.snapshot()["notes"]
    before = snapshot(root)
    damage(root / ".cortex/index/index.db")

    doctor = cli(root, "doctor")
    recall = cli(root, "recall", "humidity sensor", "--json")
    verify = cli(root, "verify")
    for run in (doctor, recall, verify):
        assert run.returncode == 0, run.stderr
        assert "Traceback" not in run.stderr
    said = [line for line in doctor.stderr.splitlines() + recall.stderr.splitlines()
            if "the index was damaged" in line]
    assert len(said) == 1, doctor.stderr + recall.stderr  # said once, in one line, by whichever noticed
    assert "broken-" in said[0] and "rebuilding it from the files" in said[0]
    assert "dangling links: 0" in doctor.stdout
    assert '"path":"scientific/Sensor' in recall.stdout
    assert verify.stdout.startswith("ok")
    assert len(list((root / ".cortex/index").glob("broken-*/index.db"))) == 1
    with Cortex.open(root, embedder=embedder) as cx:
        assert cx.db.snapshot()["notes"] == expected
    assert snapshot(root) == before


def test_a_corrupt_embedding_cache_is_set_aside_too(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = make_vault(tmp_path / "v", notes=5)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
    garbage(root / ".cortex/index/embeddings.db")
    with Cortex.open(root, embedder=embedder) as cx:
        assert cx.index.recovered is not None and "embedding cache" in cx.index.recovered
        report = cx.sync()
        assert report.chunks_embedded == 0  # the vectors were still in the vector index
        assert cx.verify().ok


def test_a_deleted_index_is_rebuilt_by_the_next_sync(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = make_vault(tmp_path / "v", notes=5)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        for name in ("index.db", "index.db-wal", "index.db-shm"):
            (root / ".cortex/index" / name).unlink(missing_ok=True)
        report = cx.sync()
        assert report.notes == 5 and report.chunks_embedded == 0
        assert cx.index.recovered is not None and "deleted" in cx.index.recovered
        assert cx.recall(RecallRequest(query="humidity", k=1)).hits
        assert cx.verify().ok


def test_a_reader_never_sees_an_index_file_half_made(tmp_path: Path) -> None:
    """While a lost index is re-created, a request thread that opens its first connection finds either no
    file (the index is being rebuilt: 503) or a whole one, never one without its tables or its id (which
    failed a recall with a KeyError and logged a traceback)."""
    path = tmp_path / "index" / "index.db"
    stale = IndexDB(path)  # the object a request still holds while the index is re-created under it
    stop = threading.Event()
    seen: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                stale._local.conn = None  # each read as a request thread that has no connection yet
                stale.change_seqs()
            except sqlite3.OperationalError as exc:  # no file yet, or deleted under the reader by this loop
                if not (exc.sqlite_errorname or "").startswith(("SQLITE_CANTOPEN", "SQLITE_IOERR")):
                    seen.append(exc)
                    return
            except Exception as exc:  # noqa: BLE001 - judged below
                seen.append(exc)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(300):
            for name in ("index.db", "index.db-wal", "index.db-shm"):
                (path.parent / name).unlink(missing_ok=True)
            IndexDB(path).close()
            if seen:
                break
    finally:
        stop.set()
        reader.join()
        stale.close()
    assert not seen, repr(seen[0])
