"""The index on disk (issue 13): no embedded text stored twice, FTS5 without its own copy of the text, a float16
embedding cache, an int8 vector index; and what stays true about each after any sequence of note changes."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from fakes import FakeEmbedder

from vault_cortex.cortex import Cortex
from vault_cortex.files.chunk import text_hash
from vault_cortex.index.fts import fts_match, fts_terms
from vault_cortex.index.restore import FILL_TURN, VECTOR_TOLERANCE, vector_problems
from vault_cortex.index.vectors import Vectors
from vault_cortex.recall.request import RecallRequest

WORDS = ("harbor glacier zephyr lantern orchard basalt meridian quartz tundra ember falcon cobalt willow "
         "saffron drift canyon beacon mosaic sterling verdant").split()
QUERIES = ["harbor glacier", "zephyr", "lantern orchard basalt", "Station", "quartz tundra ember falcon",
           "deep heading", "Renamed", "cobalt willow saffron"]


def _text(rng: random.Random, sections: int) -> str:
    out = []
    for s in range(sections):
        out.append(f"## {rng.choice(WORDS).title()} {s}")
        out += [" ".join(rng.choices(WORDS, k=rng.randint(3, 30))) + "." for _ in range(rng.randint(1, 3))]
        out.append("")
    return "\n".join(out)


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "v"
    (root / ".cortex").mkdir(parents=True)
    (root / ".cortex/config.toml").write_text("[index]\nchunk_tokens = 24\n")
    (root / "notes").mkdir()
    return root


def _fts_check(cx: Cortex) -> None:
    cx.db.conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")


def _own_copy_scores(cx: Cortex, query: str) -> dict[int, float]:
    """BM25 of the same query over an FTS5 table with its own copy of the text (the format before issue 13)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(title, heading, text, "
                 "tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO f(rowid, title, heading, text) VALUES (?, ?, ?, ?)",
                     cx.db.conn.execute("SELECT id, title, heading, text FROM chunk_texts").fetchall())
    rows = conn.execute("SELECT rowid, -bm25(f, 2.0, 1.0, 1.0) AS s FROM f WHERE f MATCH ? ORDER BY s DESC LIMIT 50",
                        (fts_match(fts_terms(query)),)).fetchall()
    conn.close()
    return {int(r): float(s) for r, s in rows}


def _same_lexical(cx: Cortex) -> None:
    for query in QUERIES:
        got = cx.db.lexical(query, 50)
        want = _own_copy_scores(cx, query)
        assert set(got) == set(want), query
        assert all(got[i] == pytest.approx(want[i], rel=1e-12) for i in want), query


def test_fts_stays_consistent_through_random_creates_edits_renames_and_deletes(tmp_path: Path) -> None:
    """FTS5 reads the text from the chunks: every path that removes a chunk or renames a note (the title is
    indexed) must remove its terms while the old values are still there. After each of 40 random changes the
    FTS5 integrity check passes and BM25 scores equal those of a table with its own copy of the text."""
    root = _vault(tmp_path)
    rng = random.Random(13)
    names = [f"Station {i}" for i in range(8)]
    for name in names[:4]:
        (root / f"notes/{name}.md").write_text(_text(rng, 2))
    with Cortex.open(root, embedder=FakeEmbedder()) as cx:
        cx.sync()
        _fts_check(cx)
        _same_lexical(cx)
        for step in range(40):
            present = sorted(p.stem for p in (root / "notes").glob("*.md"))
            op = rng.choice(["create", "edit", "edit", "rename", "delete"] if present else ["create"])
            touched = [f"notes/{rng.choice(present)}.md"] if present else []
            if op == "create":
                touched = [f"notes/Station {step} {rng.choice(WORDS)}.md"]
                (root / touched[0]).write_text(_text(rng, rng.randint(0, 3)))
            elif op == "edit":
                (root / touched[0]).write_text(_text(rng, rng.randint(1, 4)))
            elif op == "rename":  # the title is the file name: its terms change in every chunk of the note
                touched.append(f"notes/Renamed {step} {rng.choice(WORDS)}.md")
                (root / touched[0]).rename(root / touched[1])
            else:
                (root / touched[0]).unlink()
            if rng.random() < 0.3:
                cx.sync_paths(touched)  # the one-file path the API and the watcher take
            else:
                cx.sync()
            _fts_check(cx)
            _same_lexical(cx)
        assert cx.verify().ok


