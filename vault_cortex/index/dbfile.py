"""The index file (`index.db`): made whole, opened, checked, migrated; and what its errors mean.

`IndexDB` (`index/db.py`) reads and writes through the connections opened here.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from vault_cortex.errors import IndexCorrupt, IndexUnavailable
from vault_cortex.files.chunk import split_head, stored_head
from vault_cortex.files.links import target_key
from vault_cortex.index.schema import FTS, INDEXES, SCHEMA, SCHEMA_VERSION, SEAL_TOKEN_ROWS, TOKEN_ROWS

log = logging.getLogger(__name__)


def is_corruption(exc: BaseException) -> bool:
    """Whether an error means the index file is damaged or gone (rebuild it), not busy or misused."""
    if isinstance(exc, IndexCorrupt | UnicodeDecodeError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    return (name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
            or "malformed" in text or "not a database" in text or "no such table" in text
            or "Could not decode to UTF-8" in text)


def is_index_lost(exc: BaseException) -> bool:
    """Whether an error means the index is damaged or its file was deleted under a running process."""
    if is_corruption(exc):
        return True
    return isinstance(exc, sqlite3.OperationalError) and (
        (getattr(exc, "sqlite_errorname", "") or "").startswith("SQLITE_CANTOPEN")
        or "unable to open database file" in str(exc))


def quick_check(conn: sqlite3.Connection, what: str) -> str | None:
    """SQLite's quick_check of a connection's file, as a sentence naming `what` (None: it is fine)."""
    try:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
    except sqlite3.DatabaseError as exc:
        return f"{what} is damaged: {exc}"
    return None if row is not None and row[0] == "ok" else f"{what} failed its check: {row[0] if row else 'no answer'}"


def open_index(path: Path) -> sqlite3.Connection:
    """The write connection to the index at `path`: the file made whole if missing, prepared, named and moved to
    this schema. Raises `IndexCorrupt` (damaged: rebuild it) or `IndexUnavailable`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create(path)
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    except (sqlite3.Error, OSError) as exc:
        raise IndexUnavailable(f"cannot open the index at {path}: {exc}") from exc
    try:
        _prepare(conn)
    except sqlite3.Error as exc:
        conn.close()
        if is_corruption(exc):
            raise IndexCorrupt(f"the index at {path} is damaged: {exc}") from exc
        raise IndexUnavailable(f"cannot open the index at {path}: {exc}") from exc
    except IndexCorrupt:
        conn.close()
        raise
    version = get_meta(conn, "schema")
    if get_meta(conn, "index_id") is None:  # names this index: a graph following its change log knows it
        set_meta(conn, "index_id", secrets.token_hex(8))
    if version is None:
        set_meta(conn, "schema", SCHEMA_VERSION)
    elif version == "1":
        try:
            _migrate_from_1(conn, path)
        except sqlite3.Error as exc:  # rolled back whole: the next open tries again
            conn.close()
            if is_corruption(exc):
                raise IndexCorrupt(f"the index at {path} is damaged: {exc}") from exc
            raise IndexUnavailable(f"cannot move the index at {path} to schema {SCHEMA_VERSION}: {exc}") from exc
    elif version != SCHEMA_VERSION:
        conn.close()
        raise IndexUnavailable(
            f"the index at {path.parent} has schema {version}, this version needs {SCHEMA_VERSION}: "
            "delete the folder and run `vault-cortex sync` to rebuild it"
        )
    return conn


def open_reader(path: Path) -> sqlite3.Connection:
    """A read connection to the index at `path` (WAL lets readers run while a sync writes)."""
    # Read-only: a reader must not create an empty index.db where the file was deleted.
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA query_only=1")
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: committed whole or rolled back whole."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with suppress(sqlite3.Error):  # a damaged file can fail the rollback too: report the first error
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """A value of the index's `meta` table (None: not set)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set a value of the index's `meta` table."""
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))


def select_in(conn: sqlite3.Connection, sql: str, values: Sequence[Any]) -> list[Any]:
    """Rows of a query with one `IN ({marks})`, 500 values at a time (SQLite's variable limit)."""
    rows: list[Any] = []
    for start in range(0, len(values), 500):
        part = list(values[start:start + 500])
        rows += conn.execute(sql.format(marks=",".join("?" * len(part))), part).fetchall()
    return rows


