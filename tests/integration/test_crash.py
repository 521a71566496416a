"""A sync killed part-way converges at the next one; big notes are embedded in small, cached, stoppable steps."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from vault_cortex import Cortex
from vault_cortex.errors import SyncCancelled
from vault_cortex.files.vault import content_hash
from vault_cortex.index.derive import CHUNK_CAP_PROBLEM
from vault_cortex.index.restore import EMBED_BATCH, vector_problems
from vault_cortex.recall.request import RecallRequest

WORDS = ("anemometer barometer calibration drizzle evaporation frost gust humidity isobar jetstream katabatic "
         "lapse monsoon nimbus occlusion pressure quasar radiosonde squall thermal updraft veering wetbulb "
         "xerothermic yardang zephyr").split()


# Notes the killed sync has to write: five write groups of BATCH_NOTES. The words phase writes its groups back
# to back, so with one group left a kill sent on seeing the first could land after the last.
STATIONS = 160


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if ".cortex" not in p.parts}


def _text(i: int, version: int) -> str:
    words = " ".join(WORDS[(i * 7 + version * 3 + k) % len(WORDS)] for k in range(12))
    return f"# Station {i}\nVersion {version}: {words} {i * 1000 + version}.\nReports to [[Hub]].\n"


def _bump(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def _rows_with(db: Path, hashes: set[str]) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = conn.execute("SELECT hash FROM files").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return 0
    return sum(1 for (h,) in rows if h in hashes)


def test_a_sync_killed_after_its_first_batch_leaves_no_dangling_links(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """Issue 11 D4: STATIONS notes link one note, all are edited, the sync is SIGKILLed after its first batch;
    the next sync resolves every link (doctor: no dangling link; verify: clean) and no note is changed."""
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / "Hub.md").write_text("# Hub\nWhere the stations report.\n")
    for i in range(STATIONS):
        (root / f"stations/Station {i}.md").parent.mkdir(exist_ok=True)
        (root / f"stations/Station {i}.md").write_text(_text(i, 0))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.doctor().dangling == []
    new: set[str] = set()
    for i in range(STATIONS):
        path = root / f"stations/Station {i}.md"
        path.write_text(_text(i, 1))
        _bump(path)
        new.add(content_hash(path.read_bytes()))
    before = _snapshot(root)

    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "sync", "-q", "--vault", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        while _rows_with(root / ".cortex/index/index.db", new) == 0 and proc.poll() is None:
            assert time.monotonic() < deadline, "the sync wrote no batch in 120 s"
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sync finished before it was killed"
    written = _rows_with(root / ".cortex/index/index.db", new)
    assert 0 < written < STATIONS, written  # killed between batches, as in the report

    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        doctor = cx.doctor()
        assert doctor.dangling == [], [f"{ln.src} → {ln.target}" for ln in doctor.dangling]
        assert {ln.dst for ln in cx.db.links()} == {"Hub.md"}
        verify = cx.verify()
        assert verify.ok, verify.differences
    assert _snapshot(root) == before


def test_a_new_note_resolves_links_left_dangling_by_an_unfinished_sync(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """A sync that stops after writing some notes (here: stopped, as a kill would) leaves a marker; the next
    sync resolves every link, even though nothing it sees is new."""
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / "stations").mkdir()
    for i in range(3):
        (root / f"stations/Station {i}.md").write_text(_text(i, 0))
    (root / "z").mkdir()  # walked after the stations: its group comes second
    (root / "z/Hub.md").write_text("# Hub\n" + "\n\n".join(f"## Part {k}\n" + " ".join(WORDS) * 3 for k in range(80)))
    with Cortex.open(root, embedder=embedder) as cx:
        seen: list[int] = []

        def progress(phase: str, done: int, total: int) -> None:
            seen.append(done)
            if phase == "words" and done >= 3:  # the stations' group is written; the hub's comes next
                cx.index.stop()

        with pytest.raises(SyncCancelled):
            cx.sync(progress)
        cx.index.stopping.clear()
        assert cx.db.counts()["notes"] == 3
        cx.sync()
        assert cx.doctor().dangling == []
        assert cx.verify().ok


def test_progress_moves_by_chunks_and_a_stopped_embedding_keeps_its_work(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """Issue 11 D8: progress counts chunks in small steps (not 32-note batches), and the chunks embedded before
    a stop (or a kill) are in the embedding cache, so the next sync does not embed them again."""
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    sections = [f"## Section {k}\n" + " ".join(f"{WORDS[(k + j) % len(WORDS)]}{k}" for j in range(150))
                for k in range(60)]
    (root / "Big.md").write_text("# Big\n\n" + "\n\n".join(sections) + "\n")
    with Cortex.open(root, embedder=embedder) as cx:
        steps: list[tuple[int, int]] = []
        statuses: list[object] = []

        def progress(phase: str, done: int, total: int) -> None:
            if phase != "vectors":  # the note is written words first, then its chunks get their vectors
                return
            steps.append((done, total))
            statuses.append(cx.status()["indexing"])
            if done >= 4 * EMBED_BATCH:
                cx.index.stop()

        with pytest.raises(SyncCancelled):
            cx.sync(progress)
        cx.index.stopping.clear()
        total = steps[0][1]
        assert total >= 60
        dones = [d for d, _ in steps]
        assert dones == sorted(dones) and all(b - a <= EMBED_BATCH for a, b in zip(dones, dones[1:], strict=False))
        assert statuses[-1] == {"done": dones[-1], "total": total, "phase": "vectors"}
        # nothing runs now, but the index is not whole: the status says where the sync stopped until one ends well
        assert cx.status()["indexing"] == statuses[-1]
        stopped_at = dones[-1]
        report = cx.sync()
        assert report.chunks_cached >= stopped_at
        assert report.chunks_embedded == total - report.chunks_cached
        assert cx.status()["indexing"] is None


def test_a_note_over_the_chunk_cap_is_indexed_up_to_it_and_doctor_lists_it(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text("[index]\nmax_chunks_per_note = 5\n")
    sections = [f"## Part {k}\n" + " ".join(WORDS) * 8 for k in range(12)]
    (root / "Long.md").write_text("# Long\n\n" + "\n\n".join(sections) + "\n")
    (root / "Short.md").write_text("# Short\nA short note.\n")
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert cx.db.counts()["chunks"] == 5 + 1
        problems = [(p, why) for p, why in cx.doctor().problems if CHUNK_CAP_PROBLEM in why]
        assert len(problems) == 1 and problems[0][0] == "Long.md"
        assert "only the first 5 are indexed" in problems[0][1]
        assert cx.verify().ok


def test_a_write_between_two_groups_is_not_overwritten(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """write_note indexes its note at once while a long sync embeds; the sync does not put an older copy back."""
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / "A.md").write_text("# A\nfirst version of a\n")
    sections = [f"## Part {k}\n" + " ".join(WORDS) * 3 for k in range(30)]
    (root / "B.md").write_text("# B\n\n" + "\n\n".join(sections) + "\n")
    with Cortex.open(root, embedder=embedder) as cx:
        wrote = threading.Event()

        def progress(phase: str, done: int, total: int) -> None:
            if done and not wrote.is_set():
                wrote.set()
                t = threading.Thread(target=cx.write_note, args=("A.md", "# A\nsecond version of a\n",
                                                                  cx.vault.read_note("A.md").etag))
                t.start()
                t.join(timeout=30)  # the sync holds no lock while it embeds: the write finishes now
                assert not t.is_alive()

        cx.sync(progress)
        assert wrote.is_set()
        chunks = cx.db.chunks_of(cx.db.note_ids(["A.md"]).values())
        assert "second version" in next(iter(chunks.values()))[0].text
        assert cx.verify().ok


def _flip_vector_bytes(path: Path, vectors: list[bytes], count: int = 400) -> None:
    """Flip bytes inside the stored vectors (found by their int8 bytes), the header and graph left intact."""
    import numpy as np

    data = bytearray(path.read_bytes())
    spans = [(data.find(v), len(v)) for v in vectors]
    assert all(start > 0 for start, _ in spans), "a vector's bytes are not in the file"
    rng = np.random.default_rng(7)
    for k in rng.integers(0, len(spans), count):
        start, size = spans[int(k)]
        data[start + int(rng.integers(0, size))] ^= 0x5A
    path.write_bytes(bytes(data))


def test_verify_sees_corrupt_vectors_and_sync_rebuilds_them(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """Issue 11 D6: bytes flipped inside vectors.usearch (header intact): verify reports the vectors (content,
    not counts), a plain sync in a new process rebuilds them from the cache, recall gives no NaN warnings."""
    import numpy as np

    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / "stations").mkdir()
    for i in range(40):
        (root / f"stations/Station {i}.md").write_text(_text(i, 0))
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        stored = cx.vectors.get(sorted(cx.vectors.keys()))
        heads = [np.round(v * 127).astype(np.int8).tobytes() for v in stored.values()]  # int8: x * 127
    before = _snapshot(root)
    vec_file = root / ".cortex/index/vectors.usearch"

    _flip_vector_bytes(vec_file, heads)
    with Cortex.open(root, embedder=embedder) as cx:
        result = cx.verify()
        assert not result.ok
        assert any(d.startswith("vectors: stations/") for d in result.differences), result.differences
        assert cx.verify().ok  # verify's own sync rebuilt them
        # rebuilt from the float16 cache: a component can truncate to another int8 than from the model's float32
        stored = cx.vectors.get(sorted(cx.vectors.keys()))
        heads = [np.round(v * 127).astype(np.int8).tobytes() for v in stored.values()]

    _flip_vector_bytes(vec_file, heads)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        bad, unchecked = vector_problems(cx.db, cx.vectors, cx.index.cache, embedder.model_id)
        assert (bad, unchecked) == ([], 0)
        hits = cx.recall(RecallRequest(query="katabatic zephyr squall", k=5)).hits  # a NaN warning fails (error)
        assert hits and all(np.isfinite(h.score) for h in hits)
        assert cx.verify().ok
    assert _snapshot(root) == before