def test_the_embedded_text_is_rebuilt_as_it_was_hashed(tmp_path: Path) -> None:
    """The index stores no embedded text: `embed_texts` rebuilds it from the title, heading, text (and a head
    stored only when those do not give it: a heading path or title left out for room, a note of only a
    title). Each rebuilt text hashes to the chunk's hash, so a vector lost from the cache is re-embedded from
    the very text it was made from."""
    root = _vault(tmp_path)
    deep = " ".join(["deep heading"] * 20)
    notes = {
        "notes/Plain.md": "# Plain\nIntro.\n## Part\nharbor glacier zephyr.\n",
        "notes/Deep.md": f"# {deep}\nlantern orchard basalt meridian quartz tundra ember falcon cobalt willow "
                         "saffron drift canyon beacon mosaic sterling verdant harbor glacier zephyr.\n",
        "notes/Arrow.md": "# A > B\nquartz tundra.\n",
        "notes/Only a title.md": "",
        f"notes/{' '.join(WORDS)}.md": "harbor glacier zephyr lantern orchard basalt meridian quartz.\n",
    }
    for path, text in notes.items():
        (root / path).write_text(text)
    embedder = FakeEmbedder()
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        hashes = set(cx.db.chunk_hashes().values())
        rebuilt = cx.db.embed_texts(sorted(hashes))
        assert set(rebuilt) == hashes
        assert all(text_hash(t) == h for h, t in rebuilt.items())
        stored = cx.db.conn.execute("SELECT count(*) FROM chunks WHERE head IS NOT NULL").fetchone()[0]
        assert 3 <= stored < len(hashes)  # only the heads the title and heading cannot give
        before = cx.index.cache.get_many(embedder.model_id, hashes)
    (root / ".cortex/index/embeddings.db").unlink()
    (root / ".cortex/index/vectors.usearch").unlink()
    embedder.calls.clear()
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert sum(embedder.calls) == len(hashes)  # re-embedded from the rebuilt texts
        after = cx.index.cache.get_many(embedder.model_id, hashes)
        assert all(np.array_equal(after[h], before[h]) for h in hashes)
        assert cx.verify().ok


def test_vectors_are_int8_and_the_cache_float16_within_the_verify_tolerance(tmp_path: Path) -> None:
    """int8 storage truncates x * 127 (off by < 1/127 per component); the cache keeps float16. A stored vector
    and its cache entry stay within VECTOR_TOLERANCE, and a vector off by more is still caught."""
    root = _vault(tmp_path)
    rng = random.Random(5)
    for i in range(20):
        (root / f"notes/N {i}.md").write_text(_text(rng, 3))
    embedder = FakeEmbedder()
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        assert str(cx.vectors.index.dtype).endswith("I8")
        ids = sorted(cx.vectors.keys())
        hashes = cx.db.chunk_hashes()
        stored = cx.vectors.get(ids)
        cached = cx.index.cache.get_many(embedder.model_id, {hashes[i] for i in ids})
        worst = max(float(np.abs(stored[i] - cached[hashes[i]]).max()) for i in ids)
        assert 1 / 254 < worst < VECTOR_TOLERANCE  # the int8 error is really there, and within the tolerance
        blob = cx.index.cache.conn.execute("SELECT vec FROM vectors LIMIT 1").fetchone()[0]
        assert len(blob) == 2 * embedder.dim
        assert vector_problems(cx.db, cx.vectors, cx.index.cache, embedder.model_id) == ([], 0)
        off = stored[ids[0]].copy()
        off[int(np.argmax(np.abs(off)))] -= 0.02 * np.sign(off[int(np.argmax(np.abs(off)))])
        cx.vectors.remove([ids[0]])
        cx.vectors.add([ids[0]], off[None, :])
        assert vector_problems(cx.db, cx.vectors, cx.index.cache, embedder.model_id)[0] == [ids[0]]