def _add_link_names(conn: sqlite3.Connection) -> None:
    """Give an index made before `links.name` existed the column, filled from each link's target (once)."""
    if any(r[1] == "name" for r in conn.execute("PRAGMA table_info(links)")):
        return
    log.info("index: adding the indexed link names (once)")
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE links ADD COLUMN name TEXT")
        rows = conn.execute("SELECT rowid, target FROM links").fetchall()
        conn.executemany("UPDATE links SET name = ? WHERE rowid = ?", [(target_key(t), r) for r, t in rows])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _add_token_rows(conn: sqlite3.Connection) -> None:
    """Give an index made before `token_rows` existed the table, filled from FTS5's vocabulary (a new index gets
    it empty), and count again when the index was written since the counts were last kept: every write
    transaction of this version records the change number it left them at (`SEAL_TOKEN_ROWS`), so a number
    behind the index's says an older version wrote notes without counting their words. FTS5 counts every
    token's rows by walking the whole index: seconds at 100,000 notes."""
    if _token_rows_current(conn):
        return
    with transaction(conn):
        if _token_rows_current(conn):
            return  # another process counted meanwhile
        made = _has_table(conn, "token_rows")
        if conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None:
            log.info("index: counting each word's chunks %s", "again: a version that does not count them wrote "
                     "notes" if made else "(once)")
        if not made:
            conn.execute(TOKEN_ROWS)
        count_token_rows(conn)


def _token_rows_current(conn: sqlite3.Connection) -> bool:
    return _has_table(conn, "token_rows") and get_meta(conn, "token_rows_at") == get_meta(conn, "change_seq")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


def count_token_rows(conn: sqlite3.Connection) -> None:
    """Fill `token_rows` afresh from FTS5's own vocabulary, inside the caller's write transaction."""
    conn.execute("DELETE FROM token_rows")
    conn.execute("CREATE VIRTUAL TABLE temp.fts_tokens USING fts5vocab(main, chunks_fts, row)")
    try:
        conn.execute("INSERT INTO token_rows(token, rows) SELECT term, doc FROM temp.fts_tokens")
    finally:
        conn.execute("DROP TABLE temp.fts_tokens")
    conn.execute(SEAL_TOKEN_ROWS)


def _prepare(conn: sqlite3.Connection) -> None:
    """Settings, tables and indexes of an index connection (idempotent)."""
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(SCHEMA)
    _add_link_names(conn)
    _add_token_rows(conn)
    conn.executescript(INDEXES)


def _create(path: Path) -> None:
    """Make a new, empty index at `path` whole before anyone can open it: it is made under another name and
    linked into place, so a reader opening `path` meanwhile (a request while a lost index is re-created) finds
    no file or a whole one, never one without its tables or its id. If another process made it first, its
    file stays."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    try:
        conn = sqlite3.connect(temp, isolation_level=None)
        try:
            _prepare(conn)
            conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                             [("index_id", secrets.token_hex(8)), ("schema", SCHEMA_VERSION)])
        finally:
            conn.close()  # the last connection: SQLite checkpoints the WAL into the file and removes it
        try:
            os.link(temp, path)  # fails if the path exists: never replaces an index another process opened
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not path.exists():
                os.replace(temp, path)
    finally:
        for name in (temp.name, temp.name + "-wal", temp.name + "-shm"):
            with suppress(FileNotFoundError):
                (path.parent / name).unlink()


def _migrate_from_1(conn: sqlite3.Connection, path: Path) -> None:
    """Move an index of schema 1 to schema 2 in place, once: the embedded text each chunk stored (as long as
    its text) is dropped, keeping only a head `embed_texts` could not rebuild, and FTS5 is rebuilt over the
    chunks without its own copy of their text. Nothing is re-embedded: the chunk hashes stay as they were."""
    with transaction(conn):
        if get_meta(conn, "schema") != "1":
            return  # another process moved it meanwhile
        log.info("index: moving %s to the compact format of schema %s (once)", path, SCHEMA_VERSION)
        conn.execute("ALTER TABLE chunks ADD COLUMN head TEXT")
        rows = conn.execute(
            "SELECT c.id, n.title, c.heading, c.text, c.embed_text FROM chunks c "
            "JOIN notes n ON n.id = c.note_id").fetchall()
        conn.executemany("UPDATE chunks SET head = ? WHERE id = ?", [
            (head, cid) for cid, title, heading, text, embedded in rows
            if (head := split_head(embedded, text)) != stored_head(title, heading)])
        conn.execute("ALTER TABLE chunks DROP COLUMN embed_text")
        conn.execute("DROP TABLE chunks_fts")
        conn.execute(FTS)
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        count_token_rows(conn)
        set_meta(conn, "schema", SCHEMA_VERSION)
    with suppress(sqlite3.OperationalError):  # give the space back to the file system (unless busy)
        conn.execute("VACUUM")
