"""The index's SQLite storage (issue 13): every foreign key has an index, so deleting or re-indexing one note never
scans a whole table (`tags` and `aliases` without one cost 40 ms a note at 50k notes); the embedding cache is sized to
its vectors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from vault_cortex.index.db import IndexDB
from vault_cortex.index.vectors import EmbeddingCache


def test_every_foreign_key_is_indexed(tmp_path: Path) -> None:
    IndexDB(tmp_path / "index.db").close()
    conn = sqlite3.connect(tmp_path / "index.db")
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        missing = []
        for table in tables:
            for fk in conn.execute(f"PRAGMA foreign_key_list('{table}')").fetchall():
                column = fk[3]
                leading = {conn.execute(f"PRAGMA index_info('{ix[1]}')").fetchone()[2]
                           for ix in conn.execute(f"PRAGMA index_list('{table}')").fetchall()}
                if column not in leading:
                    missing.append(f"{table}.{column}")
        assert not missing, f"foreign keys without an index: {missing}"
    finally:
        conn.close()


def test_deleting_a_note_uses_the_note_id_indexes(tmp_path: Path) -> None:
    IndexDB(tmp_path / "index.db").close()
    conn = sqlite3.connect(tmp_path / "index.db")
    try:
        for table in ("tags", "aliases", "links", "chunks"):
            plan = " ".join(r[3] for r in conn.execute(f"EXPLAIN QUERY PLAN DELETE FROM {table} WHERE note_id = 1"))
            assert "USING" in plan and "INDEX" in plan, f"{table}: {plan}"
    finally:
        conn.close()


OLD_CACHE = ("CREATE TABLE cache(model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, "
             "PRIMARY KEY(model, hash)) WITHOUT ROWID")


def _vectors(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {f"{i:064x}": rng.standard_normal(384).astype(np.float32) for i in range(n)}


def test_the_embedding_cache_costs_little_more_than_its_vectors(tmp_path: Path) -> None:
    """Issue 13: embeddings.db was 3× its vectors (a WITHOUT ROWID table spills each 1.5 KB row to an overflow
    page); now under 1.6× the raw 1,536 bytes of a 384-dim float32 vector."""
    cache = EmbeddingCache(tmp_path / "embeddings.db")
    cache.put_many("m", _vectors(2000))
    cache.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.close()
    per_vector = (tmp_path / "embeddings.db").stat().st_size / 2000
    assert per_vector < 1.6 * 384 * 4, per_vector


def test_a_cache_of_the_first_format_is_moved_over_with_every_vector(tmp_path: Path) -> None:
    vecs = _vectors(300)
    conn = sqlite3.connect(tmp_path / "embeddings.db")
    conn.execute(OLD_CACHE)
    conn.executemany("INSERT INTO cache VALUES (?, ?, ?)", [("m", h, v.tobytes()) for h, v in vecs.items()])
    conn.commit()
    conn.close()
    cache = EmbeddingCache(tmp_path / "embeddings.db")
    try:
        got = cache.get_many("m", list(vecs))
        assert set(got) == set(vecs)
        assert all(np.array_equal(got[h], v.astype(np.float16).astype(np.float32)) for h, v in vecs.items())
        sql = cache.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'vectors'").fetchone()[0]
        assert "WITHOUT ROWID" not in sql.upper()
        cache.put_many("m", {"f" * 64: next(iter(vecs.values()))})  # still one row per (model, hash)
        cache.put_many("m", {"f" * 64: next(iter(vecs.values()))})
        assert cache.conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 301
    finally:
        cache.close()
    reopened = EmbeddingCache(tmp_path / "embeddings.db")  # a second open finds nothing to move
    try:
        assert len(reopened.get_many("m", list(vecs))) == 300
    finally:
        reopened.close()


def test_an_index_without_link_names_gets_them_once_and_a_write_finds_links_by_them(tmp_path: Path) -> None:
    """Issue 13: `links.name` (indexed) replaced a LIKE scan over every link on each write (571 ms at 100k
    notes); an index made before it gains the column, filled from each link's target, at its next open."""
    from vault_cortex.files.links import target_key

    db = IndexDB(tmp_path / "index.db")
    with db.write():
        db.conn.execute("INSERT INTO notes(id, path, title, region, frontmatter, problems, mtime_ns, hash) "
                        "VALUES (1, 'Src.md', 'Src', 'r', '{}', '[]', 0, 'h')")
        for target in ("Alpha", "a/Über.md", "..", "", "pic.png"):
            db.conn.execute("INSERT INTO links(note_id, target, subpath, kind, rel, line) VALUES (1, ?, '', 'wiki', "
                            "'links_to', 1)", (target,))
    db.conn.execute("DROP INDEX links_name")
    db.conn.execute("ALTER TABLE links DROP COLUMN name")  # as an index of the previous release
    db.close()
    db = IndexDB(tmp_path / "index.db")
    try:
        names = dict(db.conn.execute("SELECT target, name FROM links").fetchall())
        assert names == {t: target_key(t) for t in names} == {"Alpha": "alpha", "a/Über.md": "über", "..": None,
                                                              "": "", "pic.png": "pic.png"}
        found = {t for _, t, _ in db.links_naming([], ["alpha.md"])}
        assert found == {"Alpha", ".."}
        plan = " ".join(r[3] for r in db.conn.execute("EXPLAIN QUERY PLAN SELECT rowid FROM links WHERE name IN ('x')"))
        assert "links_name" in plan
    finally:
        db.close()


def test_a_write_finds_the_files_its_links_name_through_an_index(tmp_path: Path) -> None:
    """Issue 13: the files a write's links can name were found with a LIKE over every note path (~60 ms a
    PUT at 100k notes, the write that grew 11× from 1k); now an index on the lower-cased file name."""
    from vault_cortex.index.schema import FILE_NAME

    db = IndexDB(tmp_path / "index.db")
    try:
        paths = ["Alpha.md", "a/b/ALPHA.md", "ab/b/ab/x.png", "x/x/x.md", "y.z/W.MD", "Über.md", "a/alpha.md.md"]
        with db.write():
            for i, p in enumerate(paths):
                if p.endswith(".png"):
                    db.conn.execute("INSERT INTO attachments(path) VALUES (?)", (p,))
                else:
                    db.conn.execute("INSERT INTO notes(id, path, title, region, frontmatter, problems, mtime_ns, "
                                    "hash) VALUES (?, ?, 't', 'r', '{}', '[]', 0, 'h')", (i + 1, p))
            db.set_meta("attachments_known", "1")
        names = {db.conn.execute(f"SELECT {FILE_NAME} FROM (SELECT ? AS path)", (p,)).fetchone()[0] for p in paths}
        assert names == {"alpha.md", "x.png", "x.md", "w.md", "Über.md", "alpha.md.md"}  # ASCII folded only
        assert sorted(db.link_targets(["alpha.md", "x.png", "w.md"]) or []) == [
            "Alpha.md", "a/b/ALPHA.md", "ab/b/ab/x.png", "y.z/W.MD"]
        assert db.link_targets(["über.md"]) == ["Über.md"]  # not ASCII: found by a pass over the paths
        for table in ("notes", "attachments"):
            plan = " ".join(str(r[3]) for r in db.conn.execute(
                f"EXPLAIN QUERY PLAN SELECT path FROM {table} WHERE {FILE_NAME} IN ('alpha.md')"))
            assert "USING INDEX" in plan or "USING COVERING INDEX" in plan, plan
    finally:
        db.close()