def test_a_cold_sync_adds_vectors_once_per_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 13: a cold sync adds its vectors with one usearch call per turn of filling them in (FILL_TURN
    chunks), not one per note; every vector is there and matches its cache entry afterwards."""
    root = _vault(tmp_path)
    rng = random.Random(3)
    for i in range(100):
        (root / f"notes/N {i}.md").write_text(_text(rng, 1))
    calls: list[int] = []
    add = Vectors.add

    def counted(self: Vectors, ids: list[int], vectors: np.ndarray) -> None:
        calls.append(len(ids))
        add(self, ids, vectors)

    monkeypatch.setattr(Vectors, "add", counted)
    embedder = FakeEmbedder()
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        chunks = len(cx.db.chunk_hashes())
        assert sum(calls) == chunks == len(cx.vectors)
        assert len(calls) <= -(-chunks // FILL_TURN) + 1  # a turn of FILL_TURN chunks per call
        assert vector_problems(cx.db, cx.vectors, cx.index.cache, embedder.model_id) == ([], 0)


def test_removed_vectors_are_left_out_at_once_and_removed_from_usearch_in_batches(tmp_path: Path) -> None:
    """Issue 13: after any usearch removal the next add or search pays a pass over the whole index (~6 ms at
    300k vectors), which every edit paid. Removed vectors are set aside: absent from every answer at once,
    removed from usearch in one batch at `DEAD_MAX` of them or when the file is saved."""
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vectors = Vectors(tmp_path / "v.usearch", 16)
    vectors.add(list(range(1, 301)), vecs)
    gone = list(range(1, 301, 3))
    vectors.remove(gone)
    assert len(vectors) == 200 and vectors.keys() == set(range(1, 301)) - set(gone)
    assert len(vectors.index) == 300  # still in usearch
    assert vectors.get(gone[:5]) == {}
    for i in gone[:20]:  # a removed vector is never found, even by its own query
        found = vectors.search(vecs[i - 1], 10)
        assert i not in found and len(found) == 10
    assert len(vectors.search(vecs[0], 500)) == 200
    vectors.add([gone[0]], vecs[:1])  # a removed id added again: it is taken out of usearch first
    assert vectors.get([gone[0]]) and len(vectors.index) == 201
    vectors.remove([2, gone[1]])  # gone[1] is out already: nothing to set aside
    assert len(vectors.index) == 201 and len(vectors) == 200
    vectors.save()  # the file never holds a removed vector
    assert len(vectors.index) == 200
    reopened = Vectors(tmp_path / "v.usearch", 16)
    assert reopened.keys() == vectors.keys() and len(reopened) == 200


def test_removing_past_the_batch_size_removes_them_from_usearch(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("vault_cortex.index.vectors.DEAD_MAX", 10)
    vectors = Vectors(tmp_path / "v.usearch", 4)
    vectors.add(list(range(1, 41)), np.random.default_rng(1).normal(size=(40, 4)).astype(np.float32))
    vectors.remove(range(1, 11))
    assert len(vectors.index) == 40 and len(vectors) == 30
    vectors.remove([11])
    assert len(vectors.index) == len(vectors) == 29


# Schema 1, as the code before issue 13 wrote it: each chunk's embedded text stored, FTS5 with its own copy of the
# text, the embedding cache as float32 rows keyed by (model text, hex hash), the vector index as f16.
OLD_FTS = ("CREATE VIRTUAL TABLE chunks_fts USING fts5(title, heading, text, "
           "tokenize = 'porter unicode61 remove_diacritics 2')")
OLD_CACHE = ("CREATE TABLE cache(model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, "
             "PRIMARY KEY(model, hash))")


def _make_schema_1(root: Path, embedder: FakeEmbedder) -> dict[str, object]:
    """Index the vault with this code, then turn the index into the schema-1 format that code wrote; returns
    what the old index held, to compare with after the upgrade."""
    with Cortex.open(root, embedder=embedder) as cx:
        cx.sync()
        hashes = cx.db.chunk_hashes()
        texts = cx.db.embed_texts(sorted(set(hashes.values())))
        before = {"snapshot": cx.db.snapshot(), "texts": texts, "chunks": hashes,
                  "lexical": {q: cx.db.lexical(q, 50) for q in QUERIES}}
    index = root / ".cortex/index"
    conn = sqlite3.connect(index / "index.db", isolation_level=None)
    conn.execute("ALTER TABLE chunks ADD COLUMN embed_text TEXT NOT NULL DEFAULT ''")
    conn.executemany("UPDATE chunks SET embed_text = ? WHERE id = ?", [(texts[h], i) for i, h in hashes.items()])
    conn.execute("ALTER TABLE chunks DROP COLUMN head")
    conn.execute("DROP TABLE chunks_fts")
    conn.execute("DROP VIEW chunk_texts")
    conn.execute(OLD_FTS)
    conn.execute("INSERT INTO chunks_fts(rowid, title, heading, text) SELECT c.id, n.title, c.heading, c.text "
                 "FROM chunks c JOIN notes n ON n.id = c.note_id")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
    conn.close()
    vectors = dict(zip(texts, embedder.embed(list(texts.values())), strict=True))  # float32, as the old cache
    for name in ("embeddings.db", "embeddings.db-wal", "embeddings.db-shm"):
        (index / name).unlink(missing_ok=True)
    conn = sqlite3.connect(index / "embeddings.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(OLD_CACHE)
    conn.executemany("INSERT INTO cache VALUES (?, ?, ?)",
                     [(embedder.model_id, h, v.tobytes()) for h, v in vectors.items()])
    conn.close()
    from usearch.index import Index

    old = Index(ndim=embedder.dim, metric="cos", dtype="f16")
    ids = sorted(hashes)
    old.add(np.asarray(ids, dtype=np.uint64), np.stack([vectors[hashes[i]] for i in ids]), threads=1)
    old.save(str(index / "vectors.usearch"))
    st = (index / "vectors.usearch").stat()
    conn = sqlite3.connect(index / "index.db", isolation_level=None)  # the very file the old index saved
    conn.execute("UPDATE meta SET value = ? WHERE key = 'vectors_stamp'", (f"{st.st_size}:{st.st_mtime_ns}",))
    conn.close()
    before["vectors"] = vectors
    embedder.calls.clear()
    return before


def test_an_index_of_schema_1_is_moved_over_once_with_nothing_lost(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 13: an index.db of schema 1, a float32 cache and an f16 vector file keep working after the upgrade:
    moved in place once (one log line for each file), nothing re-embedded, the same notes, chunks, rebuilt
    embedded texts and BM25 scores, the cache as float16, the vector file as int8 and checked against the cache."""
    import logging

    from usearch.index import Index

    root = _vault(tmp_path)
    rng = random.Random(21)
    for i in range(12):
        (root / f"notes/Station {i}.md").write_text(_text(rng, 3))
    (root / "notes/Deep.md").write_text(f"# {' '.join(['deep heading'] * 20)}\n{' '.join(WORDS)}.\n")
    (root / "notes/Only a title.md").write_text("")
    embedder = FakeEmbedder()
    before = _make_schema_1(root, embedder)
    index = root / ".cortex/index"

    caplog.set_level(logging.INFO)
    with Cortex.open(root, embedder=embedder) as cx:
        moved = [r.getMessage() for r in caplog.records if "(once)" in r.getMessage()]
        assert len(moved) == 2, moved  # index.db and the cache at open; the vector file when first read
        assert cx.db.get_meta("schema") == "2"
        columns = {r[1] for r in cx.db.conn.execute("PRAGMA table_info(chunks)")}
        assert "embed_text" not in columns and "head" in columns
        _fts_check(cx)
        assert {q: cx.db.lexical(q, 50) for q in QUERIES} == before["lexical"]
        assert cx.db.snapshot() == before["snapshot"]
        assert cx.db.chunk_hashes() == before["chunks"]
        assert cx.db.embed_texts(sorted(before["texts"])) == before["texts"]  # type: ignore[arg-type]
        assert cx.index.cache.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'cache'").fetchone() is None
        got = cx.index.cache.get_many(embedder.model_id, before["texts"])  # type: ignore[arg-type]
        old: dict[str, np.ndarray] = before["vectors"]  # type: ignore[assignment]
        assert set(got) == set(old)
        assert all(np.array_equal(got[h], v.astype(np.float16).astype(np.float32)) for h, v in old.items())
        assert not cx.vectors.loaded and cx.vectors.other_format()
        cx.sync()  # nothing changed, but the vector file is of the old type: read, moved over and checked
        assert len([r for r in caplog.records if "(once)" in r.getMessage()]) == 3
        assert str(cx.vectors.index.dtype).endswith("I8") and cx.vectors.keys() == set(before["chunks"])  # type: ignore[call-overload]
        assert cx.vectors.checked and not cx.vectors.other_format()  # checked against the cache, saved as int8
        assert embedder.calls == []  # nothing re-embedded
        assert vector_problems(cx.db, cx.vectors, cx.index.cache, embedder.model_id) == ([], 0)
        assert cx.verify().ok
    assert str(Index.restore(str(index / "vectors.usearch")).dtype).endswith("I8")

    caplog.clear()
    with Cortex.open(root, embedder=embedder) as cx:  # a second open finds nothing to move
        assert not [r for r in caplog.records if "(once)" in r.getMessage()]
        assert cx.vectors.checked and len(cx.vectors) == len(before["chunks"])  # type: ignore[arg-type]
        assert embedder.calls == []
        assert cx.recall(RecallRequest(query="harbor glacier zephyr", k=5)).hits
