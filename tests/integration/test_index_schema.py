"""The index's SQLite schema: every foreign key has an index, so deleting or re-indexing one note never scans a
whole table (issue 13: `tags` and `aliases` without one cost 40 ms a note at 50k notes)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from vault_cortex.index.db import IndexDB


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
